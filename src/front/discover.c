#include "front/discover.h"

#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

enum { CLAIM_OUT = 0, CLAIM_IN = 1 };

/* What the owner of one edge end learns: plain ints, sent as bytes. */
typedef struct claim {
    int kind;   /* CLAIM_OUT: owner is the source; CLAIM_IN: the destination */
    int owner;  /* rank the claim is sent to */
    int peer;   /* the other end */
    int weight;
    int namer;  /* rank that named the edge */
    int index;  /* position in the namer's list */
} claim_t;

static int compare_owner(const void *a, const void *b)
{
    const claim_t *x = a, *y = b;
    if (x->owner != y->owner)
        return x->owner < y->owner ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

static int compare_pairing_key(const void *a, const void *b)
{
    const claim_t *x = a, *y = b;
    if (x->peer != y->peer)
        return x->peer < y->peer ? -1 : 1;
    if (x->namer != y->namer)
        return x->namer < y->namer ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

static int post_claims(nbr_discover_t *d, nbr_mailbox_t *outbox)
{
    size_t n = 2 * (size_t)d->num_named;
    claim_t *claims = malloc((n + 1) * sizeof(claim_t));
    if (!claims)
        return NBR_ERR_NOMEM;
    for (int e = 0; e < d->num_named; e++) {
        int w = d->named_weight ? d->named_weight[e] : 1;
        claims[2 * e] = (claim_t){CLAIM_OUT, d->named_src[e], d->named_dst[e], w, d->rank, e};
        claims[2 * e + 1] = (claim_t){CLAIM_IN, d->named_dst[e], d->named_src[e], w, d->rank, e};
    }
    qsort(claims, n, sizeof(claim_t), compare_owner);
    int rc = NBR_SUCCESS;
    for (size_t first = 0; first < n && rc == NBR_SUCCESS;) {
        size_t last = first;
        while (last < n && claims[last].owner == claims[first].owner)
            last++;
        rc = nbr_mailbox_post(outbox, claims[first].owner, &claims[first],
                              (last - first) * sizeof(claim_t));
        first = last;
    }
    free(claims);
    return rc;
}

static int collect_claims(nbr_discover_t *d, const nbr_mailbox_t *inbox)
{
    size_t total = 0;
    for (int m = 0; m < inbox->count; m++)
        total += inbox->messages[m].bytes / sizeof(claim_t);
    claim_t *all = malloc((total + 1) * sizeof(claim_t));
    if (!all)
        return NBR_ERR_NOMEM;
    size_t n = 0;
    for (int m = 0; m < inbox->count; m++) {
        memcpy(all + n, inbox->messages[m].data, inbox->messages[m].bytes);
        n += inbox->messages[m].bytes / sizeof(claim_t);
    }
    qsort(all, n, sizeof(claim_t), compare_pairing_key);
    size_t outs = 0, ins = 0;
    for (size_t i = 0; i < n; i++)
        all[i].kind == CLAIM_OUT ? outs++ : ins++;
    d->destinations = malloc((outs + 1) * sizeof(int));
    d->destweights = malloc((outs + 1) * sizeof(int));
    d->sources = malloc((ins + 1) * sizeof(int));
    d->sourceweights = malloc((ins + 1) * sizeof(int));
    if (!d->destinations || !d->destweights || !d->sources || !d->sourceweights) {
        free(all);
        return NBR_ERR_NOMEM;
    }
    d->outdegree = d->indegree = 0;
    for (size_t i = 0; i < n; i++) {
        if (all[i].kind == CLAIM_OUT) {
            d->destinations[d->outdegree] = all[i].peer;
            d->destweights[d->outdegree++] = all[i].weight;
        } else {
            d->sources[d->indegree] = all[i].peer;
            d->sourceweights[d->indegree++] = all[i].weight;
        }
    }
    free(all);
    return NBR_SUCCESS;
}

int nbr_discover_step(void *context, int round, const nbr_mailbox_t *inbox,
                      nbr_mailbox_t *outbox, int *done)
{
    nbr_discover_t *d = context;
    if (round == 0) {
        *done = 0;
        return post_claims(d, outbox);
    }
    *done = 1;
    return collect_claims(d, inbox);
}

void nbr_discover_free(nbr_discover_t *discover)
{
    free(discover->sources);
    free(discover->sourceweights);
    free(discover->destinations);
    free(discover->destweights);
    discover->sources = discover->sourceweights = NULL;
    discover->destinations = discover->destweights = NULL;
}
