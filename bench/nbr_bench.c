/*
 * nbr_bench: times nbrcoll's neighborhood collectives against the MPI
 * library's own MPI_Neighbor_* on a synthetic communication graph.
 *
 * Every rank generates the same whole graph (graph_gen), builds one
 * dist-graph communicator per nbrcoll algorithm from its own lists, checks
 * each algorithm bit-exact against MPI, then times all algorithms size by
 * size. Run with --help for the options; bench/README.md explains the output.
 *
 * The pieces live in the harness (bench/harness/); this file wires them
 * into the sweep over message sizes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "harness/buffers.h"
#include "harness/common.h"
#include "harness/graphs.h"
#include "harness/options.h"
#include "harness/report.h"
#include "harness/timing.h"
#include "harness/traffic.h"
#include "nbrcoll.h"

typedef struct bench {
    const bh_options_t *o;
    bh_topo_t *t;
    bh_alg_t *algs;
    int mpi_index;       /* -1 if mpi is not in --algorithms */
    bh_alg_t mpi;        /* reference runner, always available */
    bh_buffer_set_t has; /* buffers every size needs */
    FILE *csv;           /* rank 0 only; may be NULL */
    double *samples;
} bench_t;

/* Checks an algorithm against MPI before it is timed: every nbrcoll one,
 * and mpi when it stages device buffers. Returns 0 on a verification
 * failure. */
static int check_one(bench_t *b, int a, bh_layout_t *L)
{
    const bh_alg_t *alg = &b->algs[a];
    if (alg->is_copy || (alg->is_mpi && !b->has.device) ||
        bh_verify(alg, L, b->t))
        return 1;
    if (b->t->rank == 0)
        fprintf(stderr, "nbr_bench: algorithm '%s' disagrees with MPI "
                        "at %llu bytes (details above); stopping\n",
                alg->name, (unsigned long long)L->bytes);
    return 0;
}

/* Statistics, bandwidth and traffic of algorithm a from its timed samples;
 * recv_max is the largest receive volume of any rank. */
static void measure_one(bench_t *b, int a, bh_layout_t *L, uint64_t recv_max,
                        bh_result_t *r)
{
    const bh_alg_t *alg = &b->algs[a];
    r->alg = alg->name;
    r->chosen = alg->name;
    if (!alg->is_mpi && !alg->is_copy)
        nbr_comm_algorithm(alg->comm, &r->chosen); /* the latest call's */
    bh_summarize(b->samples + (size_t)a * b->o->iters, b->o->iters, &r->time);
    r->gbps = bh_gbps(recv_max, r->time.median_us);
    if (alg->is_copy) {
        r->traffic = (bh_traffic_t){.counted = BH_TRAFFIC_NONE};
        return;
    }
    if (alg->is_mpi) {
        bh_traffic_model(L, b->t, &r->traffic);
        return;
    }
    uint64_t calls = bh_traffic_measured(alg, b->t, b->o->iters, &r->traffic);
    if (b->o->memory == BH_MEMORY_DEVICE)
        bh_report_device_paths(alg, b->t, b->o->iters, L->bytes);
    uint64_t expect = (uint64_t)b->t->nranks * (uint64_t)b->o->iters;
    int bound = bh_offsock_bound(b->t);
    if (strcmp(alg->name, "halving") == 0 && r->traffic.offsock_max > bound &&
        b->t->rank == 0)
        printf("# WARNING: halving sent %.2f off-socket messages per call "
               "on some rank, above its bound %d\n",
               r->traffic.offsock_max, bound);
    if (calls != expect && b->t->rank == 0)
        printf("# WARNING: %s counted %llu calls over all ranks, expected "
               "%llu\n",
               alg->name, (unsigned long long)calls,
               (unsigned long long)expect);
}

/* One message size: every algorithm checked, then timed in interleaved
 * rounds. Returns 0 on a verification failure. */
static int bench_size(bench_t *b, uint64_t bytes)
{
    const bh_options_t *o = b->o;
    bh_layout_t L;
    bh_result_t res[BH_MAX_ALGS];
    int ok = 1;
    if (bh_layout_plan(&L, b->t, o->coll, bytes) != 0)
        bh_die_nbr(NBR_ERR_NOMEM, "layout_plan");
    L.has = b->has;
    if (!bh_layout_fits(&L, o->max_mem, b->t->rank) ||
        !bh_layout_alloc_everywhere(&L, b->t->rank)) {
        bh_layout_free(&L);
        return 1;
    }
    uint64_t recv_max = L.recv_total;
    MPI_Allreduce(MPI_IN_PLACE, &recv_max, 1, MPI_UINT64_T, MPI_MAX,
                  MPI_COMM_WORLD);
    bh_fill_send(&L, b->t);
    /* a new block size on the same communicators: each nbrcoll one decides
     * afresh at its first call of it, as a program with one size per
     * communicator sees (nbr_comm_retune) */
    for (int a = 0; a < o->algs.n; a++) {
        int rc = b->algs[a].is_mpi || b->algs[a].is_copy ? NBR_SUCCESS
                                                         : nbr_comm_retune(b->algs[a].comm);
        if (rc != NBR_SUCCESS)
            bh_die_nbr(rc, "nbr_comm_retune");
    }
    if (L.has.ref)
        bh_compute_reference(&b->mpi, &L);
    for (int a = 0; a < o->algs.n && ok; a++)
        ok = check_one(b, a, &L);
    if (ok) {
        bh_time_interleaved(b->algs, o->algs.n, &L, o->warmup, o->iters, o->block,
                            o->order_seed, b->samples);
        for (int a = 0; a < o->algs.n; a++)
            measure_one(b, a, &L, recv_max, &res[a]);
    }
    bh_layout_free(&L);
    if (!ok || b->t->rank != 0)
        return ok;
    const bh_result_t *mpi = b->mpi_index >= 0 ? &res[b->mpi_index] : NULL;
    for (int a = 0; a < o->algs.n; a++) {
        bh_print_row(&res[a], mpi, bytes);
        if (b->csv)
            bh_csv_row(b->csv, o, b->t, &res[a], mpi, bytes);
    }
    fflush(stdout);
    if (b->csv)
        fflush(b->csv);
    return 1;
}

/* Runs the whole sweep; returns the process exit status. */
static int run_benchmark(const bh_options_t *o)
{
    bh_topo_t t;
    bh_alg_t algs[BH_MAX_ALGS];
    MPI_Comm base = MPI_COMM_NULL;
    int status = EXIT_SUCCESS;

    if (o->memory == BH_MEMORY_DEVICE && !bh_device_usable())
        return EXIT_FAILURE;
    int rc = bh_topo_build(&o->graph, &t);
    if (rc == NBR_SUCCESS)
        rc = bh_create_comms(&o->locality, &t, &o->algs, algs, &base);
    if (rc != NBR_SUCCESS) {
        /* graph generation is deterministic and creation agrees on errors,
         * so every rank is here: a clean exit is safe. */
        if (t.rank == 0)
            fprintf(stderr, "nbr_bench: setup failed: %s (%d)\n",
                    nbr_error_string(rc), rc);
        bh_topo_free(&t);
        return EXIT_FAILURE;
    }
    bh_topo_gather_locality(base, &t);

    bench_t b = {.o = o, .t = &t, .algs = algs, .mpi_index = -1};
    b.mpi = (bh_alg_t){.name = "mpi", .is_mpi = 1, .comm = base};
    b.has.device = o->memory == BH_MEMORY_DEVICE;
    for (int a = 0; a < o->algs.n; a++) {
        if (algs[a].is_mpi)
            b.mpi_index = a;
        if (algs[a].is_copy)
            b.has.copy = 1;
        else if (!algs[a].is_mpi || b.has.device)
            b.has.ref = 1; /* check_one will verify it */
    }
    b.samples = malloc((size_t)o->algs.n * (size_t)o->iters *
                       sizeof *b.samples);
    if (!b.samples)
        bh_die_nbr(NBR_ERR_NOMEM, "malloc");

    if (!bh_csv_open(o->csv_path, t.rank, &b.csv)) {
        status = EXIT_FAILURE;
    } else {
        if (t.rank == 0)
            bh_print_header(o, &t, algs);
        bh_warn_overridden_algorithms(algs, o->algs.n, t.rank);
        for (uint64_t bytes = o->min_bytes; bytes <= o->max_bytes;
             bytes *= (uint64_t)o->size_factor) {
            if (!bench_size(&b, bytes)) {
                status = EXIT_FAILURE;
                break;
            }
        }
    }
    if (b.csv)
        fclose(b.csv);
    free(b.samples);
    bh_free_comms(algs, o->algs.n, base);
    bh_topo_free(&t);
    return status;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    bh_set_progname("nbr_bench");
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    /* Every rank parses the same argv, so every rank takes the same path
     * and only rank 0 needs to talk. */
    bh_options_t o;
    char err[256] = "";
    int parsed = bh_options_parse(argc, argv, &o, err, sizeof err);
    int status;
    if (parsed == 1) {
        if (rank == 0)
            bh_print_usage(stdout);
        status = EXIT_SUCCESS;
    } else if (parsed < 0) {
        if (rank == 0)
            fprintf(stderr, "nbr_bench: error: %s\n"
                            "run 'nbr_bench --help' for usage\n", err);
        status = BH_EXIT_USAGE;
    } else {
        status = run_benchmark(&o);
    }
    MPI_Finalize();
    return status;
}
