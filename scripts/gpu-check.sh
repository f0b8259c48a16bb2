#!/usr/bin/env bash
# One-shot GPU session: build the CUDA targets, run every CUDA test (the Llama ops and llama-tiny's
# PyTorch fixture included), the GPU benchmarks and the GPU training checks, and write a small results
# table. Made for short leases on a GPU machine: every stage has a time limit, a failing stage does not
# stop the others, and the table comes last.
#
#   scripts/gpu-check.sh [OUT_DIR]      (default: $OUT if set, else runs/gpu-check)
#   PREBUILT=DIR scripts/gpu-check.sh   use binaries built elsewhere (cmake --preset gpu), copied into
#                                       DIR: skips configure and build, saving most of a short lease
#   BENCH=0                             skip the benchmarks (AES-GCM, step vs PyTorch, CPU-vs-GPU loss)
#   GTESTS, RING_RANKS, NCCL_RANKS      which single-process tests / rank counts to run (see below)
#   RING_LIMIT, DDP124_MODES            time limit of one device-ring test run; TEE modes of the gpt2 runs
#   STAGE_MAX                           caps every stage's time limit (seconds), so one hang cannot take
#                                       a short lease
#
# Needs: nvcc, cuBLAS, cuDNN, NCCL, OpenMPI, OpenBLAS, OpenSSL, CLI11, nlohmann-json, GTest (a CUDA
# image, or scripts/install-deps.sh plus the CUDA toolkit), and token data in data-cache/fortunes
# (`teetrain prepare-text`); python3 with torch for the PyTorch baseline (optional).
set -uo pipefail
OUTDIR="${1:-${OUT:-runs/gpu-check}}"
mkdir -p "$OUTDIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp
# mpirun gives its ranks a terminal: without this GoogleTest colours its summary and the table's rows stay empty.
export GTEST_COLOR=no
B=${PREBUILT:-build-gpu}
TT="$B/teetrain"
bin() { find "$B" -name "$1" -type f -perm -u+x | head -1; }
RES="$OUTDIR/results.md"
: >"$RES"
row() { echo "| $1 | $2 |" >>"$RES"; }
stage() {  # stage NAME LIMIT_S cmd...: runs with a time limit, logs to OUTDIR/NAME.log, returns its status
  local name=$1 limit=$2
  shift 2
  ((limit > ${STAGE_MAX:-100000})) && limit=$STAGE_MAX
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
[[ -z ${PREBUILT:-} ]] && stage configure 300 cmake -S . -B $B "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DTEETRAIN_CUDA=ON -DTEETRAIN_WERROR=OFF \
  -DTEETRAIN_BUILD_BENCHMARKS=OFF -DTEETRAIN_MARCH=native
[[ -z ${PREBUILT:-} ]] && stage build 600 cmake --build $B -j"$(nproc)" --target teetrain test_cuda_backend test_tee_gpu_aead \
  test_tee_gpu_aead_math bench_gpu_aead test_device_ring test_nccl_cuda test_gpu_sealing_codec test_llama "${KEEP[@]}"
row "build" "${PREBUILT:+prebuilt in $PREBUILT}$(tail -1 "$OUTDIR/stages.txt" 2>/dev/null)"

# 0. The driver's own NVML through gather-evidence (docs/reference/gather-evidence.md): it loads, starts
#    and answers the confidential-computing query. In CC mode every GPU's evidence is gathered and must
#    verify with the same nonce; otherwise exit 2 saying confidential computing is off.
N=$(openssl rand -hex 32 2>/dev/null || printf '%064d' 1)
stage gather_gpu 120 $TT gather-evidence --source gpu --nonce "$N" --out "$OUTDIR/gpu_evidence.json"
[[ -s "$OUTDIR/gpu_evidence.json" ]] && stage verify_gpu 60 $TT verify-evidence "$OUTDIR/gpu_evidence.json" --nonce "$N"
row "gather-evidence --source gpu" "$(tail -2 "$OUTDIR/gather_gpu.log" | tr '\n' ' ' | cut -c1-300) $(grep -o 'verdict: .*' "$OUTDIR/verify_gpu.log" 2>/dev/null | cut -c1-160)"

# 1. CUDA tests (ops vs CPU, GPU AES-GCM vs OpenSSL, device ring vs CPU ring, NCCL), run directly so
#    prebuilt binaries work too; GoogleTest's last line says passed / skipped / failed.
gtest_row() { row "$1" "$(grep -E '^\[  (PASSED|SKIPPED|FAILED) ' "$OUTDIR/$2.log" | tr '\n' ' ' | cut -c1-300)"; }
for t in ${GTESTS-test_tee_gpu_aead_math test_tee_gpu_aead test_gpu_sealing_codec test_cuda_backend}; do
  stage "$t" 300 "$(bin $t)"
  gtest_row "$t" "$t"
done
# 1b. The Llama ops on the GPU: test_cuda_backend above compares RMSNorm, rotary embeddings, SwiGLU and
#     grouped-query attention with the CPU ops (which the CPU tests check by finite differences); here
#     llama-tiny's forward loss, every gradient and ten AdamW steps on the CUDA backend against the
#     PyTorch fixture (tests/fixtures/llama_tiny), and llama-mini's first losses on the CPU and the GPU.
stage test_llama_cuda 300 "$(bin test_llama)" --gtest_filter='LlamaFixture.Cuda*'
gtest_row "llama-tiny vs PyTorch on cuda (test_llama)" test_llama_cuda
lcommon=(train --model llama-mini --data data-cache/fortunes --steps 4 --batch 4 --seq 64 --lr 1e-4 --warmup 0 --val-batches 0 --no-progress)
stage llama_loss_cpu 300 $TT "${lcommon[@]}" --device cpu --threads "$(nproc)" --metrics "$OUTDIR/llama_loss_cpu.jsonl"
stage llama_loss_gpu 120 $TT "${lcommon[@]}" --device cuda --metrics "$OUTDIR/llama_loss_gpu.jsonl"
row "llama-mini loss per step, cpu" "$(sed -n 's/.*"loss":\([0-9.]*\).*/\1/p' "$OUTDIR/llama_loss_cpu.jsonl" | tr '\n' ' ')"
row "llama-mini loss per step, cuda" "$(sed -n 's/.*"loss":\([0-9.]*\).*/\1/p' "$OUTDIR/llama_loss_gpu.jsonl" | tr '\n' ' ')"
for np in ${RING_RANKS-1 2 3}; do
  stage "test_device_ring_np$np" "${RING_LIMIT:-300}" mpirun --oversubscribe -np $np "$(bin test_device_ring)"
  gtest_row "test_device_ring (P=$np, one GPU)" "test_device_ring_np$np"
done
for np in ${NCCL_RANKS-1 2}; do
  stage "test_nccl_cuda_np$np" 180 mpirun --oversubscribe -np $np "$(bin test_nccl_cuda)"
  gtest_row "test_nccl_cuda (P=$np)" "test_nccl_cuda_np$np"
done

if [[ ${BENCH:-1} != 0 ]]; then
# 2. GPU AES-GCM throughput (target >= 100 GB/s seal on H100-class).
AEAD=$(bin bench_gpu_aead)
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
fi

# 4b. BERT on the GPU (bidirectional attention, ignored targets, add_bias): bert-mini's masked-LM loss
#     over its first steps on the CPU and on the GPU (same init, data, masks and order).
bcommon=(train --model bert-mini --data data-cache/fortunes --steps 4 --batch 4 --seq 64 --lr 1e-4 --warmup 0 --val-batches 0 --no-progress)
stage bert_loss_cpu 300 $TT "${bcommon[@]}" --device cpu --threads "$(nproc)" --metrics "$OUTDIR/bert_loss_cpu.jsonl"
stage bert_loss_gpu 120 $TT "${bcommon[@]}" --device cuda --metrics "$OUTDIR/bert_loss_gpu.jsonl"
row "bert-mini loss per step, cpu" "$(sed -n 's/.*"loss":\([0-9.]*\).*/\1/p' "$OUTDIR/bert_loss_cpu.jsonl" | tr '\n' ' ')"
row "bert-mini loss per step, cuda" "$(sed -n 's/.*"loss":\([0-9.]*\).*/\1/p' "$OUTDIR/bert_loss_gpu.jsonl" | tr '\n' ' ')"

# 5. Two ranks on the GPU, every TEE mode (certified identities of the emulated vendor): parameters bit-identical; step-time ratios vs off. off and
#    fast take the device ring (fast sealing on the GPU), cc the host staging path.
$TT provision --out "$OUTDIR/vendor" --devices 2 >/dev/null
TRUST=(--trust-root "$OUTDIR/vendor/vendor_root.crt" --device-identity "$OUTDIR/vendor/device_{rank}.pem")
for m in off cc fast; do
  stage "ddp_$m" 180 mpirun --oversubscribe -np 2 $TT train --device cuda --model gpt2-mini --data data-cache/fortunes \
    --steps 8 --batch 8 --seq 256 --val-batches 0 --no-progress --timeout 90 --tee $m --allow-plain-data "${TRUST[@]}" --summary "$OUTDIR/ddp_$m.json"
  row "P=2 gpt2-mini --tee $m" "$(grep -o 'done: .*' "$OUTDIR/ddp_$m.log" | cut -c1-200); $(grep -o 'gradients .*' "$OUTDIR/ddp_$m.log")"
done
sha() { sed -n 's/.*"params_sha256": "\([0-9a-f]*\)".*/\1/p' "$1" 2>/dev/null | cut -c1-16; }
row "P=2 gpt2-mini params_sha256 off / cc / fast" "$(sha "$OUTDIR/ddp_off.json") / $(sha "$OUTDIR/ddp_cc.json") / $(sha "$OUTDIR/ddp_fast.json")"
for m in ${DDP124_MODES-off fast cc}; do
  stage "ddp124_$m" 240 mpirun --oversubscribe -np 2 $TT train --device cuda --model gpt2 --data data-cache/fortunes \
    --steps 6 --batch 4 --seq 1024 --val-batches 0 --no-progress --timeout 90 --tee $m --allow-plain-data "${TRUST[@]}" --summary "$OUTDIR/ddp124_$m.json"
  row "P=2 gpt2 124M --tee $m" "$(grep -o 'done: .*' "$OUTDIR/ddp124_$m.log" | cut -c1-200)"
done

[[ ${BENCH:-1} != 0 ]] && step_vs_torch tf32

# 6. ResNet-50's convolutions layer by layer (batch 32, 224 px), exact FP32 and TF32: the per-layer times
#    the emulator's convolution model can be checked against (docs/reproducing.md, "Validating the
#    emulator", (b)); keep the two JSON files beside tests/fixtures/step_h100 as a fixture.
if [[ ${BENCH:-1} != 0 ]]; then
  for p in fp32 tf32; do
    flag=(); [[ $p == tf32 ]] && flag=(--tf32)
    stage "conv_layers_$p" 240 $TT bench conv --device cuda --model resnet50 --batch 32 --image-size 224 --reps 10 \
      "${flag[@]}" --json "$OUTDIR/conv_layers_resnet50_$p.json"
    row "resnet50 convolutions per step, $p" "$(grep -o 'per step: .*' "$OUTDIR/conv_layers_$p.log")"
  done
fi

echo
cat "$OUTDIR/stages.txt"
echo
cat "$RES"
