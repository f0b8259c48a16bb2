#!/usr/bin/env bash
# `teetrain runs PLAN`: many trainings in one process. Each line's summary equals a separate `teetrain
# train`'s in every virtual-time field (step time, every phase's max and mean, every counter, the loss),
# for cc at P = 4 as virtual ranks and the TEE off at P = 1; a mistyped line stops the plan before any
# run, naming its line; a line that fails while running is named, keeps its exit code, and the runs
# after it are not made. Image runs decode their dataset once for the process.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust 4
PY=$(command -v python3)
line_cc="--model gpt2-tiny --data $WORK/data/tiny --batch 2 --seq 32 --steps 2 --timing-warmup 1 --val-batches 0
 --no-progress -q --compute emulate --gpu h100 --allow-plain-data --tee cc --trust-root $WORK/vendor/vendor_root.crt
 --device-identity '$WORK/vendor/device_{rank}.pem' --ranks-per-process 4"
line_off="--model gpt2-mini --data $WORK/data/tiny --batch 2 --seq 64 --steps 1 --timing-warmup 0 --val-batches 0
 --no-progress -q --compute emulate --gpu h100 --tee off"
line_cc=${line_cc//$'\n'/} line_off=${line_off//$'\n'/}
{
  echo "# two emulated runs"
  echo "$line_cc --summary $WORK/plan-cc.json"
  echo
  echo "$line_off --summary $WORK/plan-off.json"
} >"$WORK/plan.txt"
check "the plan runs" "$TT" runs "$WORK/plan.txt" >"$WORK/plan.log" 2>&1 || tail -5 "$WORK/plan.log"
grep -q "plan.txt line 4 done (run 2 of 2" "$WORK/plan.log" && passes=$((passes + 1)) ||
  { echo "FAIL: no progress line naming line 4"; fails=$((fails + 1)); }
eval "set -- $line_cc"
check "cc as its own train" "$TT" train "$@" --summary "$WORK/own-cc.json"
eval "set -- $line_off"
check "off as its own train" "$TT" train "$@" --summary "$WORK/own-off.json"
same() {
  "$PY" - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["time"] == "virtual" == b["time"]
for k in ("world_size", "step_s_mean", "phases", "counters", "final_loss", "buckets", "bucket_bytes"):
    assert a[k] == b[k], (k, a[k], b[k])
PY
}
check "cc (P = 4 as threads) in a plan equals its own train" same "$WORK/plan-cc.json" "$WORK/own-cc.json"
check "off (P = 1) in a plan equals its own train" same "$WORK/plan-off.json" "$WORK/own-off.json"

# A mistyped line: nothing runs (the line before it writes no summary), exit 2 naming the line.
printf '%s\n' "$line_off --summary $WORK/never.json" "$line_off --stepz 3" >"$WORK/typo.txt"
expect_exit 2 "typo.txt line 2: .*--stepz" -- "$TT" runs "$WORK/typo.txt"
check "no run before a mistyped line" test ! -e "$WORK/never.json"
# A line that fails while running: the runs before it are made, the ones after it are not.
printf '%s\n' "$line_off --summary $WORK/first.json" "${line_off/$WORK\/data\/tiny/$WORK/nodata}" \
  "$line_off --summary $WORK/third.json" >"$WORK/fails.txt"
rc=0
"$TT" runs "$WORK/fails.txt" >/dev/null 2>"$WORK/fails.log" || rc=$?
expect_eq "$rc" 2 "a line with no data: the plan exits as its train would"
grep -A1 -F "fails.txt line 2 failed (run 2 of 3; the runs after it were not made)" "$WORK/fails.log" |
  grep -q "^teetrain: error: no train token shards" && passes=$((passes + 1)) ||
  { echo "FAIL: the failing line is not named before its error"; cat "$WORK/fails.log"; fails=$((fails + 1)); }
check "the run before the failing line was made" test -s "$WORK/first.json"
check "the run after the failing line was not" test ! -e "$WORK/third.json"
# Image runs share one decoded copy of a split (Note [Shared decoded images], data/image_cache.h): two
# runs of P = 4 as threads open the training images once, not once per rank and run, and each run's
# summary still equals its own train's. Opens are counted with inotify, through Python's ctypes (it
# merges an open repeated with nothing between, so more opens may read as fewer, never as one).
make_idx train 64
make_idx t10k 16
line_img="--model resnet-small --data $WORK/img --batch 4 --steps 1 --timing-warmup 0 --val-batches 0
 --no-progress -q --compute emulate --gpu h100 --tee off --ranks-per-process 4"
line_img=${line_img//$'\n'/}
printf '%s\n' "$line_img --summary $WORK/img-1.json" "$line_img --seed 7 --summary $WORK/img-2.json" >"$WORK/img.txt"
opens=$("$PY" - "$WORK/img" "$TT" runs "$WORK/img.txt" <<'PY'
import ctypes, os, struct, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
assert fd >= 0 and libc.inotify_add_watch(fd, sys.argv[1].encode(), 0x20) >= 0  # IN_OPEN
subprocess.run(sys.argv[2:], check=True, stdout=subprocess.DEVNULL)
opens, buf = 0, b""
while True:
    try:
        buf += os.read(fd, 1 << 16)
    except BlockingIOError:
        break
while buf:
    _, mask, _, n = struct.unpack_from("iIII", buf)
    opens += buf[16:16 + n].rstrip(b"\0") == b"train-images-idx3-ubyte"
    buf = buf[16 + n:]
print(opens)
PY
)
expect_eq "$opens" 1 "two image runs of 4 ranks each open the training images once"
eval "set -- $line_img"
check "an image run as its own train" "$TT" train "$@" --seed 7 --summary "$WORK/own-img.json"
check "an image run in a plan equals its own train" same "$WORK/img-2.json" "$WORK/own-img.json"
printf '# nothing yet\n\n' >"$WORK/empty.txt"
expect_exit 2 "no runs in the plan" -- "$TT" runs "$WORK/empty.txt"
finish
