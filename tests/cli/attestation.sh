#!/usr/bin/env bash
# The root of trust end to end: `teetrain provision` writes real X.509 (openssl reads it); TEE mode
# with several ranks refuses to start without a trust root (exit 2, naming `teetrain provision`) unless
# --attestation none, which the banner and the summary flag; certified runs train; a revoked device,
# another vendor's device, a modified binary, a configuration outside the policy are refused on every
# rank (exit 3, naming the reason); `teetrain attest` prints, verifies (exit 3 when rejected) and
# writes policies.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
MPI=(mpirun --allow-run-as-root --oversubscribe)
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $1"; [[ -n ${2:-} ]] && tail -5 "$2"; fails=$((fails + 1)); }

"$TT" provision --out "$WORK/vendor" --devices 2 >"$WORK/prov.log" 2>&1 || bad "provision" "$WORK/prov.log"
grep -q "vendor_root.crt" "$WORK/prov.log" && ok || bad "provision names the root" "$WORK/prov.log"
# Again: devices are added under the same root, one is revoked.
sha_root=$(sha256sum "$WORK/vendor/vendor_root.crt" | cut -c1-64)
"$TT" provision --out "$WORK/vendor" --devices 4 --revoke 3 >/dev/null 2>&1 || bad "provision again"
expect_eq "$(sha256sum "$WORK/vendor/vendor_root.crt" | cut -c1-64)" "$sha_root" "the root is kept"
[[ -f "$WORK/vendor/device_3.pem" && $(stat -c %a "$WORK/vendor/device_3.pem") == 600 ]] && ok || bad "device_3.pem, mode 600"
# Real formats: OpenSSL's own CLI (scripts/install-deps.sh installs it) verifies and revokes the same way.
openssl verify -CAfile "$WORK/vendor/vendor_root.crt" "$WORK/vendor/device_1.pem" >/dev/null 2>&1 && ok || bad "openssl verifies device 1"
openssl verify -crl_check -CAfile "$WORK/vendor/vendor_root.crt" -CRLfile "$WORK/vendor/vendor_root.crl" \
  "$WORK/vendor/device_3.pem" >/dev/null 2>&1 && bad "openssl should see device 3 revoked" || ok
"$TT" provision --out "$WORK/other" --devices 2 >/dev/null 2>&1 || bad "second vendor"
expect_exit 2 "no such device" -- "$TT" provision --out "$WORK/vendor" --revoke 9

base=(train --model gpt2-tiny --data "$WORK/data/tiny" --steps 4 --seq 16 --batch 2 --no-progress --threads 1
      --seed 5 --val-batches 0 --allow-plain-data --tee fast --timeout 20)
ROOT=(--trust-root "$WORK/vendor/vendor_root.crt")
ID=(--device-identity "$WORK/vendor/device_{rank}.pem")

# No root of trust with several ranks: refused before anything starts, with what to do.
rc=0; "${MPI[@]}" -np 2 "$TT" "${base[@]}" >"$WORK/noroot.log" 2>&1 || rc=$?
expect_eq "$rc" 2 "no trust root with 2 ranks: exit 2"
grep -q "needs a root of trust.*teetrain provision --out vendor --devices 2" "$WORK/noroot.log" && ok || bad "says how to provision" "$WORK/noroot.log"
expect_exit 2 "needs --device-identity" -- "$TT" "${base[@]}" "${ROOT[@]}"
# bench allreduce starts its TEE session through the same function (engine/keys/tee_session.h): it refuses
# what train refuses, with the same words.
bench=(bench allreduce --max-bytes 4096 --iters 1 --warmup 0 --tee fast)
rc=0; "${MPI[@]}" -np 2 "$TT" "${bench[@]}" >"$WORK/bench_noroot.log" 2>&1 || rc=$?
expect_eq "$rc" 2 "bench: no trust root with 2 ranks: exit 2"
grep -q "needs a root of trust.*teetrain provision --out vendor --devices 2" "$WORK/bench_noroot.log" && ok ||
  bad "bench says how to provision" "$WORK/bench_noroot.log"
expect_exit 2 "needs --device-identity" -- "$TT" "${bench[@]}" "${ROOT[@]}"
expect_exit 2 "attestation none" -- "$TT" "${base[@]}" --attestation none "${ROOT[@]}" "${ID[@]}"
expect_exit 2 "device_7.pem" -- "$TT" "${base[@]}" "${ROOT[@]}" --device-identity "$WORK/vendor/device_7.pem"
# --attestation none runs, loudly.
"${MPI[@]}" -np 2 "$TT" "${base[@]}" --attestation none --summary "$WORK/none.json" >"$WORK/none.log" 2>&1 || bad "attestation none run" "$WORK/none.log"
expect_eq "$(grep -c "WARNING: no attestation: an on-path adversary can read everything" "$WORK/none.log")" 2 "banner and end flag it"
grep -q '"warning": "no attestation: an on-path adversary can read everything"' "$WORK/none.json" && ok || bad "summary flags it"
# -q 2>/dev/null leaves the result line alone: it names every opt-out (here plaintext data in a TEE run too).
"${MPI[@]}" -np 2 "$TT" "${base[@]}" --attestation none -q 2>/dev/null >"$WORK/none_q.log" || bad "attestation none -q" "$WORK/none_q.log"
grep -qE "^done: .*params_sha256 [0-9a-f]{64} \| opt-outs: --attestation none, --allow-plain-data$" "$WORK/none_q.log" &&
  ok || bad "-q's done line names --attestation none and --allow-plain-data" "$WORK/none_q.log"
# Certified: trains, and gives the same parameters.
"${MPI[@]}" -np 2 "$TT" "${base[@]}" "${ROOT[@]}" "${ID[@]}" --summary "$WORK/cert.json" >"$WORK/cert.log" 2>&1 || bad "certified run" "$WORK/cert.log"
grep -q "attestation certified by vendor root" "$WORK/cert.log" && ok || bad "banner names the root" "$WORK/cert.log"
grep -q '"mode": "certified"' "$WORK/cert.json" && ok || bad "summary: certified"
expect_eq "$(json_field "$WORK/cert.json" params_sha256)" "$(json_field "$WORK/none.json" params_sha256)" "certified == none (same arithmetic)"

# Refusals on every rank, exit 3, naming the rank and reason.
refused() { # pattern log: the job exited 3 and the log names the reason
  local pattern="$1" log="$2" rc="$3"
  expect_eq "$rc" 3 "exit 3 for /$pattern/"
  grep -qE "$pattern" "$log" && ok || bad "no /$pattern/ in $log" "$log"
}
rc=0; "${MPI[@]}" -np 1 "$TT" "${base[@]}" "${ROOT[@]}" --device-identity "$WORK/vendor/device_0.pem" : \
  -np 1 "$TT" "${base[@]}" "${ROOT[@]}" --device-identity "$WORK/vendor/device_3.pem" >"$WORK/rev.log" 2>&1 || rc=$?
refused "rank 1: device certificate revoked by the vendor" "$WORK/rev.log" $rc
# Rank 1 holds another vendor's genuine device (and trusts that vendor): each side refuses the other.
rc=0; "${MPI[@]}" -np 1 "$TT" "${base[@]}" "${ROOT[@]}" "${ID[@]}" : \
  -np 1 "$TT" "${base[@]}" --trust-root "$WORK/other/vendor_root.crt" --device-identity "$WORK/other/device_1.pem" \
  >"$WORK/foreign.log" 2>&1 || rc=$?
refused "rank 1: certificate not issued by the trusted vendor root" "$WORK/foreign.log" $rc
# A modified binary on rank 1 (one byte appended: still runs, measures differently).
cp "$TT" "$WORK/teetrain-modified"; printf 'x' >>"$WORK/teetrain-modified"
rc=0; "${MPI[@]}" -np 1 "$TT" "${base[@]}" "${ROOT[@]}" "${ID[@]}" : \
  -np 1 "$WORK/teetrain-modified" "${base[@]}" "${ROOT[@]}" "${ID[@]}" >"$WORK/bin.log" 2>&1 || rc=$?
refused "rank 1: binary measurement [0-9a-f]+\.\. is not in the policy" "$WORK/bin.log" $rc
# A policy that names only the modified binary refuses the genuine one on every rank.
"$TT" attest --attestation none --write-policy "$WORK/policy.txt" >/dev/null
sed -i "s/^binary .*/binary $(sha256sum "$WORK/teetrain-modified" | cut -c1-64)/; /^config/d" "$WORK/policy.txt"
rc=0; "${MPI[@]}" -np 2 "$TT" "${base[@]}" "${ROOT[@]}" "${ID[@]}" --policy "$WORK/policy.txt" >"$WORK/pol.log" 2>&1 || rc=$?
refused "rank 0: binary measurement.*rank 1: binary measurement" "$WORK/pol.log" $rc
expect_exit 2 "policy.*line 1" -- "$TT" "${base[@]}" "${ROOT[@]}" "${ID[@]}" --policy "$WORK/data/tiny_train.bin"

# teetrain attest: print (every field with what it proves), save, verify; rejected evidence exits 3.
"$TT" attest "${ROOT[@]}" "${ID[@]}" --rank 1 --config '{"x":1}' --out "$WORK/ev.bin" >"$WORK/attest.log" 2>&1 || bad "attest" "$WORK/attest.log"
for field in "binary measurement" "config measurement" "verifier nonce" "key-exchange key" "certificate        .*EMULATED GPU device 1" "signature check    valid"; do
  grep -qE "$field" "$WORK/attest.log" && ok || bad "attest prints /$field/" "$WORK/attest.log"
done
"$TT" attest --verify "$WORK/ev.bin" "${ROOT[@]}" --config '{"x":1}' >"$WORK/verify.log" 2>&1 && ok || bad "verify" "$WORK/verify.log"
grep -q "freshness NOT checked" "$WORK/verify.log" && ok || bad "verify says freshness is unchecked"
expect_exit 3 "REJECTED: configuration measurement" -- "$TT" attest --verify "$WORK/ev.bin" "${ROOT[@]}" --config '{"x":2}'
expect_exit 3 "REJECTED: certificate not issued by the trusted vendor root" -- "$TT" attest --verify "$WORK/ev.bin" --trust-root "$WORK/other/vendor_root.crt" --config '{"x":1}'
expect_exit 3 "REJECTED: stale nonce" -- "$TT" attest --verify "$WORK/ev.bin" "${ROOT[@]}" --config '{"x":1}' --nonce "$(printf '%064d' 0)"
expect_exit 2 "needs --trust-root" -- "$TT" attest --verify "$WORK/ev.bin" --config '{"x":1}'
head -c 100 "$WORK/ev.bin" >"$WORK/cut.bin"
expect_exit 3 "malformed evidence" -- "$TT" attest --verify "$WORK/cut.bin" "${ROOT[@]}"
"$TT" attest --attestation none >"$WORK/none_ev.log" 2>&1 || bad "attest --attestation none"
grep -q "NO ROOT OF TRUST" "$WORK/none_ev.log" && ok || bad "uncertified evidence is flagged"
expect_exit 2 "teetrain provision" -- "$TT" attest
finish
