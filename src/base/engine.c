#include "base/engine.h"

#include "base/grow.h"
#include "base/log.h"

#include <nbrcoll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

int nbr_mailbox_post(nbr_mailbox_t *box, int peer, const void *data, size_t bytes)
{
    if (nbr_grow((void **)&box->messages, &box->capacity, box->count + 1, 8,
                 sizeof(nbr_message_t)) != NBR_SUCCESS)
        return NBR_ERR_NOMEM;
    void *copy = malloc(bytes ? bytes : 1);
    if (!copy)
        return NBR_ERR_NOMEM;
    if (bytes)
        memcpy(copy, data, bytes);
    box->messages[box->count++] = (nbr_message_t){peer, bytes, copy};
    return NBR_SUCCESS;
}

void nbr_mailbox_clear(nbr_mailbox_t *box)
{
    for (int i = 0; i < box->count; i++)
        free(box->messages[i].data);
    box->count = 0;
}

static void mailbox_release(nbr_mailbox_t *box)
{
    nbr_mailbox_clear(box);
    free(box->messages);
    memset(box, 0, sizeof(*box));
}

/* ------------------------------------------------------ in-process engine */

int nbr_engine_run_local(int nranks, void **contexts, nbr_round_fn step,
                         int max_rounds)
{
    int rc = NBR_SUCCESS;
    nbr_mailbox_t *inbox = calloc((size_t)nranks, sizeof(nbr_mailbox_t));
    nbr_mailbox_t *next = calloc((size_t)nranks, sizeof(nbr_mailbox_t));
    nbr_mailbox_t outbox = {0};
    if (!inbox || !next) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    for (int round = 0; round < max_rounds; round++) {
        int finished = 0;
        for (int r = 0; r < nranks; r++) {
            int done = 0;
            nbr_mailbox_clear(&outbox);
            NBR_CHECK(step(contexts[r], round, &inbox[r], &outbox, &done));
            if (done && outbox.count > 0) {
                NBR_ERROR("engine: rank %d finished but posted messages", r);
                rc = NBR_ERR_INTERNAL;
                goto out;
            }
            finished += done != 0;
            /* Senders are visited in rank order: inboxes come out sorted. */
            for (int m = 0; m < outbox.count; m++) {
                const nbr_message_t *msg = &outbox.messages[m];
                if (msg->peer < 0 || msg->peer >= nranks) {
                    NBR_ERROR("engine: rank %d posted to rank %d", r, msg->peer);
                    rc = NBR_ERR_INTERNAL;
                    goto out;
                }
                NBR_CHECK(nbr_mailbox_post(&next[msg->peer], r, msg->data, msg->bytes));
            }
        }
        if (finished == nranks)
            goto out;
        if (finished != 0) {
            NBR_ERROR("engine: %d of %d ranks finished in round %d", finished,
                      nranks, round);
            rc = NBR_ERR_INTERNAL;
            goto out;
        }
        for (int r = 0; r < nranks; r++) {
            nbr_mailbox_t swap = inbox[r];
            inbox[r] = next[r];
            next[r] = swap;
            nbr_mailbox_clear(&next[r]);
        }
    }
    NBR_ERROR("engine: no agreement after %d rounds", max_rounds);
    rc = NBR_ERR_INTERNAL;
out:
    for (int r = 0; inbox && next && r < nranks; r++) {
        mailbox_release(&inbox[r]);
        mailbox_release(&next[r]);
    }
    mailbox_release(&outbox);
    free(inbox);
    free(next);
    return rc;
}

/* ------------------------------------------------------------ MPI engine */

/* Sends one message of the round; a failed send is tried once more (the
 * receiver's step counts on it). */
static int post_send(MPI_Comm comm, int tag, const nbr_message_t *msg, MPI_Request *request)
{
    int mrc = MPI_SUCCESS;
    for (int attempt = 0; attempt < 2; attempt++) {
        *request = MPI_REQUEST_NULL;
        mrc = MPI_Issend(msg->data, (int)msg->bytes, MPI_BYTE, msg->peer, tag, comm, request);
        if (mrc == MPI_SUCCESS)
            break;
        nbr_mpi_failed("MPI_Issend", mrc);
    }
    *request = mrc == MPI_SUCCESS ? *request : MPI_REQUEST_NULL;
    return mrc == MPI_SUCCESS ? NBR_SUCCESS : NBR_ERR_MPI;
}

/* Receives the probed message into the inbox. A failed receive leaves the
 * message where it was: the next probe finds it again. */
static int receive(MPI_Comm comm, int tag, const MPI_Status *probed, nbr_mailbox_t *inbox)
{
    int bytes = 0, mrc = MPI_Get_count(probed, MPI_BYTE, &bytes);
    if (mrc != MPI_SUCCESS)
        return nbr_mpi_failed("MPI_Get_count", mrc);
    char *data = malloc(bytes ? (size_t)bytes : 1);
    if (!data || nbr_grow((void **)&inbox->messages, &inbox->capacity, inbox->count + 1, 8,
                          sizeof(nbr_message_t)) != NBR_SUCCESS) {
        /* still take it off the queue: its sender waits for the match */
        free(data);
        char none;
        MPI_Recv(&none, 0, MPI_BYTE, probed->MPI_SOURCE, tag, comm, MPI_STATUS_IGNORE);
        return NBR_ERR_NOMEM;
    }
    mrc = MPI_Recv(data, bytes, MPI_BYTE, probed->MPI_SOURCE, tag, comm, MPI_STATUS_IGNORE);
    if (mrc != MPI_SUCCESS) {
        free(data);
        return nbr_mpi_failed("MPI_Recv", mrc);
    }
    /* take ownership without a second copy */
    inbox->messages[inbox->count++] = (nbr_message_t){probed->MPI_SOURCE, (size_t)bytes, data};
    return NBR_SUCCESS;
}

/* A rank's vote at the end of a round, reduced with MIN over all. */
enum { VOTE_STATUS, VOTE_DONE, VOTE_NOT_DONE, VOTE_SIZE };

/* One NBX exchange (nbx-sparse-data-exchange.txt, Section 3.4): synchronous
 * sends complete only once matched, so when a rank's sends are all done it
 * joins a nonblocking barrier; when the barrier completes, every message of
 * the round has been received somewhere. The barrier is a reduce of the
 * ranks' votes, so each learns the round's outcome.
 *
 * A local failure never ends the exchange early: a rank that left would
 * leave peers' synchronous sends unmatched and the barrier short of one.
 * Failed calls are tried again (a receive, a probe, a test: at the next turn
 * of the loop). A failure before this rank voted goes into its vote; the
 * first one after is carried, for the next round's vote. */
static void note(nbr_engine_run_t *run, int rc)
{
    int *first = run->in_barrier ? &run->after_vote : &run->status;
    if (*first == NBR_SUCCESS)
        *first = rc;
}

/* Posts the round's messages (after its step ran). */
static void exchange_begin(nbr_engine_run_t *run)
{
    int tag = run->tag_base + (run->round & 1);
    run->in_barrier = 0;
    run->after_vote = NBR_SUCCESS;
    run->sends = calloc((size_t)run->outbox.count + 1, sizeof(MPI_Request));
    if (!run->sends)
        note(run, NBR_ERR_NOMEM); /* nothing sent: the vote tells every rank */
    for (int m = 0; run->sends && m < run->outbox.count; m++)
        note(run, post_send(run->comm, tag, &run->outbox.messages[m], &run->sends[m]));
}

/* One turn of the exchange; 1 once its barrier completed. */
static int exchange_advance(nbr_engine_run_t *run, int *moved)
{
    int tag = run->tag_base + (run->round & 1), arrived = 0, mrc;
    MPI_Status probed;
    if ((mrc = MPI_Iprobe(MPI_ANY_SOURCE, tag, run->comm, &arrived, &probed)) != MPI_SUCCESS)
        note(run, nbr_mpi_failed("MPI_Iprobe", mrc));
    else if (arrived) {
        note(run, receive(run->comm, tag, &probed, &run->inbox));
        *moved = 1;
    }
    if (!run->in_barrier) {
        int sent = 1;
        if (run->sends && (mrc = PMPI_Testall(run->outbox.count, run->sends, &sent,
                                              MPI_STATUSES_IGNORE)) != MPI_SUCCESS) {
            note(run, nbr_mpi_failed("MPI_Testall", mrc));
            sent = 0;
        }
        if (!sent)
            return 0;
        run->vote[VOTE_STATUS] = run->status;
        run->in_barrier = 1;
        *moved = 1;
        nbr_reduce_begin(&run->barrier, run->comm, run->tag_base + 2 + (run->round & 1),
                         run->vote, VOTE_SIZE, NULL, NBR_REDUCE_MIN, NULL);
    }
    int done = 0;
    *moved |= nbr_reduce_advance(&run->barrier, &done);
    if (!done)
        return 0;
    if (run->barrier.status != NBR_SUCCESS && run->vote[VOTE_STATUS] == NBR_SUCCESS)
        run->vote[VOTE_STATUS] = run->barrier.status; /* a vote lost: this rank cannot tell */
    /* Sort by sender; stable, so each sender's arrival (= posting) order stays.
     * Insertion sort: an inbox holds few messages. */
    nbr_mailbox_t *inbox = &run->inbox;
    for (int i = 1; i < inbox->count; i++) {
        nbr_message_t key = inbox->messages[i];
        int j = i - 1;
        while (j >= 0 && inbox->messages[j].peer > key.peer) {
            inbox->messages[j + 1] = inbox->messages[j];
            j--;
        }
        inbox->messages[j + 1] = key;
    }
    free(run->sends);
    run->sends = NULL;
    return 1;
}

/* Runs the round's step and starts its exchange. Every round ends with an
 * exchange, the last one too (empty, since a step that is done posts
 * nothing): its vote makes the end and any rank's failure known to all, so
 * that every rank returns the same status. */
static void round_begin(nbr_engine_run_t *run)
{
    int done = 0;
    nbr_mailbox_clear(&run->outbox);
    int step_rc = run->carried != NBR_SUCCESS
                      ? run->carried
                      : run->step(run->context, run->round, &run->inbox, &run->outbox, &done);
    if (step_rc == NBR_SUCCESS && done && run->outbox.count > 0) {
        NBR_ERROR("engine: the step finished but posted messages");
        step_rc = NBR_ERR_INTERNAL;
    }
    if (step_rc != NBR_SUCCESS) {
        nbr_mailbox_clear(&run->outbox);
        done = 1; /* neutral in the vote: the status decides */
    }
    nbr_mailbox_clear(&run->inbox);
    run->status = step_rc;
    run->vote[VOTE_DONE] = done;
    run->vote[VOTE_NOT_DONE] = !done;
    exchange_begin(run);
}

static void run_end(nbr_engine_run_t *run, int status)
{
    run->status = status;
    run->done = 1;
    mailbox_release(&run->inbox);
    mailbox_release(&run->outbox);
}

void nbr_engine_begin(nbr_engine_run_t *run, MPI_Comm comm, int tag_base, void *context,
                      nbr_round_fn step, int max_rounds)
{
    memset(run, 0, sizeof *run);
    run->comm = comm;
    run->tag_base = tag_base;
    run->context = context;
    run->step = step;
    run->max_rounds = max_rounds;
    round_begin(run);
}

int nbr_engine_advance(nbr_engine_run_t *run, int *done)
{
    int moved = 0;
    while (!run->done && exchange_advance(run, &moved)) {
        moved = 1;
        /* two tags alternate: a fast rank's next-round message must not be
         * taken by a slow rank still probing in this round */
        run->carried = run->after_vote;
        int agreed = (int)run->vote[VOTE_STATUS];
        if (agreed != NBR_SUCCESS) {
            run_end(run, agreed);
        } else if (!run->vote[VOTE_DONE] && !run->vote[VOTE_NOT_DONE]) {
            NBR_ERROR("engine: ranks finished in different rounds (round %d)", run->round);
            run_end(run, NBR_ERR_INTERNAL);
        } else if (run->vote[VOTE_DONE]) {
            /* a failure met after the last vote is one a retry mended (the
             * last round moves no messages): a warning */
            if (run->carried != NBR_SUCCESS)
                NBR_WARN("engine: the failure above came after the last vote and was retried");
            run_end(run, NBR_SUCCESS);
        } else if (++run->round >= run->max_rounds) {
            NBR_ERROR("engine: builder did not finish in %d rounds", run->max_rounds);
            run_end(run, NBR_ERR_INTERNAL);
        } else {
            round_begin(run);
        }
    }
    *done = run->done;
    return moved;
}

int nbr_engine_run_mpi(MPI_Comm comm, int tag_base, void *context,
                       nbr_round_fn step, int max_rounds)
{
    nbr_engine_run_t run;
    int done = 0;
    nbr_engine_begin(&run, comm, tag_base, context, step, max_rounds);
    for (;;) {
        int moved = nbr_engine_advance(&run, &done);
        if (done)
            return run.status;
        if (!moved)
            sched_yield(); /* ranks may share cores: let the peer run */
    }
}
