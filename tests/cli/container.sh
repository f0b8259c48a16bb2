#!/usr/bin/env bash
# The container image (Dockerfile at the repository root) in which the README's two commands run.
# Always: the Dockerfile is Debian 12 (the README's platform), installs through scripts/install-deps.sh
# and runs scripts/demo.sh by default, and .dockerignore keeps host build trees out. Where docker or
# podman can build (an engine, a reachable daemon, the base image or a network to pull it), it builds
# the image and checks inside it that every package the two commands need is installed and the tools
# they call are there. Otherwise it skips with the reason (exit 77). TEETRAIN_CONTAINER_DEMO=1 also
# runs the demo's emulated part inside the image (minutes: it builds teetrain there).
source "$(dirname "$0")/lib.sh" "$@"
REPO="$(cd "$(dirname "$0")/../.." && pwd)"

check() { # check NAME COMMAND...: one line per check
  if "${@:2}" >/dev/null 2>&1; then passes=$((passes + 1)); else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
check "the Dockerfile starts from Debian 12, the README's platform" grep -qx 'FROM debian:12' "$REPO/Dockerfile"
check "the Dockerfile installs through scripts/install-deps.sh" grep -qx 'RUN scripts/install-deps.sh.*' "$REPO/Dockerfile"
check "the image runs scripts/demo.sh by default" grep -qx 'CMD \["scripts/demo.sh"\]' "$REPO/Dockerfile"
check ".dockerignore keeps host build trees out of the image" grep -qx 'build\*/' "$REPO/.dockerignore"
check "the README shows how to build and run the image" grep -q 'docker build -t teetrain \.' "$REPO/README.md"
if ((fails > 0)); then
  echo "$passes passed, $fails failed"
  exit 1
fi

skip() {
  echo "SKIP: $1 ($passes static checks passed; the image was not built)"
  exit 77
}
engine=""
for e in docker podman; do command -v "$e" >/dev/null && { engine="$e"; break; }; done
[[ -n "$engine" ]] || skip "neither docker nor podman is installed"
timeout 20 "$engine" info >/dev/null 2>&1 || skip "$engine is installed but cannot reach its daemon or runtime"
if ! "$engine" image inspect debian:12 >/dev/null 2>&1; then
  timeout 300 "$engine" pull debian:12 >/dev/null 2>&1 || skip "$engine cannot pull debian:12 (no network?)"
fi

tag="teetrain-container-test-$$"
trap '"$engine" image rm -f "$tag" >/dev/null 2>&1; rm -rf "$WORK"' EXIT
if ! "$engine" build -t "$tag" "$REPO" >"$WORK/build.log" 2>&1; then
  tail -n 20 "$WORK/build.log"
  echo "FAIL: $engine build of the Dockerfile failed"
  exit 1
fi
inside() { "$engine" run --rm "$tag" bash -c "$1"; }
deps_present() { inside 'scripts/install-deps.sh' | grep -q 'all .* packages present'; }
tools_present() {
  inside 'cmake --version && mpirun --version && openssl version && python3 -c "import matplotlib" &&
          test -x scripts/demo.sh && test -x scripts/test.sh && test -d /usr/share/games/fortunes'
}
check "scripts/install-deps.sh finds every package installed in the image" deps_present
check "the tools and corpus the two commands use are in the image" tools_present
if [[ "${TEETRAIN_CONTAINER_DEMO:-0}" == "1" ]]; then
  check "scripts/demo.sh (emulated part) runs in the image" inside 'DEMO_PART=emulated scripts/demo.sh'
fi
echo "$passes passed, $fails failed"
((fails == 0))
