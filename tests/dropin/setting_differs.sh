#!/usr/bin/env bash
# setting_differs.sh MPIEXEC NP PROGRAM DROPIN_LIB: under the drop-in, a
# setting every rank must share set on rank 0 alone (NBR_DISABLE, an
# algorithm, a node size, the graph check): every rank's creation answers
# MPI_ERR_INFO_VALUE and the log names the setting; with the same setting
# on every rank, creation succeeds.
set -euo pipefail
mpiexec=$1 np=$2 program=$3 dropin=$4
source "$(dirname "$0")/../scripts/launcher.sh"
nbr_launcher "$mpiexec"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
common=(env LD_PRELOAD="$dropin" NBR_DEVICE=off)
for setting in NBR_DISABLE=1 NBR_ALGORITHM=halving NBR_RANKS_PER_NODE=1 NBR_CHECK_GRAPH=0; do
  name=${setting%%=*}
  # rank 0 alone: its launcher's rank variable (Open MPI's, or PMI's)
  out=$("${launch[@]}" -np "$np" "${common[@]}" bash -c \
    'if [[ ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-}} == 0 ]]; then export "$1"; fi; exec "$2"' \
    setting_differs "$setting" "$program" 2>"$log")
  got=$(grep -c "creation MPI_ERR_INFO_VALUE, communicator null" <<<"$out" || true)
  [[ "$got" == "$np" ]] ||
    { echo "setting_differs ($setting on rank 0): $got of $np ranks refused" >&2; echo "$out" "$(cat "$log")" >&2; exit 1; }
  grep -q "$name" "$log" ||
    { echo "setting_differs ($setting): the log does not name $name" >&2; cat "$log" >&2; exit 1; }
  echo "setting_differs: $setting on rank 0 alone: MPI_ERR_INFO_VALUE on all $np ranks"
  out=$("${launch[@]}" -np "$np" "${common[@]}" "$setting" "$program" 2>/dev/null)
  got=$(grep -c "creation succeeded, communicator made" <<<"$out" || true)
  [[ "$got" == "$np" ]] ||
    { echo "setting_differs ($setting on every rank): $got of $np ranks made it" >&2; echo "$out" >&2; exit 1; }
done
