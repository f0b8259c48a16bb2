#!/usr/bin/env bash
# The scaling model (docs/reproducing.md, "The scaling model") on real summaries: a run's summary
# records its bucket plan (bucket_bytes, summing to the gradients' bytes), `teetrain model` projects
# with that plan, and --fit-max-p fits on the small runs and prints the larger ones' error apart.
# Usage: scaling_model.sh path/to/teetrain
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
MPI=(mpirun --allow-run-as-root --oversubscribe)
mkdir -p "$WORK/runs"
for P in 2 4; do
  "${MPI[@]}" -np "$P" "$TT" train --model gpt2-mini --data "$WORK/data/tiny" --batch 1 --seq 32 --steps 2 \
    --timing-warmup 1 --bucket-mb 1 --val-batches 0 --no-progress --compute emulate --gpu h100 --link emulate \
    --summary "$WORK/runs/p$P.json" >"$WORK/p$P.log" 2>&1 || { echo "FAIL: run P=$P"; tail -5 "$WORK/p$P.log"; fails=$((fails + 1)); }
done
check "bucket plan in the summary" python3 -c "import json,sys
s = json.load(open(sys.argv[1])); b = s['bucket_bytes']
assert len(b) == s['buckets'] > 1 and sum(b) == 4 * s['num_params'], s['buckets']" "$WORK/runs/p2.json"
"$TT" model --runs "$WORK/runs" --bucket-mb 1 --fit-max-p 2 --ranks 8 >"$WORK/model.txt" 2>&1 || { echo "FAIL: model"; cat "$WORK/model.txt"; fails=$((fails + 1)); }
check "fit set named" grep -qE "^  fit set \(P <= 2\): mean \|error\| .* over 1 runs" "$WORK/model.txt"
check "held-out runs named" grep -qE "^  held out \(P > 2\): mean \|error\| .* over 1 runs" "$WORK/model.txt"
check "projection on the runs' bucket plan" grep -qE "^  [0-9]+ buckets: the runs' bucket plan" "$WORK/model.txt"
"$TT" model --runs "$WORK/runs" --bucket-mb 7 --ranks 8 >"$WORK/model7.txt" 2>&1
check "no run at that bucket size: equal slices, said" grep -q "equal slices (no run of this model at this bucket size)" \
  "$WORK/model7.txt"
expect_exit 2 "fit-max-p" -- "$TT" model --runs "$WORK/runs" --fit-max-p -1

echo "scaling_model: $passes passed, $fails failed"
[[ $fails -eq 0 ]]
