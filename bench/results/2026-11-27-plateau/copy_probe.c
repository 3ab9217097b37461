/* copy rate on the emulated cluster: rank 0 memcpy 16 MiB x 9 while (a) the others wait in a barrier,
 * (b) the others exchange 1 MiB messages with the ranks of other nodes, (c) every rank copies too */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
volatile char sink;
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
static void copies(char *a, char *c, size_t b, int k, double *best, double *med)
{
    double t[32];
    for (int i = 0; i < k; i++) { double t0 = MPI_Wtime(); memcpy(c, a, b); sink = c[b / 2 + i]; t[i] = MPI_Wtime() - t0; }
    qsort(t, k, sizeof(double), cmp);
    *best = b / t[0] / 1e9; *med = b / t[k / 2] / 1e9;
}
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n; MPI_Comm_rank(MPI_COMM_WORLD, &me); MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm node; MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int lr, ln; MPI_Comm_rank(node, &lr); MPI_Comm_size(node, &ln);
    size_t b = 16u << 20, m = 1u << 20;
    char *a = malloc(b), *c = malloc(b), *sb = malloc(m), *rb = malloc(m * n);
    memset(a, 1, b); memset(c, 2, b); memset(sb, 3, m);
    double best, med;
    /* (a) */
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) { copies(a, c, b, 9, &best, &med); printf("idle-others  best %5.1f median %5.1f GB/s\n", best, med); }
    MPI_Barrier(MPI_COMM_WORLD);
    /* (b): others exchange until rank 0 says stop */
    int stop = 0;
    if (me == 0) {
        copies(a, c, b, 9, &best, &med);
        printf("exchanging   best %5.1f median %5.1f GB/s\n", best, med);
        stop = 1;
    }
    MPI_Request sreq; MPI_Ibcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD, &sreq);
    int done = 0, rounds = 0;
    while (!done) {
        if (me != 0) {
            MPI_Request r[64]; int k = 0;
            for (int p = 1; p < n && k < 62; p++) if (p != me && (p / ln) != (me / ln)) {
                MPI_Irecv(rb + (size_t)p * m, (int)m, MPI_BYTE, p, 7 + rounds, MPI_COMM_WORLD, &r[k++]);
                MPI_Isend(sb, (int)m, MPI_BYTE, p, 7 + rounds, MPI_COMM_WORLD, &r[k++]);
            }
            MPI_Waitall(k, r, MPI_STATUSES_IGNORE);
        }
        rounds++;
        MPI_Test(&sreq, &done, MPI_STATUS_IGNORE);
        int all; MPI_Allreduce(&done, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD); done = all;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* (c) everyone copies */
    copies(a, c, b, 9, &best, &med);
    double bb[2] = {best, med}, lo[2], hi[2];
    MPI_Reduce(bb, lo, 2, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(bb, hi, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (me == 0) printf("all-copy     best %5.1f-%5.1f median %5.1f-%5.1f GB/s (rank 0: %.1f/%.1f), exchange rounds %d\n", lo[0], hi[0], lo[1], hi[1], best, med, rounds);
    MPI_Finalize();
    return 0;
}
