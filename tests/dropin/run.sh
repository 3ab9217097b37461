#!/usr/bin/env bash
# run.sh MPIEXEC NP PROGRAM DROPIN_LIB: runs a plain MPI program without and
# with the drop-in (LD_PRELOAD; auto, then naive's plans on virtual nodes);
# the outputs must be identical, and with NBR_LOG=info nbrcoll must say it
# set the communicator up (it carried the collectives).
set -euo pipefail
mpiexec=$1 np=$2 program=$3 dropin=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
plain=$("$mpiexec" --oversubscribe -np "$np" "$program")
log=$(mktemp)
trap 'rm -f "$log"' EXIT
with=$("$mpiexec" --oversubscribe -np "$np" -x LD_PRELOAD="$dropin" -x NBR_LOG=info \
  -x NBR_DEVICE=off "$program" 2>"$log")
# and with nbrcoll's own plans, not the library's (auto keeps the library
# on one node): naive on virtual nodes of 2
own=$("$mpiexec" --oversubscribe -np "$np" -x LD_PRELOAD="$dropin" -x NBR_ALGORITHM=naive \
  -x NBR_RANKS_PER_NODE=2 -x NBR_DEVICE=off "$program")
echo "plain MPI: $plain"
echo "drop-in:   $with"
echo "naive:     $own"
[[ "$plain" == "$with" && "$plain" == "$own" ]] ||
  { echo "dropin: outputs differ" >&2; cat "$log" >&2; exit 1; }
grep -q "info\] comm 0: $np ranks" "$log" ||
  { echo "dropin: nbrcoll did not take the communicator over" >&2; cat "$log" >&2; exit 1; }
grep -m1 "info\] comm 0:" "$log"
