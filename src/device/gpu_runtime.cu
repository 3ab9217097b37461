/* The GPU backends of src/device/backend.h: compiled by hipcc it is
 * nbr_device_backend_hip(), by nvcc nbr_device_backend_cuda() (names and
 * runtime mapping in gpu_port.h). Everything but that one function has
 * internal linkage so the two objects link side by side. */
#include "device/gpu_port.h"

#include <mpi.h>
#include <nbrcoll.h>

extern "C" {
#include "base/log.h" /* a C header without its own extern "C" */
}
#include "device/backend.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static_assert(sizeof(hipIpcMemHandle_t) == NBR_IPC_HANDLE_BYTES,
              "nbr_ipc_handle_t must hold the runtime's IPC handle");

namespace {

/* ------------------------------------------------------------ the kernel */

/* Copies per launch: the triples travel as kernel arguments (3 KiB here),
 * under the 4 KiB every supported runtime accepts. */
constexpr int kBatch = 128;
constexpr int kThreads = 256;
/* A block moves about this much per pass of its loop (256 threads x 16 B x
 * 4 in flight); more bytes get more blocks, up to kMaxBlocks per launch. */
constexpr size_t kBytesPerBlock = (size_t)kThreads * 16 * 4;
constexpr unsigned kMaxBlocks = 1024;

struct batch_args {
    void *dst[kBatch];
    const void *src[kBatch];
    size_t bytes[kBatch];
};
static_assert(sizeof(batch_args) < 4096, "kernel arguments must stay under 4 KiB");

/* Grid-stride copy of n words of type T, four loads in flight per thread. */
template <typename T>
__device__ void copy_words(T *dst, const T *src, size_t n, size_t first, size_t stride)
{
    size_t i = first;
    for (; i + 3 * stride < n; i += 4 * stride) {
        T a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride)
        dst[i] = src[i];
}

/* blockIdx.y picks the copy, the blocks along x share its bytes. The word
 * size is the widest (up to 16 B) that dst and src are equally misaligned
 * to: bytes before dst reaches it and the tail after the last whole word
 * go one per thread (fewer than 16 each, and every grid has >= 256
 * threads). */
__global__ void multi_copy(batch_args args)
{
    const unsigned c = blockIdx.y;
    unsigned char *dst = (unsigned char *)args.dst[c];
    const unsigned char *src = (const unsigned char *)args.src[c];
    const size_t n = args.bytes[c];
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t stride = (size_t)gridDim.x * blockDim.x;

    const uintptr_t skew = (uintptr_t)dst ^ (uintptr_t)src;
    const size_t word = (skew & 15) == 0 ? 16 : (skew & 7) == 0 ? 8 : (skew & 3) == 0 ? 4
                        : (skew & 1) == 0 ? 2 : 1;
    size_t head = (size_t)(0 - (uintptr_t)dst) & (word - 1);
    if (head > n)
        head = n;
    const size_t words = (n - head) / word;
    const size_t body_end = head + words * word;
    if (first < head)
        dst[first] = src[first];
    if (first < n - body_end)
        dst[body_end + first] = src[body_end + first];

    unsigned char *d = dst + head;
    const unsigned char *s = src + head;
    switch (word) {
    case 16: copy_words((uint4 *)d, (const uint4 *)s, words, first, stride); break;
    case 8: copy_words((uint2 *)d, (const uint2 *)s, words, first, stride); break;
    case 4: copy_words((unsigned *)d, (const unsigned *)s, words, first, stride); break;
    case 2:
        copy_words((unsigned short *)d, (const unsigned short *)s, words, first, stride);
        break;
    default: copy_words(d, s, words, first, stride); break;
    }
}

/* --------------------------------------------------------------- helpers */

int failed(const char *call, hipError_t e)
{
    NBR_ERROR(NBR_GPU_BACKEND_NAME " backend: %s: %s", call, hipGetErrorString(e));
    /* a call's error stays the thread's last error until read: the next
     * launch, which reads it, would fail with it */
    (void)hipGetLastError();
    return e == hipErrorOutOfMemory ? NBR_ERR_NOMEM : NBR_ERR_DEVICE;
}

/* The stream's device must be current for launches on it; the caller's
 * choice is restored afterwards. */
struct device_scope {
    int previous = -1; /* the device to restore; -1: nothing changed */
    int enter(int device)
    {
        int current = -1;
        hipError_t e = hipGetDevice(&current);
        if (e != hipSuccess)
            return failed("hipGetDevice", e);
        if (current != device) {
            if ((e = hipSetDevice(device)) != hipSuccess)
                return failed("hipSetDevice", e);
            previous = current;
        }
        return NBR_SUCCESS;
    }
    ~device_scope()
    {
        if (previous >= 0)
            (void)hipSetDevice(previous);
    }
};

/* ------------------------------------------------------ devices, memory */

int gpu_device_count(int *count)
{
    *count = 0;
#ifdef NBR_GPU_HIP
    /* Without the KFD device file the HIP runtime can print while it looks
     * for GPUs: ask it nothing then. */
    if (access("/dev/kfd", R_OK | W_OK) != 0)
        return NBR_SUCCESS;
#endif
    int n = 0;
    if (hipGetDeviceCount(&n) != hipSuccess) {
        (void)hipGetLastError(); /* no driver or no device: zero, not a failure */
        return NBR_SUCCESS;
    }
    *count = n > 0 ? n : 0;
    return NBR_SUCCESS;
}

int gpu_current_device(int *device, char *pci_bus_id, size_t len)
{
    hipError_t e = hipGetDevice(device);
    if (e != hipSuccess)
        return failed("hipGetDevice", e);
    if (!pci_bus_id || len == 0)
        return NBR_SUCCESS;
    pci_bus_id[0] = '\0';
    int size = len > 4096 ? 4096 : (int)len;
    if (hipDeviceGetPCIBusId(pci_bus_id, size, *device) != hipSuccess) {
        (void)hipGetLastError(); /* unknown id: empty, as documented */
        pci_bus_id[0] = '\0';
        return NBR_SUCCESS;
    }
    pci_bus_id[len - 1] = '\0';
    for (char *p = pci_bus_id; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return NBR_SUCCESS;
}

int gpu_pointer_kind(const void *ptr, nbr_mem_kind_t *kind, int *device)
{
    hipPointerAttribute_t attr;
    memset(&attr, 0, sizeof attr);
    *kind = NBR_MEM_HOST;
    *device = -1;
    if (!ptr)
        return NBR_SUCCESS;
    if (hipPointerGetAttributes(&attr, ptr) != hipSuccess) {
        /* plain malloc memory on HIP (and anything without a driver) */
        (void)hipGetLastError();
        return NBR_SUCCESS;
    }
    if (NBR_GPU_ATTR_IS_MANAGED(attr)) {
        *kind = NBR_MEM_MANAGED;
        *device = attr.device;
    } else if (NBR_GPU_ATTR_IS_DEVICE(attr)) {
        *kind = NBR_MEM_DEVICE;
        *device = attr.device;
    }
    return NBR_SUCCESS;
}

int gpu_mem_alloc(void **ptr, size_t bytes)
{
    *ptr = NULL;
    hipError_t e = hipMalloc(ptr, bytes);
    return e == hipSuccess ? NBR_SUCCESS : failed("hipMalloc", e);
}

int gpu_mem_free(void *ptr)
{
    hipError_t e = hipFree(ptr);
    return e == hipSuccess ? NBR_SUCCESS : failed("hipFree", e);
}

int gpu_host_alloc(void **ptr, size_t bytes)
{
    *ptr = NULL;
    hipError_t e = hipHostMalloc(ptr, bytes, hipHostMallocDefault);
    return e == hipSuccess ? NBR_SUCCESS : failed("hipHostMalloc", e);
}

int gpu_host_free(void *ptr)
{
    hipError_t e = hipHostFree(ptr);
    return e == hipSuccess ? NBR_SUCCESS : failed("hipHostFree", e);
}

/* ------------------------------------------------------------------ IPC */

int gpu_ipc_get(const void *ptr, nbr_ipc_handle_t *handle, size_t *offset, size_t *bytes,
                uint64_t *id)
{
    void *base = NULL;
    size_t size = 0;
    hipIpcMemHandle_t h;
    /* handles name whole allocations; ptr may lie anywhere inside one (on
     * CUDA the range comes from the driver, see gpu_port.h) */
    hipError_t e = hipMemGetAddressRange(&base, &size, (void *)ptr);
    if (e != hipSuccess) {
        (void)hipGetLastError();
        if (e == hipErrorNotSupported) {
            NBR_ERROR(NBR_GPU_BACKEND_NAME " backend: ipc_get(%p): this driver cannot tell "
                                           "the allocation that holds a pointer",
                      ptr);
            return NBR_ERR_UNSUPPORTED;
        }
        return failed("hipMemGetAddressRange", e);
    }
    if ((e = nbr_gpu_buffer_id(id, base)) != hipSuccess)
        return failed("buffer id", e);
    if ((e = hipIpcGetMemHandle(&h, base)) != hipSuccess)
        return failed("hipIpcGetMemHandle", e);
    memcpy(handle->bytes, &h, sizeof h);
    *offset = (size_t)((const char *)ptr - (const char *)base);
    *bytes = size;
    return NBR_SUCCESS;
}

int gpu_ipc_open(const nbr_ipc_handle_t *handle, void **base)
{
    hipIpcMemHandle_t h;
    memcpy(&h, handle->bytes, sizeof h);
    *base = NULL;
    hipError_t e = hipIpcOpenMemHandle(base, h, hipIpcMemLazyEnablePeerAccess);
    return e == hipSuccess ? NBR_SUCCESS : failed("hipIpcOpenMemHandle", e);
}

int gpu_ipc_close(void *base)
{
    hipError_t e = hipIpcCloseMemHandle(base);
    return e == hipSuccess ? NBR_SUCCESS : failed("hipIpcCloseMemHandle", e);
}

/* -------------------------------------------------------------- streams */

/* Batches in flight per stream before copy() waits for the oldest. */
constexpr int kRing = 64;

/* What an nbr_dev_stream_t points to here. A type of its own, not struct
 * nbr_dev_stream: the HIP and CUDA objects (and the emulation) would each
 * define that one tag differently in one program. */
struct gpu_stream {
    hipStream_t stream;
    int device;
    uint64_t issued;           /* last ticket handed out */
    uint64_t done;             /* every ticket <= done has completed */
    hipEvent_t events[kRing];  /* ticket t is recorded in events[t % kRing] */
};

gpu_stream *of(nbr_dev_stream_t *stream)
{
    return reinterpret_cast<gpu_stream *>(stream);
}

void stream_free(gpu_stream *s, int events)
{
    hipError_t e;
    for (int i = 0; i < events; i++)
        if ((e = hipEventDestroy(s->events[i])) != hipSuccess)
            failed("hipEventDestroy", e);
    if (s->stream && (e = hipStreamDestroy(s->stream)) != hipSuccess)
        failed("hipStreamDestroy", e);
    free(s);
}

int gpu_stream_create(nbr_dev_stream_t **stream)
{
    *stream = NULL;
    gpu_stream *s = (gpu_stream *)calloc(1, sizeof *s);
    if (!s)
        return NBR_ERR_NOMEM;
    hipError_t e = hipGetDevice(&s->device);
    if (e != hipSuccess) {
        free(s);
        return failed("hipGetDevice", e);
    }
    /* non-blocking: the copies must not wait for the application's work on
     * the legacy default stream */
    if ((e = hipStreamCreateWithFlags(&s->stream, hipStreamNonBlocking)) != hipSuccess) {
        s->stream = NULL;
        stream_free(s, 0);
        return failed("hipStreamCreateWithFlags", e);
    }
    for (int i = 0; i < kRing; i++)
        if ((e = hipEventCreateWithFlags(&s->events[i], hipEventDisableTiming)) != hipSuccess) {
            stream_free(s, i);
            return failed("hipEventCreateWithFlags", e);
        }
    *stream = reinterpret_cast<nbr_dev_stream_t *>(s);
    return NBR_SUCCESS;
}

void gpu_stream_destroy(nbr_dev_stream_t *stream)
{
    gpu_stream *s = of(stream);
    if (!s)
        return;
    device_scope scope;
    (void)scope.enter(s->device); /* logged; freeing goes on regardless */
    hipError_t e = hipStreamSynchronize(s->stream);
    if (e != hipSuccess)
        failed("hipStreamSynchronize", e);
    stream_free(s, kRing);
}

/* Advances s->done over completed events, oldest first; never blocks. */
int advance(gpu_stream *s)
{
    if (s->done == s->issued)
        return NBR_SUCCESS;
    /* the newest finished means all did: one query in the common case */
    hipError_t e = hipEventQuery(s->events[s->issued % kRing]);
    if (e == hipSuccess) {
        s->done = s->issued;
        return NBR_SUCCESS;
    }
    while (s->done < s->issued) {
        e = hipEventQuery(s->events[(s->done + 1) % kRing]);
        if (e == hipErrorNotReady)
            break;
        if (e != hipSuccess)
            return failed("hipEventQuery", e);
        s->done++;
    }
    /* "not ready" is an answer, not an error: keep it out of the
     * thread's last error, which copy() reads after a launch */
    (void)hipGetLastError();
    return NBR_SUCCESS;
}

/* Peer access is per device pair and per process: asked for once, the
 * answer kept (0 unknown, 1 usable, 2 not). */
#define NBR_GPU_MAX_PEERS 64
unsigned char peer_state[NBR_GPU_MAX_PEERS][NBR_GPU_MAX_PEERS];

/* Whether a kernel running on `device` can read and write ptr. Host memory
 * (pageable or pinned) goes through hipMemcpyAsync instead, which handles
 * every kind. */
bool kernel_can_reach(int device, const void *ptr)
{
    nbr_mem_kind_t kind;
    int where = -1;
    gpu_pointer_kind(ptr, &kind, &where);
    if (kind == NBR_MEM_MANAGED)
        return true;
    if (kind != NBR_MEM_DEVICE)
        return false;
    if (where == device)
        return true;
    if (where < 0 || where >= NBR_GPU_MAX_PEERS || device < 0 || device >= NBR_GPU_MAX_PEERS)
        return false;
    unsigned char state = __atomic_load_n(&peer_state[device][where], __ATOMIC_RELAXED);
    if (state == 0) {
        /* IPC mappings opened with lazy peer access are already usable
         * (the enable call then says so); other peers' memory becomes so */
        int can = 0;
        bool usable = false;
        if (hipDeviceCanAccessPeer(&can, device, where) == hipSuccess && can) {
            hipError_t e = hipDeviceEnablePeerAccess(where, 0);
            usable = e == hipSuccess || e == hipErrorPeerAccessAlreadyEnabled;
        }
        (void)hipGetLastError();
        state = usable ? 1 : 2;
        __atomic_store_n(&peer_state[device][where], state, __ATOMIC_RELAXED);
    }
    return state == 1;
}

int launch(gpu_stream *s, const batch_args &args, int count, size_t largest)
{
    size_t want = (largest + kBytesPerBlock - 1) / kBytesPerBlock;
    size_t cap = kMaxBlocks / (unsigned)count;
    if (cap < 4)
        cap = 4;
    dim3 grid((unsigned)(want < 1 ? 1 : want > cap ? cap : want), (unsigned)count);
    multi_copy<<<grid, dim3(kThreads), 0, s->stream>>>(args);
    hipError_t e = hipGetLastError();
    return e == hipSuccess ? NBR_SUCCESS : failed("multi_copy launch", e);
}

/* The copies of a batch are independent: kernel copies are gathered into
 * launches of up to kBatch, the others queued as they come. */
int gpu_copy(nbr_dev_stream_t *stream, const nbr_copy_t *copies, int n, uint64_t *ticket)
{
    gpu_stream *s = of(stream);
    if (!s || !ticket || n < 0 || (n > 0 && !copies))
        return NBR_ERR_ARG;
    for (int i = 0; i < n; i++)
        if (copies[i].bytes > 0 && (!copies[i].dst || !copies[i].src))
            return NBR_ERR_BUFFER;
    device_scope scope;
    int rc = scope.enter(s->device);
    if (rc != NBR_SUCCESS)
        return rc;
    hipError_t e;
    /* ring full: the oldest batch's event is needed again */
    if (s->issued - s->done >= kRing) {
        if ((e = hipEventSynchronize(s->events[(s->done + 1) % kRing])) != hipSuccess)
            return failed("hipEventSynchronize", e);
        s->done++;
    }

    batch_args args;
    int count = 0;
    size_t largest = 0;
    for (int i = 0; i < n; i++) {
        const nbr_copy_t *c = &copies[i];
        if (c->bytes == 0)
            continue;
        if (!kernel_can_reach(s->device, c->dst) || !kernel_can_reach(s->device, c->src)) {
            e = hipMemcpyAsync(c->dst, c->src, c->bytes, hipMemcpyDefault, s->stream);
            if (e != hipSuccess)
                return failed("hipMemcpyAsync", e);
            continue;
        }
        args.dst[count] = c->dst;
        args.src[count] = c->src;
        args.bytes[count] = c->bytes;
        largest = c->bytes > largest ? c->bytes : largest;
        if (++count == kBatch) {
            if ((rc = launch(s, args, count, largest)) != NBR_SUCCESS)
                return rc;
            count = 0;
            largest = 0;
        }
    }
    if (count > 0 && (rc = launch(s, args, count, largest)) != NBR_SUCCESS)
        return rc;
    if ((e = hipEventRecord(s->events[(s->issued + 1) % kRing], s->stream)) != hipSuccess)
        return failed("hipEventRecord", e);
    *ticket = ++s->issued;
    return NBR_SUCCESS;
}

int gpu_progress(nbr_dev_stream_t *stream, uint64_t *done)
{
    gpu_stream *s = of(stream);
    if (!s || !done)
        return NBR_ERR_ARG;
    device_scope scope;
    int rc = scope.enter(s->device);
    if (rc == NBR_SUCCESS)
        rc = advance(s);
    *done = s->done;
    return rc;
}

int gpu_synchronize(nbr_dev_stream_t *stream)
{
    gpu_stream *s = of(stream);
    if (!s)
        return NBR_ERR_ARG;
    device_scope scope;
    int rc = scope.enter(s->device);
    if (rc != NBR_SUCCESS)
        return rc;
    hipError_t e = hipStreamSynchronize(s->stream);
    if (e != hipSuccess)
        return failed("hipStreamSynchronize", e);
    s->done = s->issued;
    return NBR_SUCCESS;
}

const nbr_device_backend_t backend = {
    NBR_GPU_BACKEND_NAME, gpu_device_count, gpu_current_device, gpu_pointer_kind,
    gpu_mem_alloc,        gpu_mem_free,     gpu_host_alloc,     gpu_host_free,
    gpu_ipc_get,          gpu_ipc_open,     gpu_ipc_close,      gpu_stream_create,
    gpu_stream_destroy,   gpu_copy,         gpu_progress,       gpu_synchronize};

} // namespace

extern "C" const nbr_device_backend_t *NBR_GPU_BACKEND_FN(void)
{
    return &backend;
}
