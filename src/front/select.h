/* Automatic selection on a communicator: see select.c. */
#ifndef NBR_FRONT_SELECT_H
#define NBR_FRONT_SELECT_H

#include "front/comm.h"
#include "plan/sim.h"

/* The algorithm for a call of this layout (buffers on GPUs when
 * device_buffers): the decision kept for its signature, else every
 * candidate priced on every rank and one allreduce, which makes it
 * collective: every rank must call it for the same calls (they do: the
 * signatures every rank sees are the same, alg/select.h). persistent:
 * always decide anew, keep nothing. A call that moves nothing on any rank
 * takes naive and keeps no decision. */
int nbr_comm_select(nbr_comm_t *state, const nbr_layout_t *layout, int device_buffers,
                    int persistent, const nbr_algorithm_t **chosen);

/* The part before the allreduces, every rank for itself: the candidates
 * (the same on every rank; at most nbr_algorithm_count()), this rank's
 * price of each in parts (seconds INFINITY: it cannot plan it; the bytes
 * through its node's interfaces) and the index of the fallback (naive).
 * Collective only in gathering the candidates' set-up facts. Exposed for
 * tests: ranks may well prefer different algorithms. */
int nbr_select_local_prices(nbr_comm_t *state, const nbr_layout_t *layout, int device_buffers,
                            const nbr_algorithm_t **candidates, nbr_sim_parts_t *prices,
                            int *count, int *fallback);

/* The job's price of each of n candidates from every rank's parts
 * (collective): the slowest rank's seconds or the busiest node's
 * interfaces, whichever is longer. job holds n. */
int nbr_select_job_prices(nbr_comm_t *state, const nbr_sim_parts_t *mine, int n, double *job);

#endif
