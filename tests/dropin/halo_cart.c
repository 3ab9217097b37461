/* A plain MPI program (it knows nothing of nbrcoll): a 2-D periodic
 * halo exchange with MPI_Neighbor_alltoall, a few smoothing steps, and a
 * checksum on rank 0. */
#include <mpi.h>
#include <stdio.h>

#define N 64 /* values per edge of a rank's block */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank, dims[2] = {0, 0}, periods[2] = {1, 1};
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Dims_create(size, 2, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Comm_rank(cart, &rank);
    double edge[4][N], halo[4][N], value = rank + 1.0;
    for (int step = 0; step < 10; step++) {
        for (int d = 0; d < 4; d++)
            for (int i = 0; i < N; i++)
                edge[d][i] = value * (d + 1) + i * 0.001;
        if (MPI_Neighbor_alltoall(edge, N, MPI_DOUBLE, halo, N, MPI_DOUBLE, cart) != MPI_SUCCESS)
            return 1;
        double sum = 0;
        for (int d = 0; d < 4; d++)
            for (int i = 0; i < N; i++)
                sum += halo[d][i];
        value = 0.5 * value + 0.5 * sum / (4.0 * N);
    }
    double total = 0;
    MPI_Reduce(&value, &total, 1, MPI_DOUBLE, MPI_SUM, 0, cart);
    if (rank == 0)
        printf("halo_cart: %d ranks (%d x %d), checksum %.12f\n", size, dims[0], dims[1], total);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}
