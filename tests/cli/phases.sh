#!/usr/bin/env bash
# The run report adds up and counts right: at P = 2 the training thread's phases account
# for the measured step time, and the ring's seal/open counters follow docs/design.md §5's arithmetic:
# per rank and bucket, scatter-reduce P-1 seals and P-1 opens; all-gather P-1 seals per hop (cc) or
# 1 seal by the owner (forward-ciphertext all-gather), P-1 opens. --segment-kb larger than any chunk
# makes every chunk one message. Also: --trace writes a Perfetto/Chrome trace with comm lanes.
# The runs of each P are the lines of one `mpirun -np P teetrain runs PLAN` job (the same code as
# `train`, each run with its own summary and trace, without a process start-up, MPI_Init and exit per
# run: most of a small run's wall time); the checks then read their summaries and traces.
source "$(dirname "$0")/lib.sh" "$@"
PY=$(command -v python3 || true)
if [[ -z $PY ]]; then echo "FAIL: python3 is needed (scripts/install-deps.sh installs it)"; exit 1; fi
make_corpus
provision_trust
steps=40  # enough timed steps that a few ms of skew between ranks (3 ranks on 2 cores) stays under 5%
plan_line() {  # plan_line PLAN args...: one run (the arguments of its `train`) of PLAN
  local plan=$1
  shift
  echo "$*" >>"$WORK/$plan.txt"
}
tiny() {  # tiny PLAN tee summary [extra args]: gpt2-tiny, every chunk one message
  local plan=$1 tee=$2 out=$3
  shift 3
  plan_line "$plan" --model gpt2-tiny --data "$WORK/data/tiny" --steps $steps --batch 4 --seq 32 --no-progress \
    --val-batches 0 --tee "$tee" --allow-plain-data --bucket-mb 0.05 --segment-kb 4096 --timing-warmup 2 "${TRUST[@]}" \
    --summary "$out" "$@"
}
run_plan() {  # run_plan P PLAN
  mpirun --oversubscribe -np "$1" "$TT" runs "$WORK/$2.txt" >"$WORK/$2.log" 2>&1 ||
    { echo "FAIL: plan $2 (P = $1)"; tail -5 "$WORK/$2.log"; fails=$((fails + 1)); }
}
check() {  # check summary P seals_per_bucket opens_per_bucket label
  local msg
  msg=$("$PY" - "$@" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); P, seals, opens, label = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
errs = []
steps, buckets = s["steps"], s["buckets"]
c = s["counters"]
for r in range(P):
    if c["buckets"][r] != steps * buckets: errs.append(f"rank {r}: {c['buckets'][r]} buckets, expected {steps}x{buckets}")
    if c["ring_sealed"][r] != steps * buckets * seals: errs.append(f"rank {r}: ring_sealed {c['ring_sealed'][r]}, expected {steps}x{buckets}x{seals}")
    if c["ring_opened"][r] != steps * buckets * opens: errs.append(f"rank {r}: ring_opened {c['ring_opened'][r]}, expected {steps}x{buckets}x{opens}")
acc = s["phases_accounted_s"] / s["step_s_mean"]
# docs/reproducing.md asks for 5%; shared CI machines get a little slack below (time the report cannot place:
# the loss average, the progress line), none above (phases must never exceed the step).
if not 0.90 <= acc <= 1.05: errs.append(f"phases account for {acc:.3f} of the step")
print(f"{label}: accounted {acc:.3f}; " + ("; ".join(errs) if errs else "ok"))
sys.exit(1 if errs else 0)
PY
  ) && { passes=$((passes + 1)); echo "$msg"; } || { echo "FAIL: $msg"; fails=$((fails + 1)); }
}
# The runs, by P. Real compute: gpt2-mini at batch 4, seq 64, P = 2 and 4, in every TEE mode, with the
# default validation and a trace (the checks below say why).
mini() {  # mini PLAN P tee
  plan_line "$1" --model gpt2-mini --data "$WORK/data/tiny" --steps 4 --batch 4 --seq 64 --no-progress --tee "$3" \
    --allow-plain-data "${TRUST[@]}" --summary "$WORK/real_$3$2.json" --trace "$WORK/real_$3$2.trace.json"
}
emu=(--compute emulate --gpu h100 --gpu-tflops 0.01 --link emulate)
tiny p2 cc "$WORK/cc2.json"
plan_line p2 --model gpt2-mini --data "$WORK/data/tiny" --steps 4 --batch 4 --seq 64 --no-progress --val-batches 0 \
  --bucket-mb 0.25 --overlap on --trace "$WORK/mini.json"
for tee in off cc fast; do mini p2 2 $tee; mini p4 4 $tee; done
tiny p2 off "$WORK/emu_off.json" "${emu[@]}"
tiny p2 cc "$WORK/emu_cc.json" "${emu[@]}"
tiny p2 cc "$WORK/emu_cct.json" "${emu[@]}" --cc-transfer-us 2000
tiny p2 fast "$WORK/emu_fastt.json" "${emu[@]}" --cc-transfer-us 2000
tiny p3 cc "$WORK/cc3.json"
tiny p3 fast "$WORK/fast3.json" --trace "$WORK/trace.json"
run_plan 2 p2
run_plan 3 p3
run_plan 4 p4
check "$WORK/cc2.json" 2 2 2 "cc P=2"
check "$WORK/cc3.json" 3 4 4 "cc P=3 (per-hop all-gather)"
check "$WORK/fast3.json" 3 3 4 "fast P=3 (forward-ciphertext all-gather)"
# The trace: valid JSON, one process per rank, allreduce events on the comm lane and seal/open on crypto.
if "$PY" - "$WORK/trace.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"] if isinstance(t, dict) else t
pids = {e["pid"] for e in ev if e.get("ph") == "X"}
names = {e["name"] for e in ev if e.get("ph") == "X"}
assert pids == {0, 1, 2}, pids
assert "allreduce" in names and "backward" in names and "seal" in names, names
PY
then passes=$((passes + 1)); else echo "FAIL: trace"; fails=$((fails + 1)); fi
# gpt2-mini at P = 2 with overlap on: on each rank some bucket's all-reduce (comm lane) runs while
# backward (compute lane) is still running — the overlap the trace is there to show.
if "$PY" - "$WORK/mini.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
for pid in (0, 1):
    x = [e for e in ev if e.get("ph") == "X" and e["pid"] == pid]
    bwd = [(e["ts"], e["ts"] + e["dur"]) for e in x if e["name"] == "backward"]
    ar = [(e["ts"], e["ts"] + e["dur"]) for e in x if e["name"] == "allreduce"]
    assert bwd and ar, f"rank {pid}: no backward or allreduce events"
    assert any(a0 < b1 and b0 < a1 for a0, a1 in ar for b0, b1 in bwd), f"rank {pid}: no all-reduce overlaps backward"
PY
then passes=$((passes + 1)); else echo "FAIL: overlap in the trace"; fails=$((fails + 1)); fi
# Real compute: gpt2-mini at batch 4, seq 64, P = 2 and 4, 4 steps with the default validation (8
# batches at the end, 0.2-0.7 of one of these 4 steps' time, measured) in every TEE mode. The training
# thread's phases, validation and the zeroing of the gradients included, account for at least 97% of
# the measured step (the bar; measured 1.000-1.003 at P = 2 and 4 with 8 steps, 0.998-1.001 with 4 in
# one plan at load averages of 20 to 56); before validation had a phase they accounted for ~0.80.
# Above, phases must never exceed the step.
for P in 2 4; do
  for tee in off cc fast; do
    if msg=$("$PY" - "$WORK/real_$tee$P.json" "$WORK/real_$tee$P.trace.json" "$P" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
ev = json.load(open(sys.argv[2]))["traceEvents"]
acc = s["phases_accounted_s"] / s["step_s_mean"]
val = s["phases"]["validation"]["mean"] / s["step_s_mean"]
print(f"accounted {acc:.3f} (validation {val:.3f})")
assert 0.97 <= acc <= 1.05, f"phases account for {acc:.3f} of the step"
assert val > 0.02, f"validation is {val:.3f} of the step"
# The new phases are on the compute lane of every rank's trace, like the others.
for pid in range(int(sys.argv[3])):
    names = {e["name"] for e in ev if e.get("ph") == "X" and e["pid"] == pid and e["tid"] == 0}
    assert {"validation", "bookkeeping", "zero grad", "optimizer"} <= names, (pid, names)
PY
    ); then passes=$((passes + 1)); echo "gpt2-mini P=$P tee=$tee: $msg"; else echo "FAIL: gpt2-mini P=$P tee=$tee: $msg"; fails=$((fails + 1)); fi
  done
done
# --link emulate (emulated GPUs): the same message arithmetic and phase accounting as real links, the
# summary names the emulated transport; in virtual time cc's messages cross it too, as sealed tokens.
# Refused without synthetic gradients. --gpu-tflops 0.01 stretches gpt2-tiny's emulated step from ~40 us (where 5% is
# 2 us of scheduling noise) to ~20 ms.
check "$WORK/emu_off.json" 2 0 0 "off P=2 --link emulate"
check "$WORK/emu_cc.json" 2 2 2 "cc P=2 --link emulate"
if "$PY" - "$WORK/emu_off.json" "$WORK/emu_cc.json" <<'PY'
import json, sys
off, cc = (json.load(open(p)) for p in sys.argv[1:3])
assert off["gradient_path"].startswith("ring over emulated-link(450 GB/s)"), off["gradient_path"]
assert "emulated-link" in cc["gradient_path"] and "sealed tokens" in cc["gradient_path"], cc["gradient_path"]
# Every message is still counted with its full length.
assert all(b > 0 for b in off["counters"]["bytes_sent"]), off["counters"]["bytes_sent"]
# --timing-warmup 2: two of the steps are left out of the timing, none out of the counters.
assert off["timed_steps"] == off["steps"] - 2, (off["timed_steps"], off["steps"])
PY
then passes=$((passes + 1)); else echo "FAIL: --link emulate summaries"; fails=$((fails + 1)); fi
expect_exit 2 "add --compute emulate" -- "$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --steps 1 --link emulate
# --cc-transfer-us: the same counters, the path names the cost, and each step waits at least one
# toll per ring seal and per ring open (stage phase); fast seals on the (emulated) GPU, so the toll of
# cc's host crossings does not apply: its ciphertext crosses H100 CC's bounce buffers at a host core's
# AES pass per byte and no toll (Note [CC hardware costs]).
check "$WORK/emu_cct.json" 2 2 2 "cc P=2 --cc-transfer-us 2000"
if "$PY" - "$WORK/emu_cct.json" "$WORK/emu_fastt.json" <<'PY'
import json, sys
cc, fast = (json.load(open(p)) for p in sys.argv[1:3])
assert cc["gradient_path"].endswith("cc transfers (2000 us each)"), cc["gradient_path"]
assert "cc transfers (0.0 us each + 0.298/0.298 ns/B)" in fast["gradient_path"], fast["gradient_path"]
# The summary records what was applied (the scaling model reads it): the toll for cc, none for fast.
assert cc["cc_transfer_us"] == 2000 and fast["cc_transfer_us"] == 0, (cc["cc_transfer_us"], fast["cc_transfer_us"])
crossings = cc["buckets"] * (2 + 2)  # per step and rank: 2 seals + 2 opens per bucket at P = 2
assert cc["phases"]["stage"]["mean"] >= 0.95 * crossings * 2e-3, (cc["phases"]["stage"], crossings)
assert cc["step_s_mean"] >= 0.95 * crossings * 2e-3, (cc["step_s_mean"], crossings)
assert 0 < fast["phases"]["stage"]["max"] < 0.05 * crossings * 2e-3, fast["phases"]["stage"]
PY
then passes=$((passes + 1)); else echo "FAIL: --cc-transfer-us summaries"; fails=$((fails + 1)); fi
expect_exit 2 "add --compute emulate" -- "$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --steps 1 --cc-transfer-us 5
expect_exit 2 "leaves no step to time" -- "$TT" train --model gpt2-tiny --data "$WORK/data/tiny" --steps 3 --timing-warmup 3
finish
