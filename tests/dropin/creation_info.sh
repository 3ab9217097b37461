#!/usr/bin/env bash
# creation_info.sh MPIEXEC NP PROGRAM DROPIN_LIB: creation_info without and
# with the drop-in prints the same; under the drop-in nbrcoll takes exactly
# one communicator (the nbr_disable ring stays MPI's), set up with the
# combining algorithm its creation info names.
set -euo pipefail
mpiexec=$1 np=$2 program=$3 dropin=$4
source "$(dirname "$0")/../scripts/launcher.sh"
nbr_launcher "$mpiexec"
# The plain run has no nbrcoll in it: under the sanitizer pass, Open MPI's
# own leaks there (its persistent collectives) are not ours to report.
plain=$(ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  "${launch[@]}" -np "$np" "$program")
log=$(mktemp)
trap 'rm -f "$log"' EXIT
with=$("${launch[@]}" -np "$np" env LD_PRELOAD="$dropin" NBR_LOG=info NBR_DEVICE=off \
  "$program" 2>"$log")
echo "plain MPI: $plain"
echo "drop-in:   $with"
[[ "$plain" == "$with" ]] || { echo "creation_info: outputs differ" >&2; cat "$log" >&2; exit 1; }
taken=$(grep -c "^\[nbrcoll 0 info\] comm [0-9]*: $np ranks" "$log" || true)
grep "^\[nbrcoll 0 info\] comm [0-9]*: $np ranks" "$log" || true
[[ "$taken" == 1 ]] || { echo "creation_info: nbrcoll took $taken communicators, not 1" >&2; exit 1; }
grep -q "^\[nbrcoll 0 info\] comm [0-9]*: $np ranks.*algorithm combining" "$log" ||
  { echo "creation_info: the creation info's algorithm was not applied" >&2; exit 1; }
