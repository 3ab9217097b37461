/* Matrix Market coordinate files (plain or gzip-compressed), read into CSR:
 * the sparsity pattern every SpMV and SpMM benchmark needs, and the values
 * where the file has them. Pure C, no MPI. */
#ifndef NBR_BENCH_HARNESS_MTX_H
#define NBR_BENCH_HARNESS_MTX_H

#include <stddef.h>

typedef struct bh_matrix {
    int rows, cols;
    long nnz;          /* entries after mirroring a symmetric file's triangle */
    long *row_offsets; /* rows + 1 */
    int *col;          /* each row's columns, ascending, each once */
    double *val;       /* NULL for a pattern file; repeated entries are summed */
} bh_matrix_t;

/* Reads path: "%%MatrixMarket matrix coordinate" with field real, integer
 * or pattern and symmetry general, symmetric or skew-symmetric (the other
 * triangle is mirrored, negated for skew-symmetric); '%' lines are
 * comments. 0 on success; -1 with "path:line: what" in err on a file that
 * cannot be read or is malformed (complex fields and dense "array" files
 * are refused the same way). */
int bh_matrix_read(const char *path, bh_matrix_t *m, char *err, size_t errlen);
void bh_matrix_free(bh_matrix_t *m);

#endif
