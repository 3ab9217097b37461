/* Automatic selection on a communicator: see select.c. */
#ifndef NBR_FRONT_SELECT_H
#define NBR_FRONT_SELECT_H

#include "front/comm.h"
#include "plan/sim.h"

/* The algorithm for a call (its kind, value indices, buffers: call) of
 * this layout: the decision kept for its signature, else every candidate
 * priced on every rank and one allreduce, which makes it
 * collective: every rank must call it for the same calls (they do: the
 * signatures every rank sees are the same, alg/select.h). persistent:
 * always decide anew, keep nothing. A call that moves nothing on any rank
 * takes the baseline (alg/select.h) and keeps no decision.
 *
 * The trial: a price is an estimate, so a kept decision is checked on the
 * next blocking calls of its signature: the priced winner and its rivals
 * (the baseline when another plan won; the other plans priced within 2x
 * of the winner) run in turns, each call timed by the caller, the first
 * round not counted (it pays for each plan's first run), then
 * nbr_auto_trials counted rounds, or more for cheap calls (as many as fit
 * in 100 ms per side, at most 100, alg/select.h); the side whose middle
 * half of calls (each call's time: its slowest rank's) was fastest on
 * average is kept from
 * then on, but a plan of nbrcoll's own must beat the baseline by 3 %; when the kept one is not the priced
 * winner, a second trial (the winner, that one, the others that beat the
 * winner within 10 % of the fastest, and the baseline) decides.
 * *trial is set when this call is one of them: time it and report it with
 * nbr_comm_trial_record, on every rank (the last report is collective).
 * Nonblocking calls meanwhile run the priced winner, untimed. No trial
 * when the winner is priced above 200 ms a call (select.c says why). */
/* What a call's price depends on besides its layout. */
typedef struct nbr_priced_call {
    nbr_call_kind_t kind;
    /* allgather, alltoall: the block's bytes from the call's count and
     * type (a rank without neighbors has no slot that says it) */
    size_t block_bytes;
    const nbr_value_index_t *values; /* an _ext call's value indices, or NULL */
    int device_buffers;              /* its buffers are on GPUs */
    int expected_starts; /* runs its set-up is spread over (nbr_expected_starts) */
} nbr_priced_call_t;

int nbr_comm_select(nbr_comm_t *state, const nbr_priced_call_t *call, const nbr_layout_t *layout,
                    int persistent, int blocking, const nbr_algorithm_t **chosen,
                    nbr_decision_t **trial);

/* The decision kept for the signature of a call of this kind and block
 * bytes (allgather and alltoall; ignored for the others), or NULL. */
nbr_decision_t *nbr_comm_decision(nbr_comm_t *state, nbr_call_kind_t kind, size_t block_bytes);

/* The index in trial->sides of the side its next call runs: round k of
 * the trial starts at its k-th side. */
int nbr_trial_side(const nbr_decision_t *trial);

/* A timed trial call: seconds from start to completion (INFINITY when it
 * failed on this rank); the trial's last one agrees on the outcome. */
int nbr_comm_trial_record(nbr_comm_t *state, nbr_decision_t *trial, double seconds);

/* The part before the allreduces, every rank for itself: the candidates
 * (the same on every rank; at most nbr_algorithm_count()), this rank's
 * price of each in parts (seconds INFINITY: it cannot plan it; the bytes
 * through its node's interfaces) and the index of the fallback (the
 * baseline, alg/select.h).
 * Collective only in gathering the candidates' set-up facts. Exposed for
 * tests: ranks may well prefer different algorithms. */
int nbr_select_local_prices(nbr_comm_t *state, const nbr_layout_t *layout,
                            const nbr_priced_call_t *call, const nbr_algorithm_t **candidates,
                            nbr_sim_parts_t *prices, int *count, int *fallback);

/* The job's price of each of n candidates from every rank's parts
 * (collective): the slowest rank's seconds or the busiest node's
 * interfaces, whichever is longer. job holds n; so does slowest, when not
 * NULL: the slowest rank's seconds alone. */
int nbr_select_job_prices(nbr_comm_t *state, const nbr_sim_parts_t *mine, int n, double *job,
                          double *slowest);

#endif
