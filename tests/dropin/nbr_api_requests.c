/* The nbr_ API's requests as MPI_Request handles (nbr_request_to_mpi,
 * libnbrcoll_mpi): nonblocking and persistent nbrcoll operations completed
 * with MPI_Wait / MPI_Waitall / MPI_Waitany / MPI_Testsome beside the
 * program's own requests, checked bit for bit against the MPI library's
 * collective (PMPI_: this program's MPI_Neighbor_* names are the
 * drop-in's); MPI_Start, MPI_Cancel and MPI_Request_free where MPI forbids
 * them give MPI_ERR_REQUEST; an error found at completion reaches the
 * statuses. Runs under NBR_ALGORITHM (combining or aggregate: plans of
 * several rounds, which move only while the program waits or tests).
 * Exits 1 with a message on the first failed check, on every rank. */
#include <nbrcoll_mpi.h>

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 50 /* ints per block */

static int rank, size, failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        failures++;
        fprintf(stderr, "nbr_api_requests: rank %d: %s\n", rank, what);
    }
}

static int error_class(int code)
{
    int cls = MPI_SUCCESS;
    MPI_Error_class(code, &cls);
    return cls;
}

static void fill(int *v, int n, int salt)
{
    for (int i = 0; i < n; i++)
        v[i] = rank * 100000 + salt * 1000 + i;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* ring with skips: in from rank-1, rank-2; out to rank+1, rank+2 */
    int in[2] = {(rank + size - 1) % size, (rank + size - 2) % size};
    int out[2] = {(rank + 1) % size, (rank + 2) % size};
    MPI_Comm comm;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, in, MPI_UNWEIGHTED, 2, out, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int send[2 * N], got[2 * N], want[2 * N];
    MPI_Request mine[3];
    nbr_request_t req = NBR_REQUEST_NULL;

    /* 1. nonblocking allgather in one Waitall with the program's ring */
    fill(send, N, 1);
    memset(got, 0xff, sizeof(got));
    int ring_in = -1, ring_out = rank;
    MPI_Irecv(&ring_in, 1, MPI_INT, in[0], 3, MPI_COMM_WORLD, &mine[0]);
    check(nbr_neighbor_iallgather(send, N, MPI_INT, got, N, MPI_INT, comm, &req) == NBR_SUCCESS,
          "iallgather starts");
    check(nbr_request_to_mpi(&req, &mine[1]) == NBR_SUCCESS && req == NBR_REQUEST_NULL,
          "to_mpi takes the request");
    MPI_Isend(&ring_out, 1, MPI_INT, out[0], 3, MPI_COMM_WORLD, &mine[2]);
    check(MPI_Waitall(3, mine, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "Waitall succeeds");
    check(mine[1] == MPI_REQUEST_NULL && ring_in == in[0], "Waitall completes both");
    PMPI_Neighbor_allgather(send, N, MPI_INT, want, N, MPI_INT, comm);
    check(memcmp(got, want, sizeof(got)) == 0, "iallgather matches MPI's");

    /* 2. three in flight, waited for in opposite orders on odd ranks */
    int many_got[3][2 * N];
    MPI_Request three[3];
    for (int k = 0; k < 3; k++) {
        nbr_neighbor_iallgather(send, N - k, MPI_INT, many_got[k], N - k, MPI_INT, comm, &req);
        nbr_request_to_mpi(&req, &three[k]);
    }
    for (int i = 0; i < 3; i++) {
        int k = rank % 2 ? 2 - i : i;
        check(MPI_Wait(&three[k], MPI_STATUS_IGNORE) == MPI_SUCCESS, "Wait in any order");
    }
    for (int k = 0; k < 3; k++) {
        PMPI_Neighbor_allgather(send, N - k, MPI_INT, want, N - k, MPI_INT, comm);
        check(memcmp(many_got[k], want, sizeof(int) * 2 * (size_t)(N - k)) == 0,
              "each of three matches MPI's");
    }

    /* 3. persistent alltoallv: Start / Wait three times; the forbidden calls */
    int scounts[2] = {N, N / 2}, sdispls[2] = {0, N}, rcounts[2] = {N, N / 2}, rdispls[2] = {0, N};
    check(nbr_neighbor_alltoallv_init(send, scounts, sdispls, MPI_INT, got, rcounts, rdispls,
                                      MPI_INT, comm, MPI_INFO_NULL, &req) == NBR_SUCCESS,
          "alltoallv_init");
    MPI_Request persistent;
    check(nbr_request_to_mpi(&req, &persistent) == NBR_SUCCESS, "to_mpi takes a persistent one");
    for (int step = 0; step < 3; step++) {
        fill(send, 2 * N, 10 + step);
        check(MPI_Start(&persistent) == MPI_SUCCESS, "Start");
        check(error_class(MPI_Start(&persistent)) == MPI_ERR_REQUEST, "Start while active fails");
        check(error_class(MPI_Request_free(&persistent)) == MPI_ERR_REQUEST,
              "Request_free while active fails");
        check(error_class(MPI_Cancel(&persistent)) == MPI_ERR_REQUEST, "Cancel fails");
        MPI_Status status;
        check(MPI_Wait(&persistent, &status) == MPI_SUCCESS, "Wait on persistent");
        int count = -1;
        MPI_Get_count(&status, MPI_INT, &count);
        check(count == 0 && persistent != MPI_REQUEST_NULL, "empty status, handle kept");
        PMPI_Neighbor_alltoallv(send, scounts, sdispls, MPI_INT, want, rcounts, rdispls, MPI_INT,
                                comm);
        check(memcmp(got, want, sizeof(int) * (N + N / 2)) == 0, "alltoallv matches MPI's");
    }

    /* 4. Waitany over an inactive persistent one and a nonblocking one;
     * Testsome then finds nothing active */
    MPI_Request pair[2] = {persistent, MPI_REQUEST_NULL};
    nbr_neighbor_iallgather(send, N, MPI_INT, got, N, MPI_INT, comm, &req);
    nbr_request_to_mpi(&req, &pair[1]);
    check(error_class(MPI_Cancel(&pair[1])) == MPI_ERR_REQUEST, "Cancel a nonblocking one fails");
    int index = -1, outcount = -1, indices[2];
    check(MPI_Waitany(2, pair, &index, MPI_STATUS_IGNORE) == MPI_SUCCESS && index == 1 &&
              pair[1] == MPI_REQUEST_NULL,
          "Waitany skips the inactive one");
    check(MPI_Testsome(2, pair, &outcount, indices, MPI_STATUSES_IGNORE) == MPI_SUCCESS &&
              outcount == MPI_UNDEFINED,
          "Testsome: nothing active");
    check(MPI_Request_free(&persistent) == MPI_SUCCESS && persistent == MPI_REQUEST_NULL,
          "Request_free an inactive persistent one");

    /* 5. an error found at completion: the last rank expects one int less
     * from its first in-neighbor (combining's size round tells) */
    const char *algorithm = getenv("NBR_ALGORITHM");
    if (algorithm && strcmp(algorithm, "combining") == 0) {
        int liar = rank == size - 1;
        int counts[2] = {liar ? N - 1 : N, N}, displs[2] = {0, N};
        MPI_Irecv(&ring_in, 1, MPI_INT, in[0], 4, MPI_COMM_WORLD, &mine[0]);
        nbr_neighbor_iallgatherv(send, N, MPI_INT, got, counts, displs, MPI_INT, comm, &req);
        nbr_request_to_mpi(&req, &mine[1]);
        MPI_Send(&ring_out, 1, MPI_INT, out[0], 4, MPI_COMM_WORLD);
        MPI_Status statuses[2];
        int code = MPI_Waitall(2, mine, statuses);
        if (liar)
            check(error_class(code) == MPI_ERR_IN_STATUS &&
                      error_class(statuses[1].MPI_ERROR) == MPI_ERR_TRUNCATE &&
                      statuses[0].MPI_ERROR == MPI_SUCCESS,
                  "a size mismatch reaches the status as MPI_ERR_TRUNCATE");
        else
            check(code == MPI_SUCCESS, "ranks without a mismatch succeed");
    }

    /* 6. arguments */
    MPI_Request none;
    check(nbr_request_to_mpi(NULL, &none) == NBR_ERR_REQUEST, "to_mpi(NULL)");
    req = NBR_REQUEST_NULL;
    check(nbr_request_to_mpi(&req, &none) == NBR_ERR_REQUEST, "to_mpi(null request)");

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("nbr_api_requests (%s): %s\n", algorithm ? algorithm : "auto",
               all ? "FAILED" : "passed");
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return all ? 1 : 0;
}
