#!/usr/bin/env bash
# The BERT family end to end (docs/models.md, "BERT"): `teetrain models` lists the published counts; a
# short masked-LM run of bert-mini on the bundled fortunes text lowers its loss and reports masked-token
# accuracy; P = 2 with --tee fast equals --tee off bit for bit; `sample` refuses a BERT checkpoint;
# `bench step` times bert-base; data whose ids reach [MASK] is refused with exit 2.
source "$(dirname "$0")/lib.sh" "$@"
MPI=(mpirun --allow-run-as-root --oversubscribe)
provision_trust

models=$("$TT" models)
grep -qE '^bert-base +L=12 H=12 C=768 V=30522 T=512 +109514298 ' <<<"$models" && passes=$((passes + 1)) ||
  { echo "FAIL: models: bert-base row"; fails=$((fails + 1)); }
grep -qE '^bert-large +L=24 H=16 C=1024 V=30522 T=512 +335174458 ' <<<"$models" && passes=$((passes + 1)) ||
  { echo "FAIL: models: bert-large row"; fails=$((fails + 1)); }

# The bundled text (Debian's fortunes), as the README's main job prepares it; a stand-in corpus otherwise.
if [[ -d /usr/share/games/fortunes ]]; then
  "$TT" prepare-text --out "$WORK/data" --name fortunes >/dev/null
  DATA="$WORK/data/fortunes"
else
  echo "note: /usr/share/games/fortunes missing (apt-get install fortunes): using a generated corpus"
  make_corpus
  DATA="$WORK/data/tiny"
fi

# bert-mini, 60 steps: the masked-LM loss falls well below its start (ln 257 = 5.55 at init).
"$TT" train --model bert-mini --data "$DATA" --steps 60 --batch 8 --seq 64 --lr 1e-3 --threads 2 --val-batches 4 \
  --save-every 60 --ckpt-dir "$WORK/ck" --summary "$WORK/m.json" >"$WORK/m.log" 2>&1 ||
  { echo "FAIL: bert-mini training"; tail -5 "$WORK/m.log"; fails=$((fails + 1)); }
grep -q 'masked LM (15% of positions)' "$WORK/m.log" && passes=$((passes + 1)) ||
  { echo "FAIL: the run does not say it masks"; fails=$((fails + 1)); }
first=$(sed -n 's/^step  *1\/60 | loss \([0-9.]*\).*/\1/p' "$WORK/m.log")
last=$(json_field "$WORK/m.json" final_loss)
echo "bert-mini masked-LM loss: step 1 $first -> step 60 $last"
awk -v a="${first:-0}" -v b="${last:-99}" 'BEGIN { exit !(a > 5.0 && b < a - 1.0) }' && passes=$((passes + 1)) ||
  { echo "FAIL: loss did not fall by 1 nat ($first -> $last)"; fails=$((fails + 1)); }
grep -q 'val_accuracy' "$WORK/m.log" && passes=$((passes + 1)) || { echo "FAIL: no masked-token accuracy"; fails=$((fails + 1)); }
expect_exit 2 "masked language model" -- "$TT" sample --ckpt "$WORK/ck" --tokens 4

# P = 2: the sealed ring gives the same parameters as the plaintext one.
p2() { # name tee
  "${MPI[@]}" -np 2 "$TT" train --model bert-tiny --data "$DATA" --steps 6 --batch 4 --seq 32 --threads 1 \
    --val-batches 0 --no-progress --allow-plain-data "${TRUST[@]}" --tee "$2" --summary "$WORK/$1.json" >"$WORK/$1.log" 2>&1 ||
    { echo "FAIL: P=2 --tee $2"; tail -5 "$WORK/$1.log"; fails=$((fails + 1)); }
}
p2 off off
p2 fast fast
expect_eq "$(json_field "$WORK/fast.json" params_sha256)" "$(json_field "$WORK/off.json" params_sha256)" "bert P=2 fast == off"

# bench step knows the family (a short sequence keeps it quick).
out=$("$TT" bench step --model bert-base --batch 1 --seq 16 --steps 1 --warmup 0 --threads 2 2>&1) &&
  grep -q 'bert-base' <<<"$out" && passes=$((passes + 1)) || { echo "FAIL: bench step bert-base: $out"; fails=$((fails + 1)); }

# Data whose ids reach [MASK] (the model's last id) is refused before training.
expect_exit 2 "plus \[MASK\]" -- "$TT" train --model bert-tiny --vocab 200 --data "$DATA" --steps 1 --seq 16
finish
