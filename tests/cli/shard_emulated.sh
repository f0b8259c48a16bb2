#!/usr/bin/env bash
# --shard optimizer|gradients on emulated GPUs in virtual time (docs/design.md "Sharded data parallelism"):
#  - every reduce-scatter, all-gather and gradient-norm message is sealed and costed like the
#    all-reduce's: a step's collective messages are DDP's plus the norm's P - 1 (cc re-seals every hop);
#  - the optimizer is charged for the shard only;
#  - the same numbers on every run (virtual time);
#  - the study (tools/reproduce.py --only sharding) at a tiny size writes its section, ZeRO-3 included,
#    with the bucket sweep and its figure, and leaves out a model whose rank the emulated GPU does not hold;
#  - its cc rows of DDP, ZeRO-1 and ZeRO-3 under the named scenarios (hardware, and paper-fit labelled as
#    derived from the paper's results, its cost solved from gpt2's TEE-off run at P = 4), a table and a
#    verdict each; a scenario that changes more than cc's costs is refused with exit 2.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust
PY=$(command -v python3)
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
export OMP_WAIT_POLICY=passive
emu=(train --model gpt2-tiny --data "$WORK/data/tiny" --batch 2 --seq 32 --steps 3 --timing-warmup 1
     --val-batches 0 --no-progress --compute emulate --gpu h100 --bucket-mb 0.01 --allow-plain-data "${TRUST[@]}")
run() { # run NAME NP args...: summary in $WORK/NAME.json, stdout and stderr in $WORK/NAME.log
  local name="$1" np="$2"; shift 2
  if mpirun --allow-run-as-root --oversubscribe -np "$np" "$TT" "${emu[@]}" --summary "$WORK/$name.json" "$@" \
       >"$WORK/$name.log" 2>&1; then
    passes=$((passes + 1))
  else
    echo "FAIL: run $name"; tail -8 "$WORK/$name.log"; fails=$((fails + 1))
  fi
}
hw=(--tee cc --cc-hardware h100-pageable)
run ddp-cc 3 "${hw[@]}"
run zero1-cc 3 "${hw[@]}" --shard optimizer
run zero1-cc-again 3 "${hw[@]}" --shard optimizer
run zero2-cc 3 "${hw[@]}" --shard gradients
run ddp-off 2 --tee off
run zero1-off 2 --tee off --shard optimizer
check "emulated sharding: messages, costs and determinism" "$PY" - "$WORK" <<'PY'
import json, sys
r = {n: json.load(open(f"{sys.argv[1]}/{n}.json"))
     for n in ("ddp-cc", "zero1-cc", "zero1-cc-again", "zero2-cc", "ddp-off", "zero1-off")}
ring = lambda n: r[n]["counters"]["ring_sealed"][0]
phase = lambda n, p: r[n]["phases"][p]["mean"]
steps, buckets = r["ddp-cc"]["steps"], r["ddp-cc"]["buckets"]
# cc at P = 3: the all-reduce seals 2 (P - 1) messages per bucket; the two halves as many, plus the
# gradient norm's parts (one all-gather of P - 1 messages) per step.
assert ring("ddp-cc") == steps * buckets * 4, (ring("ddp-cc"), steps, buckets)
for z in ("zero1-cc", "zero2-cc"):
    assert ring(z) == ring("ddp-cc") + steps * 2, (z, ring(z), ring("ddp-cc"))
assert (r["zero1-cc"]["shard"], r["zero2-cc"]["shard"]) == ("optimizer", "gradients")
# The parameters' all-gather after the optimizer is exposed; its crossings are charged.
assert phase("zero1-cc", "comm_exposed") > phase("ddp-cc", "comm_exposed"), "all-gather not charged"
assert phase("zero1-cc", "stage") > phase("ddp-cc", "stage"), "its CC crossings not charged"
# TEE off: AdamW over half the parameters (and the norm's parts over the link) costs less than DDP's whole.
assert phase("zero1-off", "optimizer") < phase("ddp-off", "optimizer"), (
    phase("zero1-off", "optimizer"), phase("ddp-off", "optimizer"))
# Virtual time: the same numbers on every run.
a, b = r["zero1-cc"], r["zero1-cc-again"]
assert a["step_s_mean"] == b["step_s_mean"] and a["phases"] == b["phases"] and a["counters"] == b["counters"]
PY

# The study, tiny: DDP and ZeRO-1/2/3 in off, cc and fast, and a two-point bucket sweep (the grid's
# 25 MiB and 0.01 MiB) of DDP, ZeRO-1 and ZeRO-3 in off and cc; llama-3-70b fits no H100 at P = 2 and is left out.
"$PY" "$REPO/tools/reproduce.py" --bin "$TT" --data "$WORK/data/tiny" --only sharding \
  --shard-models gpt2-tiny,llama-3-70b --shard-ranks 2 --shard-sweep gpt2-tiny:2 --shard-buckets 25,0.01 \
  --scenario-model gpt2 --steps 1 --emu-batch 2 --emu-seq 32 --out "$WORK/study" >"$WORK/study.log" 2>&1 ||
  { echo "FAIL: reproduce.py --only sharding"; tail -20 "$WORK/study.log"; fails=$((fails + 1)); }
check "study: the sharding section" grep -q "^## Sharded data parallelism under a TEE" "$WORK/study/report.md"
check "study: the bucket sweep" grep -q "^### Bucket (unit) sweep: gpt2-tiny, P = 2, cc" "$WORK/study/report.md"
check "study: llama-3-70b not run, with its size" grep -qE "Not run, .*llama-3-70b P=2 DDP \([0-9.]+ GiB\)" \
  "$WORK/study/report.md"
if "$PY" -c "import matplotlib" 2>/dev/null; then
  check "study: the figure" test -s "$WORK/study/fig_sharding.png"
fi
check "study: ZeRO-2 under fast seals 3 collective messages a step at P = 2" \
  grep -qE "^\| gpt2-tiny \| 2 \| fast \| ZeRO-2 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+x \| [0-9.]+x \| 3 \|" "$WORK/study/report.md"
# ZeRO-3 at 0.01 MiB buckets (7): a step's reduce-scatter (7), norm (1), pinned gathers (2), the blocks'
# forward (5) and backward (2) gathers, one message each at P = 2 under cc (cli_shard_zero3_emulated).
check "study: ZeRO-3 in the bucket sweep" \
  grep -qE "^\| 0.01 \| ZeRO-3 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+x \| 17 \|" "$WORK/study/report.md"
check "study: the findings" grep -qE "^\*\*Findings\*\*: gpt2-tiny P=2 cc: ZeRO-1 [0-9.]+x DDP's step with \+1 messages" \
  "$WORK/study/report.md"
# The named scenarios: a table each, paper-fit's cost labelled as the paper's wherever it prints.
scenario() { # scenario NAME: the report's part under that scenario
  awk -v h="#### Under the scenario $1 " 'index($0, h) == 1 {on = 1; print; next} /^#/ {on = 0} on' \
    "$WORK/study/report.md"
}
check "study: the scenarios' part" grep -q "^### Under the named scenarios" "$WORK/study/report.md"
for name in hardware paper-fit; do
  check "study: $name's DDP, ZeRO-1 and ZeRO-3 row" grep -qE \
    "^\| gpt2-tiny \| 2 \| [0-9.]+ \| [0-9.]+x \| \*\*[0-9.]+x\*\* \| [0-9.]+x \| [0-9.]+x \|" <(scenario "$name")
  check "study: $name's verdict" grep -qE "^The finding (holds|DOES NOT HOLD) under $name: ZeRO-3 costs" \
    <(scenario "$name")
done
check "study: paper-fit labelled as derived from the paper" grep -qE \
  "^#### Under the scenario paper-fit \(PAPER-FITTED, DERIVED FROM THE PAPER'S RESULTS: [0-9.]+ ms per crossing" \
  "$WORK/study/report.md"
check "study: paper-fit's runs carry no CC hardware" bash -c \
  "grep -- '--shard params --cc-transfer-us' '$WORK'/study/plan-*-sharding.txt | grep -v -- --cc-hardware | grep -q ."
# Above 32 ranks the study folds the ring onto 8 virtual ranks (Note [Sharded fold]): P = 64, every stage,
# off and cc (a fold cannot forward fast's all-gather), and the section says so.
"$PY" "$REPO/tools/reproduce.py" --bin "$TT" --data "$WORK/data/tiny" --only sharding --shard-models gpt2-tiny \
  --shard-ranks 64 --shard-sweep "" --shard-scenarios "" --steps 1 --emu-batch 2 --emu-seq 32 \
  --out "$WORK/fold" >"$WORK/fold.log" 2>&1 ||
  { echo "FAIL: reproduce.py --only sharding --shard-ranks 64"; tail -20 "$WORK/fold.log"; fails=$((fails + 1)); }
check "folded study: every run a fold of 8" test "$(grep -c -- '--ranks-per-process 8 --model-ranks 64' \
  "$WORK"/fold/plan-*-sharding.txt)" -eq 8
check "folded study: ZeRO-3 under cc at P = 64" \
  grep -qE "^\| gpt2-tiny \| 64 \| cc \| ZeRO-3 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+x \| [0-9.]+x \|" "$WORK/fold/report.md"
check "folded study: no fast row" bash -c "! grep -qE '^\| gpt2-tiny \| 64 \| fast \|' '$WORK/fold/report.md'"
check "folded study: the section names the fold" grep -q "^P = 64: a folded ring of 8 virtual ranks" "$WORK/fold/report.md"
rc=0
"$PY" "$REPO/tools/reproduce.py" --bin "$TT" --only sharding --shard-scenarios bf16-batch8 --dry-run \
  --out "$WORK/bad" >"$WORK/bad.log" 2>&1 || rc=$?
check "study: a scenario that changes more than cc refused (exit 2)" test "$rc" -eq 2
check "study: ... naming it and the ones to use" grep -q \
  "shard-scenarios: bf16-batch8 is not a scenario that changes cc's costs alone; use some of hardware," "$WORK/bad.log"
finish
