#define _GNU_SOURCE
#include "exec/channel.h"

#include "base/grow.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <nbrcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#define MAX_MAPPINGS 64

/* Whether MPI takes device pointers: NBR_GPU_AWARE_MPI, else what the MPI
 * library says for this backend at run time (Open MPI's
 * MPIX_Query_*_support where its mpi-ext.h declares it; MPICH's
 * MPIX_GPU_query_support, which also says no where GPU support is off
 * through MPIR_CVAR_ENABLE_GPU), else no. The emulation says no, so CI
 * runs the staging path; NBR_GPU_AWARE_MPI=1 runs the other. */
static int query_gpu_aware(const nbr_device_backend_t *backend, int forced)
{
    if (forced >= 0)
        return forced;
#if defined(MPIX_GPU_SUPPORT_CUDA) && defined(MPIX_GPU_SUPPORT_HIP)
    int kind = strcmp(backend->name, "hip") == 0    ? MPIX_GPU_SUPPORT_HIP
               : strcmp(backend->name, "cuda") == 0 ? MPIX_GPU_SUPPORT_CUDA
                                                    : -1;
    int supported = 0;
    if (kind >= 0 && MPIX_GPU_query_support(kind, &supported) == MPI_SUCCESS)
        return supported != 0;
#endif
#if defined(OMPI_HAVE_MPI_EXT_ROCM) && OMPI_HAVE_MPI_EXT_ROCM
    if (strcmp(backend->name, "hip") == 0)
        return MPIX_Query_rocm_support();
#endif
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    if (strcmp(backend->name, "cuda") == 0)
        return MPIX_Query_cuda_support();
#endif
    return 0;
}

/* The ranks of this shared-memory node (and, with virtual nodes, of this
 * virtual node) form the channel; the rest is reached over MPI. */
static int make_channel_comm(MPI_Comm comm, const nbr_locality_t *locality, int rank,
                             MPI_Comm *channel)
{
    int rc = NBR_SUCCESS;
    MPI_Comm node = MPI_COMM_NULL;
    NBR_MPI_CHECK(MPI_Comm_split(comm, locality->node_of[rank], rank, &node));
    NBR_MPI_CHECK(MPI_Comm_split_type(node, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, channel));
out:
    if (node != MPI_COMM_NULL)
        MPI_Comm_free(&node);
    return rc;
}

static int map_segment(const char *name, int create, size_t bytes, void **base)
{
    int fd = shm_open(name, O_RDWR | (create ? O_CREAT | O_EXCL : 0), 0600);
    if (fd < 0) {
        NBR_ERROR("node channel: shm_open %s: %s", name, strerror(errno));
        return NBR_ERR_IO;
    }
    int err = create && ftruncate(fd, (off_t)bytes) != 0 ? errno : 0;
    void *p = err ? MAP_FAILED : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (!err && p == MAP_FAILED)
        err = errno;
    close(fd);
    if (err) {
        NBR_ERROR("node channel: %zu bytes of %s: %s", bytes, name, strerror(err));
        return NBR_ERR_IO;
    }
    *base = p;
    return NBR_SUCCESS;
}

/* The first rank of the channel creates the segment (zeroed by
 * ftruncate), the others map it by name, then the name is removed: no
 * file outlives the job, whatever happens later. */
static int open_rings(nbr_device_ctx_t *ctx, MPI_Comm channel, int comm_id)
{
    int rc = NBR_SUCCESS, local = NBR_SUCCESS;
    char name[96] = "";
    size_t n = (size_t)ctx->channel_size;
    ctx->rings_bytes = n * n * NBR_RING_SLOTS * sizeof(nbr_desc_t);
    void *base = NULL;
    if (ctx->channel_rank == 0) {
        static atomic_int segments;
        snprintf(name, sizeof name, "/nbrcoll-%ld-%d-%d", (long)getpid(), comm_id,
                 atomic_fetch_add(&segments, 1));
        local = map_segment(name, 1, ctx->rings_bytes, &base);
        if (local != NBR_SUCCESS)
            name[0] = '\0';
    }
    NBR_MPI_CHECK(MPI_Bcast(name, sizeof name, MPI_CHAR, 0, channel));
    if (ctx->channel_rank != 0)
        local = name[0] ? map_segment(name, 0, ctx->rings_bytes, &base) : NBR_ERR_IO;
    rc = nbr_agree(channel, local);
    if (ctx->channel_rank == 0 && name[0])
        shm_unlink(name);
    if (local == NBR_SUCCESS) {
        if (rc == NBR_SUCCESS)
            ctx->rings = base;
        else
            munmap(base, ctx->rings_bytes);
    }
out:
    return rc;
}

static int build_channel(nbr_device_ctx_t *ctx, MPI_Comm comm, int comm_id,
                         const nbr_locality_t *locality)
{
    int rc = NBR_SUCCESS, rank = 0, nranks = locality->nranks;
    MPI_Comm channel = MPI_COMM_NULL;
    int *members = NULL, me[2] = {0, (int)getpid()};
    NBR_MPI_CHECK(MPI_Comm_rank(comm, &rank));
    NBR_CHECK(make_channel_comm(comm, locality, rank, &channel));
    NBR_MPI_CHECK(MPI_Comm_rank(channel, &ctx->channel_rank));
    NBR_MPI_CHECK(MPI_Comm_size(channel, &ctx->channel_size));
    size_t n = (size_t)ctx->channel_size;
    members = malloc(2 * n * sizeof(int));
    ctx->channel_pid = malloc(n * sizeof(int));
    ctx->channel_of = malloc((size_t)nranks * sizeof(int));
    ctx->sent = calloc(n, sizeof(uint64_t));
    ctx->next = malloc(n * sizeof(uint64_t));
    ctx->taken = calloc(n, sizeof(uint32_t));
    if (!members || !ctx->channel_of || !ctx->channel_pid || !ctx->sent || !ctx->next ||
        !ctx->taken) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        ctx->next[i] = 1;
    me[0] = rank;
    NBR_MPI_CHECK(MPI_Allgather(me, 2, MPI_INT, members, 2, MPI_INT, channel));
    for (int r = 0; r < nranks; r++)
        ctx->channel_of[r] = -1;
    for (size_t i = 0; i < n; i++) {
        ctx->channel_of[members[2 * i]] = (int)i;
        ctx->channel_pid[i] = members[2 * i + 1];
    }
    rc = open_rings(ctx, channel, comm_id);
out:
    free(members);
    if (channel != MPI_COMM_NULL)
        MPI_Comm_free(&channel);
    return rc;
}

int nbr_device_ctx_create(MPI_Comm comm, int comm_id, const nbr_exec_options_t *options,
                          const nbr_locality_t *locality, nbr_device_ctx_t **out)
{
    const nbr_device_backend_t *backend = NULL;
    *out = NULL;
    int rc = nbr_device_current(&backend);
    int active = rc == NBR_SUCCESS && backend && options->memory != NBR_MEMORY_HOST;
    int aware = active ? query_gpu_aware(backend, options->gpu_aware_mpi) : 0;
    /* Every rank must make the same choice: one MIN and one MAX. */
    int mine[5] = {rc, active, aware, options->staging_chunk, -active};
    int low[5], high[5];
    int mrc = MPI_Allreduce(mine, low, 5, MPI_INT, MPI_MIN, comm);
    if (mrc == MPI_SUCCESS)
        mrc = MPI_Allreduce(mine, high, 5, MPI_INT, MPI_MAX, comm);
    if (mrc != MPI_SUCCESS)
        return nbr_mpi_failed("MPI_Allreduce", mrc);
    if (low[0] != NBR_SUCCESS)
        return low[0];
    if (low[1] != high[1] || low[2] != high[2] || low[3] != high[3]) {
        NBR_ERROR("ranks disagree on the device layer (NBR_DEVICE, nbr_memory, "
                  "NBR_GPU_AWARE_MPI or nbr_staging_chunk)");
        return NBR_ERR_INFO;
    }
    if (!active)
        return NBR_SUCCESS;
    nbr_device_ctx_t *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return nbr_agree(comm, NBR_ERR_NOMEM);
    ctx->backend = backend;
    ctx->gpu_aware = aware;
    ctx->chunk_bytes = (size_t)options->staging_chunk;
    ctx->memory = options->memory;
    rc = backend->stream_create(&ctx->stream);
    rc = nbr_agree(comm, rc);
    if (rc == NBR_SUCCESS)
        rc = nbr_agree(comm, build_channel(ctx, comm, comm_id, locality));
    if (rc != NBR_SUCCESS) {
        nbr_device_ctx_free(ctx);
        return rc;
    }
    NBR_INFO("device layer: backend %s, %s MPI, %d ranks on the node channel, "
             "staging chunks of %zu bytes", backend->name, aware ? "GPU-aware" : "host-staged",
             ctx->channel_size, ctx->chunk_bytes);
    *out = ctx;
    return NBR_SUCCESS;
}

void nbr_device_ctx_free(nbr_device_ctx_t *ctx)
{
    if (!ctx)
        return;
    if (ctx->stream) {
        ctx->backend->synchronize(ctx->stream);
        ctx->backend->stream_destroy(ctx->stream);
    }
    for (int i = 0; i < ctx->num_mappings; i++)
        nbr_ipc_unmap(ctx->backend, (uint64_t)ctx->channel_pid[ctx->mappings[i].peer],
                      ctx->mappings[i].id);
    if (ctx->rings)
        munmap(ctx->rings, ctx->rings_bytes);
    free(ctx->mappings);
    free(ctx->channel_of);
    free(ctx->channel_pid);
    free(ctx->sent);
    free(ctx->next);
    free(ctx->taken);
    free(ctx);
}

int nbr_device_poll(nbr_device_ctx_t *ctx)
{
    return ctx->backend->progress(ctx->stream, &ctx->copies_done);
}

int nbr_device_map(nbr_device_ctx_t *ctx, int peer, const nbr_ipc_source_t *source,
                   void **base)
{
    int rc = NBR_SUCCESS, oldest = -1;
    for (int i = 0; i < ctx->num_mappings; i++) {
        nbr_ipc_mapping_t *m = &ctx->mappings[i];
        if (m->peer == peer && m->id == source->id) {
            *base = m->base;
            m->last_use = ++ctx->map_clock;
            return NBR_SUCCESS;
        }
        if (oldest < 0 || m->last_use < ctx->mappings[oldest].last_use)
            oldest = i;
    }
    if (ctx->num_mappings >= MAX_MAPPINGS) {
        /* close the least recently used, once no queued copy reads it */
        NBR_CHECK(ctx->backend->synchronize(ctx->stream));
        const nbr_ipc_mapping_t *old = &ctx->mappings[oldest];
        NBR_CHECK(nbr_ipc_unmap(ctx->backend, (uint64_t)ctx->channel_pid[old->peer], old->id));
        ctx->mappings[oldest] = ctx->mappings[--ctx->num_mappings];
    }
    NBR_CHECK(nbr_grow((void **)&ctx->mappings, &ctx->mappings_capacity,
                       ctx->num_mappings + 1, 8, sizeof(nbr_ipc_mapping_t)));
    NBR_CHECK(nbr_ipc_map(ctx->backend, (uint64_t)ctx->channel_pid[peer], source, base));
    ctx->mappings[ctx->num_mappings++] = (nbr_ipc_mapping_t){peer, source->id, *base,
                                                             ++ctx->map_clock};
out:
    return rc;
}
