#!/usr/bin/env bash
# `teetrain verify-evidence --test-roots DIR [--allow-test-roots]` on the test vendor's evidence
# (tests/support/test_vendor, Note [Test roots]), as docs/reference/verify-evidence.md shows it:
#   - an Intel TDX quote, an SEV-SNP report and NVIDIA GPU evidence issued under the test roots verify
#     with --allow-test-roots, the verdict saying TEST ROOTS;
#   - without --allow-test-roots each is refused, exit 3, naming the test root; without --test-roots
#     the chain to the vendors' bundled roots fails (exit 3);
#   - the revoked leaf (with its CA's CRL) and the expired leaf fail the chain (exit 3) naming why; a
#     damaged MRTD fails the quote's signature;
#   - --allow-test-roots alone, and a directory of roots without the test label, are bad input (exit 2);
#   - Intel's QE identity read offline (--qe-identity, --collateral-chain): the test vendor's, current,
#     is checked and the verdict says so; an expired one is refused (exit 3) unless
#     --allow-expired-collateral, which the verdict reports; an OutOfDate QE is refused;
#   - Intel's TCB info (--tcb-info): the platform's TCB level and status in the verdict; OutOfDate
#     refused unless a policy's tdx.min_tcb_status accepts it, Revoked always; another FMSPC and an
#     expired TCB info refused (exit 3), the expiry accepted only with --allow-expired-collateral;
#   - docs/reference/attestation-policy.md: a policy written from a trusted quote passes it; a quote with
#     another MRTD and debug allowed fails both fields, named in one refusal (exit 3); a policy with a
#     typo is bad input (exit 2) naming the line and the closest field;
#   - NVIDIA's RIM CRLs (--gpu-rim-crl, a file or a directory): a current one of the whole chain
#     ("RIM signing chain not revoked"), one revoking the RIM signer (exit 3, naming it), an expired one
#     (refused; accepted with --allow-expired-collateral, the verdict naming it), one of another CA (the
#     signer named as NOT checked);
#   - verify-evidence --allow-expired-collateral accepts an expired --crl, the verdict naming it in a
#     run's words.
source "$(dirname "$0")/lib.sh" "$@"
VENDOR="$2"
R="$WORK/roots"
"$VENDOR" roots --dir "$R"
RD=$(printf '%064d' 42)$(printf '%064d' 0)
NONCE=$(printf '%064d' 42)
V=("$TT" verify-evidence)
ALLOW=(--test-roots "$R" --allow-test-roots)

"$VENDOR" tdx --dir "$R" --report-data "$RD" --mrtd "$(printf 'ab%.0s' {1..48})" --out "$WORK/q.dat"
"$VENDOR" snp --dir "$R" --report-data "$RD" --tcb 0300000000000873 --out "$WORK/r.bin" --vcek-out "$WORK/vcek.pem"
"$VENDOR" gpu --dir "$R" --nonce "$NONCE" --out "$WORK/gpu.json"
for e in "q.dat" "r.bin --vcek $WORK/vcek.pem" "gpu.json"; do
  read -r file extra <<<"$e"
  # shellcheck disable=SC2086
  out=$("${V[@]}" "$WORK/$file" $extra --nonce "$NONCE" "${ALLOW[@]}")
  grep -q "^verdict: VERIFIED under TEST ROOTS" <<<"$out" && ok=1 || ok=0
  expect_eq "$ok" 1 "$file verifies under the allowed test roots, the verdict saying so"
  # shellcheck disable=SC2086
  expect_exit 3 "evidence REFUSED: .*trust roots check failed: .*test root.*refused without --allow-test-roots" -- \
    "${V[@]}" "$WORK/$file" $extra --nonce "$NONCE" --test-roots "$R"
  # shellcheck disable=SC2086
  expect_exit 3 "evidence REFUSED: .*certificate chain check failed" -- "${V[@]}" "$WORK/$file" $extra --nonce "$NONCE"
done

"$VENDOR" tdx --dir "$R" --report-data "$RD" --variant revoked --out "$WORK/revoked.dat"
expect_exit 3 "certificate chain check failed: .*revoked" -- \
  "${V[@]}" "$WORK/revoked.dat" --crl "$R/intel_pck_ca.crl.pem" "${ALLOW[@]}"
"$VENDOR" snp --dir "$R" --report-data "$RD" --variant expired --out "$WORK/expired.bin" --vcek-out "$WORK/expired.pem"
expect_exit 3 "certificate chain check failed: .*expired" -- \
  "${V[@]}" "$WORK/expired.bin" --vcek "$WORK/expired.pem" "${ALLOW[@]}"
"$VENDOR" snp --dir "$R" --report-data "$RD" --variant revoked --out "$WORK/revoked.bin" --vcek-out "$WORK/revoked.pem"
expect_exit 3 "certificate chain check failed: .*revoked" -- \
  "${V[@]}" "$WORK/revoked.bin" --vcek "$WORK/revoked.pem" --crl "$R/amd_ask.crl.pem" "${ALLOW[@]}"
"$VENDOR" gpu --dir "$R" --nonce "$NONCE" --variant revoked --out "$WORK/gpu_revoked.json"
expect_exit 3 "certificate chain check failed: .*revoked" -- \
  "${V[@]}" "$WORK/gpu_revoked.json" --crl "$R/nvidia_device_ca.crl.pem" "${ALLOW[@]}"
cp "$WORK/q.dat" "$WORK/damaged.dat"
flip_byte "$WORK/damaged.dat" $((48 + 136))
expect_exit 3 "signature check failed" -- "${V[@]}" "$WORK/damaged.dat" "${ALLOW[@]}"

expect_exit 2 "--allow-test-roots needs --test-roots DIR" -- "${V[@]}" "$WORK/q.dat" --allow-test-roots
mkdir "$WORK/not_test"
cp tee/evidence/roots/intel_sgx_root_ca.pem "$WORK/not_test/intel_sgx_root.pem"
expect_exit 2 "is not a test root" -- "${V[@]}" "$WORK/q.dat" --test-roots "$WORK/not_test" --allow-test-roots

QE=(--collateral-chain "$R/intel_qe_identity_chain.pem")
"$VENDOR" qe-identity --dir "$R" --out "$WORK/qe.json"
out=$("${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --qe-identity "$WORK/qe.json" "${QE[@]}")
grep -q "^verdict: VERIFIED under TEST ROOTS .*; QE identity checked against Intel's collateral; TCB status NOT checked (no --tcb-info)" <<<"$out" && ok=1 || ok=0
expect_eq "$ok" 1 "the QE identity is checked, the verdict saying so"
"$VENDOR" qe-identity --dir "$R" --out "$WORK/qe_old.json" --next-update -3600
expect_exit 3 "collateral check failed: the QE identity '.*qe_old.json' expired at its nextUpdate" -- \
  "${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --qe-identity "$WORK/qe_old.json" "${QE[@]}"
out=$("${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --qe-identity "$WORK/qe_old.json" "${QE[@]}" --allow-expired-collateral)
grep -q "^verdict: VERIFIED .*; EXPIRED collateral accepted (--allow-expired-collateral): QE identity .*qe_old.json (nextUpdate " <<<"$out" && ok=1 || ok=0
expect_eq "$ok" 1 "accepted expired collateral is reported"
"$VENDOR" qe-identity --dir "$R" --out "$WORK/qe_ood.json" --status OutOfDate
expect_exit 3 "QE identity check failed: .*OutOfDate" -- \
  "${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --qe-identity "$WORK/qe_ood.json" "${QE[@]}"
expect_exit 2 "--qe-identity and --tcb-info need --collateral-chain" -- "${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --qe-identity "$WORK/qe.json"

# Intel's TCB info (--tcb-info): the platform's level and status in the verdict; OutOfDate refused unless
# the policy's tdx.min_tcb_status accepts it, Revoked always; another FMSPC, an expired one refused.
"$VENDOR" tcb-info --dir "$R" --out "$WORK/tcb.json"
out=$("${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --tcb-info "$WORK/tcb.json" "${QE[@]}")
grep -q "^verdict: VERIFIED under TEST ROOTS .*; TCB info checked: FMSPC 7e5700000000, TCB level of 2026-01-01T00:00:00Z: UpToDate.*; QE identity NOT checked (no --qe-identity)$" <<<"$out" && ok=1 || ok=0
expect_eq "$ok" 1 "the TCB level's status and date are in the verdict"
"$VENDOR" tcb-info --dir "$R" --out "$WORK/tcb_ood.json" --status OutOfDate
expect_exit 3 "TCB status check failed: .*: OutOfDate \(refused: the lowest status accepted is ConfigurationAndSWHardeningNeeded\)" -- \
  "${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --tcb-info "$WORK/tcb_ood.json" "${QE[@]}"
printf 'teetrain-evidence-policy 1\ntdx.min_tcb_status = OutOfDate\n' >"$WORK/ood_policy.txt"
"${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --tcb-info "$WORK/tcb_ood.json" "${QE[@]}" --policy "$WORK/ood_policy.txt" >/dev/null &&
  ok=1 || ok=0
expect_eq "$ok" 1 "a policy's tdx.min_tcb_status = OutOfDate accepts an OutOfDate platform"
"$VENDOR" tcb-info --dir "$R" --out "$WORK/tcb_rev.json" --status Revoked
expect_exit 3 "TCB status check failed: .*: Revoked \(refused: .*Revoked never is\)" -- \
  "${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --tcb-info "$WORK/tcb_rev.json" "${QE[@]}" --policy "$WORK/ood_policy.txt"
"$VENDOR" tcb-info --dir "$R" --out "$WORK/tcb_other.json" --fmspc 00906ed50000
expect_exit 3 "TCB status check failed: the TCB info is for FMSPC 00906ed50000, the PCK certificate's platform is FMSPC 7e5700000000" -- \
  "${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --tcb-info "$WORK/tcb_other.json" "${QE[@]}"
"$VENDOR" tcb-info --dir "$R" --out "$WORK/tcb_old.json" --next-update -3600
expect_exit 3 "collateral check failed: the TCB info '.*tcb_old.json' expired at its nextUpdate" -- \
  "${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --tcb-info "$WORK/tcb_old.json" "${QE[@]}"
out=$("${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --tcb-info "$WORK/tcb_old.json" "${QE[@]}" --allow-expired-collateral)
grep -q "; EXPIRED collateral accepted (--allow-expired-collateral): TCB info .*tcb_old.json (nextUpdate " <<<"$out" && ok=1 || ok=0
expect_eq "$ok" 1 "accepted expired TCB info is named in the verdict"

"$TT" attestation-policy --from "$WORK/q.dat" --out "$WORK/policy.txt" >"$WORK/policy.log"
grep -q "^tdx.mrtd = $(printf 'ab%.0s' {1..48})$" "$WORK/policy.txt" && ok=1 || ok=0
expect_eq "$ok" 1 "the policy lists the trusted quote's MRTD"
grep -q "^tdx.debug = refuse$" "$WORK/policy.txt" && ok=1 || ok=0
expect_eq "$ok" 1 "the policy refuses debug"
out=$("${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --policy "$WORK/policy.txt")
grep -q "^verdict: VERIFIED under TEST ROOTS .*; policy [0-9a-f]\{16\}\.\.\. passes" <<<"$out" && ok=1 || ok=0
expect_eq "$ok" 1 "the trusted quote passes its policy, the verdict naming its digest"
"$VENDOR" tdx --dir "$R" --report-data "$RD" --mrtd "$(printf 'cd%.0s' {1..48})" --td-attributes 1 --out "$WORK/off.dat"
expect_exit 3 "policy check failed: tdx.mrtd: cdcdcdcdcdcdcdcd\.\.\. is not one of the 1 value\(s\) the policy allows; tdx.debug: the evidence allows DEBUG" -- \
  "${V[@]}" "$WORK/off.dat" "${ALLOW[@]}" --policy "$WORK/policy.txt"
sed 's/^tdx.mrtd/tdx.mrdt/' "$WORK/policy.txt" >"$WORK/typo.txt"
expect_exit 2 "typo.txt': line 4: unknown field 'tdx.mrdt' \(did you mean tdx.mrtd\?\)" -- \
  "${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --policy "$WORK/typo.txt"

# NVIDIA's RIM CRLs (--gpu-rim-crl): each RIM signing certificate against its issuer's list. The test
# vendor's RIM root issues three: current and empty, current and revoking the RIM signer, expired.
"$VENDOR" rims --dir "$R" --out "$WORK/rims" --crl-out "$WORK/rimcrl"
RC="$WORK/rimcrl"
G=("${V[@]}" "$WORK/gpu.json" --nonce "$NONCE" --rim "$WORK/rims/driver.swidtag" --rim "$WORK/rims/vbios.swidtag" "${ALLOW[@]}")
out=$("${G[@]}")
grep -q "^verdict: VERIFIED .*RIM signing chain's revocation NOT checked (no --gpu-rim-crl)" <<<"$out" && ok=1 || ok=0
expect_eq "$ok" 1 "without --gpu-rim-crl the verdict says the RIM signing chain's revocation is NOT checked"
out=$("${G[@]}" --gpu-rim-crl "$RC/nvidia_rim_root.crl.pem")
grep -q "^verdict: VERIFIED .*every measurement matches the RIMs, RIM signing chain not revoked (checked against 1 --gpu-rim-crl list(s))" <<<"$out" &&
  ! grep -q "RIM signing chain's revocation NOT checked" <<<"$out" && ok=1 || ok=0
expect_eq "$ok" 1 "a current RIM CRL of the whole chain: the verdict says not revoked, and no NOT checked"
expect_exit 3 "evidence REFUSED: .*RIM signature check failed: .*RIM signing certificate 'CN=teetrain TEST NVIDIA RIM signer - not a vendor[^']*' \(serial [0-9a-f]+\) is REVOKED by the revocation list '.*nvidia_rim_root.revoking.crl.pem'" -- \
  "${G[@]}" --gpu-rim-crl "$RC/nvidia_rim_root.revoking.crl.pem"
expect_exit 3 "evidence REFUSED: .*collateral check failed: the revocation list '.*nvidia_rim_root.expired.crl.pem' expired at its nextUpdate" -- \
  "${G[@]}" --gpu-rim-crl "$RC/nvidia_rim_root.expired.crl.pem"
out=$("${G[@]}" --gpu-rim-crl "$RC/nvidia_rim_root.expired.crl.pem" --allow-expired-collateral)
grep -q "^verdict: VERIFIED .*RIM signing chain not revoked (checked against 1 --gpu-rim-crl list(s)); EXPIRED collateral accepted (--allow-expired-collateral): revocation list '.*nvidia_rim_root.expired.crl.pem' (nextUpdate " <<<"$out" && ok=1 || ok=0
expect_eq "$ok" 1 "an expired RIM CRL accepted by --allow-expired-collateral, the verdict naming it"
out=$("${G[@]}" --gpu-rim-crl "$R/nvidia_device_ca.crl.pem")
grep -q "RIM signing chain's revocation NOT checked for 'CN=teetrain TEST NVIDIA RIM signer - not a vendor[^']*' (no --gpu-rim-crl issued by 'CN=teetrain TEST NVIDIA RIM root - not a vendor[^']*')" <<<"$out" && ok=1 || ok=0
expect_eq "$ok" 1 "a list of another CA: the RIM signer's revocation NOT checked, naming it and its issuer"
mkdir "$WORK/rimcrl_dir" && cp "$RC/nvidia_rim_root.revoking.crl.pem" "$WORK/rimcrl_dir/"
expect_exit 3 "RIM signing certificate .* is REVOKED by the revocation list '.*rimcrl_dir/nvidia_rim_root.revoking.crl.pem'" -- \
  "${G[@]}" --gpu-rim-crl "$WORK/rimcrl_dir"
expect_exit 2 "--gpu-rim-crl '.*rims/driver.swidtag': not a PEM or DER revocation list" -- \
  "${G[@]}" --gpu-rim-crl "$WORK/rims/driver.swidtag"
expect_exit 2 "--gpu-rim-crl revokes RIM signing certificates: give the RIMs it is for with --rim" -- \
  "${V[@]}" "$WORK/gpu.json" "${ALLOW[@]}" --gpu-rim-crl "$RC/nvidia_rim_root.crl.pem"

# An expired --crl: refused, naming it, unless --allow-expired-collateral, whose verdict names it in
# the words a run's banner uses (Note [Expired collateral wording]).
make_expired_crl "$R/nvidia_device_ca.pem" "$R/nvidia_device_ca.key.pem" "$WORK/device_old.crl.pem"
expect_exit 3 "collateral check failed: the revocation list '.*device_old.crl.pem' expired at its nextUpdate 2020-02-01T00:00:00Z" -- \
  "${V[@]}" "$WORK/gpu.json" "${ALLOW[@]}" --crl "$WORK/device_old.crl.pem"
out=$("${V[@]}" "$WORK/gpu.json" "${ALLOW[@]}" --crl "$WORK/device_old.crl.pem" --allow-expired-collateral)
grep -q "^verdict: VERIFIED .*not revoked by the given --crl; .*; EXPIRED collateral accepted (--allow-expired-collateral): revocation list '.*device_old.crl.pem' (nextUpdate 2020-02-01T00:00:00Z)$" <<<"$out" && ok=1 || ok=0
expect_eq "$ok" 1 "GPU evidence: an expired --crl accepted by --allow-expired-collateral, the verdict naming it"
make_expired_crl "$R/intel_pck_ca.pem" "$R/intel_pck_ca.key.pem" "$WORK/pck_old.crl.pem"
out=$("${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --crl "$WORK/pck_old.crl.pem" --allow-expired-collateral)
grep -q "^verdict: VERIFIED .*; EXPIRED collateral accepted (--allow-expired-collateral): revocation list '.*pck_old.crl.pem' (nextUpdate 2020-02-01T00:00:00Z)$" <<<"$out" && ok=1 || ok=0
expect_eq "$ok" 1 "TDX quote: an expired --crl accepted by --allow-expired-collateral, the verdict naming it"
finish
