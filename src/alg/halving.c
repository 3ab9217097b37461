/* Distance halving: the pattern (halving.h) and the allgather plan. */
#include "alg/halving.h"

#include "alg/builder.h"
#include "alg/cost_model.h"
#include "base/grow.h"
#include "base/log.h"

#include <nbrcoll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ holdings */

/* A block a rank holds: whose it is and whom it must still reach. */
typedef struct entry {
    int src;
    int num_targets;
    int *targets; /* ascending */
} entry_t;

typedef struct holding {
    int num, capacity;
    entry_t *entries; /* ascending src */
} holding_t;

typedef struct group {
    int lo, hi; /* ranks [lo, hi) */
    int split;  /* first rank of the upper half; 0: no split this step */
    int done;
} group_t;

typedef struct sim {
    int n;
    const int *out_offsets, *out_targets;
    const int *socket_of;
    int L;
    /* every rank's distinct in-neighbors, ascending (CSR): whom a target
     * already hears from, for weighing agents */
    int *in_offsets, *in_sources;
    nbr_pair_list_t pairs; /* choose_agents', kept from call to call */
    const char *want;
    holding_t *hold;
    group_t *groups;
    int num_groups, groups_capacity;
    int *agent;    /* this step: rank -> agent or -1 */
    int *load;     /* this step: origins per agent */
    nbr_halving_pattern_t *out;
} sim_t;

static int wanted(const sim_t *s, int r)
{
    return !s->want || s->want[r];
}

/* A rank's own block with its distinct out-neighbors (itself excluded:
 * self-loops are local copies). */
static int initial_holding(sim_t *s, int r)
{
    int first = s->out_offsets[r], n = s->out_offsets[r + 1] - first;
    if (n == 0)
        return NBR_SUCCESS;
    int *t = nbr_ints_dup(s->out_targets + first, n);
    if (!t)
        return NBR_ERR_NOMEM;
    qsort(t, (size_t)n, sizeof(int), nbr_compare_ints);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (t[i] != r && (m == 0 || t[m - 1] != t[i]))
            t[m++] = t[i];
    if (m == 0) {
        free(t);
        return NBR_SUCCESS;
    }
    holding_t *h = &s->hold[r];
    int rc = nbr_grow((void **)&h->entries, &h->capacity, 1, 4, sizeof(entry_t));
    if (rc != NBR_SUCCESS) {
        free(t);
        return rc;
    }
    h->entries[h->num++] = (entry_t){r, m, t};
    return NBR_SUCCESS;
}

static int insert_entry(holding_t *h, entry_t e)
{
    int rc = nbr_grow((void **)&h->entries, &h->capacity, h->num + 1, 4, sizeof(entry_t));
    if (rc != NBR_SUCCESS)
        return rc;
    int i = h->num;
    while (i > 0 && h->entries[i - 1].src > e.src) {
        h->entries[i] = h->entries[i - 1];
        i--;
    }
    h->entries[i] = e;
    h->num++;
    return NBR_SUCCESS;
}

/* ------------------------------------------------------------ groups */

/* Decides how group g splits this step (or that it is done). */
static void plan_split(const sim_t *s, group_t *g)
{
    g->split = 0;
    if (g->done)
        return;
    if (g->hi - g->lo <= 1) {
        g->done = 1;
        return;
    }
    if (!s->socket_of) { /* one socket: nothing to halve */
        g->done = 1;
        return;
    }
    int first = s->socket_of[g->lo], k = g->lo + 1;
    while (k < g->hi && s->socket_of[k] == first)
        k++;
    if (k == g->hi) { /* within one socket */
        g->done = 1;
        return;
    }
    int second = s->socket_of[k], j = k;
    while (j < g->hi && s->socket_of[j] == second)
        j++;
    if (j == g->hi) { /* two contiguous sockets: split at the boundary */
        g->split = k;
        return;
    }
    if (g->hi - g->lo <= s->L) { /* sockets not contiguous: the paper's stop */
        g->done = 1;
        return;
    }
    g->split = g->lo + (g->hi - g->lo + 1) / 2;
}

static int add_group(sim_t *s, int lo, int hi)
{
    int rc = nbr_grow((void **)&s->groups, &s->groups_capacity, s->num_groups + 1, 8,
                      sizeof(group_t));
    if (rc == NBR_SUCCESS)
        s->groups[s->num_groups++] = (group_t){lo, hi, 0, 0};
    return rc;
}

/* ------------------------------------------------------------ agents */

typedef uint64_t word_t;
#define WORD_BITS 64

static int bit(const word_t *set, int i)
{
    return (int)((set[i / WORD_BITS] >> (i % WORD_BITS)) & 1u);
}

static void set_bit(word_t *set, int i)
{
    set[i / WORD_BITS] |= (word_t)1 << (i % WORD_BITS);
}

static void clear_bit(word_t *set, int i)
{
    set[i / WORD_BITS] &= ~((word_t)1 << (i % WORD_BITS));
}

/* First position of a sorted list holding a value >= v. */
static int lower_bound(const int *list, int n, int v)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (list[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Weights of the ranks b of [ylo, yhi) as agent for a rank whose demand
 * (its distinct targets over there) is the list d: how many of d b sends
 * to, plus one when b is itself in d. Counted through the targets'
 * in-lists, so a rank costs the in-degrees of its targets, not the half's
 * size. Returns the b with a positive weight (relative to ylo) ascending
 * in touched. */
static int weigh(const sim_t *s, const int *d, int nd, int ylo, int yhi, int *weights,
                 int *touched)
{
    int num = 0, ny = yhi - ylo;
    for (int k = 0; k < nd; k++) {
        int t = d[k];
        if (weights[t - ylo]++ == 0)
            touched[num++] = t - ylo;
        const int *from = s->in_sources + s->in_offsets[t];
        int len = s->in_offsets[t + 1] - s->in_offsets[t];
        for (int i = lower_bound(from, len, ylo); i < len && from[i] < yhi; i++)
            if (weights[from[i] - ylo]++ == 0)
                touched[num++] = from[i] - ylo;
    }
    if (num < ny / 16) {
        qsort(touched, (size_t)num, sizeof(int), nbr_compare_ints);
    } else { /* most of the half: a sweep beats a sort */
        num = 0;
        for (int y = 0; y < ny; y++)
            if (weights[y] > 0)
                touched[num++] = y;
    }
    return num;
}

/* Agents in [ylo, yhi) for the ranks of [xlo, xhi) that hold targets there. */
static int choose_agents(sim_t *s, int xlo, int xhi, int ylo, int yhi)
{
    int nx = xhi - xlo, ny = yhi - ylo, words = (ny + WORD_BITS - 1) / WORD_BITS;
    int rc = NBR_SUCCESS;
    nbr_pair_list_t *pairs = &s->pairs;
    word_t *in_d = calloc((size_t)words + 1, sizeof(word_t));
    int *d = malloc(((size_t)ny + 1) * sizeof(int));
    int *weights = calloc((size_t)ny + 1, sizeof(int));
    int *touched = malloc(((size_t)ny + 1) * sizeof(int));
    char *needs = calloc((size_t)nx + 1, 1);
    pairs->num = 0;
    if (!in_d || !d || !weights || !touched || !needs) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: every positive pair, taken greedily by weight; pass 1:
         * ranks still without an agent take the least-loaded rank there */
        for (int a = xlo; a < xhi; a++) {
            if (pass == 1 && (!needs[a - xlo] || s->agent[a] >= 0))
                continue;
            int nd = 0;
            const holding_t *h = &s->hold[a];
            for (int i = 0; i < h->num; i++)
                for (int j = 0; j < h->entries[i].num_targets; j++) {
                    int t = h->entries[i].targets[j];
                    if (t >= ylo && t < yhi && !bit(in_d, t - ylo)) {
                        set_bit(in_d, t - ylo);
                        d[nd++] = t;
                    }
                }
            for (int k = 0; k < nd; k++)
                clear_bit(in_d, d[k] - ylo);
            if (nd == 0)
                continue;
            needs[a - xlo] = 1;
            int num = weigh(s, d, nd, ylo, yhi, weights, touched);
            if (pass == 0) {
                for (int k = 0; k < num; k++)
                    NBR_CHECK(nbr_pair_list_add(pairs, weights[touched[k]], a, ylo + touched[k]));
            } else {
                int best = -1;
                for (int y = 0; y < ny; y++) {
                    int b = ylo + y;
                    if (best < 0 || s->load[b] < s->load[best] ||
                        (s->load[b] == s->load[best] && weights[y] > weights[best - ylo]))
                        best = b;
                }
                s->agent[a] = best;
                s->load[best]++;
            }
            for (int k = 0; k < num; k++)
                weights[touched[k]] = 0;
        }
        if (pass == 0) {
            nbr_pair_list_sort(pairs);
            for (int i = 0; i < pairs->num; i++) {
                const nbr_weighted_pair_t *x = &pairs->pairs[i];
                if (s->agent[x->a] < 0 && s->load[x->b] == 0) {
                    s->agent[x->a] = x->b;
                    s->load[x->b] = 1;
                }
            }
        }
    }
out:
    free(in_d);
    free(d);
    free(weights);
    free(touched);
    free(needs);
    return rc;
}

/* ------------------------------------------------------------ records */

static int add_msg(nbr_halving_msg_t **list, int *num, int peer, const int *blocks, int n)
{
    int rc = nbr_grow_exact((void **)list, *num, sizeof(nbr_halving_msg_t));
    if (rc != NBR_SUCCESS)
        return rc;
    nbr_halving_msg_t *m = &(*list)[(*num)++];
    m->peer = peer;
    m->num_blocks = n;
    m->blocks = nbr_ints_dup(blocks, n);
    return m->blocks ? NBR_SUCCESS : NBR_ERR_NOMEM;
}

/* ------------------------------------------------------------ one step */

/* Moves, for every rank with an agent, the targets in the agent's half:
 * collected from the pre-step holdings first, since both halves send at
 * once. */
static int transfer(sim_t *s, int step)
{
    int rc = NBR_SUCCESS;
    int *blocks = malloc(((size_t)s->n + 1) * sizeof(int));
    typedef struct moved {
        int to;
        entry_t e;
    } moved_t;
    moved_t *moves = NULL;
    int num_moves = 0, moves_capacity = 0;
    if (!blocks)
        return NBR_ERR_NOMEM;
    for (int gi = 0; gi < s->num_groups; gi++) {
        const group_t *g = &s->groups[gi];
        if (!g->split)
            continue;
        for (int a = g->lo; a < g->hi; a++) {
            int agent = s->agent[a];
            if (agent < 0)
                continue;
            int ylo = a < g->split ? g->split : g->lo, yhi = a < g->split ? g->hi : g->split;
            holding_t *h = &s->hold[a];
            int nb = 0, kept = 0;
            for (int i = 0; i < h->num; i++) {
                entry_t *e = &h->entries[i];
                int *there = malloc(((size_t)e->num_targets + 1) * sizeof(int));
                if (!there) {
                    rc = NBR_ERR_NOMEM;
                    goto out;
                }
                int nt = 0, nh = 0;
                for (int j = 0; j < e->num_targets; j++) {
                    int t = e->targets[j];
                    if (t >= ylo && t < yhi)
                        there[nt++] = t;
                    else
                        e->targets[nh++] = t;
                }
                e->num_targets = nh;
                if (nt == 0) {
                    free(there);
                } else {
                    blocks[nb++] = e->src;
                    /* the agent needs no message to itself */
                    int m = 0;
                    for (int j = 0; j < nt; j++)
                        if (there[j] != agent)
                            there[m++] = there[j];
                    NBR_CHECK(nbr_grow((void **)&moves, &moves_capacity, num_moves + 1, 16,
                                       sizeof(moved_t)));
                    moves[num_moves++] = (moved_t){agent, {e->src, m, there}};
                }
                if (e->num_targets > 0)
                    h->entries[kept++] = *e;
                else
                    free(e->targets);
            }
            h->num = kept;
            if (wanted(s, a)) {
                nbr_halving_step_t *st = &s->out[a].steps[step];
                st->send.peer = agent;
                st->send.num_blocks = nb;
                st->send.blocks = malloc(((size_t)nb + 1) * sizeof(int));
                if (!st->send.blocks) {
                    rc = NBR_ERR_NOMEM;
                    goto out;
                }
                memcpy(st->send.blocks, blocks, (size_t)nb * sizeof(int));
            }
            if (wanted(s, agent)) {
                nbr_halving_step_t *st = &s->out[agent].steps[step];
                NBR_CHECK(add_msg(&st->recv, &st->num_recv, a, blocks, nb));
            }
        }
    }
    for (int i = 0; i < num_moves; i++) {
        if (moves[i].e.num_targets == 0) {
            free(moves[i].e.targets);
            continue;
        }
        rc = insert_entry(&s->hold[moves[i].to], moves[i].e);
        if (rc != NBR_SUCCESS) {
            for (int j = i; j < num_moves; j++)
                free(moves[j].e.targets);
            goto done;
        }
    }
    goto done;
out:
    for (int i = 0; i < num_moves; i++)
        free(moves[i].e.targets);
done:
    free(moves);
    free(blocks);
    return rc;
}

/* ------------------------------------------------------------ the job */

/* Inside its last group a rank sends each target one message with every
 * block it still owes it. */
static int final_phase(sim_t *s)
{
    int rc = NBR_SUCCESS;
    int *count = calloc((size_t)s->n + 1, sizeof(int));
    int *blocks = malloc(((size_t)s->n + 1) * sizeof(int));
    if (!count || !blocks) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    for (int p = 0; p < s->n; p++) {
        const holding_t *h = &s->hold[p];
        /* targets of p, ascending, each with its blocks in src order */
        int num_targets = 0;
        int *targets = NULL, cap = 0;
        for (int i = 0; i < h->num; i++)
            for (int j = 0; j < h->entries[i].num_targets; j++) {
                int t = h->entries[i].targets[j];
                if (count[t]++ == 0) {
                    NBR_CHECK(nbr_grow((void **)&targets, &cap, num_targets + 1, 8, sizeof(int)));
                    targets[num_targets++] = t;
                }
            }
        if (num_targets > 1) /* targets is NULL until the first */
            qsort(targets, (size_t)num_targets, sizeof(int), nbr_compare_ints);
        for (int k = 0; k < num_targets && rc == NBR_SUCCESS; k++) {
            int t = targets[k], nb = 0;
            for (int i = 0; i < h->num; i++)
                if (bsearch(&t, h->entries[i].targets, (size_t)h->entries[i].num_targets,
                            sizeof(int), nbr_compare_ints))
                    blocks[nb++] = h->entries[i].src;
            count[t] = 0;
            if (wanted(s, p))
                rc = add_msg(&s->out[p].final_send, &s->out[p].num_final_send, t, blocks, nb);
            if (rc == NBR_SUCCESS && wanted(s, t))
                rc = add_msg(&s->out[t].final_recv, &s->out[t].num_final_recv, p, blocks, nb);
        }
        free(targets);
        if (rc != NBR_SUCCESS)
            goto out;
    }
out:
    free(count);
    free(blocks);
    return rc;
}

static int largest_socket(int n, const int *socket_of)
{
    if (!socket_of)
        return n;
    int best = 0, *count = calloc((size_t)n + 1, sizeof(int));
    if (!count)
        return n;
    int max_id = 0;
    for (int r = 0; r < n; r++)
        max_id = socket_of[r] > max_id ? socket_of[r] : max_id;
    int *c = max_id < n ? count : calloc((size_t)max_id + 1, sizeof(int));
    if (c) {
        for (int r = 0; r < n; r++)
            if (socket_of[r] >= 0 && ++c[socket_of[r]] > best)
                best = c[socket_of[r]];
        if (c != count)
            free(c);
    }
    free(count);
    return best > 0 ? best : n;
}

static int steps_capacity(nbr_halving_pattern_t *p, int steps)
{
    nbr_halving_step_t *grown = realloc(p->steps, ((size_t)steps + 1) * sizeof(*grown));
    if (!grown)
        return NBR_ERR_NOMEM;
    p->steps = grown;
    memset(&p->steps[p->num_steps], 0, ((size_t)(steps - p->num_steps) + 1) * sizeof(*grown));
    for (int t = p->num_steps; t < steps; t++)
        p->steps[t].send.peer = -1;
    p->num_steps = steps;
    return NBR_SUCCESS;
}

int nbr_halving_build(int n, const int *out_offsets, const int *out_targets,
                      const int *socket_of, int L, const char *want,
                      nbr_halving_pattern_t *patterns)
{
    int rc = NBR_SUCCESS;
    sim_t s = {.n = n, .out_offsets = out_offsets, .out_targets = out_targets,
               .socket_of = socket_of, .L = L > 0 ? L : largest_socket(n, socket_of),
               .want = want, .out = patterns};
    s.hold = calloc((size_t)n + 1, sizeof(holding_t));
    s.agent = malloc(((size_t)n + 1) * sizeof(int));
    s.load = malloc(((size_t)n + 1) * sizeof(int));
    if (!s.hold || !s.agent || !s.load) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    /* self-loops kept: the weights count every edge a rank sends */
    NBR_CHECK(nbr_distinct_in_lists(n, out_offsets, out_targets, 1, &s.in_offsets,
                                    &s.in_sources));
    for (int r = 0; r < n; r++)
        if (wanted(&s, r)) {
            memset(&patterns[r], 0, sizeof(patterns[r]));
            patterns[r].rank = r;
            patterns[r].ranks_per_socket = s.L;
        }
    for (int r = 0; r < n; r++)
        NBR_CHECK(initial_holding(&s, r));
    NBR_CHECK(add_group(&s, 0, n));
    for (int step = 0;; step++) {
        int splits = 0;
        for (int gi = 0; gi < s.num_groups; gi++) {
            plan_split(&s, &s.groups[gi]);
            splits += s.groups[gi].split != 0;
        }
        if (splits == 0)
            break;
        for (int r = 0; r < n; r++) {
            s.agent[r] = -1;
            s.load[r] = 0;
            if (wanted(&s, r))
                NBR_CHECK(steps_capacity(&patterns[r], step + 1));
        }
        int before = s.num_groups;
        for (int gi = 0; gi < before; gi++) {
            group_t g = s.groups[gi];
            if (!g.split)
                continue;
            NBR_CHECK(choose_agents(&s, g.lo, g.split, g.split, g.hi));
            NBR_CHECK(choose_agents(&s, g.split, g.hi, g.lo, g.split));
        }
        NBR_CHECK(transfer(&s, step));
        for (int gi = 0; gi < before; gi++) {
            group_t *g = &s.groups[gi];
            if (!g->split)
                continue;
            int lo = g->lo, split = g->split, hi = g->hi;
            g->hi = split; /* the lower half stays in place */
            g->split = 0;
            NBR_CHECK(add_group(&s, split, hi));
            (void)lo;
        }
    }
    rc = final_phase(&s);
out:
    if (s.hold)
        for (int r = 0; r < n; r++) {
            for (int i = 0; i < s.hold[r].num; i++)
                free(s.hold[r].entries[i].targets);
            free(s.hold[r].entries);
        }
    free(s.hold);
    free(s.in_offsets);
    nbr_pair_list_free(&s.pairs);
    free(s.in_sources);
    free(s.agent);
    free(s.load);
    free(s.groups);
    if (rc != NBR_SUCCESS)
        for (int r = 0; r < n; r++)
            if (wanted(&s, r))
                nbr_halving_pattern_free(&patterns[r]);
    return rc;
}

static void free_msgs(nbr_halving_msg_t *m, int n)
{
    for (int i = 0; i < n; i++)
        free(m[i].blocks);
    free(m);
}

void nbr_halving_pattern_free(nbr_halving_pattern_t *p)
{
    if (!p)
        return;
    for (int t = 0; t < p->num_steps; t++) {
        free(p->steps[t].send.blocks);
        free_msgs(p->steps[t].recv, p->steps[t].num_recv);
    }
    free(p->steps);
    free_msgs(p->final_send, p->num_final_send);
    free_msgs(p->final_recv, p->num_final_recv);
    memset(p, 0, sizeof(*p));
}

/* ------------------------------------------------------------ the plan */

typedef struct place {
    int8_t buf; /* -1: not here */
    size_t offset;
} place_t;

typedef struct plan_builder {
    const nbr_plan_input_t *in;
    nbr_plan_t *plan;
    const size_t *size; /* block src -> bytes (allgather: all the same) */
    place_t *where; /* block src -> where this rank has it */
    /* the last message phase's receipts, to deliver and to forward whole */
    const nbr_halving_msg_t *inbox_msgs;
    size_t *inbox_offsets;
    int num_inbox;
    nbr_in_index_t slots; /* this rank's in-slots by sender */
} plan_builder_t;

static size_t take_scratch(nbr_plan_t *plan, size_t bytes)
{
    size_t at = plan->scratch_bytes;
    plan->scratch_bytes += bytes;
    return at;
}

/* Bytes of a message: its blocks back to back. */
static size_t message_bytes(const plan_builder_t *b, const nbr_halving_msg_t *msg)
{
    size_t bytes = 0;
    for (int j = 0; j < msg->num_blocks; j++)
        bytes += b->size[msg->blocks[j]];
    return bytes;
}

/* Copies each block just received into this rank's slots for it. */
static int deliver(plan_builder_t *b)
{
    int rc = NBR_SUCCESS;
    const nbr_plan_input_t *in = b->in;
    for (int k = 0; k < b->num_inbox && rc == NBR_SUCCESS; k++)
        for (int j = 0; j < b->inbox_msgs[k].num_blocks && rc == NBR_SUCCESS; j++) {
            int src = b->inbox_msgs[k].blocks[j], count = 0;
            int first = nbr_in_index_find(&b->slots, src, &count);
            for (int c = first; c < first + count && rc == NBR_SUCCESS; c++) {
                int i = b->slots.order[c];
                /* a slot smaller than the block is a signature mismatch the
                 * request reports; the plan still runs to its end */
                size_t bytes = in->layout->recv[i].bytes < b->size[src] ? in->layout->recv[i].bytes
                                                                        : b->size[src];
                if (bytes > 0)
                    rc = nbr_plan_add_copy(b->plan, NBR_BUF_RECV, in->layout->recv[i].offset,
                                           NBR_BUF_SCRATCH, b->where[src].offset, bytes);
            }
        }
    return rc;
}

/* Where the message's bytes are, packing them into scratch (copies of the
 * current phase) unless they already lie together: one block, or exactly a
 * message received whole. */
static int outgoing(plan_builder_t *b, const nbr_halving_msg_t *msg, int *buf, size_t *offset)
{
    if (msg->num_blocks == 1) {
        place_t p = b->where[msg->blocks[0]];
        if (p.buf < 0)
            return NBR_ERR_INTERNAL;
        *buf = p.buf;
        *offset = p.offset;
        return NBR_SUCCESS;
    }
    for (int k = 0; k < b->num_inbox; k++)
        if (b->inbox_msgs[k].num_blocks == msg->num_blocks &&
            memcmp(b->inbox_msgs[k].blocks, msg->blocks,
                   (size_t)msg->num_blocks * sizeof(int)) == 0) {
            *buf = NBR_BUF_SCRATCH;
            *offset = b->inbox_offsets[k];
            return NBR_SUCCESS;
        }
    size_t at = take_scratch(b->plan, message_bytes(b, msg)), next = at;
    for (int j = 0; j < msg->num_blocks; j++) {
        int src = msg->blocks[j];
        place_t p = b->where[src];
        if (p.buf < 0)
            return NBR_ERR_INTERNAL; /* the pattern sends what this rank lacks */
        int rc = b->size[src] > 0 ? nbr_plan_add_copy(b->plan, NBR_BUF_SCRATCH, next, p.buf,
                                                      p.offset, b->size[src])
                                  : NBR_SUCCESS;
        if (rc != NBR_SUCCESS)
            return rc;
        next += b->size[src];
    }
    *buf = NBR_BUF_SCRATCH;
    *offset = at;
    return NBR_SUCCESS;
}

/* One message phase: receipts land in fresh scratch, in block order. */
static int exchange(plan_builder_t *b, int tag, const nbr_halving_msg_t *recv, int num_recv,
                    const nbr_halving_msg_t *send, const int *send_buf,
                    const size_t *send_offset, int num_send)
{
    int rc = nbr_plan_begin_phase(b->plan);
    for (int k = 0; k < num_recv && rc == NBR_SUCCESS; k++) {
        size_t bytes = message_bytes(b, &recv[k]);
        size_t at = take_scratch(b->plan, bytes);
        b->inbox_offsets[k] = at;
        rc = nbr_plan_add_recv(b->plan, recv[k].peer, tag, NBR_BUF_SCRATCH, at, bytes);
        for (int j = 0; j < recv[k].num_blocks; j++) {
            b->where[recv[k].blocks[j]] = (place_t){NBR_BUF_SCRATCH, at};
            at += b->size[recv[k].blocks[j]];
        }
    }
    for (int k = 0; k < num_send && rc == NBR_SUCCESS; k++)
        rc = nbr_plan_add_send(b->plan, send[k].peer, tag, send_buf[k], send_offset[k],
                               message_bytes(b, &send[k]));
    b->inbox_msgs = recv;
    b->num_inbox = num_recv;
    return rc;
}

static int most_messages(const nbr_halving_pattern_t *p)
{
    int most = p->num_final_send > p->num_final_recv ? p->num_final_send : p->num_final_recv;
    for (int t = 0; t < p->num_steps; t++)
        most = p->steps[t].num_recv > most ? p->steps[t].num_recv : most;
    return most + 1;
}

static int build_plan(plan_builder_t *b, const nbr_halving_pattern_t *p)
{
    int rc = NBR_SUCCESS, capacity = most_messages(p);
    int *bufs = malloc((size_t)capacity * sizeof(int));
    size_t *offsets = malloc((size_t)capacity * sizeof(size_t));
    b->inbox_offsets = malloc((size_t)capacity * sizeof(size_t));
    if (!bufs || !offsets || !b->inbox_offsets) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    if (p->num_steps + 1 > NBR_PLAN_TAGS) {
        NBR_ERROR("halving: %d steps; a plan has tags for %d", p->num_steps, NBR_PLAN_TAGS - 1);
        rc = NBR_ERR_UNSUPPORTED; /* the size round's tags would meet the data's */
        goto out;
    }
    NBR_CHECK(nbr_in_index_build(b->in->sources, b->in->indegree, &b->slots));
    NBR_CHECK(nbr_plan_begin_phase(b->plan));
    NBR_CHECK(nbr_add_self_copies(b->in, b->plan));
    for (int t = 0; t < p->num_steps; t++) {
        const nbr_halving_step_t *st = &p->steps[t];
        /* copies: deliver the last receipts, pack this step's message */
        NBR_CHECK(nbr_plan_begin_phase(b->plan));
        NBR_CHECK(deliver(b));
        int num_send = st->send.peer >= 0;
        if (num_send)
            NBR_CHECK(outgoing(b, &st->send, &bufs[0], &offsets[0]));
        NBR_CHECK(exchange(b, t, st->recv, st->num_recv, &st->send, bufs, offsets, num_send));
    }
    NBR_CHECK(nbr_plan_begin_phase(b->plan));
    NBR_CHECK(deliver(b));
    for (int k = 0; k < p->num_final_send; k++)
        NBR_CHECK(outgoing(b, &p->final_send[k], &bufs[k], &offsets[k]));
    NBR_CHECK(exchange(b, p->num_steps, p->final_recv, p->num_final_recv, p->final_send, bufs,
                       offsets, p->num_final_send));
    NBR_CHECK(nbr_plan_begin_phase(b->plan));
    NBR_CHECK(deliver(b));
out:
    free(bufs);
    free(offsets);
    free(b->inbox_offsets);
    nbr_in_index_free(&b->slots);
    return rc;
}

/* The plan for these block sizes (size[r] for every block this rank
 * handles); where_out, when given, receives where each block ends up. */
static int halving_plan(const nbr_plan_input_t *in, nbr_plan_t *plan, const size_t *size,
                        place_t *where_out)
{
    const nbr_layout_t *layout = in->layout;
    const nbr_halving_pattern_t *p = in->pattern;
    plan_builder_t b = {.in = in, .plan = plan, .size = size};
    int rc = NBR_SUCCESS;
    if (!p || p->rank != in->rank)
        return NBR_ERR_INTERNAL; /* nbr_build_plan provides this rank's pattern */
    b.where = malloc(((size_t)in->nranks + 1) * sizeof(place_t));
    if (!b.where) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    for (int r = 0; r < in->nranks; r++)
        b.where[r] = (place_t){-1, 0};
    b.where[in->rank] = (place_t){NBR_BUF_SEND, layout->send[0].offset};
    rc = build_plan(&b, p);
    if (rc == NBR_SUCCESS && where_out)
        memcpy(where_out, b.where, (size_t)in->nranks * sizeof(place_t));
    if (rc == NBR_SUCCESS && in->describe)
        rc = nbr_plan_note(plan, "halving: %d steps, L = %d", p->num_steps, p->ranks_per_socket);
out:
    free(b.where);
    return rc;
}

static int build(const nbr_plan_input_t *in, nbr_plan_t *plan)
{
    const nbr_layout_t *layout = in->layout;
    int uniform = layout->coll == NBR_COLL_ALLGATHER;
    /* allgatherv without the call's size round: naive */
    if ((!uniform && !in->block_sizes) ||
        (uniform && layout->send[0].bytes == 0))
        return nbr_build_naive(in, plan);
    size_t *size = malloc(((size_t)in->nranks + 1) * sizeof(size_t));
    if (!size)
        return NBR_ERR_NOMEM;
    for (int r = 0; r < in->nranks; r++)
        size[r] = uniform ? layout->send[0].bytes : in->block_sizes[r];
    size[in->rank] = layout->send[0].bytes;
    int rc = halving_plan(in, plan, size, NULL);
    free(size);
    return rc;
}

static int size_plan(const nbr_plan_input_t *in, nbr_plan_t *plan, size_t *offset_of)
{
    if (in->layout->coll != NBR_COLL_ALLGATHER || in->layout->send[0].bytes != sizeof(uint64_t))
        return NBR_ERR_INTERNAL;
    size_t *size = malloc(((size_t)in->nranks + 1) * sizeof(size_t));
    place_t *where = malloc(((size_t)in->nranks + 1) * sizeof(place_t));
    int rc = size && where ? NBR_SUCCESS : NBR_ERR_NOMEM;
    for (int r = 0; rc == NBR_SUCCESS && r < in->nranks; r++)
        size[r] = sizeof(uint64_t);
    if (rc == NBR_SUCCESS)
        rc = halving_plan(in, plan, size, where);
    for (int r = 0; rc == NBR_SUCCESS && r < in->nranks; r++)
        offset_of[r] = where[r].buf == NBR_BUF_SCRATCH ? where[r].offset : SIZE_MAX;
    free(size);
    free(where);
    return rc;
}

/* ------------------------------------------------------------ the row */

static int build_all(const nbr_plan_input_t *in, const char *want, void *all)
{
    return nbr_halving_build(in->nranks, in->graph_out_offsets, in->graph_out_targets,
                             in->locality ? in->locality->socket_of : NULL, 0, want, all);
}

static void free_in_place(void *pattern)
{
    nbr_halving_pattern_free(pattern);
}

/* The Hockney model of distance-halving-allgather.txt (Eq. 1-8). */
static double cost(const nbr_cost_query_t *query)
{
    nbr_cost_params_t p;
    nbr_cost_estimate_t estimate;
    if (nbr_cost_params_of(query, &p) != NBR_SUCCESS ||
        nbr_cost_halving(&p, &estimate) != NBR_SUCCESS)
        return NBR_COST_UNKNOWN;
    return estimate.t_total;
}

const nbr_algorithm_t nbr_alg_halving = {
    .name = "halving",
    .description = "distance halving allgather: ranks halve the job recursively, each handing "
                   "the other half's traffic to one agent there, then deliver inside the socket "
                   "(small and medium messages, CPU clusters)",
    .collectives = NBR_COLL_BIT(NBR_COLL_ALLGATHER) | NBR_COLL_BIT(NBR_COLL_ALLGATHERV),
    .needs = NBR_NEEDS_WHOLE_GRAPH,
    .build = build,
    .size_plan = size_plan,
    .pattern_size = sizeof(nbr_halving_pattern_t),
    .whole_job_build = build_all,
    .free_in_place = free_in_place,
    .cost = cost,
};
