#include "device/backend.h"

#include "base/grow.h"
#include "base/log.h"
#include "base/settings.h"

#include <nbrcoll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

const char *nbr_mem_kind_name(nbr_mem_kind_t kind)
{
    switch (kind) {
    case NBR_MEM_HOST: return "host";
    case NBR_MEM_DEVICE: return "device";
    case NBR_MEM_MANAGED: return "managed";
    }
    return "unknown";
}

/* Backends not compiled into this build. */
#ifndef NBR_HAVE_HIP_BACKEND
const nbr_device_backend_t *nbr_device_backend_hip(void)
{
    return NULL;
}
#endif
#ifndef NBR_HAVE_CUDA_BACKEND
const nbr_device_backend_t *nbr_device_backend_cuda(void)
{
    return NULL;
}
#endif

/* ---------------------------------------------- process-wide IPC mappings */

typedef struct shared_mapping {
    const nbr_device_backend_t *backend;
    uint64_t owner_pid;
    nbr_ipc_source_t source;
    void *base;
    long users;
    int closed; /* found stale and closed; kept until its users unmap it */
} shared_mapping_t;

static pthread_mutex_t mappings_lock = PTHREAD_MUTEX_INITIALIZER;
static shared_mapping_t *mappings;
static int num_mappings, mappings_capacity;

/* Whether m maps another allocation of the same owner over s's range. */
static int stale_under(const shared_mapping_t *m, uint64_t owner_pid, const nbr_ipc_source_t *s)
{
    const nbr_ipc_source_t *o = &m->source;
    return m->owner_pid == owner_pid && o->id != s->id &&
           o->owner_base < s->owner_base + s->bytes && s->owner_base < o->owner_base + o->bytes;
}

int nbr_ipc_map(const nbr_device_backend_t *backend, uint64_t owner_pid,
                const nbr_ipc_source_t *source, void **base)
{
    int rc = NBR_SUCCESS;
    *base = NULL;
    pthread_mutex_lock(&mappings_lock);
    for (int i = 0; i < num_mappings; i++) {
        shared_mapping_t *m = &mappings[i];
        if (m->backend != backend || m->closed)
            continue;
        if (m->owner_pid == owner_pid && m->source.id == source->id) {
            m->users++;
            *base = m->base;
            goto out;
        }
        if (stale_under(m, owner_pid, source)) {
            NBR_DEBUG("IPC: closing the stale mapping of pid %llu's freed allocation %llu",
                      (unsigned long long)owner_pid, (unsigned long long)m->source.id);
            m->closed = 1;
            (void)backend->ipc_close(m->base); /* logged by the backend */
        }
    }
    rc = nbr_grow((void **)&mappings, &mappings_capacity, num_mappings + 1, 8,
                  sizeof(*mappings));
    if (rc == NBR_SUCCESS)
        rc = backend->ipc_open(&source->handle, base);
    if (rc == NBR_SUCCESS)
        mappings[num_mappings++] = (shared_mapping_t){backend, owner_pid, *source, *base, 1, 0};
out:
    pthread_mutex_unlock(&mappings_lock);
    return rc;
}

int nbr_ipc_unmap(const nbr_device_backend_t *backend, uint64_t owner_pid, uint64_t id)
{
    int rc = NBR_ERR_ARG;
    pthread_mutex_lock(&mappings_lock);
    for (int i = 0; i < num_mappings; i++) {
        shared_mapping_t *m = &mappings[i];
        if (m->backend != backend || m->owner_pid != owner_pid || m->source.id != id)
            continue;
        rc = NBR_SUCCESS;
        if (--m->users == 0) {
            if (!m->closed)
                rc = backend->ipc_close(m->base);
            *m = mappings[--num_mappings];
        }
        break;
    }
    pthread_mutex_unlock(&mappings_lock);
    return rc;
}

/* ------------------------------------------------ fault injection (tests) */

static const nbr_device_backend_t *wrapped; /* what the counting layer calls */
static nbr_device_backend_t counting;
static long fault_counts[NBR_DEVICE_NUM_CALLS];
static int fault_call = -1, fault_fired;
static long fault_nth;

void nbr_device_fault_arm(nbr_device_call_t call, long nth)
{
    memset(fault_counts, 0, sizeof fault_counts);
    fault_call = nth > 0 ? (int)call : -1;
    fault_nth = nth;
    fault_fired = 0;
}

long nbr_device_fault_calls(nbr_device_call_t call)
{
    return call >= 0 && call < NBR_DEVICE_NUM_CALLS ? fault_counts[call] : 0;
}

int nbr_device_fault_fired(void)
{
    return fault_fired;
}

static int fails(nbr_device_call_t call)
{
    if (++fault_counts[call] != fault_nth || (int)call != fault_call)
        return 0;
    fault_fired = 1;
    NBR_ERROR("device: injected failure of call %ld of kind %d", fault_nth, (int)call);
    return 1;
}

static int f_pointer_kind(const void *ptr, nbr_mem_kind_t *kind, int *device)
{
    return fails(NBR_DEVICE_CALL_POINTER_KIND) ? NBR_ERR_DEVICE
                                               : wrapped->pointer_kind(ptr, kind, device);
}
static int f_mem_alloc(void **ptr, size_t bytes)
{
    return fails(NBR_DEVICE_CALL_MEM_ALLOC) ? NBR_ERR_DEVICE : wrapped->mem_alloc(ptr, bytes);
}
static int f_host_alloc(void **ptr, size_t bytes)
{
    return fails(NBR_DEVICE_CALL_HOST_ALLOC) ? NBR_ERR_DEVICE : wrapped->host_alloc(ptr, bytes);
}
static int f_ipc_get(const void *ptr, nbr_ipc_handle_t *handle, size_t *offset, size_t *bytes,
                     uint64_t *id)
{
    return fails(NBR_DEVICE_CALL_IPC_GET) ? NBR_ERR_DEVICE
                                          : wrapped->ipc_get(ptr, handle, offset, bytes, id);
}
static int f_ipc_open(const nbr_ipc_handle_t *handle, void **base)
{
    return fails(NBR_DEVICE_CALL_IPC_OPEN) ? NBR_ERR_DEVICE : wrapped->ipc_open(handle, base);
}
static int f_stream_create(nbr_dev_stream_t **stream)
{
    return fails(NBR_DEVICE_CALL_STREAM_CREATE) ? NBR_ERR_DEVICE : wrapped->stream_create(stream);
}
static int f_copy(nbr_dev_stream_t *stream, const nbr_copy_t *copies, int n, uint64_t *ticket)
{
    return fails(NBR_DEVICE_CALL_COPY) ? NBR_ERR_DEVICE : wrapped->copy(stream, copies, n, ticket);
}
static int f_progress(nbr_dev_stream_t *stream, uint64_t *done)
{
    return fails(NBR_DEVICE_CALL_PROGRESS) ? NBR_ERR_DEVICE : wrapped->progress(stream, done);
}
static int f_synchronize(nbr_dev_stream_t *stream)
{
    return fails(NBR_DEVICE_CALL_SYNCHRONIZE) ? NBR_ERR_DEVICE : wrapped->synchronize(stream);
}

/* The counting layer over backend (NBR_DEVICE_FAULTS=1). */
static const nbr_device_backend_t *with_faults(const nbr_device_backend_t *backend)
{
    const char *on = nbr_setting_env_text(NBR_SETTING_DEVICE_FAULTS);
    if (!backend || !on || strcmp(on, "1") != 0)
        return backend;
    wrapped = backend;
    counting = *backend;
    counting.pointer_kind = f_pointer_kind;
    counting.mem_alloc = f_mem_alloc;
    counting.host_alloc = f_host_alloc;
    counting.ipc_get = f_ipc_get;
    counting.ipc_open = f_ipc_open;
    counting.stream_create = f_stream_create;
    counting.copy = f_copy;
    counting.progress = f_progress;
    counting.synchronize = f_synchronize;
    return &counting;
}

static pthread_once_t choice_once = PTHREAD_ONCE_INIT;
static const nbr_device_backend_t *chosen;
static int choice_status = NBR_SUCCESS;

static int usable(const nbr_device_backend_t *backend)
{
    int count = 0;
    return backend && backend->device_count(&count) == NBR_SUCCESS && count > 0;
}

/* NBR_DEVICE, read once: the runtime a process uses cannot change under
 * buffers it already allocated. */
static void choose_backend(void)
{
    const char *name = nbr_setting_env_text(NBR_SETTING_DEVICE);
    if (!name || !*name)
        name = "auto";
    const nbr_device_backend_t *named = NULL;
    if (strcmp(name, "off") == 0) {
        return;
    } else if (strcmp(name, "auto") == 0) {
        if (usable(nbr_device_backend_hip()))
            chosen = nbr_device_backend_hip();
        else if (usable(nbr_device_backend_cuda()))
            chosen = nbr_device_backend_cuda();
        NBR_INFO("NBR_DEVICE=auto: %s", chosen ? chosen->name : "no GPU, host buffers only");
        return;
    } else if (strcmp(name, "emulate") == 0) {
        named = nbr_device_backend_emulate();
    } else if (strcmp(name, "hip") == 0) {
        named = nbr_device_backend_hip();
    } else if (strcmp(name, "cuda") == 0) {
        named = nbr_device_backend_cuda();
    } else {
        NBR_ERROR("NBR_DEVICE='%s': expected auto, hip, cuda, emulate or off", name);
        choice_status = NBR_ERR_INFO;
        return;
    }
    if (!named) {
        NBR_ERROR("NBR_DEVICE=%s: this build has no %s backend", name, name);
        choice_status = NBR_ERR_UNSUPPORTED;
    } else if (!usable(named)) {
        NBR_ERROR("NBR_DEVICE=%s: no device found", name);
        choice_status = NBR_ERR_UNSUPPORTED;
    } else {
        chosen = named;
    }
}

static void choose(void)
{
    choose_backend();
    chosen = with_faults(chosen);
}

int nbr_device_current(const nbr_device_backend_t **backend)
{
    *backend = NULL;
    if (pthread_once(&choice_once, choose) != 0)
        return NBR_ERR_INTERNAL;
    *backend = chosen;
    return choice_status;
}

void nbr_device_current_pci(char *pci_bus_id, size_t len)
{
    const nbr_device_backend_t *backend = NULL;
    int device = -1;
    if (len > 0)
        pci_bus_id[0] = '\0';
    if (nbr_device_current(&backend) != NBR_SUCCESS || !backend ||
        backend->current_device(&device, pci_bus_id, len) != NBR_SUCCESS) {
        if (len > 0)
            pci_bus_id[0] = '\0';
    }
}

/* The backend the memory helpers use; NBR_ERR_UNSUPPORTED (logged as the
 * caller's) without one. */
static int backend_for(const char *caller, const nbr_device_backend_t **backend)
{
    int rc = nbr_device_current(backend);
    if (rc == NBR_SUCCESS && !*backend) {
        NBR_ERROR("%s: no device in use (NBR_DEVICE=off, or no GPU found)", caller);
        rc = NBR_ERR_UNSUPPORTED;
    }
    return rc;
}

int nbr_mem_alloc(void **ptr, size_t bytes)
{
    const nbr_device_backend_t *backend = NULL;
    if (!ptr)
        return NBR_ERR_ARG;
    *ptr = NULL;
    int rc = backend_for("nbr_mem_alloc", &backend);
    if (rc != NBR_SUCCESS)
        return rc;
    if (bytes == 0)
        return NBR_SUCCESS; /* as MPI_Alloc_mem: nothing to hand out */
    return backend->mem_alloc(ptr, bytes);
}

int nbr_mem_free(void *ptr)
{
    const nbr_device_backend_t *backend = NULL;
    if (!ptr)
        return NBR_SUCCESS;
    int rc = nbr_device_current(&backend);
    if (rc != NBR_SUCCESS)
        return rc;
    if (!backend)
        return NBR_ERR_ARG; /* nothing can have come from nbr_mem_alloc */
    return backend->mem_free(ptr);
}

int nbr_mem_copy(void *dst, const void *src, size_t bytes)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static nbr_dev_stream_t *stream; /* one per process, made on first use */
    const nbr_device_backend_t *backend = NULL;
    if (bytes == 0)
        return NBR_SUCCESS;
    if (!dst || !src)
        return NBR_ERR_BUFFER;
    int rc = backend_for("nbr_mem_copy", &backend);
    if (rc != NBR_SUCCESS)
        return rc;
    nbr_copy_t copy = {dst, src, bytes};
    uint64_t ticket = 0;
    pthread_mutex_lock(&lock);
    if (!stream)
        rc = backend->stream_create(&stream);
    if (rc == NBR_SUCCESS)
        rc = backend->copy(stream, &copy, 1, &ticket);
    if (rc == NBR_SUCCESS)
        rc = backend->synchronize(stream);
    pthread_mutex_unlock(&lock);
    return rc;
}
