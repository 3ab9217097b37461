#include "alg/leader/leader_pattern.h"

#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

void nbr_edge_split_free(nbr_edge_split_t *split)
{
    free(split->in_intra);
    free(split->in_inter);
    free(split->out_intra);
    free(split->out_inter);
    memset(split, 0, sizeof(*split));
}

int nbr_split_edges(const nbr_plan_input_t *in, nbr_edge_split_t *split)
{
    memset(split, 0, sizeof(*split));
    const int *node = in->locality ? in->locality->node_of : NULL;
    int my_node = node ? node[in->rank] : 0;
    split->in_intra = malloc(((size_t)in->indegree + 1) * sizeof(int));
    split->in_inter = malloc(((size_t)in->indegree + 1) * sizeof(int));
    split->out_intra = malloc(((size_t)in->outdegree + 1) * sizeof(int));
    split->out_inter = malloc(((size_t)in->outdegree + 1) * sizeof(int));
    if (!split->in_intra || !split->in_inter || !split->out_intra || !split->out_inter) {
        nbr_edge_split_free(split);
        return NBR_ERR_NOMEM;
    }
    for (int i = 0; i < in->indegree; i++) {
        if (!node || node[in->sources[i]] == my_node)
            split->in_intra[split->num_in_intra++] = i;
        else
            split->in_inter[split->num_in_inter++] = i;
    }
    for (int j = 0; j < in->outdegree; j++) {
        if (!node || node[in->destinations[j]] == my_node)
            split->out_intra[split->num_out_intra++] = j;
        else
            split->out_inter[split->num_out_inter++] = j;
    }
    return NBR_SUCCESS;
}

/* The lowest rank of r's node on the other GPU of r's package, or -1. */
static int peer_rank(const nbr_locality_t *loc, int r)
{
    if (loc->gpu_of[r] < 0)
        return -1;
    for (int s = 0; s < loc->nranks; s++)
        if (loc->node_of[s] == loc->node_of[r] && loc->package_of[s] == loc->package_of[r] &&
            loc->gpu_of[s] >= 0 && loc->gpu_of[s] != loc->gpu_of[r])
            return s;
    return -1;
}

int nbr_mutual_peer(const nbr_locality_t *loc, int r)
{
    if (!loc || !loc->gpu_of)
        return -1;
    int p = peer_rank(loc, r);
    return p >= 0 && peer_rank(loc, p) == r ? p : -1;
}

/* T_l and T_h between the GPUs of two ranks of this node. */
static int links_between(const nbr_locality_t *loc, int a, int b)
{
    return NBR_TOPO_AT(&loc->model, links, loc->gpu_of[a], loc->gpu_of[b]);
}

static int hops_between(const nbr_locality_t *loc, int a, int b)
{
    return NBR_TOPO_AT(&loc->model, hops, loc->gpu_of[a], loc->gpu_of[b]);
}

/* Shares of one block between x and y as seen from `from` (Eq. 2 when any
 * link exists, else Eq. 1); share_x + share_y = 1. */
static void split_block(const nbr_locality_t *loc, int from, int x, int y, double *share_x)
{
    int lx = links_between(loc, from, x), ly = links_between(loc, from, y);
    if (lx + ly > 0) {
        *share_x = (double)lx / (lx + ly);
        return;
    }
    /* Eq. 1: (n_h - T_h[from][x]) / n_h with n_h = hx + hy: the nearer GPU
     * carries more */
    int hx = hops_between(loc, from, x), hy = hops_between(loc, from, y);
    *share_x = hx + hy > 0 ? (double)hy / (hx + hy) : 0.5;
}

double nbr_pair_share(const nbr_locality_t *locality, int from, int x, int y)
{
    double share = 1.0;
    split_block(locality, from, x, y, &share);
    return share;
}

static int has_gpus(const nbr_plan_input_t *in)
{
    return in->locality && in->locality->gpu_of && in->locality->gpu_of[in->rank] >= 0 &&
           in->locality->model.num_gpus > 0;
}

int nbr_intra_out_loads(const nbr_plan_input_t *in, double *load, int *partner)
{
    const nbr_locality_t *loc = in->locality;
    for (int j = 0; j < in->outdegree; j++) {
        load[j] = 1.0;
        partner[j] = -1;
    }
    if (!has_gpus(in))
        return NBR_SUCCESS;
    for (int j = 0; j < in->outdegree; j++) {
        int x = in->destinations[j];
        if (partner[j] >= 0 || x == in->rank || loc->node_of[x] != loc->node_of[in->rank])
            continue;
        int y = nbr_mutual_peer(loc, x);
        if (y < 0 || y == in->rank)
            continue; /* my own peer receives from me directly: nothing to offload */
        int k = nbr_list_find_kth(in->destinations, in->outdegree, y, nbr_list_occurrence(in->destinations, j));
        if (k < 0)
            continue;
        partner[j] = k;
        partner[k] = j;
        split_block(loc, in->rank, x, y, &load[j]);
        load[k] = 1.0 - load[j];
    }
    return NBR_SUCCESS;
}

int nbr_intra_in_loads(const nbr_plan_input_t *in, const int *peer_in, int num_peer_in,
                       double *load)
{
    const nbr_locality_t *loc = in->locality;
    for (int i = 0; i < in->indegree; i++)
        load[i] = 1.0;
    if (!has_gpus(in))
        return NBR_SUCCESS;
    int peer = nbr_mutual_peer(loc, in->rank);
    if (peer < 0)
        return NBR_SUCCESS;
    for (int i = 0; i < in->indegree; i++) {
        int s = in->sources[i];
        if (s == in->rank || s == peer || loc->node_of[s] != loc->node_of[in->rank])
            continue;
        /* paired iff the sender also has a matching edge to my peer */
        if (nbr_list_find_kth(peer_in, num_peer_in, s, nbr_list_occurrence(in->sources, i)) < 0)
            continue;
        split_block(loc, s, in->rank, peer, &load[i]);
    }
    return NBR_SUCCESS;
}
