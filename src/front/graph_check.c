#include "front/graph_check.h"

#include "base/log.h"

#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

typedef struct peer_count {
    int peer;
    int count;
} peer_count_t;

static int compare_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* list's distinct ranks, ascending, with how often each occurs; *n out */
static int count_peers(const int *list, int degree, peer_count_t **counts, int *n)
{
    int *sorted = malloc(((size_t)degree + 1) * sizeof(int));
    *counts = malloc(((size_t)degree + 1) * sizeof(peer_count_t));
    if (!sorted || !*counts) {
        free(sorted);
        free(*counts);
        *counts = NULL;
        return NBR_ERR_NOMEM;
    }
    if (degree > 0)
        memcpy(sorted, list, (size_t)degree * sizeof(int));
    qsort(sorted, (size_t)degree, sizeof(int), compare_int);
    *n = 0;
    for (int i = 0; i < degree; i++) {
        if (*n > 0 && (*counts)[*n - 1].peer == sorted[i])
            (*counts)[*n - 1].count++;
        else
            (*counts)[(*n)++] = (peer_count_t){sorted[i], 1};
    }
    free(sorted);
    return NBR_SUCCESS;
}

static int post_out_counts(const nbr_graph_check_t *c, nbr_mailbox_t *outbox)
{
    peer_count_t *outs = NULL;
    int n = 0, rc = count_peers(c->destinations, c->outdegree, &outs, &n);
    for (int i = 0; i < n && rc == NBR_SUCCESS; i++)
        rc = nbr_mailbox_post(outbox, outs[i].peer, &outs[i].count, sizeof(int));
    free(outs);
    return rc;
}

static void report(nbr_graph_check_t *c, int source, int listed_out, int listed_in)
{
    if (listed_out == listed_in)
        return;
    if (c->mismatches++ == 0 || nbr_log_enabled(NBR_LOG_DEBUG))
        NBR_ERROR("inconsistent graph: rank %d lists rank %d as an out-neighbor %d time%s, "
                  "rank %d lists rank %d as an in-neighbor %d time%s",
                  source, c->rank, listed_out, listed_out == 1 ? "" : "s", c->rank, source,
                  listed_in, listed_in == 1 ? "" : "s");
}

/* The inbox is sorted by sender, the in-list counts by peer: one merge. */
static int compare_in_counts(nbr_graph_check_t *c, const nbr_mailbox_t *inbox)
{
    peer_count_t *ins = NULL;
    int n = 0, rc = count_peers(c->sources, c->indegree, &ins, &n);
    if (rc != NBR_SUCCESS)
        return rc;
    int i = 0, m = 0;
    while (i < n || m < inbox->count) {
        const nbr_message_t *msg = m < inbox->count ? &inbox->messages[m] : NULL;
        int sent = 0;
        if (msg && msg->bytes != sizeof(int)) {
            NBR_ERROR("graph check: %zu bytes from rank %d", msg->bytes, msg->peer);
            rc = NBR_ERR_INTERNAL;
            break;
        }
        if (msg)
            memcpy(&sent, msg->data, sizeof(int));
        if (msg && (i == n || msg->peer < ins[i].peer)) { /* it lists us, we do not */
            report(c, msg->peer, sent, 0);
            m++;
        } else if (!msg || ins[i].peer < msg->peer) { /* we list it, it does not */
            report(c, ins[i].peer, 0, ins[i].count);
            i++;
        } else {
            report(c, msg->peer, sent, ins[i].count);
            i++;
            m++;
        }
    }
    if (c->mismatches > 1 && !nbr_log_enabled(NBR_LOG_DEBUG))
        NBR_ERROR("inconsistent graph: %d more pairs into rank %d disagree (NBR_LOG=debug "
                  "lists them)", c->mismatches - 1, c->rank);
    free(ins);
    return rc;
}

int nbr_graph_check_step(void *context, int round, const nbr_mailbox_t *inbox,
                         nbr_mailbox_t *outbox, int *done)
{
    nbr_graph_check_t *c = context;
    if (round == 0) {
        *done = 0;
        return post_out_counts(c, outbox);
    }
    *done = 1;
    return compare_in_counts(c, inbox);
}
