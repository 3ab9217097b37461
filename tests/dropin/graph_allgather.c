/* A plain MPI program: a seeded random distributed graph, blocking
 * MPI_Neighbor_allgather and _allgatherv, and a checksum on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned next(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffff;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* every rank draws the whole graph alike and keeps its own lists */
    int *in = malloc(sizeof(int) * (size_t)size * 2), *out = malloc(sizeof(int) * (size_t)size * 2);
    int indeg = 0, outdeg = 0;
    unsigned seed = 7;
    for (int s = 0; s < size; s++)
        for (int d = 0; d < size; d++)
            if (next(&seed) % 100 < 40) {
                if (s == rank)
                    out[outdeg++] = d;
                if (d == rank)
                    in[indeg++] = s;
            }
    MPI_Comm graph;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, indeg, in, MPI_UNWEIGHTED, outdeg, out,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &graph);
    int mine[100], *got = malloc(sizeof(int) * 100 * ((size_t)indeg + 1));
    int *counts = malloc(sizeof(int) * ((size_t)indeg + 1)), *displs = malloc(sizeof(int) * ((size_t)indeg + 1));
    long check = 0;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 100; i++)
            mine[i] = rank * 1000 + round * 100 + i;
        MPI_Neighbor_allgather(mine, 100, MPI_INT, got, 100, MPI_INT, graph);
        for (int k = 0; k < 100 * indeg; k++)
            check += (long)got[k] * (k % 7 + 1);
        int n = 1 + (rank + round) % 50, at = 0;
        for (int i = 0; i < indeg; i++) {
            counts[i] = 1 + (in[i] + round) % 50;
            displs[i] = at;
            at += counts[i];
        }
        MPI_Neighbor_allgatherv(mine, n, MPI_INT, got, counts, displs, MPI_INT, graph);
        for (int k = 0; k < at; k++)
            check += (long)got[k] * (k % 5 + 1);
    }
    long total = 0;
    MPI_Reduce(&check, &total, 1, MPI_LONG, MPI_SUM, 0, graph);
    if (rank == 0)
        printf("graph_allgather: %d ranks, checksum %ld\n", size, total);
    MPI_Comm_free(&graph);
    free(in), free(out), free(got), free(counts), free(displs);
    MPI_Finalize();
    return 0;
}
