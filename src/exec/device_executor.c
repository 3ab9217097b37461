/* Runs a plan on a communicator whose device layer is on (context.h).
 * Same phase semantics as the MPI executor (src/host/executor.h); what
 * differs is how each operation moves its bytes:
 *   - local copies: batched on the communicator's stream (one multi-copy
 *     launch per batch);
 *   - messages inside the node channel: a descriptor in the pair's ring;
 *     the receiver copies straight from the sender's device memory through
 *     an IPC mapping (or, when the sender's buffer is host memory, the
 *     descriptor says so and the bytes come by MPI);
 *   - messages to other nodes: MPI, handed device pointers when MPI is
 *     GPU-aware; otherwise in chunks through pinned host staging, each
 *     chunk sent as soon as its device-to-host copy is done and copied up
 *     as soon as it arrives, so copies and network overlap.
 * After an error, the sends of every later phase (and a send whose own
 * staging copy failed) go as poison (exec/message.h): an empty MPI message
 * or chunk, or a POISON descriptor in the ring. A
 * binding that fails where the plan can still run (what a buffer is, its
 * IPC handle, scratch or staging memory) makes every run of it poison from
 * the start: sends poison, receives taken and dropped, no copies, so no
 * peer waits for this rank and none of its buffers is touched.
 * Executors of one communicator progress together (exec/executor.h). */
#include "exec/executor.h"

#include "exec/channel.h"

#include "base/grow.h"
#include "base/log.h"
#include "exec/message.h"

#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>


typedef struct nbr_dev_item nbr_dev_item_t;

typedef struct nbr_staging_area {
    char *base;
    size_t bytes, capacity;
} nbr_staging_area_t;

/* A buffer as this executor moves it. */
typedef struct nbr_dev_buffer {
    char *base; /* byte 0 as the plan sees it */
    nbr_mem_kind_t kind;
} nbr_dev_buffer_t;

typedef struct nbr_dev_exec {
    nbr_executor_t core;
    nbr_device_ctx_t *ctx;
    MPI_Comm comm;
    nbr_dev_buffer_t buf[NBR_NUM_BUFFERS];
    char *own_scratch; /* when the binder gave none; device memory if own_scratch_on_device;
                        * kept between binds (allocations cost more than calls) */
    int own_scratch_on_device;
    size_t own_scratch_bytes;
    nbr_ipc_source_t source[NBR_NUM_BUFFERS]; /* device buffers sent over IPC */
    size_t handle_offset[NBR_NUM_BUFFERS];    /* the buffer in its allocation */
    nbr_dev_item_t *items;
    int num_items, items_capacity;
    int *phase_first_item; /* num_phases + 1 */
    int phases_capacity;
    /* pinned host memory: for network chunks (taken at bind), and for node
     * peers' messages that come by MPI into device memory (taken when the
     * first one comes: most node peers send over IPC) */
    nbr_staging_area_t staging, channel_staging;
    char *scratch;         /* one chunk: where unwanted chunks are received */
    int network_receives;  /* the plan receives from other nodes */
    nbr_copy_t *batch;     /* copies gathered by one pass, launched together */
    int *batch_items;
    int batch_count, batch_capacity;
    int phase, send_cursor;
    int poisoned;    /* this run began failed (bind_status): touch no buffer */
    int poison_sends; /* the run had failed when this phase began */
    uint64_t bytes_ipc_pulled, bytes_staged, copy_batches; /* this run */
} nbr_dev_exec_t;

static nbr_dev_exec_t *of(nbr_executor_t *exec)
{
    return (nbr_dev_exec_t *)exec;
}

enum item_kind { ITEM_COPY, ITEM_SEND, ITEM_RECV };
enum item_path { PATH_LOCAL, PATH_CHANNEL, PATH_NETWORK };

/* Where an item is; each moves forward only. */
enum item_state {
    S_IDLE,           /* phase not posted */
    S_SEND_QUEUED,    /* send waiting for its turn (ring slot, staging copy) */
    S_MATCH,          /* channel receive waiting for its descriptor */
    S_PROBE,          /* network receive waiting to see its message */
    S_DRAIN,          /* the sender's length differs: taking its chunks away */
    S_MPI,            /* MPI request in flight */
    S_COPY,           /* copy in flight on the stream */
    S_COPY_THEN_ACK,  /* pull from a peer in flight; descriptor done after */
    S_ACK,            /* channel send waiting for the receiver's done */
    S_DONE
};

struct nbr_dev_item {
    int op;          /* plan op */
    uint8_t kind, path, state, staged;
    uint8_t failures; /* MPI_Improbe / MPI_Test failed this many times in a row */
    uint8_t spoilt;   /* send: its staging copy failed, its bytes are not the user's */
    int channel_peer;
    int prev_same;   /* receive: the phase's previous one with this peer and tag, or -1 */
    size_t offset;   /* from the op's offset (chunks) */
    size_t bytes;
    size_t staging_offset;
    size_t sender_bytes; /* chunked receive gone wrong: what the sender sent so far */
    uint64_t seq;    /* channel: message number on the pair */
    uint64_t ticket; /* copy batch */
    nbr_desc_t *desc; /* channel receive: the matched descriptor */
    MPI_Request request;
};

/* The first error, except that a signature mismatch says more than what
 * followed from it. */
static void record(nbr_dev_exec_t *exec, int rc)
{
    if (exec->core.status == NBR_SUCCESS || rc == NBR_ERR_TYPE_MISMATCH)
        exec->core.status = rc == NBR_SUCCESS ? exec->core.status : rc;
    exec->core.spoilt |= rc != NBR_SUCCESS;
}

/* A receive's own error: the run's status, but a mismatch of the user's
 * own block leaves what this rank sends on right (executor.h). */
static void record_receive(nbr_dev_exec_t *exec, const nbr_op_t *op, int rc)
{
    int was_spoilt = exec->core.spoilt;
    record(exec, rc);
    exec->core.spoilt = was_spoilt || nbr_executor_receive_spoils(&exec->core, op, rc);
}

static const nbr_op_t *op_of(const nbr_dev_exec_t *exec, const nbr_dev_item_t *item)
{
    return &exec->core.plan->ops[item->op];
}

/* The bytes an item reads or writes in its own buffer. */
static char *item_addr(const nbr_dev_exec_t *exec, const nbr_dev_item_t *item)
{
    const nbr_op_t *op = op_of(exec, item);
    return exec->buf[op->buf].base + op->offset + item->offset;
}

static nbr_mem_kind_t item_memory(const nbr_dev_exec_t *exec, const nbr_dev_item_t *item)
{
    return exec->buf[op_of(exec, item)->buf].kind;
}

/* ------------------------------------------------------------ binding */

static int add_item(nbr_dev_exec_t *exec, nbr_dev_item_t item)
{
    int rc = nbr_grow((void **)&exec->items, &exec->items_capacity, exec->num_items + 1, 16,
                      sizeof(nbr_dev_item_t));
    if (rc == NBR_SUCCESS)
        exec->items[exec->num_items++] = item;
    return rc;
}

/* One op as items: a node-channel message is one item; a network message
 * without GPU-aware MPI is one item per chunk, each end cutting its own
 * length (equal in a correct program; see take_probed when not). */
static int split_op(nbr_dev_exec_t *exec, int index)
{
    const nbr_op_t *op = &exec->core.plan->ops[index];
    nbr_device_ctx_t *ctx = exec->ctx;
    nbr_dev_item_t item = {.op = index, .kind = ITEM_COPY, .path = PATH_LOCAL,
                           .channel_peer = -1, .prev_same = -1, .bytes = op->bytes,
                           .request = MPI_REQUEST_NULL};
    if (op->kind == NBR_OP_COPY)
        return add_item(exec, item);
    item.kind = op->kind == NBR_OP_SEND ? ITEM_SEND : ITEM_RECV;
    int device = exec->buf[op->buf].kind == NBR_MEM_DEVICE;
    int peer = ctx->channel_of[op->peer];
    if (peer >= 0 && op->peer != exec->core.plan->rank) {
        item.path = PATH_CHANNEL;
        item.channel_peer = peer;
        /* a receive into device memory stages only if the sender's bytes come by MPI */
        item.staged = item.kind == ITEM_RECV && device && !ctx->gpu_aware;
        item.staging_offset = exec->channel_staging.bytes;
        exec->channel_staging.bytes += item.staged ? op->bytes : 0;
        return add_item(exec, item);
    }
    item.path = PATH_NETWORK;
    item.staged = device && !ctx->gpu_aware;
    /* Without GPU-aware MPI a message is full chunks, then one shorter final
     * chunk (empty when the length is a multiple): a receiver that sees a
     * short chunk knows its sender is done, whatever length it expected. */
    size_t chunk = ctx->chunk_bytes, full = ctx->gpu_aware ? 0 : op->bytes / chunk;
    for (size_t c = 0; c <= full; c++) {
        item.offset = c * chunk;
        item.bytes = c < full ? chunk : op->bytes - full * chunk;
        item.staging_offset = exec->staging.bytes;
        exec->staging.bytes += item.staged ? item.bytes : 0;
        int rc = add_item(exec, item);
        if (rc != NBR_SUCCESS)
            return rc;
    }
    exec->network_receives |= item.kind == ITEM_RECV;
    return NBR_SUCCESS;
}

typedef struct receive_key {
    int peer, tag, index;
} receive_key_t;

static int compare_receive_keys(const void *a, const void *b)
{
    const receive_key_t *x = a, *y = b;
    if (x->peer != y->peer)
        return x->peer < y->peer ? -1 : 1;
    if (x->tag != y->tag)
        return x->tag < y->tag ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* MPI matches the receives of one peer and tag in posting order: links
 * each receive of a phase to the one before it with its peer and tag,
 * which must have found its message (descriptor or probed chunk) first. */
static int link_receives(nbr_dev_exec_t *exec)
{
    receive_key_t *keys = malloc(((size_t)exec->num_items + 1) * sizeof(*keys));
    if (!keys)
        return NBR_ERR_NOMEM;
    for (int p = 0; p < exec->core.plan->num_phases; p++) {
        int n = 0;
        for (int i = exec->phase_first_item[p]; i < exec->phase_first_item[p + 1]; i++)
            if (exec->items[i].kind == ITEM_RECV)
                keys[n++] = (receive_key_t){op_of(exec, &exec->items[i])->peer,
                                            op_of(exec, &exec->items[i])->tag, i};
        qsort(keys, (size_t)n, sizeof(*keys), compare_receive_keys);
        for (int k = 1; k < n; k++)
            if (keys[k].peer == keys[k - 1].peer && keys[k].tag == keys[k - 1].tag)
                exec->items[keys[k].index].prev_same = keys[k - 1].index;
    }
    free(keys);
    return NBR_SUCCESS;
}

/* Device buffers that channel sends read from need an IPC handle. */
static int take_handles(nbr_dev_exec_t *exec)
{
    int needed[NBR_NUM_BUFFERS] = {0};
    for (int i = 0; i < exec->num_items; i++) {
        const nbr_dev_item_t *item = &exec->items[i];
        if (item->path == PATH_CHANNEL && item->kind == ITEM_SEND && item->bytes > 0 &&
            item_memory(exec, item) == NBR_MEM_DEVICE)
            needed[op_of(exec, item)->buf] = 1;
    }
    for (int b = 0; b < NBR_NUM_BUFFERS; b++) {
        if (!needed[b])
            continue;
        nbr_ipc_source_t *s = &exec->source[b];
        size_t bytes = 0;
        int rc = exec->ctx->backend->ipc_get(exec->buf[b].base, &s->handle,
                                             &exec->handle_offset[b], &bytes, &s->id);
        s->owner_base = (uint64_t)(uintptr_t)exec->buf[b].base - exec->handle_offset[b];
        s->bytes = bytes;
        if (rc != NBR_SUCCESS) {
            NBR_ERROR("the %s buffer is device memory that cannot be shared with other "
                      "processes; allocate it with nbr_mem_alloc", nbr_buffer_name(b));
            return NBR_ERR_UNSUPPORTED;
        }
    }
    return NBR_SUCCESS;
}

/* Makes area hold area->bytes of pinned memory (contents not kept). */
static int reserve_staging(nbr_device_ctx_t *ctx, nbr_staging_area_t *area)
{
    if (area->bytes <= area->capacity)
        return NBR_SUCCESS;
    if (area->base)
        ctx->backend->host_free(area->base);
    area->base = NULL;
    area->capacity = 0;
    int rc = ctx->backend->host_alloc((void **)&area->base, area->bytes);
    if (rc == NBR_SUCCESS)
        area->capacity = area->bytes;
    return rc;
}

/* What a buffer is: by nbr_memory, or by asking the runtime. A staged
 * buffer (a datatype with gaps, packed by MPI_Pack) is host memory, and
 * so must be the user's memory behind it: MPI_Pack cannot read a GPU's. */
static int buffer_kind(const nbr_device_ctx_t *ctx, const nbr_exec_buffer_t *buf,
                       nbr_mem_kind_t *kind)
{
    int device = -1, rc = NBR_SUCCESS;
    *kind = NBR_MEM_HOST;
    if (!buf->user)
        return NBR_SUCCESS;
    if (ctx->memory == NBR_MEMORY_DEVICE)
        *kind = NBR_MEM_DEVICE;
    else
        rc = ctx->backend->pointer_kind(buf->user, kind, &device);
    if (rc == NBR_SUCCESS && *kind != NBR_MEM_HOST && buf->staged) {
        NBR_ERROR("derived datatypes with gaps are supported on host buffers only; this "
                  "one is %s memory", nbr_mem_kind_name(*kind));
        rc = NBR_ERR_UNSUPPORTED; /* MPI_Pack cannot read device memory */
    }
    if (buf->staged)
        *kind = NBR_MEM_HOST;
    return rc;
}

static void free_scratch(nbr_dev_exec_t *exec)
{
    if (exec->own_scratch_on_device)
        exec->ctx->backend->mem_free(exec->own_scratch);
    else
        free(exec->own_scratch);
    exec->own_scratch = NULL;
    exec->own_scratch_on_device = 0;
    exec->own_scratch_bytes = 0;
}

/* Scratch lives on the device when a user buffer does. */
static int provide_scratch(nbr_dev_exec_t *exec)
{
    size_t bytes = exec->core.plan->scratch_bytes;
    if (exec->buf[NBR_BUF_SCRATCH].base || bytes == 0)
        return NBR_SUCCESS;
    int rc = NBR_SUCCESS;
    int on_device = exec->buf[NBR_BUF_SEND].kind == NBR_MEM_DEVICE ||
                    exec->buf[NBR_BUF_RECV].kind == NBR_MEM_DEVICE;
    if (exec->own_scratch && (exec->own_scratch_bytes < bytes ||
                              exec->own_scratch_on_device != on_device))
        free_scratch(exec);
    if (!exec->own_scratch && on_device) {
        rc = exec->ctx->backend->mem_alloc((void **)&exec->own_scratch, bytes);
        exec->own_scratch_on_device = rc == NBR_SUCCESS;
    } else if (!exec->own_scratch && !(exec->own_scratch = malloc(bytes))) {
        rc = NBR_ERR_NOMEM;
    }
    if (rc == NBR_SUCCESS && exec->own_scratch_bytes < bytes)
        exec->own_scratch_bytes = bytes;
    if (on_device)
        exec->buf[NBR_BUF_SCRATCH].kind = NBR_MEM_DEVICE;
    exec->buf[NBR_BUF_SCRATCH].base = exec->own_scratch;
    return rc;
}

/* A binding step that failed where the plan can still run as poison. */
static void defer(nbr_executor_t *core, int rc)
{
    if (core->bind_status == NBR_SUCCESS)
        core->bind_status = rc;
}

/* Splits messages into items, sizes the staging area, takes IPC handles
 * of the device buffers. */
static int bind(nbr_executor_t *core, const nbr_exec_buffer_t buffers[NBR_NUM_BUFFERS],
                int persistent)
{
    int rc = NBR_SUCCESS;
    nbr_dev_exec_t *exec = of(core);
    const nbr_plan_t *plan = core->plan;
    nbr_device_ctx_t *ctx = exec->ctx;
    for (int b = 0; b < NBR_NUM_BUFFERS; b++) {
        exec->buf[b].base = buffers[b].base;
        defer(core, buffer_kind(ctx, &buffers[b], &exec->buf[b].kind));
    }
    defer(core, provide_scratch(exec));
    exec->num_items = 0;
    exec->staging.bytes = exec->channel_staging.bytes = 0;
    exec->phase = plan->num_phases;
    exec->network_receives = 0;
    exec->bytes_ipc_pulled = exec->bytes_staged = exec->copy_batches = 0;
    NBR_CHECK(nbr_grow((void **)&exec->phase_first_item, &exec->phases_capacity,
                       plan->num_phases + 1, 4, sizeof(int)));
    for (int p = 0; p < plan->num_phases; p++) {
        exec->phase_first_item[p] = exec->num_items;
        for (int i = 0; i < plan->phases[p].num_ops; i++)
            NBR_CHECK(split_op(exec, plan->phases[p].first_op + i));
    }
    exec->phase_first_item[plan->num_phases] = exec->num_items;
    NBR_CHECK(link_receives(exec));
    NBR_CHECK(nbr_grow((void **)&exec->batch, &exec->batch_capacity, exec->num_items + 1, 16,
                       sizeof(nbr_copy_t)));
    free(exec->batch_items);
    exec->batch_items = malloc(((size_t)exec->batch_capacity) * sizeof(int));
    if (!exec->batch_items)
        return NBR_ERR_NOMEM;
    if (exec->network_receives && !exec->scratch) {
        exec->scratch = malloc(ctx->chunk_bytes);
        if (!exec->scratch)
            return NBR_ERR_NOMEM;
    }
    defer(core, reserve_staging(ctx, &exec->staging));
    defer(core, take_handles(exec));
out:
    return rc;
}

/* ------------------------------------------------------------ the ring */

/* Publishes a descriptor to channel peer `to`; 0 when its ring slot is
 * still in use (the receiver lags by NBR_RING_SLOTS messages). */
static int post_descriptor(nbr_device_ctx_t *ctx, int to, const nbr_desc_t *content,
                           uint64_t *seq)
{
    uint64_t s = ctx->sent[to] + 1;
    nbr_desc_t *slot = &nbr_ring(ctx, ctx->channel_rank, to)[s % NBR_RING_SLOTS];
    uint64_t previous = atomic_load_explicit(&slot->seq, memory_order_acquire);
    if (previous != 0 && atomic_load_explicit(&slot->done, memory_order_acquire) != previous)
        return 0;
    slot->tag = content->tag;
    slot->kind = content->kind;
    slot->offset = content->offset;
    slot->bytes = content->bytes;
    slot->source = content->source;
    atomic_store_explicit(&slot->seq, s, memory_order_release);
    ctx->sent[to] = s;
    *seq = s;
    return 1;
}

/* The oldest descriptor from channel peer `from` with this tag that no
 * receive took yet (MPI's matching order), or NULL. */
static nbr_desc_t *match_descriptor(nbr_device_ctx_t *ctx, int from, int tag, uint64_t *seq)
{
    nbr_desc_t *ring = nbr_ring(ctx, from, ctx->channel_rank);
    uint64_t first = ctx->next[from];
    for (int k = 0; k < NBR_RING_SLOTS; k++) {
        if (ctx->taken[from] & (1u << k))
            continue;
        uint64_t s = first + (uint64_t)k;
        nbr_desc_t *slot = &ring[s % NBR_RING_SLOTS];
        if (atomic_load_explicit(&slot->seq, memory_order_acquire) != s)
            return NULL; /* not posted yet, nor anything after it */
        if (slot->tag != tag)
            continue;
        ctx->taken[from] |= 1u << k;
        while (ctx->taken[from] & 1u) {
            ctx->taken[from] >>= 1;
            ctx->next[from]++;
        }
        *seq = s;
        return slot;
    }
    return NULL;
}

static void release_descriptor(nbr_desc_t *desc, uint64_t seq)
{
    atomic_store_explicit(&desc->done, seq, memory_order_release);
}

/* ------------------------------------------------------------ copies */

static void queue_copy(nbr_dev_exec_t *exec, int index, void *dst, const void *src, size_t bytes,
                       int state)
{
    exec->items[index].state = (uint8_t)state;
    exec->items[index].ticket = UINT64_MAX; /* not launched: never counts as done */
    exec->batch[exec->batch_count] = (nbr_copy_t){dst, src, bytes};
    exec->batch_items[exec->batch_count++] = index;
}

/* Launches the copies gathered so far as one batch. */
static void flush_copies(nbr_dev_exec_t *exec)
{
    if (exec->batch_count == 0)
        return;
    uint64_t ticket = 0;
    int rc = exec->ctx->backend->copy(exec->ctx->stream, exec->batch, exec->batch_count, &ticket);
    exec->copy_batches++;
    for (int i = 0; i < exec->batch_count; i++) {
        nbr_dev_item_t *item = &exec->items[exec->batch_items[i]];
        item->ticket = rc == NBR_SUCCESS ? ticket : 0; /* 0: counts as done */
        item->spoilt = rc != NBR_SUCCESS;
    }
    record(exec, rc);
    exec->batch_count = 0;
}

/* ------------------------------------------------------------ MPI */

/* A post that fails is tried once more: the peer waits for the message. */
static int start_mpi(nbr_dev_exec_t *exec, nbr_dev_item_t *item, char *addr)
{
    const nbr_op_t *op = op_of(exec, item);
    int rc = NBR_SUCCESS;
    for (int attempt = 0; attempt < 2; attempt++) {
        item->request = MPI_REQUEST_NULL;
        int post = nbr_message_post(item->kind == ITEM_SEND ? NBR_MSG_ISEND : NBR_MSG_IRECV,
                                    addr, item->bytes, op->peer, exec->core.tag_base + op->tag,
                                    exec->comm, &item->request, NULL);
        rc = rc == NBR_SUCCESS ? post : rc;
        if (post == NBR_SUCCESS)
            break;
    }
    item->state = item->request != MPI_REQUEST_NULL ? S_MPI : S_DONE;
    return rc;
}

/* Where MPI reads or writes an item's bytes: staging or its own buffer. */
static char *mpi_addr(nbr_dev_exec_t *exec, const nbr_dev_item_t *item)
{
    if (!item->staged)
        return item_addr(exec, item);
    return (item->path == PATH_CHANNEL ? exec->channel_staging.base : exec->staging.base) +
           item->staging_offset;
}

/* Receives a message nobody wants (its length differs from the plan's) so
 * that its sender completes. The whole message is taken: a truncated
 * receive is not safe on every transport (Open MPI's TCP path writes past
 * the buffer). `message` is a probed one, or MPI_MESSAGE_NULL to receive
 * the next one from peer with tag; `place` holds `bytes`, or is NULL
 * (then scratch memory does). */
static int discard(nbr_dev_exec_t *exec, MPI_Message *message, int peer, int tag, size_t bytes,
                   char *place)
{
    char one;
    int own = !place && (exec->scratch == NULL || bytes > exec->ctx->chunk_bytes);
    char *sink = place ? place : own ? malloc(bytes) : exec->scratch;
    if (!sink && bytes > 0) {
        NBR_ERROR("no memory to take the unwanted %zu-byte message from rank %d: "
                  "that rank's call will not complete", bytes, peer);
        return NBR_ERR_NOMEM;
    }
    MPI_Request request = MPI_REQUEST_NULL;
    int rc = *message != MPI_MESSAGE_NULL
                 ? nbr_message_imrecv(sink ? sink : &one, bytes, message, &request)
                 : nbr_message_post(NBR_MSG_IRECV, sink ? sink : &one, bytes, peer, tag,
                                    exec->comm, &request, NULL);
    int mrc = rc == NBR_SUCCESS ? PMPI_Wait(&request, MPI_STATUS_IGNORE) : MPI_SUCCESS;
    rc = mrc == MPI_SUCCESS ? rc : nbr_mpi_failed("MPI_Wait", mrc);
    if (own)
        free(sink);
    return rc;
}

/* ------------------------------------------------------------ phases */

static void post_phase(nbr_dev_exec_t *exec)
{
    /* a phase's sends never read what its own receives write: an error
     * in this phase spoils the next ones' sends, not its own */
    exec->poison_sends = exec->core.spoilt;
    int first = exec->phase_first_item[exec->phase], last = exec->phase_first_item[exec->phase + 1];
    exec->send_cursor = first;
    for (int i = first; i < last; i++) {
        nbr_dev_item_t *item = &exec->items[i];
        const nbr_op_t *op = op_of(exec, item);
        item->request = MPI_REQUEST_NULL;
        item->ticket = 0;
        item->desc = NULL;
        item->failures = 0;
        item->spoilt = 0;
        if (item->kind == ITEM_COPY) {
            if (exec->poisoned)
                item->state = S_DONE;
            else
                queue_copy(exec, i, item_addr(exec, item),
                           exec->buf[op->src_buf].base + op->src_offset, item->bytes, S_COPY);
        } else if (item->kind == ITEM_RECV) {
            item->state = item->path == PATH_NETWORK ? S_PROBE : S_MATCH;
        } else {
            item->state = S_SEND_QUEUED;
            if (item->path == PATH_NETWORK && item->staged && item->bytes > 0 &&
                !exec->poison_sends) /* poison reads nothing */
                queue_copy(exec, i, mpi_addr(exec, item), item_addr(exec, item),
                           item->bytes, S_SEND_QUEUED);
        }
    }
    flush_copies(exec);
}

static int copied(const nbr_dev_exec_t *exec, const nbr_dev_item_t *item)
{
    return item->ticket <= exec->ctx->copies_done;
}

/* Marks an op's items from `index` on done: the op ended early. */
static void end_op(nbr_dev_exec_t *exec, int index)
{
    for (int j = index; j < exec->num_items && exec->items[j].op == exec->items[index].op; j++)
        exec->items[j].state = S_DONE;
}

/* After an error in an earlier phase (or its own staging copy's), a send
 * item still owed goes as poison: over the ring a POISON descriptor; over
 * the network poison for the whole message in place of the op's first
 * chunk, and its other chunks are not sent (a phase's staging copies are
 * one batch: when one is spoilt, so is the first chunk's). Returns 0 when
 * the ring is full. */
static int send_poison(nbr_dev_exec_t *exec, nbr_dev_item_t *item)
{
    const nbr_op_t *op = op_of(exec, item);
    int tag = exec->core.tag_base + op->tag;
    if (item->path == PATH_CHANNEL) {
        nbr_desc_t content = {.tag = tag, .kind = NBR_DESC_POISON};
        if (!post_descriptor(exec->ctx, item->channel_peer, &content, &item->seq))
            return 0;
        item->state = S_DONE;
        return 1;
    }
    item->request = MPI_REQUEST_NULL;
    record(exec, nbr_message_poison(op->bytes, op->peer, tag, exec->comm, &item->request));
    end_op(exec, (int)(item - exec->items));
    item->state = item->request != MPI_REQUEST_NULL ? S_MPI : S_DONE;
    return 1;
}

/* Posts the phase's sends in plan order (MPI matches same-tag messages in
 * posting order), as far as each one's turn has come. */
static int advance_sends(nbr_dev_exec_t *exec, int last)
{
    nbr_device_ctx_t *ctx = exec->ctx;
    int moved = 0;
    for (; exec->send_cursor < last; exec->send_cursor++) {
        nbr_dev_item_t *item = &exec->items[exec->send_cursor];
        if (item->kind != ITEM_SEND || item->state != S_SEND_QUEUED)
            continue;
        const nbr_op_t *op = op_of(exec, item);
        if (exec->poison_sends || item->spoilt) {
            if (!send_poison(exec, item))
                break;
        } else if (item->path == PATH_NETWORK) {
            if (item->staged && !copied(exec, item))
                break;
            exec->bytes_staged += item->staged ? item->bytes : 0;
            record(exec, start_mpi(exec, item, mpi_addr(exec, item)));
        } else {
            nbr_desc_t content = {.tag = exec->core.tag_base + op->tag, .bytes = item->bytes};
            /* empty messages need neither a mapping nor MPI */
            int ipc = item_memory(exec, item) == NBR_MEM_DEVICE || item->bytes == 0;
            content.kind = ipc ? NBR_DESC_IPC : NBR_DESC_MPI;
            if (ipc && item->bytes > 0) {
                content.source = exec->source[op->buf];
                content.offset = exec->handle_offset[op->buf] + op->offset;
            }
            if (!post_descriptor(ctx, item->channel_peer, &content, &item->seq))
                break;
            if (ipc)
                item->state = S_ACK;
            else
                record(exec, start_mpi(exec, item, item_addr(exec, item)));
        }
        moved = 1;
    }
    return moved;
}

/* A channel receive found its descriptor: pull over IPC, or receive by MPI. */
/* A channel receive ends without taking its descriptor's bytes: the
 * descriptor is released, and bytes that come by MPI are received and
 * dropped (their sender waits for MPI to take them). */
static void drop_descriptor(nbr_dev_exec_t *exec, int index, nbr_desc_t *desc)
{
    nbr_dev_item_t *item = &exec->items[index];
    const nbr_op_t *op = op_of(exec, item);
    int by_mpi = desc->kind == NBR_DESC_MPI && desc->bytes > 0;
    size_t bytes = (size_t)desc->bytes;
    release_descriptor(desc, item->seq);
    if (by_mpi) {
        MPI_Message none = MPI_MESSAGE_NULL;
        record(exec, discard(exec, &none, op->peer, exec->core.tag_base + op->tag, bytes, NULL));
    }
    item->state = S_DONE;
}

static void take_descriptor(nbr_dev_exec_t *exec, int index, nbr_desc_t *desc)
{
    nbr_dev_item_t *item = &exec->items[index];
    const nbr_op_t *op = op_of(exec, item);
    if (desc->kind == NBR_DESC_POISON) {
        record(exec, nbr_message_poisoned(op->peer, item->bytes));
        drop_descriptor(exec, index, desc);
        return;
    }
    if (exec->poisoned) { /* no buffer of ours to take the bytes into */
        drop_descriptor(exec, index, desc);
        return;
    }
    if (desc->bytes > item->bytes) {
        record_receive(exec, op,
                       nbr_message_mismatch(op->peer, (size_t)desc->bytes, item->bytes));
        drop_descriptor(exec, index, desc);
        return;
    }
    /* a shorter block fills the slot's front, as MPI does: desc->bytes below */
    if (desc->bytes == 0) {
        release_descriptor(desc, item->seq);
        item->state = S_DONE;
        return;
    }
    if (desc->kind == NBR_DESC_MPI) {
        release_descriptor(desc, item->seq); /* MPI itself completes the sender */
        int rc = item->staged ? reserve_staging(exec->ctx, &exec->channel_staging) : NBR_SUCCESS;
        if (rc != NBR_SUCCESS) {
            MPI_Message none = MPI_MESSAGE_NULL; /* its sender still waits for MPI */
            record(exec, rc);
            record(exec, discard(exec, &none, op->peer, exec->core.tag_base + op->tag, item->bytes,
                                 NULL));
            item->state = S_DONE;
            return;
        }
        record(exec, start_mpi(exec, item, mpi_addr(exec, item)));
        return;
    }
    void *base = NULL;
    int rc = nbr_device_map(exec->ctx, item->channel_peer, &desc->source, &base);
    if (rc != NBR_SUCCESS) {
        release_descriptor(desc, item->seq); /* the sender must not wait forever */
        record(exec, rc);
        item->state = S_DONE;
        return;
    }
    item->desc = desc;
    exec->bytes_ipc_pulled += desc->bytes;
    queue_copy(exec, index, item_addr(exec, item), (char *)base + desc->offset,
               (size_t)desc->bytes, S_COPY_THEN_ACK);
}

/* A receive still looking for its message (or, draining, for the rest of it). */
static int searching(const nbr_dev_item_t *item)
{
    return item->state == S_MATCH || item->state == S_PROBE || item->state == S_DRAIN;
}

/* A network receive takes its message once MPI_Improbe shows it, so its
 * length is known before a byte lands (Open MPI may write a truncated
 * message past the buffer). A message or chunk of another length than
 * expected means the sender cut a different message: its chunks are taken
 * away up to its short final one, so that it completes, and the op fails
 * with the sender's length in the log. Returns whether it moved. */
static int take_probed(nbr_dev_exec_t *exec, int index)
{
    nbr_dev_item_t *item = &exec->items[index];
    const nbr_op_t *op = op_of(exec, item);
    int tag = exec->core.tag_base + op->tag, moved = 0;
    while (item->state == S_PROBE || item->state == S_DRAIN) {
        int flag = 0;
        MPI_Message message = MPI_MESSAGE_NULL;
        MPI_Status status;
        int mrc = MPI_Improbe(op->peer, tag, exec->comm, &flag, &message, &status);
        if (mrc != MPI_SUCCESS) {
            /* the message stays queued: probe again at the next pass (a
             * message left there would be taken by a later run); the
             * second failure in a row gives up */
            record(exec, nbr_mpi_failed("MPI_Improbe", mrc));
            if (++item->failures >= 2)
                end_op(exec, index);
            return 1;
        }
        item->failures = 0;
        if (!flag)
            return moved;
        moved = 1;
        size_t got = 0;
        int rc = nbr_message_probed(&status, &got);
        if (rc == NBR_SUCCESS && item->state == S_PROBE && got == item->bytes && !exec->poisoned) {
            rc = nbr_message_imrecv(mpi_addr(exec, item), got, &message, &item->request);
            if (rc != NBR_SUCCESS) { /* the matched message is still to be taken */
                record(exec, rc);
                rc = nbr_message_imrecv(mpi_addr(exec, item), got, &message, &item->request);
            }
            item->state = S_MPI;
            if (rc != NBR_SUCCESS) {
                record(exec, rc);
                end_op(exec, index);
            }
            return 1;
        }
        const int probing = item->state == S_PROBE; /* the item's first message */
        item->sender_bytes = (probing ? item->offset : item->sender_bytes) + got;
        item->state = S_DRAIN;
        if (rc == NBR_SUCCESS) /* where the bytes fit, they may as well land in place */
            rc = discard(exec, &message, op->peer, tag, got,
                         got <= item->bytes && !exec->poisoned ? mpi_addr(exec, item) : NULL);
        /* poison in place of the whole message: one byte more than was
         * due (message.h), in one message whatever its length */
        const int poison = probing && item->offset == 0 && got == op->bytes + 1;
        /* GPU-aware MPI: messages are whole; otherwise a chunk of another
         * length than a full one is the last */
        if (rc != NBR_SUCCESS || poison || exec->ctx->gpu_aware ||
            got != exec->ctx->chunk_bytes) {
            int shorter = 0;
            if (rc != NBR_SUCCESS)
                record(exec, rc);
            else if (poison)
                record(exec, nbr_message_poisoned(op->peer, op->bytes));
            else if (!exec->poisoned || item->sender_bytes != op->bytes) {
                int mismatch = nbr_message_mismatch(op->peer, item->sender_bytes, op->bytes);
                shorter = mismatch == NBR_SUCCESS;
                record_receive(exec, op, mismatch);
            }
            end_op(exec, index);
            /* a shorter block fills the slot's front, as MPI does: its last
             * piece landed in staging, from where it goes to the slot */
            if (shorter && item->staged && got > 0 && !exec->poisoned)
                queue_copy(exec, index, item_addr(exec, item), mpi_addr(exec, item), got,
                           S_COPY);
        }
    }
    return moved;
}

/* One pass over the phase in flight; returns whether anything moved. */
static int progress_phase(nbr_dev_exec_t *exec)
{
    nbr_device_ctx_t *ctx = exec->ctx;
    int first = exec->phase_first_item[exec->phase], last = exec->phase_first_item[exec->phase + 1];
    int moved = 0, pending = 0;
    record(exec, nbr_device_poll(ctx));
    /* Receives find their messages (descriptors from node peers, probed
     * chunks from the network) in MPI's order: one waits while the receive
     * before it with its peer and tag has found nothing, so it cannot take
     * what that one missed by a moment. */
    for (int i = first; i < last; i++) {
        nbr_dev_item_t *item = &exec->items[i];
        if (!searching(item) || (item->prev_same >= 0 && searching(&exec->items[item->prev_same])))
            continue;
        if (item->path == PATH_NETWORK) {
            moved |= take_probed(exec, i);
            continue;
        }
        nbr_desc_t *desc = match_descriptor(ctx, item->channel_peer,
                                            exec->core.tag_base + op_of(exec, item)->tag, &item->seq);
        if (desc) {
            take_descriptor(exec, i, desc);
            moved = 1;
        }
    }
    moved |= advance_sends(exec, last);
    for (int i = first; i < last; i++) {
        nbr_dev_item_t *item = &exec->items[i];
        int before = item->state;
        if (item->state == S_MPI) {
            int flag = 0;
            MPI_Status status;
            int mrc = PMPI_Test(&item->request, &flag, &status);
            if (mrc != MPI_SUCCESS && item->request != MPI_REQUEST_NULL &&
                ++item->failures < 2) {
                /* the call failed and the request is still in flight over
                 * the buffer: test it again at the next pass */
                record(exec, nbr_mpi_failed("MPI_Test", mrc));
            } else if (flag || mrc != MPI_SUCCESS) {
                /* receives are posted only for messages of the expected
                 * length (probed, or announced by a descriptor): the length
                 * check guards against an MPI that delivers otherwise */
                record(exec, nbr_message_check(item->kind == ITEM_RECV, &status, mrc,
                                               op_of(exec, item)->peer, item->bytes,
                                               "MPI_Test"));
                /* a receive announced shorter than its slot (a channel's
                 * MPI descriptor) copies what came */
                size_t got = item->bytes;
                if (item->kind == ITEM_RECV && item->staged && mrc == MPI_SUCCESS)
                    record(exec, nbr_message_probed(&status, &got));
                if (item->kind == ITEM_RECV && item->staged && mrc == MPI_SUCCESS && got > 0 &&
                    got <= item->bytes) {
                    exec->bytes_staged += got;
                    queue_copy(exec, i, item_addr(exec, item), mpi_addr(exec, item), got,
                               S_COPY);
                } else {
                    item->state = S_DONE;
                }
            }
        } else if (item->state == S_COPY && copied(exec, item)) {
            item->state = S_DONE;
        } else if (item->state == S_COPY_THEN_ACK && copied(exec, item)) {
            release_descriptor(item->desc, item->seq);
            item->state = S_DONE;
        } else if (item->state == S_ACK) {
            nbr_desc_t *slot = &nbr_ring(ctx, ctx->channel_rank, item->channel_peer)
                                   [item->seq % NBR_RING_SLOTS];
            /* >=: once done, the slot may already carry a later message */
            if (atomic_load_explicit(&slot->done, memory_order_acquire) >= item->seq)
                item->state = S_DONE;
        }
        moved |= item->state != before;
        pending |= item->state != S_DONE;
    }
    flush_copies(exec);
    if (!pending) {
        exec->phase++;
        if (exec->phase < exec->core.plan->num_phases)
            post_phase(exec);
        moved = 1;
    }
    return moved;
}

/* ------------------------------------------------------------ running */

static int begin(nbr_executor_t *core)
{
    nbr_dev_exec_t *exec = of(core);
    exec->phase = 0;
    exec->batch_count = 0;
    exec->poisoned = core->status != NBR_SUCCESS;
    exec->bytes_ipc_pulled = exec->bytes_staged = exec->copy_batches = 0;
    post_phase(exec);
    progress_phase(exec);
    core->active = exec->phase < core->plan->num_phases;
    return NBR_SUCCESS;
}

/* Copies and receives complete without blocking: blocking is the same. */
static int advance(nbr_executor_t *core, int blocking)
{
    nbr_dev_exec_t *exec = of(core);
    int moved = progress_phase(exec);
    if (exec->phase >= core->plan->num_phases)
        core->active = 0;
    return moved;
}

static void add_counters(const nbr_executor_t *core, nbr_counters_t *c)
{
    const nbr_dev_exec_t *exec = (const nbr_dev_exec_t *)core;
    c->bytes_ipc_pulled += exec->bytes_ipc_pulled;
    c->bytes_staged += exec->bytes_staged;
    c->copy_batches += exec->copy_batches;
}

static void unbind(nbr_executor_t *core)
{
    (void)core; /* the scratch stays for the next bind; destroy frees it */
}

static int create(nbr_exec_domain_t *domain, nbr_executor_t **out)
{
    nbr_dev_exec_t *exec = calloc(1, sizeof(*exec));
    if (!exec)
        return NBR_ERR_NOMEM;
    exec->ctx = domain->device;
    exec->comm = domain->comm;
    *out = &exec->core;
    return NBR_SUCCESS;
}

static void destroy(nbr_executor_t *core)
{
    nbr_dev_exec_t *exec = of(core);
    nbr_staging_area_t *areas[] = {&exec->staging, &exec->channel_staging};
    for (int a = 0; a < 2; a++)
        if (areas[a]->base)
            exec->ctx->backend->host_free(areas[a]->base);
    free(exec->items);
    free(exec->phase_first_item);
    free(exec->batch);
    free(exec->batch_items);
    free(exec->scratch);
    free_scratch(exec);
    free(exec);
}

const nbr_executor_kind_t nbr_device_executor = {
    .name = "device",
    .create = create,
    .bind = bind,
    .begin = begin,
    .advance = advance,
    .unbind = unbind,
    .destroy = destroy,
    .add_counters = add_counters,
};
