#!/usr/bin/env bash
# NBR_DUMP_PLAN writes one readable plan file per communicator and rank.
# usage: plan_dump.sh MPIEXEC NBR_BENCH
set -euo pipefail
mpiexec=$1 bench=$2
source "$(dirname "$0")/launcher.sh"
nbr_launcher "$mpiexec"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"${launch[@]}" -np 4 env NBR_DUMP_PLAN="$dir" "$bench" \
  --pattern moore --dims 1 --radius 1 --min-bytes 8 --max-bytes 8 --iters 1 \
  --warmup 0 --algorithms naive --ranks-per-node 2 >/dev/null
for rank in 0 1 2 3; do
  file="$dir/nbrcoll-comm0-rank$rank.txt"
  [[ -s $file ]] || { echo "missing $file"; ls -l "$dir"; exit 1; }
  # 1-D ring, radius 1: two receives and two sends, one of them off-node
  grep -q "^plan naive allgather rank $rank of 4: 1 phases, 4 ops" "$file" ||
    { echo "unexpected header in $file:"; head -3 "$file"; exit 1; }
  grep -q "inter-node 1 msgs 8 B" "$file" || { echo "wrong counts in $file"; head -3 "$file"; exit 1; }
  (( $(grep -c "^    recv from" "$file") == 2 )) || { echo "wrong recv ops in $file"; exit 1; }
done
echo "plan dumps ok"

# The leader plan carries its pattern (the paper's L_t, L_r, RM, PEM) in the dump.
rm -rf "${dir:?}"/*
"${launch[@]}" -np 16 env NBR_DUMP_PLAN="$dir" NBR_LEADER_MIN_BYTES=0 \
  NBR_TOPO_FILE="$(dirname "$0")/../../topo/frontier-mi250x.topo" \
  "$bench" --pattern rsg --density 0.5 --ranks-per-node 8 \
  --min-bytes 1Ki --max-bytes 1Ki --iters 1 --warmup 0 --algorithms leader >/dev/null
for kind in "L_t (Alg. 1)" "L_r (Alg. 2)" "RM (Alg. 3)" "PEM (Alg. 4)" "pattern: node"; do
  grep -q -F "$kind" "$dir"/nbrcoll-comm0-rank*.txt || { echo "no '$kind' line in the leader dumps"; exit 1; }
done
echo "leader plan dumps carry the pattern"
