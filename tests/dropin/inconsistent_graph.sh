#!/usr/bin/env bash
# inconsistent_graph.sh MPIEXEC NP PROGRAM DROPIN_LIB: under the drop-in,
# every rank of a mismatched graph gets MPI_ERR_TOPOLOGY from all three
# call forms (plain MPI would hang: not run), and nbrcoll's log names the
# two ranks and their counts.
set -euo pipefail
mpiexec=$1 np=$2 program=$3 dropin=$4
source "$(dirname "$0")/../scripts/launcher.sh"
nbr_launcher "$mpiexec"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
out=$("${launch[@]}" -np "$np" env LD_PRELOAD="$dropin" NBR_DEVICE=off \
  "$program" 2>"$log")
echo "$out"
want="MPI_ERR_TOPOLOGY (blocking), MPI_ERR_TOPOLOGY (nonblocking), MPI_ERR_TOPOLOGY (persistent), request null"
got=$(grep -c "^rank [0-9]*: $want$" <<<"$out" || true)
[[ "$got" == "$np" ]] || { echo "inconsistent_graph: $got of $np ranks got the error" >&2; cat "$log" >&2; exit 1; }
grep -m1 "rank 0 lists rank 1 as an out-neighbor 1 time, rank 1 lists rank 0 as an in-neighbor 2 times" "$log" ||
  { echo "inconsistent_graph: the log does not name the pair" >&2; cat "$log" >&2; exit 1; }
