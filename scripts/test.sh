#!/usr/bin/env bash
# The test command: installs what is missing, builds with warnings as
# errors, runs every test (unit and MPI) with ctest on Open MPI, then the
# sanitizer pass (scripts/sanitize.sh: ASan + UBSan build, unit tests and
# the MPI suites at 4 ranks; NBR_SANITIZE_PASS=0 skips it) and the MPICH
# pass (scripts/mpich-pass.sh: a build against MPICH, the drop-in tests,
# the MPI suites and the legal programs at 4 ranks; NBR_MPICH_PASS=0 skips
# it). Arguments go to the first ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Tests and benchmarks on, whatever an earlier configure of the build
# directory said (ctest runs the benchmarks' smoke tests too).
scripts/build.sh -DNBR_WERROR=ON -DNBR_BUILD_TESTS=ON -DNBR_BUILD_BENCH=ON
# mpirun refuses root unless told; CI and containers run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Two at a time: single-process tests run in pairs; every MPI test asks
# for both cores (PROCESSORS 2 or more) and so runs alone. No test found
# (a build without them) is a failure, not a pass.
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --no-tests=error -j 2 "$@"
if [[ "${NBR_SANITIZE_PASS:-1}" != 0 ]]; then
  scripts/sanitize.sh
fi
if [[ "${NBR_MPICH_PASS:-1}" != 0 ]]; then
  scripts/mpich-pass.sh
fi
