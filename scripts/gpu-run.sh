#!/usr/bin/env bash
# The device-layer check on a machine with a GPU, in one command: builds
# with the CUDA (or HIP) backend, runs the GPU tests with device buffers,
# prints what the topology probe finds, then the nbr_bench runs of
# bench/README.md ("The GPU run"): bandwidth (64 KiB to 64 MiB) and
# latency (8 B to 32 KiB, device and host buffers) at 8 ranks on one node,
# leader at 16 ranks as 2 virtual nodes; then nbr_spmm on the papers'
# matrices with host buffers (CPU kernel) and with device buffers (GPU
# kernel), both checked. Each output goes into OUTDIR under the exact
# command that made it; every step has a time limit (STEP_LIMIT seconds,
# default 240; the tests TESTS_LIMIT, default 900, run TEST_JOBS at a time)
# so one hang costs one step, not the run.
#
#   scripts/gpu-run.sh [--small] [--no-build] [--no-tests] [--mps] OUTDIR
#
# On the lent GPU machine (no package registry there): prepare the bundle
# here with ../shared/tools/gpu-bundle.sh, carry .devbundle, and run
#   source .devbundle/activate && scripts/gpu-run.sh "$OUT/gpu-run"
# --small: small sizes, 4 ranks, few iterations: the same steps where
# there is no GPU (NBR_DEVICE=emulate), as CI runs it.
# --no-build: use the build in ${BUILD_DIR:-build} as it is.
# --no-tests: only the benchmarks (CI runs the script this way, from ctest).
# --mps: run everything under NVIDIA's Multi-Process Service (a daemon of
# this script's own, stopped at the end). Ranks that share one GPU are
# otherwise time-sliced: every call that touches the GPU then waits about
# 140 us per process for its turn (docs/decisions.md, D44), which
# says nothing of nbrcoll; with a GPU per rank neither applies.
set -euo pipefail
cd "$(dirname "$0")/.."
small=0 build=1 tests=1 mps=0 out=
for arg in "$@"; do
    case $arg in
    --small) small=1 ;;
    --no-build) build=0 ;;
    --no-tests) tests=0 ;;
    --mps) mps=1 ;;
    -*) echo "gpu-run.sh: unknown option $arg" >&2; exit 2 ;;
    *) out=$arg ;;
    esac
done
[ -n "$out" ] || {
    echo "usage: scripts/gpu-run.sh [--small] [--no-build] [--no-tests] [--mps] OUTDIR" >&2
    exit 2
}
mkdir -p "$out"
BUILD_DIR=${BUILD_DIR:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Runs a command with its output in $out/$1, the command line first, under
# the step limit (exit 124 when it ran out).
STEP_LIMIT=${STEP_LIMIT:-240}
record() {
    local file=$out/$1 rc=0
    shift
    { echo "\$ $*"; echo "# $(date -u +%FT%TZ) on $(hostname)"; } > "$file"
    timeout -k 10 "$STEP_LIMIT" "$@" >> "$file" 2>&1 || rc=$?
    [ "$rc" = 124 ] && echo "# gpu-run.sh: stopped after ${STEP_LIMIT} s" >> "$file"
    echo "# exit $rc" >> "$file"
    return "$rc"
}

{
    echo "# $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null ||
        rocm-smi --showproductname 2>/dev/null || echo "no nvidia-smi / rocm-smi"
    nvidia-smi topo -m 2>/dev/null || true
    mpirun --version 2>/dev/null | head -1
    { nvcc --version || /usr/local/cuda/bin/nvcc --version; } 2>/dev/null | tail -1
    cc --version 2>/dev/null | head -1
    echo "cpus: $(nproc)"
} > "$out/machine.txt"

status=0
if [ "$mps" = 1 ]; then
    command -v nvidia-cuda-mps-control >/dev/null || {
        echo "gpu-run.sh: --mps: no nvidia-cuda-mps-control here" >&2
        exit 2
    }
    mps_dir=$(mktemp -d)
    export CUDA_MPS_PIPE_DIRECTORY=$mps_dir/pipe CUDA_MPS_LOG_DIRECTORY=$mps_dir/log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    nvidia-cuda-mps-control -d
    trap 'echo quit | nvidia-cuda-mps-control; cp -r "$mps_dir/log" "$out/mps-log"' EXIT
    echo "MPS: on (pipe $CUDA_MPS_PIPE_DIRECTORY)" >> "$out/machine.txt"
fi
if [ "$build" = 1 ]; then
    # a newer compiler there may warn where ours does not: the warnings
    # stay in build.txt, and the run goes on without -Werror
    # (GPU_RUN_CMAKE_ARGS: more configure arguments, e.g. one CUDA target)
    if ! record build.txt scripts/build.sh -DNBR_WERROR=ON ${GPU_RUN_CMAKE_ARGS:-}; then
        status=1
        record build-no-werror.txt scripts/build.sh -DNBR_WERROR=OFF ${GPU_RUN_CMAKE_ARGS:-}
    fi
fi

# GPU tests: the backend's own tests and the MPI suites with device buffers
# (they skip, saying why, without a GPU; --small runs the emulated suites).
selected='GpuBackend|CudaProbe|mpi\.gpu\.|spmm\.gpu\.'
[ "$small" = 1 ] && selected='mpi\.emulate\.device\.np8'
if [ "$tests" = 1 ]; then
    STEP_LIMIT=${TESTS_LIMIT:-900} record tests.txt ctest --test-dir "$BUILD_DIR" \
        --output-on-failure --timeout 300 -j "${TEST_JOBS:-1}" -R "$selected" || status=1
fi

record topo.txt "$BUILD_DIR/tools/nbr_topo" --dump "$out/topo-model.txt" || status=1

if [ "$small" = 1 ]; then
    np=4 rpn=2 leader_np=4 leader_rpn=2
    bandwidth=(--min-bytes 1Ki --max-bytes 64Ki --warmup 2 --iters 5)
    latency=(--min-bytes 8 --max-bytes 64 --warmup 2 --iters 5)
else
    np=8 rpn=8 leader_np=16 leader_rpn=8
    bandwidth=(--min-bytes 64Ki --max-bytes 64Mi --max-mem 4Gi)
    latency=(--min-bytes 8 --max-bytes 32Ki --warmup 20 --iters 200)
fi
bench=("$BUILD_DIR/bench/nbr_bench")
on_device=(--memory device --algorithms mpi,naive,leader,copy)
on_host=(--memory host --algorithms mpi,naive,leader)
rsg=(--pattern rsg --density 0.4)
moore=(--pattern moore --dims 2 --radius 1)
run=(mpirun --oversubscribe --bind-to none -np "$np")
# bandwidth and latency with device buffers beside `copy`, the local copy
# limit; latency again with host buffers: the device path's own cost
for pattern in rsg moore; do
    declare -n graph=$pattern
    record "$pattern-device.txt" "${run[@]}" "${bench[@]}" "${on_device[@]}" \
        --ranks-per-node "$rpn" "${graph[@]}" "${bandwidth[@]}" \
        --csv "$out/$pattern-device.csv" || status=1
    for memory in device host; do
        declare -n buffers=on_$memory
        record "$pattern-latency-$memory.txt" "${run[@]}" "${bench[@]}" "${buffers[@]}" \
            --ranks-per-node "$rpn" "${graph[@]}" "${latency[@]}" \
            --csv "$out/$pattern-latency-$memory.csv" || status=1
    done
    unset -n graph buffers
done
# leader across two virtual nodes sharing the GPU, checked bit-exact
record leader-2nodes-device.txt mpirun --oversubscribe --bind-to none -np "$leader_np" \
    "${bench[@]}" "${on_device[@]}" --ranks-per-node "$leader_rpn" "${rsg[@]}" \
    "${bandwidth[@]}" --csv "$out/leader-2nodes-device.csv" || status=1

# SpMM: the same matrices and algorithms with the CPU kernel on host
# buffers, then the GPU kernel on device buffers (auto: a real GPU; under
# --small, the emulated device and the CPU kernel again)
matrices=()
for m in crack bcsstk13 delaunay_n10 dwt_193 ash292; do
    matrices+=(--matrix tests/data/matrices/$m.mtx.gz)
done
spmm_iters=(--iters 50 --warmup 5)
[ "$small" = 1 ] && spmm_iters=(--iters 3 --warmup 1)
for memory in host device; do
    record "spmm-$memory.txt" "${run[@]}" "$BUILD_DIR/bench/spmm/nbr_spmm" "${matrices[@]}" \
        --memory "$memory" --ranks-per-node "$rpn" --check "${spmm_iters[@]}" \
        --csv "$out/spmm-$memory.csv" || status=1
done

echo "gpu-run.sh: results in $out ($( [ $status = 0 ] && echo 'all steps passed' ||
    echo 'a step failed: see its file'))"
exit $status
