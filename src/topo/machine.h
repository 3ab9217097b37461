/* Machine parameters: what moving bytes costs, for the plan simulator and
 * for algorithm selection. Where the node model (topology.h) says what a
 * node has, this says how fast it goes: for every path between two ranks
 * a per-message start-up (alpha) and a bandwidth, and the network
 * interfaces the ranks of a node share (each direction's bandwidth split
 * equally among the messages passing through it at once: plan/sim.c).
 *
 * Text files (stored ones are the .machine files in topo/, nbr_calibrate writes
 * one for the machine it runs on):
 *
 *   nbrcoll-machine 1                     first line: format and version
 *   name emulated-4x4-1gbit               one word
 *   path copy    alpha_us=0.3 gbytes_per_s=6 cached_bytes=65536 cached_gbytes_per_s=30
 *   path device  alpha_us=5   gbytes_per_s=1000
 *   path socket  alpha_us=0.8 gbytes_per_s=4
 *   path node    alpha_us=1.2 gbytes_per_s=3
 *   path gpu     alpha_us=8   gbytes_per_s=50
 *   path network alpha_us=40  gbytes_per_s=0.118 overhead_us=12
 *   nics 1 gbytes_per_s=0.118 burst_bytes=125000 burst_gbytes_per_s=0.37
 *                                         per node, each direction
 *   cores 2 per=job network_gbytes_per_s=0.17 eager_bytes=65472 message_us=6 wake_us=12
 *                                         optional, below
 *   call start_us=250                     optional, below
 *
 * Every path is required, once; gbytes_per_s is 1e9 bytes per second,
 * > 0; alpha_us >= 0. overhead_us (optional, 0 < overhead_us <= alpha_us)
 * is the part of alpha that keeps the sender busy (LogP's o); the rest is
 * latency in flight, which overlaps the next messages. Without it a
 * message holds its sender for all of alpha (Hockney). cached_bytes=C
 * cached_gbytes_per_s=R (optional, both or neither, path copy only):
 * copies of up to C bytes run at R, not at gbytes_per_s. A relay copies a
 * block it has just received, or is about to send, so its source and
 * destination sit in the core's cache; gbytes_per_s is a copy larger than
 * the caches (docs/decisions.md, D16). burst_bytes
 * (optional) on the nics line: what each direction of an interface passes
 * at once, without its rate, at the start of a call, as a token-bucket
 * shaper's bucket does after a pause (the emulated cluster's tc tbf holds
 * 1 ms of the link's traffic); the first bytes sent through it in a call
 * use it up. burst_gbytes_per_s (optional, with burst_bytes) is the rate
 * a message's bytes that pass on the burst (on both interfaces) move at,
 * in place of the network path's: a burst is not held to the link's rate
 * (nbr_calibrate fits it; docs/decisions.md, D22). Without it those
 * bytes take the path's rate on the sender's port and in flight (the
 * interfaces' queues pass them at once either way). `cores N
 * [per=node|job]` (optional) says the host's CPU cores move the bytes of
 * local copies and of messages inside a node (memcpy through host memory),
 * N of them for each node's ranks, or with per=job for the whole job's (the
 * emulated cluster's nodes share one host): when more ranks than cores
 * share them, that byte time waits for a free core. network_gbytes_per_s
 * (optional) is the rate one of those cores passes network bytes at: given,
 * a network message's bytes take that core time too, from the sender's
 * pool, alongside the wire. It is measured, not derived (nbr_calibrate):
 * on the emulated cluster the job's traffic between nodes tops out below
 * its interfaces' rate, more so the more messages are in flight. It holds
 * back the bytes an interface's rate holds back, of messages the MPI
 * library sends by rendezvous: eager_bytes (optional) is the largest
 * message it sends eagerly (Open MPI's btl_tcp_eager_limit less its
 * headers); smaller ones, and bytes that pass on a burst, take no core
 * time at that rate. Without eager_bytes every message's bytes do.
 * pair_gbytes_per_s (optional) is that rate for a lone pair's messages
 * past their first pair_after_bytes (optional, default 0), which go at
 * pair_first_gbytes_per_s (optional; default network_gbytes_per_s): a
 * lone pair is a rank whose messages between nodes in a phase all go to
 * and come from one peer, as halving's steps do, so that one TCP
 * connection carries them both ways at once, slower than connections used
 * one way or ranks talking to several peers (docs/decisions.md, D25).
 * message_us (optional) is the core time each message's hand-off takes
 * from the sender's pool where ranks outnumber its cores: the turns the
 * sender and the receiver need on a core to pass it, whatever its size
 * (on the emulated 4 x 4 cluster a small collective's time grows with the
 * messages the whole job sends, not with one rank's). A rank that hands
 * off holds its port for a message's bytes only: the hand-off is the CPU
 * time that overhead_us stands for where it has a core of its own, and
 * its whole alpha is flight. message_paths=network (optional; default
 * all) gives the hand-off to messages between nodes only: on the emulated
 * 4 x 4 cluster a small call's time followed its messages between nodes
 * and not those inside a node (TCP's work in the kernel, where shared
 * memory is a copy in user space; docs/decisions.md, D20). wake_us
 * (optional) is how long a rank on shared cores waits for a core again when a phase of its
 * plan ends and the next one may start: it gave its core away while it
 * waited for the phase's messages. A plan of more phases pays it more
 * often. nbr_calibrate writes none: over its small calls a wake fits at 0
 * (docs/decisions.md, D26). Without the line every rank
 * has a core of its own. `call start_us=S` (optional) is the
 * per-call start: from a call's start until its last rank runs it (a
 * barrier's release; where ranks share cores, their turns on them). Every
 * rank's first phase starts then. '#' starts a comment. */
#ifndef NBR_MACHINE_H
#define NBR_MACHINE_H

#include <stddef.h>
#include <stdio.h>

/* How bytes get from one rank's buffer to another's (or within one). */
typedef enum nbr_path {
    NBR_PATH_COPY = 0,    /* a local copy in host memory (memcpy) */
    NBR_PATH_DEVICE = 1,  /* a copy within one GPU's memory */
    NBR_PATH_SOCKET = 2,  /* host buffers, two ranks of one CPU socket */
    NBR_PATH_NODE = 3,    /* host buffers, two sockets of one node */
    NBR_PATH_GPU = 4,     /* device buffers, two GPUs of one node (the node
                           * model's bandwidth matrix wins where it has one) */
    NBR_PATH_NETWORK = 5, /* two nodes */
    NBR_NUM_PATHS = 6
} nbr_path_t;

const char *nbr_path_name(nbr_path_t path);

typedef struct nbr_path_cost {
    double alpha;     /* seconds per message, one way, alone */
    double bandwidth; /* bytes per second */
    double overhead;  /* seconds of alpha the sender is busy; 0: all of it */
    size_t cached_bytes;     /* path copy: copies up to this many bytes ... */
    double cached_bandwidth; /* ... run at this rate (bytes per second); 0: none */
} nbr_path_cost_t;

typedef struct nbr_machine {
    char name[64];
    nbr_path_cost_t path[NBR_NUM_PATHS];
    int nics;             /* network interfaces per node, shared by its ranks */
    double nic_bandwidth; /* bytes per second, each, each direction */
    double nic_burst;     /* bytes each passes at once at a call's start */
    double nic_burst_bandwidth; /* bytes per second those pass at; 0: at once */
    int cores;            /* cores moving host-memory bytes; 0: one per rank */
    int cores_per_job;    /* 1: the job's ranks share them all; 0: each node's */
    double core_network_bandwidth; /* bytes per second one core moves to the
                                    * network; 0: network bytes take no core */
    size_t core_network_eager;     /* messages up to this many bytes take no
                                    * core time at that rate; 0: all do */
    double core_pair_bandwidth;    /* the rate of a lone pair's bytes past
                                    * core_pair_after; 0: as any others */
    size_t core_pair_after;        /* bytes of such a message before that */
    double core_pair_first_bandwidth; /* their rate; 0: the cores' network rate */
    double core_message_seconds;   /* a message's hand-off on a shared core;
                                    * 0: none */
    int core_message_network_only; /* 1: only messages between nodes take it */
    double core_wake_seconds;      /* a rank's wait for a core before each
                                    * phase after its first; 0: none */
    double start;                  /* seconds from a call's start until its
                                    * last rank runs it; 0: none */
} nbr_machine_t;

/* Bytes per second of a message (or copy) of bytes on path: a copy small
 * enough to stay in a core's cache at the cached rate, where one is given. */
static inline double nbr_path_bandwidth(const nbr_machine_t *m, nbr_path_t path, size_t bytes)
{
    const nbr_path_cost_t *c = &m->path[path];
    return c->cached_bandwidth > 0 && bytes <= c->cached_bytes ? c->cached_bandwidth
                                                               : c->bandwidth;
}

/* Seconds one message of bytes takes on path, alone. */
static inline double nbr_path_seconds(const nbr_machine_t *m, nbr_path_t path, size_t bytes)
{
    return m->path[path].alpha + (double)bytes / nbr_path_bandwidth(m, path, bytes);
}

/* Seconds one message of bytes keeps its sender busy: its overhead and its
 * bytes; the next message on that sender starts after it. */
static inline double nbr_path_busy_seconds(const nbr_machine_t *m, nbr_path_t path, size_t bytes)
{
    double o = m->path[path].overhead > 0 ? m->path[path].overhead : m->path[path].alpha;
    return o + (double)bytes / nbr_path_bandwidth(m, path, bytes);
}

/* The parameters nbrcoll assumes when none are given (nbr_machine /
 * NBR_MACHINE): a generic cluster of one 100 Gbit/s interface per node,
 * 2 us between nodes, host shared memory, GPUs linked at 50 GB/s. Orders
 * of magnitude, not a measurement: nbr_calibrate writes a file for the
 * machine at hand. */
void nbr_machine_default(nbr_machine_t *machine);

/* Parses the text format; NBR_ERR_ARG with "line N: ..." in message. */
int nbr_machine_parse(const char *text, nbr_machine_t *machine, char *message, size_t size);
/* The same from a file; NBR_ERR_IO when it cannot be read. */
int nbr_machine_load(const char *path, nbr_machine_t *machine, char *message, size_t size);
/* Writes what nbr_machine_parse reads back (to the last digit or two of a
 * double: alpha is written in microseconds). */
int nbr_machine_write(const nbr_machine_t *machine, FILE *out);

#endif
