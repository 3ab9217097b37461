#!/usr/bin/env bash
# The sanitizer pass of the test command: builds nbrcoll with
# AddressSanitizer + UndefinedBehaviorSanitizer in ${SAN_BUILD_DIR:-build-sanitize}
# (host code only: no GPU toolchain; the emulated device layer still runs)
# and runs the unit tests and the MPI suites at 4 ranks under them (which
# ones: below). Any report fails the run: a leak (Open MPI's own, listed
# with reasons in tests/sanitizers/lsan.supp, excepted), an invalid access,
# undefined behaviour. Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=${SAN_BUILD_DIR:-build-sanitize}
# Only what the pass runs (below): the unit tests, four MPI suites, three
# drop-in programs and the drop-in library; no benchmarks. At -O1, as the
# sanitizers' documentation advises: the instrumented C++ tests compile in
# half the time of -O2 (test_registry.cpp: 21 s against 39 s of CPU), and
# the checks are the same; -g keeps file and line in the reports.
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNBR_WERROR=ON \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG" \
  -DNBR_SANITIZE=address,undefined -DNBR_ENABLE_HIP=OFF -DNBR_ENABLE_CUDA=OFF -DNBR_BUILD_BENCH=OFF
cmake --build "$dir" -j "$(nproc)" --target nbr_unit_tests nbr_mpi_collectives nbr_mpi_errors \
  nbr_mpi_host_algorithms nbr_mpi_faults dropin_persistent_alltoallv dropin_inconsistent_graph \
  dropin_creation_info nbrcoll_mpi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# exitcode: a report must fail the process even where a test would pass.
# verify_asan_link_order=0: the drop-in tests preload libnbrcoll_mpi ahead
# of the program's own libasan; it defines no allocator, so ASan's still
# serves every malloc.
export ASAN_OPTIONS="detect_leaks=1:exitcode=86:strict_string_checks=1:detect_stack_use_after_return=1:verify_asan_link_order=0"
# whole stacks through Open MPI (no frame pointers) for the suppressions
export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=87"
# Under ASan, hwloc's PCI discovery (libpciaccess reading pci.ids, a
# realloc a line: ASan's realloc always copies) took about 6 s in every
# process's MPI_Init, 25 s a 4-rank test; this build has no GPU backend, so
# nothing here needs PCI locality.
export HWLOC_COMPONENTS=-pci
# The unit tests, less the seeded sweeps over thousands of graphs (they run
# in full without sanitizers: under them NaivePlans.ErdosRenyiSweep took
# 205 s against 4, and the seven 470 s); the other tests of their suites
# still build and check every plan kind here. The MPI suites at 4 ranks
# but mpi.topologies (the same plans from cartesian and MPI-1 graph
# communicators; 40 s under the sanitizers, so it runs without them only),
# and the drop-in on a persistent alltoallv and its set-up paths (the
# legal programs and the progress test run without sanitizers only: 120
# legal seeds took 218 s under them, and CI has 30 minutes). Two at a
# time: unit tests run in pairs, every MPI test asks for both slots
# (PROCESSORS 2).
# mpi.collectives leaves its Moore stencils out here (GTEST_FILTER): 42 s
# of its 91 under the sanitizers, the same executors as its other graphs,
# whose plans the unit tests build on Moore neighborhoods under them too;
# they run in full at 2-16 ranks without sanitizers.
export GTEST_FILTER=-Collectives.Moore
mpi='^mpi\.(collectives|errors|host_algorithms|faults)\.np4$'
dropin='^dropin\.(persistent_alltoallv|inconsistent_graph|creation_info)\.np4$'
sweeps='ErdosRenyiSweep|VerifierOverSeededGraphs|At2048Ranks|AllgathervWithItsSizeRound|VerifiedOnManyGraphsAndMachines'
ctest --test-dir "$dir" --output-on-failure --no-tests=error -j 2 -R "^[A-Z]|$mpi|$dropin" -E "$sweeps" "$@"
