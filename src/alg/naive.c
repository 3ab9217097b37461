/* naive: one message per edge, posted all at once; what MPI libraries do for
 * MPI_Neighbor_* and the baseline every paper compares against. Self-loops
 * become local copies: the k-th self out-edge feeds the k-th self in-edge. */
#include "alg/registry.h"
#include "base/log.h"

#include <nbrcoll.h>
#include <stdlib.h>

static int send_slot_of(const nbr_layout_t *layout, int out_index)
{
    return layout->coll == NBR_COLL_ALLTOALLV ? out_index : 0;
}

int nbr_add_self_copies(const nbr_plan_input_t *in, nbr_plan_t *plan)
{
    const nbr_layout_t *layout = in->layout;
    int next_out = 0, rc = NBR_SUCCESS;
    for (int i = 0; i < in->indegree && rc == NBR_SUCCESS; i++) {
        if (in->sources[i] != in->rank)
            continue;
        while (next_out < in->outdegree && in->destinations[next_out] != in->rank)
            next_out++;
        if (next_out == in->outdegree) {
            NBR_ERROR("rank %d lists itself more often as source than as destination",
                      in->rank);
            return NBR_ERR_TOPOLOGY;
        }
        const nbr_slot_t *src = &layout->send[send_slot_of(layout, next_out++)];
        const nbr_slot_t *dst = &layout->recv[i];
        if (src->bytes != dst->bytes) {
            NBR_ERROR("self-loop: %zu bytes sent, %zu expected", src->bytes, dst->bytes);
            return NBR_ERR_TYPE_MISMATCH;
        }
        if (dst->bytes > 0)
            rc = nbr_plan_add_copy(plan, NBR_BUF_RECV, dst->offset, NBR_BUF_SEND,
                                   src->offset, dst->bytes);
    }
    while (next_out < in->outdegree && in->destinations[next_out] != in->rank)
        next_out++;
    if (rc == NBR_SUCCESS && next_out < in->outdegree) {
        NBR_ERROR("rank %d lists itself more often as destination than as source",
                  in->rank);
        return NBR_ERR_TOPOLOGY;
    }
    return rc;
}

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
        const nbr_slot_t *slot = &layout->send[send_slot_of(layout, j)];
        if (in->destinations[j] != in->rank && !(skip_empty && slot->bytes == 0))
            rc = nbr_plan_add_send(plan, in->destinations[j], 0, NBR_BUF_SEND,
                                   slot->offset, slot->bytes);
    }
    if (rc == NBR_SUCCESS)
        rc = nbr_add_self_copies(in, plan);
    return rc;
}
