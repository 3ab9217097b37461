#!/bin/bash
# naive, halving, leader and combining on the emulated 4 x 4 cluster (one
# graph, one block size: the README ran Moore d2 r1 at 4 MiB), 7 calls each,
# with the namespaces' TCP congestion control and idle restart as given
# usage: tcp-settings.sh LABEL CC SSAI PATTERNARGS BYTES (SSAI: tcp_slow_start_after_idle;
# new namespaces take the root namespace's values; output in $OUT, default /tmp)
cd "$(dirname "$0")/../../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
label=$1 cc=$2 ssai=$3 pat=$4 bytes=$5
old_cc=$(sysctl -n net.ipv4.tcp_congestion_control) old_ssai=$(sysctl -n net.ipv4.tcp_slow_start_after_idle)
sysctl -qw net.ipv4.tcp_congestion_control=$cc net.ipv4.tcp_slow_start_after_idle=$ssai
NBR_MACHINE=bench/results/2026-11-28-trial-side-100ms/grid-cluster/cluster.machine bench/cluster/local-cluster.sh 4 4 build-dev/bench/nbr_bench $pat \
  --min-bytes $bytes --max-bytes $bytes --iters 7 --algorithms naive,halving,leader,combining --warmup 1 --block 1 > ${OUT:-/tmp}/$label.txt 2>&1
sysctl -qw net.ipv4.tcp_congestion_control=$old_cc net.ipv4.tcp_slow_start_after_idle=$old_ssai
echo "$label ($cc, ssai $ssai): $(grep -E '^ +[0-9]+[KMG]?i? +(naive|halving|leader|combining)' ${OUT:-/tmp}/$label.txt | awk '{printf "%s %.0f/%.0f  ", $2, $3/1000, $4/1000}')"
