#!/usr/bin/env bash
# Hostile files where teetrain reads its inputs (docs/training.md, "Hostile files"): a FIFO in place of a key,
# trust root, CRL, policy, evidence, device identity, checkpoint file, freshness record, token shard,
# sealed shard, image file or text file is refused at once with exit 2 and a line naming the path and
# what it is; non-UTF-8 and over-long paths and a read-only checkpoint directory get exit 2 and a clear
# line, never raw library text; a sealed shard whose length field was edited (and the file cut to
# match) is an integrity failure (exit 3), and so, at once, is one whose header declares 64 MiB chunks
# matched by a sparse file. Every command runs under `timeout 10`: a reader that blocks
# on a FIFO fails here (exit 124) instead of hanging the suite.
source "$(dirname "$0")/lib.sh" "$@"
make_corpus
provision_trust
"$TT" keygen --out "$WORK/k.key" >/dev/null
"$TT" seal-data --data "$WORK/data/tiny" --out "$WORK/sealed" --key-file "$WORK/k.key" --chunk-kb 1 >/dev/null
# Chunks over the format's 64 MiB cap are refused before anything is written.
expect_exit 2 "--chunk-kb 65537: at most 65536 \(64 MiB\)" -- \
  "$TT" seal-data --data "$WORK/data/tiny" --out "$WORK/big" --key-file "$WORK/k.key" --chunk-kb 65537
common=(train --model gpt2-tiny --seq 16 --batch 2 --no-progress --threads 1 --seed 9 --val-batches 0 --steps 2)
plain_run=(timeout 10 "$TT" "${common[@]}" --tee off --data "$WORK/data/tiny")
tee_run=(timeout 10 "$TT" "${common[@]}" --tee fast --data "$WORK/sealed/tiny" --key-file "$WORK/k.key")
ROOT=(--trust-root "$WORK/vendor/vendor_root.crt")
"$TT" attest "${ROOT[@]}" --device-identity "$WORK/vendor/device_1.pem" --rank 1 --config '{"x":1}' \
  --out "$WORK/ev.bin" >/dev/null
verify_ev=(timeout 10 "$TT" attest --verify "$WORK/ev.bin" --config '{"x":1}')
"${plain_run[@]}" --save-every 2 --ckpt-dir "$WORK/pk" 2>/dev/null
"${tee_run[@]}" --save-every 2 --ckpt-dir "$WORK/sk" 2>/dev/null
fifo() { rm -rf "$1" && mkfifo "$1"; }
FIFO="$WORK/.*: is a FIFO \(named pipe\), not a regular file"

# Keys, identities and the verifier's inputs.
fifo "$WORK/fifo.key"
expect_exit 2 "key file '$WORK/fifo.key': is a FIFO" -- "${tee_run[@]}" --key-file "$WORK/fifo.key"
expect_exit 2 "fifo.key': is a FIFO" -- timeout 10 "$TT" ckpt verify --key-file "$WORK/fifo.key" "$WORK/sk"
fifo "$WORK/fifo.crt"
expect_exit 2 "trust-root: certificate '$WORK/fifo.crt': is a FIFO" -- "${verify_ev[@]}" --trust-root "$WORK/fifo.crt"
mkdir -p "$WORK/v2" && cp "$WORK/vendor/vendor_root.crt" "$WORK/v2/" && fifo "$WORK/v2/vendor_root.crl"
expect_exit 2 "vendor_root.crl': is a FIFO" -- "${verify_ev[@]}" --trust-root "$WORK/v2/vendor_root.crt"
fifo "$WORK/fifo.policy"
expect_exit 2 "policy '$WORK/fifo.policy': is a FIFO" -- "${verify_ev[@]}" "${ROOT[@]}" --policy "$WORK/fifo.policy"
fifo "$WORK/fifo.ev"
expect_exit 2 "evidence '$WORK/fifo.ev': is a FIFO" -- timeout 10 "$TT" attest --verify "$WORK/fifo.ev" "${ROOT[@]}"
fifo "$WORK/fifo.pem"
expect_exit 2 "$FIFO" -- timeout 10 "$TT" attest "${ROOT[@]}" --device-identity "$WORK/fifo.pem" --rank 1
fifo "$WORK/fifo.json"
expect_exit 2 "config-file '$WORK/fifo.json': is a FIFO" -- timeout 10 "$TT" attest --config-file "$WORK/fifo.json"

# Checkpoint files (plain and sealed), through verify, resume and export; the freshness record.
for f in model.safetensors manifest.json state.json; do
  rm -rf "$WORK/c" && cp -r "$WORK/pk" "$WORK/c" && fifo "$WORK/c/step_00000002/$f"
  expect_exit 2 "step_00000002/$f': is a FIFO" -- timeout 10 "$TT" ckpt verify "$WORK/c"
  expect_exit 2 "step_00000002/$f': is a FIFO" -- "${plain_run[@]}" --steps 4 --resume "$WORK/c"
done
rm -rf "$WORK/c" && cp -r "$WORK/sk" "$WORK/c" && fifo "$WORK/c/step_00000002/model.safetensors.sealed"
expect_exit 2 "model.safetensors.sealed': is a FIFO" -- timeout 10 "$TT" ckpt verify --key-file "$WORK/k.key" "$WORK/c"
expect_exit 2 "model.safetensors.sealed': is a FIFO" -- timeout 10 "$TT" ckpt export --key-file "$WORK/k.key" \
  "$WORK/c" --out "$WORK/x.safetensors"
cp "$WORK/k.key" "$WORK/k2.key" && fifo "$WORK/k2.key.freshness"
expect_exit 2 "freshness record '$WORK/k2.key.freshness': is a FIFO" -- timeout 10 "$TT" ckpt verify \
  --key-file "$WORK/k2.key" "$WORK/sk"

# Data: a plain shard (named directly, found by prefix), a sealed shard, an image file, a text file.
mkdir -p "$WORK/fd" && fifo "$WORK/fd/tiny_train.bin"
expect_exit 2 "fd/tiny_train.bin': is a FIFO" -- timeout 10 "$TT" "${common[@]}" --data "$WORK/fd/tiny_train.bin"
expect_exit 2 "fd/tiny_train.bin': is a FIFO" -- timeout 10 "$TT" "${common[@]}" --data "$WORK/fd/tiny"
rm -rf "$WORK/s2" && cp -r "$WORK/sealed" "$WORK/s2" && fifo "$WORK/s2/tiny_train.bin.sealed"
expect_exit 2 "tiny_train.bin.sealed': is a FIFO" -- "${tee_run[@]}" --data "$WORK/s2/tiny"
make_idx train 20
make_idx t10k 10
fifo "$WORK/img/train-images-idx3-ubyte"
expect_exit 2 "train-images-idx3-ubyte': is a FIFO" -- timeout 10 "$TT" train --model resnet-tiny --steps 1 \
  --batch 2 --no-progress --data "$WORK/img"
fifo "$WORK/fifo.txt"
expect_exit 2 "fifo.txt': is a FIFO" -- timeout 10 "$TT" prepare-text "$WORK/fifo.txt" --out "$WORK/o"
# A directory where a file belongs is named as such too.
mkdir -p "$WORK/dir.key"
expect_exit 2 "dir.key': is a directory" -- "${tee_run[@]}" --key-file "$WORK/dir.key"

# Paths: not UTF-8 (a checkpoint directory so named just works), over-long (a 300-byte name; a path
# over PATH_MAX): exit 2 and a clear line (expect_exit also refuses raw library text).
nonutf8=$(printf '%s/ck-\xff\xfe' "$WORK")
long_name="$WORK/$(printf 'n%.0s' $(seq 1 300))"
long_path="$WORK$(printf '/%0120d' $(seq 1 40))"
"${plain_run[@]}" --save-every 1 --ckpt-dir "$nonutf8" >"$WORK/nonutf8.log" 2>&1 &&
  test -f "$nonutf8/step_00000002/COMPLETE" && passes=$((passes + 1)) ||
  { echo "FAIL: a checkpoint directory with a non-UTF-8 name"; cat "$WORK/nonutf8.log"; fails=$((fails + 1)); }
# A dataset whose name is not UTF-8: prepared, sealed (its name is escaped in the JSON metadata),
# trained on in TEE mode with a summary.
bad_name=$(printf 'x\xfe')
{ "$TT" prepare-text "$WORK/text" --out "$WORK/nu" --name "$bad_name" &&
  "$TT" seal-data --data "$WORK/nu/$bad_name" --out "$WORK/nus" --key-file "$WORK/k.key" &&
  timeout 10 "$TT" "${common[@]}" --tee fast --data "$WORK/nus/$bad_name" --key-file "$WORK/k.key" \
    --summary "$WORK/nus/s.json"; } >"$WORK/nu.log" 2>&1 && passes=$((passes + 1)) ||
  { echo "FAIL: a dataset with a non-UTF-8 name"; cat "$WORK/nu.log"; fails=$((fails + 1)); }
expect_exit 2 "ckpt-dir .*too long" -- "${plain_run[@]}" --save-every 1 --ckpt-dir "$long_name"
expect_exit 2 "ckpt-dir .*too long" -- "${plain_run[@]}" --save-every 1 --ckpt-dir "$long_path"
expect_exit 2 "key file .*too long" -- "${tee_run[@]}" --key-file "$long_name"
expect_exit 2 "resume .*too long" -- "${plain_run[@]}" --resume "$long_path"
expect_exit 2 "no train token shards found" -- "$TT" "${common[@]}" --data "$long_name"
expect_exit 2 "no such directory" -- timeout 10 "$TT" ckpt verify "$long_path"
# Read-only and full: a read-only mount (root ignores mode bits) or a 64 KiB one (a save needs more),
# each in a private mount namespace; without one, mode 555 for the read-only case. Read-only is bad
# input, refused before the first step (2); a full disk fails the save (1) and names the file.
mkdir -p "$WORK/ro" "$WORK/full"
if [[ $(id -u) -eq 0 ]] && unshare -m true 2>/dev/null; then
  mounted() { unshare -m bash -c 'mount -t tmpfs -o "$0" tmpfs "$1" && shift && exec "$@"' "$@"; }
  expect_exit 2 "ckpt-dir '$WORK/ro': cannot write there \(Read-only file system\)" -- \
    mounted ro,size=1m "$WORK/ro" "${plain_run[@]}" --save-every 1 --ckpt-dir "$WORK/ro"
  # The run has started (its banner is printed): the error is its last line.
  rc=0; mounted size=64k "$WORK/full" "${plain_run[@]}" --save-every 1 --ckpt-dir "$WORK/full" 2>"$WORK/full.log" || rc=$?
  expect_eq "$rc" 1 "a full checkpoint directory: exit 1"
  tail -1 "$WORK/full.log" | grep -qE "^teetrain: error: $WORK/full/.*: write failed \(No space left on device\)$" &&
    ! grep -qE "json.exception|filesystem error" "$WORK/full.log" && passes=$((passes + 1)) ||
    { echo "FAIL: a full checkpoint directory"; cat "$WORK/full.log"; fails=$((fails + 1)); }
else
  chmod 555 "$WORK/ro"
  expect_exit 2 "ckpt-dir '$WORK/ro': cannot write there \(Permission denied\)" -- \
    "${plain_run[@]}" --save-every 1 --ckpt-dir "$WORK/ro"
fi

# A sealed shard cut to fewer chunks with its length field (bytes 16..23) edited to match: the last
# chunk left was sealed as not-last, so this is an integrity failure, not a "malformed shard, re-seal".
rm -rf "$WORK/s3" && cp -r "$WORK/sealed" "$WORK/s3"
f="$WORK/s3/tiny_train.bin.sealed"
meta=$(od -An -tu1 -j48 -N4 "$f" | awk '{print $1*16777216 + $2*65536 + $3*256 + $4}')
keep_plain=$((2 * 1024))  # two whole 1 KiB chunks of plaintext
truncate -s $((52 + meta + keep_plain + 2 * 16)) "$f"
printf "$(printf '\\x%02x' 0 0 0 0 0 0 $((keep_plain >> 8)) $((keep_plain & 255)))" |
  dd of="$f" bs=1 seek=16 conv=notrunc 2>/dev/null
expect_exit 3 "tiny_train.bin.sealed.*chunk 1 of 2 failed to open" -- "${tee_run[@]}" --data "$WORK/s3/tiny"
# A forged header declaring 1 GiB chunks (bytes 12..15): over the 64 MiB cap, refused from the header
# (exit 3), whatever the file holds.
rm -rf "$WORK/s5" && cp -r "$WORK/sealed" "$WORK/s5"
f="$WORK/s5/tiny_train.bin.sealed"
printf '\x40\x00\x00\x00' | dd of="$f" bs=1 seek=12 conv=notrunc 2>/dev/null
expect_exit 3 "tiny_train.bin.sealed': invalid chunk size 1073741824 \(at most 64 MiB\)" -- \
  "${tee_run[@]}" --data "$WORK/s5/tiny"
# A forged header declaring 64 MiB chunks and a 64 MiB plaintext (bytes 12..23), the shard extended
# sparsely to the size those imply: refused at once (exit 3, naming the hole), never 64 MiB
# allocated, read and decrypted first to find the tag wrong.
rm -rf "$WORK/s4" && cp -r "$WORK/sealed" "$WORK/s4"
f="$WORK/s4/tiny_train.bin.sealed"
printf '\x04\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00' | dd of="$f" bs=1 seek=12 conv=notrunc 2>/dev/null
truncate -s $((52 + meta + (1 << 26) + 16)) "$f"
expect_exit 3 "tiny_train.bin.sealed': the disk holds no bytes at offset [0-9]+ .*\(a hole" -- \
  "${tee_run[@]}" --data "$WORK/s4/tiny"
# JSON nested 100,000 deep (1.2 MB, under every size cap) where a file holds JSON: refused with exit 2
# naming the file, never a crash (base/untrusted_json.h bounds the nesting at 64 levels).
python3 -c "import sys; n = 100000; sys.stdout.write('{\"a\":' * n + '1' + '}' * n)" >"$WORK/deep.json"
expect_exit 2 "nested deeper than 64 levels" -- timeout 10 "$TT" verify-evidence "$WORK/deep.json"
deep_ckpt=$(dirname "$(find "$WORK/pk" -name manifest.json | head -1)")
cp "$WORK/deep.json" "$deep_ckpt/manifest.json"
# A checkpoint's manifest is what binds its files: one that does not parse is a damaged checkpoint
# (exit 3, as any malformed manifest is), and `inspect` describes it as unreadable.
expect_exit 3 "manifest.json: not valid JSON \(or nested deeper than 64 levels\)" -- \
  timeout 10 "$TT" ckpt verify "$deep_ckpt"
out=$(timeout 10 "$TT" ckpt inspect "$deep_ckpt" 2>&1) && grep -q "manifest.json: UNREADABLE: .*nested deeper than 64" <<<"$out" &&
  passes=$((passes + 1)) || { echo "FAIL: ckpt inspect of a 100,000-deep manifest: $out"; fails=$((fails + 1)); }
# `ckpt inspect` prints what it reads from outside as one line each (\xNN escapes): a file name or a
# marker that carries a newline and a forged "manifest sha256 ... (pin with --expect-checkpoint)" line
# does not draw that line.
forge=$'\n      manifest sha256 0000000000000000000000000000000000000000000000000000000000000000 (pin with --expect-checkpoint)'
"${plain_run[@]}" --save-every 2 --ckpt-dir "$WORK/pk2" 2>/dev/null
plain_step=$(dirname "$(find "$WORK/pk2" -name COMPLETE | head -1)")
touch "$plain_step/x${forge}"
printf 'done%s\n' "$forge" >"$plain_step/COMPLETE"
out=$(timeout 10 "$TT" ckpt inspect "$WORK/pk2" 2>&1)
pins=$(grep -c "^      manifest sha256 [0-9a-f]\{64\} (pin with --expect-checkpoint)$" <<<"$out" || true)
manifests=$(find "$WORK/pk2" -name manifest.json | wc -l)
if [[ "$pins" -eq "$manifests" && "$manifests" -ge 1 ]] && grep -qF 'x\x0a      manifest sha256 0000' <<<"$out" &&
  grep -qF '(done\x0a      manifest sha256 0000' <<<"$out"; then passes=$((passes + 1)); else
  echo "FAIL: ckpt inspect printed outside text raw ($pins pin lines for $manifests manifests):"; echo "$out"
  fails=$((fails + 1)); fi
# Output paths are opened like input paths: a FIFO planted where a result goes is refused before the
# run, not after it (exit 2, naming the flag and what the path is), never waited on (every command runs
# under `timeout 10`); so is a result in a directory that does not exist.
for flag in --summary --metrics --trace; do
  fifo "$WORK/out$flag"
  expect_exit 2 "$flag .*out$flag: cannot be written: is a FIFO" -- "${plain_run[@]}" -q "$flag" "$WORK/out$flag"
  expect_exit 2 "$flag .*: cannot be written: its directory .*nodir does not exist" -- \
    "${plain_run[@]}" -q "$flag" "$WORK/nodir/out.json"
done
fifo "$WORK/policy.fifo"
expect_exit 2 "--write-policy .*policy.fifo: cannot open for writing: is a FIFO" -- \
  timeout 10 "$TT" attest "${ROOT[@]}" --device-identity "$WORK/vendor/device_1.pem" --rank 1 --config '{"x":1}' \
  --write-policy "$WORK/policy.fifo"
finish
