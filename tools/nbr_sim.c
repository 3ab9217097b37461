/*
 * nbr_sim: predicts, without running anything, how long every algorithm's
 * plans take for a whole job on a machine: the graph of a bench pattern,
 * virtual nodes of a stored node model, the machine's parameters (a
 * .machine file, as in topo/). Plans are built exactly as the job's ranks would build
 * them, then priced by the simulator (src/plan/sim.h). Prints, per
 * algorithm and message size, the predicted time, the speedup over naive,
 * the messages between nodes and the bytes between nodes next to the floor
 * (every block crossing to every node that needs it exactly once);
 * optionally writes CSV. Run with --help for the options.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include "alg/job.h"
#include "alg/select.h"
#include "plan/sim.h"
#include "topo/machine.h"

#include "harness/clock.h"
#include "harness/common.h"
#include "harness/graphs.h"
#include "harness/options.h"
#include "harness/spmm_plan.h"

#include <limits.h>
#include <math.h>
#include <nbrcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ALGORITHMS 16

/* The harness's collective kinds name the library's, in its order. */
_Static_assert((int)BH_COLL_ALLGATHER == (int)NBR_COLL_ALLGATHER &&
                   (int)BH_COLL_ALLGATHERV == (int)NBR_COLL_ALLGATHERV &&
                   (int)BH_COLL_ALLTOALLV == (int)NBR_COLL_ALLTOALLV,
               "bh_coll_t and nbr_collective_t differ");

typedef struct options {
    bh_graph_spec_t graph;
    int ranks, ranks_per_node, ranks_per_socket;
    const char *node_model; /* a .topo file; NULL: nodes without GPUs */
    const char *machine;    /* a .machine file */
    bh_coll_t coll;
    int device;             /* buffers on GPUs */
    uint64_t min_bytes, max_bytes;
    int step;               /* sizes grow by this factor */
    const char *algorithms[MAX_ALGORITHMS];
    int num_algorithms;
    int shown[MAX_ALGORITHMS]; /* rows printed; the others only inform auto's row */
    int auto_listed;           /* --algorithms named auto */
    const char *csv;
    const char *matrix;     /* nbr_spmm's exchange of this file instead */
    int cols;               /* its dense columns */
    spmm_split_t split;
} options_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: nbr_sim --machine FILE [options]\n"
            "\n"
            "Predicts the time of every algorithm's plans for a whole job.\n"
            "\n"
            "graph (as nbr_bench):\n"
            "  --pattern rsg|moore --density P --seed S --dims D --radius R\n"
            "  --matrix FILE          instead: nbr_spmm's allgatherv of this Matrix Market\n"
            "                         file's rows of B (bench/README.md, nbr_spmm)\n"
            "  --cols K --partition rows|nnz   its dense columns [32] and row split [rows]\n"
            "job:\n"
            "  --ranks N              ranks [128]\n"
            "  --ranks-per-node R     ranks per node [8]\n"
            "  --ranks-per-socket S   ranks per socket [one socket per node]\n"
            "  --node-model FILE      node model (.topo): GPUs and their links; rank\n"
            "                         GPU = local rank modulo GPUs [no GPUs]\n"
            "  --machine FILE         machine parameters (.machine), required;\n"
            "                         'default' = the library's built-in one\n"
            "call:\n"
            "  --collective allgather|allgatherv|alltoallv [allgather]\n"
            "  --memory host|device   where the buffers live [host]\n"
            "  --min-bytes B --max-bytes B  per-neighbor block sizes [8, 16Mi]\n"
            "  --step F               sizes grow by this factor [4]\n"
            "  --algorithms A,B,...   [every algorithm of the build: %s]\n"
            "                         naming auto prices every plan for its row and\n"
            "                         prints only the named rows beside it\n"
            "output:\n"
            "  --csv FILE             also write results to FILE\n",
            nbr_algorithm_names());
}

static int apply(const char *name, const char *val, void *ctx, char *err, size_t errlen)
{
    options_t *o = ctx;
    long l = 0;
    int bad = 0, graph = bh_graph_option(name, val, &o->graph);
    int spmm = graph > 0 ? spmm_option(name, val, &o->cols, &o->split) : 1;
    if (graph <= 0 || spmm <= 0) {
        bad = graph < 0 || spmm < 0;
    } else if (!strcmp(name, "ranks")) {
        bad = bh_parse_long(val, 1, INT_MAX / 2, &l);
        o->ranks = (int)l;
    } else if (!strcmp(name, "ranks-per-node")) {
        bad = bh_parse_long(val, 1, INT_MAX, &l);
        o->ranks_per_node = (int)l;
    } else if (!strcmp(name, "ranks-per-socket")) {
        bad = bh_parse_long(val, 1, INT_MAX, &l);
        o->ranks_per_socket = (int)l;
    } else if (!strcmp(name, "node-model")) {
        o->node_model = val;
    } else if (!strcmp(name, "machine")) {
        o->machine = val;
    } else if (!strcmp(name, "collective")) {
        bad = bh_coll_from_name(val, &o->coll);
    } else if (!strcmp(name, "memory")) {
        bad = strcmp(val, "host") && strcmp(val, "device");
        o->device = !strcmp(val, "device");
    } else if (!strcmp(name, "min-bytes")) {
        bad = bh_parse_bytes(val, &o->min_bytes);
    } else if (!strcmp(name, "max-bytes")) {
        bad = bh_parse_bytes(val, &o->max_bytes);
    } else if (!strcmp(name, "step")) {
        bad = bh_parse_long(val, 2, 1024, &l);
        o->step = (int)l;
    } else if (!strcmp(name, "algorithms")) {
        o->num_algorithms = 0;
        for (char *list = strdup(val), *save = NULL, *a = strtok_r(list, ",", &save); a;
             a = strtok_r(NULL, ",", &save)) {
            if (!strcmp(a, NBR_AUTO_NAME)) {
                o->auto_listed = 1;
                continue;
            }
            if (!nbr_algorithm_find(a) || o->num_algorithms == MAX_ALGORITHMS) {
                snprintf(err, errlen, "unknown algorithm '%s' (known: %s)", a,
                         nbr_algorithm_names());
                return -1;
            }
            o->algorithms[o->num_algorithms++] = a; /* the copy lives to the end */
        }
    } else if (!strcmp(name, "csv")) {
        o->csv = val;
    } else if (!strcmp(name, "matrix")) {
        o->matrix = val;
    } else {
        snprintf(err, errlen, "unknown option '--%s'", name);
        return -1;
    }
    if (bad)
        snprintf(err, errlen, "bad value '%s' for --%s", val, name);
    return bad ? -1 : 0;
}

/* Virtual nodes of the node model, GPU = local rank modulo its GPUs. */
static int make_locality(const options_t *o, nbr_locality_t *loc)
{
    int rc = nbr_locality_virtual(o->ranks, o->ranks_per_node, o->ranks_per_socket, loc);
    if (rc != NBR_SUCCESS || !o->node_model)
        return rc;
    char why[512];
    if ((rc = nbr_locality_load_model(loc, o->node_model, why, sizeof why)) != NBR_SUCCESS) {
        fprintf(stderr, "nbr_sim: %s\n", why);
        return rc;
    }
    return NBR_SUCCESS;
}

/* Bytes that must cross between nodes at the least: each rank's block to
 * each other node holding one of its out-neighbors, once (allgather(v));
 * every message of alltoallv between nodes is different data. */
static double floor_bytes(const nbr_graph_t *g, const nbr_locality_t *loc,
                          const nbr_layout_t *layouts, int *seen)
{
    double total = 0;
    for (int r = 0; r < g->nranks; r++) {
        const int *out = nbr_graph_out(g, r);
        for (int j = 0; j < nbr_graph_outdegree(g, r); j++) {
            int node = loc->node_of[out[j]];
            if (node == loc->node_of[r])
                continue;
            if (layouts[r].coll == NBR_COLL_ALLTOALLV) {
                total += (double)layouts[r].send[j].bytes;
            } else if (seen[node] != r + 1) {
                seen[node] = r + 1;
                total += (double)layouts[r].send[0].bytes;
            }
        }
    }
    return total;
}

/* One algorithm's prediction for one size. */
typedef struct row {
    const nbr_algorithm_t *algorithm;
    nbr_sim_result_t result; /* the data plan's */
    double seconds;          /* with the size round, when it has one */
    unsigned long long net_messages;
    double net_bytes;
    double setup; /* seconds to build the whole job's patterns here */
    double estimate; /* what auto prices it at: the most of any rank's own estimate */
} row_t;

typedef struct call {
    const options_t *o;
    const nbr_graph_t *graph;
    const nbr_locality_t *loc;
    const nbr_machine_t *machine;
    nbr_layout_t *layouts;
    nbr_plan_t *plans;
    size_t *block_sizes;
} call_t;

/* What auto prices the plans at (front/select.c): the slowest rank's own
 * estimate or the busiest node's interfaces, whichever is longer. */
static double job_price(const nbr_sim_input_t *in, const nbr_locality_t *loc)
{
    int nodes = loc->num_nodes > 0 ? loc->num_nodes : 1;
    double *bytes = calloc((size_t)nodes * 2, sizeof(double)), price = 0;
    if (!bytes)
        return INFINITY;
    for (int r = 0; r < in->nranks; r++) {
        nbr_sim_parts_t parts;
        nbr_sim_rank_parts(in, &in->plans[r], &parts);
        price = parts.seconds > price ? parts.seconds : price;
        bytes[loc->node_of[r] * 2] += parts.net_out_bytes;
        bytes[loc->node_of[r] * 2 + 1] += parts.net_in_bytes;
    }
    price = nbr_sim_job_price(in->machine, price, bytes, nodes);
    free(bytes);
    return price;
}

/* Builds every rank's plan (data, or the size round before it) and
 * simulates them. */
static int price(call_t *c, nbr_job_t *job, int size_round, nbr_sim_result_t *result,
                 double *estimate)
{
    int n = c->o->ranks, rc = NBR_SUCCESS;
    nbr_layout_t *layouts = c->layouts;
    nbr_layout_t *sizes = NULL;
    size_t *offset_of = NULL;
    if (size_round) { /* an allgather of every rank's 8-byte size along the pattern */
        sizes = calloc((size_t)n, sizeof(nbr_layout_t));
        offset_of = malloc((size_t)n * sizeof(size_t));
        rc = sizes && offset_of ? nbr_job_layouts(c->graph, NBR_COLL_ALLGATHER, 8, sizes)
                                : NBR_ERR_NOMEM;
        layouts = sizes;
    }
    void *facts = NULL; /* aggregate's exchange, run for every rank here */
    if (rc == NBR_SUCCESS && (rc = nbr_job_call_facts(job, layouts, &facts)) != NBR_SUCCESS)
        fprintf(stderr, "nbr_sim: %s: call facts: %s\n", job->algorithm->name,
                nbr_error_string(rc));
    for (int r = 0; r < n && rc == NBR_SUCCESS; r++) {
        nbr_plan_input_t input = nbr_job_input(job, r, &layouts[r]);
        input.call_facts = nbr_job_facts_of(job, facts, r);
        if (!size_round && c->block_sizes && job->algorithm->size_plan)
            input.block_sizes = c->block_sizes;
        nbr_plan_free(&c->plans[r]);
        rc = size_round ? nbr_build_size_plan(job->algorithm, &input, &c->plans[r], offset_of)
                        : nbr_build_plan(job->algorithm, &input, &c->plans[r]);
        if (rc != NBR_SUCCESS)
            fprintf(stderr, "nbr_sim: %s, rank %d: %s\n", job->algorithm->name, r,
                    nbr_error_string(rc));
    }
    nbr_job_free_call_facts(job, facts);
    if (rc == NBR_SUCCESS) {
        nbr_sim_input_t in = {n, c->plans, c->loc, c->machine, c->o->device};
        char why[512];
        rc = nbr_simulate(&in, result, NULL, why, sizeof why);
        *estimate += job_price(&in, c->loc);

        if (rc != NBR_SUCCESS)
            fprintf(stderr, "nbr_sim: %s: %s\n", job->algorithm->name, why);
    }
    for (int r = 0; sizes && r < n; r++)
        nbr_layout_free(&sizes[r]);
    free(sizes);
    free(offset_of);
    return rc;
}

/* nbr_spmm's exchange of o->matrix over o->ranks ranks: its graph and the
 * bytes each rank sends (its B rows, 8-byte values, o->cols of them). */
static int matrix_job(const options_t *o, nbr_graph_t *graph, uint64_t **block, char *label,
                      size_t labelsz)
{
    bh_matrix_t m;
    spmm_job_t job;
    char err[512];
    if (bh_matrix_read(o->matrix, &m, err, sizeof err) != 0) {
        fprintf(stderr, "nbr_sim: %s\n", err);
        return NBR_ERR_IO;
    }
    int rc = spmm_job_build(&m, o->ranks, o->split, &job) == 0 ? NBR_SUCCESS : NBR_ERR_NOMEM;
    if (rc == NBR_SUCCESS)
        rc = nbr_graph_from_edges(o->ranks, job.nedges, job.edge_src, job.edge_dst, graph);
    *block = rc == NBR_SUCCESS ? malloc((size_t)o->ranks * sizeof(uint64_t)) : NULL;
    if (rc == NBR_SUCCESS && !*block)
        rc = NBR_ERR_NOMEM;
    for (int r = 0; rc == NBR_SUCCESS && r < o->ranks; r++)
        (*block)[r] = (uint64_t)job.send_rows[r] * (uint64_t)o->cols * sizeof(double);
    const char *base = strrchr(o->matrix, '/');
    snprintf(label, labelsz, "%s(k=%d,%s)", base ? base + 1 : o->matrix, o->cols,
             o->split == SPMM_SPLIT_NNZ ? "nnz" : "rows");
    if (job.nranks)
        spmm_job_free(&job);
    bh_matrix_free(&m);
    return rc;
}

/* allgatherv layouts of blocks of block[r] bytes, slots back to back. */
static int block_layouts(const nbr_graph_t *g, const uint64_t *block, nbr_layout_t *layouts)
{
    for (int r = 0; r < g->nranks; r++) {
        int indeg = nbr_graph_indegree(g, r);
        const int *in = nbr_graph_in(g, r);
        int rc = nbr_layout_reserve(&layouts[r], NBR_COLL_ALLGATHERV, 1, indeg);
        if (rc != NBR_SUCCESS)
            return rc;
        layouts[r].send[0] = (nbr_slot_t){0, block[r]};
        size_t offset = 0;
        for (int i = 0; i < indeg; i++) {
            layouts[r].recv[i] = (nbr_slot_t){offset, block[in[i]]};
            offset += block[in[i]];
        }
    }
    return NBR_SUCCESS;
}

int main(int argc, char **argv)
{
    options_t o = {.graph = {BH_PATTERN_RSG, 0.3, 1, 2, 1}, .ranks = 128, .ranks_per_node = 8,
                   .coll = BH_COLL_ALLGATHER, .min_bytes = 8, .max_bytes = 16 * BH_MIB,
                   .step = 4, .cols = 32, .split = SPMM_SPLIT_ROWS};
    char err[256] = "";
    bh_set_progname("nbr_sim");
    int parsed = bh_parse_argv(argc, argv, apply, &o, err, sizeof err);
    if (parsed > 0) {
        usage(stdout);
        return 0;
    }
    if (parsed == 0 && !o.machine)
        snprintf(err, sizeof err, "--machine FILE is required");
    if (parsed < 0 || !o.machine || o.min_bytes < 1 || o.max_bytes < o.min_bytes) {
        fprintf(stderr, "nbr_sim: %s\n", err[0] ? err : "bad --min-bytes / --max-bytes");
        usage(stderr);
        return BH_EXIT_USAGE;
    }
    /* auto's row needs every plan auto prices, listed or not: then every
     * plan is simulated once (mpi's is naive's: the library posts it) and
     * only the listed rows are printed */
    for (int a = 0; a < o.num_algorithms; a++)
        o.shown[a] = 1;
    if (o.num_algorithms == 0 || o.auto_listed) {
        const char *listed[MAX_ALGORITHMS];
        int n_listed = o.num_algorithms;
        memcpy(listed, o.algorithms, sizeof listed);
        o.num_algorithms = 0;
        for (int i = 0; i < nbr_algorithm_count() + n_listed; i++) {
            const char *name = i < nbr_algorithm_count() ? nbr_algorithm_at(i)->name
                                                         : listed[i - nbr_algorithm_count()];
            if (i < nbr_algorithm_count() && nbr_algorithm_at(i)->library)
                continue;
            int in_list = 0, done = 0;
            for (int k = 0; k < n_listed; k++)
                in_list |= !strcmp(listed[k], name);
            for (int k = 0; k < o.num_algorithms; k++)
                done |= !strcmp(o.algorithms[k], name);
            if (done || o.num_algorithms == MAX_ALGORITHMS)
                continue;
            o.shown[o.num_algorithms] = in_list || (n_listed == 0 && !o.auto_listed);
            o.algorithms[o.num_algorithms++] = name;
        }
    }

    nbr_machine_t machine;
    nbr_graph_t graph = {0};
    nbr_locality_t loc = {0};
    char why[512];
    if (!strcmp(o.machine, "default"))
        nbr_machine_default(&machine); /* what auto uses without NBR_MACHINE */
    else if (nbr_machine_load(o.machine, &machine, why, sizeof why) != NBR_SUCCESS) {
        fprintf(stderr, "nbr_sim: %s\n", why);
        return 1;
    }
    uint64_t *matrix_block = NULL; /* --matrix: each rank's block, one call */
    char pattern[128];
    bh_pattern_label(&o.graph, pattern, sizeof pattern);
    if (o.matrix) {
        o.coll = BH_COLL_ALLGATHERV;
        o.min_bytes = o.max_bytes = 1; /* the loop below runs once */
    }
    if ((o.matrix ? matrix_job(&o, &graph, &matrix_block, pattern, sizeof pattern)
                  : bh_graph_generate(&o.graph, o.ranks, &graph)) != NBR_SUCCESS ||
        make_locality(&o, &loc) != NBR_SUCCESS) {
        fprintf(stderr, "nbr_sim: cannot set the job up\n");
        return 1;
    }
    nbr_collective_t coll = (nbr_collective_t)o.coll;
    call_t c = {&o, &graph, &loc, &machine, calloc((size_t)o.ranks, sizeof(nbr_layout_t)),
                calloc((size_t)o.ranks, sizeof(nbr_plan_t)),
                malloc((size_t)o.ranks * sizeof(size_t))};
    int *seen = calloc((size_t)loc.num_nodes + 1, sizeof(int));
    FILE *csv = o.csv ? fopen(o.csv, "w") : NULL;
    if (!c.layouts || !c.plans || !c.block_sizes || !seen || (o.csv && !csv)) {
        fprintf(stderr, "nbr_sim: %s\n", o.csv && !csv ? "cannot write the CSV file" : "no memory");
        return 1;
    }
    printf("# nbr_sim: %s, %d ranks, %d per node (%d nodes), node model %s, machine %s, "
           "%s, %s buffers\n",
           pattern, o.ranks, o.ranks_per_node, loc.num_nodes,
           o.node_model ? loc.model.name : "flat", machine.name, nbr_collective_name(coll),
           o.device ? "device" : "host");
    printf("# edges %d; speedup: over naive's predicted time; net: between nodes, max "
           "messages of one rank, total MB next to the floor; estimate: what auto prices a "
           "plan at (the most of any rank's own estimate); auto: the row auto picks by those "
           "prices (runs: the plan it runs)\n",
           graph.out_offsets[o.ranks]);
    printf("%-10s %8s %12s %8s %9s %10s %10s %6s %9s %11s  %s\n", "algorithm", "bytes",
           "time_us", "speedup", "net_msgs", "net_MB", "floor_MB", "ratio", "setup_s",
           "estimate_us", "runs");
    if (csv)
        fprintf(csv, "pattern,ranks,ranks_per_node,node_model,machine,collective,memory,bytes,"
                     "algorithm,seconds,mean_seconds,speedup_vs_naive,max_rank_net_messages,"
                     "net_bytes,floor_bytes,setup_seconds,estimate_seconds,runs");
    for (int k = 0; csv && k < NBR_NUM_PATHS; k++)
        fprintf(csv, ",%s_messages,%s_bytes", nbr_path_name((nbr_path_t)k),
                nbr_path_name((nbr_path_t)k));
    if (csv)
        fputc('\n', csv);

    /* each algorithm's patterns once: they do not depend on the size */
    nbr_job_t jobs[MAX_ALGORITHMS];
    double setup[MAX_ALGORITHMS];
    for (int a = 0; a < o.num_algorithms; a++) {
        const nbr_algorithm_t *algorithm = nbr_algorithm_find(o.algorithms[a]);
        double t0 = bh_now();
        if (nbr_job_init(&jobs[a], &graph, &loc, algorithm, NULL) != NBR_SUCCESS ||
            nbr_job_build_patterns(&jobs[a]) != NBR_SUCCESS) {
            fprintf(stderr, "nbr_sim: %s: set-up failed\n", algorithm->name);
            return 1;
        }
        setup[a] = bh_now() - t0;
    }
    int status = 0;
    int calls = 0; /* --matrix prices its one call */
    for (uint64_t bytes = o.min_bytes;
         bytes <= o.max_bytes && status == 0 && !(matrix_block && calls++ > 0);
         bytes = bytes * (uint64_t)o.step) {
        if ((matrix_block ? block_layouts(&graph, matrix_block, c.layouts)
                          : nbr_job_layouts(&graph, coll, bytes, c.layouts)) != NBR_SUCCESS)
            return 1;
        for (int r = 0; r < o.ranks; r++) {
            c.block_sizes[r] = c.layouts[r].send[0].bytes;
            /* --matrix: the bytes column is the largest block */
            if (matrix_block && (r == 0 || c.block_sizes[r] > bytes))
                bytes = c.block_sizes[r];
        }
        memset(seen, 0, ((size_t)loc.num_nodes + 1) * sizeof(int));
        double floor = floor_bytes(&graph, &loc, c.layouts, seen), naive = 0;
        char label[32];
        bh_size_label(bytes, label, sizeof label);
        row_t rows[MAX_ALGORITHMS];
        for (int a = 0; a < o.num_algorithms && status == 0; a++) {
            const nbr_algorithm_t *algorithm = jobs[a].algorithm;
            nbr_job_t *job = &jobs[a];
            rows[a] = (row_t){.algorithm = algorithm, .setup = setup[a]};
            nbr_sim_result_t round = {0};
            int relay = coll == NBR_COLL_ALLGATHERV && algorithm->size_plan &&
                        (algorithm->collectives & NBR_COLL_BIT(coll));
            double round_estimate = 0;
            status = relay ? price(&c, job, 1, &round, &round_estimate) : 0;
            if (status == 0)
                status = price(&c, job, 0, &rows[a].result, &rows[a].estimate);
            rows[a].estimate += round_estimate;
            /* the size round runs first, then the data */
            rows[a].seconds = rows[a].result.seconds + round.seconds;
            rows[a].net_messages =
                rows[a].result.max_rank_network_messages + round.max_rank_network_messages;
            rows[a].net_bytes =
                (double)(rows[a].result.bytes[NBR_PATH_NETWORK] + round.bytes[NBR_PATH_NETWORK]);
            if (!strcmp(algorithm->name, "naive"))
                naive = rows[a].seconds;
        }
        /* auto's choice among the rows, by its own rule and prices (the
         * last row, when naive was simulated) */
        double prices[MAX_ALGORITHMS];
        int fallback = -1, n_rows = o.num_algorithms;
        for (int a = 0; a < n_rows && status == 0; a++) {
            /* naive's row stands for the baseline, mpi's plan on host buffers */
            int baseline = rows[a].algorithm == nbr_baseline_algorithm();
            int eligible = baseline || nbr_select_eligible(rows[a].algorithm, coll, o.ranks,
                                                           NBR_AUTO_WHOLE_GRAPH_RANKS_DEFAULT,
                                                           !o.device);
            prices[a] = eligible ? rows[a].estimate : -1;
            if (baseline)
                fallback = a;
        }
        int pick = status == 0 && fallback >= 0 ? nbr_select_choose(prices, n_rows, fallback) : -1;
        for (int a = 0; a <= n_rows && status == 0; a++) {
            if (a == n_rows && pick < 0)
                break;
            if (a < n_rows && !o.shown[a])
                continue;
            const row_t *w = &rows[a < n_rows ? a : pick];
            const char *name = a < n_rows ? w->algorithm->name : NBR_AUTO_NAME;
            double speedup = naive > 0 ? naive / w->seconds : 0;
            printf("%-10s %8s %12.2f %8.2f %9llu %10.3f %10.3f %6.2f %9.3f %11.2f  %s\n", name,
                   label, w->seconds * 1e6, speedup, (unsigned long long)w->net_messages,
                   w->net_bytes / 1e6, floor / 1e6, floor > 0 ? w->net_bytes / floor : 0,
                   w->setup, w->estimate * 1e6, w->algorithm->name);
            if (csv)
                fprintf(csv, "\"%s\",%d,%d,%s,%s,%s,%s,%llu,%s,%.9g,%.9g,%.4f,%llu,%.0f,%.0f,"
                             "%.4f,%.9g,%s",
                        pattern, o.ranks, o.ranks_per_node,
                        o.node_model ? loc.model.name : "flat", machine.name,
                        nbr_collective_name(coll), o.device ? "device" : "host",
                        (unsigned long long)bytes, name, w->seconds, w->result.mean_seconds,
                        speedup, (unsigned long long)w->net_messages, w->net_bytes, floor,
                        w->setup, w->estimate, w->algorithm->name);
            for (int k = 0; csv && k < NBR_NUM_PATHS; k++)
                fprintf(csv, ",%llu,%llu", (unsigned long long)w->result.messages[k],
                        (unsigned long long)w->result.bytes[k]);
            if (csv)
                fputc('\n', csv);
        }
    }
    for (int a = 0; a < o.num_algorithms; a++)
        nbr_job_free(&jobs[a]);
    for (int r = 0; r < o.ranks; r++) {
        nbr_plan_free(&c.plans[r]);
        nbr_layout_free(&c.layouts[r]);
    }
    free(c.plans);
    free(c.layouts);
    free(c.block_sizes);
    free(matrix_block);
    free(seen);
    if (csv)
        fclose(csv);
    nbr_locality_free(&loc);
    nbr_graph_free(&graph);
    return status == 0 ? 0 : 1;
}
