#!/usr/bin/env bash
# `train --attestation tdx|snp[+gpu]` without confidential hardware (docs/confidential-vms.md), under
# mpirun, each rank gathering through STAND-INS: tests/cli/fake_tsm.py for the kernel's configfs-tsm and
# tests/cli/fake_nvml.cpp for NVML, which have the TEST vendor (tests/support/test_vendor) sign over the
# challenge each rank asks for:
#   - absent hardware and misused flags: exit 2, one line naming what is missing and what to do
#     (scripts/check-confidential-vm.sh too);
#   - 2 and 4 ranks train with tdx+gpu and snp under the test roots, the summary saying "test roots",
#     the kind, and each neighbour's verified measurements;
#   - refused on every rank (exit 3, one verdict line naming the check): evidence under a test root
#     without --allow-test-roots, a measurement off the --attestation-policy, a debug TD, a revoked and
#     an expired certificate; the adversary's substituted key, a stale nonce, reflected evidence (at
#     P = 2) and another rank's relayed evidence (at P = 3: it needs a third rank); the fuzzed message
#     runs in-process in tests/comm/test_real_evidence.cpp. Each run prints its wall time.
#   - every rank's verified measurements in the summary, each naming its verifiers (Note [Attestation
#     record]), and their digest among the agreed inputs.
#   - with Intel's collateral (the test vendor's TCB info): the summary lists each collateral file's
#     digest, as the agreed inputs hold it; rank 1 given another, equally valid, TCB info stops every
#     rank (exit 3) naming it (Note [Collateral in the agreed inputs]); a quote whose MRSIGNERSEAM is not
#     the TCB info's TDX module's is refused on every rank, naming it (Note [TDX module identity]).
source "$(dirname "$0")/lib.sh" "$@"
FAKE_NVML="$2"
VENDOR="$3"
attestation_setup  # lib.sh: $R, the sealed corpus, $WORK/rank.sh; serve starts the stand-ins
"$VENDOR" tcb-info --dir "$R" --out "$WORK/tcb0.json"
"$VENDOR" tcb-info --dir "$R" --out "$WORK/tcb1.json" --next-update 86400  # as valid, other bytes
INTEL=(--tcb-info "$WORK/tcb0.json" --collateral-chain "$R/intel_qe_identity_chain.pem")
train=(train --model gpt2-tiny --steps 1 --batch 2 --seq 16 --threads 1 --no-progress --timeout 20
  --data "$WORK/sealed/tiny" --key-file "$WORK/k.key" --tee fast)
ALLOW=(--test-roots "$R" --allow-test-roots)

# Absent hardware, and flags that belong to the other attestation: exit 2, before any handshake.
expect_exit 2 "^teetrain: error: --attestation tdx: rank 0: no configfs-tsm report directory at '$WORK/none' .*scripts/check-confidential-vm.sh" -- \
  "$TT" "${train[@]}" --attestation tdx --tsm-dir "$WORK/none"
mkdir -p "$WORK/empty"
expect_exit 2 "--attestation snp needs this rank's VCEK: --vcek FILE" -- \
  "$TT" "${train[@]}" --attestation snp --tsm-dir "$WORK/empty"
expect_exit 2 "--attestation tdx\+gpu verifies the hardware's own evidence .*drop --trust-root" -- \
  "$TT" "${train[@]}" --attestation tdx+gpu --tsm-dir "$WORK/empty" --trust-root "$WORK/none.crt"
expect_exit 2 "--test-roots and --allow-test-roots are for real evidence: add --attestation" -- \
  "$TT" "${train[@]}" "${ALLOW[@]}"
if ! grep -qwE 'tdx_guest|sev_snp' /proc/cpuinfo; then
  rc=0
  scripts/check-confidential-vm.sh --gpu --teetrain "$TT" --tsm-dir "$WORK/none" >"$WORK/check.log" || rc=$?
  expect_eq "$rc:$(grep -c '^  MISSING  ' "$WORK/check.log")" "2:3" "check-confidential-vm.sh: exit 2 naming 3 missing pieces"
fi

run() { # np log tsm-name args...: mpirun's exit code in $rc; its wall time printed (not checked)
  local np="$1" log="$2" name="$3" t0=$EPOCHREALTIME
  shift 3
  rc=0
  mpirun --oversubscribe -np "$np" "$WORK/rank.sh" "${train[@]}" --tsm-dir "$WORK/$name{rank}" "$@" >"$log" 2>&1 || rc=$?
  echo "time: $(basename "$log" .log) at P=$np: $(python3 -c "print(f'{$EPOCHREALTIME - $t0:.1f}')") s"
}
refused() { # name pattern log: exit 3, one verdict line matching pattern
  expect_eq "$rc" 3 "$1: exit"
  if grep -qE -- "^teetrain: INTEGRITY FAILURE: attestation refused on every rank: .*$2" "$3"; then
    passes=$((passes + 1))
  else
    echo "FAIL: $1: no verdict matches /$2/"; tail -6 "$3"; fails=$((fails + 1))
  fi
  expect_eq "$(grep -c "INTEGRITY FAILURE" "$3")" 1 "$1: one verdict line"
}

PROVIDER=tdx_guest
serve tdx 4
for np in 2 4; do
  run $np "$WORK/tdx$np.log" tdx --attestation tdx+gpu "${ALLOW[@]}" "${INTEL[@]}" --summary "$WORK/tdx$np.json"
  expect_eq "$rc" 0 "tdx+gpu at P=$np"
  [[ $rc == 0 ]] || { grep -h "^teetrain: " "$WORK/tdx$np.log" | head -3 | cut -c1-400 || true; }
  check "tdx+gpu at P=$np: without --gpu-rims the banner says the RIMs were not checked" \
    grep -q "GPU RIMs: not checked (no --gpu-rims)" "$WORK/tdx$np.log"
  check "tdx+gpu at P=$np: the banner names the kind and the test roots" \
    grep -q "attestation real evidence: Intel TDX and NVIDIA GPUs, each bound to its rank's key (TEST ROOTS" "$WORK/tdx$np.log"
  check "tdx+gpu at P=$np: the summary's attestation record" python3 -c "
import json, sys
s = json.load(open('$WORK/tdx$np.json'))
e = s['attestation']['evidence']
assert e['kind'] == 'tdx+gpu' and e['test_roots'] is True, e
ranks = e['ranks']  # every rank, each as its ring neighbours verified it
assert [r['rank'] for r in ranks] == list(range($np)), e
assert all(sorted(v['rank'] for v in r['verified_by']) == sorted({(r['rank'] + 1) % $np, (r['rank'] - 1) % $np}) for r in ranks), e
assert all('tdx.mrtd' in r['measurements'] and 'gpu.driver_version' in r['measurements'] for r in ranks), e
assert all(v['roots'] == 'test roots' and 'NOT checked' in v['not_checked'] for r in ranks for v in r['verified_by']), e
assert s['agreed_inputs']['attestation_record']['sha256'] == e['record_sha256'], s['agreed_inputs']
files = {c['kind']: c['sha256'] for c in e['collateral']}
assert set(files) == {'TCB info', 'collateral chain'} and e['collateral'][0]['file'].endswith('tcb0.json'), e
assert {k: v['sha256'] for k, v in s['agreed_inputs']['collateral'].items()} == files, s['agreed_inputs']
"
done
run 2 "$WORK/tcb.log" tdx --attestation tdx "${ALLOW[@]}" --tcb-info "$WORK/tcb@RANK@.json" \
  --collateral-chain "$R/intel_qe_identity_chain.pem"
expect_eq "$rc" 3 "another TCB info on rank 1: exit"
check "another TCB info on rank 1: every rank stops naming it" grep -qE \
  "^teetrain: INTEGRITY FAILURE: .*rank 1's collateral TCB info differs from rank 0's \(sha256 [0-9a-f]{16}\.\.\. vs [0-9a-f]{16}\.\.\.\)" \
  "$WORK/tcb.log"
run 2 "$WORK/untrusted.log" tdx --attestation tdx --test-roots "$R"
refused "test roots without --allow-test-roots" "rank [01]: Intel TDX quote: trust roots check failed: .*test root" "$WORK/untrusted.log"
printf 'teetrain-evidence-policy 1\ntdx.mrtd = %s\n' "$(printf 'cd%.0s' {1..48})" >"$WORK/policy"
run 2 "$WORK/policy.log" tdx --attestation tdx "${ALLOW[@]}" --attestation-policy "$WORK/policy"
refused "measurement off policy" "rank [01]: Intel TDX quote: off policy: tdx.mrtd: " "$WORK/policy.log"
run 2 "$WORK/key.log" tdx --attestation tdx "${ALLOW[@]}" --adversary substitute-key@0
refused "substituted key" "rank 0: key substituted: the evidence's REPORTDATA is not kx_challenge" "$WORK/key.log"
run 3 "$WORK/relay.log" tdx --attestation tdx "${ALLOW[@]}" --adversary relay@0
refused "relay" "rank 0: relayed evidence: rank 2's evidence arrived from rank 0" "$WORK/relay.log"
run 2 "$WORK/stale.log" tdx --attestation tdx "${ALLOW[@]}" --adversary stale-nonce@0
refused "stale nonce" "rank 1: stale nonce: the evidence answers another verifier nonce than the one rank 0 sent it .*\\(reported by rank 0\\)" "$WORK/stale.log"
run 2 "$WORK/reflect.log" tdx --attestation tdx "${ALLOW[@]}" --adversary reflect@0
refused "reflected evidence" "rank 0: reflected evidence: rank 1's own evidence came back from rank 0 \\(reported by rank 1\\)" "$WORK/reflect.log"
serve debug 2 --td-attributes 1
run 2 "$WORK/debug.log" debug --attestation tdx "${ALLOW[@]}"
refused "debug TD" "rank 1: Intel TDX quote: off policy: tdx.debug: the evidence allows DEBUG" "$WORK/debug.log"
serve seam 2 --mrsigner-seam "$(printf 'ab%.0s' {1..48})"
run 2 "$WORK/seam.log" seam --attestation tdx "${ALLOW[@]}" "${INTEL[@]}"
refused "another TDX module signer" "rank 1: Intel TDX quote: TDX module check failed: the quote's MRSIGNERSEAM abababab" "$WORK/seam.log"
serve revoked 2 --variant revoked
run 2 "$WORK/revoked.log" revoked --attestation tdx "${ALLOW[@]}" --evidence-crl "$R/intel_pck_ca.crl.pem"
refused "revoked certificate" "rank 1: Intel TDX quote: certificate chain check failed: .*revoked" "$WORK/revoked.log"

PROVIDER=sev_guest
serve snp 4
for np in 2 4; do
  run $np "$WORK/snp$np.log" snp --attestation snp --vcek "$WORK/snp{rank}.vcek" "${ALLOW[@]}"
  expect_eq "$rc" 0 "snp at P=$np"
done
serve expired 2 --variant expired
run 2 "$WORK/expired.log" expired --attestation snp --vcek "$WORK/expired{rank}.vcek" "${ALLOW[@]}"
refused "expired certificate" "rank 1: AMD SEV-SNP report: certificate chain check failed: .*expired" "$WORK/expired.log"

finish
