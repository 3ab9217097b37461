#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include "topo/locality.h"

#include "topo/probe.h"
#include "base/log.h"

#include <nbrcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void nbr_locality_free(nbr_locality_t *locality)
{
    free(locality->node_of);
    free(locality->socket_of);
    free(locality->local_rank_of);
    free(locality->numa_of);
    free(locality->gpu_of);
    free(locality->package_of);
    free(locality->leader_of);
    nbr_model_free(&locality->model);
    memset(locality, 0, sizeof(*locality));
}

static int allocate(nbr_locality_t *locality, int nranks)
{
    memset(locality, 0, sizeof(*locality));
    locality->nranks = nranks;
    int **arrays[] = {&locality->node_of, &locality->socket_of, &locality->local_rank_of,
                      &locality->numa_of, &locality->gpu_of, &locality->package_of,
                      &locality->leader_of};
    for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++) {
        *arrays[a] = malloc((size_t)nranks * sizeof(int));
        if (!*arrays[a]) {
            nbr_locality_free(locality);
            return NBR_ERR_NOMEM;
        }
    }
    for (int r = 0; r < nranks; r++) {
        locality->numa_of[r] = locality->gpu_of[r] = locality->package_of[r] = -1;
        locality->leader_of[r] = 0;
    }
    return nbr_model_flat(&locality->model, 0);
}

int nbr_locality_from_keys(int nranks, const int *node_key, const int *local_socket,
                           int ranks_per_socket, nbr_locality_t *locality)
{
    if (nranks <= 0 || ranks_per_socket < 0)
        return NBR_ERR_ARG;
    int rc = allocate(locality, nranks);
    if (rc != NBR_SUCCESS)
        return rc;
    int *first_rank = malloc((size_t)nranks * sizeof(int)); /* node -> first rank */
    int *node_size = calloc((size_t)nranks, sizeof(int));
    int *socket_count = calloc((size_t)nranks, sizeof(int)); /* node -> sockets */
    int *socket_base = malloc((size_t)nranks * sizeof(int));
    if (!first_rank || !node_size || !socket_count || !socket_base) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    /* Node ids in order of first appearance; O(P * nodes), fine at set-up. */
    for (int r = 0; r < nranks; r++) {
        int node = 0;
        while (node < locality->num_nodes && node_key[first_rank[node]] != node_key[r])
            node++;
        if (node == locality->num_nodes)
            first_rank[locality->num_nodes++] = r;
        locality->node_of[r] = node;
        locality->local_rank_of[r] = node_size[node]++;
    }
    /* Local socket per rank, then global ids: each node's sockets in turn. */
    for (int r = 0; r < nranks; r++) {
        int local = local_socket ? local_socket[r]
                    : ranks_per_socket > 0 ? locality->local_rank_of[r] / ranks_per_socket
                                           : 0;
        if (local < 0)
            local = 0;
        locality->socket_of[r] = local;
        if (local + 1 > socket_count[locality->node_of[r]])
            socket_count[locality->node_of[r]] = local + 1;
    }
    for (int n = 0, next = 0; n < locality->num_nodes; n++) {
        socket_base[n] = next;
        next += socket_count[n];
        locality->num_sockets = next;
    }
    for (int r = 0; r < nranks; r++)
        locality->socket_of[r] += socket_base[locality->node_of[r]];
out:
    free(first_rank);
    free(node_size);
    free(socket_count);
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
    int rc = nbr_locality_from_keys(nranks, keys, NULL, ranks_per_socket, locality);
    free(keys);
    return rc;
}

int nbr_locality_load_model(nbr_locality_t *locality, const char *path, char *message,
                            size_t size)
{
    nbr_node_model_t model;
    int rc = nbr_model_load(path, &model, message, size);
    if (rc != NBR_SUCCESS)
        return rc;
    nbr_model_free(&locality->model);
    locality->model = model;
    for (int r = 0; r < locality->nranks && model.num_gpus > 0; r++) {
        int gpu = nbr_local_gpu(&model, locality->local_rank_of[r], -1, NULL);
        locality->gpu_of[r] = gpu;
        locality->package_of[r] = model.gpus[gpu].package;
        locality->leader_of[r] = model.gpus[gpu].leader;
    }
    return NBR_SUCCESS;
}

/* ------------------------------------------------------------ detection */

/* The node's first rank probes; the model travels as its text form. */
static int share_node_model(MPI_Comm node_comm, const nbr_locality_options_t *options,
                            nbr_node_model_t *model)
{
    int rc = NBR_SUCCESS, local_rank = 0;
    long length = 0;
    char *text = NULL;
    size_t size = 0;
    NBR_MPI_CHECK(MPI_Comm_rank(node_comm, &local_rank));
    if (local_rank == 0) {
        nbr_probe_options_t probe = {options->topo_file, options->sysfs_root};
        int probe_rc = nbr_probe_node(&probe, model);
        FILE *out = probe_rc == NBR_SUCCESS ? open_memstream(&text, &size) : NULL;
        if (out) {
            probe_rc = nbr_model_write(model, out);
            fclose(out);
        } else if (probe_rc == NBR_SUCCESS) {
            probe_rc = NBR_ERR_NOMEM;
        }
        length = probe_rc == NBR_SUCCESS ? (long)size : probe_rc; /* < 0: an error */
    }
    NBR_MPI_CHECK(MPI_Bcast(&length, 1, MPI_LONG, 0, node_comm));
    if (length < 0) {
        rc = (int)length;
        goto out;
    }
    if (local_rank != 0 && !(text = malloc((size_t)length + 1)))
        rc = NBR_ERR_NOMEM; /* keep taking part in the broadcasts below */
    /* Fixed-size pieces: every rank makes the same calls, whatever happened. */
    for (long at = 0; at < length; at += 4096) {
        char piece[4096];
        int count = (int)(length - at < 4096 ? length - at : 4096);
        if (local_rank == 0)
            memcpy(piece, text + at, (size_t)count);
        NBR_MPI_CHECK(MPI_Bcast(piece, count, MPI_CHAR, 0, node_comm));
        if (local_rank != 0 && text)
            memcpy(text + at, piece, (size_t)count);
    }
    if (local_rank != 0 && rc == NBR_SUCCESS) {
        char source[NBR_TOPO_NAME_MAX], why[512];
        text[length] = '\0';
        snprintf(source, sizeof source, "node rank 0");
        rc = nbr_model_parse(text, source, model, why, sizeof why);
        if (rc != NBR_SUCCESS)
            NBR_ERROR("node model did not survive the broadcast: %s", why);
    }
out:
    free(text);
    return rc;
}

int nbr_local_gpu(const nbr_node_model_t *model, int local_rank, int forced_gpu,
                  const char *current_pci)
{
    if (forced_gpu >= 0)
        return forced_gpu;
    for (int g = 0; current_pci && current_pci[0] && g < model->num_gpus; g++)
        if (strcasecmp(model->gpus[g].pci_bus_id, current_pci) == 0)
            return g;
    return model->num_gpus > 0 ? local_rank % model->num_gpus : -1;
}

int nbr_block_socket(int local_rank, int local_size, int num_sockets)
{
    return local_size > 0 ? (int)((long)local_rank * num_sockets / local_size) : 0;
}

enum { FACT_SOCKET, FACT_NUMA, FACT_GPU, FACT_PACKAGE, FACT_LEADER, NUM_FACTS };

/* This rank's place on its node. */
static int my_facts(const nbr_locality_options_t *options, const nbr_node_model_t *model,
                    int local_rank, int local_size, int *facts)
{
    int num_gpus = model->num_gpus;
    int gpu = nbr_local_gpu(model, local_rank, options->forced_gpu, options->current_pci);
    if (gpu >= num_gpus) {
        NBR_ERROR("NBR_GPU=%d but the node has %d GPUs", gpu, num_gpus);
        return NBR_ERR_INFO;
    }
    nbr_host_place_t host;
    int from_file = options->topo_file && options->topo_file[0];
    int socket = 0, numa = gpu >= 0 ? model->gpus[gpu].numa_node : -1;
    if (options->ranks_per_socket > 0) {
        socket = local_rank / options->ranks_per_socket;
    } else if (from_file) {
        socket = nbr_block_socket(local_rank, local_size, model->num_sockets); /* a modelled machine */
    } else if (nbr_probe_host_place(&host) == NBR_SUCCESS) {
        socket = host.socket >= 0 ? host.socket : 0;
        if (numa < 0)
            numa = host.numa;
    }
    facts[FACT_SOCKET] = socket;
    facts[FACT_NUMA] = numa;
    facts[FACT_GPU] = gpu;
    facts[FACT_PACKAGE] = gpu >= 0 ? model->gpus[gpu].package : -1;
    facts[FACT_LEADER] = gpu >= 0 ? model->gpus[gpu].leader : 0;
    return NBR_SUCCESS;
}

int nbr_locality_detect(MPI_Comm comm, const nbr_locality_options_t *options,
                        nbr_locality_t *locality)
{
    int rc = NBR_SUCCESS, nranks = 0, rank = 0, node_key = 0, local_rank = 0, local_size = 0;
    int facts[NUM_FACTS] = {0};
    int *keys = NULL, *all_facts = NULL, *local_socket = NULL;
    MPI_Comm node_comm = MPI_COMM_NULL;
    nbr_node_model_t model = {0};
    memset(locality, 0, sizeof(*locality));
    NBR_MPI_CHECK(MPI_Comm_size(comm, &nranks));
    NBR_MPI_CHECK(MPI_Comm_rank(comm, &rank));
    if (options->ranks_per_node > 0) {
        node_key = rank / options->ranks_per_node;
        NBR_MPI_CHECK(MPI_Comm_split(comm, node_key, rank, &node_comm));
    } else {
        NBR_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                                          &node_comm));
        /* A node is named by the smallest comm rank on it. */
        NBR_MPI_CHECK(MPI_Allreduce(&rank, &node_key, 1, MPI_INT, MPI_MIN, node_comm));
    }
    NBR_MPI_CHECK(MPI_Comm_rank(node_comm, &local_rank));
    NBR_MPI_CHECK(MPI_Comm_size(node_comm, &local_size));
    int local_rc = share_node_model(node_comm, options, &model);
    if (local_rc == NBR_SUCCESS)
        local_rc = my_facts(options, &model, local_rank, local_size, facts);
    NBR_CHECK(nbr_agree(comm, local_rc)); /* every rank leaves with the same status */
    keys = malloc((size_t)nranks * sizeof(int));
    local_socket = malloc((size_t)nranks * sizeof(int));
    all_facts = malloc((size_t)nranks * NUM_FACTS * sizeof(int));
    if (!keys || !local_socket || !all_facts) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    NBR_MPI_CHECK(MPI_Allgather(&node_key, 1, MPI_INT, keys, 1, MPI_INT, comm));
    NBR_MPI_CHECK(MPI_Allgather(facts, NUM_FACTS, MPI_INT, all_facts, NUM_FACTS, MPI_INT, comm));
    for (int r = 0; r < nranks; r++)
        local_socket[r] = all_facts[r * NUM_FACTS + FACT_SOCKET];
    NBR_CHECK(nbr_locality_from_keys(nranks, keys, local_socket, 0, locality));
    for (int r = 0; r < nranks; r++) {
        const int *f = &all_facts[r * NUM_FACTS];
        locality->numa_of[r] = f[FACT_NUMA];
        locality->gpu_of[r] = f[FACT_GPU];
        locality->package_of[r] = f[FACT_PACKAGE];
        locality->leader_of[r] = f[FACT_LEADER];
    }
    nbr_model_free(&locality->model);
    locality->model = model;
    memset(&model, 0, sizeof model);
out:
    if (node_comm != MPI_COMM_NULL)
        MPI_Comm_free(&node_comm);
    nbr_model_free(&model);
    free(keys);
    free(local_socket);
    free(all_facts);
    return rc;
}
