#!/usr/bin/env bash
# The README's figures for the demo's emulated part are what scripts/demo.sh prints. That part runs in
# virtual time, so its step times are the same on any machine: the demo runs it here exactly as the
# README's first command does (DEMO_PART=emulated, with this build and data of its own), and every
# figure of the README's sentence ("It prints off ... s/step, `fast` ... (...x), ...") must equal the
# demo's, rounded to the digits the README gives. Also: an unknown DEMO_PART is refused (exit 2).
source "$(dirname "$0")/lib.sh" "$@"
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
rc=0
TEETRAIN="$TT" DEMO_PART=emulated DEMO_CACHE="$WORK/cache" DEMO_OUT="$WORK/out" "$REPO/scripts/demo.sh" \
  >"$WORK/demo.log" 2>&1 || rc=$?
expect_eq "$rc" 0 "the demo's emulated part exits 0"
check "it prints its table" grep -q "^== Emulated H100 compute (gpt2-medium, 4 ranks" "$WORK/demo.log"
check "the README's figures are the demo's" python3 - "$REPO/README.md" "$WORK/out/emu" <<'PY'
import json, re, sys
readme = " ".join(open(sys.argv[1]).read().split())
m = re.search(r"It prints off ([0-9.]+) s/step, `cc` on H100 CC as measured ([0-9.]+) \(([0-9.]+)x\), `fast` on "
              r"H100 CC ([0-9.]+) \(([0-9.]+)x\), `fast` over a direct GPU-to-GPU link ([0-9.]+) \(([0-9.]+)x\) and `cc` "
              r"with the PAPER-FITTED per-crossing cost ([0-9.]+) \(([0-9.]+)x\).*the paper-fitted cost \(([0-9.]+) µs "
              r"per crossing\)", readme)
assert m, "the README's sentence with the demo's figures is gone"
step = {k: json.load(open(f"{sys.argv[2]}/{k}.json"))["step_s_mean"] for k in ("off", "cc", "fast-h100", "fast", "cc-paper")}
want = [step["off"]] + [v for k in ("cc", "fast-h100", "fast", "cc-paper") for v in (step[k], step[k] / step["off"])]
want.append(json.load(open(f"{sys.argv[2]}/cc-paper.json"))["cc_transfer_us"])
bad = []
for text, value in zip(m.groups(), want):
    digits = len(text.split(".")[1]) if "." in text else 0
    if f"{value:.{digits}f}" != text:
        bad.append(f"README {text}, demo {value:.{digits}f}")
assert not bad, "; ".join(bad)
PY
rc=0
TEETRAIN="$TT" DEMO_PART=both-ways "$REPO/scripts/demo.sh" >/dev/null 2>"$WORK/bad.err" || rc=$?
expect_eq "$rc" 2 "an unknown DEMO_PART exits 2"
check "and says what to choose" grep -q "choose real, emulated or both" "$WORK/bad.err"
finish
