#include "harness/timing.h"

#include <stdint.h>
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

/* order[0..n) a permutation of 0..n-1 drawn from *seed (splitmix64). */
static void shuffle(int *order, int n, uint64_t *seed)
{
    for (int k = 0; k < n; k++)
        order[k] = k;
    for (int k = n - 1; k > 0; k--) {
        uint64_t z = (*seed += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        int j = (int)(z % (uint64_t)(k + 1));
        int swap = order[k];
        order[k] = order[j];
        order[j] = swap;
    }
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
                         int warmup, int iters, int block, long order_seed, double *samples)
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
    /* Each round runs the algorithms in a fresh order, the same on every
     * rank (a fixed seed): a call is slowed or sped by what the one before
     * it left behind (on the emulated cluster, whichever algorithm came
     * first in a fixed order was 2.5-12 % faster than the same MPI call in
     * last place). A rotating order moved every algorithm through every
     * place but kept its predecessor (auto always after leader, mpi after
     * auto); a shuffle pairs each with every other
     * (docs/decisions.md, D28). With block > 1 an algorithm's
     * calls run in a row: on one node of 8, halving's time against MPI's
     * call on Moore d2 r2 at 256 KiB depended on how many other plans ran
     * in the rounds, for longer than one call (2 timed: 1.11-1.18x, 6:
     * 0.86-0.94x; each alone 1.08-1.16x, docs/decisions.md, D27),
     * where a program calling one collective sees it in its own state. */
    int order[BH_MAX_ALGS];
    /* a fixed seed gives every point the same orders: with 7 calls in
     * blocks of 5, auto's first block followed halving's in every run of
     * every large point of the cluster grid (docs/decisions.md, D28);
     * grid.sh gives each confirming round and each --runs pass a seed of
     * its own. The factor is not a multiple of the shuffle's own step, so
     * that another seed is not the same stream a few draws on. */
    uint64_t seed = 0x6e6272636f6c6cULL + (uint64_t)order_seed * 0xd1342543de82ef95ULL;
    if (block < 1)
        block = 1;
    for (int it = 0; it < iters; it += block) {
        shuffle(order, nalgs, &seed);
        for (int k = 0; k < nalgs; k++) {
            int a = order[k];
            for (int j = it; j < it + block && j < iters; j++)
                samples[a * iters + j] = bh_time_one_call(&algs[a], L);
        }
    }
}
