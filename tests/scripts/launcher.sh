# launcher.sh, sourced by the test drivers. nbr_launcher MPIEXEC sets the
# array `launch` to MPIEXEC and what it needs to start more ranks than
# cores: Open MPI's --oversubscribe, nothing for MPICH's Hydra (which does
# not know the flag). Settings reach the ranks through env(1) run as the
# program, `"${launch[@]}" -np 4 env NBR_LOG=info ./prog`, which every
# launcher starts as it starts the program; the launcher itself gets no
# LD_PRELOAD.
nbr_launcher() {
  launch=("$1")
  if "$1" --version 2>&1 | grep -qiE 'open mpi|openrte'; then
    launch+=(--oversubscribe)
  fi
  # Open MPI refuses root without these; MPICH ignores them
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}

# nbr_mpi_of BINARY: the MPI library (libmpi or libmpich) BINARY loads.
# The application suites skip where Debian's PETSc or mpi4py was built on
# another MPI than the drop-in.
nbr_mpi_of() {
  ldd "$1" 2>/dev/null | awk '$1 ~ /^libmpi(ch)?\.so/ { print $3; exit }'
}
