#!/usr/bin/env bash
# docs/reproducing.md's commands ("Folded ring", Note [Folded ring] in comm/allreduce/ring_geometry.h) as a
# reader runs them: gpt2-xl under cc at P = 1,024 on 8 ranks, and Llama-3-8B on emulated H200s, with the
# step times the doc's table gives (virtual time: the same on any machine) and the ring of 1,024's
# messages on each rank. Release only (minutes under ASan; cli_folded_ring runs the fold's paths there).
source "$(dirname "$0")/lib.sh" "$@"
PY=$(command -v python3)
provision_trust 8
"$TT" prepare-text --out "$WORK/fortunes" >/dev/null
if "$TT" train --model gpt2-xl --data "$WORK/fortunes/fortunes" --batch 4 --seq 1024 --steps 1 \
    --timing-warmup 0 --val-batches 0 --compute emulate --gpu h100 --link emulate --tee cc \
    --cc-transfer-us 35.2 --allow-plain-data --trust-root "$WORK/vendor/vendor_root.crt" \
    --device-identity "$WORK/vendor/device_{rank}.pem" --ranks-per-process 8 --model-ranks 1024 \
    -q --no-progress --summary "$WORK/xl.json" >"$WORK/xl.log" 2>&1 &&
  "$PY" - "$WORK/xl.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["world_size"] == 1024 and s["ranks_run"] == 8 and s["folded_ring"], s["world_size"]
assert abs(s["step_s_mean"] - 28.48766337) < 1e-6, s["step_s_mean"]
# Each rank sealed the ring of 1,024's messages: 2 (P - 1) per bucket (and segment) of its step.
assert s["counters"]["ring_sealed"][0] == 2 * 1023 * 145, s["counters"]["ring_sealed"][0]
PY
then passes=$((passes + 1)); else echo "FAIL: the doc's P = 1,024 gpt2-xl fold"; tail -5 "$WORK/xl.log"; fails=$((fails + 1)); fi

if "$TT" train --model llama-3-8b --data "$WORK/fortunes/fortunes" --batch 1 --seq 1024 --steps 1 \
    --timing-warmup 0 --val-batches 0 --compute emulate --gpu h200 --link emulate --tee cc \
    --cc-transfer-us 35.2 --allow-plain-data --trust-root "$WORK/vendor/vendor_root.crt" \
    --device-identity "$WORK/vendor/device_{rank}.pem" --ranks-per-process 8 --model-ranks 1024 \
    -q --no-progress --summary "$WORK/l8.json" >"$WORK/l8.log" 2>&1 &&
  "$PY" - "$WORK/l8.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["world_size"] == 1024 and s["ranks_run"] == 8 and s["folded_ring"], s["world_size"]
assert abs(s["step_s_mean"] - 66.493338595) < 1e-6, s["step_s_mean"]
assert s["counters"]["ring_sealed"][0] == 2 * 1023 * 194, s["counters"]["ring_sealed"][0]
PY
then passes=$((passes + 1)); else echo "FAIL: the doc's P = 1,024 Llama-3-8B fold"; tail -5 "$WORK/l8.log"; fails=$((fails + 1)); fi

finish
