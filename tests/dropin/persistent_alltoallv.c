/* A plain MPI program: persistent neighborhood alltoallv and allgather
 * (MPI_Neighbor_*_init in MPI-4, Open MPI's MPIX_Neighbor_*_init from its
 * pcollreq extension before that) on a size x 1 cartesian grid, periodic
 * along the first dimension only (no dimension of 2: Open MPI 4.1's own
 * persistent collectives order a 2-long periodic dimension's blocks
 * against the standard), started with the program's own persistent ring
 * requests in one MPI_Startall and completed in one MPI_Waitall, a few
 * steps; then MPI_Request_free. Rank 0 prints a checksum. --reference:
 * the collectives' blocks by point-to-point messages before each start,
 * their requests persistent ones to MPI_PROC_NULL (reference.h). */
#include "reference.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#if MPI_VERSION < 4
#include <mpi-ext.h>
#define MPI_Neighbor_alltoallv_init MPIX_Neighbor_alltoallv_init
#define MPI_Neighbor_allgather_init MPIX_Neighbor_allgather_init
#endif

#define MAXB 40 /* doubles per block, at most */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    reference_from_args(argc, argv);
    int size, rank, periods[2] = {1, 0};
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int dims[2] = {size, 1};
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Comm_rank(cart, &rank);
    int nbrs[4]; /* the order MPI gives a cartesian grid's neighbors */
    MPI_Cart_shift(cart, 0, 1, &nbrs[0], &nbrs[1]);
    MPI_Cart_shift(cart, 1, 1, &nbrs[2], &nbrs[3]);
    /* blocks from MPI_PROC_NULL stay as they are: zero */
    double send[4 * MAXB] = {0}, recv[4 * MAXB] = {0}, gathered[4 * 3] = {0};
    int scounts[4], sdispls[4], rcounts[4], rdispls[4];
    for (int k = 0; k < 4; k++) {
        /* block k goes to nbrs[k]; what arrives from nbrs[k] was sent by it
         * toward this rank, the opposite direction (k ^ 1) */
        scounts[k] = 1 + (rank * 7 + k * 5) % MAXB;
        rcounts[k] = nbrs[k] == MPI_PROC_NULL ? 1 : 1 + (nbrs[k] * 7 + (k ^ 1) * 5) % MAXB;
        sdispls[k] = rdispls[k] = k * MAXB;
    }
    double state[3] = {rank, rank * 0.5, 1.0};
    MPI_Request r[4];
    if (reference_mode) {
        MPI_Send_init(NULL, 0, MPI_DOUBLE, MPI_PROC_NULL, 0, cart, &r[0]);
        MPI_Send_init(NULL, 0, MPI_DOUBLE, MPI_PROC_NULL, 0, cart, &r[1]);
    } else {
        MPI_Neighbor_alltoallv_init(send, scounts, sdispls, MPI_DOUBLE, recv, rcounts, rdispls,
                                    MPI_DOUBLE, cart, MPI_INFO_NULL, &r[0]);
        MPI_Neighbor_allgather_init(state, 3, MPI_DOUBLE, gathered, 3, MPI_DOUBLE, cart,
                                    MPI_INFO_NULL, &r[1]);
    }
    double ring_out = 0, ring_in = 0;
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Recv_init(&ring_in, 1, MPI_DOUBLE, left, 9, MPI_COMM_WORLD, &r[2]);
    MPI_Send_init(&ring_out, 1, MPI_DOUBLE, right, 9, MPI_COMM_WORLD, &r[3]);
    /* waiting on an inactive persistent request returns at once */
    MPI_Status status;
    MPI_Wait(&r[0], &status);
    int bad = r[0] == MPI_REQUEST_NULL;
    double check = 0;
    for (int step = 0; step < 8; step++) {
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < scounts[k]; i++)
                send[k * MAXB + i] = state[0] + k + i * 0.25 + step;
        ring_out = state[1] + step;
        if (reference_mode) {
            reference_exchange(send, 0, scounts, sdispls, MPI_DOUBLE, recv, 0, rcounts, rdispls,
                               MPI_DOUBLE, 0, cart);
            reference_exchange(state, 3, NULL, NULL, MPI_DOUBLE, gathered, 3, NULL, NULL,
                               MPI_DOUBLE, 1, cart);
        }
        MPI_Startall(4, r);
        MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
        bad += r[0] == MPI_REQUEST_NULL || r[1] == MPI_REQUEST_NULL;
        double sum = 0;
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < rcounts[k]; i++)
                sum += recv[k * MAXB + i] * (i % 3 + 1);
        for (int k = 0; k < 12; k++)
            sum += gathered[k] * (k + 1);
        state[0] = 0.5 * state[0] + sum * 1e-3 + ring_in * 1e-2;
        state[1] = 0.25 * state[1] + state[0];
        check += state[0];
    }
    for (int k = 0; k < 4; k++)
        MPI_Request_free(&r[k]);
    double total = 0;
    int bad_total = 0;
    MPI_Reduce(&check, &total, 1, MPI_DOUBLE, MPI_SUM, 0, cart);
    MPI_Reduce(&bad, &bad_total, 1, MPI_INT, MPI_SUM, 0, cart);
    if (rank == 0)
        printf("persistent_alltoallv: %d ranks (%d x %d), checksum %.9f, %d lost handles\n", size,
               dims[0], dims[1], total, bad_total);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}
