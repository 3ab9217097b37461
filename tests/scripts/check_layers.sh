#!/usr/bin/env bash
# The include-direction check passes on src/ and fails on planted copies:
# an upward include, a sibling include, an include from no layer.
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
