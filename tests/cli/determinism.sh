#!/usr/bin/env bash
# The same seed gives bit-identical parameters; a different seed gives different ones.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
run() { "$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --steps 8 --batch 2 --seq 16 --no-progress \
          --seed "$1" --summary "$2" --metrics "$2.jsonl" 2>/dev/null; }
run 7 "$WORK/a.json"
run 7 "$WORK/b.json"
run 8 "$WORK/c.json"
a=$(json_field "$WORK/a.json" params_sha256)
b=$(json_field "$WORK/b.json" params_sha256)
c=$(json_field "$WORK/c.json" params_sha256)
expect_eq "${#a}" 64 "params_sha256 is a SHA-256 hex digest"
expect_eq "$a" "$b" "same seed, same parameters"
expect_ne "$a" "$c" "different seed, different parameters"
expect_eq "$(wc -l <"$WORK/a.json.jsonl")" 8 "one metrics line per step"
for f in steps final_loss val_loss tokens_per_s params_sha256; do
  grep -q "\"$f\"" "$WORK/a.json" && passes=$((passes + 1)) || { echo "FAIL: summary lacks $f"; fails=$((fails + 1)); }
done
finish
