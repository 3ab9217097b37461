#!/bin/bash
# combining's step on Moore d3 r1 (256 B -> 512 B blocks) under Open MPI settings
# usage: combining-step.sh LABEL "MCA ARGS": one line per block size (output in $OUT, default /tmp)
cd "$(dirname "$0")/../../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
label=$1 args=$2
for b in 256 512; do
  LC_MPIRUN_ARGS="$args" bench/cluster/local-cluster.sh 4 4 build-dev/bench/nbr_bench --pattern moore --dims 3 --radius 1 \
    --min-bytes $b --max-bytes $b --iters 500 --algorithms naive,halving,combining --warmup 5 --block 5 > ${OUT:-/tmp}/$label-$b.txt 2>&1
  echo "$label block $b: $(grep -E '^ +[0-9]+ +(naive|halving|combining)' ${OUT:-/tmp}/$label-$b.txt | awk '{printf "%s %s  ", $2, $3}')"
done
