#!/bin/bash
# score-grids.sh [FACTOR] [BYTES]: nbr_sim of the current build
# (build/bench/nbr_sim) against the six cluster grids of 2026-11-25/26, each
# with its own calibration, the interfaces' burst (burst_bytes=125000) and
# Open MPI's eager limit (eager_bytes=65472) where nbr_calibrate did not
# write them then, and copies of up to BYTES [65536] at FACTOR times the
# calibrated copy rate (0: no cached rate; none of these calibrations
# measured one: nbr_calibrate measured 3.9x on 2026-11-26, calibrate.txt).
# BYTES=all: every copy at FACTOR times the calibrated rate instead.
# The 2026-11-25 grid's file had no cores line: it gets the one
# ../2026-11-26-handoff used. Prints each grid's score (predicted speedups
# over naive within 25 % of the measured) and, with V=1, its misses. Run
# from the repository root.
set -euo pipefail
factor=${1:-3.9} bytes=${2:-65536}
R=bench/results S=$R/2026-11-24-sim-cpu
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fields() { # machine file -> with the fields it lacks
  sed -e "/burst_bytes/!s/^nics \(.*\)$/nics \1 burst_bytes=125000/" \
      -e "s/^cores \([0-9]* per=job network_gbytes_per_s=[0-9.e+-]*\) message/cores \1 eager_bytes=65472 message/" "$1" |
  awk -v f="$factor" -v b="$bytes" '/^path copy/ && f > 0 && b == "all" {
      for (i = 1; i <= NF; i++) if ($i ~ /^gbytes_per_s=/) { split($i, a, "="); $i = "gbytes_per_s=" a[2] * f } }
    /^path copy/ && f > 0 && b != "all" && !/cached/ {
      for (i = 1; i <= NF; i++) if ($i ~ /^gbytes_per_s=/) { split($i, a, "="); r = a[2] * f }
      $0 = $0 " cached_bytes=" b " cached_gbytes_per_s=" r } { print }'
}
grep -v '^call' $R/2026-11-25-grid-confirm/grid/cluster.machine >"$tmp/g1125.in"
echo "cores 2 per=job network_gbytes_per_s=0.165 message_us=6.79" >>"$tmp/g1125.in"
echo "call start_us=423" >>"$tmp/g1125.in"
for item in "2026-11-25-grid-confirm/grid $tmp/g1125.in turns" \
            "2026-11-26-handoff/grid $R/2026-11-26-handoff/grid/cluster.machine turns" \
            "2026-11-26-fair-nics/grid $R/2026-11-26-fair-nics/grid/cluster.machine turns" \
            "2026-11-26-fair-nics/grid-cluster-block5 $R/2026-11-26-fair-nics/grid-cluster-block5/cluster.machine blocks" \
            "2026-11-26-blocks-default/grid $R/2026-11-26-blocks-default/grid/cluster.machine blocks" \
            "2026-11-26-blocks-default/grid-cluster-2 $R/2026-11-26-blocks-default/grid-cluster-2/cluster.machine blocks"; do
  set -- $item
  fields "$2" >"$tmp/m"
  $S/predict.sh "$tmp/p" cluster "$tmp/m" 16 4
  out=$(python3 $S/score.py cluster "$tmp/p" 999999999 0 "$1" -v)
  echo "$1 (timed in $3): $(echo "$out" | tail -1)"
  if [[ ${V:-0} == 1 ]]; then echo "$out" | head -n -1 | sed 's/^/    /'; fi
  rm -rf "$tmp/p"
done
