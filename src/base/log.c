#include "base/log.h"

#include "base/settings.h"

#include <mpi.h>
#include <nbrcoll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Read once; a lazily initialised cache, the only kind of global we keep. */
static int parse_level(void)
{
    const char *env = nbr_setting_env_text(NBR_SETTING_LOG);
    static const char *names[] = {"error", "warn", "info", "debug"};
    if (env)
        for (int i = 0; i < 4; i++)
            if (strcasecmp(env, names[i]) == 0)
                return i;
    return NBR_LOG_WARN;
}

int nbr_log_enabled(nbr_log_level_t level)
{
    static int cached = -1;
    if (cached < 0)
        cached = parse_level();
    return (int)level <= cached;
}

void nbr_log(nbr_log_level_t level, const char *fmt, ...)
{
    static const char *tags[] = {"error", "warn", "info", "debug"};
    if (!nbr_log_enabled(level))
        return;
    int rank = -1, initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char line[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
    fprintf(stderr, "[nbrcoll %d %s] %s\n", rank, tags[level], line);
}

int nbr_mpi_failed(const char *call, int mpi_code)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(mpi_code, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", mpi_code);
    NBR_ERROR("%s failed: %s", call, text);
    return NBR_ERR_MPI;
}

int nbr_agree(MPI_Comm comm, int local)
{
    int agreed = local;
    int mrc = MPI_Allreduce(&local, &agreed, 1, MPI_INT, MPI_MIN, comm);
    return mrc != MPI_SUCCESS ? nbr_mpi_failed("MPI_Allreduce", mrc) : agreed;
}

const char *nbr_error_string(int status)
{
    switch (status) {
    case NBR_SUCCESS: return "success";
    case NBR_ERR_ARG: return "invalid argument";
    case NBR_ERR_BUFFER: return "NULL buffer with a nonzero count";
    case NBR_ERR_COUNT: return "negative count, degree or displacement";
    case NBR_ERR_RANK: return "neighbor rank outside the communicator";
    case NBR_ERR_TOPOLOGY: return "communicator has no distributed-graph topology";
    case NBR_ERR_DATATYPE: return "invalid or uncommitted datatype";
    case NBR_ERR_TYPE_MISMATCH: return "send and receive type signatures differ";
    case NBR_ERR_ALGORITHM: return "unknown algorithm name";
    case NBR_ERR_INFO: return "malformed MPI_Info or environment value";
    case NBR_ERR_NOMEM: return "out of memory";
    case NBR_ERR_MPI: return "an MPI call failed";
    case NBR_ERR_REQUEST: return "request is NULL or in the wrong state";
    case NBR_ERR_COMM: return "MPI_COMM_NULL or an intercommunicator";
    case NBR_ERR_UNSUPPORTED: return "not supported by this build";
    case NBR_ERR_INTERNAL: return "internal error (a bug in nbrcoll)";
    case NBR_ERR_IO: return "file could not be read or written";
    case NBR_ERR_DEVICE: return "a GPU runtime call failed";
    case NBR_ERR_GRAPH: return "neighbor lists of the ranks disagree";
    case NBR_ERR_PEER: return "a rank this one receives from failed in the same call";
    default: return "unknown nbrcoll status";
    }
}

void nbr_world_handler_aside(nbr_world_handler_t *saved)
{
    saved->program = MPI_ERRHANDLER_NULL;
    saved->set_aside = PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &saved->program) == MPI_SUCCESS;
    if (saved->set_aside)
        PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

void nbr_world_handler_restore(nbr_world_handler_t *saved)
{
    if (!saved->set_aside)
        return;
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, saved->program);
    PMPI_Errhandler_free(&saved->program);
    saved->set_aside = 0;
}
