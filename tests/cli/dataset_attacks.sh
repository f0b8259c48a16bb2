#!/usr/bin/env bash
# Sealed datasets bound to what they are (data/dataset_binding.h), end to end at one rank (no mpirun,
# no trust root): an adversary who can rename, delete, copy or swap sealed files -- but holds no key --
# gets every manipulation refused with exit 3 and one line naming the file: the validation shard
# renamed to a training name, a missing training shard, a duplicated shard, a shard or a validation
# split from a second dataset sealed under the same key, a missing validation split, swapped image
# splits and a foreign image split. The untouched sealed dataset (and one whose training shards were
# merely renamed among themselves) trains to the plain run's params_sha256.
source "$(dirname "$0")/lib.sh" "$@"

# One dataset "tiny" with three training shards and a validation shard, from three small corpora.
mkdir -p "$WORK/data"
for c in 0 1 2; do
  mkdir -p "$WORK/text$c"
  for i in $(seq 1 150); do printf 'Corpus %d, fortune %d: a stitch in time saves nine.\n%%\n' "$c" "$i"; done \
    >"$WORK/text$c/corpus"
  "$TT" prepare-text "$WORK/text$c" --out "$WORK/prep$c" --name c >/dev/null
  cp "$WORK/prep$c/c_train.bin" "$WORK/data/tiny_train_00$c.bin"
done
cp "$WORK/prep0/c_val.bin" "$WORK/data/tiny_val.bin"

"$TT" keygen --out "$WORK/k.key" >/dev/null
"$TT" seal-data --data "$WORK/data/tiny" --out "$WORK/sealed" --key-file "$WORK/k.key" --chunk-kb 1 >"$WORK/seal.log"
# The same bytes sealed again under the same key: another dataset.
"$TT" seal-data --data "$WORK/data/tiny" --out "$WORK/other" --key-file "$WORK/k.key" --chunk-kb 1 >/dev/null
grep -qE "sealed dataset [0-9a-f]{32} \(manifest sha256 [0-9a-f]{64}\): train 3 file\(s\) val 1 file\(s\)" "$WORK/seal.log" &&
  passes=$((passes + 1)) || { echo "FAIL: seal-data does not report the dataset"; cat "$WORK/seal.log"; fails=$((fails + 1)); }
grep -aq '"split":"train","shard":1,"shards":3' "$WORK/sealed/tiny_train_001.bin.sealed" &&
  passes=$((passes + 1)) || { echo "FAIL: no binding in the clear header"; fails=$((fails + 1)); }

base=(train --model gpt2-tiny --steps 4 --seq 16 --batch 2 --no-progress --threads 1 --seed 9 --val-batches 2
      --key-file "$WORK/k.key")
"$TT" "${base[@]}" --data "$WORK/data/tiny" --summary "$WORK/plain.json" >/dev/null 2>&1 ||
  { echo "FAIL: plain run"; fails=$((fails + 1)); }
plain=$(json_field "$WORK/plain.json" params_sha256)
expect_ne "$plain" "" "plain run reports params_sha256"
sealed_run() { # name dir: trains on DIR/tiny with --tee fast and compares with the plain run
  "$TT" "${base[@]}" --tee fast --data "$2/tiny" --summary "$WORK/$1.json" >"$WORK/$1.log" 2>&1 ||
    { echo "FAIL: $1 run"; tail -3 "$WORK/$1.log"; fails=$((fails + 1)); }
  expect_eq "$(json_field "$WORK/$1.json" params_sha256)" "$plain" "$1 == plain --tee off"
}
sealed_run untouched "$WORK/sealed"
grep -q "3 shards (sealed" "$WORK/untouched.log" && passes=$((passes + 1)) || { echo "FAIL: not 3 shards"; fails=$((fails + 1)); }

# attack NAME: a fresh copy of the sealed dataset in $WORK/NAME to manipulate.
attack() { rm -rf "$WORK/$1"; cp -r "$WORK/sealed" "$WORK/$1"; }
refused() { # name pattern: training on $WORK/NAME/tiny exits 3 with one line matching PATTERN
  expect_exit 3 "$2" -- "$TT" "${base[@]}" --tee fast --data "$WORK/$1/tiny"
}

# Renaming training shards among themselves is harmless: they are read in their authenticated order.
attack renamed
mv "$WORK/renamed/tiny_train_000.bin.sealed" "$WORK/renamed/x"
mv "$WORK/renamed/tiny_train_002.bin.sealed" "$WORK/renamed/tiny_train_000.bin.sealed"
mv "$WORK/renamed/x" "$WORK/renamed/tiny_train_002.bin.sealed"
sealed_run renamed "$WORK/renamed"

attack val_as_train  # the validation shard under a training shard's name
mv "$WORK/val_as_train/tiny_val.bin.sealed" "$WORK/val_as_train/tiny_train_001.bin.sealed"
refused val_as_train "tiny_train_001\.bin\.sealed.*holds the val split but is loaded as train"
attack val_only  # the training split replaced by the validation shard
rm "$WORK/val_only"/tiny_train_*.sealed
cp "$WORK/val_only/tiny_val.bin.sealed" "$WORK/val_only/tiny_train.bin.sealed"
refused val_only "tiny_train\.bin\.sealed.*val split"
attack missing
rm "$WORK/missing/tiny_train_001.bin.sealed"
refused missing "shard 1 of 3 .* is missing"
attack dup
cp "$WORK/dup/tiny_train_000.bin.sealed" "$WORK/dup/tiny_train_003.bin.sealed"
refused dup "tiny_train_003\.bin\.sealed.*train shard 0 of 3 again"
attack foreign
cp "$WORK/other/tiny_train_001.bin.sealed" "$WORK/foreign/tiny_train_001.bin.sealed"
refused foreign "tiny_train_001\.bin\.sealed.*another sealed dataset"
attack foreign_val
cp "$WORK/other/tiny_val.bin.sealed" "$WORK/foreign_val/tiny_val.bin.sealed"
refused foreign_val "tiny_val\.bin\.sealed.*another sealed dataset"
attack no_val
rm "$WORK/no_val/tiny_val.bin.sealed"
refused no_val "1 val shard\(s\), but none was found"

# Images: both splits of one seal-data run are one dataset.
mkdir -p "$WORK/img"
make_idx train 40
make_idx t10k 20
"$TT" seal-data --images "$WORK/img" --name im --out "$WORK/simg" --key-file "$WORK/k.key" >/dev/null
"$TT" seal-data --images "$WORK/img" --name im --out "$WORK/simg2" --key-file "$WORK/k.key" >/dev/null
ibase=(train --model resnet-tiny --batch 4 --steps 2 --optimizer sgd --lr 0.05 --warmup 0 --threads 1 --val-batches 1
       --no-progress --seed 5 --key-file "$WORK/k.key" --tee fast)
"$TT" "${ibase[@]}" --data "$WORK/simg/im" >"$WORK/img_ok.log" 2>&1 && passes=$((passes + 1)) ||
  { echo "FAIL: untouched sealed images"; tail -3 "$WORK/img_ok.log"; fails=$((fails + 1)); }
cp -r "$WORK/simg" "$WORK/iswap"
mv "$WORK/iswap/im_train.images.sealed" "$WORK/iswap/x"
mv "$WORK/iswap/im_test.images.sealed" "$WORK/iswap/im_train.images.sealed"
mv "$WORK/iswap/x" "$WORK/iswap/im_test.images.sealed"
expect_exit 3 "im_train\.images\.sealed.*holds the test split but is loaded as train" -- "$TT" "${ibase[@]}" --data "$WORK/iswap/im"
cp -r "$WORK/simg" "$WORK/iforeign"
cp "$WORK/simg2/im_test.images.sealed" "$WORK/iforeign/im_test.images.sealed"
expect_exit 3 "im_test\.images\.sealed.*another sealed dataset" -- "$TT" "${ibase[@]}" --data "$WORK/iforeign/im"
finish
