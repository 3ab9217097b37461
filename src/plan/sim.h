/* The plan simulator: predicts how long a whole job's plans take on a
 * machine (topo/machine.h), in one process, without running them.
 *
 * The model (docs/simulator.md; docs/decisions.md says why each rule):
 *   - Every rank starts at the machine's per-call start (machine.h).
 *   - A rank runs its phases in order. At the start of a phase it posts
 *     the phase's receives, then issues its sends one after the other,
 *     then does its local copies; the phase ends when every message of it
 *     has completed and the copies are done.
 *   - Each rank has one port: a message occupies the sender's port for
 *     its overhead + bytes / bandwidth of its path, and the next send
 *     waits for it; it arrives alpha + bytes / bandwidth after it started.
 *     Without an overhead in the machine file the overhead is all of
 *     alpha (Hockney: k messages cost a rank k start-ups); with one, the
 *     rest of alpha is latency that overlaps the next sends (LogP).
 *   - A message between nodes also crosses the sending node's network
 *     interface, then the receiving node's (each rank uses NIC
 *     gpu * nics / gpus of its node, or local rank * nics / ranks without
 *     GPUs). Each direction of an interface shares its bandwidth equally
 *     among the messages in it at once (processor sharing); a message
 *     enters both when sent and arrives, a flight later, once through
 *     both (the two directions are independent). This is where contention
 *     comes from: 16 ranks sending out of one node share its bandwidth,
 *     and so do 16 senders to one node.
 *   - A message completes, on both ends, when it has arrived and its
 *     receive was posted (MPI's matching: the i-th send on a channel with
 *     the i-th receive).
 *   - Local copies run on the rank's CPU once the phase is posted, one
 *     after the other, at the copy path's cost, beside the sends (their
 *     bytes move while the CPU copies).
 *   - Where ranks outnumber the cores of their pool (machine.h, `cores`),
 *     the byte time of host memory (and of network bytes, at the cores'
 *     rate) waits for a core, first come, first served, and so does each
 *     message's hand-off (message_us) before the send, in a queue of its
 *     own over the same cores. A rank that hands off holds its port for a
 *     message's bytes only: the hand-off stands for the overhead. There a
 *     rank's phases after its first start wake_us after the one before
 *     ends: it gave its core away while it waited.
 *   - Paths: same rank: copy (device when buffers are on GPUs); same
 *     socket / other socket of a node: socket / node for host buffers, gpu
 *     for device buffers (with the node model's GPU pair bandwidth where
 *     it gives one); other node: network.
 * Pure C, no MPI: thousands of ranks in one process. */
#ifndef NBR_SIM_H
#define NBR_SIM_H

#include "plan/plan.h"
#include "topo/locality.h"
#include "topo/machine.h"

#include <stdint.h>

typedef struct nbr_sim_input {
    int nranks;
    const nbr_plan_t *plans;        /* plans[r], sealed */
    const nbr_locality_t *locality; /* nodes, sockets, GPUs and every node's
                                     * model; NULL: one node, one socket */
    const nbr_machine_t *machine;
    int device_buffers;             /* the user's buffers live on GPUs */
} nbr_sim_input_t;

typedef struct nbr_sim_result {
    double seconds;    /* the collective: when the last rank finished */
    int last_rank;     /* that rank */
    double mean_seconds; /* mean over ranks of when each finished */
    uint64_t messages[NBR_NUM_PATHS]; /* by path (copies under copy / device) */
    uint64_t bytes[NBR_NUM_PATHS];
    uint64_t max_rank_network_messages; /* the most one rank sends between nodes */
    uint64_t max_rank_network_bytes;
} nbr_sim_result_t;

/* Simulates one run of the plans. rank_seconds, when not NULL, receives
 * when each rank finished. A job that would hang (unmatched messages, or
 * ranks waiting for each other) is NBR_ERR_INTERNAL with the reason in
 * message. */
int nbr_simulate(const nbr_sim_input_t *input, nbr_sim_result_t *result, double *rank_seconds,
                 char *message, size_t message_size);

/* One rank's estimate of its own part, with no other rank's timing: its
 * phases one after the other, each as long as the longest of its sends on
 * its port, its bytes through its node's interface out or in (times the
 * ranks sharing that interface: ranks of a job move alike), its slowest
 * receive alone, and its copies. input->plans and nranks are not read.
 * What automatic selection computes on every rank before one allreduce
 * (max) makes it the job's. */
double nbr_sim_rank_estimate(const nbr_sim_input_t *input, const nbr_plan_t *plan);

/* A rank's estimate in parts, for a job-wide price that knows the nodes'
 * real loads: its phases as nbr_sim_rank_estimate prices them but with its
 * interface to itself (seconds), and its bytes out of and into its node
 * (which the ranks of a node sum to price their interfaces together). */
typedef struct nbr_sim_parts {
    double seconds;
    double net_out_bytes, net_in_bytes;
} nbr_sim_parts_t;

void nbr_sim_rank_parts(const nbr_sim_input_t *input, const nbr_plan_t *plan,
                        nbr_sim_parts_t *parts);

/* A job's price of a plan from its ranks' parts: the machine's per-call
 * start plus the slowest rank's seconds (slowest_rank) or the busiest
 * node's interfaces, whichever is longer; node_bytes[2v], [2v+1]: node v's
 * ranks' bytes out and in, summed (all of its interfaces carry them,
 * evenly). */
double nbr_sim_job_price(const nbr_machine_t *machine, double slowest_rank,
                         const double *node_bytes, int nodes);

/* The path a message from rank a to rank b takes (a == b: a copy). */
nbr_path_t nbr_sim_path(const nbr_sim_input_t *input, int a, int b);

#endif
