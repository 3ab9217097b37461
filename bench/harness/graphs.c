#include "harness/graphs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/common.h"
#include "nbrcoll.h"

void bh_pattern_label(const bh_graph_spec_t *spec, char *buf, size_t n)
{
    if (spec->pattern == BH_PATTERN_RSG)
        snprintf(buf, n, "rsg(d=%.2f,s=%llu)", spec->density,
                 (unsigned long long)spec->seed);
    else
        snprintf(buf, n, "moore(d=%d,r=%d)", spec->dims, spec->radius);
}

/* ============================================================ topology */

/* Occurrence index of every slot: the k-th edge s->d in s's out-list is
 * the k-th s in d's in-list (MPI's pairing of repeated edges), so both
 * ends of an edge can derive the same per-edge message size. */
static int *occurrences(const int *list, int n)
{
    int *occ = malloc(((size_t)n + 1) * sizeof *occ);
    if (!occ)
        return NULL;
    for (int j = 0; j < n; j++) {
        occ[j] = 0;
        for (int i = 0; i < j; i++)
            occ[j] += list[i] == list[j];
    }
    return occ;
}

/* Rank and size first: a failed generation still leaves t->rank right,
 * so only rank 0 reports it. */
static void topo_begin(bh_topo_t *t)
{
    memset(t, 0, sizeof *t);
    MPI_Comm_rank(MPI_COMM_WORLD, &t->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t->nranks);
}

/* This rank's lists, their occurrences and room for the node map. */
static int topo_lists(bh_topo_t *t)
{
    t->indeg = nbr_graph_indegree(&t->graph, t->rank);
    t->outdeg = nbr_graph_outdegree(&t->graph, t->rank);
    t->in = nbr_graph_in(&t->graph, t->rank);
    t->out = nbr_graph_out(&t->graph, t->rank);
    t->in_occ = occurrences(t->in, t->indeg);
    t->out_occ = occurrences(t->out, t->outdeg);
    t->node_of = malloc((size_t)t->nranks * sizeof *t->node_of);
    t->socket_of = malloc((size_t)t->nranks * sizeof *t->socket_of);
    if (!t->in_occ || !t->out_occ || !t->node_of || !t->socket_of)
        return NBR_ERR_NOMEM;
    return NBR_SUCCESS;
}

int bh_graph_generate(const bh_graph_spec_t *spec, int nranks, nbr_graph_t *graph)
{
    return spec->pattern == BH_PATTERN_RSG
               ? nbr_graph_erdos_renyi(nranks, spec->density, spec->seed, graph)
               : nbr_graph_moore(nranks, spec->dims, spec->radius, graph);
}

int bh_topo_build(const bh_graph_spec_t *spec, bh_topo_t *t)
{
    topo_begin(t);
    int rc = bh_graph_generate(spec, t->nranks, &t->graph);
    if (rc != NBR_SUCCESS)
        return rc;
    return topo_lists(t);
}

int bh_topo_adopt(bh_topo_t *t, nbr_graph_t graph)
{
    topo_begin(t);
    t->graph = graph;
    return topo_lists(t);
}

void bh_topo_free(bh_topo_t *t)
{
    nbr_graph_free(&t->graph);
    free(t->in_occ);
    free(t->out_occ);
    free(t->node_of);
    free(t->socket_of);
}

static int cmp_pair(const void *a, const void *b)
{
    const int *x = a, *y = b;
    if (x[0] != y[0])
        return (x[0] > y[0]) - (x[0] < y[0]);
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* Number of sockets and L, the largest number of ranks on one socket, from
 * the (node, socket) pairs: what halving's off-socket bound is about. */
static void count_sockets(bh_topo_t *t)
{
    int *pairs = malloc(2 * (size_t)t->nranks * sizeof *pairs);
    if (!pairs)
        bh_die_nbr(NBR_ERR_NOMEM, "count_sockets");
    for (int r = 0; r < t->nranks; r++) {
        pairs[2 * r] = t->node_of[r];
        pairs[2 * r + 1] = t->socket_of[r];
    }
    qsort(pairs, (size_t)t->nranks, 2 * sizeof *pairs, cmp_pair);
    t->nsockets = 0;
    t->socket_max = 0;
    for (int r = 0, run = 0; r < t->nranks; r++) {
        int same = r > 0 && cmp_pair(&pairs[2 * r], &pairs[2 * r - 2]) == 0;
        run = same ? run + 1 : 1;
        t->nsockets += !same;
        t->socket_max = run > t->socket_max ? run : t->socket_max;
    }
    free(pairs);
}

int bh_offsock_bound(const bh_topo_t *t)
{
    if (t->socket_max <= 0 || t->nranks <= t->socket_max)
        return 0;
    int k = 0;
    while ((int64_t)t->socket_max << k < (int64_t)t->nranks)
        k++;
    return k + 1;
}

void bh_topo_gather_locality(MPI_Comm comm, bh_topo_t *t)
{
    int mine[2];
    int rc = nbr_comm_locality(comm, &t->nnodes, &mine[0], &mine[1]);
    if (rc != NBR_SUCCESS)
        bh_die_nbr(rc, "nbr_comm_locality");
    int *both = malloc(2 * (size_t)t->nranks * sizeof *both);
    if (!both)
        bh_die_nbr(NBR_ERR_NOMEM, "gather_locality");
    MPI_Allgather(mine, 2, MPI_INT, both, 2, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < t->nranks; r++) {
        t->node_of[r] = both[2 * r];
        t->socket_of[r] = both[2 * r + 1];
    }
    free(both);
    count_sockets(t);
}

/* ====================================================== communicators */

/* Info carrying the nbrcoll configuration; alg may be NULL (default). */
static MPI_Info make_info(const bh_locality_t *loc, const char *alg)
{
    MPI_Info info;
    char v[32];
    MPI_Info_create(&info);
    if (alg)
        MPI_Info_set(info, "nbr_algorithm", alg);
    if (loc->ranks_per_node > 0) {
        snprintf(v, sizeof v, "%d", loc->ranks_per_node);
        MPI_Info_set(info, "nbr_ranks_per_node", v);
    }
    if (loc->ranks_per_socket > 0) {
        snprintf(v, sizeof v, "%d", loc->ranks_per_socket);
        MPI_Info_set(info, "nbr_ranks_per_socket", v);
    }
    return info;
}

int bh_create_comm(const bh_locality_t *loc, const bh_topo_t *t,
                   const char *alg, MPI_Comm *comm)
{
    MPI_Info info = make_info(loc, alg);
    /* Open MPI defines MPI_UNWEIGHTED as (int *)2; GCC >= 11 then thinks a
     * zero-size array reaches a [] parameter and warns (it does the same
     * for MPI_Dist_graph_create_adjacent itself). A false positive. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
#endif
    int rc = nbr_dist_graph_create_adjacent(
        MPI_COMM_WORLD, t->indeg, t->in, MPI_UNWEIGHTED, t->outdeg, t->out,
        MPI_UNWEIGHTED, info, 0, comm);
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic pop
#endif
    MPI_Info_free(&info);
    return rc;
}

int bh_create_comms(const bh_locality_t *loc, const bh_topo_t *t,
                    const bh_alg_list_t *list, bh_alg_t *algs,
                    MPI_Comm *base)
{
    *base = MPI_COMM_NULL;
    for (int a = 0; a < list->n; a++) {
        algs[a].name = list->names[a];
        algs[a].is_mpi = strcmp(algs[a].name, "mpi") == 0;
        algs[a].is_copy = strcmp(algs[a].name, "copy") == 0;
        algs[a].comm = MPI_COMM_NULL;
        if (algs[a].is_mpi || algs[a].is_copy)
            continue;
        int rc = bh_create_comm(loc, t, algs[a].name, &algs[a].comm);
        if (rc != NBR_SUCCESS)
            return rc;
        if (*base == MPI_COMM_NULL)
            *base = algs[a].comm;
    }
    if (*base == MPI_COMM_NULL) {
        int rc = bh_create_comm(loc, t, NULL, base);
        if (rc != NBR_SUCCESS)
            return rc;
    }
    for (int a = 0; a < list->n; a++)
        if (algs[a].is_mpi)
            algs[a].comm = *base;
    return NBR_SUCCESS;
}

void bh_warn_overridden_algorithms(const bh_alg_t *algs, int nalgs, int rank)
{
    for (int a = 0; a < nalgs; a++) {
        if (algs[a].is_mpi || algs[a].is_copy)
            continue;
        const char *actual = NULL;
        int rc = nbr_comm_algorithm(algs[a].comm, &actual);
        if (rc != NBR_SUCCESS)
            bh_die_nbr(rc, "nbr_comm_algorithm");
        if (rank == 0 && actual && strcmp(actual, algs[a].name) != 0)
            printf("# WARNING: '%s' was requested but nbrcoll runs '%s' "
                   "(NBR_ALGORITHM set?)\n",
                   algs[a].name, actual);
    }
}

void bh_free_comms(bh_alg_t *algs, int nalgs, MPI_Comm base)
{
    for (int a = 0; a < nalgs; a++)
        if (algs[a].comm != MPI_COMM_NULL && algs[a].comm != base)
            MPI_Comm_free(&algs[a].comm);
    if (base != MPI_COMM_NULL)
        MPI_Comm_free(&base);
}
