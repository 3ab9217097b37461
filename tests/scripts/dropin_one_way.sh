#!/usr/bin/env bash
# The built libraries keep the drop-in above the nbr_ API: libnbrcoll needs
# none of the MPI_ symbols libnbrcoll_mpi defines (with the drop-in loaded
# they would resolve to it, and it calls back into libnbrcoll). The
# symbol-level twin of the source check in scripts/check-layers.sh.
# usage: dropin_one_way.sh NM LIBNBRCOLL LIBNBRCOLL_MPI
set -euo pipefail
nm=$1 lib=$2 dropin=$3
defined=$("$nm" -D --defined-only "$dropin" | awk '$3 ~ /^MPIX?_/ { print $3 }' | sort -u)
[[ -n $defined ]] || { echo "dropin_one_way: $dropin defines no MPI_ symbol" >&2; exit 1; }
needed=$("$nm" -D --undefined-only "$lib" | awk '{ sub(/@.*/, "", $NF); print $NF }' | sort -u)
both=$(comm -12 <(echo "$defined") <(echo "$needed"))
if [[ -n $both ]]; then
  echo "dropin_one_way: $lib calls what the drop-in defines (call the PMPI_ names):" $both >&2
  exit 1
fi
echo "dropin_one_way: libnbrcoll needs none of the $(wc -l <<<"$defined") MPI_ symbols of the drop-in"
