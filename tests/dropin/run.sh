#!/usr/bin/env bash
# run.sh MPIEXEC NP PROGRAM DROPIN_LIB [ALGORITHMS [EXPECTED]]: runs a
# plain MPI program without and with the drop-in (LD_PRELOAD): auto, then
# nbrcoll's own plans on virtual nodes of 2 (default: naive, one round;
# combining and aggregate, several rounds, which move only while the
# program waits or tests). Every output must be the plain one, or EXPECTED
# where it is given (what MPI itself does after an error may vary from run
# to run: the plain output is then shown, not compared), and with
# NBR_LOG=info nbrcoll must say it set the communicator up (it carried the
# collectives). From the environment: PROGRAM_ARGS, every run's
# arguments; PLAIN_ARGS, the plain run's besides (--reference: the program's own point-to-point yardstick, where the MPI
# library's collectives are not one); EXPECTED_AUTO, what auto must print
# where it differs from EXPECTED (auto may run the library's own call,
# which reports what the library reports).
set -euo pipefail
mpiexec=$1 np=$2 program=$3 dropin=$4 algorithms=${5:-naive combining aggregate}
expected=${6:-}
source "$(dirname "$0")/../scripts/launcher.sh"
nbr_launcher "$mpiexec"
# The plain run has no nbrcoll in it: under the sanitizer pass, Open MPI's
# own leaks there (its persistent collectives) are not ours to report.
read -ra args <<<"${PROGRAM_ARGS:-}"
read -ra plain_args <<<"${PLAIN_ARGS:-}"
plain=$(ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  "${launch[@]}" -np "$np" "$program" "${args[@]}" "${plain_args[@]}")
echo "plain MPI${PLAIN_ARGS:+ ($PLAIN_ARGS)}: $plain"
if [[ -n $expected ]]; then
  [[ "$plain" == "$expected" ]] || echo "(plain MPI differs from the expected output; not compared)"
  plain=$expected
fi
auto_expected=${EXPECTED_AUTO:-$plain}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
with=$("${launch[@]}" -np "$np" env LD_PRELOAD="$dropin" NBR_LOG=info NBR_DEVICE=off \
  "$program" "${args[@]}" 2>"$log")
echo "drop-in (auto): $with"
[[ "$auto_expected" == "$with" ]] || { echo "dropin: outputs differ" >&2; cat "$log" >&2; exit 1; }
grep -q "info\] comm 0: $np ranks" "$log" ||
  { echo "dropin: nbrcoll did not take the communicator over" >&2; cat "$log" >&2; exit 1; }
grep -m1 "info\] comm 0:" "$log"
# (auto keeps the library on one node: force nbrcoll's own plans)
for algorithm in $algorithms; do
  own=$("${launch[@]}" -np "$np" env LD_PRELOAD="$dropin" \
    NBR_ALGORITHM="$algorithm" NBR_RANKS_PER_NODE=2 NBR_DEVICE=off "$program" "${args[@]}")
  printf 'drop-in (%s): %s\n' "$algorithm" "$own"
  [[ "$plain" == "$own" ]] || { echo "dropin: $algorithm's output differs" >&2; exit 1; }
done
