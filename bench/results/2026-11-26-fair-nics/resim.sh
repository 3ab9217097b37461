#!/bin/bash
# resim.sh: the cluster grid of grid/ (measured at 5096d52) against the
# simulator of the current build (build/bench/nbr_sim), with the grid's own
# calibration: writes resim/CONFIG-TAG-sim.csv and resim/report.txt
# (verdicts as in grid/report.txt, the simulator table anew). Run from the
# repository root.
R=bench/results/2026-11-26-fair-nics
mkdir -p $R/resim
for item in "rsg-0_05 --pattern rsg --density 0.05 --seed 1" "rsg-0_2 --pattern rsg --density 0.2 --seed 1" \
            "rsg-0_4 --pattern rsg --density 0.4 --seed 1" "rsg-0_7 --pattern rsg --density 0.7 --seed 1" \
            "moore-2-1 --pattern moore --dims 2 --radius 1" "moore-2-2 --pattern moore --dims 2 --radius 2" \
            "moore-3-1 --pattern moore --dims 3 --radius 1"; do
  set -- $item; tag=$1; shift
  build/bench/nbr_sim --machine $R/grid/cluster.machine "$@" --ranks 16 --ranks-per-node 4 \
    --step 4 --min-bytes 16 --max-bytes 16Mi --algorithms naive,halving,combining,leader \
    --csv $R/resim/cluster-$tag-sim.csv >/dev/null || exit 1
done
python3 bench/grid_report.py --out $R/resim \
  $(ls $R/grid/cluster-*.csv | grep -v -- '-sim.csv') $R/resim/cluster-*-sim.csv
