#!/usr/bin/env bash
# `teetrain verify-evidence` on real sample evidence (tests/fixtures/evidence/: NVIDIA's, and Intel TDX
# quotes), as README.md and docs/reference/verify-evidence.md show it: each sample
# verifies with its nonce (exit 0, the verdict line) and is refused (exit 3, one line naming the failed
# check) with another nonce, one flipped signature byte, one flipped measurement byte, its certificate
# chain cut short; RIMs: an expired signer, a version that is not the GPU's, an altered golden value;
# malformed input is exit 2 naming what and what to do. Everything offline.
source "$(dirname "$0")/lib.sh" "$@"
F=tests/fixtures/evidence
SDK_NONCE=e97b23a1718095a0e9e35edca810768c70a6a5a389b705e753b197912bc11576
LOCAL_NONCE=931d8dd0add203ac3d8b4fbde75e115278eefcdceac5b87671a748f32364dfcb
OTHER_NONCE=$(printf '%064d' 7)
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $1"; [[ -n ${2:-} ]] && tail -5 "$2"; fails=$((fails + 1)); }

# mutate_json IN OUT GPU WHAT: GPU's report with its last byte flipped (WHAT=sig), a byte of measurement
# block 2's value flipped (WHAT=meas), or its chain cut to the leaf and one intermediate (WHAT=chain).
mutate_json() {
  python3 - "$@" <<'PY'
import base64, json, sys
src, dst, gpu, what = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
doc = json.load(open(src))
e = doc[gpu]
if what == "chain":
    pem = base64.b64decode(e["certificate"]).decode()
    certs = pem.split("-----END CERTIFICATE-----")
    e["certificate"] = base64.b64encode(("-----END CERTIFICATE-----".join(certs[:2]) + "-----END CERTIFICATE-----\n").encode()).decode()
else:
    r = bytearray(base64.b64decode(e["evidence"]))
    r[len(r) - 1 if what == "sig" else 37 + 8 + 55 + 7 + 5] ^= 1
    e["evidence"] = base64.b64encode(bytes(r)).decode()
json.dump(doc, open(dst, "w"))
PY
}

# The refusals of one JSON sample's GPU (another nonce: the first GPU is named, they all answer one).
refusals_json() {
  local file="$1" gpu="$2"
  [[ $gpu -eq 0 ]] && expect_exit 3 "GPU 0: nonce check failed: the report answers nonce $SDK_NONCE, not this verifier's challenge" -- \
    "$TT" verify-evidence "$file" --nonce "$OTHER_NONCE"
  for what in sig meas; do
    mutate_json "$file" "$WORK/$what.json" "$gpu" "$what"
    expect_exit 3 "GPU $gpu: signature check failed: the report's signature does not verify" -- \
      "$TT" verify-evidence "$WORK/$what.json" --nonce "$SDK_NONCE"
  done
  mutate_json "$file" "$WORK/chain.json" "$gpu" chain
  expect_exit 3 "GPU $gpu: certificate chain check failed: certificate not issued by the trusted vendor root" -- \
    "$TT" verify-evidence "$WORK/chain.json" --nonce "$SDK_NONCE"
}

# The SDK's single-GPU sample, then each GPU of its four-GPU sample.
"$TT" verify-evidence $F/hopper_evidence.json --nonce $SDK_NONCE >"$WORK/one.log" 2>&1 && ok || bad "sdk sample verifies" "$WORK/one.log"
grep -q "^verdict: VERIFIED: 1 NVIDIA GPU(s): certificate chain to O=NVIDIA,CN=NVIDIA Device Identity CA, report signature, nonce (fresh)" \
  "$WORK/one.log" && ok || bad "verdict line" "$WORK/one.log"
for field in "driver version      590.12" "VBIOS version       96.00.a5.00.01" "\[ 64\] digest of mutable firmware" \
  "NVDEC0_STATUS            = disabled" "\[4\] O=NVIDIA,CN=NVIDIA Device Identity CA"; do
  grep -q "$field" "$WORK/one.log" && ok || bad "prints $field" "$WORK/one.log"
done
refusals_json $F/hopper_evidence.json 0
"$TT" verify-evidence $F/multi_gpu_hopper.json --nonce $SDK_NONCE >"$WORK/multi.log" 2>&1 && ok || bad "multi-GPU sample" "$WORK/multi.log"
grep -q "^verdict: VERIFIED: 4 NVIDIA GPU(s)" "$WORK/multi.log" && ok || bad "4 GPUs verified" "$WORK/multi.log"
for gpu in 0 1 2 3; do refusals_json $F/multi_gpu_hopper.json $gpu; done

# The local verifier's report + chain pair.
PAIR=(--cert-chain $F/hopperCertChain.txt)
"$TT" verify-evidence $F/hopperAttestationReport.txt "${PAIR[@]}" --nonce $LOCAL_NONCE >"$WORK/pair.log" 2>&1 && ok ||
  bad "local verifier sample" "$WORK/pair.log"
grep -q "^verdict: VERIFIED: 1 NVIDIA GPU(s)" "$WORK/pair.log" && ok || bad "pair verdict" "$WORK/pair.log"
expect_exit 3 "nonce check failed" -- "$TT" verify-evidence $F/hopperAttestationReport.txt "${PAIR[@]}" --nonce $OTHER_NONCE
flip_hex() { python3 -c "import sys; r=bytearray.fromhex(open(sys.argv[1]).read()); r[int(sys.argv[2])]^=1; print(r.hex())" "$@"; }
flip_hex $F/hopperAttestationReport.txt 4020 >"$WORK/sig.txt"  # the last byte (4117-byte report)
flip_hex $F/hopperAttestationReport.txt $((37 + 8 + 55 + 7 + 5)) >"$WORK/meas.txt"
for f in sig meas; do
  expect_exit 3 "signature check failed" -- "$TT" verify-evidence "$WORK/$f.txt" "${PAIR[@]}" --nonce $LOCAL_NONCE
done
awk '/BEGIN/{n++} n<=2' $F/hopperCertChain.txt >"$WORK/cut.pem"
expect_exit 3 "certificate chain check failed" -- "$TT" verify-evidence $F/hopperAttestationReport.txt \
  --cert-chain "$WORK/cut.pem" --nonce $LOCAL_NONCE

# RIMs: the sample RIM's signer expired in 2025; on 2025-01-01 its signature verifies, and it is refused
# because no public RIM is for this GPU's VBIOS; the differing blocks are listed.
RIM=$F/g520_0200_885_9600740001_PROD.swidtag
expect_exit 3 "RIM signature check failed: .*outside its validity period \(certificate has expired\)" -- \
  "$TT" verify-evidence $F/hopper_evidence.json --rim $RIM
rc=0; "$TT" verify-evidence $F/hopper_evidence.json --rim $RIM --at 2025-01-01 >"$WORK/rim.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "RIM of another VBIOS: exit 3"
grep -q "RIM signature       ok: .*XML signature by CN=HCC RIM L4 Signer" "$WORK/rim.log" && ok || bad "RIM signature ok" "$WORK/rim.log"
grep -q "RIM version check failed: .* is for VBIOS 96.00.74.00.01, this GPU reports VBIOS 96.00.a5.00.01" "$WORK/rim.log" && ok ||
  bad "names the versions" "$WORK/rim.log"
grep -q "6 of 12 measurements differ from the RIMs' golden values: block(s) 2, 3, 4, 10, 12, 13" "$WORK/rim.log" && ok ||
  bad "names the differing blocks" "$WORK/rim.log"
sed 's/b558fdac9af53b91/b558fdac9af53b92/' $RIM >"$WORK/altered.swidtag"
expect_exit 3 "RIM signature check failed: .*does not verify \(RIM altered after signing\?\)" -- \
  "$TT" verify-evidence $F/hopper_evidence.json --rim "$WORK/altered.swidtag" --at 2025-01-01

# Intel TDX v4 quotes (go-tdx-guest's samples): REPORTDATA as --nonce (all 64 bytes, or 32 bytes
# followed by zeros); a flipped MRTD byte, another REPORTDATA, the PCK chain's root replaced.
SPR=$F/tdx_prod_quote_SPR_E4.dat
SPR_RD=6c62dec1b8191749a31dab490be532a35944dea47caef1f980863993d9899545eb7406a38d1eed313b987a467dacead6f0c87a6d766c66f6f29f8acb281f1113
"$TT" verify-evidence $SPR --nonce $SPR_RD >"$WORK/tdx.log" 2>&1 && ok || bad "TDX sample verifies" "$WORK/tdx.log"
grep -q "^verdict: VERIFIED: Intel TDX quote: PCK chain to .*CN=Intel SGX Root CA, QE report, attestation key, quote signature, report data (fresh)" \
  "$WORK/tdx.log" && ok || bad "TDX verdict" "$WORK/tdx.log"
for field in "MRTD                6363b8043668a3ad" RTMR0 RTMR3 "REPORTDATA          $SPR_RD" "CN=Intel SGX PCK Certificate"; do
  grep -q "$field" "$WORK/tdx.log" && ok || bad "TDX prints $field" "$WORK/tdx.log"
done
"$TT" verify-evidence $F/cos-113-tdx-quote.dat --nonce 0000000000000000000000000000000000000000000000000000000000000000 >"$WORK/cos.log" 2>&1 && ok ||
  bad "second TDX sample, 32-byte nonce" "$WORK/cos.log"
expect_exit 3 "nonce check failed: REPORTDATA 6c62dec1.* is not this verifier's challenge" -- "$TT" verify-evidence $SPR --nonce $OTHER_NONCE
python3 -c "import sys; q=bytearray(open(sys.argv[1],'rb').read()); q[48+136]^=1; open(sys.argv[2],'wb').write(q)" $SPR "$WORK/mrtd.dat"
expect_exit 3 "signature check failed: the quote's signature does not verify" -- "$TT" verify-evidence "$WORK/mrtd.dat" --nonce $SPR_RD
expect_exit 3 "certificate chain check failed" -- "$TT" verify-evidence $SPR --device-root tee/evidence/roots/nvidia_device_identity_ca.pem
head -c 100 $SPR >"$WORK/short.dat"
expect_exit 2 "TDX quote: truncated at header and TD quote body" -- "$TT" verify-evidence "$WORK/short.dat"
# Intel's real revocation lists: on a date both were current, the PCK chain is not revoked; today they
# have expired, and an expired list is a refusal, not a silent pass.
CRLS=(--crl $F/intel_sgx_root.crl.der --crl $F/intel_pck_platform.crl.der)
"$TT" verify-evidence $SPR "${CRLS[@]}" --at 2023-06-15 >"$WORK/tdxcrl.log" 2>&1 && ok || bad "Intel CRLs on 2023-06-15" "$WORK/tdxcrl.log"
grep -q "certificate chain   ok: .*not revoked (checked against 2 given list(s))" "$WORK/tdxcrl.log" && ok ||
  bad "both Intel CRLs applied" "$WORK/tdxcrl.log"
expect_exit 3 "collateral check failed: the revocation list '.*intel_pck_platform.crl.der' expired at its nextUpdate 2023-07-08" -- \
  "$TT" verify-evidence $SPR --crl $F/intel_pck_platform.crl.der
# Intel's published QE identity and TCB info for the SPR quote's FMSPC (go-tdx-guest's samples), signed
# by Intel's TCB signing certificate (valid until 2025-05-21): on 2023-06-20 the QE identity passes and
# the signatures verify, but the quote's platform is below both TCB levels the sample lists (refused);
# after the TCB info's nextUpdate it is refused as expired, naming the file and its nextUpdate.
COLL=(--collateral-chain $F/intel_tcb_signing_chain.pem --qe-identity $F/intel_qe_identity_td_qe.json)
"$TT" verify-evidence $SPR "${COLL[@]}" --at 2023-06-20 >"$WORK/qe.log" 2>&1 && ok || bad "Intel's QE identity sample" "$WORK/qe.log"
grep -q "^verdict: VERIFIED: .*; QE identity checked against Intel's collateral; TCB status NOT checked (no --tcb-info)" \
  "$WORK/qe.log" && ok || bad "the verdict names the TCB info as not given" "$WORK/qe.log"
expect_exit 3 "TCB status check failed: the platform \(SGX TCB 03030202020100020000000000000000, PCESVN 11, .*\) is below every TCB level of FMSPC 50806f000000" -- \
  "$TT" verify-evidence $SPR "${COLL[@]}" --tcb-info $F/intel_tcb_info_50806f000000.json --at 2023-06-20
expect_exit 3 "collateral check failed: the TCB info '.*intel_tcb_info_50806f000000.json' expired at its nextUpdate 2023-07-18T08:42:58Z" -- \
  "$TT" verify-evidence $SPR --collateral-chain $F/intel_tcb_signing_chain.pem --tcb-info $F/intel_tcb_info_50806f000000.json --at 2023-08-01
expect_exit 2 "--rim, --gpu-rim-crl and --cert-chain are for NVIDIA evidence" -- "$TT" verify-evidence $SPR --rim $F/g520_0200_885_9600740001_PROD.swidtag

# Another root (the emulated vendor's) refuses NVIDIA's chain; a revocation list no CA of the chain
# issued checks nothing, and the verdict says so.
"$TT" provision --out "$WORK/vendor" --devices 1 >/dev/null
expect_exit 3 "certificate chain check failed: certificate not issued by the trusted vendor root" -- \
  "$TT" verify-evidence $F/hopper_evidence.json --device-root "$WORK/vendor/vendor_root.crt"
"$TT" verify-evidence $F/hopper_evidence.json --crl "$WORK/vendor/vendor_root.crl" >"$WORK/crl.log" 2>&1 && ok ||
  bad "an unrelated CRL" "$WORK/crl.log"
grep -q "revocation NOT checked (none of the given lists is issued by a CA of this chain)" "$WORK/crl.log" && ok ||
  bad "says the CRL applies to no CA" "$WORK/crl.log"
grep -q "^verdict: .*nonce NOT checked.*revocation NOT checked (no --crl issued by a CA of the chain)" "$WORK/crl.log" && ok ||
  bad "verdict flags revocation and nonce" "$WORK/crl.log"

# Offline: in a network namespace with no interface up (where unshare works, as root), the same
# verifications, RIM signature included, give the same verdicts.
if unshare -n true 2>/dev/null; then
  unshare -n "$TT" verify-evidence $F/hopper_evidence.json --nonce $SDK_NONCE >/dev/null 2>&1 && ok || bad "verifies offline"
  rc=0; unshare -n "$TT" verify-evidence $F/hopper_evidence.json --rim $RIM --at 2025-01-01 >"$WORK/netns.log" 2>&1 || rc=$?
  expect_eq "$rc" 3 "RIM check offline: exit 3 (another VBIOS)"
  grep -q "RIM signature       ok" "$WORK/netns.log" && ok || bad "RIM signature verified offline" "$WORK/netns.log"
fi

# Malformed input: exit 2, naming what and what to do.
expect_exit 2 "needs --cert-chain FILE" -- "$TT" verify-evidence $F/hopperAttestationReport.txt
printf '[{"arch": ' >"$WORK/cut.json"
expect_exit 2 "not valid JSON \(expected the attestation SDK's serialized evidence\)" -- "$TT" verify-evidence "$WORK/cut.json"
printf '[{"arch": "HOPPER"}]' >"$WORK/fields.json"
expect_exit 2 "GPU 0: no \"nonce\" string" -- "$TT" verify-evidence "$WORK/fields.json"
head -c 200 $F/hopperAttestationReport.txt >"$WORK/short.txt"
expect_exit 2 "truncated at MeasurementRecord.*give the attestation report exactly as" -- \
  "$TT" verify-evidence "$WORK/short.txt" "${PAIR[@]}"
expect_exit 2 "--nonce: expected 64 hex digits" -- "$TT" verify-evidence $F/hopper_evidence.json --nonce 12
expect_exit 2 "--at '2025-13-01': expected a date YYYY-MM-DD" -- "$TT" verify-evidence $F/hopper_evidence.json --at 2025-13-01
expect_exit 2 "evidence '$WORK/missing.json': not found" -- "$TT" verify-evidence "$WORK/missing.json"
expect_exit 2 "not well-formed XML \(expected an NVIDIA RIM" -- "$TT" verify-evidence $F/hopper_evidence.json --rim $F/hopper_evidence.json
echo '<a/>' >"$WORK/a.xml"
expect_exit 2 "not a SWID tag .*give NVIDIA's RIM file" -- "$TT" verify-evidence $F/hopper_evidence.json --rim "$WORK/a.xml"
expect_exit 2 "not a PEM or DER revocation list" -- "$TT" verify-evidence $F/hopper_evidence.json --crl $RIM
"$TT" verify-evidence --help >"$WORK/help.log" 2>&1 || bad "help"
for opt in --cert-chain --nonce --rim --crl --at --device-root --rim-root; do
  grep -q -- "$opt" "$WORK/help.log" && ok || bad "--help names $opt" "$WORK/help.log"
done
finish
