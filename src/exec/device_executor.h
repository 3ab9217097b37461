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
 * Executors of one communicator progress together: waiting on one request
 * advances all, so a peer waiting on an older request is never stuck. */
#ifndef NBR_DEVICE_EXECUTOR_H
#define NBR_DEVICE_EXECUTOR_H

#include "exec/channel.h"

#include "plan/plan.h"

typedef struct nbr_dev_buffer {
    char *base; /* byte 0 as the plan sees it */
    nbr_mem_kind_t kind;
} nbr_dev_buffer_t;

typedef struct nbr_dev_item nbr_dev_item_t;

typedef struct nbr_staging_area {
    char *base;
    size_t bytes, capacity;
} nbr_staging_area_t;

typedef struct nbr_dev_exec {
    nbr_device_ctx_t *ctx;
    const nbr_plan_t *plan;
    MPI_Comm comm;
    int rank;
    int tag_base;
    nbr_dev_buffer_t buf[NBR_NUM_BUFFERS];
    nbr_ipc_handle_t handle[NBR_NUM_BUFFERS]; /* device buffers sent over IPC */
    size_t handle_offset[NBR_NUM_BUFFERS];
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
    int active;
    int status;
    uint64_t bytes_ipc_pulled, bytes_staged, copy_batches; /* this run */
    struct nbr_dev_exec *next_active;
} nbr_dev_exec_t;

/* Binds exec (zeroed the first time; arrays are kept between binds) to a
 * plan and buffers: splits messages into items, sizes the staging area,
 * takes IPC handles of the device buffers. */
int nbr_dev_exec_init(nbr_dev_exec_t *exec, nbr_device_ctx_t *ctx, const nbr_plan_t *plan,
                      const nbr_dev_buffer_t buffers[NBR_NUM_BUFFERS], MPI_Comm comm,
                      int tag_base);
int nbr_dev_exec_start(nbr_dev_exec_t *exec);
int nbr_dev_exec_test(nbr_dev_exec_t *exec, int *done);
int nbr_dev_exec_wait(nbr_dev_exec_t *exec);
void nbr_dev_exec_free(nbr_dev_exec_t *exec);

#endif
