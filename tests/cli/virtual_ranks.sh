#!/usr/bin/env bash
# Virtual ranks (--ranks-per-process, Note [Virtual ranks] in comm/transport/virtual_ranks.h): P ranks
# as 2 processes x P/2 threads give the virtual times of P processes bit for bit (step time, every
# phase's max and mean, every counter), with the TEE off and in cc (attestation, agreement and sealed
# tokens between the threads); a flipped sealed message between virtual ranks still stops the run with
# exit 3; a rank per thread is refused where time is measured.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust 8
PY=$(command -v python3)
MPI=(mpirun --allow-run-as-root --oversubscribe)
emu=(train --model gpt2-tiny --data "$WORK/data/tiny" --batch 2 --seq 32 --steps 1 --timing-warmup 0
     --val-batches 0 --no-progress -q --compute emulate --gpu h100 --allow-plain-data)
cc=(--tee cc "${TRUST[@]}")
run() { # run NAME PROCESSES args...: summary in $WORK/NAME.json
  local name="$1" np="$2"; shift 2
  if "${MPI[@]}" -np "$np" "$TT" "${emu[@]}" --summary "$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1; then
    passes=$((passes + 1))
  else
    echo "FAIL: run $name"; tail -8 "$WORK/$name.log"; fails=$((fails + 1))
  fi
}
# same A B: the summaries' virtual-time fields are equal, and B's world is A's.
same() {
  if "$PY" - "$WORK/$1.json" "$WORK/$2.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["time"] == "virtual" == b["time"]
assert a["world_size"] == b["world_size"], (a["world_size"], b["world_size"])
for k in ("step_s_mean", "phases", "counters", "final_loss"):
    assert a[k] == b[k], (k, a[k], b[k])
assert a["phases"]["seal"]["mean"] > 0 or a["tee"]["mode"] == "off", "cc seals"
assert b["host_transport"].startswith("virtual: "), b["host_transport"]
PY
  then passes=$((passes + 1)); else echo "FAIL: $1 and $2 differ in virtual time"; fails=$((fails + 1)); fi
}

for tee in off cc; do
  flags=(--tee off)
  [[ $tee == cc ]] && flags=("${cc[@]}")
  for p in 4 8; do
    run "$tee-p$p" "$p" "${flags[@]}"
    run "$tee-v$p" 2 "${flags[@]}" --ranks-per-process $((p / 2))
    same "$tee-p$p" "$tee-v$p"
  done
done
# One process hosting every rank (no mpirun: no MPI traffic at all) gives the same times too.
if "$TT" "${emu[@]}" "${cc[@]}" --ranks-per-process 4 --summary "$WORK/cc-t4.json" >"$WORK/cc-t4.log" 2>&1; then
  passes=$((passes + 1)); same cc-p4 cc-t4
else echo "FAIL: run cc-t4"; tail -5 "$WORK/cc-t4.log"; fails=$((fails + 1)); fi

# A bit flipped in a sealed message between two threads' ranks (rank 0 -> 1, both in process 0): exit 3
# and the verdict line naming the rank, its peer and where in the step.
rc=0
"${MPI[@]}" -np 2 "$TT" "${emu[@]}" "${cc[@]}" --ranks-per-process 2 --adversary flip:3 >"$WORK/flip.log" 2>&1 || rc=$?
expect_eq "$rc" 3 "a flipped sealed message between virtual ranks: exit 3"
grep -qE "INTEGRITY FAILURE: rank 1: sealed message from rank 0 failed to open .*step 0, bucket" \
  "$WORK/flip.log" && passes=$((passes + 1)) || { echo "FAIL: no verdict line"; tail -5 "$WORK/flip.log"; fails=$((fails + 1)); }
# The other process's line names its ranks (2 and 3, or the one of them that failed too) and the verdict's
# rank 1, never the processes (Note [Notices name virtual ranks], comm/secure/first_failure.h).
grep -qE "teetrain: ranks? (2-3|2|3): stopped: rank 1 detected an attack" "$WORK/flip.log" &&
  ! grep -qE "rank 0 detected|^teetrain: rank [01]: stopped" "$WORK/flip.log" && passes=$((passes + 1)) ||
  { echo "FAIL: the stopped process's line does not name the virtual ranks"; tail -5 "$WORK/flip.log"; fails=$((fails + 1)); }
# Measured time cannot share a process's cores between ranks.
expect_exit 2 "ranks-per-process hosts ranks as threads only in emulated virtual time" -- \
  "$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --steps 1 --ranks-per-process 2
finish
