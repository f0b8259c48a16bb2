#!/usr/bin/env bash
# --shard params (ZeRO-3) on emulated GPUs in virtual time (docs/design.md "Sharded data parallelism"):
#  - every block gather (forward and backward), the pinned buckets' gather after the update, the
#    reduce-scatter and the gradient norm's parts are sealed and costed like the all-reduce's: a step's
#    sealed messages are what the units and buckets predict (below);
#  - the same virtual times with a process per rank and with virtual ranks (2 x 2 and 1 x 4);
#  - --prefetch off moves the same messages and its step is not shorter;
#  - a flipped block gather in cc exits 3 on every rank.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust
PY=$(command -v python3)
MPI=(mpirun --allow-run-as-root --oversubscribe)
export OMP_WAIT_POLICY=passive
emu=(train --model gpt2-tiny --data "$WORK/data/tiny" --batch 2 --seq 32 --steps 3 --timing-warmup 1
     --val-batches 0 --no-progress -q --compute emulate --gpu h100 --bucket-mb 0.01 --allow-plain-data
     --tee cc --cc-hardware h100-pageable "${TRUST[@]}")
run() { # run NAME PROCESSES args...: summary in $WORK/NAME.json, stdout and stderr in $WORK/NAME.log
  local name="$1" np="$2"; shift 2
  if "${MPI[@]}" -np "$np" "$TT" "${emu[@]}" --summary "$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1; then
    passes=$((passes + 1))
  else
    echo "FAIL: run $name"; tail -8 "$WORK/$name.log"; fails=$((fails + 1))
  fi
}
run ddp 2 --ranks-per-process 2
run zero3-p4 4 --shard params
run zero3-v4 2 --shard params --ranks-per-process 2
run zero3-noprefetch 1 --shard params --ranks-per-process 4 --prefetch off
check "emulated ZeRO-3: messages, phases and virtual time" "$PY" - "$WORK" <<'PY'
import json, sys
r = {n: json.load(open(f"{sys.argv[1]}/{n}.json")) for n in ("ddp", "zero3-p4", "zero3-v4", "zero3-noprefetch")}
z = r["zero3-p4"]
assert z["shard"] == "params" and z["compute"] == "emulate", (z["shard"], z["compute"])
steps, P = z["steps"], z["world_size"]
nb = z["counters"]["buckets"][0] // steps
# gpt2-tiny at --bucket-mb 0.01 (2,621 floats a bucket): 7 buckets in launch order; bucket 0 holds the
# final norm and bucket 6 the embeddings (pinned: gathered after every update), block 1 is buckets 1-3,
# block 0 buckets 4-5. Per step, each a ring collective of P - 1 messages sealed by every rank under cc:
# the reduce-scatter of every bucket, the norm's parts, the 2 pinned gathers, the forward's gathers of
# both blocks (5 buckets) and the backward's of block 0 (2; block 1's forward is followed at once by
# its backward and keeps it). The first step starts whole (no forward gathers) and the run ends with
# the model gathered whole (the same 5 buckets), so the run seals steps x a step's messages.
assert nb == 7, nb
per_step = (P - 1) * (nb + 1 + 2 + 5 + 2)
assert z["counters"]["ring_sealed"] == [steps * per_step] * P, (z["counters"]["ring_sealed"], steps * per_step)
# DDP's all-reduce: 2 (P - 1) per bucket.
assert r["ddp"]["counters"]["ring_sealed"][0] == steps * 2 * (P - 1) * nb, r["ddp"]["counters"]["ring_sealed"]
# Bytes: the blocks' buckets travel twice or three times a step where DDP's all-gather moves them once
# (the embeddings, a quarter of gpt2-tiny, are gathered once as DDP's are).
ratio = z["counters"]["bytes_sealed"][0] / r["ddp"]["counters"]["bytes_sealed"][0]
assert 1.05 < ratio < 1.5, ratio
# The gathers' bounce-buffer crossings are charged (stage), and a gather waited for shows in the step.
assert z["phases"]["stage"]["mean"] > r["ddp"]["phases"]["stage"]["mean"], "gather crossings not charged"
# Virtual time: a process per rank, 2 x 2 virtual ranks and (prefetch aside) 1 x 4 agree to the bit.
v = r["zero3-v4"]
assert v["host_transport"].startswith("virtual: "), v["host_transport"]
for k in ("step_s_mean", "phases", "counters"):
    assert z[k] == v[k], (k, z[k], v[k])
# Without prefetch the same messages travel, each only when its block asks: the step is not shorter.
n = r["zero3-noprefetch"]
assert n["counters"] == z["counters"], (n["counters"], z["counters"])
assert n["step_s_mean"] >= z["step_s_mean"], (n["step_s_mean"], z["step_s_mean"])
assert n["phases"]["forward"]["mean"] > z["phases"]["forward"]["mean"], "prefetch hides nothing"
PY

# A flipped block gather: rank 0's 38th message at P = 4 is in step 1's forward, the all-gather of one of
# block 1's buckets (labels from 3 nb + 1 = 22: Note [ZeRO-3 units follow the buckets]); exit 3, every
# rank stopped, the verdict naming the gather. (--timeout only bounds a hang; on a loaded machine the
# ranks' MPI start-up alone can take more than a few seconds.)
rc=0
"${MPI[@]}" -np 4 "$TT" "${emu[@]}" --shard params --steps 2 --timeout 30 --adversary flip:38 \
  >"$WORK/attack.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "emulated --shard params --tee cc --adversary flip:38: exit 3"
grep -qE "INTEGRITY FAILURE: .*step 1, bucket (2[2-9]|3[0-9]), phase all_gather" "$WORK/attack.log" &&
  passes=$((passes + 1)) || { echo "FAIL: no verdict on a block gather"; tail -5 "$WORK/attack.log"; fails=$((fails + 1)); }
[[ $(grep -cE "^teetrain: (rank [0-9]+: stopped|INTEGRITY FAILURE)" "$WORK/attack.log") -eq 4 ]] &&
  passes=$((passes + 1)) || { echo "FAIL: not every rank stopped"; cat "$WORK/attack.log"; fails=$((fails + 1)); }
# ZeRO-3 starts from whole parameters: a run that times its first step is warned that step 1 waits for no
# gather (stderr, rank 0 once); one that warms up is not (zero3-v4 above, --timing-warmup 1).
run zero3-cold 1 --shard params --ranks-per-process 2 --steps 2 --timing-warmup 0
check "ZeRO-3 timed from step 1 is warned, once" test "$(grep -c "teetrain: warning: --shard params starts from whole \
parameters, so step 1's forward waits for no gather" "$WORK/zero3-cold.log")" -eq 1
check "ZeRO-3 with a warm-up step is not" bash -c "! grep -q 'shard params starts from whole' '$WORK/zero3-v4.log'"
finish
