#!/bin/bash
# sweep.sh START_US HANDOFF_US WAKE_US: g31's machine file with that call
# start and hand-off (message_us), priced by levels.sh with a phase-wake
# build ($NBR_SIM, ../2026-11-29-start-window/phase-wake.diff) at that
# wake; prints, per pattern (levels.sh's order), priced / measured
# naive-over-halving at 16 B / 16 KiB against g31's medians (levels.txt),
# the sum of their squared logs and how many fall outside 0.8-1.25.
set -euo pipefail
M0=bench/results/2026-11-29-g31/grid-cluster/cluster.machine
meas="0.80 0.85 1.10 1.29 1.09 2.16 1.86 0.73 0.82 1.23 2.05 1.55 5.45 5.07"
st=$1 ho=$2 pw=$3 m=$(mktemp)
trap 'rm -f "$m"' EXIT
sed -e "s/start_us=.*/start_us=$st/" -e "s/message_us=[0-9.]*/message_us=$ho/" "$M0" > "$m"
NBR_SIM_PHASE_US=$pw "$(dirname "$0")/levels.sh" "$m" | grep -o "([0-9.]*)" | tr -d '()' | paste -sd' ' |
awk -v m="$meas" -v tag="start $st handoff $ho wake $pw" '{
  split(m, M, " "); e = 0; out = 0; line = ""
  for (i = 1; i <= 7; i++) {
    r = $(2 * i - 1) / M[i]; q = $(2 * i) / M[i + 7]
    line = line sprintf(" %.2f/%.2f", r, q); e += log(r) ^ 2 + log(q) ^ 2
    out += (r > 1.25 || r < 0.8) + (q > 1.25 || q < 0.8)
  }
  printf "%-34s err %.3f out %d |%s\n", tag, e, out, line }'
