#!/usr/bin/env bash
# The device-layer check on a machine with a GPU, in one command: builds
# with the CUDA (or HIP) backend, runs the GPU tests with device buffers
# and the two nbr_bench runs of bench/README.md ("The GPU run"), then
# nbr_spmm on the papers' matrices with host buffers (CPU kernel) and with
# device buffers (GPU kernel), both checked, and
# writes everything, each output under the exact command that made it,
# into OUTDIR.
#
#   scripts/gpu-run.sh [--small] [--no-build] [--no-tests] OUTDIR
#
# On the lent GPU machine (no package registry there): prepare the bundle
# here with ../shared/tools/gpu-bundle.sh, carry .devbundle, and run
#   source .devbundle/activate && scripts/gpu-run.sh "$OUT/gpu-run"
# --small: sizes 1 KiB to 64 KiB, 4 ranks, few iterations: the same steps
# where there is no GPU (NBR_DEVICE=emulate), as CI runs it.
# --no-build: use the build in ${BUILD_DIR:-build} as it is.
# --no-tests: only the benchmarks (CI runs the script this way, from ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
small=0 build=1 tests=1 out=
for arg in "$@"; do
    case $arg in
    --small) small=1 ;;
    --no-build) build=0 ;;
    --no-tests) tests=0 ;;
    -*) echo "gpu-run.sh: unknown option $arg" >&2; exit 2 ;;
    *) out=$arg ;;
    esac
done
[ -n "$out" ] || {
    echo "usage: scripts/gpu-run.sh [--small] [--no-build] [--no-tests] OUTDIR" >&2
    exit 2
}
mkdir -p "$out"
BUILD_DIR=${BUILD_DIR:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Runs a command with its output in $out/$1, the command line first.
record() {
    local file=$out/$1
    shift
    { echo "\$ $*"; echo "# $(date -u +%FT%TZ) on $(hostname)"; } > "$file"
    "$@" >> "$file" 2>&1
}

{
    echo "# $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null ||
        rocm-smi --showproductname 2>/dev/null || echo "no nvidia-smi / rocm-smi"
    mpirun --version 2>/dev/null | head -1
} > "$out/machine.txt"

if [ "$build" = 1 ]; then
    record build.txt scripts/build.sh -DNBR_WERROR=ON
fi

# GPU tests: the backend's own tests and the MPI suites with device buffers
# (they skip, saying why, without a GPU; --small runs the emulated suites).
selected='GpuBackend|CudaProbe|mpi\.gpu\.|spmm\.gpu\.'
[ "$small" = 1 ] && selected='mpi\.emulate\.device\.np8'
status=0
if [ "$tests" = 1 ]; then
    record tests.txt ctest --test-dir "$BUILD_DIR" --output-on-failure -R "$selected" || status=1
fi

if [ "$small" = 1 ]; then
    np=4 sizes=(--min-bytes 1Ki --max-bytes 64Ki --warmup 2 --iters 5) rpn=2
else
    np=8 sizes=(--min-bytes 64Ki --max-bytes 64Mi --max-mem 4Gi) rpn=8
fi
bench=("$BUILD_DIR/bench/nbr_bench" --memory device --ranks-per-node "$rpn" "${sizes[@]}"
       --algorithms mpi,naive,copy)
run=(mpirun --oversubscribe --bind-to none -np "$np")
record rsg-device.txt "${run[@]}" "${bench[@]}" --pattern rsg --density 0.4 \
    --csv "$out/rsg-device.csv" || status=1
record moore-device.txt "${run[@]}" "${bench[@]}" --pattern moore --dims 2 --radius 1 \
    --csv "$out/moore-device.csv" || status=1

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
