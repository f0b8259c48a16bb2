#!/usr/bin/env bash
# The test command: installs dependencies, builds the release and the ASan/UBSan presets and runs the
# whole CTest suite under both, and the communication tests under ThreadSanitizer. Idempotent; safe to
# re-run.
#   TEETRAIN_SKIP_ASAN=1 TEETRAIN_SKIP_TSAN=1 scripts/test.sh   # release suite only (faster iteration)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1
# Idle OpenMP threads sleep: test binaries share 2 cores with MPI ranks and comm threads.
export OMP_WAIT_POLICY=passive
jobs="${TEETRAIN_JOBS:-$(nproc)}"

echo "== release build and tests"
scripts/build.sh release
ctest --preset release -j "$jobs"

if [[ "${TEETRAIN_SKIP_TSAN:-0}" != "1" ]]; then
  # The communication code is threaded (the reducer's comm thread, crypto pools, in-process ranks):
  # its tests run under ThreadSanitizer too (Open MPI's own reports: tests/tsan.supp).
  echo "== ThreadSanitizer build and comm tests"
  scripts/build.sh tsan comm_tests
  ctest --preset tsan -j "$jobs"
fi

if [[ "${TEETRAIN_SKIP_ASAN:-0}" != "1" ]]; then
  echo "== ASan/UBSan build and tests"
  scripts/build.sh asan
  ctest --preset asan -j "$jobs"
fi
echo "== all test suites passed"
