#!/bin/bash
# score-grids.sh [burst|eager|both|none]: nbr_sim of the current build
# (build/bench/nbr_sim) against four earlier cluster grids, each with its
# own calibration plus the interfaces' burst (burst_bytes=125000, the
# bucket local-cluster.sh gives a 1 Gbit/s link) and/or Open MPI's eager
# limit (eager_bytes=65472), which nbr_calibrate did not write then. The
# 2026-11-25 grid's file had no cores line: it gets the one
# ../2026-11-26-handoff used (rate 0.165 of ../2026-11-25-network-cores,
# hand-off 6.79 us, start 423 us). Prints each grid's score (predicted
# speedups over naive within 25 % of the measured). Run from the
# repository root.
set -euo pipefail
what=${1:-both}
R=bench/results S=$R/2026-11-24-sim-cpu
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fields() { # machine file -> with the fields asked for
  local burst='' eager=''
  [[ $what == burst || $what == both ]] && burst=' burst_bytes=125000'
  [[ $what == eager || $what == both ]] && eager=' eager_bytes=65472'
  sed -e "s/^nics \(.*\)$/nics \1$burst/" \
      -e "s/^cores \([0-9]* per=job network_gbytes_per_s=[0-9.e+-]*\)/cores \1$eager/" "$1"
}
grep -v '^call' $R/2026-11-25-grid-confirm/grid/cluster.machine >"$tmp/g1125.in"
echo "cores 2 per=job network_gbytes_per_s=0.165 message_us=6.79" >>"$tmp/g1125.in"
echo "call start_us=423" >>"$tmp/g1125.in"
for item in "2026-11-25-grid-confirm/grid $tmp/g1125.in" \
            "2026-11-26-handoff/grid $R/2026-11-26-handoff/grid/cluster.machine" \
            "2026-11-26-fair-nics/grid $R/2026-11-26-fair-nics/grid/cluster.machine" \
            "2026-11-26-fair-nics/grid-cluster-block5 $R/2026-11-26-fair-nics/grid-cluster-block5/cluster.machine"; do
  set -- $item
  fields "$2" >"$tmp/m"
  $S/predict.sh "$tmp/p" cluster "$tmp/m" 16 4
  echo "$1 ($what): $(python3 $S/score.py cluster "$tmp/p" 999999999 0 "$1" -v)"
  rm -rf "$tmp/p"
done
