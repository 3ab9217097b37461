/* Links against an installed nbrcoll and runs one collective on a ring. */
#include <nbrcoll.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Comm ring;
    int rc = nbr_dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, MPI_UNWEIGHTED, 1,
                                            &right, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring);
    int got = -1;
    if (rc == NBR_SUCCESS)
        rc = nbr_neighbor_allgather(&rank, 1, MPI_INT, &got, 1, MPI_INT, ring);
    int ok = rc == NBR_SUCCESS && got == left;
    printf("rank %d: %s (got %d from %d)\n", rank, ok ? "ok" : nbr_error_string(rc), got, left);
    if (rc == NBR_SUCCESS)
        MPI_Comm_free(&ring);
    MPI_Finalize();
    return ok ? 0 : 1;
}
