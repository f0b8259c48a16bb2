#!/usr/bin/env bash
# Bad input gets a one-line error naming the problem, exit code 2, and no crash.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
D="$WORK/data/tiny"
TRAIN=("$TT" train --model gpt2-tiny --steps 2 --batch 2 --seq 16 --no-progress)

expect_exit 2 "prepare-text" -- "${TRAIN[@]}" --data "$WORK/nonexistent"
printf 'this is not a token shard, just some text that is long enough to have a header.%.0s' $(seq 1 20) >"$WORK/bad_train.bin"
expect_exit 2 "magic" -- "${TRAIN[@]}" --data "$WORK/bad_train.bin"
head -c 1500 "$D"_train.bin >"$WORK/trunc_train.bin"
expect_exit 2 "truncated|size" -- "${TRAIN[@]}" --data "$WORK/trunc_train.bin"
expect_exit 2 "unknown model" -- "${TRAIN[@]}" --data "$D" --model gpt5
expect_exit 2 "batch" -- "${TRAIN[@]}" --data "$D" --batch 0
expect_exit 2 "seq.*context" -- "${TRAIN[@]}" --data "$D" --seq 4096
expect_exit 2 "steps" -- "${TRAIN[@]}" --data "$D" --steps -3
expect_exit 2 "n_head|divisible|head" -- "${TRAIN[@]}" --data "$D" --n-head 5
expect_exit 2 "resume" -- "${TRAIN[@]}" --data "$D" --resume "$WORK/no_such_ckpt"
expect_exit 2 "not a number|could not be converted|valid" -- "${TRAIN[@]}" --data "$D" --lr abc
# The options are checked before any data is opened: with an image model, a bad flag is named (exit 2)
# whatever the data path holds — nothing, or a FIFO that would block a reader.
IMG=("$TT" train --model resnet-tiny --steps 2 --batch 2 --no-progress --allreduce nccl)
expect_exit 2 "--allreduce nccl reduces GPU buffers" -- "${IMG[@]}" --data "$WORK/no_such_images"
mkfifo "$WORK/images.fifo"
expect_exit 2 "--allreduce nccl reduces GPU buffers" -- timeout 20 "${IMG[@]}" --data "$WORK/images.fifo"
expect_exit 2 "ckpt" -- "$TT" sample --ckpt "$WORK/no_such_ckpt"
# train and seal-data take the same --cipher spellings (tee/crypto/aead.h's one table), as the README writes
# them: a spelling outside it is refused by both, naming the choices.
for bad in AES-256-GCM aes-256-cbc; do
  expect_exit 2 "aes-256-gcm.*chacha20-poly1305" -- "${TRAIN[@]}" --data "$D" --tee fast --cipher "$bad"
  expect_exit 2 "aes-256-gcm.*chacha20-poly1305" -- "$TT" seal-data --data "$D" --out "$WORK/sealed" --cipher "$bad"
done
expect_exit 2 "no text|not found|no such|cannot" -- "$TT" prepare-text "$WORK/empty_dir_missing" --out "$WORK/o"
# A key file of the right size that was never random (all zeros, a repeated pattern) is refused.
head -c 32 /dev/zero >"$WORK/zero.key" && chmod 600 "$WORK/zero.key"
printf 'abcdabcdabcdabcdabcdabcdabcdabcd' >"$WORK/pattern.key" && chmod 600 "$WORK/pattern.key"
for k in zero pattern; do
  expect_exit 2 "$k.key.*is not a random key.*teetrain keygen" -- \
    "$TT" seal-data --data "$D" --out "$WORK/sealed_$k" --key-file "$WORK/$k.key"
done
finish
