#!/usr/bin/env bash
# Sharded checkpoints (--ckpt-layout sharded, the default under --shard; docs/design.md §5):
#  - each rank saves its own optimizer shard under one manifest; a resume at the same world size
#    restores the run exactly (P = 2 plain, P = 3 sealed under cc: shards of unequal size), each rank
#    reading only its own shard; at another world size or without --shard every rank reads all the
#    shards (resharded), and a DDP resume ends where the uninterrupted DDP run does;
#  - `ckpt inspect` lists the layout and each rank's file, `ckpt verify` checks every file, `ckpt export`
#    writes the whole model;
#  - a shard swapped between ranks, a shard from an older step, a truncated shard and a manifest edited to
#    another world size are refused with exit 3 by resume (every rank stopped) and by verify, naming the
#    file and the check;
#  - at --shard params each rank's file holds its parameter shard too: resume at the same world size reads
#    its own and gathers the rest, DDP's resume and `ckpt export` reassemble the whole model;
#  - ResNet's batch-norm running statistics survive a resharding (P = 2 ZeRO-3 save, P = 3 resumes);
#  - --ckpt-layout sharded without a shard is refused with exit 2.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust
MPI=(mpirun --allow-run-as-root --oversubscribe)
export OMP_WAIT_POLICY=passive
base=(train --model gpt2-tiny --data "$WORK/data/tiny" --steps 3 --seq 16 --batch 2 --no-progress --threads 1
      --seed 5 --val-batches 1 --bucket-mb 0.01 --allow-plain-data "${TRUST[@]}")
train() { # np name extra...: the run's params_sha256 ("none" when it failed)
  local np="$1" name="$2"; shift 2
  if ! "${MPI[@]}" -np "$np" "$TT" "${base[@]}" --summary "$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1; then
    echo "FAIL: $name" >&2; tail -5 "$WORK/$name.log" >&2; echo none; return
  fi
  json_field "$WORK/$name.json" params_sha256
}
"$TT" keygen --out "$WORK/k.key" >/dev/null

# P = 2, plain: saved at steps 1, 2 and 3; step 3 dropped, resumed from step 2. The saving run is the
# uninterrupted one (and DDP's, bit for bit: shard.sh).
full2=$(train 2 save2 --shard optimizer --save-every 1 --ckpt-dir "$WORK/ck2")
expect_ne "$full2" none "P=2 sharded saves"
ls "$WORK/ck2/step_00000002" | tr '\n' ' ' >"$WORK/ls2"
expect_eq "$(cat "$WORK/ls2")" "COMPLETE manifest.json model.safetensors optimizer.rank0.safetensors optimizer.rank1.safetensors state.json " \
  "P=2: one optimizer shard per rank beside rank 0's model and state"
rm -rf "$WORK/ck2/step_00000003"
expect_eq "$(train 2 resume2 --shard optimizer --resume "$WORK/ck2")" "$full2" "P=2 sharded save and resume == uninterrupted"
grep -q "each of 2 ranks read its own optimizer shard" "$WORK/resume2.log" && passes=$((passes + 1)) ||
  { echo "FAIL: resume2 did not read its own shard"; cat "$WORK/resume2.log"; fails=$((fails + 1)); }
expect_eq "$(train 2 ddp_from_shards --resume "$WORK/ck2")" "$full2" "P=2 sharded save, DDP resume (every shard read) == uninterrupted"
# Another world size: every rank reads every shard and keeps its own cut of them.
check "P=2 shards resumed at P=3" test "$(train 3 reshard3 --shard gradients --resume "$WORK/ck2")" != none
grep -q "resharded: the optimizer state saved by 2 ranks at --shard optimizer, read whole by each of 3 ranks at --shard gradients" \
  "$WORK/reshard3.log" && passes=$((passes + 1)) || { echo "FAIL: no resharding line"; cat "$WORK/reshard3.log"; fails=$((fails + 1)); }

# P = 3 (shards of unequal size), sealed under cc: the same bits as the uninterrupted run.
# Saved under a copy of the key, whose freshness record alone sees step 3 (dropped here).
cp "$WORK/k.key" "$WORK/save.key"
full3=$(train 3 save3 --shard gradients --tee cc --key-file "$WORK/save.key" --save-every 2 --ckpt-dir "$WORK/ck3")
expect_ne "$full3" none "P=3 sealed sharded saves"
rm -rf "$WORK/ck3/step_00000003"
expect_eq "$(train 3 resume3 --shard gradients --tee cc --key-file "$WORK/k.key" --resume "$WORK/ck3")" "$full3" \
  "P=3 cc sealed sharded save and resume == uninterrupted"

# The tools: inspect shows the layout, verify checks every file, export writes the whole model.
"$TT" ckpt inspect "$WORK/ck3/step_00000002" --key-file "$WORK/k.key" >"$WORK/inspect.txt"
check "inspect names the layout" grep -q "layout: sharded, 3 ranks at --shard gradients, 34688 parameters" "$WORK/inspect.txt"
check "a sealed shard's header names its step" grep -q '"name":"optimizer.rank2.safetensors.sealed","step":2' "$WORK/inspect.txt"
check "inspect lists rank 2's file" grep -qE "rank 2: optimizer.rank2.safetensors, [0-9]+ floats in 7 ranges" "$WORK/inspect.txt"
"$TT" ckpt verify "$WORK/ck3/step_00000002" --key-file "$WORK/k.key" >"$WORK/verify.txt"
check "verify checks every shard" test "$(grep -c "optimizer.rank[0-2].safetensors.sealed: sealed, .* chunks ok, size and sha256 as listed, rank [0-2] at step 2" "$WORK/verify.txt")" -eq 3
"$TT" ckpt export "$WORK/ck2/step_00000002" --out "$WORK/m.safetensors" >/dev/null
check "export writes the model" python3 - "$WORK/m.safetensors" "$WORK/ck2/step_00000002/model.safetensors" <<'PY'
import sys
assert open(sys.argv[1], "rb").read() == open(sys.argv[2], "rb").read()
PY

# Attacks on the directory: resume (every rank stopped) and verify exit 3, naming the file and the check.
attack() { # dir pattern [stage]
  local rc=0
  "${MPI[@]}" -np 2 "$TT" "${base[@]}" --shard "${3:-optimizer}" --timeout 10 --resume "$WORK/$1" >"$WORK/attack.log" 2>&1 || rc=$?
  expect_eq "$rc" 3 "$1: resume exit 3"
  grep -qE "$2" "$WORK/attack.log" && passes=$((passes + 1)) ||
    { echo "FAIL: $1: no line /$2/"; cat "$WORK/attack.log"; fails=$((fails + 1)); }
  [[ $(grep -cE "^teetrain: (rank [0-9]+: stopped|INTEGRITY FAILURE)" "$WORK/attack.log") -eq 2 ]] && passes=$((passes + 1)) ||
    { echo "FAIL: $1: not every rank stopped"; cat "$WORK/attack.log"; fails=$((fails + 1)); }
  expect_exit 3 "$2" -- "$TT" ckpt verify "$WORK/$1"
}
fresh() { rm -rf "$WORK/$1"; cp -r "$WORK/ck2" "$WORK/$1"; }
s2="$WORK/a/step_00000002"
fresh a && cp "$s2/optimizer.rank1.safetensors" "$s2/optimizer.rank0.safetensors"
attack a "optimizer.rank0.safetensors: SHA-256 differs"
fresh a && cp "$WORK/a/step_00000001/optimizer.rank1.safetensors" "$s2/optimizer.rank1.safetensors"
attack a "optimizer.rank1.safetensors: SHA-256 differs"
fresh a && truncate -s -100 "$s2/optimizer.rank1.safetensors"
attack a "optimizer.rank1.safetensors: [0-9]+ bytes, the manifest records"
fresh a && sed -i 's/"world": 2/"world": 3/' "$s2/manifest.json"
attack a "manifest.json: field 'shards' does not hold one entry per rank"
# Sealed: a manifest edited to another world size no longer opens.
rm -rf "$WORK/b" && cp -r "$WORK/ck3" "$WORK/b" && flip_byte "$WORK/b/step_00000002/manifest.json.sealed" 300
expect_exit 3 "manifest.json.sealed.*chunk 0" -- "$TT" ckpt verify "$WORK/b" --key-file "$WORK/k.key"

# ZeRO-3 (--shard params): each rank saves its parameter shard in its own file too, and no rank gathers
# the whole parameters for a save; a resume at the same world size reads its own shard and gathers the
# rest (P = 2 plain, P = 3 sealed under cc); DDP's resume reassembles them, as `ckpt export` does,
# byte for byte the whole layout's model.safetensors; a parameter shard swapped or from an older step is
# refused with exit 3 naming the file.
z2=$(train 2 zsave2 --shard params --save-every 1 --ckpt-dir "$WORK/z2")
expect_ne "$z2" none "P=2 ZeRO-3 sharded saves"
check "ZeRO-3 shards hold the parameters" grep -q '"params"' "$WORK/z2/step_00000002/optimizer.rank1.safetensors"
rm -rf "$WORK/z2/step_00000003"
expect_eq "$(train 2 zresume2 --shard params --resume "$WORK/z2")" "$z2" "P=2 ZeRO-3 sharded save and resume == uninterrupted"
check "each rank read its own parameter shard" grep -q "each of 2 ranks read its own optimizer shard and parameter shard" "$WORK/zresume2.log"
expect_eq "$(train 2 zddp2 --resume "$WORK/z2")" "$z2" "P=2 ZeRO-3 shards, DDP resume (reassembled) == uninterrupted"
expect_ne "$(train 2 zwhole2 --shard params --ckpt-layout whole --save-every 2 --ckpt-dir "$WORK/zw2")" none "P=2 ZeRO-3 whole saves"
"$TT" ckpt export "$WORK/z2/step_00000002" --out "$WORK/z.safetensors" >/dev/null
check "export reassembles the whole layout's model" cmp "$WORK/z.safetensors" "$WORK/zw2/step_00000002/model.safetensors"
"$TT" ckpt verify "$WORK/z2/step_00000002" >"$WORK/zverify.txt"
check "verify reassembles the parameters" grep -q "model reassembled from 2 parameter shards" "$WORK/zverify.txt"
cp "$WORK/k.key" "$WORK/zsave.key"
z3=$(train 3 zsave3 --shard params --tee cc --key-file "$WORK/zsave.key" --save-every 2 --ckpt-dir "$WORK/z3")
expect_ne "$z3" none "P=3 sealed ZeRO-3 sharded saves"
rm -rf "$WORK/z3/step_00000003"
expect_eq "$(train 3 zresume3 --shard params --tee cc --key-file "$WORK/k.key" --resume "$WORK/z3")" "$z3" \
  "P=3 cc sealed ZeRO-3 sharded save and resume == uninterrupted"
zfresh() { rm -rf "$WORK/za"; cp -r "$WORK/z2" "$WORK/za"; }
z2s="$WORK/za/step_00000002"
zfresh && cp "$z2s/optimizer.rank1.safetensors" "$z2s/optimizer.rank0.safetensors"
attack za "optimizer.rank0.safetensors: SHA-256 differs" params
zfresh && cp "$WORK/za/step_00000001/optimizer.rank1.safetensors" "$z2s/optimizer.rank1.safetensors"
expect_exit 3 "optimizer.rank1.safetensors: SHA-256 differs" -- "$TT" ckpt verify "$WORK/za"
zfresh && truncate -s -100 "$z2s/optimizer.rank1.safetensors"
expect_exit 3 "optimizer.rank1.safetensors: [0-9]+ bytes, the manifest records" -- "$TT" ckpt verify "$WORK/za"

# ResNet's batch-norm running statistics (state that is neither a parameter nor sharded) across a
# resharding: a P = 2 save at --shard params (the model file then holds the statistics alone) resumed at
# P = 3 by ZeRO-2 and by ZeRO-3 ends where DDP's P = 3 resume of the same save does: the same parameters
# and the same model file, statistics included.
make_idx train 48
make_idx t10k 8
rbase=(train --model resnet-tiny --data "$WORK/img" --batch 2 --optimizer sgd --lr 0.05 --warmup 0 --threads 1
       --no-progress --seed 5 --val-batches 1 --bucket-mb 0.02 --steps 3)
rtrain() { # np name extra...: the run's params_sha256 ("none" when it failed)
  local np="$1" name="$2"; shift 2
  if ! "${MPI[@]}" -np "$np" "$TT" "${rbase[@]}" --summary "$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1; then
    echo "FAIL: $name" >&2; tail -5 "$WORK/$name.log" >&2; echo none; return
  fi
  json_field "$WORK/$name.json" params_sha256
}
expect_ne "$(rtrain 2 rsave2 --shard params --save-every 2 --ckpt-dir "$WORK/r2")" none "ResNet P=2 ZeRO-3 saves"
rm -rf "$WORK/r2/step_00000003"
rddp=$(rtrain 3 rddp3 --resume "$WORK/r2" --save-every 3 --ckpt-dir "$WORK/rd3")
expect_ne "$rddp" none "ResNet P=2 shards resumed by DDP at P=3"
for stage in gradients params; do
  expect_eq "$(rtrain 3 "r$stage" --shard "$stage" --resume "$WORK/r2" --save-every 3 --ckpt-layout whole \
    --ckpt-dir "$WORK/r$stage")" "$rddp" "ResNet P=2 shards resumed at P=3 --shard $stage == DDP's resume"
  check "ResNet --shard $stage resume: the model file, running statistics included, is DDP's" \
    cmp "$WORK/r$stage/step_00000003/model.safetensors" "$WORK/rd3/step_00000003/model.safetensors"
done
grep -aq 'running_mean' "$WORK/rd3/step_00000003/model.safetensors" && passes=$((passes + 1)) ||
  { echo "FAIL: no running statistics in the resumed model"; fails=$((fails + 1)); }

# Asking for shards where there are none.
expect_exit 2 "--ckpt-layout sharded .*--shard none keeps no shards" -- "$TT" "${base[@]}" --ckpt-layout sharded --save-every 1
finish
