#!/usr/bin/env bash
# Collateral in the training handshake (`train --attestation tdx+gpu --qe-identity --tcb-info
# --collateral-chain --evidence-crl --gpu-rims`, docs/confidential-vms.md), without confidential hardware:
# two ranks under mpirun gather TDX quotes through the configfs-tsm stand-in (tests/cli/fake_tsm.py) and
# GPU evidence through the NVML stand-in (tests/cli/fake_nvml.cpp), both signed by the TEST vendor, as
# tests/cli/real_attestation.sh does, and the test vendor issues the QE identity, the TCB info and the
# GPU's RIMs:
#   - with a current QE identity, and a TCB info and a revocation list past their nextUpdate, accepted by
#     --allow-expired-collateral, and the RIMs of the GPUs' measurements, the run trains and the banner
#     and the summary's verifier say what was checked and which collateral was EXPIRED and accepted;
#   - without --allow-expired-collateral the same run is refused on every rank (exit 3, one verdict line
#     naming the expired revocation list and its nextUpdate);
#   - a rank whose GPU reports a measurement block off the RIMs is refused on every rank, naming the
#     block.
# The TCB levels, statuses and FMSPC checks themselves are tests/cli/evidence_test_vendor.sh's.
source "$(dirname "$0")/lib.sh" "$@"
FAKE_NVML="$2"
VENDOR="$3"
R="$WORK/roots"
"$VENDOR" roots --dir "$R" >/dev/null
make_corpus
"$TT" keygen --out "$WORK/k.key" >/dev/null
"$TT" seal-data --data "$WORK/data/tiny" --out "$WORK/sealed" --key-file "$WORK/k.key" >/dev/null
"$VENDOR" qe-identity --dir "$R" --out "$WORK/qe.json"
"$VENDOR" tcb-info --dir "$R" --out "$WORK/tcb_old.json" --next-update -3600
"$VENDOR" rims --dir "$R" --out "$WORK/rims"
# A revocation list of the test PCK CA past its nextUpdate (2020-02-01), made with openssl ca.
mkdir "$WORK/ca" && touch "$WORK/ca/index.txt" && echo 01 >"$WORK/ca/crlnumber"
printf '[ca]\ndefault_ca = d\n[d]\ndatabase = %s\ncrlnumber = %s\ndefault_md = sha256\n' \
  "$WORK/ca/index.txt" "$WORK/ca/crlnumber" >"$WORK/ca/ca.cnf"
openssl ca -batch -config "$WORK/ca/ca.cnf" -gencrl -keyfile "$R/intel_pck_ca.key.pem" -cert "$R/intel_pck_ca.pem" \
  -crl_lastupdate 20200101000000Z -crl_nextupdate 20200201000000Z -out "$WORK/old.crl.pem" 2>/dev/null
train=(train --model gpt2-tiny --steps 1 --batch 2 --seq 16 --threads 1 --no-progress --timeout 20
  --data "$WORK/sealed/tiny" --key-file "$WORK/k.key" --tee fast --attestation tdx+gpu --test-roots "$R"
  --allow-test-roots --tsm-dir "$WORK/tsm{rank}" --qe-identity "$WORK/qe.json" --tcb-info "$WORK/tcb_old.json"
  --collateral-chain "$R/intel_qe_identity_chain.pem" --evidence-crl "$WORK/old.crl.pem" --gpu-rims "$WORK/rims")
# Each rank's NVML stand-in writes its own report files; rank 1's GPU reports OFF_BLOCK when it is set.
cat >"$WORK/rank.sh" <<EOF
#!/usr/bin/env bash
r=\$OMPI_COMM_WORLD_RANK
export LD_LIBRARY_PATH="$FAKE_NVML" TT_FAKE_NVML_VENDOR="$VENDOR" TT_FAKE_NVML_VENDOR_DIR="$R" \\
  TT_FAKE_NVML_REPORT="$WORK/gpu\$r.bin" TT_FAKE_NVML_CHAIN="$WORK/gpu\$r.pem"
[[ \$r == 1 && -n "\${OFF_BLOCK:-}" ]] && export TT_FAKE_NVML_VENDOR_ARGS="--block \$OFF_BLOCK"
exec "$TT" "\$@"
EOF
chmod +x "$WORK/rank.sh"

FAKES=()
trap 'for p in "${FAKES[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$WORK"' EXIT
for r in 0 1; do
  cp -r "$R" "$WORK/tsm$r.roots"  # each stand-in writes its quotes there
  python3 tests/cli/fake_tsm.py "$WORK/tsm$r" --provider tdx_guest --vendor "$VENDOR" --vendor-dir "$WORK/tsm$r.roots" \
    --ready "$WORK/tsm$r.ready" 2>>"$WORK/fake.log" &
  FAKES+=($!)
done
for r in 0 1; do
  for _ in $(seq 1 600); do [[ -e "$WORK/tsm$r.ready" ]] && break; sleep 0.1; done
done

rc=0
mpirun --oversubscribe -np 2 "$WORK/rank.sh" "${train[@]}" --allow-expired-collateral --summary "$WORK/s.json" \
  >"$WORK/ok.log" 2>&1 || rc=$?
expect_eq "$rc" 0 "expired TCB info and revocation list accepted by --allow-expired-collateral: the run trains"
[[ $rc == 0 ]] || tail -3 "$WORK/ok.log"
check "the banner says which revocation list expired and was accepted" \
  grep -q "1 revocation list(s); EXPIRED collateral accepted (--allow-expired-collateral): revocation list '.*old.crl.pem' (nextUpdate 2020-02-01T00:00:00Z)" "$WORK/ok.log"
check "the banner says the GPU RIMs were checked" grep -q "GPU RIMs: 2 from .*rims checked" "$WORK/ok.log"
check "the banner says what Intel collateral was checked and which expired" \
  grep -q "Intel collateral: QE identity checked, TCB status checked; EXPIRED collateral accepted (--allow-expired-collateral): TCB info .*tcb_old.json (nextUpdate " "$WORK/ok.log"
check "the summary's verifier says the same" python3 -c "
import json
v = json.load(open('$WORK/s.json'))['attestation']['evidence']['verifier']
assert 'QE identity checked, TCB status checked; EXPIRED collateral accepted' in v and 'AMD TCB collateral NOT checked' in v, v
assert 'old.crl.pem' in v and 'GPU RIMs: 2 from' in v, v
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
finish
