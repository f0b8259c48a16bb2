#!/usr/bin/env bash
# Configures and builds a CMake preset (default: release -> build/teetrain).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
jobs="${TEETRAIN_JOBS:-$(nproc)}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
