/*
 * nbr_spmv_bench: the communication of a distributed sparse matrix-vector
 * product as a persistent neighborhood alltoallv, the Hypre / AMG case of
 * the locality-aware alltoallv paper: the MPI library's own
 * (MPIX_Neighbor_alltoallv_init where Open MPI has it) against nbrcoll's
 * algorithms (naive, aggregate, dedup, auto, ...), checked bit-exact, timed
 * in interleaved rounds, with each one's set-up time, the most messages
 * and bytes one rank sends between nodes per iteration, and the number of
 * iterations after which its set-up has paid for itself.
 *
 * The pattern: a Matrix Market file's rows split in equal blocks over the
 * ranks (rank r owns rows and vector entries [r*n/P, (r+1)*n/P)); every
 * rank receives, from each owner, the entries of the columns its rows
 * touch, 8-byte values named by their column (the value indices of
 * nbr_neighbor_alltoallv_init_ext). Or a synthetic graph (--pattern rsg or
 * moore, as nbr_bench): every rank owns --entries values and sends all of
 * them along each out-edge. Run with --help for the options.
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

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define HAVE_PERSISTENT_MPI 1
#else
#define HAVE_PERSISTENT_MPI 0
#endif

typedef struct options {
    const char *matrix;
    bh_graph_spec_t graph;
    int graph_given;
    int entries;
    int ranks_per_node;
    int warmup, iters;
    bh_alg_list_t algs;
    const char *csv;
} options_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mpirun -np P nbr_spmv_bench [--matrix FILE.mtx[.gz] | --pattern rsg|moore "
            "...]\n"
            "\n"
            "  --matrix FILE          Matrix Market file: rows split in blocks over the ranks\n"
            "  --pattern, --density, --seed, --dims, --radius   a synthetic graph instead\n"
            "  --entries K            synthetic graph: values each rank owns and sends [4]\n"
            "  --ranks-per-node R     virtual nodes of R ranks [nbrcoll's detection]\n"
            "  --algorithms LIST      mpi and nbrcoll algorithms [mpi,naive,aggregate,dedup,auto]\n"
            "  --warmup N --iters N   untimed and timed rounds [5, 100]\n"
            "  --csv FILE             also write the table as CSV\n");
}

static int apply(const char *name, const char *val, void *ctx, char *err, size_t errlen)
{
    options_t *o = ctx;
    long l = 0;
    int graph = bh_graph_option(name, val, &o->graph), bad = 0;
    int run = graph > 0 ? bh_run_option(name, val, &o->warmup, &o->iters, NULL) : 1;
    if (graph <= 0) {
        bad = graph < 0;
        o->graph_given = 1;
    } else if (run <= 0) {
        bad = run < 0;
    } else if (!strcmp(name, "matrix")) {
        o->matrix = val;
    } else if (!strcmp(name, "entries")) {
        bad = bh_parse_long(val, 1, 1 << 20, &l);
        o->entries = (int)l;
    } else if (!strcmp(name, "ranks-per-node")) {
        bad = bh_parse_long(val, 1, 1 << 20, &l);
        o->ranks_per_node = (int)l;
    } else if (!strcmp(name, "algorithms")) {
        return bh_parse_algorithms(val, &o->algs, err, errlen);
    } else if (!strcmp(name, "csv")) {
        o->csv = val;
    } else {
        snprintf(err, errlen, "unknown option '--%s'", name);
        return -1;
    }
    if (bad)
        snprintf(err, errlen, "bad value '%s' for --%s", val, name);
    return bad ? -1 : 0;
}

/* ------------------------------------------------------------ the pattern */

/* One edge of the exchange: src sends dst the values named in idx. */
typedef struct edge {
    int src, dst;
    long *idx;
    int count;
} edge_t;

typedef struct exchange {
    edge_t *e;
    long n;
    char label[128];
} exchange_t;

static long first_row(int r, int nranks, long rows)
{
    return (long)((double)r * (double)rows / nranks);
}

/* Every rank's needs of a matrix: for each rank, each other owner, the
 * columns its rows touch (ascending). */
static int matrix_exchange(const bh_matrix_t *m, int nranks, exchange_t *x)
{
    long rows = m->rows;
    char *touched = calloc((size_t)m->cols + 1, 1);
    x->e = NULL;
    x->n = 0;
    long capacity = 0;
    if (!touched)
        return -1;
    for (int r = 0; r < nranks; r++) {
        long lo = first_row(r, nranks, rows), hi = first_row(r + 1, nranks, rows);
        memset(touched, 0, (size_t)m->cols);
        for (long i = lo; i < hi; i++)
            for (long k = m->row_offsets[i]; k < m->row_offsets[i + 1]; k++)
                touched[m->col[k]] = 1;
        for (int q = 0; q < nranks; q++) {
            if (q == r)
                continue;
            long qlo = first_row(q, nranks, rows), qhi = first_row(q + 1, nranks, rows);
            int count = 0;
            for (long j = qlo; j < qhi && j < m->cols; j++)
                count += touched[j];
            if (count == 0)
                continue;
            if (x->n == capacity) {
                capacity = capacity ? 2 * capacity : 256;
                edge_t *grown = realloc(x->e, (size_t)capacity * sizeof(edge_t));
                if (!grown)
                    return -1;
                x->e = grown;
            }
            edge_t *e = &x->e[x->n++];
            *e = (edge_t){q, r, malloc((size_t)count * sizeof(long)), 0};
            if (!e->idx)
                return -1;
            for (long j = qlo; j < qhi && j < m->cols; j++)
                if (touched[j])
                    e->idx[e->count++] = j;
        }
    }
    free(touched);
    return 0;
}

/* A synthetic graph: rank q's values q*K .. q*K+K-1 along every out-edge. */
static int graph_exchange(const nbr_graph_t *g, int entries, exchange_t *x)
{
    x->n = g->out_offsets[g->nranks];
    x->e = calloc((size_t)x->n + 1, sizeof(edge_t));
    if (!x->e)
        return -1;
    for (int q = 0; q < g->nranks; q++)
        for (int k = g->out_offsets[q]; k < g->out_offsets[q + 1]; k++) {
            edge_t *e = &x->e[k];
            *e = (edge_t){q, g->out_targets[k], malloc((size_t)entries * sizeof(long)), entries};
            if (!e->idx)
                return -1;
            for (int v = 0; v < entries; v++)
                e->idx[v] = (long)q * entries + v;
        }
    return 0;
}

static void free_exchange(exchange_t *x)
{
    for (long k = 0; k < x->n; k++)
        free(x->e[k].idx);
    free(x->e);
}

/* This rank's side: its out-edges (in exchange order) and in-edges (by
 * source, then exchange order: the k-th edge from a source pairs with the
 * k-th to it), counts, displacements and value indices. */
typedef struct side {
    int degree;
    int *peer, *counts, *displs;
    long *idx; /* by element */
    int elements;
} side_t;

static int take_side(const exchange_t *x, int rank, int out, side_t *s)
{
    memset(s, 0, sizeof *s);
    for (long k = 0; k < x->n; k++)
        if ((out ? x->e[k].src : x->e[k].dst) == rank) {
            s->degree++;
            s->elements += x->e[k].count;
        }
    s->peer = malloc(((size_t)s->degree + 1) * sizeof(int));
    s->counts = malloc(((size_t)s->degree + 1) * sizeof(int));
    s->displs = malloc(((size_t)s->degree + 1) * sizeof(int));
    s->idx = malloc(((size_t)s->elements + 1) * sizeof(long));
    if (!s->peer || !s->counts || !s->displs || !s->idx)
        return -1;
    int d = 0, at = 0;
    for (long k = 0; k < x->n; k++) {
        const edge_t *e = &x->e[k];
        if ((out ? e->src : e->dst) != rank)
            continue;
        s->peer[d] = out ? e->dst : e->src;
        s->counts[d] = e->count;
        s->displs[d] = at;
        memcpy(s->idx + at, e->idx, (size_t)e->count * sizeof(long));
        at += e->count;
        d++;
    }
    return 0;
}

static void free_side(side_t *s)
{
    free(s->peer);
    free(s->counts);
    free(s->displs);
    free(s->idx);
}

/* The value of vector entry g: what every rank can check it received. */
static double value_of(long g)
{
    return (double)g * 0.5 + 1.0;
}

/* ------------------------------------------------------------ one row */

typedef struct row {
    const char *name;
    int is_mpi;
    const char *ran; /* auto's choice */
    MPI_Request mpi_req;
    nbr_request_t req;
    double setup; /* slowest rank's _init, seconds */
    double *samples;
    bh_stats_t stats;
    uint64_t inter_msgs_max, inter_bytes_max; /* per iteration, the busiest rank */
    uint64_t inter_bytes_total;               /* per iteration, all ranks */
} row_t;

static int row_init(row_t *row, MPI_Comm comm, const side_t *out, const side_t *in,
                    const double *send, double *recv)
{
    int rc = 0;
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    if (row->is_mpi) {
#if HAVE_PERSISTENT_MPI
        rc = MPIX_Neighbor_alltoallv_init(send, out->counts, out->displs, MPI_DOUBLE, recv,
                                          in->counts, in->displs, MPI_DOUBLE, comm,
                                          MPI_INFO_NULL, &row->mpi_req);
#else
        row->mpi_req = MPI_REQUEST_NULL; /* MPI_Ineighbor_alltoallv at each start */
#endif
    } else {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "nbr_algorithm", row->name);
        rc = nbr_neighbor_alltoallv_init_ext(send, out->counts, out->displs, MPI_DOUBLE, recv,
                                             in->counts, in->displs, MPI_DOUBLE, out->idx,
                                             in->idx, comm, info, &row->req);
        MPI_Info_free(&info);
        nbr_comm_algorithm(comm, &row->ran);
    }
    double mine = MPI_Wtime() - t0;
    MPI_Allreduce(&mine, &row->setup, 1, MPI_DOUBLE, MPI_MAX, comm);
    return rc;
}

static int row_run(row_t *row, MPI_Comm comm, const side_t *out, const side_t *in,
                   const double *send, double *recv)
{
    if (!row->is_mpi) {
        int rc = nbr_start(&row->req);
        return rc == NBR_SUCCESS ? nbr_wait(&row->req) : rc;
    }
#if HAVE_PERSISTENT_MPI
    (void)out, (void)in, (void)send, (void)recv;
    int rc = MPI_Start(&row->mpi_req);
#else
    int rc = MPI_Ineighbor_alltoallv(send, out->counts, out->displs, MPI_DOUBLE, recv, in->counts,
                                     in->displs, MPI_DOUBLE, comm, &row->mpi_req);
#endif
    (void)comm;
    return rc == MPI_SUCCESS ? MPI_Wait(&row->mpi_req, MPI_STATUS_IGNORE) : rc;
}

/* Inter-node messages and bytes of one run of an nbrcoll row (the busiest
 * rank's); the MPI library moves naive's messages. */
static void row_traffic(row_t *row, MPI_Comm comm, const side_t *out, const side_t *in,
                        const double *send, double *recv)
{
    uint64_t mine[2] = {0, 0};
    if (row->is_mpi) {
        int my_node = 0, n = 0;
        nbr_comm_locality(comm, &n, &my_node, NULL);
        for (int j = 0; j < out->degree; j++) {
            nbr_rank_place_t place;
            nbr_comm_place(comm, out->peer[j], &place);
            if (place.node != my_node) {
                mine[0]++;
                mine[1] += (uint64_t)out->counts[j] * sizeof(double);
            }
        }
    } else {
        nbr_counters_t c;
        nbr_reset_counters(comm);
        if (row_run(row, comm, out, in, send, recv) != 0)
            bh_die_nbr(NBR_ERR_INTERNAL, "traffic run");
        nbr_get_counters(comm, &c);
        mine[0] = c.msgs_inter_node;
        mine[1] = c.bytes_inter_node;
    }
    uint64_t most[2];
    MPI_Allreduce(mine, most, 2, MPI_UINT64_T, MPI_MAX, comm);
    MPI_Allreduce(&mine[1], &row->inter_bytes_total, 1, MPI_UINT64_T, MPI_SUM, comm);
    row->inter_msgs_max = most[0];
    row->inter_bytes_max = most[1];
}

/* Every element it received: the reference's bytes, and the value its
 * index names. Collective: 1 when right on every rank. */
static int check(const row_t *row, MPI_Comm comm, const side_t *in, const double *recv,
                 const double *ref, int rank)
{
    int bad = memcmp(recv, ref, (size_t)in->elements * sizeof(double)) != 0, all = 0;
    for (int e = 0; e < in->elements && !bad; e++)
        bad = recv[e] != value_of(in->idx[e]);
    if (bad)
        fprintf(stderr, "nbr_spmv_bench: rank %d: %s received other values than MPI\n", rank,
                row->name);
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_MAX, comm);
    return !all;
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    bh_set_progname("nbr_spmv_bench");
    int rank = 0, nranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    options_t o = {.graph = {BH_PATTERN_RSG, 0.3, 1, 2, 1}, .entries = 4, .warmup = 5,
                   .iters = 100};
    char err[256] = "";
    bh_parse_algorithms("mpi,naive,aggregate,dedup,auto", &o.algs, err, sizeof err);
    int parsed = bh_parse_argv(argc, argv, apply, &o, err, sizeof err);
    if (parsed != 0 || (o.matrix && o.graph_given)) {
        if (rank == 0) {
            if (parsed < 0 || o.matrix)
                fprintf(stderr, "nbr_spmv_bench: %s\n",
                        parsed < 0 ? err : "--matrix and a --pattern exclude each other");
            usage(parsed > 0 ? stdout : stderr);
        }
        MPI_Finalize();
        return parsed > 0 ? 0 : BH_EXIT_USAGE;
    }

    /* every rank builds the whole job's exchange, then takes its side */
    exchange_t x = {0};
    int ok = 1;
    if (o.matrix) {
        bh_matrix_t m;
        ok = bh_matrix_read(o.matrix, &m, err, sizeof err) == 0;
        if (ok) {
            ok = matrix_exchange(&m, nranks, &x) == 0;
            const char *base = strrchr(o.matrix, '/');
            snprintf(x.label, sizeof x.label, "%s(n=%d,nnz=%ld)", base ? base + 1 : o.matrix,
                     m.rows, m.nnz);
            bh_matrix_free(&m);
        }
    } else {
        nbr_graph_t g;
        ok = bh_graph_generate(&o.graph, nranks, &g) == NBR_SUCCESS;
        if (ok) {
            ok = graph_exchange(&g, o.entries, &x) == 0;
            char p[96];
            bh_pattern_label(&o.graph, p, sizeof p);
            snprintf(x.label, sizeof x.label, "%s,k=%d", p, o.entries);
            nbr_graph_free(&g);
        }
    }
    side_t out, in;
    if (ok)
        ok = take_side(&x, rank, 1, &out) == 0 && take_side(&x, rank, 0, &in) == 0;
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (rank == 0)
            fprintf(stderr, "nbr_spmv_bench: %s\n", err[0] ? err : "cannot set the pattern up");
        MPI_Finalize();
        return 1;
    }

    MPI_Info info;
    MPI_Info_create(&info);
    if (o.ranks_per_node > 0) {
        char v[32];
        snprintf(v, sizeof v, "%d", o.ranks_per_node);
        MPI_Info_set(info, "nbr_ranks_per_node", v);
    }
    MPI_Comm comm;
    int rc = nbr_dist_graph_create_adjacent(MPI_COMM_WORLD, in.degree, in.peer, MPI_UNWEIGHTED,
                                            out.degree, out.peer, MPI_UNWEIGHTED, info, 0,
                                            &comm);
    MPI_Info_free(&info);
    if (rc != NBR_SUCCESS)
        bh_die_nbr(rc, "nbr_dist_graph_create_adjacent");
    int nodes = 1;
    nbr_comm_locality(comm, &nodes, NULL, NULL);

    double *send = malloc(((size_t)out.elements + 1) * sizeof(double));
    double *recv = malloc(((size_t)in.elements + 1) * sizeof(double));
    double *ref = malloc(((size_t)in.elements + 1) * sizeof(double));
    row_t *rows = calloc((size_t)o.algs.n, sizeof(row_t));
    if (!send || !recv || !ref || !rows)
        bh_die_nbr(NBR_ERR_NOMEM, "buffers");
    for (int e = 0; e < out.elements; e++)
        send[e] = value_of(out.idx[e]);
    MPI_Neighbor_alltoallv(send, out.counts, out.displs, MPI_DOUBLE, ref, in.counts, in.displs,
                           MPI_DOUBLE, comm);

    /* set-up, check and traffic of every row */
    for (int a = 0; a < o.algs.n; a++) {
        row_t *row = &rows[a];
        row->name = o.algs.names[a];
        row->is_mpi = !strcmp(row->name, "mpi");
        row->ran = row->name;
        row->samples = calloc((size_t)o.iters, sizeof(double));
        if (!row->samples || row_init(row, comm, &out, &in, send, recv) != 0)
            bh_die_nbr(NBR_ERR_INTERNAL, row->name);
        for (int e = 0; e < in.elements; e++)
            recv[e] = -1.0;
        if (row_run(row, comm, &out, &in, send, recv) != 0)
            bh_die_nbr(NBR_ERR_INTERNAL, row->name);
        if (!check(row, comm, &in, recv, ref, rank)) {
            MPI_Abort(MPI_COMM_WORLD, 1);
            return 1;
        }
        row_traffic(row, comm, &out, &in, send, recv);
    }
    /* interleaved rounds: whatever disturbs the machine hits every row */
    for (int round = 0; round < o.warmup + o.iters; round++)
        for (int a = 0; a < o.algs.n; a++) {
            MPI_Barrier(comm);
            double t0 = MPI_Wtime();
            if (row_run(&rows[a], comm, &out, &in, send, recv) != 0)
                bh_die_nbr(NBR_ERR_INTERNAL, rows[a].name);
            if (round >= o.warmup)
                rows[a].samples[round - o.warmup] = MPI_Wtime() - t0;
        }
    for (int a = 0; a < o.algs.n; a++) { /* a round's time: its slowest rank's */
        MPI_Allreduce(MPI_IN_PLACE, rows[a].samples, o.iters, MPI_DOUBLE, MPI_MAX, comm);
        bh_summarize(rows[a].samples, o.iters, &rows[a].stats);
    }

    if (rank == 0) {
        const row_t *mpi = NULL;
        for (int a = 0; a < o.algs.n; a++)
            mpi = rows[a].is_mpi ? &rows[a] : mpi;
        printf("# nbr_spmv_bench: %s, %d ranks on %d nodes, 8-byte values, %s, %d rounds "
               "(after %d), a round's time is its slowest rank's\n",
               x.label, nranks, nodes,
               HAVE_PERSISTENT_MPI ? "mpi: MPIX_Neighbor_alltoallv_init"
                                   : "mpi: MPI_Ineighbor_alltoallv",
               o.iters, o.warmup);
        printf("# inter: the busiest rank's messages and bytes to other nodes per iteration, "
               "and all ranks' bytes; pays after: iterations after which set-up plus calls "
               "cost less than mpi's\n");
        printf("%-10s %-10s %10s %10s %10s %7s %10s %6s %9s %10s %10s\n", "algorithm", "ran",
               "median_us", "min_us", "max_us", "vs_mpi", "setup_us", "msgs", "bytes",
               "all_bytes", "pays_after");
        FILE *csv = o.csv ? fopen(o.csv, "w") : NULL;
        if (csv)
            fprintf(csv, "pattern,ranks,nodes,algorithm,ran,median_us,min_us,max_us,speedup_vs_mpi,"
                         "setup_us,inter_msgs_max,inter_bytes_max,inter_bytes_total,"
                         "pays_after_iterations\n");
        for (int a = 0; a < o.algs.n; a++) {
            const row_t *r = &rows[a];
            double speedup = mpi ? mpi->stats.median_us / r->stats.median_us : 0;
            char pays[32] = "-";
            if (mpi && r != mpi) {
                double gain = mpi->stats.median_us - r->stats.median_us;
                double extra = (r->setup - mpi->setup) * 1e6;
                if (extra <= 0 && gain >= 0)
                    snprintf(pays, sizeof pays, "0");
                else if (gain > 0)
                    snprintf(pays, sizeof pays, "%.0f", ceil(extra / gain));
                else
                    snprintf(pays, sizeof pays, "never");
            }
            printf("%-10s %-10s %10.1f %10.1f %10.1f %7.2f %10.1f %6llu %9llu %10llu %10s\n",
                   r->name, r->ran, r->stats.median_us, r->stats.min_us, r->stats.max_us,
                   speedup, r->setup * 1e6, (unsigned long long)r->inter_msgs_max,
                   (unsigned long long)r->inter_bytes_max,
                   (unsigned long long)r->inter_bytes_total, pays);
            if (csv)
                fprintf(csv, "\"%s\",%d,%d,%s,%s,%.3f,%.3f,%.3f,%.4f,%.1f,%llu,%llu,%llu,%s\n",
                        x.label, nranks, nodes, r->name, r->ran, r->stats.median_us,
                        r->stats.min_us, r->stats.max_us, speedup, r->setup * 1e6,
                        (unsigned long long)r->inter_msgs_max,
                        (unsigned long long)r->inter_bytes_max,
                        (unsigned long long)r->inter_bytes_total, pays);
        }
        if (csv)
            fclose(csv);
    }
    for (int a = 0; a < o.algs.n; a++) {
        if (rows[a].is_mpi) {
#if HAVE_PERSISTENT_MPI
            MPI_Request_free(&rows[a].mpi_req);
#endif
        } else {
            nbr_request_free(&rows[a].req);
        }
        free(rows[a].samples);
    }
    free(rows);
    free(send);
    free(recv);
    free(ref);
    free_side(&out);
    free_side(&in);
    free_exchange(&x);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
