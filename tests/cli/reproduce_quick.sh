#!/usr/bin/env bash
# Smoke test of tools/reproduce.py: a 2-step slice of the quick grid (real-compute ranks group, P = 1
# and 2 only via --only ranks) produces runs.jsonl, runs.csv and report.md; a failing run makes the
# script exit non-zero and print the failing command. Usage: reproduce_quick.sh path/to/teetrain
source "$(dirname "$0")/lib.sh" "$@"
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
REPRO="$(dirname "$0")/../../tools/reproduce.py"
make_corpus

out="$WORK/repro"
if "$PY" "$REPRO" --quick --only ranks --no-emulate --steps 2 --batch 2 --seq 32 --bin "$TT" \
    --data "$WORK/data/tiny" --out "$out" >"$WORK/log" 2>&1; then
  n=$(wc -l <"$out/runs.jsonl")
  if [[ $n -ne 9 ]]; then echo "FAIL: runs.jsonl has $n runs, expected 9"; fails=$((fails + 1)); else passes=$((passes + 1)); fi
  for f in runs.csv report.md; do
    if [[ -s $out/$f ]]; then passes=$((passes + 1)); else echo "FAIL: no $f"; fails=$((fails + 1)); fi
  done
  if grep -q "Slowdown vs ranks" "$out/report.md" && grep -q "8.68x" "$out/report.md"; then
    passes=$((passes + 1))
  else
    echo "FAIL: report.md lacks the ranks table or the paper's figures"; fails=$((fails + 1))
  fi
else
  echo "FAIL: reproduce.py exited non-zero"; tail -30 "$WORK/log"; fails=$((fails + 1))
fi

# The named scenarios (tools/scenarios.py) on a small model: every scenario's row, the range over the
# independent ones, the paper-fit labelled as derived, and the inverse analysis.
scen="$WORK/scen"
if "$PY" "$REPRO" --only scenarios --steps 1 --scenario-model gpt2-mini --emu-batch 1 --emu-seq 32 --bin "$TT" \
    --data "$WORK/data/tiny" --out "$scen" >"$WORK/scen.log" 2>&1; then
  if "$PY" - "$scen/report.md" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
sec = t[t.index("## Scenarios"):]
rows = re.findall(r"^\| (hardware|bounce-reencrypt|host-threads|bf16-batch8|paper-fit) \|.*\| (yes|no) \| ([0-9.]+)x \| ([0-9.]+)x \| ([0-9.]+)x / ([0-9.]+)x \|$", sec, re.M)
assert [r[0] for r in rows] == ["hardware", "bounce-reencrypt", "host-threads", "bf16-batch8", "paper-fit"], rows
assert [r[1] for r in rows] == ["no", "no", "no", "no", "yes"], rows
hw, bounce = float(rows[0][2]), float(rows[1][2])
assert bounce > hw, (hw, bounce)  # the bytes encrypted twice cost more
# The closed form (tools/predict_paper.py) computes the unpipelined scenarios nearly as the emulator
# does: within 1% at gpt2-xl (docs/reproducing.md); on this small model the links and adds it leaves
# out weigh more, and so does CC's dearer launch of every op (5.05 us), which it leaves out too: a
# 32-token step's compute is mostly kernel launches at 11.5 us each (Note [Transformer kernel model]),
# hence 15% (bf16-batch8 at batch 8 is 12% apart; 9% when each op cost 40 us).
for name, _, e25, e1, c25, c1 in rows:
    if name != "host-threads":
        assert abs(float(c25) / float(e25) - 1) < 0.15 and abs(float(c1) / float(e1) - 1) < 0.15, (name, e25, c25)
assert "Over the independent scenarios: cc" in sec and "What the paper's pair implies" in sec
mem = re.search(r"Memory per GPU of the TEE-off runs.*bf16-batch8 ([0-9.]+) GiB at batch 8 \((fits|DOES NOT FIT); the largest batch that fits: (\d+)\)", sec)
assert mem and int(mem.group(3)) >= 8, sec  # a small model fits many times over
PY
  then passes=$((passes + 1)); else echo "FAIL: the scenarios section"; fails=$((fails + 1)); fi
else
  echo "FAIL: reproduce.py --only scenarios exited non-zero"; tail -30 "$WORK/scen.log"; fails=$((fails + 1))
fi

# The collectives study (tools/algo_study.py) on a small model: ring, rhd and auto at P = 2 and 4, at the
# hardware's per-crossing cost and at 8 ms; auto leaves the ring where crossings are dear, and removes
# part of cc's overhead there; the figure is drawn where matplotlib is.
algo="$WORK/algo"
if "$PY" "$REPRO" --only algorithms --steps 1 --algo-model gpt2-mini --emu-batch 1 --emu-seq 32 --algo-ranks 2,4 \
    --algo-costs-us 8000 --algo-sweep-p 4 --bin "$TT" --data "$WORK/data/tiny" --out "$algo" >"$WORK/algo.log" 2>&1; then
  if "$PY" - "$algo/report.md" "$algo" <<'PY'
import os, re, sys
t = open(sys.argv[1]).read()
sec = t[t.index("## Collectives under a TEE"):]
rows = re.findall(r"^\| (\d+) \| ([0-9.]+ (?:us|ms)) \| ([0-9.]+)x \| ([0-9.]+)x \| ([0-9.]+)x \| ([^|]+) \| ([0-9]+)% \|$", sec, re.M)
pts = {(r[0], r[1]): r for r in rows}
assert {("2", "35.2 us"), ("4", "35.2 us"), ("2", "8 ms"), ("4", "8 ms")} <= set(pts), rows
_, _, ring, rhd, auto, picks, share = pts[("4", "8 ms")]
assert float(auto) < float(ring) and "ring" not in picks and int(share) > 10, pts[("4", "8 ms")]
assert float(pts[("4", "35.2 us")][2]) < float(ring)  # the dearer crossing costs more
assert "Where the ring stops being the right choice" in sec and "at 8 ms per crossing from P = " in sec, sec
have_mpl = os.system(sys.executable + " -c 'import matplotlib' 2>/dev/null") == 0
assert not have_mpl or os.path.exists(os.path.join(sys.argv[2], "fig_algorithms.png"))
PY
  then passes=$((passes + 1)); else echo "FAIL: the collectives section"; fails=$((fails + 1)); fi
else
  echo "FAIL: reproduce.py --only algorithms exited non-zero"; tail -30 "$WORK/algo.log"; fails=$((fails + 1))
fi

# --report-only runs nothing: from a grid cut short (3 of its 9 summaries gone) it rebuilds runs.jsonl
# and report.md from the 6 that are there.
cp -r "$out" "$WORK/cut"
rm -f "$WORK/cut"/runs/gpt2-mini-P4-*.json "$WORK/cut/report.md"
nlogs=$(ls "$WORK/cut/logs" | wc -l)
if "$PY" "$REPRO" --quick --only ranks --no-emulate --steps 2 --batch 2 --seq 32 --bin "$TT" --data "$WORK/data/tiny" \
    --out "$WORK/cut" --report-only >"$WORK/cutlog" 2>&1 && [[ $(wc -l <"$WORK/cut/runs.jsonl") -eq 6 ]] &&
  [[ -s $WORK/cut/report.md ]] && [[ $(ls "$WORK/cut/logs" | wc -l) -eq $nlogs ]] &&
  ! ls "$WORK"/cut/runs/gpt2-mini-P4-*.json >/dev/null 2>&1; then
  passes=$((passes + 1))
else
  echo "FAIL: --report-only"; tail -20 "$WORK/cutlog"; fails=$((fails + 1))
fi

# A failing run (batch 0 is bad input) must stop the script loudly.
rc=0
"$PY" "$REPRO" --quick --only ranks --no-emulate --steps 2 --batch 0 --bin "$TT" --data "$WORK/data/tiny" \
  --out "$WORK/bad" >"$WORK/badlog" 2>&1 || rc=$?
if [[ $rc -ne 0 ]] && grep -q "RUN FAILED" "$WORK/badlog" && grep -q "command:" "$WORK/badlog"; then
  passes=$((passes + 1))
else
  echo "FAIL: a failing run did not fail the script loudly (rc $rc)"; fails=$((fails + 1))
fi

# The emulated groups' commands (--dry-run: nothing runs): every emulated run carries the per-transfer
# cost except cc-own, which turns it off; real-compute runs (--wall-clock) never get it; a bad value is
# refused.
"$PY" "$REPRO" --quick --wall-clock --dry-run --cc-transfer-us 250 --bin "$TT" --data "$WORK/data/tiny" --out "$WORK/dry" \
  >"$WORK/dry.log" 2>&1 || true
if "$PY" - "$WORK/dry.log" <<'PY'
import sys
cmds = [l.split() for l in open(sys.argv[1]) if " train " in l]
emu = [c for c in cmds if "--compute" in c]
real = [c for c in cmds if "--compute" not in c]
assert len(emu) >= 30 and len(real) == 9, (len(emu), len(real))
def toll(c):
    return c[c.index("--cc-transfer-us") + 1] if "--cc-transfer-us" in c else None
own = [c for c in emu if any("cc-own" in x for x in c)]
assert len(own) == 5 and all(toll(c) == "0" for c in own), [toll(c) for c in own]
assert all(toll(c) == "250" for c in emu if c not in own), {toll(c) for c in emu}
assert all(toll(c) is None for c in real)
PY
then passes=$((passes + 1)); else echo "FAIL: --cc-transfer-us in the grid's commands"; fails=$((fails + 1)); fi
rc=0
"$PY" "$REPRO" --quick --dry-run --cc-transfer-us fast --bin "$TT" --data "$WORK/data/tiny" --out "$WORK/dry2" \
  >"$WORK/dry2.log" 2>&1 || rc=$?
if [[ $rc -ne 0 ]] && grep -q "give 'paper', 'ispass' or a number" "$WORK/dry2.log"; then passes=$((passes + 1)); else
  echo "FAIL: --cc-transfer-us fast was not refused (rc $rc)"; fails=$((fails + 1)); fi

# The default, 'ispass': the independent per-crossing cost (docs/reproducing.md, "Predicting the paper"),
# what H100 CC adds to a synchronous copy in the ISPASS 2025 artifact's sweeps: 35.2 us on every emulated run.
# Without --wall-clock the grid has no real-compute run.
"$PY" "$REPRO" --quick --dry-run --bin "$TT" --data "$WORK/data/tiny" --out "$WORK/dry3" \
  >"$WORK/dry3.log" 2>&1 || true
if "$PY" - "$WORK/dry3.log" <<'PY'
import sys
emu = [l.split() for l in open(sys.argv[1]) if " train " in l and "--compute" in l and "cc-own" not in l]
tolls = {c[c.index("--cc-transfer-us") + 1] for c in emu}
assert len(emu) >= 25 and tolls == {"35.2"}, (len(emu), tolls)
assert not [l for l in open(sys.argv[1]) if " train " in l and "--compute" not in l], "real-compute runs"
assert not any("/algo-" in x for c in emu for x in c)  # the collectives study is not part of the quick grid
PY
then passes=$((passes + 1)); else echo "FAIL: the default --cc-transfer-us (ispass) in the grid's commands"; tail -3 "$WORK/dry3.log"; fails=$((fails + 1)); fi

echo "reproduce_quick: $passes passed, $fails failed"
[[ $fails -eq 0 ]]
