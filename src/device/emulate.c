/* The CPU emulation backend (NBR_DEVICE=emulate). "Device memory" is one
 * POSIX shared-memory segment per allocation, so another process of the
 * node can map it from a handle, as with hipIpcOpenMemHandle. As on a GPU,
 * the CPU cannot touch it: the address handed out is a view of the segment
 * without access rights (a load or store there faults, as MPI_Pack or a
 * CPU loop on real device memory does), and only this backend's copies
 * reach the bytes, through a second, private view. Only where the user
 * says MPI is GPU-aware (NBR_GPU_AWARE_MPI=1) may the CPU touch it: MPI
 * reads and writes it then, and in the emulation MPI runs on the CPU.
 * Copies are memcpy, but deferred: a batch runs on a later progress call,
 * never inside copy(), so the device protocol's waits for copies to
 * finish are exercised as on a GPU. */
#define _GNU_SOURCE
#include "device/backend.h"

#include "base/grow.h"
#include "base/log.h"
#include "base/settings.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <nbrcoll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define EMU_MAGIC 0x4e42524555ULL /* "NBREU" */

/* What an emulated IPC handle holds. */
typedef struct emu_handle {
    uint64_t magic;
    uint64_t pid_ns; /* the owner's pid namespace: pids mean something only in it */
    uint64_t pid;
    uint64_t id;
    uint64_t bytes;
    uint64_t owner_base; /* the "device" address in the owner */
} emu_handle_t;

/* One mapping in this process: an allocation of ours (owned) or a peer's
 * segment opened from a handle. base is the "device" address, without
 * access rights; bytes are read and written through view. */
typedef struct emu_mapping {
    char *base;
    char *view;
    size_t bytes;
    uint64_t pid_ns, pid, id; /* the segment's owner and number */
    uint64_t owner_base;      /* base, in the owner */
    int owned;
} emu_mapping_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static emu_mapping_t *mappings;
static int num_mappings, mappings_capacity;
static uint64_t next_id = 1;
static uint64_t own_ns; /* pid_namespace(), taken at the first allocation */
static pthread_once_t first_allocation = PTHREAD_ONCE_INIT;

static void segment_name(char *name, size_t len, uint64_t pid_ns, uint64_t pid, uint64_t id)
{
    snprintf(name, len, "/nbrcoll-emu-%llu-%llu-%llu", (unsigned long long)pid_ns,
             (unsigned long long)pid, (unsigned long long)id);
}

/* This process's pid namespace (the inode of /proc/self/ns/pid), 0 unknown. */
static uint64_t pid_namespace(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Maps a segment twice: the device address (no access, unless MPI is
 * taken as GPU-aware) and the view. */
static int map_segment(int fd, size_t bytes, char **base, char **view)
{
    const char *aware = nbr_setting_env_text(NBR_SETTING_GPU_AWARE_MPI);
    int cpu = aware && strcmp(aware, "1") == 0 ? PROT_READ | PROT_WRITE : PROT_NONE;
    void *b = mmap(NULL, bytes, cpu, MAP_SHARED, fd, 0);
    if (b == MAP_FAILED)
        return errno;
    void *v = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (v == MAP_FAILED) {
        int err = errno;
        munmap(b, bytes);
        return err;
    }
    *base = b;
    *view = v;
    return 0;
}

static void unmap_segment(const emu_mapping_t *m)
{
    munmap(m->base, m->bytes);
    munmap(m->view, m->bytes);
}

static int add_mapping(const emu_mapping_t *m)
{
    pthread_mutex_lock(&lock);
    int rc = nbr_grow((void **)&mappings, &mappings_capacity, num_mappings + 1, 1,
                      sizeof(*mappings));
    if (rc == NBR_SUCCESS)
        mappings[num_mappings++] = *m;
    pthread_mutex_unlock(&lock);
    return rc;
}

/* The mapping whose device addresses hold p (only allocations of ours
 * when owned), or -1. Caller holds the lock. */
static int containing(const void *p, int owned)
{
    const char *c = p;
    for (int i = 0; i < num_mappings; i++)
        if ((!owned || mappings[i].owned) && c >= mappings[i].base &&
            c < mappings[i].base + mappings[i].bytes)
            return i;
    return -1;
}

/* Where the CPU reaches the bytes at p: its view for a device address,
 * p itself for host memory. */
static void *reachable(const void *p)
{
    pthread_mutex_lock(&lock);
    int i = containing(p, 0);
    void *at = i < 0 ? (void *)p : mappings[i].view + ((const char *)p - mappings[i].base);
    pthread_mutex_unlock(&lock);
    return at;
}

/* Removes the mapping at base; *found = its entry. Caller unmaps. */
static int take_mapping(void *base, int owned, emu_mapping_t *found)
{
    int rc = NBR_ERR_ARG;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < num_mappings; i++)
        if (mappings[i].base == base && mappings[i].owned == owned) {
            *found = mappings[i];
            mappings[i] = mappings[--num_mappings];
            rc = NBR_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&lock);
    return rc;
}

static int emu_device_count(int *count)
{
    *count = 1;
    return NBR_SUCCESS;
}

static int emu_current_device(int *device, char *pci_bus_id, size_t len)
{
    *device = 0;
    if (len > 0)
        pci_bus_id[0] = '\0';
    return NBR_SUCCESS;
}

static int emu_pointer_kind(const void *ptr, nbr_mem_kind_t *kind, int *device)
{
    pthread_mutex_lock(&lock);
    int device_memory = containing(ptr, 0) >= 0;
    pthread_mutex_unlock(&lock);
    *kind = device_memory ? NBR_MEM_DEVICE : NBR_MEM_HOST;
    *device = device_memory ? 0 : -1;
    return NBR_SUCCESS;
}

/* Segments outlive a process that is killed (a test past its timeout, the
 * OOM killer): each process removes, once, those whose owner is gone, so
 * that /dev/shm does not fill up run after run. Only owners of its own pid
 * namespace are judged: /dev/shm may be shared with other namespaces,
 * whose pids say nothing here. */
static void remove_orphaned_segments(uint64_t my_ns)
{
    DIR *dir = my_ns ? opendir("/dev/shm") : NULL;
    if (!dir)
        return;
    for (struct dirent *entry; (entry = readdir(dir)) != NULL;) {
        unsigned long long ns = 0, pid = 0, id = 0;
        char name[300];
        if (sscanf(entry->d_name, "nbrcoll-emu-%llu-%llu-%llu", &ns, &pid, &id) != 3 ||
            ns != my_ns || pid == 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        snprintf(name, sizeof name, "/%s", entry->d_name);
        if (shm_unlink(name) == 0)
            NBR_DEBUG("emulated device: removed %s, left by ended process %llu", name, pid);
    }
    closedir(dir);
}

static void prepare_process(void)
{
    own_ns = pid_namespace();
    remove_orphaned_segments(own_ns);
}

static int emu_mem_alloc(void **ptr, size_t bytes)
{
    char name[96];
    pthread_mutex_lock(&lock);
    uint64_t id = next_id++;
    pthread_mutex_unlock(&lock);
    pthread_once(&first_allocation, prepare_process);
    segment_name(name, sizeof name, own_ns, (uint64_t)getpid(), id);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        NBR_ERROR("emulated device: shm_open %s: %s", name, strerror(errno));
        return NBR_ERR_DEVICE;
    }
    /* Reserve the pages now: a full /dev/shm must fail here, not fault later. */
    emu_mapping_t m = {.bytes = bytes, .pid_ns = own_ns, .pid = (uint64_t)getpid(), .id = id,
                       .owned = 1};
    int err = posix_fallocate(fd, 0, (off_t)bytes);
    if (!err)
        err = map_segment(fd, bytes, &m.base, &m.view);
    close(fd);
    if (err) {
        shm_unlink(name);
        NBR_ERROR("emulated device: %zu bytes in /dev/shm: %s", bytes, strerror(err));
        return NBR_ERR_NOMEM;
    }
    m.owner_base = (uint64_t)(uintptr_t)m.base;
    int rc = add_mapping(&m);
    if (rc != NBR_SUCCESS) {
        unmap_segment(&m);
        shm_unlink(name);
        return rc;
    }
    *ptr = m.base;
    return NBR_SUCCESS;
}

static int emu_mem_free(void *ptr)
{
    emu_mapping_t m;
    if (take_mapping(ptr, 1, &m) != NBR_SUCCESS) {
        NBR_ERROR("nbr_mem_free: %p was not allocated by nbr_mem_alloc", ptr);
        return NBR_ERR_ARG;
    }
    char name[96];
    segment_name(name, sizeof name, own_ns, (uint64_t)getpid(), m.id);
    shm_unlink(name); /* peers that mapped it keep their mapping, as with IPC */
    unmap_segment(&m);
    return NBR_SUCCESS;
}

static int emu_host_alloc(void **ptr, size_t bytes)
{
    *ptr = malloc(bytes ? bytes : 1);
    return *ptr ? NBR_SUCCESS : NBR_ERR_NOMEM;
}

static int emu_host_free(void *ptr)
{
    free(ptr);
    return NBR_SUCCESS;
}

static int emu_ipc_get(const void *ptr, nbr_ipc_handle_t *handle, size_t *offset, size_t *bytes,
                       uint64_t *id)
{
    int rc = NBR_ERR_ARG;
    memset(handle, 0, sizeof(*handle));
    pthread_mutex_lock(&lock);
    int i = containing(ptr, 1);
    if (i >= 0) {
        const emu_mapping_t *m = &mappings[i];
        emu_handle_t h = {EMU_MAGIC, own_ns, (uint64_t)getpid(), m->id, m->bytes,
                          m->owner_base};
        memcpy(handle->bytes, &h, sizeof h);
        *offset = (size_t)((const char *)ptr - m->base);
        *bytes = m->bytes;
        *id = m->id;
        rc = NBR_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    if (rc != NBR_SUCCESS)
        NBR_ERROR("emulated device: %p is not inside an nbr_mem_alloc allocation", ptr);
    return rc;
}

static int emu_ipc_open(const nbr_ipc_handle_t *handle, void **base)
{
    emu_handle_t h;
    char name[96];
    memcpy(&h, handle->bytes, sizeof h);
    if (h.magic != EMU_MAGIC) {
        NBR_ERROR("emulated device: not an emulated IPC handle");
        return NBR_ERR_DEVICE;
    }
    /* as the GPU runtimes: an allocation is mapped once per process, never
     * by the process that made it, and not while a mapping of a freed one
     * at the same addresses of the owner is still open */
    int mapped = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < num_mappings; i++)
        mapped |= mappings[i].pid_ns == h.pid_ns && mappings[i].pid == h.pid &&
                  mappings[i].owner_base < h.owner_base + h.bytes &&
                  h.owner_base < mappings[i].owner_base + mappings[i].bytes;
    pthread_mutex_unlock(&lock);
    if (mapped) {
        NBR_ERROR("emulated device: IPC handle already mapped in this process%s",
                  h.pid == (uint64_t)getpid() && h.pid_ns == own_ns ? " (it is its own)" : "");
        return NBR_ERR_DEVICE;
    }
    segment_name(name, sizeof name, h.pid_ns, h.pid, h.id);
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        NBR_ERROR("emulated device: open %s: %s (freed by its owner?)", name, strerror(errno));
        return NBR_ERR_DEVICE;
    }
    emu_mapping_t m = {.bytes = h.bytes, .pid_ns = h.pid_ns, .pid = h.pid, .id = h.id,
                       .owner_base = h.owner_base, .owned = 0};
    int err = map_segment(fd, h.bytes, &m.base, &m.view);
    close(fd);
    if (err) {
        NBR_ERROR("emulated device: map %s: %s", name, strerror(err));
        return NBR_ERR_DEVICE;
    }
    int rc = add_mapping(&m);
    if (rc != NBR_SUCCESS) {
        unmap_segment(&m);
        return rc;
    }
    *base = m.base;
    return NBR_SUCCESS;
}

static int emu_ipc_close(void *base)
{
    emu_mapping_t m;
    if (take_mapping(base, 0, &m) != NBR_SUCCESS)
        return NBR_ERR_ARG;
    unmap_segment(&m);
    return NBR_SUCCESS;
}

/* A stream: batches queued in order, run one per progress call. */
struct nbr_dev_stream {
    nbr_copy_t *copies;
    int num_copies, copies_capacity;
    int *batch_end; /* copies[batch_end[b-1] .. batch_end[b]) is batch b */
    int batches_capacity;
    uint64_t issued, completed;
};

static int emu_stream_create(nbr_dev_stream_t **stream)
{
    *stream = calloc(1, sizeof(**stream));
    return *stream ? NBR_SUCCESS : NBR_ERR_NOMEM;
}

static void emu_stream_destroy(nbr_dev_stream_t *stream)
{
    if (!stream)
        return;
    free(stream->copies);
    free(stream->batch_end);
    free(stream);
}

static int emu_copy(nbr_dev_stream_t *s, const nbr_copy_t *copies, int n, uint64_t *ticket)
{
    int pending = (int)(s->issued - s->completed);
    int rc = nbr_grow((void **)&s->copies, &s->copies_capacity, s->num_copies + n + 1, 1,
                      sizeof(nbr_copy_t));
    if (rc == NBR_SUCCESS)
        rc = nbr_grow((void **)&s->batch_end, &s->batches_capacity, pending + 2, 1, sizeof(int));
    if (rc != NBR_SUCCESS)
        return rc;
    if (n > 0) /* an empty batch may come with no array */
        memcpy(s->copies + s->num_copies, copies, (size_t)n * sizeof(nbr_copy_t));
    s->num_copies += n;
    s->batch_end[pending] = s->num_copies;
    *ticket = ++s->issued;
    return NBR_SUCCESS;
}

/* Runs the oldest queued batch. */
static void run_batch(nbr_dev_stream_t *s)
{
    int pending = (int)(s->issued - s->completed);
    int end = s->batch_end[0];
    for (int i = 0; i < end; i++)
        if (s->copies[i].bytes > 0)
            memcpy(reachable(s->copies[i].dst), reachable(s->copies[i].src),
                   s->copies[i].bytes);
    memmove(s->copies, s->copies + end, (size_t)(s->num_copies - end) * sizeof(nbr_copy_t));
    s->num_copies -= end;
    for (int b = 1; b < pending; b++)
        s->batch_end[b - 1] = s->batch_end[b] - end;
    s->completed++;
}

static int emu_progress(nbr_dev_stream_t *s, uint64_t *done)
{
    if (s->completed < s->issued)
        run_batch(s);
    *done = s->completed;
    return NBR_SUCCESS;
}

static int emu_synchronize(nbr_dev_stream_t *s)
{
    while (s->completed < s->issued)
        run_batch(s);
    return NBR_SUCCESS;
}

static const nbr_device_backend_t emulate = {
    .name = "emulate",
    .device_count = emu_device_count,
    .current_device = emu_current_device,
    .pointer_kind = emu_pointer_kind,
    .mem_alloc = emu_mem_alloc,
    .mem_free = emu_mem_free,
    .host_alloc = emu_host_alloc,
    .host_free = emu_host_free,
    .ipc_get = emu_ipc_get,
    .ipc_open = emu_ipc_open,
    .ipc_close = emu_ipc_close,
    .stream_create = emu_stream_create,
    .stream_destroy = emu_stream_destroy,
    .copy = emu_copy,
    .progress = emu_progress,
    .synchronize = emu_synchronize,
};

const nbr_device_backend_t *nbr_device_backend_emulate(void)
{
    return &emulate;
}
