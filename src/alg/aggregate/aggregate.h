/* aggregate and dedup: three-step locality-aware alltoall(v,w)
 * (locality-aware-alltoallv paper, Sec. 3.2 and 3.3). Ranks are grouped in
 * regions (nodes, or sockets with nbr_aggregate_region=socket). Inside
 * each region every remote region is given to one member, its agent, for
 * sending and to one (maybe another) for receiving; data between two
 * regions then crosses once:
 *
 *   s  every rank sends its pieces for remote regions to their agents in
 *      its region, one message per agent;
 *   g  each agent sends one message per remote region it owns, to the
 *      agent that receives from its region there;
 *   r  each receiving agent sends every member one message with all its
 *      pieces from the regions the agent owns;
 *
 * while messages inside a region go directly (l), beside s. A piece is a
 * block (aggregate), or with value indices (dedup,
 * nbr_neighbor_alltoallv_init_ext) a value: one per source rank and global
 * index, however many elements and ranks of the other region need it.
 * Pieces cross in an order both ends compute (by source rank, then
 * destination rank and occurrence, or global index); local copies pack
 * and unpack where pieces do not lie in that order already.
 *
 * Balancing (per region, both sides): remote regions go heaviest first to
 * the member with the least weight so far (ties: lower region, lower
 * member); a region weighs its edges times nbr_aggregate_message_bytes
 * plus its bytes, so small messages balance by count and large ones by
 * bytes.
 *
 * Who is the agent depends on every member's sizes, so a call first runs
 * an exchange (call facts, 4 rounds of the rounds engine): every rank
 * shares its edges, block sizes (and value indices) inside its region;
 * each region balances; agents announce themselves to a door of the other
 * region (its member at index (own region mod its size)), which tells its
 * own agent; the announced byte totals are compared (a difference is a
 * send and receive signature mismatch, reported on the receiving agent). */
#ifndef NBR_AGGREGATE_H
#define NBR_AGGREGATE_H

#include "alg/registry.h"

typedef struct nbr_aggregate_params {
    int by_socket;        /* regions are sockets, not nodes */
    size_t message_bytes; /* what one message weighs in bytes when balancing */
    int dedup;            /* move values once per region pair (the dedup row's) */
} nbr_aggregate_params_t;

extern const nbr_algorithm_t nbr_alg_aggregate, nbr_alg_dedup;

#endif
