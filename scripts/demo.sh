#!/usr/bin/env bash
# The main job: installs dependencies, builds, prepares the bundled text (Debian's fortunes corpus),
# seals it, provisions emulated certified device identities, and trains gpt2-mini on 2 MPI ranks three times — TEE off, cc (H100 CC emulation) and
# fast (our TEE-aware design) — then prints the step-time ratios and checks that all three runs
# produced bit-identical parameters. Idempotent; safe to re-run.
#   STEPS=200 RANKS=4 scripts/demo.sh     # longer / wider
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1
TT=build/teetrain
steps="${STEPS:-40}"
ranks="${RANKS:-2}"
out=runs/demo
mkdir -p "$out" data-cache

[[ -f data-cache/fortunes_train.bin ]] || $TT prepare-text --out data-cache --name fortunes
[[ -f data-cache/teetrain.key ]] || $TT keygen --out data-cache/teetrain.key
[[ -f data-cache/sealed/fortunes_train.bin.sealed ]] || $TT seal-data --data data-cache/fortunes --out data-cache/sealed
# The emulated GPU vendor certifies one device identity per rank (idempotent: issues only missing
# ones); TEE ranks attest to each other with them before any key is agreed.
$TT provision --out data-cache/vendor --devices "$ranks" >/dev/null

common=(train --model gpt2-mini --steps "$steps" --batch 8 --seq 128 --lr 2e-3 --warmup 10 --seed 1
        --val-batches 4 --no-progress --key-file data-cache/teetrain.key
        --trust-root data-cache/vendor/vendor_root.crt --device-identity 'data-cache/vendor/device_{rank}.pem')
run() { # mode data extra...
  local mode="$1" data="$2"; shift 2
  echo "== $ranks ranks, --tee $mode: mpirun -np $ranks $TT ${common[*]} --tee $mode --data $data $*"
  mpirun --oversubscribe -np "$ranks" $TT "${common[@]}" --tee "$mode" --data "$data" \
    --summary "$out/$mode.json" --metrics "$out/$mode.jsonl" "$@"
}
run off data-cache/fortunes
run cc data-cache/sealed/fortunes
run fast data-cache/sealed/fortunes --save-every "$steps" --ckpt-dir "$out/ckpt"

field() { sed -n "s/.*\"$2\": *\"\{0,1\}\([^\",]*\)\"\{0,1\}.*/\1/p" "$out/$1.json" | head -1; }
echo
echo "== TEE on versus off (gpt2-mini, $ranks ranks, $steps steps, $(nproc) cores)"
printf '%-6s %12s %10s %12s  %s\n' mode "s/step" "vs off" "final loss" params_sha256
off=$(field off step_s_mean)
for m in off cc fast; do
  s=$(field $m step_s_mean)
  printf '%-6s %12.4f %9.2fx %12s  %s\n' "$m" "$s" "$(awk -v a="$s" -v b="$off" 'BEGIN{print a/b}')" \
    "$(field $m final_loss)" "$(field $m params_sha256)"
done
if [[ "$(field off params_sha256)" == "$(field cc params_sha256)" && "$(field off params_sha256)" == "$(field fast params_sha256)" ]]; then
  echo "all three runs produced bit-identical parameters: sealing never changes the arithmetic"
else
  echo "ERROR: parameters differ between TEE modes" >&2
  exit 1
fi
echo
echo "== sample from the sealed checkpoint of the fast run"
$TT sample --ckpt "$out/ckpt" --key-file data-cache/teetrain.key --prompt "The " --tokens 160
echo
echo "Summaries: $out/{off,cc,fast}.json; per-step metrics: $out/*.jsonl; sealed checkpoint: $out/ckpt"
