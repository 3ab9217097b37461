#!/bin/bash
# the g28 loss point timed twice: the grid's algorithm order, then auto and leader swapped
cd /work/main
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for algs in mpi,naive,halving,combining,leader,auto mpi,naive,halving,combining,auto,leader; do
  tag=${algs//,/-}
  env NBR_MACHINE=/tmp/g28/grid-cluster/cluster.machine bench/cluster/local-cluster.sh 4 4 build-dev/bench/nbr_bench --pattern moore --dims 3 --radius 1 --min-bytes 4194304 --max-bytes 4194304 --iters 7 --algorithms $algs --step 4 --warmup 5 --block 5 --max-mem 640Mi --csv /tmp/order/$tag.csv > /tmp/order/$tag.txt 2>&1
done
echo done > /tmp/order/done
