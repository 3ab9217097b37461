#include "locality.h"

#include "../core/log.h"

#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

void nbr_locality_free(nbr_locality_t *locality)
{
    free(locality->node_of);
    free(locality->socket_of);
    memset(locality, 0, sizeof(*locality));
}

int nbr_locality_from_keys(int nranks, const int *node_key,
                           int ranks_per_socket, nbr_locality_t *locality)
{
    memset(locality, 0, sizeof(*locality));
    if (nranks <= 0 || ranks_per_socket < 0)
        return NBR_ERR_ARG;
    int rc = NBR_SUCCESS;
    int *first_rank = malloc((size_t)nranks * sizeof(int)); /* node -> first rank */
    int *node_fill = calloc((size_t)nranks, sizeof(int));   /* ranks seen per node */
    int *socket_base = malloc((size_t)nranks * sizeof(int));
    locality->node_of = malloc((size_t)nranks * sizeof(int));
    locality->socket_of = malloc((size_t)nranks * sizeof(int));
    if (!first_rank || !node_fill || !socket_base || !locality->node_of ||
        !locality->socket_of) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    locality->nranks = nranks;
    /* Node ids in order of first appearance; O(P * nodes), fine at setup. */
    for (int r = 0; r < nranks; r++) {
        int node = 0;
        while (node < locality->num_nodes && node_key[first_rank[node]] != node_key[r])
            node++;
        if (node == locality->num_nodes)
            first_rank[locality->num_nodes++] = r;
        locality->node_of[r] = node;
    }
    /* Sockets: count per node first, then give each node a base id. */
    int *node_size = node_fill;
    for (int r = 0; r < nranks; r++)
        node_size[locality->node_of[r]]++;
    int next_socket = 0;
    for (int n = 0; n < locality->num_nodes; n++) {
        socket_base[n] = next_socket;
        int per = ranks_per_socket > 0 ? ranks_per_socket : node_size[n];
        next_socket += (node_size[n] + per - 1) / per;
        node_size[n] = 0; /* reused below as the local rank counter */
    }
    locality->num_sockets = next_socket;
    for (int r = 0; r < nranks; r++) {
        int n = locality->node_of[r];
        int local = node_fill[n]++;
        locality->socket_of[r] =
            socket_base[n] + (ranks_per_socket > 0 ? local / ranks_per_socket : 0);
    }
out:
    free(first_rank);
    free(node_fill);
    free(socket_base);
    if (rc != NBR_SUCCESS)
        nbr_locality_free(locality);
    return rc;
}

int nbr_locality_virtual(int nranks, int ranks_per_node, int ranks_per_socket,
                         nbr_locality_t *locality)
{
    if (nranks <= 0 || ranks_per_node <= 0)
        return NBR_ERR_ARG;
    int *keys = malloc((size_t)nranks * sizeof(int));
    if (!keys)
        return NBR_ERR_NOMEM;
    for (int r = 0; r < nranks; r++)
        keys[r] = r / ranks_per_node;
    int rc = nbr_locality_from_keys(nranks, keys, ranks_per_socket, locality);
    free(keys);
    return rc;
}

int nbr_locality_detect(MPI_Comm comm, int ranks_per_node,
                        int ranks_per_socket, nbr_locality_t *locality)
{
    int rc = NBR_SUCCESS, nranks = 0, rank = 0, node_key = 0;
    int *keys = NULL;
    MPI_Comm shared = MPI_COMM_NULL;
    NBR_MPI_CHECK(MPI_Comm_size(comm, &nranks));
    if (ranks_per_node > 0)
        return nbr_locality_virtual(nranks, ranks_per_node, ranks_per_socket, locality);
    NBR_MPI_CHECK(MPI_Comm_rank(comm, &rank));
    /* A node is identified by the smallest comm rank on it. */
    NBR_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank,
                                      MPI_INFO_NULL, &shared));
    NBR_MPI_CHECK(MPI_Allreduce(&rank, &node_key, 1, MPI_INT, MPI_MIN, shared));
    keys = malloc((size_t)nranks * sizeof(int));
    if (!keys) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    NBR_MPI_CHECK(MPI_Allgather(&node_key, 1, MPI_INT, keys, 1, MPI_INT, comm));
    rc = nbr_locality_from_keys(nranks, keys, ranks_per_socket, locality);
out:
    if (shared != MPI_COMM_NULL)
        MPI_Comm_free(&shared);
    free(keys);
    return rc;
}
