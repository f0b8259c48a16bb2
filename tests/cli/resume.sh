#!/usr/bin/env bash
# 5 steps + checkpoint + 5 more steps equals 10 uninterrupted steps, bit for bit.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
common=("$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --batch 2 --seq 16 --no-progress --seed 3 --warmup 2)
"${common[@]}" --steps 10 --summary "$WORK/full.json" 2>/dev/null
"${common[@]}" --steps 10 --save-every 5 --ckpt-dir "$WORK/ck" --summary "$WORK/first.json" 2>/dev/null
# Throw away the final checkpoint so the resume starts from step 5.
rm -rf "$WORK/ck/step_00000010"
"${common[@]}" --steps 10 --resume "$WORK/ck" --summary "$WORK/resumed.json" 2>/dev/null
expect_eq "$(json_field "$WORK/resumed.json" params_sha256)" "$(json_field "$WORK/full.json" params_sha256)" \
  "resumed run equals uninterrupted run"
test -f "$WORK/ck/step_00000005/model.safetensors" && passes=$((passes + 1)) || { echo "FAIL: no model.safetensors"; fails=$((fails + 1)); }
test -f "$WORK/ck/step_00000005/COMPLETE" && passes=$((passes + 1)) || { echo "FAIL: no COMPLETE marker"; fails=$((fails + 1)); }
# A checkpoint without its COMPLETE marker is never resumed from.
rm -f "$WORK/ck/step_00000005/COMPLETE"
rm -rf "$WORK/ck/step_00000010"
expect_exit 2 "no complete checkpoint" -- "${common[@]}" --steps 10 --resume "$WORK/ck"
finish
