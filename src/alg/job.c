#include "alg/job.h"

#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

int nbr_job_init(nbr_job_t *job, const nbr_graph_t *graph, const nbr_locality_t *locality,
                 const nbr_algorithm_t *algorithm, const void *params)
{
    memset(job, 0, sizeof(*job));
    job->graph = graph;
    job->locality = locality;
    job->algorithm = algorithm;
    int n = graph->nranks, rc = NBR_SUCCESS;
    if (!params) {
        rc = nbr_algorithm_params_load(MPI_INFO_NULL, &job->defaults);
        params = rc == NBR_SUCCESS ? nbr_algorithm_params_of(&job->defaults, algorithm) : NULL;
    }
    job->params = params;
    job->in_lists = calloc((size_t)n + 1, sizeof(int *));
    job->in_degrees = calloc((size_t)n + 1, sizeof(int));
    job->patterns = calloc((size_t)n + 1, sizeof(void *));
    if (rc == NBR_SUCCESS && (!job->in_lists || !job->in_degrees || !job->patterns))
        rc = NBR_ERR_NOMEM;
    for (int r = 0; rc == NBR_SUCCESS && r < n; r++) {
        job->in_lists[r] = nbr_graph_in(graph, r);
        job->in_degrees[r] = nbr_graph_indegree(graph, r);
    }
    if (rc != NBR_SUCCESS)
        nbr_job_free(job);
    return rc;
}

nbr_plan_input_t nbr_job_input(const nbr_job_t *job, int r, const nbr_layout_t *layout)
{
    const nbr_graph_t *g = job->graph;
    unsigned needs = job->algorithm->needs;
    nbr_plan_input_t input = {
        .rank = r, .nranks = g->nranks,
        .indegree = nbr_graph_indegree(g, r), .outdegree = nbr_graph_outdegree(g, r),
        .sources = nbr_graph_in(g, r), .destinations = nbr_graph_out(g, r),
        .locality = job->locality, .layout = layout, .params = job->params,
        .pattern = job->patterns ? job->patterns[r] : NULL,
        .values = job->values ? job->values[r] : NULL};
    if (needs & NBR_NEEDS_NODE_IN_LISTS) {
        input.node_in_lists = job->in_lists;
        input.node_in_degrees = job->in_degrees;
    }
    if (needs & NBR_NEEDS_WHOLE_GRAPH) {
        input.graph_out_offsets = g->out_offsets;
        input.graph_out_targets = g->out_targets;
    }
    return input;
}

int nbr_job_build_patterns(nbr_job_t *job)
{
    const nbr_algorithm_t *algorithm = job->algorithm;
    int n = job->graph->nranks, rc = NBR_SUCCESS;
    if (algorithm->whole_job_build) {
        nbr_plan_input_t input = nbr_job_input(job, 0, NULL);
        char *all = calloc((size_t)n + 1, algorithm->pattern_size);
        if (!all)
            return NBR_ERR_NOMEM;
        rc = algorithm->whole_job_build(&input, NULL, all);
        if (rc != NBR_SUCCESS) {
            free(all);
            return rc;
        }
        job->whole_job_patterns = all;
        for (int r = 0; r < n; r++)
            job->patterns[r] = all + (size_t)r * algorithm->pattern_size;
        return NBR_SUCCESS;
    }
    if (!algorithm->build_pattern)
        return NBR_SUCCESS;
    if (!(job->own_patterns = calloc((size_t)n + 1, sizeof(void *))))
        return NBR_ERR_NOMEM;
    for (int r = 0; r < n && rc == NBR_SUCCESS; r++) {
        nbr_plan_input_t input = nbr_job_input(job, r, NULL);
        rc = algorithm->build_pattern(&input, &job->own_patterns[r]);
        job->patterns[r] = job->own_patterns[r];
    }
    return rc;
}

void nbr_job_free(nbr_job_t *job)
{
    const nbr_algorithm_t *algorithm = job->algorithm;
    int n = job->graph ? job->graph->nranks : 0;
    if (job->whole_job_patterns)
        for (int r = 0; r < n; r++)
            algorithm->free_in_place((char *)job->whole_job_patterns +
                                     (size_t)r * algorithm->pattern_size);
    for (int r = 0; job->own_patterns && r < n; r++)
        if (job->own_patterns[r])
            algorithm->free_pattern(job->own_patterns[r]);
    free(job->whole_job_patterns);
    free(job->own_patterns);
    free((void *)job->patterns);
    free((void *)job->in_lists);
    free(job->in_degrees);
    nbr_algorithm_params_free(&job->defaults);
    memset(job, 0, sizeof(*job));
}

int nbr_job_call_facts(const nbr_job_t *job, const nbr_layout_t *layouts, void **facts)
{
    const nbr_algorithm_t *algorithm = job->algorithm;
    int n = job->graph->nranks, rc = NBR_SUCCESS;
    *facts = NULL;
    if (n == 0 || !nbr_algorithm_needs_call_facts(algorithm, &layouts[0]))
        return NBR_SUCCESS;
    size_t size = algorithm->call_facts_size;
    char *all = calloc((size_t)n + 1, size);
    void **contexts = calloc((size_t)n + 1, sizeof(void *));
    if (!all || !contexts) {
        free(all);
        free(contexts);
        return NBR_ERR_NOMEM;
    }
    for (int r = 0; r < n; r++) {
        nbr_plan_input_t input = nbr_job_input(job, r, &layouts[r]);
        contexts[r] = all + (size_t)r * size;
        int init = algorithm->call_facts_init(&input, contexts[r]);
        rc = rc == NBR_SUCCESS ? init : rc; /* every rank still takes part */
    }
    int run = nbr_engine_run_local(n, contexts, algorithm->call_facts_step,
                                   NBR_CALL_FACTS_ROUNDS);
    rc = rc == NBR_SUCCESS ? run : rc;
    for (int r = 0; r < n && rc == NBR_SUCCESS; r++) {
        uint64_t digest = 0;
        rc = algorithm->call_facts_check(contexts[r], &digest);
    }
    free(contexts);
    *facts = all;
    return rc;
}

const void *nbr_job_facts_of(const nbr_job_t *job, const void *facts, int r)
{
    return facts ? (const char *)facts + (size_t)r * job->algorithm->call_facts_size : NULL;
}

void nbr_job_free_call_facts(const nbr_job_t *job, void *facts)
{
    int n = job->graph ? job->graph->nranks : 0;
    for (int r = 0; facts && r < n; r++)
        job->algorithm->call_facts_free((char *)facts + (size_t)r * job->algorithm->call_facts_size);
    free(facts);
}

/* The occurrence of each entry of a list among the equal ones before it
 * (repeated edges: the k-th s -> d edge), with seen[] zero before and after. */
static void occurrences(const int *list, int n, int *seen, int *k)
{
    for (int i = 0; i < n; i++)
        k[i] = seen[list[i]]++;
    for (int i = 0; i < n; i++)
        seen[list[i]] = 0;
}

int nbr_job_layouts(const nbr_graph_t *g, nbr_collective_t coll, uint64_t bytes,
                    nbr_layout_t *layouts)
{
    int n = g->nranks, rc = NBR_SUCCESS, most = 0;
    for (int r = 0; r < n; r++) {
        if (nbr_graph_outdegree(g, r) > most)
            most = nbr_graph_outdegree(g, r);
        if (nbr_graph_indegree(g, r) > most)
            most = nbr_graph_indegree(g, r);
    }
    int *seen = calloc((size_t)n + 1, sizeof(int));
    int *k = calloc((size_t)most + 1, sizeof(int));
    if (!seen || !k)
        rc = NBR_ERR_NOMEM;
    for (int r = 0; r < n && rc == NBR_SUCCESS; r++) {
        int outdeg = nbr_graph_outdegree(g, r), indeg = nbr_graph_indegree(g, r);
        const int *out = nbr_graph_out(g, r), *in = nbr_graph_in(g, r);
        nbr_layout_t *layout = &layouts[r];
        rc = nbr_layout_reserve(layout, coll, coll == NBR_COLL_ALLTOALLV ? outdeg : 1, indeg);
        if (rc != NBR_SUCCESS)
            break;
        size_t offset = 0;
        if (coll == NBR_COLL_ALLTOALLV) {
            occurrences(out, outdeg, seen, k);
            for (int j = 0; j < outdeg; j++) {
                layout->send[j] = (nbr_slot_t){offset, nbr_edge_bytes(bytes, r, out[j], k[j])};
                offset += layout->send[j].bytes;
            }
        } else {
            layout->send[0] = (nbr_slot_t){
                0, coll == NBR_COLL_ALLGATHER ? bytes : nbr_block_bytes(bytes, r)};
        }
        occurrences(in, indeg, seen, k);
        offset = 0;
        for (int i = 0; i < indeg; i++) {
            uint64_t size = coll == NBR_COLL_ALLGATHER    ? bytes
                            : coll == NBR_COLL_ALLGATHERV ? nbr_block_bytes(bytes, in[i])
                                                          : nbr_edge_bytes(bytes, in[i], r, k[i]);
            layout->recv[i] = (nbr_slot_t){offset, size};
            offset += size;
        }
    }
    free(seen);
    free(k);
    return rc;
}
