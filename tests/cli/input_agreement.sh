#!/usr/bin/env bash
# The agreed view of a run's inputs (engine/run/input_agreement.h), attacked by someone who owns ONE host's
# disk: each rank runs in its own mount namespace (rank_view.sh), so rank 1 sees other files at the
# same paths as rank 0, every file genuine and sealed under the same key. Refused on every rank with
# exit 3 and one line naming rank 1 and the input: a checkpoint of another lineage, the shards of
# another dataset, a trust root swapped on rank 0 that admits another vendor's device as rank 1,
# another genuine revocation list of the same vendor on rank 1 (named by its number), and a looser
# verifier policy on rank 1.
# Then what decides the messages or the bits given to one rank only (mpirun's "A : B" syntax gives
# each rank its own flags): --resume, sealed data on one rank and plain on the other (with and without
# --allow-plain-data), a plain shard of the same size but other tokens, --threads 1 : --threads 2 (and
# a count given to one rank only), --adversary and --trace: exit 3 naming the rank and the flag, never
# the timeout a rank waiting for a message its peer never sends would end in. A plain split's content
# digest is its shard's sha256sum. The honest run (through the same wrapper) records the agreed digests
# and settings in its summary; the data owner's pins --expect-dataset and --expect-checkpoint refuse a
# wrong digest and accept the right one, at one rank too. Emulated sealing in wall-clock time refuses
# --adversary (exit 2).
source "$(dirname "$0")/lib.sh" "$@"
VIEW="$(dirname "$0")/rank_view.sh"
make_corpus
provision_trust
MPI=(mpirun --allow-run-as-root --oversubscribe)
ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $1"; [[ -n ${2:-} ]] && tail -5 "$2"; fails=$((fails + 1)); }

"$TT" keygen --out "$WORK/k.key" >/dev/null
"$TT" seal-data --data "$WORK/data/tiny" --out "$WORK/sealed" --key-file "$WORK/k.key" --chunk-kb 1 >"$WORK/seal.log"
# The same bytes sealed again under the same key: another dataset, genuine in every file.
"$TT" seal-data --data "$WORK/data/tiny" --out "$WORK/other" --key-file "$WORK/k.key" --chunk-kb 1 >/dev/null
digest=$(sed -n 's/.*manifest sha256 \([0-9a-f]\{64\}\).*/\1/p' "$WORK/seal.log")
expect_eq "${#digest}" 64 "seal-data prints the manifest digest"
base=(train --model gpt2-tiny --seq 16 --batch 2 --no-progress --threads 1 --val-batches 2 --timeout 20
      --key-file "$WORK/k.key" "${TRUST[@]}" --tee fast --data "$WORK/sealed/tiny")

# attacked NAME PATTERN VIEW0 VIEW1 -- ARGS: 2 ranks with those views exit 3 naming PATTERN.
attacked() {
  local name="$1" pattern="$2" v0="$3" v1="$4" rc=0
  shift 5
  "${MPI[@]}" -np 2 -x RANK_VIEW_0="$v0" -x RANK_VIEW_1="$v1" bash "$VIEW" "$TT" "${base[@]}" "$@" \
    >"$WORK/$name.log" 2>&1 || rc=$?
  expect_eq "$rc" 3 "$name: exit 3"
  grep -qE "INTEGRITY FAILURE: $pattern" "$WORK/$name.log" && ok || bad "$name: no /$pattern/" "$WORK/$name.log"
}

# Two lineages of checkpoints at step 4, both genuine, both sealed under the key: ck, and ck2 (another seed).
"${MPI[@]}" -np 2 bash "$VIEW" "$TT" "${base[@]}" --steps 4 --seed 9 --save-every 4 --ckpt-dir "$WORK/ck" \
  --expect-dataset "$digest" --summary "$WORK/honest.json" >"$WORK/honest.log" 2>&1 || bad "honest run" "$WORK/honest.log"
"${MPI[@]}" -np 2 "$TT" "${base[@]}" --steps 4 --seed 7 --save-every 4 --ckpt-dir "$WORK/ck2" >/dev/null 2>&1 ||
  bad "second lineage"
# The honest summary records what every rank opened and agreed on; the report prints it.
der=$(openssl x509 -in "$WORK/vendor/vendor_root.crt" -outform DER | sha256sum | cut -c1-64)
python3 - "$WORK/honest.json" "$digest" "$der" <<'EOF' && ok || bad "agreed_inputs in the summary"
import json, sys
s = json.load(open(sys.argv[1]))["agreed_inputs"]
assert s["dataset"]["train"]["manifest_sha256"] == sys.argv[2], s
assert s["dataset"]["val"]["manifest_sha256"] == sys.argv[2], s
assert s["trust_root"]["sha256"] == sys.argv[3], s  # of the root certificate's DER, as loaded
assert len(s["configuration"]["sha256"]) == 64 and len(s["revocation_list"]["sha256"]) == 64, s
assert s["revocation_list"]["number"] == "1", s  # provision's first list
assert set(s["keys"]) == {"session group key", "dataset key", "checkpoint key"}, s
assert all(len(k["fingerprint"]) == 16 for k in s["keys"].values()), s
assert s["verifier_policy"]["sha256"] == "own", s
assert "checkpoint" not in s, s
assert s["dataset"]["train"]["content_sha256"] == "in the manifest", s  # the manifest commits to the content
settings = {k: v["value"] for k, v in s["settings"].items()}
assert settings["data at rest"] == "sealed" and settings["--resume"] == "none", s
assert settings["--adversary"] == "none" and settings["--threads"] == "1", s
assert settings["backend"].startswith("cpu: ") and "thread" not in settings["backend"], s
EOF
grep -q "dataset split train: manifest sha256 ${digest:0:16}" "$WORK/honest.log" && ok || bad "report prints the inputs" "$WORK/honest.log"

# ckpt inspect prints the manifest digest a run records and --expect-checkpoint pins.
ckdigest=$("$TT" ckpt inspect "$WORK/ck" | sed -n 's/.*manifest sha256 \([0-9a-f]\{64\}\) (pin.*/\1/p')
expect_eq "$ckdigest" "$(sha256sum "$WORK/ck/step_00000004/manifest.json.sealed" | cut -c1-64)" "ckpt inspect: manifest digest"
ck2digest=$(sha256sum "$WORK/ck2/step_00000004/manifest.json.sealed" | cut -c1-64)

# Rank 1 resumes the other lineage's genuine step 4 at the same path.
attacked lineage "rank 1's checkpoint differs from rank 0's \(lineage [0-9a-f]{16}\.\.\. vs [0-9a-f]{16}\.\.\.\)" \
  "" "$WORK/ck2=$WORK/ck" -- --steps 6 --seed 9 --resume "$WORK/ck"
# Rank 1 trains on another dataset's shards at the same path.
attacked dataset "rank 1's dataset split train differs from rank 0's \(manifest sha256 [0-9a-f]{16}\.\.\. vs ${digest:0:16}\.\.\.\)" \
  "" "$WORK/other=$WORK/sealed" -- --steps 2 --seed 9
# Rank 0's trust root (and its CRL) swapped for another vendor's, which certified rank 1's device.
# Every rank also verifies its own certificate against its own root, so the handshake already
# refuses (rank 0's device is not under the swapped root); the agreement's trust-root digest is the
# second line of defence (test_input_agreement checks its wording).
"$TT" provision --out "$WORK/vendor2" --devices 2 >/dev/null
v=$WORK/vendor v2=$WORK/vendor2
attacked root "(attestation refused on every rank: rank 0: certificate not issued by the trusted vendor root|rank 1's trust root differs from rank 0's \(sha256 )" \
  "$v2/vendor_root.crt=$v/vendor_root.crt,$v2/vendor_root.crl=$v/vendor_root.crl" "$v2/device_1.pem=$v/device_1.pem" \
  -- --steps 2 --seed 9

# Rank 1 sees another genuine revocation list of the same vendor at the same path (issued later, with
# a device of no rank revoked): every certificate still verifies on both ranks, and only the agreement
# tells that the ranks did not check against the same list, by its number. (A CRL state of its own for
# this run: rank 1's default one would remember list 2, which the runs below no longer give it.)
cp -r "$v" "$WORK/vendor3"
"$TT" provision --out "$WORK/vendor3" --devices 4 --revoke 3 >/dev/null
cmp -s "$WORK/vendor3/vendor_root.crl" "$v/vendor_root.crl" && bad "provision --revoke should issue a new list"
attacked crl "rank 1's revocation list differs from rank 0's \(number 2 vs 1\)" "" "$WORK/vendor3/vendor_root.crl=$v/vendor_root.crl" \
  -- --steps 2 --seed 9 --crl-state "$WORK/crl3_{rank}.state"

# Rank 1's policy (same path) also accepts a modified binary: both accept the genuine one, so every
# handshake passes; the agreement refuses before any key is released.
"$TT" attest --attestation none --write-policy "$WORK/policy.txt" >/dev/null
sed -i '/^config/d' "$WORK/policy.txt"
{ cat "$WORK/policy.txt"; echo "binary $(printf '%064d' 1)"; } >"$WORK/policy_loose.txt"
attacked policy "rank 1's verifier policy differs from rank 0's \(sha256 " "" "$WORK/policy_loose.txt=$WORK/policy.txt" \
  -- --steps 2 --seed 9 --policy "$WORK/policy.txt"

# lone NAME PATTERN VIEW1: rank 0 runs "${base[@]}" "${r0[@]}", rank 1 (with the view VIEW1) "${base[@]}"
# "${r1[@]}"; exit 3 naming PATTERN, sooner than the 60 s timeout a wait for a missing message ends in.
lone() {
  local name="$1" pattern="$2" view="$3" rc=0 start=$SECONDS
  "${MPI[@]}" -np 1 -x RANK_VIEW_1="$view" bash "$VIEW" "$TT" "${base[@]}" --timeout 60 "${r0[@]}" : \
    -np 1 -x RANK_VIEW_1="$view" bash "$VIEW" "$TT" "${base[@]}" --timeout 60 "${r1[@]}" >"$WORK/$name.log" 2>&1 || rc=$?
  expect_eq "$rc" 3 "$name: exit 3"
  grep -qE "INTEGRITY FAILURE: $pattern" "$WORK/$name.log" && ok || bad "$name: no /$pattern/" "$WORK/$name.log"
  (( SECONDS - start < 60 )) && ok || bad "$name: took $((SECONDS - start)) s, as long as the timeout"
}
# --resume on rank 0 only: rank 0 would wait for the checkpoint key's release, rank 1 for rank 0's
# parameters.
r0=(--steps 6 --seed 9 --resume "$WORK/ck") r1=(--steps 6 --seed 9)
lone resume_one "rank 1's --resume differs from rank 0's \(value none vs given\)" ""
# Rank 1's disk holds the plain shards where rank 0's holds the sealed ones, at the same path: with
# --allow-plain-data rank 1 would take no part in the dataset key's release; without it, rank 1's
# refusal would be its own (exit 2) rather than the difference it is.
r0=(--steps 2 --seed 9 --allow-plain-data) r1=("${r0[@]}")
lone plain_one "rank 1's data at rest differs from rank 0's \(value plain vs sealed\)" "$WORK/data=$WORK/sealed"
r0=(--steps 2 --seed 9) r1=("${r0[@]}")
lone plain_refused "rank 1's data at rest differs from rank 0's \(value plain vs sealed\)" "$WORK/data=$WORK/sealed"
# Plain shards agree by content: rank 1's training shard is as long as rank 0's, all 'A's.
mkdir -p "$WORK/same_size"
cp "$WORK/data/tiny_val.bin" "$WORK/same_size/"
python3 - "$WORK/data/tiny_train.bin" "$WORK/same_size/tiny_train.bin" <<'EOF'
import sys
b = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(b[:1024] + b"A\0" * ((len(b) - 1024) // 2))
EOF
r0=(--steps 2 --seed 9 --data "$WORK/data/tiny" --allow-plain-data) r1=("${r0[@]}")
lone content "rank 1's dataset split train differs from rank 0's \(content sha256 [0-9a-f]{16}\.\.\. vs [0-9a-f]{16}\.\.\.\)" \
  "$WORK/same_size=$WORK/data"
# The thread count decides the bits of oneDNN's convolutions, so it is agreed on every CPU run.
r0=(--steps 2 --seed 9 --threads 1) r1=(--steps 2 --seed 9 --threads 2)
lone threads "rank 1's --threads differs from rank 0's \(value 2 vs 1\)" ""
# Given to rank 0 only: rank 1's default (the smallest share of a host over the ranks) is not it.
many=$(( $(nproc) + 1 ))
r0=(--steps 2 --seed 9 --threads "$many") r1=(--steps 2 --seed 9 --threads 0)
lone threads_default "rank 1's --threads differs from rank 0's \(value [0-9]+ vs $many\)" ""
# An adversary on one rank's links only: rank 0's report would never say it was there.
r0=(--steps 2 --seed 9) r1=(--steps 2 --seed 9 --adversary snoop)
lone adversary_one "rank 1's --adversary differs from rank 0's \(value snoop vs none\)" ""
# A trace on rank 0 only: the ranks that write a part meet once more at the end, to merge them.
r0=(--steps 2 --seed 9 --trace "$WORK/trace.json") r1=(--steps 2 --seed 9)
lone trace_one "rank 1's --trace differs from rank 0's \(value none vs given\)" ""

# The honest resume, pinned: the right checkpoint digest passes and the summary records it.
resume=(--steps 6 --seed 9 --resume "$WORK/ck" --expect-dataset "$digest")
"${MPI[@]}" -np 2 "$TT" "${base[@]}" "${resume[@]}" --expect-checkpoint "$ckdigest" --summary "$WORK/resumed.json" \
  >"$WORK/resumed.log" 2>&1 || bad "pinned resume" "$WORK/resumed.log"
grep -q "\"manifest_sha256\": \"$ckdigest\"" "$WORK/resumed.json" && ok || bad "summary records the checkpoint"
rc=0; "${MPI[@]}" -np 2 "$TT" "${base[@]}" "${resume[@]}" --expect-checkpoint "$ck2digest" >"$WORK/pin_ck.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "wrong --expect-checkpoint: exit 3"
grep -q "expect-checkpoint: the checkpoint resumed (step 4) has manifest sha256 $ckdigest, expected $ck2digest" \
  "$WORK/pin_ck.log" && ok || bad "names expected and found" "$WORK/pin_ck.log"
# The dataset pin at one rank: a wrong digest exit 3, naming both; the right one trains.
one=(train --model gpt2-tiny --seq 16 --batch 2 --no-progress --threads 1 --val-batches 2 --steps 2
     --key-file "$WORK/k.key" --tee fast --data "$WORK/sealed/tiny")
wrong=$(printf '%064d' 0)
expect_exit 3 "expect-dataset: dataset split train has manifest sha256 $digest, expected $wrong" -- "$TT" "${one[@]}" --expect-dataset "$wrong"
"$TT" "${one[@]}" --expect-dataset "${digest^^}" >/dev/null 2>&1 && ok || bad "right --expect-dataset at one rank"
expect_exit 3 "expect-dataset: .*manifest sha256 none \(plain data\)" -- "$TT" "${one[@]}" --tee off --data "$WORK/data/tiny" --expect-dataset "$digest"
# A plain split's content digest is the shard file's, as sha256sum prints it.
"$TT" "${one[@]}" --tee off --data "$WORK/data/tiny" --summary "$WORK/plain.json" >/dev/null 2>&1 || bad "plain run"
expect_eq "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["agreed_inputs"]["dataset"]["train"]["content_sha256"])' "$WORK/plain.json")" \
  "$(sha256sum "$WORK/data/tiny_train.bin" | cut -c1-64)" "plain split: content sha256 is the shard's sha256sum"
expect_exit 2 "not a SHA-256 digest" -- "$TT" "${one[@]}" --expect-dataset abc
expect_exit 2 "add --resume" -- "$TT" "${one[@]}" --expect-checkpoint "$digest"

# Where messages are not really sealed (emulated GPU sealing in wall-clock time), an adversary is
# refused, saying why; in virtual time every ring message is a sealed token, and the flip is caught.
expect_exit 2 "really sealed.*--tee-device-crypto off" -- "$TT" "${one[@]}" --compute emulate --time wall --adversary flip:3
rc=0
"${MPI[@]}" -np 2 "$TT" "${base[@]}" --steps 2 --compute emulate --adversary flip:3 >"$WORK/vflip.log" 2>&1 || rc=$?
if [[ $rc -eq 3 ]] && grep -q "INTEGRITY FAILURE: .*tag mismatch" "$WORK/vflip.log"; then ok
else bad "virtual time: a flipped sealed token exits 3 naming the tag mismatch (exit $rc)" "$WORK/vflip.log"; fi
finish
