/* What one rank of nbr_spmm holds and exchanges (nbr_sim --matrix prices
 * the same exchange), worked out from the whole
 * matrix (every rank reads it and computes the same answer, so no set-up
 * messages are needed). Pure C, no MPI.
 *
 * Rows of A and C, and rows of B, are split in blocks over the ranks.
 * Rank q owns B rows [b_first[q], b_first[q+1]); the ones some other rank's
 * A rows touch are its "send rows", and a neighborhood allgatherv sends
 * all of them to every rank that needs any (allgatherv sends one buffer to
 * all neighbors). Each rank keeps its B rows in one buffer Bx laid out as
 *
 *     [ own send rows | own other rows | rows received, by source ]
 *
 * so that the send buffer is the start of Bx and the receive buffer its
 * end: nothing is packed or unpacked per iteration. */
#ifndef NBR_SPMM_PLAN_H
#define NBR_SPMM_PLAN_H

#include "harness/mtx.h"

typedef enum { SPMM_SPLIT_ROWS, SPMM_SPLIT_NNZ } spmm_split_t;

/* The whole job's split and exchange, the same on every rank. */
typedef struct spmm_job {
    int nranks;
    long *a_first;   /* A and C rows of rank r: [a_first[r], a_first[r+1]) */
    long *b_first;   /* B rows of rank r */
    int *send_rows;  /* how many B rows rank r sends */
    int *b_owner;    /* rank owning each B row */
    int *send_index; /* each B row's place in its owner's send rows, or -1 */
    long nedges;     /* q -> r: r's A rows touch q's send rows (q != r) */
    int *edge_src, *edge_dst; /* sorted by (dst, src) */
} spmm_job_t;

/* rows: equal row counts, a_first[r] = floor(r * rows / P). nnz: a_first[r]
 * is the first row i with row_offsets[i] * P >= r * nnz, so each block holds
 * about nnz / P entries. B rows follow A's split when A is square, else
 * they are split by count. 0, or -1 (out of memory). */
int spmm_job_build(const bh_matrix_t *A, int nranks, spmm_split_t split, spmm_job_t *job);
void spmm_job_free(spmm_job_t *job);

/* One rank's share, for a product with k dense columns. */
typedef struct spmm_rank {
    int rank;
    long row_lo, rows;  /* its A and C rows */
    long b_lo, b_rows;  /* its B rows (global row b_lo + i) */
    int nsend;          /* own B rows sent: the first nsend rows of Bx */
    long *bx_row;       /* global B row of each row of Bx, own then received */
    long bx_rows;       /* b_rows + received rows */
    int indeg, outdeg;
    int *sources, *dests;   /* ascending */
    int *recv_rows;         /* rows from each source */
    /* A's rows with columns renumbered to rows of Bx, values 1.0 where the
     * file has none */
    long nnz;
    long *row_offsets;
    int *col;
    double *val;
} spmm_rank_t;

int spmm_rank_build(const bh_matrix_t *A, const spmm_job_t *job, int rank, spmm_rank_t *me);
void spmm_rank_free(spmm_rank_t *me);

/* The options of every program of this exchange: --cols K (dense
 * columns) and --partition rows|nnz. 0 applied, -1 a bad value, 1 not one
 * of them. */
int spmm_option(const char *name, const char *val, int *cols, spmm_split_t *split);

/* B's entry (row i, column j): deterministic, the same on every rank. */
double spmm_b_value(long i, int j);

#endif
