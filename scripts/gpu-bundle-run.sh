#!/usr/bin/env bash
# On a GPU machine, from a bundle made by scripts/gpu-bundle.sh: unpacks it, finds the machine's own
# CUDA libraries (a CUDA image's, or PyTorch's wheels), puts the token data in place, runs
# scripts/gpu-check.sh on the bundled binaries, then scripts/gpu-shard-check.sh (--shard on device
# buffers), then the held-out step sweep (tools/gpu_size_sweep.sh:
# models whose measured steps the emulated GPU was not fitted to), and packs everything it wrote into
# OUT_DIR/gpu-results.tar.gz. Each part has a time limit, so a hang cannot take a short lease.
# Where Nsight Systems (nsys) is installed it also records every kernel's GPU time and every launch's
# host time of one SmolLM2-135M and one GPT-2 step (kernels/: what the transformer kernel model's launch
# term needs and the step totals cannot give; docs/reproducing.md, "The transformer kernel model").
#
#   scripts/gpu-bundle-run.sh [BUNDLE_DIR] [OUT_DIR]     (defaults: gpu-bundle, $OUT or runs/gpu-run)
#   env: CHECK_S (gpu-check's limit, 240), SHARD_S (gpu-shard-check's, 150), SWEEP_S (each half of
#        the sweep's, 90), KERNELS_S (each nsys profile's, 60), SHARD=0 / SWEEP=0 / KERNELS=0 skip those,
#        STAGE_MAX (cap of one gpu-check stage, 90), and gpu-check.sh's own variables
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-gpu-bundle}
out=${2:-${OUT:-runs/gpu-run}}
work="$out/gpu-results"
mkdir -p "$work"
[[ -f $bundle/gpu-bundle.tar.xz ]] || { echo "gpu-bundle-run: no $bundle/gpu-bundle.tar.xz; make it with scripts/gpu-bundle.sh" >&2; exit 2; }
tar -xJf "$bundle/gpu-bundle.tar.xz" -C / --skip-old-files && ldconfig
# The CUDA libraries the build links, wherever this machine keeps them.
cuda_dirs=$(for so in libcudart.so.13 libcublas.so.13 libcudnn.so.9 libnccl.so.2; do
  find /usr/local /opt /usr/lib -name "$so" 2>/dev/null | head -1 | xargs -r dirname
done | sort -u | paste -sd:)
export LD_LIBRARY_PATH="$cuda_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "CUDA libraries from: $cuda_dirs" | tee "$work/libs.txt"
mkdir -p data-cache && cp "$bundle"/fortunes_* data-cache/ 2>/dev/null
export STAGE_MAX=${STAGE_MAX:-90} RING_LIMIT=${RING_LIMIT:-60}
PREBUILT="$bundle/bin" timeout "${CHECK_S:-240}" scripts/gpu-check.sh "$work/check"
echo "gpu-check: rc=$?" | tee -a "$work/libs.txt"
if [[ ${SHARD:-1} != 0 ]]; then
  PREBUILT="$bundle/bin" timeout "${SHARD_S:-150}" scripts/gpu-shard-check.sh "$work/shard" | tee "$work/shard.txt"
  echo "gpu-shard-check: rc=${PIPESTATUS[0]}" | tee -a "$work/libs.txt"
fi
if [[ ${SWEEP:-1} != 0 ]]; then
  # Held out from the emulator's fit: ResNet on the H200 (its convolutions were fitted on an H100),
  # BERT and the Llama family (fitted on none).
  MODES="tf32 fp32" MODELS="resnet18 resnet50 resnet152" BATCH=32 SEQ=1 STEPS=6 \
    timeout "${SWEEP_S:-90}" tools/gpu_size_sweep.sh "$work/heldout" "$bundle/bin/teetrain" >"$work/sweep.log" 2>&1
  MODES=tf32 MODELS="bert-base smollm2-135m llama-3.2-1b" BATCH=4 SEQ=512 STEPS=5 \
    timeout "${SWEEP_S:-90}" tools/gpu_size_sweep.sh "$work/heldout" "$bundle/bin/teetrain" >>"$work/sweep.log" 2>&1
  echo "sweep: rc=$?" | tee -a "$work/libs.txt"
fi
if [[ ${KERNELS:-1} != 0 ]]; then
  mkdir -p "$work/kernels"
  if command -v nsys >/dev/null; then
    for m in "smollm2-135m 4 512" "gpt2 4 1024"; do
      read -r model b t <<<"$m"
      rep="$work/kernels/$model-b${b}-t${t}"
      timeout "${KERNELS_S:-60}" nsys profile --trace=cuda --force-overwrite=true -o "$rep" \
        "$bundle/bin/teetrain" bench step --device cuda --tf32 --model "$model" --batch "$b" --seq "$t" \
        --steps 2 --warmup 1 >"$rep.log" 2>&1
      for r in cuda_gpu_kern_sum cuda_api_sum cuda_gpu_trace; do
        nsys stats --report "$r" --format csv --output "$rep-$r" "$rep.nsys-rep" >>"$rep.log" 2>&1
      done
      echo "kernels $model: rc=$?" | tee -a "$work/libs.txt"
    done
  else
    echo "no nsys on this machine: no per-kernel times" | tee -a "$work/libs.txt"
  fi
fi
tar -C "$out" -czf "$out/gpu-results.tar.gz" gpu-results && rm -rf "$work"
