/* The GPU CSR SpMM kernel of nbr_spmm, written against HIP names like the
 * device layer (src/device/gpu_port.h maps them for nvcc). One thread per
 * element C[i][j]: neighbouring threads take neighbouring columns of the
 * same row, so their reads of a row of Bx coalesce; each sums its row's
 * terms in CSR order, as the CPU kernel does. */
#include "device/gpu_port.h"
#include "spmm_kernel.h"

#include <stdio.h>

#ifdef NBR_GPU_HIP
#define SPMM_GPU_ENTRY spmm_gpu_hip
#else
#define SPMM_GPU_ENTRY spmm_gpu_cuda
#endif

namespace {

__global__ void csr_spmm(int rows, int k, const long *row_offsets, const int *col,
                         const double *val, const double *Bx, double *C)
{
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long)rows * k)
        return;
    long i = t / k;
    int j = (int)(t % k);
    double sum = 0.0;
    for (long e = row_offsets[i]; e < row_offsets[i + 1]; e++)
        sum += val[e] * Bx[(long)col[e] * k + j];
    C[t] = sum;
}

int owns(const void *ptr)
{
    hipPointerAttribute_t attr;
    if (!ptr || hipPointerGetAttributes(&attr, ptr) != hipSuccess) {
        (void)hipGetLastError(); /* no GPU, or plain host memory */
        return 0;
    }
    if (!NBR_GPU_ATTR_IS_DEVICE(attr) && !NBR_GPU_ATTR_IS_MANAGED(attr))
        return 0;
    return hipSetDevice(attr.device) == hipSuccess;
}

int fail(const char *what, hipError_t e, char *err, unsigned long errlen)
{
    snprintf(err, errlen, "%s: %s", what, hipGetErrorString(e));
    return -1;
}

int run(const spmm_csr_t *A, const double *Bx, int k, double *C, char *err,
        unsigned long errlen)
{
    long threads = (long)A->rows * k;
    if (threads == 0)
        return 0;
    const int block = 256;
    long blocks = (threads + block - 1) / block;
    csr_spmm<<<(unsigned)blocks, block>>>(A->rows, k, A->row_offsets, A->col, A->val, Bx, C);
    hipError_t e = hipGetLastError();
    if (e != hipSuccess)
        return fail("kernel launch", e, err, errlen);
    /* the legacy default stream: the kernel is done when it is */
    e = hipStreamSynchronize(0);
    return e == hipSuccess ? 0 : fail("kernel", e, err, errlen);
}

const spmm_gpu_t gpu = {NBR_GPU_BACKEND_NAME, owns, run};

} // namespace

extern "C" const spmm_gpu_t *SPMM_GPU_ENTRY(void)
{
    return &gpu;
}
