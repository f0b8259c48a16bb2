#!/usr/bin/env bash
# The PyTorch-class baseline (Note [Fused attention baseline], core/emulated/emulated_gpu.h):
# - tools/fit_fused_attention.py reproduces the emulator's constant from PyTorch's measured steps
#   (tests/fixtures/pytorch_attention_gpu), and its held-out H100 rows predict what the fused step saves
#   within 10%; a fixture that is not one exits 2 in one line;
# - `bench emulated-step --gpu-baseline fused-attention` charges one fused kernel instead of the scores
#   and batched GEMMs, and says which baseline it costed;
# - an emulated `train` run under it is faster, holds no (B, NH, T, T) tensors (less memory per rank),
#   and its banner and summary name the baseline; a bad efficiency is refused with exit 2.
source "$(dirname "$0")/lib.sh" "$@"
PY=$(command -v python3)
"$PY" tools/fit_fused_attention.py --bin "$TT" --check >"$WORK/fit.txt" 2>&1 \
  && passes=$((passes + 1)) || { echo "FAIL: the fit does not reproduce the emulator's constant"; cat "$WORK/fit.txt"; fails=$((fails + 1)); }
if "$PY" - "$WORK/fit.txt" <<'PY'
import re, sys
rows = [l for l in open(sys.argv[1]) if "| held_out |" in l]
assert len(rows) == 2, rows
for l in rows:
    err = float(re.findall(r"\| ([+-][0-9.]+)% \|", l)[0])
    assert abs(err) <= 10, l
PY
then passes=$((passes + 1)); else echo "FAIL: the held-out savings within 10%"; cat "$WORK/fit.txt"; fails=$((fails + 1)); fi
echo '{"format": "something else"}' >"$WORK/bad.json"
expect_exit 2 "bad.json: not a teetrain-pytorch-attention/1 fixture" -- \
  "$PY" tools/fit_fused_attention.py --bin "$TT" --fixture "$WORK/bad.json"

step=(bench emulated-step --model gpt2 --batch 8 --seq 1024 --gpu h100)
"$TT" "${step[@]}" --json "$WORK/ours.json" >/dev/null
"$TT" "${step[@]}" --gpu-baseline fused-attention --json "$WORK/fused.json" >/dev/null
if "$PY" - "$WORK/ours.json" "$WORK/fused.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for p in ("forward_work", "backward_work"):
    assert a[p]["scores_s"] > 0 and a[p]["fused_attention_s"] == 0, a[p]
    assert b[p]["scores_s"] == 0 and b[p]["attention_s"] == 0 and b[p]["fused_attention_s"] > 0, b[p]
    assert b[p]["rows_s"] == a[p]["rows_s"] and b[p]["matmul_s"] == a[p]["matmul_s"], (a[p], b[p])
assert b["step_s"] < a["step_s"], (a["step_s"], b["step_s"])
assert a["constants"]["baseline"] == "teetrain" and b["constants"]["baseline"] == "fused-attention"
assert "baseline fused-attention" in b["backend"] and "baseline" not in a["backend"], b["backend"]
PY
then passes=$((passes + 1)); else echo "FAIL: bench emulated-step's fused baseline"; fails=$((fails + 1)); fi

make_corpus
emu=(train --model gpt2 --data "$WORK/data/tiny" --batch 4 --seq 256 --steps 2 --timing-warmup 1 --val-batches 0
     --no-progress --compute emulate --gpu h100)
run() { # NAME args...
  local name="$1"; shift
  if mpirun --allow-run-as-root -np 2 "$TT" "${emu[@]}" --summary "$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1; then
    passes=$((passes + 1))
  else
    echo "FAIL: run $name"; tail -5 "$WORK/$name.log"; fails=$((fails + 1))
  fi
}
run teetrain
run fused --gpu-baseline fused-attention
grep -q "baseline fused-attention (PyTorch-class" "$WORK/fused.log" && passes=$((passes + 1)) \
  || { echo "FAIL: the banner does not name the baseline"; grep -i "emulated" "$WORK/fused.log"; fails=$((fails + 1)); }
if "$PY" - "$WORK/teetrain.json" "$WORK/fused.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert b["step_s_mean"] < a["step_s_mean"], (a["step_s_mean"], b["step_s_mean"])
assert b["memory_gib_per_rank"] < a["memory_gib_per_rank"], (a["memory_gib_per_rank"], b["memory_gib_per_rank"])
assert b["config"]["gpu"]["baseline"] == "fused-attention" and "baseline" not in a["config"]["gpu"], b["config"]["gpu"]
PY
then passes=$((passes + 1)); else echo "FAIL: the fused baseline's run"; fails=$((fails + 1)); fi
# `teetrain models` counts the same: gpt2-xl at 4 x 1024 holds 62.95 GiB per rank with teetrain's kernels,
# 43.81 GiB with fused attention (its 49 (B, NH, T, T) tensors, 19.14 GiB, not kept).
total() { "$TT" models --model gpt2-xl --batch 4 --seq 1024 "$@" | awk '$1 == "gpt2-xl" {print $(NF - 5)}'; }
expect_eq "$(total)" "62.95" "models: gpt2-xl at 4 x 1024 with teetrain's kernels"
expect_eq "$(total --gpu-baseline fused-attention)" "43.81" "models: the same with fused attention"

# The scenarios under the PyTorch-class baseline (docs/reproducing.md's command, on a small model): the
# report says which TEE-off step its emulated runs model.
if "$PY" tools/reproduce.py --only scenarios --gpu-baseline fused-attention --steps 1 --scenario-model gpt2-mini \
    --emu-batch 1 --emu-seq 32 --bin "$TT" --data "$WORK/data/tiny" --out "$WORK/scen" >"$WORK/scen.log" 2>&1 \
  && grep -q "with a PyTorch-class TEE-off step (\`--gpu-baseline fused-attention\`" "$WORK/scen/report.md" \
  && grep -qE "^\| hardware \|.*\| no \| [0-9.]+x \|" "$WORK/scen/report.md"; then
  passes=$((passes + 1))
else
  echo "FAIL: reproduce.py --only scenarios --gpu-baseline fused-attention"; tail -5 "$WORK/scen.log"; fails=$((fails + 1))
fi
# And the topology study (tools/topology_study.py) on 2 nodes of 8 small GPUs, one platform.
if "$PY" tools/topology_study.py --bin "$TT" --out "$WORK/topo" --data "$WORK/data/tiny" --model gpt2-mini --ranks 16 \
    --batch 1 --seq 32 --platforms h100-pageable --gpu-baseline fused-attention >"$WORK/topo.log" 2>&1 \
  && grep -q "TEE-off step: PyTorch-class, fused attention" "$WORK/topo/topology.md" \
  && grep -qE "^\| 16 \| cc \| h100-pageable \| hier \|" "$WORK/topo/topology.md"; then
  passes=$((passes + 1))
else
  echo "FAIL: topology_study.py --gpu-baseline fused-attention"; tail -5 "$WORK/topo.log"; fails=$((fails + 1))
fi
expect_exit 2 "fused-kernel efficiency in \(0, 1\] \(--gpu-fused-efficiency\)" -- "$TT" "${emu[@]}" \
  --gpu-baseline fused-attention --gpu-fused-efficiency 1.5
finish
