#!/usr/bin/env bash
# petsc_sf.sh MPIEXEC DROPIN_LIB [ALGORITHMS]: PETSc's own PetscSF tests and
# two KSP tutorials, as Debian ships them (libpetsc3.18-dev-examples),
# compiled here against the installed PETSc and run unmodified with
# -sf_type neighbor (MPI_Dist_graph_create_adjacent with weights,
# MPI_Ineighbor_alltoallv), plain and under the drop-in with auto and each
# of ALGORITHMS (default: naive; the library's call is auto's choice
# there) on virtual nodes of 2. Every output
# must be plain MPI's, byte for byte (iterations and residual norms
# included). Exit 77 (skipped) where PETSc or its examples are missing.
set -euo pipefail
mpiexec=$1 dropin=$2 algorithms=${3:-naive}
source "$(dirname "$0")/../scripts/launcher.sh"
nbr_launcher "$mpiexec"
examples=$(ls -d /usr/share/petsc/3.*/share/petsc/examples/src 2>/dev/null | tail -1)
if ! pkg-config --exists PETSc || [[ -z $examples ]]; then
  echo "petsc_sf: skipped: PETSc's pkg-config file or its examples (libpetsc3.18-dev-examples) not installed"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# np  program  arguments (the nsize and args of each example's own test block)
runs=(
  "3 sf/ex1"
  "2 sf/ex3 -op sum"
  "7 sf/ex5 -view -nl 5"
  "7 sf/ex9 -world2sub"
  "7 sf/ex9 -sub2sub"
  "4 sf/ex11"
  "8 sf/ex11"
  "3 sf/ex12"
  "3 sf/ex13"
  "4 sf/ex14"
  "3 sf/ex16 -testnum 0"
  "3 sf/ex16 -testnum 2"
  "3 sf/ex18 -nsfs 3 -n_leaves_per_rank 5"
  "4 ksp/ex2 -m 20 -n 20 -ksp_monitor_short"
  "8 ksp/ex23 -n 4"
  "4 ksp/ex23 -n 40 -ksp_monitor_short"
)
declare -A source=([sf]=vec/is/sf/tests [ksp]=ksp/ksp/tutorials)
built=()
for run in "${runs[@]}"; do
  read -r _ prog _ <<<"$run"
  exe=$work/${prog/\//_}
  [[ -x $exe ]] && continue
  # shellcheck disable=SC2046 # pkg-config's words on purpose
  "$(pkg-config --variable=ccompiler PETSc)" -O1 -w "$examples/${source[${prog%%/*}]}/${prog#*/}.c" -o "$exe" $(pkg-config --cflags --libs PETSc)
  built+=("$prog")
done
if [[ "$(nbr_mpi_of "$exe")" != "$(nbr_mpi_of "$dropin")" ]]; then
  echo "petsc_sf: skipped: PETSc runs on $(nbr_mpi_of "$exe"), the drop-in on $(nbr_mpi_of "$dropin")"
  exit 77
fi
launches=0 failed=0
for run in "${runs[@]}"; do
  read -r np prog args <<<"$run"
  exe=$work/${prog/\//_}
  # shellcheck disable=SC2086 # the arguments' words on purpose
  plain=$(timeout 60 "${launch[@]}" -np "$np" "$exe" $args -sf_type neighbor 2>&1) || {
    echo "petsc_sf: plain MPI fails $prog $args at $np ranks"; exit 1; }
  for alg in auto $algorithms; do
    # shellcheck disable=SC2086 # the arguments' words on purpose
    nbr_dropin_run "$prog $args" "$np" "$alg" "$plain" "$dropin" "$exe" $args -sf_type neighbor
  done
done
echo "petsc_sf: ${#runs[@]} runs of ${#built[@]} PETSc programs x $((launches / ${#runs[@]})) drop-in configurations: $launches launches, $failed failed"
[[ $failed == 0 ]]
