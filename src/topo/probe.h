/* Finding out what a node looks like: the sources of the node model, tried
 * in order, each falling back to the next with one NBR_LOG=info line that
 * says why:
 *   1. a topology file (NBR_TOPO_FILE / MPI_Info nbr_topo_file); a file
 *      that cannot be read or parsed is an error, never skipped;
 *   2. rocm_smi (when built with it and a GPU answers);
 *   3. the KFD sysfs tree (AMD GPUs without rocm_smi);
 *   4. CUDA (when built with it and a GPU answers);
 *   5. a flat node: no GPUs, no links, still correct.
 * hwloc then fills the CPU side (sockets, NUMA domains, each GPU's NUMA
 * domain) of every probed model; a file's model is kept as written. */
#ifndef NBR_PROBE_H
#define NBR_PROBE_H

#include "topo/topology.h"

typedef struct nbr_probe_options {
    const char *topo_file;  /* NULL or "": no file */
    const char *sysfs_root; /* KFD tree root; NULL or "": the real one */
} nbr_probe_options_t;

/* Builds this node's model. */
int nbr_probe_node(const nbr_probe_options_t *options, nbr_node_model_t *model);

/* This process's CPU place, from hwloc (cached after the first call). */
typedef struct nbr_host_place {
    int num_sockets, num_numa; /* of this machine */
    int socket, numa;          /* where this process runs; -1 when unknown */
    int bound;                 /* 1 when bound inside one socket */
} nbr_host_place_t;

int nbr_probe_host_place(nbr_host_place_t *place);

/* Tests: drops the cached topology and place (the next probe loads hwloc
 * again) and makes the n-th hwloc call that can fail fail from now on, as
 * hwloc would fail it (0: none). nbr_probe_hwloc_calls: such calls made
 * since. */
void nbr_probe_hwloc_fail_at(long n);
long nbr_probe_hwloc_calls(void);

#endif
