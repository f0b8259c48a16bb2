#!/usr/bin/env bash
# Multi-GPU CC platforms (--cc-hardware h100-ppcie, tee-io-what-if; Note [Messages inside a node] in
# core/emulated/emulated_gpu.h). P = 4 emulated H100s in 2 nodes of 2 (2 processes x 2 virtual ranks),
# hier: on h100-ppcie a message between the GPUs of one node goes in clear over NVLink (not sealed, no
# bounce buffer), so only the inter-node messages are sealed and the step lies between TEE off and
# H100 CC (h100-pinned, the same host path); tee-io-what-if crosses no bounce buffer at all; Blackwell's
# fast crosses the host bridge between nodes. The cost model's hier prediction follows each platform.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust
PY=$(command -v python3)
emu=(train --model gpt2-tiny --data "$WORK/data/tiny" --batch 2 --seq 32 --steps 1 --timing-warmup 0
     --val-batches 0 --no-progress -q --allow-plain-data --compute emulate --gpu h100 --overlap off
     --ranks-per-process 2 --gpus-per-node 2 --allreduce-algo hier "${TRUST[@]}")
run() { run_summary "$1" 2 "${emu[@]}" "${@:2}"; }  # run NAME args...: $WORK/NAME.json and .log
run off --tee off
run cc --tee cc --cc-hardware h100-pinned
run ppcie --tee cc --cc-hardware h100-ppcie
run teeio --tee cc --cc-hardware tee-io-what-if
run ppcie-fast --tee fast --cc-hardware h100-ppcie
run bw-fast --tee fast --cc-hardware blackwell
if "$PY" - "$WORK" <<'PY'
import json, sys
r = {n: json.load(open(f"{sys.argv[1]}/{n}.json")) for n in ("off", "cc", "ppcie", "teeio", "ppcie-fast", "bw-fast")}
phase = lambda n, p: r[n]["phases"].get(p, {}).get("mean", 0.0)
count = lambda n, c: sum(r[n]["counters"][c])
# hier at P = 4 in nodes of 2: per bucket and rank, 1 local scatter-reduce hop, 2 inter-node hops
# (scatter-reduce and all-gather of the node chunk) and 1 local all-gather hop: half the ring's
# messages stay inside a node.
ring = lambda n: count(n, "ring_sealed")
assert ring("cc") > 0 and 2 * ring("ppcie") == ring("cc"), (ring("cc"), ring("ppcie"))
assert 0 < count("ppcie", "bytes_sealed") < count("cc", "bytes_sealed"), \
    (count("ppcie", "bytes_sealed"), count("cc", "bytes_sealed"))
# Fewer seals and crossings: the step lies between TEE off and H100 CC.
assert r["off"]["step_s_mean"] < r["ppcie"]["step_s_mean"] < r["cc"]["step_s_mean"], \
    (r["off"]["step_s_mean"], r["ppcie"]["step_s_mean"], r["cc"]["step_s_mean"])
assert 0 < phase("ppcie", "stage") < phase("cc", "stage"), (phase("ppcie", "stage"), phase("cc", "stage"))
assert r["ppcie"]["cc_hardware"]["name"] == "h100-ppcie", r["ppcie"]["cc_hardware"]
# fast on PPCIe: its ciphertext leaves the node through the bounce buffers, stays clear inside it.
assert 2 * ring("ppcie-fast") == ring("cc"), (ring("ppcie-fast"), ring("cc"))
# TEE-IO: no bounce buffers, no crossing cost; the node's messages are the link's to encrypt.
assert phase("teeio", "stage") == 0 and r["teeio"]["cc_transfer_us"] == 0, phase("teeio", "stage")
assert 2 * ring("teeio") == ring("cc")
assert r["off"]["step_s_mean"] < r["teeio"]["step_s_mean"] < r["ppcie"]["step_s_mean"]
# Blackwell: fast's ciphertext leaves a node through the host bridge, 330 us a crossing at each end:
# per bucket and rank 2 inter-node messages sent and 2 received (their segments at least once each).
buckets = len(r["bw-fast"]["bucket_bytes"])
assert phase("bw-fast", "stage") >= buckets * 4 * 330e-6, (phase("bw-fast", "stage"), buckets)
# The cost model prices each hop by the route the run gives its messages (message_route): what the TEE
# adds to hier's all-reduce, predicted, is what the run's exposed communication adds (overlap off).
def predicted(n):
    return sum(b["predicted_us"]["hier"] for b in r[n]["allreduce_selection"]["buckets"]) * 1e-6
for n in ("cc", "ppcie", "teeio", "bw-fast"):
    want = phase(n, "comm_exposed") - phase("off", "comm_exposed")
    got = predicted(n) - predicted("off")
    assert abs(got - want) <= 0.05 * want, (n, got, want)
PY
then passes=$((passes + 1)); else echo "FAIL: ppcie and tee-io do not seal and cross as their platforms"; fails=$((fails + 1)); fi
# The banner names the platform and what a node's messages are.
grep -q "h100-ppcie (NVIDIA PPCIe guide; ISPASS 2025): messages inside a node in clear, not sealed" "$WORK/ppcie.log" &&
  passes=$((passes + 1)) || { echo "FAIL: the banner does not name h100-ppcie"; grep -m1 "COMPUTE EMULATED" "$WORK/ppcie.log"; fails=$((fails + 1)); }
grep -q "tee-io-what-if (what-if: Intel TDX Connect): messages inside a node link-encrypted, not sealed" "$WORK/teeio.log" &&
  passes=$((passes + 1)) || { echo "FAIL: the banner does not name tee-io-what-if"; grep -m1 "COMPUTE EMULATED" "$WORK/teeio.log"; fails=$((fails + 1)); }
finish
