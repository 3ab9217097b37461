/* What the drop-in's two files share: dropin.c (the collectives) and
 * dropin_requests.c (nbrcoll operations as MPI_Request handles). Nothing
 * here leaves libnbrcoll_mpi. */
#ifndef NBR_DROPIN_H
#define NBR_DROPIN_H

#include <mpi.h>
#include <nbrcoll.h>

#if defined(__GNUC__)
#define NBR_DROPIN_LOCAL __attribute__((visibility("hidden")))
#else
#define NBR_DROPIN_LOCAL
#endif

/* The MPI error class of an nbrcoll status. */
NBR_DROPIN_LOCAL int nbr_dropin_error_class(int status);

/* An error class as MPI returns it: through comm's error handler. */
NBR_DROPIN_LOCAL int nbr_dropin_raise(MPI_Comm comm, int code);

/* Hands *request (an nbrcoll nonblocking or persistent operation on the
 * call's comm) to the program as the MPI_Request *token; *request becomes
 * NBR_REQUEST_NULL. If no handle can be made, an active operation is
 * completed first (its peers take part in it) and NBR_ERR_NOMEM returned. */
NBR_DROPIN_LOCAL int nbr_dropin_adopt(nbr_request_t *request, MPI_Request *token);

/* Frees the drop-in's attribute keyval (the nbr_disable mark) before MPI
 * ends; MPI_Finalize's interposer calls it. */
NBR_DROPIN_LOCAL void nbr_dropin_free_keyvals(void);

#endif
