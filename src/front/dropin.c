/* libnbrcoll_mpi: the drop-in. An MPI program that calls MPI_Neighbor_*
 * gets nbrcoll without a change to its source: this library defines those
 * MPI names (MPI's profiling interface: the library's own entry points
 * stay reachable as PMPI_*), loaded ahead of MPI with LD_PRELOAD or linked
 * before it. Every call on a communicator with a process topology goes to
 * nbrcoll's nbr_neighbor_* (set up lazily on the first call, with the
 * environment's NBR_* settings), and an nbrcoll error goes through the
 * communicator's error handler as the MPI error class it is, so
 * MPI_ERRORS_ARE_FATAL programs stop and MPI_ERRORS_RETURN ones see a
 * code. NBR_DISABLE=1 hands every call to MPI as it is.
 *
 * Nonblocking and persistent calls still go to MPI directly: their
 * requests must be MPI_Request handles the program can wait on with its
 * own (issue 14's next step). nbrcoll's own traffic never comes back
 * here: it calls PMPI_Neighbor_* for the library row and MPI's
 * point-to-point calls, which this library does not define. */
#include <mpi.h>
#include <nbrcoll.h>

#include <stdlib.h>
#include <string.h>

static int disabled(void)
{
    static int off = -1; /* read once: every rank sees the same environment */
    if (off < 0) {
        const char *value = getenv("NBR_DISABLE");
        off = value && *value && strcmp(value, "0") != 0;
    }
    return off;
}

/* Whether nbrcoll takes calls on comm: a communicator with a process
 * topology; MPI reports everything else (an intercommunicator, no
 * topology) as it would have. */
static int taken(MPI_Comm comm)
{
    int topology = MPI_UNDEFINED;
    if (disabled() || comm == MPI_COMM_NULL || PMPI_Topo_test(comm, &topology) != MPI_SUCCESS)
        return 0;
    return topology == MPI_DIST_GRAPH || topology == MPI_CART || topology == MPI_GRAPH;
}

/* The MPI error class of an nbrcoll status. */
static int error_class(int status)
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
    default: return MPI_ERR_OTHER; /* NBR_ERR_MPI, NBR_ERR_DEVICE */
    }
}

/* An nbrcoll status as MPI returns errors: through comm's handler. */
static int returned(MPI_Comm comm, int status)
{
    int code = error_class(status);
    if (code != MPI_SUCCESS)
        PMPI_Comm_call_errhandler(comm, code);
    return code;
}

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
