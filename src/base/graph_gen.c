#include "base/graph_gen.h"

#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

void nbr_graph_free(nbr_graph_t *graph)
{
    if (!graph)
        return;
    free(graph->out_offsets);
    free(graph->out_targets);
    free(graph->in_offsets);
    free(graph->in_sources);
    memset(graph, 0, sizeof(*graph));
}

/* Counting sort of edge ends into CSR; stable, so per-rank order is edge order. */
static int csr_from_ends(int nranks, long nedges, const int *key,
                         const int *value, int **offsets_out, int **values_out)
{
    int *offsets = calloc((size_t)nranks + 1, sizeof(int));
    int *values = malloc((size_t)(nedges > 0 ? nedges : 1) * sizeof(int));
    int *fill = NULL;
    if (!offsets || !values)
        goto fail;
    for (long e = 0; e < nedges; e++)
        offsets[key[e] + 1]++;
    for (int r = 0; r < nranks; r++)
        offsets[r + 1] += offsets[r];
    fill = malloc((size_t)nranks * sizeof(int) + 1);
    if (!fill)
        goto fail;
    memcpy(fill, offsets, (size_t)nranks * sizeof(int));
    for (long e = 0; e < nedges; e++)
        values[fill[key[e]]++] = value[e];
    free(fill);
    *offsets_out = offsets;
    *values_out = values;
    return NBR_SUCCESS;
fail:
    free(offsets);
    free(values);
    return NBR_ERR_NOMEM;
}

int nbr_graph_from_edges(int nranks, long nedges, const int *src,
                         const int *dst, nbr_graph_t *graph)
{
    if (!graph || nranks <= 0 || nedges < 0 || (nedges > 0 && (!src || !dst)))
        return NBR_ERR_ARG;
    memset(graph, 0, sizeof(*graph));
    for (long e = 0; e < nedges; e++)
        if (src[e] < 0 || src[e] >= nranks || dst[e] < 0 || dst[e] >= nranks)
            return NBR_ERR_RANK;
    graph->nranks = nranks;
    int rc = csr_from_ends(nranks, nedges, src, dst, &graph->out_offsets,
                           &graph->out_targets);
    if (rc == NBR_SUCCESS)
        rc = csr_from_ends(nranks, nedges, dst, src, &graph->in_offsets,
                           &graph->in_sources);
    if (rc != NBR_SUCCESS)
        nbr_graph_free(graph);
    return rc;
}

/* Growable edge list used by the generators below. */
typedef struct edge_list {
    int *src, *dst;
    long count, capacity;
} edge_list_t;

static int edge_push(edge_list_t *list, int s, int d)
{
    if (list->count == list->capacity) {
        long cap = list->capacity ? 2 * list->capacity : 1024;
        int *ns = realloc(list->src, (size_t)cap * sizeof(int));
        if (!ns)
            return NBR_ERR_NOMEM;
        list->src = ns;
        int *nd = realloc(list->dst, (size_t)cap * sizeof(int));
        if (!nd)
            return NBR_ERR_NOMEM;
        list->dst = nd;
        list->capacity = cap;
    }
    list->src[list->count] = s;
    list->dst[list->count] = d;
    list->count++;
    return NBR_SUCCESS;
}

static int edges_to_graph(int nranks, edge_list_t *list, int rc,
                          nbr_graph_t *graph)
{
    if (rc == NBR_SUCCESS)
        rc = nbr_graph_from_edges(nranks, list->count, list->src, list->dst,
                                  graph);
    free(list->src);
    free(list->dst);
    return rc;
}

/* Uniform [0,1) draw that depends only on (seed, i, j). */
static double edge_draw(uint64_t seed, int i, int j)
{
    uint64_t state = seed ^ ((uint64_t)(uint32_t)i << 32 | (uint32_t)j);
    nbr_splitmix64(&state);
    return (double)(nbr_splitmix64(&state) >> 11) * (1.0 / 9007199254740992.0);
}

int nbr_graph_erdos_renyi(int nranks, double density, uint64_t seed,
                          nbr_graph_t *graph)
{
    if (nranks <= 0 || !(density >= 0.0 && density <= 1.0))
        return NBR_ERR_ARG;
    edge_list_t list = {0};
    int rc = NBR_SUCCESS;
    for (int i = 0; i < nranks && rc == NBR_SUCCESS; i++)
        for (int j = 0; j < nranks && rc == NBR_SUCCESS; j++)
            if (i != j && edge_draw(seed, i, j) < density)
                rc = edge_push(&list, i, j);
    return edges_to_graph(nranks, &list, rc, graph);
}

int nbr_grid_shape(int nranks, int dims, int *shape)
{
    if (nranks <= 0 || dims <= 0 || !shape)
        return NBR_ERR_ARG;
    for (int d = 0; d < dims; d++)
        shape[d] = 1;
    /* Give each prime factor, largest first, to the currently smallest axis. */
    int rest = nranks;
    int factors[64], nfactors = 0;
    for (int p = 2; p * p <= rest; p++)
        while (rest % p == 0) {
            factors[nfactors++] = p;
            rest /= p;
        }
    if (rest > 1)
        factors[nfactors++] = rest;
    for (int f = nfactors - 1; f >= 0; f--) {
        int smallest = 0;
        for (int d = 1; d < dims; d++)
            if (shape[d] < shape[smallest])
                smallest = d;
        shape[smallest] *= factors[f];
    }
    for (int a = 0; a < dims; a++) /* descending, like MPI_Dims_create */
        for (int b = a + 1; b < dims; b++)
            if (shape[b] > shape[a]) {
                int t = shape[a];
                shape[a] = shape[b];
                shape[b] = t;
            }
    return NBR_SUCCESS;
}

int nbr_graph_moore(int nranks, int dims, int radius, nbr_graph_t *graph)
{
    enum { MAX_DIMS = 8 };
    if (nranks <= 0 || dims <= 0 || dims > MAX_DIMS || radius < 0)
        return NBR_ERR_ARG;
    int shape[MAX_DIMS], coord[MAX_DIMS], offset[MAX_DIMS];
    int rc = nbr_grid_shape(nranks, dims, shape);
    if (rc != NBR_SUCCESS)
        return rc;
    int side = 2 * radius + 1;
    long noffsets = 1;
    for (int d = 0; d < dims; d++)
        noffsets *= side;
    edge_list_t list = {0};
    for (int r = 0; r < nranks && rc == NBR_SUCCESS; r++) {
        for (int d = dims - 1, rest = r; d >= 0; d--) { /* row-major coords */
            coord[d] = rest % shape[d];
            rest /= shape[d];
        }
        for (long k = 0; k < noffsets && rc == NBR_SUCCESS; k++) {
            int zero = 1;
            for (int d = dims - 1, rest = (int)k; d >= 0; d--) {
                offset[d] = rest % side - radius;
                rest /= side;
                zero &= offset[d] == 0;
            }
            if (zero)
                continue;
            int target = 0;
            for (int d = 0; d < dims; d++) {
                int c = ((coord[d] + offset[d]) % shape[d] + shape[d]) % shape[d];
                target = target * shape[d] + c;
            }
            rc = edge_push(&list, r, target);
        }
    }
    return edges_to_graph(nranks, &list, rc, graph);
}

int nbr_graph_star(int nranks, int center, int outward, nbr_graph_t *graph)
{
    if (nranks <= 0 || center < 0 || center >= nranks)
        return NBR_ERR_ARG;
    edge_list_t list = {0};
    int rc = NBR_SUCCESS;
    for (int r = 0; r < nranks && rc == NBR_SUCCESS; r++)
        if (r != center)
            rc = outward ? edge_push(&list, center, r) : edge_push(&list, r, center);
    return edges_to_graph(nranks, &list, rc, graph);
}

int nbr_graph_random_multi(int nranks, int max_out, uint64_t seed,
                           nbr_graph_t *graph)
{
    if (nranks <= 0 || max_out < 0)
        return NBR_ERR_ARG;
    edge_list_t list = {0};
    uint64_t state = seed;
    int rc = NBR_SUCCESS;
    for (int r = 0; r < nranks && rc == NBR_SUCCESS; r++) {
        int degree = (int)(nbr_splitmix64(&state) % (uint64_t)(max_out + 1));
        for (int k = 0; k < degree && rc == NBR_SUCCESS; k++)
            rc = edge_push(&list, r, (int)(nbr_splitmix64(&state) % (uint64_t)nranks));
    }
    return edges_to_graph(nranks, &list, rc, graph);
}

int nbr_graph_empty(int nranks, nbr_graph_t *graph)
{
    edge_list_t list = {0};
    return edges_to_graph(nranks, &list, NBR_SUCCESS, graph);
}
