#!/usr/bin/env bash
# Image training end to end on Fashion-MNIST (Debian's dataset-fashion-mnist) with resnet-tiny:
# 1 rank with checkpoints and `teetrain eval` above chance; checkpoints keep batch-norm running
# statistics (resume reproduces the same evaluation); P = 2 with --tee fast equals --tee off bit for
# bit (and its sealed checkpoint evaluates identically); bad image input exits 2 with a clear message.
source "$(dirname "$0")/lib.sh" "$@"
if [[ ! -d /usr/share/datasets/fashion-mnist ]]; then
  echo "SKIP: /usr/share/datasets/fashion-mnist missing (apt install dataset-fashion-mnist)"; exit 0
fi
MPI=(mpirun --allow-run-as-root --oversubscribe)
provision_trust
base=(train --model resnet-tiny --data fashion-mnist --batch 32 --optimizer sgd --lr 0.1 --weight-decay 5e-4
      --warmup 0 --threads 1 --val-batches 2 --no-progress --seed 3 "${TRUST[@]}")
eval_line() { "$TT" eval --data fashion-mnist --threads 2 "$@" 2>&1 | grep '^eval:' | sed 's/ step [0-9]*//'; }

# 1 rank: 120 steps, checkpoints at 60 and 120; eval well above chance (10%).
"$TT" "${base[@]}" --steps 120 --save-every 60 --ckpt-dir "$WORK/c1" --summary "$WORK/s1.json" >"$WORK/t1.log" 2>&1 ||
  { echo "FAIL: 1-rank training"; tail -5 "$WORK/t1.log"; fails=$((fails + 1)); }
grep -q 'val_accuracy' "$WORK/t1.log" && passes=$((passes + 1)) || { echo "FAIL: no val_accuracy"; fails=$((fails + 1)); }
acc=$("$TT" eval --ckpt "$WORK/c1" --data fashion-mnist --json "$WORK/e1.json" | sed -n 's/.*accuracy \([0-9.]*\)%.*/\1/p')
echo "eval accuracy after 120 steps: $acc%"
# The registry knows what a checkpoint holds: sampling text from an image classifier is refused.
expect_exit 2 "image classifier; sample takes GPT-2" -- "$TT" sample --ckpt "$WORK/c1" --tokens 4
awk -v a="${acc:-0}" 'BEGIN { exit !(a > 30) }' && passes=$((passes + 1)) || { echo "FAIL: accuracy $acc% not above chance"; fails=$((fails + 1)); }
grep -aq 'bn1.running_mean' "$WORK/c1/step_00000120/model.safetensors" && passes=$((passes + 1)) ||
  { echo "FAIL: running stats not in model.safetensors"; fails=$((fails + 1)); }
# Resume from step 60: same parameters and, with the restored running statistics, the same evaluation.
"$TT" "${base[@]}" --steps 120 --resume "$WORK/c1/step_00000060" --save-every 60 --ckpt-dir "$WORK/c1r" \
  --summary "$WORK/s1r.json" >"$WORK/t1r.log" 2>&1 || { echo "FAIL: resume"; tail -5 "$WORK/t1r.log"; fails=$((fails + 1)); }
expect_eq "$(json_field "$WORK/s1r.json" params_sha256)" "$(json_field "$WORK/s1.json" params_sha256)" "resume params"
expect_eq "$(eval_line --ckpt "$WORK/c1r")" "$(eval_line --ckpt "$WORK/c1")" "resumed eval"

# P = 2: --tee fast (plain images allowed) is bit-identical to --tee off; the sealed checkpoint evaluates the same.
"$TT" keygen --out "$WORK/k.key" >/dev/null 2>&1
run2() { # name extra...
  local name="$1"; shift
  "${MPI[@]}" -np 2 "$TT" "${base[@]}" --steps 20 --batch 16 --summary "$WORK/$name.json" --save-every 20 \
    --ckpt-dir "$WORK/$name" "$@" >"$WORK/$name.log" 2>&1 || { echo "FAIL: $name"; tail -5 "$WORK/$name.log"; fails=$((fails + 1)); }
}
run2 p2off --tee off
run2 p2fast --tee fast --allow-plain-data --key-file "$WORK/k.key"
expect_eq "$(json_field "$WORK/p2fast.json" params_sha256)" "$(json_field "$WORK/p2off.json" params_sha256)" "P=2 tee fast == off"
expect_eq "$(eval_line --ckpt "$WORK/p2fast" --key-file "$WORK/k.key")" "$(eval_line --ckpt "$WORK/p2off")" "sealed eval"

# Bad input: exit 2, one short line naming the problem.
expect_exit 2 "allow-plain-data" -- "$TT" "${base[@]}" --steps 1 --tee fast
expect_exit 2 "not found|fashion-mnist" -- "$TT" "${base[@]}" --steps 1 --data "$WORK/no_such_images"
mkdir -p "$WORK/badmagic" "$WORK/badlabel" "$WORK/cifar"
printf 'not an idx file at all, just text%.0s' $(seq 1 40) >"$WORK/badmagic/train-images-idx3-ubyte"
cp "$WORK/badmagic/train-images-idx3-ubyte" "$WORK/badmagic/train-labels-idx1-ubyte"
expect_exit 2 "magic" -- "$TT" "${base[@]}" --steps 1 --data "$WORK/badmagic"
{ printf '\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x1c\x00\x00\x00\x1c'; head -c 1568 /dev/zero; } >"$WORK/badlabel/train-images-idx3-ubyte"
printf '\x00\x00\x08\x01\x00\x00\x00\x02\x01\x0c' >"$WORK/badlabel/train-labels-idx1-ubyte"
expect_exit 2 "label 12" -- "$TT" "${base[@]}" --steps 1 --data "$WORK/badlabel"
# A CIFAR-layout (3x32x32) directory for a checkpoint trained on 1x28x28 images.
for f in data_batch_1 data_batch_2 data_batch_3 data_batch_4 data_batch_5 test_batch; do head -c 30730 /dev/zero >"$WORK/cifar/$f.bin"; done
expect_exit 2 "3x32x32.*1x28x28" -- "$TT" eval --ckpt "$WORK/c1" --data "$WORK/cifar"
expect_exit 2 "ckpt|checkpoint" -- "$TT" eval --ckpt "$WORK/no_such_ckpt"
finish
