#!/usr/bin/env bash
# --compute emulate for every model preset that `teetrain models` lists: the real model runs on the
# emulated GPU backend, so each family trains (two steps, GPT-2, BERT and Llama on a tiny token corpus,
# ResNets on Fashion-MNIST), says that compute is emulated, and reports a positive step time; an emulated
# run that asks for checkpoints is refused with exit 2 and one line naming the conflict. The small presets
# run at P = 2 (the ring moves their gradients); the 110M-70B BERTs, GPT-2s and Llamas at P = 1, since
# moving 0.5-280 GB of placeholder gradients per step would test only the machine's memory bandwidth (and
# ASan's patience). llama-3-8b runs at P = 8 with --shard gradients (DDP's 16 bytes a parameter, 120 GiB
# per rank, exceed an H100's 80 GiB; tests/cli/llama.sh adds its sealed run and compares the two), and
# llama-3-70b, which no rank of one H100 holds, is refused with exit 2 and the numbers.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
common=(--steps 2 --timing-warmup 1 --val-batches 0 --no-progress --compute emulate --gpu h100)
presets=$("$TT" models | awk 'NR > 1 && /^(gpt2|bert|resnet|llama|smollm2)/ {print $1}')
[[ $(wc -w <<<"$presets") -ge 18 ]] && passes=$((passes + 1)) || { echo "FAIL: presets: $presets"; fails=$((fails + 1)); }
for m in $presets; do
  np=2
  case $m in
    gpt2-tiny | gpt2-mini | bert-tiny | bert-mini | llama-tiny | llama-mini) data=(--data "$WORK/data/tiny" --batch 2 --seq 32) ;;
    llama-3-8b) data=(--data "$WORK/data/tiny" --batch 1 --seq 32 --shard gradients) np=8 ;;
    llama-3-70b)
      expect_exit 2 "llama-3-70b needs [0-9.]+ GiB per rank with --shard none at 1 rank\(s\), more than the emulated h100's 80 GiB" -- \
        "$TT" train --model llama-3-70b --data "$WORK/data/tiny" --batch 1 --seq 32 "${common[@]}"
      continue ;;
    gpt2* | bert* | llama* | smollm2*) data=(--data "$WORK/data/tiny" --batch 2 --seq 32) np=1 ;;
    resnet*)
      [[ -d /usr/share/datasets/fashion-mnist ]] || { echo "SKIP $m: no Fashion-MNIST"; continue; }
      data=(--data fashion-mnist --batch 8) ;;
  esac
  if mpirun --allow-run-as-root --oversubscribe -np "$np" "$TT" train --model "$m" "${data[@]}" "${common[@]}" --summary "$WORK/$m.json" >"$WORK/$m.log" 2>&1 \
      && grep -q "COMPUTE EMULATED: $m runs on an emulated GPU" "$WORK/$m.log" \
      && awk -v s="$(json_field "$WORK/$m.json" step_s_mean)" 'BEGIN { exit !(s > 0) }'; then
    passes=$((passes + 1))
  else
    echo "FAIL: --model $m --compute emulate"; tail -5 "$WORK/$m.log"; fails=$((fails + 1))
  fi
done
# llama-3-8b at P = 8: its step time in virtual time and a rank's memory, from the banner (docs/llama.md).
mem=$(grep -oE 'llama-3-8b \(8030261248 params, [0-9.]+ GiB/rank\)' "$WORK/llama-3-8b.log" | grep -oE '[0-9.]+ GiB')
step=$(json_field "$WORK/llama-3-8b.json" step_s_mean)
echo "llama-3-8b P=8 emulated h100: ${step:-?} s/step, ${mem:-?}/rank"
[[ -n $mem && -n $step ]] && passes=$((passes + 1)) || { echo "FAIL: llama-3-8b P=8: no step time or memory"; fails=$((fails + 1)); }
# Emulated parameters are placeholders: checkpoints are refused before anything runs.
rc=0
out=$("$TT" train --model gpt2-mini --data "$WORK/data/tiny" "${common[@]}" --save-every 1 --ckpt-dir "$WORK/ck" 2>&1) || rc=$?
expect_eq "$rc" 2 "emulate + --save-every: exit code"
if [[ $(wc -l <<<"$out") -eq 1 ]] && grep -q -- "--compute emulate has no real parameters" <<<"$out"; then
  passes=$((passes + 1))
else
  echo "FAIL: emulate + --save-every: expected one line naming the conflict, got: $out"; fails=$((fails + 1))
fi
finish
