/* The library's only output channel: NBR_LOG=error|warn|info|debug (default
 * warn), to stderr, each line prefixed with the MPI world rank. */
#ifndef NBR_LOG_H
#define NBR_LOG_H

#include <mpi.h>

typedef enum nbr_log_level {
    NBR_LOG_ERROR = 0,
    NBR_LOG_WARN = 1,
    NBR_LOG_INFO = 2,
    NBR_LOG_DEBUG = 3
} nbr_log_level_t;

int nbr_log_enabled(nbr_log_level_t level);
void nbr_log(nbr_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define NBR_ERROR(...) nbr_log(NBR_LOG_ERROR, __VA_ARGS__)
#define NBR_WARN(...) nbr_log(NBR_LOG_WARN, __VA_ARGS__)
#define NBR_INFO(...) nbr_log(NBR_LOG_INFO, __VA_ARGS__)
#define NBR_DEBUG(...) nbr_log(NBR_LOG_DEBUG, __VA_ARGS__)

/* Logs an MPI failure with MPI's own error string; returns NBR_ERR_MPI. */
int nbr_mpi_failed(const char *call, int mpi_code);

/* MPI_COMM_WORLD's error handler set aside (MPI_ERRORS_RETURN) around one
 * of nbrcoll's completion calls on its own requests, then restored: MPICH
 * raises the error of a call on several requests (a truncated receive,
 * which nbrcoll reports itself) through it, Open MPI 4.1 a nonblocking
 * collective's; the program's handler there is fatal by default. */
typedef struct nbr_world_handler {
    MPI_Errhandler program;
    int set_aside;
} nbr_world_handler_t;
void nbr_world_handler_aside(nbr_world_handler_t *saved);
void nbr_world_handler_restore(nbr_world_handler_t *saved);

/* Whether the MPI library raises errors of calls on several requests
 * through MPI_COMM_WORLD's handler rather than their communicator's. */
#if defined(MPICH_NUMVERSION)
#define NBR_MPI_RAISES_ALL_ON_WORLD 1
#else
#define NBR_MPI_RAISES_ALL_ON_WORLD 0
#endif

/* Collective over comm: every rank returns the smallest (worst) of the
 * local statuses, so an error seen by one rank becomes everyone's before the
 * next collective step instead of a hang. */
int nbr_agree(MPI_Comm comm, int local);

/* Evaluates an MPI call; on failure logs it and jumps to `out` with rc set. */
#define NBR_MPI_CHECK(call)                                                    \
    do {                                                                       \
        int nbr_mpi_rc_ = (call);                                              \
        if (nbr_mpi_rc_ != MPI_SUCCESS) {                                      \
            rc = nbr_mpi_failed(#call, nbr_mpi_rc_);                           \
            goto out;                                                          \
        }                                                                      \
    } while (0)

/* Evaluates an nbrcoll call; on failure jumps to `out` with rc set. */
#define NBR_CHECK(call)                                                        \
    do {                                                                       \
        rc = (call);                                                           \
        if (rc != NBR_SUCCESS)                                                 \
            goto out;                                                          \
    } while (0)

#endif
