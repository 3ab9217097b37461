/* A plain MPI program that passes the neighborhood collectives what MPI
 * forbids: MPI_IN_PLACE as a buffer, a communicator without a process
 * topology, MPI_COMM_NULL. Under the drop-in each call form answers with
 * the error class nbrcoll documents (MPI_ERR_ARG, MPI_ERR_TOPOLOGY,
 * MPI_ERR_COMM) through the handler, and a correct call after them runs.
 * Plain Open MPI 4.1 crashes on some of them (not run). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#if MPI_VERSION < 4
#include <mpi-ext.h>
#define MPI_Neighbor_allgather_init MPIX_Neighbor_allgather_init
#define MPI_Neighbor_alltoallv_init MPIX_Neighbor_alltoallv_init
#endif

static const char *class_name(int rc)
{
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    return cls == MPI_SUCCESS        ? "success"
           : cls == MPI_ERR_ARG      ? "MPI_ERR_ARG"
           : cls == MPI_ERR_TOPOLOGY ? "MPI_ERR_TOPOLOGY"
           : cls == MPI_ERR_COMM     ? "MPI_ERR_COMM"
                                     : "another class";
}

/* One line: the class of each form on comm (sendbuf and recvbuf as given);
 * a request handed out with an error is a failure of its own. */
static void try_forms(const char *what, MPI_Comm comm, const void *sendbuf, void *recvbuf)
{
    int counts[1] = {1}, displs[1] = {0};
    MPI_Request request = MPI_REQUEST_NULL;
    const char *b = class_name(MPI_Neighbor_allgather(sendbuf, 1, MPI_INT, recvbuf, 1, MPI_INT, comm));
    const char *n = class_name(MPI_Ineighbor_alltoallv(sendbuf, counts, displs, MPI_INT, recvbuf,
                                                       counts, displs, MPI_INT, comm, &request));
    int leaked = request != MPI_REQUEST_NULL;
    const char *p = class_name(MPI_Neighbor_alltoallv_init(sendbuf, counts, displs, MPI_INT, recvbuf,
                                                           counts, displs, MPI_INT, comm,
                                                           MPI_INFO_NULL, &request));
    leaked |= request != MPI_REQUEST_NULL;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("rank %d: %s: %s, %s, %s%s\n", rank, what, b, n, p, leaked ? ", a request leaked" : "");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* MPI_COMM_NULL's errors */
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Comm ring, plain;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, MPI_UNWEIGHTED, 1, &right,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring);
    MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &plain);
    MPI_Comm_set_errhandler(plain, MPI_ERRORS_RETURN);
    int send = rank, recv = -1;
    try_forms("MPI_IN_PLACE sendbuf", ring, MPI_IN_PLACE, &recv);
    try_forms("MPI_IN_PLACE recvbuf", ring, &send, MPI_IN_PLACE);
    try_forms("no topology", plain, &send, &recv);
    try_forms("MPI_COMM_NULL", MPI_COMM_NULL, &send, &recv);
    recv = -1;
    int rc = MPI_Neighbor_allgather(&send, 1, MPI_INT, &recv, 1, MPI_INT, ring);
    printf("rank %d: then a correct allgather: %s, %s\n", rank, class_name(rc),
           recv == left ? "right" : "wrong");
    MPI_Comm_free(&plain);
    MPI_Comm_free(&ring);
    MPI_Finalize();
    return 0;
}
