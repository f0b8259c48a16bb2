#!/usr/bin/env bash
# A cable cut mid-run: 4 ranks on 2 emulated hosts train until host 2's cable is unplugged
# (its switch port goes down: no reset, no error, packets just stop, as when a link dies). Then
#  - every rank exits, non-zero, within --timeout (plus a few seconds of slack) of the cut, and none
#    calls it an attack (exit 3 or an INTEGRITY FAILURE line);
#  - every rank on host 2 (which mpirun can no longer reach to kill) says itself which peer stopped
#    answering, and so does at least one rank on host 1;
#  - mpirun exits non-zero too, once TCP gives up on host 2's daemon. How soon is the kernel's
#    tcp_retries2 (default 15: ~15 minutes); the rig's hosts use 4 (~10 s) so this test is short.
# Nothing here may hang: every wait has a bound, and the rig is torn down on any exit.
# With --load (second argument) the cut happens on a machine whose every core is busy (two CPU
# burners per core): every rank must still be gone within 30 s of the cut.
source "$(dirname "$0")/rig.sh" "$@"
make_corpus
rig_up 2 --slots 2
for h in 1 2; do "$RIG" exec "$h" sysctl -qw net.ipv4.tcp_retries2=4; done
TIMEOUT=5
SLACK=8  # detection is --timeout after the last message; abort and exit take a moment on 2 busy cores
if [[ "${2:-}" == --load ]]; then
  SLACK=25
  start_burners
fi
# Each rank runs under a shell that records how and when it ended. The shell traps TERM (not
# ignores: an ignored signal would be inherited by teetrain) so that a rank the runtime kills is
# recorded too.
cat >"$WORK/rank.sh" <<'EOF'
trap 'true' TERM
"$@"
rc=$?
echo "$rc $(date +%s.%N)" >"$RESULTS/rc.$OMPI_COMM_WORLD_RANK"
exit $rc
EOF
export RESULTS="$WORK/results"
mkdir -p "$RESULTS"
timeout -k 5 120 "$RIG" mpirun -np 4 -x RESULTS --output-filename "$WORK/out" bash "$WORK/rank.sh" \
  "$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --steps 1000000 --batch 8 --seq 16 --no-progress \
  --timeout $TIMEOUT --metrics "$WORK/m.jsonl" >"$WORK/mpirun.log" 2>&1 &
job=$!

# A few steps first, so the cut lands in the middle of training, not in start-up.
for _ in $(seq 1 300); do
  [[ -s "$WORK/m.jsonl" && $(wc -l <"$WORK/m.jsonl") -ge 5 ]] && break
  kill -0 $job 2>/dev/null || break
  sleep 0.2
done
[[ -s "$WORK/m.jsonl" ]] || { fail "training never started"; cat "$WORK/mpirun.log"; exit 1; }
cut_at=$(date +%s.%N)
"$RIG" cut 2
echo "cut host 2's link after $(wc -l <"$WORK/m.jsonl") steps"

# Every rank must have ended by TIMEOUT + SLACK; mpirun by another TCP give-up later.
for _ in $(seq 1 $(((TIMEOUT + SLACK + 25) * 5))); do
  kill -0 $job 2>/dev/null || break
  sleep 0.2
done
mpirun_s=$(awk -v a="$cut_at" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
if kill -0 $job 2>/dev/null; then
  fail "mpirun still running ${mpirun_s}s after the cut"
  kill -TERM $job 2>/dev/null || true
fi
rc=0; wait $job || rc=$?
[[ $rc -ne 0 && $rc -ne 124 ]] && ok "mpirun exit $rc, ${mpirun_s}s after the cut" || fail "mpirun exit $rc"

for r in 0 1 2 3; do
  host=$((r / 2 + 1))
  err="$WORK/out/1/rank.$r/stderr"
  if [[ ! -f "$RESULTS/rc.$r" ]]; then fail "rank $r (host $host) left no exit record"; continue; fi
  read -r rrc at <"$RESULTS/rc.$r"
  s=$(awk -v a="$cut_at" -v b="$at" 'BEGIN{printf "%.1f", b-a}')
  named=0
  grep -qE "rank $r: (receive|send) (from|to) rank [0-3] .* did not complete within $TIMEOUT s" "$err" 2>/dev/null && named=1
  echo "rank $r (host $host): exit $rrc, ${s}s after the cut, names the failure: $named"
  [[ $rrc -ne 0 ]] && ok "rank $r exits non-zero" || fail "rank $r exit 0"
  # A dead link is a dead peer, never an attack.
  [[ $rrc -ne 3 ]] && ! grep -q "INTEGRITY FAILURE" "$err" 2>/dev/null && ok "rank $r reports no attack" ||
    { fail "rank $r reports a cut link as an attack"; cat "$err"; }
  awk -v s="$s" -v t=$((TIMEOUT + SLACK)) 'BEGIN{exit !(s <= t)}' && ok "rank $r gone within ${TIMEOUT}+${SLACK} s" \
    || fail "rank $r took ${s}s"
  if [[ $host -eq 2 ]]; then
    ((named)) && ok "rank $r names the failure" || { fail "rank $r does not name the failure"; cat "$err"; }
  fi
  h1_named=$((${h1_named:-0} + (host == 1 ? named : 0)))
done
((h1_named >= 1)) && ok "a rank on host 1 names the failure" || { fail "no rank on host 1 names the failure"; cat "$WORK/mpirun.log"; }
finish
