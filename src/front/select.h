/* What a call runs, decided on facts every rank of the communicator
 * shares (select.c; docs/selection.md).
 *
 * A communicator's calls of one collective in one form are a stream
 * (front/comm.h). Its first call, and its calls number 4, 16, 64, 256 and
 * every 256th after (and the next one after nbr_comm_retune), are
 * decision points: every rank knows which calls they are without asking
 * another. At a decision point every rank contributes its sizes to one
 * reduce; where any rank's changed since the last decision (or there was
 * none), auto prices every candidate on every rank (a call facts exchange
 * first for those that need one), a second reduce makes the prices the
 * job's, and every rank takes the same cheapest; a configured algorithm
 * needs only the first reduce, for the block size its relays assume.
 * Between decision points a call runs the stream's decision as it stands,
 * whatever this rank's sizes: relays over the agreed block size check it
 * with a guard (exec/executor.h) and fall back to naive where a rank
 * differs; a blocking stream then takes the sizes the guard learnt for its
 * next call (blocking calls follow each other on every rank). Both reduces are tagged point-to-point (base/reduce.h), so a
 * nonblocking call at a decision point waits for them in flight, not in
 * its start.
 *
 * The trial: a price is an estimate, so a blocking stream's decision is
 * checked on its next calls: the priced winner and its rivals (the
 * baseline when another plan won; the other plans priced within 2x of the
 * winner) run in turns, each call timed by the caller, the first round
 * not counted (it pays for each plan's first run), then nbr_auto_trials
 * counted rounds, or more for cheap calls (as many as fit in 100 ms per
 * side, at most 100, alg/select.h); the side whose middle half of calls
 * (each call's time: its slowest rank's) was fastest on average is kept
 * from then on, but a plan of nbrcoll's own must beat the baseline by 3 %;
 * when the kept one is not the priced winner, a second trial (the winner,
 * that one, the others that beat the winner within 10 % of the fastest,
 * and the baseline) decides. No trial when the winner is priced above
 * 200 ms a call (select.c says why). */
#ifndef NBR_FRONT_SELECT_H
#define NBR_FRONT_SELECT_H

#include "base/reduce.h"
#include "front/comm.h"
#include "plan/sim.h"

/* What a call's price depends on besides its layout. */
typedef struct nbr_priced_call {
    nbr_call_kind_t kind;
    /* allgather, alltoall: the blocks' bytes from the call's counts and
     * types, sent and received (a rank without neighbors has no slot
     * that says them) */
    size_t send_block_bytes, recv_block_bytes;
    const nbr_value_index_t *values; /* an _ext call's value indices, or NULL */
    int device_buffers;              /* its buffers are on GPUs */
    int expected_starts; /* runs its set-up is spread over (nbr_expected_starts) */
} nbr_priced_call_t;

/* The stream of a call of kind (blocking or not). */
static inline nbr_stream_t *nbr_comm_stream(nbr_comm_t *state, nbr_call_kind_t kind, int blocking)
{
    return &state->streams[kind][blocking != 0];
}

/* Whether call number n of stream (of blocking calls or not) is a
 * decision point (shared facts only: n, whether the stream has a decision
 * and when it asked for the next). */
int nbr_stream_due(const nbr_comm_t *state, const nbr_stream_t *stream, nbr_call_kind_t kind,
                   int blocking, unsigned long long n);

/* What the next call of stream runs between decision points: the
 * configured algorithm, the stream's decision, or for a blocking call
 * under trial the trial's side (*trial set: time the call and report it
 * with nbr_comm_trial_record). */
const nbr_algorithm_t *nbr_stream_algorithm(const nbr_comm_t *state, nbr_stream_t *stream,
                                            nbr_call_kind_t kind, int blocking,
                                            nbr_decision_t **trial);

/* What calls of kind (blocking or not; a persistent request's count as
 * nonblocking) run without deciding: the configured algorithm; the baseline, under auto
 * where some rank has no neighbor at all (a rank may then skip its calls,
 * as PETSc does, so no reduce may need every rank, and only a plan of one
 * message per edge leaves such ranks out); for nonblocking calls where
 * some rank's MPI runs no progress hook of nbrcoll's, the baseline under
 * auto and naive's messages in place of a configured plan that relays (a
 * rank blocked in another MPI call would hold up its peers' relays and
 * the decisions' reduces, which MPI's progress rule does not allow);
 * NULL: auto decides. */
const nbr_algorithm_t *nbr_standing_algorithm(const nbr_comm_t *state, nbr_call_kind_t kind,
                                              int blocking);
/* The same where configured is the algorithm (NULL: auto): a persistent
 * request's, which its info may name (calls nonblocking). */
const nbr_algorithm_t *nbr_standing_of(const nbr_comm_t *state, const nbr_algorithm_t *configured,
                                        nbr_call_kind_t kind, int blocking);

/* A decision under way. */
typedef struct nbr_deciding {
    nbr_comm_t *state;
    nbr_stream_t *stream; /* NULL: a persistent request's, kept nowhere */
    unsigned long long call_number; /* in the stream */
    nbr_priced_call_t call;
    const nbr_layout_t *layout; /* the call's, alive until the decision ends */
    int tag_base;
    int stage;
    uint64_t signature;
    int64_t sizes[6]; /* status, unchanged, send bytes and its negation, receive ... */
    nbr_reduce_t reduce;
    /* repricing */
    int count, fallback, facts_next;
    const nbr_algorithm_t *candidates[NBR_MAX_ALGORITHMS];
    void *facts[NBR_MAX_ALGORITHMS];
    uint64_t digests[NBR_MAX_ALGORITHMS];
    int facts_rc[NBR_MAX_ALGORITHMS];
    nbr_facts_run_t facts_run;
    int facts_run_of;          /* the candidate whose exchange runs */
    double facts_run_started;
    double facts_seconds[NBR_MAX_ALGORITHMS];
    int64_t *prices;   /* [candidate], then [candidate][node][out, in] bytes */
    uint8_t *ops;
    int64_t *scratch;
    int status; /* this rank's, before the price reduce */
    /* the outcome */
    const nbr_algorithm_t *algorithm;
    int fresh; /* priced anew (else the stream's decision as it was, or the configured one) */
    size_t uniform_bytes;
    void *chosen_facts; /* the chosen one's call facts, if it has them: the caller's */
    uint64_t chosen_digest;
    int chosen_facts_rc;
} nbr_deciding_t;

/* Starts deciding a call of stream (NULL: a persistent request's _init)
 * on layout, on the decision's tags of the call's window (tag_base). */
void nbr_decide_begin(nbr_deciding_t *d, nbr_comm_t *state, nbr_stream_t *stream,
                      unsigned long long call_number, const nbr_priced_call_t *call,
                      const nbr_layout_t *layout, int tag_base);
/* Moves it on without waiting; *done = 1 once decided: returns the status
 * (the same on every rank), the outcome in d. The stream's decision is
 * updated then. Returns whether anything moved until then. */
int nbr_decide_advance(nbr_deciding_t *d, int *done, int *moved);
/* begin + advance to the end: the status. */
int nbr_decide(nbr_deciding_t *d, nbr_comm_t *state, nbr_stream_t *stream,
               unsigned long long call_number, const nbr_priced_call_t *call,
               const nbr_layout_t *layout, int tag_base);
/* What it holds (the chosen facts stay the caller's once taken). */
void nbr_decide_free(nbr_deciding_t *d);

/* Whether algorithm, for an allgather, relays blocks of other ranks (so
 * that its plan depends on every rank's block size). */
int nbr_relays_allgather(const nbr_algorithm_t *algorithm, nbr_call_kind_t kind);

/* The index in trial->sides of the side its next call runs: round k of
 * the trial starts at its k-th side. */
int nbr_trial_side(const nbr_decision_t *trial);

/* A timed trial call: seconds from start to completion (INFINITY when it
 * failed on this rank); the trial's last one agrees on the outcome. */
int nbr_comm_trial_record(nbr_comm_t *state, nbr_decision_t *trial, double seconds);

/* The parts of a decision, blocking, for tests: the candidates (the same
 * on every rank) and this rank's price of each in parts (seconds INFINITY:
 * it cannot plan it), with the index of the fallback (the baseline);
 * collective in the call facts exchanges of the candidates that have
 * them, on tag_base's window. Then the job's price of each from every
 * rank's parts (collective): the slowest rank's seconds or the busiest
 * node's interfaces, whichever is longer; slowest (if not NULL): the
 * slowest rank's seconds alone. */
int nbr_select_local_prices(nbr_comm_t *state, const nbr_layout_t *layout,
                            const nbr_priced_call_t *call, int tag_base,
                            const nbr_algorithm_t **candidates, nbr_sim_parts_t *prices,
                            int *count, int *fallback);
int nbr_select_job_prices(nbr_comm_t *state, const nbr_sim_parts_t *mine, int n, int tag_base,
                          double *job, double *slowest);

#endif
