#!/usr/bin/env bash
# docs/reproducing.md's commands ("Folded ring", Note [Folded ring] in comm/allreduce/ring_geometry.h) as a
# reader runs them: gpt2-xl under cc at P = 1,024 on 8 ranks, and Llama-3-8B on emulated H200s, with the
# step times the doc's table gives (virtual time: the same on any machine) and the ring of 1,024's
# messages on each rank. Release only (minutes under ASan; cli_folded_ring runs the fold's paths there).
source "$(dirname "$0")/lib.sh" "$@"
PY=$(command -v python3)
provision_trust 8
"$TT" prepare-text --out "$WORK/fortunes" >/dev/null
# fold NAME STEP_S BUCKETS MODEL GPU BATCH: the doc's command for MODEL on GPU, its step time and its ring
# of 1,024's 2 (P - 1) sealed messages per bucket on each rank.
fold() {
  local name=$1 step=$2 buckets=$3
  if "$TT" train --model "$4" --data "$WORK/fortunes/fortunes" --batch "$6" --seq 1024 --steps 1 \
      --timing-warmup 0 --val-batches 0 --compute emulate --gpu "$5" --link emulate --tee cc \
      --cc-transfer-us 35.2 --allow-plain-data --trust-root "$WORK/vendor/vendor_root.crt" \
      --device-identity "$WORK/vendor/device_{rank}.pem" --ranks-per-process 8 --model-ranks 1024 \
      -q --no-progress --summary "$WORK/$name.json" >"$WORK/$name.log" 2>&1 &&
    "$PY" - "$WORK/$name.json" "$step" "$buckets" <<'PY'
import json, sys
s, step, buckets = json.load(open(sys.argv[1])), float(sys.argv[2]), int(sys.argv[3])
assert s["world_size"] == 1024 and s["ranks_run"] == 8 and s["folded_ring"], s["world_size"]
assert abs(s["step_s_mean"] - step) < 1e-6, s["step_s_mean"]
assert s["counters"]["ring_sealed"][0] == 2 * 1023 * buckets, s["counters"]["ring_sealed"][0]
PY
  then passes=$((passes + 1)); else echo "FAIL: the doc's P = 1,024 $4 fold"; tail -5 "$WORK/$name.log"; fails=$((fails + 1)); fi
}
fold xl 28.48766337 145 gpt2-xl h100 4
fold l8 66.493338595 194 llama-3-8b h200 1
finish
