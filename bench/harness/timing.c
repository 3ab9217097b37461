#include "harness/timing.h"

#include <stdlib.h>

#include <mpi.h>

#include "nbrcoll.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bh_summarize(double *samples, int n, bh_stats_t *s)
{
    qsort(samples, (size_t)n, sizeof *samples, cmp_double);
    double med = n % 2 ? samples[n / 2]
                       : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    s->median_us = med * 1e6;
    s->min_us = samples[0] * 1e6;
    s->max_us = samples[n - 1] * 1e6;
}

double bh_time_one_call(const bh_alg_t *a, bh_layout_t *L)
{
    double dt, slowest;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    bh_run_call(a, L);
    dt = MPI_Wtime() - t0;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

void bh_time_interleaved(const bh_alg_t *algs, int nalgs, bh_layout_t *L,
                         int warmup, int iters, double *samples)
{
    for (int a = 0; a < nalgs; a++) {
        for (int w = 0; w < warmup; w++)
            bh_run_call(&algs[a], L);
        /* auto: time its settled choice, not its trial (every rank reads
         * the same, so every rank makes as many calls) */
        int pending = !algs[a].is_mpi && !algs[a].is_copy;
        while (pending) {
            int rc = nbr_comm_trial_pending(algs[a].comm, &pending);
            if (rc != NBR_SUCCESS)
                bh_die_nbr(rc, "nbr_comm_trial_pending");
            if (pending)
                bh_run_call(&algs[a], L);
        }
        if (!algs[a].is_mpi && !algs[a].is_copy) {
            int rc = nbr_reset_counters(algs[a].comm);
            if (rc != NBR_SUCCESS)
                bh_die_nbr(rc, "nbr_reset_counters");
        }
    }
    /* the order rotates each round: a call is slowed by what the one
     * before it left behind (on the emulated cluster, whichever algorithm
     * came first in a fixed order was 2.5-12 % faster than the same MPI call
     * in last place), so every algorithm follows every other in turn */
    for (int it = 0; it < iters; it++)
        for (int k = 0; k < nalgs; k++) {
            int a = (k + it) % nalgs;
            samples[a * iters + it] = bh_time_one_call(&algs[a], L);
        }
}
