#!/usr/bin/env bash
# Topology (--gpus-per-node, core/emulated/topology.h) and the hierarchical all-reduce
# (comm/allreduce/hier_allreduce.h). P = 4 emulated H100s in 2 nodes of 2 (2 processes x 2 virtual
# ranks), TEE off, buckets reduced after backward: hier's 2 local and 2 inter-node hops per bucket, so
# swapping a link class moves the virtual step time by exactly that class's difference per hop, by hand:
#   RoCE instead of InfiniBand: 2 inter hops x 1.1 us per bucket (same 50 GB/s);
#   PCIe instead of NVLink: 2 local hops x (5.7 - 3.4 us + a node chunk / 43.5 GB/s - / 450 GB/s).
# A flat ring across the two nodes pays InfiniBand on every hop. Real CPU data in cc at P = 4: hier
# gives the same parameters twice, and a flipped sealed message exits 3. A partial node exits 2.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust
PY=$(command -v python3)
MPI=(mpirun --allow-run-as-root --oversubscribe)
base=(train --model gpt2-tiny --data "$WORK/data/tiny" --batch 2 --seq 32 --steps 1 --timing-warmup 0
      --val-batches 0 --no-progress -q --allow-plain-data)
emu=("${base[@]}" --compute emulate --gpu h100 --overlap off --tee off)
run() { run_summary "$@"; }  # run NAME PROCESSES args...: $WORK/NAME.json and .log
nodes=(--ranks-per-process 2 --gpus-per-node 2 --allreduce-algo hier)
run ib 2 "${emu[@]}" "${nodes[@]}"
run roce 2 "${emu[@]}" "${nodes[@]}" --inter-node-link roce
run pcie 2 "${emu[@]}" "${nodes[@]}" --intra-node-link pcie
run ring 2 "${emu[@]}" --ranks-per-process 2 --gpus-per-node 2 --allreduce-algo ring
run flat 2 "${emu[@]}" --ranks-per-process 2 --allreduce-algo ring
if "$PY" - "$WORK" <<'PY'
import json, math, sys
w = sys.argv[1]
ib, roce, pcie, ring, flat = (json.load(open(f"{w}/{n}.json")) for n in ("ib", "roce", "pcie", "ring", "flat"))
assert ib["time"] == "virtual" and ib["world_size"] == 4, (ib["time"], ib["world_size"])
assert ib["topology"] == "2 nodes x 2 GPUs, NVLink inside, InfiniBand NDR between", ib["topology"]
assert "emulated-link(2 nodes x 2 GPUs" in ib["gradient_path"], ib["gradient_path"]
assert flat["topology"] is None
buckets = ib["bucket_bytes"]
def near(got, want, what):  # links book whole nanoseconds of the clock: up to 1 ns off per hop
    assert abs(got - want) <= 4e-9 * len(buckets), (what, got, want)
near(roce["step_s_mean"] - ib["step_s_mean"], len(buckets) * 2 * 1.1e-6, "RoCE - InfiniBand")
chunk = [math.ceil(b / 4 / 2) * 4 for b in buckets]  # a node's chunk: half the bucket, the larger half
want = sum(2 * ((5.7 - 3.4) * 1e-6 + c / 43.5e9 - c / 450e9) for c in chunk)
near(pcie["step_s_mean"] - ib["step_s_mean"], want, "PCIe - NVLink")
assert ring["step_s_mean"] > flat["step_s_mean"], "a ring across nodes waits for InfiniBand"
assert ring["step_s_mean"] > ib["step_s_mean"], "hier crosses nodes with less"
PY
then passes=$((passes + 1)); else echo "FAIL: the step times do not add up by the link classes"; fails=$((fails + 1)); fi

# Real CPU data under cc, P = 4 in nodes of 2: the same parameters twice; a flipped message exits 3.
real=("${base[@]}" --tee cc "${TRUST[@]}" --gpus-per-node 2 --allreduce-algo hier)
run real-a 4 "${real[@]}"
run real-b 4 "${real[@]}"
expect_eq "$(json_field "$WORK/real-a.json" params_sha256)" "$(json_field "$WORK/real-b.json" params_sha256)" \
  "hier: bit-identical parameters across runs"
rc=0
"${MPI[@]}" -np 4 "$TT" "${real[@]}" --adversary flip:3 >"$WORK/flip.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "hier: a flipped sealed message exits 3"
grep -qE "INTEGRITY FAILURE: .*phase hier_" "$WORK/flip.log" && passes=$((passes + 1)) ||
  { echo "FAIL: the verdict does not name a hier phase"; tail -5 "$WORK/flip.log"; fails=$((fails + 1)); }
expect_exit 2 "gpus-per-node 3 does not divide the 1 ranks" -- "$TT" "${base[@]}" --gpus-per-node 3
expect_exit 2 "inter-node-link pcie links GPUs of one node, not nodes: use ib or roce" -- \
  "$TT" "${base[@]}" --gpus-per-node 1 --inter-node-link pcie
finish
