/* The local product of nbr_spmm: C = A_local x Bx, A_local in CSR whose
 * column indices name rows of Bx (this rank's rows of B followed by the
 * rows gathered from its neighbors), Bx and C dense, k columns, row-major.
 * A CPU kernel for host memory, and one GPU kernel source (spmm_gpu.cu)
 * built by nvcc and by hipcc, each under its own name; the one that owns
 * the buffers' memory runs. */
#ifndef NBR_SPMM_KERNEL_H
#define NBR_SPMM_KERNEL_H

#ifdef __cplusplus
extern "C" {
#endif

/* A's local rows; the arrays live where the kernel reads them. */
typedef struct spmm_csr {
    int rows;
    long nnz;
    const long *row_offsets; /* rows + 1 */
    const int *col;          /* rows of Bx */
    const double *val;       /* 1.0 for a pattern file */
} spmm_csr_t;

/* Row by row, each row's terms summed in CSR order. */
void spmm_cpu(const spmm_csr_t *A, const double *Bx, int k, double *C);

/* One GPU runtime's kernel: 1 if ptr is that runtime's device memory (its
 * device then made current), else 0 (no such GPU, or host memory). */
typedef struct spmm_gpu {
    const char *name; /* "cuda" or "hip" */
    int (*owns)(const void *ptr);
    /* C = A x Bx with every array in that device's memory; waits for the
     * kernel. 0, or -1 with the runtime's message in err. */
    int (*run)(const spmm_csr_t *A, const double *Bx, int k, double *C, char *err,
               unsigned long errlen);
} spmm_gpu_t;

/* The runtimes this build has (NULL when it has none, as spmm_gpu_stub.c
 * says). */
const spmm_gpu_t *spmm_gpu_cuda(void);
const spmm_gpu_t *spmm_gpu_hip(void);

#ifdef __cplusplus
}
#endif

#endif
