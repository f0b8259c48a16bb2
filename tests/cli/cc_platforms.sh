#!/usr/bin/env bash
# Multi-GPU CC platforms (--cc-hardware h100-ppcie, tee-io-what-if; Note [Messages inside a node] in
# core/emulated/emulated_gpu.h). P = 4 emulated H100s in 2 nodes of 2 (2 processes x 2 virtual ranks),
# hier: on h100-ppcie a message between the GPUs of one node goes in clear over NVLink (not sealed, no
# bounce buffer), so only the inter-node messages are sealed and the step lies between TEE off and
# H100 CC (h100-pinned, the same host path); tee-io-what-if crosses no bounce buffer at all; Blackwell's
# fast crosses the host bridge between nodes. The cost model's hier prediction follows each platform.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust 8
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
# A flat ring across nodes, P = 8 as 2 nodes of 4 (one process of 8 virtual ranks, every run a line of
# one `teetrain runs` plan), gpt2-mini's two buckets: on every platform, under cc and fast, the ring's
# predicted all-reduces are the run's exposed communication, and what the TEE adds to them, predicted,
# is what it adds to the run (Note [Each end of a step], comm/allreduce/allreduce_cost.h: a step's seal
# holds its sender, its open its receiver). fast on TEE-IO adds almost nothing (its GPU sealing of the
# inter-node bytes): only its total is compared. Then auto follows: on H100 CC, fast's ring forwards
# the owner's ciphertext in its all-gather, and the large bucket's ring beats hier in the run.
ring=(--model gpt2-mini --data "$WORK/data/tiny" --batch 2 --seq 32 --steps 1 --timing-warmup 0
      --val-batches 0 --no-progress -q --allow-plain-data --compute emulate --gpu h100 --overlap off
      --ranks-per-process 8 --gpus-per-node 4 "${TRUST[@]}")
: >"$WORK/ring.txt"
for run in ring:off:none ring:cc:h100-pinned ring:fast:h100-pinned ring:cc:h100-ppcie ring:fast:h100-ppcie \
           ring:cc:blackwell ring:fast:blackwell ring:cc:tee-io-what-if ring:fast:tee-io-what-if \
           hier:fast:h100-pinned auto:fast:h100-pinned; do
  IFS=: read -r algo tee hw <<<"$run"
  echo "${ring[*]} --allreduce-algo $algo --tee $tee --cc-hardware $hw --summary $WORK/$algo-$tee-$hw.json" >>"$WORK/ring.txt"
done
if mpirun --allow-run-as-root --oversubscribe -np 1 "$TT" runs "$WORK/ring.txt" >"$WORK/ring.log" 2>&1 &&
  "$PY" - "$WORK" <<'PY'
import json, sys
w = sys.argv[1]
load = lambda algo, tee, hw: json.load(open(f"{w}/{algo}-{tee}-{hw}.json"))
off = load("ring", "off", "none")
assert off["world_size"] == 8 and off["topology"].startswith("2 nodes x 4 GPUs"), off["topology"]
exposed = lambda r: r["phases"]["comm_exposed"]["mean"]
predicted = lambda r, a: sum(b["predicted_us"][a] for b in r["allreduce_selection"]["buckets"]) * 1e-6
bad = []
for tee in ("cc", "fast"):
    for hw in ("h100-pinned", "h100-ppcie", "blackwell", "tee-io-what-if"):
        r = load("ring", tee, hw)
        run, model = exposed(r), predicted(r, "ring")
        added, added_model = run - exposed(off), model - predicted(off, "ring")
        print(f"{tee} {hw}: run {run * 1e3:.3f} ms ({added * 1e3:+.3f}), model {model * 1e3:.3f} ms ({added_model * 1e3:+.3f})")
        if abs(model - run) > 0.05 * run or (added > 0.05 * exposed(off) and abs(added_model - added) > 0.05 * added):
            bad.append((tee, hw, model, run, added_model, added))
assert not bad, bad
ring, hier, auto = (load(a, "fast", "h100-pinned") for a in ("ring", "hier", "auto"))
big = lambda r: max(r["allreduce_selection"]["buckets"], key=lambda b: b["bytes"])
assert exposed(ring) < exposed(hier), (exposed(ring), exposed(hier))
assert big(auto)["algorithm"] == "ring", big(auto)
assert exposed(auto) <= min(exposed(ring), exposed(hier)), (exposed(auto), exposed(ring), exposed(hier))
PY
then passes=$((passes + 1)); else echo "FAIL: the flat ring's predictions are not the run's"; tail -12 "$WORK/ring.log"; fails=$((fails + 1)); fi
# One node (no --gpus-per-node), P = 8 and 4 (one process of virtual ranks, one `teetrain runs` plan),
# gpt2's 13 buckets: the model prices one node's hops as the run charges them (Note [Each end of a
# step]: every link the GPU's NVLink, each message by its route, so fast's forwarded all-gather is
# sealed on h100-ppcie and tee-io-what-if, where the node's other messages are not). The ring's and
# rhd's predicted all-reduces are the run's (the slowest rank's "allreduce" spans in --trace, whole
# microseconds; comm_exposed also holds each bucket's averaging kernel), within 5%, for TEE off and
# every platform under cc and fast. On h100-ppcie fast's ring forwards its all-gather in clear inside
# the one node, as the node's other messages go: it costs what TEE off does.
one=(--model gpt2 --data "$WORK/data/tiny" --batch 2 --seq 32 --steps 1 --timing-warmup 0 --val-batches 0
     --no-progress -q --allow-plain-data --compute emulate --gpu h100 --overlap off "${TRUST[@]}")
: >"$WORK/one.txt"
for run in 8:ring:off:none 8:ring:cc:h100-pinned 8:ring:fast:h100-pinned 8:ring:cc:h100-ppcie \
           8:ring:fast:h100-ppcie 8:ring:cc:blackwell 8:ring:fast:blackwell 8:ring:cc:tee-io-what-if \
           8:ring:fast:tee-io-what-if 8:rhd:cc:h100-pinned 8:auto:fast:h100-ppcie 4:ring:fast:h100-ppcie \
           4:rhd:cc:h100-pinned 4:rhd:fast:h100-ppcie; do
  IFS=: read -r p algo tee hw <<<"$run"
  name="$WORK/one-$p-$algo-$tee-$hw"
  echo "${one[*]} --ranks-per-process $p --allreduce-algo $algo --tee $tee --cc-hardware $hw --summary $name.json --trace $name.trace" >>"$WORK/one.txt"
done
if mpirun --allow-run-as-root --oversubscribe -np 1 "$TT" runs "$WORK/one.txt" >"$WORK/one.log" 2>&1 &&
  "$PY" - "$WORK" <<'PY'
import glob, json, os, sys
bad, seen = [], {}
for f in sorted(glob.glob(f"{sys.argv[1]}/one-*.json")):
    name = os.path.basename(f)[:-5]
    r = json.load(open(f))
    assert r["world_size"] == int(name.split("-")[1]) and not r.get("topology"), (name, r.get("topology"))
    spans = {}
    for e in json.load(open(f[:-5] + ".trace"))["traceEvents"]:
        if e.get("ph") == "X" and e["name"] == "allreduce":
            spans[e["pid"]] = spans.get(e["pid"], 0) + e["dur"] * 1e-6
    run = max(spans.values())
    buckets = r["allreduce_selection"]["buckets"]
    model = sum(b["predicted_us"][b["algorithm"]] for b in buckets) * 1e-6
    print(f"{name}: run {run * 1e3:.3f} ms, model {model * 1e3:.3f} ms")
    seen[name] = (run, buckets)
    if abs(model - run) > 0.05 * run:
        bad.append((name, model, run))
assert len(seen) == 14 and not bad, (len(seen), bad)
for name in ("one-8-ring-fast-h100-ppcie", "one-8-ring-fast-tee-io-what-if"):
    assert abs(seen[name][0] - seen["one-8-ring-off-none"][0]) < 0.01 * seen["one-8-ring-off-none"][0], name
PY
then passes=$((passes + 1)); else echo "FAIL: one node's predictions are not the run's"; tail -30 "$WORK/one.log"; fails=$((fails + 1)); fi
# One node given (--gpus-per-node P): the forwarded all-gather's group message stays inside it as on one
# node of no --gpus-per-node (Topology::one_node), so fast's ring on h100-ppcie seals nothing of the
# gradients and costs what TEE off's ring does, in the run and in the model.
: >"$WORK/g8.txt"
for tee in off fast; do
  echo "${one[*]} --ranks-per-process 8 --gpus-per-node 8 --allreduce-algo ring --tee $tee --cc-hardware h100-ppcie --summary $WORK/g8-$tee.json --trace $WORK/g8-$tee.trace" >>"$WORK/g8.txt"
done
if mpirun --allow-run-as-root --oversubscribe -np 1 "$TT" runs "$WORK/g8.txt" >"$WORK/g8.log" 2>&1 &&
  "$PY" - "$WORK" <<'PY'
import json, sys
got = {}
for tee in ("off", "fast"):
    r = json.load(open(f"{sys.argv[1]}/g8-{tee}.json"))
    assert r["topology"].startswith("1 node x 8 GPUs"), r["topology"]
    spans = {}
    for e in json.load(open(f"{sys.argv[1]}/g8-{tee}.trace"))["traceEvents"]:
        if e.get("ph") == "X" and e["name"] == "allreduce":
            spans[e["pid"]] = spans.get(e["pid"], 0) + e["dur"] * 1e-6
    model = sum(b["predicted_us"][b["algorithm"]] for b in r["allreduce_selection"]["buckets"]) * 1e-6
    got[tee] = (max(spans.values()), model, max(r["counters"]["bytes_sealed"]))
    print(tee, got[tee])
(off, off_model, _), (fast, fast_model, sealed) = got["off"], got["fast"]
assert abs(fast - off) < 0.01 * off and abs(fast_model - off_model) < 0.01 * off_model, got
assert abs(fast_model - fast) < 0.05 * fast and sealed < 100_000, got  # gpt2's gradients are 500 MB
PY
then passes=$((passes + 1)); else echo "FAIL: one node given: fast's forwarded all-gather is not in clear"; tail -20 "$WORK/g8.log"; fails=$((fails + 1)); fi
# The model's source names the link it priced by its platform: on one node of Blackwell, fast's encrypted
# NVLink and cc's NVLink under Blackwell, not the GPU's NVLink alone.
for run in fast:"blackwell encrypted NVLink 510 GB/s (arXiv 2606.23969)" cc:"h100 NVLink 450 GB/s under blackwell \
(arXiv 2606.23969)"; do
  src=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["allreduce_selection"]["model"]["source"])' \
    "$WORK/one-8-ring-${run%%:*}-blackwell.json")
  expect_eq "${src%%, tee *}" "defaults: ${run#*:}, one node" "one node of blackwell, ${run%%:*}: the model's source"
done
# The banner names the platform and what a node's messages are.
grep -q "h100-ppcie (NVIDIA PPCIe guide; ISPASS 2025): messages inside a node in clear, not sealed" "$WORK/ppcie.log" &&
  passes=$((passes + 1)) || { echo "FAIL: the banner does not name h100-ppcie"; grep -m1 "COMPUTE EMULATED" "$WORK/ppcie.log"; fails=$((fails + 1)); }
grep -q "tee-io-what-if (what-if: Intel TDX Connect): messages inside a node link-encrypted, not sealed" "$WORK/teeio.log" &&
  passes=$((passes + 1)) || { echo "FAIL: the banner does not name tee-io-what-if"; grep -m1 "COMPUTE EMULATED" "$WORK/teeio.log"; fails=$((fails + 1)); }
finish
