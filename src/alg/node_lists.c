#include "alg/node_lists.h"

#include "base/grow.h"

#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

static int keep(nbr_node_lists_t *c, int rank, const int *list, int degree)
{
    if (!(c->lists[rank] = nbr_ints_dup(list, degree)))
        return NBR_ERR_NOMEM;
    c->degrees[rank] = degree;
    return NBR_SUCCESS;
}

int nbr_node_lists_step(void *context, int round, const nbr_mailbox_t *inbox,
                        nbr_mailbox_t *outbox, int *done)
{
    nbr_node_lists_t *c = context;
    int rc = NBR_SUCCESS;
    if (round == 0) {
        *done = 0;
        c->lists = calloc((size_t)c->nranks, sizeof(int *));
        c->degrees = calloc((size_t)c->nranks, sizeof(int));
        if (!c->lists || !c->degrees)
            return NBR_ERR_NOMEM;
        rc = keep(c, c->rank, c->my_in, c->my_indegree);
        for (int r = 0; r < c->nranks && rc == NBR_SUCCESS; r++)
            if (r != c->rank && c->node_of[r] == c->node_of[c->rank])
                rc = nbr_mailbox_post(outbox, r, c->my_in,
                                      (size_t)c->my_indegree * sizeof(int));
        return rc;
    }
    *done = 1;
    for (int m = 0; m < inbox->count && rc == NBR_SUCCESS; m++)
        rc = keep(c, inbox->messages[m].peer, inbox->messages[m].data,
                  (int)(inbox->messages[m].bytes / sizeof(int)));
    return rc;
}

void nbr_node_lists_free(nbr_node_lists_t *c)
{
    for (int r = 0; c->lists && r < c->nranks; r++)
        free(c->lists[r]);
    free(c->lists);
    free(c->degrees);
    c->lists = NULL;
    c->degrees = NULL;
}
