#!/usr/bin/env bash
# Sealing never changes the arithmetic: --tee off, cc, fast and every single-switch ablation of fast
# give bit-identical parameters (gpt2-tiny, 20 steps, P = 2 and P = 4; llama-tiny, P = 1 to 4: fast
# everywhere, cc at P = 2 and 4). Also: TEE refuses plain data without --allow-plain-data, and refuses MPI_Allreduce
# (plaintext) as the reduction.
# Each P's runs are the lines of one `mpirun -np P teetrain runs PLAN` job: the same code as `train`,
# without each run's process start-up, MPI_Init and exit (most of these small runs' wall time). At
# P = 2 one run of each model is its own `train` (for llama-tiny the fast run docs/llama.md shows) and
# the plan's runs must equal it, so a plan that changed a run's bits would fail here too.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust
MPI=(mpirun --allow-run-as-root --oversubscribe)
base=(train --model gpt2-tiny --data "$WORK/data/tiny" --steps 20 --seq 16 --batch 2 --no-progress --threads 1
      --seed 5 --val-batches 2 --bucket-mb 0.05 --allow-plain-data "${TRUST[@]}")
sha_of() { # np name extra...: a run of its own `train`
  local np="$1" name="$2"; shift 2
  if ! "${MPI[@]}" -np "$np" "$TT" "${base[@]}" --summary "$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1; then
    echo "FAIL: $name"; tail -5 "$WORK/$name.log"; fails=$((fails + 1)); echo none; return
  fi
  json_field "$WORK/$name.json" params_sha256
}
run_plan() { # np plan name=variant...: each variant one line of the plan, all in one `runs` job
  local np="$1" name="$2" run
  shift 2
  for run in "$@"; do echo "${base[*]:1} --summary $WORK/${run%%=*}.json ${run#*=}"; done >"$WORK/$name.txt"
  "${MPI[@]}" -np "$np" "$TT" runs "$WORK/$name.txt" >"$WORK/$name.log" 2>&1 ||
    { echo "FAIL: plan $name"; tail -5 "$WORK/$name.log"; fails=$((fails + 1)); }
}
sha() { json_field "$WORK/$1.json" params_sha256 2>/dev/null || echo none; }
for np in 2 4; do
  runs=()
  if [[ $np == 2 ]]; then ref=$(sha_of $np off$np --tee off); else runs+=("off$np=--tee off"); fi
  for variant in "--tee cc" "--tee fast" "--tee fast --tee-pipeline off" "--tee fast --tee-forward-ag off" \
                 "--tee fast --crypto-threads 1" "--tee cc --tee-pipeline on" "--tee cc --tee-forward-ag on" \
                 "--tee cc --crypto-threads 2" "--tee fast --cipher chacha20-poly1305" "--tee cc --cipher aes-128-gcm"; do
    runs+=("np${np}_$(tr -c 'a-z0-9' '_' <<<"$variant")=$variant")
  done
  run_plan $np "plan$np" "${runs[@]}"
  [[ $np == 2 ]] || ref=$(sha off$np)
  for run in "${runs[@]}"; do
    [[ ${run%%=*} == off$np ]] || expect_eq "$(sha "${run%%=*}")" "$ref" "P=$np ${run#*=} equals --tee off"
  done
  # Every message between ranks was sealed and opened: counters are non-zero and balanced.
  grep -q '"messages_sealed": \[' "$WORK/np${np}___tee_cc_.json" && passes=$((passes + 1)) || { echo "FAIL: no seal counters"; fails=$((fails + 1)); }
done
# The Llama family through the same path: its own ops, its untied head and its gradient readiness.
base=("${base[@]/gpt2-tiny/llama-tiny}")
for np in 1 2 3 4; do  # P = 3: chunks of unequal size
  runs=("llama_off$np=--tee off")
  [[ $np == 2 || $np == 4 ]] && runs+=("llama_cc$np=--tee cc")
  if [[ $np == 2 ]]; then fast=$(sha_of $np llama_fast$np --tee fast); else runs+=("llama_fast$np=--tee fast"); fi
  run_plan $np "llama_plan$np" "${runs[@]}"
  [[ $np == 2 ]] || fast=$(sha llama_fast$np)
  expect_eq "$fast" "$(sha llama_off$np)" "llama-tiny P=$np --tee fast equals --tee off"
  if [[ $np == 2 || $np == 4 ]]; then
    expect_eq "$(sha llama_cc$np)" "$(sha llama_off$np)" "llama-tiny P=$np --tee cc equals --tee off"
  fi
done
expect_exit 2 "allow-plain-data|seal-data" -- "$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --steps 1 --seq 16 --tee fast
expect_exit 2 "allreduce mpi" -- "$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --steps 1 --seq 16 --tee cc --allreduce mpi --allow-plain-data
# The GPU seals with AES-GCM only: ChaCha with device crypto asked for is bad input; left on auto,
# the host seals (an emulated GPU's gradients here).
expect_exit 2 "GPU seals with AES-GCM only" -- "$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --steps 1 --seq 16 \
  --tee fast --allow-plain-data --compute emulate --cipher chacha20-poly1305 --tee-device-crypto on
finish
