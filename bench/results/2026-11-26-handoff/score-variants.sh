#!/bin/bash
# score-variants.sh MACHINE RESULT_DIR MAX_BYTES Y_S... : nbr_sim's predicted
# speedups over naive against a grid's measured ones, with the machine
# file's per-call start and hand-off replaced by each Y_S pair (us; Y 0:
# no message_us). RESULT_DIR relative to bench/results/. Run from the
# repository root after a build (build/bench/nbr_sim). A file without a
# cores line gets 'cores 2 per=job network_gbytes_per_s=0.165' (the rate
# of ../2026-11-25-network-cores, calibration 2).
machine=$1 results=$2 max=$3; shift 3
S=bench/results/2026-11-24-sim-cpu
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for ys in "$@"; do
  y=${ys%_*} start=${ys#*_}
  grep -v '^call' "$machine" | sed 's/ message_us=[0-9.e+-]*//' >"$tmp/m"
  grep -q '^cores' "$tmp/m" || echo "cores 2 per=job network_gbytes_per_s=0.165" >>"$tmp/m"
  [ "$y" != 0 ] && sed -i "s/^cores .*/& message_us=$y/" "$tmp/m"
  echo "call start_us=$start" >>"$tmp/m"
  $S/predict.sh "$tmp/p" cluster "$tmp/m" 16 4
  echo "message_us=$y start_us=$start: $(python3 $S/score.py cluster "$tmp/p" "$max" 0 "$results")"
done
