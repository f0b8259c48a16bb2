#!/usr/bin/env bash
# Sealed image sets end to end: keygen + `seal-data --images` on a tiny MNIST-layout idx dataset, then
# resnet-tiny at P = 2 with --tee off (plain images), --tee cc (bounce ingress) and --tee fast (direct
# ingress) on the sealed sets: bit-identical parameters and validation loss. Plain images under TEE
# mode without --allow-plain-data, sealed images without TEE mode, tampering and a wrong key are refused.
source "$(dirname "$0")/lib.sh" "$@"
MPI=(mpirun --allow-run-as-root --oversubscribe)

mkdir -p "$WORK/img"
make_idx train 160
make_idx t10k 40

provision_trust
"$TT" keygen --out "$WORK/k.key" >/dev/null
"$TT" seal-data --help | grep -q -- "--images" && passes=$((passes + 1)) || { echo "FAIL: seal-data --help lacks --images"; fails=$((fails + 1)); }
"$TT" seal-data --images "$WORK/img" --name tiny --out "$WORK/sealed" --key-file "$WORK/k.key" >"$WORK/seal.log" 2>&1 ||
  { echo "FAIL: seal-data --images"; cat "$WORK/seal.log"; fails=$((fails + 1)); }
for s in train test; do
  [[ -f "$WORK/sealed/tiny_$s.images.sealed" ]] && passes=$((passes + 1)) || { echo "FAIL: no sealed $s split"; fails=$((fails + 1)); }
done
# The clear header names the kind and shape; no pixel data is in clear (the sealed file is not the idx data).
grep -aq '"kind":"image-set","split":"train","images":160,"channels":1,"height":28,"width":28' "$WORK/sealed/tiny_train.images.sealed" &&
  passes=$((passes + 1)) || { echo "FAIL: metadata"; fails=$((fails + 1)); }

base=(train --model resnet-tiny --batch 8 --steps 6 --optimizer sgd --lr 0.05 --warmup 0 --threads 1 --val-batches 2
      --no-progress --seed 5 --key-file "$WORK/k.key" "${TRUST[@]}")
run2() { # name extra...
  local name="$1"; shift
  "${MPI[@]}" -np 2 "$TT" "${base[@]}" --summary "$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1 ||
    { echo "FAIL: $name"; tail -5 "$WORK/$name.log"; fails=$((fails + 1)); }
}
run2 off --tee off --data "$WORK/img"
run2 cc --tee cc --data "$WORK/sealed/tiny"
run2 fast --tee fast --data "$WORK/sealed/tiny"
for mode in cc fast; do
  expect_eq "$(json_field "$WORK/$mode.json" params_sha256)" "$(json_field "$WORK/off.json" params_sha256)" "sealed images, --tee $mode == plain --tee off"
  expect_eq "$(json_field "$WORK/$mode.json" val_loss)" "$(json_field "$WORK/off.json" val_loss)" "sealed val split, --tee $mode"
done
# eval of a plain checkpoint on the plain and on the sealed test split: the same accuracy; the sealed
# split without --key-file is refused.
"$TT" "${base[@]}" --tee off --data "$WORK/img" --save-every 6 --ckpt-dir "$WORK/ckpt" >"$WORK/ck.log" 2>&1 ||
  { echo "FAIL: checkpointed run"; tail -3 "$WORK/ck.log"; fails=$((fails + 1)); }
"$TT" eval --ckpt "$WORK/ckpt" --data "$WORK/img" --json "$WORK/eval_plain.json" >/dev/null 2>&1 || true
"$TT" eval --ckpt "$WORK/ckpt" --data "$WORK/sealed/tiny" --key-file "$WORK/k.key" --json "$WORK/eval_sealed.json" >/dev/null 2>&1 || true
expect_ne "$(json_field "$WORK/eval_plain.json" accuracy)" "" "eval on plain test split"
expect_eq "$(json_field "$WORK/eval_sealed.json" accuracy)" "$(json_field "$WORK/eval_plain.json" accuracy)" "eval on the sealed test split"
expect_exit 2 "key-file" -- "$TT" eval --ckpt "$WORK/ckpt" --data "$WORK/sealed/tiny"
grep -q "bounce ingress" "$WORK/cc.log" && passes=$((passes + 1)) || { echo "FAIL: cc should use the bounce path"; fails=$((fails + 1)); }
grep -q "direct ingress" "$WORK/fast.log" && passes=$((passes + 1)) || { echo "FAIL: fast should use direct ingress"; fails=$((fails + 1)); }

# Refusals: plain images in TEE mode (exit 2, pointing at seal-data --images); sealed images without TEE mode.
expect_exit 2 "seal-data --images.*allow-plain-data" -- "$TT" "${base[@]}" --tee fast --data "$WORK/img"
expect_exit 2 "TEE mode" -- "$TT" "${base[@]}" --tee off --data "$WORK/sealed/tiny"
# A flipped byte in the sealed training set's records or header: exit 3, naming the file.
cp -r "$WORK/sealed" "$WORK/bad"
size=$(stat -c %s "$WORK/bad/tiny_train.images.sealed")
for off in $(seq 2000 4000 $((size - 100))); do
  flip_byte "$WORK/bad/tiny_train.images.sealed" "$off"
done
expect_exit 3 "tiny_train.images.sealed.*chunk" -- "$TT" "${base[@]}" --tee fast --data "$WORK/bad/tiny"
# "classes":10 -> "classes":11 in the test split's clear header: well-formed, but no longer authentic.
cp "$WORK/sealed/tiny_train.images.sealed" "$WORK/bad/tiny_train.images.sealed"
at=$(grep -abo '"classes":10' "$WORK/bad/tiny_test.images.sealed" | head -1 | cut -d: -f1)
printf '1' | dd of="$WORK/bad/tiny_test.images.sealed" bs=1 seek=$((at + 11)) conv=notrunc 2>/dev/null
expect_exit 3 "tiny_test.images.sealed" -- "$TT" "${base[@]}" --tee fast --data "$WORK/bad/tiny"
"$TT" keygen --out "$WORK/other.key" >/dev/null
expect_exit 3 "fingerprint" -- "$TT" "${base[@]}" --tee fast --data "$WORK/sealed/tiny" --key-file "$WORK/other.key"
finish
