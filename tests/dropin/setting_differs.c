/* A plain MPI program whose ranks are started with different nbrcoll
 * settings (setting_differs.sh sets one on rank 0 alone): every rank's
 * creation of the topology communicator answers MPI_ERR_INFO_VALUE, where
 * the ranks would otherwise run different plans (or, NBR_DISABLE, some
 * nbrcoll's and some MPI's) and wait for each other forever. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Comm ring = MPI_COMM_NULL;
    int rc = MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, MPI_UNWEIGHTED, 1, &right,
                                            MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring);
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    printf("rank %d: creation %s, communicator %s\n", rank,
           cls == MPI_SUCCESS ? "succeeded" : cls == MPI_ERR_INFO_VALUE ? "MPI_ERR_INFO_VALUE"
                                                                        : "another error",
           ring == MPI_COMM_NULL ? "null" : "made");
    if (ring != MPI_COMM_NULL)
        MPI_Comm_free(&ring);
    MPI_Finalize();
    return 0;
}
