/* The public entry points of nbrcoll.h: argument checks, then the comm
 * state (comm.c) and requests (request.c) do the work. */
#include "front/comm.h"
#include "front/discover.h"
#include "front/library.h"
#include "alg/select.h"
#include "base/engine.h"
#include "base/log.h"
#include "front/request.h"
#include "front/select.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- communicators */

/* MPI accepts NULL arrays for zero degrees; some implementations check for
 * non-NULL regardless, so hand them a harmless address. */
static const int *nonnull(const int *array)
{
    static const int empty = 0;
    return array ? array : &empty;
}

static int check_rank_list(const int *ranks, int n, int nranks)
{
    if (n < 0)
        return NBR_ERR_COUNT;
    if (n > 0 && !ranks)
        return NBR_ERR_ARG;
    for (int i = 0; i < n; i++)
        if (ranks[i] < 0 || ranks[i] >= nranks)
            return NBR_ERR_RANK;
    return NBR_SUCCESS;
}

static int is_weight_sentinel(const int *weights)
{
    return weights == MPI_UNWEIGHTED || weights == MPI_WEIGHTS_EMPTY;
}


/* After MPI made the communicator: set nbrcoll up on it, or undo it.
 * The communicators nbrcoll makes come from the PMPI_ names: with the
 * drop-in loaded, the MPI_ ones would land in it, and it would call back
 * into nbrcoll to set them up a second time. The drop-in sits above this
 * API, never below it (scripts/check-layers.sh). */
static int finish_create(MPI_Info info, MPI_Comm *comm_dist_graph)
{
    nbr_comm_t *state = NULL;
    int rc = nbr_comm_get(*comm_dist_graph, info, &state);
    if (rc != NBR_SUCCESS)
        MPI_Comm_free(comm_dist_graph);
    return rc;
}

int nbr_dist_graph_create_adjacent(MPI_Comm comm_old, int indegree,
                                   const int sources[], const int sourceweights[],
                                   int outdegree, const int destinations[],
                                   const int destweights[], MPI_Info info,
                                   int reorder, MPI_Comm *comm_dist_graph)
{
    int rc = nbr_check_comm(comm_old), nranks = 0;
    if (rc != NBR_SUCCESS)
        return rc;
    if (!comm_dist_graph)
        return NBR_ERR_ARG;
    *comm_dist_graph = MPI_COMM_NULL;
    NBR_MPI_CHECK(MPI_Comm_size(comm_old, &nranks));
    int local = check_rank_list(sources, indegree, nranks);
    if (local == NBR_SUCCESS)
        local = check_rank_list(destinations, outdegree, nranks);
    if (local == NBR_SUCCESS && ((indegree > 0 && !sourceweights) ||
                                 (outdegree > 0 && !destweights)))
        local = NBR_ERR_ARG;
    if (local == NBR_SUCCESS)
        local = nbr_config_check(info);
    NBR_CHECK(nbr_agree(comm_old, local));
    NBR_MPI_CHECK(PMPI_Dist_graph_create_adjacent(
        comm_old, indegree, nonnull(sources),
        is_weight_sentinel(sourceweights) ? sourceweights : nonnull(sourceweights),
        outdegree, nonnull(destinations),
        is_weight_sentinel(destweights) ? destweights : nonnull(destweights), info,
        reorder, comm_dist_graph));
    rc = finish_create(info, comm_dist_graph);
out:
    return rc;
}

/* Flattens MPI_Dist_graph_create's (sources, degrees, destinations) into
 * an edge list. */
static int flatten_edges(int n, const int *sources, const int *degrees,
                         const int *destinations, const int *weights,
                         int nranks, nbr_discover_t *discover, int **src_out,
                         int **dst_out)
{
    if (n < 0)
        return NBR_ERR_COUNT;
    if (n > 0 && (!sources || !degrees))
        return NBR_ERR_ARG;
    long total = 0;
    for (int i = 0; i < n; i++) {
        if (degrees[i] < 0)
            return NBR_ERR_COUNT;
        total += degrees[i];
    }
    int rc = check_rank_list(sources, n, nranks);
    if (rc == NBR_SUCCESS)
        rc = check_rank_list(destinations, (int)total, nranks);
    if (rc == NBR_SUCCESS && total > 0 && !weights)
        rc = NBR_ERR_ARG;
    if (rc != NBR_SUCCESS)
        return rc;
    int *src = malloc(((size_t)total + 1) * sizeof(int));
    int *dst = malloc(((size_t)total + 1) * sizeof(int));
    if (!src || !dst) {
        free(src);
        free(dst);
        return NBR_ERR_NOMEM;
    }
    for (int i = 0, e = 0; i < n; i++)
        for (int k = 0; k < degrees[i]; k++, e++) {
            src[e] = sources[i];
            dst[e] = destinations[e];
        }
    discover->num_named = (int)total;
    discover->named_src = src;
    discover->named_dst = dst;
    discover->named_weight = is_weight_sentinel(weights) ? NULL : weights;
    *src_out = src;
    *dst_out = dst;
    return NBR_SUCCESS;
}

int nbr_dist_graph_create(MPI_Comm comm_old, int n, const int sources[],
                          const int degrees[], const int destinations[],
                          const int weights[], MPI_Info info, int reorder,
                          MPI_Comm *comm_dist_graph)
{
    int rc = nbr_check_comm(comm_old);
    int *src = NULL, *dst = NULL;
    MPI_Comm private_comm = MPI_COMM_NULL;
    nbr_discover_t discover = {0};
    if (rc != NBR_SUCCESS)
        return rc;
    if (!comm_dist_graph)
        return NBR_ERR_ARG;
    *comm_dist_graph = MPI_COMM_NULL;
    NBR_MPI_CHECK(MPI_Comm_rank(comm_old, &discover.rank));
    NBR_MPI_CHECK(MPI_Comm_size(comm_old, &discover.nranks));
    int local = flatten_edges(n, sources, degrees, destinations, weights,
                              discover.nranks, &discover, &src, &dst);
    if (local == NBR_SUCCESS)
        local = nbr_config_check(info);
    NBR_CHECK(nbr_agree(comm_old, local));
    /* MPI: weights are MPI_UNWEIGHTED on all ranks or on none. */
    int weighted = weights != MPI_UNWEIGHTED, any_weighted = 0;
    NBR_MPI_CHECK(MPI_Allreduce(&weighted, &any_weighted, 1, MPI_INT, MPI_MAX, comm_old));
    /* Discovery traffic runs on a private duplicate, never on the user's comm. */
    NBR_MPI_CHECK(PMPI_Comm_dup(comm_old, &private_comm));
    NBR_MPI_CHECK(MPI_Comm_set_errhandler(private_comm, MPI_ERRORS_RETURN));
    NBR_CHECK(nbr_engine_run_mpi(private_comm, NBR_TAG_ENGINE, &discover,
                                 nbr_discover_step, 4));
    NBR_MPI_CHECK(PMPI_Dist_graph_create_adjacent(
        comm_old, discover.indegree, discover.sources,
        any_weighted ? discover.sourceweights : MPI_UNWEIGHTED, discover.outdegree,
        discover.destinations, any_weighted ? discover.destweights : MPI_UNWEIGHTED,
        info, 0 * reorder, comm_dist_graph));
    rc = finish_create(info, comm_dist_graph);
out:
    if (private_comm != MPI_COMM_NULL)
        MPI_Comm_free(&private_comm);
    nbr_discover_free(&discover);
    free(src);
    free(dst);
    return rc;
}

int nbr_comm_attach(MPI_Comm comm, MPI_Info info)
{
    nbr_comm_t *state = NULL;
    return nbr_comm_get(comm, info, &state);
}

int nbr_comm_adopt(MPI_Comm comm, MPI_Info info, int off, int *taken)
{
    int rc = nbr_check_comm(comm);
    if (rc != NBR_SUCCESS)
        return rc;
    if (!taken)
        return NBR_ERR_ARG;
    *taken = 0;
    int mine[2] = {off != 0, -(off != 0)}, least[2];
    NBR_MPI_CHECK(MPI_Allreduce(mine, least, 2, MPI_INT, MPI_MIN, comm));
    if (least[0] != -least[1]) {
        /* each rank that differs from rank 0 names itself */
        int rank = 0, off0 = off != 0;
        MPI_Comm_rank(comm, &rank);
        NBR_MPI_CHECK(MPI_Bcast(&off0, 1, MPI_INT, 0, comm));
        if (rank == 0)
            NBR_ERROR("NBR_DISABLE / nbr_disable differs between ranks: rank 0 has nbrcoll %s, "
                      "the ranks that log below do not: it must be the same on every rank",
                      off0 ? "off" : "on");
        else if ((off != 0) != off0)
            NBR_ERROR("NBR_DISABLE / nbr_disable has nbrcoll %s on this rank, %s on rank 0",
                      off ? "off" : "on", off0 ? "off" : "on");
        return NBR_ERR_INFO;
    }
    if (off)
        return NBR_SUCCESS;
    nbr_comm_t *state = NULL;
    rc = nbr_comm_get(comm, info, &state);
    *taken = rc == NBR_SUCCESS;
out:
    return rc;
}

int nbr_comm_algorithm(MPI_Comm comm, const char **name)
{
    nbr_comm_t *state = NULL;
    if (!name)
        return NBR_ERR_ARG;
    int rc = nbr_comm_get(comm, MPI_INFO_NULL, &state);
    if (rc == NBR_SUCCESS)
        *name = state->last_algorithm    ? state->last_algorithm->name
                : state->config.algorithm ? state->config.algorithm->name
                                          : NBR_AUTO_NAME;
    return rc;
}

/* Whether auto has a trial under way on state (the same on every rank). */
static int trial_under_way(const nbr_comm_t *state)
{
    return state->trials > 0;
}

int nbr_comm_trial_pending(MPI_Comm comm, int *pending)
{
    nbr_comm_t *state = NULL;
    if (!pending)
        return NBR_ERR_ARG;
    int rc = nbr_comm_get(comm, MPI_INFO_NULL, &state);
    if (rc == NBR_SUCCESS)
        *pending = trial_under_way(state);
    return rc;
}

int nbr_comm_retune(MPI_Comm comm)
{
    nbr_comm_t *state = NULL;
    int rc = nbr_comm_get(comm, MPI_INFO_NULL, &state);
    if (rc != NBR_SUCCESS)
        return rc;
    for (int k = 0; k < NBR_NUM_CALL_KINDS; k++)
        for (int form = 0; form < 2; form++) {
            nbr_stream_t *stream = &state->streams[k][form];
            stream->redecide_from = stream->calls + 1;
        }
    return NBR_SUCCESS;
}

int nbr_comm_locality(MPI_Comm comm, int *num_nodes, int *my_node, int *my_socket)
{
    nbr_comm_t *state = NULL;
    int rc = nbr_comm_get(comm, MPI_INFO_NULL, &state);
    if (rc != NBR_SUCCESS)
        return rc;
    if (num_nodes)
        *num_nodes = state->locality.num_nodes;
    if (my_node)
        *my_node = state->locality.node_of[state->rank];
    if (my_socket)
        *my_socket = state->locality.socket_of[state->rank];
    return NBR_SUCCESS;
}

int nbr_comm_place(MPI_Comm comm, int rank, nbr_rank_place_t *place)
{
    nbr_comm_t *state = NULL;
    if (!place)
        return NBR_ERR_ARG;
    int rc = nbr_comm_get(comm, MPI_INFO_NULL, &state);
    if (rc != NBR_SUCCESS)
        return rc;
    if (rank < 0 || rank >= state->nranks)
        return NBR_ERR_RANK;
    const nbr_locality_t *loc = &state->locality;
    *place = (nbr_rank_place_t){
        .node = loc->node_of[rank], .local_rank = loc->local_rank_of[rank],
        .socket = loc->socket_of[rank], .numa = loc->numa_of[rank], .gpu = loc->gpu_of[rank],
        .package = loc->package_of[rank], .leader = loc->leader_of[rank], .peer_rank = -1};
    /* the peer GPU shares the package; the lowest rank on it stands for it */
    for (int r = 0; r < state->nranks && place->gpu >= 0; r++)
        if (loc->node_of[r] == place->node && loc->package_of[r] == place->package &&
            loc->gpu_of[r] != place->gpu) {
            place->peer_rank = r;
            break;
        }
    return NBR_SUCCESS;
}

/* ------------------------------------------------------------ counters */

int nbr_get_counters(MPI_Comm comm, nbr_counters_t *counters)
{
    nbr_comm_t *state = NULL;
    if (!counters)
        return NBR_ERR_ARG;
    int rc = nbr_comm_get(comm, MPI_INFO_NULL, &state);
    if (rc == NBR_SUCCESS) {
        nbr_comm_count_shortcut(state);
        *counters = state->counters;
    }
    return rc;
}

int nbr_reset_counters(MPI_Comm comm)
{
    nbr_comm_t *state = NULL;
    int rc = nbr_comm_get(comm, MPI_INFO_NULL, &state);
    if (rc == NBR_SUCCESS) {
        state->shortcut.uncounted = 0;
        memset(&state->counters, 0, sizeof(state->counters));
    }
    return rc;
}

/* ---------------------------------------------------------- collectives */

/* Starts a fresh request; if that fails (nbr_start has then run out
 * whatever part was posted), the request is freed and the error returned. */
static int start_fresh(nbr_request_t *request)
{
    int rc = nbr_start(request);
    if (rc != NBR_SUCCESS)
        nbr_request_free(request);
    return rc;
}

static int run_blocking(const nbr_call_t *call)
{
    nbr_call_t blocking = *call;
    blocking.blocking = 1;
    nbr_request_t request = NBR_REQUEST_NULL;
    nbr_comm_t *state = NULL;
    int rc = nbr_comm_get(call->comm, MPI_INFO_NULL, &state);
    if (rc != NBR_SUCCESS)
        return rc;
    nbr_comm_drain(state); /* the earlier nonblocking calls launch first */
    /* While auto has a trial under way this call may be one of its timed
     * ones: then it starts together on every rank (a barrier on nbrcoll's
     * own communicator, which the program's traffic does not touch), so
     * that its time is the collective's and not the skew the program
     * brought in, and the clock includes the request's set-up, a part of
     * every call that costs plans of more phases more. Every rank sees the
     * same trials, so every rank takes the barrier or none does. */
    int timed = trial_under_way(state);
    if (timed) {
        int mrc = MPI_Barrier(state->comm);
        if (mrc != MPI_SUCCESS)
            return nbr_mpi_failed("MPI_Barrier", mrc);
    }
    double start = MPI_Wtime();
    rc = nbr_request_create(&blocking, MPI_INFO_NULL, 0, &request);
    if (rc != NBR_SUCCESS)
        return rc;
    /* a timed call is reported however it ends: the last report is
     * collective */
    nbr_decision_t *trial = request->trial;
    rc = start_fresh(&request);
    if (rc == NBR_SUCCESS)
        rc = nbr_wait(&request); /* retires the request */
    if (trial) {
        int trial_rc =
            nbr_comm_trial_record(state, trial, rc == NBR_SUCCESS ? MPI_Wtime() - start : INFINITY);
        rc = rc == NBR_SUCCESS ? trial_rc : rc;
    }
    return rc;
}

static int run_nonblocking(const nbr_call_t *call, nbr_request_t *request)
{
    int rc = nbr_request_create(call, MPI_INFO_NULL, 0, request);
    return rc == NBR_SUCCESS ? start_fresh(request) : rc;
}

#define ALLGATHER_CALL(kind_)                                                  \
    {.kind = (kind_), .sendbuf = sendbuf, .sendcount = sendcount,              \
     .sendtype = sendtype, .recvbuf = recvbuf, .recvtype = recvtype,           \
     .comm = comm}

#define ALLTOALL_CALL                                                          \
    {.kind = NBR_CALL_ALLTOALL, .sendbuf = sendbuf, .sendcount = sendcount,    \
     .sendtype = sendtype, .recvbuf = recvbuf, .recvcount = recvcount,         \
     .recvtype = recvtype, .comm = comm}

#define ALLTOALLV_CALL                                                         \
    {.kind = NBR_CALL_ALLTOALLV, .sendbuf = sendbuf, .sendcounts = sendcounts, \
     .sdispls = sdispls, .sendtype = sendtype, .recvbuf = recvbuf,             \
     .recvcounts = recvcounts, .rdispls = rdispls, .recvtype = recvtype,       \
     .comm = comm}

#define ALLTOALLW_CALL                                                         \
    {.kind = NBR_CALL_ALLTOALLW, .sendbuf = sendbuf, .sendcounts = sendcounts, \
     .sdispls_w = sdispls, .sendtypes = sendtypes, .recvbuf = recvbuf,         \
     .recvcounts = recvcounts, .rdispls_w = rdispls, .recvtypes = recvtypes,   \
     .comm = comm}

/* ------------------------------------------------------------- blocking */

int nbr_neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype,
                           MPI_Comm comm)
{
    int rc = NBR_SUCCESS;
    if (nbr_library_shortcut(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                             &rc))
        return rc;
    nbr_call_t call = ALLGATHER_CALL(NBR_CALL_ALLGATHER);
    call.recvcount = recvcount;
    return run_blocking(&call);
}

int nbr_neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int displs[],
                            MPI_Datatype recvtype, MPI_Comm comm)
{
    nbr_call_t call = ALLGATHER_CALL(NBR_CALL_ALLGATHERV);
    call.recvcounts = recvcounts;
    call.rdispls = displs;
    return run_blocking(&call);
}

int nbr_neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    nbr_call_t call = ALLTOALL_CALL;
    return run_blocking(&call);
}

int nbr_neighbor_alltoallv(const void *sendbuf, const int sendcounts[],
                           const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                           const int recvcounts[], const int rdispls[],
                           MPI_Datatype recvtype, MPI_Comm comm)
{
    nbr_call_t call = ALLTOALLV_CALL;
    return run_blocking(&call);
}

int nbr_neighbor_alltoallw(const void *sendbuf, const int sendcounts[],
                           const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                           void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
                           const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    nbr_call_t call = ALLTOALLW_CALL;
    return run_blocking(&call);
}

/* ----------------------------------------------------------- nonblocking */

int nbr_neighbor_iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype,
                            MPI_Comm comm, nbr_request_t *request)
{
    nbr_call_t call = ALLGATHER_CALL(NBR_CALL_ALLGATHER);
    call.recvcount = recvcount;
    return run_nonblocking(&call, request);
}

int nbr_neighbor_iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, MPI_Comm comm,
                             nbr_request_t *request)
{
    nbr_call_t call = ALLGATHER_CALL(NBR_CALL_ALLGATHERV);
    call.recvcounts = recvcounts;
    call.rdispls = displs;
    return run_nonblocking(&call, request);
}

int nbr_neighbor_ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                           nbr_request_t *request)
{
    nbr_call_t call = ALLTOALL_CALL;
    return run_nonblocking(&call, request);
}

int nbr_neighbor_ialltoallv(const void *sendbuf, const int sendcounts[],
                            const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                            const int recvcounts[], const int rdispls[],
                            MPI_Datatype recvtype, MPI_Comm comm,
                            nbr_request_t *request)
{
    nbr_call_t call = ALLTOALLV_CALL;
    return run_nonblocking(&call, request);
}

int nbr_neighbor_ialltoallw(const void *sendbuf, const int sendcounts[],
                            const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                            void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
                            const MPI_Datatype recvtypes[], MPI_Comm comm,
                            nbr_request_t *request)
{
    nbr_call_t call = ALLTOALLW_CALL;
    return run_nonblocking(&call, request);
}

/* ------------------------------------------------------------ persistent */

int nbr_neighbor_allgather_init(const void *sendbuf, int sendcount,
                                MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                nbr_request_t *request)
{
    nbr_call_t call = ALLGATHER_CALL(NBR_CALL_ALLGATHER);
    call.recvcount = recvcount;
    return nbr_request_create(&call, info, 1, request);
}

int nbr_neighbor_allgatherv_init(const void *sendbuf, int sendcount,
                                 MPI_Datatype sendtype, void *recvbuf,
                                 const int recvcounts[], const int displs[],
                                 MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                 nbr_request_t *request)
{
    nbr_call_t call = ALLGATHER_CALL(NBR_CALL_ALLGATHERV);
    call.recvcounts = recvcounts;
    call.rdispls = displs;
    return nbr_request_create(&call, info, 1, request);
}

int nbr_neighbor_alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, int recvcount, MPI_Datatype recvtype,
                               MPI_Comm comm, MPI_Info info, nbr_request_t *request)
{
    nbr_call_t call = ALLTOALL_CALL;
    return nbr_request_create(&call, info, 1, request);
}

int nbr_neighbor_alltoallv_init(const void *sendbuf, const int sendcounts[],
                                const int sdispls[], MPI_Datatype sendtype,
                                void *recvbuf, const int recvcounts[],
                                const int rdispls[], MPI_Datatype recvtype,
                                MPI_Comm comm, MPI_Info info, nbr_request_t *request)
{
    nbr_call_t call = ALLTOALLV_CALL;
    return nbr_request_create(&call, info, 1, request);
}

int nbr_neighbor_alltoallw_init(const void *sendbuf, const int sendcounts[],
                                const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                void *recvbuf, const int recvcounts[],
                                const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                MPI_Comm comm, MPI_Info info, nbr_request_t *request)
{
    nbr_call_t call = ALLTOALLW_CALL;
    return nbr_request_create(&call, info, 1, request);
}

int nbr_neighbor_alltoallv_init_ext(const void *sendbuf, const int sendcounts[],
                                    const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                    const int recvcounts[], const int rdispls[],
                                    MPI_Datatype recvtype, const long send_global_idx[],
                                    const long recv_global_idx[], MPI_Comm comm, MPI_Info info,
                                    nbr_request_t *request)
{
    nbr_call_t call = ALLTOALLV_CALL;
    call.send_global_idx = send_global_idx;
    call.recv_global_idx = recv_global_idx;
    if (!send_global_idx && !recv_global_idx) /* a standard call, as far as indices go */
        call.send_global_idx = call.recv_global_idx = NULL;
    return nbr_request_create(&call, info, 1, request);
}
