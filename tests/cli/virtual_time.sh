#!/usr/bin/env bash
# Virtual time (docs/design.md §11): an emulated study's step time is a function of the workload and
# the modelled platform alone. bert-base on 4 emulated H100s under cc gives the same step_s_mean, to
# the last printed digit, alone and beside two CPU-burning processes; so does P = 8 on these cores
# (oversubscribed); the host model's flags (the AES-GCM rate, bounce re-encryption) and a BF16
# baseline change it as the model says; --time wall still measures, and says so.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust
PY=$(command -v python3)
"$TT" provision --out "$WORK/vendor" --devices 8 >/dev/null
MPI=(mpirun --allow-run-as-root --oversubscribe)
emu=(train --model bert-base --data "$WORK/data/tiny" --batch 4 --seq 128 --bucket-mb 25 --steps 3
     --timing-warmup 1 --val-batches 0 --no-progress --compute emulate --gpu h100 --allow-plain-data
     --tee cc "${TRUST[@]}")
step() { json_field "$1" step_s_mean; }
run() { # run NAME RANKS args...: summary in $WORK/NAME.json
  local name="$1" np="$2"; shift 2
  if "${MPI[@]}" -np "$np" "$TT" "${emu[@]}" --summary "$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1; then
    passes=$((passes + 1))
  else
    echo "FAIL: run $name"; tail -8 "$WORK/$name.log"; fails=$((fails + 1))
  fi
}
burn() { for _ in 1 2; do (while :; do :; done) & done; }
unburn() { kill $(jobs -p) 2>/dev/null; wait 2>/dev/null || true; }

run alone 4
burn
run busy 4
run p8-busy 8
unburn
run p8 8
expect_eq "$(step "$WORK/busy.json")" "$(step "$WORK/alone.json")" "P = 4: the same step time beside two CPU burners"
expect_eq "$(step "$WORK/p8-busy.json")" "$(step "$WORK/p8.json")" "P = 8 on 2 cores: the same step time, busy or not"
grep -q "VIRTUAL TIME" "$WORK/alone.log" && passes=$((passes + 1)) || { echo "FAIL: no VIRTUAL TIME banner"; fails=$((fails + 1)); }

# The modelled host: twice the AES-GCM rate makes cc's seal phase half as long.
run fast-host 4 --host-aead-gbps 6.72
if "$PY" - "$WORK/alone.json" "$WORK/fast-host.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
sa, sb = a["phases"]["seal"]["mean"], b["phases"]["seal"]["mean"]
assert sa > 0 and abs(sb * 2 - sa) <= 1e-6 * sa + 2e-9, (sa, sb)
assert b["step_s_mean"] < a["step_s_mean"], (a["step_s_mean"], b["step_s_mean"])
assert a["config"]["gpu"]["time"]["host_aead_gbps"] == 3.36, a["config"]["gpu"]["time"]
assert a["time"] == "virtual" and b["time"] == "virtual", (a["time"], b["time"])
PY
then passes=$((passes + 1)); else echo "FAIL: --host-aead-gbps halves the seal phase"; fails=$((fails + 1)); fi

# Bounce buffers encrypted a second time on the host: twice the bytes through the host's cipher. A BF16
# baseline: the step's compute shrinks, and the memory per rank counts 2-byte activations and a BF16
# weight copy. auto picks per bucket from the modelled host's costs (the scenarios and the collectives
# study of tools/reproduce.py run these flags).
run bounce 4 --bounce-reencrypt
run bf16 4 --gpu-precision bf16 --allreduce-algo auto
if "$PY" - "$WORK/alone.json" "$WORK/bounce.json" "$WORK/bf16.json" <<'PY'
import json, sys
a, b, h = (json.load(open(p)) for p in sys.argv[1:4])
sa, sb = a["phases"]["seal"]["mean"], b["phases"]["seal"]["mean"]
assert abs(sb - 2 * sa) <= 1e-6 * sa + 2e-9, (sa, sb)
assert h["phases"]["backward"]["mean"] < a["phases"]["backward"]["mean"], "bf16 computes faster"
assert h["memory_gib_per_rank"] < a["memory_gib_per_rank"], (h["memory_gib_per_rank"], a["memory_gib_per_rank"])
assert h["allreduce_selection"]["requested"] == "auto" and sum(h["allreduce_selection"]["counts"].values()) > 0
assert h["params_sha256"] == "none" and a["params_sha256"] == "none"  # placeholders are not hashed
PY
then passes=$((passes + 1)); else echo "FAIL: --bounce-reencrypt, BF16 and auto in virtual time"; fails=$((fails + 1)); fi

# Wall-clock time: measured, and the banner says so.
run wall 2 --time wall
grep -q "timed by the wall clock" "$WORK/wall.log" && passes=$((passes + 1)) || { echo "FAIL: --time wall banner"; fails=$((fails + 1)); }
expect_eq "$(json_field "$WORK/wall.json" time)" wall "--time wall: the summary says so"
# Virtual time models teetrain's own algorithms only; real compute is always measured.
expect_exit 2 "use --allreduce ring, or --time wall" -- "$TT" "${emu[@]}" --allreduce mpi
expect_exit 2 "time virtual computes an emulated run's time" -- "$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --steps 1 --time virtual
finish
