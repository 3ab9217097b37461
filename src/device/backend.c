#include "device/backend.h"

#include "base/log.h"

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
static void choose(void)
{
    const char *name = getenv("NBR_DEVICE");
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
