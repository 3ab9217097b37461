/* nbr_plan_bench: builds every rank's plan for one graph inside this
 * process (no MPI launch) and proves them with the verifier, timing both.
 * It answers "how long does planning N ranks take" and doubles as a check
 * of a builder on graphs larger than an MPI job here can run.
 *
 *   nbr_plan_bench [--ranks N] [--density D] [--seed S] [--block BYTES]
 *                  [--collective allgather|allgatherv|alltoallv]
 *                  [--algorithm NAME] [--ranks-per-node R] [--repeat K]
 *
 * Exit status: 0 when every plan verified, 1 otherwise, 2 on bad usage. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include "alg/job.h"
#include "plan/verify.h"

#include <nbrcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct options {
    int ranks, ranks_per_node, repeat;
    int ranks_per_socket;
    double density;
    unsigned long long seed;
    size_t block;
    nbr_collective_t coll;
    const char *algorithm;
} options_t;

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int parse(int argc, char **argv, options_t *o)
{
    *o = (options_t){512, 0, 1, 0, 0.3, 1, 8, NBR_COLL_ALLGATHER, "naive"};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!value)
            return -1;
        if (!strcmp(arg, "--ranks"))
            o->ranks = atoi(value);
        else if (!strcmp(arg, "--density"))
            o->density = atof(value);
        else if (!strcmp(arg, "--seed"))
            o->seed = strtoull(value, NULL, 10);
        else if (!strcmp(arg, "--block"))
            o->block = (size_t)strtoull(value, NULL, 10);
        else if (!strcmp(arg, "--algorithm"))
            o->algorithm = value;
        else if (!strcmp(arg, "--ranks-per-node"))
            o->ranks_per_node = atoi(value);
        else if (!strcmp(arg, "--ranks-per-socket"))
            o->ranks_per_socket = atoi(value);
        else if (!strcmp(arg, "--repeat"))
            o->repeat = atoi(value);
        else if (!strcmp(arg, "--collective")) {
            if (!strcmp(value, "allgather"))
                o->coll = NBR_COLL_ALLGATHER;
            else if (!strcmp(value, "allgatherv"))
                o->coll = NBR_COLL_ALLGATHERV;
            else if (!strcmp(value, "alltoallv"))
                o->coll = NBR_COLL_ALLTOALLV;
            else
                return -1;
        } else
            return -1;
        i++;
    }
    return o->ranks > 0 && o->repeat > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    options_t o;
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: nbr_plan_bench [--ranks N] [--density D] [--seed S] [--block B]\n"
                        "       [--collective allgather|allgatherv|alltoallv] [--algorithm NAME]\n"
                        "       [--ranks-per-node R] [--ranks-per-socket S] [--repeat K]\n");
        return 2;
    }
    const nbr_algorithm_t *algorithm = nbr_algorithm_find(o.algorithm);
    if (!algorithm) {
        fprintf(stderr, "unknown algorithm %s (known: %s)\n", o.algorithm, nbr_algorithm_names());
        return 2;
    }
    nbr_graph_t graph;
    nbr_locality_t locality = {0};
    double t0 = now_seconds();
    if (nbr_graph_erdos_renyi(o.ranks, o.density, o.seed, &graph) != NBR_SUCCESS)
        return 1;
    int virtual_nodes = o.ranks_per_node > 0 || o.ranks_per_socket > 0;
    if (virtual_nodes && nbr_locality_virtual(o.ranks, o.ranks_per_node > 0 ? o.ranks_per_node
                                                                            : o.ranks,
                                              o.ranks_per_socket, &locality) != NBR_SUCCESS)
        return 1;
    double t_graph = now_seconds() - t0;
    nbr_layout_t *layouts = calloc((size_t)o.ranks, sizeof(nbr_layout_t));
    nbr_plan_t *plans = calloc((size_t)o.ranks, sizeof(nbr_plan_t));
    if (!layouts || !plans || nbr_job_layouts(&graph, o.coll, o.block, layouts) != NBR_SUCCESS)
        return 1;
    /* patterns built the way a job builds them, for all ranks in one go
     * where the algorithm computes the whole job's (an MPI rank keeps only
     * its own) */
    nbr_job_t job;
    if (nbr_job_init(&job, &graph, virtual_nodes ? &locality : NULL, algorithm, NULL) !=
        NBR_SUCCESS)
        return 1;
    double tp = now_seconds();
    int prc = nbr_job_build_patterns(&job);
    if (prc != NBR_SUCCESS) {
        fprintf(stderr, "patterns failed: %s\n", nbr_error_string(prc));
        return 1;
    }
    double t_pattern = now_seconds() - tp;
    int status = 0;
    for (int rep = 0; rep < o.repeat && status == 0; rep++) {
        double t1 = now_seconds();
        for (int r = 0; r < o.ranks; r++) {
            nbr_plan_input_t input = nbr_job_input(&job, r, &layouts[r]);
            nbr_plan_free(&plans[r]);
            int rc = nbr_build_plan(algorithm, &input, &plans[r]);
            if (rc != NBR_SUCCESS) {
                fprintf(stderr, "rank %d: build failed: %s\n", r, nbr_error_string(rc));
                return 1;
            }
        }
        double t2 = now_seconds();
        char message[512];
        int rc = nbr_verify_plans(&graph, layouts, plans, message, sizeof message);
        double t3 = now_seconds();
        long ops = 0;
        for (int r = 0; r < o.ranks; r++)
            ops += plans[r].num_ops;
        printf("%s %s ranks=%d density=%.2f edges=%d block=%zu ops=%ld: "
               "graph %.3f s, pattern %.3f s, build %.3f s, verify %.3f s, build+verify %.3f s: %s\n",
               algorithm->name, nbr_collective_name(o.coll), o.ranks, o.density,
               graph.out_offsets[o.ranks], o.block, ops, t_graph, t_pattern, t2 - t1, t3 - t2,
               t3 - t1,
               rc == NBR_SUCCESS ? "verified" : message);
        status = rc == NBR_SUCCESS ? 0 : 1;
    }
    for (int r = 0; r < o.ranks; r++) {
        nbr_plan_free(&plans[r]);
        nbr_layout_free(&layouts[r]);
    }
    free(plans);
    free(layouts);
    nbr_job_free(&job);
    nbr_locality_free(&locality);
    nbr_graph_free(&graph);
    return status;
}
