#!/usr/bin/env bash
# 5 steps + checkpoint + 5 more steps equals 10 uninterrupted steps, bit for bit; the resumed run's
# checkpoint continues the lineage (same run_id, chained to the manifest it resumed from).
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
common=("$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --batch 2 --seq 16 --no-progress --seed 3 --warmup 2)
"${common[@]}" --steps 10 --summary "$WORK/full.json" 2>/dev/null
"${common[@]}" --steps 10 --save-every 5 --ckpt-dir "$WORK/ck" --summary "$WORK/first.json" 2>/dev/null
# Throw away the final checkpoint so the resume starts from step 5 (plain mode keeps no freshness record).
rm -rf "$WORK/ck/step_00000010"
"${common[@]}" --steps 10 --resume "$WORK/ck" --save-every 5 --ckpt-dir "$WORK/ck" --summary "$WORK/resumed.json" 2>/dev/null
expect_eq "$(json_field "$WORK/resumed.json" params_sha256)" "$(json_field "$WORK/full.json" params_sha256)" \
  "resumed run equals uninterrupted run"
for f in model.safetensors optimizer.safetensors state.json manifest.json COMPLETE; do
  test -f "$WORK/ck/step_00000005/$f" && passes=$((passes + 1)) || { echo "FAIL: no $f"; fails=$((fails + 1)); }
done
expect_eq "$(json_field "$WORK/ck/step_00000010/manifest.json" run_id)" \
  "$(json_field "$WORK/ck/step_00000005/manifest.json" run_id)" "a resumed run keeps its lineage's run_id"
"$TT" ckpt verify "$WORK/ck" >"$WORK/verify.txt" 2>&1 || { echo "FAIL: ckpt verify"; fails=$((fails + 1)); }
grep -q "chain: follows step_00000005" "$WORK/verify.txt" && passes=$((passes + 1)) ||
  { echo "FAIL: step 10 does not chain to step 5"; cat "$WORK/verify.txt"; fails=$((fails + 1)); }
# A checkpoint without its manifest (deleted, or written before manifests) is refused.
mv "$WORK/ck/step_00000010/manifest.json" "$WORK/manifest.json"
expect_exit 3 "step_00000010/manifest.json: missing" -- "${common[@]}" --steps 12 --resume "$WORK/ck"
mv "$WORK/manifest.json" "$WORK/ck/step_00000010/manifest.json"
# A checkpoint without its COMPLETE marker is never resumed from.
rm -f "$WORK/ck/step_00000005/COMPLETE" "$WORK/ck/step_00000010/COMPLETE"
expect_exit 2 "no complete checkpoint" -- "${common[@]}" --steps 10 --resume "$WORK/ck"
finish
