# Shared helpers for the CLI tests. Usage: source lib.sh "$@" (first argument: the teetrain binary).
set -euo pipefail
TT="$1"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fails=0
passes=0

# start_burners: two CPU burners per core (a busy cluster node or CI runner) until stop_burners,
# which a test's EXIT trap calls.
BURNERS=()
start_burners() {
  for _ in $(seq 1 $((2 * $(nproc)))); do
    yes >/dev/null &
    BURNERS+=($!)
  done
}
stop_burners() {
  ((${#BURNERS[@]} == 0)) || kill "${BURNERS[@]}" 2>/dev/null || true
  BURNERS=()
}

# A tiny byte-level corpus and shards for fast runs.
make_corpus() {
  mkdir -p "$WORK/text"
  for i in $(seq 1 200); do printf 'Fortune number %d: a penny saved is a penny earned.\n%%\n' "$i"; done >"$WORK/text/corpus"
  "$TT" prepare-text "$WORK/text" --out "$WORK/data" --name tiny >/dev/null
}

# make_idx PREFIX N: N random 28x28 images with labels 0..9 in the MNIST file layout, in $WORK/img.
be32() { printf "\\x$(printf %02x $(($1 >> 24 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 & 255)))"; }
make_idx() {
  local pre="$1" n="$2" i
  mkdir -p "$WORK/img"
  { printf '\x00\x00\x08\x03'; be32 "$n"; be32 28; be32 28; head -c $((n * 784)) /dev/urandom; } >"$WORK/img/$pre-images-idx3-ubyte"
  { printf '\x00\x00\x08\x01'; be32 "$n"; for ((i = 0; i < n; i++)); do printf "\\$(printf %03o $((i * 7 % 10)))"; done; } \
    >"$WORK/img/$pre-labels-idx1-ubyte"
}

# An emulated vendor with N (default 4) certified devices; TEE runs of several ranks pass "${TRUST[@]}".
provision_trust() {
  "$TT" provision --out "$WORK/vendor" --devices "${1:-4}" >/dev/null
  TRUST=(--trust-root "$WORK/vendor/vendor_root.crt" --device-identity "$WORK/vendor/device_{rank}.pem")
}

# expect_exit CODE PATTERN -- command...: the command exits with CODE, its stderr matches PATTERN and is
# at most 3 lines, with no raw library text (a JSON or std::filesystem exception's own words).
expect_exit() {
  local code="$1" pattern="$2"
  shift 3
  local out rc=0
  out=$("$@" 2>&1 >/dev/null) || rc=$?
  if [[ $rc -ne $code ]]; then
    echo "FAIL: expected exit $code, got $rc: $*"; echo "  output: $out"; fails=$((fails + 1)); return
  fi
  if ! grep -qiE -- "$pattern" <<<"$out"; then
    echo "FAIL: message does not match /$pattern/: $*"; echo "  output: $out"; fails=$((fails + 1)); return
  fi
  if [[ $(wc -l <<<"$out") -gt 3 ]]; then
    echo "FAIL: error message is not short: $*"; echo "$out"; fails=$((fails + 1)); return
  fi
  if grep -qE -- "json\.exception|filesystem error|what\(\):|terminate called" <<<"$out"; then
    echo "FAIL: raw library text reached the user: $*"; echo "  output: $out"; fails=$((fails + 1)); return
  fi
  passes=$((passes + 1))
}

# flip_byte FILE OFFSET: invert the bits of one byte in place. (Writing a fixed value instead leaves
# the byte unchanged whenever it already holds that value: 1 time in 256 for ciphertext.)
flip_byte() {
  local b
  b=$(od -An -tu1 -j"$2" -N1 "$1")
  printf "\\x$(printf %02x $((b ^ 0xff)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

# check NAME COMMAND...: the command succeeds.
check() {
  local name="$1"; shift
  if "$@"; then passes=$((passes + 1)); else echo "FAIL: $name"; fails=$((fails + 1)); fi
}
expect_eq() {
  if [[ "$1" == "$2" ]]; then passes=$((passes + 1)); else echo "FAIL: $3: '$1' != '$2'"; fails=$((fails + 1)); fi
}
expect_ne() {
  if [[ "$1" != "$2" ]]; then passes=$((passes + 1)); else echo "FAIL: $3: both '$1'"; fails=$((fails + 1)); fi
}

# run_summary NAME PROCESSES ARGS...: `mpirun -np PROCESSES teetrain ARGS... --summary $WORK/NAME.json`,
# stdout and stderr in $WORK/NAME.log; a run that fails counts as a failure and shows its last lines.
run_summary() {
  local name="$1" np="$2"; shift 2
  if mpirun --allow-run-as-root --oversubscribe -np "$np" "$TT" "$@" --summary "$WORK/$name.json" \
       >"$WORK/$name.log" 2>&1; then
    passes=$((passes + 1))
  else
    echo "FAIL: run $name"; tail -8 "$WORK/$name.log"; fails=$((fails + 1))
  fi
}

json_field() { sed -n "s/.*\"$2\": *\"\{0,1\}\([^\",]*\)\"\{0,1\}.*/\1/p" "$1" | head -1; }

finish() {
  echo "$passes passed, $fails failed"
  [[ $fails -eq 0 ]]
}
