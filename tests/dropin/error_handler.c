/* A plain MPI program that returns errors (MPI_ERRORS_RETURN) and prints
 * the error class of a collective called with a negative count, then
 * shows the communicator still works. */
#include <mpi.h>
#include <stdio.h>

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
    int rc = MPI_Neighbor_allgather(send, -1, MPI_INT, recv, 4, MPI_INT, ring);
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    rc = MPI_Neighbor_allgather(send, 4, MPI_INT, recv, 4, MPI_INT, ring);
    if (rank == 0)
        printf("error_handler: bad count gives class %s; then %s, got %d from rank %d\n",
               cls == MPI_ERR_COUNT ? "MPI_ERR_COUNT" : "something else",
               rc == MPI_SUCCESS ? "success" : "failure", recv[0], left);
    MPI_Comm_free(&ring);
    MPI_Finalize();
    return 0;
}
