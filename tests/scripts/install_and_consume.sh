#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, builds a user project
# against it with find_package(nbrcoll) and with pkg-config, and runs both.
# usage: install_and_consume.sh MPIEXEC BUILD_DIR SOURCE_DIR
set -euo pipefail
mpiexec=$1 build=$2 source=$3
source "$(dirname "$0")/launcher.sh"
nbr_launcher "$mpiexec"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
export CMAKE_PREFIX_PATH="$work/prefix"
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/x86_64-linux-gnu/pkgconfig:${PKG_CONFIG_PATH:-}"
cmake -S "$source/tests/install/consumer" -B "$work/consumer" >/dev/null
cmake --build "$work/consumer" >/dev/null
export LD_LIBRARY_PATH="$work/prefix/lib:$work/prefix/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
for exe in consumer_cmake consumer_pkgconfig; do
  "${launch[@]}" -np 2 "$work/consumer/$exe"
done
# the drop-in linked in: nbrcoll sets the plain program's communicator up
for exe in dropin_cmake dropin_pkgconfig; do
  "${launch[@]}" -np 4 env NBR_LOG=info NBR_DEVICE=off "$work/consumer/$exe" 2>"$work/$exe.log"
  grep -q "info\] comm 0: 4 ranks" "$work/$exe.log" ||
    { echo "$exe: nbrcoll did not take the collectives" >&2; cat "$work/$exe.log" >&2; exit 1; }
done
# the tools come with the library, runnable from the prefix
for tool in nbr_topo nbr_sim nbr_calibrate; do
  [[ -x $work/prefix/bin/$tool ]] || { echo "install: no bin/$tool" >&2; exit 1; }
done
"$work/prefix/bin/nbr_sim" --help | grep -q "usage: nbr_sim" ||
  { echo "install: bin/nbr_sim does not run" >&2; exit 1; }
echo "installed package works through find_package and pkg-config, drop-in and tools included"
