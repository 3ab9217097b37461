/* aggregate: three-step locality-aware alltoallv (locality-aware-alltoallv
 * paper, Sec. 3.2). Ranks are grouped in regions (nodes, or sockets with
 * nbr_aggregate_region=socket). Inside each region every remote region is
 * given to one member, its agent, for sending and to one (maybe another)
 * for receiving; a message between two regions then crosses once:
 *
 *   s  every rank sends its blocks for remote regions to their agents in
 *      its region, one message per agent;
 *   g  each agent sends one message per remote region it owns, to the
 *      agent that receives from its region there;
 *   r  each receiving agent sends every member one message with all its
 *      blocks from the regions the agent owns;
 *
 * while messages inside a region go directly (l), beside s. Blocks cross
 * in one order both ends can compute: by source rank, destination rank,
 * then occurrence (repeated edges). Local copies pack and unpack where
 * blocks are not contiguous already.
 *
 * Balancing (per region, both sides): remote regions go heaviest first to
 * the member with the least weight so far (ties: lower region, lower
 * member); a region weighs its edges times nbr_aggregate_message_bytes
 * plus its bytes, so small messages balance by count and large ones by
 * bytes.
 *
 * Who is the agent depends on every member's block sizes, so a call first
 * runs an exchange (call facts, 4 rounds of the rounds engine): every rank
 * shares its edges and block sizes inside its region; each region
 * balances; agents announce themselves to a door of the other region (its
 * member at index (own region mod its size)), which tells its own agent;
 * the announced byte totals are compared (a difference is a send and
 * receive signature mismatch, reported on the receiving agent). */
#ifndef NBR_AGGREGATE_H
#define NBR_AGGREGATE_H

#include "alg/registry.h"

typedef struct nbr_aggregate_params {
    int by_socket;        /* regions are sockets, not nodes */
    size_t message_bytes; /* what one message weighs in bytes when balancing */
} nbr_aggregate_params_t;

extern const nbr_algorithm_t nbr_alg_aggregate;

#endif
