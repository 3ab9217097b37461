/* A test program's neighborhood collectives computed with point-to-point
 * messages only: what a program run with --reference prints where the MPI
 * library's own collectives cannot be the yardstick (MPICH 4.0 hangs in
 * MPI_Wait on an inactive persistent collective request, pmodels/mpich
 * #6334, and its alltoallw fails where in- and out-degree differ, #6233;
 * both fixed in 4.1). The drop-in carries no point-to-point call, so a
 * reference run never passes through nbrcoll.
 *
 * The blocks go where MPI-4.1 section 8.6 puts them: a graph's k-th edge
 * to a rank meets that rank's k-th edge from this one (MPI's
 * non-overtaking order on one tag), and a cartesian block sent in one
 * direction of a dimension lands in the other direction's slot (a tag per
 * direction, so a short periodic dimension, both ways the same rank, stays
 * right). MPI_PROC_NULL's blocks stay as they are. */
#ifndef NBR_TEST_REFERENCE_H
#define NBR_TEST_REFERENCE_H

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#define REFERENCE_TAG 2900

static int reference_mode; /* the program was started with --reference */

static inline void reference_from_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        reference_mode |= strcmp(argv[i], "--reference") == 0;
}

/* comm's neighbors in MPI's order, in and out (the exchange frees them). */
typedef struct reference_neighborhood {
    int *in, *out, indegree, outdegree, cartesian;
} reference_neighborhood_t;

static inline reference_neighborhood_t reference_read(MPI_Comm comm)
{
    reference_neighborhood_t n;
    int kind = MPI_UNDEFINED, rank = 0;
    MPI_Topo_test(comm, &kind);
    MPI_Comm_rank(comm, &rank);
    n.cartesian = kind == MPI_CART;
    if (kind == MPI_CART) {
        int ndims = 0;
        MPI_Cartdim_get(comm, &ndims);
        n.indegree = n.outdegree = 2 * ndims;
        n.in = malloc(sizeof(int) * (size_t)(2 * ndims + 1));
        n.out = malloc(sizeof(int) * (size_t)(2 * ndims + 1));
        for (int d = 0; d < ndims; d++)
            MPI_Cart_shift(comm, d, 1, &n.in[2 * d], &n.in[2 * d + 1]);
        memcpy(n.out, n.in, sizeof(int) * (size_t)(2 * ndims));
    } else if (kind == MPI_GRAPH) {
        MPI_Graph_neighbors_count(comm, rank, &n.indegree);
        n.outdegree = n.indegree;
        n.in = malloc(sizeof(int) * (size_t)(n.indegree + 1));
        n.out = malloc(sizeof(int) * (size_t)(n.indegree + 1));
        MPI_Graph_neighbors(comm, rank, n.indegree, n.in);
        memcpy(n.out, n.in, sizeof(int) * (size_t)n.indegree);
    } else {
        int weighted = 0;
        MPI_Dist_graph_neighbors_count(comm, &n.indegree, &n.outdegree, &weighted);
        n.in = malloc(sizeof(int) * (size_t)(n.indegree + 1));
        n.out = malloc(sizeof(int) * (size_t)(n.outdegree + 1));
        int *in_w = malloc(sizeof(int) * (size_t)(n.indegree + 1));
        int *out_w = malloc(sizeof(int) * (size_t)(n.outdegree + 1));
        MPI_Dist_graph_neighbors(comm, n.indegree, n.in, in_w, n.outdegree, n.out, out_w);
        free(in_w);
        free(out_w);
    }
    return n;
}

/* The alltoallw of every form on n: block k of each side at a byte
 * displacement with its own count and type. Blocking; the program's next
 * MPI call sees every block in place. Frees n's lists. */
static inline void reference_exchange_w(reference_neighborhood_t n, const void *sendbuf,
                                        const int *sendcounts, const MPI_Aint *sdispls,
                                        const MPI_Datatype *sendtypes, void *recvbuf,
                                        const int *recvcounts, const MPI_Aint *rdispls,
                                        const MPI_Datatype *recvtypes, MPI_Comm comm)
{
    MPI_Request *requests = malloc(sizeof(MPI_Request) * (size_t)(n.indegree + n.outdegree + 1));
    for (int k = 0; k < n.indegree; k++)
        MPI_Irecv((char *)recvbuf + rdispls[k], recvcounts[k], recvtypes[k], n.in[k],
                  REFERENCE_TAG + (n.cartesian ? k ^ 1 : 0), comm, &requests[k]);
    for (int k = 0; k < n.outdegree; k++)
        MPI_Isend((const char *)sendbuf + sdispls[k], sendcounts[k], sendtypes[k], n.out[k],
                  REFERENCE_TAG + (n.cartesian ? k : 0), comm, &requests[n.indegree + k]);
    MPI_Waitall(n.indegree + n.outdegree, requests, MPI_STATUSES_IGNORE);
    free(requests);
    free(n.in);
    free(n.out);
}

static inline void reference_alltoallw(const void *sendbuf, const int *sendcounts,
                                       const MPI_Aint *sdispls, const MPI_Datatype *sendtypes,
                                       void *recvbuf, const int *recvcounts,
                                       const MPI_Aint *rdispls, const MPI_Datatype *recvtypes,
                                       MPI_Comm comm)
{
    reference_exchange_w(reference_read(comm), sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                         recvcounts, rdispls, recvtypes, comm);
}

/* Every other form as that alltoallw: uniform blocks (displs NULL: block
 * k at k counts of the side) or the v-form's displacements, in elements. */
static inline void reference_exchange(const void *sendbuf, int sendcount, const int *sendcounts,
                                      const int *sdispls, MPI_Datatype sendtype, void *recvbuf,
                                      int recvcount, const int *recvcounts, const int *rdispls,
                                      MPI_Datatype recvtype, int same_block, MPI_Comm comm)
{
    reference_neighborhood_t nb = reference_read(comm);
    MPI_Aint lb, send_extent, recv_extent;
    MPI_Type_get_extent(sendtype, &lb, &send_extent);
    MPI_Type_get_extent(recvtype, &lb, &recv_extent);
    size_t n = (size_t)(nb.indegree > nb.outdegree ? nb.indegree : nb.outdegree) + 1;
    int *scounts = malloc(sizeof(int) * n), *rcounts = malloc(sizeof(int) * n);
    MPI_Aint *sd = malloc(sizeof(MPI_Aint) * n), *rd = malloc(sizeof(MPI_Aint) * n);
    MPI_Datatype *stypes = malloc(sizeof(MPI_Datatype) * n);
    MPI_Datatype *rtypes = malloc(sizeof(MPI_Datatype) * n);
    for (int k = 0; k < nb.outdegree; k++) {
        scounts[k] = sendcounts ? sendcounts[k] : sendcount;
        sd[k] = same_block ? 0
                : sdispls  ? sdispls[k] * send_extent
                           : (MPI_Aint)k * sendcount * send_extent;
        stypes[k] = sendtype;
    }
    for (int k = 0; k < nb.indegree; k++) {
        rcounts[k] = recvcounts ? recvcounts[k] : recvcount;
        rd[k] = rdispls ? rdispls[k] * recv_extent : (MPI_Aint)k * recvcount * recv_extent;
        rtypes[k] = recvtype;
    }
    reference_exchange_w(nb, sendbuf, scounts, sd, stypes, recvbuf, rcounts, rd, rtypes, comm);
    free(scounts);
    free(rcounts);
    free(sd);
    free(rd);
    free(stypes);
    free(rtypes);
}

/* A request that is already complete, for a nonblocking form's caller. */
static inline void reference_done(MPI_Request *request)
{
    MPI_Isend(NULL, 0, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_SELF, request);
}

/* The program's nonblocking calls: MPI's own, or the reference's. */
static inline int ref_ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                   MPI_Comm comm, MPI_Request *request)
{
    if (!reference_mode)
        return MPI_Ineighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                       recvtype, comm, request);
    reference_exchange(sendbuf, sendcount, NULL, NULL, sendtype, recvbuf, recvcount, NULL, NULL,
                       recvtype, 1, comm);
    reference_done(request);
    return MPI_SUCCESS;
}

static inline int ref_ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void *recvbuf, const int *recvcounts, const int *displs,
                                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    if (!reference_mode)
        return MPI_Ineighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                        displs, recvtype, comm, request);
    reference_exchange(sendbuf, sendcount, NULL, NULL, sendtype, recvbuf, 0, recvcounts, displs,
                       recvtype, 1, comm);
    reference_done(request);
    return MPI_SUCCESS;
}

static inline int ref_ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                  MPI_Comm comm, MPI_Request *request)
{
    if (!reference_mode)
        return MPI_Ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                      recvtype, comm, request);
    reference_exchange(sendbuf, sendcount, NULL, NULL, sendtype, recvbuf, recvcount, NULL, NULL,
                       recvtype, 0, comm);
    reference_done(request);
    return MPI_SUCCESS;
}

static inline int ref_ineighbor_alltoallv(const void *sendbuf, const int *sendcounts,
                                   const int *sdispls, MPI_Datatype sendtype, void *recvbuf,
                                   const int *recvcounts, const int *rdispls,
                                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    if (!reference_mode)
        return MPI_Ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                       recvcounts, rdispls, recvtype, comm, request);
    reference_exchange(sendbuf, 0, sendcounts, sdispls, sendtype, recvbuf, 0, recvcounts,
                       rdispls, recvtype, 0, comm);
    reference_done(request);
    return MPI_SUCCESS;
}

static inline int ref_ineighbor_alltoallw(const void *sendbuf, const int *sendcounts,
                                   const MPI_Aint *sdispls, const MPI_Datatype *sendtypes,
                                   void *recvbuf, const int *recvcounts, const MPI_Aint *rdispls,
                                   const MPI_Datatype *recvtypes, MPI_Comm comm,
                                   MPI_Request *request)
{
    if (!reference_mode)
        return MPI_Ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                       recvcounts, rdispls, recvtypes, comm, request);
    reference_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                        recvtypes, comm);
    reference_done(request);
    return MPI_SUCCESS;
}

#endif
