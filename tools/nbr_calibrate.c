/*
 * nbr_calibrate: measures the machine it runs on and writes its machine
 * parameters (src/topo/machine.h) for the simulator and nbr_sim.
 *
 * Rank 0 ping-pongs with one partner per path it can find: a rank of its
 * own socket, of another socket of its node (virtual sockets with
 * --ranks-per-socket), of another node (MPI_COMM_TYPE_SHARED tells nodes
 * apart). For each it sweeps message sizes, takes the one-way time (half a
 * round trip, the median of several batches), and fits a start-up (the
 * least time of the three smallest sizes) and a bandwidth (the slope
 * between the two largest sizes), and an overhead (what each further
 * message of a burst of 16 small ones adds to a round trip, the least of
 * five tries: the part of the start-up that keeps a rank busy,
 * machine.h). The network interface's bandwidth comes from every rank of
 * the first node streaming to a rank of the second at once. Copies are timed
 * with memcpy: one of --max-bytes (the least of five timings at each of the
 * start, middle and end, and no slower than the socket path's largest
 * message, which is copied at least once), and one of --cached-copy-bytes
 * (64 KiB unless given; 0: none) copied back and forth between two
 * buffers that stay in the core's cache, as a relay copies a block it has
 * just received. Where the ranks outnumber the CPU cores they may run on
 * (sched_getaffinity), it writes a `cores` line: per node, or per job when
 * every node reports the same kernel boot id (namespaces of one host, as
 * the emulated cluster's are); there every rank then exchanges blocks with
 * every rank of the other nodes at once, and where the job carries well
 * under its interfaces' rate the line gets the rate each core moved network
 * bytes at. Last, it times the library's own allgather of 8 B blocks
 * (naive, halving and combining on a sparse and a dense random graph,
 * interleaved, as nbr_bench times a call) and fits a line through their
 * times against the messages a rank sends (to other nodes, where the job
 * has several: machine.h, message_paths): where it meets zero messages,
 * less one message alone, is the per-call start; where ranks share cores,
 * its slope over the ranks a core serves is each message's hand-off on
 * them (machine.h). Paths it cannot measure here (a second socket, GPUs)
 * are taken from --base FILE, or left at placeholders, and the file says
 * so.
 *
 *   mpirun -np N nbr_calibrate [--output FILE] [--name NAME] [--base FILE]
 *          [--ranks-per-socket S] [--max-bytes B] [--sweep]
 *          [--link-gbit G --link-delay-us D] [--link-burst-bytes B]
 *          [--eager-bytes E] [--cached-copy-bytes C]
 *
 * --sweep prints every size's measured one-way time next to what the fitted
 * parameters predict; with --link-gbit it also prints what the configured
 * link (rate and one-way delay, as given to the emulated cluster) allows.
 * --link-burst-bytes is what a shaper on the links passes at once (the
 * emulated cluster's bucket), written as the interfaces' burst_bytes.
 * Where the cores' network rate is written, eager_bytes goes with it: the
 * largest message the MPI library sends eagerly, --eager-bytes or else
 * Open MPI's btl_tcp_eager_limit (read through MPI_T) less its headers.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "harness/common.h"
#include "harness/graphs.h"
#include "harness/options.h"
#include "nbrcoll.h"
#include "topo/machine.h"

#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG 11
#define MAX_SIZES 16
/* an exchange below this share of its interfaces' rate is held back by
 * the cores (docs/decisions.md, network bytes take core time) */
#define EXCHANGE_CAPPED 0.9

typedef struct options {
    const char *output, *name, *base;
    int ranks_per_socket;
    uint64_t max_bytes;
    int sweep;
    double link_gbit, link_delay_us;
    long link_burst, eager; /* eager < 0: read it through MPI_T */
    long cached_copy;       /* bytes of the cached copy; 0: not timed */
} options_t;

static int apply(const char *name, const char *val, void *ctx, char *err, size_t errlen)
{
    options_t *o = ctx;
    long l = 0;
    int bad = 0;
    if (!strcmp(name, "output"))
        o->output = val;
    else if (!strcmp(name, "name"))
        o->name = val;
    else if (!strcmp(name, "base"))
        o->base = val;
    else if (!strcmp(name, "ranks-per-socket")) {
        bad = bh_parse_long(val, 1, 1 << 20, &l);
        o->ranks_per_socket = (int)l;
    } else if (!strcmp(name, "max-bytes"))
        bad = bh_parse_bytes(val, &o->max_bytes) || o->max_bytes < 1024 ||
              o->max_bytes > (UINT64_C(1) << 30);
    else if (!strcmp(name, "sweep"))
        o->sweep = strcmp(val, "0") != 0;
    else if (!strcmp(name, "link-gbit"))
        bad = (o->link_gbit = atof(val)) <= 0;
    else if (!strcmp(name, "link-delay-us"))
        bad = (o->link_delay_us = atof(val)) < 0;
    else if (!strcmp(name, "link-burst-bytes"))
        bad = bh_parse_long(val, 0, 1 << 30, &o->link_burst);
    else if (!strcmp(name, "eager-bytes"))
        bad = bh_parse_long(val, 0, 1 << 30, &o->eager);
    else if (!strcmp(name, "cached-copy-bytes"))
        bad = bh_parse_long(val, 0, 1 << 30, &o->cached_copy);
    else {
        snprintf(err, errlen, "unknown option '--%s'", name);
        return -1;
    }
    if (bad)
        snprintf(err, errlen, "bad value '%s' for --%s", val, name);
    return bad ? -1 : 0;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n-1], which it sorts (for an even n the upper of
 * the middle two: the small calls' SMALL_ROUNDS). */
static double median_in_place(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), compare_double);
    return v[n / 2];
}

#define BURST 16
#define OVERHEAD_TRIES 5

/* Seconds of one trip between rank 0 and peer: rank 0 sends `burst`
 * messages of `bytes` at once, peer answers with one when all are in. The
 * median of 5 batches of trips, each batch long enough to be timed (at
 * least 20 trips or 20 ms). Both ranks call it; others do not. buf holds
 * burst * bytes. */
static double trip(int me, int peer, char *buf, int bytes, int burst)
{
    double batch[5];
    MPI_Request req[BURST];
    int trips = 1;
    for (int b = -1; b < 5; b++) { /* batch -1: warm-up and trip count */
        double t0 = MPI_Wtime();
        for (int i = 0; i < trips; i++) {
            for (int k = 0; k < burst; k++) {
                char *at = buf + (size_t)k * (size_t)bytes;
                if (me == 0)
                    MPI_Isend(at, bytes, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, &req[k]);
                else
                    MPI_Irecv(at, bytes, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, &req[k]);
            }
            MPI_Waitall(burst, req, MPI_STATUSES_IGNORE);
            if (me == 0)
                MPI_Recv(buf, bytes, MPI_BYTE, peer, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else
                MPI_Send(buf, bytes, MPI_BYTE, 0, TAG, MPI_COMM_WORLD);
        }
        double t = MPI_Wtime() - t0;
        if (b < 0) {
            /* rank 0 decides the trip count, its partner follows */
            int want = t > 0 ? (int)(0.02 / t) + 1 : 20;
            want = want < 20 ? 20 : want > 10000 ? 10000 : want;
            if (me == 0)
                MPI_Send(&want, 1, MPI_INT, peer, TAG + 1, MPI_COMM_WORLD);
            else
                MPI_Recv(&want, 1, MPI_INT, 0, TAG + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            trips = want;
            continue;
        }
        batch[b] = t / trips;
    }
    return median_in_place(batch, 5);
}

/* One-way seconds for `bytes`: half a round trip. */
static double pingpong(int me, int peer, char *buf, int bytes)
{
    return trip(me, peer, buf, bytes, 1) / 2;
}

typedef struct fit {
    int peer;
    int num_sizes;
    int sizes[MAX_SIZES];
    double seconds[MAX_SIZES];
    double alpha, bandwidth;
    double overhead; /* seconds each further message of a burst adds */
} fit_t;

/* Sizes 8 B, then x4 up to max_bytes; alpha from the smallest three (the
 * least of them: one late batch must not set the start-up), the bandwidth
 * from the slope between the two largest. */
static void measure_path(int me, int peer, char *buf, uint64_t max_bytes, fit_t *f)
{
    f->peer = peer;
    f->num_sizes = 0;
    if (peer < 0)
        return;
    for (uint64_t bytes = 8; bytes <= max_bytes && f->num_sizes < MAX_SIZES; bytes *= 4) {
        double s = 0;
        if (me == 0 || me == peer)
            s = pingpong(me, peer, buf, (int)bytes);
        f->sizes[f->num_sizes] = (int)bytes;
        f->seconds[f->num_sizes++] = s;
    }
    /* the overhead: what each of BURST small messages sent at once adds
     * to a round trip; the rest of alpha overlaps (machine.h). The least
     * of OVERHEAD_TRIES pairs of trips, as alpha is the least of three
     * sizes: where ranks share cores, other ranks' turns land in a burst
     * now and then, and such waits only ever add */
    f->overhead = 0;
    for (int k = 0; k < OVERHEAD_TRIES && (me == 0 || me == peer); k++) {
        double one = trip(me, peer, buf, 8, 1);
        double many = trip(me, peer, buf, 8, BURST);
        double each = (many - one) / (BURST - 1);
        f->overhead = k == 0 || each < f->overhead ? each : f->overhead;
    }
    int n = f->num_sizes;
    f->alpha = f->seconds[0];
    for (int i = 1; i < 3 && i < n; i++)
        f->alpha = f->seconds[i] < f->alpha ? f->seconds[i] : f->alpha;
    double dt = f->seconds[n - 1] - f->seconds[n - 2];
    f->bandwidth = dt > 0 ? (f->sizes[n - 1] - f->sizes[n - 2]) / dt
                          : f->sizes[n - 1] / f->seconds[n - 1];
    if (!(f->overhead > 0) || f->overhead > f->alpha) /* noise: all of alpha */
        f->overhead = f->alpha;
}

/* The rate bytes pass at on a link's burst (machine.h,
 * burst_gbytes_per_s): the least-squares slope through zero of each
 * size's one-way time past alpha, over the sizes of up to half the burst
 * (a round trip's pause refills the bucket with about that much); 0 when
 * none is measured. A burst is not held to the link's rate
 * (docs/decisions.md, the burst's rate). */
static double burst_rate(const fit_t *f, long burst)
{
    double across = 0, square = 0;
    for (int i = 0; f->peer >= 0 && i < f->num_sizes; i++) {
        if (f->sizes[i] > burst / 2)
            continue;
        across += f->sizes[i] * (f->seconds[i] - f->alpha);
        square += (double)f->sizes[i] * f->sizes[i];
    }
    return across > 0 ? square / across : 0;
}

/* What the job carried per second, on rank 0: every rank's `messages`
 * of `bytes` over the slowest rank's time t. Collective. */
static double job_rate(double t, int messages, int bytes)
{
    double slowest = 0;
    int total = 0;
    MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&messages, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    return slowest > 0 ? (double)total * bytes / slowest : 0;
}

/* Every rank of node 0 streams `bytes` x reps to its counterpart on node
 * 1 at once: the interface's rate is the bytes over the slowest time. */
static double stream_rate(const int *node_of, const int *local_of, int n, int me, char *buf,
                          int bytes)
{
    int partner = -1, reps = 8;
    for (int r = 0; r < n; r++)
        if (node_of[me] == 0 && node_of[r] == 1 && local_of[r] == local_of[me])
            partner = r;
        else if (node_of[me] == 1 && node_of[r] == 0 && local_of[r] == local_of[me])
            partner = r;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; partner >= 0 && i < reps; i++) {
        if (node_of[me] == 0)
            MPI_Send(buf, bytes, MPI_BYTE, partner, TAG + 2, MPI_COMM_WORLD);
        else
            MPI_Recv(buf, bytes, MPI_BYTE, partner, TAG + 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (partner >= 0 && node_of[me] == 1) /* the last byte arrived: tell the sender */
        MPI_Send(buf, 0, MPI_BYTE, partner, TAG + 3, MPI_COMM_WORLD);
    else if (partner >= 0)
        MPI_Recv(buf, 0, MPI_BYTE, partner, TAG + 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double t = MPI_Wtime() - t0;
    return job_rate(t, partner >= 0 && node_of[me] == 0 ? reps : 0, bytes);
}

/* Each rank sends `bytes` to each of its peers (peers[0..count-1]) and
 * takes as much from each at once, reps times after one untimed round:
 * Open MPI's TCP transport opens a connection on its first use, and the
 * first round would time that (docs/decisions.md, calibration warm-up).
 * Returns what the whole job carried per second (rank 0). Collective. */
static double exchange_with(const int *peers, int count, int reps, char *buf, int bytes)
{
    char *in = malloc((size_t)bytes * (size_t)(count + 1));
    MPI_Request *req = malloc(2 * (size_t)(count + 1) * sizeof(MPI_Request));
    int ok = in && req, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    double t0 = 0;
    for (int i = 0; all_ok && i <= reps; i++) {
        if (i <= 1) { /* the timed rounds start together, after the untimed one */
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        for (int j = 0; j < count; j++) {
            MPI_Irecv(in + (size_t)j * (size_t)bytes, bytes, MPI_BYTE, peers[j], TAG + 4,
                      MPI_COMM_WORLD, &req[2 * j]);
            MPI_Isend(buf, bytes, MPI_BYTE, peers[j], TAG + 4, MPI_COMM_WORLD, &req[2 * j + 1]);
        }
        MPI_Waitall(2 * count, req, MPI_STATUSES_IGNORE);
    }
    double t = MPI_Wtime() - t0;
    free(in);
    free(req);
    return job_rate(t, all_ok ? count * reps : 0, bytes);
}

/* Every rank exchanges `bytes` with every rank of the other nodes at once:
 * every interface busy both ways, with as many messages in flight as a
 * dense neighborhood has. */
static double exchange_rate(const int *node_of, int n, int me, char *buf, int bytes)
{
    int *peers = malloc((size_t)n * sizeof(int)), count = 0;
    for (int r = 0; peers && r < n; r++)
        if (node_of[r] != node_of[me])
            peers[count++] = r;
    double rate = exchange_with(peers, peers ? count : 0, 4, buf, bytes);
    free(peers);
    return rate;
}

/* Every rank exchanges `bytes` with its counterpart on the paired node
 * (nodes 0-1, 2-3, ...; the last of an odd count sits out), reps times at
 * once: a lone pair (machine.h, pair_gbytes_per_s), as halving's steps
 * are, each connection carrying bytes both ways. */
static double pair_rate(const int *node_of, const int *local_of, int n, int me, char *buf,
                        int bytes, int reps)
{
    int partner = -1;
    for (int r = 0; r < n; r++)
        if (node_of[r] == (node_of[me] ^ 1) && local_of[r] == local_of[me])
            partner = r;
    return exchange_with(&partner, partner >= 0, reps, buf, bytes);
}

#define NETWORK_TRIALS 5

/* What the cores pass of the network, three ways (rank 0): every rank
 * exchanging `small` bytes with every rank of the other nodes, and lone
 * pairs of `small` and `large` bytes. NETWORK_TRIALS trials, each
 * measuring all three in turn so that they see the machine alike; each
 * rate is its trials' median, and every trial is kept in trials[3][...].
 * One trial alone is too noisy to price by (docs/decisions.md, pair rates
 * as medians of trials). */
typedef struct network_rates {
    double exchange, pair_small, pair_large;
    double trials[3][NETWORK_TRIALS];
} network_rates_t;

static void measure_network_rates(const int *node_of, const int *local_of, int n, int me,
                                  char *buf, int small, int large, network_rates_t *r)
{
    double sorted[3][NETWORK_TRIALS];
    for (int t = 0; t < NETWORK_TRIALS; t++) {
        r->trials[0][t] = exchange_rate(node_of, n, me, buf, small);
        r->trials[1][t] = pair_rate(node_of, local_of, n, me, buf, small, 8);
        r->trials[2][t] = pair_rate(node_of, local_of, n, me, buf, large, 2);
    }
    memcpy(sorted, r->trials, sizeof sorted);
    r->exchange = median_in_place(sorted[0], NETWORK_TRIALS);
    r->pair_small = median_in_place(sorted[1], NETWORK_TRIALS);
    r->pair_large = median_in_place(sorted[2], NETWORK_TRIALS);
}

/* A lone pair's rate past its first `small` bytes (machine.h,
 * pair_gbytes_per_s), from lone pairs of `small` and `large` bytes a rank
 * carrying small_rate and large_rate (the job's bytes a second): the
 * large one's margin over the small one. 0 where the margin is not the
 * slower: no pair rates. */
static double pair_margin(double small, double small_rate, double large, double large_rate)
{
    if (!(small_rate > 0 && large_rate > 0 && large > small))
        return 0;
    /* seconds for one rank's share of the job's bytes */
    double t_small = small / small_rate, t_large = large / large_rate;
    double margin = t_large > t_small ? (large - small) / (t_large - t_small) : 0;
    return margin < small_rate ? margin : 0;
}

#define SMALL_ROUNDS 500
#define MAX_SMALL 8

/* A small call of the library's: one plan on one graph, 8 B blocks. */
typedef struct small_call {
    const char *algorithm;
    double density;  /* of the random graph (seeds apart from the grid's) */
    double messages; /* a rank sends per call, mean over ranks */
    double network_messages; /* of them to other nodes */
    double seconds;  /* median, timed as nbr_bench times a call */
    MPI_Comm comm;
    bh_topo_t topo;
    double *samples;
} small_call_t;

/* The call's graph and communicator. Collective; 0 or an nbr_status_t
 * (every rank the same). */
static int set_up_small_call(small_call_t *call, uint64_t seed)
{
    bh_graph_spec_t spec = {BH_PATTERN_RSG, call->density, seed, 0, 0};
    bh_locality_t loc = {0, 0};
    call->comm = MPI_COMM_NULL;
    call->samples = malloc(SMALL_ROUNDS * sizeof(double));
    int rc = call->samples ? bh_topo_build(&spec, &call->topo) : NBR_ERR_NOMEM, all = 0;
    MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD); /* errors are < 0 */
    return all == 0 ? bh_create_comm(&loc, &call->topo, call->algorithm, &call->comm) : all;
}

static void free_small_call(small_call_t *call)
{
    if (call->comm != MPI_COMM_NULL)
        MPI_Comm_free(&call->comm);
    bh_topo_free(&call->topo);
    free(call->samples);
}

/* Times the calls' nbr_neighbor_allgather of 8 B blocks as nbr_bench times
 * a call (a barrier, then the slowest rank's time), interleaved: each of
 * SMALL_ROUNDS rounds runs every call once, starting one further on; each
 * call's time is its median. Counts the messages a rank sends per call.
 * Collective; 0 or an nbr_status_t (every rank the same). */
static int time_small_calls(int n, small_call_t *calls, int count)
{
    char out[8] = {0}, *in = malloc(8 * (size_t)(n + 1));
    int rc = in ? 0 : NBR_ERR_NOMEM, all = 0;
    /* every rank runs every round, a failed call or not, so that none
     * waits in a barrier for one that left */
    for (int i = -SMALL_ROUNDS / 10; i < SMALL_ROUNDS; i++) /* < 0: warm-up */
        for (int k = 0; k < count; k++) {
            small_call_t *call = &calls[(k + (i < 0 ? 0 : i)) % count];
            if (i == 0 && k == 0)
                for (int c = 0; c < count && rc == 0; c++)
                    rc = nbr_reset_counters(calls[c].comm);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (rc == 0)
                rc = nbr_neighbor_allgather(out, 8, MPI_BYTE, in, 8, MPI_BYTE, call->comm);
            double t = MPI_Wtime() - t0, slowest = 0;
            MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (i >= 0)
                call->samples[i] = slowest;
        }
    free(in);
    MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD); /* errors are < 0 */
    for (int k = 0; k < count && all == 0; k++) {
        nbr_counters_t counted = {0};
        int got = nbr_get_counters(calls[k].comm, &counted);
        double sent[2] = {0, 0}, all_sent[2] = {0, 0};
        if (got == 0) {
            sent[0] = (double)(counted.msgs_intra_node + counted.msgs_inter_node) / SMALL_ROUNDS;
            sent[1] = (double)counted.msgs_inter_node / SMALL_ROUNDS;
        }
        MPI_Allreduce(sent, all_sent, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        calls[k].messages = all_sent[0] / n;
        calls[k].network_messages = all_sent[1] / n;
        calls[k].seconds = median_in_place(calls[k].samples, SMALL_ROUNDS);
    }
    return all;
}

/* The least-squares line through the calls' times against their messages
 * a rank (or with network, those to other nodes only). */
static void fit_line(const small_call_t *calls, int count, int network, double *slope,
                     double *at_zero)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int k = 0; k < count; k++) {
        double x = network ? calls[k].network_messages : calls[k].messages, y = calls[k].seconds;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    double d = count * sxx - sx * sx;
    *slope = d > 0 ? (count * sxy - sx * sy) / d : 0;
    *at_zero = count > 0 ? (sy - *slope * sx) / count : 0;
}

/* What the fitted paths say a call of one message a rank (each to the next
 * rank) takes: its slowest message alone. */
static double slowest_message(const nbr_machine_t *m, const int *node_of, const int *local_of,
                              int n, int spr)
{
    double slowest = 0;
    for (int r = 0; r < n; r++) {
        int from = (r + n - 1) % n;
        nbr_path_t path = from == r                     ? NBR_PATH_COPY
                          : node_of[from] != node_of[r] ? NBR_PATH_NETWORK
                          : spr && local_of[from] / spr != local_of[r] / spr ? NBR_PATH_NODE
                                                                             : NBR_PATH_SOCKET;
        double t = nbr_path_seconds(m, path, 8);
        slowest = t > slowest ? t : slowest;
    }
    return slowest;
}

/* Keeps the compiler from dropping copies nobody reads. */
static volatile char sink;

#define COPY_TRIES 5

/* memcpy's start-up: the mean of many 8-byte copies. */
static double small_copy_seconds(const char *buf, char *to)
{
    double t0 = MPI_Wtime();
    int k = 0;
    for (; k < 100000; k++) {
        memcpy(to + (k % 1024) * 8, buf + (k % 64), 8);
        sink = to[(k * 7) % 8192];
    }
    return (MPI_Wtime() - t0) / k;
}

/* The least of COPY_TRIES timed memcpy of `bytes` and `best`. The caller
 * takes it at several points of the calibration: a host busy for a while
 * (other jobs on the machine) slows every copy of one batch
 * (docs/decisions.md, the large copy timed three times). */
static double large_copy_seconds(const char *buf, char *to, size_t bytes, double best)
{
    for (int i = 0; i < COPY_TRIES; i++) {
        double t0 = MPI_Wtime();
        memcpy(to, buf, bytes);
        sink = to[bytes / 2 + (size_t)i];
        double t = MPI_Wtime() - t0;
        best = t < best ? t : best;
    }
    return best;
}

/* The rate of the socket path's largest message, one way: such a message
 * is copied at least once (Open MPI's shared memory: one copy with CMA,
 * two through its buffers), so memcpy is no slower. 0 without the path. */
static double socket_copy_floor(const fit_t *socket)
{
    int last = socket->num_sizes - 1;
    return socket->peer >= 0 && last >= 0 && socket->seconds[last] > 0
               ? socket->sizes[last] / socket->seconds[last]
               : 0;
}

#define CACHED_ROUNDS 64

/* memcpy of `bytes` back and forth between two buffers that stay in the
 * core's cache: the best of 20 timings of CACHED_ROUNDS copies, after as
 * many to warm them; bytes per second, 0 where memory runs out. */
static double measure_cached_copy(size_t bytes)
{
    char *a = malloc(bytes), *b = malloc(bytes);
    double best = 1e9;
    for (int i = -1; a && b && i < 20; i++) {
        memset(a, i & 0xff, bytes); /* a fresh source each time, hot as a received block */
        double t0 = MPI_Wtime();
        for (int k = 0; k < CACHED_ROUNDS; k++) {
            memcpy(k % 2 ? a : b, k % 2 ? b : a, bytes);
            sink = (k % 2 ? a : b)[(size_t)k % bytes];
        }
        double t = (MPI_Wtime() - t0) / CACHED_ROUNDS;
        if (i >= 0 && t < best)
            best = t;
    }
    int timed = a && b && best > 0;
    free(a);
    free(b);
    return timed ? (double)bytes / best : 0;
}

/* A path's cost as the ping-pong fitted it (no cached rate: copies only). */
static nbr_path_cost_t fitted_cost(const fit_t *f)
{
    return (nbr_path_cost_t){.alpha = f->alpha, .bandwidth = f->bandwidth, .overhead = f->overhead};
}

static void print_sweep(FILE *out, const char *what, const fit_t *f, const options_t *o,
                        int network)
{
    if (f->peer < 0)
        return;
    fprintf(out, "# sweep %s (rank 0 <-> rank %d): bytes, one-way us, MB/s, fit us, fit/measured%s\n",
            what, f->peer, network && o->link_gbit > 0 ? ", link us, link/measured" : "");
    for (int i = 0; i < f->num_sizes; i++) {
        double s = f->seconds[i], fit = f->alpha + f->sizes[i] / f->bandwidth;
        fprintf(out, "#   %9d %12.2f %10.2f %12.2f %7.3f", f->sizes[i], s * 1e6,
                f->sizes[i] / s / 1e6, fit * 1e6, fit / s);
        if (network && o->link_gbit > 0) {
            double link = o->link_delay_us * 1e-6 + f->sizes[i] * 8.0 / (o->link_gbit * 1e9);
            fprintf(out, " %12.2f %7.3f", link * 1e6, link / s);
        }
        fprintf(out, "\n");
    }
}

/* The cores a pool of ranks shares, when they are fewer than its ranks
 * (0 otherwise), and its ranks (the most of any pool): per node, or per
 * job when every rank runs on one host (one kernel boot id: the emulated
 * cluster's namespaces). Collective. */
static void host_cores(const int *node_of, int n, int nodes, int *cores, int *per_job,
                       int *pool_ranks)
{
    cpu_set_t set;
    int mine = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0, least = 0;
    char boot[40] = "", first[40] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(boot, sizeof boot, f))
            boot[0] = '\0';
        fclose(f);
    }
    if (mine <= 0)
        mine = 1 << 20; /* unknown: never fewer than the ranks */
    MPI_Allreduce(&mine, &least, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    memcpy(first, boot, sizeof first);
    MPI_Bcast(first, sizeof first, MPI_CHAR, 0, MPI_COMM_WORLD);
    int same = boot[0] && strcmp(boot, first) == 0, all_same = 0;
    MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    int most_on_node = 0;
    for (int v = 0; v < nodes; v++) {
        int on = 0;
        for (int r = 0; r < n; r++)
            on += node_of[r] == v;
        most_on_node = on > most_on_node ? on : most_on_node;
    }
    *per_job = all_same && nodes > 1;
    int ranks = *per_job ? n : most_on_node;
    *cores = ranks > least ? least : 0;
    *pool_ranks = ranks;
}

/* Open MPI's TCP eager limit less its headers (a few tens of bytes are
 * counted against the limit): the largest message it sends eagerly
 * between nodes, or 0 where the MPI library has no such variable. */
static long tcp_eager_bytes(void)
{
    int provided = 0, num = 0;
    long limit = 0;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return 0;
    if (MPI_T_cvar_get_num(&num) != MPI_SUCCESS)
        num = 0;
    for (int i = 0; i < num && !limit; i++) {
        char name[256], desc[8];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope, count;
        MPI_Datatype type;
        MPI_T_enum values;
        MPI_T_cvar_handle handle;
        if (MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &values, desc, &desc_len,
                                &bind, &scope) != MPI_SUCCESS ||
            strcmp(name, "btl_tcp_eager_limit") != 0 ||
            MPI_T_cvar_handle_alloc(i, NULL, &handle, &count) != MPI_SUCCESS)
            continue;
        union {
            int i;
            unsigned u;
            unsigned long ul;
            unsigned long long ull;
        } value = {0};
        if (count == 1 && MPI_T_cvar_read(handle, &value) == MPI_SUCCESS) {
            unsigned long long v = type == MPI_INT                  ? (unsigned long long)value.i
                                   : type == MPI_UNSIGNED           ? value.u
                                   : type == MPI_UNSIGNED_LONG      ? value.ul
                                   : type == MPI_UNSIGNED_LONG_LONG ? value.ull
                                                                    : 0;
            limit = v > 64 && v < (1ULL << 30) ? (long)v - 64 : 0;
        }
        MPI_T_cvar_handle_free(&handle);
    }
    MPI_T_finalize();
    return limit;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    options_t o = {.name = "calibrated", .max_bytes = 16 * BH_MIB, .eager = -1,
                   .cached_copy = 64 * 1024};
    char err[256] = "";
    bh_set_progname("nbr_calibrate");
    int parsed = bh_parse_argv(argc, argv, apply, &o, err, sizeof err);
    if (parsed != 0) {
        if (me == 0 && parsed < 0)
            fprintf(stderr, "nbr_calibrate: %s\n", err);
        if (me == 0)
            fprintf(stderr, "usage: mpirun -np N nbr_calibrate [--output FILE] [--name NAME] "
                            "[--base FILE] [--ranks-per-socket S] [--max-bytes B] [--sweep 1] "
                            "[--link-gbit G --link-delay-us D] [--link-burst-bytes B] "
                            "[--eager-bytes E] [--cached-copy-bytes C]\n");
        MPI_Finalize();
        return parsed < 0 ? BH_EXIT_USAGE : 0;
    }
    nbr_machine_t m = {0};
    char why[512] = "";
    int from_base = 0;
    if (o.base) {
        if (nbr_machine_load(o.base, &m, why, sizeof why) != 0) {
            if (me == 0)
                fprintf(stderr, "nbr_calibrate: %s\n", why);
            MPI_Finalize();
            return 1;
        }
        from_base = 1;
    }
    snprintf(m.name, sizeof m.name, "%s", o.name);

    /* where every rank is: node (shared memory), local index, socket */
    MPI_Comm node;
    int local = 0, leader = 0, node_id = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    leader = local == 0;
    MPI_Scan(&leader, &node_id, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    node_id--;
    MPI_Bcast(&node_id, 1, MPI_INT, 0, node);
    int *node_of = malloc((size_t)n * sizeof(int)), *local_of = malloc((size_t)n * sizeof(int));
    MPI_Allgather(&node_id, 1, MPI_INT, node_of, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Allgather(&local, 1, MPI_INT, local_of, 1, MPI_INT, MPI_COMM_WORLD);
    int spr = o.ranks_per_socket;
    int socket_peer = -1, node_peer = -1, network_peer = -1;
    for (int r = 1; r < n; r++) {
        int same_socket = !spr || local_of[r] / spr == local_of[0] / spr;
        if (node_of[r] == node_of[0] && same_socket && socket_peer < 0)
            socket_peer = r;
        if (node_of[r] == node_of[0] && !same_socket && node_peer < 0)
            node_peer = r;
        if (node_of[r] != node_of[0] && network_peer < 0)
            network_peer = r;
    }
    char *buf = calloc(1, (size_t)o.max_bytes);
    /* rank 0 times copies at the start, between the sweeps and at the end */
    char *copy_to = me == 0 ? malloc((size_t)o.max_bytes) : NULL;
    double copy_best = 1e9;
    if (copy_to) {
        memcpy(copy_to, buf, (size_t)o.max_bytes); /* touch */
        copy_best = large_copy_seconds(buf, copy_to, (size_t)o.max_bytes, copy_best);
    }
    fit_t socket, other_socket, network;
    measure_path(me, socket_peer, buf, o.max_bytes, &socket);
    MPI_Barrier(MPI_COMM_WORLD);
    measure_path(me, node_peer, buf, o.max_bytes, &other_socket);
    MPI_Barrier(MPI_COMM_WORLD);
    measure_path(me, network_peer, buf, o.max_bytes, &network);
    double nic = network_peer >= 0
                     ? stream_rate(node_of, local_of, n, me, buf, (int)(o.max_bytes / 4))
                     : 0;
    if (copy_to)
        copy_best = large_copy_seconds(buf, copy_to, (size_t)o.max_bytes, copy_best);
    int nodes = 0;
    for (int r = 0; r < n; r++)
        nodes = node_of[r] + 1 > nodes ? node_of[r] + 1 : nodes;
    int cores = 0, cores_per_job = 0, pool_ranks = 0;
    host_cores(node_of, n, nodes, &cores, &cores_per_job, &pool_ranks);
    /* where cores are fewer than ranks, what they pass of the network bytes
     * can cap the job's traffic below its interfaces' (machine.h) */
    int exchanges = cores && network_peer >= 0 && nodes > 1; /* the same on every rank */
    /* the exchange, and lone pairs at two sizes: what a pair's connection
     * carries both ways at first, and past that */
    long pair_small = (long)(o.max_bytes / 16), pair_large = (long)o.max_bytes;
    network_rates_t net = {0};
    if (exchanges)
        measure_network_rates(node_of, local_of, n, me, buf, (int)pair_small, (int)pair_large,
                              &net);
    double exchange = net.exchange, pair_small_rate = net.pair_small,
           pair_large_rate = net.pair_large;
    /* the library's own small calls: one phase with many messages (naive)
     * and relays of a few messages in several (halving, combining), on a
     * sparse and a dense random graph */
    small_call_t calls[MAX_SMALL];
    int num_calls = 0, small_rc = 0;
    const char *small_algorithms[] = {"naive", "halving", "combining"};
    const double small_densities[] = {0.3, 0.8};
    for (int d = 0; n > 2 && d < 2; d++)
        for (int a = 0; a < 3 && small_rc == 0; a++) {
            calls[num_calls] = (small_call_t){.algorithm = small_algorithms[a],
                                              .density = small_densities[d]};
            small_rc = set_up_small_call(&calls[num_calls++], 101 + (uint64_t)d);
        }
    int num_set_up = num_calls;
    if (small_rc == 0 && num_calls > 0)
        small_rc = time_small_calls(n, calls, num_calls);
    if (small_rc != 0)
        num_calls = 0;
    if (small_rc != 0 && me == 0)
        fprintf(stderr, "nbr_calibrate: small calls: %s; no call start or hand-off\n",
                nbr_error_string(small_rc));

    if (me == 0) {
        const char *measured = "measured";
        const char *kept = from_base ? "from --base" : "not measured: placeholder";
        nbr_path_cost_t copy = {0};
        double copy_floor = socket_copy_floor(&socket), copy_timed = 0;
        if (copy_to) {
            copy.alpha = small_copy_seconds(buf, copy_to);
            copy_best = large_copy_seconds(buf, copy_to, (size_t)o.max_bytes, copy_best);
            copy_timed = (double)o.max_bytes / copy_best;
            copy.bandwidth = copy_timed > copy_floor ? copy_timed : copy_floor;
        }
        m.path[NBR_PATH_COPY] = copy;
        double cached = o.cached_copy > 0 ? measure_cached_copy((size_t)o.cached_copy) : 0;
        if (cached > copy.bandwidth) { /* else the cache gains nothing here */
            m.path[NBR_PATH_COPY].cached_bytes = (size_t)o.cached_copy;
            m.path[NBR_PATH_COPY].cached_bandwidth = cached;
        }
        const char *how[NBR_NUM_PATHS] = {measured, kept, kept, kept, kept, kept};
        if (socket.peer >= 0) {
            m.path[NBR_PATH_SOCKET] = fitted_cost(&socket);
            how[NBR_PATH_SOCKET] = measured;
        } else if (!from_base) {
            m.path[NBR_PATH_SOCKET] = copy; /* one rank per node: never used */
        }
        if (other_socket.peer >= 0) {
            m.path[NBR_PATH_NODE] = fitted_cost(&other_socket);
            how[NBR_PATH_NODE] = measured;
        } else if (!from_base) {
            m.path[NBR_PATH_NODE] = m.path[NBR_PATH_SOCKET]; /* one socket: never used */
        }
        if (network.peer >= 0) {
            m.path[NBR_PATH_NETWORK] = fitted_cost(&network);
            m.nics = 1;
            m.nic_bandwidth = nic;
            m.nic_burst = (double)o.link_burst;
            double rate = burst_rate(&network, o.link_burst);
            /* a burst slower than the link is noise: none */
            m.nic_burst_bandwidth = rate > nic ? rate : 0;
            how[NBR_PATH_NETWORK] = measured;
        } else if (!from_base) {
            m.path[NBR_PATH_NETWORK] = m.path[NBR_PATH_SOCKET];
            m.nics = 1;
            m.nic_bandwidth = m.path[NBR_PATH_SOCKET].bandwidth;
        }
        m.cores = cores;
        m.cores_per_job = cores_per_job;
        /* the interfaces could carry nodes x nic; well short of that, the
         * pool's cores set the pace: each moved its share. A lone pair gets
         * rates of its own (docs/decisions.md, network bytes take core
         * time; a lone pair's rates). */
        int capped = exchange > 0 && nic > 0 && exchange < EXCHANGE_CAPPED * nodes * nic;
        /* a lone pair's first bytes at the small one's rate, the rest at
         * the margin */
        double pair = capped ? pair_margin((double)pair_small, pair_small_rate,
                                           (double)pair_large, pair_large_rate)
                             : 0;
        /* that exchange sends by rendezvous (1 MiB blocks); eager messages
         * and a link's burst are not held back so (machine.h) */
        long eager = !capped ? 0 : o.eager >= 0 ? o.eager : tcp_eager_bytes();
        if (capped) {
            double pool_cores = cores_per_job ? cores : (double)cores * nodes;
            m.core_network_bandwidth = exchange / pool_cores;
            m.core_network_eager = (size_t)eager;
            m.core_pair_bandwidth = pair / pool_cores;
            m.core_pair_after = pair > 0 ? (size_t)pair_small : 0;
            m.core_pair_first_bandwidth = pair > 0 ? pair_small_rate / pool_cores : 0;
        }
        if (!from_base) { /* no GPU measured here: host copies stand in */
            m.path[NBR_PATH_DEVICE] = copy; /* without the cached rate: path copy's alone */
            m.path[NBR_PATH_GPU] = m.path[NBR_PATH_NODE];
        }
        /* a small call takes its start, its messages' hand-offs where ranks
         * share cores (pressure ranks a core: the job pays as many per
         * message a rank), and its messages' latency. The least-squares
         * line through the small calls' times against the messages a rank
         * sends has the hand-offs in its slope; where it meets zero
         * messages it has the start and about one message alone. Over
         * the library's own calls, relays and all, not over plain
         * messages in one phase, whose fit prices a relay's phases too
         * cheap (docs/decisions.md, a per-call start and a hand-off per
         * message). */
        double pressure = cores ? (double)pool_ranks / cores : 0;
        double one_message = n > 1 ? slowest_message(&m, node_of, local_of, n, spr) : 0;
        /* with other nodes, against the messages to them alone: those are
         * what a small call's time follows, not the messages inside a node
         * (machine.h, message_paths; docs/decisions.md, hand-offs for
         * network messages only) */
        int network_only = nodes > 1;
        double slope = 0, at_zero = 0;
        fit_line(calls, num_calls, network_only, &slope, &at_zero);
        if (slope > 0 && pressure > 0) {
            m.core_message_seconds = slope / pressure;
            m.core_message_network_only = network_only;
        }
        m.start = at_zero > one_message ? at_zero - one_message : 0;
        FILE *out = o.output ? fopen(o.output, "w") : stdout;
        if (!out) {
            fprintf(stderr, "nbr_calibrate: cannot write %s\n", o.output);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        fprintf(out, "# %s: written by nbr_calibrate on %d ranks, %d nodes%s\n", m.name, n, nodes,
                spr ? " (virtual sockets)" : "");
        for (int k = 0; k < NBR_NUM_PATHS; k++)
            fprintf(out, "#   path %-7s %s\n", nbr_path_name((nbr_path_t)k), how[k]);
        fprintf(out, "#   nics: %s\n", network.peer >= 0 ? "measured, all ranks of node 0 "
                                                        "streaming to node 1 at once"
                                                      : kept);
        if (cores)
            fprintf(out, "#   cores: %d %s, fewer than its ranks\n", cores,
                    cores_per_job ? "shared by the whole job (its nodes are one host)"
                                  : "per node");
        if (exchange > 0)
            fprintf(out, "#   network through the cores: every rank exchanging with every rank "
                         "of the other nodes at once (after one untimed round) carried %.1f "
                         "MB/s, %.2f of the interfaces' %.1f MB/s%s\n",
                    exchange / 1e6, exchange / (nodes * nic), nodes * nic / 1e6,
                    capped ? ": the cores' rate written" : ": the interfaces' pace");
        if (pair_large_rate > 0)
            fprintf(out, "#   lone pairs (each rank exchanging with one rank of another node): "
                         "%.1f MB/s with %ld bytes a rank, %.1f MB/s with %ld; %s\n",
                    pair_small_rate / 1e6, pair_small, pair_large_rate / 1e6, pair_large,
                    !capped    ? "not written: the exchange is not held back"
                    : pair > 0 ? "the first rate and the large one's margin written"
                               : "the large one no slower: no pair rates");
        if (exchanges) {
            fprintf(out, "#   each rate above the median of %d trials, MB/s (exchange, lone "
                         "pairs small and large):", NETWORK_TRIALS);
            for (int t = 0; t < NETWORK_TRIALS; t++)
                fprintf(out, " %.1f/%.1f/%.1f", net.trials[0][t] / 1e6, net.trials[1][t] / 1e6,
                        net.trials[2][t] / 1e6);
            fprintf(out, "\n");
        }
        if (capped)
            fprintf(out, "#   eager messages: up to %ld bytes (%s)\n", eager,
                    o.eager >= 0 ? "--eager-bytes" : "btl_tcp_eager_limit less 64, MPI_T; 0: none");
        if (o.link_burst > 0)
            fprintf(out, "#   burst: %ld bytes (--link-burst-bytes)%s\n", o.link_burst,
                    m.nic_burst_bandwidth > 0 ? ", its rate from the network sweep's sizes up to "
                                                "half of it"
                                              : "");
        fprintf(out, "#   copies: %.2f GB/s for %lu bytes (the least of %d timings at the "
                     "start, middle and end)",
                copy_timed * 1e-9, (unsigned long)o.max_bytes, 3 * COPY_TRIES);
        if (copy_timed < copy_floor)
            fprintf(out, ", slower than the socket path's largest message (%.2f GB/s), which is "
                         "copied at least once: that rate written",
                    copy_floor * 1e-9);
        if (o.cached_copy > 0)
            fprintf(out, "; %.2f GB/s for %ld bytes in a core's cache%s", cached * 1e-9,
                    o.cached_copy, cached > copy.bandwidth ? "" : ": no faster, not written");
        fprintf(out, "\n");
        if (num_calls > 0) {
            fprintf(out, "#   small calls (allgather of 8 B, random graphs, timed as nbr_bench "
                         "times them, interleaved, median of %d): algorithm density "
                         "messages-a-rank%s us:",
                    SMALL_ROUNDS, network_only ? " (to other nodes)" : "");
            for (int k = 0; k < num_calls; k++) {
                fprintf(out, "%s %s %.1f %.2f", k % 3 ? "," : "\n#    ", calls[k].algorithm,
                        calls[k].density, calls[k].messages);
                if (network_only)
                    fprintf(out, " (%.2f)", calls[k].network_messages);
                fprintf(out, " %.1f", calls[k].seconds * 1e6);
            }
            fprintf(out, "\n#   call start: %.1f us at zero messages, less %.1f us for the "
                         "slowest message alone; %.2f us a message a rank%s%s\n",
                    at_zero * 1e6, one_message * 1e6, slope * 1e6,
                    network_only ? " to other nodes" : "",
                    m.core_message_seconds > 0 ? ", over the ranks a core serves: the hand-off"
                                               : "");
        }
        if (o.sweep) {
            print_sweep(out, "socket", &socket, &o, 0);
            print_sweep(out, "node", &other_socket, &o, 0);
            print_sweep(out, "network", &network, &o, 1);
            if (network.peer >= 0)
                fprintf(out, "# nic: %.2f MB/s%s\n", nic / 1e6, "");
        }
        nbr_machine_write(&m, out);
        if (out != stdout)
            fclose(out);
    }
    for (int k = 0; k < num_set_up; k++)
        free_small_call(&calls[k]);
    free(buf);
    free(copy_to);
    free(node_of);
    free(local_of);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}
