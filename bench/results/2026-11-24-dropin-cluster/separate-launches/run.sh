#!/usr/bin/env bash
# The runs behind README.md here, from the repository root after a
# Release build in build/ (root: local-cluster.sh makes namespaces).
# For each pattern, three rounds of: MPI as it is, the drop-in with the
# built-in machine model (a user who sets nothing), the drop-in with the
# emulated cluster's machine file. Rounds alternate so that drift of this
# shared machine falls on all three alike.
set -eu
OUT=bench/results/2026-11-24-dropin-cluster/separate-launches
BIN=build/bench/plain_mpi_bench
LIB=$PWD/build/src/libnbrcoll_mpi.so
LC=bench/cluster/local-cluster.sh
COMMON="--bytes 64,4096,65536 --iters 20 --warmup 3 --repeats 5"
run() { # name, pattern args...
  local name=$1; shift
  for round in 1 2 3; do
    $LC 4 4 $BIN "$@" $COMMON > $OUT/$name-mpi-$round.txt
    LC_MPIRUN_ARGS="-x LD_PRELOAD=$LIB" NBR_LOG=info \
      $LC 4 4 $BIN "$@" $COMMON > $OUT/$name-dropin-$round.txt 2> $OUT/$name-dropin-$round.log
    LC_MPIRUN_ARGS="-x LD_PRELOAD=$LIB" NBR_LOG=info NBR_MACHINE=$PWD/topo/emulated-4x4-1gbit.machine \
      $LC 4 4 $BIN "$@" $COMMON > $OUT/$name-dropin-machine-$round.txt 2> $OUT/$name-dropin-machine-$round.log
  done
}
run moore-d2-r2 --pattern moore --dims 2 --radius 2
run rsg-0.3 --pattern rsg --density 0.3 --seed 1
