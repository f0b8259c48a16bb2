#!/usr/bin/env bash
# The layering of docs/architecture.md, checked on the includes: every folder includes only the
# folders below it; and the length of every function (tools/dev/function_lengths.py). Runs from the
# repository root (CTest's working directory).
source "$(dirname "$0")/lib.sh" "$@"
layer() { # what pattern folders...: no file in the folders may include a path matching pattern
  local what="$1" pattern="$2"
  shift 2
  local hits
  hits=$(grep -rlE "#include \"($pattern)" "$@" --include=*.h --include=*.cpp --include=*.cu || true)
  if [[ -z "$hits" ]]; then passes=$((passes + 1)); else
    echo "FAIL: $what:"; echo "$hits"; fails=$((fails + 1)); fi
}
layer "nothing below tools/ includes the CLI" "tools/" base tee core engine models data comm platform bench study
layer "base/ includes only base/" "bench|comm|core|data|models|engine|platform|study|tee/" base
layer "tee/ includes only tee/ and base/" "bench|comm|core|data|models|engine|platform|study/" tee
layer "core/ includes only base/ and itself" "bench|comm|data|models|platform|study|tee/|engine/" core
layer "models/ use only core/" "bench|comm|data|platform|study|tee/|engine/" models
layer "data/ uses core/ and tee/" "bench|comm|models|platform|study|engine/" data
layer "comm/ uses core/ and tee/" "bench|data|models|platform|study|engine/" comm
layer "platform/ uses comm/, core/ and tee/" "bench|data|models|study|engine/" platform
layer "engine/ includes nothing above it" "bench|study/" engine
layer "bench/ (benchmarks) sits on the engine: not under study/" "study/" bench
layer "only tee/ uses the nonce-taking AEAD (tee/detail/)" "tee/detail/" base core models data comm platform engine bench study tools
layer "engine/ names no concrete model (models/ only through its registry)" \
  "models/(gpt2|bert|resnet)" engine

# DEVELOPERS.md: functions under ~80 lines, in every folder of our code, tests included. The checker
# must also see a long function when there is one: a made-up 85-line body.
if out=$(python3 tools/dev/function_lengths.py --max 80 base tee core engine comm platform models data bench study tools tests); then
  passes=$((passes + 1))
else
  echo "FAIL: functions over 80 lines:"; echo "$out"; fails=$((fails + 1))
fi
mkdir -p "$WORK/long"
{ echo "int long_one(int x) {"; for i in $(seq 85); do echo "  x += $i;  // {"; done; echo "  return x;"; echo "}"; } \
  >"$WORK/long/long.cpp"
out=$(python3 tools/dev/function_lengths.py --max 80 "$WORK/long") && rc=0 || rc=$?
[[ $rc -eq 1 && "$out" == *"long.cpp:1 int long_one"* ]] && passes=$((passes + 1)) ||
  { echo "FAIL: function_lengths.py missed an 87-line function (rc $rc): $out"; fails=$((fails + 1)); }
finish
