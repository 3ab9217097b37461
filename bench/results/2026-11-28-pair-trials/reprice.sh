#!/bin/bash
# reprice.sh: prices g24 (the full cluster grid of ../2026-11-28-sim-confirm)
# and g25 (its Moore grid) with their own calibrations and with each of the
# six calibrations here (pairs-only-N: the lone pairs' median of 5 trials,
# the exchange one trial; trials-N: all three rates the median of 5
# interleaved trials, as nbr_calibrate now measures them). Writes the
# lines ../2026-11-27-plateau/reprice.sh prints (grid;pattern;bytes;
# algorithm;measured;predicted;predicted/measured). Run from the
# repository root: bench/results/2026-11-28-pair-trials/reprice.sh > r.txt
set -euo pipefail
here=bench/results/2026-11-28-pair-trials
others=() only="g24 g25"
for g in "g24 2026-11-28-sim-confirm/grid-cluster" "g25 2026-11-28-sim-confirm/grid-cluster-moore"; do
  set -- $g
  for kind in pairs-only trials; do
    for i in 1 2 3; do
      label=$1-${kind%-only}$i
      others+=("$label $2 $here/$kind-$i.machine")
      only+=" $label"
    done
  done
done
OTHERS=$(IFS=,; echo "${others[*]}") ONLY=$only NETFIT=1 BR=sweep \
  bench/results/2026-11-27-plateau/reprice.sh
