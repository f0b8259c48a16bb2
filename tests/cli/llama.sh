#!/usr/bin/env bash
# The Llama family end to end (docs/llama.md): `teetrain models` lists the six presets with the published
# counts; a short llama-mini run lowers its loss and saves a checkpoint that `sample` continues and
# `ckpt export` writes with a Llama checkpoint's tensor names; `bench step` times llama-mini; llama-3-8b
# at P = 8 on emulated H100s prints its step time and a rank's memory in virtual time; a tampered message
# of a sealed run exits 3.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus

models=$("$TT" models)
for row in 'smollm2-135m +L=30 H=9/3 C=576 F=1536 V=49152 T=8192 tied +134515008 ' \
           'llama-3.2-1b +L=16 H=32/8 C=2048 F=8192 V=128256 T=131072 tied +1235814400 ' \
           'llama-3-8b +L=32 H=32/8 C=4096 F=14336 V=128256 T=8192 +8030261248 ' \
           'llama-3-70b +L=80 H=64/8 C=8192 F=28672 V=128256 T=8192 +70553706496 ' \
           'llama-tiny ' 'llama-mini '; do
  grep -qE "^$row" <<<"$models" && passes=$((passes + 1)) || { echo "FAIL: models: no row /$row/"; fails=$((fails + 1)); }
done

# llama-mini, 30 steps on the tiny corpus: the loss falls from ln 256 = 5.55.
"$TT" train --model llama-mini --data "$WORK/data/tiny" --steps 30 --batch 4 --seq 64 --lr 2e-3 --threads 2 \
  --val-batches 2 --save-every 30 --ckpt-dir "$WORK/ck" --summary "$WORK/m.json" >"$WORK/m.log" 2>&1 ||
  { echo "FAIL: llama-mini training"; tail -5 "$WORK/m.log"; fails=$((fails + 1)); }
first=$(sed -n 's/^step  *1\/30 | loss \([0-9.]*\).*/\1/p' "$WORK/m.log")
last=$(json_field "$WORK/m.json" final_loss)
echo "llama-mini loss: step 1 $first -> step 30 $last"
awk -v a="${first:-0}" -v b="${last:-99}" 'BEGIN { exit !(a > 5.0 && b < a - 1.0) }' && passes=$((passes + 1)) ||
  { echo "FAIL: loss did not fall by 1 nat ($first -> $last)"; fails=$((fails + 1)); }
out=$("$TT" sample --ckpt "$WORK/ck" --prompt "Fortune" --tokens 20 2>&1) && [[ ${#out} -ge 27 ]] &&
  passes=$((passes + 1)) || { echo "FAIL: sample llama-mini: $out"; fails=$((fails + 1)); }
"$TT" ckpt export "$WORK/ck" --out "$WORK/export.safetensors" >"$WORK/export.log" 2>&1 &&
  grep -aq 'model.layers.3.self_attn.k_proj.weight' "$WORK/export.safetensors" &&
  grep -aq 'model.layers.0.mlp.gate_proj.weight' "$WORK/export.safetensors" && passes=$((passes + 1)) ||
  { echo "FAIL: ckpt export names"; cat "$WORK/export.log"; fails=$((fails + 1)); }

out=$("$TT" bench step --model llama-mini --batch 2 --seq 64 --steps 1 --warmup 0 --threads 2 2>&1) &&
  grep -q 'llama-mini' <<<"$out" && grep -qi 'GFLOP/s' <<<"$out" && passes=$((passes + 1)) ||
  { echo "FAIL: bench step llama-mini: $out"; fails=$((fails + 1)); }

# llama-3-8b at P = 8 on emulated H100s in virtual time (docs/llama.md), ZeRO-2 (DDP's replica does not fit
# an H100's 80 GiB): each step's time and a rank's memory; sealing with --tee fast costs more than --tee off, never less.
# Two processes of four virtual ranks each: the virtual times of eight processes, in half the wall time.
provision_trust 8
emulated() { # name tee
  mpirun --allow-run-as-root --oversubscribe -np 2 "$TT" train --ranks-per-process 4 --model llama-3-8b --data "$WORK/data/tiny" --batch 1 \
    --shard gradients --seq 64 --steps 2 --timing-warmup 1 --val-batches 0 --no-progress --compute emulate --gpu h100 --tee "$2" \
    --allow-plain-data "${TRUST[@]}" --summary "$WORK/$1.json" >"$WORK/$1.log" 2>&1 &&
    grep -q "COMPUTE EMULATED: llama-3-8b runs on an emulated GPU" "$WORK/$1.log" &&
    grep -qE 'llama-3-8b \(8030261248 params, [0-9.]+ GiB/rank\)' "$WORK/$1.log" && passes=$((passes + 1)) ||
    { echo "FAIL: emulated llama-3-8b P=8 --tee $2"; tail -5 "$WORK/$1.log"; fails=$((fails + 1)); }
}
# A tampered gradient message of a sealed llama-tiny run is an attack: exit 3, naming what failed to open.
rc=0
mpirun --allow-run-as-root --oversubscribe -np 2 "$TT" train --model llama-tiny --data "$WORK/data/tiny" --steps 4 \
  --seq 16 --batch 2 --no-progress --threads 1 --val-batches 0 --allow-plain-data "${TRUST[@]}" --tee fast \
  --adversary flip:3 >"$WORK/flip.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "llama-tiny --tee fast --adversary flip:3: exit code"
grep -q "INTEGRITY FAILURE: .*failed to open" "$WORK/flip.log" && passes=$((passes + 1)) ||
  { echo "FAIL: flip on llama-tiny: no integrity failure line"; tail -3 "$WORK/flip.log"; fails=$((fails + 1)); }
emulated e_off off
emulated e_fast fast
off_s=$(json_field "$WORK/e_off.json" step_s_mean) fast_s=$(json_field "$WORK/e_fast.json" step_s_mean)
echo "llama-3-8b P=8 emulated h100: off $off_s s/step, fast $fast_s s/step"
awk -v a="${off_s:-0}" -v b="${fast_s:-0}" 'BEGIN { exit !(a > 0 && b >= a) }' && passes=$((passes + 1)) ||
  { echo "FAIL: emulated step times off $off_s fast $fast_s"; fails=$((fails + 1)); }
finish
