/* A test-only PMPI layer, linked into the programs that need it (never into
 * the library): it counts the MPI objects a program holds (requests,
 * datatypes, keyvals, communicators made through the calls it wraps) and
 * makes the N-th call of one chosen kind fail on the ranks that arm it.
 *
 * Both names of each wrapped call are defined (MPI_X and PMPI_X: nbrcoll
 * calls some functions through PMPI_ so that its drop-in does not see
 * them); the real function is the next PMPI_X after the program. An
 * injected failure performs nothing and returns MPI_ERR_OTHER, as an MPI
 * that could not start the operation would; outputs are left as they were
 * (a caller must not use them after an error). */
#ifndef NBRCOLL_TESTS_MPI_SHIM_H
#define NBRCOLL_TESTS_MPI_SHIM_H

#ifdef __cplusplus
extern "C" {
#endif

/* Point-to-point kinds fail where armed (one rank); collective kinds are
 * armed on every rank and count only calls over the whole job, so that the
 * same operation fails everywhere, as MPI reports a broken collective (a
 * collective that fails on one rank only would leave the others waiting
 * inside MPI, whatever nbrcoll does). */
typedef enum nbr_shim_call {
    NBR_SHIM_ISEND,
    NBR_SHIM_IRECV,
    NBR_SHIM_ISSEND,
    NBR_SHIM_SEND_INIT,
    NBR_SHIM_RECV_INIT,
    NBR_SHIM_START,
    NBR_SHIM_STARTALL,
    NBR_SHIM_IPROBE,
    NBR_SHIM_IMPROBE,
    NBR_SHIM_IMRECV,
    NBR_SHIM_RECV,
    NBR_SHIM_WAIT,
    NBR_SHIM_WAITALL,
    NBR_SHIM_TEST,
    NBR_SHIM_TESTALL,
    NBR_SHIM_PACK,
    NBR_SHIM_UNPACK,
    NBR_SHIM_FIRST_COLLECTIVE,
    NBR_SHIM_IBARRIER = NBR_SHIM_FIRST_COLLECTIVE,
    NBR_SHIM_IALLREDUCE,
    NBR_SHIM_ALLREDUCE,
    NBR_SHIM_ALLGATHER,
    NBR_SHIM_BCAST,
    NBR_SHIM_COMM_DUP,
    NBR_SHIM_COMM_SPLIT,
    NBR_SHIM_COMM_SPLIT_TYPE,
    NBR_SHIM_NUM_CALLS
} nbr_shim_call_t;

const char *nbr_shim_name(nbr_shim_call_t call);

/* Counts every wrapped call from now on (clears the counts); the
 * nth call of kind `call` from now fails (nth 0: none fails). */
void nbr_shim_arm(nbr_shim_call_t call, long nth);
void nbr_shim_disarm(void);
/* While paused (1), calls are neither counted nor failed: the test's own. */
void nbr_shim_pause(int pause);
/* Calls of this kind since the last nbr_shim_arm. */
long nbr_shim_calls(nbr_shim_call_t call);
/* Whether the armed failure happened. With NBR_SHIM_TRACE set, the
 * failing call prints its stack to stderr (where a failure lands). */
int nbr_shim_fired(void);

/* Objects made through the wrapped calls and not yet freed. Requests:
 * created by a nonblocking or persistent call, gone when a completion call
 * sets the handle to MPI_REQUEST_NULL or MPI_Request_free frees it. */
typedef struct nbr_shim_live {
    long requests, datatypes, keyvals, comms;
} nbr_shim_live_t;
void nbr_shim_count_live(nbr_shim_live_t *live);

#ifdef __cplusplus
}
#endif

#endif
