#!/usr/bin/env bash
# Configures and builds nbrcoll in ${BUILD_DIR:-build} (extra CMake
# arguments pass through). Used by test.sh and demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "$@"
cmake --build "$BUILD_DIR" -j "$(nproc)"
