#!/usr/bin/env bash
# Sealed near line rate on a network. Two emulated hosts, one rank each, the cable
# limited to 2 Gbit/s (250 MB/s, below what one core seals and opens with AES-256-GCM, ~2.5 GB/s):
# the sealed ring (`--tee fast`: pipelined segments, crypto threads) hides its crypto behind the wire,
# so `bench allreduce` at 16 MiB, which runs the plaintext ring beside it in the same run, reports a
# sealed/plain busbw of at least 0.8 (measured 0.90-0.92). On shared memory, or the unlimited veth,
# the wire is the CPU itself and the ratio is what the bench's sealing-cost summary predicts instead
# (docs/multihost.md). Also: the rig tells Open MPI to yield, and the bench's waits follow it.
source "$(dirname "$0")/rig.sh" "$@"
rig_up 2 --slots 1
provision_trust
"$RIG" shape 2 2gbit
BYTES=16M
# run_fast N: the bench into $WORK/fast$N.{json,log}; prints the sealed ring's ratio to the plain one.
run_fast() {
  timeout -k 5 120 "$RIG" mpirun -np 2 "$TT" bench allreduce --min-bytes $BYTES --max-bytes $BYTES --tee fast \
    "${TRUST[@]}" --warmup 1 --iters 4 --json "$WORK/fast$1.json" >"$WORK/fast$1.log" 2>&1 \
    || { echo "bench --tee fast over 2 Gbit/s: exit $?" >&2; cat "$WORK/fast$1.log" >&2; }
  python3 -c '
import json, sys
recs = json.load(open(sys.argv[1]))
ring = [r for r in recs if r["mode"] == "ring" and r["correct"]]
print(round(ring[0]["speedup_vs_plain"], 3) if ring else 0)' "$WORK/fast$1.json" 2>/dev/null || echo 0
}
ratio=$(run_fast 1)
cat "$WORK/fast1.log"
grep -q "^# ring waits: adaptive" "$WORK/fast1.log" \
  && ok "the rig's ranks yield (Open MPI told to, the bench follows)" || fail "the bench busy-polls in the rig"
# Four iterations on a 2-core machine that CTest shares with other tests: one burst of their work
# can take a run below the bar (seen once in a full `ctest -j2`). A second run decides then; a sealed
# ring that does not hide its crypto misses both.
if awk -v r="$ratio" 'BEGIN{exit !(r < 0.8)}'; then
  echo "first run: ${ratio}x; running again"
  ratio=$(run_fast 2)
  cat "$WORK/fast2.log"
fi
awk -v r="$ratio" 'BEGIN{exit !(r >= 0.8)}' \
  && ok "sealed ring at 16 MiB over 2 Gbit/s: ${ratio}x of the plaintext ring's busbw (>= 0.8)" \
  || fail "sealed ring at 16 MiB over 2 Gbit/s: ${ratio}x of the plaintext ring's busbw, not >= 0.8"
finish
