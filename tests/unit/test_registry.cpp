// The algorithm registry: every row describes itself consistently, and the
// generic parts (fallback plan, patterns, parameters, cost, whole jobs)
// behave the same for every algorithm.
#include "plan_fixture.h"

extern "C" {
#include "alg/combining.h"
#include "alg/cost_model.h"
#include "alg/leader/leader_pattern.h"
#include "alg/select.h"
#include "front/config.h"
}

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <string>

namespace {

struct Graph {
    nbr_graph_t g{};
    ~Graph() { nbr_graph_free(&g); }
};

// Sets an environment variable for one scope.
struct Env {
    std::string name;
    Env(const char *n, const char *value) : name(n) { setenv(n, value, 1); }
    ~Env() { unsetenv(name.c_str()); }
};

std::vector<const nbr_algorithm_t *> rows()
{
    std::vector<const nbr_algorithm_t *> all;
    for (int i = 0; i < nbr_algorithm_count(); i++)
        all.push_back(nbr_algorithm_at(i));
    return all;
}

TEST(Registry, EveryRowDescribesItself)
{
    std::set<std::string> names;
    ASSERT_GE(nbr_algorithm_count(), 4);
    EXPECT_EQ(nbr_algorithm_at(-1), nullptr);
    EXPECT_EQ(nbr_algorithm_at(nbr_algorithm_count()), nullptr);
    EXPECT_STREQ(nbr_baseline_algorithm()->name, "naive");
    for (const nbr_algorithm_t *a : rows()) {
        SCOPED_TRACE(a->name);
        EXPECT_TRUE(names.insert(a->name).second) << "names are unique";
        EXPECT_EQ(nbr_algorithm_find(a->name), a);
        EXPECT_EQ(nbr_algorithm_at(nbr_algorithm_index(a)), a);
        EXPECT_GT(std::strlen(a->description), 20u);
        EXPECT_STREQ(nbr_algorithm_description(a->name), a->description);
        EXPECT_NE(a->build, nullptr);
        EXPECT_NE(a->collectives, 0u) << "plans something itself";
        EXPECT_EQ(a->params_size > 0, a->load_params != nullptr);
        EXPECT_EQ(a->build_pattern != nullptr, a->free_pattern != nullptr);
        EXPECT_EQ(a->whole_job_build != nullptr, a->free_in_place != nullptr);
        EXPECT_EQ(a->whole_job_build != nullptr, a->pattern_size > 0);
        EXPECT_FALSE(a->whole_job_build && a->build_pattern) << "one kind of pattern";
        if (a->whole_job_build) {
            EXPECT_TRUE(a->needs & NBR_NEEDS_WHOLE_GRAPH) << "whole-job patterns read the graph";
        }
        if (a->size_plan) {
            EXPECT_TRUE(a->collectives & NBR_COLL_BIT(NBR_COLL_ALLGATHERV));
        }
        if (a->call_facts_step) { // every hook of an exchange, or none
            EXPECT_GT(a->call_facts_size, 0u);
            EXPECT_GT(a->call_facts_rounds, 0);
            EXPECT_LE(a->call_facts_rounds, NBR_CALL_FACTS_ROUNDS);
            EXPECT_NE(a->call_facts_init, nullptr);
            EXPECT_NE(a->call_facts_check, nullptr);
            EXPECT_NE(a->call_facts_free, nullptr);
        }
        if (a->library) { // the library moves naive's messages: same plan, same price
            EXPECT_EQ(a->build, nbr_baseline_algorithm()->build);
            EXPECT_EQ(a->cost, nbr_baseline_algorithm()->cost);
            EXPECT_EQ(a->collectives, nbr_baseline_algorithm()->collectives);
        }
    }
    EXPECT_EQ(std::string(nbr_algorithm_names()), "auto,naive,mpi,leader,halving,combining,aggregate,dedup");
    const nbr_algorithm_t *found = nullptr;
    EXPECT_EQ(nbr_algorithm_lookup("test", "no-such", &found), NBR_ERR_ALGORITHM);
    EXPECT_EQ(found, nullptr);
}

// A collective an algorithm does not plan gets naive's plan, op for op.
TEST(Registry, CollectivesNotPlannedFallBackToNaive)
{
    Graph G;
    ASSERT_EQ(nbr_graph_erdos_renyi(24, 0.3, 7, &G.g), NBR_SUCCESS);
    Machine m(nullptr, 24, 4);
    for (nbr_collective_t coll : {NBR_COLL_ALLGATHER, NBR_COLL_ALLGATHERV, NBR_COLL_ALLTOALLV}) {
        LayoutParams p;
        p.coll = coll;
        p.block = 40;
        WholeJob naive(&G.g, p, &m.loc);
        ASSERT_EQ(naive.build(nbr_algorithm_find("naive")), NBR_SUCCESS);
        for (const nbr_algorithm_t *a : rows()) {
            if (a->collectives & NBR_COLL_BIT(coll))
                continue;
            SCOPED_TRACE(std::string(a->name) + " " + nbr_collective_name(coll));
            WholeJob job(&G.g, p, &m.loc);
            ASSERT_EQ(job.build(a), NBR_SUCCESS) << job.message();
            ASSERT_EQ(job.verify(), NBR_SUCCESS) << job.message();
            for (int r = 0; r < 24; r++) {
                ASSERT_EQ(job.plans[r].num_ops, naive.plans[r].num_ops);
                ASSERT_EQ(job.plans[r].num_phases, naive.plans[r].num_phases);
                for (int i = 0; i < job.plans[r].num_ops; i++) {
                    EXPECT_EQ(job.plans[r].ops[i].kind, naive.plans[r].ops[i].kind);
                    EXPECT_EQ(job.plans[r].ops[i].peer, naive.plans[r].ops[i].peer);
                    EXPECT_EQ(job.plans[r].ops[i].bytes, naive.plans[r].ops[i].bytes);
                }
            }
        }
    }
}

// Each row reads its own keys: defaults, the environment, bad values.
TEST(Registry, ParametersAreEachAlgorithmsOwn)
{
    const nbr_algorithm_t *leader = nbr_algorithm_find("leader");
    const nbr_algorithm_t *combining = nbr_algorithm_find("combining");
    nbr_algorithm_params_t params{};
    ASSERT_EQ(nbr_algorithm_params_load(MPI_INFO_NULL, &params), NBR_SUCCESS);
    auto *lp = static_cast<const nbr_leader_params_t *>(nbr_algorithm_params_of(&params, leader));
    auto *cp =
        static_cast<const nbr_combining_params_t *>(nbr_algorithm_params_of(&params, combining));
    ASSERT_NE(lp, nullptr);
    ASSERT_NE(cp, nullptr);
    EXPECT_EQ(lp->min_bytes, 256u * 1024);
    EXPECT_EQ(cp->theta, 2);
    EXPECT_EQ(nbr_algorithm_params_of(&params, nbr_algorithm_find("naive")), nullptr);
    nbr_algorithm_params_free(&params);
    {
        Env a("NBR_LEADER_MIN_BYTES", "4096"), b("NBR_COMBINING_THETA", "5");
        ASSERT_EQ(nbr_algorithm_params_load(MPI_INFO_NULL, &params), NBR_SUCCESS);
        lp = static_cast<const nbr_leader_params_t *>(nbr_algorithm_params_of(&params, leader));
        cp = static_cast<const nbr_combining_params_t *>(
            nbr_algorithm_params_of(&params, combining));
        EXPECT_EQ(lp->min_bytes, 4096u);
        EXPECT_EQ(cp->theta, 5);
        nbr_algorithm_params_free(&params);
    }
    for (const char *bad : {"0", "-3", "two", "7x"}) {
        Env e("NBR_COMBINING_THETA", bad);
        EXPECT_EQ(nbr_algorithm_params_load(MPI_INFO_NULL, &params), NBR_ERR_INFO) << bad;
        EXPECT_EQ(params.of, nullptr) << "nothing left to free after a failure";
    }
}

// Naive and halving price a call with the paper's Hockney model; the others
// say they do not know yet; a collective an algorithm does not plan is
// priced as the naive plan it gets.
TEST(Registry, CostHooks)
{
    Graph G;
    const int n = 64;
    ASSERT_EQ(nbr_graph_erdos_renyi(n, 0.25, 3, &G.g), NBR_SUCCESS);
    Machine m(nullptr, n, 16);
    nbr_layout_t layout{};
    ASSERT_EQ(nbr_layout_init(&layout, NBR_COLL_ALLGATHER, 1, nbr_graph_indegree(&G.g, 5)),
              NBR_SUCCESS);
    layout.send[0] = {0, 1024};
    nbr_plan_input_t input = input_for(&G.g, &m.loc, 5);
    input.layout = &layout;
    nbr_cost_query_t query{&input, 2e-6, 1e9};

    nbr_cost_params_t p{};
    ASSERT_EQ(nbr_cost_params_of(&query, &p), NBR_SUCCESS);
    EXPECT_EQ(p.n, n);
    EXPECT_EQ(p.L, 16); // one socket per virtual node of 16
    EXPECT_EQ(p.S, 1);
    EXPECT_DOUBLE_EQ(p.delta, nbr_graph_outdegree(&G.g, 5) / double(n - 1));
    EXPECT_EQ(p.m, 1024);

    double msgs = 0, naive_model = 0;
    nbr_cost_estimate_t halving_model{};
    ASSERT_EQ(nbr_cost_naive(&p, &msgs, &naive_model), NBR_SUCCESS);
    ASSERT_EQ(nbr_cost_halving(&p, &halving_model), NBR_SUCCESS);
    EXPECT_DOUBLE_EQ(nbr_algorithm_cost(nbr_algorithm_find("naive"), &query), naive_model);
    EXPECT_DOUBLE_EQ(nbr_algorithm_cost(nbr_algorithm_find("halving"), &query),
                     halving_model.t_total);
    EXPECT_EQ(nbr_algorithm_cost(nbr_algorithm_find("leader"), &query), NBR_COST_UNKNOWN);
    EXPECT_EQ(nbr_algorithm_cost(nbr_algorithm_find("combining"), &query), NBR_COST_UNKNOWN);

    layout.coll = NBR_COLL_ALLTOALLV; // one slot, as if the rank sent one block
    EXPECT_DOUBLE_EQ(nbr_algorithm_cost(nbr_algorithm_find("halving"), &query), naive_model);
    EXPECT_DOUBLE_EQ(nbr_algorithm_cost(nbr_algorithm_find("combining"), &query), naive_model);
    query.beta = 0; // out of the model's range
    EXPECT_EQ(nbr_algorithm_cost(nbr_algorithm_find("naive"), &query), NBR_COST_UNKNOWN);
    nbr_layout_free(&layout);
}

// A whole job in one process: the set-up facts each algorithm needs and
// patterns built for every rank, then plans that verify. Also the pattern
// a rank builds alone equals the one the whole job gave it.
TEST(Registry, WholeJobsForEveryAlgorithm)
{
    Graph G;
    const int n = 48;
    ASSERT_EQ(nbr_graph_erdos_renyi(n, 0.3, 11, &G.g), NBR_SUCCESS);
    Machine m("frontier-mi250x.topo", n, 8);
    const nbr_leader_params_t every_block{0};
    for (const nbr_algorithm_t *a : rows()) {
        SCOPED_TRACE(a->name);
        nbr_job_t job;
        const void *params = std::string(a->name) == "leader" ? &every_block : nullptr;
        ASSERT_EQ(nbr_job_init(&job, &G.g, &m.loc, a, params), NBR_SUCCESS);
        ASSERT_EQ(nbr_job_build_patterns(&job), NBR_SUCCESS);
        LayoutParams lp;
        lp.block = 64;
        WholeJob w(&G.g, lp, &m.loc);
        w.params = job.params;
        for (int r = 0; r < n; r++) {
            EXPECT_EQ(job.patterns[r] != nullptr, a->build_pattern || a->whole_job_build);
            w.patterns.push_back(job.patterns[r]);
        }
        ASSERT_EQ(w.build(a), NBR_SUCCESS) << w.message();
        ASSERT_EQ(w.verify(), NBR_SUCCESS) << w.message();
        // the same plans when each rank makes its own pattern
        WholeJob alone(&G.g, lp, &m.loc);
        alone.params = job.params;
        ASSERT_EQ(alone.build(a), NBR_SUCCESS) << alone.message();
        for (int r = 0; r < n; r++)
            ASSERT_EQ(alone.plans[r].num_ops, w.plans[r].num_ops) << "rank " << r;
        nbr_job_free(&job);
    }
}

// auto's rule: the cheapest, but the fallback unless beaten by the margin;
// no price (negative, infinite) is never chosen.
TEST(Selection, CheapestWinsOnlyByTheMargin)
{
    const double inf = std::numeric_limits<double>::infinity();
    EXPECT_EQ(nbr_select_choose(std::vector<double>{10, 8, 12}.data(), 3, 0), 1);   // 20 % less
    EXPECT_EQ(nbr_select_choose(std::vector<double>{10, 9.5, 12}.data(), 3, 0), 0); // 5 %: not enough
    EXPECT_EQ(nbr_select_choose(std::vector<double>{10, 9.5, 8.9}.data(), 3, 0), 2);
    EXPECT_EQ(nbr_select_choose(std::vector<double>{inf, 5, 7}.data(), 3, 0), 1);   // no fallback price
    EXPECT_EQ(nbr_select_choose(std::vector<double>{10, -1, inf}.data(), 3, 0), 0);
    EXPECT_EQ(nbr_select_choose(std::vector<double>{inf, inf}.data(), 2, 0), -1);
    EXPECT_EQ(nbr_select_choose(std::vector<double>{3, 2}.data(), 2, -1), 1);       // no fallback
    EXPECT_EQ(nbr_select_choose(std::vector<double>{0, 0, 0}.data(), 3, 0), 0);
}

// auto's trial sides: the winner, the baseline, then rivals within 2x,
// cheapest first; a rival priced as a side already taken on both counts
// (job and slowest rank) is that side's plan, on one count alone it is not.
TEST(Selection, TrialSidesLeaveOutOnlyTheSamePlan)
{
    const double inf = std::numeric_limits<double>::infinity();
    auto sides = [](std::vector<double> job, std::vector<double> slowest, int best, int fallback,
                    int max = 4) {
        std::vector<int> taken(static_cast<size_t>(max), -1);
        taken.resize(static_cast<size_t>(nbr_select_trial_sides(
            job.data(), slowest.data(), static_cast<int>(job.size()), best, fallback, max,
            taken.data())));
        return taken;
    };
    using v = std::vector<int>;
    // candidates: 0 baseline, 1 leader, 2 halving, 3 combining
    // rivals within 2x join cheapest first; 3 (2.5x) stays out
    EXPECT_EQ(sides({30, 10, 12, 25}, {30, 10, 12, 25}, 1, 0), (v{1, 0, 2}));
    EXPECT_EQ(sides({30, 10, 19, 20.5}, {30, 10, 19, 20.5}, 1, 0), (v{1, 0, 2}));
    // RSG 0.7, 256 KiB on the cluster: leader and halving bound alike by
    // the busiest node's interfaces (27.2 ms), their slowest ranks apart
    EXPECT_EQ(sides({40, 27.2, 27.2, 60}, {40, 20.1, 24.3, 60}, 1, 0), (v{1, 0, 2}));
    // the same on both counts: one plan (leader on one node is naive's)
    EXPECT_EQ(sides({10, 10, 12}, {10, 10, 12}, 0, 0), (v{0, 2}));
    EXPECT_EQ(sides({30, 10, 10, 12}, {30, 8, 8, 12}, 1, 0), (v{1, 0, 3}));
    // the baseline won: no extra side for it
    EXPECT_EQ(sides({10, 25, 18}, {10, 25, 18}, 0, 0), (v{0, 2}));
    // no price (infinite, negative) is never a side; nothing near: alone
    EXPECT_EQ(sides({10, inf, -1, 11}, {10, inf, -1, 11}, 0, 0), (v{0, 3}));
    EXPECT_EQ(sides({10, 21, inf}, {10, 21, inf}, 0, 0), (v{0}));
    EXPECT_EQ(sides({10, 21, inf}, {10, 21, inf}, 0, -1), (v{0}));
    // at most max sides, the cheapest rivals first
    EXPECT_EQ(sides({30, 10, 11, 12, 13}, {30, 10, 11, 12, 13}, 1, 0, 3), (v{1, 0, 2}));
    EXPECT_EQ(sides({10, 11}, {10, 11}, 0, 0, 1), (v{0}));
    // a best out of range is no trial
    EXPECT_EQ(sides({10, 11}, {10, 11}, 2, 0), (v{}));
}

TEST(Selection, CandidatesPlanTheCollective)
{
    const nbr_algorithm_t *naive = nbr_algorithm_find("naive"), *halving = nbr_algorithm_find("halving"),
                          *combining = nbr_algorithm_find("combining"), *mpi = nbr_algorithm_find("mpi");
    ASSERT_NE(mpi, nullptr);
    // the baseline: the library's own collective where it can run the
    // calls, naive's plan (the same messages) elsewhere; never both
    EXPECT_EQ(nbr_select_baseline(1), mpi);
    EXPECT_EQ(nbr_select_baseline(0), naive);
    EXPECT_TRUE(nbr_select_eligible(mpi, NBR_COLL_ALLTOALLV, 100000, 0, 1));
    EXPECT_FALSE(nbr_select_eligible(naive, NBR_COLL_ALLTOALLV, 100000, 0, 1));
    EXPECT_TRUE(nbr_select_eligible(naive, NBR_COLL_ALLTOALLV, 100000, 0, 0));
    EXPECT_FALSE(nbr_select_eligible(mpi, NBR_COLL_ALLGATHER, 16, 1024, 0));
    for (int library = 0; library < 2; library++) {
        EXPECT_TRUE(nbr_select_eligible(halving, NBR_COLL_ALLGATHER, 1024, 1024, library));
        EXPECT_FALSE(nbr_select_eligible(halving, NBR_COLL_ALLGATHER, 1025, 1024, library)); // whole graph
        EXPECT_FALSE(nbr_select_eligible(halving, NBR_COLL_ALLTOALLV, 16, 1024, library));   // naive's plan
        EXPECT_TRUE(nbr_select_eligible(combining, NBR_COLL_ALLGATHERV, 16, 1024, library));
        EXPECT_FALSE(nbr_select_eligible(combining, NBR_COLL_ALLTOALLV, 16, 1024, library));
    }
    EXPECT_STRNE(nbr_algorithm_description("auto"), nullptr);
    const nbr_algorithm_t *found = naive;
    EXPECT_EQ(nbr_algorithm_lookup("test", "auto", &found), NBR_SUCCESS);
    EXPECT_EQ(found, nullptr);
}

// The configuration: auto and the built-in machine by default, a machine
// file when named, an error for one that cannot be read.
TEST(Selection, ConfigurationOfAuto)
{
    nbr_config_t config;
    ASSERT_EQ(nbr_config_load(MPI_INFO_NULL, &config), NBR_SUCCESS);
    EXPECT_EQ(config.algorithm, nullptr) << "auto is the default";
    EXPECT_STREQ(config.machine.name, "generic-100gbit");
    EXPECT_EQ(config.auto_whole_graph_ranks, 1024);
    nbr_config_free(&config);
    {
        Env a("NBR_MACHINE", (std::string(NBR_SOURCE_DIR) + "/topo/dgx-h100-ndr.machine").c_str());
        Env b("NBR_ALGORITHM", "naive");
        ASSERT_EQ(nbr_config_load(MPI_INFO_NULL, &config), NBR_SUCCESS);
        EXPECT_STREQ(config.machine.name, "dgx-h100-ndr");
        EXPECT_EQ(config.algorithm, nbr_algorithm_find("naive"));
        nbr_config_free(&config);
    }
    {
        Env a("NBR_MACHINE", "/no/such.machine");
        EXPECT_EQ(nbr_config_load(MPI_INFO_NULL, &config), NBR_ERR_INFO);
    }
    {
        Env a("NBR_ALGORITHM", "auto");
        ASSERT_EQ(nbr_config_load(MPI_INFO_NULL, &config), NBR_SUCCESS);
        EXPECT_EQ(config.algorithm, nullptr);
        nbr_config_free(&config);
    }
}

} // namespace
