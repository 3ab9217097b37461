/* Requests the MPI library runs itself (the registry's library row, "mpi"):
 * see library.c. */
#ifndef NBR_LIBRARY_H
#define NBR_LIBRARY_H

#include "front/request.h"

/* Keeps the call's arguments in req for the library's runs (for a
 * persistent request, its own duplicates of derived datatypes);
 * nbr_library_release lets go of them. */
int nbr_library_keep(nbr_request_t req, const nbr_call_t *call);
void nbr_library_release(nbr_request_t req);

/* Starts req's run: a nonblocking or persistent call posts the library's
 * nonblocking collective now; a blocking one runs in nbr_library_wait. */
int nbr_library_start(nbr_request_t req);
/* *done = 1 once the run ended; returns its status then. Moves nbrcoll's
 * other requests on the communicator too. */
int nbr_library_test(nbr_request_t req, int *done);
/* A nonblocking call's MPI request tested once, nothing else progressed
 * (an executor's watch step: exec/executor.h); request is the nbr_request_t. */
int nbr_library_poll(void *request, int *done);
int nbr_library_wait(nbr_request_t req);

/* A blocking allgather like the last one the library ran on comm: run
 * by the library straight away (*rc its status), returning 1; 0: take the
 * long way (nbr_request_create), which also sets comm up and reports bad
 * arguments. */
int nbr_library_shortcut(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                         int recvcount, MPI_Datatype recvtype, MPI_Comm comm, int *rc);

/* An MPI error of the library's collective as nbrcoll's status: a
 * truncated receive is a signature mismatch, as in the other plans. */
int nbr_library_failed(const char *call, int mpi_code);

#endif
