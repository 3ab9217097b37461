#!/usr/bin/env bash
# gpu-select.sh CMD ARGS...: runs CMD with this rank's GPU first in the
# visible-device list, the node's other GPUs after it ("rotate" binding of
# the batch scripts, NBR_BATCH_GPU_BIND=rotate).
#
# Why not one GPU per rank: the bench programs allocate on the runtime's
# current device (device 0), so each rank must see its own GPU first; but
# CUDA IPC only opens memory of GPUs the process can see, and nbrcoll's
# CUDA probe models only the visible GPUs. Rotating keeps all of them
# visible, so ranks can map each other's buffers and nbrcoll finds each
# rank's GPU by its PCI bus id. Rank l of a node takes GPU l mod count.
#
# The list rotated is CUDA_VISIBLE_DEVICES (NBR_DEVICE=cuda) or
# ROCR_VISIBLE_DEVICES (NBR_DEVICE=hip) as the launcher set it, else all
# GPUs of the node (nvidia-smi / rocm-smi count them).
set -euo pipefail
(($#)) || { echo "usage: gpu-select.sh CMD [ARGS...]" >&2; exit 2; }

case ${NBR_DEVICE:-cuda} in
  cuda) var=CUDA_VISIBLE_DEVICES count_cmd="nvidia-smi -L" ;;
  hip) var=ROCR_VISIBLE_DEVICES count_cmd="rocm-smi --showid --csv" ;;
  *) exec "$@" ;; # no GPU layer: nothing to choose
esac

# The node-local rank: mpirun's own variables first (inside a Slurm job
# SLURM_LOCALID is the batch step's, the same for every rank mpirun starts).
local_rank=${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-${PMI_LOCAL_RANK:-${SLURM_LOCALID:-}}}}
if [[ -z $local_rank ]]; then
  echo "gpu-select: no local rank in the environment (OMPI_COMM_WORLD_LOCAL_RANK," \
    "MPI_LOCALRANKID, PMI_LOCAL_RANK, SLURM_LOCALID): start it with srun or mpirun" >&2
  exit 1
fi

list=${!var:-}
if [[ -z $list ]]; then
  # One line per GPU (rocm-smi's CSV has a header line too).
  count=$($count_cmd 2>/dev/null | grep -c -E '^(GPU|card)' || true)
  if ((count == 0)); then
    echo "gpu-select: no GPU: $var is unset and '$count_cmd' lists none" >&2
    exit 1
  fi
  list=$(seq -s, 0 $((count - 1)))
fi

IFS=, read -r -a gpus <<<"$list"
n=${#gpus[@]}
first=$((local_rank % n))
rotated=("${gpus[@]:first}" "${gpus[@]:0:first}")
export "$var=$(IFS=,; echo "${rotated[*]}")"
exec "$@"
