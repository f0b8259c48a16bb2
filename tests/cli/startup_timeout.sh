#!/usr/bin/env bash
# Every start-up stage in which a rank waits for its peers ends within --timeout, also where the wait
# is inside MPI (Note [Start-up watchdog], engine/run/startup_watchdog.h):
#  - a peer that never starts (the job's second process is not teetrain, so rank 0 waits in MPI_Init);
#  - a peer stopped (SIGSTOP) in the collectives that set up the links: rank_links.cpp's MPI_Allreduce,
#    ShmTransport's MPI_Comm_split_type (tests/cli/stop_in_mpi.cpp stops it there);
# each ends with exit 1 (a slow or absent peer is no attack: never 3) within --timeout + 10 s, and one
# line names the waiting rank and its stage; the stopped rank, continued by mpirun to be ended, blames
# nobody. A healthy run with the same short --timeout finishes.
source "$(dirname "$0")/lib.sh" "$@"
STOP_IN_MPI="$2"
make_corpus
T=3
BOUND=$((T + 10))
MPI=(mpirun --allow-run-as-root --oversubscribe)
args=(train --model gpt2-tiny --data "$WORK/data/tiny" --steps 2 --batch 2 --seq 16 --threads 1 --no-progress
      --timeout "$T")

# start_up NAME STAGE COMMAND...: the command (under a hard bound, so that a hang fails here instead of
# at CTest's timeout) exits 1 within BOUND seconds, and rank 0 names STAGE as where start-up was stuck.
# What is left of the job afterwards (a stopped rank) is killed, found by this test's directory.
start_up() {
  local name="$1" stage="$2" rc=0 start=$SECONDS
  shift 2
  timeout -k 5 60 "$@" >"$WORK/$name.log" 2>&1 || rc=$?
  local elapsed=$((SECONDS - start)) p
  for p in $(pgrep -f -- "$WORK/data/tiny" || true); do kill -9 "$p" 2>/dev/null || true; done
  expect_eq "$rc" 1 "$name: exit code"
  if ((elapsed > BOUND)); then
    echo "FAIL: $name: ended after ${elapsed}s, more than --timeout $T + 10 s"; fails=$((fails + 1))
  fi
  if grep -F "teetrain: error: rank 0: start-up stuck in $stage" "$WORK/$name.log" | grep -qF "than --timeout $T s"
  then passes=$((passes + 1)); else
    echo "FAIL: $name: no line naming rank 0 and the stage '$stage'"; cat "$WORK/$name.log"; fails=$((fails + 1))
  fi
  echo "$name: exit $rc after ${elapsed}s"
}

# A peer that never starts: an MPMD job whose rank 1 is a shell that sleeps (its command line names this
# test's data so that it is found and killed afterwards, whatever happened).
start_up never_started "MPI start-up (MPI_Init)" \
  "${MPI[@]}" -np 1 "$TT" "${args[@]}" : -np 1 sh -c 'sleep 120' "$WORK/data/tiny"

# A peer stopped inside the links' set-up: rank 0 waits inside MPI for rank 1. Under ASan the sanitizer's
# runtime must come first among the preloaded libraries (it checks), so it is preloaded ahead of ours.
sanitizer=$(ldd "$TT" | awk '/libasan/ {print $3}')
preload="${sanitizer:+$sanitizer:}$STOP_IN_MPI"
for at in MPI_Allreduce MPI_Comm_split_type; do
  start_up "stopped_in_$at" "setting up the links between ranks" \
    "${MPI[@]}" -np 2 -x LD_PRELOAD="$preload" -x TT_STOP_AT="$at" -x TT_STOP_RANK=1 "$TT" "${args[@]}"
  if grep -q "rank 1: start-up stuck" "$WORK/stopped_in_$at.log"; then
    echo "FAIL: stopped_in_$at: the stopped rank blamed a peer"; cat "$WORK/stopped_in_$at.log"; fails=$((fails + 1))
  else passes=$((passes + 1)); fi
done

# The watch stands down once the run is built: a healthy run is never cut short by it.
check "a healthy 2-rank run with --timeout $T" "${MPI[@]}" -np 2 "$TT" "${args[@]}" --quiet
finish
