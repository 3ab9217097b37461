/* Whether a communicator's graph is consistent: every rank names each
 * neighbor in its out-list exactly as many times as that neighbor names it
 * in its in-list. MPI_Dist_graph_create_adjacent takes each rank's lists on
 * trust, and an MPI neighborhood collective on a mismatched graph waits
 * forever for the message that nobody sends.
 *
 * One round on the rounds engine (NBX, so a rank hears from out-neighbors
 * it does not list): each rank posts, to each distinct out-neighbor, how
 * many times it lists it. The receiving end compares that with its own
 * in-list, which covers every edge, including one it lists that the sender
 * does not (no message is a count of 0). Mismatches are logged there, once
 * per pair, and counted; the caller agrees on the result. */
#ifndef NBR_GRAPH_CHECK_H
#define NBR_GRAPH_CHECK_H

#include "base/engine.h"

typedef struct nbr_graph_check {
    int rank;
    int indegree, outdegree;
    const int *sources;      /* this rank's in-list, as the user gave it */
    const int *destinations; /* its out-list */
    int mismatches;          /* out: pairs into this rank that disagree */
} nbr_graph_check_t;

int nbr_graph_check_step(void *context, int round, const nbr_mailbox_t *inbox,
                         nbr_mailbox_t *outbox, int *done);

#endif
