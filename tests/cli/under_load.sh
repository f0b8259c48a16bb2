#!/usr/bin/env bash
# Verdicts on a machine whose every core is busy (two CPU burners per core, as a shared cluster node
# or a CI runner is): the demo's real part (gpt2-mini in TEE mode cc at P = 2, long messages read
# from the peer's memory) completes with exit 0 and no attack reported; a rank stopped (SIGSTOP) or
# killed mid-run is a dead peer (exit 1, naming rank 1), never an integrity failure; a flipped
# message is exit 3 with one line per rank. Each ends within a bound: the run's --timeout plus a
# margin for the abort (a hang is a failure). Not a timed benchmark: the bounds are correctness (no
# wait is unbounded), generous enough for a loaded 2-core machine.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust
MPI=(mpirun --allow-run-as-root --oversubscribe -np 2)
start_burners
trap 'stop_burners; rm -rf "$WORK"' EXIT
"$TT" keygen --out "$WORK/k.key" >/dev/null
"$TT" seal-data --data "$WORK/data/tiny" --out "$WORK/sealed" --key-file "$WORK/k.key" >/dev/null
base=(train --model gpt2-mini --data "$WORK/sealed/tiny" --batch 2 --seq 64 --no-progress --key-file "$WORK/k.key"
      --tee cc --timeout 5 "${TRUST[@]}")

# The demo's real part, shortened: long messages (gpt2-mini's buckets) between busy ranks.
start=$SECONDS
rc=0
"${MPI[@]}" "$TT" "${base[@]}" --steps 12 >"$WORK/real.log" 2>&1 || rc=$?
expect_eq "$rc" 0 "loaded cc run: exit"
expect_eq "$(grep -c "INTEGRITY FAILURE" "$WORK/real.log")" 0 "loaded cc run: no attack reported"
grep -q "^done: 12 steps" "$WORK/real.log" && passes=$((passes + 1)) ||
  { echo "FAIL: loaded cc run did not finish"; tail -5 "$WORK/real.log"; fails=$((fails + 1)); }
echo "ok: loaded cc run in $((SECONDS - start)) s"

rank_pid() { # the pid of rank $1 of our job
  for p in $(pgrep -f "teetrain train --model gpt2-mini --data $WORK"); do
    if tr '\0' '\n' </proc/"$p"/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then echo "$p"; return; fi
  done
}
# A stopped or killed rank mid-run: a dead peer, exit 1 on the job, never exit 3 or an attack line.
for sig in STOP KILL; do
  rm -f "$WORK/m.jsonl"
  start=$SECONDS
  "${MPI[@]}" "$TT" "${base[@]}" --steps 100000 --metrics "$WORK/m.jsonl" >"$WORK/$sig.log" 2>&1 &
  job=$!
  for _ in $(seq 1 600); do [[ -s "$WORK/m.jsonl" && $(wc -l <"$WORK/m.jsonl") -ge 2 ]] && break; sleep 0.2; done
  pid=$(rank_pid 1)
  [[ -n "$pid" ]] || { echo "FAIL: SIG$sig: rank 1 not found"; cat "$WORK/$sig.log"; fails=$((fails + 1)); kill -9 $job; continue; }
  kill -"$sig" "$pid"
  t0=$SECONDS
  for _ in $(seq 1 300); do kill -0 $job 2>/dev/null || break; sleep 0.2; done  # 60 s: 5 s timeout + abort
  if kill -0 $job 2>/dev/null; then
    echo "FAIL: SIG$sig on rank 1 under load: job still running after 60 s"; fails=$((fails + 1))
    kill -9 $job "$pid" 2>/dev/null; continue
  fi
  rc=0; wait $job || rc=$?
  # SIGKILL: mpirun itself reports the rank that died on a signal (its exit: 128 + 9); SIGSTOP: the
  # peer's timeout is ours (exit 1). Either way a dead peer, not an attack, and rank 1 is named.
  [[ $rc -ne 0 && $rc -ne 3 ]] && passes=$((passes + 1)) ||
    { echo "FAIL: SIG$sig on rank 1 under load: exit $rc"; fails=$((fails + 1)); }
  [[ $sig != STOP ]] || expect_eq "$rc" 1 "SIGSTOP on rank 1 under load: exit (a dead peer)"
  grep -qE "rank 1\b" "$WORK/$sig.log" && passes=$((passes + 1)) ||
    { echo "FAIL: SIG$sig: nothing names rank 1"; tail -5 "$WORK/$sig.log"; fails=$((fails + 1)); }
  expect_eq "$(grep -c "INTEGRITY FAILURE" "$WORK/$sig.log")" 0 "SIG$sig on rank 1 under load: no attack reported"
  echo "ok: SIG$sig on rank 1 -> exit $rc, $((SECONDS - t0)) s after the signal ($((SECONDS - start)) s in all)"
  kill -9 "$pid" 2>/dev/null || true
done

# A flipped message under load: exit 3, the verdict's line and one line from the other rank.
start=$SECONDS
rc=0
"${MPI[@]}" "$TT" "${base[@]}" --steps 6 --tee fast --adversary flip:3 >"$WORK/flip.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "flip under load: exit"
expect_eq "$(grep -c "INTEGRITY FAILURE" "$WORK/flip.log")" 1 "flip under load: one verdict line"
expect_eq "$(grep -cE "^teetrain: (INTEGRITY FAILURE: )?rank [01]:" "$WORK/flip.log")" 2 "flip under load: a line per rank"
echo "ok: flip under load -> exit $rc in $((SECONDS - start)) s"
finish
