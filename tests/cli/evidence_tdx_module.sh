#!/usr/bin/env bash
# The TDX module's identity in Intel's TCB info (Note [TDX module identity], tee/evidence/tdx_tcb_info.h),
# as `teetrain verify-evidence --tcb-info` checks it (docs/reference/verify-evidence.md):
#   - Intel's published sample (go-tdx-guest's, tests/fixtures/evidence) has tdxModule alone: the SPR
#     quote's MRSIGNERSEAM and SEAMATTRIBUTES (zero) match it, its module major version is 0 (no module
#     TCB level), and the quote is still refused for its platform's TCB level, as before;
#   - the test vendor's TCB info with tdxModuleIdentities: a quote of module major version 2 is checked
#     against TDX_02 and its module TCB level is in the verdict; another MRSIGNERSEAM is refused (exit 3)
#     naming it; a quote of a major version the TCB info has no identity for is refused naming TDX_03; an
#     OutOfDate module makes the platform OutOfDate (refused unless the policy's tdx.min_tcb_status
#     accepts it); without tdxModuleIdentities the verdict says the module's TCB level was NOT checked.
source "$(dirname "$0")/lib.sh" "$@"
VENDOR="$2"
F=tests/fixtures/evidence
V=("$TT" verify-evidence)

rc=0
out=$("${V[@]}" $F/tdx_prod_quote_SPR_E4.dat --collateral-chain $F/intel_tcb_signing_chain.pem \
  --tcb-info $F/intel_tcb_info_50806f000000.json --at 2023-06-20 2>&1) || rc=$?
expect_eq "$rc" 3 "Intel's sample: the SPR platform is below both TCB levels"
check "Intel's sample: refused for the platform's TCB level" grep -q \
  "TCB status check failed: the platform .* is below every TCB level of FMSPC 50806f000000" <<<"$out"
check "Intel's sample: the SPR quote's module is tdxModule's" \
  grep -q "^  TDX module          ok: tdxModule's signer and attributes (major version 0: no module TCB level)$" <<<"$out"

R="$WORK/roots"
"$VENDOR" roots --dir "$R"
ALLOW=(--test-roots "$R" --allow-test-roots --collateral-chain "$R/intel_qe_identity_chain.pem")
"$VENDOR" tdx --dir "$R" --tcb "$(printf '02%.0s' {1..16})" --out "$WORK/q.dat"
"$VENDOR" tcb-info --dir "$R" --tdx-tcb "$(printf '02%.0s' {1..16})" --out "$WORK/tcb.json"
out=$("${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --tcb-info "$WORK/tcb.json")
check "module major version 2: TDX_02's level in the verdict" grep -q \
  "^verdict: VERIFIED under TEST ROOTS .*; TCB info checked: FMSPC 7e5700000000, TCB level of 2026-01-01T00:00:00Z: UpToDate; TDX module: TDX_02's signer and attributes, ISVSVN 2 at TCB level of 2026-01-01T00:00:00Z: UpToDate;" <<<"$out"
"$VENDOR" tdx --dir "$R" --tcb "$(printf '02%.0s' {1..16})" --mrsigner-seam "$(printf 'ab%.0s' {1..48})" --out "$WORK/other.dat"
expect_exit 3 "TDX module check failed: the quote's MRSIGNERSEAM abababab.* is not the TDX module signer 00000000.* of the TCB info's TDX_02" -- \
  "${V[@]}" "$WORK/other.dat" "${ALLOW[@]}" --tcb-info "$WORK/tcb.json"
"$VENDOR" tdx --dir "$R" --tcb "0203$(printf '02%.0s' {1..14})" --out "$WORK/major3.dat"
expect_exit 3 "TDX module check failed: the TCB info has no TDX module identity TDX_03" -- \
  "${V[@]}" "$WORK/major3.dat" "${ALLOW[@]}" --tcb-info "$WORK/tcb.json"
"$VENDOR" tcb-info --dir "$R" --tdx-tcb "$(printf '02%.0s' {1..16})" --module-status OutOfDate --out "$WORK/tcb_ood.json"
expect_exit 3 "TCB status check failed: .*: UpToDate, combined with the TDX module's: OutOfDate \(refused: .*; TDX module: TDX_02's .*: OutOfDate$" -- \
  "${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --tcb-info "$WORK/tcb_ood.json"
printf 'teetrain-evidence-policy 1\ntdx.min_tcb_status = OutOfDate\n' >"$WORK/ood_policy.txt"
check "an OutOfDate module accepted by tdx.min_tcb_status = OutOfDate" \
  "${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --tcb-info "$WORK/tcb_ood.json" --policy "$WORK/ood_policy.txt"
"$VENDOR" tcb-info --dir "$R" --tdx-tcb "$(printf '02%.0s' {1..16})" --no-module-identities --out "$WORK/tcb_v2.json"
out=$("${V[@]}" "$WORK/q.dat" "${ALLOW[@]}" --tcb-info "$WORK/tcb_v2.json")
check "without tdxModuleIdentities the verdict says the module's TCB level was not checked" grep -q \
  "^verdict: VERIFIED .*TDX module: tdxModule's signer and attributes; its TCB level NOT checked (the TCB info has no tdxModuleIdentities)" <<<"$out"
finish
