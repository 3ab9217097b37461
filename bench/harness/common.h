/* What every part of the bench harness shares: byte units, the collective
 * kinds, the program name its messages carry, and fatal errors. The harness
 * serves bench programs, not the library, so it may end the job. */
#ifndef NBR_BENCH_HARNESS_COMMON_H
#define NBR_BENCH_HARNESS_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define BH_KIB (UINT64_C(1) << 10)
#define BH_MIB (UINT64_C(1) << 20)
#define BH_GIB (UINT64_C(1) << 30)

/* Exit statuses: usage errors differ from failures found while running
 * (EXIT_FAILURE). */
#define BH_EXIT_USAGE 2

typedef enum {
    BH_COLL_ALLGATHER,
    BH_COLL_ALLGATHERV,
    BH_COLL_ALLTOALLV
} bh_coll_t;

/* "allgather", "allgatherv" or "alltoallv". */
const char *bh_coll_name(bh_coll_t coll);
/* Sets *coll from one of those names; 0 on success, -1 if unknown. */
int bh_coll_from_name(const char *name, bh_coll_t *coll);

/* The "<name>: " that starts every message of the harness; set it once
 * at the start of main. */
void bh_set_progname(const char *name);
const char *bh_progname(void);

/* For failures inside collectives: peers may already be blocked in a call
 * this rank will never make, so only MPI_Abort ends the job reliably.
 * rc is an nbrcoll status (die_nbr) or an MPI error code (die_mpi). */
void bh_die_nbr(int rc, const char *what);
void bh_die_mpi(int rc, const char *what);

/* "64Ki" style label for tables; CSV files keep plain byte counts. */
void bh_size_label(uint64_t bytes, char *buf, size_t n);

#endif
