#!/usr/bin/env bash
# Measures teetrain's real CUDA compute for each GPT-2 size on one GPU (`teetrain bench step`:
# forward, backward and AdamW medians, and cuBLAS at the model's (B*T, C, 4C) matmul shape), so the
# emulated GPU of `--compute emulate` (core/emulated/) can be checked against real hardware.
#
#   tools/gpu_size_sweep.sh OUT_DIR [BIN]      # env: MODELS, BATCH (4), SEQ (1024), STEPS (5), MODES
#
# MODES is a list of "tf32" and/or "fp32" (default: both). Writes OUT_DIR/<model>-<mode>.json (bench
# step --json) and prints the bench lines. Needs a CUDA build (cmake --preset gpu) and a GPU with room
# for the largest model: gpt2-xl at BATCH=4, SEQ=1024 takes ~90 GB in FP32 (an H200; or drop it).
set -euo pipefail
out=${1:?usage: tools/gpu_size_sweep.sh OUT_DIR [BIN]}
bin=${2:-build-gpu/teetrain}
models=${MODELS:-gpt2 gpt2-medium gpt2-large gpt2-xl}
modes=${MODES:-tf32 fp32}
[[ -x $bin ]] || { echo "gpu_size_sweep: $bin not found or not executable; build it with cmake --preset gpu" >&2; exit 2; }
mkdir -p "$out"
status=0
for mode in $modes; do
  flag=()
  [[ $mode == tf32 ]] && flag=(--tf32)
  for m in $models; do
    if ! "$bin" bench step --device cuda "${flag[@]}" --model "$m" --batch "${BATCH:-4}" --seq "${SEQ:-1024}" \
      --steps "${STEPS:-5}" --warmup 2 --json "$out/$m-$mode.json" | grep -v '^# machine'; then
      echo "gpu_size_sweep: $m ($mode) failed" >&2
      status=1
    fi
  done
done
exit $status
