# Shared helpers for the CLI tests. Usage: source lib.sh "$@" (first argument: the teetrain binary).
set -euo pipefail
TT="$1"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fails=0
passes=0
# teetrain's own OpenMP settings (it sets them and re-executes itself when they are unset): given here
# so that no test's processes pay for the re-execution; bench_smoke unsets them to test that it does.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}" GOMP_SPINCOUNT="${GOMP_SPINCOUNT:-1000}"

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

# Real attestation without confidential hardware (real_attestation.sh, attestation_collateral.sh), with
# FAKE_NVML (the NVML stand-in's directory, tests/cli/fake_nvml.cpp) and VENDOR (tt_test_vendor) set.
# attestation_setup: the test vendor's roots in $R, the corpus sealed under $WORK/k.key in
# $WORK/sealed/tiny, and $WORK/rank.sh, which mpirun runs as each rank: its NVML stand-in writes that
# rank's report files, rank 1's GPU reports measurement block OFF_BLOCK (INDEX:HEX96) when set, and
# @RANK@ in an argument becomes the rank.
attestation_setup() {
  R="$WORK/roots"
  "$VENDOR" roots --dir "$R" >/dev/null
  make_corpus
  "$TT" keygen --out "$WORK/k.key" >/dev/null
  "$TT" seal-data --data "$WORK/data/tiny" --out "$WORK/sealed" --key-file "$WORK/k.key" >/dev/null
  cat >"$WORK/rank.sh" <<EOF
#!/usr/bin/env bash
r=\$OMPI_COMM_WORLD_RANK
export LD_LIBRARY_PATH="$FAKE_NVML" TT_FAKE_NVML_VENDOR="$VENDOR" TT_FAKE_NVML_VENDOR_DIR="$R" \\
  TT_FAKE_NVML_REPORT="$WORK/gpu\$r.bin" TT_FAKE_NVML_CHAIN="$WORK/gpu\$r.pem"
[[ \$r == 1 && -n "\${OFF_BLOCK:-}" ]] && export TT_FAKE_NVML_VENDOR_ARGS="--block \$OFF_BLOCK"
exec "$TT" "\${@//@RANK@/\$r}"
EOF
  chmod +x "$WORK/rank.sh"
  FAKES=()
  trap 'for p in "${FAKES[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$WORK"' EXIT
}

# serve NAME N [rank-1 args...]: one configfs-tsm stand-in (tests/cli/fake_tsm.py, provider $PROVIDER)
# for each of N ranks (dirs $WORK/NAME0 .. NAME<N-1>), rank 1's with the extra test-vendor arguments;
# each rank's SEV-SNP VCEK lands in $WORK/NAME<rank>.vcek. Returns once every one is ready.
serve() {
  local name="$1" n="$2" r
  shift 2
  for ((r = 0; r < n; r++)); do
    local extra=()
    [[ $r == 1 ]] && for a in "$@"; do extra+=("--vendor-arg=$a"); done
    # A copy of the roots per stand-in: each writes its report there before serving it.
    cp -r "$R" "$WORK/$name$r.roots"
    python3 tests/cli/fake_tsm.py "$WORK/$name$r" --provider "$PROVIDER" --vendor "$VENDOR" --vendor-dir "$WORK/$name$r.roots" \
      --vcek-to "$WORK/$name$r.vcek" --ready "$WORK/$name$r.ready" "${extra[@]}" 2>>"$WORK/fake.log" &
    FAKES+=($!)
  done
  for ((r = 0; r < n; r++)); do
    for _ in $(seq 1 600); do [[ -e "$WORK/$name$r.ready" ]] && break; sleep 0.1; done
  done
}

# make_expired_crl CA_CERT CA_KEY OUT: a revocation list of that CA, revoking nothing, past its
# nextUpdate (2020-02-01T00:00:00Z), made with openssl ca.
make_expired_crl() {
  local ca
  ca=$(mktemp -d -p "$WORK")
  touch "$ca/index.txt" && echo 01 >"$ca/crlnumber"
  printf '[ca]\ndefault_ca = d\n[d]\ndatabase = %s\ncrlnumber = %s\ndefault_md = sha256\n' \
    "$ca/index.txt" "$ca/crlnumber" >"$ca/ca.cnf"
  openssl ca -batch -config "$ca/ca.cnf" -gencrl -keyfile "$2" -cert "$1" \
    -crl_lastupdate 20200101000000Z -crl_nextupdate 20200201000000Z -out "$3" 2>/dev/null
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
