#!/usr/bin/env bash
# Fails when a file of src/ includes a header of a higher layer, or of a
# sibling layer (docs/architecture.md, "Layers"):
#
#   front            public API, requests, communicator state, configuration
#   alg | exec       algorithms (registry, builders) | executors
#   plan             plan IR, verifier
#   device | topo    device backends | topology
#   base             logging, settings, growable arrays, rounds engine, graphs
#
# Includes are written from src/ ("plan/plan.h"), so the first component of
# the path names the layer. A folder or an include this table does not know
# is an error too: a new folder gets its place here first.
# usage: scripts/check-layers.sh [SRC_DIR]     (default: the repository's src)
set -euo pipefail
src=${1:-"$(cd "$(dirname "$0")/.." && pwd)/src"}

declare -A rank=([front]=5 [alg]=4 [exec]=4 [plan]=3 [device]=2 [topo]=2 [base]=1)

status=0
fail() {
  echo "check-layers: $*" >&2
  status=1
}

# every file of src/, then each quoted include as FILE:LINE:HEADER (one awk
# for the whole tree: a few processes a file made this take seconds)
mapfile -d '' files < <(find "$src" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) -print0 | sort -z)
declare -A in_layer=()
for file in "${files[@]}"; do
  rel=${file#"$src"/}
  layer=${rel%%/*}
  if [[ $rel != */* || -z ${rank[$layer]:-} ]]; then
    fail "$rel: in no layer (known: ${!rank[*]})"
  else
    in_layer[$file]=$layer
  fi
done

while IFS=: read -r file line header; do
  [[ -n ${in_layer[$file]:-} ]] || continue
  rel=${file#"$src"/}
  layer=${in_layer[$file]}
  target=${header%%/*}
  if [[ $header != */* || -z ${rank[$target]:-} ]]; then
    fail "$rel:$line: includes \"$header\", which is in no layer (write it from src/)"
  elif [[ $target != "$layer" ]] && ((rank[$target] >= rank[$layer])); then
    fail "$rel:$line: $layer includes \"$header\" of layer $target, which is not below it"
  fi
done < <(((${#files[@]})) && awk '/^[[:space:]]*#[[:space:]]*include[[:space:]]*"/ {
           h = $0; sub(/^[^"]*"/, "", h); sub(/".*/, "", h); print FILENAME ":" FNR ":" h }' "${files[@]}")

if ((status == 0)); then
  echo "check-layers: every #include in $src points down"
fi
exit $status
