#!/usr/bin/env bash
# `--keep` against a checkpoint directory an attacker has written into (docs/training.md, "Checkpoints"): it
# deletes only the run's own saves, found by walking its manifests' hash chain back from the save it
# just made; a planted `step_99999999/COMPLETE`, a step directory of garbage and another run's genuine
# checkpoints are left alone with one warning line each. Also: a resume without a freshness record
# warns that rollback was not checked, and --key-file with --tee off says what it does there.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
"$TT" keygen --out "$WORK/k.key" >/dev/null
"$TT" seal-data --data "$WORK/data/tiny" --out "$WORK/sealed" --key-file "$WORK/k.key" --chunk-kb 1 >/dev/null
common=(train --model gpt2-tiny --seq 16 --batch 2 --no-progress --threads 1 --seed 9 --val-batches 0)
declare -A run=(
  [off]="$TT ${common[*]} --tee off --data $WORK/data/tiny"
  [fast]="$TT ${common[*]} --tee fast --data $WORK/sealed/tiny --key-file $WORK/k.key"
)
declare -A key=([off]="" [fast]="--key-file $WORK/k.key")
present() { [[ -e "$1" ]] && passes=$((passes + 1)) || { echo "FAIL: $2: $1 is gone"; fails=$((fails + 1)); }; }
absent() { [[ ! -e "$1" ]] && passes=$((passes + 1)) || { echo "FAIL: $2: $1 is still there"; fails=$((fails + 1)); }; }
ok() { if "$@" >/dev/null 2>&1; then passes=$((passes + 1)); else echo "FAIL: $*"; fails=$((fails + 1)); fi; }

for mode in off fast; do
  ck="$WORK/ck_$mode"
  # What an attacker who owns the disk plants: an empty "newest" checkpoint, a step directory of
  # garbage, and a directory that is no checkpoint at all.
  mkdir -p "$ck/step_99999999" "$ck/step_00000077" "$ck/notes"
  : >"$ck/step_99999999/COMPLETE"
  head -c 3000 /dev/urandom >"$ck/step_00000077/model.safetensors"
  echo "step 77" >"$ck/step_00000077/COMPLETE"
  # shellcheck disable=SC2086
  ${run[$mode]} --steps 5 --save-every 1 --keep 2 --ckpt-dir "$ck" 2>"$WORK/$mode.log" ||
    { echo "FAIL: $mode run with planted checkpoints"; cat "$WORK/$mode.log"; fails=$((fails + 1)); }
  for s in 4 5; do present "$ck/step_0000000$s/COMPLETE" "$mode: the newest 2 saves are kept"; done
  # Both verify, chained, as a directory of their own (the planted ones beside them would fail it).
  rm -rf "$WORK/v" && mkdir "$WORK/v" && cp -r "$ck/step_00000004" "$ck/step_00000005" "$WORK/v/"
  # shellcheck disable=SC2086
  ok "$TT" ckpt verify ${key[$mode]} "$WORK/v"
  for s in 1 2 3; do absent "$ck/step_0000000$s" "$mode: saves beyond --keep 2 are pruned"; done
  present "$ck/step_99999999/COMPLETE" "$mode: the planted empty checkpoint is left alone"
  present "$ck/step_00000077/model.safetensors" "$mode: the planted garbage is left alone"
  present "$ck/notes" "$mode: a directory that is no checkpoint is left alone"
  expect_eq "$(grep -c 'warning: --keep leaves .*step_99999999 alone: not verified as this run' "$WORK/$mode.log")" 1 \
    "$mode: one warning for step_99999999"
  expect_eq "$(grep -c 'warning: --keep leaves .*step_00000077 alone' "$WORK/$mode.log")" 1 \
    "$mode: one warning for step_00000077"

  # Another run (a fresh lineage) in the same directory: the first run's checkpoints are kept; its
  # step 4, which the new run saves over, is moved aside, not deleted.
  # shellcheck disable=SC2086
  ${run[$mode]} --steps 4 --save-every 2 --keep 1 --ckpt-dir "$ck" 2>"$WORK/$mode.2.log" ||
    { echo "FAIL: $mode second run"; cat "$WORK/$mode.2.log"; fails=$((fails + 1)); }
  present "$ck/step_00000005/COMPLETE" "$mode: another run's checkpoint survives a new run's --keep 1"
  # shellcheck disable=SC2086
  ok "$TT" ckpt verify ${key[$mode]} "$ck/step_00000005"
  displaced=("$ck"/displaced_step_00000004.*)
  present "${displaced[0]}/COMPLETE" "$mode: the other run's step 4 is moved aside"
  grep -q "step_00000004 was not this run's checkpoint (another run); moved to" "$WORK/$mode.2.log" &&
    passes=$((passes + 1)) || { echo "FAIL: $mode: no warning for the displaced step"; fails=$((fails + 1)); }
  absent "$ck/step_00000002" "$mode: the new run prunes its own step 2"
  present "$ck/step_00000004/COMPLETE" "$mode: the new run's own step 4"
done

# Resume: plain checkpoints have no freshness record; a sealed one warns only once the record is gone.
${run[off]} --steps 6 --resume "$WORK/ck_off/step_00000005" 2>"$WORK/r_off.log"
grep -q "warning: rollback not checked: plain checkpoints" "$WORK/r_off.log" && passes=$((passes + 1)) ||
  { echo "FAIL: plain resume does not warn"; cat "$WORK/r_off.log"; fails=$((fails + 1)); }
rm -rf "$WORK/ckf" && mkdir "$WORK/ckf" && cp -r "$WORK/ck_fast/step_00000004" "$WORK/ckf/"
${run[fast]} --steps 6 --resume "$WORK/ckf" 2>"$WORK/r_fast.log"
grep -q "rollback not checked" "$WORK/r_fast.log" && { echo "FAIL: warned with a record"; fails=$((fails + 1)); } ||
  passes=$((passes + 1))
mv "$WORK/k.key.freshness" "$WORK/k.key.freshness.away"
${run[fast]} --steps 6 --resume "$WORK/ckf" 2>"$WORK/r_nofresh.log"
grep -q "warning: rollback not checked: no freshness record at $WORK/k.key.freshness" "$WORK/r_nofresh.log" &&
  passes=$((passes + 1)) || { echo "FAIL: resume without a record does not warn"; cat "$WORK/r_nofresh.log"; fails=$((fails + 1)); }

# --key-file with --tee off: one line on what it does there (nothing); none when it is not given.
${run[off]} --steps 1 --key-file "$WORK/k.key" 2>"$WORK/kf.log"
expect_eq "$(grep -c 'note: --key-file is not used with --tee off' "$WORK/kf.log")" 1 "--key-file with --tee off"
${run[off]} --steps 1 2>"$WORK/nokf.log"
expect_eq "$(grep -c 'key-file' "$WORK/nokf.log")" 0 "no --key-file, no note"
finish
