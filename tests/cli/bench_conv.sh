#!/usr/bin/env bash
# `teetrain bench conv`: a model's convolutions layer by layer. On the emulated GPU its per-step totals
# are exactly what `bench emulated-step` charges a step's convolutions (the same shapes, costed the
# same way, here with TF32's tile term); on the CPU every distinct shape of ResNet-18 is timed in its
# three passes (no input gradient for the input layer) and the calls add up to the model's 20
# convolutions. Bad choices exit 2 with one line.
source "$(dirname "$0")/lib.sh" "$@"
"$TT" bench conv --model resnet50 --batch 32 --gpu h100 --gpu-precision tf32 --json "$WORK/emu.json" >"$WORK/emu.log"
"$TT" bench emulated-step --model resnet50 --batch 32 --image-size 224 --gpu h100 --gpu-precision tf32 \
  --json "$WORK/step.json" >/dev/null
check "emulated: per-layer totals are the step's convolutions" python3 - "$WORK/emu.json" "$WORK/step.json" <<'PY'
import json, sys
c, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert c["emulated"] and len(c["layers"]) == 23, (c["emulated"], len(c["layers"]))
assert abs(c["step_forward_s"] / s["forward_conv_s"] - 1) < 1e-9, (c["step_forward_s"], s["forward_conv_s"])
bwd = c["step_dgrad_s"] + c["step_wgrad_s"]
assert abs(bwd / s["backward_conv_s"] - 1) < 1e-9, (bwd, s["backward_conv_s"])
PY
check "emulated: the table names the layers" grep -q "^13  1x1/1 256->1024 @14x14 *6 " "$WORK/emu.log"
# docs/reproducing.md's command, as written there.
check "the documented command" bash -c "'$TT' bench conv --model resnet50 --batch 32 --gpu h100 --gpu-precision fp32 \
  | grep -q 'resnet50, batch 32, 23 distinct convolutions'"

"$TT" bench conv --model resnet18 --batch 2 --image-size 32 --threads 2 --reps 2 --json "$WORK/cpu.json" \
  >"$WORK/cpu.log"
check "cpu: every shape timed, the calls add up to the model" python3 - "$WORK/cpu.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
assert not c["emulated"] and c["backend"].startswith("cpu"), c["backend"]
ls = c["layers"]
assert sum(l["calls"] for l in ls) == 20, [l["calls"] for l in ls]
assert ls[0]["input_layer"] and ls[0]["dgrad_s"] == 0 and not any(l["input_layer"] for l in ls[1:])
assert all(l["forward_s"] > 0 and l["wgrad_s"] > 0 and l["flops"] > 0 for l in ls)
assert all(l["dgrad_s"] > 0 for l in ls[1:])
PY

expect_exit 2 "choose a resnet model" -- "$TT" bench conv --model gpt2
expect_exit 2 "give one" -- "$TT" bench conv --gpu h100 --tf32
expect_exit 2 "cannot open for writing" -- "$TT" bench conv --model resnet18 --batch 1 --image-size 32 --gpu h100 \
  --json "$WORK/no/such/dir/x.json"
finish
