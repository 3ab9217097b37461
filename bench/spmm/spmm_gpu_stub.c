/* The GPU kernels this build lacks: CMake defines SPMM_HAVE_CUDA /
 * SPMM_HAVE_HIP for the ones spmm_gpu.cu was compiled into. */
#include "spmm_kernel.h"

#include <stddef.h>

#ifndef SPMM_HAVE_CUDA
const spmm_gpu_t *spmm_gpu_cuda(void)
{
    return NULL;
}
#endif

#ifndef SPMM_HAVE_HIP
const spmm_gpu_t *spmm_gpu_hip(void)
{
    return NULL;
}
#endif
