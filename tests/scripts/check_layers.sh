#!/usr/bin/env bash
# The include-direction check passes on src/ and fails on planted copies:
# an upward include, a sibling include, an include from no layer, and the
# drop-in reached from the library (its header, or a call of an MPI_ name it
# defines, where the library calls the PMPI_ one).
# usage: check_layers.sh SOURCE_DIR
set -euo pipefail
source=$1
check=$source/scripts/check-layers.sh
"$check" "$source/src"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
plant() { # plant NAME FILE LINE: a copy of src with LINE added to FILE; must fail
  local copy=$work/$1
  cp -r "$source/src" "$copy"
  printf '%s\n' "$3" >>"$copy/$2"
  if out=$("$check" "$copy" 2>&1); then
    echo "check_layers: planted $1 ($3 in $2) was not caught" >&2
    exit 1
  fi
  grep -q "$2" <<<"$out" || { echo "check_layers: $1: the message names no file: $out" >&2; exit 1; }
  echo "caught $1: $out"
}
plant upward plan/plan.c '#include "front/comm.h"'
plant sibling exec/executor.c '#include "alg/registry.h"'
plant unrooted base/log.c '#include "log.h"'
plant dropin_header front/comm.c '#include "front/dropin.h"'
plant dropin_call front/api.c 'static int planted(MPI_Comm c, MPI_Comm *n) { return MPI_Dist_graph_create_adjacent(c, 0, NULL, MPI_UNWEIGHTED, 0, NULL, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, n); }'
plant dropin_dup exec/executor.c 'static int planted(MPI_Comm c, MPI_Comm *n) { return MPI_Comm_dup(c, n); }'
