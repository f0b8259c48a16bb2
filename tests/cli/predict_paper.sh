#!/usr/bin/env bash
# tools/predict_paper.py (docs/reproducing.md, "Predicting the paper"): the fit of the ISPASS 2025
# artifact's H100 CC copies, and the prediction of Lee et al.'s GPT-2-XL figures from a committed
# calibration run (grid #10's gpt2-xl TEE-off step on an emulated H100) — exact arithmetic, so the
# numbers are checked to the printed digit. A run that is not a one-rank TEE-off emulated run is refused.
source "$(dirname "$0")/lib.sh" "$@"
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
PRED="$(dirname "$0")/../../tools/predict_paper.py"
FIX="$(dirname "$0")/../fixtures/predict/calibration-gpt2-xl-P1-off.json"

out=$("$PY" "$PRED" --summary "$FIX" --json "$WORK/p.json") || { echo "FAIL: predict_paper.py"; fails=$((fails + 1)); }
for want in "pin_h2d   off   2.00 us + B/ 43.49 GB/s   cc  22.87 us + B/2.880 GB/s" \
  "page_d2h  off  12.05 us + B/ 11.48 GB/s   cc  49.06 us + B/2.519 GB/s   added  37.0 us" \
  "| GPT-2-XL, 4 GPUs, 25 MB buckets | 41.6x | 16.6x | -60% |" \
  "| same, larger buckets (one bucket) | 3.03x | 16.9x | +459% |" \
  "| synchronous copies | + bounce bytes | 1 | 1 | 32.4x | 32.8x |"; do
  grep -qF -- "$want" <<<"$out" && passes=$((passes + 1)) || { echo "FAIL: missing: $want"; fails=$((fails + 1)); }
done
"$PY" -c "import json,sys; j=json.load(open(sys.argv[1])); assert len(j['scenarios']) == 14 and \
abs(j['copy_costs']['pin_d2h']['cc'][0] - 21.80) < 0.01" "$WORK/p.json" && passes=$((passes + 1)) ||
  { echo "FAIL: prediction JSON"; fails=$((fails + 1)); }
# Overrides: a step 4x longer (a 4x larger batch) makes the sealing relatively cheaper:
# (1.396 - 0.792 + 870 hops x 70.4 us + 9.34 GB x 2 / 3.36 GB/s) / 1.396 = 4.5x.
out4=$("$PY" "$PRED" --summary "$FIX" --t-off 1.396 --t-backward 0.792)
grep -qF "| GPT-2-XL, 4 GPUs, 25 MB buckets | 41.6x | 4.5x | -89% |" <<<"$out4" && passes=$((passes + 1)) ||
  { echo "FAIL: --t-off override: $(grep 25\ MB <<<"$out4")"; fails=$((fails + 1)); }
# Not a calibration run: refused with a message.
"$PY" -c "import json,sys; j=json.load(open(sys.argv[1])); j['world_size']=4; json.dump(j, open(sys.argv[2],'w'))" \
  "$FIX" "$WORK/p4.json"
rc=0
msg=$("$PY" "$PRED" --summary "$WORK/p4.json" 2>&1) || rc=$?
[[ $rc -ne 0 && "$msg" == *"not a one-rank, TEE-off, emulated run"* ]] && passes=$((passes + 1)) ||
  { echo "FAIL: a 4-rank summary was not refused (rc $rc): $msg"; fails=$((fails + 1)); }
rc=0
msg=$("$PY" "$PRED" 2>&1) || rc=$?
[[ $rc -ne 0 && "$msg" == *"give --summary"* ]] && passes=$((passes + 1)) ||
  { echo "FAIL: no input was not refused (rc $rc): $msg"; fails=$((fails + 1)); }
finish
