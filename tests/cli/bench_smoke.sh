#!/usr/bin/env bash
# Smoke test of the bench commands (not a performance test: tiny sizes, a few iterations, < 30 s):
# `bench allreduce` under mpirun -np 2 with --tee off, cc and fast writes JSON records that scripts can
# read and whose checked run was exact; `bench crypto` and `bench step` run and report.
source "$(dirname "$0")/lib.sh" "$@"
MPI=(mpirun --allow-run-as-root --oversubscribe -np 2)
provision_trust
export OMP_WAIT_POLICY=passive  # two ranks share the cores; busy-waiting OpenMP threads would starve them
unset GOMP_SPINCOUNT             # lib.sh's; this test checks the spin teetrain sets when it is unset

# has_fields FILE TEE: every record carries the fields scripts read, the tee mode, and correct = true.
has_fields() {
  local f="$1" tee="$2" key n
  n=$(grep -c '"time_us_median"' "$f" || true)
  if [[ $n -lt 1 ]]; then echo "FAIL: $f has no records"; fails=$((fails + 1)); return; fi
  # "mode" also appears inside tee_config, so the algorithm's mode is counted by value.
  expect_eq "$(grep -cE '"mode": "(ring|rd|rhd|auto|mpi|plain)"' "$f" || true)" "$n" "$tee: every record has mode"
  for key in ranks bytes time_us_median algbw_gbps busbw_gbps correct tee; do
    expect_eq "$(grep -c "\"$key\":" "$f" || true)" "$n" "$tee: every record has $key"
  done
  expect_eq "$(grep -c '"correct": true' "$f" || true)" "$n" "$tee: every record is correct"
  expect_eq "$(grep -c "\"tee\": \"$tee\"" "$f" || true)" "$n" "$tee: records name the tee mode"
  expect_eq "$(grep -c '"ranks": 2' "$f" || true)" "$n" "$tee: records have ranks 2"
}

for tee in off cc fast; do
  out="$WORK/ar_$tee.json"
  # 64K: sizes take the suffixes the docs write (K = 1024).
  if "${MPI[@]}" "$TT" bench allreduce --max-bytes 64K --iters 2 --warmup 1 --tee "$tee" "${TRUST[@]}" --json "$out" \
      >"$WORK/ar_$tee.log" 2>&1; then
    passes=$((passes + 1))
    has_fields "$out" "$tee"
    # With --tee on, MPI_Allreduce (plaintext) is not among the default modes; the plaintext ring runs
    # beside the sealed one instead, and the sealed rows carry the AEAD time the crypto alone takes.
    if [[ $tee != off ]]; then
      expect_eq "$(grep -c '"mode": "mpi"' "$out" || true)" 0 "$tee: no mpi records"
      expect_eq "$(python3 - "$out" <<'PY'
import json, sys
recs = json.load(open(sys.argv[1]))
ring = [r for r in recs if r["mode"] == "ring"]
plain = [r for r in recs if r["mode"] == "plain"]
ok = len(ring) == len(plain) > 0 and max(r["bytes"] for r in recs) == 65536
ok = ok and all(r["speedup_vs_plain"] == 1.0 for r in plain) and all(r["speedup_vs_plain"] > 0 for r in ring)
ok = ok and all(r["aead_us"] > 0 for r in ring) and all(r["aead_us"] == 0 for r in plain)
print(ok)
PY
)" True "$tee: ring and plain at every size up to 64K, vs_plain and aead_us"
      grep -q "^# what sealing costs: aes-256-gcm alone" "$WORK/ar_$tee.log" \
        && passes=$((passes + 1)) || { echo "FAIL: $tee: no sealing-cost summary"; fails=$((fails + 1)); }
    fi
    if ! grep -q "^# machine:" "$WORK/ar_$tee.log"; then echo "FAIL: $tee: no machine line"; fails=$((fails + 1)); fi
    # The OpenMP workers' waiting: passive as exported above, after the spin teetrain sets when unset.
    if ! grep -q "^# machine:.*OpenMP waits OMP_WAIT_POLICY=passive GOMP_SPINCOUNT=1000$" "$WORK/ar_$tee.log"; then
      echo "FAIL: $tee: machine line without OpenMP's waits"; grep "^# machine" "$WORK/ar_$tee.log"; fails=$((fails + 1))
    fi
  else
    echo "FAIL: bench allreduce --tee $tee"; tail -5 "$WORK/ar_$tee.log"; fails=$((fails + 1))
  fi
done
expect_eq "$(grep -c '"mode": "mpi"' "$WORK/ar_off.json" || true)" "$(grep -c '"mode": "ring"' "$WORK/ar_off.json" || true)" \
  "off: ring and mpi at every size"
# Side by side: every record of the plaintext run carries its speed relative to MPI_Allreduce at the same
# size (exactly 1 for mpi itself, positive for the ring) and the wait policy, busy by default.
expect_eq "$(python3 -c 'import json,sys; print(all(r["speedup_vs_mpi"] == 1.0 for r in json.load(open(sys.argv[1])) if r["mode"] == "mpi"))' "$WORK/ar_off.json")" \
  True "off: mpi's speedup over itself is 1"
expect_eq "$(python3 -c 'import json,sys; print(all(r["speedup_vs_mpi"] > 0 for r in json.load(open(sys.argv[1]))))' "$WORK/ar_off.json")" \
  True "off: every record has a positive speedup_vs_mpi"
# Unset, --comm-wait polls busy while each rank has a core, adaptive when 2 ranks outnumber the cores.
want_wait=$([[ $(nproc) -ge 2 ]] && echo busy || echo adaptive)
expect_eq "$(grep -c "\"comm_wait\": \"$want_wait\"" "$WORK/ar_off.json" || true)" "$(grep -c '"time_us_median"' "$WORK/ar_off.json" || true)" \
  "off: records name the wait policy ($want_wait)"
if "${MPI[@]}" "$TT" bench allreduce --max-bytes 65536 --iters 2 --warmup 1 --comm-wait adaptive >"$WORK/ar_adaptive.log" 2>&1; then
  passes=$((passes + 1))
  if ! grep -q "^# ring waits: adaptive" "$WORK/ar_adaptive.log"; then
    echo "FAIL: --comm-wait adaptive not in the header"; fails=$((fails + 1))
  fi
else
  echo "FAIL: bench allreduce --comm-wait adaptive"; tail -5 "$WORK/ar_adaptive.log"; fails=$((fails + 1))
fi
expect_exit 2 "comm-wait" -- "$TT" bench allreduce --comm-wait sometimes
# A user's own GOMP_SPINCOUNT wins over teetrain's.
GOMP_SPINCOUNT=7 "${MPI[@]}" -x GOMP_SPINCOUNT "$TT" bench allreduce --max-bytes 4K --iters 1 --warmup 0 >"$WORK/ar_spin.log" 2>&1 &&
  grep -q "^# machine:.*GOMP_SPINCOUNT=7$" "$WORK/ar_spin.log" && passes=$((passes + 1)) ||
  { echo "FAIL: a user's GOMP_SPINCOUNT was not kept"; grep "^# machine" "$WORK/ar_spin.log"; fails=$((fails + 1)); }
# Our rows reach the other rank through the shared-memory channels by default, through MPI's
# point-to-point path with --host-transport mpi (as tools/bench/README.md shows); header and records say so.
grep -q "^# host transport: shm: 1 peer(s) on this host" "$WORK/ar_off.log" && passes=$((passes + 1)) ||
  { echo "FAIL: no shm host transport line"; grep "^#" "$WORK/ar_off.log"; fails=$((fails + 1)); }
if "${MPI[@]}" "$TT" bench allreduce --max-bytes 1M --iters 2 --warmup 1 --host-transport mpi --json "$WORK/ar_mpi.json" \
  >"$WORK/ar_mpi.log" 2>&1; then
  grep -q "^# host transport: mpi (--host-transport mpi" "$WORK/ar_mpi.log" && passes=$((passes + 1)) ||
    { echo "FAIL: --host-transport mpi not in the header"; fails=$((fails + 1)); }
  expect_eq "$(grep -c '"host_transport": "mpi"' "$WORK/ar_mpi.json" || true)" "$(grep -c '"time_us_median"' "$WORK/ar_mpi.json")" \
    "--host-transport mpi: every record names it"
else
  echo "FAIL: bench allreduce --host-transport mpi"; tail -5 "$WORK/ar_mpi.log"; fails=$((fails + 1))
fi
expect_exit 2 "host-transport" -- "$TT" bench allreduce --host-transport pigeon
# Our rows run on a buffer shared with the transport in plaintext (host peers add from it in place),
# MPI_Allreduce's on private memory; with a TEE ours are private too, and asking for shared is refused.
expect_eq "$(python3 - "$WORK/ar_off.json" "$WORK/ar_cc.json" <<'PY'
import json, sys
off, cc = (json.load(open(f)) for f in sys.argv[1:])
print(all(r["buffer"] == ("private" if r["mode"] == "mpi" else "shared") for r in off)
      and all(r["buffer"] == "private" for r in cc))
PY
)" True "records name the buffer: ours shared and MPI's private in plaintext, all private sealed"
grep -q "^# buffers (--buffer): ours shared" "$WORK/ar_off.log" && passes=$((passes + 1)) ||
  { echo "FAIL: no buffers line"; grep "^#" "$WORK/ar_off.log"; fails=$((fails + 1)); }
if "${MPI[@]}" "$TT" bench allreduce --max-bytes 1M --iters 2 --warmup 1 --buffer private --json "$WORK/ar_private.json" \
  >"$WORK/ar_private.log" 2>&1; then
  expect_eq "$(grep -c '"buffer": "private"' "$WORK/ar_private.json" || true)" "$(grep -c '"time_us_median"' "$WORK/ar_private.json")" \
    "--buffer private: every record runs on private memory"
  expect_eq "$(grep -c '"correct": true' "$WORK/ar_private.json" || true)" "$(grep -c '"time_us_median"' "$WORK/ar_private.json")" \
    "--buffer private: every record is correct"
else
  echo "FAIL: bench allreduce --buffer private"; tail -5 "$WORK/ar_private.log"; fails=$((fails + 1))
fi
expect_exit 2 "for --tee off only" -- "$TT" bench allreduce --max-bytes 4096 --iters 1 --tee cc --buffer shared
expect_exit 2 "buffer" -- "$TT" bench allreduce --buffer pigeon
# Sealing MPI_Allreduce is impossible: asking for it in TEE mode is bad input (exit 2).
expect_exit 2 "mpi.*cannot be sealed" -- "$TT" bench allreduce --max-bytes 4096 --iters 1 --tee cc --modes ring,mpi
# plain is the plaintext ring beside a sealed one; a size with an unknown unit is refused.
expect_exit 2 "plain is the plaintext ring beside a sealed one" -- "$TT" bench allreduce --modes ring,plain
expect_exit 2 "min-bytes.*not recognized" -- "$TT" bench allreduce --min-bytes 64X

if "$TT" bench crypto --ciphers aes-256-gcm --threads 1 --max-bytes 4096 --min-seconds 0.01 --json "$WORK/crypto.json" \
    >"$WORK/crypto.log" 2>&1; then
  passes=$((passes + 1))
  expect_ne "$(grep -c '"gbps"' "$WORK/crypto.json" || true)" 0 "crypto: records with gbps"
else
  echo "FAIL: bench crypto"; tail -5 "$WORK/crypto.log"; fails=$((fails + 1))
fi

if "$TT" bench step --model gpt2-tiny --steps 1 --batch 2 --seq 16 --threads 1 >"$WORK/step.log" 2>&1; then
  passes=$((passes + 1))
  if ! grep -q "GFLOP/s" "$WORK/step.log"; then echo "FAIL: bench step prints no GFLOP/s"; fails=$((fails + 1)); fi
else
  echo "FAIL: bench step"; tail -5 "$WORK/step.log"; fails=$((fails + 1))
fi
# Ranks started with different options (here the largest size) would run different collectives and
# wait out the timeout blaming a live peer; they are refused at once, on one line naming the rank.
one=(bench allreduce --min-bytes 1K --max-bytes 64K --iters 2 --warmup 1 --modes ring)
rc=0
timeout 60 mpirun --allow-run-as-root --oversubscribe -np 1 "$TT" "${one[@]}" : -np 1 "$TT" "${one[@]}" --max-bytes 256K \
  >"$WORK/differ.log" 2>&1 || rc=$?
expect_eq "$rc" 2 "ranks with different options: exit"
expect_eq "$(grep -c "^teetrain: error: rank 1's configuration differs from rank 0's .*start every rank with the same flags" \
  "$WORK/differ.log")" 2 "ranks with different options: one line on each rank"
finish
