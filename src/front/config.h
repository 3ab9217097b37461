/* Per-communicator configuration: MPI_Info keys, overridden by environment
 * variables of the same meaning (rows of base/settings_table.def). */
#ifndef NBR_CONFIG_H
#define NBR_CONFIG_H

#include "alg/registry.h"
#include "exec/executor.h"
#include "topo/machine.h"

#include <mpi.h>

#define NBR_NAME_MAX 64
#define NBR_PATH_MAX 1024

typedef struct nbr_config {
    const nbr_algorithm_t *algorithm; /* the communicator's; NULL: auto */
    nbr_algorithm_params_t params;    /* every algorithm's own (owned) */
    nbr_machine_t machine;            /* nbr_machine; what auto prices with */
    int auto_whole_graph_ranks;       /* auto prices whole-graph algorithms up to this */
    int auto_trials;                  /* timed blocking calls per trial side; 0: none */
    int expected_starts; /* a persistent request's runs, over which auto spreads set-up */
    int ranks_per_node;           /* 0: real nodes */
    int ranks_per_socket;         /* 0: one socket per node */
    char dump_dir[NBR_PATH_MAX];  /* empty: no plan dumps */
    char topo_file[NBR_PATH_MAX]; /* empty: probe the machine */
    char sysfs_root[NBR_PATH_MAX]; /* KFD tree root (tests); empty: "/" */
    int forced_gpu;               /* NBR_GPU; -1: local rank modulo GPUs */
    int check_graph;              /* nbr_check_graph: in- and out-lists must agree */
    int agree_errors;             /* nbr_agree_errors: every call ends in one status */
    nbr_exec_options_t exec;      /* nbr_memory, nbr_staging_chunk, NBR_GPU_AWARE_MPI */
} nbr_config_t;

/* A setting every rank of a communicator must share: a rank with another
 * value would plan other messages, or none (a different algorithm, node
 * size, graph check ...). name is how the log shows it; value is printable
 * and, where the setting is a whole parameter block, a digest. */
typedef struct nbr_shared_setting {
    char name[64];
    char value[80];
} nbr_shared_setting_t;

#define NBR_SHARED_SETTINGS_MAX 32

/* Fills settings (room for NBR_SHARED_SETTINGS_MAX) from config; returns
 * how many. Settings a rank may hold alone (NBR_GPU, NBR_DUMP_PLAN, the
 * node model file) are not among them. */
int nbr_config_shared_settings(const nbr_config_t *config, nbr_shared_setting_t *settings);

/* Defaults, then info (may be MPI_INFO_NULL), then the environment.
 * Release with nbr_config_free (nothing to free after a failure). */
int nbr_config_load(MPI_Info info, nbr_config_t *config);
void nbr_config_free(nbr_config_t *config);
/* Loads and frees: whether info and the environment are valid. */
int nbr_config_check(MPI_Info info);

/* Only the algorithm key of a request's info (for _init calls); leaves
 * *algorithm untouched when absent, NULL for auto. The environment still
 * wins. */
int nbr_config_request_algorithm(MPI_Info info, const nbr_algorithm_t **algorithm);

#endif
