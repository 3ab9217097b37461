/* Seeded graph generators shared by the unit tests, MPI tests and nbr_bench.
 * A graph is held whole (every rank's lists) in CSR form. In- and out-lists
 * follow MPI's pairing rule for repeated edges: the k-th occurrence of d in
 * s's out-list is the same edge as the k-th occurrence of s in d's in-list.
 * Pure C, no MPI: every rank of a job can generate the same graph. */
#ifndef NBR_GRAPH_GEN_H
#define NBR_GRAPH_GEN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nbr_graph {
    int nranks;
    int *out_offsets; /* nranks + 1 entries */
    int *out_targets; /* out-neighbors of r: out_targets[out_offsets[r] ..] */
    int *in_offsets;  /* nranks + 1 entries */
    int *in_sources;  /* in-neighbors of r: in_sources[in_offsets[r] ..] */
} nbr_graph_t;

static inline int nbr_graph_outdegree(const nbr_graph_t *g, int r)
{
    return g->out_offsets[r + 1] - g->out_offsets[r];
}
static inline int nbr_graph_indegree(const nbr_graph_t *g, int r)
{
    return g->in_offsets[r + 1] - g->in_offsets[r];
}
static inline const int *nbr_graph_out(const nbr_graph_t *g, int r)
{
    return g->out_targets + g->out_offsets[r];
}
static inline const int *nbr_graph_in(const nbr_graph_t *g, int r)
{
    return g->in_sources + g->in_offsets[r];
}

/* Builds a graph from an edge list; edge e goes src[e] -> dst[e]. Out-lists
 * keep edge order per source, in-lists edge order per destination. Returns 0
 * or an nbr_status_t. */
int nbr_graph_from_edges(int nranks, long nedges, const int *src,
                         const int *dst, nbr_graph_t *graph);

/* Erdős–Rényi directed graph without self-loops: edge i -> j present with
 * probability density, decided by a hash of (seed, i, j) so any rank can
 * evaluate any edge. Out-lists ascending. */
int nbr_graph_erdos_renyi(int nranks, double density, uint64_t seed,
                          nbr_graph_t *graph);

/* Moore neighborhood on a periodic dims-dimensional grid of nranks ranks
 * (grid shape from nbr_grid_shape): every rank sends to the (2r+1)^d - 1
 * ranks within Chebyshev distance radius. Small grids wrap, giving repeated
 * edges and self-loops, exactly as an application's stencil would. */
int nbr_graph_moore(int nranks, int dims, int radius, nbr_graph_t *graph);

/* Balanced grid shape like MPI_Dims_create: shape[0] >= shape[1] >= ... */
int nbr_grid_shape(int nranks, int dims, int *shape);

/* Star: center sends to every other rank (outward) or every other rank
 * sends to center (inward). */
int nbr_graph_star(int nranks, int center, int outward, nbr_graph_t *graph);

/* Random multigraph: each rank draws up to max_out targets uniformly with
 * replacement, self included: repeated edges and self-loops on purpose. */
int nbr_graph_random_multi(int nranks, int max_out, uint64_t seed,
                           nbr_graph_t *graph);

/* The empty graph: no edges at all. */
int nbr_graph_empty(int nranks, nbr_graph_t *graph);

void nbr_graph_free(nbr_graph_t *graph);

/* splitmix64: the one seeded generator of the project (tests, bench). */
static inline uint64_t nbr_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Message sizes of synthetic calls (nbr_bench, nbr_sim, nbr_plan_bench):
 * `bytes` varied by up to +-25 % in eighths by a hash of key, uneven enough
 * to exercise the v-forms and averaging close to bytes. The benchmark and
 * the simulator use the same rule, so a prediction is of the very call the
 * benchmark times. */
static inline uint64_t nbr_varied_bytes(uint64_t bytes, uint64_t key)
{
    uint64_t state = key;
    int step = (int)(nbr_splitmix64(&state) % 9) - 4; /* -4 .. 4 */
    int64_t quarter = (int64_t)(bytes / 4);
    return (uint64_t)((int64_t)bytes + quarter * step / 4);
}

/* allgatherv: every rank contributes one block of its own size. */
static inline uint64_t nbr_block_bytes(uint64_t bytes, int rank)
{
    return nbr_varied_bytes(bytes, UINT64_C(0xB10C) ^ ((uint64_t)rank << 20));
}

/* alltoallv: every edge (src -> dst, its occ-th repetition) has its own size. */
static inline uint64_t nbr_edge_bytes(uint64_t bytes, int src, int dst, int occ)
{
    uint64_t key = ((uint64_t)(uint32_t)src << 32) ^ (uint64_t)(uint32_t)dst ^
                   ((uint64_t)occ << 48);
    return nbr_varied_bytes(bytes, key);
}

#ifdef __cplusplus
}
#endif

#endif
