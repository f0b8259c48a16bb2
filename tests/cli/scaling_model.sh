#!/usr/bin/env bash
# The scaling model (docs/reproducing.md, "The scaling model") on real summaries: a run's summary
# records its bucket plan (bucket_bytes, summing to the gradients' bytes), `teetrain model` projects
# with that plan, and --fit-max-p fits on the small runs and prints the larger ones' error apart: fitted
# on P = 2 and 4, it predicts P = 8 (virtual ranks) within 0.05%.
# Usage: scaling_model.sh path/to/teetrain
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
mkdir -p "$WORK/runs"
# P = 2, 4 and 8 as virtual ranks, all three runs in one process (`teetrain runs`).
for P in 2 4 8; do
  echo "--model gpt2-mini --data $WORK/data/tiny --batch 1 --seq 32 --steps 2 --timing-warmup 1 --bucket-mb 1" \
    "--val-batches 0 --no-progress -q --compute emulate --gpu h100 --link emulate --ranks-per-process $P" \
    "--summary $WORK/runs/p$P.json"
done >"$WORK/plan.txt"
"$TT" runs "$WORK/plan.txt" >"$WORK/runs.log" 2>&1 || { echo "FAIL: the runs"; tail -5 "$WORK/runs.log"; fails=$((fails + 1)); }
check "bucket plan in the summary" python3 -c "import json,sys
s = json.load(open(sys.argv[1])); b = s['bucket_bytes']
assert len(b) == s['buckets'] > 1 and sum(b) == 4 * s['num_params'], s['buckets']" "$WORK/runs/p2.json"
"$TT" model --runs "$WORK/runs" --bucket-mb 1 --fit-max-p 4 --ranks 16 >"$WORK/model.txt" 2>&1 || { echo "FAIL: model"; cat "$WORK/model.txt"; fails=$((fails + 1)); }
check "fit set named" grep -qE "^  fit set \(P <= 4\): mean \|error\| .* over 2 runs" "$WORK/model.txt"
# Fitted on P = 2 and 4, the model predicts the direct P = 8 run (docs/reproducing.md: held out to
# P = 256 within 0.002%).
check "P = 8 held out, within 0.05%" grep -qE "^  held out \(P > 4\): mean \|error\| 0\.0%, max 0\.0% over 1 runs" \
  "$WORK/model.txt"
check "projection on the runs' bucket plan" grep -qE "^  [0-9]+ buckets: the runs' bucket plan" "$WORK/model.txt"
"$TT" model --runs "$WORK/runs" --bucket-mb 7 --ranks 8 >"$WORK/model7.txt" 2>&1
check "no run at that bucket size: equal slices, said" grep -q "equal slices (no run of this model at this bucket size)" \
  "$WORK/model7.txt"
expect_exit 2 "fit-max-p" -- "$TT" model --runs "$WORK/runs" --fit-max-p -1

echo "scaling_model: $passes passed, $fails failed"
[[ $fails -eq 0 ]]
