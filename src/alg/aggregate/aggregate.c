/* The aggregate and dedup rows: one exchange (facts.c) and one builder
 * (plan.c); dedup also moves values by their global indices. */
#include "alg/aggregate/internal.h"

#include "base/log.h"
#include "base/settings.h"

#include <nbrcoll.h>
#include <string.h>

static int load(MPI_Info info, nbr_aggregate_params_t *p)
{
    char region[16] = "node";
    int message_bytes = 16384;
    int rc = nbr_setting_string(info, "nbr_aggregate_region", "NBR_AGGREGATE_REGION", region,
                                (int)sizeof region);
    if (rc == NBR_SUCCESS && strcmp(region, "node") != 0 && strcmp(region, "socket") != 0) {
        NBR_ERROR("nbr_aggregate_region: '%s' is neither node nor socket", region);
        rc = NBR_ERR_INFO;
    }
    if (rc == NBR_SUCCESS)
        rc = nbr_setting_int(info, "nbr_aggregate_message_bytes", "NBR_AGGREGATE_MESSAGE_BYTES",
                             0, &message_bytes);
    p->by_socket = strcmp(region, "socket") == 0;
    p->message_bytes = (size_t)message_bytes;
    return rc;
}

static int load_aggregate(MPI_Info info, void *params)
{
    nbr_aggregate_params_t *p = params;
    p->dedup = 0;
    return load(info, p);
}

static int load_dedup(MPI_Info info, void *params)
{
    nbr_aggregate_params_t *p = params;
    p->dedup = 1;
    return load(info, p);
}

#define AGGREGATE_HOOKS                                                       \
    .collectives = NBR_COLL_BIT(NBR_COLL_ALLTOALLV),                          \
    .params_size = sizeof(nbr_aggregate_params_t), .build = nbr_aggregate_build, \
    .build_pattern = nbr_aggregate_regions_build,                             \
    .free_pattern = nbr_aggregate_regions_free,                               \
    .call_facts_size = sizeof(nbr_aggregate_facts_t), .call_facts_rounds = 4, \
    .call_facts_init = nbr_aggregate_facts_init,                              \
    .call_facts_step = nbr_aggregate_facts_step,                              \
    .call_facts_check = nbr_aggregate_facts_check,                            \
    .call_facts_free = nbr_aggregate_facts_free

const nbr_algorithm_t nbr_alg_aggregate = {
    .name = "aggregate",
    .description = "locality-aware alltoall(v,w): inside each node, agents gather the blocks "
                   "for other nodes, one message crosses per node pair, and the receiving "
                   "agents hand them out (many small messages between nodes)",
    .load_params = load_aggregate,
    AGGREGATE_HOOKS,
};

const nbr_algorithm_t nbr_alg_dedup = {
    .name = "dedup",
    .description = "aggregate with value indices (nbr_neighbor_alltoallv_init_ext): a value "
                   "several ranks of one node need crosses to that node once",
    .load_params = load_dedup,
    .needs_values = 1,
    AGGREGATE_HOOKS,
};
