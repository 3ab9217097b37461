/* A plain MPI program, legal by MPI's progress rule, that deadlocks unless
 * nbrcoll's operations move while a rank waits in another MPI call:
 *
 *  1. the communicator's first call is nonblocking, and rank 0 starts it
 *     and then enters a barrier on MPI_COMM_WORLD while every other rank
 *     is in that barrier first and starts the call after it: the call must
 *     not wait for the others in its start (no set-up, no decision there);
 *  2. every rank starts a nonblocking allgather and alltoallv (plans of
 *     several rounds under relay algorithms), then even ranks enter a
 *     barrier before they wait, odd ranks wait first: an odd rank's wait
 *     needs rounds its even neighbors post only from inside the barrier;
 *  3. the same with a blocking point-to-point exchange in place of the
 *     barrier, at another block size.
 *
 * Rank 0 prints whether every block arrived right on every rank. With
 * --thread-multiple it asks for MPI_THREAD_MULTIPLE, where nbrcoll runs
 * no hook in MPI's progress engine (as on MPICH): the same must hold. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 6

static int check(const int *got, const int *from, int n, int blocks, int tag)
{
    int right = 1;
    for (int b = 0; b < blocks; b++)
        for (int i = 0; i < n; i++)
            right &= got[b * n + i] == from[b] * 100000 + tag * 1000 + i;
    return right;
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE;
    if (argc > 1 && strcmp(argv[1], "--thread-multiple") == 0)
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* both ways round a ring, and to the rank half-way round */
    int peers[3] = {(rank + 1) % size, (rank + size - 1) % size, (rank + size / 2) % size};
    int degree = size > 2 ? 3 : 2, right = 1;
    MPI_Comm ring;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, degree, peers, MPI_UNWEIGHTED, degree, peers,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring);
    int max_n = 4096, *send = malloc((size_t)max_n * sizeof(int));
    int *got = malloc((size_t)max_n * 3 * sizeof(int)), counts[3], displs[3], zeros[3] = {0};
    int from[3];
    /* what the ring's neighbor order says each block is from */
    int indegree = 0, outdegree = 0, weighted = 0;
    MPI_Dist_graph_neighbors_count(ring, &indegree, &outdegree, &weighted);
    /* GCC takes Open MPI's MPI_UNWEIGHTED sentinel for an empty array */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
    MPI_Dist_graph_neighbors(ring, indegree, from, MPI_UNWEIGHTED, outdegree, peers,
                             MPI_UNWEIGHTED);
#pragma GCC diagnostic pop
    for (int round = 0; round < ROUNDS; round++) {
        int n = round < ROUNDS / 2 ? 4 : 1024 + round, tag = round;
        for (int i = 0; i < n; i++)
            send[i] = rank * 100000 + tag * 1000 + i;
        for (int b = 0; b < 3; b++) {
            counts[b] = n;
            displs[b] = b * n;
        }
        MPI_Request requests[2];
        if (round == 0 && rank != 0)
            MPI_Barrier(MPI_COMM_WORLD); /* 1: rank 0 starts the first call first */
        MPI_Ineighbor_allgather(send, n, MPI_INT, got, n, MPI_INT, ring, &requests[0]);
        int *got_too = malloc((size_t)n * 3 * sizeof(int));
        MPI_Ineighbor_alltoallv(send, counts, zeros, MPI_INT, got_too, counts, displs, MPI_INT,
                                ring, &requests[1]); /* the same block to each */
        if (round == 0 && rank == 0)
            MPI_Barrier(MPI_COMM_WORLD);
        int waits_first = rank % 2;
        if (!waits_first && round < ROUNDS / 2) {
            MPI_Barrier(MPI_COMM_WORLD); /* 2 */
        } else if (!waits_first) { /* 3: a blocking exchange with the next odd rank */
            int partner = (rank + 1) % size, token = rank, back = -1;
            if (partner % 2 == 1)
                MPI_Sendrecv(&token, 1, MPI_INT, partner, 7, &back, 1, MPI_INT, partner, 7,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
        if (waits_first && round < ROUNDS / 2) {
            MPI_Barrier(MPI_COMM_WORLD);
        } else if (waits_first) {
            int partner = (rank + size - 1) % size, token = rank, back = -1;
            if (partner % 2 == 0)
                MPI_Sendrecv(&token, 1, MPI_INT, partner, 7, &back, 1, MPI_INT, partner, 7,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        right &= check(got, from, n, indegree, tag) && check(got_too, from, n, indegree, tag);
        free(got_too);
    }
    int everywhere = 0;
    MPI_Allreduce(&right, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0)
        printf("progress_barrier: %d rounds, every block right on every rank: %s%s\n", ROUNDS,
               everywhere ? "yes" : "NO",
               provided == MPI_THREAD_MULTIPLE ? " (MPI_THREAD_MULTIPLE)" : "");
    free(send);
    free(got);
    MPI_Comm_free(&ring);
    MPI_Finalize();
    return 0;
}
