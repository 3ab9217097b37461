#!/usr/bin/env bash
# bad_arguments.sh MPIEXEC NP PROGRAM DROPIN_LIB [ALGORITHMS]: under the
# drop-in, with auto and each algorithm, every rank gets the documented
# class from the blocking, nonblocking and persistent form of each
# forbidden call, and a correct call after them (plain MPI crashes on some:
# not run).
set -euo pipefail
mpiexec=$1 np=$2 program=$3 dropin=$4 algorithms=${5:-auto naive halving leader aggregate}
source "$(dirname "$0")/../scripts/launcher.sh"
nbr_launcher "$mpiexec"
for algorithm in $algorithms; do
  out=$("${launch[@]}" -np "$np" env LD_PRELOAD="$dropin" NBR_DEVICE=off \
    NBR_ALGORITHM="$algorithm" NBR_RANKS_PER_NODE=2 "$program" 2>/dev/null)
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
