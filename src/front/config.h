/* Per-communicator configuration: MPI_Info keys, overridden by environment
 * variables of the same meaning (nbrcoll.h lists them). */
#ifndef NBR_CONFIG_H
#define NBR_CONFIG_H

#include "exec/executor.h"

#include <mpi.h>

#define NBR_NAME_MAX 64
#define NBR_PATH_MAX 1024

typedef struct nbr_config {
    char algorithm[NBR_NAME_MAX]; /* validated against the table */
    int ranks_per_node;           /* 0: real nodes */
    int ranks_per_socket;         /* 0: one socket per node */
    char dump_dir[NBR_PATH_MAX];  /* empty: no plan dumps */
    char topo_file[NBR_PATH_MAX]; /* empty: probe the machine */
    char sysfs_root[NBR_PATH_MAX]; /* KFD tree root (tests); empty: "/" */
    int forced_gpu;               /* NBR_GPU; -1: local rank modulo GPUs */
    int leader_min_bytes;         /* leader: smaller blocks go directly */
    nbr_exec_options_t exec;      /* nbr_memory, nbr_staging_chunk, NBR_GPU_AWARE_MPI */
    int combining_theta;          /* nbr_combining_theta: friends share >= this */
} nbr_config_t;

/* Defaults, then info (may be MPI_INFO_NULL), then the environment. */
int nbr_config_load(MPI_Info info, nbr_config_t *config);

/* Only the algorithm key of a request's info (for _init calls); leaves
 * *algorithm untouched when absent. The environment still wins. */
int nbr_config_request_algorithm(MPI_Info info, char *algorithm);

#endif
