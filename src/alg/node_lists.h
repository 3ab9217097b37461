/* Gathering the in-neighbor lists of every rank on one's node (the paper's
 * NI_r, and PI_t of the peer): one round on the rounds engine, each rank
 * posting its list to the other ranks of its node. */
#ifndef NBR_NODE_LISTS_H
#define NBR_NODE_LISTS_H

#include "base/engine.h"

typedef struct nbr_node_lists {
    int rank, nranks;
    const int *node_of;   /* rank -> node */
    const int *my_in;     /* this rank's in-neighbors */
    int my_indegree;
    int **lists;          /* out: per comm rank, NULL off this node */
    int *degrees;         /* out */
} nbr_node_lists_t;

int nbr_node_lists_step(void *context, int round, const nbr_mailbox_t *inbox,
                        nbr_mailbox_t *outbox, int *done);
void nbr_node_lists_free(nbr_node_lists_t *lists);

#endif
