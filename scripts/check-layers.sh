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
#
# The drop-in (front/dropin*, libnbrcoll_mpi) sits above the nbr_ API: it
# calls nbr_ functions, and nothing else in src/ includes front/dropin.h or
# calls an MPI_ name the drop-in defines. With the drop-in loaded such a
# call lands in the drop-in, which calls back into the library (nbrcoll's
# own communicators would be set up twice): the library calls the PMPI_
# name instead.
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
  elif [[ $header == front/dropin* && $rel != front/dropin* ]]; then
    fail "$rel:$line: includes \"$header\": the drop-in sits above the nbr_ API"
  fi
done < <(((${#files[@]})) && awk '/^[[:space:]]*#[[:space:]]*include[[:space:]]*"/ {
           h = $0; sub(/^[^"]*"/, "", h); sub(/".*/, "", h); print FILENAME ":" FNR ":" h }' "${files[@]}")

# The MPI_ names the drop-in defines: its functions, and the MPI_ and MPIX_
# forms of what a PREFIX##_name macro defines.
dropin=()
for file in "${files[@]}"; do
  [[ ${file#"$src"/} == front/dropin* ]] && dropin+=("$file")
done
if ((${#dropin[@]})); then
  mapfile -t interposed < <(awk '
    match($0, /^int (MPIX?_[A-Za-z0-9_]+)\(/) { print substr($0, 5, RLENGTH - 5) }
    match($0, /PREFIX##_[A-Za-z0-9_]+\(/) {
      n = substr($0, RSTART + 9, RLENGTH - 10); print "MPI_" n; print "MPIX_" n }' \
    "${dropin[@]}" | sort -u)
  names=$(IFS='|'; echo "${interposed[*]}")
  # each call of one of them outside the drop-in as FILE:LINE:NAME, comments
  # and strings left out
  while IFS=: read -r file line name; do
    [[ ${file#"$src"/} == front/dropin* ]] && continue
    fail "${file#"$src"/}:$line: calls $name, which the drop-in defines: call P$name"
  done < <(((${#interposed[@]})) && awk -v names="$names" '
    FNR == 1 { comment = 0 }
    {
      text = $0; out = ""
      while (text != "") {
        if (comment) {
          at = index(text, "*/"); if (!at) { text = ""; break }
          text = substr(text, at + 2); comment = 0
        } else if (match(text, /\/\*|\/\/|"/)) {
          out = out substr(text, 1, RSTART - 1); tok = substr(text, RSTART, RLENGTH)
          text = substr(text, RSTART + RLENGTH)
          if (tok == "//") text = ""
          else if (tok == "/*") comment = 1
          else { sub(/^([^"\\]|\\.)*"?/, "", text) }
        } else { out = out text; text = "" }
      }
      while (match(out, "(^|[^A-Za-z0-9_])(" names ")[ \t]*\\(")) {
        hit = substr(out, RSTART, RLENGTH); sub(/^[^M]*/, "", hit); sub(/[ \t]*\($/, "", hit)
        print FILENAME ":" FNR ":" hit
        out = substr(out, RSTART + RLENGTH)
      }
    }' "${files[@]}")
fi

if ((status == 0)); then
  echo "check-layers: every #include in $src points down, and no call outside the drop-in lands in it"
fi
exit $status
