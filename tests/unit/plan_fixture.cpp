#include "plan_fixture.h"

#include <cstring>

#include <gtest/gtest.h>

Machine::Machine(const char *model_file, int nranks, int ranks_per_node)
{
    EXPECT_EQ(nbr_locality_virtual(nranks, ranks_per_node, 0, &loc), NBR_SUCCESS);
    if (!model_file)
        return;
    char why[512];
    EXPECT_EQ(nbr_locality_load_model(&loc, (std::string(NBR_SOURCE_DIR) + "/topo/" + model_file).c_str(),
                                      why, sizeof why),
              NBR_SUCCESS)
        << why;
}

Machine::~Machine() { nbr_locality_free(&loc); }

nbr_plan_input_t input_for(const nbr_graph_t *graph, const nbr_locality_t *locality, int r)
{
    nbr_plan_input_t input = {};
    input.rank = r;
    input.nranks = graph->nranks;
    input.indegree = nbr_graph_indegree(graph, r);
    input.outdegree = nbr_graph_outdegree(graph, r);
    input.sources = nbr_graph_in(graph, r);
    input.destinations = nbr_graph_out(graph, r);
    input.locality = locality;
    return input;
}

size_t edge_bytes(const LayoutParams &p, int s, int d, int k)
{
    uint64_t state = p.seed * 1000003u + (uint64_t)s * 7919u + (uint64_t)d * 104729u + (uint64_t)k;
    return nbr_splitmix64(&state) % (p.block / p.unit + 1) * p.unit;
}

// The k-th occurrence of each entry of a list, counted per value.
static std::vector<int> occurrences(const int *list, int n, int nranks)
{
    std::vector<int> seen(nranks, 0), k(n);
    for (int i = 0; i < n; i++)
        k[i] = seen[list[i]]++;
    return k;
}

WholeJob::WholeJob(const nbr_graph_t *graph, const LayoutParams &p,
                   const nbr_locality_t *locality)
    : layouts(graph->nranks), graph_(graph), locality_(locality)
{
    int n = graph->nranks;
    plans.resize(n);
    for (auto &plan : plans)
        std::memset(&plan, 0, sizeof plan);
    for (int r = 0; r < n; r++) {
        int outdeg = nbr_graph_outdegree(graph, r), indeg = nbr_graph_indegree(graph, r);
        int nsend = p.coll == NBR_COLL_ALLTOALLV ? outdeg : 1;
        nbr_layout_t &layout = layouts[r];
        nbr_layout_init(&layout, p.coll, nsend, indeg);
        // send slots
        if (p.coll == NBR_COLL_ALLTOALLV) {
            std::vector<int> k = occurrences(nbr_graph_out(graph, r), outdeg, n);
            size_t offset = 0;
            for (int j = 0; j < outdeg; j++) {
                layout.send[j] = {offset, edge_bytes(p, r, nbr_graph_out(graph, r)[j], k[j])};
                offset += layout.send[j].bytes + p.gap;
            }
        } else {
            size_t bytes = p.coll == NBR_COLL_ALLGATHER ? p.block : edge_bytes(p, r, -1, 0);
            layout.send[0] = {p.gap, bytes};
        }
        // receive slots, in reverse buffer order if asked
        std::vector<int> k = occurrences(nbr_graph_in(graph, r), indeg, n);
        size_t offset = 0;
        for (int step = 0; step < indeg; step++) {
            int i = p.reverse ? indeg - 1 - step : step;
            int s = nbr_graph_in(graph, r)[i];
            size_t bytes = p.coll == NBR_COLL_ALLGATHER ? p.block
                           : p.coll == NBR_COLL_ALLGATHERV ? edge_bytes(p, s, -1, 0)
                                                           : edge_bytes(p, s, r, k[i]);
            layout.recv[i] = {offset, bytes};
            offset += bytes + p.gap;
        }
    }
}

WholeJob::~WholeJob()
{
    for (auto &plan : plans)
        nbr_plan_free(&plan);
    for (auto &layout : layouts)
        nbr_layout_free(&layout);
}

int WholeJob::build(const nbr_algorithm_t *algorithm)
{
    nbr_job_t job;
    int rc = nbr_job_init(&job, graph_, locality_, algorithm, params);
    if (rc != NBR_SUCCESS) {
        message_ = std::string("job: ") + nbr_error_string(rc);
        return rc;
    }
    if (!values.empty())
        job.values = values.data();
    if (job_patterns && (rc = nbr_job_build_patterns(&job)) != NBR_SUCCESS)
        message_ = std::string("patterns: ") + nbr_error_string(rc);
    void *facts = nullptr; // the call's facts exchange, for algorithms with one
    if (rc == NBR_SUCCESS && (rc = nbr_job_call_facts(&job, layouts.data(), &facts)) != NBR_SUCCESS)
        message_ = std::string("call facts: ") + nbr_error_string(rc);
    for (int r = 0; r < graph_->nranks && rc == NBR_SUCCESS; r++) {
        nbr_plan_input_t input = nbr_job_input(&job, r, &layouts[r]);
        if (!job_patterns)
            input.pattern = patterns.empty() ? nullptr : patterns[r];
        input.block_sizes = block_sizes.empty() ? nullptr : block_sizes.data();
        input.call_facts = nbr_job_facts_of(&job, facts, r);
        nbr_plan_free(&plans[r]);
        rc = nbr_build_plan(algorithm, &input, &plans[r]);
        if (rc != NBR_SUCCESS)
            message_ = "rank " + std::to_string(r) + ": build failed: " + nbr_error_string(rc);
    }
    nbr_job_free_call_facts(&job, facts);
    nbr_job_free(&job);
    return rc;
}

int WholeJob::verify()
{
    char text[512];
    int rc = nbr_verify_plans_same(graph_, layouts.data(), plans.data(),
                                   same.empty() ? nullptr : same.data(), text, sizeof text);
    message_ = text;
    return rc;
}
