#!/usr/bin/env bash
# The MPICH pass of the test command: builds nbrcoll against MPICH
# (-DNBR_MPI=mpich: mpicc.mpich, mpiexec.mpich; warnings as errors; no GPU
# toolchain, no benchmarks) in ${MPICH_BUILD_DIR:-build-mpich} and runs
# every drop-in test, the MPI suites at 4 ranks and the legal programs at
# 4 ranks under MPICH's launcher. Extra arguments go to ctest.
#
# Why this subset: MPICH's ranks poll without yielding, so 4 ranks on 2
# cores run its tests 3 to 15 times slower than Open MPI's (legal.np4:
# 120 programs a configuration under Open MPI in 1-3 s, about 85 in 30 s
# under MPICH); the 8- and 16-rank suites, the sanitizers and the
# application suites run on Open MPI only; so do the two sweeps that
# repeat the same plans over many shapes (Collectives.Moore, 20 s here
# under MPICH, and Cartesian.EveryCollectiveOnEveryShape, 60 s: MPICH's
# cartesian placement is Cartesian.BlockRuleByHand's). 8 legal programs
# under each of the 17 configurations take about 50 s.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${MPICH_BUILD_DIR:-build-mpich}
# The optimization of the main build without its debug information
# (-g: a third of the C++ tests' compile time), which nothing here reads.
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNBR_WERROR=ON -DNBR_MPI=mpich \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" \
  -DNBR_ENABLE_HIP=OFF -DNBR_ENABLE_CUDA=OFF -DNBR_BUILD_BENCH=OFF -DNBR_LEGAL_SEEDS_NP4=8
suites=(nbr_mpi_collectives nbr_mpi_errors nbr_mpi_topologies nbr_mpi_host_algorithms)
cmake --build "$dir" -j "$(nproc)" --target nbrcoll_mpi dropin_programs legal_programs \
  legal_programs_api "${suites[@]}"
export GTEST_FILTER=-Collectives.Moore:Cartesian.EveryCollectiveOnEveryShape
ctest --test-dir "$dir" --output-on-failure --no-tests=error -j 2 \
  -R '^(dropin\.|mpi\.(collectives|errors|topologies|host_algorithms)\.np4$|legal\.np4$)' "$@"
