/* Command lines of bench programs. Generic pieces any bench program can
 * use ("--name value" / "--name=value" parsing, integers, byte counts with
 * Ki/Mi/Gi suffixes, the algorithm list), then nbr_bench's own option set:
 * its struct, defaults, checks and usage text. */
#ifndef NBR_BENCH_HARNESS_OPTIONS_H
#define NBR_BENCH_HARNESS_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "harness/common.h"
#include "harness/graphs.h"

/* ===================================================== generic parsing */

/* Applies option --name with its value; 0 on success, else fills err. */
typedef int (*bh_option_fn)(const char *name, const char *val, void *ctx,
                            char *err, size_t errlen);

/* Walks argv, handing every "--name value" or "--name=value" to apply in
 * order. Returns 0 when all applied, 1 at --help or -h (options after it
 * are not looked at), -1 on a usage error (message in err). */
int bh_parse_argv(int argc, char **argv, bh_option_fn apply, void *ctx,
                  char *err, size_t errlen);

/* The same where the names in flags (NULL-terminated) take no value:
 * "--name" alone applies with val NULL, "--name=value" with its value. */
int bh_parse_argv_flags(int argc, char **argv, const char *const *flags,
                        bh_option_fn apply, void *ctx, char *err,
                        size_t errlen);

/* Parses a whole decimal integer in [lo, hi]; 0 on success. */
int bh_parse_long(const char *s, long lo, long hi, long *out);

/* Parses a byte count with an optional binary suffix K, Ki, M, Mi, G, Gi
 * (case-insensitive letter): "64Ki" is 65536. 0 on success. */
int bh_parse_bytes(const char *s, uint64_t *out);

int bh_is_power_of_two(uint64_t v);

/* The graph options every program shares: --pattern, --density, --seed,
 * --dims, --radius into spec. 0 applied, -1 a bad value, 1 not one of them. */
int bh_graph_option(const char *name, const char *val, bh_graph_spec_t *spec);

/* The options every timed program shares: --warmup N and --iters N
 * (rounds), and, where loc is not NULL, --ranks-per-node R and
 * --ranks-per-socket S (virtual locality). 0 applied, -1 a bad value, 1
 * not one of them. */
int bh_run_option(const char *name, const char *val, int *warmup, int *iters,
                  bh_locality_t *loc);

/* Splits a comma-separated --algorithms value into list and checks every
 * name now ('mpi', 'copy' or an nbrcoll algorithm of this build, none
 * twice), before any communicator exists, so a typo costs nothing. Blanks
 * around names and empty entries are ignored. 0, or -1 with err filled. */
int bh_parse_algorithms(const char *s, bh_alg_list_t *list, char *err,
                        size_t errlen);

/* ============================================== nbr_bench's option set */

typedef enum { BH_MEMORY_HOST, BH_MEMORY_DEVICE } bh_memory_t;

typedef struct bh_options {
    bh_graph_spec_t graph;
    bh_coll_t coll;
    bh_memory_t memory; /* where the timed calls' buffers live */
    uint64_t min_bytes;
    uint64_t max_bytes;
    int size_factor; /* each size is the last one times this */
    int warmup;
    int iters;
    int block; /* timed calls of one algorithm in a row (bh_time_interleaved) */
    long order_seed; /* which shuffles of the algorithms the rounds take (0: the first ones) */
    bh_alg_list_t algs;
    bh_locality_t locality;
    const char *csv_path; /* NULL: no CSV */
    uint64_t max_mem;
} bh_options_t;

void bh_options_default(bh_options_t *o);

/* Defaults, then argv, then the checks across options. Returns 0 to run,
 * 1 for --help, -1 on a usage error (message in err). */
int bh_options_parse(int argc, char **argv, bh_options_t *o, char *err,
                     size_t errlen);

/* nbr_bench's --help text, with the nbrcoll algorithms of this build. */
void bh_print_usage(FILE *f);

#endif
