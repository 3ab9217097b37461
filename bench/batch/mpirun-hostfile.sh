#!/usr/bin/env bash
# mpirun-hostfile.sh: the batch scripts' steps (nbr_topo on every node, the
# benchmark grid, SpMM) on a cluster without Slurm: mpirun over the hosts
# of a hostfile. Run it from the source tree on the first host; the build
# and the results folder must be on a file system all hosts share.
#
#   bench/batch/mpirun-hostfile.sh --hostfile hosts [--gpu none|cuda|hip]
#   NBR_BATCH_RANKS_PER_NODE=16 bench/batch/mpirun-hostfile.sh --hostfile hosts
#
# hosts: one host per line, Open MPI style ("node01 slots=16") or MPICH
# style ("node01:16"). Without --hostfile: this machine alone.
# --gpu cuda|hip: one rank per GPU, device buffers first, each rank's GPU
# first in its visible list (gpu-select.sh), GPU-aware Open MPI over UCX.
#
# Results: results/<YYYY-MM-DD-HHMMSS>-<name>/ under the current directory
# (bench/batch/README.md says what is in it).
set -euo pipefail

# ---- parameters: each one can be set in the environment -----------------
# Relative paths are taken in the source tree.
: "${NBR_BATCH_HOSTFILE:=}"              # or --hostfile
: "${NBR_BATCH_GPU:=none}"               # or --gpu: none, cuda, hip
: "${NBR_BATCH_NAME:=nbr-mpirun}"
: "${NBR_BATCH_BUILD:=build}"            # build tree or install prefix
: "${NBR_BATCH_OUT:=$PWD/results}"
: "${NBR_BATCH_STEPS:=topo bench spmm}"
: "${NBR_BATCH_MPIRUN_FLAGS:=}"          # more mpirun flags (--mca ..., -x VAR)
: "${NBR_BATCH_RANKS_PER_NODE:=}"        # empty: GPUs per node, else cores
: "${NBR_BATCH_GPUS_PER_NODE:=8}"        # --gpu cuda|hip
: "${NBR_BATCH_VIRTUAL_RPN:=}"           # split one node into virtual ones (tests)
: "${NBR_BATCH_COLLECTIVES:=allgatherv alltoallv}"
: "${NBR_BATCH_PATTERNS:=rsg:0.05 rsg:0.3 moore:2:1 moore:3:1}"
: "${NBR_BATCH_MIN_BYTES:=8}"
: "${NBR_BATCH_MAX_BYTES:=1Mi}"
: "${NBR_BATCH_STEP:=4}"
: "${NBR_BATCH_ITERS:=50}"
: "${NBR_BATCH_WARMUP:=5}"
: "${NBR_BATCH_ALGORITHMS:=mpi,naive,halving,combining,leader,auto}"
: "${NBR_BATCH_MEMORY:=}"                # empty: host, or "device host" with --gpu
: "${NBR_BATCH_MATRICES:=tests/data/matrices/*.mtx.gz}"   # globs, space-separated
: "${NBR_BATCH_SPMM_COLS:=32}"
: "${NBR_BATCH_SPMM_PARTITIONS:=rows nnz}"
: "${NBR_BATCH_SPMM_ITERS:=20}"
: "${NBR_BATCH_SPMM_WARMUP:=3}"

while (($#)); do
  case $1 in
    --hostfile) NBR_BATCH_HOSTFILE=$2; shift 2 ;;
    --gpu) NBR_BATCH_GPU=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "mpirun-hostfile: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# ---- MPI and nbrcoll settings ---------------------------------------------
# Open MPI's mpirun passes only OMPI_* variables to other hosts by itself:
# the NBR_* and UCX_* settings below travel with -x (added further down).
case $NBR_BATCH_GPU in
  none)
    export NBR_DEVICE=off
    : "${NBR_BATCH_MEMORY:=host}"
    ;;
  cuda|hip)
    export NBR_DEVICE=$NBR_BATCH_GPU
    # Device pointers go to MPI between nodes (0: staged through host memory).
    export NBR_GPU_AWARE_MPI=${NBR_GPU_AWARE_MPI:-1}
    # Open MPI moves device buffers through UCX only.
    export OMPI_MCA_pml=ucx
    if [[ $NBR_BATCH_GPU == cuda ]]; then
      export UCX_TLS=${UCX_TLS:-rc,sm,self,cuda_copy,cuda_ipc}
    else
      export UCX_TLS=${UCX_TLS:-rc,sm,self,rocm_copy,rocm_ipc}
    fi
    : "${NBR_BATCH_MEMORY:=device host}"
    : "${NBR_BATCH_RANKS_PER_NODE:=$NBR_BATCH_GPUS_PER_NODE}"
    NBR_BATCH_RANK_WRAPPER=bench/batch/gpu-select.sh
    ;;
  *) echo "mpirun-hostfile: --gpu '$NBR_BATCH_GPU': say none, cuda or hip" >&2; exit 2 ;;
esac
: "${NBR_BATCH_RANKS_PER_NODE:=$(nproc)}"
# Running as root (containers) needs Open MPI's consent; harmless otherwise.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

NBR_BATCH_LAUNCHER=mpirun
if [[ -n $NBR_BATCH_HOSTFILE ]]; then
  NBR_BATCH_HOSTFILE=$(cd "$(dirname "$NBR_BATCH_HOSTFILE")" && pwd)/$(basename "$NBR_BATCH_HOSTFILE")
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$here/common.sh"

# Open MPI: export the settings to the ranks on every host.
if mpirun --version 2>&1 | grep -qE 'Open MPI|OpenRTE'; then
  for var in $(compgen -e | grep -E '^(NBR_|UCX_)' | grep -v '^NBR_BATCH_'); do
    NBR_BATCH_MPIRUN_FLAGS+=" -x $var"
  done
fi
nbr_batch_init
nbr_batch_launchers
nbr_batch_main
