/* Where each rank of a communicator lives: node, CPU socket, NUMA domain,
 * GPU (with its package and leader role), and this node's machine model.
 * The plan builders only ever see these plain arrays. */
#ifndef NBR_LOCALITY_H
#define NBR_LOCALITY_H

#include "topo/topology.h"

#include <mpi.h>

typedef struct nbr_locality {
    int nranks;
    int num_nodes;
    int num_sockets;  /* over the whole job */
    int *node_of;     /* rank -> node id, 0 .. num_nodes-1 */
    int *socket_of;   /* rank -> socket id, unique across nodes */
    int *local_rank_of; /* rank -> index among the ranks of its node */
    int *numa_of;     /* rank -> NUMA domain on its node, -1 unknown */
    int *gpu_of;      /* rank -> GPU index in its node's model, -1 none */
    int *package_of;  /* rank -> its GPU's package on its node, -1 none */
    int *leader_of;   /* rank -> 1 when its GPU leads its package */
    nbr_node_model_t model; /* this rank's node (num_gpus 0: flat) */
} nbr_locality_t;

/* Nodes given by any per-rank key (equal key = same node; ids are assigned
 * in order of first appearance). Sockets: local_socket[r] is rank r's socket
 * on its node when given, else consecutive blocks of ranks_per_socket ranks
 * of each node (0: one socket per node). No GPUs. Pure. */
int nbr_locality_from_keys(int nranks, const int *node_key, const int *local_socket,
                           int ranks_per_socket, nbr_locality_t *locality);

/* Virtual nodes: consecutive blocks of ranks_per_node ranks. Pure. */
int nbr_locality_virtual(int nranks, int ranks_per_node, int ranks_per_socket,
                         nbr_locality_t *locality);

/* Every node of locality becomes the stored model at path (tools and tests
 * that study a machine they do not run on); each rank takes its GPU by
 * nbr_local_gpu's rule (local rank modulo the GPUs). The model is kept
 * only when it loads. */
int nbr_locality_load_model(nbr_locality_t *locality, const char *path, char *message,
                            size_t size);

/* The placement rules for one node, shared by nbr_locality_detect and the
 * nbr_topo tool. A rank's GPU is, in this order: forced_gpu when >= 0
 * (NBR_GPU); the GPU whose PCI bus id is current_pci, the device the
 * rank's runtime has current (given when the device layer is on; NULL or
 * "" otherwise); its local rank modulo the node's GPUs; -1 without GPUs.
 * Without a better source, ranks fill the node's sockets in consecutive
 * blocks. */
int nbr_local_gpu(const nbr_node_model_t *model, int local_rank, int forced_gpu,
                  const char *current_pci);
int nbr_block_socket(int local_rank, int local_size, int num_sockets);

/* How nbr_locality_detect finds things out. */
typedef struct nbr_locality_options {
    int ranks_per_node;     /* > 0: virtual nodes */
    int ranks_per_socket;   /* > 0: virtual sockets */
    const char *topo_file;  /* node model from this file */
    const char *sysfs_root; /* KFD tree root for tests; NULL: the real one */
    int forced_gpu;         /* >= 0: every rank uses this GPU (NBR_GPU) */
    const char *current_pci; /* the runtime's current device, when known */
} nbr_locality_options_t;

/* Collective over comm: nodes (virtual or MPI_COMM_TYPE_SHARED), one model
 * per node probed by its first rank and broadcast inside the node, each
 * rank's GPU (forced_gpu, else local rank modulo the GPU count) and CPU
 * place, then one allgather so every rank knows every rank's place. Every
 * rank returns the same status. */
int nbr_locality_detect(MPI_Comm comm, const nbr_locality_options_t *options,
                        nbr_locality_t *locality);

void nbr_locality_free(nbr_locality_t *locality);

#endif
