#!/usr/bin/env bash
# One-shot GPU session: build the CUDA targets, run every CUDA test, the GPU benchmarks and the GPU
# training checks, and write a small results table. Made for short leases on a GPU machine: every stage
# has a time limit, a failing stage does not stop the others, and the table comes last.
#
#   scripts/gpu-check.sh [OUT_DIR]      (default: $OUT if set, else runs/gpu-check)
#
# Needs: nvcc, cuBLAS, cuDNN, NCCL, OpenMPI, OpenBLAS, OpenSSL, CLI11, nlohmann-json, GTest (a CUDA
# image, or scripts/install-deps.sh plus the CUDA toolkit), and token data in data-cache/fortunes
# (`teetrain prepare-text`); python3 with torch for the PyTorch baseline (optional).
set -uo pipefail
OUTDIR="${1:-${OUT:-runs/gpu-check}}"
mkdir -p "$OUTDIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp
B=build-gpu
TT="$B/teetrain"
RES="$OUTDIR/results.md"
: >"$RES"
row() { echo "| $1 | $2 |" >>"$RES"; }
stage() {  # stage NAME LIMIT_S cmd...: runs with a time limit, logs to OUTDIR/NAME.log, returns its status
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS rc=0
  timeout "$limit" "$@" >"$OUTDIR/$name.log" 2>&1 || rc=$?
  echo "[$name] rc=$rc ($((SECONDS - t0)) s)" | tee -a "$OUTDIR/stages.txt"
  return $rc
}

{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv,noheader; nproc; } >"$OUTDIR/machine.txt" 2>&1
GPU=$(head -1 "$OUTDIR/machine.txt")
echo "| check | result |" >>"$RES"
echo "|---|---|" >>"$RES"
row "GPU" "$GPU"

GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
KEEP=(-- -k); [[ ${#GEN[@]} -gt 0 ]] && KEEP=(-- -k 0)
# Warnings are not errors here: another compiler version must not cost a lease.
stage configure 300 cmake -S . -B $B "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DTEETRAIN_CUDA=ON -DTEETRAIN_WERROR=OFF \
  -DTEETRAIN_BUILD_BENCHMARKS=OFF -DTEETRAIN_MARCH=native
stage build 600 cmake --build $B -j"$(nproc)" --target teetrain test_cuda_backend test_tee_gpu_aead \
  test_tee_gpu_aead_math bench_gpu_aead test_device_ring test_nccl_cuda "${KEEP[@]}"
row "build" "$(tail -1 "$OUTDIR/stages.txt")"

# 1. CUDA tests (ops vs CPU, GPU AES-GCM vs OpenSSL, device ring vs CPU ring, NCCL).
stage ctest 400 ctest --test-dir $B -L cuda --output-on-failure --timeout 300
row "CUDA tests (ctest -L cuda)" "$(grep -E 'tests passed|tests failed' "$OUTDIR/ctest.log" | tail -1)"
grep -E "^\s*[0-9]+/[0-9]+ Test" "$OUTDIR/ctest.log" | sed 's/^/    /' >>"$OUTDIR/ctest_summary.txt"

# 2. GPU AES-GCM throughput (target >= 100 GB/s seal on H100-class).
AEAD=$(find $B -name bench_gpu_aead -type f | head -1)
[[ -n $AEAD ]] && stage bench_gpu_aead 180 "$AEAD"
row "GPU AES-GCM (bench_gpu_aead)" "$(grep -iE 'seal|open' "$OUTDIR/bench_gpu_aead.log" 2>/dev/null | tr '\n' ';' | cut -c1-600)"

# 3. gpt2 124M step vs PyTorch eager, same GPU and shape, FP32 then TF32.
step_vs_torch() {
  local p=$1 flag=()
  [[ $p == tf32 ]] && flag=(--tf32)
  stage "step_$p" 240 $TT bench step --device cuda --model gpt2 --batch 8 --seq 1024 --steps 5 --warmup 2 "${flag[@]}" \
    --json "$OUTDIR/step_$p.json"
  stage "torch_$p" 240 python3 tools/gpu/compare_step_torch_gpu.py --batch 8 --seq 1024 --steps 5 --warmup 2 "${flag[@]}" \
    --json "$OUTDIR/torch_$p.json"
  row "gpt2 step $p (teetrain)" "$(grep '^step' "$OUTDIR/step_$p.log" | cut -c1-160)"
  row "gpt2 step $p (PyTorch)" "$(grep pytorch "$OUTDIR/torch_$p.log" | tr '\n' ';')"
}
step_vs_torch fp32

# 4. gpt2 first steps: CPU vs GPU loss (same init, data, order).
common=(train --model gpt2 --data data-cache/fortunes --steps 4 --batch 4 --seq 64 --lr 1e-4 --warmup 0 --val-batches 0 --no-progress)
stage loss_cpu 300 $TT "${common[@]}" --device cpu --threads "$(nproc)" --metrics "$OUTDIR/loss_cpu.jsonl"
stage loss_gpu 120 $TT "${common[@]}" --device cuda --metrics "$OUTDIR/loss_gpu.jsonl"
row "gpt2 loss per step, cpu" "$(sed -n 's/.*"loss":\([0-9.]*\).*/\1/p' "$OUTDIR/loss_cpu.jsonl" | tr '\n' ' ')"
row "gpt2 loss per step, cuda" "$(sed -n 's/.*"loss":\([0-9.]*\).*/\1/p' "$OUTDIR/loss_gpu.jsonl" | tr '\n' ' ')"

# 5. Two ranks on the GPU, every TEE mode: parameters bit-identical; step-time ratios vs off.
for m in off cc fast; do
  stage "ddp_$m" 180 mpirun --oversubscribe -np 2 $TT train --device cuda --model gpt2-mini --data data-cache/fortunes \
    --steps 8 --batch 8 --seq 256 --val-batches 0 --no-progress --tee $m --allow-plain-data --summary "$OUTDIR/ddp_$m.json"
  row "P=2 gpt2-mini --tee $m" "$(grep -o 'done: .*' "$OUTDIR/ddp_$m.log" | cut -c1-200)"
done
for m in off fast; do
  stage "ddp124_$m" 240 mpirun --oversubscribe -np 2 $TT train --device cuda --model gpt2 --data data-cache/fortunes \
    --steps 6 --batch 4 --seq 1024 --val-batches 0 --no-progress --tee $m --allow-plain-data --summary "$OUTDIR/ddp124_$m.json"
  row "P=2 gpt2 124M --tee $m" "$(grep -o 'done: .*' "$OUTDIR/ddp124_$m.log" | cut -c1-200)"
done

step_vs_torch tf32

echo
cat "$OUTDIR/stages.txt"
echo
cat "$RES"
