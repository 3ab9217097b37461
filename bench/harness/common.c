#include "harness/common.h"

#include <stdio.h>
#include <string.h>

#include <mpi.h>

#include "nbrcoll.h"

static const char *const coll_names[] = {"allgather", "allgatherv",
                                         "alltoallv"};

static const char *progname = "bench"; /* programs set their own */

const char *bh_coll_name(bh_coll_t coll) { return coll_names[coll]; }

int bh_coll_from_name(const char *name, bh_coll_t *coll)
{
    for (int c = 0; c < (int)(sizeof coll_names / sizeof *coll_names); c++) {
        if (strcmp(name, coll_names[c]) == 0) {
            *coll = (bh_coll_t)c;
            return 0;
        }
    }
    return -1;
}

void bh_set_progname(const char *name) { progname = name; }

const char *bh_progname(void) { return progname; }

void bh_die_nbr(int rc, const char *what)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "%s: rank %d: %s failed: %s (%d)\n", progname, rank,
            what, nbr_error_string(rc), rc);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

void bh_die_mpi(int rc, const char *what)
{
    int rank, len;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "%s: rank %d: %s failed: %s\n", progname, rank, what,
            msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

void bh_size_label(uint64_t b, char *buf, size_t n)
{
    if (b >= BH_MIB && b % BH_MIB == 0)
        snprintf(buf, n, "%lluMi", (unsigned long long)(b / BH_MIB));
    else if (b >= BH_KIB && b % BH_KIB == 0)
        snprintf(buf, n, "%lluKi", (unsigned long long)(b / BH_KIB));
    else
        snprintf(buf, n, "%llu", (unsigned long long)b);
}
