/* Rounds engine for plan builders.
 *
 * A builder that needs facts held by other ranks is written as a step
 * function called once per round: it reads the messages other ranks posted
 * to it in the previous round (inbox, ordered by sender rank, then by posting
 * order) and posts messages for the next round (outbox). It sets *done when
 * it has finished; every rank must finish in the same round (the in-process
 * engine checks this, the MPI engine relies on it).
 *
 * The same step function runs under two engines:
 *   nbr_engine_run_mpi:   one rank per process; each round's messages go
 *                         out with the NBX sparse exchange (Issend, then a
 *                         nonblocking barrier once all sends matched), so
 *                         receivers need not know who writes to them; the
 *                         barrier is a reduce (base/reduce.h) of each rank's
 *                         status and whether it is done, so a failure on any
 *                         rank ends the run on all with the same status (no
 *                         rank is left waiting); a run can also be advanced
 *                         step by step (nbr_engine_begin / _advance) from
 *                         inside an operation in flight;
 *   nbr_engine_run_local: N virtual ranks in one process, for unit tests and
 *                         the verifier. */
#ifndef NBR_ENGINE_H
#define NBR_ENGINE_H

#include "base/reduce.h"

#include <mpi.h>
#include <stddef.h>

typedef struct nbr_message {
    int peer; /* destination in an outbox, sender in an inbox */
    size_t bytes;
    void *data;
} nbr_message_t;

typedef struct nbr_mailbox {
    int count;
    int capacity;
    nbr_message_t *messages;
} nbr_mailbox_t;

/* Copies data into the mailbox. */
int nbr_mailbox_post(nbr_mailbox_t *box, int peer, const void *data, size_t bytes);
void nbr_mailbox_clear(nbr_mailbox_t *box);

typedef int (*nbr_round_fn)(void *context, int round,
                            const nbr_mailbox_t *inbox, nbr_mailbox_t *outbox,
                            int *done);

/* Runs step on every context (contexts[r] is virtual rank r) until all are
 * done; fails with NBR_ERR_INTERNAL if ranks disagree on the last round or
 * max_rounds pass. */
int nbr_engine_run_local(int nranks, void **contexts, nbr_round_fn step,
                         int max_rounds);

/* Tags a run uses on its communicator: [tag_base, tag_base + 4). */
#define NBR_ENGINE_TAGS 4

/* A run of step on comm in progress (nbr_engine_begin .. _advance). */
typedef struct nbr_engine_run {
    MPI_Comm comm;
    int tag_base;
    void *context;
    nbr_round_fn step;
    int max_rounds;
    int round;
    int status;  /* the run's, once done */
    int done;
    int carried; /* a failure after the last vote, for the next round's */
    nbr_mailbox_t inbox, outbox;
    /* the round's exchange */
    MPI_Request *sends;
    int in_barrier;
    int after_vote;
    int64_t vote[3];
    nbr_reduce_t barrier;
} nbr_engine_run_t;

/* Starts running step for this process on comm (collective: every rank
 * runs it and every rank ends with the same status); callers pass a
 * communicator private to the library and NBR_ENGINE_TAGS tags of it that
 * nothing else in flight uses. */
void nbr_engine_begin(nbr_engine_run_t *run, MPI_Comm comm, int tag_base, void *context,
                      nbr_round_fn step, int max_rounds);
/* Moves the run on without waiting; *done = 1 when it ended, its status in
 * run->status (its memory is then released). Returns whether anything moved. */
int nbr_engine_advance(nbr_engine_run_t *run, int *done);

/* begin, then advance to the end: the run's status. */
int nbr_engine_run_mpi(MPI_Comm comm, int tag_base, void *context,
                       nbr_round_fn step, int max_rounds);

#endif
