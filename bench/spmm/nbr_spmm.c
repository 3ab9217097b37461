/*
 * nbr_spmm: a distributed sparse-times-dense product C = A x B, the
 * application benchmark of the leader-based and distance-halving allgather
 * papers. A comes from a Matrix Market file, B has --cols columns of
 * generated values; rows of A, B and C are split in blocks over the ranks
 * (spmm_plan.h). Every iteration gathers the rows of B each rank's A rows
 * touch with a persistent neighborhood allgatherv (the MPI library's
 * MPI_Neighbor_allgatherv against nbrcoll's algorithms, each on its own
 * nbr_dist_graph_create_adjacent communicator), then multiplies locally:
 * on the GPU that owns the buffers with --memory device, else on the CPU.
 *
 * Every algorithm's gathered rows are checked bit-exact before it is
 * timed; --check also compares C with a serial product on rank 0. Rounds
 * interleave the algorithms, and a round's time is its slowest rank's.
 * Run with --help for the options.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include "harness/common.h"
#include "harness/graphs.h"
#include "harness/mtx.h"
#include "harness/options.h"
#include "harness/timing.h"
#include "nbrcoll.h"
#include "spmm_kernel.h"
#include "harness/spmm_plan.h"

/* The MPI library's persistent allgatherv: MPI-4's, Open MPI 4's
 * extension, or none (a nonblocking call per start). */
#if MPI_VERSION >= 4
#define MPI_ALLGATHERV_INIT MPI_Neighbor_allgatherv_init
#define MPI_ALLGATHERV_INIT_NAME "MPI_Neighbor_allgatherv_init"
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define MPI_ALLGATHERV_INIT MPIX_Neighbor_allgatherv_init
#define MPI_ALLGATHERV_INIT_NAME "MPIX_Neighbor_allgatherv_init"
#endif

#define MAX_MATRICES 64
/* --check: |C - C_serial| <= TOLERANCE * sum |a| |b| over each entry's terms */
#define TOLERANCE 1e-12

typedef struct options {
    const char *matrix[MAX_MATRICES];
    int nmatrices;
    int cols;
    spmm_split_t split;
    int device;
    bh_alg_list_t algs;
    int warmup, iters;
    int check;
    bh_locality_t locality;
    const char *csv, *graph;
} options_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mpirun -np P nbr_spmm --matrix FILE.mtx[.gz] [--matrix ...] [options]\n"
            "\n"
            "  --matrix FILE           Matrix Market coordinate file (pattern, real or integer;\n"
            "                          general or symmetric), plain or gzip; may be repeated\n"
            "  --cols K                columns of the dense B and C [32]\n"
            "  --partition rows|nnz    split A's rows in equal counts or equal entries [rows]\n"
            "  --memory host|device    B and C in host memory and the CPU kernel, or from\n"
            "                          nbr_mem_alloc and the GPU kernel of the GPU owning them\n"
            "                          (the CPU kernel under NBR_DEVICE=emulate) [host]\n"
            "  --algorithms LIST       'mpi' (MPI_Neighbor_allgatherv) and nbrcoll algorithms\n"
            "                          [mpi,naive,halving,combining,leader,auto]\n"
            "  --warmup N --iters N    untimed and timed rounds [5, 50]\n"
            "  --check                 also compare C with a serial product on rank 0\n"
            "  --ranks-per-node R      virtual nodes of R ranks [nbrcoll's detection]\n"
            "  --ranks-per-socket S    virtual sockets of S ranks [nbrcoll's detection]\n"
            "  --csv FILE              also write the rows as CSV\n"
            "  --graph FILE            write every rank's sources and row counts, as built\n"
            "\n"
            "nbrcoll algorithms in this build: %s\n",
            nbr_algorithm_names());
}

static int apply(const char *name, const char *val, void *ctx, char *err, size_t errlen)
{
    options_t *o = ctx;
    int bad = 0, spmm = spmm_option(name, val, &o->cols, &o->split);
    int run = spmm > 0 ? bh_run_option(name, val, &o->warmup, &o->iters, &o->locality) : 1;
    if (spmm <= 0 || run <= 0) {
        bad = spmm < 0 || run < 0;
    } else if (!strcmp(name, "matrix")) {
        if (o->nmatrices == MAX_MATRICES) {
            snprintf(err, errlen, "at most %d --matrix files", MAX_MATRICES);
            return -1;
        }
        o->matrix[o->nmatrices++] = val;
    } else if (!strcmp(name, "memory")) {
        bad = strcmp(val, "host") && strcmp(val, "device");
        o->device = !strcmp(val, "device");
    } else if (!strcmp(name, "algorithms")) {
        if (bh_parse_algorithms(val, &o->algs, err, errlen) != 0)
            return -1;
        for (int a = 0; a < o->algs.n; a++)
            if (!strcmp(o->algs.names[a], "copy")) {
                snprintf(err, errlen, "'copy' is an nbr_bench row, not an exchange");
                return -1;
            }
    } else if (!strcmp(name, "check")) {
        bad = val && strcmp(val, "yes") && strcmp(val, "no");
        o->check = val == NULL || !strcmp(val, "yes");
    } else if (!strcmp(name, "csv")) {
        o->csv = val;
    } else if (!strcmp(name, "graph")) {
        o->graph = val;
    } else {
        snprintf(err, errlen, "unknown option '--%s'", name);
        return -1;
    }
    if (bad)
        snprintf(err, errlen, "bad value '%s' for --%s", val ? val : "", name);
    return bad ? -1 : 0;
}

/* ------------------------------------------------------------ one matrix */

/* One rank's buffers. Bx and C live in host memory, or in device memory
 * with host mirrors (filling, checking, and the mpi row's staging). */
typedef struct buffers {
    long bx_elems, c_elems;
    double *hbx, *hc;            /* host */
    double *dbx, *dc;            /* device, or the host ones */
    spmm_csr_t csr;              /* where the kernel reads it */
    spmm_csr_t hcsr;             /* in host memory */
    void *dcsr[3];               /* device copies of the CSR arrays */
    const spmm_gpu_t *gpu;       /* NULL: the CPU kernel */
    int sendcount;               /* doubles */
    int *recvcounts, *displs;    /* doubles, per source */
} buffers_t;

typedef struct row {
    const bh_alg_t *alg;
    const char *ran;
    int staged; /* mpi on device buffers without GPU-aware MPI */
    MPI_Request mpi_req;
    nbr_request_t req;
    double setup;
    double *ex, *comp, *total; /* per round, seconds */
    bh_stats_t ex_s, comp_s, total_s;
    double inter_bytes; /* all ranks, per iteration */
    int check;          /* 1 ok, 0 not compared, -1 wrong */
} row_t;

typedef struct run {
    const options_t *o;
    int rank, nranks, nodes;
    const char *label;
    const bh_matrix_t *A;
    spmm_job_t job;
    spmm_rank_t me;
    bh_topo_t topo;
    bh_alg_t algs[BH_MAX_ALGS];
    MPI_Comm base;
    buffers_t b;
    row_t rows[BH_MAX_ALGS];
} run_t;

/* Collective: 1 when ok on every rank. */
static int everywhere(int ok)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* Doubles between host and device buffers (the same buffer on a host
 * run, which nbr_mem_copy would refuse: no device in use). */
static void copy_or_die(int device, void *dst, const void *src, long doubles, const char *what)
{
    if (doubles <= 0 || dst == src)
        return;
    if (device)
        bh_copy_or_die(dst, src, (uint64_t)doubles * sizeof(double), what);
    else
        memcpy(dst, src, (size_t)doubles * sizeof(double));
}

static int alloc_device(void **p, size_t bytes)
{
    return nbr_mem_alloc(p, bytes ? bytes : 8) == NBR_SUCCESS ? 0 : -1;
}

/* Counts, buffers and kernel of this rank; 0, or -1 with err filled. */
static int buffers_setup(run_t *x, char *err, size_t errlen)
{
    buffers_t *b = &x->b;
    const spmm_rank_t *me = &x->me;
    int k = x->o->cols;
    b->bx_elems = me->bx_rows * k;
    b->c_elems = me->rows * k;
    if (b->bx_elems > INT32_MAX) {
        snprintf(err, errlen, "rank %d: %ld rows x %d columns of B overflow MPI's int counts",
                 x->rank, me->bx_rows, k);
        return -1;
    }
    b->sendcount = me->nsend * k;
    b->recvcounts = malloc(((size_t)me->indeg + 1) * sizeof(int));
    b->displs = malloc(((size_t)me->indeg + 1) * sizeof(int));
    b->hbx = malloc(((size_t)b->bx_elems + 1) * sizeof(double));
    b->hc = malloc(((size_t)b->c_elems + 1) * sizeof(double));
    if (!b->recvcounts || !b->displs || !b->hbx || !b->hc) {
        snprintf(err, errlen, "rank %d: out of memory", x->rank);
        return -1;
    }
    long at = 0;
    for (int s = 0; s < me->indeg; s++) {
        b->recvcounts[s] = me->recv_rows[s] * k;
        b->displs[s] = (int)at;
        at += b->recvcounts[s];
    }
    /* own rows of B; the received ones are written by every exchange */
    for (long i = 0; i < me->b_rows; i++)
        for (int j = 0; j < k; j++)
            b->hbx[i * k + j] = spmm_b_value(me->bx_row[i], j);
    b->csr = (spmm_csr_t){(int)me->rows, me->nnz, me->row_offsets, me->col, me->val};
    b->hcsr = b->csr;
    b->dbx = b->hbx;
    b->dc = b->hc;
    if (!x->o->device)
        return 0;

    size_t sizes[3] = {((size_t)me->rows + 1) * sizeof(long), (size_t)me->nnz * sizeof(int),
                       (size_t)me->nnz * sizeof(double)};
    const void *from[3] = {me->row_offsets, me->col, me->val};
    if (alloc_device((void **)&b->dbx, (size_t)b->bx_elems * sizeof(double)) ||
        alloc_device((void **)&b->dc, (size_t)b->c_elems * sizeof(double)) ||
        alloc_device(&b->dcsr[0], sizes[0]) || alloc_device(&b->dcsr[1], sizes[1]) ||
        alloc_device(&b->dcsr[2], sizes[2])) {
        snprintf(err, errlen, "rank %d: nbr_mem_alloc failed (no GPU? NBR_DEVICE=emulate "
                 "runs without one)", x->rank);
        return -1;
    }
    for (int i = 0; i < 3; i++)
        if (sizes[i])
            bh_copy_or_die(b->dcsr[i], from[i], sizes[i], "CSR to the device");
    copy_or_die(1, b->dbx, b->hbx, me->b_rows * k, "B to the device");
    b->csr.row_offsets = b->dcsr[0];
    b->csr.col = b->dcsr[1];
    b->csr.val = b->dcsr[2];
    const spmm_gpu_t *gpus[2] = {spmm_gpu_cuda(), spmm_gpu_hip()};
    for (int g = 0; g < 2 && !b->gpu; g++)
        if (gpus[g] && gpus[g]->owns(b->dbx))
            b->gpu = gpus[g];
    return 0;
}

static void buffers_free(buffers_t *b, int device)
{
    if (device) {
        nbr_mem_free(b->dbx);
        nbr_mem_free(b->dc);
        for (int i = 0; i < 3; i++)
            nbr_mem_free(b->dcsr[i]);
    }
    free(b->hbx);
    free(b->hc);
    free(b->recvcounts);
    free(b->displs);
}

static const char *kernel_name(const buffers_t *b)
{
    return b->gpu ? b->gpu->name : b->dbx != b->hbx ? "cpu-staged" : "cpu";
}

static void multiply(run_t *x)
{
    buffers_t *b = &x->b;
    int k = x->o->cols;
    if (!b->gpu) {
        /* device buffers no GPU kernel can run on (NBR_DEVICE=emulate):
         * the CPU cannot touch them, so the CPU kernel works on host
         * copies */
        int device = b->dbx != b->hbx;
        copy_or_die(device, b->hbx, b->dbx, b->bx_elems, "Bx to the host");
        spmm_cpu(&b->hcsr, b->hbx, k, b->hc);
        copy_or_die(device, b->dc, b->hc, b->c_elems, "C to the device");
        return;
    }
    char err[256];
    if (b->gpu->run(&b->csr, b->dbx, x->o->cols, b->dc, err, sizeof err) != 0) {
        fprintf(stderr, "nbr_spmm: rank %d: %s kernel: %s\n", x->rank, b->gpu->name, err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* ------------------------------------------------------------ the exchange */

/* The buffers a row's exchange reads and writes. */
static double *row_bx(const run_t *x, const row_t *r)
{
    return r->staged ? x->b.hbx : x->b.dbx;
}

static int row_init(run_t *x, row_t *r)
{
    const buffers_t *b = &x->b;
    double *bx = row_bx(x, r), *recv = bx + x->me.b_rows * x->o->cols;
    int rc;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (r->alg->is_mpi) {
#ifdef MPI_ALLGATHERV_INIT
        rc = MPI_ALLGATHERV_INIT(bx, b->sendcount, MPI_DOUBLE, recv, b->recvcounts, b->displs,
                                 MPI_DOUBLE, r->alg->comm, MPI_INFO_NULL, &r->mpi_req);
#else
        r->mpi_req = MPI_REQUEST_NULL; /* MPI_Ineighbor_allgatherv at each start */
        rc = MPI_SUCCESS;
#endif
    } else {
        rc = nbr_neighbor_allgatherv_init(bx, b->sendcount, MPI_DOUBLE, recv, b->recvcounts,
                                          b->displs, MPI_DOUBLE, r->alg->comm, MPI_INFO_NULL,
                                          &r->req);
        if (rc == NBR_SUCCESS)
            rc = nbr_comm_algorithm(r->alg->comm, &r->ran);
    }
    double mine = MPI_Wtime() - t0;
    MPI_Allreduce(&mine, &r->setup, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return rc;
}

static void exchange(run_t *x, row_t *r)
{
    const buffers_t *b = &x->b;
    long own = x->me.b_rows * x->o->cols;
    int rc;
    if (!r->alg->is_mpi) {
        rc = nbr_start(&r->req);
        if (rc == NBR_SUCCESS)
            rc = nbr_wait(&r->req);
        if (rc != NBR_SUCCESS)
            bh_die_nbr(rc, r->alg->name);
        return;
    }
    /* An MPI that is not GPU-aware cannot take device buffers: stage the
     * sent rows out and the received rows in, inside the timed exchange,
     * as an application would. */
    if (r->staged)
        copy_or_die(x->o->device, b->hbx, b->dbx, b->sendcount, "mpi staging D2H");
#ifdef MPI_ALLGATHERV_INIT
    rc = MPI_Start(&r->mpi_req);
#else
    double *bx = row_bx(x, r);
    rc = MPI_Ineighbor_allgatherv(bx, b->sendcount, MPI_DOUBLE, bx + own, b->recvcounts,
                                  b->displs, MPI_DOUBLE, r->alg->comm, &r->mpi_req);
#endif
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&r->mpi_req, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
        bh_die_mpi(rc, "mpi");
    if (r->staged)
        copy_or_die(x->o->device, b->dbx + own, b->hbx + own, b->bx_elems - own, "mpi staging H2D");
}

/* Every gathered row bit-exact: the B rows its place names. Collective. */
static int check_exchange(run_t *x, row_t *r)
{
    buffers_t *b = &x->b;
    int k = x->o->cols;
    long own = x->me.b_rows * k, n = b->bx_elems - own;
    for (long e = own; e < b->bx_elems; e++)
        b->hbx[e] = NAN;
    copy_or_die(x->o->device, b->dbx + own, b->hbx + own, n, "clearing the received rows");
    exchange(x, r);
    copy_or_die(x->o->device, b->hbx + own, b->dbx + own, n, "reading the received rows");
    long bad = -1;
    for (long e = own; e < b->bx_elems && bad < 0; e++)
        if (memcmp(&b->hbx[e], &(double){spmm_b_value(x->me.bx_row[e / k], (int)(e % k))},
                   sizeof(double)) != 0)
            bad = e;
    if (bad >= 0)
        fprintf(stderr, "nbr_spmm: rank %d: %s: row of B %ld (column %ld) came wrong\n",
                x->rank, r->alg->name, x->me.bx_row[bad / k], bad % k);
    return everywhere(bad < 0);
}

/* C of every rank against a serial product on rank 0. Collective. */
static int check_product(run_t *x)
{
    const bh_matrix_t *A = x->A;
    int k = x->o->cols, P = x->nranks;
    long total = (long)A->rows * k;
    copy_or_die(x->o->device, x->b.hc, x->b.dc, x->b.c_elems, "reading C");
    if (!everywhere(total <= INT32_MAX)) {
        if (x->rank == 0)
            fprintf(stderr, "nbr_spmm: --check: C has more than 2^31 entries\n");
        return 0;
    }
    int *counts = NULL, *displs = NULL;
    double *all = NULL;
    if (x->rank == 0) {
        counts = malloc((size_t)P * sizeof(int));
        displs = malloc((size_t)P * sizeof(int));
        all = malloc(((size_t)total + 1) * sizeof(double));
        if (!counts || !displs || !all)
            bh_die_nbr(NBR_ERR_NOMEM, "--check");
        for (int r = 0; r < P; r++) {
            displs[r] = (int)(x->job.a_first[r] * k);
            counts[r] = (int)((x->job.a_first[r + 1] - x->job.a_first[r]) * k);
        }
    }
    MPI_Gatherv(x->b.hc, (int)x->b.c_elems, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0,
                MPI_COMM_WORLD);
    int ok = 1;
    for (long i = 0; x->rank == 0 && i < A->rows && ok; i++)
        for (int j = 0; j < k && ok; j++) {
            double want = 0.0, scale = 0.0;
            for (long e = A->row_offsets[i]; e < A->row_offsets[i + 1]; e++) {
                double a = A->val ? A->val[e] : 1.0, bv = spmm_b_value(A->col[e], j);
                want += a * bv;
                scale += fabs(a * bv);
            }
            double got = all[i * k + j];
            if (!(fabs(got - want) <= TOLERANCE * scale)) {
                fprintf(stderr, "nbr_spmm: --check: C[%ld][%d] is %.17g, the serial product "
                        "gives %.17g\n", i, j, got, want);
                ok = 0;
            }
        }
    free(counts);
    free(displs);
    free(all);
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return ok;
}

/* Bytes sent to other nodes in one iteration, all ranks together: nbrcoll
 * counts its own; the MPI library sends one message per edge. Collective. */
static void count_traffic(run_t *x, row_t *r)
{
    double mine = 0;
    if (r->alg->is_mpi) {
        int my_node = x->topo.node_of[x->rank];
        for (int d = 0; d < x->me.outdeg; d++)
            if (x->topo.node_of[x->me.dests[d]] != my_node)
                mine += (double)x->b.sendcount * sizeof(double);
    } else {
        nbr_counters_t c;
        int rc = nbr_reset_counters(r->alg->comm);
        exchange(x, r);
        if (rc == NBR_SUCCESS)
            rc = nbr_get_counters(r->alg->comm, &c);
        if (rc != NBR_SUCCESS)
            bh_die_nbr(rc, "nbr_get_counters");
        mine = (double)c.bytes_inter_node;
    }
    MPI_Allreduce(&mine, &r->inter_bytes, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

/* One round: exchange then multiply, each timed on this rank. */
static void time_round(run_t *x, row_t *r, int it)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    exchange(x, r);
    double t1 = MPI_Wtime();
    multiply(x);
    double t2 = MPI_Wtime();
    if (it >= 0) {
        r->ex[it] = t1 - t0;
        r->comp[it] = t2 - t1;
        r->total[it] = t2 - t0;
    }
}

/* ------------------------------------------------------------ output */

static void print_header(const run_t *x)
{
    long msgs = x->job.nedges, maxdeg = 0, maxrows = 0;
    /* edges come sorted by destination: in-degrees are run lengths */
    for (long e = 0, run = 0; e < msgs; e++) {
        run = e > 0 && x->job.edge_dst[e] == x->job.edge_dst[e - 1] ? run + 1 : 1;
        maxdeg = run > maxdeg ? run : maxdeg;
    }
    for (int r = 0; r < x->nranks; r++)
        maxrows = x->job.send_rows[r] > maxrows ? x->job.send_rows[r] : maxrows;
    const options_t *o = x->o;
    printf("# nbr_spmm: %s (%d x %d, %ld nonzeros), B and C with %d columns of doubles, "
           "%d ranks on %d nodes, partition %s\n",
           x->label, x->A->rows, x->A->cols, x->A->nnz, o->cols, x->nranks, x->nodes,
           o->split == SPMM_SPLIT_NNZ ? "nnz" : "rows");
    printf("# graph: %ld edges, in-degree up to %ld; a rank sends up to %ld rows (%ld B) to "
           "each neighbor\n",
           msgs, maxdeg, maxrows, maxrows * o->cols * 8);
    printf("# memory %s, kernel %s; mpi: %s\n", o->device ? "device" : "host",
           kernel_name(&x->b),
#ifdef MPI_ALLGATHERV_INIT
           MPI_ALLGATHERV_INIT_NAME
#else
           "MPI_Ineighbor_allgatherv"
#endif
    );
    int staged = 0;
    for (int a = 0; a < o->algs.n; a++)
        staged |= x->rows[a].staged;
    if (staged)
        printf("# mpi stages device rows through host memory inside its exchange "
               "(NBR_GPU_AWARE_MPI=1 hands it the device buffers)\n");
    printf("# %d rounds after %d, each: exchange, then the local product; medians of the "
           "slowest rank's times; inter_bytes: all ranks' bytes to other nodes per "
           "iteration\n",
           o->iters, o->warmup);
    if (o->check)
        printf("# --check: C against a serial product on rank 0, |C - C_serial| <= %g x "
               "sum |a| |b| per entry\n",
               TOLERANCE);
    printf("%-10s %-10s %11s %11s %11s %11s %11s %7s %7s %10s %12s %5s\n", "algorithm", "ran",
           "exchange_us", "compute_us", "total_us", "min_us", "max_us", "vs_mpi", "ex_vs",
           "setup_us", "inter_bytes", "check");
}

static const char *check_name(int check)
{
    return check > 0 ? "ok" : check < 0 ? "FAIL" : "-";
}

static void print_rows(const run_t *x, FILE *csv)
{
    const row_t *mpi = NULL;
    for (int a = 0; a < x->o->algs.n; a++)
        mpi = x->rows[a].alg->is_mpi ? &x->rows[a] : mpi;
    for (int a = 0; a < x->o->algs.n; a++) {
        const row_t *r = &x->rows[a];
        char sp[32] = "-", exsp[32] = "-";
        if (mpi) {
            snprintf(sp, sizeof sp, "%.4f", mpi->total_s.median_us / r->total_s.median_us);
            snprintf(exsp, sizeof exsp, "%.4f", mpi->ex_s.median_us / r->ex_s.median_us);
        }
        printf("%-10s %-10s %11.1f %11.1f %11.1f %11.1f %11.1f %7.7s %7.7s %10.1f %12.0f %5s\n",
               r->alg->name, r->ran, r->ex_s.median_us, r->comp_s.median_us,
               r->total_s.median_us, r->total_s.min_us, r->total_s.max_us, sp, exsp,
               r->setup * 1e6, r->inter_bytes, check_name(r->check));
        if (csv)
            fprintf(csv, "%s,%d,%ld,%d,%d,%d,%s,%s,%s,%s,%s,%.3f,%.3f,%.3f,%.3f,%.3f,%s,%s,%.0f,%s\n",
                    x->label, x->A->rows, x->A->nnz, x->o->cols, x->nranks, x->nodes,
                    x->o->split == SPMM_SPLIT_NNZ ? "nnz" : "rows",
                    x->o->device ? "device" : "host", kernel_name(&x->b), r->alg->name, r->ran,
                    r->ex_s.median_us, r->comp_s.median_us, r->total_s.median_us,
                    r->total_s.min_us, r->total_s.max_us, sp, exsp, r->inter_bytes,
                    r->check > 0 ? "ok" : r->check < 0 ? "fail" : "-");
    }
}

/* Every rank's sources and row counts as its communicator has them
 * (MPI_Dist_graph_neighbors), written by rank 0: "DST SRC ROWS" lines. */
static int write_graph(const run_t *x, FILE *f)
{
    int indeg = 0, outdeg = 0, weighted = 0;
    MPI_Dist_graph_neighbors_count(x->base, &indeg, &outdeg, &weighted);
    int *mine = malloc((2 * (size_t)indeg + 1) * sizeof(int));
    int *outs = malloc(((size_t)outdeg + 1) * sizeof(int));
    if (!mine || !outs)
        bh_die_nbr(NBR_ERR_NOMEM, "--graph");
    MPI_Dist_graph_neighbors(x->base, indeg, mine, MPI_UNWEIGHTED, outdeg, outs,
                             MPI_UNWEIGHTED);
    /* the row counts this rank's allgatherv expects, in the same order */
    for (int s = 0; s < indeg; s++)
        mine[indeg + s] = s < x->me.indeg ? x->me.recv_rows[s] : -1;
    int n = 2 * indeg, *counts = NULL, *displs = NULL, *all = NULL;
    if (x->rank == 0) {
        counts = malloc((size_t)x->nranks * sizeof(int));
        displs = malloc((size_t)x->nranks * sizeof(int));
    }
    MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    long sum = 0;
    for (int r = 0; x->rank == 0 && r < x->nranks; r++) {
        displs[r] = (int)sum;
        sum += counts[r];
    }
    if (x->rank == 0 && !(all = malloc(((size_t)sum + 1) * sizeof(int))))
        bh_die_nbr(NBR_ERR_NOMEM, "--graph");
    MPI_Gatherv(mine, n, MPI_INT, all, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    if (x->rank == 0) {
        fprintf(f, "# matrix %s partition %s ranks %d\n", x->label,
                x->o->split == SPMM_SPLIT_NNZ ? "nnz" : "rows", x->nranks);
        for (int r = 0; r < x->nranks; r++) {
            int deg = counts[r] / 2;
            for (int s = 0; s < deg; s++)
                fprintf(f, "%d %d %d\n", r, all[displs[r] + s], all[displs[r] + deg + s]);
        }
    }
    free(mine);
    free(outs);
    free(counts);
    free(displs);
    free(all);
    return 0;
}

/* ------------------------------------------------------------ driver */

static int setup(run_t *x, char *err, size_t errlen)
{
    const options_t *o = x->o;
    if (spmm_job_build(x->A, x->nranks, o->split, &x->job) != 0 ||
        spmm_rank_build(x->A, &x->job, x->rank, &x->me) != 0) {
        snprintf(err, errlen, "rank %d: out of memory splitting the matrix", x->rank);
        return -1;
    }
    nbr_graph_t g;
    int rc = nbr_graph_from_edges(x->nranks, x->job.nedges, x->job.edge_src, x->job.edge_dst,
                                  &g);
    if (rc == NBR_SUCCESS)
        rc = bh_topo_adopt(&x->topo, g);
    if (rc != NBR_SUCCESS) {
        snprintf(err, errlen, "rank %d: graph: %s", x->rank, nbr_error_string(rc));
        return -1;
    }
    return buffers_setup(x, err, errlen);
}

static void run_matrix(const options_t *o, const char *path, FILE *csv, FILE *graph)
{
    run_t *x = calloc(1, sizeof *x);
    if (!x)
        bh_die_nbr(NBR_ERR_NOMEM, "run");
    x->o = o;
    x->base = MPI_COMM_NULL;
    MPI_Comm_rank(MPI_COMM_WORLD, &x->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &x->nranks);
    const char *slash = strrchr(path, '/');
    x->label = slash ? slash + 1 : path;

    bh_matrix_t A;
    char err[512] = "";
    int read = bh_matrix_read(path, &A, err, sizeof err) == 0;
    int ok = read && setup((x->A = &A, x), err, sizeof err) == 0;
    if (!everywhere(ok)) {
        if (err[0])
            fprintf(stderr, "nbr_spmm: %s\n", err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int rc = bh_create_comms(&o->locality, &x->topo, &o->algs, x->algs, &x->base);
    if (rc != NBR_SUCCESS)
        bh_die_nbr(rc, "nbr_dist_graph_create_adjacent");
    bh_topo_gather_locality(x->base, &x->topo);
    x->nodes = x->topo.nnodes;
    bh_warn_overridden_algorithms(x->algs, o->algs.n, x->rank);
    const char *aware = getenv("NBR_GPU_AWARE_MPI");
    int mpi_takes_device = aware && !strcmp(aware, "1");

    int all_ok = 1;
    for (int a = 0; a < o->algs.n; a++) {
        row_t *r = &x->rows[a];
        r->alg = &x->algs[a];
        r->ran = r->alg->name;
        r->staged = r->alg->is_mpi && o->device && !mpi_takes_device;
        r->ex = calloc((size_t)o->iters, sizeof(double));
        r->comp = calloc((size_t)o->iters, sizeof(double));
        r->total = calloc((size_t)o->iters, sizeof(double));
        if (!r->ex || !r->comp || !r->total)
            bh_die_nbr(NBR_ERR_NOMEM, "samples");
        rc = row_init(x, r);
        if (rc != 0)
            bh_die_nbr(rc, r->alg->name);
        /* checked before it is timed */
        r->check = check_exchange(x, r) ? 1 : -1;
        if (r->check > 0 && o->check) {
            multiply(x);
            r->check = check_product(x) ? 1 : -1;
        }
        all_ok &= r->check > 0;
        count_traffic(x, r);
    }
    if (o->graph) /* collective: only rank 0 holds the file */
        write_graph(x, graph);
    if (x->rank == 0)
        print_header(x);
    if (all_ok) {
        for (int w = 0; w < o->warmup; w++)
            for (int a = 0; a < o->algs.n; a++)
                time_round(x, &x->rows[a], -1);
        /* interleaved: whatever disturbs the machine hits every row */
        for (int it = 0; it < o->iters; it++)
            for (int a = 0; a < o->algs.n; a++)
                time_round(x, &x->rows[a], it);
    }
    for (int a = 0; a < o->algs.n; a++) {
        row_t *r = &x->rows[a];
        double *s[3] = {r->ex, r->comp, r->total};
        bh_stats_t *st[3] = {&r->ex_s, &r->comp_s, &r->total_s};
        for (int i = 0; i < 3; i++) {
            MPI_Allreduce(MPI_IN_PLACE, s[i], o->iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            bh_summarize(s[i], o->iters, st[i]);
        }
    }
    if (x->rank == 0) {
        print_rows(x, csv);
        printf("\n");
        fflush(stdout);
    }
    for (int a = 0; a < o->algs.n; a++) {
        row_t *r = &x->rows[a];
        if (!r->alg->is_mpi)
            nbr_request_free(&r->req);
#ifdef MPI_ALLGATHERV_INIT
        else
            MPI_Request_free(&r->mpi_req);
#endif
        free(r->ex);
        free(r->comp);
        free(r->total);
    }
    bh_free_comms(x->algs, o->algs.n, x->base);
    buffers_free(&x->b, o->device);
    bh_topo_free(&x->topo);
    spmm_rank_free(&x->me);
    spmm_job_free(&x->job);
    bh_matrix_free(&A);
    int rank = x->rank;
    free(x);
    if (!all_ok) {
        if (rank == 0)
            fprintf(stderr, "nbr_spmm: %s: a check failed (above)\n", path);
        MPI_Finalize();
        exit(EXIT_FAILURE);
    }
}

/* Rank 0 opens an output file; every rank learns whether it could. */
static FILE *open_output(const char *path, const char *header, int rank)
{
    FILE *f = NULL;
    int ok = 1;
    if (path && rank == 0) {
        f = fopen(path, "w");
        ok = f != NULL;
        if (f && header)
            fputs(header, f);
        if (!f)
            perror(path);
    }
    if (!everywhere(ok)) {
        MPI_Finalize();
        exit(EXIT_FAILURE);
    }
    return f;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    bh_set_progname("nbr_spmm");
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    options_t o = {.cols = 32, .split = SPMM_SPLIT_ROWS, .warmup = 5, .iters = 50};
    char err[256] = "";
    bh_parse_algorithms("mpi,naive,halving,combining,leader,auto", &o.algs, err, sizeof err);
    static const char *const flags[] = {"check", NULL};
    int parsed = bh_parse_argv_flags(argc, argv, flags, apply, &o, err, sizeof err);
    if (parsed == 0 && o.nmatrices == 0) {
        snprintf(err, sizeof err, "no --matrix given");
        parsed = -1;
    }
    if (parsed != 0) {
        if (rank == 0) {
            if (parsed < 0)
                fprintf(stderr, "nbr_spmm: %s\n", err);
            usage(parsed > 0 ? stdout : stderr);
        }
        MPI_Finalize();
        return parsed > 0 ? 0 : BH_EXIT_USAGE;
    }
    FILE *csv = open_output(o.csv,
                            "matrix,rows,nnz,cols,ranks,nodes,partition,memory,kernel,algorithm,"
                            "ran,exchange_us,compute_us,total_us,total_min_us,total_max_us,"
                            "speedup_vs_mpi,exchange_speedup_vs_mpi,inter_bytes,check\n",
                            rank);
    FILE *graph = open_output(o.graph, NULL, rank);
    for (int m = 0; m < o.nmatrices; m++)
        run_matrix(&o, o.matrix[m], csv, graph);
    if (csv)
        fclose(csv);
    if (graph)
        fclose(graph);
    MPI_Finalize();
    return 0;
}
