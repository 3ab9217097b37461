/* nbr_plan_bench: builds every rank's plan for one graph inside this
 * process (no MPI launch) and proves them with the verifier, timing both.
 * It answers "how long does planning N ranks take" and doubles as a check
 * of a builder on graphs larger than an MPI job here can run.
 *
 *   nbr_plan_bench [--ranks N] [--density D] [--seed S] [--block BYTES]
 *                  [--collective allgather|allgatherv|alltoallv]
 *                  [--algorithm NAME] [--ranks-per-node R] [--repeat K]
 *                  [--per-rank K]
 *
 * --per-rank K: instead, what set-up costs one rank of a job: K ranks
 * spread over the job each build their own pattern and plan, alone, in a
 * child process, as an MPI rank would from what set-up gathered; prints
 * the time and the memory beyond that (peak resident size of the child
 * less the parent's at the fork) of each, and the slowest.
 *
 * Exit status: 0 when every plan verified, 1 otherwise, 2 on bad usage. */
#define _DEFAULT_SOURCE /* clock_gettime, fork under -std=c11 */
#include "alg/job.h"
#include "plan/verify.h"

#include "harness/clock.h"

#include <nbrcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct options {
    int ranks, ranks_per_node, repeat;
    int ranks_per_socket, per_rank;
    double density;
    unsigned long long seed;
    size_t block;
    nbr_collective_t coll;
    const char *algorithm;
} options_t;

static int parse(int argc, char **argv, options_t *o)
{
    *o = (options_t){512, 0, 1, 0, 0, 0.3, 1, 8, NBR_COLL_ALLGATHER, "naive"};
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
        else if (!strcmp(arg, "--per-rank"))
            o->per_rank = atoi(value);
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
    return o->ranks > 0 && o->repeat > 0 && o->per_rank >= 0 ? 0 : -1;
}

/* A line "key: N kB" of /proc/self/status (VmRSS, VmHWM), in KiB. */
static long status_kib(const char *key)
{
    char line[256];
    long kib = -1;
    size_t n = strlen(key);
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':')
            kib = atol(line + n + 1);
    if (f)
        fclose(f);
    return kib;
}

/* Rank r's set-up alone (its pattern, then its plan), in a child so that
 * its memory can be told apart: the child's peak resident size less its
 * size before it began. */
static int one_rank_setup(const nbr_job_t *job, const nbr_layout_t *layout, int r,
                          double *seconds, long *extra_kib)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t child = fork();
    if (child < 0)
        return -1;
    if (child == 0) {
        close(fd[0]);
        long before = status_kib("VmRSS");
        double t0 = bh_now();
        nbr_plan_input_t input = nbr_job_input(job, r, layout);
        void *pattern = NULL;
        nbr_plan_t plan = {0};
        int rc = nbr_algorithm_build_pattern(job->algorithm, &input, &pattern);
        input.pattern = pattern;
        if (rc == NBR_SUCCESS)
            rc = nbr_build_plan(job->algorithm, &input, &plan);
        double result[2] = {rc == NBR_SUCCESS ? bh_now() - t0 : -1,
                            (double)(status_kib("VmHWM") - before)};
        ssize_t wrote = write(fd[1], result, sizeof result);
        _exit(wrote == (ssize_t)sizeof result && rc == NBR_SUCCESS && before >= 0 ? 0 : 1);
    }
    close(fd[1]);
    double result[2] = {-1, 0};
    ssize_t got = read(fd[0], result, sizeof result);
    close(fd[0]);
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        got != (ssize_t)sizeof result)
        return -1;
    *seconds = result[0];
    *extra_kib = (long)result[1];
    return 0;
}

/* What set-up gathers for rank r before its builder runs, in bytes. */
static size_t gathered_bytes(const nbr_job_t *job, int r)
{
    const nbr_graph_t *g = job->graph;
    size_t bytes = 0;
    if (job->algorithm->needs & NBR_NEEDS_WHOLE_GRAPH)
        bytes += ((size_t)g->nranks + 1 + (size_t)g->out_offsets[g->nranks]) * sizeof(int);
    if (job->algorithm->needs & NBR_NEEDS_NODE_IN_LISTS)
        for (int s = 0; s < g->nranks; s++)
            if (!job->locality || job->locality->node_of[s] == job->locality->node_of[r])
                bytes += ((size_t)nbr_graph_indegree(g, s) + 1) * sizeof(int);
    return bytes;
}

static int per_rank_report(const options_t *o, const nbr_job_t *job, const nbr_layout_t *layouts)
{
    double slowest = 0;
    long most_kib = 0;
    for (int k = 0; k < o->per_rank; k++) {
        int r = o->per_rank > 1 ? (int)((long)k * (o->ranks - 1) / (o->per_rank - 1)) : 0;
        double seconds;
        long kib;
        if (one_rank_setup(job, &layouts[r], r, &seconds, &kib) != 0) {
            fprintf(stderr, "rank %d: set-up failed\n", r);
            return 1;
        }
        printf("%s rank %d of %d: set-up %.3f s, memory %ld KiB beyond %zu KiB gathered\n",
               job->algorithm->name, r, o->ranks, seconds, kib, gathered_bytes(job, r) / 1024);
        slowest = seconds > slowest ? seconds : slowest;
        most_kib = kib > most_kib ? kib : most_kib;
    }
    printf("%s per rank (%d of %d ranks, density %g): slowest set-up %.3f s, most memory %ld KiB\n",
           job->algorithm->name, o->per_rank, o->ranks, o->density, slowest, most_kib);
    return 0;
}

/* Every rank's pattern and plan in one go, as the verifier needs them:
 * times and the verifier's verdict. */
static int whole_job_report(const options_t *o, nbr_job_t *job, const nbr_layout_t *layouts,
                            nbr_plan_t *plans, double t_graph)
{
    double tp = bh_now();
    int prc = nbr_job_build_patterns(job);
    if (prc != NBR_SUCCESS) {
        fprintf(stderr, "patterns failed: %s\n", nbr_error_string(prc));
        return 1;
    }
    double t_pattern = bh_now() - tp;
    int status = 0;
    for (int rep = 0; rep < o->repeat && status == 0; rep++) {
        double t1 = bh_now();
        void *facts = NULL; /* the call's facts exchange (aggregate), in build time */
        int frc = nbr_job_call_facts(job, layouts, &facts);
        if (frc != NBR_SUCCESS) {
            fprintf(stderr, "call facts failed: %s\n", nbr_error_string(frc));
            nbr_job_free_call_facts(job, facts);
            return 1;
        }
        for (int r = 0; r < o->ranks; r++) {
            nbr_plan_input_t input = nbr_job_input(job, r, &layouts[r]);
            input.call_facts = nbr_job_facts_of(job, facts, r);
            nbr_plan_free(&plans[r]);
            int rc = nbr_build_plan(job->algorithm, &input, &plans[r]);
            if (rc != NBR_SUCCESS) {
                fprintf(stderr, "rank %d: build failed: %s\n", r, nbr_error_string(rc));
                nbr_job_free_call_facts(job, facts);
                return 1;
            }
        }
        nbr_job_free_call_facts(job, facts);
        double t2 = bh_now();
        char message[512];
        int rc = nbr_verify_plans(job->graph, layouts, plans, message, sizeof message);
        double t3 = bh_now();
        long ops = 0;
        for (int r = 0; r < o->ranks; r++)
            ops += plans[r].num_ops;
        printf("%s %s ranks=%d density=%g edges=%d block=%zu ops=%ld: "
               "graph %.3f s, pattern %.3f s, build %.3f s, verify %.3f s, build+verify %.3f s: %s\n",
               job->algorithm->name, nbr_collective_name(o->coll), o->ranks, o->density,
               job->graph->out_offsets[o->ranks], o->block, ops, t_graph, t_pattern, t2 - t1,
               t3 - t2, t3 - t1, rc == NBR_SUCCESS ? "verified" : message);
        status = rc == NBR_SUCCESS ? 0 : 1;
    }
    return status;
}

int main(int argc, char **argv)
{
    options_t o;
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: nbr_plan_bench [--ranks N] [--density D] [--seed S] [--block B]\n"
                        "       [--collective allgather|allgatherv|alltoallv] [--algorithm NAME]\n"
                        "       [--ranks-per-node R] [--ranks-per-socket S] [--repeat K]\n"
                        "       [--per-rank K]\n");
        return 2;
    }
    const nbr_algorithm_t *algorithm = nbr_algorithm_find(o.algorithm);
    if (!algorithm) {
        fprintf(stderr, "unknown algorithm %s (known: %s)\n", o.algorithm, nbr_algorithm_names());
        return 2;
    }
    nbr_graph_t graph;
    nbr_locality_t locality = {0};
    double t0 = bh_now();
    if (nbr_graph_erdos_renyi(o.ranks, o.density, o.seed, &graph) != NBR_SUCCESS)
        return 1;
    int virtual_nodes = o.ranks_per_node > 0 || o.ranks_per_socket > 0;
    if (virtual_nodes && nbr_locality_virtual(o.ranks, o.ranks_per_node > 0 ? o.ranks_per_node
                                                                            : o.ranks,
                                              o.ranks_per_socket, &locality) != NBR_SUCCESS)
        return 1;
    double t_graph = bh_now() - t0;
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
    int status = o.per_rank > 0 ? per_rank_report(&o, &job, layouts)
                                : whole_job_report(&o, &job, layouts, plans, t_graph);
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
