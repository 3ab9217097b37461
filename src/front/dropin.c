/* libnbrcoll_mpi: the drop-in. An MPI program that calls MPI_Neighbor_*
 * gets nbrcoll without a change to its source: this library defines those
 * MPI names (MPI's profiling interface: the library's own entry points
 * stay reachable as PMPI_*), loaded ahead of MPI with LD_PRELOAD or linked
 * before it. Every call on a communicator with a process topology goes to
 * nbrcoll's nbr_neighbor_* (set up lazily on the first call, with the
 * environment's NBR_* settings), and an nbrcoll error goes through the
 * communicator's error handler as the MPI error class it is, so
 * MPI_ERRORS_ARE_FATAL programs stop and MPI_ERRORS_RETURN ones see a
 * code. NBR_DISABLE=1 hands every call to MPI as it is; the creation
 * info key nbr_disable=true, one communicator (and its duplicates).
 *
 * Blocking, nonblocking (MPI_Ineighbor_*) and persistent calls
 * (MPI_Neighbor_*_init, and Open MPI's MPIX_Neighbor_*_init where its
 * pcollreq extension has them) are all taken; the last two return
 * MPI_Request handles that dropin_requests.c completes. nbrcoll's own
 * traffic never comes back here: it calls PMPI_ for the library row and
 * for completing its internal requests. */
#include "front/dropin.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

/* NBR_DISABLE and nbr_disable: any value but empty, 0, false or no. */
static int says_disable(const char *value)
{
    return value && *value && strcmp(value, "0") != 0 && strcmp(value, "false") != 0 &&
           strcmp(value, "no") != 0;
}

static int disabled(void)
{
    static int off = -1; /* read once: every rank sees the same environment */
    if (off < 0)
        off = says_disable(getenv("NBR_DISABLE"));
    return off;
}

/* Communicators created with the info key nbr_disable=true carry this
 * attribute (copied to their duplicates): MPI keeps all of their calls.
 * The keyval exists once some program asked for it. */
static int off_keyval = MPI_KEYVAL_INVALID;
static char off_marker;

static int comm_opted_out(MPI_Comm comm)
{
    void *value = NULL;
    int found = 0;
    if (__atomic_load_n(&off_keyval, __ATOMIC_ACQUIRE) == MPI_KEYVAL_INVALID)
        return 0;
    return PMPI_Comm_get_attr(comm, off_keyval, &value, &found) == MPI_SUCCESS && found;
}

/* Whether nbrcoll takes calls on comm: every call unless the drop-in is
 * off or the communicator opted out. MPI_COMM_NULL, an intercommunicator
 * and a communicator without a process topology are taken too: nbrcoll
 * answers them with MPI_ERR_COMM / MPI_ERR_TOPOLOGY through the handler,
 * where Open MPI 4.1 crashes or reports an internal error. */
static int taken(MPI_Comm comm)
{
    return !disabled() && (comm == MPI_COMM_NULL || !comm_opted_out(comm));
}

int nbr_dropin_error_class(int status)
{
    switch (status) {
    case NBR_SUCCESS: return MPI_SUCCESS;
    case NBR_ERR_ARG: return MPI_ERR_ARG;
    case NBR_ERR_BUFFER: return MPI_ERR_BUFFER;
    case NBR_ERR_COUNT: return MPI_ERR_COUNT;
    case NBR_ERR_RANK: return MPI_ERR_RANK;
    case NBR_ERR_TOPOLOGY: return MPI_ERR_TOPOLOGY;
    case NBR_ERR_DATATYPE: return MPI_ERR_TYPE;
    case NBR_ERR_TYPE_MISMATCH: return MPI_ERR_TRUNCATE;
    case NBR_ERR_ALGORITHM: return MPI_ERR_ARG;
    case NBR_ERR_INFO: return MPI_ERR_INFO_VALUE;
    case NBR_ERR_NOMEM: return MPI_ERR_NO_MEM;
    case NBR_ERR_REQUEST: return MPI_ERR_REQUEST;
    case NBR_ERR_COMM: return MPI_ERR_COMM;
    case NBR_ERR_UNSUPPORTED: return MPI_ERR_UNSUPPORTED_OPERATION;
    case NBR_ERR_INTERNAL: return MPI_ERR_INTERN;
    case NBR_ERR_IO: return MPI_ERR_IO;
    case NBR_ERR_GRAPH: return MPI_ERR_TOPOLOGY;
    default: return MPI_ERR_OTHER; /* NBR_ERR_MPI, NBR_ERR_DEVICE, NBR_ERR_PEER */
    }
}

int nbr_dropin_raise(MPI_Comm comm, int code)
{
    /* an error on no communicator goes to MPI_COMM_WORLD's handler, as Open MPI 4.1 does */
    if (code != MPI_SUCCESS)
        PMPI_Comm_call_errhandler(comm != MPI_COMM_NULL ? comm : MPI_COMM_WORLD, code);
    return code;
}

/* An nbrcoll status as MPI returns errors: through comm's handler. */
static int returned(MPI_Comm comm, int status)
{
    return nbr_dropin_raise(comm, nbr_dropin_error_class(status));
}

/* A nonblocking or persistent call's answer: its request as an MPI handle. */
static int issued(MPI_Comm comm, int status, nbr_request_t *request, MPI_Request *handle)
{
    if (status == NBR_SUCCESS)
        status = nbr_dropin_adopt(request, handle);
    return returned(comm, status);
}

/* ------------------------------------------------------------ creation */
/* MPI creates the communicator as it would have (neighbor order and all);
 * then, every rank of the new communicator taking part (creation is
 * collective), nbrcoll sets it up at once with the creation info's nbr_*
 * keys over the environment's, as nbr_comm_attach does: a neighborhood
 * collective never has to wait for another rank to set it up, not even
 * the first, nonblocking one. nbr_disable=true (or NBR_DISABLE) leaves the
 * communicator to MPI; every rank must say the same (nbr_comm_adopt). An
 * invalid value fails the creation, the communicator freed. Covered: every
 * call that makes a communicator with a process topology (a duplicate
 * carries its original's); MPI_Comm_idup's is set up at its first call. */

static int info_disables(MPI_Info info)
{
    char text[16] = "";
    int found = 0;
    return info != MPI_INFO_NULL &&
           PMPI_Info_get(info, "nbr_disable", (int)sizeof text - 1, text, &found) == MPI_SUCCESS &&
           found && says_disable(text);
}

static int opt_out(MPI_Comm comm)
{
    static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&once);
    if (off_keyval == MPI_KEYVAL_INVALID) {
        int keyval = MPI_KEYVAL_INVALID;
        rc = PMPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL);
        if (rc == MPI_SUCCESS)
            __atomic_store_n(&off_keyval, keyval, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&once);
    return rc == MPI_SUCCESS ? PMPI_Comm_set_attr(comm, off_keyval, &off_marker) : rc;
}

void nbr_dropin_free_keyvals(void)
{
    int keyval = __atomic_exchange_n(&off_keyval, MPI_KEYVAL_INVALID, __ATOMIC_ACQ_REL);
    if (keyval != MPI_KEYVAL_INVALID) /* marks still on communicators stay until they go */
        PMPI_Comm_free_keyval(&keyval);
}

/* What follows MPI's creation of *created (rc) from comm_old with info. */
static int adopt_created(MPI_Comm comm_old, MPI_Info info, int rc, MPI_Comm *created)
{
    int topology = MPI_UNDEFINED, taken = 0;
    if (rc != MPI_SUCCESS || *created == MPI_COMM_NULL ||
        PMPI_Topo_test(*created, &topology) != MPI_SUCCESS || topology == MPI_UNDEFINED)
        return rc;
    /* a duplicate of a communicator left to MPI carries the mark already */
    int off = disabled() || info_disables(info) || comm_opted_out(*created);
    int status = nbr_comm_adopt(*created, info, off, &taken);
    /* An inconsistent graph is the program's error at its collective
     * calls, not at the creation MPI performed: every call on it answers
     * MPI_ERR_TOPOLOGY on every rank (set-up tries again and finds it). */
    rc = nbr_dropin_error_class(status == NBR_ERR_GRAPH ? NBR_SUCCESS : status);
    if (rc == MPI_SUCCESS && !taken && status != NBR_ERR_GRAPH && !comm_opted_out(*created))
        rc = opt_out(*created);
    if (rc != MPI_SUCCESS) {
        PMPI_Comm_free(created);
        return nbr_dropin_raise(comm_old, rc);
    }
    return MPI_SUCCESS;
}

int MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
                                   const int sourceweights[], int outdegree,
                                   const int destinations[], const int destweights[],
                                   MPI_Info info, int reorder, MPI_Comm *comm_dist_graph)
{
    int rc = PMPI_Dist_graph_create_adjacent(comm_old, indegree, sources, sourceweights,
                                             outdegree, destinations, destweights, info,
                                             reorder, comm_dist_graph);
    return adopt_created(comm_old, info, rc, comm_dist_graph);
}

int MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[], const int degrees[],
                          const int destinations[], const int weights[], MPI_Info info,
                          int reorder, MPI_Comm *comm_dist_graph)
{
    int rc = PMPI_Dist_graph_create(comm_old, n, sources, degrees, destinations, weights, info,
                                    reorder, comm_dist_graph);
    return adopt_created(comm_old, info, rc, comm_dist_graph);
}

int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[],
                    int reorder, MPI_Comm *comm_cart)
{
    int rc = PMPI_Cart_create(comm_old, ndims, dims, periods, reorder, comm_cart);
    return adopt_created(comm_old, MPI_INFO_NULL, rc, comm_cart);
}

int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    int rc = PMPI_Cart_sub(comm, remain_dims, newcomm);
    return adopt_created(comm, MPI_INFO_NULL, rc, newcomm);
}

int MPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[],
                     int reorder, MPI_Comm *comm_graph)
{
    int rc = PMPI_Graph_create(comm_old, nnodes, index, edges, reorder, comm_graph);
    return adopt_created(comm_old, MPI_INFO_NULL, rc, comm_graph);
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_dup(comm, newcomm);
    return adopt_created(comm, MPI_INFO_NULL, rc, newcomm);
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_dup_with_info(comm, info, newcomm);
    return adopt_created(comm, info, rc, newcomm);
}

/* ------------------------------------------------------------ blocking */

int MPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (!taken(comm))
        return PMPI_Neighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                       recvtype, comm);
    return returned(comm, nbr_neighbor_allgather(sendbuf, sendcount, sendtype, recvbuf,
                                                 recvcount, recvtype, comm));
}

int MPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int displs[],
                            MPI_Datatype recvtype, MPI_Comm comm)
{
    if (!taken(comm))
        return PMPI_Neighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                        displs, recvtype, comm);
    return returned(comm, nbr_neighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf,
                                                  recvcounts, displs, recvtype, comm));
}

int MPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (!taken(comm))
        return PMPI_Neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                      recvtype, comm);
    return returned(comm, nbr_neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf,
                                                recvcount, recvtype, comm));
}

int MPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                           MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                           const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    if (!taken(comm))
        return PMPI_Neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                       recvcounts, rdispls, recvtype, comm);
    return returned(comm, nbr_neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                                 recvcounts, rdispls, recvtype, comm));
}

int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                           const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                           const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                           MPI_Comm comm)
{
    if (!taken(comm))
        return PMPI_Neighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                       recvcounts, rdispls, recvtypes, comm);
    return returned(comm, nbr_neighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                                 recvcounts, rdispls, recvtypes, comm));
}

/* --------------------------------------------------------- nonblocking */

int MPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Request *request)
{
    if (!taken(comm))
        return PMPI_Ineighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                        recvtype, comm, request);
    if (!request)
        return returned(comm, NBR_ERR_REQUEST);
    nbr_request_t op = NBR_REQUEST_NULL;
    return issued(comm,
                  nbr_neighbor_iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                          recvtype, comm, &op),
                  &op, request);
}

int MPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    if (!taken(comm))
        return PMPI_Ineighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                         displs, recvtype, comm, request);
    if (!request)
        return returned(comm, NBR_ERR_REQUEST);
    nbr_request_t op = NBR_REQUEST_NULL;
    return issued(comm,
                  nbr_neighbor_iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                           displs, recvtype, comm, &op),
                  &op, request);
}

int MPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                           MPI_Request *request)
{
    if (!taken(comm))
        return PMPI_Ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                       recvtype, comm, request);
    if (!request)
        return returned(comm, NBR_ERR_REQUEST);
    nbr_request_t op = NBR_REQUEST_NULL;
    return issued(comm,
                  nbr_neighbor_ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                         recvtype, comm, &op),
                  &op, request);
}

int MPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                            MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Request *request)
{
    if (!taken(comm))
        return PMPI_Ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                        recvcounts, rdispls, recvtype, comm, request);
    if (!request)
        return returned(comm, NBR_ERR_REQUEST);
    nbr_request_t op = NBR_REQUEST_NULL;
    return issued(comm,
                  nbr_neighbor_ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                          recvcounts, rdispls, recvtype, comm, &op),
                  &op, request);
}

int MPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[],
                            const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                            void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
                            const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request)
{
    if (!taken(comm))
        return PMPI_Ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                        recvcounts, rdispls, recvtypes, comm, request);
    if (!request)
        return returned(comm, NBR_ERR_REQUEST);
    nbr_request_t op = NBR_REQUEST_NULL;
    return issued(comm,
                  nbr_neighbor_ialltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                          recvcounts, rdispls, recvtypes, comm, &op),
                  &op, request);
}

/* ---------------------------------------------------------- persistent */
/* One body per collective, under the MPI-4 name where mpi.h is MPI-4 and
 * under Open MPI's MPIX_ name where its pcollreq extension has it. A
 * call nbrcoll does not take goes to the entry point of the name the
 * program called (PERSISTENT_PMPI). */

#define PERSISTENT_ARGS_ALLGATHER                                                           \
    const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, \
        MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request
#define PERSISTENT_ARGS_ALLGATHERV                                                         \
    const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,              \
        const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm, \
        MPI_Info info, MPI_Request *request
#define PERSISTENT_ARGS_ALLTOALLV                                                         \
    const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, \
        void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,   \
        MPI_Comm comm, MPI_Info info, MPI_Request *request
#define PERSISTENT_ARGS_ALLTOALLW                                                          \
    const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],                 \
        const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],             \
        const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,           \
        MPI_Info info, MPI_Request *request

typedef int allgather_init_fn(PERSISTENT_ARGS_ALLGATHER);
typedef int allgatherv_init_fn(PERSISTENT_ARGS_ALLGATHERV);
typedef int alltoallv_init_fn(PERSISTENT_ARGS_ALLTOALLV);
typedef int alltoallw_init_fn(PERSISTENT_ARGS_ALLTOALLW);

static int allgather_init(allgather_init_fn *mpi, PERSISTENT_ARGS_ALLGATHER)
{
    if (!taken(comm))
        return mpi(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info,
                   request);
    if (!request)
        return returned(comm, NBR_ERR_REQUEST);
    nbr_request_t op = NBR_REQUEST_NULL;
    return issued(comm,
                  nbr_neighbor_allgather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                              recvtype, comm, info, &op),
                  &op, request);
}

static int allgatherv_init(allgatherv_init_fn *mpi, PERSISTENT_ARGS_ALLGATHERV)
{
    if (!taken(comm))
        return mpi(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                   info, request);
    if (!request)
        return returned(comm, NBR_ERR_REQUEST);
    nbr_request_t op = NBR_REQUEST_NULL;
    return issued(comm,
                  nbr_neighbor_allgatherv_init(sendbuf, sendcount, sendtype, recvbuf,
                                               recvcounts, displs, recvtype, comm, info, &op),
                  &op, request);
}

/* alltoall has allgather's arguments */
static int alltoall_init(allgather_init_fn *mpi, PERSISTENT_ARGS_ALLGATHER)
{
    if (!taken(comm))
        return mpi(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info,
                   request);
    if (!request)
        return returned(comm, NBR_ERR_REQUEST);
    nbr_request_t op = NBR_REQUEST_NULL;
    return issued(comm,
                  nbr_neighbor_alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                             recvtype, comm, info, &op),
                  &op, request);
}

static int alltoallv_init(alltoallv_init_fn *mpi, PERSISTENT_ARGS_ALLTOALLV)
{
    if (!taken(comm))
        return mpi(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                   recvtype, comm, info, request);
    if (!request)
        return returned(comm, NBR_ERR_REQUEST);
    nbr_request_t op = NBR_REQUEST_NULL;
    return issued(comm,
                  nbr_neighbor_alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                              recvcounts, rdispls, recvtype, comm, info, &op),
                  &op, request);
}

static int alltoallw_init(alltoallw_init_fn *mpi, PERSISTENT_ARGS_ALLTOALLW)
{
    if (!taken(comm))
        return mpi(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                   recvtypes, comm, info, request);
    if (!request)
        return returned(comm, NBR_ERR_REQUEST);
    nbr_request_t op = NBR_REQUEST_NULL;
    return issued(comm,
                  nbr_neighbor_alltoallw_init(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                              recvcounts, rdispls, recvtypes, comm, info, &op),
                  &op, request);
}

/* The exported names of one persistent collective, prefix MPI or MPIX. */
#define PERSISTENT_NAMES(PREFIX)                                                              \
    int PREFIX##_Neighbor_allgather_init(PERSISTENT_ARGS_ALLGATHER)                           \
    {                                                                                         \
        return allgather_init(P##PREFIX##_Neighbor_allgather_init, sendbuf, sendcount,        \
                              sendtype, recvbuf, recvcount, recvtype, comm, info, request);   \
    }                                                                                         \
    int PREFIX##_Neighbor_allgatherv_init(PERSISTENT_ARGS_ALLGATHERV)                         \
    {                                                                                         \
        return allgatherv_init(P##PREFIX##_Neighbor_allgatherv_init, sendbuf, sendcount,      \
                               sendtype, recvbuf, recvcounts, displs, recvtype, comm, info,   \
                               request);                                                      \
    }                                                                                         \
    int PREFIX##_Neighbor_alltoall_init(PERSISTENT_ARGS_ALLGATHER)                            \
    {                                                                                         \
        return alltoall_init(P##PREFIX##_Neighbor_alltoall_init, sendbuf, sendcount,          \
                             sendtype, recvbuf, recvcount, recvtype, comm, info, request);    \
    }                                                                                         \
    int PREFIX##_Neighbor_alltoallv_init(PERSISTENT_ARGS_ALLTOALLV)                           \
    {                                                                                         \
        return alltoallv_init(P##PREFIX##_Neighbor_alltoallv_init, sendbuf, sendcounts,       \
                              sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,      \
                              comm, info, request);                                           \
    }                                                                                         \
    int PREFIX##_Neighbor_alltoallw_init(PERSISTENT_ARGS_ALLTOALLW)                           \
    {                                                                                         \
        return alltoallw_init(P##PREFIX##_Neighbor_alltoallw_init, sendbuf, sendcounts,       \
                              sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes,    \
                              comm, info, request);                                           \
    }

#if MPI_VERSION >= 4
PERSISTENT_NAMES(MPI)
#endif
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
PERSISTENT_NAMES(MPIX)
#endif
