/* nbrcoll_mpi.h: nbrcoll requests as MPI requests, from libnbrcoll_mpi
 * (the drop-in library). Link it before nbrcoll and MPI:
 *   cc app.c -lnbrcoll_mpi -lnbrcoll $(mpicc --showme:link)
 * or with CMake's nbrcoll::mpi, or pkg-config's nbrcoll-mpi. */
#ifndef NBRCOLL_MPI_H
#define NBRCOLL_MPI_H

#include <nbrcoll.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Hands a nonblocking or persistent nbrcoll request to MPI: *mpi_request
 * becomes an MPI_Request the program completes with MPI_Wait, MPI_Test,
 * MPI_Waitall, ... (mixed freely with its other requests), starts with
 * MPI_Start / MPI_Startall (persistent) and frees with MPI_Request_free,
 * and *request becomes NBR_REQUEST_NULL. Completion reports the run's
 * error as an MPI error class through the communicator's error handler.
 * Returns NBR_ERR_REQUEST for a null request, NBR_ERR_NOMEM when MPI
 * gives no handle (an active request is then completed first). */
NBR_API int nbr_request_to_mpi(nbr_request_t *request, MPI_Request *mpi_request);

#ifdef __cplusplus
}
#endif

#endif
