#!/usr/bin/env bash
# Collateral in the training handshake (`train --attestation tdx+gpu --qe-identity --tcb-info
# --collateral-chain --evidence-crl --gpu-rims --gpu-rim-crl`, docs/confidential-vms.md), without confidential
# hardware:
# two ranks under mpirun gather TDX quotes through the configfs-tsm stand-in (tests/cli/fake_tsm.py) and
# GPU evidence through the NVML stand-in (tests/cli/fake_nvml.cpp), both signed by the TEST vendor, as
# tests/cli/real_attestation.sh does, and the test vendor issues the QE identity, the TCB info and the
# GPU's RIMs and its RIM root's CRLs (the shared set-up is lib.sh's attestation_setup):
#   - with a current QE identity, and a TCB info and a revocation list past their nextUpdate, accepted by
#     --allow-expired-collateral, and the RIMs of the GPUs' measurements with a current RIM CRL, the run
#     trains and the banner and the summary's verifier say what was checked (the RIM signing chain
#     not revoked) and which collateral was EXPIRED and accepted, and the summary lists every collateral
#     file (the RIMs and their revocation list among them) as the agreed inputs hold it;
#   - without --allow-expired-collateral the same run is refused on every rank (exit 3, one verdict line
#     naming the expired revocation list and its nextUpdate);
#   - a rank whose GPU reports a measurement block off the RIMs is refused on every rank, naming the
#     block;
#   - a RIM CRL revoking the RIM signing certificate: refused on every rank (exit 3), naming it.
# The TCB levels, statuses and FMSPC checks themselves are tests/cli/evidence_test_vendor.sh's.
source "$(dirname "$0")/lib.sh" "$@"
FAKE_NVML="$2"
VENDOR="$3"
attestation_setup
"$VENDOR" qe-identity --dir "$R" --out "$WORK/qe.json"
"$VENDOR" tcb-info --dir "$R" --out "$WORK/tcb_old.json" --next-update -3600
"$VENDOR" rims --dir "$R" --out "$WORK/rims" --crl-out "$WORK/rimcrl"
make_expired_crl "$R/intel_pck_ca.pem" "$R/intel_pck_ca.key.pem" "$WORK/old.crl.pem"
train=(train --model gpt2-tiny --steps 1 --batch 2 --seq 16 --threads 1 --no-progress --timeout 20
  --data "$WORK/sealed/tiny" --key-file "$WORK/k.key" --tee fast --attestation tdx+gpu --test-roots "$R"
  --allow-test-roots --tsm-dir "$WORK/tsm{rank}" --qe-identity "$WORK/qe.json" --tcb-info "$WORK/tcb_old.json"
  --collateral-chain "$R/intel_qe_identity_chain.pem" --evidence-crl "$WORK/old.crl.pem" --gpu-rims "$WORK/rims")
PROVIDER=tdx_guest
serve tsm 2

rc=0
mpirun --oversubscribe -np 2 "$WORK/rank.sh" "${train[@]}" --allow-expired-collateral --summary "$WORK/s.json" \
  --gpu-rim-crl "$WORK/rimcrl/nvidia_rim_root.crl.pem" >"$WORK/ok.log" 2>&1 || rc=$?
expect_eq "$rc" 0 "expired TCB info and revocation list accepted by --allow-expired-collateral: the run trains"
[[ $rc == 0 ]] || tail -3 "$WORK/ok.log"
check "the banner says which revocation list expired and was accepted" \
  grep -q "1 revocation list(s); EXPIRED collateral accepted (--allow-expired-collateral): revocation list '.*old.crl.pem' (nextUpdate 2020-02-01T00:00:00Z)" "$WORK/ok.log"
check "the banner says the GPU RIMs were checked, their signing chain not revoked" \
  grep -q "GPU RIMs: 2 from .*rims checked; RIM signing chain not revoked (checked against 1 --gpu-rim-crl list(s))" "$WORK/ok.log"
check "the banner says what Intel collateral was checked and which expired" \
  grep -q "Intel collateral: QE identity checked, TCB status checked; EXPIRED collateral accepted (--allow-expired-collateral): TCB info .*tcb_old.json (nextUpdate " "$WORK/ok.log"
check "the summary's verifier says the same" python3 -c "
import json
v = json.load(open('$WORK/s.json'))['attestation']['evidence']['verifier']
assert 'QE identity checked, TCB status checked; EXPIRED collateral accepted' in v and 'AMD TCB collateral NOT checked' in v, v
assert 'old.crl.pem' in v and 'GPU RIMs: 2 from' in v and 'RIM signing chain not revoked' in v, v
by = [b for r in json.load(open('$WORK/s.json'))['attestation']['evidence']['ranks'] for b in r['verified_by']]
assert by and all('RIM' not in b['not_checked'] for b in by), by
kinds = [c['kind'] for c in json.load(open('$WORK/s.json'))['attestation']['evidence']['collateral']]
assert kinds == ['QE identity', 'TCB info', 'collateral chain', 'evidence CRL 1', 'GPU RIM 1', 'GPU RIM 2',
                 'GPU RIM CRL 1'], kinds
"
rc=0
mpirun --oversubscribe -np 2 "$WORK/rank.sh" "${train[@]}" >"$WORK/expired.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "expired collateral without the opt-out: exit"
check "expired revocation list: refused on every rank, naming the file and its nextUpdate" grep -qE \
  "^teetrain: INTEGRITY FAILURE: attestation refused on every rank: rank [01]: Intel TDX quote: collateral check failed: the revocation list '.*old.crl.pem' expired at its nextUpdate 2020-02-01T00:00:00Z" \
  "$WORK/expired.log"
expect_eq "$(grep -c "INTEGRITY FAILURE" "$WORK/expired.log")" 1 "expired collateral: one verdict line"

# Rank 1's GPU reports measurement block 3 off the RIMs: rank 0 refuses it, naming the block, and every
# rank stops with that verdict.
rc=0
OFF_BLOCK="3:$(printf 'ab%.0s' {1..48})" mpirun --oversubscribe -np 2 -x OFF_BLOCK "$WORK/rank.sh" "${train[@]}" \
  --allow-expired-collateral >"$WORK/rim.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "a GPU measurement off the RIMs: exit"
check "a GPU measurement off the RIMs: refused on every rank, naming the block" grep -qE \
  "^teetrain: INTEGRITY FAILURE: attestation refused on every rank: .*rank 1: NVIDIA .*GPU 0: measurements check failed: 1 of 4 measurements differ from the RIMs' golden values: block\\(s\\) 3" \
  "$WORK/rim.log"

# The RIM root's CRL revokes the RIM signing certificate: every rank refuses every peer GPU, naming it.
rc=0
mpirun --oversubscribe -np 2 "$WORK/rank.sh" "${train[@]}" --allow-expired-collateral \
  --gpu-rim-crl "$WORK/rimcrl/nvidia_rim_root.revoking.crl.pem" >"$WORK/revoked.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "a revoked RIM signing certificate: exit"
check "a revoked RIM signing certificate: refused on every rank, naming it" grep -qE \
  "^teetrain: INTEGRITY FAILURE: attestation refused on every rank: .*RIM signature check failed: .*RIM signing certificate 'CN=teetrain TEST NVIDIA RIM signer - not a vendor[^']*' \(serial [0-9a-f]+\) is REVOKED by the revocation list '.*revoking.crl.pem'" \
  "$WORK/revoked.log"
finish
