#!/usr/bin/env bash
# --shard on a GPU's device buffers, in a couple of minutes of a GPU lease: the device ring's halves
# against the host ring's (test_device_ring's ReduceScatterAndAllGatherMatchTheHostRingsHalves at P = 2
# and 3, all ranks on one GPU), then two ranks training gpt2-mini on the GPU with --shard none,
# optimizer, gradients and params in each TEE mode, every stage's params_sha256 and gradient norms
# compared with DDP's (none) of the same mode; then sharded checkpoints of device state saved, resumed
# and resharded against the uninterrupted run. One line per check, PASS or FAIL, and the exit status
# is the number of FAILs.
#
#   scripts/gpu-shard-check.sh [OUT_DIR]   (default: $OUT if set, else runs/gpu-shard-check)
#   PREBUILT=DIR     the binaries (teetrain, test_device_ring) built elsewhere, as for gpu-check.sh;
#                    default build-gpu
#   MODES            the TEE modes (default: off fast cc; off and fast take the device ring, cc the
#                    host ring staged through the host)
#   DATA             token data (default data-cache/fortunes: `teetrain prepare-text`)
set -uo pipefail
OUTDIR="${1:-${OUT:-runs/gpu-shard-check}}"
mkdir -p "$OUTDIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp
export GTEST_COLOR=no OMP_WAIT_POLICY=passive
B=${PREBUILT:-build-gpu}
TT="$B/teetrain"
bin() { find "$B" -name "$1" -type f -perm -u+x | head -1; }
fails=0
verdict() {  # verdict OK TEXT
  if [[ $1 == 1 ]]; then echo "PASS: $2"; else echo "FAIL: $2"; fails=$((fails + 1)); fi
}
# A time limit per run: a hung rank fails its check, and the next one still runs.
run() {  # run NAME LIMIT_S cmd...
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$@" >"$OUTDIR/$name.log" 2>&1
}

RING=$(bin test_device_ring)
for np in 2 3; do
  run "device_ring_np$np" 60 mpirun --oversubscribe -np $np "$RING" \
    --gtest_filter='DeviceRing.ReduceScatterAndAllGatherMatchTheHostRingsHalves'
  verdict "$(grep -q '^\[  PASSED  \] 1 test' "$OUTDIR/device_ring_np$np.log" && echo 1)" \
    "device ring reduce-scatter + all-gather == host ring's, P=$np: $(grep -E '^\[  (PASSED|SKIPPED|FAILED) ' \
      "$OUTDIR/device_ring_np$np.log" | head -1)"
done

"$TT" provision --out "$OUTDIR/vendor" --devices 2 >/dev/null
TRUST=(--trust-root "$OUTDIR/vendor/vendor_root.crt" --device-identity "$OUTDIR/vendor/device_{rank}.pem")
# Small buckets, so that ZeRO-3 gathers and releases each block; clipping on, so that the gradient norm
# (Note [Gradient norm order]) decides the parameters.
common=(train --device cuda --model gpt2-mini --data "${DATA:-data-cache/fortunes}" --steps 4 --batch 4 --seq 64
  --val-batches 0 --no-progress --timeout 30 --bucket-mb 0.25 --grad-clip 0.5 --allow-plain-data "${TRUST[@]}")
field() { sed -n "s/.*\"$2\": *\"\\{0,1\\}\\([^\",}]*\\).*/\\1/p" "$1" 2>/dev/null | head -1; }
for m in ${MODES-off fast cc}; do
  for s in none optimizer gradients params; do
    run "${m}_$s" 40 mpirun --oversubscribe -np 2 "$TT" "${common[@]}" --tee "$m" --shard "$s" \
      --summary "$OUTDIR/${m}_$s.json" --metrics "$OUTDIR/${m}_$s.jsonl"
  done
  ddp=$(field "$OUTDIR/${m}_none.json" params_sha256)
  verdict "$([[ -n $ddp ]] && echo 1)" "--tee $m --shard none ran: params_sha256 ${ddp:0:16} ($(grep -o 'gradients .*' \
    "$OUTDIR/${m}_none.log" | head -1))"
  [[ -z $ddp ]] && { tail -3 "$OUTDIR/${m}_none.log"; continue; }
  for s in optimizer gradients params; do
    sha=$(field "$OUTDIR/${m}_$s.json" params_sha256)
    same_norms=$(cmp -s <(grep -o '"grad_norm":[^,]*' "$OUTDIR/${m}_none.jsonl") \
      <(grep -o '"grad_norm":[^,]*' "$OUTDIR/${m}_$s.jsonl") && echo 1)
    verdict "$([[ $sha == "$ddp" && -n $same_norms ]] && echo 1)" "--tee $m --shard $s: params_sha256 ${sha:0:16} \
$([[ $sha == "$ddp" ]] && echo "== DDP's" || echo "!= DDP's ${ddp:0:16}"), grad norms $([[ -n $same_norms ]] && echo \
equal || echo differ), grads_resident_peak $(field "$OUTDIR/${m}_$s.json" grads_resident_peak)"
    [[ -z $sha ]] && tail -3 "$OUTDIR/${m}_$s.log"
  done
done

# Sharded checkpoints of device state: saved at step 2 of 4, step 4 dropped, resumed; the resumed run
# must end with the uninterrupted run's parameters (ZeRO-1 and ZeRO-3, each layout; sealed under cc).
# The P = 3 resume reshards the P = 2 ZeRO-1 checkpoint (every rank reads every shard). Each run gets its
# own copy of the key: a key's freshness record that saw step 4 would refuse step 2 as a rollback.
"$TT" keygen --out "$OUTDIR/ck.key" >/dev/null
key_of() {  # key_of NAME: the --key-file option of a sealed mode, on a fresh copy of the key
  [[ $m == off ]] && return
  cp "$OUTDIR/ck.key" "$OUTDIR/$1.key" && echo "--key-file $OUTDIR/$1.key"
}
for m in ${MODES-off fast cc}; do
  for sl in optimizer:sharded params:sharded params:whole; do
    s=${sl%:*} layout=${sl#*:} d="$OUTDIR/ck_${m}_${s}_$layout"
    rm -rf "$d"
    run "ck_${m}_${s}_${layout}_save" 40 mpirun --oversubscribe -np 2 "$TT" "${common[@]}" --tee "$m" --shard "$s" \
      $(key_of "ck_${m}_${s}_${layout}_save") --ckpt-layout "$layout" --save-every 2 --ckpt-dir "$d" --summary "$d.save.json"
    rm -rf "$d/step_00000004"
    run "ck_${m}_${s}_${layout}_resume" 40 mpirun --oversubscribe -np 2 "$TT" "${common[@]}" --tee "$m" --shard "$s" \
      $(key_of "ck_${m}_${s}_${layout}_resume") --resume "$d" --summary "$d.resume.json"
    saved=$(field "$d.save.json" params_sha256) resumed=$(field "$d.resume.json" params_sha256)
    verdict "$([[ -n $saved && $saved == "$resumed" ]] && echo 1)" "--tee $m --shard $s --ckpt-layout $layout: \
saved at step 2, resumed: params_sha256 ${resumed:0:16} $([[ $saved == "$resumed" ]] && echo "== uninterrupted" || \
echo "!= uninterrupted ${saved:0:16}")"
  done
  d="$OUTDIR/ck_${m}_optimizer_sharded"
  run "ck_${m}_reshard3" 60 mpirun --oversubscribe -np 3 "$TT" "${common[@]}" --tee "$m" --shard gradients \
    $(key_of "ck_${m}_reshard3") --resume "$d" --summary "$d.reshard3.json"
  verdict "$(grep -q 'resharded' "$OUTDIR/ck_${m}_reshard3.log" && [[ -n $(field "$d.reshard3.json" params_sha256) ]] \
    && echo 1)" "--tee $m: the P = 2 ZeRO-1 checkpoint resumed at P = 3 --shard gradients (resharded)"
done
echo "$fails check(s) failed; logs in $OUTDIR"
exit "$fails"
