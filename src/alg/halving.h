/* Distance halving (distance-halving-allgather.txt, Alg. 1-4): the
 * communication pattern, computed instead of negotiated.
 *
 * The paper's ranks negotiate agents with ANY_SOURCE messages, so the
 * pattern depends on timing. Here every rank gathers the whole graph once
 * (out-lists, at set-up) and runs the same deterministic computation, so
 * every run, the MPI job and the in-process verifier get the same pattern:
 *
 *   - Groups. The job starts as one group [0, n). A group splits into a
 *     lower and an upper half at its middle, or exactly at the socket
 *     boundary when it spans two sockets, and stops splitting once it lies
 *     within one socket (or, when sockets are not contiguous in rank order,
 *     once it has at most L ranks: the paper's rule).
 *   - Holdings. A rank holds blocks, each with the targets it still has to
 *     reach; at first its own block with its out-neighbors.
 *   - Agents. When a group splits, each rank with targets in the other half
 *     picks an agent there. The weight of agent b for rank a is the number
 *     of a's targets in that half that are b's out-neighbors, plus one when
 *     b is itself a target (the paper's "most common out-neighbors"; the
 *     +1 is ours: sending to a target is as good as to one who already
 *     sends there). Pairs are taken greedily by weight (ties: lower a, then
 *     lower b), each agent accepting at most one origin per step (the
 *     paper's rule); ranks left without one take the least-loaded rank of
 *     the other half, so every rank leaves the half in one message and
 *     off-socket messages per rank stay within ceil(log2(n/L)) + 1.
 *   - Transfer. Each rank sends its agent, in one message, every block with
 *     targets in the agent's half, and hands those targets over; the agent
 *     keeps a block it needs itself.
 *   - Final phase. Inside the last group, one message per target with
 *     every block it still needs (the paper's intra-socket phase).
 *
 * Memory is O(edges) per rank while the pattern is built; the result kept
 * for a rank is only its own steps. allgatherv: a relay must know the
 * sizes of blocks it only forwards, so each call first moves every rank's
 * size along the same pattern (the row's size_plan, run by the request)
 * and the data plan is built for those sizes. */
#ifndef NBR_HALVING_H
#define NBR_HALVING_H

#include "alg/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One message of the pattern: the blocks (by source rank, ascending). */
typedef struct nbr_halving_msg {
    int peer;
    int num_blocks;
    int *blocks;
} nbr_halving_msg_t;

typedef struct nbr_halving_step {
    nbr_halving_msg_t send; /* to the agent; peer -1 when none */
    int num_recv;
    nbr_halving_msg_t *recv; /* from origins, ascending peer */
} nbr_halving_step_t;

/* What one rank does: the same number of steps on every rank (idle steps
 * are empty), then the final phase. */
typedef struct nbr_halving_pattern {
    int rank;
    int num_steps;
    nbr_halving_step_t *steps;
    int num_final_send, num_final_recv;
    nbr_halving_msg_t *final_send; /* ascending peer */
    nbr_halving_msg_t *final_recv; /* ascending peer */
    int ranks_per_socket;          /* the L used */
} nbr_halving_pattern_t;

/* The whole job's patterns from the whole graph (CSR out-lists, n ranks).
 * socket_of may be NULL (one socket); L <= 0: the largest socket's size.
 * patterns[r] is filled for every r with want[r] != 0 (want NULL: all). */
int nbr_halving_build(int n, const int *out_offsets, const int *out_targets,
                      const int *socket_of, int L, const char *want,
                      nbr_halving_pattern_t *patterns);
void nbr_halving_pattern_free(nbr_halving_pattern_t *pattern);

#ifdef __cplusplus
}
#endif

#endif
