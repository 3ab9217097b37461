/* The verifier: runs the plans of all N ranks symbolically in one process
 * and proves they implement the collective.
 *
 * Every byte of every send buffer carries a label (rank, offset); receives
 * and copies move labels. At the end each rank's receive slots must hold
 * exactly the labels MPI semantics prescribe (the oracle, computed from the
 * graph and layouts alone, with the k-th-edge rule for repeated edges), each
 * byte written exactly once, and bytes outside the slots never written.
 * On the way it checks: ops stay inside their buffers; no phase writes a
 * range another op of the phase touches; sends and receives pair up per
 * (source, destination, tag) channel with equal sizes; no send or copy reads
 * scratch or receive bytes nothing wrote; and, with rendezvous semantics
 * (a message completes only once both sides posted it), every rank reaches
 * its last phase: no hang. */
#ifndef NBR_VERIFY_H
#define NBR_VERIFY_H

#include "base/graph_gen.h"
#include "plan/plan.h"

#include <stddef.h>

/* plans[r] and layouts[r] belong to rank r of graph. Returns NBR_SUCCESS, or
 * NBR_ERR_INTERNAL with the first problem described in message. */
int nbr_verify_plans(const nbr_graph_t *graph, const nbr_layout_t *layouts,
                     const nbr_plan_t *plans, char *message, size_t message_size);

/* The same where some send bytes stand for others (dedup: elements a rank
 * sends with one global index hold one value): same[r][b] is the send byte
 * of rank r that byte b holds the same data as, same[r] NULL or same NULL
 * for a rank whose bytes are all their own. */
int nbr_verify_plans_same(const nbr_graph_t *graph, const nbr_layout_t *layouts,
                          const nbr_plan_t *plans, const size_t *const *same, char *message,
                          size_t message_size);

#endif
