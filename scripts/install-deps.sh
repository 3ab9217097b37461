#!/usr/bin/env bash
# Installs from Debian whatever nbrcoll needs and is missing; does nothing
# (not even an apt-get update) when everything is present. Idempotent.
set -euo pipefail

PACKAGES=(
  cmake gcc g++ make pkg-config
  libopenmpi-dev openmpi-bin libucx-dev
  libmpich-dev mpich                      # the second MPI (-DNBR_MPI=mpich)
  libhwloc-dev libgtest-dev
  hipcc libamdhip64-dev librocm-smi-dev   # HIP compile checks; no GPU needed
  iproute2                                # bench/cluster: namespaces, tc
  python3 gnuplot-nox                     # bench/grid.sh: report and plots
  zlib1g-dev                              # bench: Matrix Market files, gzipped
  slurm-wlm munge                         # bench/batch test: a private local Slurm
  petsc-dev libpetsc3.18-dev-examples     # tests/apps: PETSc's SF tests, unmodified
  python3-mpi4py                          # tests/apps: mpi4py's neighborhood calls
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=()
if ((EUID != 0)); then
  if command -v sudo >/dev/null; then
    SUDO=(sudo)
  else
    echo "install-deps: missing ${missing[*]}; run as root or install sudo" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
