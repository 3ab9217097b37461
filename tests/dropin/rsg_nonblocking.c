/* A plain MPI program: a seeded random sparse graph (RSG), nonblocking
 * neighborhood collectives completed with the program's own ring
 * Isend/Irecv in one MPI_Waitall, and with MPI_Test, MPI_Waitany,
 * MPI_Waitsome, MPI_Testall, MPI_Testany and MPI_Testsome; two
 * collectives in flight at once, completed in the other order. Rank 0
 * prints a checksum and what the completion calls reported (--reference:
 * the collectives' blocks by point-to-point messages, reference.h). */
#include "reference.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define B 64 /* ints per block */

static unsigned next(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffff;
}

static long check;
static int oddities; /* completion answers MPI would not give */

static void add(const int *v, int n, int weight)
{
    for (int k = 0; k < n; k++)
        check += (long)v[k] * (k % weight + 1);
}

/* What the completion calls leave in a collective's status is not compared:
 * MPI defines its error field only, and Open MPI hands back whatever its
 * request held (zeros by chance, ASan's fill pattern under the sanitizer
 * pass). nbrcoll's own answer, an empty status, is not an MPI promise. */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    reference_from_args(argc, argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int *in = malloc(sizeof(int) * (size_t)size), *out = malloc(sizeof(int) * (size_t)size);
    int indeg = 0, outdeg = 0;
    unsigned seed = 11;
    for (int s = 0; s < size; s++)
        for (int d = 0; d < size; d++)
            if (s != d && next(&seed) % 100 < 45) {
                if (s == rank)
                    out[outdeg++] = d;
                if (d == rank)
                    in[indeg++] = s;
            }
    MPI_Comm graph;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, indeg, in, MPI_UNWEIGHTED, outdeg, out,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &graph);
    size_t slots = (size_t)(indeg > outdeg ? indeg : outdeg) + 1;
    int *mine = malloc(sizeof(int) * B * slots), *got = malloc(sizeof(int) * B * slots);
    int *got2 = malloc(sizeof(int) * B * slots);
    int *scounts = malloc(sizeof(int) * slots), *sdispls = malloc(sizeof(int) * slots);
    int *rcounts = malloc(sizeof(int) * slots), *rdispls = malloc(sizeof(int) * slots);
    MPI_Aint *swdispls = malloc(sizeof(MPI_Aint) * slots), *rwdispls = malloc(sizeof(MPI_Aint) * slots);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * slots);
    for (size_t k = 0; k < slots; k++)
        types[k] = MPI_INT;
    int ring_out, ring_in, left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Status statuses[4];
    for (int round = 0; round < 6; round++) {
        for (size_t i = 0; i < B * slots; i++)
            mine[i] = rank * 100000 + round * 1000 + (int)i;
        /* 1. allgather beside the program's own ring, one Waitall */
        MPI_Request r[3];
        ring_out = rank * 10 + round;
        MPI_Irecv(&ring_in, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &r[0]);
        ref_ineighbor_allgather(mine, B, MPI_INT, got, B, MPI_INT, graph, &r[1]);
        MPI_Isend(&ring_out, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &r[2]);
        MPI_Waitall(3, r, statuses);
        oddities += r[1] != MPI_REQUEST_NULL || ring_in != left * 10 + round;
        add(got, B * indeg, 7);
        /* 2. allgatherv, completed by polling MPI_Test */
        int at = 0;
        for (int i = 0; i < indeg; i++) {
            rcounts[i] = 1 + (in[i] * 3 + round) % B;
            rdispls[i] = at;
            at += rcounts[i];
        }
        MPI_Request q;
        int flag = 0;
        ref_ineighbor_allgatherv(mine, 1 + (rank * 3 + round) % B, MPI_INT, got, rcounts, rdispls,
                                 MPI_INT, graph, &q);
        while (!flag)
            MPI_Test(&q, &flag, &statuses[0]);
        add(got, at, 5);
        /* 3. alltoallv and alltoall in flight together; Waitany, then the
         * other with Waitsome */
        int sat = 0, rat = 0;
        for (int j = 0; j < outdeg; j++) {
            scounts[j] = 1 + (rank + out[j] + round) % B;
            sdispls[j] = sat;
            sat += scounts[j];
        }
        for (int i = 0; i < indeg; i++) {
            rcounts[i] = 1 + (in[i] + rank + round) % B;
            rdispls[i] = rat;
            rat += rcounts[i];
        }
        MPI_Request two[2];
        ref_ineighbor_alltoallv(mine, scounts, sdispls, MPI_INT, got, rcounts, rdispls, MPI_INT,
                                graph, &two[0]);
        ref_ineighbor_alltoall(mine, B / 2, MPI_INT, got2, B / 2, MPI_INT, graph, &two[1]);
        int index = -1, outcount = 0, indices[2];
        MPI_Waitany(2, two, &index, &statuses[0]);
        oddities += index < 0 || index > 1 || two[index] != MPI_REQUEST_NULL;
        MPI_Waitsome(2, two, &outcount, indices, statuses);
        oddities += outcount != 1 || indices[0] != 1 - index;
        MPI_Waitsome(2, two, &outcount, indices, statuses);
        oddities += outcount != MPI_UNDEFINED;
        add(got, rat, 3);
        add(got2, B / 2 * indeg, 11);
        /* 4. alltoallw with the ring again: Testall until both are done */
        for (int j = 0; j < outdeg; j++)
            swdispls[j] = (MPI_Aint)sizeof(int) * sdispls[j];
        for (int i = 0; i < indeg; i++)
            rwdispls[i] = (MPI_Aint)sizeof(int) * rdispls[i];
        MPI_Irecv(&ring_in, 1, MPI_INT, right, 6, MPI_COMM_WORLD, &r[0]);
        ref_ineighbor_alltoallw(mine, scounts, swdispls, types, got, rcounts, rwdispls, types,
                                graph, &r[1]);
        MPI_Isend(&ring_out, 1, MPI_INT, left, 6, MPI_COMM_WORLD, &r[2]);
        flag = 0;
        while (!flag)
            MPI_Testall(3, r, &flag, statuses);
        oddities += ring_in != right * 10 + round;
        add(got, rat, 13);
        /* 5. allgather twice: Testany, then Testsome */
        ref_ineighbor_allgather(mine, B, MPI_INT, got, B, MPI_INT, graph, &two[0]);
        ref_ineighbor_allgather(mine + B, B, MPI_INT, got2, B, MPI_INT, graph, &two[1]);
        int done = 0;
        while (done < 2) {
            flag = 0;
            if (done == 0) {
                MPI_Testany(2, two, &index, &flag, &statuses[0]);
                done += flag;
            } else {
                MPI_Testsome(2, two, &outcount, indices, statuses);
                done += outcount == MPI_UNDEFINED ? 0 : outcount;
            }
        }
        add(got, B * indeg, 17);
        add(got2, B * indeg, 19);
    }
    long total = 0;
    int odd = 0;
    MPI_Reduce(&check, &total, 1, MPI_LONG, MPI_SUM, 0, graph);
    MPI_Reduce(&oddities, &odd, 1, MPI_INT, MPI_SUM, 0, graph);
    if (rank == 0)
        printf("rsg_nonblocking: %d ranks, checksum %ld, %d odd completions\n", size, total, odd);
    MPI_Comm_free(&graph);
    free(in), free(out), free(mine), free(got), free(got2), free(scounts), free(sdispls);
    free(rcounts), free(rdispls), free(swdispls), free(rwdispls), free(types);
    MPI_Finalize();
    return 0;
}
