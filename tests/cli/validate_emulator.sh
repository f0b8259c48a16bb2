#!/usr/bin/env bash
# The emulator's validation (docs/reproducing.md, "Validating the emulator"): tools/validate_emulator.py's
# help, its input errors and its cheapest part (one GPU fixture, (b)); a platform profile of this machine
# (`bench host-profile`) drives an emulated run; bad profiles exit 2 with one line naming the problem.
# Usage: validate_emulator.sh path/to/teetrain
source "$(dirname "$0")/lib.sh" "$@"
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
VAL="$(dirname "$0")/../../tools/validate_emulator.py"
check "--help" "$PY" "$VAL" --help >/dev/null
"$PY" "$VAL" --parts x --bin "$TT" >"$WORK/parts.log" 2>&1 && st=0 || st=$?
check "bad --parts refused" test "$st" -ne 0
check "bad --parts named" grep -q "choose from a, b, c" "$WORK/parts.log"

# With one H200 held-out step of each family (tests/fixtures/step_h200_heldout): each is held out under
# its family, SmolLM2 a llama.
H=tests/fixtures/step_h200_heldout
if "$PY" "$VAL" --parts b --bin "$TT" --out "$WORK/val" --fixtures tests/fixtures/step_h100/gpt2-tf32.json,$H/resnet18-tf32.json,$H/resnet18-fp32.json,$H/bert-base-tf32.json,$H/smollm2-135m-tf32.json \
    >"$WORK/val.log" 2>&1; then
  check "fixture row" grep -qE "^\| b \| gpt2 tf32 on h100 .*\| pass" "$WORK/val/validation.md"
  check "a fixture row names each pass's error" "$PY" -c "import json,re,sys
r = json.load(open(sys.argv[1]))['rows'][0]
assert re.match(r'forward [+-][0-9]+%, backward [+-][0-9]+%: ', r['cause']), r['cause']" "$WORK/val/validation.json"
  for fam in "resnet tf32 on h200" "resnet fp32 on h200" "bert tf32 on h200" "llama tf32 on h200"; do
    check "held-out family line: $fam" grep -qE "^\| held-out \| $fam \| 1 \|" "$WORK/val/validation.md"
  done
else
  echo "FAIL: validate_emulator.py --parts b"; tail -20 "$WORK/val.log"; fails=$((fails + 1))
fi

# The token sweep's GPT-2 Medium TF32 steps (tests/fixtures/gpu_token_sweep_h200: 1,024 to 8,192 tokens), held
# out of the transformer kernel model's fit (tools/fit_gpu_kernels.py): the family line has every column
# (step mean and max, forward and backward means) and its mean |error| is under 6%, its max under 10% (one
# cost per op fitted at 4,096 tokens alone missed these steps by 24% on average, up to 46%).
if "$PY" "$VAL" --parts b --bin "$TT" --out "$WORK/tok" \
    --fixtures 'tests/fixtures/gpu_token_sweep_h200/*/gpt2-medium-tf32.json' >"$WORK/tok.log" 2>&1; then
  check "token sweep: held-out GPT-2 Medium TF32 within bounds" "$PY" - "$WORK/tok/validation.md" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"^\| held-out \| gpt2-medium tf32 on h200 \| 6 \| ([0-9.]+)% \| ([0-9.]+)% \| [0-9.]+% \| [0-9.]+% \|$",
              t, re.M)
assert m, t[-600:]
assert float(m.group(1)) < 6 and float(m.group(2)) < 10, m.group(0)
PY
else
  echo "FAIL: validate_emulator.py --parts b (token sweep)"; tail -20 "$WORK/tok.log"; fails=$((fails + 1))
fi

# The kernel model's fit (tools/fit_gpu_kernels.py) reruns from the fixtures: on three of GPT-2 TF32's token
# sweep steps (six passes for five constants) it prints the constants and the family table of the fit set.
S=tests/fixtures/gpu_token_sweep_h200
if "$PY" "$(dirname "$VAL")/fit_gpu_kernels.py" --bin "$TT" \
    --fixtures "$S/b1_t1024/gpt2-tf32.json,$S/b4_t256/gpt2-tf32.json,$S/b8_t1024/gpt2-tf32.json" >"$WORK/fit.log" 2>&1; then
  for c in launch_s efficiency attention_efficiency row_traffic scores_traffic; do
    check "fit prints $c" grep -qE "^  $c = ([0-9.e+-]+|inf)" "$WORK/fit.log"  # inf: an efficiency's term dropped
  done
  check "fit's family line" grep -qE "^\| fit \| gpt2 tf32 on h200 \| 3 \|" "$WORK/fit.log"
else
  echo "FAIL: fit_gpu_kernels.py"; tail -20 "$WORK/fit.log"; fails=$((fails + 1))
fi
# ... and replays the same steps' kernel groups under a launch model that is not additive.
if "$PY" "$(dirname "$VAL")/fit_gpu_kernels.py" --bin "$TT" --launch-model per-op-max \
    --fixtures "$S/b1_t1024/gpt2-tf32.json,$S/b4_t256/gpt2-tf32.json,$S/b8_t1024/gpt2-tf32.json" >"$WORK/fitq.log" 2>&1; then
  for c in host_launch_s kernel_s; do
    check "per-op-max fit prints $c" grep -qE "^  $c = [0-9.e+-]+$" "$WORK/fitq.log"
  done
  check "per-op-max fit's family line" grep -qE "^\| fit \| gpt2 tf32 on h200 \| 3 \|" "$WORK/fitq.log"
else
  echo "FAIL: fit_gpu_kernels.py --launch-model per-op-max"; tail -20 "$WORK/fitq.log"; fails=$((fails + 1))
fi

# A ground-truth fixture in the committed format (docs/reproducing.md, "Ground-truth fixtures"): its row,
# and the per-family table with the held-out set named; a fixture missing a field exits 2 naming it.
GT=tests/fixtures/ground_truth/h100-gpt2-tf32.json
if "$PY" "$VAL" --fixture "$GT" --bin "$TT" --out "$WORK/gt" >"$WORK/gt.log" 2>&1; then
  check "fixture of the format compared" grep -qE "^\| b \| gpt2 tf32 on h100 \(h100-gpt2-tf32.json\) .*\| pass" \
    "$WORK/gt/validation.md"
  check "per-family table names the held-out set" grep -qE "^\| held-out \| gpt2 tf32 on h100 \| 1 \|" \
    "$WORK/gt/validation.md"
else
  echo "FAIL: validate_emulator.py --fixture"; tail -20 "$WORK/gt.log"; fails=$((fails + 1))
fi
"$PY" -c "import json,sys; m=json.load(open(sys.argv[1])); m.pop('versions'); json.dump(m, open(sys.argv[2], 'w'))" \
  "$GT" "$WORK/noversions.json"
expect_exit 2 "field 'versions' missing" -- "$PY" "$VAL" --fixture "$WORK/noversions.json" --bin "$TT" --out "$WORK/gt2"
echo '{"format": ' >"$WORK/broken-fixture.json"
expect_exit 2 "not a readable JSON file" -- "$PY" "$VAL" --fixture "$WORK/broken-fixture.json" --bin "$TT" --out "$WORK/gt3"

# Part (d): the TEE cost terms against published real CC measurements (docs/reproducing.md, "The TEE
# cost terms against real hardware"): ISPASS 2025's copies past the fitted sizes and the kernels' CC
# ratios held out, Blackwell's rows as built, and the unscored production aggregates named.
if "$PY" "$VAL" --parts d --bin "$TT" --out "$WORK/tee" >"$WORK/tee.log" 2>&1; then
  check "held-out copies of 1 GiB" grep -qE "^\| d \| h100-pageable H2D copy of 1073741824 B .*\| pass" "$WORK/tee/validation.md"
  check "per-family lines of part (d), fit and held out apart" "$PY" - "$WORK/tee/validation.md" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
for fam in ("tee-h100-copies-pin", "tee-h100-copies-page", "tee-h100-kernels", "tee-blackwell"):
    assert re.search(rf"^\| held-out \| {fam} \| \d+ \|", t, re.M), fam
assert re.search(r"^\| fit \| tee-blackwell \| 2 \| 0\.0% \| 0\.0% \|", t, re.M)
assert "Tinfoil" in t and "Silo" in t
PY
else
  echo "FAIL: validate_emulator.py --parts d"; tail -20 "$WORK/tee.log"; fails=$((fails + 1))
fi

# A measured profile of this machine runs an emulated step; the CPU's rates are in it.
"$TT" bench host-profile --model gpt2-mini --reps 3 --out "$WORK/host.json" >/dev/null
make_corpus
check "profile has the memory rate" "$PY" -c "import json,sys; p=json.load(open(sys.argv[1]))
assert p['memory_gbps'] > 0 and p['cache_bytes'] > 0" "$WORK/host.json"
# The matmuls are timed as a step calls them: one operand set per layer of the model (gpt2-mini: 4).
check "profile's matmuls over the model's layers" "$PY" -c "import json,sys
m=json.load(open(sys.argv[1]))['measured']; assert m['matmul_layers'] == 4 and m['matmul_gflops'] > 0, m" \
  "$WORK/host.json"
# Under mpirun the ranks measure in lockstep and rank 0 alone reports and writes the profile.
mpirun --allow-run-as-root --oversubscribe -np 2 "$TT" bench host-profile --model gpt2-mini --reps 3 \
  --out "$WORK/host2.json" >"$WORK/host2.log" 2>&1
expect_eq "$(grep -c '^# teetrain bench host-profile' "$WORK/host2.log" || true)" 1 "one report from two ranks"
check "two ranks' profile" "$PY" -c "import json,sys; p=json.load(open(sys.argv[1]))
assert p['optimizer_gbps'] > 0 and p['measured']['threads'] == 1" "$WORK/host2.json"
check "emulated run on a profile" "$TT" train --model gpt2-mini --data "$WORK/data/tiny" --batch 1 --seq 32 \
  --steps 2 --val-batches 0 --no-progress --compute emulate --gpu "$WORK/host.json" --gpu-precision fp32 \
  --summary "$WORK/emu.json"

# A profile written before memory_gbps and cache_bytes existed still runs (one element-wise rate).
"$PY" -c "import json,sys; p=json.load(open(sys.argv[1])); [p.pop(k) for k in ('memory_gbps','cache_bytes')]
json.dump(p, open(sys.argv[2], 'w'))" "$WORK/host.json" "$WORK/old.json"
check "profile without the memory rate" "$TT" bench emulated-step --model gpt2-mini --seq 64 --gpu "$WORK/old.json" >/dev/null

# Bad profiles: exit 2, one line naming the problem and the command that writes a good one.
echo '{"name": "x"' >"$WORK/broken.json"
"$PY" - "$WORK/host.json" "$WORK/neg.json" "$WORK/extra.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
json.dump(dict(p, hbm_gbps=-1), open(sys.argv[2], "w"))
json.dump(dict(p, hbm_gbsp=1), open(sys.argv[3], "w"))
PY
for f in missing.json broken.json neg.json extra.json; do
  "$TT" bench emulated-step --model gpt2-mini --seq 64 --gpu "$WORK/$f" >"$WORK/bad.log" 2>&1 && st=0 || st=$?
  check "$f exits 2" test "$st" -eq 2
  check "$f says what to do" grep -q "bench host-profile" "$WORK/bad.log"
  "$TT" train --model gpt2-mini --data "$WORK/data/tiny" --compute emulate --gpu "$WORK/$f" >"$WORK/bad.log" 2>&1 \
    && st=0 || st=$?
  check "train --gpu $f exits 2" test "$st" -eq 2
done

echo "validate_emulator: $passes passed, $fails failed"
[[ $fails -eq 0 ]]
