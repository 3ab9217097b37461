/* The aggregate and dedup rows: one exchange (facts.c) and one builder
 * (plan.c); dedup also moves values by their global indices. */
#include "alg/aggregate/internal.h"

#include "base/settings.h"

#include <nbrcoll.h>

static int load(MPI_Info info, nbr_aggregate_params_t *p)
{
    int region = 0, message_bytes = 0; /* region: the index of node|socket */
    int rc = nbr_setting_enum(info, NBR_SETTING_AGGREGATE_REGION, &region);
    if (rc == NBR_SUCCESS)
        rc = nbr_setting_int(info, NBR_SETTING_AGGREGATE_MESSAGE_BYTES, &message_bytes);
    p->by_socket = region == 1;
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
