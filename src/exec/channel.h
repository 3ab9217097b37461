/* The device layer's state for one communicator: which backend, whether
 * MPI takes device pointers, the node channel (descriptor rings in node
 * shared memory), opened IPC mappings and the copy stream.
 *
 * The node channel is how two ranks of one shared-memory node hand device
 * data to each other without MPI moving it. For each ordered pair of
 * ranks there is a ring of descriptors; the sender of a message publishes
 * (tag, bytes, where the data is: an IPC handle and offset, or "comes by
 * MPI" when its buffer is host memory) and the receiver copies straight
 * from the sender's memory, then marks the descriptor done. A descriptor
 * becomes visible only when its sequence number is stored (release), so a
 * reader never sees it before the data it names is ready; the sender's
 * message completes only when the receiver marked it done, so its buffer
 * is not reused before the reader finished. */
#ifndef NBR_DEVICE_CONTEXT_H
#define NBR_DEVICE_CONTEXT_H

#include "device/backend.h"
#include "exec/executor.h"
#include "topo/locality.h"

#include <mpi.h>
#include <stdatomic.h>

/* Descriptors per ordered pair. A receiver sees at most this many
 * messages of one sender ahead of the oldest it has not taken yet. */
#define NBR_RING_SLOTS 32

/* POISON: the sender failed earlier in the run; no bytes follow
 * (exec/message.h says what poison is for). */
enum { NBR_DESC_IPC = 1, NBR_DESC_MPI = 2, NBR_DESC_POISON = 3 };

typedef struct nbr_desc {
    _Atomic uint64_t seq;  /* message number on the pair, from 1; stored last */
    _Atomic uint64_t done; /* = seq once the receiver no longer needs the data */
    int32_t tag;
    int32_t kind;          /* NBR_DESC_IPC, NBR_DESC_MPI or NBR_DESC_POISON */
    uint64_t offset;       /* IPC: where the bytes start in the allocation */
    uint64_t bytes;
    nbr_ipc_source_t source; /* IPC: the allocation (the slot is 128 bytes: no
                              * false sharing between slots) */
} nbr_desc_t;
_Static_assert(sizeof(nbr_desc_t) == 128, "descriptor slot size");

/* A peer's allocation mapped into this process. */
typedef struct nbr_ipc_mapping {
    int peer;    /* channel index of the owner */
    uint64_t id; /* the allocation's number in the owner */
    void *base;
    uint64_t last_use; /* map_clock at its last lookup */
} nbr_ipc_mapping_t;

typedef struct nbr_device_ctx {
    const nbr_device_backend_t *backend;
    int gpu_aware;      /* MPI moves device buffers itself */
    size_t chunk_bytes; /* staged inter-node messages travel in these chunks */
    nbr_memory_mode_t memory;
    /* node channel */
    int channel_rank, channel_size;
    int *channel_of;    /* communicator rank -> channel index, -1 off-node */
    int *channel_pid;   /* channel index -> process id */
    nbr_desc_t *rings;  /* channel_size^2 rings of NBR_RING_SLOTS */
    size_t rings_bytes;
    uint64_t *sent;     /* per receiver: last sequence number posted */
    uint64_t *next;     /* per sender: oldest sequence number not taken */
    uint32_t *taken;    /* per sender: bit k = next + k taken out of order */
    nbr_dev_stream_t *stream;
    uint64_t copies_done; /* tickets of stream completed so far */
    nbr_ipc_mapping_t *mappings;
    int num_mappings, mappings_capacity;
    uint64_t map_clock;
} nbr_device_ctx_t;

/* Collective over comm. *ctx stays NULL when the device layer is off for
 * this communicator (no backend, or nbr_memory=host); every rank returns
 * the same status and makes the same choice. */
int nbr_device_ctx_create(MPI_Comm comm, int comm_id, const nbr_exec_options_t *options,
                          const nbr_locality_t *locality, nbr_device_ctx_t **ctx);
void nbr_device_ctx_free(nbr_device_ctx_t *ctx);

/* The ring carrying messages from channel index `from` to `to`. */
static inline nbr_desc_t *nbr_ring(nbr_device_ctx_t *ctx, int from, int to)
{
    return ctx->rings + ((size_t)from * (size_t)ctx->channel_size + (size_t)to) * NBR_RING_SLOTS;
}

/* The base of peer's allocation named by handle, mapped on first use and
 * cached for the communicator's life (at most a few dozen mappings: the
 * least recently used is closed beyond that). */
int nbr_device_map(nbr_device_ctx_t *ctx, int peer, const nbr_ipc_source_t *source,
                   void **base);

/* Advances the copy stream; updates ctx->copies_done. */
int nbr_device_poll(nbr_device_ctx_t *ctx);

#endif
