#!/usr/bin/env bash
# nbr_calibrate measures this machine (4 ranks, virtual sockets of 2: the
# socket and node paths) and writes a machine file that nbr_sim then reads
# and predicts with: the two tools agree on the format, and the measured
# numbers are sane (positive, the file says what was measured).
# usage: calibrate_then_simulate.sh MPIEXEC_PREFIX... -- NBR_CALIBRATE NBR_SIM
set -euo pipefail
mpiexec=()
while [[ $1 != -- ]]; do mpiexec+=("$1"); shift; done
calibrate=$2 sim=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${mpiexec[@]}" -np 4 "$calibrate" --ranks-per-socket 2 --max-bytes 256Ki \
    --sweep 1 --name local-test --output "$work/local.machine"
cat "$work/local.machine"
grep -q "^name local-test$" "$work/local.machine"
grep -q "path socket  measured" "$work/local.machine"
grep -q "path node    measured" "$work/local.machine"
grep -q "path network not measured" "$work/local.machine"
# the library's small calls, timed for the per-call start and the hand-off
grep -Eq "^#   small calls" "$work/local.machine"
grep -Eq "^#     naive 0.3 [0-9.]+ [0-9.]+, halving 0.3 [0-9.]+ [0-9.]+, combining 0.3" "$work/local.machine"
# (the fit's value where the line meets zero messages: on a loaded machine
# it can come out below zero, and then no call line is written)
grep -Eq "^#   call start: -?[0-9.]+ us at zero messages" "$work/local.machine"
# copies timed at three points, and never written slower than the socket
# path's largest message (one copy at least): its one-way MB/s, last sweep row
grep -Eq "^#   copies: [0-9.]+ GB/s for 262144 bytes \(the least of 15 timings" "$work/local.machine"
awk '/^# sweep socket/ { s = 1; next } s && /^#  +[0-9]/ { floor = $4 / 1e3 } /^# sweep node/ { s = 0 }
     /^path copy/ { for (i = 1; i <= NF; i++) if ($i ~ /^gbytes_per_s=/) { sub(/.*=/, "", $i); copy = $i } }
     END { if (!(floor > 0 && copy + 1e-4 >= floor)) { print "copy " copy " GB/s below the socket floor " floor; exit 1 } }' \
  "$work/local.machine"
"$sim" --machine "$work/local.machine" --ranks 16 --ranks-per-node 16 \
    --ranks-per-socket 8 --min-bytes 1Ki --max-bytes 1Ki --algorithms naive,halving |
    tee "$work/sim.txt"
grep -Eq "^halving +1Ki +[0-9]+\.[0-9]+ +[0-9.]+" "$work/sim.txt"
