#!/usr/bin/env bash
# The main job: installs dependencies, builds, prepares the bundled text (Debian's fortunes corpus)
# and trains gpt2-mini briefly, then samples from it. Idempotent; safe to re-run.
#   STEPS=600 scripts/demo.sh      # a longer run (reaches val loss < 2.0 nats/byte)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1

steps="${STEPS:-60}"
mkdir -p runs/demo
if [[ ! -f data-cache/fortunes_train.bin ]]; then
  build/teetrain prepare-text --out data-cache --name fortunes
fi

echo "== gpt2-mini, ${steps} steps on the fortunes corpus (1 rank)"
build/teetrain train --model gpt2-mini --data data-cache/fortunes --steps "$steps" --batch 8 --seq 128 \
  --lr 2e-3 --warmup 10 --save-every "$steps" --ckpt-dir runs/demo/ckpt --metrics runs/demo/metrics.jsonl \
  --summary runs/demo/summary.json

echo "== sample from the trained model"
build/teetrain sample --ckpt runs/demo/ckpt --prompt "The " --tokens 200
