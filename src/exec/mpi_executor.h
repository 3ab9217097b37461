/* Runs a plan over MPI nonblocking point-to-point (host buffers, or device
 * buffers with GPU-aware MPI). One executor per operation in flight.
 * Phases run in order: receives posted, sends posted, local copies, wait.
 * A phase that fails (e.g. a truncated message) does not stop the later
 * ones: peers are waiting for them, so the plan runs to its end and the
 * first error is reported then. */
#ifndef NBR_EXECUTOR_H
#define NBR_EXECUTOR_H

#include "plan/plan.h"

#include <mpi.h>

typedef struct nbr_exec {
    const nbr_plan_t *plan;
    char *base[NBR_NUM_BUFFERS]; /* byte 0 of each buffer */
    MPI_Comm comm;
    int tag_base;
    int persistent;
    MPI_Request *requests;    /* persistent: every message op; else one phase */
    MPI_Datatype *request_types; /* persistent: a message's type over 2 GiB, else NULL type */
    MPI_Status *statuses;     /* one phase */
    int request_capacity, status_capacity, types_capacity; /* arrays are kept between runs */
    int phase;                /* phase in flight; num_phases when idle */
    int active;
    int status;               /* first error of the current run */
    /* The communicator's executors in flight (NULL: none kept): waiting on
     * one advances them all, so a peer that waits in another order is
     * never stuck behind a phase this rank has not posted. */
    struct nbr_exec **in_flight;
    struct nbr_exec *next_in_flight;
} nbr_exec_t;

/* Binds exec to a plan. persistent != 0 creates MPI persistent requests for
 * every message once. exec must be zeroed the first time; a finished,
 * non-persistent exec may be bound again and reuses its arrays. */
int nbr_exec_init(nbr_exec_t *exec, const nbr_plan_t *plan,
                  char *const base[NBR_NUM_BUFFERS], MPI_Comm comm,
                  int tag_base, int persistent);
/* Posts the first phase. If posting fails part way, the run is waited out
 * (peers wait for what was posted) and the error returned. */
int nbr_exec_start(nbr_exec_t *exec);
/* Advances (every executor in flight on the list); *done = 1 when the last
 * phase completed (returns the run's status then, also when another
 * executor's wait completed it). */
int nbr_exec_test(nbr_exec_t *exec, int *done);
int nbr_exec_wait(nbr_exec_t *exec);
/* Frees MPI persistent requests; the arrays stay for the next bind. */
void nbr_exec_unbind(nbr_exec_t *exec);
/* Unbinds and frees the arrays. */
void nbr_exec_free(nbr_exec_t *exec);

#endif
