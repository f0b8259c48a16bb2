#!/usr/bin/env bash
# --allreduce-algo ring|rd|rhd|auto on train and bench allreduce (docs/design.md §5, "Beyond the ring"):
#  - each algorithm gives the same parameters under --tee off, cc and fast; rd and rhd the same as each
#    other (one pairwise tree) at P = 3, where the extra rank folds in;
#  - auto reports, per bucket, what it took and what the model predicted, from defaults or from the
#    calibration `bench allreduce --calibrate` writes (the file's coefficients are agreed by every rank);
#  - a tampered rd message stops the run with exit 3 naming the algorithm's phase;
#  - gradients in a shared buffer (--grad-memory shared) give the parameters of private ones;
#  - emulated GPUs over emulated links run every algorithm; bad combinations are refused (exit 2).
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust
MPI=(mpirun --allow-run-as-root --oversubscribe)
export OMP_WAIT_POLICY=passive
base=(train --model gpt2-tiny --data "$WORK/data/tiny" --steps 4 --seq 16 --batch 2 --no-progress --threads 1
      --seed 3 --val-batches 1 --bucket-mb 0.05 --allow-plain-data "${TRUST[@]}")
train() { # np name extra...: the run's params_sha256 ("none" when it failed)
  local np="$1" name="$2"; shift 2
  if ! "${MPI[@]}" -np "$np" "$TT" "${base[@]}" --summary "$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1; then
    echo "FAIL: $name"; tail -5 "$WORK/$name.log"; fails=$((fails + 1)); echo none; return
  fi
  json_field "$WORK/$name.json" params_sha256
}

rd=$(train 3 rd_off --allreduce-algo rd)
for tee in cc fast; do
  expect_eq "$(train 3 "rd_$tee" --allreduce-algo rd --tee $tee)" "$rd" "P=3 rd: --tee $tee == off"
  expect_eq "$(train 3 "rhd_$tee" --allreduce-algo rhd --tee $tee)" "$rd" "P=3 rhd --tee $tee == rd (same tree)"
done
grep -q '"gradient_path": "recursive doubling over shm, plain"' "$WORK/rd_off.json" && passes=$((passes + 1)) ||
  { echo "FAIL: rd's gradient path"; grep gradient_path "$WORK/rd_off.json"; fails=$((fails + 1)); }
# The host transport moves bytes, never changes them: MPI's point-to-point path gives the same
# parameters as the shared-memory channels, sealed or not; ranks given different ones are refused.
expect_eq "$(train 3 rd_mpi --allreduce-algo rd --host-transport mpi)" "$rd" "P=3 rd: --host-transport mpi == shm"
expect_eq "$(train 3 ring_fast_mpi --tee fast --host-transport mpi)" "$(train 3 ring_fast --tee fast)" \
  "P=3 ring --tee fast: --host-transport mpi == shm"
grep -q '"host_transport": "mpi (--host-transport mpi' "$WORK/rd_mpi.json" && passes=$((passes + 1)) ||
  { echo "FAIL: summary's host_transport"; grep host_transport "$WORK/rd_mpi.json"; fails=$((fails + 1)); }
grep -q "host transport shm: 2 peer(s) on this host" "$WORK/ring_fast.log" && passes=$((passes + 1)) ||
  { echo "FAIL: banner's host transport"; cat "$WORK/ring_fast.log"; fails=$((fails + 1)); }
rc=0
"${MPI[@]}" -np 1 "$TT" "${base[@]}" : -np 1 "$TT" "${base[@]}" --host-transport mpi >"$WORK/mixed.log" 2>&1 || rc=$?
expect_eq "$rc" 2 "ranks with different --host-transport: exit 2"
[[ $(grep -c "different --host-transport values (shm and mpi)" "$WORK/mixed.log") -eq 2 ]] && passes=$((passes + 1)) ||
  { echo "FAIL: both ranks should name the disagreement"; cat "$WORK/mixed.log"; fails=$((fails + 1)); }

# Where the gradients live moves where the bytes are read from, never the sums: with --grad-memory
# shared the host's ranks add from each other's gradients in place (Note [Shared buffers]; small
# buckets' messages from the queue slots, 1 MiB ones from the mapped arena), with the parameters of
# private memory for every algorithm. Banner and summary say where they are and why; a TEE keeps them
# private.
for algo in ring rd rhd; do
  for bucket in 0.05 1; do
    expect_eq "$(train 3 "${algo}_${bucket}_shared" --allreduce-algo $algo --grad-memory shared --bucket-mb $bucket)" \
      "$(train 3 "${algo}_${bucket}_private" --allreduce-algo $algo --bucket-mb $bucket)" \
      "P=3 $algo, $bucket MB buckets: --grad-memory shared == private"
  done
done
grep -q '"grad_memory": "shared (the ranks on this host add from each other' "$WORK/ring_1_shared.json" &&
  grep -q '"grad_memory": "private (--grad-memory private, the default)"' "$WORK/ring_1_private.json" &&
  grep -q "gradients' memory shared" "$WORK/ring_1_shared.log" && passes=$((passes + 1)) ||
  { echo "FAIL: where the gradients are"; grep -h grad_memory "$WORK"/ring_1_*.json; fails=$((fails + 1)); }
train 3 ring_shared_fast --tee fast --grad-memory shared >/dev/null
grep -q '"grad_memory": "private (a TEE keeps the plaintext gradients to this rank)"' "$WORK/ring_shared_fast.json" &&
  passes=$((passes + 1)) || { echo "FAIL: a TEE run's gradients"; grep grad_memory "$WORK/ring_shared_fast.json"; fails=$((fails + 1)); }

# auto: what each bucket took, and why (defaults for the mode).
train 3 auto_cc --allreduce-algo auto --tee cc >/dev/null
expect_eq "$(python3 - "$WORK/auto_cc.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
sel = s["allreduce_selection"]
ok = sel["requested"] == "auto" and sum(sel["counts"].values()) == len(sel["buckets"]) > 0
ok = ok and sel["model"]["source"].startswith("defaults") and "tee cc" in sel["model"]["source"]
ok = ok and all(b["algorithm"] == min(b["predicted_us"], key=b["predicted_us"].get) for b in sel["buckets"])
print(ok)
PY
)" True "auto: per-bucket picks are the model's cheapest, counts add up, the model's source is named"

# The calibration file: bench allreduce writes it, train reads the mode's model from it.
if "${MPI[@]}" -np 2 "$TT" bench allreduce --max-bytes 256K --iters 2 --warmup 1 --modes ring,rd,rhd,auto,mpi \
    --calibrate "$WORK/cost.json" --json "$WORK/bench.json" >"$WORK/bench.log" 2>&1; then
  passes=$((passes + 1))
  grep -q "^# calibration (tee off) written to" "$WORK/bench.log" && passes=$((passes + 1)) ||
    { echo "FAIL: no calibration line"; cat "$WORK/bench.log"; fails=$((fails + 1)); }
  expect_eq "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sorted({x["mode"] for x in r}), all(x["correct"] for x in r), all(x["picked"] in ("ring","rd","rhd") for x in r if x["mode"]=="auto"))' "$WORK/bench.json")" \
    "['auto', 'mpi', 'rd', 'rhd', 'ring'] True True" "bench: every algorithm, auto names its pick, all exact"
else
  echo "FAIL: bench allreduce --calibrate"; tail -5 "$WORK/bench.log"; fails=$((fails + 1))
fi
train 2 auto_cal --allreduce-algo auto --allreduce-cost "$WORK/cost.json" >/dev/null
grep -q '"source": "calibration .*cost.json (tee off)"' "$WORK/auto_cal.json" && passes=$((passes + 1)) ||
  { echo "FAIL: auto did not use the calibration"; grep -A3 '"model"' "$WORK/auto_cal.json"; fails=$((fails + 1)); }
expect_exit 2 "no model for --tee cc.*bench allreduce --tee cc --calibrate" -- "$TT" "${base[@]}" --tee cc \
  --allreduce-algo auto --allreduce-cost "$WORK/cost.json"

# Tampering: the first rd message rank 0 sends is flipped; the receiver names the algorithm's phase.
rc=0
"${MPI[@]}" -np 2 "$TT" "${base[@]}" --tee fast --allreduce-algo rd --adversary flip:1 >"$WORK/flip.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "a flipped rd message: exit 3"
grep -q "failed to open (tag mismatch.*phase rd_exchange, hop 0" "$WORK/flip.log" && passes=$((passes + 1)) ||
  { echo "FAIL: the integrity error does not name rd's phase"; tail -3 "$WORK/flip.log"; fails=$((fails + 1)); }

# Emulated GPUs over emulated links: every algorithm runs.
for algo in rd rhd auto; do
  train 2 "emu_$algo" --compute emulate --link emulate --tee fast --allreduce-algo $algo >/dev/null
  grep -q '"allreduce_selection"' "$WORK/emu_$algo.json" 2>/dev/null && passes=$((passes + 1)) ||
    { echo "FAIL: emulated run with $algo"; fails=$((fails + 1)); }
done

expect_exit 2 "allreduce-algo rd chooses among teetrain's own algorithms" -- "$TT" "${base[@]}" --allreduce mpi \
  --allreduce-algo rd
expect_exit 2 "allreduce-algo" -- "$TT" "${base[@]}" --allreduce-algo ringg
expect_exit 2 "not a readable calibration file" -- "$TT" "${base[@]}" --allreduce-algo auto --allreduce-cost \
  "$WORK/missing.json"
finish
