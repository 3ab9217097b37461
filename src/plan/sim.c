#include "plan/sim.h"

#include "plan/match.h"

#include <nbrcoll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum event_kind { EVENT_PHASE = 0, EVENT_SEND = 1, EVENT_NIC = 2 };

/* Something happens at a time: a rank starts its next phase, or issues its
 * next send once its port is free, or a network interface finishes a
 * message (`rank` is then the interface's index). Ties go by kind, then
 * index: one answer. */
typedef struct event {
    double time;
    int kind, rank;
} event_t;

/* Events by time, earliest first (binary heap). */
typedef struct event_heap {
    event_t *items;
    int size, capacity;
} event_heap_t;

/* One direction of a network interface, shared fairly: the messages
 * passing through it at once each get an equal part of its rate (processor
 * sharing), as TCP connections or a NIC's queue pairs do. Its clock is the
 * service each of them has had (`served`, seconds at the full rate), which
 * runs at 1/k of real time while k messages share it; a message of w
 * seconds at the full rate that enters at served = v leaves when served
 * reaches v + w. First come, first served instead let the first message of
 * a phase leave early and its relay start early, which halving's chains
 * on sparse graphs do not (docs/decisions.md, D14). */
typedef struct nic {
    double served, updated; /* served, brought up to date at `updated` */
    double wake;            /* the pending event's time; < 0: none */
    double burst;           /* seconds at its rate it still passes at once */
    event_heap_t flows; /* its messages: time is the served at which each
                         * is through, rank the message (op index) */
} nic_t;

typedef struct rank_state {
    int phase;       /* the phase running (num_phases: done) */
    int pending;     /* messages of the phase not completed */
    int next_send;   /* op index of the next send to issue in the phase */
    int phase_end;   /* the phase's last op index + 1 */
    double end;      /* when the phase can end, so far */
    double port_free;
    int lone_pair;   /* its messages between nodes go to and come from one
                      * peer (machine.h, pair_gbytes_per_s) */
} rank_state_t;

typedef struct sim {
    const nbr_sim_input_t *in;
    nbr_job_ops_t ops;
    double *when;      /* send: arrival time; receive: when posted; < 0: not yet */
    rank_state_t *rank;
    int *nic_of;       /* rank -> NIC index in its node */
    nic_t *nic; /* out: node * nics + nic; in: that + nodes * nics */
    int nics, nic_count;
    double *due;        /* network message: its arrival so far */
    unsigned char *nics_left; /* network message: interfaces not yet through */
    int cores;         /* per pool; 0: every rank has a core of its own */
    double *core_free; /* pool * cores + core -> free from */
    double *handoff_free; /* the same cores' queue of message hand-offs */
    char *contended;   /* pool -> more ranks than cores */
    uint64_t *network_messages, *network_bytes; /* per sending rank */
    event_heap_t events;
    nbr_sim_result_t *result;
    char *message;
    size_t message_size;
} sim_t;

static int fail(sim_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(sim_t *s, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    if (s->message && s->message_size)
        vsnprintf(s->message, s->message_size, fmt, args);
    va_end(args);
    return NBR_ERR_INTERNAL;
}

/* ------------------------------------------------------------ the heap */

static int earlier(const event_t *a, const event_t *b)
{
    if (a->time != b->time)
        return a->time < b->time;
    if (a->kind != b->kind)
        return a->kind < b->kind;
    return a->rank < b->rank;
}

static int heap_push(event_heap_t *h, event_t e)
{
    if (h->size == h->capacity) {
        int capacity = h->capacity ? 2 * h->capacity : 16;
        event_t *grown = realloc(h->items, (size_t)capacity * sizeof(event_t));
        if (!grown)
            return NBR_ERR_NOMEM;
        h->items = grown;
        h->capacity = capacity;
    }
    int i = h->size++;
    while (i > 0 && earlier(&e, &h->items[(i - 1) / 2])) {
        h->items[i] = h->items[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->items[i] = e;
    return NBR_SUCCESS;
}

static event_t heap_pop(event_heap_t *h)
{
    event_t top = h->items[0], last = h->items[--h->size];
    int i = 0;
    for (;;) {
        int child = 2 * i + 1;
        if (child >= h->size)
            break;
        if (child + 1 < h->size && earlier(&h->items[child + 1], &h->items[child]))
            child++;
        if (!earlier(&h->items[child], &last))
            break;
        h->items[i] = h->items[child];
        i = child;
    }
    h->items[i] = last;
    return top;
}

static int push(sim_t *s, double time, int kind, int rank)
{
    return heap_push(&s->events, (event_t){time, kind, rank});
}

/* ------------------------------------------------------------ paths */

nbr_path_t nbr_sim_path(const nbr_sim_input_t *in, int a, int b)
{
    const nbr_locality_t *loc = in->locality;
    if (a == b)
        return in->device_buffers ? NBR_PATH_DEVICE : NBR_PATH_COPY;
    if (loc && loc->node_of[a] != loc->node_of[b])
        return NBR_PATH_NETWORK;
    if (in->device_buffers)
        return NBR_PATH_GPU;
    return loc && loc->socket_of[a] != loc->socket_of[b] ? NBR_PATH_NODE : NBR_PATH_SOCKET;
}

/* Bandwidth of one message on its path: the node model's GPU pair
 * bandwidth where it gives one, the machine's otherwise. */
static double path_bandwidth(const nbr_sim_input_t *in, nbr_path_t path, int a, int b)
{
    const nbr_locality_t *loc = in->locality;
    if (path == NBR_PATH_GPU && loc && loc->gpu_of) {
        int x = loc->gpu_of[a], y = loc->gpu_of[b];
        const nbr_node_model_t *model = &loc->model;
        if (x >= 0 && y >= 0 && x != y && x < model->num_gpus && y < model->num_gpus &&
            model->bandwidth && NBR_TOPO_AT(model, bandwidth, x, y) > 0)
            return NBR_TOPO_AT(model, bandwidth, x, y) * 1e9;
    }
    return in->machine->path[path].bandwidth;
}

/* A rank's network interface on its node: by its GPU when it has one,
 * else by its place among the node's on_node ranks. */
static int nic_index(const nbr_locality_t *loc, int nics, int r, int on_node)
{
    int gpus = loc->model.num_gpus, gpu = loc->gpu_of ? loc->gpu_of[r] : -1;
    return gpu >= 0 && gpus > 0 ? gpu * nics / gpus : loc->local_rank_of[r] * nics / on_node;
}

static int assign_nics(sim_t *s)
{
    const nbr_locality_t *loc = s->in->locality;
    int n = s->in->nranks, nodes = loc ? loc->num_nodes : 1;
    s->nics = s->in->machine->nics > 0 ? s->in->machine->nics : 1;
    int *on_node = calloc((size_t)nodes + 1, sizeof(int));
    s->nic_of = calloc((size_t)n + 1, sizeof(int));
    s->nic_count = 2 * nodes * s->nics;
    s->nic = calloc((size_t)s->nic_count + 1, sizeof(nic_t));
    if (!on_node || !s->nic_of || !s->nic) {
        free(on_node);
        return NBR_ERR_NOMEM;
    }
    for (int k = 0; k < s->nic_count; k++) {
        s->nic[k].wake = -1;
        s->nic[k].burst = s->in->machine->nic_burst / s->in->machine->nic_bandwidth;
    }
    for (int r = 0; loc && r < n; r++)
        on_node[loc->node_of[r]]++;
    for (int r = 0; loc && r < n; r++)
        s->nic_of[r] = nic_index(loc, s->nics, r, on_node[loc->node_of[r]]);
    free(on_node);
    return NBR_SUCCESS;
}

/* The machine's CPU pools (machine.h, `cores`): one per node, or one for
 * the whole job; only a pool with more ranks than cores ever makes a rank
 * wait. A pool runs the byte time of host-memory paths (and of network
 * bytes at the cores' rate) and, in a queue of its own, each message's
 * hand-off (message_us); a message's start-up overhead stays on its rank's
 * port. Queueing those overheads in the pool instead, with no per-call
 * start, made relay plans' phases nearly free; a hand-off measured as what
 * each further message costs the whole job, with the start measured
 * beside it, scores better at every size (docs/decisions.md, D17). */
static int cpu_pool(const sim_t *s, int r)
{
    return s->in->machine->cores_per_job || !s->in->locality ? 0 : s->in->locality->node_of[r];
}

static int assign_cores(sim_t *s)
{
    const nbr_machine_t *m = s->in->machine;
    const nbr_locality_t *loc = s->in->locality;
    int n = s->in->nranks, pools = m->cores_per_job || !loc ? 1 : loc->num_nodes;
    if (m->cores <= 0)
        return NBR_SUCCESS;
    int *ranks = calloc((size_t)pools, sizeof(int));
    s->core_free = calloc((size_t)pools * (size_t)m->cores, sizeof(double));
    s->handoff_free = calloc((size_t)pools * (size_t)m->cores, sizeof(double));
    s->contended = calloc((size_t)pools, 1);
    if (!ranks || !s->core_free || !s->handoff_free || !s->contended) {
        free(ranks);
        return NBR_ERR_NOMEM;
    }
    s->cores = m->cores;
    for (int r = 0; r < n; r++)
        ranks[cpu_pool(s, r)]++;
    for (int p = 0; p < pools; p++)
        s->contended[p] = ranks[p] > m->cores;
    free(ranks);
    return NBR_SUCCESS;
}

/* Paths whose bytes a CPU moves (memcpy through host memory): their byte
 * time is CPU work; on the others it is a wire's or a DMA engine's. */
static int cpu_moves_bytes(nbr_path_t path)
{
    return path == NBR_PATH_COPY || path == NBR_PATH_SOCKET || path == NBR_PATH_NODE;
}

/* Whether rank r shares its pool's cores with more ranks than they are. */
static int shares_cores(const sim_t *s, int r)
{
    return s->cores && s->contended[cpu_pool(s, r)];
}

/* Rank r has `seconds` of CPU work from time t in a queue of its pool's
 * cores (free_from: pool * cores + core): when it starts. In a contended
 * pool that is when it gets a core (the one free soonest, first come,
 * first served); else at once. */
static double queue_start(sim_t *s, double *queue, int r, double t, double seconds)
{
    if (seconds <= 0 || !shares_cores(s, r))
        return t;
    int pool = cpu_pool(s, r);
    double *free_from = &queue[(size_t)pool * (size_t)s->cores];
    int soonest = 0;
    for (int c = 1; c < s->cores; c++)
        if (free_from[c] < free_from[soonest])
            soonest = c;
    double start = t > free_from[soonest] ? t : free_from[soonest];
    free_from[soonest] = start + seconds;
    return start;
}

/* Byte time (copies, host-memory messages, network bytes at the cores'
 * rate): the long blocks of the cores' work. */
static double core_start(sim_t *s, int r, double t, double seconds)
{
    return queue_start(s, s->core_free, r, t, seconds);
}

/* Whether rank r hands its messages off (machine.h, message_us): on
 * shared cores, where the hand-off stands for their start-up's CPU time. */
static int hands_off(const sim_t *s, int r)
{
    return s->in->machine->core_message_seconds > 0 && shares_cores(s, r);
}

/* A message's hand-off: when rank r's send from time t may go. Hand-offs
 * share the cores with each other in a queue of their own, not behind the
 * byte time: the kernel slices a core between ranks, so a turn of a few
 * microseconds does not wait out another rank's milliseconds of copying
 * (one queue for both priced the emulated 4 x 4 cluster's grid from 256
 * KiB up worse: 183 of 225 within 25 %, not 210). */
static double handoff_done(sim_t *s, int r, double t, nbr_path_t path)
{
    const nbr_machine_t *m = s->in->machine;
    double seconds = m->core_message_seconds;
    if (!hands_off(s, r))
        return t; /* a core of its own: its port's overhead is all */
    if (m->core_message_network_only && path != NBR_PATH_NETWORK)
        return t; /* inside a node: no turn to wait for (message_paths) */
    return queue_start(s, s->handoff_free, r, t, seconds) + seconds;
}

/* Seconds a send from rank r holds its port before its bytes: the path's
 * start-up overhead, except where r hands its messages off on shared
 * cores. There the hand-off, measured with every rank at work, is that
 * CPU time, and the overhead nbr_calibrate measures on one pair while the
 * other ranks wait would count it again on every sender's port, pricing
 * the rank with the most network messages far too slow (docs/decisions.md,
 * D18). The whole start-up is then flight. */
static double send_overhead(const sim_t *s, int r, nbr_path_t path)
{
    return hands_off(s, r) ? 0 : nbr_path_busy_seconds(s->in->machine, path, 0);
}

/* The rest of the start-up: latency in flight after the sender let go. */
static double flight_seconds(const sim_t *s, int r, nbr_path_t path)
{
    return s->in->machine->path[path].alpha - send_overhead(s, r, path);
}

/* Core time of a network message's bytes that its sender's interface
 * holds back (held of them, of bytes in all; machine.h): a lone pair's
 * (only ever set where the machine has a pair rate) at its own rates, the
 * first pair_after_bytes' and the rest's. */
static double network_core_seconds(const nbr_machine_t *m, int lone_pair, size_t bytes, double held)
{
    if (!lone_pair)
        return held / m->core_network_bandwidth;
    double first = m->core_pair_first_bandwidth > 0 ? m->core_pair_first_bandwidth
                                                    : m->core_network_bandwidth;
    double paired = bytes > m->core_pair_after ? (double)(bytes - m->core_pair_after) : 0;
    paired = paired < held ? paired : held;
    return (held - paired) / first + paired / m->core_pair_bandwidth;
}

/* Whether rank r's ops first..end-1 that cross nodes all have one peer and
 * go both ways. */
static int is_lone_pair(const sim_t *s, int r, const nbr_op_t *ops, int first, int end)
{
    int peer = -1, sends = 0, recvs = 0;
    for (int i = first; i < end; i++) {
        if (ops[i].kind == NBR_OP_COPY || nbr_sim_path(s->in, r, ops[i].peer) != NBR_PATH_NETWORK)
            continue;
        if (peer >= 0 && ops[i].peer != peer)
            return 0;
        peer = ops[i].peer;
        sends += ops[i].kind == NBR_OP_SEND;
        recvs += ops[i].kind == NBR_OP_RECV;
    }
    return sends > 0 && recvs > 0;
}

/* Rank r has `seconds` of bytes to move on path from time t: when it
 * starts (at once unless a CPU moves them). */
static double bytes_start(sim_t *s, int r, double t, nbr_path_t path, double seconds)
{
    return cpu_moves_bytes(path) ? core_start(s, r, t, seconds) : t;
}

/* ------------------------------------------------------------ running */

static int start_phase(sim_t *s, int r, double t);

/* Both ends of a message are done at time t: the phases waiting for it
 * may end. */
static int complete_end(sim_t *s, int r, double t)
{
    rank_state_t *st = &s->rank[r];
    if (t > st->end)
        st->end = t;
    if (--st->pending > 0)
        return NBR_SUCCESS;
    st->phase++;
    /* on shared cores the rank gave its core away while it waited; the
     * next phase starts once it has one again (machine.h, wake_us) */
    double wake = st->phase < s->in->plans[r].num_phases && shares_cores(s, r)
                      ? s->in->machine->core_wake_seconds
                      : 0;
    return push(s, st->end + wake, EVENT_PHASE, r);
}

static int complete(sim_t *s, int send, int recv)
{
    double t = s->when[send] > s->when[recv] ? s->when[send] : s->when[recv];
    int rc = complete_end(s, s->ops.owner[send], t);
    return rc == NBR_SUCCESS ? complete_end(s, s->ops.owner[recv], t) : rc;
}

/* ------------------------------------------------------------ network interfaces */

static void nic_catch_up(nic_t *nic, double t)
{
    if (nic->flows.size > 0 && t > nic->updated)
        nic->served += (t - nic->updated) / nic->flows.size;
    if (t > nic->updated)
        nic->updated = t;
}

/* An event when its first message is done, unless one as early is pending
 * (a later one found pending is passed over when it comes: see nic_event). */
static int nic_wake(sim_t *s, int k)
{
    nic_t *nic = &s->nic[k];
    if (nic->flows.size == 0)
        return NBR_SUCCESS;
    double left = nic->flows.items[0].time - nic->served;
    double when = nic->updated + (left > 0 ? left * nic->flows.size : 0);
    if (nic->wake >= 0 && when >= nic->wake)
        return NBR_SUCCESS;
    nic->wake = when;
    return push(s, when, EVENT_NIC, k);
}

/* The part of w seconds of bytes at interface k's rate that its burst
 * does not pass at once (machine.h, burst_bytes): the first bytes sent
 * through it in a call use the burst up. */
static double past_burst(sim_t *s, int k, double w)
{
    double rest = w - s->nic[k].burst;
    s->nic[k].burst = rest < 0 ? -rest : 0;
    return rest > 0 ? rest : 0;
}

/* Seconds of a network message's bytes (bytes_time at the path's rate)
 * on its sender's port and in flight, where of its wire time (seconds at
 * the interfaces' rate) past_out and past_in did not pass on the
 * interfaces' bursts: the part that did passes at the burst's rate where
 * the machine gives one (machine.h, burst_gbytes_per_s). */
static double network_bytes_seconds(const nbr_machine_t *m, size_t bytes, double bytes_time,
                                    double wire, double past_out, double past_in)
{
    if (!(m->nic_burst_bandwidth > 0) || !(wire > 0))
        return bytes_time;
    double held = (past_out > past_in ? past_out : past_in) / wire; /* share at the link's rate */
    return bytes_time * held + (double)bytes * (1 - held) / m->nic_burst_bandwidth;
}

/* Message op (w seconds of bytes at the interface's full rate) enters
 * interface k at time t. */
static int nic_enter(sim_t *s, int k, int op, double t, double w)
{
    nic_t *nic = &s->nic[k];
    nic_catch_up(nic, t);
    int rc = heap_push(&nic->flows, (event_t){nic->served + w, EVENT_NIC, op});
    return rc == NBR_SUCCESS ? nic_wake(s, k) : rc;
}

/* A message is through both interfaces: it arrives a flight later (or when
 * its sender's side says, if later), and completes once received. */
static int nic_passed(sim_t *s, int g, double t)
{
    double flight = flight_seconds(s, s->ops.owner[g], NBR_PATH_NETWORK);
    if (t + flight > s->due[g])
        s->due[g] = t + flight;
    if (--s->nics_left[g] > 0)
        return NBR_SUCCESS;
    s->when[g] = s->due[g];
    int partner = s->ops.partner[g];
    return s->when[partner] >= 0 ? complete(s, g, partner) : NBR_SUCCESS;
}

/* Interface k's event at time t: the messages whose bytes are done leave
 * it. An event for a time since put off (more messages came) is passed
 * over; the earliest pending one is the one kept in wake. */
static int nic_event(sim_t *s, int k, double t)
{
    nic_t *nic = &s->nic[k];
    if (t != nic->wake)
        return NBR_SUCCESS;
    nic->wake = -1;
    nic_catch_up(nic, t);
    int rc = NBR_SUCCESS;
    /* the relative slack absorbs rounding in served's running sum */
    while (rc == NBR_SUCCESS && nic->flows.size > 0 &&
           nic->flows.items[0].time <= nic->served + 1e-12 * (1 + nic->served))
        rc = nic_passed(s, heap_pop(&nic->flows).rank, t);
    if (nic->flows.size == 0)
        nic->served = 0; /* idle: start the clock afresh, keeping it small */
    return rc == NBR_SUCCESS ? nic_wake(s, k) : rc;
}

/* The phase's next send: the port, then for another node both NICs. */
static int issue_send(sim_t *s, int r, double t)
{
    rank_state_t *st = &s->rank[r];
    const nbr_plan_t *plan = &s->in->plans[r];
    while (st->next_send < st->phase_end && plan->ops[st->next_send].kind != NBR_OP_SEND)
        st->next_send++;
    if (st->next_send >= st->phase_end)
        return NBR_SUCCESS;
    const nbr_op_t *op = &plan->ops[st->next_send];
    int g = s->ops.base[r] + st->next_send++;
    const nbr_machine_t *m = s->in->machine;
    nbr_path_t path = nbr_sim_path(s->in, r, op->peer);
    double alpha = m->path[path].alpha, bytes_time = (double)op->bytes / path_bandwidth(s->in, path, r, op->peer);
    int out = 0, in = 0;
    double wire_out = 0, wire_in = 0;
    if (path == NBR_PATH_NETWORK) {
        /* its bytes use up both interfaces' bursts first */
        const nbr_locality_t *loc = s->in->locality;
        out = loc->node_of[r] * s->nics + s->nic_of[r];
        in = s->nic_count / 2 + loc->node_of[op->peer] * s->nics + s->nic_of[op->peer];
        double wire = (double)op->bytes / m->nic_bandwidth;
        wire_out = past_burst(s, out, wire);
        wire_in = past_burst(s, in, wire);
        bytes_time = network_bytes_seconds(m, op->bytes, bytes_time, wire, wire_out, wire_in);
    }
    double overhead = send_overhead(s, r, path), busy = overhead + bytes_time; /* the port */
    t = handoff_done(s, r, t, path);
    t = bytes_start(s, r, t, path, bytes_time);
    double arrival = t + alpha + bytes_time;
    st->port_free = t + busy;
    int rc = NBR_SUCCESS;
    s->result->messages[path]++;
    s->result->bytes[path] += op->bytes;
    if (path == NBR_PATH_NETWORK) {
        double sent = t + overhead, flight = flight_seconds(s, r, path);
        /* the shared cores' time on the bytes the sender's interface holds
         * back, beside the wire, for a message sent by rendezvous
         * (machine.h): where ranks outnumber cores it caps what the whole
         * network carries (docs/decisions.md, D24); eager messages and
         * bursts pass without it (D21) */
        if (m->core_network_bandwidth > 0 && wire_out > 0 &&
            (m->core_network_eager == 0 || op->bytes > m->core_network_eager)) {
            double cpu = network_core_seconds(m, st->lone_pair, op->bytes,
                                              wire_out * m->nic_bandwidth);
            double done = core_start(s, r, t, cpu) + cpu;
            if (done + flight > arrival)
                arrival = done + flight;
        }
        s->network_messages[r]++;
        s->network_bytes[r] += op->bytes;
        /* its bytes share its node's interface out and the other's in from
         * the moment it is sent; it arrives when through both (nic_passed) */
        s->due[g] = arrival;
        s->nics_left[g] = 2;
        rc = nic_enter(s, out, g, sent, wire_out);
        if (rc == NBR_SUCCESS)
            rc = nic_enter(s, in, g, sent, wire_in);
    } else {
        s->when[g] = arrival;
        int partner = s->ops.partner[g];
        if (s->when[partner] >= 0)
            rc = complete(s, g, partner);
    }
    if (rc == NBR_SUCCESS && st->next_send < st->phase_end)
        rc = push(s, st->port_free, EVENT_SEND, r);
    return rc;
}

static int start_phase(sim_t *s, int r, double t)
{
    rank_state_t *st = &s->rank[r];
    const nbr_plan_t *plan = &s->in->plans[r];
    if (st->phase >= plan->num_phases) {
        st->end = t;
        return NBR_SUCCESS;
    }
    const nbr_phase_t *phase = &plan->phases[st->phase];
    st->end = t;
    st->next_send = phase->first_op;
    st->phase_end = phase->first_op + phase->num_ops;
    st->pending = 1; /* held until the phase is set up: it may not end early */
    st->lone_pair = s->in->machine->core_pair_bandwidth > 0 &&
                    is_lone_pair(s, r, plan->ops, phase->first_op, st->phase_end);
    double copies = t;
    int sends = 0, rc = NBR_SUCCESS;
    for (int i = phase->first_op; i < st->phase_end; i++) {
        const nbr_op_t *op = &plan->ops[i];
        if (op->kind == NBR_OP_SEND) {
            st->pending++;
            sends++;
        } else if (op->kind == NBR_OP_RECV) {
            st->pending++;
        } else {
            nbr_path_t path = s->in->device_buffers ? NBR_PATH_DEVICE : NBR_PATH_COPY;
            double copy = nbr_path_seconds(s->in->machine, path, op->bytes);
            copies = bytes_start(s, r, copies, path, copy) + copy;
            s->result->messages[path]++;
            s->result->bytes[path] += op->bytes;
        }
    }
    /* copies run on the rank's CPU once its messages are posted (posting
     * is free here: what sends cost is on the port), one after the other */
    if (copies > st->end)
        st->end = copies;
    for (int i = phase->first_op; i < st->phase_end && rc == NBR_SUCCESS; i++) {
        if (plan->ops[i].kind != NBR_OP_RECV)
            continue;
        int g = s->ops.base[r] + i;
        s->when[g] = t;
        if (s->when[s->ops.partner[g]] >= 0)
            rc = complete(s, s->ops.partner[g], g);
    }
    if (rc == NBR_SUCCESS && sends > 0)
        rc = push(s, t > st->port_free ? t : st->port_free, EVENT_SEND, r);
    return rc == NBR_SUCCESS ? complete_end(s, r, t) : rc; /* releases the hold */
}

static int run(sim_t *s)
{
    int n = s->in->nranks, rc = NBR_SUCCESS;
    for (int r = 0; r < n && rc == NBR_SUCCESS; r++)
        rc = push(s, s->in->machine->start, EVENT_PHASE, r);
    while (rc == NBR_SUCCESS && s->events.size > 0) {
        event_t e = heap_pop(&s->events);
        rc = e.kind == EVENT_PHASE  ? start_phase(s, e.rank, e.time)
             : e.kind == EVENT_SEND ? issue_send(s, e.rank, e.time)
                                    : nic_event(s, e.rank, e.time);
    }
    for (int r = 0; rc == NBR_SUCCESS && r < n; r++)
        if (s->rank[r].phase < s->in->plans[r].num_phases)
            rc = fail(s, "rank %d waits forever in phase %d: the plans would hang", r,
                      s->rank[r].phase);
    return rc;
}

int nbr_simulate(const nbr_sim_input_t *in, nbr_sim_result_t *result, double *rank_seconds,
                 char *message, size_t message_size)
{
    sim_t s = {.in = in, .result = result, .message = message, .message_size = message_size};
    int n = in->nranks;
    memset(result, 0, sizeof(*result));
    if (message && message_size)
        message[0] = '\0';
    if (!in->plans || !in->machine || n < 0)
        return NBR_ERR_ARG;
    int rc = nbr_job_ops_match(&s.ops, in->plans, n, message, message_size);
    if (rc == NBR_SUCCESS) {
        s.when = malloc(((size_t)s.ops.total + 1) * sizeof(double));
        s.rank = calloc((size_t)n + 1, sizeof(rank_state_t));
        s.network_messages = calloc((size_t)n + 1, sizeof(uint64_t));
        s.network_bytes = calloc((size_t)n + 1, sizeof(uint64_t));
        s.due = malloc(((size_t)s.ops.total + 1) * sizeof(double));
        s.nics_left = malloc((size_t)s.ops.total + 1);
        rc = s.when && s.rank && s.network_messages && s.network_bytes && s.due && s.nics_left
                 ? assign_nics(&s)
                 : NBR_ERR_NOMEM;
        if (rc == NBR_SUCCESS)
            rc = assign_cores(&s);
    }
    if (rc == NBR_SUCCESS) {
        for (int g = 0; g < s.ops.total; g++)
            s.when[g] = -1.0;
        rc = run(&s);
    }
    if (rc == NBR_SUCCESS) {
        double sum = 0;
        result->last_rank = -1;
        for (int r = 0; r < n; r++) {
            double end = s.rank[r].end;
            sum += end;
            if (rank_seconds)
                rank_seconds[r] = end;
            if (result->last_rank < 0 || end > result->seconds) {
                result->seconds = end;
                result->last_rank = r;
            }
            if (s.network_messages[r] > result->max_rank_network_messages)
                result->max_rank_network_messages = s.network_messages[r];
            if (s.network_bytes[r] > result->max_rank_network_bytes)
                result->max_rank_network_bytes = s.network_bytes[r];
        }
        result->mean_seconds = n > 0 ? sum / n : 0;
    }
    nbr_job_ops_free(&s.ops);
    free(s.when);
    free(s.rank);
    free(s.nic_of);
    for (int k = 0; s.nic && k < s.nic_count; k++)
        free(s.nic[k].flows.items);
    free(s.nic);
    free(s.due);
    free(s.nics_left);
    free(s.core_free);
    free(s.handoff_free);
    free(s.contended);
    free(s.network_messages);
    free(s.network_bytes);
    free(s.events.items);
    return rc;
}

/* ------------------------------------------------------------ one rank */

/* Ranks of r's node on r's network interface, r included. */
static int nic_sharers(const nbr_locality_t *loc, int nics, int r)
{
    int on_node = 0, sharing = 0, node = loc->node_of[r];
    for (int q = 0; q < loc->nranks; q++)
        on_node += loc->node_of[q] == node;
    int mine = nic_index(loc, nics, r, on_node);
    for (int q = 0; q < loc->nranks; q++)
        sharing += loc->node_of[q] == node && nic_index(loc, nics, q, on_node) == mine;
    return sharing > 0 ? sharing : 1;
}

/* The estimate with the interface shared by `sharers` ranks moving alike;
 * the plan's network bytes out and in are added to *net_out / *net_in. */
static double estimate(const nbr_sim_input_t *in, const nbr_plan_t *plan, double sharers,
                       double *net_out, double *net_in)
{
    const nbr_machine_t *m = in->machine;
    double total = 0;
    for (int p = 0; p < plan->num_phases; p++) {
        const nbr_phase_t *phase = &plan->phases[p];
        double port = 0, tail = 0, out = 0, in_bytes = 0, slowest = 0, copies = 0;
        for (int i = phase->first_op; i < phase->first_op + phase->num_ops; i++) {
            const nbr_op_t *op = &plan->ops[i];
            if (op->kind == NBR_OP_COPY) {
                copies += nbr_path_seconds(m, in->device_buffers ? NBR_PATH_DEVICE : NBR_PATH_COPY,
                                           op->bytes);
                continue;
            }
            nbr_path_t path = nbr_sim_path(in, plan->rank, op->peer);
            double alone = m->path[path].alpha +
                           (double)op->bytes / path_bandwidth(in, path, plan->rank, op->peer);
            if (op->kind == NBR_OP_SEND) {
                double busy = nbr_path_busy_seconds(m, path, 0) +
                              (double)op->bytes / path_bandwidth(in, path, plan->rank, op->peer);
                port += busy; /* the last send's latency still flies after the port */
                tail = alone - busy > tail ? alone - busy : tail;
                out += path == NBR_PATH_NETWORK ? (double)op->bytes : 0;
            } else {
                slowest = alone > slowest ? alone : slowest;
                in_bytes += path == NBR_PATH_NETWORK ? (double)op->bytes : 0;
            }
        }
        /* the interface carries this rank's bytes and, as much again, each
         * other rank's on it: the ranks of a job move alike */
        double nic = (out > in_bytes ? out : in_bytes) * sharers / m->nic_bandwidth;
        *net_out += out;
        *net_in += in_bytes;
        double longest = port + tail;
        longest = nic > longest ? nic : longest;
        longest = slowest > longest ? slowest : longest;
        longest = copies > longest ? copies : longest;
        total += longest;
    }
    return total;
}

double nbr_sim_rank_estimate(const nbr_sim_input_t *in, const nbr_plan_t *plan)
{
    const nbr_locality_t *loc = in->locality;
    int nics = in->machine->nics > 0 ? in->machine->nics : 1;
    double out = 0, into = 0;
    return estimate(in, plan, loc ? nic_sharers(loc, nics, plan->rank) : 1, &out, &into);
}

void nbr_sim_rank_parts(const nbr_sim_input_t *in, const nbr_plan_t *plan,
                        nbr_sim_parts_t *parts)
{
    *parts = (nbr_sim_parts_t){0};
    parts->seconds = estimate(in, plan, 1, &parts->net_out_bytes, &parts->net_in_bytes);
}

double nbr_sim_job_price(const nbr_machine_t *m, double slowest_rank, const double *node_bytes,
                         int nodes)
{
    int nics = m->nics > 0 ? m->nics : 1;
    double price = slowest_rank;
    for (int v = 0; v < nodes; v++) {
        double out = node_bytes[2 * v], in = node_bytes[2 * v + 1];
        double nic = (out > in ? out : in) / (nics * m->nic_bandwidth);
        price = nic > price ? nic : price;
    }
    return m->start + price;
}
