#!/usr/bin/env bash
# Data-parallel equivalence under mpirun (gpt2-tiny, 20 steps, the same global batch of 8):
#  - P = 2 and P = 4 follow the 1-rank loss curve within 2e-3 nats. Not bit-exact: the ring adds
#    the ranks' partial gradients in ring order, while one rank sums the whole batch inside each
#    sgemm, so float rounding differs (~1e-7 relative per step) and AdamW carries it forward.
#  - Bucket sizes and overlap change when chunks move, never how an element is summed at P = 2
#    (a + b is commutative in floating point), so they give bit-identical parameters there.
#  - MPI_Allreduce as the reduction also stays within the tolerance.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
MPI=(mpirun --allow-run-as-root --oversubscribe)
base=(train --model gpt2-tiny --data "$WORK/data/tiny" --steps 20 --seq 16 --no-progress --threads 1 --seed 11
      --val-batches 2)
run() { # name ranks batch extra...
  local name="$1" np="$2" b="$3"; shift 3
  "${MPI[@]}" -np "$np" "$TT" "${base[@]}" --batch "$b" --summary "$WORK/$name.json" --metrics "$WORK/$name.jsonl" \
    "$@" 2>"$WORK/$name.log" || { echo "FAIL: run $name failed"; cat "$WORK/$name.log"; fails=$((fails + 1)); }
}
losses() { sed -n 's/.*"loss":\([-0-9.e]*\).*/\1/p' "$1"; }
max_diff() { paste <(losses "$1") <(losses "$2") | awk 'BEGIN{m=0} {d=$1-$2; if(d<0)d=-d; if(d>m)m=d} END{printf "%.3g", m}'; }
within() { awk -v d="$1" -v t="$2" 'BEGIN{exit !(d<=t)}'; }
check_close() { # a b label
  local d; d=$(max_diff "$WORK/$1.jsonl" "$WORK/$2.jsonl")
  [[ $(losses "$WORK/$1.jsonl" | wc -l) -eq 20 ]] || { echo "FAIL: $1 has no 20 losses"; fails=$((fails + 1)); return; }
  if within "$d" 2e-3; then passes=$((passes + 1)); echo "ok: $3 (max |dloss| $d)"; else echo "FAIL: $3: max |dloss| $d"; fails=$((fails + 1)); fi
}
sha() { json_field "$WORK/$1.json" params_sha256; }

run p1 1 8
run p2 2 4
run p4 4 2
run p2_one_bucket 2 4 --bucket-mb 0
run p2_tiny_buckets 2 4 --bucket-mb 0.01
run p2_no_overlap 2 4 --overlap off
run p2_mpi 2 4 --allreduce mpi
run p2_accum 2 2 --grad-accum 2

check_close p1 p2 "P=2 matches P=1"
check_close p1 p4 "P=4 matches P=1"
check_close p1 p2_mpi "MPI_Allreduce matches P=1"
check_close p1 p2_accum "P=2 with grad-accum 2 matches P=1"
expect_eq "$(sha p2_one_bucket)" "$(sha p2)" "one bucket == 25 MiB buckets (P=2)"
expect_eq "$(sha p2_tiny_buckets)" "$(sha p2)" "10 KiB buckets == 25 MiB buckets (P=2)"
expect_eq "$(sha p2_no_overlap)" "$(sha p2)" "overlap off == overlap on"
expect_eq "$(json_field "$WORK/p4.json" world_size)" 4 "summary world_size"
grep -q '"buckets": *[2-9]' "$WORK/p2_tiny_buckets.json" && passes=$((passes + 1)) || { echo "FAIL: tiny buckets should be several"; fails=$((fails + 1)); }
grep -q '"bytes_sent"' "$WORK/p2.json" && passes=$((passes + 1)) || { echo "FAIL: no bytes_sent"; fails=$((fails + 1)); }
# Ranks launched with different flags refuse to start, on every rank, with exit code 2.
rc=0; "${MPI[@]}" -np 1 "$TT" "${base[@]}" --batch 4 : -np 1 "$TT" "${base[@]}" --batch 4 --lr 0.5 >"$WORK/mm.log" 2>&1 || rc=$?
expect_eq "$rc" 2 "mismatched flags exit code"
grep -q "differs from rank 0" "$WORK/mm.log" && passes=$((passes + 1)) || { echo "FAIL: mismatch message"; cat "$WORK/mm.log"; fails=$((fails + 1)); }
# A rank bound to one core (mpirun's default for up to two ranks) with --threads 2 is warned, and
# by default gets as many threads as CPUs it may use; unbound, the same run is quiet.
one=(train --model gpt2-tiny --data "$WORK/data/tiny" --steps 1 --seq 16 --batch 2 --no-progress --val-batches 0)
mpirun --allow-run-as-root -np 1 --bind-to core "$TT" "${one[@]}" --threads 2 >"$WORK/bound.log" 2>&1 || { echo "FAIL: bound run"; fails=$((fails + 1)); }
grep -q "warning: --threads 2 but this rank may run on 1 CPU (mpirun binds each rank to one core by default)" "$WORK/bound.log" \
  && passes=$((passes + 1)) || { echo "FAIL: no binding warning"; cat "$WORK/bound.log"; fails=$((fails + 1)); }
mpirun --allow-run-as-root -np 1 --bind-to core "$TT" "${one[@]}" >"$WORK/bound_default.log" 2>&1 || { echo "FAIL: bound default run"; fails=$((fails + 1)); }
grep -q "1 rank(s) x 1 thread(s)" "$WORK/bound_default.log" && ! grep -q "warning: --threads" "$WORK/bound_default.log" \
  && passes=$((passes + 1)) || { echo "FAIL: a bound rank's default threads"; cat "$WORK/bound_default.log"; fails=$((fails + 1)); }
mpirun --allow-run-as-root -np 1 --bind-to none "$TT" "${one[@]}" --threads 2 >"$WORK/unbound.log" 2>&1 || { echo "FAIL: unbound run"; fails=$((fails + 1)); }
if [[ $(nproc) -ge 2 ]]; then
  ! grep -q "warning: --threads" "$WORK/unbound.log" && passes=$((passes + 1)) || { echo "FAIL: unbound run warned"; cat "$WORK/unbound.log"; fails=$((fails + 1)); }
fi
finish
