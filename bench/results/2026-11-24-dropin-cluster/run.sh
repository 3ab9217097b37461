#!/usr/bin/env bash
# The runs behind README.md here, from the repository root after a build in
# build/ (root: local-cluster.sh makes namespaces). plain_mpi_bench under
# the drop-in with --reference yes: every call timed on the program's
# communicator (nbrcoll's) and, interleaved, on a twin created with
# nbr_disable=true (MPI's own collective), in the same run. Nothing set:
# auto with the built-in machine model, as a user who changes nothing gets.
# --warmup 40 covers auto's trials (up to ~60 blocking calls of a new size).
set -eu
OUT=bench/results/2026-11-24-dropin-cluster
BIN=build/bench/plain_mpi_bench
LIB=$PWD/build/src/libnbrcoll_mpi.so
LC=bench/cluster/local-cluster.sh
COMMON="--bytes 64,4096,65536 --iters 20 --warmup 40 --repeats 5 --reference yes"
for round in 1 2; do
  for pattern in "moore-d2-r2 --pattern moore --dims 2 --radius 2" \
                 "rsg-0.3 --pattern rsg --density 0.3 --seed 1"; do
    set -- $pattern
    name=$1; shift
    LC_MPIRUN_ARGS="-x LD_PRELOAD=$LIB" NBR_LOG=info \
      $LC 4 4 $BIN "$@" $COMMON > $OUT/$name-$round.txt 2> $OUT/$name-$round.log
    /usr/bin/python3 bench/dropin_speedup.py $OUT/$name-$round.txt > $OUT/$name-$round.md
  done
done
