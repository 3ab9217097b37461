/* aggregate's plan for one rank, from what its call facts exchange
 * decided (facts.c): l beside the packing copies, s, the gathering copies
 * of the sending agents, g, the scattering copies of the receiving agents,
 * r, the unpacking copies. Ops are collected per phase, then emitted in
 * that order. */
#include "alg/aggregate/internal.h"

#include "alg/builder.h"
#include "base/grow.h"

#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

/* Plan tags: messages inside a region (l), to the sending agent (s),
 * between regions (g), from the receiving agent (r). Each step has its own
 * so that messages of different steps between two ranks never pair up. */
enum { TAG_L = 0, TAG_S = 1, TAG_G = 2, TAG_R = 3 };

enum { P_LOCAL, P_S, P_GATHER, P_G, P_SCATTER, P_R, P_UNPACK, NUM_PHASES };

typedef struct builder {
    const nbr_plan_input_t *in;
    const nbr_aggregate_facts_t *f;
    nbr_op_t *ops[NUM_PHASES];
    int num[NUM_PHASES], capacity[NUM_PHASES];
    size_t scratch; /* scratch bytes taken so far */
} builder_t;

static int later(builder_t *b, int phase, nbr_op_t op)
{
    int rc = nbr_grow((void **)&b->ops[phase], &b->capacity[phase], b->num[phase] + 1, 16,
                      sizeof(nbr_op_t));
    if (rc == NBR_SUCCESS)
        b->ops[phase][b->num[phase]++] = op;
    return rc;
}

static int later_message(builder_t *b, int phase, int kind, int peer, int tag, int buf,
                         size_t at, uint64_t bytes)
{
    return later(b, phase, (nbr_op_t){.kind = (uint8_t)kind, .buf = (uint8_t)buf,
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

/* Where a piece of this rank's lies in a user buffer: its slot, and the
 * element in it for a value. */
static size_t piece_offset(const builder_t *b, const nbr_slot_t *slots, const nbr_piece_t *q)
{
    return slots[q->slot].offset + (size_t)q->element * b->f->element_bytes;
}

/* A run of (destination, source, bytes) moves: one message when the
 * sources follow each other (send in place), else packed into scratch. */
typedef struct move {
    size_t to, from;
    uint64_t bytes;
} move_t;

typedef struct moves {
    move_t *m;
    int n, capacity;
} moves_t;

static int add_move(moves_t *list, size_t to, size_t from, uint64_t bytes)
{
    int rc = nbr_grow((void **)&list->m, &list->capacity, list->n + 1, 16, sizeof(move_t));
    if (rc == NBR_SUCCESS)
        list->m[list->n++] = (move_t){to, from, bytes};
    return rc;
}

static int sources_follow(const moves_t *list)
{
    for (int k = 1; k < list->n; k++)
        if (list->m[k].from != list->m[k - 1].from + list->m[k - 1].bytes)
            return 0;
    return 1;
}

/* Sends the moves' sources (in buffer src_buf) to peer as one message:
 * in place when they follow each other, else packed in pack_phase. */
static int send_moves(builder_t *b, const moves_t *list, int src_buf, int pack_phase,
                      int send_phase, int peer, int tag)
{
    uint64_t bytes = 0;
    for (int k = 0; k < list->n; k++)
        bytes += list->m[k].bytes;
    if (sources_follow(list))
        return later_message(b, send_phase, NBR_OP_SEND, peer, tag, src_buf,
                             list->n ? list->m[0].from : 0, bytes);
    size_t at = take_scratch(b, bytes);
    int rc = later_message(b, send_phase, NBR_OP_SEND, peer, tag, NBR_BUF_SCRATCH, at, bytes);
    for (int k = 0; k < list->n && rc == NBR_SUCCESS; k++) {
        rc = later_copy(b, pack_phase, NBR_BUF_SCRATCH, at, src_buf, list->m[k].from,
                        list->m[k].bytes);
        at += (size_t)list->m[k].bytes;
    }
    return rc;
}

/* l: messages to and from members go directly. */
static int plan_local(builder_t *b)
{
    const nbr_plan_input_t *in = b->in;
    const nbr_layout_t *layout = in->layout;
    const nbr_aggregate_facts_t *f = b->f;
    int rc = NBR_SUCCESS;
    for (int i = 0; i < in->indegree && rc == NBR_SUCCESS; i++)
        if (in->sources[i] != in->rank && nbr_region_of(f->regions, in->sources[i]) == f->region)
            rc = later_message(b, P_LOCAL, NBR_OP_RECV, in->sources[i], TAG_L, NBR_BUF_RECV,
                               layout->recv[i].offset, layout->recv[i].bytes);
    for (int j = 0; j < in->outdegree && rc == NBR_SUCCESS; j++)
        if (in->destinations[j] != in->rank &&
            nbr_region_of(f->regions, in->destinations[j]) == f->region)
            rc = later_message(b, P_LOCAL, NBR_OP_SEND, in->destinations[j], TAG_L, NBR_BUF_SEND,
                               layout->send[j].offset, layout->send[j].bytes);
    return rc;
}

/* s, this rank's end: to each other member that sends for some of the
 * regions it has parts for, one message with those parts in order. */
static int plan_s_out(builder_t *b, moves_t *moves)
{
    const nbr_aggregate_facts_t *f = b->f;
    const nbr_pieces_t *mine = &f->parts[f->self];
    int rc = NBR_SUCCESS;
    for (int m = 0; m < f->num_members && rc == NBR_SUCCESS; m++) {
        int agent = f->members[m].rank;
        if (agent == f->rank)
            continue;
        moves->n = 0;
        for (int k = 0; k < mine->n && rc == NBR_SUCCESS; k++)
            if (f->send_agent[mine->p[k].region] == agent)
                rc = add_move(moves, 0, piece_offset(b, b->in->layout->send, &mine->p[k]),
                              mine->p[k].bytes);
        if (rc == NBR_SUCCESS && moves->n > 0)
            rc = send_moves(b, moves, NBR_BUF_SEND, P_LOCAL, P_S, agent, TAG_S);
    }
    return rc;
}

/* Member m's part for region x: its first piece and bytes (count 0: none). */
typedef struct run {
    int first, count;
    uint64_t bytes;
} run_t;

static run_t run_for(const nbr_pieces_t *parts, int x)
{
    run_t run = {0, 0, 0};
    int lo = 0, hi = parts->n; /* the first piece of region >= x */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (parts->p[mid].region < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    run.first = lo;
    for (int k = lo; k < parts->n && parts->p[k].region == x; k++) {
        run.count++;
        run.bytes += parts->p[k].bytes;
    }
    return run;
}

/* Whether member m has any part for a region this rank sends for before
 * x (its message to this agent then starts with another region). */
static int covered_before(const nbr_aggregate_facts_t *f, const nbr_pieces_t *parts, int x)
{
    for (int k = 0; k < parts->n && parts->p[k].region < x; k++)
        if (f->send_agent[parts->p[k].region] == f->rank)
            return 1;
    return 0;
}

/* s and g at a sending agent: for each region it sends for, one area with
 * every member's part in rank order, sent whole. Its own part is copied
 * in; a member's message lands in place when it carries one region's part
 * only, else in an area of its own, copied out in pieces. */
static int plan_send_agent(builder_t *b)
{
    const nbr_aggregate_facts_t *f = b->f;
    int members = f->num_members, rc = NBR_SUCCESS;
    size_t *cursor = calloc((size_t)members + 1, sizeof(size_t)); /* in a member's area */
    int *regions = calloc((size_t)members + 1, sizeof(int));      /* in its message */
    uint64_t *bytes = calloc((size_t)members + 1, sizeof(uint64_t));
    if (!cursor || !regions || !bytes)
        rc = NBR_ERR_NOMEM;
    for (int m = 0; m < members && rc == NBR_SUCCESS; m++)
        for (int k = 0; k < f->parts[m].n; k++) {
            const nbr_piece_t *q = &f->parts[m].p[k];
            if (f->send_agent[q->region] != f->rank)
                continue;
            regions[m] += k == 0 || f->parts[m].p[k - 1].region != q->region;
            bytes[m] += q->bytes;
        }
    for (int x = 0; x < f->regions->count && rc == NBR_SUCCESS; x++) {
        if (f->send_agent[x] != f->rank)
            continue;
        size_t area = take_scratch(b, f->send_total[x]), at = area;
        for (int m = 0; m < members && rc == NBR_SUCCESS; m++) {
            const nbr_pieces_t *parts = &f->parts[m];
            run_t run = run_for(parts, x);
            if (run.count == 0)
                continue;
            int rank = f->members[m].rank;
            if (m == f->self) {
                size_t to = at;
                for (int k = run.first; k < run.first + run.count && rc == NBR_SUCCESS; k++) {
                    rc = later_copy(b, P_LOCAL, NBR_BUF_SCRATCH, to, NBR_BUF_SEND,
                                    piece_offset(b, b->in->layout->send, &parts->p[k]),
                                    parts->p[k].bytes);
                    to += (size_t)parts->p[k].bytes;
                }
            } else if (regions[m] == 1) {
                rc = later_message(b, P_S, NBR_OP_RECV, rank, TAG_S, NBR_BUF_SCRATCH, at,
                                   run.bytes);
            } else {
                if (!covered_before(f, parts, x)) { /* its message's first region */
                    cursor[m] = take_scratch(b, bytes[m]);
                    rc = later_message(b, P_S, NBR_OP_RECV, rank, TAG_S, NBR_BUF_SCRATCH,
                                       cursor[m], bytes[m]);
                }
                if (rc == NBR_SUCCESS)
                    rc = later_copy(b, P_GATHER, NBR_BUF_SCRATCH, at, NBR_BUF_SCRATCH,
                                    cursor[m], run.bytes);
                cursor[m] += (size_t)run.bytes;
            }
            at += (size_t)run.bytes;
        }
        if (rc == NBR_SUCCESS && f->send_partner[x] >= 0) /* else the check said why */
            rc = later_message(b, P_G, NBR_OP_SEND, f->send_partner[x], TAG_G, NBR_BUF_SCRATCH,
                               area, f->send_total[x]);
    }
    free(cursor);
    free(regions);
    free(bytes);
    return rc;
}

/* Member m's deliveries: the arrivals it takes, ascending (aggregate: its
 * blocks; dedup: every value one of its elements holds). */
static int deliveries_of(const nbr_aggregate_facts_t *f, int m, int **list, int *count)
{
    const nbr_member_t *mem = &f->members[m];
    size_t most = f->element_bytes ? mem->in_at[mem->indegree] : (size_t)mem->indegree;
    int *d = malloc((most + 1) * sizeof(int)), n = 0;
    if (!d)
        return NBR_ERR_NOMEM;
    for (int i = 0; i < mem->indegree; i++) {
        int x = nbr_region_of(f->regions, mem->in[i]);
        if (x == f->region)
            continue;
        if (!f->element_bytes) {
            d[n++] = nbr_aggregate_arrival(f, x, mem->in[i], mem->rank, i);
            continue;
        }
        for (size_t k = mem->in_at[i]; k < mem->in_at[i + 1]; k++)
            d[n++] = nbr_aggregate_arrival(f, x, mem->in[i], -1, mem->in_index[k]);
    }
    /* ascending, once each (insertion sort: lists are short and nearly sorted) */
    for (int k = 1; k < n; k++)
        for (int j = k; j > 0 && d[j - 1] > d[j]; j--) {
            int t = d[j];
            d[j] = d[j - 1];
            d[j - 1] = t;
        }
    int kept = 0;
    for (int k = 0; k < n; k++)
        if (d[k] >= 0 && (kept == 0 || d[kept - 1] != d[k]))
            d[kept++] = d[k];
    *list = d;
    *count = kept;
    return NBR_SUCCESS;
}

/* g and r at a receiving agent: one area per region it receives from, in
 * the sender's order; then each other member gets one message with its
 * deliveries from those regions. at[a] keeps where arrival a sits. */
static int plan_recv_agent(builder_t *b, size_t *at, moves_t *moves)
{
    const nbr_aggregate_facts_t *f = b->f;
    const nbr_pieces_t *arrivals = &f->arrivals;
    int rc = NBR_SUCCESS;
    /* every region it receives for, pieces or none (dedup: blocks of no
     * elements), in region order as the arrivals are */
    for (int x = 0, k = 0; x < f->regions->count && rc == NBR_SUCCESS; x++) {
        int end = k;
        while (end < arrivals->n && arrivals->p[end].region == x)
            end++;
        if (f->recv_agent[x] == f->rank) {
            uint64_t announced = f->recv_partner[x] >= 0 ? f->announced[x] : 0;
            uint64_t room = announced > f->recv_total[x] ? announced : f->recv_total[x];
            size_t area = take_scratch(b, room), next = area;
            if (f->recv_partner[x] >= 0) /* the size the sender sends: no truncation */
                rc = later_message(b, P_G, NBR_OP_RECV, f->recv_partner[x], TAG_G,
                                   NBR_BUF_SCRATCH, area, announced);
            for (int e = k; e < end; e++) {
                at[e] = next;
                next += (size_t)arrivals->p[e].bytes;
            }
        }
        k = end;
    }
    for (int m = 0; m < f->num_members && rc == NBR_SUCCESS; m++) {
        if (m == f->self)
            continue;
        int *d = NULL, n = 0;
        rc = deliveries_of(f, m, &d, &n);
        moves->n = 0;
        for (int k = 0; k < n && rc == NBR_SUCCESS; k++)
            if (f->recv_agent[arrivals->p[d[k]].region] == f->rank)
                rc = add_move(moves, 0, at[d[k]], arrivals->p[d[k]].bytes);
        if (rc == NBR_SUCCESS && moves->n > 0)
            rc = send_moves(b, moves, NBR_BUF_SCRATCH, P_SCATTER, P_R, f->members[m].rank, TAG_R);
        free(d);
    }
    return rc;
}

/* r, this rank's end: its deliveries, from each agent in one message (or
 * its own areas when it is the agent), then every remote receive slot
 * (aggregate) or element (dedup) is filled from its piece: in place when
 * the message maps onto the slots in order, else unpacked. */
static int plan_r_in(builder_t *b, const size_t *at, moves_t *moves)
{
    const nbr_aggregate_facts_t *f = b->f;
    const nbr_pieces_t *arrivals = &f->arrivals;
    const nbr_member_t *me = &f->members[f->self];
    const nbr_slot_t *recv = b->in->layout->recv;
    int *d = NULL, n = 0, rc = deliveries_of(f, f->self, &d, &n);
    size_t *from = rc == NBR_SUCCESS ? malloc(((size_t)arrivals->n + 1) * sizeof(size_t)) : NULL;
    if (rc == NBR_SUCCESS && !from)
        rc = NBR_ERR_NOMEM;
    for (int m = 0; m < f->num_members && rc == NBR_SUCCESS; m++) {
        int agent = f->members[m].rank, count = 0;
        uint64_t bytes = 0;
        for (int k = 0; k < n; k++)
            if (f->recv_agent[arrivals->p[d[k]].region] == agent) {
                from[d[k]] = bytes; /* offset in the agent's message, for now */
                bytes += arrivals->p[d[k]].bytes;
                count++;
            }
        if (count == 0)
            continue;
        /* the receive slots or elements this message fills, in its order */
        moves->n = 0;
        for (int i = 0; i < me->indegree && rc == NBR_SUCCESS; i++) {
            int x = nbr_region_of(f->regions, me->in[i]);
            if (x == f->region || f->recv_agent[x] != agent)
                continue;
            if (!f->element_bytes) {
                int a = nbr_aggregate_arrival(f, x, me->in[i], f->rank, i);
                rc = a < 0 ? NBR_ERR_INTERNAL : add_move(moves, recv[i].offset, (size_t)a,
                                                          arrivals->p[a].bytes);
                continue;
            }
            for (size_t k = me->in_at[i]; k < me->in_at[i + 1] && rc == NBR_SUCCESS; k++) {
                int a = nbr_aggregate_arrival(f, x, me->in[i], -1, me->in_index[k]);
                rc = a < 0 ? NBR_ERR_INTERNAL
                           : add_move(moves, recv[i].offset + (k - me->in_at[i]) * f->element_bytes,
                                      (size_t)a, f->element_bytes);
            }
        }
        if (rc != NBR_SUCCESS)
            break;
        /* from: arrival -> its bytes in the message (or this rank's areas) */
        for (int k = 0; k < moves->n; k++)
            moves->m[k].from = agent == f->rank ? at[moves->m[k].from] : from[moves->m[k].from];
        if (agent == f->rank) { /* its own areas: straight to the slots */
            for (int k = 0; k < moves->n && rc == NBR_SUCCESS; k++)
                rc = later_copy(b, P_SCATTER, NBR_BUF_RECV, moves->m[k].to, NBR_BUF_SCRATCH,
                                moves->m[k].from, moves->m[k].bytes);
            continue;
        }
        /* in place: every piece used once, slots in the message's order */
        int direct = moves->n == count;
        for (int k = 0; k < moves->n && direct; k++)
            direct = moves->m[k].from == (k ? moves->m[k - 1].from + moves->m[k - 1].bytes : 0) &&
                     (k == 0 || moves->m[k].to == moves->m[k - 1].to + moves->m[k - 1].bytes);
        if (direct) {
            rc = later_message(b, P_R, NBR_OP_RECV, agent, TAG_R, NBR_BUF_RECV, moves->m[0].to,
                               bytes);
            continue;
        }
        size_t area = take_scratch(b, bytes);
        rc = later_message(b, P_R, NBR_OP_RECV, agent, TAG_R, NBR_BUF_SCRATCH, area, bytes);
        for (int k = 0; k < moves->n && rc == NBR_SUCCESS; k++)
            rc = later_copy(b, P_UNPACK, NBR_BUF_RECV, moves->m[k].to, NBR_BUF_SCRATCH,
                            area + moves->m[k].from, moves->m[k].bytes);
    }
    free(d);
    free(from);
    return rc;
}

/* Copies that continue each other (both ends) become one: values of a
 * slot unpacked in order, a member's pieces packed in order. */
static void join_copies(builder_t *b, int phase)
{
    nbr_op_t *ops = b->ops[phase];
    int kept = 0;
    for (int k = 0; k < b->num[phase]; k++) {
        nbr_op_t *last = kept ? &ops[kept - 1] : NULL;
        const nbr_op_t *op = &ops[k];
        if (last && op->kind == NBR_OP_COPY && last->kind == NBR_OP_COPY &&
            last->buf == op->buf && last->src_buf == op->src_buf &&
            last->offset + last->bytes == op->offset &&
            last->src_offset + last->bytes == op->src_offset)
            last->bytes += op->bytes;
        else
            ops[kept++] = *op;
    }
    b->num[phase] = kept;
}

static int emit(builder_t *b, nbr_plan_t *plan)
{
    int rc = NBR_SUCCESS;
    for (int p = 0; p < NUM_PHASES; p++)
        join_copies(b, p);
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

int nbr_aggregate_build(const nbr_plan_input_t *in, nbr_plan_t *plan)
{
    const nbr_aggregate_facts_t *f = in->call_facts;
    if (!f) /* no exchange ran (a tool, a test): the naive plan */
        return nbr_build_naive(in, plan);
    if (f->status != NBR_SUCCESS || f->members[f->self].outdegree != in->outdegree ||
        f->members[f->self].indegree != in->indegree)
        return NBR_ERR_INTERNAL;
    builder_t b = {.in = in, .f = f};
    moves_t moves = {0};
    size_t *at = malloc(((size_t)f->arrivals.n + 1) * sizeof(size_t));
    int rc = at ? plan_local(&b) : NBR_ERR_NOMEM;
    if (rc == NBR_SUCCESS)
        rc = plan_s_out(&b, &moves);
    if (rc == NBR_SUCCESS)
        rc = plan_send_agent(&b);
    if (rc == NBR_SUCCESS)
        rc = plan_recv_agent(&b, at, &moves);
    if (rc == NBR_SUCCESS)
        rc = plan_r_in(&b, at, &moves);
    if (rc == NBR_SUCCESS)
        rc = emit(&b, plan);
    free(at);
    free(moves.m);
    for (int p = 0; p < NUM_PHASES; p++)
        free(b.ops[p]);
    return rc;
}
