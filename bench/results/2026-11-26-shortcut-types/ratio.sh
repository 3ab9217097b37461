#!/bin/bash
# prints nbr/direct median ratio for reps runs at 16 and 1024
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for rep in $(seq ${REPS:-4}); do for b in 16 1024; do
  mpirun --oversubscribe -np 8 ${XENV} -x LD_LIBRARY_PATH ${BIN:-/tmp/dup/nbr3} $b ${ALG:-auto} | awk -v b=$b '/mpi-on-g/{g=$3} !/mpi-on-/ && /median/{m=$3} /mpi-on-d/{d=$3} END{printf "%s:%.3f ", b, m/((g+d)/2)}'
done; done; echo
