#!/usr/bin/env bash
# --shard optimizer|gradients (ZeRO-1 and ZeRO-2, docs/design.md "Sharded data parallelism"):
#  - the same parameters as DDP (--shard none) bit for bit, at P = 1, 2, 3 (shards of unequal size) and
#    4, in --tee off, cc and fast (Note [Shard layout]), with clipping on, and the same gradient norms
#    (Note [Gradient norm order]);
#  - the banner and `teetrain models --ranks P --shard S` say what each rank keeps;
#  - --ckpt-layout whole checkpoints hold DDP's layout: saved sharded, resumed sharded or not (and the
#    reverse), exactly; ZeRO-3's round trip in the sharded layout (the rest: shard_ckpt.sh);
#  - rhd, rd and hier split as the ring is (Note [Shard handover]): DDP's parameters with the same
#    algorithm, in every stage and mode;
#  - a flipped or replayed reduce-scatter or all-gather message exits 3 on every rank, the ring's and
#    rhd's (its handover too);
#  - --allreduce-algo auto with a shard prices every algorithm's halves, and keeps DDP's bits;
#  - --shard params (ZeRO-3): the same at P = 1..4 in every mode (gpt2-tiny; llama-tiny at P = 3), with and
#    without prefetch, a checkpoint round trip, and a flipped or replayed block all-gather exits 3;
#  - what sharding does not run on yet is refused with exit 2 naming what is supported (emulated GPUs:
#    shard_emulated.sh).
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust
MPI=(mpirun --allow-run-as-root --oversubscribe)
export OMP_WAIT_POLICY=passive
base=(train --model gpt2-tiny --data "$WORK/data/tiny" --steps 3 --seq 16 --batch 2 --no-progress --threads 1
      --seed 5 --val-batches 1 --bucket-mb 0.01 --grad-clip 0.5 --allow-plain-data "${TRUST[@]}")
train() { # np name extra...: the run's params_sha256 ("none" when it failed)
  local np="$1" name="$2"; shift 2
  if ! "${MPI[@]}" -np "$np" "$TT" "${base[@]}" --summary "$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1; then
    echo "FAIL: $name" >&2; tail -5 "$WORK/$name.log" >&2; echo none; return
  fi
  json_field "$WORK/$name.json" params_sha256
}

# Every stage gives DDP's parameters; a TEE mode changes no bit.
# The gradient norm too, to the last bit of its double (Note [Gradient norm order]): clipping scales
# by it in float, which hides most differences in the parameters.
norms() { grep -o '"grad_norm":[^,]*' "$1"; }
for np in 1 2 3 4; do
  ddp=$(train $np "ddp_$np" --metrics "$WORK/ddp_$np.jsonl")
  expect_ne "$ddp" none "P=$np DDP ran"
  expect_eq "$(train $np "zero1_$np" --shard optimizer --metrics "$WORK/zero1_$np.jsonl")" "$ddp" \
    "P=$np --shard optimizer == none"
  expect_eq "$(norms "$WORK/zero1_$np.jsonl")" "$(norms "$WORK/ddp_$np.jsonl")" "P=$np: the same gradient norms"
done
expect_eq "$(train 3 zero2_3 --shard gradients)" "$(json_field "$WORK/ddp_3.json" params_sha256)" \
  "P=3 --shard gradients == none"
expect_eq "$(train 2 zero1_2_cc --shard optimizer --tee cc)" "$(json_field "$WORK/ddp_2.json" params_sha256)" \
  "P=2 --shard optimizer --tee cc == DDP off"
expect_eq "$(train 3 zero2_3_fast --shard gradients --tee fast)" "$(json_field "$WORK/ddp_3.json" params_sha256)" \
  "P=3 --shard gradients --tee fast == DDP off"
expect_eq "$(train 4 zero1_4_cc --shard optimizer --tee cc)" "$(json_field "$WORK/ddp_4.json" params_sha256)" \
  "P=4 --shard optimizer --tee cc == DDP off"
grep -q "shard optimizer (ZeRO-1): rank 0 updates [0-9]* of 34688 parameters (its ring chunk of each of 7 buckets)" \
  "$WORK/zero1_3.log" &&
  passes=$((passes + 1)) || { echo "FAIL: the banner's shard line"; cat "$WORK/zero1_3.log"; fails=$((fails + 1)); }
grep -q '"shard": "gradients"' "$WORK/zero2_3.json" && passes=$((passes + 1)) ||
  { echo "FAIL: the summary's shard"; fails=$((fails + 1)); }
# Every algorithm split (Note [Shard handover]): rhd, rd (whose halves are rhd's, in the same tree) and
# hier on two nodes of two give the parameters of DDP with the same algorithm, in every stage and mode
# (P = 3: an extra rank and unequal shards; the comm tests take every algorithm at P = 2, 3, 4).
ddp_rhd=$(train 3 ddp_rhd_3 --allreduce-algo rhd)
expect_ne "$ddp_rhd" "$(json_field "$WORK/ddp_3.json" params_sha256)" "P=3: rhd sums in another order than the ring"
expect_eq "$(train 3 zero2_rhd_cc --shard gradients --allreduce-algo rhd --tee cc)" "$ddp_rhd" \
  "P=3 --shard gradients --allreduce-algo rhd --tee cc == DDP rhd off"
expect_eq "$(train 3 zero3_rd_fast --shard params --allreduce-algo rd --tee fast)" "$ddp_rhd" \
  "P=3 --shard params --allreduce-algo rd --tee fast == DDP rhd (rd's bits) off"
hier=(--allreduce-algo hier --gpus-per-node 2)
expect_eq "$(train 4 zero1_hier_cc --shard optimizer --tee cc "${hier[@]}")" "$(train 4 ddp_hier_4 "${hier[@]}")" \
  "P=4 --shard optimizer --allreduce-algo hier --gpus-per-node 2 --tee cc == DDP hier off"

# --allreduce-algo auto with a shard: the cost model prices each algorithm's halves (rhd's with its
# handover rounds) and never picks rd (its halves are rhd's). gpt2-tiny's small buckets in cc at P = 3
# are cheapest on the ring's 4 messages, so the parameters are DDP's with the ring.
expect_eq "$(train 3 zero1_auto --shard optimizer --allreduce-algo auto --tee cc)" \
  "$(json_field "$WORK/ddp_3.json" params_sha256)" "P=3 --shard optimizer --allreduce-algo auto == DDP ring"
check "auto with a shard prices rhd's halves and picks the ring for every bucket" python3 - "$WORK/zero1_auto.json" <<'PY'
import json, sys
sel = json.load(open(sys.argv[1]))["allreduce_selection"]
assert sel["requested"] == "auto" and sel["buckets"], sel
assert sel["counts"]["ring"] == len(sel["buckets"]) and sel["counts"]["rd"] == 0, sel["counts"]
assert all(b["predicted_us"]["rhd"] > b["predicted_us"]["ring"] > 0 for b in sel["buckets"]), sel["buckets"]
PY

# ZeRO-3: every block gathered before its forward and backward and released after (Note [ZeRO-3 units
# follow the buckets]) still computes with DDP's parameters, in every mode, prefetched or not.
for np in 1 2 3 4; do
  ddp=$(json_field "$WORK/ddp_$np.json" params_sha256)
  expect_eq "$(train $np "zero3_$np" --shard params --metrics "$WORK/zero3_$np.jsonl")" "$ddp" "P=$np --shard params == none"
  expect_eq "$(norms "$WORK/zero3_$np.jsonl")" "$(norms "$WORK/ddp_$np.jsonl")" "P=$np --shard params: the same gradient norms"
  [[ $np -eq 1 ]] && continue
  for mode in cc fast; do
    expect_eq "$(train $np "zero3_${np}_$mode" --shard params --tee $mode)" "$ddp" "P=$np --shard params --tee $mode == DDP off"
  done
done
expect_eq "$(train 3 zero3_3_noprefetch --shard params --prefetch off)" "$(json_field "$WORK/ddp_3.json" params_sha256)" \
  "P=3 --shard params --prefetch off == none"
llama=(--model llama-tiny)
expect_eq "$(train 3 zero3_llama --shard params --tee fast "${llama[@]}")" "$(train 3 ddp_llama "${llama[@]}")" \
  "llama-tiny P=3 --shard params --tee fast == DDP off"
grep -q "shard params (ZeRO-3): rank 0 updates [0-9]* of 34688 parameters .*; its 2 blocks gathered for their forward and backward" \
  "$WORK/zero3_3.log" &&
  passes=$((passes + 1)) || { echo "FAIL: the banner's ZeRO-3 line"; cat "$WORK/zero3_3.log"; fails=$((fails + 1)); }
# Released between uses: prefetched, both of gpt2-tiny's blocks are present while the first computes
# (all that ZeRO-2 keeps outside the shard); gathered only when needed, fewer bytes are.
peak=$(json_field "$WORK/zero3_3.json" gathered_peak) peak_off=$(json_field "$WORK/zero3_3_noprefetch.json" gathered_peak)
[[ $peak_off -gt 0 && $peak_off -lt $peak ]] && passes=$((passes + 1)) ||
  { echo "FAIL: gathered_peak $peak_off (no prefetch) against $peak"; fails=$((fails + 1)); }

# --ckpt-layout whole: checkpoints hold the whole optimizer state in DDP's layout: a sharded run saved at
# step 2 and resumed, sharded or not, ends where the uninterrupted DDP run does; so does a DDP checkpoint
# resumed sharded. (The sharded layout, the default under --shard, has its own test: shard_ckpt.sh; here
# ZeRO-3's round trip takes it.)
ddp3=$(json_field "$WORK/ddp_3.json" params_sha256)
train 3 zero1_save --shard optimizer --ckpt-layout whole --save-every 2 --ckpt-dir "$WORK/ck1" >/dev/null
test -f "$WORK/ck1/step_00000002/optimizer.safetensors" && passes=$((passes + 1)) ||
  { echo "FAIL: --ckpt-layout whole wrote no optimizer.safetensors"; fails=$((fails + 1)); }
train 3 ddp_save --save-every 2 --ckpt-dir "$WORK/ck0" >/dev/null
rm -rf "$WORK/ck1/step_00000003" "$WORK/ck0/step_00000003"
expect_eq "$(train 3 zero1_resume --shard optimizer --resume "$WORK/ck1")" "$ddp3" "sharded save, sharded resume == DDP"
expect_eq "$(train 3 zero1_to_ddp --resume "$WORK/ck1")" "$ddp3" "sharded save, DDP resume == DDP"
expect_eq "$(train 3 ddp_to_zero2 --shard gradients --resume "$WORK/ck0")" "$ddp3" "DDP save, --shard gradients resume == DDP"
train 3 zero3_save --shard params --save-every 2 --ckpt-dir "$WORK/ck3" >/dev/null
rm -rf "$WORK/ck3/step_00000003"
expect_eq "$(train 3 zero3_resume --shard params --resume "$WORK/ck3")" "$ddp3" "--shard params save and resume == DDP"

# Sealed (TEE mode with a key): the gathered state is checkpointed as DDP's is; verify and export read it.
"$TT" keygen --out "$WORK/k.key" >/dev/null
quiet() { "$@" >/dev/null; }
train 2 zero2_sealed --shard gradients --ckpt-layout whole --tee fast --key-file "$WORK/k.key" --save-every 3 \
  --ckpt-dir "$WORK/cks" >/dev/null
check "sealed sharded checkpoint verifies" quiet "$TT" ckpt verify "$WORK/cks/step_00000003" --key-file "$WORK/k.key"
check "sealed sharded checkpoint exports" quiet "$TT" ckpt export "$WORK/cks/step_00000003" --key-file "$WORK/k.key" \
  --out "$WORK/model.safetensors"

# attacked ATTACK VERDICT_RE WHAT FLAGS...: a sealed P = 3 run under --adversary ATTACK exits 3, its
# verdict matches VERDICT_RE, and every rank stopped; the log is kept as attack_<ATTACK>.log.
attacked() {
  local attack=$1 verdict=$2 what=$3 rc=0
  shift 3
  "${MPI[@]}" -np 3 "$TT" "${base[@]}" --tee fast --timeout 30 "$@" --adversary "$attack" \
    >"$WORK/attack.log" 2>&1 || rc=$?
  expect_eq "$rc" 3 "$* --tee fast --adversary $attack: exit 3"
  grep -qE "$verdict" "$WORK/attack.log" && passes=$((passes + 1)) ||
    { echo "FAIL: $attack: $what"; tail -5 "$WORK/attack.log"; fails=$((fails + 1)); }
  [[ $(grep -cE "^teetrain: (rank [0-9]+: stopped|INTEGRITY FAILURE)" "$WORK/attack.log") -eq 3 ]] && passes=$((passes + 1)) ||
    { echo "FAIL: $attack: not every rank stopped"; cat "$WORK/attack.log"; fails=$((fails + 1)); }
  cp "$WORK/attack.log" "$WORK/attack_${attack/:/_}.log"
}

# The adversary on a sealed sharded run, flipping or replaying a reduce-scatter message (the 2nd rank 0
# sends) and one of the parameters' all-gather (the 20th: at P = 3 with 7 buckets a step's first 14
# are the reduce-scatter's, 2 the norm's parts, then the parameters'): exit 3, every rank stopped, the
# failing message named.
context="INTEGRITY FAILURE: .*step [0-9]+, bucket [0-9]+, phase "
for attack in flip:2 replay:2 flip:20 replay:20; do
  attacked "$attack" "$context" "no verdict line" --shard optimizer
done
grep -q "phase scatter_reduce" "$WORK/attack_flip_2.log" && grep -q "bucket 1, phase all_gather" "$WORK/attack_flip_20.log" &&
  grep -q "bucket 1, phase all_gather" "$WORK/attack_replay_20.log" &&
  passes=$((passes + 1)) || { echo "FAIL: attacks on both halves"; grep -h INTEGRITY "$WORK"/attack_*.log; fails=$((fails + 1)); }

# rhd's reduce-scatter on the attacked link from rank 1 (at P = 3 the extra rank's partner): its 1st
# message is bucket 0's halving step to rank 2, its 2nd the handover of a finished sum to rank 2 (Note
# [Shard handover]); flipped, or replaced by the 1st (replayed), it exits 3 on every rank.
for attack in flip:2@1 replay:2@1; do
  attacked "$attack" "INTEGRITY FAILURE: .*bucket 0, phase shard_handover" "not rhd's handover" \
    --shard gradients --allreduce-algo rhd
done

# ZeRO-3's block gathers: rank 0's 26th message at P = 3 is in step 2's forward, the all-gather of one of
# the first block's buckets (labels 22..28: Note [ZeRO-3 units follow the buckets]); flipped or
# replayed, it exits 3 on every rank.
for attack in flip:26 replay:26; do
  attacked "$attack" "INTEGRITY FAILURE: .*step 1, bucket 2[2-8], phase all_gather" "not a forward block gather" \
    --shard params
done

# What each rank keeps: gpt2's 124,439,808 parameters are 1.85 GiB of state per rank under DDP, and
# 0.81 GiB (parameters whole, a quarter of the gradients and of AdamW's m and v) under ZeRO-2 at P = 4,
# 0.52 GiB under ZeRO-3 (a quarter of the parameters too, 0.46, and two gathered blocks, 0.05, on top).
gib() { "$TT" models "$@" | awk '$1 == "gpt2" {print $18}'; }
expect_eq "$(gib)" 1.85 "models: DDP's state per rank"
expect_eq "$(gib --ranks 4 --shard gradients)" 0.81 "models --ranks 4 --shard gradients: ZeRO-2's state per rank"
expect_eq "$(gib --ranks 4 --shard params)" 0.52 "models --ranks 4 --shard params: ZeRO-3's, a quarter of everything and two blocks"
expect_exit 2 "--ranks: must be greater than 0" -- "$TT" models --ranks 0

# Refused with exit 2, naming what runs.
expect_exit 2 "--shard gradients .*--allreduce ring" -- "$TT" "${base[@]}" --shard gradients --allreduce mpi
# On a GPU the device ring (off, fast) and the staged host ring (cc) are split; NCCL's all-reduce is not.
expect_exit 2 "--shard optimizer splits .*--allreduce nccl has none" -- "$TT" "${base[@]}" --shard optimizer \
  --device cuda --allreduce nccl
finish
