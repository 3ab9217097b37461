/*
 * netcheck: sanity check for a (simulated) cluster such as the one made by
 * bench/cluster/local-cluster.sh.  Every rank reports the host name it gets
 * from MPI_Get_processor_name and rank 0 prints the list, so you can tell
 * whether Open MPI thinks the ranks live on different nodes.  Rank 0 then
 * ping-pongs a large message (default 16 MiB, 5 round trips after one
 * warm-up) with two partners: the lowest rank on the same host (intra-node
 * path, normally shared memory) and the lowest rank on a different host
 * (inter-node path, the network).  For each it prints the achieved one-way
 * bandwidth, i.e. bytes moved divided by the time spent, where a round trip
 * moves the message twice.  On a rate-limited link the inter-node figure
 * should sit just below the link rate (about 117 MB/s at 1 Gbit/s), while
 * the intra-node figure should be far higher.
 *
 * Usage: netcheck [MSG_MIB [ROUND_TRIPS]]
 * Build: mpicc -O2 -o /tmp/netcheck bench/cluster/netcheck.c
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG 7

/* Ping-pong between rank 0 and `peer`; returns one-way MB/s on rank 0. */
static double pingpong(int me, int peer, char *buf, int bytes, int trips)
{
    double t0 = 0.0;
    for (int i = -1; i < trips; i++) { /* i == -1 is the warm-up trip */
        if (i == 0)
            t0 = MPI_Wtime();
        if (me == 0) {
            MPI_Send(buf, bytes, MPI_CHAR, peer, TAG, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_CHAR, peer, TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, bytes, MPI_CHAR, 0, TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_CHAR, 0, TAG, MPI_COMM_WORLD);
        }
    }
    double secs = MPI_Wtime() - t0;
    return 2.0 * (double)bytes * trips / secs / 1e6;
}

/* Runs one measurement if `peer` exists; only rank 0 prints. */
static void measure(const char *what, int me, int peer, char *buf,
                    int bytes, int trips)
{
    if (peer < 0) {
        if (me == 0)
            printf("%s: no partner rank, skipped\n", what);
        return;
    }
    if (me != 0 && me != peer)
        return;
    double mbs = pingpong(me, peer, buf, bytes, trips);
    if (me == 0)
        printf("%s: rank 0 <-> rank %d, %d x %.1f MiB round trips: "
               "%.1f MB/s (%.3f Gbit/s)\n", what, peer, trips,
               bytes / 1048576.0, mbs, mbs * 8.0 / 1000.0);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, size, len;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    double mib = argc > 1 ? atof(argv[1]) : 16.0;
    int trips = argc > 2 ? atoi(argv[2]) : 5;
    int bytes = (int)(mib * 1048576.0);
    if (bytes <= 0 || trips <= 0) {
        if (me == 0)
            fprintf(stderr, "usage: netcheck [MSG_MIB [ROUND_TRIPS]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* Everyone learns everyone's host name to pick the two partners. */
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    MPI_Get_processor_name(name, &len);
    char *all = calloc((size_t)size, MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all,
                  MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
    int intra = -1, inter = -1;
    for (int r = 1; r < size; r++) {
        int same = strcmp(all + (size_t)r * MPI_MAX_PROCESSOR_NAME, all) == 0;
        if (same && intra < 0)
            intra = r;
        if (!same && inter < 0)
            inter = r;
    }

    /* Rank 0 prints what each rank reported, in rank order (output from
     * different ranks would otherwise interleave arbitrarily). */
    if (me == 0)
        for (int r = 0; r < size; r++)
            printf("rank %d of %d on host %s\n", r, size,
                   all + (size_t)r * MPI_MAX_PROCESSOR_NAME);

    char *buf = malloc((size_t)bytes);
    memset(buf, me, (size_t)bytes);
    measure("intra-node", me, intra, buf, bytes, trips);
    MPI_Barrier(MPI_COMM_WORLD);
    measure("inter-node", me, inter, buf, bytes, trips);
    fflush(stdout);

    free(buf);
    free(all);
    MPI_Finalize();
    return 0;
}
