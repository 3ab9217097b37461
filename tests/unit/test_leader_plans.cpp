// The leader builder: the paper's worked cases and the verifier over many
// graphs on stored machine models.
#include "plan_fixture.h"

extern "C" {
#include "alg/leader/leader_pattern.h"
}

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace {

const nbr_algorithm_t *leader() { return nbr_algorithm_find("leader"); }

// Every block takes the leader route (by default small ones go directly).
const nbr_leader_params_t every_block{0};

struct LeaderJob : WholeJob {
    LeaderJob(const nbr_graph_t *graph, const LayoutParams &p, const nbr_locality_t *loc)
        : WholeJob(graph, p, loc)
    {
        params = &every_block;
    }
};


struct Graph {
    nbr_graph_t g{};
    Graph(int n, std::vector<int> src, std::vector<int> dst)
    {
        EXPECT_EQ(nbr_graph_from_edges(n, (long)src.size(), src.data(), dst.data(), &g), NBR_SUCCESS);
    }
    Graph() = default;
    ~Graph() { nbr_graph_free(&g); }
};

// The sends of one rank's plan: (peer, bytes), in plan order.
std::vector<std::pair<int, size_t>> sends_of(const nbr_plan_t &plan, int phase)
{
    std::vector<std::pair<int, size_t>> out;
    const nbr_phase_t &p = plan.phases[phase];
    for (int i = 0; i < p.num_ops; i++)
        if (plan.ops[p.first_op + i].kind == NBR_OP_SEND)
            out.push_back({plan.ops[p.first_op + i].peer, plan.ops[p.first_op + i].bytes});
    return out;
}

std::string verify(const nbr_graph_t *g, const nbr_locality_t *loc, LayoutParams p)
{
    LeaderJob job(g, p, loc);
    if (job.build(leader()) != NBR_SUCCESS || job.verify() != NBR_SUCCESS)
        return job.message();
    return "";
}

TEST(LeaderPlans, Fig2ScatterToTwoUnlinkedPeersThenSwap)
{
    Machine m("mi250-4gpu.topo", 8, 8);
    Graph g(8, {6, 6}, {4, 5});
    LayoutParams p;
    p.block = 64;
    LeaderJob job(&g.g, p, &m.loc);
    ASSERT_EQ(job.build(leader()), NBR_SUCCESS) << job.message();
    ASSERT_EQ(job.verify(), NBR_SUCCESS) << job.message();
    auto sent = sends_of(job.plans[6], 0);
    ASSERT_EQ(sent.size(), 2u);
    EXPECT_EQ(sent[0].second, 32u) << "each receives half";
    EXPECT_EQ(sent[1].second, 32u);
    EXPECT_EQ(job.plans[4].num_phases, 2) << "then 4 and 5 swap halves";
}

TEST(LeaderPlans, Fig3WholeBlockToTheLinkedPeerWhichForwards)
{
    Machine m("mi250-4gpu.topo", 8, 8);
    Graph g(8, {1, 1}, {2, 3});
    LayoutParams p;
    p.block = 64;
    LeaderJob job(&g.g, p, &m.loc);
    ASSERT_EQ(job.build(leader()), NBR_SUCCESS) << job.message();
    ASSERT_EQ(job.verify(), NBR_SUCCESS) << job.message();
    auto sent = sends_of(job.plans[1], 0);
    ASSERT_EQ(sent.size(), 1u) << "load 1 to G3, 0 to G2";
    EXPECT_EQ(sent[0], std::make_pair(3, (size_t)64));
    auto forwarded = sends_of(job.plans[3], 1);
    ASSERT_EQ(forwarded.size(), 1u);
    EXPECT_EQ(forwarded[0], std::make_pair(2, (size_t)64)) << "G3 forwards to G2";
}

// Two Frontier nodes; rank 9 (node 1) sends to GCDs on node 0.
struct RemoteCase {
    std::vector<int> receivers;
    size_t messages, bytes_each;
};

void expect_network(const RemoteCase &c)
{
    Machine m("frontier-mi250x.topo", 16, 8);
    std::vector<int> src(c.receivers.size(), 9);
    Graph g(16, src, c.receivers);
    LayoutParams p;
    p.block = 96;
    LeaderJob job(&g.g, p, &m.loc);
    ASSERT_EQ(job.build(leader()), NBR_SUCCESS) << job.message();
    ASSERT_EQ(job.verify(), NBR_SUCCESS) << job.message();
    const nbr_plan_stats_t &s = job.plans[9].stats;
    EXPECT_EQ(s.msgs_inter_node, c.messages);
    EXPECT_EQ(s.bytes_inter_node, 96u) << "the block crosses the network once";
    for (auto &sent : sends_of(job.plans[9], 0))
        EXPECT_EQ(sent.second, c.bytes_each);
}

TEST(LeaderPlans, Fig4TwoPeersOnARemoteNodeOneMessage) { expect_network({{0, 1}, 1, 96}); }

TEST(LeaderPlans, Fig5FourNeighborsOnTwoRemoteGpusTwoHalves) { expect_network({{0, 1, 2, 3}, 2, 48}); }

TEST(LeaderPlans, Fig6RemoteNeighborsWithoutPeersSplitAmongThem) { expect_network({{0, 2, 4}, 3, 32}); }

TEST(LeaderPlans, RemoteNodeWithoutALeaderNeighborLandsOnTheMember)
{
    // GCDs 1 and 3 are members (their leaders 0 and 2 are not neighbors).
    expect_network({{1, 3}, 2, 48});
    expect_network({{1}, 1, 96});
}

// Each block crosses to each node that needs it exactly once: per-rank
// inter-node bytes hit the floor, and never exceed naive's.
TEST(LeaderPlans, InterNodeBytesAtTheFloor)
{
    Machine m("frontier-mi250x.topo", 32, 8);
    for (uint64_t seed = 1; seed <= 20; seed++) {
        Graph g;
        ASSERT_EQ(nbr_graph_erdos_renyi(32, 0.4, seed, &g.g), NBR_SUCCESS);
        LayoutParams p;
        p.block = 40;
        LeaderJob job(&g.g, p, &m.loc);
        ASSERT_EQ(job.build(leader()), NBR_SUCCESS);
        ASSERT_EQ(job.verify(), NBR_SUCCESS) << job.message();
        for (int r = 0; r < 32; r++) {
            std::set<int> remote_nodes;
            for (int j = 0; j < nbr_graph_outdegree(&g.g, r); j++)
                if (nbr_graph_out(&g.g, r)[j] / 8 != r / 8)
                    remote_nodes.insert(nbr_graph_out(&g.g, r)[j] / 8);
            EXPECT_EQ(job.plans[r].stats.bytes_inter_node, 40u * remote_nodes.size())
                << "seed " << seed << " rank " << r;
        }
    }
}

// The verifier over seeded graphs: Frontier 1, 2, 4, 16 nodes and the
// other models; allgather and uneven allgatherv on element boundaries.
TEST(LeaderPlans, VerifiedOnManyGraphsAndMachines)
{
    struct Setup {
        const char *model;
        int nranks, per_node;
    } setups[] = {{"frontier-mi250x.topo", 8, 8},   {"frontier-mi250x.topo", 16, 8},
                  {"frontier-mi250x.topo", 32, 8},  {"frontier-mi250x.topo", 128, 8},
                  {"mi250-4gpu.topo", 24, 8},       {"mi300x-8.topo", 16, 8},
                  {"dgx-h100-8.topo", 16, 8},       {"pcie-4gpu.topo", 12, 4},
                  {"frontier-mi250x.topo", 24, 12}, {nullptr, 20, 5},
                  // uneven nodes (8, 8, 4), and a last node of one rank whose
                  // GCD's peer is missing from the communicator
                  {"frontier-mi250x.topo", 20, 8},  {"frontier-mi250x.topo", 9, 8},
                  {nullptr, 7, 1}};
    int graphs = 0;
    for (const Setup &setup : setups) {
        Machine m(setup.model, setup.nranks, setup.per_node);
        int rounds = setup.nranks >= 128 ? 8 : 56;
        for (int i = 0; i < rounds; i++) {
            Graph g;
            uint64_t seed = 7919u * (uint64_t)i + (uint64_t)setup.nranks;
            if (i % 5 == 4)
                ASSERT_EQ(nbr_graph_moore(setup.nranks, 1 + i % 3, 1 + i % 2, &g.g), NBR_SUCCESS);
            else if (i % 7 == 6)
                ASSERT_EQ(nbr_graph_random_multi(setup.nranks, 10, seed, &g.g), NBR_SUCCESS);
            else
                ASSERT_EQ(nbr_graph_erdos_renyi(setup.nranks, 0.05 + 0.75 * (i % 10) / 9.0, seed, &g.g),
                          NBR_SUCCESS);
            for (nbr_collective_t coll : {NBR_COLL_ALLGATHER, NBR_COLL_ALLGATHERV}) {
                LayoutParams p;
                p.coll = coll;
                p.unit = 4;
                p.block = 4 * (7 + i % 5); // counts that do not divide evenly
                p.seed = seed;
                p.gap = i % 2 ? 4 : 0;
                p.reverse = i % 3 == 0;
                ASSERT_EQ(verify(&g.g, &m.loc, p), "")
                    << (setup.model ? setup.model : "flat") << " ranks " << setup.nranks
                    << " round " << i << " " << nbr_collective_name(coll);
            }
            graphs++;
        }
    }
    EXPECT_GE(graphs, 500); // each verified for allgather and allgatherv
}

// One pattern per rank, built once (as a communicator does), serves plans
// for layouts of every size and both collectives.
TEST(LeaderPlans, OnePatternServesEveryLayout)
{
    Machine m("frontier-mi250x.topo", 32, 8);
    Graph g;
    ASSERT_EQ(nbr_graph_erdos_renyi(32, 0.5, 3, &g.g), NBR_SUCCESS);
    std::vector<const int *> lists(32);
    std::vector<int> degrees(32);
    for (int r = 0; r < 32; r++) {
        lists[r] = nbr_graph_in(&g.g, r);
        degrees[r] = nbr_graph_indegree(&g.g, r);
    }
    std::vector<nbr_leader_pattern_t *> patterns(32);
    for (int r = 0; r < 32; r++) {
        nbr_plan_input_t in = input_for(&g.g, &m.loc, r);
        in.node_in_lists = lists.data();
        in.node_in_degrees = degrees.data();
        ASSERT_EQ(nbr_leader_pattern_build(&in, &patterns[r]), NBR_SUCCESS);
    }
    for (size_t block : {8u, 36u, 1000u})
        for (nbr_collective_t coll : {NBR_COLL_ALLGATHER, NBR_COLL_ALLGATHERV}) {
            LayoutParams p;
            p.coll = coll;
            p.block = block;
            p.unit = 4;
            LeaderJob job(&g.g, p, &m.loc);
            job.patterns.assign(patterns.begin(), patterns.end());
            ASSERT_EQ(job.build(leader()), NBR_SUCCESS) << job.message();
            EXPECT_EQ(job.verify(), NBR_SUCCESS) << block << ": " << job.message();
        }
    for (auto *pattern : patterns)
        nbr_leader_pattern_free(pattern);
}

TEST(LeaderPlans, SmallBlocksGoDirect)
{
    Machine m("frontier-mi250x.topo", 16, 8);
    Graph g(16, {9, 9}, {0, 1});
    LayoutParams p;
    p.block = 64;
    LeaderJob job(&g.g, p, &m.loc);
    const nbr_leader_params_t above{65}; // the block is below the threshold
    job.params = &above;
    ASSERT_EQ(job.build(leader()), NBR_SUCCESS);
    ASSERT_EQ(job.verify(), NBR_SUCCESS) << job.message();
    EXPECT_EQ(job.plans[9].stats.msgs_inter_node, 2u) << "one message per edge, as naive";
    EXPECT_EQ(job.plans[0].num_phases, 1);
}

} // namespace
