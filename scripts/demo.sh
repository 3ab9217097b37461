#!/usr/bin/env bash
# The demo: installs what is missing, builds, and runs nbr_bench on 8 local
# ranks (2 virtual nodes of 4): nbrcoll's default (auto) and each fixed
# algorithm against the MPI library's own MPI_Neighbor_allgather, results
# checked before timing. (As root, bench/cluster/local-cluster.sh runs the
# same on an emulated cluster with real links: bench/README.md.)
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
