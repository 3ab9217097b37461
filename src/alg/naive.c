/* naive: one message per edge, posted all at once; what MPI libraries do for
 * MPI_Neighbor_* and the baseline every paper compares against. Self-loops
 * become local copies: the k-th self out-edge feeds the k-th self in-edge.
 *
 * mpi: the MPI library's own collective, which moves naive's messages; so
 * it shares naive's plan (what it moves) and price. auto's fallback on host
 * buffers: a program that links nbrcoll runs at least what it ran before,
 * not a re-implementation of it (which costs a little more per call). */
#include "alg/builder.h"
#include "alg/cost_model.h"

#include <nbrcoll.h>

int nbr_build_naive(const nbr_plan_input_t *in, nbr_plan_t *plan)
{
    const nbr_layout_t *layout = in->layout;
    int rc = nbr_plan_begin_phase(plan);
    /* allgather: every block has the same size everywhere (checked locally
     * against the receive size), so empty blocks need no message at all.
     * The v-forms keep zero-byte messages: the receiver cannot know. */
    int skip_empty = layout->coll == NBR_COLL_ALLGATHER;
    for (int i = 0; i < in->indegree && rc == NBR_SUCCESS; i++) {
        const nbr_slot_t *slot = &layout->recv[i];
        if (in->sources[i] != in->rank && !(skip_empty && slot->bytes == 0))
            rc = nbr_plan_add_recv(plan, in->sources[i], 0, NBR_BUF_RECV,
                                   slot->offset, slot->bytes);
    }
    for (int j = 0; j < in->outdegree && rc == NBR_SUCCESS; j++) {
        const nbr_slot_t *slot = &layout->send[nbr_send_slot_of(layout, j)];
        if (in->destinations[j] != in->rank && !(skip_empty && slot->bytes == 0))
            rc = nbr_plan_add_send(plan, in->destinations[j], 0, NBR_BUF_SEND,
                                   slot->offset, slot->bytes);
    }
    if (rc == NBR_SUCCESS)
        rc = nbr_add_self_copies(in, plan);
    return rc;
}

/* The Hockney model of distance-halving-allgather.txt (Eq. 4-5). */
static double cost(const nbr_cost_query_t *query)
{
    nbr_cost_params_t p;
    double msgs = 0, seconds = 0;
    if (nbr_cost_params_of(query, &p) != NBR_SUCCESS ||
        nbr_cost_naive(&p, &msgs, &seconds) != NBR_SUCCESS)
        return NBR_COST_UNKNOWN;
    return seconds;
}

const nbr_algorithm_t nbr_alg_naive = {
    .name = "naive",
    .description = "one isend/irecv per edge, as MPI libraries do: the baseline",
    .collectives = NBR_COLL_BIT(NBR_COLL_ALLGATHER) | NBR_COLL_BIT(NBR_COLL_ALLGATHERV) |
                   NBR_COLL_BIT(NBR_COLL_ALLTOALLV),
    .build = nbr_build_naive,
    .cost = cost,
};

const nbr_algorithm_t nbr_alg_mpi = {
    .name = "mpi",
    .description = "the MPI library's own MPI_Neighbor_* (naive's plan on device buffers)",
    .collectives = NBR_COLL_BIT(NBR_COLL_ALLGATHER) | NBR_COLL_BIT(NBR_COLL_ALLGATHERV) |
                   NBR_COLL_BIT(NBR_COLL_ALLTOALLV),
    .library = 1,
    .build = nbr_build_naive,
    .cost = cost,
};
