/* A call's arguments as the plans see them: the checks that need no other
 * rank, each buffer described (in place, or staged through MPI_Pack for
 * datatypes with gaps) and the layout of every slot in bytes. */
#include "front/call_layout.h"

#include "base/log.h"

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

void nbr_typed_buffer_free(nbr_typed_buffer_t *buf)
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
int nbr_typed_buffer_stage(nbr_typed_buffer_t *buf)
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
char *nbr_typed_buffer_base(const nbr_typed_buffer_t *buf)
{
    return buf->dense ? (char *)((uintptr_t)buf->user + (uintptr_t)buf->true_lb) : buf->staging;
}

/* Moves a staged buffer's slots between the user's memory (typed) and the
 * staging area (bytes): PACK before a send, UNPACK after a receive. */
int nbr_typed_buffer_transfer(nbr_typed_buffer_t *buf, const nbr_slot_t *slots,
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
        if (direction == NBR_PACK)
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

static int build_layout(const nbr_call_t *call, const nbr_comm_t *state, nbr_request_t req,
                        nbr_layout_t *layout)
{
    int rc = NBR_SUCCESS;
    side_t send, recv;
    call_sides(call, state, &send, &recv);
    /* allgather, alltoall: MPI asks only each sender and its receiver to
     * agree on a block's size, so a rank may well send blocks of one size
     * and receive another's (a chain of ranks with growing blocks); a
     * block that differs from its slot is found where it is received */
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
int nbr_call_describe(const nbr_call_t *call, const nbr_comm_t *state, nbr_request_t req)
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
