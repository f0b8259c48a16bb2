#!/usr/bin/env bash
# Configures and builds a CMake preset (default: release -> build/teetrain), optionally one target:
#   scripts/build.sh                    # release preset, every target
#   scripts/build.sh asan               # another preset, every target
#   scripts/build.sh release teetrain   # release preset, only the teetrain binary (what demo.sh runs)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
target="${2:-}"
jobs="${TEETRAIN_JOBS:-$(nproc)}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs" ${target:+--target "$target"}
