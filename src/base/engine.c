#include "base/engine.h"

#include "base/grow.h"
#include "base/log.h"

#include <nbrcoll.h>
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

/* A rank's vote at the end of a round, reduced with MPI_MIN over all. */
enum { VOTE_STATUS, VOTE_DONE, VOTE_NOT_DONE, VOTE_SIZE };

/* One NBX exchange (nbx-sparse-data-exchange.txt, Section 3.4): synchronous
 * sends complete only once matched, so when a rank's sends are all done it
 * joins a nonblocking barrier; when the barrier completes, every message of
 * the round has been received somewhere. The barrier is a nonblocking
 * allreduce of the ranks' votes, so each learns the round's outcome.
 *
 * A local failure never ends the exchange early: a rank that left would
 * leave peers' synchronous sends unmatched and the barrier short of one.
 * Failed calls are tried again (a receive, a probe, a test: at the next turn
 * of the loop). A failure before this rank voted goes into its vote; the
 * first one after is returned, for the next round's vote. */
static int nbx_exchange(MPI_Comm comm, int tag, const nbr_mailbox_t *outbox,
                        nbr_mailbox_t *inbox, int vote[VOTE_SIZE], int result[VOTE_SIZE])
{
    int after_vote = NBR_SUCCESS, barrier_done = 0, in_barrier = 0, barrier_tries = 0;
    MPI_Request *sends = calloc((size_t)outbox->count + 1, sizeof(MPI_Request));
    MPI_Request barrier = MPI_REQUEST_NULL;
#define NOTE(call)                                                                       \
    do {                                                                                 \
        int note_rc_ = (call);                                                           \
        int *first_ = in_barrier ? &after_vote : &vote[VOTE_STATUS];                     \
        if (*first_ == NBR_SUCCESS)                                                      \
            *first_ = note_rc_;                                                          \
    } while (0)
    if (!sends)
        NOTE(NBR_ERR_NOMEM); /* nothing sent: the vote tells every rank */
    for (int m = 0; sends && m < outbox->count; m++)
        NOTE(post_send(comm, tag, &outbox->messages[m], &sends[m]));
    while (!barrier_done) {
        int arrived = 0, mrc;
        MPI_Status probed;
        if ((mrc = MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &arrived, &probed)) != MPI_SUCCESS)
            NOTE(nbr_mpi_failed("MPI_Iprobe", mrc));
        else if (arrived)
            NOTE(receive(comm, tag, &probed, inbox));
        if (!in_barrier) {
            int sent = 1;
            if (sends && (mrc = PMPI_Testall(outbox->count, sends, &sent,
                                             MPI_STATUSES_IGNORE)) != MPI_SUCCESS) {
                NOTE(nbr_mpi_failed("MPI_Testall", mrc));
                sent = 0;
            }
            if (!sent)
                continue;
            /* a collective that fails, fails on every rank: all try again */
            mrc = MPI_Iallreduce(vote, result, VOTE_SIZE, MPI_INT, MPI_MIN, comm, &barrier);
            if (mrc == MPI_SUCCESS) {
                in_barrier = 1;
                continue;
            }
            NOTE(nbr_mpi_failed("MPI_Iallreduce", mrc));
            if (++barrier_tries == 2) { /* nothing left to try */
                memcpy(result, vote, VOTE_SIZE * sizeof(int));
                break;
            }
        } else if ((mrc = PMPI_Test(&barrier, &barrier_done, MPI_STATUS_IGNORE)) != MPI_SUCCESS) {
            NOTE(nbr_mpi_failed("MPI_Test", mrc));
            barrier_done = 0;
        }
    }
#undef NOTE
    /* Sort by sender; stable, so each sender's arrival (= posting) order stays.
     * Insertion sort: an inbox holds few messages. */
    for (int i = 1; i < inbox->count; i++) {
        nbr_message_t key = inbox->messages[i];
        int j = i - 1;
        while (j >= 0 && inbox->messages[j].peer > key.peer) {
            inbox->messages[j + 1] = inbox->messages[j];
            j--;
        }
        inbox->messages[j + 1] = key;
    }
    free(sends);
    return after_vote;
}

/* Every round ends with an exchange, the last one too (empty, since a step
 * that is done posts nothing): its vote makes the end and any rank's failure
 * known to all, so that every rank returns the same status. A failure met
 * after the last vote is one a retry mended (the last round moves no
 * messages): a warning. */
int nbr_engine_run_mpi(MPI_Comm comm, int tag_base, void *context,
                       nbr_round_fn step, int max_rounds)
{
    int rc = NBR_SUCCESS, carried = NBR_SUCCESS;
    nbr_mailbox_t inbox = {0}, outbox = {0};
    for (int round = 0; round < max_rounds; round++) {
        int done = 0;
        nbr_mailbox_clear(&outbox);
        int step_rc = carried != NBR_SUCCESS
                          ? carried
                          : step(context, round, &inbox, &outbox, &done);
        if (step_rc == NBR_SUCCESS && done && outbox.count > 0) {
            NBR_ERROR("engine: the step finished but posted messages");
            step_rc = NBR_ERR_INTERNAL;
        }
        if (step_rc != NBR_SUCCESS) {
            nbr_mailbox_clear(&outbox);
            done = 1; /* neutral in the vote: the status decides */
        }
        nbr_mailbox_clear(&inbox);
        int vote[VOTE_SIZE] = {step_rc, done, !done}, result[VOTE_SIZE];
        /* Two tags alternate: a fast rank's next-round message must not be
         * taken by a slow rank still probing in this round. */
        carried = nbx_exchange(comm, tag_base + (round & 1), &outbox, &inbox, vote, result);
        if ((rc = result[VOTE_STATUS]) != NBR_SUCCESS)
            goto out;
        if (!result[VOTE_DONE] && !result[VOTE_NOT_DONE]) {
            NBR_ERROR("engine: ranks finished in different rounds (round %d)", round);
            rc = NBR_ERR_INTERNAL;
            goto out;
        }
        if (result[VOTE_DONE]) {
            if (carried != NBR_SUCCESS)
                NBR_WARN("engine: the failure above came after the last vote and was retried");
            goto out;
        }
    }
    NBR_ERROR("engine: builder did not finish in %d rounds", max_rounds);
    rc = NBR_ERR_INTERNAL;
out:
    mailbox_release(&inbox);
    mailbox_release(&outbox);
    return rc;
}
