# Shared helpers for the CLI tests. Usage: source lib.sh "$@" (first argument: the teetrain binary).
set -euo pipefail
TT="$1"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fails=0
passes=0

# A tiny byte-level corpus and shards for fast runs.
make_corpus() {
  mkdir -p "$WORK/text"
  for i in $(seq 1 200); do printf 'Fortune number %d: a penny saved is a penny earned.\n%%\n' "$i"; done >"$WORK/text/corpus"
  "$TT" prepare-text "$WORK/text" --out "$WORK/data" --name tiny >/dev/null
}

# An emulated vendor with 4 certified devices; TEE runs of several ranks pass "${TRUST[@]}".
provision_trust() {
  "$TT" provision --out "$WORK/vendor" --devices 4 >/dev/null
  TRUST=(--trust-root "$WORK/vendor/vendor_root.crt" --device-identity "$WORK/vendor/device_{rank}.pem")
}

# expect_exit CODE PATTERN -- command...: the command exits with CODE and its stderr matches PATTERN.
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
  passes=$((passes + 1))
}

expect_eq() {
  if [[ "$1" == "$2" ]]; then passes=$((passes + 1)); else echo "FAIL: $3: '$1' != '$2'"; fails=$((fails + 1)); fi
}
expect_ne() {
  if [[ "$1" != "$2" ]]; then passes=$((passes + 1)); else echo "FAIL: $3: both '$1'"; fails=$((fails + 1)); fi
}

json_field() { sed -n "s/.*\"$2\": *\"\{0,1\}\([^\",]*\)\"\{0,1\}.*/\1/p" "$1" | head -1; }

finish() {
  echo "$passes passed, $fails failed"
  [[ $fails -eq 0 ]]
}
