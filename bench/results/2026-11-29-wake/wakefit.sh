#!/bin/bash
# wakefit.sh MACHINE "US..." [sparse]: fits a per-phase wake (machine.h,
# wake_us) and the per-call start through the simulator to small calls.
# For each wake on a ladder, nbr_sim ($NBR_SIM, default build/bench/nbr_sim)
# prices naive, halving and combining on the calibration's two graphs
# (allgather of 8 B, 16 ranks, 4 a node, RSG 0.3 seed 101 and 0.8 seed
# 102: nbr_calibrate's small calls) with the start at 0; the start is the
# mean of measured less priced (least squares for that wake), and the rms
# of what is left scores the wake. US: the measured medians in that order
# (naive, halving, combining on 0.3, then on 0.8). With "sparse", three
# more first: the grid's RSG 0.05 (seed 1) at 16 B. Prints per wake the
# start, the rms and each call's priced / measured us.
# Run from the repository root.
set -euo pipefail
M=$1 meas=$2 sim=${NBR_SIM:-build/bench/nbr_sim}
calls=("0.3 101 8" "0.8 102 8")
[[ ${3:-} == sparse ]] && calls=("0.05 1 16" "${calls[@]}")
m=$(mktemp); trap 'rm -f "$m"' EXIT
for w in 0 4 8 12 16 20 30 40 60; do
  sed -e "s/^call .*/call start_us=0/" -e "/^cores/s/\$/ wake_us=$w/" "$M" >"$m"
  priced=""
  for c in "${calls[@]}"; do
    set -- $c
    priced+=" $("$sim" --machine "$m" --ranks 16 --ranks-per-node 4 --pattern rsg \
      --density "$1" --seed "$2" --min-bytes "$3" --max-bytes "$3" \
      --algorithms naive,halving,combining |
      awk -v b="$3" '$2 == b && $1 != "auto" { printf "%s ", $3 }')"
  done
  echo "$w $priced" | awk -v m="$meas" '{
    n = split(m, M, " "); s = 0
    for (i = 1; i <= n; i++) s += M[i] - $(i + 1)
    st = s / n; e = 0; line = ""
    for (i = 1; i <= n; i++) {
      r = M[i] - $(i + 1) - st; e += r * r
      line = line sprintf(" %.0f/%.0f", $(i + 1) + st, M[i])
    }
    printf "wake %2s us: start %6.1f us, rms %5.1f us |%s\n", $1, st, sqrt(e / n), line }'
done
