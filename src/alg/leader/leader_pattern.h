/* The count-independent part of the leader-based allgather
 * (rocm-leader-based-allgather.txt, Section V), built once per
 * communicator. This file holds its first pieces: the split of a rank's
 * neighbors by node (the paper's I_t, I_r, O_t, O_r) and the intra-node
 * load matrix L_t (Alg. 1, Eq. 1 and 2). Pure functions of the plan input.
 *
 * Pairing rule (Alg. 1, line 2, made exact): two ranks are peers when each
 * is the other's peer rank, i.e. the lowest rank of the node on the other
 * GPU of its package. Ranks that share a GPU with others may have no mutual
 * peer; they are peerless and keep whole blocks (correct, just not
 * offloaded). An out-edge to X pairs with an out-edge to peer(X): the k-th
 * edge to X with the k-th edge to peer(X), so repeated edges pair up the
 * same way on the sending and on the receiving side. */
#ifndef NBR_LEADER_PATTERN_H
#define NBR_LEADER_PATTERN_H

#include "alg/builder.h"

/* The algorithm's parameters (nbr_leader_min_bytes / NBR_LEADER_MIN_BYTES). */
typedef struct nbr_leader_params {
    size_t min_bytes; /* smaller blocks go directly, as in naive */
} nbr_leader_params_t;

/* Positions in the MPI neighbor lists, split by node. */
typedef struct nbr_edge_split {
    int num_in_intra, num_in_inter, num_out_intra, num_out_inter;
    int *in_intra;  /* I_t: positions in sources[] on this rank's node */
    int *in_inter;  /* I_r */
    int *out_intra; /* O_t: positions in destinations[] */
    int *out_inter; /* O_r */
} nbr_edge_split_t;

int nbr_split_edges(const nbr_plan_input_t *input, nbr_edge_split_t *split);
void nbr_edge_split_free(nbr_edge_split_t *split);

/* The mutual peer rank of r (same node, other GPU of its package), or -1. */
int nbr_mutual_peer(const nbr_locality_t *locality, int r);

/* The share of a block that x gets when `from` splits it between the
 * peers x and y (Eq. 2 by links when either is linked to `from`, else Eq. 1
 * by hops); y gets the rest. Symmetric matrices make both ends agree. */
double nbr_pair_share(const nbr_locality_t *locality, int from, int x, int y);

/* L_t, sending side (Alg. 1 lines 1-12): for every out-edge j, load[j] is
 * the fraction of the block sent straight to destinations[j] and
 * partner[j] the out-edge sharing the block with it (-1: none, load 1).
 * Inter-node out-edges get load 1 and no partner here. */
int nbr_intra_out_loads(const nbr_plan_input_t *input, double *load, int *partner);

/* L_t, receiving side (Alg. 1 lines 13-18): for every in-edge i, load[i]
 * is the fraction received straight from sources[i]; the rest comes from
 * this rank's mutual peer. peer_in lists the peer's in-neighbors (PI_t,
 * in MPI order; inter-node ones are ignored). */
int nbr_intra_in_loads(const nbr_plan_input_t *input, const int *peer_in, int num_peer_in,
                       double *load);

/* Everything the leader plan needs that does not depend on counts, built
 * once per communicator (nbr_comm_t keeps it) and reused by every plan:
 * plans only cut byte ranges out of it. */
typedef struct nbr_leader_pattern {
    int rank, node;
    int out_count; /* out-degree it was built for (a consistency check) */
    int peer; /* mutual peer rank, or -1 */
    /* Receiving side, per remote sender s (NI_r turned around): the ranks of
     * my node that receive s's block, one entry per edge, ascending:
     * receivers[bucket[s] .. bucket[s+1]). */
    int *bucket, *receivers;
    /* Their landing ranks, one per package, ascending (L_r at the receiving
     * end; the partners of RM): landing[landing_first[s] .. [s+1]). */
    int *landing_first, *landing;
    /* Sending side, per out-edge j: the intra-node out-edge sharing j's
     * block (L_t), or -1. */
    int *out_partner;
    /* Sending side, per out-edge j that is the first edge to its remote
     * node: that node's landing ranks (L_r, Alg. 2),
     * send_landing[send_first[j] .. send_first[j+1]); empty otherwise. */
    int *send_first, *send_landing;
} nbr_leader_pattern_t;

/* Reads everything of input but the layout. */
int nbr_leader_pattern_build(const nbr_plan_input_t *input, nbr_leader_pattern_t **pattern);
void nbr_leader_pattern_free(void *pattern);

#endif
