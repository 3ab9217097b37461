# shellcheck shell=bash
# common.sh: the steps every batch script of bench/batch runs, sourced by
# them (not run on its own). A script sets its parameters (NBR_BATCH_*,
# README.md), sources this file, says how ranks are launched and calls
# nbr_batch_main:
#
#   source common.sh
#   nbr_batch_init                    # results folder, env.txt, parameters
#   NBR_SRUN_RANK_FLAGS=(...)         # optional extras for the launchers
#   nbr_batch_launchers               # NBR_RANKS_LAUNCH, NBR_NODES_LAUNCH
#   nbr_batch_main                    # topo, bench, spmm; exit status
#
# Each command run is appended to command.txt exactly as run (shell-quoted)
# with the file its output went to; a step that fails is reported and the
# others still run; the script exits 1 when any failed.

NBR_BATCH_SRC=${NBR_BATCH_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

nbr_batch_die() {
  echo "nbr-batch: error: $*" >&2
  exit 1
}

# Defaults for whatever the script left unset (the scripts set their own).
: "${NBR_BATCH_BUILD:=build}"
: "${NBR_BATCH_OUT:=${SLURM_SUBMIT_DIR:-$PWD}/results}"
: "${NBR_BATCH_NAME:=${SLURM_JOB_NAME:-nbr-batch}}"
: "${NBR_BATCH_STEPS:=topo bench spmm}"
: "${NBR_BATCH_LAUNCHER:=srun}"
: "${NBR_BATCH_SRUN_MPI:=}"
: "${NBR_BATCH_SRUN_FLAGS:=}"
: "${NBR_BATCH_MPIRUN_FLAGS:=}"
: "${NBR_BATCH_RANKS_PER_NODE:=}"
: "${NBR_BATCH_VIRTUAL_RPN:=}"
: "${NBR_BATCH_RANK_WRAPPER:=}"
: "${NBR_BATCH_COLLECTIVES:=allgatherv alltoallv}"
: "${NBR_BATCH_PATTERNS:=rsg:0.05 rsg:0.3 moore:2:1 moore:3:1}"
: "${NBR_BATCH_MIN_BYTES:=8}"
: "${NBR_BATCH_MAX_BYTES:=1Mi}"
: "${NBR_BATCH_STEP:=4}"
: "${NBR_BATCH_ITERS:=50}"
: "${NBR_BATCH_WARMUP:=5}"
: "${NBR_BATCH_MAX_MEM:=1Gi}"
: "${NBR_BATCH_ALGORITHMS:=mpi,naive,halving,combining,leader,auto}"
: "${NBR_BATCH_MEMORY:=host}"
: "${NBR_BATCH_MATRICES:=tests/data/matrices/*.mtx.gz}"
: "${NBR_BATCH_SPMM_COLS:=32}"
: "${NBR_BATCH_SPMM_PARTITIONS:=rows}"
: "${NBR_BATCH_SPMM_ITERS:=20}"
: "${NBR_BATCH_SPMM_WARMUP:=3}"
: "${NBR_BATCH_SPMM_CHECK:=1}"
NBR_SRUN_RANK_FLAGS=()
NBR_SRUN_NODE_FLAGS=()
NBR_RANKS_LAUNCH=()
NBR_NODES_LAUNCH=()
NBR_BATCH_FAILED=0

# A path relative to the source tree (the defaults are), else as given.
nbr_batch_abs() {
  case $1 in
    /*) echo "$1" ;;
    *) echo "$NBR_BATCH_SRC/$1" ;;
  esac
}

# The program NAME in a build tree (at SUBDIR/NAME) or an install prefix
# (bin/NAME); nothing when neither has it.
nbr_batch_program() {
  local name=$1 subdir=$2 candidate
  for candidate in "$NBR_BATCH_BUILD/$subdir/$name" "$NBR_BATCH_BUILD/bin/$name"; do
    if [[ -x $candidate ]]; then echo "$candidate"; return 0; fi
  done
  return 0
}

# Nodes of the job and ranks per node: Slurm's allocation, or the
# hostfile's distinct hosts (mpirun-hostfile.sh sets NBR_BATCH_HOSTFILE).
nbr_batch_count_ranks() {
  if [[ -n ${NBR_BATCH_HOSTFILE:-} ]]; then
    [[ -r $NBR_BATCH_HOSTFILE ]] || nbr_batch_die "hostfile '$NBR_BATCH_HOSTFILE' not readable"
    # Open MPI's "host slots=N" and MPICH's "host:N" lines; # comments.
    NBR_NODES=$(sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]:].*//' "$NBR_BATCH_HOSTFILE" |
      sed '/^$/d' | sort -u | wc -l)
    ((NBR_NODES > 0)) || nbr_batch_die "hostfile '$NBR_BATCH_HOSTFILE' names no host"
  elif [[ -n ${SLURM_JOB_NUM_NODES:-} ]]; then
    NBR_NODES=$SLURM_JOB_NUM_NODES
  else
    NBR_NODES=1
  fi
  if [[ -z $NBR_BATCH_RANKS_PER_NODE ]]; then
    # SLURM_NTASKS_PER_NODE exists only when the job asked for it; the
    # tasks of the job spread evenly is the next best.
    if [[ -n ${SLURM_NTASKS_PER_NODE:-} ]]; then
      NBR_BATCH_RANKS_PER_NODE=$SLURM_NTASKS_PER_NODE
    elif [[ -n ${SLURM_NTASKS:-} ]]; then
      NBR_BATCH_RANKS_PER_NODE=$((SLURM_NTASKS / NBR_NODES))
    else
      NBR_BATCH_RANKS_PER_NODE=$(nproc)
    fi
  fi
  [[ $NBR_BATCH_RANKS_PER_NODE =~ ^[1-9][0-9]*$ ]] ||
    nbr_batch_die "NBR_BATCH_RANKS_PER_NODE='$NBR_BATCH_RANKS_PER_NODE' is not a positive number"
  NBR_RANKS=$((NBR_NODES * NBR_BATCH_RANKS_PER_NODE))
}

# The results folder, env.txt and the head of command.txt.
nbr_batch_init() {
  NBR_BATCH_BUILD=$(nbr_batch_abs "$NBR_BATCH_BUILD")
  [[ -d $NBR_BATCH_BUILD ]] ||
    nbr_batch_die "NBR_BATCH_BUILD='$NBR_BATCH_BUILD' is not a directory (a build tree or an install prefix)"
  NBR_BENCH_BIN=$(nbr_batch_program nbr_bench bench)
  NBR_TOPO_BIN=$(nbr_batch_program nbr_topo tools)
  NBR_SPMM_BIN=$(nbr_batch_program nbr_spmm bench/spmm)
  nbr_batch_count_ranks

  local stamp base n=1
  stamp=$(date +%Y-%m-%d-%H%M%S)
  mkdir -p -- "$NBR_BATCH_OUT"
  base=$NBR_BATCH_OUT/$stamp-$NBR_BATCH_NAME
  NBR_BATCH_DIR=$base
  # Two jobs of one name in the same second get .2, .3, ...
  until mkdir -- "$NBR_BATCH_DIR" 2>/dev/null; do
    n=$((n + 1))
    NBR_BATCH_DIR=$base.$n
    ((n < 100)) || nbr_batch_die "cannot make a results folder under $NBR_BATCH_OUT"
  done
  NBR_BATCH_DIR=$(cd "$NBR_BATCH_DIR" && pwd)
  mkdir "$NBR_BATCH_DIR/bench" "$NBR_BATCH_DIR/spmm"
  # The job script as it ran (Slurm runs a copy from its spool), with the
  # parameters at its top.
  if [[ -r $0 ]]; then cp -- "$0" "$NBR_BATCH_DIR/job-script.sh"; fi

  {
    echo "# $(date -u +%FT%TZ) on $(hostname), job ${SLURM_JOB_ID:-none}"
    if [[ -n ${SLURM_JOB_ID:-} ]] && command -v scontrol >/dev/null; then
      scontrol show job -o "$SLURM_JOB_ID" 2>/dev/null | tr ' ' '\n' |
        sed -n -E 's/^(Command|WorkDir|NumNodes|NumTasks|TRES)=/# &/p' || true
    fi
    echo "# environment of every command: env.txt; each output: the file after '>'"
    printf 'cd %q\n' "$NBR_BATCH_DIR"
  } >"$NBR_BATCH_DIR/command.txt"
  nbr_batch_write_env >"$NBR_BATCH_DIR/env.txt" 2>&1
  cd "$NBR_BATCH_DIR" || nbr_batch_die "cannot enter $NBR_BATCH_DIR"
  echo "nbr-batch: results in $NBR_BATCH_DIR ($NBR_NODES nodes x $NBR_BATCH_RANKS_PER_NODE ranks)"
}

nbr_batch_write_env() {
  local var
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(hostname)   kernel: $(uname -srm)"
  echo "job: ${SLURM_JOB_ID:-none} '${SLURM_JOB_NAME:-}' nodes ${SLURM_JOB_NODELIST:-${NBR_BATCH_HOSTFILE:-this one}}"
  echo "layout: $NBR_NODES nodes x $NBR_BATCH_RANKS_PER_NODE ranks = $NBR_RANKS ranks"
  if git -C "$NBR_BATCH_SRC" rev-parse --git-dir >/dev/null 2>&1; then
    echo "source: $NBR_BATCH_SRC at $(git -C "$NBR_BATCH_SRC" describe --always --dirty 2>/dev/null)"
  else
    echo "source: $NBR_BATCH_SRC (not a git checkout)"
  fi
  echo "programs: nbr_bench=${NBR_BENCH_BIN:-missing} nbr_topo=${NBR_TOPO_BIN:-missing} nbr_spmm=${NBR_SPMM_BIN:-missing}"
  # The libraries it runs with (MPI, nbrcoll, UCX, GPU runtime).
  if [[ -n $NBR_BENCH_BIN ]]; then
    ldd "$NBR_BENCH_BIN" 2>/dev/null | sed -n -E '/nbrcoll|mpi|ucx|ucp|fabric|cuda|amdhip|hsa/s/^[[:space:]]*/  /p' || true
  fi
  echo "mpirun: $( (mpirun --version 2>/dev/null || echo none) | head -n 1)"
  if command -v srun >/dev/null; then echo "srun: $(srun --version 2>/dev/null)"; fi
  if command -v nvidia-smi >/dev/null; then nvidia-smi -L 2>&1 | sed 's/^/gpu: /' || true; fi
  if command -v rocm-smi >/dev/null; then
    rocm-smi --showproductname 2>&1 | sed -n '/[Ss]eries/s/^/gpu: /p' || true
  fi
  # `module` is a shell function where environment modules exist.
  if declare -F module >/dev/null; then
    echo "modules:"
    module list 2>&1 | sed 's/^/  /'
  fi
  echo "parameters:"
  for var in $(compgen -v NBR_BATCH_); do
    printf '  %s=%q\n' "$var" "${!var}"
  done
  echo "environment (MPI, GPU, Slurm and nbrcoll settings):"
  env | sed -n -E '/^(NBR_|SLURM_|OMPI_|PMIX_|UCX_|MPICH_|FI_|CUDA_|ROCR_|HIP_|HSA_|OMP_|LD_LIBRARY_PATH=|PATH=)/s/^/  /p' | sort
}

# How ranks, and one task per node, are started. srun: Slurm places the
# ranks (NBR_SRUN_RANK_FLAGS / NBR_SRUN_NODE_FLAGS add binding flags).
# mpirun: Open MPI's or MPICH's, inside a Slurm job (it reads the
# allocation) or with NBR_BATCH_HOSTFILE.
nbr_batch_launchers() {
  local rpn=$NBR_BATCH_RANKS_PER_NODE mpi=() extra=()
  case $NBR_BATCH_LAUNCHER in
    srun)
      command -v srun >/dev/null || nbr_batch_die "NBR_BATCH_LAUNCHER=srun but there is no srun"
      if [[ -n $NBR_BATCH_SRUN_MPI ]]; then mpi=(--mpi="$NBR_BATCH_SRUN_MPI"); fi
      # shellcheck disable=SC2206 # a flag string, split into words on purpose
      extra=($NBR_BATCH_SRUN_FLAGS)
      NBR_RANKS_LAUNCH=(srun "${mpi[@]}" --nodes="$NBR_NODES" --ntasks="$NBR_RANKS"
        --ntasks-per-node="$rpn" "${NBR_SRUN_RANK_FLAGS[@]}" "${extra[@]}")
      # nbr_topo is no MPI program: no PMI set-up for it.
      NBR_NODES_LAUNCH=(srun --mpi=none --nodes="$NBR_NODES" --ntasks="$NBR_NODES"
        --ntasks-per-node=1 "${NBR_SRUN_NODE_FLAGS[@]}")
      ;;
    mpirun)
      command -v mpirun >/dev/null || nbr_batch_die "NBR_BATCH_LAUNCHER=mpirun but there is no mpirun"
      local hostfile=()
      # shellcheck disable=SC2206 # a flag string, split into words on purpose
      extra=($NBR_BATCH_MPIRUN_FLAGS)
      if mpirun --version 2>&1 | grep -qE 'Open MPI|OpenRTE'; then
        # Inside a Slurm job Open MPI 4.1 takes the nodes and slots from the
        # allocation (ras/slurm) and starts its daemons on other nodes with
        # srun (plm/slurm); the ranks of mpirun's own node it starts itself.
        if [[ -n ${NBR_BATCH_HOSTFILE:-} ]]; then hostfile=(--hostfile "$NBR_BATCH_HOSTFILE"); fi
        NBR_RANKS_LAUNCH=(mpirun "${hostfile[@]}" -np "$NBR_RANKS" --map-by "ppr:$rpn:node" "${extra[@]}")
        NBR_NODES_LAUNCH=(mpirun "${hostfile[@]}" -np "$NBR_NODES" --map-by ppr:1:node "${extra[@]}")
      else
        # MPICH's Hydra (also Intel MPI): -f hostfile, -ppn per node.
        if [[ -n ${NBR_BATCH_HOSTFILE:-} ]]; then hostfile=(-f "$NBR_BATCH_HOSTFILE"); fi
        NBR_RANKS_LAUNCH=(mpirun "${hostfile[@]}" -n "$NBR_RANKS" -ppn "$rpn" "${extra[@]}")
        NBR_NODES_LAUNCH=(mpirun "${hostfile[@]}" -n "$NBR_NODES" -ppn 1 "${extra[@]}")
      fi
      ;;
    *) nbr_batch_die "NBR_BATCH_LAUNCHER='$NBR_BATCH_LAUNCHER': say srun or mpirun" ;;
  esac
  # A per-rank wrapper (gpu-select.sh) goes between launcher and program.
  if [[ -n $NBR_BATCH_RANK_WRAPPER ]]; then
    NBR_RANKS_LAUNCH+=("$(nbr_batch_abs "$NBR_BATCH_RANK_WRAPPER")")
  fi
}

# nbr_batch_run NAME CMD...: runs CMD with its output in NAME (relative to
# the results folder), logs it to command.txt and status.txt; a failure is
# counted, not fatal.
nbr_batch_run() {
  local out=$1 rc=0 start secs
  shift
  printf '%q ' "$@" >>command.txt
  printf '> %q 2>&1\n' "$out" >>command.txt
  start=$(date +%s)
  "$@" >"$out" 2>&1 </dev/null || rc=$?
  secs=$(($(date +%s) - start))
  if ((rc == 0)); then
    printf 'ok      %4ds  %s\n' "$secs" "$out" | tee -a status.txt
  else
    printf 'FAILED  %4ds  %s (exit %d)\n' "$secs" "$out" "$rc" | tee -a status.txt
    tail -n 20 "$out" | sed 's/^/    /'
    NBR_BATCH_FAILED=1
  fi
  return 0
}

# A step that could not run at all.
nbr_batch_fail() {
  printf 'FAILED     -   %s\n' "$*" | tee -a status.txt
  NBR_BATCH_FAILED=1
}

nbr_batch_skip() {
  printf 'skipped    -   %s\n' "$*" | tee -a status.txt
}

# One CSV from several with the same header: the header once, then rows.
nbr_batch_merge_csv() {
  local out=$1
  shift
  (($#)) || return 0
  awk 'FNR == 1 && NR != 1 { next } { print }' "$@" >"$out"
}

# nbr_topo once on every node: topo-<host>.txt (the model, why each probe
# was used or not, the rank -> GPU map) and topo-<host>.topo (the model as
# a file, for nbr_sim --node-model and NBR_TOPO_FILE).
nbr_batch_topo() {
  if [[ -z $NBR_TOPO_BIN ]]; then
    nbr_batch_fail "topo: no nbr_topo in $NBR_BATCH_BUILD (tools/ or bin/)"
    return 0
  fi
  # NBR_LOG=info makes nbr_topo say why each probe was used or skipped.
  # shellcheck disable=SC2016 # expanded by the shell on each node
  nbr_batch_run topo-launch.log "${NBR_NODES_LAUNCH[@]}" env NBR_LOG=info bash -c \
    'h=$(hostname -s); "$1" --ranks "$2" --dump "$3/topo-$h.topo" > "$3/topo-$h.txt" 2>&1' \
    nbr-topo "$NBR_TOPO_BIN" "$NBR_BATCH_RANKS_PER_NODE" "$NBR_BATCH_DIR"
  local got
  got=$(find . -maxdepth 1 -name 'topo-*.txt' | wc -l)
  if ((got != NBR_NODES)); then
    nbr_batch_fail "topo: $got of $NBR_NODES nodes wrote topo-<host>.txt"
  fi
}

# "rsg:DENSITY[:SEED]" or "moore:DIMS:RADIUS" -> nbr_bench's flags.
nbr_batch_pattern_flags() {
  local IFS=:
  # shellcheck disable=SC2206 # split at the colons
  local p=($1)
  case ${p[0]} in
    rsg)
      [[ -n ${p[1]:-} ]] || return 1
      echo "--pattern rsg --density ${p[1]}${p[2]:+ --seed ${p[2]}}"
      ;;
    moore)
      [[ -n ${p[1]:-} && -n ${p[2]:-} ]] || return 1
      echo "--pattern moore --dims ${p[1]} --radius ${p[2]}"
      ;;
    *) return 1 ;;
  esac
}

# The benchmark grid: every memory kind x collective x pattern, one
# nbr_bench run each (its table in bench/NAME.txt, rows in bench/NAME.csv),
# all rows together in bench.csv.
nbr_batch_bench() {
  if [[ -z $NBR_BENCH_BIN ]]; then
    nbr_batch_fail "bench: no nbr_bench in $NBR_BATCH_BUILD (bench/ or bin/)"
    return 0
  fi
  local memory coll pattern flags name virtual=()
  if [[ -n $NBR_BATCH_VIRTUAL_RPN ]]; then virtual=(--ranks-per-node "$NBR_BATCH_VIRTUAL_RPN"); fi
  for memory in $NBR_BATCH_MEMORY; do
    for coll in $NBR_BATCH_COLLECTIVES; do
      for pattern in $NBR_BATCH_PATTERNS; do
        if ! flags=$(nbr_batch_pattern_flags "$pattern"); then
          nbr_batch_fail "bench: pattern '$pattern': say rsg:DENSITY[:SEED] or moore:DIMS:RADIUS"
          continue
        fi
        name=bench/$coll-${pattern//:/-}-$memory
        # shellcheck disable=SC2086 # $flags: words made above
        nbr_batch_run "$name.txt" "${NBR_RANKS_LAUNCH[@]}" "$NBR_BENCH_BIN" \
          --collective "$coll" $flags --memory "$memory" \
          --min-bytes "$NBR_BATCH_MIN_BYTES" --max-bytes "$NBR_BATCH_MAX_BYTES" \
          --step "$NBR_BATCH_STEP" --iters "$NBR_BATCH_ITERS" --warmup "$NBR_BATCH_WARMUP" \
          --max-mem "$NBR_BATCH_MAX_MEM" --algorithms "$NBR_BATCH_ALGORITHMS" \
          "${virtual[@]}" --csv "$name.csv"
      done
    done
  done
  local csvs=()
  mapfile -t csvs < <(find bench -name '*.csv' -size +0 | sort)
  nbr_batch_merge_csv bench.csv "${csvs[@]}"
}

# SpMM on the matrix list: one nbr_spmm run per memory kind and partition
# with every matrix (spmm/NAME.txt, spmm/NAME.csv), all rows in spmm.csv.
nbr_batch_spmm() {
  if [[ -z $NBR_SPMM_BIN ]]; then
    nbr_batch_skip "spmm: no nbr_spmm in $NBR_BATCH_BUILD (bench/spmm/ or bin/): build it to run this step"
    return 0
  fi
  local entry file matrices=() missing=() memory part name virtual=() check=()
  # Entries may be globs; relative ones are in the source tree.
  for entry in $NBR_BATCH_MATRICES; do
    entry=$(nbr_batch_abs "$entry")
    local found=0
    for file in $entry; do
      if [[ -r $file ]]; then matrices+=(--matrix "$file"); found=1; fi
    done
    ((found)) || missing+=("$entry")
  done
  if ((${#missing[@]})); then echo "nbr-batch: spmm: no matrix at ${missing[*]}" | tee -a status.txt; fi
  if ((${#matrices[@]} == 0)); then
    nbr_batch_fail "spmm: NBR_BATCH_MATRICES='$NBR_BATCH_MATRICES' names no readable matrix"
    return 0
  fi
  if [[ -n $NBR_BATCH_VIRTUAL_RPN ]]; then virtual=(--ranks-per-node "$NBR_BATCH_VIRTUAL_RPN"); fi
  if [[ $NBR_BATCH_SPMM_CHECK == 1 ]]; then check=(--check); fi
  for memory in $NBR_BATCH_MEMORY; do
    for part in $NBR_BATCH_SPMM_PARTITIONS; do
      name=spmm/$part-$memory
      nbr_batch_run "$name.txt" "${NBR_RANKS_LAUNCH[@]}" "$NBR_SPMM_BIN" "${matrices[@]}" \
        --cols "$NBR_BATCH_SPMM_COLS" --partition "$part" --memory "$memory" \
        --algorithms "$NBR_BATCH_ALGORITHMS" --iters "$NBR_BATCH_SPMM_ITERS" \
        --warmup "$NBR_BATCH_SPMM_WARMUP" "${check[@]}" "${virtual[@]}" --csv "$name.csv"
    done
  done
  local csvs=()
  mapfile -t csvs < <(find spmm -name '*.csv' -size +0 | sort)
  nbr_batch_merge_csv spmm.csv "${csvs[@]}"
}

nbr_batch_main() {
  ((${#NBR_RANKS_LAUNCH[@]})) || nbr_batch_launchers
  local step
  for step in $NBR_BATCH_STEPS; do
    case $step in
      topo) nbr_batch_topo ;;
      bench) nbr_batch_bench ;;
      spmm) nbr_batch_spmm ;;
      *) nbr_batch_fail "unknown step '$step' in NBR_BATCH_STEPS (topo, bench, spmm)" ;;
    esac
  done
  local rows
  for step in bench spmm; do
    [[ -f $step.csv ]] || continue
    rows=$(($(wc -l <"$step.csv") - 1))
    echo "nbr-batch: $step.csv: $rows rows"
  done
  if ((NBR_BATCH_FAILED)); then
    echo "nbr-batch: some steps FAILED (status.txt); results in $NBR_BATCH_DIR" >&2
    exit 1
  fi
  echo "nbr-batch: done; results in $NBR_BATCH_DIR"
}
