#!/usr/bin/env bash
# Memory you can read (docs/design.md §5, "Memory per rank"):
#  - `teetrain models --model M --ranks P --shard S --batch B --seq T` gives a rank's parameters,
#    gradients, optimizer state, activations and ZeRO-3's gathered units, and whether an emulated H100
#    (80 GiB) holds the total: llama-3-8b at P = 8 does with --shard params and does not with DDP;
#  - an emulated run whose rank needs more than its GPU holds is refused before it starts, with exit 2
#    and the numbers; one that fits prints the parts in its banner's memory line and its summary;
#  - --shard params on an emulated GPU keeps a shard of the parameters and counts the blocks it gathers;
#  - on the CPU, --shard gradients releases each bucket's gradient pages outside its shard: the summary's
#    measured grads_resident_peak at P = 2 is well under DDP's whole buffer, with DDP's parameters;
#  - --shard params keeps released pages in a pool for the next range written (Note [Pooled pages]):
#    the summary's pool_resident_peak is what it held, within two blocks, with DDP's parameters.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus

# The row's total per rank (GiB) and whether the h100 holds it: "123.45 no".
total() { "$TT" models --model llama-3-8b --ranks 8 --batch 1 --seq 64 "$@" |
  awk '$1 == "llama-3-8b"' | grep -oE '[0-9.]+ GiB +(yes|no)' | sed 's/ GiB */ /'; }
read -r ddp ddp_fits <<<"$(total --shard none)"
read -r zero3 zero3_fits <<<"$(total --shard params)"
echo "llama-3-8b P=8 per rank: DDP $ddp GiB ($ddp_fits), ZeRO-3 $zero3 GiB ($zero3_fits)"
check "DDP's rank exceeds 80 GiB" awk -v t="${ddp:-0}" 'BEGIN { exit !(t > 80) }'
expect_eq "$ddp_fits" no "DDP does not fit an h100"
check "ZeRO-3's rank is under 80 GiB" awk -v t="${zero3:-999}" 'BEGIN { exit !(t > 0 && t < 80) }'
expect_eq "$zero3_fits" yes "ZeRO-3 fits an h100"
# ZeRO-3's parts: a block (218,112,000 parameters) gathered twice in float32 is 1.63 GiB; the parameters
# held are an eighth of 8,030,261,248 floats, 3.74 GiB.
row=$("$TT" models --model llama-3-8b --ranks 8 --shard params | awk '$1 == "llama-3-8b"')
grep -qE ' 3\.74 GiB .* 1\.63 GiB ' <<<"$row" && passes=$((passes + 1)) ||
  { echo "FAIL: ZeRO-3's parameters and gathered units: $row"; fails=$((fails + 1)); }
expect_exit 2 "unknown model 'llama-9b'" -- "$TT" models --model llama-9b

emu=(train --data "$WORK/data/tiny" --batch 1 --seq 64 --steps 2 --timing-warmup 1 --val-batches 0 --no-progress
     --compute emulate --gpu h100)
# llama-3-8b's replica on one emulated H100: refused before the model is built, naming each part.
expect_exit 2 "llama-3-8b needs 1[0-9][0-9]\.[0-9] GiB per rank with --shard none at 1 rank\(s\), more than the emulated h100's 80 GiB \(parameters 29\.9, gradients 29\.9, optimizer state 59\.8" -- \
  "$TT" "${emu[@]}" --model llama-3-8b
# The same on an H200 (141 GiB) fits: the check is the GPU's, not a fixed number.
"$TT" "${emu[@]}" --model llama-3-8b --gpu h200 --summary "$WORK/h200.json" >"$WORK/h200.log" 2>&1 &&
  grep -qE "memory parameters 29\.92, gradients 29\.92, optimizer state 59\.83, activations [0-9.]+, gathered units 0\.00 GiB per rank \(of the emulated h200's 141 GiB\)" "$WORK/h200.log" &&
  passes=$((passes + 1)) || { echo "FAIL: llama-3-8b on an h200"; tail -5 "$WORK/h200.log"; fails=$((fails + 1)); }
check "summary: the parts and the GPU's memory" python3 - "$WORK/h200.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
b = s["state_bytes_per_rank"]
assert b["params"] == 4 * 8030261248 and b["optimizer"] == 8 * 8030261248 and b["gathered"] == 0, b
assert b["activations"] > 0 and s["device_memory_gib"] == 141, s["device_memory_gib"]
PY
# ZeRO-3 on emulated GPUs: a rank holds half the parameters at P = 2, and the blocks it gathered are counted.
check "emulated --shard params runs" "$TT" "${emu[@]}" --model gpt2-tiny --seq 32 --shard params --ranks-per-process 2 \
  --bucket-mb 0.01 -q --summary "$WORK/zero3.json"
check "emulated ZeRO-3's memory" python3 - "$WORK/zero3.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))["state_bytes_per_rank"]
assert b["params"] == 4 * 34688 / 2 and b["gathered"] > 0 and b["gathered_peak"] > 0, b
PY

# ZeRO-2 on the CPU (Note [Released gradient pages]): gpt2-mini's 1 MiB buckets span 256 pages each, so
# at P = 2 a rank keeps about half of each once the ring has reduced it. DDP measures its whole buffer.
cpu=(train --model gpt2-mini --data "$WORK/data/tiny" --batch 1 --seq 16 --steps 2 --bucket-mb 1 --threads 1
     --val-batches 0 --no-progress --seed 3 -q)
for stage in none gradients params; do
  check "gpt2-mini P=2 --shard $stage" mpirun --allow-run-as-root --oversubscribe -np 2 "$TT" "${cpu[@]}" \
    --shard "$stage" --summary "$WORK/cpu_$stage.json"
done
check "ZeRO-2's measured gradient peak is under 0.75x DDP's" python3 - "$WORK/cpu_none.json" "$WORK/cpu_gradients.json" <<'PY'
import json, sys
ddp, z2 = (json.load(open(f)) for f in sys.argv[1:])
whole = 4 * ddp["num_params"]
d, z = ddp["state_bytes_per_rank"]["grads_resident_peak"], z2["state_bytes_per_rank"]["grads_resident_peak"]
print(f"gradients resident at the peak: DDP {d} bytes, ZeRO-2 {z} bytes ({z / d:.2f}x), buffer {whole}")
assert d >= whole and 0 < z < 0.75 * d, (d, z)
assert ddp["params_sha256"] == z2["params_sha256"]
PY
check "ZeRO-3's page pool held pages, at most two blocks' worth" python3 - "$WORK/cpu_none.json" "$WORK/cpu_params.json" <<'PY'
import json, sys
ddp, z3 = (json.load(open(f)) for f in sys.argv[1:])
pool, block = z3["state_bytes_per_rank"]["pool_resident_peak"], z3["state_bytes_per_rank"]["gathered"] / 2
print(f"page pool at its peak: {pool} bytes, a block {block:.0f} bytes; DDP's pool: {ddp['state_bytes_per_rank']['pool_resident_peak']}")
assert 0 < pool <= 2 * block and ddp["state_bytes_per_rank"]["pool_resident_peak"] is None, (pool, block)
assert ddp["params_sha256"] == z3["params_sha256"]
PY
finish
