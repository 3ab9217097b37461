/* aggregate: three-step locality-aware alltoallv; aggregate.h says what
 * it does, this file how. */
#include "alg/aggregate.h"

#include "alg/builder.h"
#include "base/grow.h"
#include "base/log.h"
#include "base/settings.h"

#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

/* Plan tags: messages inside a region (l), to the sending agent (s),
 * between regions (g), from the receiving agent (r). Each step has its
 * own so that two ranks's messages of different steps never pair up. */
enum { TAG_L = 0, TAG_S = 1, TAG_G = 2, TAG_R = 3 };

/* ------------------------------------------------------------ regions */

/* The count-independent pattern: every rank's region and every region's
 * members (ascending ranks). */
typedef struct regions {
    int count;
    const int *of; /* rank -> region: the locality's node_of or socket_of; NULL: one */
    int *offsets;  /* count + 1 */
    int *ranks;
} regions_t;

static int region_of(const regions_t *g, int rank)
{
    return g->of ? g->of[rank] : 0;
}

static const int *members_of(const regions_t *g, int region, int *size)
{
    *size = g->offsets[region + 1] - g->offsets[region];
    return g->ranks + g->offsets[region];
}

static void free_regions(void *pattern)
{
    regions_t *g = pattern;
    if (!g)
        return;
    free(g->offsets);
    free(g->ranks);
    free(g);
}

static int build_regions(const nbr_plan_input_t *input, void **pattern)
{
    const nbr_aggregate_params_t *p = input->params;
    const nbr_locality_t *loc = input->locality;
    int n = input->nranks;
    regions_t *g = calloc(1, sizeof(*g));
    if (!g)
        return NBR_ERR_NOMEM;
    g->of = !loc ? NULL : p && p->by_socket ? loc->socket_of : loc->node_of;
    g->count = !loc ? 1 : p && p->by_socket ? loc->num_sockets : loc->num_nodes;
    g->offsets = calloc((size_t)g->count + 2, sizeof(int));
    g->ranks = malloc(((size_t)n + 1) * sizeof(int));
    if (!g->offsets || !g->ranks) {
        free_regions(g);
        return NBR_ERR_NOMEM;
    }
    for (int r = 0; r < n; r++) /* counting sort: ranks ascend in each region */
        g->offsets[region_of(g, r) + 2]++;
    for (int x = 0; x < g->count; x++)
        g->offsets[x + 2] += g->offsets[x + 1];
    for (int r = 0; r < n; r++)
        g->ranks[g->offsets[region_of(g, r) + 1]++] = r;
    *pattern = g;
    return NBR_SUCCESS;
}

/* ------------------------------------------------------------ call facts */

/* A member of this rank's region: its edges and their block bytes, in
 * its MPI order. */
typedef struct member {
    int rank;
    int outdegree, indegree;
    int *out, *in;
    uint64_t *out_bytes, *in_bytes;
} member_t;

typedef struct facts {
    const regions_t *regions;
    regions_t *own_regions; /* made here when the input had no pattern */
    size_t message_bytes;
    int rank, region, self; /* self: this rank's index among the members */
    int num_members;
    member_t *members;
    /* by region (-1: no traffic with it): the member that sends this
     * region's blocks there / receives that region's blocks here, and
     * their bytes */
    int *send_agent, *recv_agent;
    uint64_t *send_total, *recv_total;
    /* this rank as an agent, by region: the other region's agent, and the
     * bytes it announced */
    int *send_partner, *recv_partner;
    uint64_t *announced;
    int mismatch, status;
} facts_t;

/* What agents and doors say to each other (rounds 1 and 2). */
typedef struct notice {
    int32_t kind;   /* NOTICE_SENDER: agent sends from region; _RECEIVER: receives */
    int32_t region; /* the agent's region */
    int32_t agent;
    int32_t pad;
    uint64_t bytes; /* the region pair's bytes as the agent's region counts them */
} notice_t;

enum { NOTICE_SENDER = 1, NOTICE_RECEIVER = 2 };

static void free_member(member_t *m)
{
    free(m->out);
    free(m->in);
    free(m->out_bytes);
    free(m->in_bytes);
}

static int alloc_member(member_t *m, int rank, int outdegree, int indegree)
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

static void facts_free(void *context)
{
    facts_t *f = context;
    for (int m = 0; f->members && m < f->num_members; m++)
        free_member(&f->members[m]);
    free(f->members);
    free(f->send_agent);
    free(f->recv_agent);
    free(f->send_total);
    free(f->recv_total);
    free(f->send_partner);
    free(f->recv_partner);
    free(f->announced);
    free_regions(f->own_regions);
    memset(f, 0, sizeof(*f));
}

static int facts_init(const nbr_plan_input_t *input, void *context)
{
    facts_t *f = context;
    const nbr_aggregate_params_t *p = input->params;
    const nbr_layout_t *layout = input->layout;
    int rc = NBR_SUCCESS;
    memset(f, 0, sizeof(*f));
    f->rank = input->rank;
    f->message_bytes = p ? p->message_bytes : 16384;
    f->regions = input->pattern;
    if (!f->regions) {
        void *own = NULL;
        rc = build_regions(input, &own);
        f->regions = f->own_regions = own;
    }
    if (rc != NBR_SUCCESS)
        return f->status = rc;
    const regions_t *g = f->regions;
    int count = g->count;
    f->region = region_of(g, f->rank);
    const int *ranks = members_of(g, f->region, &f->num_members);
    f->members = calloc((size_t)f->num_members + 1, sizeof(member_t));
    f->send_agent = malloc(((size_t)count + 1) * sizeof(int));
    f->recv_agent = malloc(((size_t)count + 1) * sizeof(int));
    f->send_partner = malloc(((size_t)count + 1) * sizeof(int));
    f->recv_partner = malloc(((size_t)count + 1) * sizeof(int));
    f->send_total = calloc((size_t)count + 1, sizeof(uint64_t));
    f->recv_total = calloc((size_t)count + 1, sizeof(uint64_t));
    f->announced = calloc((size_t)count + 1, sizeof(uint64_t));
    if (!f->members || !f->send_agent || !f->recv_agent || !f->send_partner ||
        !f->recv_partner || !f->send_total || !f->recv_total || !f->announced)
        return f->status = NBR_ERR_NOMEM;
    for (int x = 0; x < count; x++)
        f->send_agent[x] = f->recv_agent[x] = f->send_partner[x] = f->recv_partner[x] = -1;
    for (int m = 0; m < f->num_members; m++) {
        f->members[m].rank = ranks[m];
        if (ranks[m] == f->rank)
            f->self = m;
    }
    member_t *me = &f->members[f->self];
    rc = alloc_member(me, f->rank, input->outdegree, input->indegree);
    for (int j = 0; rc == NBR_SUCCESS && j < input->outdegree; j++) {
        me->out[j] = input->destinations[j];
        me->out_bytes[j] = layout->send[j].bytes;
    }
    for (int i = 0; rc == NBR_SUCCESS && i < input->indegree; i++) {
        me->in[i] = input->sources[i];
        me->in_bytes[i] = layout->recv[i].bytes;
    }
    return f->status = rc;
}

/* Round 0: this rank's edges and sizes to every other member. */
static int post_edges(facts_t *f, nbr_mailbox_t *outbox)
{
    const member_t *me = &f->members[f->self];
    size_t bytes = 2 * sizeof(int32_t) +
                   (size_t)(me->outdegree + me->indegree) * (sizeof(int32_t) + sizeof(uint64_t));
    char *blob = malloc(bytes), *at = blob;
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
    int rc = NBR_SUCCESS;
    for (int m = 0; m < f->num_members && rc == NBR_SUCCESS; m++)
        if (m != f->self)
            rc = nbr_mailbox_post(outbox, f->members[m].rank, blob, bytes);
    free(blob);
    return rc;
}

static int member_index(const facts_t *f, int rank)
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

static int read_edges(facts_t *f, const nbr_message_t *msg)
{
    int m = member_index(f, msg->peer);
    int32_t degrees[2];
    if (m < 0 || m == f->self || msg->bytes < sizeof degrees)
        return NBR_ERR_INTERNAL;
    memcpy(degrees, msg->data, sizeof degrees);
    size_t want = sizeof degrees + (size_t)(degrees[0] + degrees[1]) *
                                       (sizeof(int32_t) + sizeof(uint64_t));
    if (degrees[0] < 0 || degrees[1] < 0 || msg->bytes != want)
        return NBR_ERR_INTERNAL;
    member_t *mem = &f->members[m];
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
static int balance(const facts_t *f, const uint64_t *edges, const uint64_t *bytes, int *agent)
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
static int door(const regions_t *g, int x, int y)
{
    int size = 0;
    const int *ranks = members_of(g, x, &size);
    return ranks[y % size];
}

/* Round 1: every member's edges are here; balance both sides, then the
 * agents announce themselves to the other regions' doors. */
static int decide_agents(facts_t *f, nbr_mailbox_t *outbox)
{
    const regions_t *g = f->regions;
    int count = g->count, rc = NBR_SUCCESS;
    uint64_t *edges = calloc(2 * (size_t)count + 1, sizeof(uint64_t));
    if (!edges)
        return NBR_ERR_NOMEM;
    uint64_t *out_edges = edges, *in_edges = edges + count;
    for (int m = 0; m < f->num_members; m++) {
        const member_t *mem = &f->members[m];
        for (int j = 0; j < mem->outdegree; j++) {
            int x = region_of(g, mem->out[j]);
            if (x != f->region) {
                out_edges[x]++;
                f->send_total[x] += mem->out_bytes[j];
            }
        }
        for (int i = 0; i < mem->indegree; i++) {
            int x = region_of(g, mem->in[i]);
            if (x != f->region) {
                in_edges[x]++;
                f->recv_total[x] += mem->in_bytes[i];
            }
        }
    }
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
static void take_notice(facts_t *f, const notice_t *n)
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
static int forward_notices(facts_t *f, const nbr_mailbox_t *inbox, nbr_mailbox_t *outbox)
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

static int facts_step(void *context, int round, const nbr_mailbox_t *inbox,
                      nbr_mailbox_t *outbox, int *done)
{
    facts_t *f = context;
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

static int facts_check(const void *context, uint64_t *digest)
{
    const facts_t *f = context;
    uint64_t h = 1469598103934665603ull;
    if (f->status != NBR_SUCCESS)
        return f->status;
    for (int m = 0; m < f->num_members; m++) {
        const member_t *mem = &f->members[m];
        h = mix_bytes(h, mem->out, (size_t)mem->outdegree * sizeof(int));
        h = mix_bytes(h, mem->out_bytes, (size_t)mem->outdegree * sizeof(uint64_t));
        h = mix_bytes(h, mem->in, (size_t)mem->indegree * sizeof(int));
        h = mix_bytes(h, mem->in_bytes, (size_t)mem->indegree * sizeof(uint64_t));
    }
    size_t count = (size_t)f->regions->count;
    h = mix_bytes(h, f->send_partner, count * sizeof(int));
    h = mix_bytes(h, f->recv_partner, count * sizeof(int));
    h = mix_bytes(h, f->announced, count * sizeof(uint64_t));
    *digest = h;
    return f->mismatch ? NBR_ERR_TYPE_MISMATCH : NBR_SUCCESS;
}

/* ------------------------------------------------------------ the plan */

/* One block of the exchange, as the plan moves it. */
typedef struct block {
    int region;   /* the remote region at the other end */
    int src, dst; /* ranks */
    int index;    /* its slot: the sender's out-edge (parts) or the receiver's in-edge */
    uint64_t bytes;
    size_t at;    /* where it sits in the receiving agent's area */
} block_t;

/* Blocks cross between regions in (source, destination, occurrence)
 * order; the occurrence follows the slot index on either end. */
static int by_region_src_dst(const void *a, const void *b)
{
    const block_t *x = a, *y = b;
    if (x->region != y->region)
        return x->region < y->region ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

typedef struct blocks {
    block_t *b;
    int n;
} blocks_t;

static int blocks_alloc(blocks_t *list, int n)
{
    list->n = 0;
    list->b = malloc(((size_t)n + 1) * sizeof(block_t));
    return list->b ? NBR_SUCCESS : NBR_ERR_NOMEM;
}

/* Member m's blocks to other regions (its parts), by region, dest, slot. */
static int parts_of(const facts_t *f, int m, blocks_t *parts)
{
    const member_t *mem = &f->members[m];
    int rc = blocks_alloc(parts, mem->outdegree);
    for (int j = 0; rc == NBR_SUCCESS && j < mem->outdegree; j++) {
        int x = region_of(f->regions, mem->out[j]);
        if (x != f->region)
            parts->b[parts->n++] = (block_t){x, mem->rank, mem->out[j], j, mem->out_bytes[j], 0};
    }
    if (rc == NBR_SUCCESS)
        qsort(parts->b, (size_t)parts->n, sizeof(block_t), by_region_src_dst);
    return rc;
}

/* Every member's blocks from other regions, by region, source, dest,
 * slot: each region's area at its receiving agent, in the order the
 * sending agent packed it. */
static int arrivals_of(const facts_t *f, blocks_t *in)
{
    int total = 0, rc;
    for (int m = 0; m < f->num_members; m++)
        total += f->members[m].indegree;
    rc = blocks_alloc(in, total);
    for (int m = 0; rc == NBR_SUCCESS && m < f->num_members; m++) {
        const member_t *mem = &f->members[m];
        for (int i = 0; i < mem->indegree; i++) {
            int x = region_of(f->regions, mem->in[i]);
            if (x != f->region)
                in->b[in->n++] = (block_t){x, mem->in[i], mem->rank, i, mem->in_bytes[i], 0};
        }
    }
    if (rc == NBR_SUCCESS)
        qsort(in->b, (size_t)in->n, sizeof(block_t), by_region_src_dst);
    return rc;
}

/* The plan's phases: l beside the packing copies, s, gathering copies at
 * the sending agents, g, scattering copies at the receiving agents, r,
 * unpacking copies. Ops are collected per phase, then emitted in order. */
enum { P_LOCAL, P_S, P_GATHER, P_G, P_SCATTER, P_R, P_UNPACK, NUM_PHASES };

typedef struct builder {
    const nbr_plan_input_t *in;
    const facts_t *f;
    nbr_op_t *ops[NUM_PHASES];
    int num[NUM_PHASES], capacity[NUM_PHASES];
    size_t scratch; /* scratch bytes taken so far */
    int *slots;     /* a list of slot indices (one message's blocks) */
} builder_t;

static int later(builder_t *b, int phase, nbr_op_t op)
{
    int rc = nbr_grow((void **)&b->ops[phase], &b->capacity[phase], b->num[phase] + 1, 16,
                      sizeof(nbr_op_t));
    if (rc == NBR_SUCCESS)
        b->ops[phase][b->num[phase]++] = op;
    return rc;
}

static int later_send(builder_t *b, int phase, int peer, int tag, int buf, size_t at,
                      uint64_t bytes)
{
    return later(b, phase, (nbr_op_t){.kind = NBR_OP_SEND, .buf = (uint8_t)buf,
                                      .tag = (uint8_t)tag, .peer = peer, .offset = at,
                                      .bytes = (size_t)bytes});
}

static int later_recv(builder_t *b, int phase, int peer, int tag, int buf, size_t at,
                      uint64_t bytes)
{
    return later(b, phase, (nbr_op_t){.kind = NBR_OP_RECV, .buf = (uint8_t)buf,
                                      .tag = (uint8_t)tag, .peer = peer, .offset = at,
                                      .bytes = (size_t)bytes});
}

static int later_copy(builder_t *b, int phase, int dst_buf, size_t dst, int src_buf, size_t src,
                      uint64_t bytes)
{
    return later(b, phase, (nbr_op_t){.kind = NBR_OP_COPY, .buf = (uint8_t)dst_buf,
                                      .src_buf = (uint8_t)src_buf, .peer = -1, .offset = dst,
                                      .src_offset = src, .bytes = (size_t)bytes});
}

static size_t take_scratch(builder_t *b, uint64_t bytes)
{
    size_t at = b->scratch;
    b->scratch += (size_t)bytes;
    return at;
}

/* Whether slots[list[0..n)] follow each other in a buffer, in this order:
 * one message can then read or write them in place. */
static int in_place(const nbr_slot_t *slots, const int *list, int n)
{
    for (int k = 1; k < n; k++)
        if (slots[list[k]].offset != slots[list[k - 1]].offset + slots[list[k - 1]].bytes)
            return 0;
    return 1;
}

/* l: messages to and from members go directly. */
static int plan_local(builder_t *b)
{
    const nbr_plan_input_t *in = b->in;
    const nbr_layout_t *layout = in->layout;
    const facts_t *f = b->f;
    int rc = NBR_SUCCESS;
    for (int i = 0; i < in->indegree && rc == NBR_SUCCESS; i++)
        if (in->sources[i] != in->rank && region_of(f->regions, in->sources[i]) == f->region)
            rc = later_recv(b, P_LOCAL, in->sources[i], TAG_L, NBR_BUF_RECV,
                            layout->recv[i].offset, layout->recv[i].bytes);
    for (int j = 0; j < in->outdegree && rc == NBR_SUCCESS; j++)
        if (in->destinations[j] != in->rank &&
            region_of(f->regions, in->destinations[j]) == f->region)
            rc = later_send(b, P_LOCAL, in->destinations[j], TAG_L, NBR_BUF_SEND,
                            layout->send[j].offset, layout->send[j].bytes);
    return rc;
}

/* s, this rank's end: to each other member that sends for some of the
 * regions it has blocks for, one message with those blocks (by region,
 * destination, slot), packed first unless the slots lie in that order. */
static int plan_s_out(builder_t *b, const blocks_t *mine)
{
    const facts_t *f = b->f;
    const nbr_slot_t *send = b->in->layout->send;
    int rc = NBR_SUCCESS;
    for (int m = 0; m < f->num_members && rc == NBR_SUCCESS; m++) {
        int agent = f->members[m].rank, n = 0;
        uint64_t bytes = 0;
        if (agent == f->rank)
            continue;
        for (int k = 0; k < mine->n; k++)
            if (f->send_agent[mine->b[k].region] == agent) {
                b->slots[n++] = mine->b[k].index;
                bytes += mine->b[k].bytes;
            }
        if (n == 0)
            continue;
        if (in_place(send, b->slots, n)) {
            rc = later_send(b, P_S, agent, TAG_S, NBR_BUF_SEND, send[b->slots[0]].offset, bytes);
            continue;
        }
        size_t at = take_scratch(b, bytes);
        rc = later_send(b, P_S, agent, TAG_S, NBR_BUF_SCRATCH, at, bytes);
        for (int k = 0; k < n && rc == NBR_SUCCESS; k++) {
            rc = later_copy(b, P_LOCAL, NBR_BUF_SCRATCH, at, NBR_BUF_SEND,
                            send[b->slots[k]].offset, send[b->slots[k]].bytes);
            at += send[b->slots[k]].bytes;
        }
    }
    return rc;
}

/* A member's part for one region: a run of its parts (sorted by region). */
typedef struct run {
    int region, first, count;
    uint64_t bytes;
} run_t;

typedef struct runs {
    run_t *r;
    int n;
} runs_t;

static int runs_of(const blocks_t *parts, runs_t *runs)
{
    runs->n = 0;
    runs->r = malloc(((size_t)parts->n + 1) * sizeof(run_t));
    if (!runs->r)
        return NBR_ERR_NOMEM;
    for (int k = 0; k < parts->n; k++) {
        if (runs->n == 0 || runs->r[runs->n - 1].region != parts->b[k].region)
            runs->r[runs->n++] = (run_t){parts->b[k].region, k, 0, 0};
        runs->r[runs->n - 1].count++;
        runs->r[runs->n - 1].bytes += parts->b[k].bytes;
    }
    return NBR_SUCCESS;
}

static const run_t *run_for(const runs_t *runs, int region)
{
    int lo = 0, hi = runs->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (runs->r[mid].region == region)
            return &runs->r[mid];
        if (runs->r[mid].region < region)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

/* s and g at a sending agent: for each region it sends for, one area
 * with every member's part in rank order, sent whole. Its own part is
 * copied in; a member's message lands in place when it carries one
 * region's part only, else in an area of its own, copied out in pieces. */
static int plan_send_agent(builder_t *b, const blocks_t *parts, const runs_t *runs)
{
    const facts_t *f = b->f;
    const nbr_slot_t *send = b->in->layout->send;
    int members = f->num_members, rc = NBR_SUCCESS;
    /* where member m's part for a region starts: a cursor per member while
     * the owned regions are laid out in order */
    size_t *part_at = malloc(((size_t)members + 1) * sizeof(size_t));
    int *owned = malloc(((size_t)f->regions->count + 1) * sizeof(int)), num_owned = 0;
    size_t *area = malloc(((size_t)f->regions->count + 1) * sizeof(size_t));
    if (!part_at || !owned || !area)
        rc = NBR_ERR_NOMEM;
    for (int x = 0; rc == NBR_SUCCESS && x < f->regions->count; x++)
        if (f->send_agent[x] == f->rank) {
            area[num_owned] = take_scratch(b, f->send_total[x]);
            owned[num_owned++] = x;
        }
    for (int o = 0; o < num_owned && rc == NBR_SUCCESS; o++) {
        int x = owned[o];
        size_t at = area[o];
        for (int m = 0; m < members && rc == NBR_SUCCESS; m++) {
            const run_t *run = run_for(&runs[m], x);
            if (!run)
                continue;
            if (m == f->self) { /* its own part: copied in */
                size_t to = at;
                for (int k = run->first; k < run->first + run->count && rc == NBR_SUCCESS; k++) {
                    const nbr_slot_t *slot = &send[parts[m].b[k].index];
                    rc = later_copy(b, P_LOCAL, NBR_BUF_SCRATCH, to, NBR_BUF_SEND, slot->offset,
                                    slot->bytes);
                    to += slot->bytes;
                }
            } else {
                /* a member's message carries its parts for every region this
                 * agent owns, in region order */
                int covered = 0;
                uint64_t bytes = 0;
                for (int k = 0; k < runs[m].n; k++)
                    if (f->send_agent[runs[m].r[k].region] == f->rank) {
                        covered++;
                        bytes += runs[m].r[k].bytes;
                    }
                int first = 1; /* is x the first region of the message? */
                for (int k = 0; k < runs[m].n && runs[m].r[k].region < x; k++)
                    first &= f->send_agent[runs[m].r[k].region] != f->rank;
                if (covered == 1) {
                    rc = later_recv(b, P_S, f->members[m].rank, TAG_S, NBR_BUF_SCRATCH, at,
                                    bytes);
                } else if (first) { /* lands in an area of its own, copied out */
                    size_t from = take_scratch(b, bytes);
                    rc = later_recv(b, P_S, f->members[m].rank, TAG_S, NBR_BUF_SCRATCH, from,
                                    bytes);
                    part_at[m] = from;
                }
                if (covered > 1 && rc == NBR_SUCCESS) {
                    rc = later_copy(b, P_GATHER, NBR_BUF_SCRATCH, at, NBR_BUF_SCRATCH,
                                    part_at[m], run->bytes);
                    part_at[m] += (size_t)run->bytes;
                }
            }
            at += (size_t)run->bytes;
        }
        if (rc == NBR_SUCCESS && f->send_partner[x] >= 0) /* else the check said why */
            rc = later_send(b, P_G, f->send_partner[x], TAG_G, NBR_BUF_SCRATCH, area[o],
                            f->send_total[x]);
    }
    free(part_at);
    free(owned);
    free(area);
    return rc;
}

/* g and r at a receiving agent: one area per region it receives from, in
 * the sender's order (arrivals: by region, source, destination, slot);
 * then each member gets one message with its blocks from all of them, in
 * place when they lie in order, else packed; its own go straight to its
 * receive slots. */
static int plan_recv_agent(builder_t *b, blocks_t *arrivals)
{
    const facts_t *f = b->f;
    const nbr_slot_t *recv = b->in->layout->recv;
    int rc = NBR_SUCCESS;
    for (int k = 0; k < arrivals->n && rc == NBR_SUCCESS;) {
        int x = arrivals->b[k].region, end = k;
        while (end < arrivals->n && arrivals->b[end].region == x)
            end++;
        if (f->recv_agent[x] == f->rank) {
            uint64_t announced = f->recv_partner[x] >= 0 ? f->announced[x] : 0;
            uint64_t room = announced > f->recv_total[x] ? announced : f->recv_total[x];
            size_t at = take_scratch(b, room);
            if (f->recv_partner[x] >= 0) /* the size the sender sends: no truncation */
                rc = later_recv(b, P_G, f->recv_partner[x], TAG_G, NBR_BUF_SCRATCH, at,
                                announced);
            for (int e = k; e < end; e++) {
                arrivals->b[e].at = at;
                at += (size_t)arrivals->b[e].bytes;
            }
        }
        k = end;
    }
    for (int m = 0; m < f->num_members && rc == NBR_SUCCESS; m++) {
        int d = f->members[m].rank, n = 0;
        uint64_t bytes = 0;
        int contiguous = 1;
        size_t first = 0, next = 0;
        for (int k = 0; k < arrivals->n; k++) {
            const block_t *blk = &arrivals->b[k];
            if (blk->dst != d || f->recv_agent[blk->region] != f->rank)
                continue;
            if (n == 0)
                first = blk->at;
            else if (blk->at != next)
                contiguous = 0;
            next = blk->at + (size_t)blk->bytes;
            bytes += blk->bytes;
            b->slots[n++] = k;
        }
        if (n == 0)
            continue;
        if (d == f->rank) { /* its own: straight to the receive slots */
            for (int k = 0; k < n && rc == NBR_SUCCESS; k++) {
                const block_t *blk = &arrivals->b[b->slots[k]];
                rc = later_copy(b, P_SCATTER, NBR_BUF_RECV, recv[blk->index].offset,
                                NBR_BUF_SCRATCH, blk->at, blk->bytes);
            }
            continue;
        }
        if (contiguous) {
            rc = later_send(b, P_R, d, TAG_R, NBR_BUF_SCRATCH, first, bytes);
            continue;
        }
        size_t at = take_scratch(b, bytes);
        rc = later_send(b, P_R, d, TAG_R, NBR_BUF_SCRATCH, at, bytes);
        for (int k = 0; k < n && rc == NBR_SUCCESS; k++) {
            const block_t *blk = &arrivals->b[b->slots[k]];
            rc = later_copy(b, P_SCATTER, NBR_BUF_SCRATCH, at, NBR_BUF_SCRATCH, blk->at,
                            blk->bytes);
            at += (size_t)blk->bytes;
        }
    }
    return rc;
}

/* r, this rank's end: from each other member that receives for some of the
 * regions it has blocks from, one message (by region, source, slot),
 * into the receive slots when they lie in that order, else unpacked. */
static int plan_r_in(builder_t *b, const blocks_t *arrivals)
{
    const facts_t *f = b->f;
    const nbr_slot_t *recv = b->in->layout->recv;
    int rc = NBR_SUCCESS;
    for (int m = 0; m < f->num_members && rc == NBR_SUCCESS; m++) {
        int agent = f->members[m].rank, n = 0;
        uint64_t bytes = 0;
        if (agent == f->rank)
            continue;
        for (int k = 0; k < arrivals->n; k++) {
            const block_t *blk = &arrivals->b[k];
            if (blk->dst == f->rank && f->recv_agent[blk->region] == agent) {
                b->slots[n++] = blk->index;
                bytes += blk->bytes;
            }
        }
        if (n == 0)
            continue;
        if (in_place(recv, b->slots, n)) {
            rc = later_recv(b, P_R, agent, TAG_R, NBR_BUF_RECV, recv[b->slots[0]].offset, bytes);
            continue;
        }
        size_t at = take_scratch(b, bytes);
        rc = later_recv(b, P_R, agent, TAG_R, NBR_BUF_SCRATCH, at, bytes);
        for (int k = 0; k < n && rc == NBR_SUCCESS; k++) {
            rc = later_copy(b, P_UNPACK, NBR_BUF_RECV, recv[b->slots[k]].offset, NBR_BUF_SCRATCH,
                            at, recv[b->slots[k]].bytes);
            at += recv[b->slots[k]].bytes;
        }
    }
    return rc;
}

static int emit(builder_t *b, nbr_plan_t *plan)
{
    int rc = NBR_SUCCESS;
    for (int p = 0; p < NUM_PHASES && rc == NBR_SUCCESS; p++) {
        rc = nbr_plan_begin_phase(plan);
        if (rc == NBR_SUCCESS && p == P_LOCAL)
            rc = nbr_add_self_copies(b->in, plan);
        for (int k = 0; k < b->num[p] && rc == NBR_SUCCESS; k++) {
            const nbr_op_t *op = &b->ops[p][k];
            rc = op->kind == NBR_OP_SEND ? nbr_plan_add_send(plan, op->peer, op->tag, op->buf,
                                                             op->offset, op->bytes)
                 : op->kind == NBR_OP_RECV
                     ? nbr_plan_add_recv(plan, op->peer, op->tag, op->buf, op->offset, op->bytes)
                     : nbr_plan_add_copy(plan, op->buf, op->offset, op->src_buf, op->src_offset,
                                         op->bytes);
        }
    }
    plan->scratch_bytes = b->scratch;
    return rc;
}

static int build(const nbr_plan_input_t *in, nbr_plan_t *plan)
{
    const facts_t *f = in->call_facts;
    if (!f) /* no exchange ran (a test, a tool): the naive plan */
        return nbr_build_naive(in, plan);
    if (f->status != NBR_SUCCESS || f->members[f->self].outdegree != in->outdegree ||
        f->members[f->self].indegree != in->indegree)
        return NBR_ERR_INTERNAL;
    builder_t b = {.in = in, .f = f};
    int members = f->num_members, rc = NBR_SUCCESS, most = 0;
    blocks_t *parts = calloc((size_t)members + 1, sizeof(blocks_t)), arrivals = {0};
    runs_t *runs = calloc((size_t)members + 1, sizeof(runs_t));
    if (!parts || !runs)
        rc = NBR_ERR_NOMEM;
    for (int m = 0; m < members && rc == NBR_SUCCESS; m++) {
        rc = parts_of(f, m, &parts[m]);
        if (rc == NBR_SUCCESS)
            rc = runs_of(&parts[m], &runs[m]);
    }
    if (rc == NBR_SUCCESS)
        rc = arrivals_of(f, &arrivals);
    most = arrivals.n > in->outdegree ? arrivals.n : in->outdegree;
    if (rc == NBR_SUCCESS && !(b.slots = malloc(((size_t)most + 1) * sizeof(int))))
        rc = NBR_ERR_NOMEM;
    if (rc == NBR_SUCCESS)
        rc = plan_local(&b);
    if (rc == NBR_SUCCESS)
        rc = plan_s_out(&b, &parts[f->self]);
    if (rc == NBR_SUCCESS)
        rc = plan_send_agent(&b, parts, runs);
    if (rc == NBR_SUCCESS)
        rc = plan_recv_agent(&b, &arrivals);
    if (rc == NBR_SUCCESS)
        rc = plan_r_in(&b, &arrivals);
    if (rc == NBR_SUCCESS)
        rc = emit(&b, plan);
    for (int m = 0; parts && m < members; m++)
        free(parts[m].b);
    for (int m = 0; runs && m < members; m++)
        free(runs[m].r);
    free(parts);
    free(runs);
    free(arrivals.b);
    free(b.slots);
    for (int p = 0; p < NUM_PHASES; p++)
        free(b.ops[p]);
    return rc;
}

/* ------------------------------------------------------------ the row */

static int load_params(MPI_Info info, void *params)
{
    nbr_aggregate_params_t *p = params;
    char region[16] = "node";
    int message_bytes = 16384;
    int rc = nbr_setting_string(info, "nbr_aggregate_region", "NBR_AGGREGATE_REGION", region,
                                (int)sizeof region);
    if (rc == NBR_SUCCESS && strcmp(region, "node") != 0 && strcmp(region, "socket") != 0) {
        NBR_ERROR("nbr_aggregate_region: '%s' is neither node nor socket", region);
        rc = NBR_ERR_INFO;
    }
    if (rc == NBR_SUCCESS)
        rc = nbr_setting_int(info, "nbr_aggregate_message_bytes", "NBR_AGGREGATE_MESSAGE_BYTES",
                             0, &message_bytes);
    p->by_socket = strcmp(region, "socket") == 0;
    p->message_bytes = (size_t)message_bytes;
    return rc;
}

const nbr_algorithm_t nbr_alg_aggregate = {
    .name = "aggregate",
    .description = "locality-aware alltoall(v,w): inside each node, agents gather the blocks "
                   "for other nodes, one message crosses per node pair, and the receiving "
                   "agents hand them out (many small messages between nodes)",
    .collectives = NBR_COLL_BIT(NBR_COLL_ALLTOALLV),
    .params_size = sizeof(nbr_aggregate_params_t),
    .load_params = load_params,
    .build = build,
    .build_pattern = build_regions,
    .free_pattern = free_regions,
    .call_facts_size = sizeof(facts_t),
    .call_facts_rounds = 4,
    .call_facts_init = facts_init,
    .call_facts_step = facts_step,
    .call_facts_check = facts_check,
    .call_facts_free = facts_free,
};
