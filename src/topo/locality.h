/* Which node and CPU socket each rank of a communicator lives on. Issue-3
 * topology discovery (GPUs, hwloc sockets) extends this; the plan builders
 * only ever see these plain arrays. */
#ifndef NBR_LOCALITY_H
#define NBR_LOCALITY_H

#include <mpi.h>

typedef struct nbr_locality {
    int nranks;
    int num_nodes;
    int num_sockets; /* over the whole job */
    int *node_of;    /* rank -> node id, 0 .. num_nodes-1 */
    int *socket_of;  /* rank -> socket id, unique across nodes */
} nbr_locality_t;

/* Nodes given by any per-rank key (equal key = same node; ids are assigned
 * in order of first appearance). Inside each node, ranks are numbered in
 * rank order and split into sockets of ranks_per_socket (0: one socket per
 * node). Pure. */
int nbr_locality_from_keys(int nranks, const int *node_key,
                           int ranks_per_socket, nbr_locality_t *locality);

/* Virtual nodes: consecutive blocks of ranks_per_node ranks. Pure. */
int nbr_locality_virtual(int nranks, int ranks_per_node, int ranks_per_socket,
                         nbr_locality_t *locality);

/* Collective over comm: virtual nodes when ranks_per_node > 0, else the
 * nodes MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) reports. */
int nbr_locality_detect(MPI_Comm comm, int ranks_per_node,
                        int ranks_per_socket, nbr_locality_t *locality);

void nbr_locality_free(nbr_locality_t *locality);

#endif
