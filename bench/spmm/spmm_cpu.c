#include "spmm_kernel.h"

#include <string.h>

void spmm_cpu(const spmm_csr_t *A, const double *Bx, int k, double *C)
{
    for (int i = 0; i < A->rows; i++) {
        double *c = C + (size_t)i * (size_t)k;
        memset(c, 0, (size_t)k * sizeof(double));
        for (long e = A->row_offsets[i]; e < A->row_offsets[i + 1]; e++) {
            const double a = A->val[e];
            const double *b = Bx + (size_t)A->col[e] * (size_t)k;
            for (int j = 0; j < k; j++)
                c[j] += a * b[j];
        }
    }
}
