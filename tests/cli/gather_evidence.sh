#!/usr/bin/env bash
# `teetrain gather-evidence` without confidential hardware, as README.md and
# docs/reference/gather-evidence.md show it:
#   - absent hardware: exit 2, one line naming what is missing (no configfs-tsm directory, a directory
#     that is not configfs-tsm, no libnvidia-ml) and what to do instead;
#   - the configfs-tsm protocol against tests/cli/fake_tsm.py, a user-space STAND-IN for the kernel:
#     the real TDX sample quote comes back byte for byte and verify-evidence verifies it with its
#     REPORTDATA (and refuses another nonce); a quote answering another REPORTDATA is refused (exit 3,
#     nothing saved); an SEV-SNP guest gets its privilege level written, its certificate table saved
#     beside the report, and the key-binding challenge of docs/design.md §12 as REPORT_DATA; a second
#     writer (generation), a quote service that never answers (--timeout, also when the time runs out
#     before the entry's attributes appear) are failures (exit 1); every
#     entry is removed afterwards;
#   - signed stand-ins: fake_tsm.py and fake_nvml with the test vendor (tests/support/test_vendor) serve
#     a TDX quote, an SEV-SNP report and GPU evidence signed over the challenge asked for, which
#     verify-evidence verifies under the test roots with --allow-test-roots (and refuses without).
source "$(dirname "$0")/lib.sh" "$@"
F=tests/fixtures/evidence
SPR=$F/tdx_prod_quote_SPR_E4.dat
SPR_RD=6c62dec1b8191749a31dab490be532a35944dea47caef1f980863993d9899545eb7406a38d1eed313b987a467dacead6f0c87a6d766c66f6f29f8acb281f1113
OTHER=$(printf '%064d' 7)
VNONCE=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
KX=202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $1"; [[ -n ${2:-} ]] && tail -5 "$2"; fails=$((fails + 1)); }
FAKES=()
trap 'for p in "${FAKES[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$WORK"' EXIT
# fake DIR ARGS...: the kernel's stand-in serving DIR (its pid joins FAKES, stopped on exit). Returns
# once it serves: the prover gives a new entry 2 s to show its attributes, which a loaded machine may
# spend starting Python.
fake() {
  mkdir -p "$1"
  local ready="$WORK/ready.${#FAKES[@]}"
  python3 tests/cli/fake_tsm.py "$@" --ready "$ready" 2>>"$WORK/fake.log" &
  FAKES+=($!)
  for _ in $(seq 1 600); do
    [[ -e "$ready" ]] && return 0
    sleep 0.1
  done
  echo "FAIL: the configfs-tsm stand-in did not start within 60 s"; tail -5 "$WORK/fake.log"
  fails=$((fails + 1))
}
G=("$TT" gather-evidence)
NO_NVML=1
ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml\.so\.1 ' && NO_NVML=0

# Absent hardware: exit 2 with what is missing and what to do instead.
ADVICE="nothing gathered\. Without this hardware, verify the published samples instead \(teetrain verify-evidence .*training keeps the emulated vendor \(teetrain provision\)"
expect_exit 2 "^teetrain: error: --source tdx: no configfs-tsm report directory at '$WORK/none' \(not a TDX or SEV-SNP guest, or the kernel lacks CONFIG_TSM_REPORTS.*$ADVICE" -- \
  "${G[@]}" --source tdx --nonce "$OTHER" --out "$WORK/e" --tsm-dir "$WORK/none"
mkdir "$WORK/empty"
expect_exit 2 "'$WORK/empty' is not a configfs-tsm report directory .*$ADVICE" -- \
  "${G[@]}" --source snp --nonce "$OTHER" --out "$WORK/e" --tsm-dir "$WORK/empty"
expect_eq "$(ls -A "$WORK/empty")" "" "the entry made in a plain directory is removed again"
if [[ $NO_NVML -eq 1 ]]; then
  expect_exit 2 "^teetrain: error: --source gpu: no libnvidia-ml\.so\.1 \(no NVIDIA driver on this machine\); $ADVICE" -- \
    env LD_LIBRARY_PATH="$WORK/empty" "${G[@]}" --source gpu --nonce "$OTHER" --out "$WORK/e"
  expect_exit 2 "no attestation source on this machine: no configfs-tsm report directory at '$WORK/none' .*; no libnvidia-ml\.so\.1 .*$ADVICE" -- \
    "${G[@]}" --nonce "$OTHER" --out "$WORK/e" --tsm-dir "$WORK/none"
fi
[[ ! -e "$WORK/e" ]] && ok || bad "nothing written where nothing was gathered"

# docs/reference/gather-evidence.md's first example, as shown (where this machine has neither).
if [[ $NO_NVML -eq 1 && ! -e /sys/kernel/config/tsm/report ]]; then
  expect_exit 2 "no attestation source on this machine: no configfs-tsm report directory at '/sys/kernel/config/tsm/report'.*no libnvidia-ml\.so\.1" -- \
    "${G[@]}" --nonce 0000000000000000000000000000000000000000000000000000000000000007 --out "$WORK/evidence.bin"
fi

# Bad input: the challenge is required once, in one form.
expect_exit 2 "give the challenge: --nonce HEX, or --verifier-nonce HEX --rank N --kx-public HEX" -- "${G[@]}" --out "$WORK/e"
expect_exit 2 "give the challenge" -- "${G[@]}" --out "$WORK/e" --nonce "$OTHER" --verifier-nonce "$VNONCE" --rank 0 --kx-public "$KX"
expect_exit 2 "give the challenge" -- "${G[@]}" --out "$WORK/e" --verifier-nonce "$VNONCE" --rank 0
expect_exit 2 "--kx-public: expected 64 hex digits \(the rank's X25519 public key\)" -- \
  "${G[@]}" --out "$WORK/e" --verifier-nonce "$VNONCE" --rank 0 --kx-public 12
expect_exit 2 "--nonce: expected 64 hex digits .* or 128" -- "${G[@]}" --out "$WORK/e" --nonce 12
expect_exit 2 "--source: .*not in \{tdx,snp,gpu,auto\}|--source.*tdx,snp,gpu,auto" -- "${G[@]}" --out "$WORK/e" --nonce "$OTHER" --source sgx

# A TDX guest (the stand-in serves the real sample quote): saved byte for byte, verified with its
# REPORTDATA, refused with another nonce; the entry is gone afterwards.
fake "$WORK/tdx" --outblob $SPR
"${G[@]}" --source tdx --tsm-dir "$WORK/tdx" --nonce $SPR_RD --out "$WORK/quote.dat" >"$WORK/tdx.log" 2>&1 && ok || bad "gather from the TDX stand-in" "$WORK/tdx.log"
cmp -s $SPR "$WORK/quote.dat" && ok || bad "the quote saved is the one the kernel returned"
grep -q "^source        tdx: configfs-tsm provider tdx_guest (entry $WORK/tdx/teetrain-" "$WORK/tdx.log" && ok || bad "names the source" "$WORK/tdx.log"
grep -q "^verify with   teetrain verify-evidence $WORK/quote.dat --nonce $SPR_RD" "$WORK/tdx.log" && ok || bad "prints the verify command" "$WORK/tdx.log"
expect_eq "$(ls -A "$WORK/tdx")" "" "the report entry is removed"
# The reference page's form: the default source finds the (stand-in) kernel.
"${G[@]}" --tsm-dir "$WORK/tdx" --out "$WORK/quote2.dat" --nonce $SPR_RD >"$WORK/tdx2.log" 2>&1 && ok || bad "gather, as the reference shows it" "$WORK/tdx2.log"
cmp -s $SPR "$WORK/quote2.dat" && ok || bad "the reference's example saves the quote"
"$TT" verify-evidence "$WORK/quote.dat" --nonce $SPR_RD >"$WORK/verify.log" 2>&1 && ok || bad "verify-evidence verifies the gathered quote" "$WORK/verify.log"
grep -q "^verdict: VERIFIED: Intel TDX quote: .*report data (fresh)" "$WORK/verify.log" && ok || bad "verdict" "$WORK/verify.log"
expect_exit 3 "nonce check failed: REPORTDATA 6c62dec1.* is not this verifier's challenge" -- "$TT" verify-evidence "$WORK/quote.dat" --nonce "$OTHER"
# The same guest asked for another challenge returns its fixed quote: refused, nothing saved.
expect_exit 3 "INTEGRITY FAILURE: configfs-tsm: an Intel TDX quote's REPORTDATA 6c62dec1.* is not the 0{63}70{64} written: the report answers another request; nothing saved" -- \
  "${G[@]}" --tsm-dir "$WORK/tdx" --nonce "$OTHER" --out "$WORK/stale.dat"
[[ ! -e "$WORK/stale.dat" ]] && ok || bad "a refused quote is not saved"
expect_exit 2 "--source snp: this guest's configfs-tsm provider is tdx_guest, an Intel TDX quote; give --source tdx or auto" -- \
  "${G[@]}" --source snp --tsm-dir "$WORK/tdx" --nonce $SPR_RD --out "$WORK/e"
expect_exit 2 "--nonce: a GPU signs a 32-byte challenge" -- "${G[@]}" --source gpu --nonce $SPR_RD --out "$WORK/e"

# An SEV-SNP guest (the stand-in copies inblob into a 1184-byte report at REPORT_DATA, 0x50, and the
# privilege level at VMPL, 0x30): the challenge is derived from a verifier nonce, rank and key
# (docs/design.md §12), the floor is written as privlevel, the certificate table saved beside.
head -c 1184 /dev/zero >"$WORK/snp_template"
printf 'certificate table' >"$WORK/certs"
fake "$WORK/snp" --provider sev_guest --outblob "$WORK/snp_template" --echo-at 80 --privlevel-at 48 --privlevel-floor 2 \
  --auxblob "$WORK/certs"
"${G[@]}" --tsm-dir "$WORK/snp" --verifier-nonce $VNONCE --rank 3 --kx-public $KX --out "$WORK/snp.bin" >"$WORK/snp.log" 2>&1 &&
  ok || bad "gather from the SEV-SNP stand-in (auto)" "$WORK/snp.log"
CHALLENGE=$(python3 -c "import hashlib,sys; print(hashlib.sha256(b'teetrain kx v1'+bytes.fromhex(sys.argv[1])+(3).to_bytes(4,'big')+bytes.fromhex(sys.argv[2])).hexdigest())" $VNONCE $KX)
expect_eq "$CHALLENGE" "ef7c145c4872f8b8517685669c8123fe08dd814299bc9a33e8bc22554eb3c6b9" "the derivation's known answer"
grep -q "^challenge     $CHALLENGE = SHA-256(\"teetrain kx v1\" || verifier nonce || be32(rank 3) || X25519 public key)" "$WORK/snp.log" && ok ||
  bad "prints the derived challenge" "$WORK/snp.log"
expect_eq "$(od -An -tx1 -j80 -N64 -v "$WORK/snp.bin" | tr -d ' \n')" "$CHALLENGE$(printf '%064d' 0)" "REPORT_DATA = challenge || 32 zero bytes"
expect_eq "$(od -An -tu4 -j48 -N4 "$WORK/snp.bin" | tr -d ' ')" "2" "privlevel written as privlevel_floor"
cmp -s "$WORK/certs" "$WORK/snp.bin.certs" && ok || bad "the certificate table is saved as FILE.certs"
grep -q "^source        snp: configfs-tsm provider sev_guest" "$WORK/snp.log" && ok || bad "auto picks the CPU TEE" "$WORK/snp.log"
expect_eq "$(ls -A "$WORK/snp")" "" "the SEV-SNP entry is removed"

# Another writer on the entry (generation 2, one write ours) and a quote service that never answers.
fake "$WORK/race" --outblob $SPR --extra-writes 1
expect_exit 1 "was written 2 time\(s\), 1 of them by us: another process changed the request while it was served; try again" -- \
  "${G[@]}" --tsm-dir "$WORK/race" --nonce $SPR_RD --out "$WORK/e"
fake "$WORK/silent" --outblob $SPR --silent
start=$(date +%s)
expect_exit 1 "configfs-tsm: no answer from the kernel within 2 s \(waiting on '.*/outblob'\): the quote service may be down" -- \
  "${G[@]}" --tsm-dir "$WORK/silent" --nonce $SPR_RD --out "$WORK/e" --timeout 2
[[ $(($(date +%s) - start)) -lt 20 ]] && ok || bad "the timeout ends the wait"
# The time runs out while the entry's attributes are still coming (the alarm finds no blocked call):
# the wait for the report that follows still ends.
fake "$WORK/late" --outblob $SPR --silent --delay 1.5
start=$(date +%s)
expect_exit 1 "configfs-tsm: no answer from the kernel within 1 s" -- \
  "${G[@]}" --tsm-dir "$WORK/late" --nonce $SPR_RD --out "$WORK/e" --timeout 1
[[ $(($(date +%s) - start)) -lt 20 ]] && ok || bad "the timeout ends the wait after a late entry"
[[ ! -e "$WORK/e" ]] && ok || bad "nothing written by the failures"

# The GPU path through tests/cli/fake_nvml.cpp, a stand-in for NVML serving NVIDIA's sample report
# (signed over nonce SDK_NONCE) whatever is asked: the SDK's JSON that verify-evidence verifies; another
# challenge is refused (exit 3, nothing saved); confidential computing off is exit 2.
FAKE_NVML=${2:-}
SDK_NONCE=e97b23a1718095a0e9e35edca810768c70a6a5a389b705e753b197912bc11576
if [[ -f "$FAKE_NVML/libnvidia-ml.so.1" ]]; then
  python3 - $F/hopper_evidence.json "$WORK" <<'PY'
import base64, json, sys
gpu = json.load(open(sys.argv[1]))[0]
open(sys.argv[2] + "/report.bin", "wb").write(base64.b64decode(gpu["evidence"]))
open(sys.argv[2] + "/chain.pem", "wb").write(base64.b64decode(gpu["certificate"]))
PY
  NV=(env LD_LIBRARY_PATH="$FAKE_NVML" TT_FAKE_NVML_REPORT="$WORK/report.bin" TT_FAKE_NVML_CHAIN="$WORK/chain.pem")
  "${NV[@]}" "${G[@]}" --tsm-dir "$WORK/none" --nonce $SDK_NONCE --out "$WORK/gpu.json" >"$WORK/gpu.log" 2>&1 && ok ||
    bad "gather from the NVML stand-in (auto falls to the GPU)" "$WORK/gpu.log"
  grep -q "^source        gpu: NVML, 1 GPU(s)" "$WORK/gpu.log" && ok || bad "names the GPU source" "$WORK/gpu.log"
  "$TT" verify-evidence "$WORK/gpu.json" --nonce $SDK_NONCE >"$WORK/gpuv.log" 2>&1 && ok || bad "verify-evidence verifies the gathered JSON" "$WORK/gpuv.log"
  grep -q "^verdict: VERIFIED: 1 NVIDIA GPU(s): .*nonce (fresh)" "$WORK/gpuv.log" && ok || bad "GPU verdict" "$WORK/gpuv.log"
  expect_exit 3 "NVML: GPU 0's attestation report answers nonce $SDK_NONCE, not the challenge 0{63}7 asked for" -- \
    "${NV[@]}" "${G[@]}" --source gpu --nonce "$OTHER" --out "$WORK/gpu2.json"
  [[ ! -e "$WORK/gpu2.json" ]] && ok || bad "a report for another nonce is not saved"
  expect_exit 2 "--source gpu: NVML says confidential computing is off on this machine's GPUs; nothing gathered" -- \
    env TT_FAKE_NVML_CC=off "${NV[@]}" "${G[@]}" --source gpu --nonce $SDK_NONCE --out "$WORK/gpu3.json"
else
  bad "the NVML stand-in was not given or not built (cmake --build --preset release --target fake_nvml)"
fi

# Signed stand-ins: the test vendor signs over what the prover asks for (Note [Test roots]).
VENDOR=${3:-}
if [[ -x "$VENDOR" ]]; then
  "$VENDOR" roots --dir "$WORK/roots"
  ALLOW=(--test-roots "$WORK/roots" --allow-test-roots)
  fake "$WORK/stdx" --vendor "$VENDOR" --vendor-dir "$WORK/roots" --vendor-arg=--td-attributes --vendor-arg=0
  "${G[@]}" --tsm-dir "$WORK/stdx" --nonce "$OTHER" --out "$WORK/signed.dat" >"$WORK/stdx.log" 2>&1 && ok ||
    bad "gather a signed quote" "$WORK/stdx.log"
  "$TT" verify-evidence "$WORK/signed.dat" --nonce "$OTHER" "${ALLOW[@]}" >"$WORK/stdxv.log" 2>&1 && ok ||
    bad "the signed quote verifies under the test roots" "$WORK/stdxv.log"
  grep -q "^verdict: VERIFIED under TEST ROOTS .*Intel TDX quote: .*report data (fresh)" "$WORK/stdxv.log" && ok ||
    bad "TDX verdict under test roots" "$WORK/stdxv.log"
  expect_exit 3 "trust roots check failed: .*test root" -- "$TT" verify-evidence "$WORK/signed.dat" --test-roots "$WORK/roots"
  fake "$WORK/ssnp" --provider sev_guest --vendor "$VENDOR" --vendor-dir "$WORK/roots" --vcek-to "$WORK/vcek.pem"
  "${G[@]}" --tsm-dir "$WORK/ssnp" --verifier-nonce $VNONCE --rank 1 --kx-public $KX --out "$WORK/signed.bin" \
    >"$WORK/ssnp.log" 2>&1 && ok || bad "gather a signed SEV-SNP report" "$WORK/ssnp.log"
  CH1=$(sed -n 's/^challenge     \([0-9a-f]*\) .*/\1/p' "$WORK/ssnp.log")
  "$TT" verify-evidence "$WORK/signed.bin" --vcek "$WORK/vcek.pem" --nonce "$CH1" "${ALLOW[@]}" >"$WORK/ssnpv.log" 2>&1 &&
    ok || bad "the signed report verifies with the key-binding challenge" "$WORK/ssnpv.log"
  if [[ -f "$FAKE_NVML/libnvidia-ml.so.1" ]]; then
    SNV=(env LD_LIBRARY_PATH="$FAKE_NVML" TT_FAKE_NVML_VENDOR="$VENDOR" TT_FAKE_NVML_VENDOR_DIR="$WORK/roots"
      TT_FAKE_NVML_REPORT="$WORK/sreport.bin" TT_FAKE_NVML_CHAIN="$WORK/schain.pem")
    "${SNV[@]}" "${G[@]}" --source gpu --nonce "$OTHER" --out "$WORK/sgpu.json" >"$WORK/sgpu.log" 2>&1 && ok ||
      bad "gather signed GPU evidence for the nonce asked" "$WORK/sgpu.log"
    "$TT" verify-evidence "$WORK/sgpu.json" --nonce "$OTHER" "${ALLOW[@]}" >"$WORK/sgpuv.log" 2>&1 && ok ||
      bad "the signed GPU evidence verifies under the test roots" "$WORK/sgpuv.log"
    grep -q "^verdict: VERIFIED under TEST ROOTS .*1 NVIDIA GPU(s): .*nonce (fresh)" "$WORK/sgpuv.log" && ok ||
      bad "GPU verdict under test roots" "$WORK/sgpuv.log"
  fi
else
  bad "the test vendor was not given or not built (cmake --build --preset release --target tt_test_vendor)"
fi

"$TT" gather-evidence --help >"$WORK/help.log" 2>&1 || bad "help"
for opt in --source --nonce --verifier-nonce --rank --kx-public --out --tsm-dir --timeout; do
  grep -q -- "$opt" "$WORK/help.log" && ok || bad "--help names $opt" "$WORK/help.log"
done
finish
