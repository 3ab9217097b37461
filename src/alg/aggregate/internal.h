/* What aggregate's exchange (facts.c) hands its plan builder (plan.c). */
#ifndef NBR_AGGREGATE_INTERNAL_H
#define NBR_AGGREGATE_INTERNAL_H

#include "alg/aggregate/aggregate.h"

#include <stdint.h>

/* The count-independent pattern: every rank's region and every region's
 * members (ascending ranks). */
typedef struct nbr_regions {
    int count;
    const int *of; /* rank -> region: the locality's node_of or socket_of; NULL: one */
    int *offsets;  /* count + 1 */
    int *ranks;
} nbr_regions_t;

static inline int nbr_region_of(const nbr_regions_t *g, int rank)
{
    return g->of ? g->of[rank] : 0;
}

static inline const int *nbr_region_members(const nbr_regions_t *g, int region, int *size)
{
    *size = g->offsets[region + 1] - g->offsets[region];
    return g->ranks + g->offsets[region];
}

int nbr_aggregate_regions_build(const nbr_plan_input_t *input, void **pattern);
void nbr_aggregate_regions_free(void *pattern);

/* A member of this rank's region: its edges and their block bytes in its
 * MPI order; with value indices, every element's global index, edge by
 * edge (edge j's from out_at[j]). */
typedef struct nbr_member {
    int rank;
    int outdegree, indegree;
    int *out, *in;
    uint64_t *out_bytes, *in_bytes;
    int64_t *out_index, *in_index; /* NULL without value indices */
    size_t *out_at, *in_at;
} nbr_member_t;

/* A piece of data between regions: a block (aggregate) or a value (dedup:
 * dst -1, key its global index). slot and element locate it on the end
 * that listed it (the first occurrence of a value). */
typedef struct nbr_piece {
    int region;   /* the remote region */
    int src, dst; /* ranks */
    int slot;     /* out-edge (a member's parts) or in-edge (arrivals) */
    int element;  /* dedup: the element in that slot */
    int64_t key;  /* aggregate: the slot, which orders repeated edges; dedup: the index */
    uint64_t bytes;
    size_t at;    /* the plan builder's: where it sits in a scratch area */
} nbr_piece_t;

typedef struct nbr_pieces {
    nbr_piece_t *p;
    int n;
} nbr_pieces_t;

typedef struct nbr_aggregate_facts {
    const nbr_regions_t *regions;
    nbr_regions_t *own_regions; /* made here when the input had no pattern */
    size_t message_bytes;
    size_t element_bytes; /* with value indices: every element's size; 0: none */
    int rank, region, self; /* self: this rank's index among the members */
    int num_members;
    nbr_member_t *members;
    /* What crosses between regions, both ends in the same order: each
     * member's parts (by region, source, destination, key) and the pieces
     * this region receives (arrivals, the same order), decided in round 1. */
    nbr_pieces_t *parts; /* by member */
    nbr_pieces_t arrivals;
    /* by region (-1: no traffic with it): the member that sends this
     * region's pieces there / receives that region's pieces here, and the
     * bytes of those pieces */
    int *send_agent, *recv_agent;
    uint64_t *send_total, *recv_total;
    /* this rank as an agent, by region: the other region's agent, and the
     * bytes it announced */
    int *send_partner, *recv_partner;
    uint64_t *announced;
    int mismatch, status;
} nbr_aggregate_facts_t;

int nbr_aggregate_facts_init(const nbr_plan_input_t *input, void *facts);
int nbr_aggregate_facts_step(void *facts, int round, const nbr_mailbox_t *inbox,
                             nbr_mailbox_t *outbox, int *done);
int nbr_aggregate_facts_check(const void *facts, uint64_t *digest);
void nbr_aggregate_facts_free(void *facts);

/* The arrival index of the piece with this region, source, destination
 * and key, or -1. */
int nbr_aggregate_arrival(const nbr_aggregate_facts_t *f, int region, int src, int dst,
                          int64_t key);

int nbr_aggregate_build(const nbr_plan_input_t *input, nbr_plan_t *plan);

#endif
