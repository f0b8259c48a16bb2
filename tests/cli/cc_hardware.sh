#!/usr/bin/env bash
# A GPU in CC mode (--cc-hardware; Note [CC hardware costs], core/emulated/emulated_gpu.h): in virtual
# time an H100 CC run pays the measured copy rates, CC's kernel launches and the batch's copy through
# the bounce buffers, fast's GPU-sealed ciphertext crosses host memory (by default too: H100 CC has no
# encrypted GPU-to-GPU path) and only the named what-if sends it over a direct GPU-to-GPU link, Blackwell
# sends it over encrypted NVLink, and the TEE-off baseline stays the same GPU with CC off.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust
PY=$(command -v python3)
emu=(train --model gpt2-tiny --data "$WORK/data/tiny" --batch 2 --seq 32 --steps 3 --timing-warmup 1
     --val-batches 0 --no-progress --compute emulate --gpu h100 --allow-plain-data "${TRUST[@]}")
run() { run_summary "$1" 2 "${emu[@]}" "${@:2}"; }  # run NAME args...: $WORK/NAME.json and .log
run off --tee off
run off-hw --tee off --cc-hardware h100-pageable
run cc --tee cc
run cc-hw --tee cc --cc-hardware h100-pageable
run fast --tee fast
run fast-hw --tee fast --cc-hardware h100-pageable
run fast-direct --tee fast --cc-hardware direct-what-if
run fast-bw --tee fast --cc-hardware blackwell
run cc-bw --tee cc --cc-hardware blackwell
run fast-small --tee fast --bucket-mb 0.01  # buckets that leave during backward
if "$PY" - "$WORK" <<'PY'
import json, sys
r = {n: json.load(open(f"{sys.argv[1]}/{n}.json"))
     for n in ("off", "off-hw", "cc", "cc-hw", "fast", "fast-hw", "fast-direct", "fast-bw", "cc-bw", "fast-small")}
phase = lambda n, p: r[n]["phases"].get(p, {}).get("mean", 0.0)
# The baseline: TEE off runs on the same GPU with CC off.
assert r["off-hw"]["step_s_mean"] == r["off"]["step_s_mean"] and r["off-hw"]["cc_hardware"] is None
assert r["cc"]["cc_hardware"] is None and r["cc"]["cc_transfer_us"] == 0 and phase("cc", "stage") == 0
hw = r["cc-hw"]["cc_hardware"]
assert hw["name"] == "h100-pageable" and abs(hw["launch_extra_us"] - 5.05) < 1e-9, hw
assert hw["kernel_launches_s_per_step"] > 0 and hw["copies_s_per_step"] > 0, hw
# cc's crossings: the fixed cost from the table (pageable, mean of the two directions) and the bytes.
assert abs(r["cc-hw"]["cc_transfer_us"] - 35.195) < 1e-9, r["cc-hw"]["cc_transfer_us"]
assert phase("cc-hw", "stage") > 0
assert phase("cc-hw", "forward") > phase("cc", "forward")  # the batch's copy and the launches
assert r["cc-hw"]["step_s_mean"] > r["cc"]["step_s_mean"]
# fast's wire by platform: through host memory by default (each byte at a host core's AES pass, as cc's
# crossings cost without CC costs) and on H100 CC (the measured copies); a direct link only as the named
# what-if; Blackwell's encrypted NVLink pays a set-up per transfer (20.05 + 20.87 us), no host copy.
assert 0 < phase("fast", "stage") < phase("fast-hw", "stage"), (phase("fast", "stage"), phase("fast-hw", "stage"))
assert phase("fast-direct", "stage") == 0 and r["fast-direct"]["cc_hardware"] is None
assert r["fast-direct"]["step_s_mean"] < r["fast"]["step_s_mean"] < r["fast-hw"]["step_s_mean"]
assert 0 < phase("fast-bw", "stage") < phase("fast-hw", "stage"), (phase("fast-bw", "stage"), phase("fast-hw", "stage"))
# Note [GPU crypto shares the SMs]: fast's AES-GCM kernels that run before backward ends (small buckets)
# hold the SMs backward runs on; with one bucket they all run after it; cc's host sealing takes nothing.
assert r["fast-small"]["sm_wait_s_per_step"] > 0 and r["fast"]["sm_wait_s_per_step"] == 0, \
    (r["fast-small"]["sm_wait_s_per_step"], r["fast"]["sm_wait_s_per_step"])
assert r["cc"]["sm_wait_s_per_step"] == 0
bw = r["cc-bw"]["cc_hardware"]
assert bw["name"] == "blackwell" and bw["source"] == "arXiv 2606.23969" and abs(r["cc-bw"]["cc_transfer_us"] - 330) < 1e-9, bw
assert r["cc-bw"]["config"]["gpu"]["cc_hardware"] == "blackwell"
assert r["cc-hw"]["config"]["gpu"]["cc_hardware"] == "h100-pageable" and "cc_hardware" not in r["cc"]["config"]["gpu"]
PY
then passes=$((passes + 1)); else echo "FAIL: CC hardware costs in virtual time"; fails=$((fails + 1)); fi
grep -q "of which the GPU's CC mode (h100-pageable, ISPASS 2025): kernel launches" "$WORK/cc-hw.log" &&
  grep -q "GPU-sealed messages cross host bounce buffers" "$WORK/fast.log" &&
  grep -q "of which backward's kernels waiting for fast's AES-GCM kernels on the GPU's SMs" "$WORK/fast-small.log" &&
  grep -q "GPU-sealed messages cross direct (what-if)" "$WORK/fast-direct.log" &&
  passes=$((passes + 1)) || { echo "FAIL: the CC line under the phase table"; fails=$((fails + 1)); }
expect_exit 2 "cc-hardware prices an emulated GPU's CC mode" -- "$TT" train --model gpt2-tiny \
  --data "$WORK/data/tiny" --steps 1 --cc-hardware h100-pinned
finish
