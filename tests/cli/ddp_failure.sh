#!/usr/bin/env bash
# A rank that dies or stops answering stops the job with a non-zero exit and a message naming it,
# within the --timeout bound — never a silent hang.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
MPI=(mpirun --allow-run-as-root --oversubscribe -np 2)
args=(train --model gpt2-tiny --data "$WORK/data/tiny" --steps 100000 --batch 2 --seq 16 --threads 1 --no-progress
      --timeout 4 --metrics "$WORK/m.jsonl")
rank_pid() { # the pid of rank $1 of our job
  for p in $(pgrep -f "teetrain train --model gpt2-tiny --data $WORK"); do
    if tr '\0' '\n' </proc/"$p"/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then echo "$p"; return; fi
  done
}
wait_steps() { for _ in $(seq 1 100); do [[ -s "$WORK/m.jsonl" && $(wc -l <"$WORK/m.jsonl") -ge 3 ]] && return; sleep 0.2; done; }

for sig in STOP KILL; do
  rm -f "$WORK/m.jsonl"
  start=$(date +%s)
  "${MPI[@]}" "$TT" "${args[@]}" >"$WORK/$sig.log" 2>&1 &
  job=$!
  wait_steps
  pid=$(rank_pid 1)
  [[ -n "$pid" ]] || { echo "FAIL: rank 1 not found"; fails=$((fails + 1)); kill -9 $job; continue; }
  kill -"$sig" "$pid"
  # Bound: 4 s timeout + abort; give it 40 s before calling it a hang.
  for _ in $(seq 1 200); do kill -0 $job 2>/dev/null || break; sleep 0.2; done
  if kill -0 $job 2>/dev/null; then
    echo "FAIL: SIG$sig on rank 1: job still running after 40 s"; fails=$((fails + 1)); kill -9 $job "$pid" 2>/dev/null; continue
  fi
  rc=0; wait $job || rc=$?
  elapsed=$(($(date +%s) - start))
  [[ $rc -ne 0 ]] && passes=$((passes + 1)) || { echo "FAIL: SIG$sig: exit code 0"; fails=$((fails + 1)); }
  if grep -qiE "rank 1|process rank 1" "$WORK/$sig.log"; then passes=$((passes + 1)); else
    echo "FAIL: SIG$sig: message does not name rank 1"; cat "$WORK/$sig.log"; fails=$((fails + 1)); fi
  echo "ok: SIG$sig on rank 1 -> exit $rc after ${elapsed}s"
  kill -9 "$pid" 2>/dev/null || true
done
finish
