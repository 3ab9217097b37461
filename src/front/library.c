/* The "mpi" algorithm: the MPI library's own neighborhood collective on
 * the user's arguments, on nbrcoll's duplicate of the communicator (same
 * topology, same neighbor order). Called through PMPI_, so that it stays
 * the library's when nbrcoll takes over the MPI_ names of a program.
 *
 * Blocking calls run the library's blocking collective (its fastest form),
 * nonblocking and persistent ones its nonblocking one, which MPI
 * progresses by itself: MPI never matches one form with the other, and
 * every rank makes the same kind of call. Before a blocking collective,
 * nbrcoll's own requests in flight on the communicator are run to their
 * end: inside the library this rank could not post their next phases,
 * and a peer waiting for those would never reach the collective. Every
 * rank started them before this call, and a blocking collective may wait
 * for every rank anyway, so draining them first waits for nothing MPI
 * would not. */
#include "front/library.h"

#include "base/log.h"
#include "front/select.h"

#include <sched.h>
#include <stdlib.h>

/* A persistent request posts the library's nonblocking collective at every
 * start rather than keeping the library's own persistent one (MPI-4, or
 * Open MPI 4.1's MPIX_Neighbor_*_init): Open MPI aborts a persistent
 * collective's schedule after a receive error and a restart then hangs
 * (tried: Errors.PersistentRestartAfterReceiveError), where nbrcoll
 * promises the next start runs. Switching only the failed rank to the
 * nonblocking form, or to a new persistent request, hangs too: only that
 * rank knows of the error. The price is about 2 us a call at 8 B and
 * nothing measurable from 4 KiB up (docs/decisions.md, D1). */

/* nbrcoll takes a NULL buffer where it moves no bytes (or, where it does,
 * as MPI_BOTTOM: request.c checked that) and NULL count and displacement
 * arrays where a degree is 0; Open MPI 4.1 rejects NULL buffers and arrays
 * (MPI_ERR_BUFFER) where nothing moves, so the library gets real ones. */
static char no_bytes[1];
static const int no_counts[1] = {0};
static const MPI_Aint no_displs[1] = {0};
static const MPI_Datatype no_types[1] = {MPI_DATATYPE_NULL};

/* A persistent request calls the library at every start with the types
 * of its _init, and MPI lets the user free theirs meanwhile: the request
 * keeps its own duplicate of a derived one. */
static int keep_type(MPI_Datatype *type, int *owned)
{
    int ints = 0, addresses = 0, types = 0, combiner = MPI_COMBINER_NAMED;
    int mrc = MPI_Type_get_envelope(*type, &ints, &addresses, &types, &combiner);
    if (mrc == MPI_SUCCESS && combiner != MPI_COMBINER_NAMED) {
        MPI_Datatype user = *type;
        if ((mrc = MPI_Type_dup(user, type)) != MPI_SUCCESS)
            *type = user;
        *owned = mrc == MPI_SUCCESS;
    }
    return mrc == MPI_SUCCESS ? NBR_SUCCESS : nbr_mpi_failed("MPI_Type_dup", mrc);
}

/* A persistent alltoallw: its own array of the n types, each derived one
 * duplicated. */
static int keep_types(const MPI_Datatype *types, int n, MPI_Datatype **kept, char **owned)
{
    *kept = malloc(((size_t)n + 1) * sizeof(MPI_Datatype));
    *owned = calloc((size_t)n + 1, 1);
    if (!*kept || !*owned)
        return NBR_ERR_NOMEM;
    int rc = NBR_SUCCESS;
    for (int k = 0; k < n; k++) {
        int mine = 0;
        (*kept)[k] = types[k];
        if (rc == NBR_SUCCESS)
            rc = keep_type(&(*kept)[k], &mine);
        (*owned)[k] = (char)mine;
    }
    return rc;
}

static int moves_bytes(const nbr_slot_t *slots, int n)
{
    for (int i = 0; i < n; i++)
        if (slots[i].bytes > 0)
            return 1;
    return 0;
}

int nbr_library_keep(nbr_request_t req, const nbr_call_t *call)
{
    nbr_call_t *c = &req->call;
    *c = *call;
    /* a NULL buffer that moves bytes is MPI_BOTTOM, for the library too */
    if (!c->sendbuf && (req->comm->outdegree == 0 ||
                        !moves_bytes(req->layout.send, req->layout.num_send_slots)))
        c->sendbuf = no_bytes;
    if (!c->recvbuf && !moves_bytes(req->layout.recv, req->layout.num_recv_slots))
        c->recvbuf = no_bytes;
    c->sendcounts = c->sendcounts ? c->sendcounts : no_counts;
    c->sdispls = c->sdispls ? c->sdispls : no_counts;
    c->recvcounts = c->recvcounts ? c->recvcounts : no_counts;
    c->rdispls = c->rdispls ? c->rdispls : no_counts;
    c->sdispls_w = c->sdispls_w ? c->sdispls_w : no_displs;
    c->rdispls_w = c->rdispls_w ? c->rdispls_w : no_displs;
    c->sendtypes = c->sendtypes ? c->sendtypes : no_types;
    c->recvtypes = c->recvtypes ? c->recvtypes : no_types;
    req->library_send_type_owned = req->library_recv_type_owned = 0;
    /* the library reads alltoallw's type arrays again when a nonblocking
     * call completes (Open MPI 4.1 releases the types then), after the
     * caller may have reused them: it gets arrays of its own */
    if (c->kind == NBR_CALL_ALLTOALLW && !c->blocking) {
        int rc = keep_types(c->sendtypes, req->comm->user_outdegree, &req->library_types[0],
                            &req->library_types_owned[0]);
        if (rc == NBR_SUCCESS)
            rc = keep_types(c->recvtypes, req->comm->user_indegree, &req->library_types[1],
                            &req->library_types_owned[1]);
        c->sendtypes = req->library_types[0] ? req->library_types[0] : no_types;
        c->recvtypes = req->library_types[1] ? req->library_types[1] : no_types;
        return rc;
    }
    if (!req->persistent)
        return NBR_SUCCESS;
    int rc = keep_type(&c->sendtype, &req->library_send_type_owned);
    return rc == NBR_SUCCESS ? keep_type(&c->recvtype, &req->library_recv_type_owned) : rc;
}

void nbr_library_release(nbr_request_t req)
{
    if (req->library_send_type_owned)
        MPI_Type_free(&req->call.sendtype);
    if (req->library_recv_type_owned)
        MPI_Type_free(&req->call.recvtype);
    req->library_send_type_owned = req->library_recv_type_owned = 0;
    int degree[2] = {req->comm ? req->comm->user_outdegree : 0,
                     req->comm ? req->comm->user_indegree : 0};
    for (int side = 0; side < 2; side++) {
        for (int k = 0; req->library_types_owned[side] && k < degree[side]; k++)
            if (req->library_types_owned[side][k])
                MPI_Type_free(&req->library_types[side][k]);
        free(req->library_types[side]);
        free(req->library_types_owned[side]);
        req->library_types[side] = NULL;
        req->library_types_owned[side] = NULL;
    }
}

static int post(nbr_request_t req)
{
    const nbr_call_t *c = &req->call;
    MPI_Comm comm = req->comm->comm;
    MPI_Request *r = &req->library_request;
    int mrc = MPI_SUCCESS;
    switch (c->kind) {
    case NBR_CALL_ALLGATHER:
        mrc = PMPI_Ineighbor_allgather(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                                       c->recvcount, c->recvtype, comm, r);
        break;
    case NBR_CALL_ALLGATHERV:
        mrc = PMPI_Ineighbor_allgatherv(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                                        c->recvcounts, c->rdispls, c->recvtype, comm, r);
        break;
    case NBR_CALL_ALLTOALL:
        mrc = PMPI_Ineighbor_alltoall(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                                      c->recvcount, c->recvtype, comm, r);
        break;
    case NBR_CALL_ALLTOALLV:
        mrc = PMPI_Ineighbor_alltoallv(c->sendbuf, c->sendcounts, c->sdispls, c->sendtype,
                                       c->recvbuf, c->recvcounts, c->rdispls, c->recvtype,
                                       comm, r);
        break;
    default:
        mrc = PMPI_Ineighbor_alltoallw(c->sendbuf, c->sendcounts, c->sdispls_w, c->sendtypes,
                                       c->recvbuf, c->recvcounts, c->rdispls_w, c->recvtypes,
                                       comm, r);
        break;
    }
    return mrc == MPI_SUCCESS ? NBR_SUCCESS : nbr_library_failed("MPI_Ineighbor_*", mrc);
}

static int run_blocking(nbr_request_t req)
{
    const nbr_call_t *c = &req->call;
    MPI_Comm comm = req->comm->comm;
    int mrc = MPI_SUCCESS;
    switch (c->kind) {
    case NBR_CALL_ALLGATHER:
        mrc = PMPI_Neighbor_allgather(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                                      c->recvcount, c->recvtype, comm);
        break;
    case NBR_CALL_ALLGATHERV:
        mrc = PMPI_Neighbor_allgatherv(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                                       c->recvcounts, c->rdispls, c->recvtype, comm);
        break;
    case NBR_CALL_ALLTOALL:
        mrc = PMPI_Neighbor_alltoall(c->sendbuf, c->sendcount, c->sendtype, c->recvbuf,
                                     c->recvcount, c->recvtype, comm);
        break;
    case NBR_CALL_ALLTOALLV:
        mrc = PMPI_Neighbor_alltoallv(c->sendbuf, c->sendcounts, c->sdispls, c->sendtype,
                                      c->recvbuf, c->recvcounts, c->rdispls, c->recvtype,
                                      comm);
        break;
    default:
        mrc = PMPI_Neighbor_alltoallw(c->sendbuf, c->sendcounts, c->sdispls_w, c->sendtypes,
                                      c->recvbuf, c->recvcounts, c->rdispls_w, c->recvtypes,
                                      comm);
        break;
    }
    return mrc == MPI_SUCCESS ? NBR_SUCCESS : nbr_library_failed("MPI_Neighbor_*", mrc);
}

/* A block longer than its receive is NBR_ERR_TYPE_MISMATCH, as in
 * nbrcoll's own plans. Open MPI 4.1 says so for its nonblocking
 * collectives (MPI_ERR_TRUNCATE) but not for its blocking ones, which
 * report a truncated receive as MPI_ERR_OTHER (or, alltoallv's, as
 * MPI_ERR_IN_STATUS from its internal wait), as they would nothing else a
 * neighborhood collective on valid arguments meets: taken as one too. */
int nbr_library_failed(const char *call, int mpi_code)
{
    int cls = MPI_SUCCESS;
    MPI_Error_class(mpi_code, &cls);
    if (cls != MPI_ERR_TRUNCATE && cls != MPI_ERR_OTHER && cls != MPI_ERR_IN_STATUS)
        return nbr_mpi_failed(call, mpi_code);
    NBR_ERROR("%s: %s: a message was longer than its receive: send and receive signatures "
              "differ", call,
              cls == MPI_ERR_TRUNCATE ? "MPI_ERR_TRUNCATE"
              : cls == MPI_ERR_OTHER  ? "MPI_ERR_OTHER"
                                      : "MPI_ERR_IN_STATUS");
    return NBR_ERR_TYPE_MISMATCH;
}

/* Tests (flag not NULL) or waits for the library's request, with the
 * program's MPI_COMM_WORLD handler set aside (Open MPI 4.1 raises a
 * nonblocking collective's failure there, not on the communicator's,
 * whose nbrcoll returns errors). */
static int complete_library(MPI_Request *request, int *flag)
{
    nbr_world_handler_t saved;
    nbr_world_handler_aside(&saved);
    int mrc = flag ? PMPI_Test(request, flag, MPI_STATUS_IGNORE)
                   : PMPI_Wait(request, MPI_STATUS_IGNORE);
    nbr_world_handler_restore(&saved);
    return mrc;
}

int nbr_library_start(nbr_request_t req)
{
    req->library_request = MPI_REQUEST_NULL;
    if (req->call.blocking)
        return NBR_SUCCESS; /* nbr_library_wait runs it */
    return post(req);
}

/* A completion call that failed leaves the request's state unknown while
 * MPI may still be moving the user's data: wait for it once more, so that
 * the buffers are the user's again when the call returns. */
static int failed_completion(nbr_request_t req, const char *call, int mrc)
{
    int rc = nbr_library_failed(call, mrc);
    if (req->library_request != MPI_REQUEST_NULL)
        complete_library(&req->library_request, NULL);
    return rc;
}

int nbr_library_test(nbr_request_t req, int *done)
{
    *done = 0;
    if (req->call.blocking) { /* nothing to test: it runs in the wait */
        *done = 1;
        return nbr_library_wait(req);
    }
    nbr_progress_all();
    return nbr_library_poll(req, done);
}

int nbr_library_poll(void *request, int *done)
{
    nbr_request_t req = request;
    int mrc = complete_library(&req->library_request, done);
    if (mrc != MPI_SUCCESS) {
        *done = 1;
        return failed_completion(req, "MPI_Test", mrc);
    }
    return NBR_SUCCESS;
}

int nbr_library_wait(nbr_request_t req)
{
    nbr_exec_domain_t *domain = &req->comm->exec;
    if (req->call.blocking) {
        while (domain->in_flight)
            if (!nbr_progress_all())
                sched_yield(); /* ranks may share cores: let the peer run */
        return run_blocking(req);
    }
    int done = 0, rc = NBR_SUCCESS;
    while (domain->in_flight && !done && rc == NBR_SUCCESS) {
        rc = nbr_library_test(req, &done);
        if (!done && rc == NBR_SUCCESS)
            sched_yield();
    }
    if (done || rc != NBR_SUCCESS)
        return rc;
    /* alone: MPI may block until it is done */
    int mrc = complete_library(&req->library_request, NULL);
    return mrc == MPI_SUCCESS ? NBR_SUCCESS : failed_completion(req, "MPI_Wait", mrc);
}

/* Everything a blocking allgather costs beyond the library's call (a
 * request, both datatypes described, a layout of every slot, the plan
 * looked up) measured as 2-3 % of a call on one node of 8 ranks. A call
 * like the last one the library ran (same block bytes, the same algorithm
 * for them, no trial, nothing of nbrcoll's in flight) needs none of it;
 * what it checks and changes sits on the state's first lines
 * (nbr_shortcut_t). */
int nbr_library_shortcut(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                         int recvcount, MPI_Datatype recvtype, MPI_Comm comm, int *rc)
{
    if (!sendbuf || !recvbuf || sendbuf == MPI_IN_PLACE || recvbuf == MPI_IN_PLACE ||
        sendcount < 0 || recvcount < 0 ||
        sendtype == MPI_DATATYPE_NULL || recvtype == MPI_DATATYPE_NULL)
        return 0; /* the long way checks and reports */
    nbr_comm_t *state = nbr_comm_find(comm);
    if (!state)
        return 0;
    nbr_shortcut_t *cut = &state->shortcut;
    if (!cut->block_bytes || state->trials > 0 || state->exec.in_flight || state->queue_head)
        return 0;
    int send_size = cut->type_size, recv_size = cut->type_size;
    /* MPI_Type_size was half the cycles of this path before the call */
    if (sendtype != cut->type || recvtype != cut->type) {
        if (MPI_Type_size(sendtype, &send_size) != MPI_SUCCESS)
            return 0;
        if (recvtype == sendtype)
            recv_size = send_size;
        else if (MPI_Type_size(recvtype, &recv_size) != MPI_SUCCESS)
            return 0;
    }
    size_t bytes = (size_t)sendcount * (size_t)send_size;
    if (bytes != cut->block_bytes || bytes != (size_t)recvcount * (size_t)recv_size)
        return 0;
    /* still what the stream runs, and no decision point */
    nbr_stream_t *stream = cut->stream;
    nbr_decision_t *trial = NULL;
    if (nbr_stream_due(state, stream, NBR_CALL_ALLGATHER, 1, stream->calls + 1) ||
        nbr_stream_algorithm(state, stream, NBR_CALL_ALLGATHER, 1, &trial) != cut->algorithm || trial)
        return 0;
    stream->calls++;
    /* what the long way changes that every rank keeps in step */
    state->sequence++; /* as nbr_comm_next_tag_base */
    state->last_algorithm = cut->algorithm;
    int mrc = PMPI_Neighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                      state->comm);
    *rc = mrc == MPI_SUCCESS ? NBR_SUCCESS : nbr_library_failed("MPI_Neighbor_allgather", mrc);
    cut->uncounted++;
    return 1;
}
