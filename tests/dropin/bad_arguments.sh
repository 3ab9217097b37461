#!/usr/bin/env bash
# bad_arguments.sh MPIEXEC NP PROGRAM DROPIN_LIB [ALGORITHMS]: under the
# drop-in, with auto and each algorithm, every rank gets the documented
# class from the blocking, nonblocking and persistent form of each
# forbidden call, and a correct call after them (plain MPI crashes on some:
# not run).
set -euo pipefail
mpiexec=$1 np=$2 program=$3 dropin=$4 algorithms=${5:-auto naive halving leader aggregate}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for algorithm in $algorithms; do
  out=$("$mpiexec" --oversubscribe -np "$np" -x LD_PRELOAD="$dropin" -x NBR_DEVICE=off \
    -x NBR_ALGORITHM="$algorithm" -x NBR_RANKS_PER_NODE=2 "$program" 2>/dev/null)
  for want in "MPI_IN_PLACE sendbuf: MPI_ERR_ARG, MPI_ERR_ARG, MPI_ERR_ARG" \
              "MPI_IN_PLACE recvbuf: MPI_ERR_ARG, MPI_ERR_ARG, MPI_ERR_ARG" \
              "no topology: MPI_ERR_TOPOLOGY, MPI_ERR_TOPOLOGY, MPI_ERR_TOPOLOGY" \
              "MPI_COMM_NULL: MPI_ERR_COMM, MPI_ERR_COMM, MPI_ERR_COMM" \
              "then a correct allgather: success, right"; do
    got=$(grep -c "^rank [0-9]*: $want$" <<<"$out" || true)
    [[ "$got" == "$np" ]] ||
      { echo "bad_arguments ($algorithm): $got of $np ranks said '$want'" >&2; echo "$out" >&2; exit 1; }
  done
  echo "bad_arguments ($algorithm): every rank got the documented classes"
done
