/* nbr_attach_bench: what nbrcoll's set-up of a communicator costs, with and
 * without the graph consistency check (nbr_check_graph), side by side.
 *
 *   mpiexec -n P nbr_attach_bench [--density D] [--seed S] [--repeats K]
 *                                 [--ranks-per-node R]
 *
 * Each repeat creates an RSG dist-graph communicator with MPI's own
 * MPI_Dist_graph_create_adjacent twice and times nbr_comm_attach on it
 * (auto: no plan is built at attach), once with the check and once
 * without, in alternating order; a call's time is the slowest rank's.
 * Prints min / median / max of each and the check's share. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include "harness/clock.h"
#include "harness/graphs.h"
#include "harness/timing.h"

#include <nbrcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Slowest rank's seconds for one attach on a fresh communicator. */
static double time_attach(const bh_topo_t *t, int check, int ranks_per_node)
{
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Info info;
    char value[32];
    MPI_Info_create(&info);
    MPI_Info_set(info, "nbr_check_graph", check ? "1" : "0");
    if (ranks_per_node > 0) {
        snprintf(value, sizeof value, "%d", ranks_per_node);
        MPI_Info_set(info, "nbr_ranks_per_node", value);
    }
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, t->indeg, t->in, MPI_UNWEIGHTED, t->outdeg,
                                   t->out, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &comm);
    MPI_Barrier(comm);
    double start = bh_now();
    int rc = nbr_comm_attach(comm, info);
    double mine = bh_now() - start, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    MPI_Info_free(&info);
    MPI_Comm_free(&comm);
    return rc == NBR_SUCCESS ? slowest : -1;
}

int main(int argc, char **argv)
{
    bh_graph_spec_t spec = {.pattern = BH_PATTERN_RSG, .density = 0.05, .seed = 1};
    int repeats = 10, ranks_per_node = 0, rank = 0, size = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--density"))
            spec.density = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed"))
            spec.seed = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--repeats"))
            repeats = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--ranks-per-node"))
            ranks_per_node = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "nbr_attach_bench: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (repeats < 1 || argc % 2 == 0) {
        fprintf(stderr, "usage: nbr_attach_bench [--density D] [--seed S] [--repeats K] "
                        "[--ranks-per-node R]\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bh_topo_t t;
    memset(&t, 0, sizeof t);
    if (bh_topo_build(&spec, &t) != NBR_SUCCESS) {
        if (rank == 0)
            fprintf(stderr, "nbr_attach_bench: graph generation failed\n");
        MPI_Finalize();
        return 1;
    }
    double *times[2] = {calloc((size_t)repeats, sizeof(double)),
                        calloc((size_t)repeats, sizeof(double))};
    int failed = !times[0] || !times[1];
    for (int k = 0; k < repeats && !failed; k++) {
        for (int j = 0; j < 2; j++) {
            int check = (k + j) % 2; /* alternate which goes first */
            times[check][k] = time_attach(&t, check, ranks_per_node);
            failed |= times[check][k] < 0;
        }
    }
    if (rank == 0 && !failed) {
        long edges = 0;
        for (int r = 0; r < size; r++)
            edges += nbr_graph_outdegree(&t.graph, r);
        printf("# nbr_attach_bench: rsg(d=%g,s=%llu), %d ranks, %ld edges (%.1f per rank), "
               "%d repeats; slowest rank per attach, ms\n",
               spec.density, (unsigned long long)spec.seed, size, edges, (double)edges / size,
               repeats);
        printf("check  min_ms  median_ms  max_ms\n");
        double median[2];
        for (int c = 1; c >= 0; c--) {
            bh_stats_t st;
            bh_summarize(times[c], repeats, &st);
            median[c] = st.median_us * 1e-6;
            printf("%-5s %7.3f %10.3f %7.3f\n", c ? "on" : "off", 1e-3 * st.min_us,
                   1e-3 * st.median_us, 1e-3 * st.max_us);
        }
        printf("# check's cost (median on - median off): %.3f ms, %.0f %% of attach without it\n",
               1e3 * (median[1] - median[0]), 100.0 * (median[1] - median[0]) / median[0]);
    }
    if (rank == 0 && failed)
        fprintf(stderr, "nbr_attach_bench: nbr_comm_attach failed\n");
    free(times[0]);
    free(times[1]);
    bh_topo_free(&t);
    MPI_Finalize();
    return failed;
}
