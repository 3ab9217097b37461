/* A plain MPI program that passes info at communicator creation: one ring
 * with nbr_disable=true (the drop-in leaves it to MPI), one with
 * nbr_algorithm=combining (the drop-in sets it up at once with it). MPI
 * ignores both keys. Rank 0 prints a checksum of both rings' allgathers;
 * creation_info.sh checks the log for which rings nbrcoll took. */
#include <mpi.h>
#include <stdio.h>

static long long ring_allgather(MPI_Info info, int rank, int size)
{
    int in[2] = {(rank + size - 1) % size, (rank + size - 2) % size};
    int out[2] = {(rank + 1) % size, (rank + 2) % size};
    MPI_Comm ring;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, in, MPI_UNWEIGHTED, 2, out, MPI_UNWEIGHTED,
                                   info, 0, &ring);
    int send[3] = {rank, rank * 7, rank * 13}, recv[6] = {0};
    MPI_Neighbor_allgather(send, 3, MPI_INT, recv, 3, MPI_INT, ring);
    long long sum = 0;
    for (int i = 0; i < 6; i++)
        sum += (long long)(i + 1) * recv[i];
    MPI_Comm_free(&ring);
    return sum;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Info off, combining;
    MPI_Info_create(&off);
    MPI_Info_set(off, "nbr_disable", "true");
    MPI_Info_create(&combining);
    MPI_Info_set(combining, "nbr_algorithm", "combining");
    long long mine[2] = {ring_allgather(off, rank, size), ring_allgather(combining, rank, size)};
    long long all[2];
    MPI_Reduce(mine, all, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("creation_info: checksums %lld (nbr_disable), %lld (nbr_algorithm)\n", all[0],
               all[1]);
    MPI_Info_free(&off);
    MPI_Info_free(&combining);
    MPI_Finalize();
    return 0;
}
