/* Common-neighbor message combining: the pattern (combining.h) and the
 * allgather plan. */
#include "alg/combining.h"

#include "alg/builder.h"
#include "base/grow.h"
#include "base/log.h"
#include "base/settings.h"

#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t word_t;
#define WORD_BITS 64

static int shared(const word_t *a, const word_t *b, int words)
{
    int c = 0;
    for (int w = 0; w < words; w++)
        if (a[w] & b[w])
            c += __builtin_popcountll(a[w] & b[w]);
    return c;
}

static int add_pair(nbr_combining_pattern_t *pat, int friend_rank, const int *on, int num_on,
                    int friend_serves)
{
    int rc = nbr_grow_exact((void **)&pat->pairs, pat->num_pairs, sizeof(nbr_combining_pair_t));
    if (rc != NBR_SUCCESS)
        return rc;
    nbr_combining_pair_t *x = &pat->pairs[pat->num_pairs++];
    x->friend_rank = friend_rank;
    x->num_on = num_on;
    x->friend_serves = friend_serves;
    x->on = nbr_ints_dup(on, num_on);
    return x->on ? NBR_SUCCESS : NBR_ERR_NOMEM;
}

static int add_in(nbr_combining_pattern_t *pat, int sender, int a, int b)
{
    int rc = nbr_grow_exact((void **)&pat->in, pat->num_in, sizeof(nbr_combining_in_t));
    if (rc == NBR_SUCCESS)
        pat->in[pat->num_in++] = (nbr_combining_in_t){sender, {a, b}};
    return rc;
}

static int cmp_in(const void *x, const void *y)
{
    return ((const nbr_combining_in_t *)x)->sender - ((const nbr_combining_in_t *)y)->sender;
}

/* One round: pair friends greedily, split and retire their common
 * neighbors. Returns the number of pairs made (0: no friends left). */
static int pair_round(int n, int words, word_t *active, int theta, const char *want,
                      nbr_combining_pattern_t *patterns, int *common, int *made)
{
    int rc = NBR_SUCCESS, num = 0, capacity = 0;
    nbr_weighted_pair_t *cands = NULL;
    char *paired = calloc((size_t)n + 1, 1);
    *made = 0;
    if (!paired)
        return NBR_ERR_NOMEM;
    for (int p = 0; p < n; p++)
        for (int q = p + 1; q < n; q++) {
            int w = shared(active + (size_t)p * words, active + (size_t)q * words, words);
            if (w < theta)
                continue;
            NBR_CHECK(nbr_grow((void **)&cands, &capacity, num + 1, 64, sizeof(nbr_weighted_pair_t)));
            cands[num++] = (nbr_weighted_pair_t){w, p, q};
        }
    nbr_sort_weighted_pairs(cands, num);
    for (int i = 0; i < num; i++) {
        int p = cands[i].a, q = cands[i].b;
        if (paired[p] || paired[q])
            continue;
        paired[p] = paired[q] = 1;
        word_t *ap = active + (size_t)p * words, *aq = active + (size_t)q * words;
        int k = 0;
        for (int w = 0; w < words; w++) {
            word_t both = ap[w] & aq[w];
            ap[w] &= ~both;
            aq[w] &= ~both;
            for (; both; both &= both - 1)
                common[k++] = w * WORD_BITS + __builtin_ctzll(both);
        }
        /* ascending by construction; the lower rank takes the first half */
        int first = (k + 1) / 2;
        if (!want || want[p])
            NBR_CHECK(add_pair(&patterns[p], q, common, first, k - first > 0));
        if (!want || want[q])
            NBR_CHECK(add_pair(&patterns[q], p, common + first, k - first, first > 0));
        for (int j = 0; j < k; j++) {
            int t = common[j], sender = j < first ? p : q;
            if (!want || want[t])
                NBR_CHECK(add_in(&patterns[t], sender, p < q ? p : q, p < q ? q : p));
        }
        (*made)++;
    }
out:
    free(cands);
    free(paired);
    return rc;
}

int nbr_combining_build(int n, const int *out_offsets, const int *out_targets, int theta,
                        const char *want, nbr_combining_pattern_t *patterns)
{
    int rc = NBR_SUCCESS, words = (n + WORD_BITS - 1) / WORD_BITS;
    word_t *active = calloc((size_t)n * (size_t)words + 1, sizeof(word_t));
    int *common = malloc(((size_t)n + 1) * sizeof(int));
    if (!active || !common) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    for (int r = 0; r < n; r++) {
        if (!want || want[r]) {
            memset(&patterns[r], 0, sizeof(patterns[r]));
            patterns[r].rank = r;
        }
        for (int e = out_offsets[r]; e < out_offsets[r + 1]; e++)
            if (out_targets[e] != r) /* self-loops are local copies */
                active[(size_t)r * words + out_targets[e] / WORD_BITS] |=
                    (word_t)1 << (out_targets[e] % WORD_BITS);
    }
    for (int made = 1; made > 0;)
        NBR_CHECK(pair_round(n, words, active, theta < 1 ? 1 : theta, want, patterns, common,
                             &made));
    for (int p = 0; p < n; p++) {
        const word_t *ap = active + (size_t)p * words;
        int k = 0;
        for (int w = 0; w < words; w++)
            for (word_t bits = ap[w]; bits; bits &= bits - 1)
                common[k++] = w * WORD_BITS + __builtin_ctzll(bits);
        if (!want || want[p]) {
            if (!(patterns[p].direct = nbr_ints_dup(common, k))) {
                rc = NBR_ERR_NOMEM;
                goto out;
            }
            patterns[p].num_direct = k;
        }
        for (int j = 0; j < k; j++)
            if (!want || want[common[j]])
                NBR_CHECK(add_in(&patterns[common[j]], p, p, -1));
    }
    for (int r = 0; r < n; r++)
        if (!want || want[r])
            qsort(patterns[r].in, (size_t)patterns[r].num_in, sizeof(nbr_combining_in_t), cmp_in);
out:
    free(active);
    free(common);
    if (rc != NBR_SUCCESS)
        for (int r = 0; r < n; r++)
            if (!want || want[r])
                nbr_combining_pattern_free(&patterns[r]);
    return rc;
}

void nbr_combining_pattern_free(nbr_combining_pattern_t *pattern)
{
    if (!pattern)
        return;
    for (int i = 0; i < pattern->num_pairs; i++)
        free(pattern->pairs[i].on);
    free(pattern->pairs);
    free(pattern->direct);
    free(pattern->in);
    memset(pattern, 0, sizeof(*pattern));
}

/* ------------------------------------------------------------ the plan */

enum { TAG_EXCHANGE = 0, TAG_COMBINED = 1 };

/* Copies block src, received at scratch offset at, into every slot of it. */
static int deliver(const nbr_plan_input_t *in, nbr_plan_t *plan, int src, size_t at, size_t m)
{
    int rc = NBR_SUCCESS;
    for (int i = 0; i < in->indegree && rc == NBR_SUCCESS; i++)
        if (in->sources[i] == src)
            rc = nbr_plan_add_copy(plan, NBR_BUF_RECV, in->layout->recv[i].offset,
                                   NBR_BUF_SCRATCH, at, m);
    return rc;
}

static int build_plan(const nbr_plan_input_t *in, const nbr_combining_pattern_t *pat,
                      nbr_plan_t *plan)
{
    int rc = NBR_SUCCESS, me = in->rank;
    size_t m = in->layout->send[0].bytes, own = in->layout->send[0].offset;
    size_t *outbox = malloc(((size_t)pat->num_pairs + 1) * sizeof(size_t));
    size_t *inbox = malloc(((size_t)pat->num_in + 1) * sizeof(size_t));
    if (!outbox || !inbox) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    /* 1: friends swap blocks; both land side by side, lower rank first */
    NBR_CHECK(nbr_plan_begin_phase(plan));
    NBR_CHECK(nbr_add_self_copies(in, plan));
    for (int i = 0; i < pat->num_pairs; i++) {
        const nbr_combining_pair_t *x = &pat->pairs[i];
        if (x->num_on > 0) {
            outbox[i] = plan->scratch_bytes;
            plan->scratch_bytes += 2 * m;
            size_t mine = outbox[i] + (me < x->friend_rank ? 0 : m);
            size_t theirs = outbox[i] + (me < x->friend_rank ? m : 0);
            NBR_CHECK(nbr_plan_add_copy(plan, NBR_BUF_SCRATCH, mine, NBR_BUF_SEND, own, m));
            NBR_CHECK(nbr_plan_add_recv(plan, x->friend_rank, TAG_EXCHANGE, NBR_BUF_SCRATCH,
                                        theirs, m));
        }
        if (x->friend_serves)
            NBR_CHECK(nbr_plan_add_send(plan, x->friend_rank, TAG_EXCHANGE, NBR_BUF_SEND, own, m));
    }
    /* 2: combined and direct messages */
    NBR_CHECK(nbr_plan_begin_phase(plan));
    for (int k = 0; k < pat->num_in; k++) {
        size_t bytes = pat->in[k].blocks[1] >= 0 ? 2 * m : m;
        inbox[k] = plan->scratch_bytes;
        plan->scratch_bytes += bytes;
        NBR_CHECK(nbr_plan_add_recv(plan, pat->in[k].sender, TAG_COMBINED, NBR_BUF_SCRATCH,
                                    inbox[k], bytes));
    }
    for (int i = 0; i < pat->num_pairs; i++)
        for (int j = 0; j < pat->pairs[i].num_on; j++)
            NBR_CHECK(nbr_plan_add_send(plan, pat->pairs[i].on[j], TAG_COMBINED,
                                        NBR_BUF_SCRATCH, outbox[i], 2 * m));
    for (int j = 0; j < pat->num_direct; j++)
        NBR_CHECK(nbr_plan_add_send(plan, pat->direct[j], TAG_COMBINED, NBR_BUF_SEND, own, m));
    /* 3: every received block into its slots */
    NBR_CHECK(nbr_plan_begin_phase(plan));
    for (int k = 0; k < pat->num_in; k++)
        for (int b = 0; b < 2 && pat->in[k].blocks[b] >= 0; b++)
            NBR_CHECK(deliver(in, plan, pat->in[k].blocks[b], inbox[k] + (size_t)b * m, m));
out:
    free(outbox);
    free(inbox);
    return rc;
}

static int build(const nbr_plan_input_t *in, nbr_plan_t *plan)
{
    const nbr_combining_pattern_t *p = in->pattern;
    const nbr_combining_params_t *params = in->params;
    if (in->layout->send[0].bytes == 0)
        return nbr_build_naive(in, plan);
    if (!p || p->rank != in->rank || !params)
        return NBR_ERR_INTERNAL; /* nbr_build_plan provides both */
    int rc = build_plan(in, p, plan);
    if (rc == NBR_SUCCESS && in->describe)
        rc = nbr_plan_note(plan, "combining: %d friends, %d direct, theta %d", p->num_pairs,
                           p->num_direct, params->theta);
    return rc;
}

/* ------------------------------------------------------------ the row */

static int load_params(MPI_Info info, void *params)
{
    nbr_combining_params_t *p = params;
    p->theta = 2; /* one shared neighbor saves no message */
    return nbr_setting_int(info, "nbr_combining_theta", "NBR_COMBINING_THETA", 1, &p->theta);
}

static int build_all(const nbr_plan_input_t *in, const char *want, void *all)
{
    const nbr_combining_params_t *params = in->params;
    if (!params)
        return NBR_ERR_INTERNAL;
    return nbr_combining_build(in->nranks, in->graph_out_offsets, in->graph_out_targets,
                               params->theta, want, all);
}

static void free_in_place(void *pattern)
{
    nbr_combining_pattern_free(pattern);
}

const nbr_algorithm_t nbr_alg_combining = {
    .name = "combining",
    .description = "common-neighbor message combining allgather: friends (ranks sharing at least "
                   "nbr_combining_theta out-neighbors) swap blocks and split their common "
                   "neighbors, each sending both blocks in one message to its half",
    .collectives = NBR_COLL_BIT(NBR_COLL_ALLGATHER),
    .needs = NBR_NEEDS_WHOLE_GRAPH,
    .params_size = sizeof(nbr_combining_params_t),
    .load_params = load_params,
    .build = build,
    .pattern_size = sizeof(nbr_combining_pattern_t),
    .whole_job_build = build_all,
    .free_in_place = free_in_place,
};
