/* What PETSc's PetscSF (the neighbor type) does: ranks whose in- and
 * out-degree are both 0 skip the neighborhood calls. MPI asks every rank
 * to call, but Open MPI and MPICH run it, and so must nbrcoll: under auto
 * nothing in a call may then wait for every rank.
 *
 * The last rank has no neighbors and makes no neighborhood call; the
 * others form a ring both ways. They make 40 calls (past auto's decision
 * points at 1, 4 and 16): nonblocking alltoallv with counts that change
 * from call to call, then blocking allgather and alltoallv; the idle rank
 * meanwhile waits in a barrier on MPI_COMM_WORLD. Rank 0 prints whether
 * every block arrived right. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define CALLS 40
#define MAX_COUNT 9

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int ring = size - 1, idle = rank == ring;
    int peers[2] = {(rank + 1) % ring, (rank + ring - 1) % ring};
    int degree = idle ? 0 : ring > 1 ? 2 : 0;
    MPI_Comm comm;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, degree, peers, MPI_UNWEIGHTED, degree, peers,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &comm);
    int right = 1;
    if (!idle && degree > 0) {
        int send[2 * MAX_COUNT], recv[2 * MAX_COUNT], block[2], got[2];
        for (int call = 0; call < CALLS; call++) {
            /* what rank r sends to its d-th neighbor in this call */
            int counts[2], displs[2] = {0, MAX_COUNT}, rcounts[2];
            for (int d = 0; d < 2; d++) {
                counts[d] = (rank + d + call) % MAX_COUNT;
                for (int i = 0; i < counts[d]; i++)
                    send[d * MAX_COUNT + i] = rank * 1000 + call * 10 + d;
                /* the sender peers[d] sends to me as its (1 - d)-th neighbor */
                rcounts[d] = (peers[d] + (1 - d) + call) % MAX_COUNT;
            }
            MPI_Request request;
            MPI_Ineighbor_alltoallv(send, counts, displs, MPI_INT, recv, rcounts, displs, MPI_INT,
                                    comm, &request);
            MPI_Wait(&request, MPI_STATUS_IGNORE);
            for (int d = 0; d < 2; d++)
                for (int i = 0; i < rcounts[d]; i++)
                    right &= recv[d * MAX_COUNT + i] == peers[d] * 1000 + call * 10 + (1 - d);
            block[0] = rank * 100 + call;
            MPI_Neighbor_allgather(block, 1, MPI_INT, got, 1, MPI_INT, comm);
            right &= got[0] == peers[0] * 100 + call && got[1] == peers[1] * 100 + call;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int all = 0;
    MPI_Reduce(&right, &all, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("idle_ranks_skip: %d calls on %d of %d ranks, the last skipping them: right: %s\n",
               CALLS, ring, size, all ? "yes" : "no");
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
