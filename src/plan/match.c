#include "plan/match.h"

#include <nbrcoll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One send or receive, seen from the channel it travels on. */
typedef struct endpoint {
    int src, dst, tag;
    int op;       /* global op index */
    size_t bytes; /* kept here: the zip then reads no op again */
} endpoint_t;

static int describe(char *message, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int describe(char *message, size_t size, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    if (message && size)
        vsnprintf(message, size, fmt, args);
    va_end(args);
    return NBR_ERR_INTERNAL;
}

int nbr_job_ops_index(nbr_job_ops_t *ops, const nbr_plan_t *plans, int nranks)
{
    memset(ops, 0, sizeof(*ops));
    ops->plans = plans;
    ops->nranks = nranks;
    int n = nranks;
    if (!(ops->base = calloc((size_t)n + 1, sizeof(int))))
        return NBR_ERR_NOMEM;
    long long total = 0;
    for (int r = 0; r < n; r++) {
        ops->base[r] = (int)total;
        total += ops->plans[r].num_ops;
        if (total > 0x7fffffff)
            return NBR_ERR_UNSUPPORTED; /* global op indices are ints */
    }
    ops->base[n] = ops->total = (int)total;
    size_t count = (size_t)total + 1;
    ops->owner = malloc(count * sizeof(int));
    ops->phase = malloc(count * sizeof(int));
    ops->partner = malloc(count * sizeof(int));
    if (!ops->owner || !ops->phase || !ops->partner)
        return NBR_ERR_NOMEM;
    for (int r = 0; r < n; r++) {
        const nbr_plan_t *plan = &ops->plans[r];
        for (int i = 0; i < plan->num_ops; i++) { /* ops no phase covers: the verifier says so */
            ops->owner[ops->base[r] + i] = r;
            ops->phase[ops->base[r] + i] = -1;
            ops->partner[ops->base[r] + i] = -1;
        }
        for (int p = 0; p < plan->num_phases; p++)
            for (int i = 0; i < plan->phases[p].num_ops; i++) {
                int g = ops->base[r] + plan->phases[p].first_op + i;
                if (g < ops->base[r] || g >= ops->base[r + 1])
                    continue; /* a phase past the ops: the verifier says so */
                ops->owner[g] = r;
                ops->phase[g] = p;
                ops->partner[g] = -1;
            }
    }
    return NBR_SUCCESS;
}

static int compare_endpoint(const void *a, const void *b)
{
    const endpoint_t *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    if (x->tag != y->tag)
        return x->tag < y->tag ? -1 : 1;
    return x->op < y->op ? -1 : (x->op > y->op);
}

static int same_channel(const endpoint_t *a, const endpoint_t *b)
{
    return a->src == b->src && a->dst == b->dst && a->tag == b->tag;
}

/* Stable counting sort of e[0..n) by key (src or dst, both ranks < nranks)
 * into out. */
static int sort_by_rank(const endpoint_t *e, endpoint_t *out, int n, int nranks, int by_src)
{
    int *start = calloc((size_t)nranks + 1, sizeof(int));
    if (!start)
        return NBR_ERR_NOMEM;
    for (int i = 0; i < n; i++)
        start[(by_src ? e[i].src : e[i].dst) + 1]++;
    for (int k = 0; k < nranks; k++)
        start[k + 1] += start[k];
    for (int i = 0; i < n; i++)
        out[start[by_src ? e[i].src : e[i].dst]++] = e[i];
    free(start);
    return NBR_SUCCESS;
}

/* e (in global op order) sorted by channel (src, dst, tag), then op, in
 * time linear in ops and ranks: a job of 8,192 ranks has millions of
 * endpoints, and the comparison sort was a third of nbr_sim's pricing.
 * Two counting passes give (src, dst, op); tags differ only between the
 * few messages of one pair, sorted where a pair has more than one. */
static int sort_endpoints(endpoint_t *e, endpoint_t *scratch, int n, int nranks)
{
    int rc = sort_by_rank(e, scratch, n, nranks, 0);
    if (rc == NBR_SUCCESS)
        rc = sort_by_rank(scratch, e, n, nranks, 1);
    for (int i = 0, end; rc == NBR_SUCCESS && i < n; i = end) {
        for (end = i + 1; end < n && e[end].src == e[i].src && e[end].dst == e[i].dst; end++)
            ;
        if (end - i > 1)
            qsort(e + i, (size_t)(end - i), sizeof(endpoint_t), compare_endpoint);
    }
    return rc;
}

/* Sorted by channel, then global index (= posting order on a rank, since
 * a rank's ops are numbered phase by phase), sends and receives zip up. */
int nbr_job_ops_pair(nbr_job_ops_t *ops, char *message, size_t size)
{
    int rc = NBR_SUCCESS;
    size_t cap = (size_t)ops->total + 1;
    endpoint_t *sends = malloc(cap * sizeof(endpoint_t));
    endpoint_t *recvs = malloc(cap * sizeof(endpoint_t));
    endpoint_t *scratch = malloc(cap * sizeof(endpoint_t));
    if (!sends || !recvs || !scratch) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    int ns = 0, nr = 0;
    for (int g = 0; g < ops->total; g++) {
        const nbr_op_t *op = nbr_job_op(ops, g);
        int r = ops->owner[g];
        if ((op->kind == NBR_OP_SEND || op->kind == NBR_OP_RECV) &&
            (op->peer < 0 || op->peer >= ops->nranks)) {
            rc = describe(message, size, "rank %d's op %d names peer %d, not a rank of %d", r,
                          g - ops->base[r], op->peer, ops->nranks);
            goto out;
        }
        if (op->kind == NBR_OP_SEND)
            sends[ns++] = (endpoint_t){r, op->peer, op->tag, g, op->bytes};
        else if (op->kind == NBR_OP_RECV)
            recvs[nr++] = (endpoint_t){op->peer, r, op->tag, g, op->bytes};
    }
    rc = sort_endpoints(sends, scratch, ns, ops->nranks);
    if (rc == NBR_SUCCESS)
        rc = sort_endpoints(recvs, scratch, nr, ops->nranks);
    if (rc != NBR_SUCCESS)
        goto out;
    int i = 0, j = 0;
    while (i < ns || j < nr) {
        int order = i == ns ? 1 : j == nr ? -1 : compare_endpoint(&sends[i], &recvs[j]);
        if (i < ns && j < nr && same_channel(&sends[i], &recvs[j]))
            order = 0;
        if (order < 0) {
            rc = describe(message, size, "send from rank %d to rank %d (tag %d) has no matching "
                                         "receive: it would hang",
                          sends[i].src, sends[i].dst, sends[i].tag);
            goto out;
        }
        if (order > 0) {
            rc = describe(message, size, "receive on rank %d from rank %d (tag %d) has no "
                                         "matching send: it would hang",
                          recvs[j].dst, recvs[j].src, recvs[j].tag);
            goto out;
        }
        if (sends[i].bytes != recvs[j].bytes) {
            rc = describe(message, size, "rank %d sends %zu bytes to rank %d (tag %d) which "
                                         "receives %zu",
                          sends[i].src, sends[i].bytes, sends[i].dst, sends[i].tag,
                          recvs[j].bytes);
            goto out;
        }
        ops->partner[sends[i].op] = recvs[j].op;
        ops->partner[recvs[j].op] = sends[i].op;
        i++;
        j++;
    }
out:
    free(sends);
    free(recvs);
    free(scratch);
    return rc;
}

int nbr_job_ops_match(nbr_job_ops_t *ops, const nbr_plan_t *plans, int nranks, char *message,
                      size_t message_size)
{
    int rc = nbr_job_ops_index(ops, plans, nranks);
    return rc == NBR_SUCCESS ? nbr_job_ops_pair(ops, message, message_size) : rc;
}

void nbr_job_ops_free(nbr_job_ops_t *ops)
{
    free(ops->base);
    free(ops->owner);
    free(ops->phase);
    free(ops->partner);
    memset(ops, 0, sizeof(*ops));
}
