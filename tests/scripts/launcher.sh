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

# nbr_dropin_run WHAT NP ALGORITHM PLAIN DROPIN COMMAND...: COMMAND on NP
# ranks under the drop-in (auto, or ALGORITHM forced) on virtual nodes of
# 2, its output held to PLAIN (the same command's under plain MPI); says
# FAIL with WHAT and why. Counts into the caller's `launches` and `failed`.
nbr_dropin_run() {
  local what=$1 np=$2 alg=$3 plain=$4 dropin=$5 with status=0
  shift 5
  local -a vars=(env LD_PRELOAD="$dropin" NBR_DEVICE=off NBR_RANKS_PER_NODE=2)
  [[ $alg == auto ]] || vars+=(NBR_ALGORITHM="$alg")
  launches=$((launches + 1))
  with=$(timeout 60 "${launch[@]}" -np "$np" "${vars[@]}" "$@" 2>&1) || status=$?
  if ((status != 0)); then
    echo "FAIL $what, $np ranks, $alg: exit status $status (124: a hang)"
    failed=$((failed + 1))
  elif [[ "$with" != "$plain" ]]; then
    echo "FAIL $what, $np ranks, $alg: output differs from plain MPI's"
    diff <(echo "$plain") <(echo "$with") | head -10 || true
    failed=$((failed + 1))
  fi
}
