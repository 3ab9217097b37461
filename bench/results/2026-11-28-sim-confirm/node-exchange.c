#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* Shared-memory exchanges between the ranks of one node (MPI_COMM_TYPE_SHARED)
 * with every rank busy, one peer each, and one pair alone: what the job
 * carries a second (bytes sent). Run on bench/cluster/local-cluster.sh 4 4. */
static double exch(MPI_Comm world, int *peers, int count, int reps, char *buf, char *in, int bytes)
{
    MPI_Request req[64];
    double t0 = 0;
    for (int i = 0; i <= reps; i++) {
        if (i <= 1) { MPI_Barrier(world); t0 = MPI_Wtime(); }
        for (int j = 0; j < count; j++) {
            MPI_Irecv(in + (size_t)j * bytes, bytes, MPI_BYTE, peers[j], 7, world, &req[2 * j]);
            MPI_Isend(buf, bytes, MPI_BYTE, peers[j], 7, world, &req[2 * j + 1]);
        }
        MPI_Waitall(2 * count, req, MPI_STATUSES_IGNORE);
    }
    double t = MPI_Wtime() - t0, tmax;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, world);
    double sent = (double)count * reps * bytes, total;
    MPI_Allreduce(&sent, &total, 1, MPI_DOUBLE, MPI_SUM, world);
    return total / tmax;
}
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n, lme, ln;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &lme); MPI_Comm_size(node, &ln);
    int *all = malloc(n * sizeof(int)), base = me - lme;
    size_t maxb = 4 << 20;
    char *buf = calloc(1, maxb), *in = calloc(ln + 1, maxb);
    int peers[64], count = 0;
    for (int r = 0; r < ln; r++) if (r != lme) peers[count++] = base + r;
    for (int rep = 0; rep < 2; rep++)
    for (int bytes = 16384; bytes <= (int)maxb; bytes *= 4) {
        int reps = bytes <= 65536 ? 16 : 4;
        double all_r = exch(MPI_COMM_WORLD, peers, count, reps, buf, in, bytes);
        /* one partner: local rank xor 1 */
        int p1 = base + (lme ^ 1);
        double pair_r = exch(MPI_COMM_WORLD, &p1, 1, reps, buf, in, bytes);
        /* only node 0's ranks 0,1 exchange; others idle in the barrier */
        int p0 = me == 0 ? 1 : 0, c0 = me < 2 ? 1 : 0;
        double lone_r = exch(MPI_COMM_WORLD, &p0, c0, reps, buf, in, bytes);
        if (me == 0)
            printf("bytes %8d  all-node-mates %7.0f MB/s  pairs %7.0f MB/s  one pair %7.0f MB/s\n", bytes,
                   all_r / 1e6, pair_r / 1e6, lone_r / 1e6);
    }
    MPI_Finalize();
    return 0;
}
