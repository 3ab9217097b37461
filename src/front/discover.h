/* In-neighbor discovery for nbr_dist_graph_create (the non-adjacent form):
 * each rank names some edges; after two rounds on the engine every rank
 * knows its own in- and out-lists. Round 0 sends each claim to both ends of
 * its edge (one message per destination rank, through NBX: nobody knows who
 * will write to it); round 1 sorts what arrived. Lists are ordered by
 * (peer, naming rank, position in the naming rank's list), the same key on
 * both ends, so the k-th s -> d edge in s's out-list is the k-th in d's
 * in-list. */
#ifndef NBR_DISCOVER_H
#define NBR_DISCOVER_H

#include "base/engine.h"

typedef struct nbr_discover {
    /* input: edges this rank names */
    int rank;
    int nranks;
    int num_named;
    const int *named_src;
    const int *named_dst;
    const int *named_weight; /* NULL when unweighted */
    /* output */
    int indegree, outdegree;
    int *sources, *sourceweights;
    int *destinations, *destweights;
} nbr_discover_t;

int nbr_discover_step(void *context, int round, const nbr_mailbox_t *inbox,
                      nbr_mailbox_t *outbox, int *done);
void nbr_discover_free(nbr_discover_t *discover);

#endif
