#include "front/request.h"

#include "base/log.h"
#include "base/settings.h"
#include "front/library.h"
#include "front/select.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ datatypes */

/* A type's size, extent, true lower bound and whether it is dense. */
typedef struct type_shape {
    int size;
    MPI_Aint extent, true_lb;
    int dense;
} type_shape_t;

static int shape_of(MPI_Datatype type, type_shape_t *shape)
{
    MPI_Aint lb = 0, true_extent = 0;
    if (type == MPI_DATATYPE_NULL)
        return NBR_ERR_DATATYPE;
    if (MPI_Type_size(type, &shape->size) != MPI_SUCCESS ||
        MPI_Type_get_extent(type, &lb, &shape->extent) != MPI_SUCCESS ||
        MPI_Type_get_true_extent(type, &shape->true_lb, &true_extent) != MPI_SUCCESS)
        return NBR_ERR_DATATYPE;
    shape->dense = shape->size == shape->extent && true_extent == shape->extent &&
                   lb == shape->true_lb;
    return NBR_SUCCESS;
}

static int describe_type(MPI_Datatype type, nbr_typed_buffer_t *buf)
{
    type_shape_t shape;
    int rc = shape_of(type, &shape);
    if (rc != NBR_SUCCESS)
        return rc;
    buf->type = type;
    buf->type_size = shape.size;
    buf->extent = shape.extent;
    buf->true_lb = shape.true_lb;
    buf->dense = shape.dense;
    return NBR_SUCCESS;
}

/* One side (send or receive) of a call as its layout sees it: slot k is
 * the user's block block[k] (k itself without a map), which holds
 * counts[block] elements at displs[block] (elements of the type's extent)
 * or, uniform, count elements at block * stride; alltoallw gives every
 * block its own type and a displacement in bytes. */
typedef struct side {
    int num_slots;
    const int *block;
    const int *counts;
    int count;
    const int *displs;
    int stride;
    const MPI_Aint *displs_w;
    const MPI_Datatype *types;
} side_t;

static int block_of(const side_t *side, int k)
{
    return side->block ? side->block[k] : k;
}

/* alltoallw: the slots' own types; dense (in place) when every one is. */
static int describe_slot_types(nbr_typed_buffer_t *buf, const side_t *side, type_shape_t *shapes)
{
    int n = side->num_slots;
    buf->dense = 1;
    buf->true_lb = 0; /* offsets carry each type's own */
    for (int k = 0; k < n; k++) {
        int rc = shape_of(side->types[block_of(side, k)], &shapes[k]);
        if (rc != NBR_SUCCESS)
            return rc;
        buf->dense &= shapes[k].dense;
    }
    if (!buf->dense) {
        buf->types = malloc(((size_t)n + 1) * sizeof(MPI_Datatype));
        if (!buf->types)
            return NBR_ERR_NOMEM;
        for (int k = 0; k < n; k++)
            buf->types[k] = side->types[block_of(side, k)];
    }
    return NBR_SUCCESS;
}

/* Fills the layout slots of one buffer and, for staged buffers, keeps
 * where each slot's data is for packing. */
static int describe_slots(nbr_typed_buffer_t *buf, nbr_slot_t *slots, const side_t *side)
{
    int n = side->num_slots, rc = NBR_SUCCESS;
    size_t packed = 0;
    type_shape_t *shapes = NULL;
    if (side->types) {
        if (!(shapes = malloc(((size_t)n + 1) * sizeof(type_shape_t))))
            return NBR_ERR_NOMEM;
        if ((rc = describe_slot_types(buf, side, shapes)) != NBR_SUCCESS)
            goto out;
    }
    if (!buf->dense) {
        buf->counts = malloc(((size_t)n + 1) * sizeof(int));
        buf->starts = malloc(((size_t)n + 1) * sizeof(MPI_Aint));
        if (!buf->counts || !buf->starts) {
            rc = NBR_ERR_NOMEM;
            goto out;
        }
    }
    buf->num_slots = n;
    for (int k = 0; k < n; k++) {
        int b = block_of(side, k);
        int count = side->counts ? side->counts[b] : side->count;
        int size = shapes ? shapes[k].size : buf->type_size;
        long long start; /* bytes from the user's pointer to the slot's first element */
        if (side->displs_w)
            start = (long long)side->displs_w[b];
        else
            start = (side->displs ? (long long)side->displs[b] : (long long)b * side->stride) *
                    (long long)buf->extent;
        if (count < 0 || start < 0) {
            rc = NBR_ERR_COUNT;
            goto out;
        }
        slots[k].bytes = (size_t)count * (size_t)size;
        if (buf->dense) {
            long long offset = start + (shapes ? (long long)shapes[k].true_lb : 0);
            if (offset < 0) {
                rc = NBR_ERR_COUNT;
                goto out;
            }
            slots[k].offset = (size_t)offset;
        } else {
            slots[k].offset = packed;
            packed += slots[k].bytes;
            buf->counts[k] = count;
            buf->starts[k] = (MPI_Aint)start;
        }
    }
    buf->staging_bytes = packed;
out:
    free(shapes);
    return rc;
}

/* The slots' own types: duplicates where owned, a run of equal ones
 * sharing one. */
static void free_slot_types(nbr_typed_buffer_t *buf)
{
    MPI_Datatype previous = MPI_DATATYPE_NULL;
    for (int k = 0; buf->owns_types && k < buf->num_slots; k++) {
        MPI_Datatype type = buf->types[k];
        if (type != previous && type != MPI_DATATYPE_NULL)
            MPI_Type_free(&type);
        previous = buf->types[k];
    }
    free(buf->types);
}

static void typed_buffer_free(nbr_typed_buffer_t *buf)
{
    if (buf->owns_type)
        MPI_Type_free(&buf->type);
    free_slot_types(buf);
    free(buf->counts);
    free(buf->starts);
    free(buf->staging);
    memset(buf, 0, sizeof(*buf));
}

/* Staged buffers get their own copy of the datatype(s) and a staging area. */
static int stage(nbr_typed_buffer_t *buf)
{
    int rc = NBR_SUCCESS;
    if (buf->dense)
        return NBR_SUCCESS;
    if (buf->staging_bytes > INT_MAX) {
        NBR_ERROR("derived-datatype buffer of %zu bytes: over 2 GiB is not supported yet",
                  buf->staging_bytes);
        return NBR_ERR_UNSUPPORTED; /* MPI_Pack positions are ints */
    }
    if (buf->types) {
        MPI_Datatype user_previous = MPI_DATATYPE_NULL, copy = MPI_DATATYPE_NULL;
        for (int k = 0; k < buf->num_slots; k++) {
            MPI_Datatype user = buf->types[k];
            if (k == 0 || user != user_previous) {
                copy = MPI_DATATYPE_NULL;
                int mrc = MPI_Type_dup(user, &copy);
                if (mrc != MPI_SUCCESS) {
                    /* what is duplicated so far is freed with the buffer */
                    for (int j = k; j < buf->num_slots; j++)
                        buf->types[j] = MPI_DATATYPE_NULL;
                    buf->owns_types = 1;
                    return nbr_mpi_failed("MPI_Type_dup", mrc);
                }
            }
            user_previous = user;
            buf->types[k] = copy;
        }
        buf->owns_types = 1;
    } else {
        MPI_Datatype user_type = buf->type;
        buf->type = MPI_DATATYPE_NULL;
        NBR_MPI_CHECK(MPI_Type_dup(user_type, &buf->type));
        buf->owns_type = 1;
    }
    buf->staging = malloc(buf->staging_bytes + 1);
    if (!buf->staging)
        rc = NBR_ERR_NOMEM;
out:
    return rc;
}

/* Where the plan's offsets start: the user's pointer (MPI_BOTTOM, NULL,
 * where the offsets are absolute addresses) plus the type's true lower
 * bound, or the staging area. Integer arithmetic: no pointer math on NULL. */
static char *plan_base(const nbr_typed_buffer_t *buf)
{
    return buf->dense ? (char *)((uintptr_t)buf->user + (uintptr_t)buf->true_lb) : buf->staging;
}

enum { PACK, UNPACK };

/* Moves a staged buffer's slots between the user's memory (typed) and the
 * staging area (bytes): PACK before a send, UNPACK after a receive. */
static int transfer_staged(nbr_typed_buffer_t *buf, const nbr_slot_t *slots,
                           MPI_Comm comm, int direction)
{
    int rc = NBR_SUCCESS;
    if (buf->dense)
        return NBR_SUCCESS;
    for (int i = 0; i < buf->num_slots; i++) {
        if (slots[i].bytes == 0)
            continue;
        int position = (int)slots[i].offset;
        char *user = (char *)((uintptr_t)buf->user + (uintptr_t)buf->starts[i]);
        MPI_Datatype type = buf->types ? buf->types[i] : buf->type;
        if (direction == PACK)
            NBR_MPI_CHECK(MPI_Pack(user, buf->counts[i], type, buf->staging,
                                   (int)buf->staging_bytes, &position, comm));
        else
            NBR_MPI_CHECK(MPI_Unpack(buf->staging, (int)buf->staging_bytes, &position,
                                     user, buf->counts[i], type, comm));
        if ((size_t)position != slots[i].offset + slots[i].bytes)
            return NBR_ERR_UNSUPPORTED; /* MPI's packed form is not the plain bytes */
    }
out:
    return rc;
}

/* ------------------------------------------------------------ validation */

static int check_counts(const int *counts, int n)
{
    if (n > 0 && !counts)
        return NBR_ERR_ARG;
    for (int i = 0; i < n; i++)
        if (counts[i] < 0)
            return NBR_ERR_COUNT;
    return NBR_SUCCESS;
}

/* One side's arrays, n user blocks: counts and displacements, or for
 * alltoallw also the types. */
static int check_arrays(const int *counts, const void *displs, const MPI_Datatype *types,
                        int with_types, int n)
{
    int rc = check_counts(counts, n);
    if (rc == NBR_SUCCESS && n > 0 && (!displs || (with_types && !types)))
        rc = NBR_ERR_ARG;
    return rc;
}

/* Local checks that need no plan; the same on every rank when the
 * arguments are (as MPI requires them to be) consistent. Arrays have an
 * entry per user block. */
static int check_call(const nbr_call_t *call, const nbr_comm_t *state)
{
    int w = call->kind == NBR_CALL_ALLTOALLW, rc = NBR_SUCCESS;
    int out = state->user_outdegree, in = state->user_indegree;
    /* MPI has no in-place form of a neighborhood collective */
    if (call->sendbuf == MPI_IN_PLACE || call->recvbuf == MPI_IN_PLACE) {
        NBR_ERROR("%s: MPI_IN_PLACE is not allowed for neighborhood collectives",
                  nbr_call_name(call->kind));
        return NBR_ERR_ARG;
    }
    if (call->kind == NBR_CALL_ALLTOALLV || w) {
        NBR_CHECK(check_arrays(call->sendcounts, w ? (const void *)call->sdispls_w
                                                   : (const void *)call->sdispls,
                               call->sendtypes, w, out));
    } else if (call->sendcount < 0) {
        return NBR_ERR_COUNT;
    }
    if (nbr_call_uniform(call->kind)) {
        if (call->recvcount < 0)
            return NBR_ERR_COUNT;
    } else {
        NBR_CHECK(check_arrays(call->recvcounts, w ? (const void *)call->rdispls_w
                                                   : (const void *)call->rdispls,
                               call->recvtypes, w, in));
    }
out:
    return rc;
}

/* The call's two sides, slot by slot (see side_t). */
static void call_sides(const nbr_call_t *call, const nbr_comm_t *state, side_t *send,
                       side_t *recv)
{
    *send = (side_t){.num_slots = state->outdegree, .block = state->out_block};
    *recv = (side_t){.num_slots = state->indegree, .block = state->in_block};
    switch (call->kind) {
    case NBR_CALL_ALLGATHER:
    case NBR_CALL_ALLGATHERV:
        *send = (side_t){.num_slots = 1, .count = call->sendcount}; /* one block for all */
        if (call->kind == NBR_CALL_ALLGATHER) {
            recv->count = recv->stride = call->recvcount;
        } else {
            recv->counts = call->recvcounts;
            recv->displs = call->rdispls;
        }
        break;
    case NBR_CALL_ALLTOALL:
        send->count = send->stride = call->sendcount;
        recv->count = recv->stride = call->recvcount;
        break;
    case NBR_CALL_ALLTOALLV:
        send->counts = call->sendcounts;
        send->displs = call->sdispls;
        recv->counts = call->recvcounts;
        recv->displs = call->rdispls;
        break;
    default: /* alltoallw */
        send->counts = call->sendcounts;
        send->displs_w = call->sdispls_w;
        send->types = call->sendtypes;
        recv->counts = call->recvcounts;
        recv->displs_w = call->rdispls_w;
        recv->types = call->recvtypes;
        break;
    }
}

/* A NULL buffer is MPI_BOTTOM: the data's addresses are in the
 * displacements and types (MPI_Get_address). Every byte it moves must
 * then lie above the first page, else it is a NULL buffer by mistake. */
static int at_addresses(const nbr_typed_buffer_t *buf, const nbr_slot_t *slots, int n)
{
    enum { FIRST_PAGE = 4096 };
    for (int i = 0; i < n; i++) {
        if (slots[i].bytes == 0)
            continue;
        uintptr_t start = buf->dense ? (uintptr_t)buf->true_lb + slots[i].offset
                                     : (uintptr_t)buf->starts[i] + (uintptr_t)buf->true_lb;
        if (start < FIRST_PAGE)
            return 0;
    }
    return 1;
}

static int build_layout(const nbr_call_t *call, const nbr_comm_t *state,
                        nbr_request_t req, nbr_layout_t *layout)
{
    int rc = NBR_SUCCESS;
    side_t send, recv;
    call_sides(call, state, &send, &recv);
    /* allgather, alltoall: sizes are uniform, so a mismatch is visible
     * locally. MPI would find it at the receive, on this rank alone: the
     * call still runs (the other ranks get their blocks, relays included),
     * with this rank's blocks received into scratch, and ends in the error. */
    size_t send_block = (size_t)call->sendcount * (size_t)req->send.type_size;
    if (nbr_call_uniform(call->kind) &&
        send_block != (size_t)call->recvcount * (size_t)req->recv.type_size) {
        NBR_ERROR("%s: %d x %d send bytes but %d x %d receive bytes: send and receive "
                  "signatures differ (this rank's blocks are dropped)",
                  nbr_call_name(call->kind), call->sendcount, req->send.type_size,
                  call->recvcount, req->recv.type_size);
        /* _init agrees on its status: every rank reports it there, at once */
        if (req->persistent || send_block > INT_MAX)
            return NBR_ERR_TYPE_MISMATCH;
        free(req->discard);
        if (!(req->discard = malloc(send_block * (size_t)recv.num_slots + 1)))
            return NBR_ERR_NOMEM;
        req->recv = (nbr_typed_buffer_t){.user = req->discard, .type = MPI_BYTE, .dense = 1,
                                         .type_size = 1, .extent = 1};
        recv.count = recv.stride = (int)send_block;
        req->sizes_differ = 1;
    }
    NBR_CHECK(nbr_layout_reserve(layout, nbr_call_shape(call->kind), send.num_slots,
                                 recv.num_slots));
    NBR_CHECK(describe_slots(&req->send, layout->send, &send));
    NBR_CHECK(describe_slots(&req->recv, layout->recv, &recv));
    int send_slots = state->outdegree > 0 ? layout->num_send_slots : 0;
    if (!call->sendbuf && !at_addresses(&req->send, layout->send, send_slots))
        return NBR_ERR_BUFFER;
    if (!call->recvbuf && !at_addresses(&req->recv, layout->recv, layout->num_recv_slots))
        return NBR_ERR_BUFFER;
out:
    return rc;
}

/* -------------------------------------------------------------- requests */

/* Everything a request holds for one call; memory for the next stays. */
static void request_reset(nbr_request_t req)
{
    if (req->exec && req->exec->plan)
        nbr_executor_unbind(req->exec);
    typed_buffer_free(&req->send);
    typed_buffer_free(&req->recv);
    req->send.type = req->recv.type = MPI_DATATYPE_NULL;
    req->send.dense = req->recv.dense = 1;
    free(req->block_sizes);
    req->block_sizes = NULL;
    free(req->value_storage);
    free(req->value_at);
    req->value_storage = NULL;
    req->value_at = NULL;
    req->has_values = 0;
    req->sizes_differ = 0;
    free(req->discard);
    req->discard = NULL;
    nbr_shared_plan_release(req->plan);
    req->plan = NULL;
    nbr_library_release(req);
    req->library = 0;
}

static void request_destroy(nbr_request_t req)
{
    if (!req)
        return;
    nbr_comm_t *state = req->comm;
    request_reset(req);
    nbr_executor_destroy(req->exec);
    nbr_executor_destroy(req->agreement);
    nbr_layout_free(&req->layout);
    free(req);
    if (state)
        nbr_comm_release(state);
}

/* A finished request: kept as its communicator's spare when the slot is
 * free and the communicator still lives (refs > 1: ours is not the last). */
static void request_retire(nbr_request_t req)
{
    nbr_comm_t *state = req->comm;
    if (req->persistent || state->spare_request || state->refs <= 1) {
        request_destroy(req);
        return;
    }
    request_reset(req);
    req->comm = NULL; /* a spare holds no reference */
    state->spare_request = req;
    state->free_spare = request_destroy;
    nbr_comm_release(state);
}

/* The algorithm a request runs: the communicator's, or for a persistent
 * request the one its info names (NULL: auto, front/select.c). Persistent set-up is collective, so the
 * choice is agreed on every rank (same status, same algorithm) before
 * anything collective happens, and the node lists an algorithm needs are
 * gathered by every rank or by none. */
static int choose_algorithm(MPI_Info info, int persistent, nbr_comm_t *state,
                            const nbr_algorithm_t **chosen, int *expected_starts)
{
    const nbr_algorithm_t *algorithm = state->config.algorithm;
    int rc = NBR_SUCCESS;
    *expected_starts = state->config.expected_starts;
    if (persistent && info != MPI_INFO_NULL)
        rc = nbr_config_request_algorithm(info, &algorithm);
    if (persistent && rc == NBR_SUCCESS && info != MPI_INFO_NULL)
        rc = nbr_setting_int(info, "nbr_expected_starts", "NBR_EXPECTED_STARTS", 1,
                             expected_starts);
    if (persistent) {
        /* one MIN over (status, id, -id): equal ids everywhere iff min id == -min(-id) */
        int id = nbr_algorithm_index(algorithm);
        int mine[3] = {rc, rc == NBR_SUCCESS ? id : 0, rc == NBR_SUCCESS ? -id : 0}, low[3];
        int mrc = MPI_Allreduce(mine, low, 3, MPI_INT, MPI_MIN, state->comm);
        if (mrc != MPI_SUCCESS)
            return nbr_mpi_failed("MPI_Allreduce", mrc);
        if (low[0] != NBR_SUCCESS)
            return low[0];
        if (low[1] != -low[2]) {
            NBR_ERROR("persistent request: ranks name different algorithms in nbr_algorithm");
            return NBR_ERR_ALGORITHM;
        }
    }
    if (algorithm && (rc = nbr_comm_provide(state, algorithm->needs)) != NBR_SUCCESS)
        return rc;
    *chosen = algorithm; /* NULL: auto decides once the layout is known */
    return NBR_SUCCESS;
}

/* ------------------------------------------------------------ sizes */

/* Runs an internal plan over nbrcoll's own host buffers to its end, on the
 * communicator's executor kind (every rank picks the same), so that calls
 * still in flight keep moving while this one waits. */
static int run_now(nbr_comm_t *state, const nbr_plan_t *plan, char *const base[NBR_NUM_BUFFERS],
                   int tag_base)
{
    nbr_executor_t *exec = NULL;
    nbr_exec_buffer_t buffers[NBR_NUM_BUFFERS];
    for (int b = 0; b < NBR_NUM_BUFFERS; b++)
        buffers[b] = (nbr_exec_buffer_t){.base = base[b]};
    int rc = nbr_executor_create(&state->exec, &exec);
    if (rc == NBR_SUCCESS)
        rc = nbr_executor_bind(exec, plan, buffers, tag_base, 0, -1);
    if (rc == NBR_SUCCESS)
        rc = nbr_executor_start(exec);
    if (rc == NBR_SUCCESS)
        rc = nbr_executor_wait(exec);
    nbr_executor_destroy(exec);
    return rc;
}

/* allgatherv through relays: before the data, every rank's block size (8
 * bytes) travels the algorithm's own pattern, so that each relay learns
 * the size of every block it forwards. Blocking, on the call's upper tags
 * (the data plan uses the lower ones); every rank of the call runs it. */
static int exchange_block_sizes(nbr_comm_t *state, const nbr_algorithm_t *algorithm,
                                int tag_base, const nbr_layout_t *layout, size_t **out)
{
    int rc = NBR_SUCCESS, n = state->nranks, indeg = state->indegree;
    nbr_layout_t sizes_layout = {0};
    nbr_plan_t plan;
    uint64_t mine = layout->send[0].bytes;
    uint64_t *received = calloc((size_t)indeg + 1, sizeof(uint64_t));
    size_t *offset_of = malloc(((size_t)n + 1) * sizeof(size_t));
    size_t *sizes = malloc(((size_t)n + 1) * sizeof(size_t));
    char *scratch = NULL;
    nbr_plan_init(&plan, state->rank, n, NBR_COLL_ALLGATHER, algorithm->name);
    if (!received || !offset_of || !sizes) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    NBR_CHECK(nbr_layout_init(&sizes_layout, NBR_COLL_ALLGATHER, 1, indeg));
    sizes_layout.send[0] = (nbr_slot_t){0, sizeof(uint64_t)};
    for (int i = 0; i < indeg; i++)
        sizes_layout.recv[i] = (nbr_slot_t){(size_t)i * sizeof(uint64_t), sizeof(uint64_t)};
    nbr_plan_input_t input = nbr_comm_input_for(state, algorithm, &sizes_layout);
    NBR_CHECK(nbr_build_size_plan(algorithm, &input, &plan, offset_of));
    if (plan.scratch_bytes > 0 && !(scratch = malloc(plan.scratch_bytes))) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    char *base[NBR_NUM_BUFFERS] = {(char *)&mine, (char *)received, scratch};
    NBR_CHECK(run_now(state, &plan, base, tag_base + NBR_PLAN_TAGS));
    for (int r = 0; r < n; r++) {
        uint64_t size = 0;
        if (offset_of[r] != SIZE_MAX)
            memcpy(&size, scratch + offset_of[r], sizeof size);
        sizes[r] = (size_t)size;
    }
    sizes[state->rank] = (size_t)mine;
    *out = sizes;
    sizes = NULL;
out:
    nbr_plan_free(&plan);
    nbr_layout_free(&sizes_layout);
    free(received);
    free(offset_of);
    free(sizes);
    free(scratch);
    return rc;
}

/* A receive slot that differs from the size its sender announced is a
 * signature mismatch: 1 here, reported at completion (the plan still runs,
 * so that no peer waits), like a truncated message in the other plans. */
static int block_sizes_differ(const nbr_comm_t *state, const nbr_layout_t *layout,
                              const size_t *sizes)
{
    for (int i = 0; i < state->indegree; i++) {
        int src = state->sources[i];
        if (src != state->rank && layout->recv[i].bytes != sizes[src]) {
            NBR_ERROR("allgatherv: rank %d sends %zu bytes, %zu expected: send and receive "
                      "signatures differ", src, sizes[src], layout->recv[i].bytes);
            return 1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------- executors */

static nbr_exec_buffer_t exec_buffer(const nbr_typed_buffer_t *buf)
{
    return (nbr_exec_buffer_t){.base = plan_base(buf), .user = buf->user, .staged = !buf->dense};
}

/* A run's finish step (exec/executor.h): staged receives back into the
 * user's typed buffer, before any error agreement. */
static int unpack_received(void *arg)
{
    nbr_request_t req = arg;
    if (req->exec->bind_status != NBR_SUCCESS)
        return NBR_SUCCESS; /* the user's memory may not be host memory: leave it */
    return transfer_staged(&req->recv, req->plan->layout.recv, req->comm->comm, UNPACK);
}

static int bind(nbr_request_t req, nbr_comm_t *state, int tag_base, int persistent)
{
    if (!req->exec) {
        int rc = nbr_executor_create(&state->exec, &req->exec);
        if (rc != NBR_SUCCESS)
            return rc;
    }
    nbr_exec_buffer_t buffers[NBR_NUM_BUFFERS] = {exec_buffer(&req->send),
                                                  exec_buffer(&req->recv), {0}};
    int rc = nbr_executor_bind(req->exec, &req->plan->plan, buffers, tag_base, persistent,
                               req->agree_tag);
    if (rc == NBR_SUCCESS && !req->recv.dense)
        nbr_executor_on_finish(req->exec, unpack_received, req);
    return rc;
}

/* An _ext call's value indices, slot by slot in the layout's order (see
 * nbr_value_index_t): slot k of a side is the user's block b, whose
 * counts[b] elements start at element displs[b] of the index array. */
static int describe_values(const nbr_call_t *call, const nbr_comm_t *state, nbr_request_t req)
{
    const nbr_layout_t *layout = &req->layout;
    int out = layout->num_send_slots, in = layout->num_recv_slots;
    size_t total = 0;
    if (req->send.type_size != req->recv.type_size || req->send.type_size <= 0) {
        NBR_ERROR("alltoallv_init_ext: value indices need one element size; the send type has "
                  "%d bytes, the receive type %d", req->send.type_size, req->recv.type_size);
        return NBR_ERR_ARG;
    }
    for (int k = 0; k < out; k++)
        total += (size_t)call->sendcounts[nbr_comm_out_block(state, k)];
    for (int k = 0; k < in; k++)
        total += (size_t)call->recvcounts[nbr_comm_in_block(state, k)];
    if ((total > 0 && (!call->send_global_idx && out > 0)) ||
        (total > 0 && !call->recv_global_idx && in > 0))
        return NBR_ERR_ARG;
    req->value_storage = malloc((total + 1) * sizeof(int64_t));
    req->value_at = malloc(((size_t)out + (size_t)in + 2) * sizeof(size_t));
    if (!req->value_storage || !req->value_at)
        return NBR_ERR_NOMEM;
    size_t n = 0, *at = req->value_at;
    at[0] = 0;
    for (int k = 0; k < out; k++) {
        int b = nbr_comm_out_block(state, k);
        for (int e = 0; e < call->sendcounts[b]; e++)
            req->value_storage[n++] = (int64_t)call->send_global_idx[call->sdispls[b] + e];
        at[k + 1] = n;
    }
    size_t *recv_at = at + out + 1;
    recv_at[0] = 0;
    for (int k = 0; k < in; k++) {
        int b = nbr_comm_in_block(state, k);
        for (int e = 0; e < call->recvcounts[b]; e++)
            req->value_storage[n++] = (int64_t)call->recv_global_idx[call->rdispls[b] + e];
        recv_at[k + 1] = n - at[out];
    }
    req->values = (nbr_value_index_t){.element_bytes = (size_t)req->send.type_size,
                                      .send = req->value_storage,
                                      .recv = req->value_storage + at[out],
                                      .send_at = at,
                                      .recv_at = recv_at};
    req->has_values = 1;
    return NBR_SUCCESS;
}

/* The call's buffers and layout: local work only. */
static int describe_call(const nbr_call_t *call, nbr_comm_t *state, nbr_request_t req)
{
    int rc = NBR_SUCCESS;
    NBR_CHECK(check_call(call, state));
    req->send.user = (char *)call->sendbuf;
    req->recv.user = call->recvbuf;
    if (call->kind != NBR_CALL_ALLTOALLW) { /* alltoallw: each slot's, in build_layout */
        NBR_CHECK(describe_type(call->sendtype, &req->send));
        NBR_CHECK(describe_type(call->recvtype, &req->recv));
    }
    NBR_CHECK(build_layout(call, state, req, &req->layout));
    if (call->send_global_idx || call->recv_global_idx)
        NBR_CHECK(describe_values(call, state, req));
out:
    return rc;
}

/* req NULL: this rank could not allocate one; it still takes part in what
 * is collective for persistent requests, so nobody waits for it. */
static int prepare(const nbr_call_t *call, const nbr_algorithm_t *algorithm,
                   int expected_starts, nbr_comm_t *state, int tag_base, int persistent,
                   nbr_request_t req)
{
    int rc = req ? describe_call(call, state, req) : NBR_ERR_NOMEM;
    if (persistent) /* _init is collective: the steps below are too */
        rc = nbr_agree(state->comm, rc);
    if (rc != NBR_SUCCESS)
        return rc;
    nbr_layout_t *layout = &req->layout;
    req->trial = NULL;
    if (!algorithm) {
        nbr_exec_buffer_t send = exec_buffer(&req->send), recv = exec_buffer(&req->recv);
        int device = nbr_exec_on_device(&state->exec, &send) ||
                     nbr_exec_on_device(&state->exec, &recv);
        nbr_priced_call_t priced = {call->kind,
                                    (size_t)call->sendcount * (size_t)req->send.type_size,
                                    req->has_values ? &req->values : NULL, device,
                                    persistent ? expected_starts : 1};
        NBR_CHECK(nbr_comm_select(state, &priced, layout, persistent, call->blocking, &algorithm,
                                  &req->trial));
    }
    state->last_algorithm = algorithm;
    if (algorithm->size_plan && call->kind == NBR_CALL_ALLGATHERV) {
        NBR_CHECK(exchange_block_sizes(state, algorithm, tag_base, layout, &req->block_sizes));
        req->sizes_differ = block_sizes_differ(state, layout, req->block_sizes);
    }
    /* aggregate's agents depend on every rank's sizes: an exchange first,
     * every call (the v-forms' sizes may change on any rank), once for a
     * persistent request; a hard failure anywhere fails it everywhere */
    void *facts = NULL;
    uint64_t digest = 0;
    rc = nbr_comm_call_facts(state, algorithm, layout, req->has_values ? &req->values : NULL,
                             &facts, &digest);
    if (rc == NBR_ERR_TYPE_MISMATCH) {
        NBR_ERROR("%s: another node sends this node other sizes than its ranks receive: send "
                  "and receive signatures differ", nbr_call_name(call->kind));
        req->sizes_differ = 1;
        rc = NBR_SUCCESS;
    }
    if (nbr_algorithm_needs_call_facts(algorithm, layout))
        rc = nbr_agree(state->comm, rc);
    if (rc == NBR_SUCCESS)
        rc = nbr_comm_plan(state, algorithm, layout, req->block_sizes, facts, digest, &req->plan);
    nbr_comm_free_call_facts(algorithm, facts);
    if (rc != NBR_SUCCESS)
        goto out;
    /* the library takes the user's arguments as they are; its plan only
     * says what it moves (counters) */
    req->library = algorithm->library && nbr_comm_library_usable(state, layout->coll);
    if (req->library) {
        NBR_CHECK(nbr_library_keep(req, call));
        if (req->agree_tag >= 0 && !req->agreement)
            NBR_CHECK(nbr_executor_create_agreement(&state->exec, &req->agreement));
        /* the next such call may take the shortcut (one agreeing on errors
         * takes the long way) */
        if (call->blocking && call->kind == NBR_CALL_ALLGATHER && !req->trial &&
            !state->config.agree_errors)
            nbr_comm_arm_shortcut(state, req->plan, algorithm,
                                  state->config.algorithm
                                      ? NULL
                                      : nbr_comm_decision(state, NBR_CALL_ALLGATHER,
                                                          req->plan->layout.send[0].bytes),
                                  call->sendtype, call->recvtype);
        return NBR_SUCCESS;
    }
    /* plans move bytes: staged buffers get their area (and their own
     * type) now that a plan, not the library, will run the call */
    NBR_CHECK(stage(&req->send));
    NBR_CHECK(stage(&req->recv));
    rc = bind(req, state, tag_base, persistent);
    if (rc != NBR_SUCCESS) {
        nbr_shared_plan_release(req->plan);
        req->plan = NULL;
    }
out:
    return rc;
}

int nbr_request_create(const nbr_call_t *call, MPI_Info info, int persistent,
                       nbr_request_t *request)
{
    nbr_comm_t *state = NULL;
    if (!request)
        return NBR_ERR_REQUEST;
    *request = NBR_REQUEST_NULL;
    int rc = nbr_comm_get(call->comm, MPI_INFO_NULL, &state);
    if (rc != NBR_SUCCESS)
        return rc;
    /* Every rank takes this call's tags before any check that may fail on
     * some ranks only: sequence numbers must stay equal everywhere. */
    int tag_base = nbr_comm_next_tag_base(state, persistent);
    const nbr_algorithm_t *algorithm = NULL;
    int expected_starts = 1;
    rc = choose_algorithm(info, persistent, state, &algorithm, &expected_starts);
    if (rc != NBR_SUCCESS)
        return rc; /* agreed already for persistent requests */
    nbr_request_t req = NULL;
    if (!persistent && state->spare_request) {
        req = state->spare_request;
        state->spare_request = NULL;
    } else if ((req = calloc(1, sizeof(*req)))) {
        req->send.type = req->recv.type = MPI_DATATYPE_NULL;
        req->send.dense = req->recv.dense = 1;
        req->library_request = MPI_REQUEST_NULL;
    }
    if (req) {
        req->persistent = persistent;
        req->agree_tag =
            state->config.agree_errors ? tag_base + NBR_TAG_AGREE_IN_CALL : -1;
        req->comm = state;
        req->user_comm = call->comm;
        nbr_comm_retain(state);
    }
    rc = prepare(call, algorithm, expected_starts, state, tag_base, persistent, req);
    if (persistent)
        rc = nbr_agree(state->comm, rc); /* _init is collective: one status for all */
    if (rc != NBR_SUCCESS) {
        request_destroy(req);
        return rc;
    }
    *request = req;
    return NBR_SUCCESS;
}

/* A run with sizes_differ ends in NBR_ERR_TYPE_MISMATCH: it says more
 * than success or the MPI library's own failure for the same cause. */
static int mismatch_says_more(nbr_request_t req, int rc)
{
    return req->sizes_differ && (rc == NBR_SUCCESS || rc == NBR_ERR_MPI) ? NBR_ERR_TYPE_MISMATCH
                                                                       : rc;
}

/* nbr_agree_errors on a call the MPI library runs. A nonblocking one is
 * watched: from its start the request's agreement executor is in flight,
 * tests the library's request and then agrees, so progress made anywhere
 * (a blocking call waiting out what is in flight) moves it. A blocking one
 * agrees right after the library's call. */
static int watched(nbr_request_t req)
{
    return req->agreement && !req->call.blocking;
}

/* The agreement from this rank's status, to its end. */
static int agree_now(nbr_request_t req, int rc)
{
    nbr_executor_agree(req->agreement, req->agree_tag, rc);
    return nbr_executor_wait(req->agreement);
}

int nbr_start(nbr_request_t *request)
{
    if (!request || !*request)
        return NBR_ERR_REQUEST;
    nbr_request_t req = *request;
    if (req->running)
        return NBR_ERR_REQUEST;
    if (req->library) {
        int rc = nbr_library_start(req);
        if (watched(req) && rc == NBR_SUCCESS)
            rc = nbr_executor_agree_after(req->agreement, req->agree_tag, nbr_library_poll, req);
        else if (watched(req)) /* the others agree on it: take part, then report */
            agree_now(req, rc);
        req->running = rc == NBR_SUCCESS;
        return rc == NBR_SUCCESS ? rc : mismatch_says_more(req, rc); /* blocking: it ran */
    }
    /* a send buffer that could not be packed still runs, as poison: the
     * peers wait for its messages (the error comes at completion). A
     * binding that failed runs so too, and packs nothing: it may have
     * failed because the typed buffer is device memory, which MPI_Pack
     * cannot read. */
    int packed = req->exec->bind_status != NBR_SUCCESS
                     ? req->exec->bind_status
                     : transfer_staged(&req->send, req->plan->layout.send, req->comm->comm, PACK);
    req->running = 1;
    int rc = nbr_executor_start_failed(req->exec, packed);
    if (rc != NBR_SUCCESS)
        req->running = 0;
    return rc;
}

/* A run has ended (status rc): count, and retire non-persistent requests. */
static int complete(nbr_request_t *request, int rc)
{
    nbr_request_t req = *request;
    req->running = 0;
    if (!req->library) /* staged receives were unpacked by the run's finish step */
        nbr_executor_add_counters(req->exec, &req->comm->counters);
    rc = mismatch_says_more(req, rc);
    nbr_comm_count(req->comm, &req->plan->plan, 1);
    if (!req->persistent) {
        request_retire(req);
        *request = NBR_REQUEST_NULL;
    }
    return rc;
}

int nbr_wait(nbr_request_t *request)
{
    if (!request || !*request)
        return NBR_ERR_REQUEST;
    nbr_request_t req = *request;
    if (!req->running)
        return NBR_SUCCESS; /* an inactive persistent request, as in MPI */
    if (!req->library)
        return complete(request, nbr_executor_wait(req->exec));
    if (watched(req))
        return complete(request, nbr_executor_wait(req->agreement));
    int rc = nbr_library_wait(req);
    return complete(request, req->agreement ? agree_now(req, rc) : rc);
}

int nbr_test(nbr_request_t *request, int *flag)
{
    if (!request || !*request || !flag)
        return NBR_ERR_REQUEST;
    nbr_request_t req = *request;
    *flag = 0;
    if (!req->running) {
        *flag = 1;
        return NBR_SUCCESS;
    }
    if (!req->library) {
        int rc = nbr_executor_test(req->exec, flag);
        return *flag ? complete(request, rc) : rc;
    }
    int rc = watched(req) ? nbr_executor_test(req->agreement, flag) : nbr_library_test(req, flag);
    if (*flag && req->agreement && !watched(req))
        rc = agree_now(req, rc);
    return *flag ? complete(request, rc) : rc;
}

int nbr_request_query(nbr_request_t request, MPI_Comm *comm, int *persistent, int *active)
{
    if (!request)
        return NBR_ERR_REQUEST;
    if (!comm || !persistent || !active)
        return NBR_ERR_ARG;
    *comm = request->user_comm;
    *persistent = request->persistent;
    *active = request->running;
    return NBR_SUCCESS;
}

int nbr_request_free(nbr_request_t *request)
{
    if (!request || !*request)
        return NBR_ERR_REQUEST;
    if ((*request)->running)
        return NBR_ERR_REQUEST;
    request_retire(*request);
    *request = NBR_REQUEST_NULL;
    return NBR_SUCCESS;
}
