#!/usr/bin/env bash
# A folded ring (--model-ranks P, Note [Folded ring] in comm/allreduce/ring_geometry.h): K ranks model a
# ring of P in virtual time. Against the same ring run whole (P ranks as threads), the step time and
# every phase's max and mean agree to within a clock tick per hop (chunks of one float more or less), in
# --tee off and cc and on two nodes, and sharded the step; the summary says what ran and what was modelled; a flipped sealed
# message in the fold still stops the run with exit 3; what a fold cannot model is refused (exit 2).
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust 12
PY=$(command -v python3)
emu=(train --model gpt2-tiny --data "$WORK/data/tiny" --batch 2 --seq 32 --steps 2 --timing-warmup 1
     --val-batches 0 --no-progress -q --compute emulate --gpu h100 --allow-plain-data)
cc=(--tee cc "${TRUST[@]}")
run() { # run NAME args...: summary in $WORK/NAME.json
  local name="$1"; shift
  if "$TT" "${emu[@]}" --summary "$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1; then
    passes=$((passes + 1))
  else
    echo "FAIL: run $name"; tail -8 "$WORK/$name.log"; fails=$((fails + 1))
  fi
}
# close FULL FOLD K: FOLD (K ranks run) models FULL's world, and their virtual times agree.
close() {
  if "$PY" - "$WORK/$1.json" "$WORK/$2.json" "$3" <<'PY'
import json, sys
full, fold = (json.load(open(p)) for p in sys.argv[1:3])
k = int(sys.argv[3])
assert full["time"] == "virtual" == fold["time"]
assert fold["world_size"] == full["world_size"] and fold["ranks_run"] == k, (fold["world_size"], fold["ranks_run"])
assert full["folded_ring"] is None and str(full["world_size"]) in fold["folded_ring"], fold["folded_ring"]
# A hop's chunk differs by at most one float; at the slowest link that is under a tick (1 ns) per hop.
hops = 2 * (full["world_size"] - 1) * len(full["bucket_bytes"]) * 2  # both phases, steps run
tol = 1e-9 * hops
def near(a, b, what):
    assert abs(a - b) <= tol, (what, a, b, tol)
near(full["step_s_mean"], fold["step_s_mean"], "step_s_mean")
for name, ph in full["phases"].items():
    for stat in ("max", "mean"):
        near(ph[stat], fold["phases"][name][stat], name + " " + stat)
assert full["step_s_mean"] > 0
# Each rank seals and opens the modelled ring's messages: 2 (P - 1) per bucket and step.
for c in ("ring_sealed", "ring_opened"):
    assert fold["counters"][c] == full["counters"][c][:k], (c, fold["counters"][c], full["counters"][c])
if full["tee"]["mode"] != "off":
    assert fold["phases"]["seal"]["mean"] > 0, "the fold seals"
PY
  then passes=$((passes + 1)); else echo "FAIL: $2 does not model $1"; fails=$((fails + 1)); fi
}

run off-p8 --tee off --ranks-per-process 8
run off-f4 --tee off --ranks-per-process 4 --model-ranks 8
run off-f2 --tee off --ranks-per-process 2 --model-ranks 8
close off-p8 off-f4 4
close off-p8 off-f2 2
run cc-p8 "${cc[@]}" --ranks-per-process 8
run cc-f4 "${cc[@]}" --ranks-per-process 4 --model-ranks 8
close cc-p8 cc-f4 4
# Sharded (ZeRO-1, -2, -3) under H100 CC's measured launch cost, where an optimizer pays per parameter
# piece its shard cuts and modelled rank 7 (not run) cuts the most: each fold rank updates its class's
# slowest shard (Note [Sharded fold], engine/gradients/shard.h), so the step and the optimizer's slowest
# rank are the whole ring's, the optimizer's mean over ranks above it; memory per rank is P's.
for stage in optimizer gradients params; do
  run shard-$stage-p8 "${cc[@]}" --cc-hardware h100-pageable --shard $stage --ranks-per-process 8
  run shard-$stage-f4 "${cc[@]}" --cc-hardware h100-pageable --shard $stage --ranks-per-process 4 --model-ranks 8
  "$PY" - "$WORK/shard-$stage-p8.json" "$WORK/shard-$stage-f4.json" <<'PY' && passes=$((passes + 1)) || { echo "FAIL: sharded fold, $stage"; fails=$((fails + 1)); }
import json, sys
full, fold = (json.load(open(p)) for p in sys.argv[1:3])
assert fold["world_size"] == full["world_size"] == 8 and fold["ranks_run"] == 4, fold["world_size"]
assert abs(full["step_s_mean"] - fold["step_s_mean"]) < 1e-9, (full["step_s_mean"], fold["step_s_mean"])
opt_full, opt_fold = full["phases"]["optimizer"], fold["phases"]["optimizer"]
assert abs(opt_full["max"] - opt_fold["max"]) < 1e-9, (opt_full, opt_fold)
assert opt_full["mean"] < opt_full["max"] and opt_fold["mean"] > opt_full["mean"], (opt_full, opt_fold)
assert full["memory_gib_per_rank"] == fold["memory_gib_per_rank"], (full["memory_gib_per_rank"], fold["memory_gib_per_rank"])
PY
done
# The fold's ranks in two processes (MPI between them, the mailbox inside each): the same.
if mpirun --allow-run-as-root --oversubscribe -np 2 "$TT" "${emu[@]}" "${cc[@]}" --ranks-per-process 2 --model-ranks 8 \
    --summary "$WORK/cc-f2x2.json" >"$WORK/cc-f2x2.log" 2>&1; then
  passes=$((passes + 1)); close cc-p8 cc-f2x2 4
else echo "FAIL: run cc-f2x2"; tail -5 "$WORK/cc-f2x2.log"; fails=$((fails + 1)); fi
# Four nodes of two GPUs with emulated links: the fold runs two nodes, a node boundary inside it.
nodes=(--link emulate --gpus-per-node 2)
run node-p8 "${cc[@]}" "${nodes[@]}" --ranks-per-process 8
run node-f4 "${cc[@]}" "${nodes[@]}" --ranks-per-process 4 --model-ranks 8
close node-p8 node-f4 4
# Twelve ranks: 34,688 floats in twelve chunks of unequal size (a float more or less per hop).
run node-p12 "${cc[@]}" "${nodes[@]}" --ranks-per-process 12
run node-f4-12 "${cc[@]}" "${nodes[@]}" --ranks-per-process 4 --model-ranks 12
close node-p12 node-f4-12 4
# The banner names the fold, and the links of the modelled nodes.
"$TT" "${emu[@]:0:16}" "${emu[@]:17}" "${cc[@]}" "${nodes[@]}" --ranks-per-process 4 --model-ranks 8 \
  >"$WORK/banner.log" 2>&1 || true  # without -q
grep -q "folded ring a ring of 8 ranks modelled by the 4 run" "$WORK/banner.log" &&
  grep -q "emulated-link(4 nodes x 2 GPUs" "$WORK/banner.log" && passes=$((passes + 1)) ||
  { echo "FAIL: the banner does not name the fold and its nodes"; grep -E "folded|gradients" "$WORK/banner.log"; fails=$((fails + 1)); }

# A bit flipped in a sealed message of the fold: exit 3, the verdict naming the rank and where.
rc=0
"$TT" "${emu[@]}" "${cc[@]}" --ranks-per-process 4 --model-ranks 8 --adversary flip:3 >"$WORK/flip.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "a flipped sealed message in a folded ring: exit 3"
grep -qE "INTEGRITY FAILURE: rank 1: sealed message from rank 0 failed to open .*step 0, bucket" "$WORK/flip.log" &&
  passes=$((passes + 1)) || { echo "FAIL: no verdict line"; tail -5 "$WORK/flip.log"; fails=$((fails + 1)); }

# What a fold cannot model.
expect_exit 2 "model-ranks 6 must be a multiple of the 4 ranks run" -- "$TT" "${emu[@]}" --ranks-per-process 4 --model-ranks 6
expect_exit 2 "model-ranks 8 folds teetrain's ring: use --allreduce ours --allreduce-algo ring" -- \
  "$TT" "${emu[@]}" --ranks-per-process 4 --model-ranks 8 --allreduce-algo rhd
expect_exit 2 "per-hop all-gathers" -- "$TT" "${emu[@]}" --tee fast "${TRUST[@]}" --ranks-per-process 4 --model-ranks 8 \
  --tee-forward-ag on
expect_exit 2 "folds whole nodes: run a multiple of 4 ranks, at least 8" -- \
  "$TT" "${emu[@]}" --ranks-per-process 4 --model-ranks 16 --gpus-per-node 4
expect_exit 2 "in emulated virtual time only" -- \
  "$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --batch 2 --seq 32 --steps 1 --model-ranks 8
finish
