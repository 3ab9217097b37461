#!/bin/bash
# auto at the three 1 MiB points priced as ties (leader = halving, 107 ms)
cd /work/main
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M=/tmp/t1m/cluster.machine  # kept here as cluster.machine
bench/cluster/local-cluster.sh 4 4 build-dev/bench/nbr_calibrate --name t1m --max-bytes 16Mi --sweep 1 --output $M --link-gbit 1 --link-burst-bytes 125000 > /tmp/t1m/calibrate.txt 2>&1
for run in 1 2; do
for g in "rsg --density 0.7 --seed 1" "rsg --density 0.4 --seed 1" "moore --dims 2 --radius 2"; do
  t=$(echo $g | tr -d ' -' )
  echo "== run $run $g $(date +%T)"
  env NBR_MACHINE=$M bench/cluster/local-cluster.sh 4 4 build-dev/bench/nbr_bench --pattern $g --min-bytes 1048576 --max-bytes 1048576 --iters 7 --algorithms mpi,naive,halving,combining,leader,auto --step 4 --warmup 5 --block 5 --max-mem 640Mi --csv /tmp/t1m/$t-run$run.csv > /tmp/t1m/$t-run$run.txt 2>&1
done; done
echo done $(date +%T)
