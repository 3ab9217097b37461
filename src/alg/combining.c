/* Common-neighbor message combining: the pattern (combining.h) and the
 * allgather plan. */
#include "alg/combining.h"

#include "alg/builder.h"
#include "base/grow.h"
#include "base/log.h"
#include "base/settings.h"

#include <nbrcoll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Active out-neighbors of every rank and active in-neighbors of every
 * rank, both as sorted lists that only shrink: a pair's common neighbors
 * leave the pair's two out-lists and those neighbors' in-lists. Friends
 * are found through the in-lists (p and q share t when both are in t's),
 * so a round costs the sum of squared in-degrees, not n^2. */
typedef struct lists {
    int *start; /* list r at item + start[r], start[n] items in all */
    int *len;   /* live length */
    int *item;
} lists_t;

static void lists_free(lists_t *l)
{
    free(l->start);
    free(l->len);
    free(l->item);
}

/* out: each rank's distinct out-neighbors, itself excluded (self-loops
 * are local copies); in: the transpose. */
static int active_lists(int n, const int *out_offsets, const int *out_targets, lists_t *out,
                        lists_t *in)
{
    int edges = out_offsets[n];
    out->start = malloc(((size_t)n + 1) * sizeof(int));
    out->len = calloc((size_t)n + 1, sizeof(int));
    out->item = malloc(((size_t)edges + 1) * sizeof(int));
    in->len = calloc((size_t)n + 1, sizeof(int));
    if (!out->start || !out->len || !out->item || !in->len)
        return NBR_ERR_NOMEM;
    int rc = nbr_distinct_in_lists(n, out_offsets, out_targets, 0, &in->start, &in->item);
    if (rc != NBR_SUCCESS)
        return rc;
    for (int t = 0; t < n; t++)
        in->len[t] = in->start[t + 1] - in->start[t];
    for (int p = 0; p < n; p++) {
        int *list = out->item + out_offsets[p], k = 0, m = out_offsets[p + 1] - out_offsets[p];
        out->start[p] = out_offsets[p];
        memcpy(list, out_targets + out_offsets[p], (size_t)m * sizeof(int));
        qsort(list, (size_t)m, sizeof(int), nbr_compare_ints);
        for (int i = 0; i < m; i++)
            if (list[i] != p && (k == 0 || list[k - 1] != list[i]))
                list[k++] = list[i];
        out->len[p] = k;
    }
    out->start[n] = edges;
    return NBR_SUCCESS;
}

static void list_remove(lists_t *l, int r, int value)
{
    int *list = l->item + l->start[r], k = 0;
    for (int i = 0; i < l->len[r]; i++)
        if (list[i] != value)
            list[k++] = list[i];
    l->len[r] = k;
}

/* Every pair p < q sharing at least theta active out-neighbors. */
static int find_friends(int n, const lists_t *out, const lists_t *in, int theta, int *count,
                        int *touched, nbr_pair_list_t *pairs)
{
    pairs->num = 0;
    for (int p = 0; p < n; p++) {
        int num_touched = 0;
        for (int i = 0; i < out->len[p]; i++) {
            int t = out->item[out->start[p] + i];
            const int *senders = in->item + in->start[t];
            for (int j = in->len[t] - 1; j >= 0 && senders[j] > p; j--)
                if (count[senders[j]]++ == 0)
                    touched[num_touched++] = senders[j];
        }
        /* pairs in (p, q) order: the friends alone, sorted when few, else
         * swept for (the others' counts are back to 0) */
        int friends = 0;
        for (int k = 0; k < num_touched; k++) {
            if (count[touched[k]] >= theta)
                touched[friends++] = touched[k];
            else
                count[touched[k]] = 0;
        }
        num_touched = friends;
        if (friends < (n - p) / 16) {
            qsort(touched, (size_t)num_touched, sizeof(int), nbr_compare_ints);
        } else {
            num_touched = 0;
            for (int q = p + 1; q < n; q++)
                if (count[q] > 0)
                    touched[num_touched++] = q;
        }
        for (int k = 0; k < num_touched; k++) {
            int q = touched[k];
            if (count[q] >= theta) {
                int rc = nbr_pair_list_add(pairs, count[q], p, q);
                if (rc != NBR_SUCCESS)
                    return rc;
            }
            count[q] = 0;
        }
    }
    return NBR_SUCCESS;
}

/* Takes a and b's common active out-neighbors (ascending) out of both
 * lists and out of those neighbors' in-lists; returns how many. */
static int retire_common(lists_t *out, lists_t *in, int p, int q, int *common)
{
    int *a = out->item + out->start[p], *b = out->item + out->start[q];
    int i = 0, j = 0, ka = 0, kb = 0, k = 0;
    while (i < out->len[p] || j < out->len[q]) {
        if (j == out->len[q] || (i < out->len[p] && a[i] < b[j])) {
            a[ka++] = a[i++];
        } else if (i == out->len[p] || b[j] < a[i]) {
            b[kb++] = b[j++];
        } else {
            common[k++] = a[i];
            i++;
            j++;
        }
    }
    out->len[p] = ka;
    out->len[q] = kb;
    for (int c = 0; c < k; c++) {
        list_remove(in, common[c], p);
        list_remove(in, common[c], q);
    }
    return k;
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

typedef struct job {
    int n, theta;
    const char *want;
    nbr_combining_pattern_t *patterns;
    lists_t out, in;
    int *count, *touched, *common;
    char *paired;
    nbr_pair_list_t cands;
    /* When friends are most pairs (dense graphs), recounting them every
     * round is what costs: then the shared counts of every pair p < q are
     * kept in a triangle (exact where >= theta, 0 below: counts only
     * fall) and lowered as neighbors retire. NULL: recount each round. */
    uint16_t *shared;
} job_t;

static size_t triangle_at(int n, int p, int q) /* p < q */
{
    return (size_t)p * (size_t)n - (size_t)p * ((size_t)p + 1) / 2 + (size_t)(q - p - 1);
}

/* Switches to kept counts once the pair list outweighs the triangle. */
static int keep_counts_if_dense(job_t *j)
{
    size_t pairs = (size_t)j->n * (size_t)(j->n - 1) / 2;
    if (j->shared || j->n > UINT16_MAX ||
        (size_t)j->cands.num * sizeof(nbr_weighted_pair_t) < pairs * sizeof(uint16_t))
        return NBR_SUCCESS;
    j->shared = calloc(pairs + 1, sizeof(uint16_t));
    if (!j->shared)
        return NBR_ERR_NOMEM;
    for (int i = 0; i < j->cands.num; i++) {
        const nbr_weighted_pair_t *c = &j->cands.pairs[i];
        j->shared[triangle_at(j->n, c->a, c->b)] = (uint16_t)c->weight;
    }
    return NBR_SUCCESS;
}

/* p and q have just retired common (k neighbors): every rank still
 * sending to one of them now shares one neighbor less with p and with q. */
static void lower_kept_counts(job_t *j, int p, int q, const int *common, int k)
{
    j->shared[triangle_at(j->n, p, q)] = 0;
    for (int c = 0; c < k; c++) {
        const int *senders = j->in.item + j->in.start[common[c]];
        for (int i = 0; i < j->in.len[common[c]]; i++)
            for (int side = 0; side < 2; side++) {
                int x = side ? q : p, y = senders[i];
                uint16_t *w = &j->shared[x < y ? triangle_at(j->n, x, y) : triangle_at(j->n, y, x)];
                if (*w > 0)
                    (*w)--;
            }
    }
}

static int wanted(const job_t *j, int r)
{
    return !j->want || j->want[r];
}

/* Pairs p and q: splits and retires their common neighbors. */
static int take_pair(job_t *j, int p, int q)
{
    int rc = NBR_SUCCESS;
    j->paired[p] = j->paired[q] = 1;
    int k = retire_common(&j->out, &j->in, p, q, j->common);
    if (j->shared)
        lower_kept_counts(j, p, q, j->common, k);
    /* the lower rank (p) takes the first half */
    int first = (k + 1) / 2;
    if (wanted(j, p))
        NBR_CHECK(add_pair(&j->patterns[p], q, j->common, first, k - first > 0));
    if (wanted(j, q))
        NBR_CHECK(add_pair(&j->patterns[q], p, j->common + first, k - first, first > 0));
    for (int c = 0; c < k; c++) {
        int t = j->common[c];
        if (wanted(j, t))
            NBR_CHECK(add_in(&j->patterns[t], c < first ? p : q, p, q));
    }
out:
    return rc;
}

/* The greedy pass over j->cands (sorted): pairs whose ranks are both free. */
static int take_sorted(job_t *j, int *made)
{
    nbr_pair_list_sort(&j->cands);
    for (int i = 0; i < j->cands.num; i++) {
        int p = j->cands.pairs[i].a, q = j->cands.pairs[i].b;
        if (j->paired[p] || j->paired[q])
            continue;
        int rc = take_pair(j, p, q);
        if (rc != NBR_SUCCESS)
            return rc;
        (*made)++;
    }
    return NBR_SUCCESS;
}

/* A round from the kept counts, heaviest weights first in slices of about
 * 2n pairs: pairs with a rank already taken would be skipped anyway, so
 * each slice reads only the rows and columns of free ranks, and the whole
 * pair list is never sorted. Same pairs, same order as one sorted list. */
static int kept_round(job_t *j, int *made)
{
    int n = j->n, max_w = 0;
    size_t pairs = (size_t)n * (size_t)(n - 1) / 2;
    for (size_t i = 0; i < pairs; i++)
        if (j->shared[i] > max_w)
            max_w = j->shared[i];
    if (max_w < j->theta)
        return NBR_SUCCESS;
    size_t *at_least = calloc((size_t)max_w + 2, sizeof(size_t));
    if (!at_least)
        return NBR_ERR_NOMEM;
    for (size_t i = 0; i < pairs; i++)
        at_least[j->shared[i]]++;
    for (int w = max_w - 1; w >= 0; w--)
        at_least[w] += at_least[w + 1];
    int rc = NBR_SUCCESS;
    for (int hi = max_w + 1; hi > j->theta && rc == NBR_SUCCESS;) {
        int lo = hi - 1; /* slice [lo, hi) */
        while (lo > j->theta && at_least[lo] - at_least[hi] < 2 * (size_t)n)
            lo--;
        j->cands.num = 0;
        for (int p = 0; p < n && rc == NBR_SUCCESS; p++) {
            if (j->paired[p])
                continue;
            const uint16_t *row = j->shared + triangle_at(n, p, p + 1);
            for (int q = p + 1; q < n && rc == NBR_SUCCESS; q++) {
                int w = row[q - p - 1];
                if (w >= lo && w < hi && !j->paired[q])
                    rc = nbr_pair_list_add(&j->cands, w, p, q);
            }
        }
        if (rc == NBR_SUCCESS)
            rc = take_sorted(j, made);
        hi = lo;
    }
    free(at_least);
    return rc;
}

/* One round: pair friends greedily, split and retire their common
 * neighbors. *made: the number of pairs made (0: no friends left). */
static int pair_round(job_t *j, int *made)
{
    *made = 0;
    memset(j->paired, 0, (size_t)j->n);
    if (j->shared)
        return kept_round(j, made);
    int rc = find_friends(j->n, &j->out, &j->in, j->theta, j->count, j->touched, &j->cands);
    if (rc == NBR_SUCCESS)
        rc = keep_counts_if_dense(j);
    return rc == NBR_SUCCESS ? take_sorted(j, made) : rc;
}

int nbr_combining_build(int n, const int *out_offsets, const int *out_targets, int theta,
                        const char *want, nbr_combining_pattern_t *patterns)
{
    job_t j = {.n = n, .theta = theta < 1 ? 1 : theta, .want = want, .patterns = patterns};
    for (int r = 0; r < n; r++)
        if (wanted(&j, r)) {
            memset(&patterns[r], 0, sizeof(patterns[r]));
            patterns[r].rank = r;
        }
    int rc = active_lists(n, out_offsets, out_targets, &j.out, &j.in);
    j.count = calloc((size_t)n + 1, sizeof(int));
    j.touched = malloc(((size_t)n + 1) * sizeof(int));
    j.common = malloc(((size_t)n + 1) * sizeof(int));
    j.paired = malloc((size_t)n + 1);
    if (rc == NBR_SUCCESS && (!j.count || !j.touched || !j.common || !j.paired))
        rc = NBR_ERR_NOMEM;
    if (rc != NBR_SUCCESS)
        goto out;
    for (int made = 1; made > 0;)
        NBR_CHECK(pair_round(&j, &made));
    /* what no friend took goes directly */
    for (int p = 0; p < n; p++) {
        const int *left = j.out.item + j.out.start[p];
        int k = j.out.len[p];
        if (wanted(&j, p)) {
            if (!(patterns[p].direct = nbr_ints_dup(left, k))) {
                rc = NBR_ERR_NOMEM;
                goto out;
            }
            patterns[p].num_direct = k;
        }
        for (int c = 0; c < k; c++)
            if (wanted(&j, left[c]))
                NBR_CHECK(add_in(&patterns[left[c]], p, p, -1));
    }
    for (int r = 0; r < n; r++)
        if (wanted(&j, r) && patterns[r].num_in > 1) /* in is NULL when empty */
            qsort(patterns[r].in, (size_t)patterns[r].num_in, sizeof(nbr_combining_in_t), cmp_in);
out:
    lists_free(&j.out);
    lists_free(&j.in);
    free(j.count);
    free(j.touched);
    free(j.common);
    free(j.paired);
    nbr_pair_list_free(&j.cands);
    free(j.shared);
    if (rc != NBR_SUCCESS)
        for (int r = 0; r < n; r++)
            if (wanted(&j, r))
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

/* Copies block src, received at scratch offset at, into every slot of it
 * (slots: the in-slots by sender). */
static int deliver(const nbr_plan_input_t *in, const nbr_in_index_t *slots, nbr_plan_t *plan,
                   int src, size_t at, size_t m)
{
    int rc = NBR_SUCCESS, count = 0;
    int first = nbr_in_index_find(slots, src, &count);
    for (int c = first; c < first + count && rc == NBR_SUCCESS; c++) {
        /* a block longer than its slot is a signature mismatch the request
         * reports (a shorter one fills the slot's front, as MPI does); the
         * plan still runs to its end and writes nothing past the slot */
        const nbr_slot_t *slot = &in->layout->recv[slots->order[c]];
        size_t bytes = slot->bytes < m ? slot->bytes : m;
        if (bytes > 0)
            rc = nbr_plan_add_copy(plan, NBR_BUF_RECV, slot->offset, NBR_BUF_SCRATCH, at, bytes);
    }
    return rc;
}

/* The plan with size[r] the bytes of rank r's block (allgather: all equal;
 * allgatherv: from the call's size round). landed, when not NULL, gets
 * where in scratch each rank's block arrives (SIZE_MAX: nowhere), which
 * is how the size round tells the data plan the sizes it relays. */
static int build_plan(const nbr_plan_input_t *in, const nbr_combining_pattern_t *pat,
                      const size_t *size, nbr_plan_t *plan, size_t *landed)
{
    int rc = NBR_SUCCESS, me = in->rank;
    size_t own = in->layout->send[0].offset;
    size_t *outbox = malloc(((size_t)pat->num_pairs + 1) * sizeof(size_t));
    size_t *inbox = malloc(((size_t)pat->num_in + 1) * sizeof(size_t));
    nbr_in_index_t slots = {0};
    if (!outbox || !inbox) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    NBR_CHECK(nbr_in_index_build(in->sources, in->indegree, &slots));
    for (int r = 0; landed && r < in->nranks; r++)
        landed[r] = SIZE_MAX;
    /* 1: friends swap blocks; both land side by side, lower rank first */
    NBR_CHECK(nbr_plan_begin_phase(plan));
    NBR_CHECK(nbr_add_self_copies(in, plan));
    for (int i = 0; i < pat->num_pairs; i++) {
        const nbr_combining_pair_t *x = &pat->pairs[i];
        int low = me < x->friend_rank ? me : x->friend_rank;
        if (x->num_on > 0) {
            outbox[i] = plan->scratch_bytes;
            plan->scratch_bytes += size[me] + size[x->friend_rank];
            size_t mine = outbox[i] + (me == low ? 0 : size[low]);
            size_t theirs = outbox[i] + (me == low ? size[me] : 0);
            NBR_CHECK(nbr_plan_add_copy(plan, NBR_BUF_SCRATCH, mine, NBR_BUF_SEND, own, size[me]));
            NBR_CHECK(nbr_plan_add_recv(plan, x->friend_rank, TAG_EXCHANGE, NBR_BUF_SCRATCH,
                                        theirs, size[x->friend_rank]));
            if (landed)
                landed[x->friend_rank] = theirs;
        }
        if (x->friend_serves)
            NBR_CHECK(nbr_plan_add_send(plan, x->friend_rank, TAG_EXCHANGE, NBR_BUF_SEND, own,
                                        size[me]));
    }
    /* 2: combined and direct messages */
    NBR_CHECK(nbr_plan_begin_phase(plan));
    for (int k = 0; k < pat->num_in; k++) {
        const int *b = pat->in[k].blocks;
        size_t bytes = size[b[0]] + (b[1] >= 0 ? size[b[1]] : 0);
        inbox[k] = plan->scratch_bytes;
        plan->scratch_bytes += bytes;
        NBR_CHECK(nbr_plan_add_recv(plan, pat->in[k].sender, TAG_COMBINED, NBR_BUF_SCRATCH,
                                    inbox[k], bytes));
        for (int j = 0; landed && j < 2 && b[j] >= 0; j++)
            if (landed[b[j]] == SIZE_MAX)
                landed[b[j]] = inbox[k] + (j ? size[b[0]] : 0);
    }
    for (int i = 0; i < pat->num_pairs; i++)
        for (int j = 0; j < pat->pairs[i].num_on; j++)
            NBR_CHECK(nbr_plan_add_send(plan, pat->pairs[i].on[j], TAG_COMBINED,
                                        NBR_BUF_SCRATCH, outbox[i],
                                        size[me] + size[pat->pairs[i].friend_rank]));
    for (int j = 0; j < pat->num_direct; j++)
        NBR_CHECK(nbr_plan_add_send(plan, pat->direct[j], TAG_COMBINED, NBR_BUF_SEND, own,
                                    size[me]));
    /* 3: every received block into its slots */
    NBR_CHECK(nbr_plan_begin_phase(plan));
    for (int k = 0; k < pat->num_in; k++) {
        const int *b = pat->in[k].blocks;
        for (int j = 0; j < 2 && b[j] >= 0; j++)
            NBR_CHECK(deliver(in, &slots, plan, b[j], inbox[k] + (j ? size[b[0]] : 0), size[b[j]]));
    }
out:
    free(outbox);
    free(inbox);
    nbr_in_index_free(&slots);
    return rc;
}

/* Every rank's block size: the one allgather block, or allgatherv's from
 * the size round (block_sizes), this rank's own from its send slot. */
static size_t *block_sizes_of(const nbr_plan_input_t *in)
{
    int uniform = in->layout->coll == NBR_COLL_ALLGATHER;
    size_t *size = malloc(((size_t)in->nranks + 1) * sizeof(size_t));
    for (int r = 0; size && r < in->nranks; r++)
        size[r] = uniform ? in->layout->send[0].bytes : in->block_sizes[r];
    if (size)
        size[in->rank] = in->layout->send[0].bytes;
    return size;
}

static int build(const nbr_plan_input_t *in, nbr_plan_t *plan)
{
    const nbr_combining_pattern_t *p = in->pattern;
    const nbr_combining_params_t *params = in->params;
    int uniform = in->layout->coll == NBR_COLL_ALLGATHER;
    /* an empty allgather sends nothing anywhere; allgatherv without the
     * call's size round (a tool, a test): naive, as on every rank then */
    if ((uniform && in->layout->send[0].bytes == 0) || (!uniform && !in->block_sizes))
        return nbr_build_naive(in, plan);
    if (!p || p->rank != in->rank || !params)
        return NBR_ERR_INTERNAL; /* nbr_build_plan provides both */
    size_t *size = block_sizes_of(in);
    int rc = size ? build_plan(in, p, size, plan, NULL) : NBR_ERR_NOMEM;
    free(size);
    if (rc == NBR_SUCCESS && in->describe)
        rc = nbr_plan_note(plan, "combining: %d friends, %d direct, theta %d", p->num_pairs,
                           p->num_direct, params->theta);
    return rc;
}

/* allgatherv's size round: the same pattern for 8-byte blocks, and where
 * each rank's size lands (see build_plan). */
static int size_plan(const nbr_plan_input_t *in, nbr_plan_t *plan, size_t *offset_of)
{
    const nbr_combining_pattern_t *p = in->pattern;
    if (in->layout->coll != NBR_COLL_ALLGATHER || in->layout->send[0].bytes != sizeof(uint64_t) ||
        !p || p->rank != in->rank)
        return NBR_ERR_INTERNAL;
    size_t *size = block_sizes_of(in);
    int rc = size ? build_plan(in, p, size, plan, offset_of) : NBR_ERR_NOMEM;
    free(size);
    return rc;
}

/* ------------------------------------------------------------ the row */

static int load_params(MPI_Info info, void *params)
{
    nbr_combining_params_t *p = params;
    return nbr_setting_int(info, NBR_SETTING_COMBINING_THETA, &p->theta);
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
    .collectives = NBR_COLL_BIT(NBR_COLL_ALLGATHER) | NBR_COLL_BIT(NBR_COLL_ALLGATHERV),
    .needs = NBR_NEEDS_WHOLE_GRAPH,
    .params_size = sizeof(nbr_combining_params_t),
    .load_params = load_params,
    .build = build,
    .size_plan = size_plan,
    .pattern_size = sizeof(nbr_combining_pattern_t),
    .whole_job_build = build_all,
    .free_in_place = free_in_place,
};
