#!/usr/bin/env bash
# mpi4py.sh MPIEXEC DROPIN_LIB [ALGORITHMS]: mpi4py_neighbors.py (every
# neighborhood call mpi4py offers) at 2, 3, 4 and 8 ranks, plain and under
# the drop-in with auto and each of ALGORITHMS on virtual nodes of 2; every
# output must be plain MPI's and report every rank right. Debian's
# python3-mpi4py (the system python3). Exit 77 (skipped) without it.
set -euo pipefail
mpiexec=$1 dropin=$2 algorithms=${3:-naive halving combining aggregate}
source "$(dirname "$0")/../scripts/launcher.sh"
nbr_launcher "$mpiexec"
python=/usr/bin/python3
program=$(dirname "$0")/mpi4py_neighbors.py
if ! "$python" -c "import mpi4py" 2>/dev/null; then
  echo "mpi4py: skipped: $python has no mpi4py (python3-mpi4py)"
  exit 77
fi
mpi4py_lib=$("$python" -c "import mpi4py; mpi4py.rc.initialize = False
from mpi4py import MPI; print(MPI.__file__)")
if [[ "$(nbr_mpi_of "$mpi4py_lib")" != "$(nbr_mpi_of "$dropin")" ]]; then
  echo "mpi4py: skipped: mpi4py runs on $(nbr_mpi_of "$mpi4py_lib"), the drop-in on $(nbr_mpi_of "$dropin")"
  exit 77
fi
launches=0 failed=0
for np in 2 3 4 8; do
  plain=$(timeout 60 "${launch[@]}" -np "$np" "$python" "$program" 2>&1) || {
    echo "mpi4py: plain MPI fails at $np ranks"; echo "$plain" | tail -5; exit 1; }
  if grep -q "every rank: False" <<<"$plain"; then
    echo "mpi4py: plain MPI gets its own checks wrong at $np ranks"; exit 1
  fi
  for alg in auto $algorithms; do
    nbr_dropin_run mpi4py_neighbors "$np" "$alg" "$plain" "$dropin" "$python" "$program"
  done
done
echo "mpi4py: $(wc -l <<<"$plain") calls reported per launch at 4 rank counts x $((launches / 4)) drop-in configurations: $launches launches, $failed failed"
[[ $failed == 0 ]]
