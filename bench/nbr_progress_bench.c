/* nbr_progress_bench: what nbrcoll's progress callback (exec/progress.c)
 * costs a call that has nothing of nbrcoll's in flight, side by side in
 * one run.
 *
 *   mpiexec -n P nbr_progress_bench [--sizes 8,65536] [--calls N] [--blocks K]
 *
 * Once nbrcoll has set a communicator up, Open MPI runs the callback in
 * every pass of its progress engine, inside every MPI call. Each rank
 * sends to and receives from the ranks 1 and 2 away on either side (four
 * neighbors). For each block size: MPI's own MPI_Neighbor_allgather on a
 * communicator nbrcoll does not hold, and nbrcoll's naive
 * nbr_neighbor_allgather, each with the callback in and out of MPI's
 * engine (nbr_progress_hook_switch), in blocks of N calls taking turns
 * (in, out, out, in, ...: no side always runs first); a block's per-call
 * time is its slowest rank's. Prints min / median / max per side over the
 * K blocks and the median's ratio, in over out. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include "exec/executor.h"
#include "harness/clock.h"

#include <mpi.h>
#include <nbrcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SIZES = 8, MAX_BLOCKS = 1000, DEGREE = 4 };

typedef struct side {
    const char *name;
    int nbrcoll; /* nbrcoll's call, else MPI's */
    int hook;    /* the callback in MPI's engine */
    double per_call[MAX_BLOCKS];
    int blocks;
} side_t;

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Per-call seconds of a block of calls, the slowest rank's. */
static double time_block(side_t *side, MPI_Comm comm, const char *send, char *recv, int bytes,
                         int calls)
{
    nbr_progress_hook_switch(side->hook);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = bh_now();
    for (int i = 0; i < calls; i++) {
        int rc = side->nbrcoll
                     ? nbr_neighbor_allgather(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, comm)
                     : MPI_Neighbor_allgather(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, comm);
        if (rc != 0) {
            fprintf(stderr, "nbr_progress_bench: %s failed (%d)\n", side->name, rc);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    double mine = (bh_now() - start) / calls, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    nbr_progress_hook_switch(1);
    return slowest;
}

static void report(int bytes, side_t *sides, int n)
{
    double median[4] = {0};
    for (int s = 0; s < n; s++) {
        double *v = sides[s].per_call;
        qsort(v, (size_t)sides[s].blocks, sizeof *v, compare_doubles);
        median[s] = v[sides[s].blocks / 2];
        printf("%8d B  %-22s  min %9.2f us  median %9.2f us  max %9.2f us\n", bytes,
               sides[s].name, v[0] * 1e6, median[s] * 1e6, v[sides[s].blocks - 1] * 1e6);
    }
    for (int s = 0; s + 1 < n; s += 2)
        printf("%8d B  %-22s  median in / out: %.4f (%+.3f us a call)\n", bytes,
               sides[s].nbrcoll ? "nbrcoll naive" : "MPI_Neighbor_allgather",
               median[s] / median[s + 1], (median[s] - median[s + 1]) * 1e6);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np, calls = 200, blocks = 21, sizes[MAX_SIZES] = {8, 65536}, num_sizes = 2;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--calls") && i + 1 < argc) {
            calls = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--blocks") && i + 1 < argc) {
            blocks = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            num_sizes = 0;
            for (char *t = strtok(argv[++i], ","); t && num_sizes < MAX_SIZES; t = strtok(NULL, ","))
                sizes[num_sizes++] = atoi(t);
        } else {
            if (rank == 0)
                fprintf(stderr, "usage: nbr_progress_bench [--sizes B,B] [--calls N] "
                                "[--blocks K]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (calls < 1 || blocks < 1 || blocks > MAX_BLOCKS / 2) {
        if (rank == 0)
            fprintf(stderr, "nbr_progress_bench: --calls >= 1, 1 <= --blocks <= %d\n",
                    MAX_BLOCKS / 2);
        MPI_Finalize();
        return 2;
    }
    int neighbors[DEGREE];
    for (int d = 0; d < DEGREE; d++) {
        int away = d / 2 + 1;
        neighbors[d] = d % 2 ? (rank + away) % np : (rank + np - away % np) % np;
    }
    MPI_Comm mpi_comm, nbr_comm;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, DEGREE, neighbors, MPI_UNWEIGHTED, DEGREE,
                                   neighbors, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &mpi_comm);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "nbr_algorithm", "naive");
    if (nbr_dist_graph_create_adjacent(MPI_COMM_WORLD, DEGREE, neighbors, MPI_UNWEIGHTED, DEGREE,
                                       neighbors, MPI_UNWEIGHTED, info, 0,
                                       &nbr_comm) != NBR_SUCCESS) {
        fprintf(stderr, "nbr_progress_bench: set-up failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Info_free(&info);
    if (!nbr_progress_hook_switch(1)) {
        if (rank == 0)
            printf("nbr_progress_bench: this MPI has no progress hook for nbrcoll: nothing to "
                   "measure\n");
        MPI_Finalize();
        return 0;
    }
    if (rank == 0)
        printf("%d ranks, %d neighbors each, %d blocks of %d calls per side\n", np, DEGREE,
               blocks, calls);
    for (int z = 0; z < num_sizes; z++) {
        int bytes = sizes[z];
        char *send = malloc((size_t)bytes + 1), *recv = malloc((size_t)bytes * DEGREE + 1);
        memset(send, rank, (size_t)bytes + 1);
        side_t sides[4] = {{"MPI's call, hook in", 0, 1, {0}, 0},
                           {"MPI's call, hook out", 0, 0, {0}, 0},
                           {"nbrcoll naive, hook in", 1, 1, {0}, 0},
                           {"nbrcoll naive, hook out", 1, 0, {0}, 0}};
        for (int s = 0; s < 4; s++) /* warm: each side's first calls build and bind */
            time_block(&sides[s], sides[s].nbrcoll ? nbr_comm : mpi_comm, send, recv, bytes,
                       calls);
        for (int b = 0; b < blocks; b++)
            for (int k = 0; k < 4; k++) {
                /* in, out, out, in: the order flips every block */
                int s = (k / 2) * 2 + ((k % 2) ^ (b % 2) ^ (k / 2 % 2));
                side_t *side = &sides[s];
                side->per_call[side->blocks++] = time_block(
                    side, side->nbrcoll ? nbr_comm : mpi_comm, send, recv, bytes, calls);
            }
        if (rank == 0)
            report(bytes, sides, 4);
        free(send);
        free(recv);
    }
    MPI_Comm_free(&nbr_comm);
    MPI_Comm_free(&mpi_comm);
    MPI_Finalize();
    return 0;
}
