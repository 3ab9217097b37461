// Builds, for every rank of a whole graph, the layout of one collective call
// and the plan an algorithm makes for it; then runs the verifier.
#pragma once

#include <nbrcoll.h>
extern "C" {
#include "alg/job.h"
#include "plan/verify.h"
}

#include <string>
#include <vector>

struct LayoutParams {
    nbr_collective_t coll = NBR_COLL_ALLGATHER;
    size_t block = 8;      // allgather: bytes per block; v-forms: upper bound
    size_t gap = 0;        // bytes left free between receive slots
    size_t unit = 1;       // element size: every block is a multiple of it
    bool reverse = false;  // v-forms: receive slots in reverse order
    uint64_t seed = 1;
};

// nranks ranks on virtual nodes of ranks_per_node, on a stored machine
// model (topo/<model_file>; GPU = local rank modulo the GPU count) or, with
// model_file null, on flat nodes without GPUs.
struct Machine {
    nbr_locality_t loc{};
    Machine(const char *model_file, int nranks, int ranks_per_node);
    ~Machine();
    Machine(const Machine &) = delete;
    Machine &operator=(const Machine &) = delete;
};

// What a builder sees of rank r of a whole graph (no layout, no node lists).
nbr_plan_input_t input_for(const nbr_graph_t *graph, const nbr_locality_t *locality, int r);

// Size of the k-th s -> d edge's block in the v-forms (0 allowed).
size_t edge_bytes(const LayoutParams &p, int s, int d, int k);

class WholeJob {
public:
    WholeJob(const nbr_graph_t *graph, const LayoutParams &params,
             const nbr_locality_t *locality = nullptr);
    ~WholeJob();
    WholeJob(const WholeJob &) = delete;
    WholeJob &operator=(const WholeJob &) = delete;

    // Builds every rank's plan; returns the first non-success status.
    int build(const nbr_algorithm_t *algorithm);
    // NBR_SUCCESS or the verifier's status; message() says why.
    int verify();
    const std::string &message() const { return message_; }

    std::vector<nbr_plan_t> plans;
    std::vector<nbr_layout_t> layouts;
    const void *params = nullptr; // the algorithm's parameters; nullptr: its defaults
    // build every rank's pattern as a job does (nbr_job_build_patterns);
    // otherwise builders get `patterns` below, or none
    bool job_patterns = false;
    // allgatherv through relays: every rank's send bytes (the size round's
    // result); empty: builders get none
    std::vector<size_t> block_sizes;
    std::vector<const void *> patterns; // per rank, when set: the algorithm's pattern
    // dedup: every rank's value indices, and for the verifier the send byte
    // each send byte holds the same data as (empty: none)
    std::vector<const nbr_value_index_t *> values;
    std::vector<const size_t *> same;

private:
    const nbr_graph_t *graph_;
    const nbr_locality_t *locality_;
    std::string message_;
};

// Every rank's pattern from a whole-job builder (halving, combining): rc is
// the builder's status; the patterns are freed with Free.
template <typename P, void (*Free)(P *)>
struct JobPatterns {
    std::vector<P> p;
    int rc = NBR_ERR_INTERNAL;
    explicit JobPatterns(int nranks) : p(nranks) {}
    ~JobPatterns()
    {
        if (rc == NBR_SUCCESS)
            for (auto &x : p)
                Free(&x);
    }
    JobPatterns(const JobPatterns &) = delete;
    JobPatterns &operator=(const JobPatterns &) = delete;
    // for WholeJob::patterns
    std::vector<const void *> pointers() const
    {
        std::vector<const void *> v;
        for (auto &x : p)
            v.push_back(&x);
        return v;
    }
};
