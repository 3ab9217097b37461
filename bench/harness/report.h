/* nbr_bench's output: the commented header and the table on stdout (rank
 * 0), the same rows as CSV, and the number formats they share (speedup
 * against mpi, GB/s, traffic; "-" where a number does not apply). */
#ifndef NBR_BENCH_HARNESS_REPORT_H
#define NBR_BENCH_HARNESS_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "harness/graphs.h"
#include "harness/options.h"
#include "harness/timing.h"
#include "harness/traffic.h"

/* One row: an algorithm at one message size. */
typedef struct bh_result {
    const char *alg;
    const char *chosen; /* what auto ran (nbr_comm_algorithm); else alg */
    bh_stats_t time;
    double gbps; /* largest per-rank receive volume / median, 1e9 B/s */
    bh_traffic_t traffic;
} bh_result_t;

/* bytes / us in 1e9 B/s; 0 when there is no time to divide by. */
double bh_gbps(uint64_t bytes, double us);

/* The commented header (graph, locality, halving's bound, buffers, the
 * algorithms) and the table's column names. Rank 0 only. */
void bh_print_header(const bh_options_t *o, const bh_topo_t *t,
                     const bh_alg_t *algs);

/* One table row; mpi is the mpi row of the same size, NULL if not run. */
void bh_print_row(const bh_result_t *r, const bh_result_t *mpi,
                  uint64_t bytes);

/* Rank 0 opens path (NULL: no CSV, *csv stays NULL) and writes the header
 * row; collective: every rank learns whether that worked (1) or not (0,
 * after rank 0 said why). */
int bh_csv_open(const char *path, int rank, FILE **csv);

/* One CSV row; the same arguments as bh_print_row plus the run's options
 * and topology for the leading columns. */
void bh_csv_row(FILE *f, const bh_options_t *o, const bh_topo_t *t,
                const bh_result_t *r, const bh_result_t *mpi,
                uint64_t bytes);

#endif
