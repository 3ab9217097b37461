/* A monotonic clock in seconds, for the tools that time work outside MPI
 * (MPI_Wtime needs MPI initialized). Include after a feature macro that
 * exposes clock_gettime (_POSIX_C_SOURCE 200809L or _DEFAULT_SOURCE). */
#ifndef BH_CLOCK_H
#define BH_CLOCK_H

#include <time.h>

static inline double bh_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
