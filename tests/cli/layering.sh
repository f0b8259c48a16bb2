#!/usr/bin/env bash
# The layering of docs/architecture.md, checked on the includes: every folder includes only the
# folders below it; and the length of every function (tools/dev/function_lengths.py). Runs from the
# repository root (CTest's working directory).
source "$(dirname "$0")/lib.sh" "$@"
layer() { # what pattern folders...: no file in the folders may include a path matching pattern
  local what="$1" pattern="$2"
  shift 2
  local hits folder
  # A folder that does not exist would check nothing and pass: refuse it.
  for folder in "$@"; do
    [[ -e $folder ]] || { echo "FAIL: $what: no folder or file $folder"; fails=$((fails + 1)); return; }
  done
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
  "models/(gpt2|bert|llama|resnet)" engine
layer "no source folder includes test code (test-only types live under tests/)" "tests/" \
  base tee core engine models data comm platform bench study tools

# Rooms inside a floor: the seams at the floor's root, one sibling folder per family (README.md of each).
# comm/: the algorithms see only the seams (channel, transport, memory, send schedule), never a
# transport, the sealed channel or the adversary; the seams see none of the rooms.
layer "comm/'s seams (its root) include none of its rooms" "comm/(transport|allreduce|secure|adversary)/" \
  comm/*.h comm/*.cpp
layer "the all-reduce algorithms include no transport, secure or adversary header" \
  "comm/(transport|secure|adversary)/" comm/allreduce
layer "comm/transport/ includes no algorithm, secure or adversary header" "comm/(allreduce|secure|adversary)/" \
  comm/transport
layer "comm/secure/ includes no transport, algorithm or adversary header" "comm/(transport|allreduce|adversary)/" \
  comm/secure
layer "comm/adversary/ sits on the seams and comm/secure/ only" "comm/(transport|allreduce)/" comm/adversary
# engine/: run/ assembles a run from the other rooms; they use only engine/'s root (checkpoint/ also keys/).
layer "engine/'s root includes none of its rooms" "engine/(run|gradients|checkpoint|keys|input)/" \
  engine/*.h engine/*.cpp
layer "engine/gradients/ uses only engine/'s root" "engine/(run|checkpoint|keys|input)/" engine/gradients
layer "engine/checkpoint/ uses engine/keys/ and engine/'s root" "engine/(run|gradients|input)/" engine/checkpoint
layer "engine/keys/ uses only engine/'s root" "engine/(run|gradients|checkpoint|input)/" engine/keys
layer "engine/input/ uses only engine/'s root" "engine/(run|gradients|checkpoint|keys)/" engine/input

# tee/: the primitives at its root; crypto/ seals (detail/ is its core), identity/ says who a rank is.
layer "tee/'s root includes none of its rooms" "tee/(crypto|identity|evidence|detail|cuda)/" tee/*.h tee/*.cpp
layer "tee/crypto/ includes no identity or evidence header" "tee/(identity|evidence)/" tee/crypto tee/detail
layer "tee/identity/ includes no evidence header" "tee/evidence/" tee/identity

# Every folder of our code says in a README.md what it holds and what it may use. (Python's byte-code
# caches are not ours: lab 6 imports tools/*.py in a clean environment, which writes tools/__pycache__/.)
for d in $(find base tee core engine models data comm platform bench study tools -type d -not -path '*/roots' -not -name __pycache__); do
  if [[ -f "$d/README.md" ]]; then passes=$((passes + 1)); else
    echo "FAIL: $d has no README.md"; fails=$((fails + 1)); fi
done

# The checker must also see a broken rule: an algorithm that includes a transport.
mkdir -p "$WORK/tree/comm/allreduce"
echo '#include "comm/transport/mpi_transport.h"' >"$WORK/tree/comm/allreduce/bad.cpp"
out=$(cd "$WORK/tree" && layer "bad" "comm/(transport|secure|adversary)/" comm/allreduce)
if [[ "$out" == *"FAIL: bad"*"comm/allreduce/bad.cpp"* ]]; then passes=$((passes + 1)); else
  echo "FAIL: the layer check missed an algorithm that includes a transport: $out"; fails=$((fails + 1)); fi

# docs/CONTRIBUTING.md: functions under ~80 lines, in every folder of our code, tests included. The checker
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
