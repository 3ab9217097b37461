/* One program text, two builds: legal_programs calls MPI's neighborhood
 * collectives and request functions (plain, or nbrcoll's drop-in under
 * LD_PRELOAD); legal_programs_api (-DLEGAL_NBR_API) calls nbrcoll's nbr_
 * API on the same MPI communicators, attached with nbr_comm_attach. Only
 * the neighborhood collectives and their requests go through lg_*; the
 * program's own point-to-point and collectives are MPI's in both builds.
 *
 * Completion functions report one status per request in errs[] (0 or the
 * request's error code) and never fail as a whole: a request whose error
 * the call could not tell apart gets the call's code. */
#ifndef LEGAL_SHIM_H
#define LEGAL_SHIM_H

#include <mpi.h>
#include <stdio.h>

#ifdef LEGAL_NBR_API
#include <nbrcoll.h>

typedef nbr_request_t lg_request;
#define LG_REQUEST_NULL NBR_REQUEST_NULL
#define LG_BUILD "nbr_ API"

#define lg_neighbor_allgather nbr_neighbor_allgather
#define lg_neighbor_allgatherv nbr_neighbor_allgatherv
#define lg_neighbor_alltoall nbr_neighbor_alltoall
#define lg_neighbor_alltoallv nbr_neighbor_alltoallv
#define lg_neighbor_alltoallw nbr_neighbor_alltoallw
#define lg_ineighbor_allgather nbr_neighbor_iallgather
#define lg_ineighbor_allgatherv nbr_neighbor_iallgatherv
#define lg_ineighbor_alltoall nbr_neighbor_ialltoall
#define lg_ineighbor_alltoallv nbr_neighbor_ialltoallv
#define lg_ineighbor_alltoallw nbr_neighbor_ialltoallw
#define lg_neighbor_allgather_init nbr_neighbor_allgather_init
#define lg_neighbor_allgatherv_init nbr_neighbor_allgatherv_init
#define lg_neighbor_alltoall_init nbr_neighbor_alltoall_init
#define lg_neighbor_alltoallv_init nbr_neighbor_alltoallv_init
#define lg_neighbor_alltoallw_init nbr_neighbor_alltoallw_init

/* nbrcoll sets a communicator MPI made up on request; the environment
 * (NBR_ALGORITHM, NBR_RANKS_PER_NODE, ...) configures it. */
static inline int lg_attach(MPI_Comm comm) { return nbr_comm_attach(comm, MPI_INFO_NULL); }
static inline int lg_start(lg_request *r) { return nbr_start(r); }
static inline int lg_request_free(lg_request *r) { return nbr_request_free(r); }
static inline int lg_wait(lg_request *r) { return nbr_wait(r); }
static inline int lg_test(lg_request *r, int *flag) { return nbr_test(r, flag); }

static inline void lg_error_text(int code, char *text, int len)
{
    snprintf(text, (size_t)len, "%d (%s)", code, nbr_error_string(code));
}

/* nbrcoll has no array forms: they are built from nbr_wait / nbr_test, in
 * the order of the array (the caller permutes it per rank). */
static inline void lg_waitall(int n, lg_request *r, int *errs)
{
    for (int i = 0; i < n; i++)
        errs[i] = nbr_wait(&r[i]);
}

/* Polls the requests not yet done (a completed persistent request stays
 * non-NULL, so done[] says which) and completes the first that is. */
static inline void lg_waitany(int n, lg_request *r, char *done, int *index, int *err)
{
    for (;;)
        for (int i = 0; i < n; i++) {
            if (done[i])
                continue;
            int flag = 0, rc = nbr_test(&r[i], &flag);
            if (flag || rc != NBR_SUCCESS) {
                done[i] = 1;
                *index = i;
                *err = rc;
                return;
            }
        }
}

/* One pass over the requests not yet done; *flag = 1 once all are. */
static inline void lg_testall(int n, lg_request *r, char *done, int *errs, int *flag)
{
    *flag = 1;
    for (int i = 0; i < n; i++) {
        if (done[i])
            continue;
        int f = 0, rc = nbr_test(&r[i], &f);
        if (f || rc != NBR_SUCCESS) {
            done[i] = 1;
            errs[i] = rc;
        } else {
            *flag = 0;
        }
    }
}

#else /* MPI's names */

#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define LG_PERSISTENT(name) MPI_##name
#else
/* Open MPI 4.1: persistent collectives from its pcollreq extension */
#include <mpi-ext.h>
#if !defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) || !OMPI_HAVE_MPI_EXT_PCOLLREQ
#error "legal_programs needs persistent neighborhood collectives (MPI-4 or Open MPI's pcollreq)"
#endif
#define LG_PERSISTENT(name) MPIX_##name
#endif

typedef MPI_Request lg_request;
#define LG_REQUEST_NULL MPI_REQUEST_NULL
#define LG_BUILD "MPI"

#define lg_neighbor_allgather MPI_Neighbor_allgather
#define lg_neighbor_allgatherv MPI_Neighbor_allgatherv
#define lg_neighbor_alltoall MPI_Neighbor_alltoall
#define lg_neighbor_alltoallv MPI_Neighbor_alltoallv
#define lg_neighbor_alltoallw MPI_Neighbor_alltoallw
#define lg_ineighbor_allgather MPI_Ineighbor_allgather
#define lg_ineighbor_allgatherv MPI_Ineighbor_allgatherv
#define lg_ineighbor_alltoall MPI_Ineighbor_alltoall
#define lg_ineighbor_alltoallv MPI_Ineighbor_alltoallv
#define lg_ineighbor_alltoallw MPI_Ineighbor_alltoallw
#define lg_neighbor_allgather_init LG_PERSISTENT(Neighbor_allgather_init)
#define lg_neighbor_allgatherv_init LG_PERSISTENT(Neighbor_allgatherv_init)
#define lg_neighbor_alltoall_init LG_PERSISTENT(Neighbor_alltoall_init)
#define lg_neighbor_alltoallv_init LG_PERSISTENT(Neighbor_alltoallv_init)
#define lg_neighbor_alltoallw_init LG_PERSISTENT(Neighbor_alltoallw_init)

static inline int lg_attach(MPI_Comm comm) { return MPI_SUCCESS; }
static inline int lg_start(lg_request *r) { return MPI_Start(r); }
static inline int lg_request_free(lg_request *r) { return MPI_Request_free(r); }
static inline int lg_wait(lg_request *r) { return MPI_Wait(r, MPI_STATUS_IGNORE); }
static inline int lg_test(lg_request *r, int *flag) { return MPI_Test(r, flag, MPI_STATUS_IGNORE); }

static inline void lg_error_text(int code, char *text, int len)
{
    char s[MPI_MAX_ERROR_STRING];
    int n = 0, cls = 0;
    MPI_Error_class(code, &cls);
    MPI_Error_string(code, s, &n);
    snprintf(text, (size_t)len, "class %d (%s)", cls, s);
}

/* MPI_ERR_IN_STATUS: each status says; any other error: every request. */
static inline void lg_statuses(int rc, int n, const MPI_Status *st, int *errs)
{
    for (int i = 0; i < n; i++)
        errs[i] = rc == MPI_ERR_IN_STATUS ? st[i].MPI_ERROR : rc;
}

#define LG_MAX_ARRAY 64

static inline void lg_waitall(int n, lg_request *r, int *errs)
{
    MPI_Status st[LG_MAX_ARRAY];
    lg_statuses(MPI_Waitall(n, r, st), n, st, errs);
}

static inline void lg_waitany(int n, lg_request *r, char *done, int *index, int *err)
{
    int rc = MPI_Waitany(n, r, index, MPI_STATUS_IGNORE);
    if (*index == MPI_UNDEFINED) { /* nothing left: an error before any completed */
        for (*index = 0; *index < n && done[*index]; ++*index)
            ;
        if (*index == n)
            *index = 0;
    }
    done[*index] = 1;
    *err = rc;
}

static inline void lg_testall(int n, lg_request *r, char *done, int *errs, int *flag)
{
    MPI_Status st[LG_MAX_ARRAY];
    int rc = MPI_Testall(n, r, flag, st);
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS)
        *flag = 1; /* the call itself failed: stop polling */
    if (*flag) {
        lg_statuses(rc, n, st, errs);
        for (int i = 0; i < n; i++)
            done[i] = 1;
    }
}

#endif /* LEGAL_NBR_API */
#endif /* LEGAL_SHIM_H */
