#!/usr/bin/env bash
# Sealing never changes the arithmetic: --tee off, cc, fast and every single-switch ablation of fast
# give bit-identical parameters (gpt2-tiny, 20 steps, P = 2 and P = 4; llama-tiny, P = 1 to 4: fast
# everywhere, cc at P = 2 and 4). Also: TEE refuses plain data without --allow-plain-data, and refuses MPI_Allreduce
# (plaintext) as the reduction.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust
MPI=(mpirun --allow-run-as-root --oversubscribe)
base=(train --model gpt2-tiny --data "$WORK/data/tiny" --steps 20 --seq 16 --batch 2 --no-progress --threads 1
      --seed 5 --val-batches 2 --bucket-mb 0.05 --allow-plain-data "${TRUST[@]}")
sha_of() { # np name extra...
  local np="$1" name="$2"; shift 2
  if ! "${MPI[@]}" -np "$np" "$TT" "${base[@]}" --summary "$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1; then
    echo "FAIL: $name"; tail -5 "$WORK/$name.log"; fails=$((fails + 1)); echo none; return
  fi
  json_field "$WORK/$name.json" params_sha256
}
for np in 2 4; do
  ref=$(sha_of $np off$np --tee off)
  for variant in "--tee cc" "--tee fast" "--tee fast --tee-pipeline off" "--tee fast --tee-forward-ag off" \
                 "--tee fast --crypto-threads 1" "--tee cc --tee-pipeline on" "--tee cc --tee-forward-ag on" \
                 "--tee cc --crypto-threads 2" "--tee fast --cipher chacha20-poly1305" "--tee cc --cipher aes-128-gcm"; do
    name="np${np}_$(tr -c 'a-z0-9' '_' <<<"$variant")"
    # shellcheck disable=SC2086
    expect_eq "$(sha_of $np "$name" $variant)" "$ref" "P=$np $variant equals --tee off"
  done
  # Every message between ranks was sealed and opened: counters are non-zero and balanced.
  grep -q '"messages_sealed": \[' "$WORK/np${np}___tee_cc_.json" && passes=$((passes + 1)) || { echo "FAIL: no seal counters"; fails=$((fails + 1)); }
done
# The Llama family through the same path: its own ops, its untied head and its gradient readiness.
base=("${base[@]/gpt2-tiny/llama-tiny}")
for np in 1 2 3 4; do  # P = 3: chunks of unequal size
  llama_ref=$(sha_of $np "llama_off$np" --tee off)
  modes=(fast)
  [[ $np == 2 || $np == 4 ]] && modes=(cc fast)
  for mode in "${modes[@]}"; do
    expect_eq "$(sha_of $np "llama_$mode$np" --tee $mode)" "$llama_ref" "llama-tiny P=$np --tee $mode equals --tee off"
  done
done
expect_exit 2 "allow-plain-data|seal-data" -- "$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --steps 1 --seq 16 --tee fast
expect_exit 2 "allreduce mpi" -- "$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --steps 1 --seq 16 --tee cc --allreduce mpi --allow-plain-data
# The GPU seals with AES-GCM only: ChaCha with device crypto asked for is bad input; left on auto,
# the host seals (an emulated GPU's gradients here).
expect_exit 2 "GPU seals with AES-GCM only" -- "$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --steps 1 --seq 16 \
  --tee fast --allow-plain-data --compute emulate --cipher chacha20-poly1305 --tee-device-crypto on
finish
