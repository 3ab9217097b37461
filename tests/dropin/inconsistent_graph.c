/* A plain MPI program with the most common neighborhood mistake: rank 1
 * lists rank 0 as an in-neighbor, but rank 0 does not list rank 1 as an
 * out-neighbor. MPI's own collective leaves rank 1 waiting for a message
 * that never comes; under the drop-in every rank gets MPI_ERR_TOPOLOGY
 * instead, blocking, nonblocking and persistent, and the program goes on. */
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
    return cls == MPI_SUCCESS ? "success" : cls == MPI_ERR_TOPOLOGY ? "MPI_ERR_TOPOLOGY" : "another class";
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* a ring r -> r+1, where rank 1 expects two blocks from rank 0 */
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    int sources[2] = {left, 0};
    MPI_Comm ring;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, rank == 1 ? 2 : 1, sources, MPI_UNWEIGHTED,
                                   1, &right, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring);
    MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
    int send = rank, recv[2] = {-1, -1};
    MPI_Request request = MPI_REQUEST_NULL;
    const char *blocking = class_name(MPI_Neighbor_allgather(&send, 1, MPI_INT, recv, 1, MPI_INT, ring));
    const char *nonblocking =
        class_name(MPI_Ineighbor_allgather(&send, 1, MPI_INT, recv, 1, MPI_INT, ring, &request));
    const char *persistent = class_name(
        MPI_Neighbor_allgather_init(&send, 1, MPI_INT, recv, 1, MPI_INT, ring, MPI_INFO_NULL, &request));
    printf("rank %d: %s (blocking), %s (nonblocking), %s (persistent), request %s\n", rank,
           blocking, nonblocking, persistent, request == MPI_REQUEST_NULL ? "null" : "set");
    MPI_Comm_free(&ring);
    MPI_Finalize();
    return 0;
}
