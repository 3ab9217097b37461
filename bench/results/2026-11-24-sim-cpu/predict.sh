#!/bin/bash
# predict.sh OUT CONFIG MACHINE RANKS RANKS_PER_NODE: nbr_sim ($NBR_SIM,
# default build/bench/nbr_sim) on the grid's seven patterns, 16 B - 16 MiB,
# into OUT/CONFIG-PATTERN.csv (run from the repository root).
out=$1 cfg=$2 machine=$3 n=$4 rpn=$5 sim=${NBR_SIM:-build/bench/nbr_sim}
mkdir -p "$out"
for item in "rsg 0.05" "rsg 0.2" "rsg 0.4" "rsg 0.7" "moore 2 1" "moore 2 2" "moore 3 1"; do
  set -- $item
  if [ "$1" = rsg ]; then g="--pattern rsg --density $2 --seed 1"; t=rsg-$2
  else g="--pattern moore --dims $2 --radius $3"; t=moore-$2-$3; fi
  "$sim" --machine "$machine" $g --ranks "$n" --ranks-per-node "$rpn" \
    --min-bytes 16 --max-bytes 16Mi --algorithms naive,halving,combining,leader \
    --csv "$out/$cfg-$t.csv" >/dev/null
done
