#!/usr/bin/env bash
# What a user sees when something is off, and where output goes: the closest flag or command to a
# typo, advice that fits the situation (the data owner's key for sealed data, `provision --devices N`
# for ranks without an identity), --quiet, and results on stdout with diagnostics on stderr.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
D="$WORK/data/tiny"
TRAIN=("$TT" train --model gpt2-tiny --steps 2 --batch 2 --seq 16 --threads 1 --no-progress --data "$D")

# Typos: the closest flag or command, exit 2, one line.
expect_exit 2 "^teetrain: error: unknown option --stpes; did you mean --steps\?$" -- "${TRAIN[@]}" --stpes 6
expect_exit 2 "unknown option --summray; did you mean --summary\?" -- "${TRAIN[@]}" --summray=x.json
expect_exit 2 "unknown option --zzzzzz \(teetrain train --help lists the options\)" -- "${TRAIN[@]}" --zzzzzz
expect_exit 2 "^teetrain: error: unknown command 'trian'; did you mean 'train'\? \(teetrain --help lists them\)$" -- \
  "$TT" trian --steps 6
expect_exit 2 "unknown command 'bench alreduce'; did you mean 'bench allreduce'\? \(teetrain bench --help" -- \
  "$TT" bench alreduce --iters 2
expect_exit 2 "unknown option --iter; did you mean --iters\?" -- "$TT" bench allreduce --iter 2
expect_exit 2 "unknown command 'frobnicate' \(teetrain --help lists them\)" -- "$TT" frobnicate
# An empty word (a shell variable that expanded to nothing) is refused, never looped on; an option's
# empty value is that option's to judge.
expect_exit 2 "^teetrain: error: word 2 of the command line is empty \(''\) where teetrain train expects an option or a command; remove it" -- \
  timeout 20 "$TT" train "" --steps 6 --data "$D"
expect_exit 2 "word 8 of the command line is empty .* where teetrain train expects" -- \
  timeout 20 "${TRAIN[@]:0:8}" "" --data "$D"
expect_exit 2 "word 2 of the command line is empty .* where teetrain bench expects" -- timeout 20 "$TT" bench "" --iters 2
expect_exit 2 "unknown model ''" -- timeout 20 "$TT" train --model "" --steps 1
# help still works
"$TT" train --help >/dev/null && passes=$((passes + 1)) || { echo "FAIL: train --help"; fails=$((fails + 1)); }

# A key file that is not there: sealed data opens only under its owner's key, so no keygen advice.
"$TT" keygen --out "$WORK/owner.key" >/dev/null
"$TT" seal-data --data "$D" --out "$WORK/sealed" --key-file "$WORK/owner.key" >/dev/null
SEALED=("$TT" train --model gpt2-tiny --steps 2 --batch 2 --seq 16 --threads 1 --no-progress --tee fast
  --data "$WORK/sealed/tiny")
expect_exit 2 "not found \(did you mean $WORK/owner.key\?\); sealed data .* the data owner's key file" -- \
  "${SEALED[@]}" --key-file "$WORK/ownr.key"
err=$("${SEALED[@]}" --key-file "$WORK/ownr.key" 2>&1 >/dev/null || true)
grep -q "create one" <<<"$err" && { echo "FAIL: sealed data advises keygen: $err"; fails=$((fails + 1)); } ||
  passes=$((passes + 1))
expect_exit 2 "sealed with .*its owner's --key-file" -- "$TT" ckpt verify "$WORK" --key-file "$WORK/nokey"
# Sealing new data: keygen is the answer.
expect_exit 2 "create one with .teetrain keygen --out $WORK/new.key" -- \
  "$TT" seal-data --data "$D" --out "$WORK/s2" --key-file "$WORK/new.key"

# Three ranks, two identities: the rank without one says how to provision the job's size.
"$TT" provision --out "$WORK/vendor" --devices 2 >/dev/null
rc=0
mpirun --oversubscribe -np 3 "${TRAIN[@]}" --tee fast --allow-plain-data --trust-root "$WORK/vendor/vendor_root.crt" \
  --device-identity "$WORK/vendor/device_{rank}.pem" >"$WORK/ids.log" 2>&1 || rc=$?
expect_eq "$rc" 2 "3 ranks, 2 identities: exit"
grep -q "rank 2 of 3 has no device identity; give every rank one: .teetrain provision --out $WORK/vendor --devices 3." \
  "$WORK/ids.log" && passes=$((passes + 1)) || { echo "FAIL: no provision advice"; cat "$WORK/ids.log"; fails=$((fails + 1)); }

# Results on stdout, diagnostics on stderr; --quiet leaves only the result line.
"${TRAIN[@]}" >"$WORK/n.out" 2>"$WORK/n.err"
grep -q "^done: 2 steps" "$WORK/n.out" && grep -q "^phase (per step)" "$WORK/n.out" && passes=$((passes + 1)) ||
  { echo "FAIL: result and phase table not on stdout"; cat "$WORK/n.out"; fails=$((fails + 1)); }
grep -q "^teetrain train: gpt2-tiny" "$WORK/n.err" && ! grep -q "done:" "$WORK/n.err" && passes=$((passes + 1)) ||
  { echo "FAIL: banner not on stderr, or result on stderr"; cat "$WORK/n.err"; fails=$((fails + 1)); }
"$TT" train --model gpt2-tiny --steps 2 --batch 2 --seq 16 --threads 1 --data "$D" --quiet >"$WORK/q.out" 2>"$WORK/q.err"
expect_eq "$(wc -l <"$WORK/q.out")" 1 "--quiet: one line on stdout"
grep -q "^done: 2 steps, loss" "$WORK/q.out" && passes=$((passes + 1)) || { echo "FAIL: --quiet: no done line"; fails=$((fails + 1)); }
expect_eq "$(wc -c <"$WORK/q.err")" 0 "--quiet: nothing on stderr"
grep -q -- "--quiet" <<<"$("$TT" train --help)" && passes=$((passes + 1)) || { echo "FAIL: no --quiet in help"; fails=$((fails + 1)); }
finish
