#!/usr/bin/env bash
# `teetrain verify-evidence` on real AMD SEV-SNP reports (tests/fixtures/evidence/: two Milan reports
# with their VCEKs), as README.md and docs/reference/verify-evidence.md show it: each verifies with its
# REPORT_DATA (exit 0, the verdict line, every field printed, the debug policy flagged) and is refused
# (exit 3, one line naming the failed check) with another nonce, a flipped MEASUREMENT, REPORT_DATA or
# signature byte, the other chip's VCEK, a Turin VCEK, the Genoa root, a chain cut short; malformed
# input is exit 2 naming what and what to do. Everything offline.
source "$(dirname "$0")/lib.sh" "$@"
F=tests/fixtures/evidence
ROOTS=tee/evidence/roots
VIRTEE=$F/snp_milan_virtee_report.bin
VIRTEE_VCEK=$F/snp_milan_virtee_vcek.der
VIRTEE_RD=d447b55d197491bfe15cf298f9de9986b7a7c4be2468b4f6e2d53b71d7c645810b0f2cdfca0040433be063fc1a8293f0f3f8dae7b79fecb3d1cd82bd6a93ebfd
GSG=$F/snp_milan_gsg_report.bin
GSG_VCEK=$F/snp_milan_gsg_vcek.der
GSG_NONCE=0102030405000000000000000000000000000000000000000000000000000000
OTHER_NONCE=$(printf '%064d' 7)
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $1"; [[ -n ${2:-} ]] && tail -5 "$2"; fails=$((fails + 1)); }
# flip IN OUT OFFSET: a copy of the report with one bit of the byte at OFFSET flipped.
flip() { python3 -c "import sys; b=bytearray(open(sys.argv[1],'rb').read()); b[int(sys.argv[3])]^=1; open(sys.argv[2],'wb').write(b)" "$@"; }

# Both samples verify: all 64 bytes of REPORT_DATA (128 hex digits), or 32 bytes followed by zeros.
"$TT" verify-evidence $VIRTEE --vcek $VIRTEE_VCEK --nonce $VIRTEE_RD >"$WORK/virtee.log" 2>&1 && ok || bad "virtee sample verifies" "$WORK/virtee.log"
grep -q "^verdict: VERIFIED: AMD SEV-SNP report: VCEK chain to CN=ARK-Milan,.*, report signature, chip id, reported TCB, report data (fresh), revocation NOT checked (no --crl); policy: debug not allowed; .*NOT checked" \
  "$WORK/virtee.log" && ok || bad "virtee verdict" "$WORK/virtee.log"
for field in "MEASUREMENT         7a1e5c266c0108dbc9bb94fa92695132" "REPORT_DATA         $VIRTEE_RD" \
  "POLICY              0x0000000000030000: ABI 0.0 or later; SMT allowed; debug not allowed" \
  "REPORTED_TCB        boot loader 3, TEE 0, SNP 8, microcode 115" "CHIP_ID             d49554ec717f4e5b" \
  "CURRENT firmware    1.52 build 4" "VCEK product        Milan-B0" "signing key VCEK" \
  "certificate chain   ok: the VCEK (signed RSASSA-PSS) leads through the ASK to CN=ARK-Milan" \
  "chip id             ok: CHIP_ID is the VCEK's hwID" "reported TCB        ok"; do
  grep -q "$field" "$WORK/virtee.log" && ok || bad "prints $field" "$WORK/virtee.log"
done
"$TT" verify-evidence $GSG --vcek $GSG_VCEK --nonce $GSG_NONCE >"$WORK/gsg.log" 2>&1 && ok || bad "go-sev-guest sample, 32-byte nonce" "$WORK/gsg.log"
grep -q "^verdict: VERIFIED: AMD SEV-SNP report: .*report data (fresh), revocation NOT checked (no --crl); WARNING: the guest's POLICY ALLOWS DEBUG" "$WORK/gsg.log" && ok ||
  bad "the debug policy is flagged" "$WORK/gsg.log"
grep -q "POLICY              0x00000000000b0000: .*DEBUG ALLOWED" "$WORK/gsg.log" && ok || bad "policy decoded" "$WORK/gsg.log"
"$TT" verify-evidence $GSG --vcek $GSG_VCEK >"$WORK/nononce.log" 2>&1 && ok || bad "no nonce" "$WORK/nononce.log"
grep -q "^verdict: .*report data NOT checked" "$WORK/nononce.log" && ok || bad "verdict says freshness not checked" "$WORK/nononce.log"

# A revocation list no CA of the chain issued checks nothing, and the verdict says so.
"$TT" provision --out "$WORK/vendor" --devices 1 >/dev/null
"$TT" verify-evidence $GSG --vcek $GSG_VCEK --crl "$WORK/vendor/vendor_root.crl" >"$WORK/crl.log" 2>&1 && ok ||
  bad "an unrelated CRL" "$WORK/crl.log"
grep -q "^verdict: .*reported TCB, report data NOT checked, revocation NOT checked (no --crl issued by a CA of the chain)" \
  "$WORK/crl.log" && ok || bad "verdict flags revocation" "$WORK/crl.log"

# Refusals, each naming its check.
expect_exit 3 "nonce check failed: REPORT_DATA d447b55d.* is not this verifier's challenge" -- \
  "$TT" verify-evidence $VIRTEE --vcek $VIRTEE_VCEK --nonce $OTHER_NONCE
for at in $((0x90)) $((0x50)) $((0x2A0 + 5)); do  # MEASUREMENT, REPORT_DATA, the signature's r
  flip $VIRTEE "$WORK/flip.bin" $at
  expect_exit 3 "signature check failed: the report's signature does not verify under the VCEK's P-384 key" -- \
    "$TT" verify-evidence "$WORK/flip.bin" --vcek $VIRTEE_VCEK
done
"$TT" verify-evidence $VIRTEE --vcek $GSG_VCEK >"$WORK/otherchip.log" 2>&1 && bad "another chip's VCEK accepted" || ok
grep -q "chip id             FAILED: CHIP_ID d49554ec717f4e5b.* is not the VCEK's hwID 3ac3fe21e13fb099.*: the VCEK of another chip" \
  "$WORK/otherchip.log" && ok || bad "names the other chip" "$WORK/otherchip.log"
grep -q "reported TCB        FAILED: REPORTED_TCB boot loader 3, .* is not the VCEK's TCB boot loader 2" "$WORK/otherchip.log" && ok ||
  bad "names the other TCB" "$WORK/otherchip.log"
expect_exit 3 "certificate chain check failed: the VCEK is issued by CN=SEV-Turin.*the ASK of no bundled family" -- \
  "$TT" verify-evidence $VIRTEE --vcek $F/snp_turin_virtee_vcek.der
expect_exit 3 "certificate chain check failed: certificate not issued by the trusted vendor root" -- \
  "$TT" verify-evidence $VIRTEE --vcek $VIRTEE_VCEK --device-root $ROOTS/amd_genoa_ark.pem
# With a root of one's own (--device-root), the ASK comes after the VCEK in --vcek; without it the chain is cut.
openssl x509 -inform der -in $VIRTEE_VCEK -out "$WORK/vcek.pem"
cat "$WORK/vcek.pem" $ROOTS/amd_milan_ask.pem >"$WORK/vcek_ask.pem"
"$TT" verify-evidence $VIRTEE --vcek "$WORK/vcek_ask.pem" --device-root $ROOTS/amd_milan_ark.pem >"$WORK/own.log" 2>&1 && ok ||
  bad "own ARK, ASK given" "$WORK/own.log"
grep -q "(--device-root)" "$WORK/own.log" && ok || bad "names the given root" "$WORK/own.log"
expect_exit 3 "certificate chain check failed: certificate not issued by the trusted vendor root" -- \
  "$TT" verify-evidence $VIRTEE --vcek "$WORK/vcek.pem" --device-root $ROOTS/amd_milan_ark.pem
# The VCEK is valid from 2023-04-03: a date before is a refusal, not a silent pass.
expect_exit 3 "certificate chain check failed: .*outside its validity period \(certificate is not yet valid\)" -- \
  "$TT" verify-evidence $VIRTEE --vcek $VIRTEE_VCEK --at 2023-01-01

# Malformed input: exit 2, naming what and what to do.
expect_exit 2 "is an AMD SEV-SNP report: give its VCEK certificate with --vcek FILE" -- "$TT" verify-evidence $VIRTEE
head -c 150 $VIRTEE >"$WORK/short.bin"  # inside MEASUREMENT (0x90 .. 0xC0)
expect_exit 2 "SEV-SNP report: truncated at MEASUREMENT" -- "$TT" verify-evidence "$WORK/short.bin" --vcek $VIRTEE_VCEK
head -c 1184 /dev/urandom >"$WORK/garbage.bin"
expect_exit 2 "SEV-SNP report: VERSION [0-9]+ is not an SEV-SNP report version 2 to 5" -- \
  "$TT" verify-evidence "$WORK/garbage.bin" --vcek $VIRTEE_VCEK
{ cat $VIRTEE; printf 'x'; } >"$WORK/long.bin"
expect_exit 2 "1 bytes after the 1184-byte ATTESTATION_REPORT \(give the report alone" -- \
  "$TT" verify-evidence "$WORK/long.bin" --vcek $VIRTEE_VCEK
expect_exit 2 "--vcek '.*hopper_evidence.json': neither PEM certificates nor one DER certificate" -- \
  "$TT" verify-evidence $VIRTEE --vcek $F/hopper_evidence.json
expect_exit 2 "--vcek is for an SEV-SNP report; .* is a TDX quote" -- \
  "$TT" verify-evidence $F/tdx_prod_quote_SPR_E4.dat --vcek $VIRTEE_VCEK
expect_exit 2 "--rim, --gpu-rim-crl and --cert-chain are for NVIDIA evidence; .* is an SEV-SNP report" -- \
  "$TT" verify-evidence $VIRTEE --vcek $VIRTEE_VCEK --rim $F/g520_0200_885_9600740001_PROD.swidtag
"$TT" verify-evidence --help >"$WORK/help.log" 2>&1 || bad "help"
grep -q -- "--vcek" "$WORK/help.log" && ok || bad "--help names --vcek" "$WORK/help.log"
grep -q "SEV-SNP" "$WORK/help.log" && ok || bad "--help names SEV-SNP" "$WORK/help.log"
finish
