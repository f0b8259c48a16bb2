#!/usr/bin/env bash
# Checkpoints against an attacker who controls the checkpoint directory (docs/training.md, "Checkpoints"):
# every manipulation makes both `teetrain train --resume` and `teetrain ckpt verify` exit 3 with a
# short message naming the file; an untouched checkpoint resumes bit for bit. One rank, no mpirun.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
"$TT" keygen --out "$WORK/k.key" >/dev/null
"$TT" seal-data --data "$WORK/data/tiny" --out "$WORK/sealed" --key-file "$WORK/k.key" --chunk-kb 1 >/dev/null
# A constant schedule: a 6-step run resumed to 9 steps is the same run as 9 uninterrupted steps.
common=(train --model gpt2-tiny --seq 16 --batch 2 --no-progress --threads 1 --seed 9 --val-batches 2 --schedule constant)
tee_run=("$TT" "${common[@]}" --tee fast --data "$WORK/sealed/tiny" --key-file "$WORK/k.key")
plain_run=("$TT" "${common[@]}" --tee off --data "$WORK/data/tiny")
verify=("$TT" ckpt verify --key-file "$WORK/k.key")
ok() { if "$@" >/dev/null 2>&1; then passes=$((passes + 1)); else echo "FAIL: $*"; fails=$((fails + 1)); fi; }

"${tee_run[@]}" --steps 9 --summary "$WORK/full.json" 2>/dev/null
# The job that gets "interrupted": saves steps 3 and 6; the key's freshness record sees step 6.
"${tee_run[@]}" --steps 6 --save-every 3 --ckpt-dir "$WORK/ck" 2>/dev/null
test -f "$WORK/k.key.freshness" && passes=$((passes + 1)) || { echo "FAIL: no freshness record"; fails=$((fails + 1)); }
ok "${verify[@]}" "$WORK/ck"
"${tee_run[@]}" --steps 9 --resume "$WORK/ck" --summary "$WORK/resumed.json" 2>/dev/null
expect_eq "$(json_field "$WORK/resumed.json" params_sha256)" "$(json_field "$WORK/full.json" params_sha256)" \
  "untouched sealed resume == uninterrupted run"

# attack NAME PATTERN: resume and verify of $WORK/NAME (a manipulated copy of ck) both exit 3.
attack() {
  expect_exit 3 "$2" -- "${tee_run[@]}" --steps 9 --resume "$WORK/$1"
  expect_exit 3 "$2" -- "${verify[@]}" "$WORK/$1"
}
fresh_copy() { rm -rf "$WORK/$1"; cp -r "$WORK/ck" "$WORK/$1"; }

fresh_copy a && cp "$WORK/a/step_00000003/model.safetensors.sealed" "$WORK/a/step_00000006/"
attack a "step_00000006/model.safetensors.sealed: SHA-256 differs"
fresh_copy a && cp "$WORK/a/step_00000003/optimizer.safetensors.sealed" "$WORK/a/step_00000006/"
attack a "step_00000006/optimizer.safetensors.sealed: SHA-256 differs"
fresh_copy a && rm -rf "$WORK/a/step_00000006" && mv "$WORK/a/step_00000003" "$WORK/a/step_00000006"
attack a "manifest.json.sealed: written for step_00000003 but the directory is step_00000006"
fresh_copy a && rm "$WORK/a/step_00000006/manifest.json.sealed"
attack a "step_00000006/manifest.json.sealed: missing"
fresh_copy a && flip_byte "$WORK/a/step_00000006/manifest.json.sealed" 200
attack a "manifest.json.sealed.*chunk 0"
fresh_copy a && rm -rf "$WORK/a/step_00000006"  # the genuine step 3 is now the newest
attack a "rollback: .*step_00000003 is step 3 but the freshness record .*k.key.freshness.* has seen step 6"

# Plaintext under the sealed names (from a plain run of the same job): refused with the key and
# without it; export writes nothing.
"${plain_run[@]}" --steps 6 --save-every 3 --ckpt-dir "$WORK/pk" 2>/dev/null
fresh_copy a
for f in manifest.json model.safetensors optimizer.safetensors state.json; do
  cp "$WORK/pk/step_00000006/$f" "$WORK/a/step_00000006/$f.sealed"
done
attack a "manifest.json.sealed: plaintext"
expect_exit 3 "manifest.json.sealed: plaintext" -- "$TT" ckpt verify "$WORK/a/step_00000006"
expect_exit 3 "manifest.json.sealed: plaintext" -- "$TT" ckpt export "$WORK/a" --out "$WORK/a.safetensors"
test ! -e "$WORK/a.safetensors" && passes=$((passes + 1)) || { echo "FAIL: export wrote plaintext"; fails=$((fails + 1)); }
fresh_copy a && cp "$WORK/pk/step_00000006/model.safetensors" "$WORK/a/step_00000006/model.safetensors.sealed"
attack a "step_00000006/model.safetensors.sealed"

# Another genuine step 6 of the same run (resumed from step 3 under a second path of the same key,
# whose record never saw this run): sealed, chained, and still not the step 6 the record has seen.
cp "$WORK/k.key" "$WORK/k2.key"
mkdir -p "$WORK/b" && cp -r "$WORK/ck/step_00000003" "$WORK/b/"
"${tee_run[@]}" --key-file "$WORK/k2.key" --steps 6 --save-every 3 --ckpt-dir "$WORK/b" --resume "$WORK/b" 2>/dev/null
fresh_copy a && rm -rf "$WORK/a/step_00000006" && cp -r "$WORK/b/step_00000006" "$WORK/a/"
attack a "is step 6 of this run, but not the step 6 the freshness record"

# Plain mode (--tee off): the same read path catches mix-ups and partial edits (nothing is
# authenticated without a key, and there is no freshness record: a rollback passes, as documented).
"${plain_run[@]}" --steps 9 --resume "$WORK/pk" --summary "$WORK/presumed.json" 2>/dev/null
expect_eq "$(json_field "$WORK/presumed.json" params_sha256)" "$(json_field "$WORK/full.json" params_sha256)" \
  "untouched plain resume == uninterrupted run"
plain_attack() {
  expect_exit 3 "$2" -- "${plain_run[@]}" --steps 9 --resume "$WORK/$1"
  expect_exit 3 "$2" -- "$TT" ckpt verify "$WORK/$1"
}
rm -rf "$WORK/p" && cp -r "$WORK/pk" "$WORK/p" && cp "$WORK/p/step_00000003/optimizer.safetensors" "$WORK/p/step_00000006/"
plain_attack p "step_00000006/optimizer.safetensors: SHA-256 differs"
rm -rf "$WORK/p" && cp -r "$WORK/pk" "$WORK/p" && rm -rf "$WORK/p/step_00000006" && mv "$WORK/p/step_00000003" "$WORK/p/step_00000006"
plain_attack p "written for step_00000003 but the directory is step_00000006"
rm -rf "$WORK/p" && cp -r "$WORK/pk" "$WORK/p" && rm "$WORK/p/step_00000006/manifest.json"
plain_attack p "step_00000006/manifest.json: missing"
rm -rf "$WORK/p" && cp -r "$WORK/pk" "$WORK/p" && rm -rf "$WORK/p/step_00000006"
ok "$TT" ckpt verify "$WORK/p"
# A plain checkpoint where a key is given (TEE mode) is refused, not read in clear.
expect_exit 3 "manifest.json: a plaintext manifest, but a key was given" -- "${tee_run[@]}" --steps 9 --resume "$WORK/pk"
finish
