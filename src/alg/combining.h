/* Common-neighbor message combining (common-neighborhood-combining.txt,
 * Alg. 1), computed from the whole graph like halving (halving.h), so the
 * same graph always gives the same pattern.
 *
 * Friends are two ranks that still share at least theta active
 * out-neighbors (nbr_combining_theta). In rounds, friends pair up (each
 * rank with at most one friend per round), greedily by the number of
 * shared neighbors (ties: lower ranks first): the paper's maximum-weight
 * matching intent, with one answer. A pair sorts its common neighbors by
 * rank and splits them in halves, the lower rank taking the first half
 * (the paper's rule; the first half has the extra one when odd). Each
 * sends the other its block, then sends both blocks, in one message, to
 * its half. Shared neighbors leave both active lists; rounds go on until
 * no friends remain; what is left goes directly.
 *
 * allgather only (a rank forwarding its friend's block must know its
 * size, which allgatherv does not tell it); the v-forms take the naive
 * plan. */
#ifndef NBR_COMBINING_H
#define NBR_COMBINING_H

#include "alg/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nbr_combining_pair {
    int friend_rank;
    int num_on;           /* neighbors this rank serves for the pair */
    int *on;              /* ascending */
    int friend_serves;    /* the friend's half is not empty: it needs my block */
} nbr_combining_pair_t;

/* One message this rank receives in the combined phase. */
typedef struct nbr_combining_in {
    int sender;
    int blocks[2];        /* block sources in message order; blocks[1] -1: one block */
} nbr_combining_in_t;

typedef struct nbr_combining_pattern {
    int rank;
    int num_pairs;
    nbr_combining_pair_t *pairs;
    int num_direct;
    int *direct;          /* out-neighbors served alone, ascending */
    int num_in;
    nbr_combining_in_t *in; /* ascending sender */
} nbr_combining_pattern_t;

/* Every wanted rank's pattern (want NULL: all). theta >= 1. */
int nbr_combining_build(int n, const int *out_offsets, const int *out_targets, int theta,
                        const char *want, nbr_combining_pattern_t *patterns);
void nbr_combining_pattern_free(nbr_combining_pattern_t *pattern);

/* The algorithm's parameters (nbr_combining_theta / NBR_COMBINING_THETA). */
typedef struct nbr_combining_params {
    int theta; /* friends share at least this many out-neighbors; >= 1 */
} nbr_combining_params_t;

#ifdef __cplusplus
}
#endif

#endif
