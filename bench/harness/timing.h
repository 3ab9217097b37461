/* Timing: calls of several algorithms interleaved round by round, each
 * call's time being the slowest rank's, and the summary of the samples. */
#ifndef NBR_BENCH_HARNESS_TIMING_H
#define NBR_BENCH_HARNESS_TIMING_H

#include "harness/buffers.h"
#include "harness/graphs.h"

/* Over the timed calls of one algorithm, microseconds. */
typedef struct bh_stats {
    double median_us, min_us, max_us;
} bh_stats_t;

/* samples (seconds) are sorted in place. */
void bh_summarize(double *samples, int n, bh_stats_t *s);

/* One timed call after a barrier: the slowest rank's time in seconds,
 * since the collective is only done when every rank is done. Collective. */
double bh_time_one_call(const bh_alg_t *a, bh_layout_t *L);

/* warmup calls of every algorithm (then its nbrcoll counters are reset, so
 * they count the timed calls only), then rounds of block timed calls of
 * each algorithm in a row, the algorithms in a fresh order each round,
 * until each has iters: noise that drifts over the run (a shared,
 * oversubscribed machine) and what a call leaves behind for the next hit
 * every algorithm alike. order_seed picks the orders (the same on every
 * rank). samples[a * iters + it], seconds. Collective. */
void bh_time_interleaved(const bh_alg_t *algs, int nalgs, bh_layout_t *L,
                         int warmup, int iters, int block, long order_seed, double *samples);

#endif
