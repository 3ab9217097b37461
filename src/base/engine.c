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

/* One NBX exchange (nbx-sparse-data-exchange.txt, Section 3.4): synchronous
 * sends complete only once matched, so when a rank's sends are all done it
 * joins a nonblocking barrier; when the barrier completes, every message of
 * the round has been received somewhere. */
static int nbx_exchange(MPI_Comm comm, int tag, const nbr_mailbox_t *outbox,
                        nbr_mailbox_t *inbox)
{
    int rc = NBR_SUCCESS;
    MPI_Request *sends = calloc((size_t)outbox->count + 1, sizeof(MPI_Request));
    MPI_Request barrier = MPI_REQUEST_NULL;
    if (!sends)
        return NBR_ERR_NOMEM;
    for (int m = 0; m < outbox->count; m++) {
        const nbr_message_t *msg = &outbox->messages[m];
        NBR_MPI_CHECK(MPI_Issend(msg->data, (int)msg->bytes, MPI_BYTE, msg->peer,
                                 tag, comm, &sends[m]));
    }
    int barrier_done = 0, in_barrier = 0;
    while (!barrier_done) {
        int arrived = 0;
        MPI_Status status;
        NBR_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &arrived, &status));
        if (arrived) {
            int bytes = 0;
            NBR_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &bytes));
            char *data = malloc(bytes ? (size_t)bytes : 1);
            if (!data) {
                rc = NBR_ERR_NOMEM;
                goto out;
            }
            int mrc = MPI_Recv(data, bytes, MPI_BYTE, status.MPI_SOURCE, tag, comm,
                               MPI_STATUS_IGNORE);
            if (mrc != MPI_SUCCESS) {
                free(data);
                rc = nbr_mpi_failed("MPI_Recv", mrc);
                goto out;
            }
            /* take ownership without a second copy */
            if (nbr_grow((void **)&inbox->messages, &inbox->capacity, inbox->count + 1, 8,
                         sizeof(nbr_message_t)) != NBR_SUCCESS) {
                free(data);
                rc = NBR_ERR_NOMEM;
                goto out;
            }
            inbox->messages[inbox->count++] =
                (nbr_message_t){status.MPI_SOURCE, (size_t)bytes, data};
        }
        if (!in_barrier) {
            int sent = 0;
            NBR_MPI_CHECK(PMPI_Testall(outbox->count, sends, &sent, MPI_STATUSES_IGNORE));
            if (sent) {
                NBR_MPI_CHECK(MPI_Ibarrier(comm, &barrier));
                in_barrier = 1;
            }
        } else {
            NBR_MPI_CHECK(PMPI_Test(&barrier, &barrier_done, MPI_STATUS_IGNORE));
        }
    }
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
out:
    free(sends);
    return rc;
}

int nbr_engine_run_mpi(MPI_Comm comm, int tag_base, void *context,
                       nbr_round_fn step, int max_rounds)
{
    int rc = NBR_SUCCESS;
    nbr_mailbox_t inbox = {0}, outbox = {0};
    for (int round = 0; round < max_rounds; round++) {
        int done = 0;
        nbr_mailbox_clear(&outbox);
        NBR_CHECK(step(context, round, &inbox, &outbox, &done));
        if (done)
            goto out;
        nbr_mailbox_clear(&inbox);
        /* Two tags alternate: a fast rank's next-round message must not be
         * taken by a slow rank still probing in this round. */
        NBR_CHECK(nbx_exchange(comm, tag_base + (round & 1), &outbox, &inbox));
    }
    NBR_ERROR("engine: builder did not finish in %d rounds", max_rounds);
    rc = NBR_ERR_INTERNAL;
out:
    mailbox_release(&inbox);
    mailbox_release(&outbox);
    return rc;
}
