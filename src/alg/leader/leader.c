/* leader: the leader-based, topology- and load-aware allgather(v) of
 * rocm-leader-based-allgather.txt (Section V, Alg. 5), as a plan.
 *
 * Three phases, every byte written once, straight into its receive slot:
 *   1. a sender splits each intra-node block between mutual peers by L_t
 *      (Alg. 1) and, for each remote node, scatters the block in pieces over
 *      one landing rank per GPU package among its out-neighbors there
 *      (the package's leader when it is one, else the package's lowest
 *      rank): the block crosses to that node once (L_r, Alg. 2);
 *   2. intra-node peers swap their parts; landing ranks exchange pieces so
 *      each holds the whole block (RM, Alg. 3);
 *   3. landing ranks forward whole blocks to the other receivers of their
 *      package (PEM, Alg. 4) and copy to repeated slots.
 * Receivers derive the same groups from the in-lists of their node's ranks
 * (NI_r, PI_t). Blocks below nbr_leader_min_bytes go directly, as in naive;
 * the decision is per block, which sender and receivers both know.
 * Blocks are split on boundaries every rank derives from the block size
 * alone (the largest power of two up to 16 dividing it): element boundaries
 * for every standard type, and the same on both ends even when the two
 * ranks describe the data with different (matching) datatypes.
 * Ranks with no GPU are packages of their own. alltoallv is not a leader
 * collective: it gets the naive plan (the row says so). Tags: 0 phase 1, 1 peer swaps,
 * 2 landing exchanges, 3 forwards; within a channel messages are ordered by
 * (sender of the block, edge occurrence) on both ends. */
#include "alg/leader/leader_pattern.h"

#include "base/grow.h"
#include "base/settings.h"

#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_DIRECT = 0, TAG_SWAP = 1, TAG_EXCHANGE = 2, TAG_FORWARD = 3 };

typedef struct builder {
    const nbr_plan_input_t *in;
    const nbr_locality_t *loc;
    nbr_plan_t *plan;          /* NULL while building the pattern */
    nbr_leader_pattern_t *pat; /* the communicator's, or one made for this plan */
    int me, my_node, peer;     /* copies of the pattern's */
} builder_t;

static int node_of(const builder_t *b, int r) { return b->loc ? b->loc->node_of[r] : 0; }

/* Ranks without a GPU are packages of their own. */
static int package_key(const builder_t *b, int r)
{
    return b->loc && b->loc->gpu_of && b->loc->gpu_of[r] >= 0 ? b->loc->package_of[r] : -(r + 2);
}

static int is_leader(const builder_t *b, int r)
{
    return b->loc && b->loc->gpu_of && b->loc->gpu_of[r] >= 0 ? b->loc->leader_of[r] : 1;
}

/* The landing rank of x's package among the receivers d[0..n) (ascending). */
static int representative(const builder_t *b, const int *d, int n, int x)
{
    int key = package_key(b, x), lowest = -1;
    for (int i = 0; i < n; i++)
        if (package_key(b, d[i]) == key) {
            if (is_leader(b, d[i]))
                return d[i];
            if (lowest < 0)
                lowest = d[i];
        }
    return lowest;
}

/* Distinct landing ranks of receivers d[0..n), ascending, into landing. */
static int landing_set(const builder_t *b, const int *d, int n, int *landing)
{
    int count = 0;
    for (int i = 0; i < n; i++) {
        int rep = representative(b, d, n, d[i]);
        if (rep == d[i] && (count == 0 || landing[count - 1] != rep))
            landing[count++] = rep;
    }
    return count;
}

/* The split granularity of a block: the largest power of two <= 16 that
 * divides its size. */
static size_t split_unit(size_t bytes)
{
    size_t unit = 16;
    while (unit > 1 && bytes % unit != 0)
        unit /= 2;
    return unit;
}

/* Piece p of a block of `bytes` split into parts on split_unit boundaries. */
static void piece(size_t bytes, int parts, int p, size_t *off, size_t *len)
{
    size_t unit = split_unit(bytes), n = bytes / unit;
    size_t first = n * (size_t)p / (size_t)parts, last = n * (size_t)(p + 1) / (size_t)parts;
    *off = first * unit;
    *len = (last - first) * unit;
}

/* The part of s's block that x holds after phase 1 when s split it between
 * the peers x and y: the lower rank takes the front. */
static void peer_part(const builder_t *b, int s, int x, int y, size_t bytes, size_t *off,
                      size_t *len)
{
    int low = x < y ? x : y;
    size_t unit = split_unit(bytes), n = bytes / unit;
    double share = nbr_pair_share(b->loc, s, low, low == x ? y : x);
    size_t front = (size_t)(share * (double)n + 0.5) * unit;
    if (front > bytes)
        front = bytes;
    *off = x == low ? 0 : front;
    *len = x == low ? front : bytes - front;
}

static int big(const builder_t *b, size_t bytes)
{
    const nbr_leader_params_t *params = b->in->params;
    return bytes > 0 && bytes >= params->min_bytes;
}

/* Is my k-th in-edge from s (same node) split with my peer? */
static int split_with_peer(const builder_t *b, int s, int k)
{
    if (b->peer < 0 || s == b->peer || s == b->me || !b->in->node_in_lists)
        return 0;
    return nbr_list_count(b->in->node_in_lists[b->peer], b->in->node_in_degrees[b->peer], s) > k;
}

/* ------------------------------------------------------------ notes */

/* "a b c" of ranks, for the plan's notes. */
static const char *rank_list(const int *ranks, int n, char *text, size_t size)
{
    size_t used = 0;
    text[0] = '\0';
    for (int i = 0; i < n && used + 12 < size; i++)
        used += (size_t)snprintf(text + used, size - used, i ? " %d" : "%d", ranks[i]);
    return text;
}

/* ------------------------------------------------------------ set-up */

/* Receiving side: for each remote sender, its receivers on my node (one
 * entry per edge, ascending) and their landing ranks. */
static int index_node_receivers(builder_t *b, nbr_leader_pattern_t *pat)
{
    int n = b->in->nranks, total = 0, landings = 0;
    int *fill = malloc(((size_t)n + 1) * sizeof(int));
    pat->bucket = calloc((size_t)n + 1, sizeof(int));
    pat->landing_first = calloc((size_t)n + 1, sizeof(int));
    if (!fill || !pat->bucket || !pat->landing_first) {
        free(fill);
        return NBR_ERR_NOMEM;
    }
    for (int x = 0; x < n; x++)
        if (node_of(b, x) == b->my_node && b->in->node_in_lists[x])
            for (int i = 0; i < b->in->node_in_degrees[x]; i++) {
                int s = b->in->node_in_lists[x][i];
                if (node_of(b, s) != b->my_node) {
                    pat->bucket[s + 1]++;
                    total++;
                }
            }
    for (int s = 0; s < n; s++)
        pat->bucket[s + 1] += pat->bucket[s];
    pat->receivers = malloc(((size_t)total + 1) * sizeof(int));
    pat->landing = malloc(((size_t)total + 1) * sizeof(int)); /* landings <= receivers */
    if (!pat->receivers || !pat->landing) {
        free(fill);
        return NBR_ERR_NOMEM;
    }
    memcpy(fill, pat->bucket, (size_t)n * sizeof(int));
    for (int x = 0; x < n; x++) /* x ascending: buckets come out sorted */
        if (node_of(b, x) == b->my_node && b->in->node_in_lists[x])
            for (int i = 0; i < b->in->node_in_degrees[x]; i++) {
                int s = b->in->node_in_lists[x][i];
                if (node_of(b, s) != b->my_node)
                    pat->receivers[fill[s]++] = x;
            }
    for (int s = 0; s < n; s++) {
        pat->landing_first[s] = landings;
        landings += landing_set(b, pat->receivers + pat->bucket[s],
                                pat->bucket[s + 1] - pat->bucket[s], pat->landing + landings);
    }
    pat->landing_first[n] = landings;
    free(fill);
    return NBR_SUCCESS;
}

/* Sending side: intra-node pairs (L_t) and each remote node's landing
 * ranks, stored at the first out-edge to that node (L_r). */
static int index_destinations(builder_t *b, nbr_leader_pattern_t *pat)
{
    const nbr_plan_input_t *in = b->in;
    int rc = NBR_SUCCESS, deg = in->outdegree, total = 0;
    double *load = malloc(((size_t)deg + 1) * sizeof(double));
    int *d = malloc(((size_t)deg + 1) * sizeof(int));
    int *seen_node = calloc((size_t)in->nranks + 1, sizeof(int));
    pat->out_partner = malloc(((size_t)deg + 1) * sizeof(int));
    pat->send_first = calloc((size_t)deg + 1, sizeof(int));
    pat->send_landing = malloc(((size_t)deg + 1) * sizeof(int));
    if (!load || !d || !seen_node || !pat->out_partner || !pat->send_first ||
        !pat->send_landing) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    rc = nbr_intra_out_loads(in, load, pat->out_partner);
    for (int j = 0; j < deg && rc == NBR_SUCCESS; j++) {
        int x = in->destinations[j], node = node_of(b, x);
        pat->send_first[j] = total;
        if (x == b->me || node == b->my_node || seen_node[node])
            continue;
        seen_node[node] = 1;
        int nd = 0;
        for (int jj = 0; jj < deg; jj++)
            if (node_of(b, in->destinations[jj]) == node)
                d[nd++] = in->destinations[jj];
        qsort(d, (size_t)nd, sizeof(int), nbr_compare_ints);
        total += landing_set(b, d, nd, pat->send_landing + total);
    }
    pat->send_first[deg] = total;
out:
    free(load);
    free(d);
    free(seen_node);
    return rc;
}

void nbr_leader_pattern_free(void *pattern)
{
    nbr_leader_pattern_t *pat = pattern;
    if (!pat)
        return;
    free(pat->bucket);
    free(pat->receivers);
    free(pat->landing_first);
    free(pat->landing);
    free(pat->out_partner);
    free(pat->send_first);
    free(pat->send_landing);
    free(pat);
}

int nbr_leader_pattern_build(const nbr_plan_input_t *in, nbr_leader_pattern_t **out)
{
    *out = NULL;
    if (!in->node_in_lists)
        return NBR_ERR_INTERNAL; /* set-up did not gather them */
    nbr_leader_pattern_t *pat = calloc(1, sizeof(*pat));
    if (!pat)
        return NBR_ERR_NOMEM;
    builder_t b = {.in = in, .loc = in->locality, .me = in->rank};
    b.my_node = node_of(&b, b.me);
    pat->rank = b.me;
    pat->out_count = in->outdegree;
    pat->node = b.my_node;
    pat->peer = nbr_mutual_peer(b.loc, b.me);
    int rc = index_node_receivers(&b, pat);
    if (rc == NBR_SUCCESS)
        rc = index_destinations(&b, pat);
    if (rc != NBR_SUCCESS) {
        nbr_leader_pattern_free(pat);
        return rc;
    }
    *out = pat;
    return NBR_SUCCESS;
}

/* ------------------------------------------------------------ phase 1 */

static int phase1_receive(builder_t *b)
{
    const nbr_plan_input_t *in = b->in;
    int rc = NBR_SUCCESS;
    for (int i = 0; i < in->indegree && rc == NBR_SUCCESS; i++) {
        int s = in->sources[i], k = nbr_list_occurrence(in->sources, i);
        const nbr_slot_t *slot = &in->layout->recv[i];
        if (s == b->me || slot->bytes == 0)
            continue;
        if (!big(b, slot->bytes)) {
            rc = nbr_plan_add_recv(b->plan, s, TAG_DIRECT, NBR_BUF_RECV, slot->offset, slot->bytes);
        } else if (node_of(b, s) == b->my_node) {
            size_t off = 0, len = slot->bytes;
            if (split_with_peer(b, s, k)) {
                peer_part(b, s, b->me, b->peer, slot->bytes, &off, &len);
                if (in->describe)
                    rc = nbr_plan_note(b->plan, "  L_t in (Alg. 1): from %d: %zu of %zu B direct, "
                                                "the rest from peer %d (PI_t)",
                                       s, len, slot->bytes, b->peer);
            }
            if (rc == NBR_SUCCESS && len > 0)
                rc = nbr_plan_add_recv(b->plan, s, TAG_DIRECT, NBR_BUF_RECV, slot->offset + off, len);
        } else if (k == 0) {
            const int *l = b->pat->landing + b->pat->landing_first[s];
            int nl = b->pat->landing_first[s + 1] - b->pat->landing_first[s];
            for (int p = 0; p < nl && rc == NBR_SUCCESS; p++)
                if (l[p] == b->me) {
                    size_t off, len;
                    piece(slot->bytes, nl, p, &off, &len);
                    if (len > 0)
                        rc = nbr_plan_add_recv(b->plan, s, TAG_DIRECT, NBR_BUF_RECV,
                                               slot->offset + off, len);
                }
        }
    }
    return rc;
}

static int phase1_send(builder_t *b)
{
    const nbr_plan_input_t *in = b->in;
    const nbr_leader_pattern_t *pat = b->pat;
    size_t bytes = in->layout->send[0].bytes, base = in->layout->send[0].offset;
    int rc = NBR_SUCCESS;
    if (bytes == 0)
        return NBR_SUCCESS;
    for (int j = 0; j < in->outdegree && rc == NBR_SUCCESS; j++) {
        int x = in->destinations[j], node = node_of(b, x), partner = pat->out_partner[j];
        if (x == b->me)
            continue;
        if (!big(b, bytes)) {
            rc = nbr_plan_add_send(b->plan, x, TAG_DIRECT, NBR_BUF_SEND, base, bytes);
        } else if (node == b->my_node) {
            size_t off = 0, len = bytes;
            if (partner >= 0)
                peer_part(b, b->me, x, in->destinations[partner], bytes, &off, &len);
            if (in->describe)
                rc = partner >= 0
                         ? nbr_plan_note(b->plan, "  L_t (Alg. 1): to %d: %zu of %zu B, the rest "
                                                  "through its peer %d", x, len, bytes,
                                         in->destinations[partner])
                         : nbr_plan_note(b->plan, "  L_t (Alg. 1): to %d: whole block", x);
            if (rc == NBR_SUCCESS && len > 0)
                rc = nbr_plan_add_send(b->plan, x, TAG_DIRECT, NBR_BUF_SEND, base + off, len);
        } else {
            /* the whole remote node at its first edge: pieces to its landing ranks */
            const int *l = pat->send_landing + pat->send_first[j];
            int nl = pat->send_first[j + 1] - pat->send_first[j];
            if (in->describe && nl > 0) {
                char landing_text[256];
                rc = nbr_plan_note(b->plan, "  L_r (Alg. 2): node %d: %d piece(s) of the block to "
                                            "landing ranks %s", node, nl,
                                   rank_list(l, nl, landing_text, sizeof landing_text));
            }
            for (int p = 0; p < nl && rc == NBR_SUCCESS; p++) {
                size_t off, len;
                piece(bytes, nl, p, &off, &len);
                if (len > 0)
                    rc = nbr_plan_add_send(b->plan, l[p], TAG_DIRECT, NBR_BUF_SEND, base + off, len);
            }
        }
    }
    return rc;
}

/* ------------------------------------------------- phases 2 and 3 */

/* Slot of my k-th in-edge from s. */
static const nbr_slot_t *slot_from(const builder_t *b, int s, int k)
{
    int i = nbr_list_find_kth(b->in->sources, b->in->indegree, s, k);
    return i >= 0 ? &b->in->layout->recv[i] : NULL;
}

/* Peer swaps, ordered by (sender, occurrence): the same order on both ends. */
static int phase2_swaps(builder_t *b)
{
    int rc = NBR_SUCCESS;
    for (int s = 0; s < b->in->nranks && rc == NBR_SUCCESS; s++) {
        if (s == b->me || node_of(b, s) != b->my_node)
            continue;
        int edges = nbr_list_count(b->in->sources, b->in->indegree, s);
        for (int k = 0; k < edges && rc == NBR_SUCCESS; k++) {
            const nbr_slot_t *slot = slot_from(b, s, k);
            if (!big(b, slot->bytes) || !split_with_peer(b, s, k))
                continue;
            size_t mine_off, mine_len, theirs_off, theirs_len;
            peer_part(b, s, b->me, b->peer, slot->bytes, &mine_off, &mine_len);
            peer_part(b, s, b->peer, b->me, slot->bytes, &theirs_off, &theirs_len);
            if (mine_len > 0)
                rc = nbr_plan_add_send(b->plan, b->peer, TAG_SWAP, NBR_BUF_RECV,
                                       slot->offset + mine_off, mine_len);
            if (rc == NBR_SUCCESS && theirs_len > 0)
                rc = nbr_plan_add_recv(b->plan, b->peer, TAG_SWAP, NBR_BUF_RECV,
                                       slot->offset + theirs_off, theirs_len);
        }
    }
    return rc;
}

/* For each remote sender (ascending) whose block is big: the landing
 * exchange (phase 2) or the forwards and local copies (phase 3). */
static int remote_blocks(builder_t *b, int phase)
{
    int rc = NBR_SUCCESS;
    for (int s = 0; s < b->in->nranks && rc == NBR_SUCCESS; s++) {
        int nd = b->pat->bucket[s + 1] - b->pat->bucket[s], mine = 0;
        const int *d = b->pat->receivers + b->pat->bucket[s];
        mine = nbr_list_count(d, nd, b->me);
        if (mine == 0)
            continue;
        const nbr_slot_t *first = slot_from(b, s, 0);
        if (!big(b, first->bytes))
            continue;
        const int *l = b->pat->landing + b->pat->landing_first[s];
        int nl = b->pat->landing_first[s + 1] - b->pat->landing_first[s], p = -1;
        for (int q = 0; q < nl; q++)
            if (l[q] == b->me)
                p = q;
        if (b->in->describe && phase == 2 && p >= 0 && nl > 1) {
            char text[256];
            rc = nbr_plan_note(b->plan, "  RM (Alg. 3): block of %d: piece %d of %d, exchanged "
                                        "with landing ranks %s", s, p, nl,
                               rank_list(l, nl, text, sizeof text));
        }
        if (b->in->describe && phase == 3 && rc == NBR_SUCCESS) {
            int rep = representative(b, d, nd, b->me), members[64], nm = 0;
            char text[256];
            for (int i = 0; i < nd && nm < 64; i++)
                if (d[i] != b->me && representative(b, d, nd, d[i]) == b->me &&
                    (nm == 0 || members[nm - 1] != d[i]))
                    members[nm++] = d[i];
            rc = p < 0 ? nbr_plan_note(b->plan, "  PEM (Alg. 4): block of %d: forwarded by "
                                                "landing rank %d", s, rep)
                 : nm > 0 ? nbr_plan_note(b->plan, "  PEM (Alg. 4): block of %d: landing here, "
                                                   "forwarded to %s", s,
                                          rank_list(members, nm, text, sizeof text))
                          : NBR_SUCCESS;
        }
        if (phase == 2) {
            for (int q = 0; q < nl && p >= 0 && rc == NBR_SUCCESS; q++) {
                if (q == p)
                    continue;
                size_t off, len, qoff, qlen;
                piece(first->bytes, nl, p, &off, &len);
                piece(first->bytes, nl, q, &qoff, &qlen);
                if (len > 0)
                    rc = nbr_plan_add_send(b->plan, l[q], TAG_EXCHANGE, NBR_BUF_RECV,
                                           first->offset + off, len);
                if (rc == NBR_SUCCESS && qlen > 0)
                    rc = nbr_plan_add_recv(b->plan, l[q], TAG_EXCHANGE, NBR_BUF_RECV,
                                           first->offset + qoff, qlen);
            }
            continue;
        }
        if (p >= 0) { /* a landing rank: forward to my package, copy to my other slots */
            for (int i = 0; i < nd && rc == NBR_SUCCESS; i++)
                if (d[i] != b->me && representative(b, d, nd, d[i]) == b->me)
                    rc = nbr_plan_add_send(b->plan, d[i], TAG_FORWARD, NBR_BUF_RECV,
                                           first->offset, first->bytes);
            for (int k = 1; k < mine && rc == NBR_SUCCESS; k++)
                rc = nbr_plan_add_copy(b->plan, NBR_BUF_RECV, slot_from(b, s, k)->offset,
                                       NBR_BUF_RECV, first->offset, first->bytes);
        } else { /* a forwarded receiver: every edge's slot from the landing rank */
            int rep = representative(b, d, nd, b->me);
            for (int k = 0; k < mine && rc == NBR_SUCCESS; k++) {
                const nbr_slot_t *slot = slot_from(b, s, k);
                rc = nbr_plan_add_recv(b->plan, rep, TAG_FORWARD, NBR_BUF_RECV, slot->offset,
                                       slot->bytes);
            }
        }
    }
    return rc;
}

static int build(const nbr_plan_input_t *in, nbr_plan_t *plan)
{
    const nbr_leader_params_t *params = in->params;
    int rc = NBR_SUCCESS;
    builder_t b = {.in = in, .loc = in->locality, .plan = plan,
                   .pat = (nbr_leader_pattern_t *)in->pattern};
    if (!b.pat || !params || b.pat->rank != in->rank || b.pat->out_count != in->outdegree)
        return NBR_ERR_INTERNAL; /* a pattern made for another rank or graph */
    b.me = b.pat->rank;
    b.my_node = b.pat->node;
    b.peer = b.pat->peer;
    if (in->describe)
        rc = nbr_plan_note(plan, "  pattern: node %d, GPU %d, mutual peer %d, blocks from %zu B "
                                 "take the leader route",
                           b.my_node, b.loc && b.loc->gpu_of ? b.loc->gpu_of[b.me] : -1, b.peer,
                           params->min_bytes);
    if (rc == NBR_SUCCESS)
        rc = nbr_plan_begin_phase(plan);
    if (rc == NBR_SUCCESS)
        rc = phase1_receive(&b);
    if (rc == NBR_SUCCESS)
        rc = phase1_send(&b);
    if (rc == NBR_SUCCESS)
        rc = nbr_add_self_copies(in, plan);
    if (rc == NBR_SUCCESS)
        rc = nbr_plan_begin_phase(plan);
    if (rc == NBR_SUCCESS)
        rc = phase2_swaps(&b);
    if (rc == NBR_SUCCESS)
        rc = remote_blocks(&b, 2);
    if (rc == NBR_SUCCESS)
        rc = nbr_plan_begin_phase(plan);
    if (rc == NBR_SUCCESS)
        rc = remote_blocks(&b, 3);
    return rc;
}

/* ------------------------------------------------------------ the row */

static int load_params(MPI_Info info, void *params)
{
    int min_bytes = 0;
    int rc = nbr_setting_int(info, NBR_SETTING_LEADER_MIN_BYTES, &min_bytes);
    ((nbr_leader_params_t *)params)->min_bytes = (size_t)min_bytes;
    return rc;
}

static int build_pattern(const nbr_plan_input_t *input, void **pattern)
{
    nbr_leader_pattern_t *pat = NULL;
    int rc = nbr_leader_pattern_build(input, &pat);
    *pattern = pat;
    return rc;
}

const nbr_algorithm_t nbr_alg_leader = {
    .name = "leader",
    .description = "topology- and load-aware allgather(v): blocks cross to a node once, "
                   "scattered over its leader GPUs, then redistributed (large messages)",
    .collectives = NBR_COLL_BIT(NBR_COLL_ALLGATHER) | NBR_COLL_BIT(NBR_COLL_ALLGATHERV),
    .needs = NBR_NEEDS_NODE_IN_LISTS,
    .params_size = sizeof(nbr_leader_params_t),
    .load_params = load_params,
    .build = build,
    .build_pattern = build_pattern,
    .free_pattern = nbr_leader_pattern_free,
};
