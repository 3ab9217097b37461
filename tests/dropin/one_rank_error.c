/* A plain MPI program (MPI_ERRORS_RETURN) in which one rank gets an error
 * and the others do not: the last rank expects one int less from each
 * in-neighbor than they send, in a blocking allgather and in a nonblocking
 * alltoallv waited for beside the program's own Isend/Irecv. Plain MPI
 * reports the truncation on that rank alone and returns everywhere; a
 * library that relays blocks must not leave the other ranks waiting for
 * what the failed rank would have passed on. Rank 0 prints whether the
 * last rank saw its errors and whether, afterwards, a correct allgather
 * (on a duplicate of the communicator) gives every rank the right data. */
#include <mpi.h>
#include <stdio.h>

enum { N = 6 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* in from rank-1 and rank-2, out to rank+1 and rank+2 (relays exist) */
    int in[2] = {(rank + size - 1) % size, (rank + size - 2) % size};
    int out[2] = {(rank + 1) % size, (rank + 2) % size};
    MPI_Comm comm;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, in, MPI_UNWEIGHTED, 2, out, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    /* Open MPI raises a Waitall's error on MPI_COMM_WORLD */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int liar = rank == size - 1;
    int send[2 * N], recv[2 * N];
    for (int i = 0; i < 2 * N; i++) {
        send[i] = rank * 100 + i;
        recv[i] = -1;
    }

    /* blocking allgather: the last rank's receive count is one short */
    int bad_blocking = MPI_Neighbor_allgather(send, N, MPI_INT, recv, liar ? N - 1 : N, MPI_INT,
                                              comm) != MPI_SUCCESS;
    /* the others receive every block right, relayed by the short rank or not */
    int others_right = liar || !bad_blocking;
    for (int k = 0; k < 2 && !liar; k++)
        for (int i = 0; i < N; i++)
            others_right &= recv[k * N + i] == in[k] * 100 + i;

    /* nonblocking alltoallv in one Waitall with the program's own ring */
    int counts[2] = {N, N}, displs[2] = {0, N};
    int rcounts[2] = {liar ? N - 1 : N, N};
    int token = rank, got = -1;
    MPI_Request requests[3];
    MPI_Irecv(&got, 1, MPI_INT, in[0], 7, MPI_COMM_WORLD, &requests[0]);
    int rc = MPI_Ineighbor_alltoallv(send, counts, displs, MPI_INT, recv, rcounts, displs, MPI_INT,
                                     comm, &requests[1]);
    MPI_Isend(&token, 1, MPI_INT, out[0], 7, MPI_COMM_WORLD, &requests[2]);
    if (rc != MPI_SUCCESS)
        requests[1] = MPI_REQUEST_NULL;
    MPI_Status statuses[3];
    int wait_rc = MPI_Waitall(3, requests, statuses);
    int bad_nonblocking = rc != MPI_SUCCESS || wait_rc != MPI_SUCCESS;
    int ring_right = got == in[0];

    /* afterwards, a correct allgather everywhere, on a duplicate: MPI
     * promises nothing of a communicator after an error (plain Open MPI at
     * times leaves a failed collective's messages there for the next call
     * to match); nbrcoll's own recovery on the same communicator is
     * mpi.errors' to test */
    for (int i = 0; i < 2 * N; i++)
        recv[i] = -1;
    MPI_Comm fresh;
    MPI_Comm_dup(comm, &fresh);
    MPI_Comm_set_errhandler(fresh, MPI_ERRORS_RETURN);
    int after_rc = MPI_Neighbor_allgather(send, N, MPI_INT, recv, N, MPI_INT, fresh);
    MPI_Comm_free(&fresh);
    int right = after_rc == MPI_SUCCESS && ring_right;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < N; i++)
            right &= recv[k * N + i] == in[k] * 100 + i;

    int mine[4] = {liar ? bad_blocking : 1, others_right, liar ? bad_nonblocking : 1, right};
    int all[4];
    MPI_Allreduce(mine, all, 4, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0)
        printf("one_rank_error: the short rank saw an error: %s (blocking; the others right: "
               "%s), %s (nonblocking); then a correct allgather right on all ranks: %s\n",
               all[0] ? "yes" : "no", all[1] ? "yes" : "no", all[2] ? "yes" : "no",
               all[3] ? "yes" : "no");
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
