#!/usr/bin/env bash
# The demo: installs what is missing, builds, and runs nbr_bench on 8 local
# ranks (2 virtual nodes of 4): nbrcoll's default (auto) and each fixed
# algorithm against the MPI library's own MPI_Neighbor_allgather, results
# checked before timing, and ends with their plot (a PNG). (As root,
# bench/cluster/local-cluster.sh runs the same on an emulated cluster with
# real links: bench/README.md.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
BUILD_TYPE=Release scripts/build.sh -DNBR_BUILD_TESTS=OFF >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --oversubscribe -np 8 "${BUILD_DIR:-build}/bench/nbr_bench" \
  --pattern rsg --density 0.4 --seed 1 --ranks-per-node 4 \
  --min-bytes 8 --max-bytes 256Ki --warmup 5 --iters 30 \
  --algorithms mpi,auto,naive,leader,halving,combining --csv "${BUILD_DIR:-build}/demo.csv" "$@"
echo "CSV: ${BUILD_DIR:-build}/demo.csv"

# One unmodified MPI program (it knows nothing of nbrcoll: nonblocking
# neighborhood collectives waited on beside its own requests), without and
# with the drop-in: the same answer, and nbrcoll's log says it carried them.
build=${BUILD_DIR:-build}
# (GCC takes Open MPI's MPI_UNWEIGHTED sentinel for an empty array)
mpicc -O2 -Wno-stringop-overread tests/dropin/rsg_nonblocking.c -o "$build/rsg_nonblocking"
echo "plain MPI:  $(mpirun --oversubscribe -np 8 "$build/rsg_nonblocking")"
echo "drop-in:    $(mpirun --oversubscribe -np 8 -x LD_PRELOAD="$PWD/$build/src/libnbrcoll_mpi.so" \
  -x NBR_RANKS_PER_NODE=4 -x NBR_LOG=info "$build/rsg_nonblocking" 2>"$build/dropin.log")"
grep -m2 "info\] comm 0" "$build/dropin.log"

# The timings as a figure: speedup over mpi against the message size, one
# line per algorithm (bench/plot.py, gnuplot); its path is the last line.
python3 bench/plot.py "$build/demo.csv" | sed 's/^/plot: /'
