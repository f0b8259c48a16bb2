#!/usr/bin/env bash
# The image models' CLI surface: `bench step` for image models (resnet-small, resnet18 at 32x32) prints
# images/s and GFLOP/s next to sgemm's and writes JSON; `train --epochs N` derives the steps from the
# training images and the global batch (batch x ranks), and refuses --steps with it and token data;
# two runs with the same seed end with the same parameters (oneDNN convolutions are deterministic).
source "$(dirname "$0")/lib.sh" "$@"
export OMP_WAIT_POLICY=passive

# bench step: image models run (a GPT-2 JSON field on a ResNet once died with a raw JSON error).
for m in "resnet-small --batch 8" "resnet18 --batch 2 --image-size 32 --classes 10"; do
  # shellcheck disable=SC2086
  out=$("$TT" bench step --model $m --steps 1 --warmup 0 --threads 2 --json "$WORK/step.json" 2>&1) ||
    { echo "FAIL: bench step --model $m: $out"; fails=$((fails + 1)); continue; }
  grep -qE 'images/s .*GFLOP/s .*sgemm' <<<"$out" && passes=$((passes + 1)) ||
    { echo "FAIL: bench step --model $m prints no images/s, GFLOP/s and sgemm: $out"; fails=$((fails + 1)); }
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['images_per_s'] > 0 and j['gflops'] > 0 \
and j['sgemm_gflops'] > 0 and j['optimizer'] == 'sgd'" "$WORK/step.json" && passes=$((passes + 1)) ||
    { echo "FAIL: bench step --model $m JSON"; fails=$((fails + 1)); }
done

# --epochs: 100 training images at batch 16 -> ceil(100/16) = 7 steps per epoch, 2 epochs = 14 steps;
# on 2 ranks with batch 8 the global batch is the same 16.
make_idx train 100
make_idx t10k 20
base=(train --model resnet-tiny --data "$WORK/img" --optimizer sgd --lr 0.05 --warmup 0 --threads 1 --no-progress)
"$TT" "${base[@]}" --batch 16 --epochs 2 --summary "$WORK/e1.json" >"$WORK/e1.log" 2>&1 ||
  { echo "FAIL: train --epochs"; tail -3 "$WORK/e1.log"; fails=$((fails + 1)); }
expect_eq "$(json_field "$WORK/e1.json" steps)" 14 "--epochs 2 at batch 16 over 100 images"
# Determinism with oneDNN convolutions: the same seed and thread count give the same parameters.
"$TT" "${base[@]}" --batch 16 --epochs 2 --summary "$WORK/e1b.json" >"$WORK/e1b.log" 2>&1 ||
  { echo "FAIL: train --epochs (again)"; tail -3 "$WORK/e1b.log"; fails=$((fails + 1)); }
expect_eq "$(json_field "$WORK/e1b.json" params_sha256)" "$(json_field "$WORK/e1.json" params_sha256)" "same seed, same bits"
mpirun --allow-run-as-root --oversubscribe -np 2 "$TT" "${base[@]}" --batch 8 --epochs 2 \
  --summary "$WORK/e2.json" >"$WORK/e2.log" 2>&1 || { echo "FAIL: 2-rank train --epochs"; tail -3 "$WORK/e2.log"; fails=$((fails + 1)); }
expect_eq "$(json_field "$WORK/e2.json" steps)" 14 "--epochs 2 at 2 ranks x batch 8"
expect_exit 2 "excludes" -- "$TT" "${base[@]}" --batch 16 --epochs 1 --steps 5
make_corpus
expect_exit 2 "epochs.*image" -- "$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --seq 16 --epochs 1
finish
