/* Traffic per rank and call of an algorithm: counted by nbrcoll for its
 * own algorithms (measured), or derived from the graph and node map for
 * the MPI library, which nbrcoll cannot look into (model). */
#ifndef NBR_BENCH_HARNESS_TRAFFIC_H
#define NBR_BENCH_HARNESS_TRAFFIC_H

#include <stdint.h>

#include "harness/buffers.h"
#include "harness/graphs.h"

/* Where a row's traffic numbers come from; NONE for the copy row. */
typedef enum {
    BH_TRAFFIC_MODEL,
    BH_TRAFFIC_MEASURED,
    BH_TRAFFIC_NONE
} bh_counted_t;

/* "model", "measured" or "-". */
const char *bh_counted_name(bh_counted_t counted);

typedef struct bh_traffic {
    double inter_msgs, inter_bytes, offsock_msgs; /* per rank per call,
                                                     mean over ranks */
    double intrasock_msgs; /* to other ranks on the same socket, per rank
                              per call */
    double offsock_max;    /* off-socket messages per call, max over ranks */
    bh_counted_t counted;
} bh_traffic_t;

/* What the MPI library sends for L: one message per edge; an edge leaving
 * the node is inter-node, one leaving the (node, socket) pair is
 * off-socket, one to another rank of the same socket intra-socket; a
 * self-loop is a local copy, no message. Collective; needs the node map
 * (bh_topo_gather_locality). */
void bh_traffic_model(const bh_layout_t *L, const bh_topo_t *t,
                      bh_traffic_t *r);

/* nbrcoll's own counters of algorithm a over iters timed calls, averaged
 * per rank and call. Collective. Returns the total number of calls counted
 * over all ranks (for a sanity check: nranks * iters). */
uint64_t bh_traffic_measured(const bh_alg_t *a, const bh_topo_t *t,
                             int iters, bh_traffic_t *r);

/* Device buffers: which path the bytes of algorithm a took, so that a GPU
 * run shows the IPC pulls and staging it measured (nbrcoll's device
 * counters, per rank and call, averaged over ranks). Collective; rank 0
 * prints one "# <alg> at <bytes> B:" line. */
void bh_report_device_paths(const bh_alg_t *a, const bh_topo_t *t,
                            int iters, uint64_t bytes);

#endif
