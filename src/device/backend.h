/* The device runtime as nbrcoll sees it: a table of the few calls the
 * device layer makes, one table per backend:
 *   "hip"     AMD GPUs (gpu_runtime.cu compiled by hipcc),
 *   "cuda"    NVIDIA GPUs (the same source compiled by nvcc),
 *   "emulate" the CPU emulation (emulate.c): device memory is a POSIX
 *             shared-memory segment per allocation, copies are memcpy, IPC
 *             handles name the segment. It lets CI run the whole device
 *             protocol without a GPU.
 * NBR_DEVICE=auto|hip|cuda|emulate|off picks one per process
 * (nbr_device_current()). Every call returns NBR_SUCCESS or an nbr_status_t
 * (NBR_ERR_DEVICE with the runtime's message logged) and never prints
 * otherwise. Header usable from C and C++. */
#ifndef NBR_DEVICE_BACKEND_H
#define NBR_DEVICE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nbr_mem_kind {
    NBR_MEM_HOST = 0,    /* pageable or pinned host memory */
    NBR_MEM_DEVICE = 1,  /* device memory (also IPC-mapped memory) */
    NBR_MEM_MANAGED = 2  /* managed / unified memory */
} nbr_mem_kind_t;

const char *nbr_mem_kind_name(nbr_mem_kind_t kind);

/* Opaque handle of one allocation that another process of the node can
 * open. 64 bytes: the size of hipIpcMemHandle_t and cudaIpcMemHandle_t. */
#define NBR_IPC_HANDLE_BYTES 64
typedef struct nbr_ipc_handle {
    unsigned char bytes[NBR_IPC_HANDLE_BYTES];
} nbr_ipc_handle_t;

/* One copy of a batch. Pointers may be device, IPC-mapped or host memory. */
typedef struct nbr_copy {
    void *dst;
    const void *src;
    size_t bytes;
} nbr_copy_t;

/* An ordered queue of device work (a HIP / CUDA stream). */
typedef struct nbr_dev_stream nbr_dev_stream_t;

typedef struct nbr_device_backend {
    const char *name;
    /* Devices this process can use; 0 (and NBR_SUCCESS) when there are
     * none, e.g. no driver. Must not print, whatever the machine. */
    int (*device_count)(int *count);
    /* The calling thread's current device and its PCI bus id
     * ("0000:c1:00.0", lower case; empty when unknown). */
    int (*current_device)(int *device, char *pci_bus_id, size_t len);
    /* What ptr points to; *device is its device ordinal, -1 for host.
     * Unknown pointers (plain malloc) are NBR_MEM_HOST, not an error. */
    int (*pointer_kind)(const void *ptr, nbr_mem_kind_t *kind, int *device);
    /* Device memory that ipc_get accepts (nbr_mem_alloc). */
    int (*mem_alloc)(void **ptr, size_t bytes);
    int (*mem_free)(void *ptr);
    /* Page-locked host memory for staging. */
    int (*host_alloc)(void **ptr, size_t bytes);
    int (*host_free)(void *ptr);
    /* The handle of the allocation that holds ptr, ptr's offset in it, the
     * allocation's size and its number: unique in this process for the
     * process's life (a handle's bytes may repeat for a later allocation). */
    int (*ipc_get)(const void *ptr, nbr_ipc_handle_t *handle, size_t *offset, size_t *bytes,
                   uint64_t *id);
    /* Maps a handle from another process; *base is the allocation's byte 0. */
    int (*ipc_open)(const nbr_ipc_handle_t *handle, void **base);
    int (*ipc_close)(void *base);
    int (*stream_create)(nbr_dev_stream_t **stream);
    void (*stream_destroy)(nbr_dev_stream_t *stream);
    /* Enqueues n copies as one batch (one multi-copy kernel launch where
     * every pointer is device-accessible) and returns its ticket: tickets
     * of a stream grow by one per call, starting at 1. n == 0 is allowed. */
    int (*copy)(nbr_dev_stream_t *stream, const nbr_copy_t *copies, int n,
                uint64_t *ticket);
    /* Every batch with a ticket <= *done has completed. Never blocks. */
    int (*progress)(nbr_dev_stream_t *stream, uint64_t *done);
    /* Blocks until everything enqueued on stream has completed. */
    int (*synchronize)(nbr_dev_stream_t *stream);
} nbr_device_backend_t;

/* IPC mappings shared by the whole process. The GPU runtimes map a peer
 * allocation once per process (a second open fails, "already mapped"),
 * while several communicators, each with its own cache, may pull from it:
 * they map and unmap through these, which count the users and unmap on
 * the last one's unmap. An allocation is named by its owner's pid and its
 * number there (the runtime's buffer id), not by its handle's bytes: a new
 * allocation at the addresses and of the size of a freed one may get the
 * same handle. A mapping also goes stale: once the owner frees the
 * allocation the runtime hands its addresses out again, and refuses to
 * map the new allocation while the old mapping of that range is open. So
 * an open mapping of the same owner, another number and an overlapping
 * range [owner_base, owner_base + bytes) is of freed memory: closed first
 * (no copy still reads it: the owner freed it after the operations that
 * sent from it had completed). */
typedef struct nbr_ipc_source {
    nbr_ipc_handle_t handle;
    uint64_t id;         /* the allocation's number in its owner, never reused */
    uint64_t owner_base; /* its byte 0, as the owner sees it */
    uint64_t bytes;      /* its size */
} nbr_ipc_source_t;
int nbr_ipc_map(const nbr_device_backend_t *backend, uint64_t owner_pid,
                const nbr_ipc_source_t *source, void **base);
int nbr_ipc_unmap(const nbr_device_backend_t *backend, uint64_t owner_pid, uint64_t id);

/* The backends compiled into this build; NULL when not compiled. */
const nbr_device_backend_t *nbr_device_backend_emulate(void);
const nbr_device_backend_t *nbr_device_backend_hip(void);
const nbr_device_backend_t *nbr_device_backend_cuda(void);

/* This process's backend, chosen once by NBR_DEVICE (default auto: hip,
 * then cuda, whichever has a device; none otherwise). *backend is NULL
 * when no device is in use: buffers are then host memory. Returns
 * NBR_ERR_INFO for a malformed NBR_DEVICE, NBR_ERR_UNSUPPORTED when the
 * named backend is not compiled in or has no device. */
int nbr_device_current(const nbr_device_backend_t **backend);

/* The PCI bus id of the current device of the backend in use ("" when no
 * backend is in use or it cannot tell). */
void nbr_device_current_pci(char *pci_bus_id, size_t len);

/* Fault injection, for tests: with NBR_DEVICE_FAULTS=1 in the environment
 * when the backend is chosen, every call below goes through a counting
 * layer, and nbr_device_fault_arm makes the nth call of one kind from now
 * fail with NBR_ERR_DEVICE (nth 0: none; the counts restart). Without the
 * variable the layer is not there and these do nothing. */
typedef enum nbr_device_call {
    NBR_DEVICE_CALL_POINTER_KIND,
    NBR_DEVICE_CALL_MEM_ALLOC,
    NBR_DEVICE_CALL_HOST_ALLOC,
    NBR_DEVICE_CALL_IPC_GET,
    NBR_DEVICE_CALL_IPC_OPEN,
    NBR_DEVICE_CALL_STREAM_CREATE,
    NBR_DEVICE_CALL_COPY,
    NBR_DEVICE_CALL_PROGRESS,
    NBR_DEVICE_CALL_SYNCHRONIZE,
    NBR_DEVICE_NUM_CALLS
} nbr_device_call_t;
void nbr_device_fault_arm(nbr_device_call_t call, long nth);
long nbr_device_fault_calls(nbr_device_call_t call);
int nbr_device_fault_fired(void);

#ifdef __cplusplus
}
#endif

#endif
