#!/usr/bin/env bash
# The corners a student meets first, off the labs' paths: each gets a message that names the problem
# and what to do, never a misleading number, another flag's name, half a list or a traceback.
source "$(dirname "$0")/lib.sh" "$@"
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
make_corpus
D="$WORK/data/tiny"

# bench allreduce alone has no link to time: it says it needs ranks instead of a bus bandwidth of 0.
expect_exit 2 "needs at least 2.*mpirun -np 2 teetrain bench allreduce" -- \
  "$TT" bench allreduce --min-bytes 1K --max-bytes 1K --iters 1 --warmup 0

# sample and eval name the flag the user gave, not train's --resume.
expect_exit 2 "^teetrain: error: --ckpt $WORK/nosuch: no such checkpoint directory" -- \
  "$TT" sample --ckpt "$WORK/nosuch" --prompt "a"

# A near miss of a model name lists every preset of every family, as `teetrain models` lists them.
out=$("$TT" train --model gpt2-smal --data "$D" --steps 1 2>&1 >/dev/null) || true
for preset in $("$TT" models | awk 'NR > 1 && $1 ~ /^[a-z]/ { print $1 }'); do
  check "the error for gpt2-smal names $preset" grep -qE -- "[ (]$preset(,|\)| \()" <<<"$out"
done
check "a model name error is one line" test "$(wc -l <<<"$out")" -eq 1

# A TEE run started without mpirun trains one rank and says so, with what to run instead.
provision_trust
"$TT" keygen --out "$WORK/k.key" >/dev/null
"$TT" seal-data --data "$D" --out "$WORK/sealed" --key-file "$WORK/k.key" >/dev/null
err=$("$TT" train --tee fast --model gpt2-tiny --data "$WORK/sealed/tiny" --key-file "$WORK/k.key" "${TRUST[@]}" \
  --steps 1 --batch 2 --seq 16 --val-batches 0 --no-progress 2>&1 >/dev/null)
check "a one-rank TEE run says it is one rank" grep -q -- "^note: --tee fast on 1 rank: .*mpirun -np N" <<<"$err"
err=$("$TT" train --model gpt2-tiny --data "$D" --steps 1 --batch 2 --seq 16 --val-batches 0 --no-progress 2>&1 >/dev/null)
check "a one-rank run without a TEE has no such note" test -z "$(grep -- '^note: --tee' <<<"$err")"

# tools/labs/leak.py on a capture or shard it cannot read: one line, exit 2, no traceback.
expect_exit 2 "cannot read the capture $WORK/nosuch.bin: No such file.*--adversary snoop" -- \
  python3 "$REPO/tools/labs/leak.py" "$WORK/nosuch.bin"
head -c 40000 /dev/zero >"$WORK/zeros.bin"
expect_exit 2 "cannot read the training shard $WORK/nosuch_train.bin" -- \
  python3 "$REPO/tools/labs/leak.py" "$WORK/zeros.bin" --data "$WORK/nosuch_train.bin"
for cmd in "$WORK/nosuch.bin" "$WORK/zeros.bin --data $WORK/nosuch_train.bin"; do
  # shellcheck disable=SC2086
  check "leak.py $cmd prints no traceback" test -z "$(python3 "$REPO/tools/labs/leak.py" $cmd 2>&1 | grep Traceback)"
done
finish
