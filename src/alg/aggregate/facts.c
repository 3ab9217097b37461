/* aggregate's call facts: the exchange that decides the agents
 * (aggregate.h says how), and the pieces that cross between regions. */
#include "alg/aggregate/internal.h"

#include "base/log.h"

#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ regions */

void nbr_aggregate_regions_free(void *pattern)
{
    nbr_regions_t *g = pattern;
    if (!g)
        return;
    free(g->offsets);
    free(g->ranks);
    free(g);
}

int nbr_aggregate_regions_build(const nbr_plan_input_t *input, void **pattern)
{
    const nbr_aggregate_params_t *p = input->params;
    const nbr_locality_t *loc = input->locality;
    int n = input->nranks;
    nbr_regions_t *g = calloc(1, sizeof(*g));
    if (!g)
        return NBR_ERR_NOMEM;
    g->of = !loc ? NULL : p && p->by_socket ? loc->socket_of : loc->node_of;
    g->count = !loc ? 1 : p && p->by_socket ? loc->num_sockets : loc->num_nodes;
    g->offsets = calloc((size_t)g->count + 2, sizeof(int));
    g->ranks = malloc(((size_t)n + 1) * sizeof(int));
    if (!g->offsets || !g->ranks) {
        nbr_aggregate_regions_free(g);
        return NBR_ERR_NOMEM;
    }
    for (int r = 0; r < n; r++) /* counting sort: ranks ascend in each region */
        g->offsets[nbr_region_of(g, r) + 2]++;
    for (int x = 0; x < g->count; x++)
        g->offsets[x + 2] += g->offsets[x + 1];
    for (int r = 0; r < n; r++)
        g->ranks[g->offsets[nbr_region_of(g, r) + 1]++] = r;
    *pattern = g;
    return NBR_SUCCESS;
}

/* ------------------------------------------------------------ call facts */

/* What agents and doors say to each other (rounds 1 and 2). */
typedef struct notice {
    int32_t kind;   /* NOTICE_SENDER: agent sends from region; _RECEIVER: receives */
    int32_t region; /* the agent's region */
    int32_t agent;
    int32_t pad;
    uint64_t bytes; /* the region pair's bytes as the agent's region counts them */
} notice_t;

enum { NOTICE_SENDER = 1, NOTICE_RECEIVER = 2 };

static void free_member(nbr_member_t *m)
{
    free(m->out);
    free(m->in);
    free(m->out_bytes);
    free(m->in_bytes);
    free(m->out_index);
    free(m->in_index);
    free(m->out_at);
    free(m->in_at);
}

/* dedup: room for the element indices of m's edges (their bytes known),
 * out_at / in_at filled; NBR_ERR_ARG when a block is not whole elements. */
static int alloc_indices(nbr_member_t *m, size_t element)
{
    m->out_at = malloc(((size_t)m->outdegree + 1) * sizeof(size_t));
    m->in_at = malloc(((size_t)m->indegree + 1) * sizeof(size_t));
    if (!m->out_at || !m->in_at)
        return NBR_ERR_NOMEM;
    m->out_at[0] = m->in_at[0] = 0;
    for (int j = 0; j < m->outdegree; j++) {
        if (m->out_bytes[j] % element)
            return NBR_ERR_ARG;
        m->out_at[j + 1] = m->out_at[j] + (size_t)(m->out_bytes[j] / element);
    }
    for (int i = 0; i < m->indegree; i++) {
        if (m->in_bytes[i] % element)
            return NBR_ERR_ARG;
        m->in_at[i + 1] = m->in_at[i] + (size_t)(m->in_bytes[i] / element);
    }
    m->out_index = malloc((m->out_at[m->outdegree] + 1) * sizeof(int64_t));
    m->in_index = malloc((m->in_at[m->indegree] + 1) * sizeof(int64_t));
    return m->out_index && m->in_index ? NBR_SUCCESS : NBR_ERR_NOMEM;
}

static int alloc_member(nbr_member_t *m, int rank, int outdegree, int indegree)
{
    m->rank = rank;
    m->outdegree = outdegree;
    m->indegree = indegree;
    m->out = malloc(((size_t)outdegree + 1) * sizeof(int));
    m->in = malloc(((size_t)indegree + 1) * sizeof(int));
    m->out_bytes = malloc(((size_t)outdegree + 1) * sizeof(uint64_t));
    m->in_bytes = malloc(((size_t)indegree + 1) * sizeof(uint64_t));
    return m->out && m->in && m->out_bytes && m->in_bytes ? NBR_SUCCESS : NBR_ERR_NOMEM;
}

void nbr_aggregate_facts_free(void *context)
{
    nbr_aggregate_facts_t *f = context;
    for (int m = 0; f->members && m < f->num_members; m++)
        free_member(&f->members[m]);
    for (int m = 0; f->parts && m < f->num_members; m++)
        free(f->parts[m].p);
    free(f->parts);
    free(f->arrivals.p);
    free(f->members);
    free(f->send_agent);
    free(f->recv_agent);
    free(f->send_total);
    free(f->recv_total);
    free(f->send_partner);
    free(f->recv_partner);
    free(f->announced);
    nbr_aggregate_regions_free(f->own_regions);
    memset(f, 0, sizeof(*f));
}

int nbr_aggregate_facts_init(const nbr_plan_input_t *input, void *context)
{
    nbr_aggregate_facts_t *f = context;
    const nbr_aggregate_params_t *p = input->params;
    const nbr_layout_t *layout = input->layout;
    int rc = NBR_SUCCESS;
    memset(f, 0, sizeof(*f));
    f->rank = input->rank;
    f->message_bytes = p ? p->message_bytes : 16384;
    f->regions = input->pattern;
    if (!f->regions) {
        void *own = NULL;
        rc = nbr_aggregate_regions_build(input, &own);
        f->regions = f->own_regions = own;
    }
    if (rc != NBR_SUCCESS)
        return f->status = rc;
    const nbr_regions_t *g = f->regions;
    int count = g->count;
    f->region = nbr_region_of(g, f->rank);
    const int *ranks = nbr_region_members(g, f->region, &f->num_members);
    f->members = calloc((size_t)f->num_members + 1, sizeof(nbr_member_t));
    f->parts = calloc((size_t)f->num_members + 1, sizeof(nbr_pieces_t));
    f->send_agent = malloc(((size_t)count + 1) * sizeof(int));
    f->recv_agent = malloc(((size_t)count + 1) * sizeof(int));
    f->send_partner = malloc(((size_t)count + 1) * sizeof(int));
    f->recv_partner = malloc(((size_t)count + 1) * sizeof(int));
    f->send_total = calloc((size_t)count + 1, sizeof(uint64_t));
    f->recv_total = calloc((size_t)count + 1, sizeof(uint64_t));
    f->announced = calloc((size_t)count + 1, sizeof(uint64_t));
    if (!f->members || !f->parts || !f->send_agent || !f->recv_agent || !f->send_partner ||
        !f->recv_partner || !f->send_total || !f->recv_total || !f->announced)
        return f->status = NBR_ERR_NOMEM;
    for (int x = 0; x < count; x++)
        f->send_agent[x] = f->recv_agent[x] = f->send_partner[x] = f->recv_partner[x] = -1;
    for (int m = 0; m < f->num_members; m++) {
        f->members[m].rank = ranks[m];
        if (ranks[m] == f->rank)
            f->self = m;
    }
    nbr_member_t *me = &f->members[f->self];
    rc = alloc_member(me, f->rank, input->outdegree, input->indegree);
    for (int j = 0; rc == NBR_SUCCESS && j < input->outdegree; j++) {
        me->out[j] = input->destinations[j];
        me->out_bytes[j] = layout->send[j].bytes;
    }
    for (int i = 0; rc == NBR_SUCCESS && i < input->indegree; i++) {
        me->in[i] = input->sources[i];
        me->in_bytes[i] = layout->recv[i].bytes;
    }
    const nbr_value_index_t *values = p && p->dedup ? input->values : NULL;
    if (rc == NBR_SUCCESS && values) {
        f->element_bytes = values->element_bytes;
        rc = f->element_bytes > 0 ? alloc_indices(me, f->element_bytes) : NBR_ERR_ARG;
        for (int j = 0; rc == NBR_SUCCESS && j < me->outdegree; j++) {
            if (values->send_at[j + 1] - values->send_at[j] != me->out_at[j + 1] - me->out_at[j])
                rc = NBR_ERR_ARG;
            else if (me->out_at[j + 1] > me->out_at[j]) /* empty arrays may be NULL */
                memcpy(me->out_index + me->out_at[j], values->send + values->send_at[j],
                       (me->out_at[j + 1] - me->out_at[j]) * sizeof(int64_t));
        }
        for (int i = 0; rc == NBR_SUCCESS && i < me->indegree; i++) {
            if (values->recv_at[i + 1] - values->recv_at[i] != me->in_at[i + 1] - me->in_at[i])
                rc = NBR_ERR_ARG;
            else if (me->in_at[i + 1] > me->in_at[i])
                memcpy(me->in_index + me->in_at[i], values->recv + values->recv_at[i],
                       (me->in_at[i + 1] - me->in_at[i]) * sizeof(int64_t));
        }
    }
    return f->status = rc;
}

/* Round 0: this rank's edges and sizes to every other member. */
static size_t element_count(const nbr_member_t *m)
{
    return m->out_at ? m->out_at[m->outdegree] + m->in_at[m->indegree] : 0;
}

static int post_edges(nbr_aggregate_facts_t *f, nbr_mailbox_t *outbox)
{
    const nbr_member_t *me = &f->members[f->self];
    size_t bytes = 2 * sizeof(int32_t) +
                   (size_t)(me->outdegree + me->indegree) * (sizeof(int32_t) + sizeof(uint64_t)) +
                   element_count(me) * sizeof(int64_t);
    char *blob = malloc(bytes + 1), *at = blob;
    if (!blob)
        return NBR_ERR_NOMEM;
    int32_t degrees[2] = {me->outdegree, me->indegree};
    memcpy(at, degrees, sizeof degrees);
    at += sizeof degrees;
    for (int j = 0; j < me->outdegree; j++, at += sizeof(int32_t))
        memcpy(at, &(int32_t){me->out[j]}, sizeof(int32_t));
    for (int i = 0; i < me->indegree; i++, at += sizeof(int32_t))
        memcpy(at, &(int32_t){me->in[i]}, sizeof(int32_t));
    memcpy(at, me->out_bytes, (size_t)me->outdegree * sizeof(uint64_t));
    at += (size_t)me->outdegree * sizeof(uint64_t);
    memcpy(at, me->in_bytes, (size_t)me->indegree * sizeof(uint64_t));
    at += (size_t)me->indegree * sizeof(uint64_t);
    if (me->out_at) { /* dedup: the indices, out-edges then in-edges */
        memcpy(at, me->out_index, me->out_at[me->outdegree] * sizeof(int64_t));
        at += me->out_at[me->outdegree] * sizeof(int64_t);
        memcpy(at, me->in_index, me->in_at[me->indegree] * sizeof(int64_t));
    }
    int rc = NBR_SUCCESS;
    for (int m = 0; m < f->num_members && rc == NBR_SUCCESS; m++)
        if (m != f->self)
            rc = nbr_mailbox_post(outbox, f->members[m].rank, blob, bytes);
    free(blob);
    return rc;
}

static int member_index(const nbr_aggregate_facts_t *f, int rank)
{
    int lo = 0, hi = f->num_members - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (f->members[mid].rank == rank)
            return mid;
        if (f->members[mid].rank < rank)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static int read_edges(nbr_aggregate_facts_t *f, const nbr_message_t *msg)
{
    int m = member_index(f, msg->peer);
    int32_t degrees[2];
    if (m < 0 || m == f->self || msg->bytes < sizeof degrees)
        return NBR_ERR_INTERNAL;
    memcpy(degrees, msg->data, sizeof degrees);
    size_t want = sizeof degrees + (size_t)(degrees[0] + degrees[1]) *
                                       (sizeof(int32_t) + sizeof(uint64_t));
    if (degrees[0] < 0 || degrees[1] < 0 || msg->bytes < want)
        return NBR_ERR_INTERNAL;
    nbr_member_t *mem = &f->members[m];
    int rc = alloc_member(mem, msg->peer, degrees[0], degrees[1]);
    const char *at = (const char *)msg->data + sizeof degrees;
    for (int j = 0; rc == NBR_SUCCESS && j < mem->outdegree; j++, at += sizeof(int32_t)) {
        int32_t v;
        memcpy(&v, at, sizeof v);
        mem->out[j] = v;
    }
    for (int i = 0; rc == NBR_SUCCESS && i < mem->indegree; i++, at += sizeof(int32_t)) {
        int32_t v;
        memcpy(&v, at, sizeof v);
        mem->in[i] = v;
    }
    if (rc == NBR_SUCCESS) {
        memcpy(mem->out_bytes, at, (size_t)mem->outdegree * sizeof(uint64_t));
        at += (size_t)mem->outdegree * sizeof(uint64_t);
        memcpy(mem->in_bytes, at, (size_t)mem->indegree * sizeof(uint64_t));
        at += (size_t)mem->indegree * sizeof(uint64_t);
    }
    if (rc == NBR_SUCCESS && f->element_bytes > 0) {
        rc = alloc_indices(mem, f->element_bytes);
        if (rc == NBR_SUCCESS && msg->bytes != want + element_count(mem) * sizeof(int64_t))
            rc = NBR_ERR_ARG; /* the members' element sizes differ */
        if (rc == NBR_SUCCESS) {
            memcpy(mem->out_index, at, mem->out_at[mem->outdegree] * sizeof(int64_t));
            at += mem->out_at[mem->outdegree] * sizeof(int64_t);
            memcpy(mem->in_index, at, mem->in_at[mem->indegree] * sizeof(int64_t));
        }
    } else if (rc == NBR_SUCCESS && msg->bytes != want) {
        rc = NBR_ERR_ARG; /* one member has value indices, another not */
    }
    return rc;
}

typedef struct weighted_region {
    uint64_t weight;
    int region;
} weighted_region_t;

static int heavier_first(const void *a, const void *b)
{
    const weighted_region_t *x = a, *y = b;
    if (x->weight != y->weight)
        return x->weight > y->weight ? -1 : 1;
    return (x->region > y->region) - (x->region < y->region);
}

/* Remote regions (edges[x] > 0) to members, heaviest first to the least
 * loaded (aggregate.h, "Balancing"). */
static int balance(const nbr_aggregate_facts_t *f, const uint64_t *edges, const uint64_t *bytes, int *agent)
{
    int count = f->regions->count, n = 0;
    weighted_region_t *order = malloc(((size_t)count + 1) * sizeof(*order));
    uint64_t *load = calloc((size_t)f->num_members + 1, sizeof(uint64_t));
    if (!order || !load) {
        free(order);
        free(load);
        return NBR_ERR_NOMEM;
    }
    for (int x = 0; x < count; x++)
        if (edges[x] > 0)
            order[n++] = (weighted_region_t){edges[x] * f->message_bytes + bytes[x], x};
    qsort(order, (size_t)n, sizeof(*order), heavier_first);
    for (int k = 0; k < n; k++) {
        int least = 0;
        for (int m = 1; m < f->num_members; m++)
            if (load[m] < load[least])
                least = m;
        load[least] += order[k].weight;
        agent[order[k].region] = f->members[least].rank;
    }
    free(order);
    free(load);
    return NBR_SUCCESS;
}

/* The member of region x that agents of region y announce themselves to. */
static int door(const nbr_regions_t *g, int x, int y)
{
    int size = 0;
    const int *ranks = nbr_region_members(g, x, &size);
    return ranks[y % size];
}

/* ------------------------------------------------------------ pieces */

/* By region, source, destination, key; then the slot and element, so that
 * the first of equal values is the one listed first. */
static int piece_order(const void *a, const void *b)
{
    const nbr_piece_t *x = a, *y = b;
    if (x->region != y->region)
        return x->region < y->region ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->slot != y->slot)
        return x->slot < y->slot ? -1 : 1;
    return (x->element > y->element) - (x->element < y->element);
}

/* Sorted; with value indices one piece per (region, source, key). */
static void settle(nbr_pieces_t *list, int values)
{
    qsort(list->p, (size_t)list->n, sizeof(nbr_piece_t), piece_order);
    if (!values)
        return;
    int kept = 0;
    for (int k = 0; k < list->n; k++) {
        const nbr_piece_t *q = &list->p[k], *last = kept ? &list->p[kept - 1] : NULL;
        if (!last || last->region != q->region || last->src != q->src || last->key != q->key)
            list->p[kept++] = *q;
    }
    list->n = kept;
}

/* The pieces of an edge list (out: a member's parts; in: its arrivals)
 * between `me` and ranks of other regions, appended to list. */
static void add_pieces(const nbr_aggregate_facts_t *f, const nbr_member_t *mem, int out,
                       nbr_pieces_t *list)
{
    int degree = out ? mem->outdegree : mem->indegree;
    const int *peers = out ? mem->out : mem->in;
    for (int e = 0; e < degree; e++) {
        int x = nbr_region_of(f->regions, peers[e]);
        if (x == f->region)
            continue;
        int src = out ? mem->rank : peers[e], dst = out ? peers[e] : mem->rank;
        if (!f->element_bytes) {
            uint64_t bytes = out ? mem->out_bytes[e] : mem->in_bytes[e];
            list->p[list->n++] = (nbr_piece_t){x, src, dst, e, 0, e, bytes, 0};
            continue;
        }
        const size_t *at = out ? mem->out_at : mem->in_at;
        const int64_t *index = out ? mem->out_index : mem->in_index;
        for (size_t k = at[e]; k < at[e + 1]; k++)
            list->p[list->n++] =
                (nbr_piece_t){x, src, -1, e, (int)(k - at[e]), index[k], f->element_bytes, 0};
    }
}

static int pieces_alloc(nbr_pieces_t *list, size_t n)
{
    list->n = 0;
    list->p = malloc((n + 1) * sizeof(nbr_piece_t));
    return list->p ? NBR_SUCCESS : NBR_ERR_NOMEM;
}

/* Each member's parts, and what this region receives. */
static int list_pieces(nbr_aggregate_facts_t *f)
{
    int values = f->element_bytes > 0, rc = NBR_SUCCESS;
    size_t in_total = 0;
    for (int m = 0; m < f->num_members && rc == NBR_SUCCESS; m++) {
        const nbr_member_t *mem = &f->members[m];
        size_t outs = values ? mem->out_at[mem->outdegree] : (size_t)mem->outdegree;
        in_total += values ? mem->in_at[mem->indegree] : (size_t)mem->indegree;
        rc = pieces_alloc(&f->parts[m], outs);
        if (rc == NBR_SUCCESS) {
            add_pieces(f, mem, 1, &f->parts[m]);
            settle(&f->parts[m], values);
        }
    }
    if (rc == NBR_SUCCESS)
        rc = pieces_alloc(&f->arrivals, in_total);
    for (int m = 0; m < f->num_members && rc == NBR_SUCCESS; m++)
        add_pieces(f, &f->members[m], 0, &f->arrivals);
    if (rc == NBR_SUCCESS)
        settle(&f->arrivals, values);
    return rc;
}

int nbr_aggregate_arrival(const nbr_aggregate_facts_t *f, int region, int src, int dst,
                          int64_t key)
{
    int lo = 0, hi = f->arrivals.n - 1;
    nbr_piece_t want = {region, src, dst, 0, 0, key, 0, 0};
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const nbr_piece_t *q = &f->arrivals.p[mid];
        int order = q->region != want.region ? (q->region < want.region ? -1 : 1)
                    : q->src != want.src     ? (q->src < want.src ? -1 : 1)
                    : q->dst != want.dst     ? (q->dst < want.dst ? -1 : 1)
                    : q->key != want.key     ? (q->key < want.key ? -1 : 1)
                                             : 0;
        if (order == 0)
            return mid;
        if (order < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Round 1: every member's edges are here; list what crosses, balance both
 * sides, then the agents announce themselves to the other regions' doors. */
static int decide_agents(nbr_aggregate_facts_t *f, nbr_mailbox_t *outbox)
{
    const nbr_regions_t *g = f->regions;
    int count = g->count, rc = list_pieces(f);
    uint64_t *edges = calloc(2 * (size_t)count + 1, sizeof(uint64_t));
    if (!edges)
        rc = NBR_ERR_NOMEM;
    if (rc != NBR_SUCCESS) {
        free(edges);
        return rc;
    }
    uint64_t *out_edges = edges, *in_edges = edges + count;
    for (int m = 0; m < f->num_members; m++) { /* messages, for the weights */
        const nbr_member_t *mem = &f->members[m];
        for (int j = 0; j < mem->outdegree; j++)
            out_edges[nbr_region_of(g, mem->out[j])]++;
        for (int i = 0; i < mem->indegree; i++)
            in_edges[nbr_region_of(g, mem->in[i])]++;
        for (int k = 0; k < f->parts[m].n; k++)
            f->send_total[f->parts[m].p[k].region] += f->parts[m].p[k].bytes;
    }
    out_edges[f->region] = in_edges[f->region] = 0;
    for (int k = 0; k < f->arrivals.n; k++)
        f->recv_total[f->arrivals.p[k].region] += f->arrivals.p[k].bytes;
    rc = balance(f, out_edges, f->send_total, f->send_agent);
    if (rc == NBR_SUCCESS)
        rc = balance(f, in_edges, f->recv_total, f->recv_agent);
    free(edges);
    for (int x = 0; x < count && rc == NBR_SUCCESS; x++) {
        if (f->send_agent[x] == f->rank) {
            notice_t n = {NOTICE_SENDER, f->region, f->rank, 0, f->send_total[x]};
            rc = nbr_mailbox_post(outbox, door(g, x, f->region), &n, sizeof n);
        }
        if (rc == NBR_SUCCESS && f->recv_agent[x] == f->rank) {
            notice_t n = {NOTICE_RECEIVER, f->region, f->rank, 0, f->recv_total[x]};
            rc = nbr_mailbox_post(outbox, door(g, x, f->region), &n, sizeof n);
        }
    }
    return rc;
}

/* This rank learns the agent of region `from` it works with. */
static void take_notice(nbr_aggregate_facts_t *f, const notice_t *n)
{
    if (n->kind == NOTICE_SENDER) { /* we receive what n->agent sends */
        f->recv_partner[n->region] = n->agent;
        f->announced[n->region] = n->bytes;
        if (n->bytes != f->recv_total[n->region])
            f->mismatch = 1;
    } else {
        f->send_partner[n->region] = n->agent;
    }
}

static int read_notice(const nbr_message_t *msg, notice_t *n)
{
    if (msg->bytes != sizeof *n)
        return NBR_ERR_INTERNAL;
    memcpy(n, msg->data, sizeof *n);
    return NBR_SUCCESS;
}

/* Round 2: as a door, pass each announcement to this region's agent for
 * the announcing region. */
static int forward_notices(nbr_aggregate_facts_t *f, const nbr_mailbox_t *inbox, nbr_mailbox_t *outbox)
{
    int rc = NBR_SUCCESS, count = f->regions->count;
    for (int k = 0; k < inbox->count && rc == NBR_SUCCESS; k++) {
        notice_t n;
        if ((rc = read_notice(&inbox->messages[k], &n)) != NBR_SUCCESS)
            break;
        if (n.region < 0 || n.region >= count || n.region == f->region)
            return NBR_ERR_INTERNAL;
        int agent = n.kind == NOTICE_SENDER ? f->recv_agent[n.region] : f->send_agent[n.region];
        if (agent < 0) /* the other region counts edges to us that we do not see */
            f->mismatch = 1;
        else if (agent == f->rank)
            take_notice(f, &n);
        else
            rc = nbr_mailbox_post(outbox, agent, &n, sizeof n);
    }
    return rc;
}

int nbr_aggregate_facts_step(void *context, int round, const nbr_mailbox_t *inbox,
                             nbr_mailbox_t *outbox, int *done)
{
    nbr_aggregate_facts_t *f = context;
    *done = round >= 3; /* call_facts_rounds in the row */
    if (f->status != NBR_SUCCESS)
        return NBR_SUCCESS; /* keeps the rounds, posts nothing; check reports it */
    int rc = NBR_SUCCESS;
    switch (round) {
    case 0:
        rc = post_edges(f, outbox);
        break;
    case 1:
        for (int k = 0; k < inbox->count && rc == NBR_SUCCESS; k++)
            rc = read_edges(f, &inbox->messages[k]);
        for (int m = 0; m < f->num_members && rc == NBR_SUCCESS; m++)
            if (!f->members[m].out && m != f->self)
                rc = NBR_ERR_INTERNAL; /* a member did not report */
        if (rc == NBR_SUCCESS)
            rc = decide_agents(f, outbox);
        break;
    case 2:
        rc = forward_notices(f, inbox, outbox);
        break;
    default:
        for (int k = 0; k < inbox->count && rc == NBR_SUCCESS; k++) {
            notice_t n;
            if ((rc = read_notice(&inbox->messages[k], &n)) == NBR_SUCCESS)
                take_notice(f, &n);
        }
        break;
    }
    f->status = rc;
    return NBR_SUCCESS;
}

/* FNV-1a over the bytes a plan depends on. */
static uint64_t mix_bytes(uint64_t h, const void *data, size_t bytes)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

int nbr_aggregate_facts_check(const void *context, uint64_t *digest)
{
    const nbr_aggregate_facts_t *f = context;
    uint64_t h = 1469598103934665603ull;
    if (f->status != NBR_SUCCESS)
        return f->status;
    for (int m = 0; m < f->num_members; m++) {
        const nbr_member_t *mem = &f->members[m];
        h = mix_bytes(h, mem->out, (size_t)mem->outdegree * sizeof(int));
        h = mix_bytes(h, mem->out_bytes, (size_t)mem->outdegree * sizeof(uint64_t));
        h = mix_bytes(h, mem->in, (size_t)mem->indegree * sizeof(int));
        h = mix_bytes(h, mem->in_bytes, (size_t)mem->indegree * sizeof(uint64_t));
        if (mem->out_at) {
            h = mix_bytes(h, mem->out_index, mem->out_at[mem->outdegree] * sizeof(int64_t));
            h = mix_bytes(h, mem->in_index, mem->in_at[mem->indegree] * sizeof(int64_t));
        }
    }
    size_t count = (size_t)f->regions->count;
    h = mix_bytes(h, f->send_partner, count * sizeof(int));
    h = mix_bytes(h, f->recv_partner, count * sizeof(int));
    h = mix_bytes(h, f->announced, count * sizeof(uint64_t));
    *digest = h;
    return f->mismatch ? NBR_ERR_TYPE_MISMATCH : NBR_SUCCESS;
}

