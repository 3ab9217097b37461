#!/usr/bin/env bash
# test-sbatch.sh BUILD_DIR: the ctest slurm_sbatch_cpu. Starts a private
# Slurm on this machine (scripts/slurm-local.sh), submits cpu.sbatch with
# sbatch on tiny parameters, twice (ranks started by srun, then by mpirun
# inside the job), waits for each job, checks its results folder, and stops
# Slurm on every way out, leaving no daemon and no state behind.
#
# Exit 77 (ctest's skip) only when Slurm or MUNGE is not installed and
# cannot be installed here (root and apt-get; NBR_TEST_NO_INSTALL=1 says
# not to try).
set -euo pipefail

(($# == 1)) || { echo "usage: test-sbatch.sh BUILD_DIR" >&2; exit 2; }
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
WORK=$BUILD/bench/batch/sbatch-test
# A fixed state folder: a run killed before its cleanup (ctest's timeout)
# is cleaned by the next start. Short, for MUNGE's socket path.
NBR_SLURM_DIR=/tmp/nbrcoll-slurm-ctest-$(id -u)
export NBR_SLURM_DIR
SLURM_LOCAL=$SRC/scripts/slurm-local.sh

need=(munged slurmctld slurmd sbatch)
missing() {
  local c
  for c in "${need[@]}"; do command -v "$c" >/dev/null || return 0; done
  return 1
}
if missing; then
  if ((EUID == 0)) && command -v apt-get >/dev/null && [[ -z ${NBR_TEST_NO_INSTALL:-} ]]; then
    echo "test-sbatch: Slurm or MUNGE missing: installing slurm-wlm and munge"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 &&
        apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null 2>&1; } || true
  fi
  if missing; then
    echo "test-sbatch: SKIP: Slurm (slurm-wlm) or MUNGE (munge) is not installed and could not be" \
      "installed here; scripts/install-deps.sh installs them"
    exit 77
  fi
fi

# Long steps run in the background and are waited for: bash runs a trap
# only after the foreground command, but at once during `wait`.
CHILD=""
in_background() {
  local rc=0
  "$@" &
  CHILD=$!
  wait "$CHILD" || rc=$?
  CHILD=""
  return "$rc"
}
cleanup() {
  local rc=$?
  if [[ -n $CHILD ]]; then
    kill "$CHILD" 2>/dev/null || true
    wait "$CHILD" 2>/dev/null || true
  fi
  "$SLURM_LOCAL" stop >/dev/null 2>&1 || rc=1
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
start=$(date +%s)
in_background "$SLURM_LOCAL" start
export SLURM_CONF=$NBR_SLURM_DIR/slurm.conf
echo "test-sbatch: Slurm up after $(($(date +%s) - start)) s"

fail() {
  echo "test-sbatch: FAIL: $*" >&2
  exit 1
}

# Only what is set here reaches the job: no NBR_BATCH_* of the caller's.
while read -r var; do unset "$var"; done < <(compgen -e | grep '^NBR_BATCH_' || true)
# Tiny parameters: 4 ranks in 2 virtual nodes of 2 (halving, combining and
# leader have nodes to work across), 2 patterns x 1 collective x 3 sizes,
# 2 matrices. sbatch exports this environment to the job.
ranks=4
cpus=$(nproc)
((cpus < ranks)) || cpus=$ranks
export NBR_BATCH_BUILD=$BUILD
export NBR_BATCH_OUT=$WORK/results
export NBR_BATCH_RANKS_PER_NODE=$ranks NBR_BATCH_VIRTUAL_RPN=2
export NBR_BATCH_COLLECTIVES=alltoallv NBR_BATCH_PATTERNS="rsg:0.4 moore:2:1"
export NBR_BATCH_MIN_BYTES=8 NBR_BATCH_MAX_BYTES=512 NBR_BATCH_STEP=8
export NBR_BATCH_ITERS=3 NBR_BATCH_WARMUP=1
export NBR_BATCH_ALGORITHMS=mpi,naive,halving,combining,leader,auto NBR_BATCH_MEMORY=host
export NBR_BATCH_MATRICES="tests/data/matrices/dwt_193.mtx.gz tests/data/matrices/can_256.mtx.gz"
export NBR_BATCH_SPMM_PARTITIONS=rows NBR_BATCH_SPMM_ITERS=2 NBR_BATCH_SPMM_WARMUP=1
# More ranks than cores: srun needs --overcommit, Open MPI --oversubscribe,
# and ranks that poll for messages must yield the core (Open MPI does that
# by itself only when mpirun sees more ranks than slots).
export NBR_BATCH_SRUN_FLAGS=--overcommit NBR_BATCH_MPIRUN_FLAGS=--oversubscribe
export OMPI_MCA_mpi_yield_when_idle=1

rows_of() {
  if [[ -f $1 ]]; then echo $(($(wc -l <"$1") - 1)); else echo 0; fi
}

# submit LAUNCHER: one job; checks its folder.
submit() {
  local launcher=$1 name=nbr-ctest-$1 rc dir t0
  t0=$(date +%s)
  # The job's tasks: as many as there are cores (at most 4); the command
  # line overrides the #SBATCH lines of the script.
  local id state=""
  id=$(NBR_BATCH_LAUNCHER=$launcher sbatch --parsable --job-name="$name" \
    --nodes=1 --ntasks-per-node="$cpus" --time=5 --output="$WORK/$name-%j.out" \
    "$HERE/cpu.sbatch") || fail "sbatch refused $name"
  # Polled (sbatch --wait checks every few seconds only); the controller
  # keeps the record of an ended job for MinJobAge (300 s).
  while (($(date +%s) - t0 < 150)); do
    state=$(scontrol show job -o "$id" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    case $state in
      PENDING|CONFIGURING|RUNNING|COMPLETING|"") sleep 0.5 ;;
      *) break ;;
    esac
  done
  rc=$(scontrol show job -o "$id" 2>/dev/null | sed -n 's/.* ExitCode=\([0-9]*\):.*/\1/p')
  echo "test-sbatch: job $id $name: $state, exit ${rc:-?} after $(($(date +%s) - t0)) s; its output:"
  sed 's/^/    /' "$WORK/$name"-*.out 2>/dev/null || true
  [[ $state == COMPLETED && $rc == 0 ]] || fail "job $name: $state, exit ${rc:-?}"

  local dirs=("$NBR_BATCH_OUT"/20[0-9][0-9]-[01][0-9]-[0-3][0-9]-[0-9][0-9][0-9][0-9][0-9][0-9]-"$name")
  [[ -d ${dirs[0]} ]] || fail "no results folder $NBR_BATCH_OUT/<date>-$name"
  ((${#dirs[@]} == 1)) || fail "${#dirs[@]} results folders for $name"
  dir=${dirs[0]}
  local f
  for f in command.txt env.txt status.txt job-script.sh "topo-$(hostname -s).txt" "topo-$(hostname -s).topo"; do
    [[ -s $dir/$f ]] || fail "$name: $f missing or empty in $dir"
  done
  grep -q "node model" "$dir/topo-$(hostname -s).txt" || fail "$name: topo file has no node model"
  grep -q 'nbr_bench' "$dir/command.txt" || fail "$name: command.txt lacks the nbr_bench runs"
  grep -q "^$launcher " "$dir/command.txt" || fail "$name: command.txt has no $launcher command"
  ! grep -q FAILED "$dir/status.txt" || fail "$name: a step failed: $(grep FAILED "$dir/status.txt")"

  # bench.csv: 2 patterns x 3 sizes (8, 64, 512) x 6 algorithms.
  local want=36 got
  got=$(rows_of "$dir/bench.csv")
  ((got == want)) || fail "$name: bench.csv has $got data rows, not $want"
  grep -q '^pattern,ranks,nodes,collective,algorithm,bytes,median_us' "$dir/bench.csv" ||
    fail "$name: bench.csv has no header"
  # Every row names 4 ranks in 2 (virtual) nodes and a positive time (the
  # pattern, first, is quoted and has commas: dropped before splitting).
  sed 's/^"[^"]*"//' "$dir/bench.csv" |
    awk -F, 'NR > 1 && ($2 != 4 || $3 != 2 || !($7 > 0)) { bad++ } END { exit bad > 0 }' ||
    fail "$name: bench.csv rows with a wrong layout or no time"

  # spmm.csv: 2 matrices x 6 algorithms, every product checked; the
  # step is skipped (and not checked) only in a build without nbr_spmm.
  if [[ -x $BUILD/bench/spmm/nbr_spmm ]]; then
    got=$(rows_of "$dir/spmm.csv")
    ((got == 12)) || fail "$name: spmm.csv has $got data rows, not 12"
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "check") c = i; next }
             !c || $c != "ok" { bad++ } END { exit bad > 0 }' "$dir/spmm.csv" ||
      fail "$name: spmm.csv rows whose check is not ok"
  else
    grep -q 'skipped.*spmm' "$dir/status.txt" || fail "$name: no nbr_spmm, yet the step was not skipped"
    echo "test-sbatch: nbr_spmm not built: SpMM step skipped, as it should be"
  fi
  echo "test-sbatch: $name: results in $dir good (bench.csv $want rows)"
}

submit srun
submit mpirun

# Stop here rather than in the trap, to check that nothing is left.
"$SLURM_LOCAL" stop
trap - EXIT
left=$(pgrep -a -f "$NBR_SLURM_DIR" || true)
[[ -z $left ]] || fail "processes left after stop: $left"
[[ ! -e $NBR_SLURM_DIR ]] || fail "$NBR_SLURM_DIR left after stop"
echo "test-sbatch: PASS in $(($(date +%s) - start)) s; Slurm stopped, nothing left"
