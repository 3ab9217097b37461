/* A plain MPI program that returns errors (MPI_ERRORS_RETURN) and prints
 * the error class of a collective called with a negative count, blocking,
 * nonblocking and persistent, then shows the communicator still works. */
#include <mpi.h>
#include <stdio.h>
#if MPI_VERSION < 4
#include <mpi-ext.h>
#define MPI_Neighbor_allgather_init MPIX_Neighbor_allgather_init
#endif

static const char *class_name(int rc)
{
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    return cls == MPI_SUCCESS ? "success" : cls == MPI_ERR_COUNT ? "MPI_ERR_COUNT" : "another class";
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Comm ring;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, MPI_UNWEIGHTED, 1, &right,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring);
    MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
    int send[4] = {rank, rank, rank, rank}, recv[4] = {-1, -1, -1, -1};
    MPI_Request request = MPI_REQUEST_NULL;
    const char *blocking = class_name(MPI_Neighbor_allgather(send, -1, MPI_INT, recv, 4, MPI_INT, ring));
    const char *nonblocking =
        class_name(MPI_Ineighbor_allgather(send, -1, MPI_INT, recv, 4, MPI_INT, ring, &request));
    const char *persistent = class_name(
        MPI_Neighbor_allgather_init(send, -1, MPI_INT, recv, 4, MPI_INT, ring, MPI_INFO_NULL, &request));
    int rc = MPI_Ineighbor_allgather(send, 4, MPI_INT, recv, 4, MPI_INT, ring, &request);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
    if (rank == 0)
        printf("error_handler: a bad count gives %s (blocking), %s (nonblocking), %s (persistent); "
               "then %s, got %d from rank %d\n",
               blocking, nonblocking, persistent, class_name(rc), recv[0], left);
    MPI_Comm_free(&ring);
    MPI_Finalize();
    return 0;
}
