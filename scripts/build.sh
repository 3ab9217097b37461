#!/usr/bin/env bash
# Configures and builds nbrcoll in ${BUILD_DIR:-build} (extra CMake
# arguments pass through, after the defaults, so they win). The tests are
# built whatever an earlier configure of the directory said; pass
# -DNBR_BUILD_TESTS=OFF to leave them out. Used by test.sh and gpu-run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
  -DNBR_BUILD_TESTS=ON "$@"
cmake --build "$BUILD_DIR" -j "$(nproc)"
