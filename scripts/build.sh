#!/usr/bin/env bash
# Configures and builds a CMake preset (default: release -> build/teetrain), optionally one target:
#   scripts/build.sh                    # release preset, every target
#   scripts/build.sh asan               # another preset, every target
#   scripts/build.sh release teetrain   # release preset, only the teetrain binary (what demo.sh runs)
# Compiles through ccache where it is installed (scripts/install-deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
target="${2:-}"
jobs="${TEETRAIN_JOBS:-$(nproc)}"
launcher=()
if command -v ccache >/dev/null; then
  # Rebuilds (and clones of the same tree at another path) reuse objects: paths under the repository
  # are hashed relative to it, and the working directory stays out of the hash of -g builds.
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake --preset "$preset" "${launcher[@]}" >/dev/null
cmake --build --preset "$preset" -j "$jobs" ${target:+--target "$target"}
