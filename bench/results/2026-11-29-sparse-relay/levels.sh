#!/bin/bash
# levels.sh MACHINE: nbr_sim ($NBR_SIM, default build/bench/nbr_sim) prices
# naive and halving at 16 B and 16 KiB on the grid's seven patterns (4 x 4
# ranks) and prints each time with naive / halving, the speedup the grid
# compares. Run from the repository root; the trials' knobs pass through
# the environment.
set -euo pipefail
M=$1 S=${NBR_SIM:-build/bench/nbr_sim}
for g in "rsg --density 0.05" "rsg --density 0.2" "rsg --density 0.4" "rsg --density 0.7" \
         "moore --dims 2 --radius 1" "moore --dims 2 --radius 2" "moore --dims 3 --radius 1"; do
  # shellcheck disable=SC2086
  "$S" --machine "$M" --pattern $g --seed 1 --ranks 16 --ranks-per-node 4 --min-bytes 16 \
       --max-bytes 16384 --step 1024 --algorithms naive,halving 2>&1 | grep -v "^#" |
  awk -v g="$g" '$1 == "naive" { n[$2] = $3 } $1 == "halving" { h[$2] = $3 }
    END { printf "%-26s 16 B naive %5.0f halving %5.0f (%.2f) | 16 KiB naive %5.0f halving %5.0f (%.2f)\n",
          g, n["16"], h["16"], n["16"] / h["16"], n["16Ki"], h["16Ki"], n["16Ki"] / h["16Ki"] }'
done
