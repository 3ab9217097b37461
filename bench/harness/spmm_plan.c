#include "harness/spmm_plan.h"

#include <stdlib.h>
#include <string.h>

#include "harness/options.h"

static long first_row_by_count(int r, int nranks, long rows)
{
    return (long)((__int128)r * rows / nranks);
}

static void split_by_nnz(const bh_matrix_t *A, int nranks, long *first)
{
    long i = 0;
    for (int r = 0; r <= nranks; r++) {
        /* the first row whose start reaches r/P of the entries */
        while (i < A->rows && (__int128)A->row_offsets[i] * nranks < (__int128)r * A->nnz)
            i++;
        first[r] = r == nranks ? A->rows : i;
    }
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

void spmm_job_free(spmm_job_t *job)
{
    free(job->a_first);
    free(job->b_first);
    free(job->send_rows);
    free(job->b_owner);
    free(job->send_index);
    free(job->edge_src);
    free(job->edge_dst);
    memset(job, 0, sizeof *job);
}

/* The edges into every rank, in rank order, each rank's sources ascending. */
static int find_edges(const bh_matrix_t *A, spmm_job_t *job, char *needed)
{
    int P = job->nranks;
    int *seen = malloc((size_t)P * sizeof(int));
    long cap = 0;
    if (!seen)
        return -1;
    for (int q = 0; q < P; q++)
        seen[q] = -1;
    for (int r = 0; r < P; r++) {
        long first_edge = job->nedges;
        for (long i = job->a_first[r]; i < job->a_first[r + 1]; i++)
            for (long e = A->row_offsets[i]; e < A->row_offsets[i + 1]; e++) {
                int q = job->b_owner[A->col[e]];
                if (q == r)
                    continue;
                needed[A->col[e]] = 1;
                if (seen[q] == r)
                    continue;
                seen[q] = r;
                if (job->nedges == cap) {
                    cap = cap ? 2 * cap : 1024;
                    int *s = realloc(job->edge_src, (size_t)cap * sizeof(int));
                    if (s)
                        job->edge_src = s;
                    int *d = realloc(job->edge_dst, (size_t)cap * sizeof(int));
                    if (d)
                        job->edge_dst = d;
                    if (!s || !d) {
                        free(seen);
                        return -1;
                    }
                }
                job->edge_src[job->nedges] = q;
                job->edge_dst[job->nedges++] = r;
            }
        qsort(job->edge_src + first_edge, (size_t)(job->nedges - first_edge), sizeof(int),
              cmp_int);
    }
    free(seen);
    return 0;
}

int spmm_job_build(const bh_matrix_t *A, int nranks, spmm_split_t split, spmm_job_t *job)
{
    memset(job, 0, sizeof *job);
    job->nranks = nranks;
    size_t P1 = (size_t)nranks + 1, ncols = (size_t)A->cols + 1;
    job->a_first = malloc(P1 * sizeof(long));
    job->b_first = malloc(P1 * sizeof(long));
    job->send_rows = calloc(P1, sizeof(int));
    job->b_owner = malloc(ncols * sizeof(int));
    job->send_index = malloc(ncols * sizeof(int));
    char *needed = calloc(ncols, 1);
    if (!job->a_first || !job->b_first || !job->send_rows || !job->b_owner ||
        !job->send_index || !needed)
        goto fail;
    if (split == SPMM_SPLIT_NNZ)
        split_by_nnz(A, nranks, job->a_first);
    else
        for (int r = 0; r <= nranks; r++)
            job->a_first[r] = first_row_by_count(r, nranks, A->rows);
    for (int r = 0; r <= nranks; r++)
        job->b_first[r] = A->rows == A->cols ? job->a_first[r]
                                             : first_row_by_count(r, nranks, A->cols);
    for (int q = 0; q < nranks; q++)
        for (long c = job->b_first[q]; c < job->b_first[q + 1]; c++)
            job->b_owner[c] = q;
    if (find_edges(A, job, needed) != 0)
        goto fail;
    for (int q = 0; q < nranks; q++)
        for (long c = job->b_first[q]; c < job->b_first[q + 1]; c++)
            job->send_index[c] = needed[c] ? job->send_rows[q]++ : -1;
    free(needed);
    return 0;
fail:
    free(needed);
    spmm_job_free(job);
    return -1;
}

void spmm_rank_free(spmm_rank_t *me)
{
    free(me->bx_row);
    free(me->sources);
    free(me->dests);
    free(me->recv_rows);
    free(me->row_offsets);
    free(me->col);
    free(me->val);
    memset(me, 0, sizeof *me);
}

/* Its in- and out-neighbors from the job's edges. */
static int take_neighbors(const spmm_job_t *job, spmm_rank_t *me)
{
    for (long e = 0; e < job->nedges; e++) {
        me->indeg += job->edge_dst[e] == me->rank;
        me->outdeg += job->edge_src[e] == me->rank;
    }
    me->sources = malloc(((size_t)me->indeg + 1) * sizeof(int));
    me->recv_rows = malloc(((size_t)me->indeg + 1) * sizeof(int));
    me->dests = malloc(((size_t)me->outdeg + 1) * sizeof(int));
    if (!me->sources || !me->recv_rows || !me->dests)
        return -1;
    int in = 0, out = 0;
    for (long e = 0; e < job->nedges; e++) {
        if (job->edge_dst[e] == me->rank) {
            me->sources[in] = job->edge_src[e];
            me->recv_rows[in++] = job->send_rows[job->edge_src[e]];
        }
        if (job->edge_src[e] == me->rank) /* edges come by destination */
            me->dests[out++] = job->edge_dst[e];
    }
    return 0;
}

int spmm_rank_build(const bh_matrix_t *A, const spmm_job_t *job, int rank, spmm_rank_t *me)
{
    memset(me, 0, sizeof *me);
    me->rank = rank;
    me->row_lo = job->a_first[rank];
    me->rows = job->a_first[rank + 1] - me->row_lo;
    me->b_lo = job->b_first[rank];
    me->b_rows = job->b_first[rank + 1] - me->b_lo;
    me->nsend = job->send_rows[rank];
    int *slot_of = malloc((size_t)job->nranks * sizeof(int));   /* source -> Bx row */
    long *own_at = malloc(((size_t)me->b_rows + 1) * sizeof(long)); /* own row -> Bx row */
    if (!slot_of || !own_at || take_neighbors(job, me) != 0)
        goto fail;
    me->bx_rows = me->b_rows;
    for (int s = 0; s < me->indeg; s++) {
        slot_of[me->sources[s]] = (int)me->bx_rows;
        me->bx_rows += me->recv_rows[s];
    }
    me->bx_row = malloc(((size_t)me->bx_rows + 1) * sizeof(long));
    if (!me->bx_row)
        goto fail;
    /* own rows: the ones sent first, then the rest, each ascending */
    long at = 0;
    for (int pass = 0; pass < 2; pass++)
        for (long i = 0; i < me->b_rows; i++)
            if ((job->send_index[me->b_lo + i] >= 0) == (pass == 0)) {
                own_at[i] = at;
                me->bx_row[at++] = me->b_lo + i;
            }
    for (int s = 0; s < me->indeg; s++) {
        int q = me->sources[s];
        for (long c = job->b_first[q]; c < job->b_first[q + 1]; c++)
            if (job->send_index[c] >= 0)
                me->bx_row[at++] = c;
    }
    me->nnz = A->row_offsets[me->row_lo + me->rows] - A->row_offsets[me->row_lo];
    me->row_offsets = malloc(((size_t)me->rows + 1) * sizeof(long));
    me->col = malloc(((size_t)me->nnz + 1) * sizeof(int));
    me->val = malloc(((size_t)me->nnz + 1) * sizeof(double));
    if (!me->row_offsets || !me->col || !me->val)
        goto fail;
    long base = A->row_offsets[me->row_lo];
    for (long i = 0; i <= me->rows; i++)
        me->row_offsets[i] = A->row_offsets[me->row_lo + i] - base;
    for (long e = 0; e < me->nnz; e++) {
        int c = A->col[base + e];
        int q = job->b_owner[c];
        me->col[e] = (int)(q == rank ? own_at[c - me->b_lo] : slot_of[q] + job->send_index[c]);
        me->val[e] = A->val ? A->val[base + e] : 1.0;
    }
    free(slot_of);
    free(own_at);
    return 0;
fail:
    free(slot_of);
    free(own_at);
    spmm_rank_free(me);
    return -1;
}

double spmm_b_value(long i, int j)
{
    /* small integers over a power of two: exact, and no two neighbours alike */
    return (double)((i * 7 + (long)j * 13) % 61 - 30) / 16.0;
}

int spmm_option(const char *name, const char *val, int *cols, spmm_split_t *split)
{
    long l = 0;
    if (!strcmp(name, "cols")) {
        if (bh_parse_long(val, 1, 1 << 16, &l) != 0)
            return -1;
        *cols = (int)l;
        return 0;
    }
    if (!strcmp(name, "partition")) {
        if (strcmp(val, "rows") && strcmp(val, "nnz"))
            return -1;
        *split = !strcmp(val, "nnz") ? SPMM_SPLIT_NNZ : SPMM_SPLIT_ROWS;
        return 0;
    }
    return 1;
}
