#!/usr/bin/env bash
# Revocation cannot be switched off by deleting a file, and every rank needs its own identity in the
# vendor's device profile (docs/design.md §5 "Device profile"): without vendor_root.crl a certified
# run refuses (exit 2, saying how to get it) — a revoked device included — unless
# --no-revocation-check, which the banner, the end of the run and the summary flag; `attest --verify`
# never says "not revoked" when it did not check; provision again rewrites a deleted list with every
# revocation; one identity file on two ranks is refused on every rank (exit 3) naming both ranks;
# openssl reads the device purpose provision writes.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
MPI=(mpirun --allow-run-as-root --oversubscribe)
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $1"; [[ -n ${2:-} ]] && tail -5 "$2"; fails=$((fails + 1)); }
V="$WORK/vendor"
"$TT" provision --out "$V" --devices 3 --revoke 2 >/dev/null

# The device profile, as OpenSSL reads it: CA:FALSE, digitalSignature, the vendor's device purpose.
openssl x509 -in "$V/device_0.pem" -noout -ext basicConstraints,keyUsage,extendedKeyUsage >"$WORK/ext.txt" 2>&1
for want in "CA:FALSE" "Digital Signature" "2\.25\.219716525509570296185010554610688240878"; do
  grep -qE "$want" "$WORK/ext.txt" && ok || bad "openssl shows $want" "$WORK/ext.txt"
done

base=(train --model gpt2-tiny --data "$WORK/data/tiny" --steps 4 --seq 16 --batch 2 --no-progress --threads 1
      --seed 5 --val-batches 0 --allow-plain-data --tee fast --timeout 20)
ROOT=(--trust-root "$V/vendor_root.crt")
ID=(--device-identity "$V/device_{rank}.pem")
"$TT" attest "${ROOT[@]}" --device-identity "$V/device_1.pem" --rank 1 --out "$WORK/ev1.bin" >/dev/null 2>&1 ||
  bad "attest device 1"
"$TT" attest --verify "$WORK/ev1.bin" "${ROOT[@]}" >"$WORK/verify.log" 2>&1 || bad "verify with the CRL" "$WORK/verify.log"
grep -q "is not revoked" "$WORK/verify.log" && ok || bad "with the CRL, verify says not revoked" "$WORK/verify.log"

# (c) One identity file on both ranks (a --device-identity without {rank}): exit 3, on every rank.
rc=0; "${MPI[@]}" -np 2 "$TT" "${base[@]}" "${ROOT[@]}" --device-identity "$V/device_0.pem" >"$WORK/dup.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "one identity on two ranks: exit 3"
# Every rank throws the same refusal (test_secure_session checks each rank's error); here the first to
# exit aborts the job, so one line is certain, and it says both ranks found the duplicate.
grep -q "INTEGRITY FAILURE.*rank 1: the same device identity as rank 0 (device key [0-9a-f]*\.\., certificate serial [0-9a-f]*\.\.): every rank needs its own; does --device-identity lack {rank}? (reported by ranks 0, 1)" \
  "$WORK/dup.log" && ok || bad "names both ranks and hints at {rank}" "$WORK/dup.log"

# (a) The CRL deleted: a certified run refuses, with the way to get it back.
rm "$V/vendor_root.crl"
rc=0; "${MPI[@]}" -np 2 "$TT" "${base[@]}" "${ROOT[@]}" "${ID[@]}" >"$WORK/nocrl.log" 2>&1 || rc=$?
expect_eq "$rc" 2 "no CRL: exit 2"
grep -q "no revocation list '$V/vendor_root.crl'.*teetrain provision --out $V.*--no-revocation-check" "$WORK/nocrl.log" &&
  ok || bad "says how to get the CRL" "$WORK/nocrl.log"
# The attack itself: the revoked device 2 on rank 1 no longer trains once the list is gone.
rc=0; "${MPI[@]}" -np 1 "$TT" "${base[@]}" "${ROOT[@]}" --device-identity "$V/device_0.pem" : \
  -np 1 "$TT" "${base[@]}" "${ROOT[@]}" --device-identity "$V/device_2.pem" >"$WORK/rev_nocrl.log" 2>&1 || rc=$?
expect_eq "$rc" 2 "revoked device without the CRL: refused (exit 2), not trained"
expect_exit 2 "no revocation list" -- "$TT" bench allreduce --max-bytes 4096 --iters 1 --warmup 0 --tee fast "${ROOT[@]}" "${ID[@]}"
expect_exit 2 "attestation none" -- "$TT" "${base[@]}" --attestation none --no-revocation-check

# The explicit opt-out runs, flagged in the banner, at the end and in the summary.
"${MPI[@]}" -np 2 "$TT" "${base[@]}" "${ROOT[@]}" "${ID[@]}" --no-revocation-check --summary "$WORK/optout.json" \
  >"$WORK/optout.log" 2>&1 || bad "--no-revocation-check run" "$WORK/optout.log"
expect_eq "$(grep -c "WARNING: revocation NOT checked: a revoked device is accepted (--no-revocation-check)" "$WORK/optout.log")" 2 \
  "banner and end flag the opt-out"
grep -q '"revocation_checked": false' "$WORK/optout.json" && ok || bad "summary: revocation_checked false" "$WORK/optout.json"
grep -q '"warning": "revocation NOT checked' "$WORK/optout.json" && ok || bad "summary warns" "$WORK/optout.json"
# The result line names the opt-out too (what `-q 2>/dev/null` leaves), as do the banner and the summary.
grep -qE "^done: .*params_sha256 [0-9a-f]{64} \| opt-outs: --no-revocation-check" "$WORK/optout.log" && ok ||
  bad "the done line names --no-revocation-check" "$WORK/optout.log"
grep -q "^  opt-outs --no-revocation-check" "$WORK/optout.log" && ok || bad "the banner lists the opt-out" "$WORK/optout.log"
grep -q '"opt_outs": \[' "$WORK/optout.json" && grep -q '"--no-revocation-check"' "$WORK/optout.json" && ok ||
  bad "summary: opt_outs" "$WORK/optout.json"

# (d) attest --verify without the CRL refuses, and with the opt-out never claims "not revoked".
expect_exit 2 "no revocation list.*--no-revocation-check" -- "$TT" attest --verify "$WORK/ev1.bin" "${ROOT[@]}"
"$TT" attest --verify "$WORK/ev1.bin" "${ROOT[@]}" --no-revocation-check >"$WORK/verify_nocrl.log" 2>&1 ||
  bad "verify with the opt-out" "$WORK/verify_nocrl.log"
grep -q "revocation NOT checked" "$WORK/verify_nocrl.log" && ok || bad "verify says revocation NOT checked" "$WORK/verify_nocrl.log"
grep -q "not revoked" "$WORK/verify_nocrl.log" && bad "verify claims 'not revoked' unchecked" "$WORK/verify_nocrl.log" || ok

# Provision again restores the list from the vendor's record, revocation included: (b) a revoked
# device with the CRL present is refused on every rank.
"$TT" provision --out "$V" >"$WORK/reprov.log" 2>&1
grep -q "vendor_root.crl   revocation list (1 revoked)" "$WORK/reprov.log" && ok || bad "provision restores the list" "$WORK/reprov.log"
rc=0; "${MPI[@]}" -np 1 "$TT" "${base[@]}" "${ROOT[@]}" --device-identity "$V/device_0.pem" : \
  -np 1 "$TT" "${base[@]}" "${ROOT[@]}" --device-identity "$V/device_2.pem" >"$WORK/rev.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "revoked device with the CRL: exit 3"
grep -q "INTEGRITY FAILURE.*rank 1: device certificate revoked by the vendor (serial [0-9a-f]*) (reported by ranks 0, 1)" \
  "$WORK/rev.log" && ok || bad "both ranks refuse the revoked device" "$WORK/rev.log"
"${MPI[@]}" -np 2 "$TT" "${base[@]}" "${ROOT[@]}" "${ID[@]}" --summary "$WORK/cert.json" >"$WORK/cert.log" 2>&1 ||
  bad "certified run" "$WORK/cert.log"
grep -q '"revocation_checked": true' "$WORK/cert.json" && ok || bad "summary: revocation_checked true" "$WORK/cert.json"
grep -q "WARNING" "$WORK/cert.log" && bad "a checked run warns" "$WORK/cert.log" || ok
finish
