// First pieces of the leader-based design: the split of neighbors by node
// and the intra-node load matrix L_t (Alg. 1), on stored machine models.
#include "plan_fixture.h"

extern "C" {
#include "alg/leader/leader_pattern.h"
}

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {



TEST(LeaderPattern, Fig2HalvesToTwoPeersWithoutLinks)
{
    // Cluster A: GCD 6 sends to GCDs 4 and 5 (one GPU); no link from 6 to
    // either, both two hops away: each gets half, then they swap.
    Machine m("mi250-4gpu.topo", 8, 8);
    const int src[] = {6, 6}, dst[] = {4, 5};
    nbr_graph_t g{};
    ASSERT_EQ(nbr_graph_from_edges(8, 2, src, dst, &g), NBR_SUCCESS);
    nbr_plan_input_t in6 = input_for(&g, &m.loc, 6);
    double load[2];
    int partner[2];
    ASSERT_EQ(nbr_intra_out_loads(&in6, load, partner), NBR_SUCCESS);
    EXPECT_DOUBLE_EQ(load[0], 0.5);
    EXPECT_DOUBLE_EQ(load[1], 0.5);
    EXPECT_EQ(partner[0], 1);
    EXPECT_EQ(partner[1], 0);
    // receiving side: GCD 4 gets half from 6, the rest from its peer 5
    nbr_plan_input_t in4 = input_for(&g, &m.loc, 4);
    double in_load[1];
    ASSERT_EQ(nbr_intra_in_loads(&in4, nbr_graph_in(&g, 5), nbr_graph_indegree(&g, 5), in_load),
              NBR_SUCCESS);
    EXPECT_DOUBLE_EQ(in_load[0], 0.5);
    nbr_graph_free(&g);
}

TEST(LeaderPattern, Fig3WholeBlockToTheLinkedPeer)
{
    // G1 sends to G3 (linked) and G2 (not linked), peers on one GPU: load 1
    // to G3, 0 to G2; G3 forwards.
    Machine m("mi250-4gpu.topo", 8, 8);
    const int src[] = {1, 1}, dst[] = {2, 3};
    nbr_graph_t g{};
    ASSERT_EQ(nbr_graph_from_edges(8, 2, src, dst, &g), NBR_SUCCESS);
    nbr_plan_input_t in1 = input_for(&g, &m.loc, 1);
    double load[2];
    int partner[2];
    ASSERT_EQ(nbr_intra_out_loads(&in1, load, partner), NBR_SUCCESS);
    EXPECT_DOUBLE_EQ(load[0], 0.0) << "G2: no link";
    EXPECT_DOUBLE_EQ(load[1], 1.0) << "G3: the only link";
    double in_load[1];
    nbr_plan_input_t in2 = input_for(&g, &m.loc, 2);
    ASSERT_EQ(nbr_intra_in_loads(&in2, nbr_graph_in(&g, 3), nbr_graph_indegree(&g, 3), in_load),
              NBR_SUCCESS);
    EXPECT_DOUBLE_EQ(in_load[0], 0.0) << "G2 gets everything through G3";
    nbr_graph_free(&g);
}

TEST(LeaderPattern, SplitByNode)
{
    Machine m("frontier-mi250x.topo", 16, 8);
    const int src[] = {0, 0, 9, 3}, dst[] = {1, 12, 0, 0};
    nbr_graph_t g{};
    ASSERT_EQ(nbr_graph_from_edges(16, 4, src, dst, &g), NBR_SUCCESS);
    nbr_plan_input_t in0 = input_for(&g, &m.loc, 0);
    nbr_edge_split_t split;
    ASSERT_EQ(nbr_split_edges(&in0, &split), NBR_SUCCESS);
    EXPECT_EQ(split.num_out_intra, 1); // 0 -> 1
    EXPECT_EQ(split.num_out_inter, 1); // 0 -> 12
    EXPECT_EQ(split.num_in_intra, 1);  // 3 -> 0
    EXPECT_EQ(split.num_in_inter, 1);  // 9 -> 0
    nbr_edge_split_free(&split);
    nbr_graph_free(&g);
}

// Every sender's share for an edge equals what its receiver expects from
// that edge, and a pair's shares sum to 1: random multigraphs, two nodes.
TEST(LeaderPattern, SendersAndReceiversAgreeOnEveryShare)
{
    for (const char *model : {"frontier-mi250x.topo", "mi250-4gpu.topo", "mi300x-8.topo"}) {
        Machine m(model, 16, 8);
        for (uint64_t seed = 1; seed <= 60; seed++) {
            nbr_graph_t g{};
            ASSERT_EQ(nbr_graph_random_multi(16, 12, seed, &g), NBR_SUCCESS);
            std::vector<std::vector<double>> out(16), in(16);
            for (int r = 0; r < 16; r++) {
                nbr_plan_input_t x = input_for(&g, &m.loc, r);
                std::vector<int> partner(x.outdegree + 1);
                out[r].resize(x.outdegree + 1);
                in[r].resize(x.indegree + 1);
                ASSERT_EQ(nbr_intra_out_loads(&x, out[r].data(), partner.data()), NBR_SUCCESS);
                for (int j = 0; j < x.outdegree; j++) {
                    if (partner[j] >= 0) {
                        EXPECT_DOUBLE_EQ(out[r][j] + out[r][partner[j]], 1.0);
                    }
                }
                int peer = nbr_mutual_peer(&m.loc, r);
                const int *pin = peer >= 0 ? nbr_graph_in(&g, peer) : nullptr;
                int npin = peer >= 0 ? nbr_graph_indegree(&g, peer) : 0;
                ASSERT_EQ(nbr_intra_in_loads(&x, pin, npin, in[r].data()), NBR_SUCCESS);
            }
            // match the k-th s -> d out-edge with the k-th in-edge from s at d
            for (int s = 0; s < 16; s++)
                for (int j = 0; j < nbr_graph_outdegree(&g, s); j++) {
                    int d = nbr_graph_out(&g, s)[j], k = 0;
                    for (int jj = 0; jj < j; jj++)
                        k += nbr_graph_out(&g, s)[jj] == d;
                    int i = -1;
                    for (int ii = 0, seen = 0; ii < nbr_graph_indegree(&g, d); ii++)
                        if (nbr_graph_in(&g, d)[ii] == s && seen++ == k) {
                            i = ii;
                            break;
                        }
                    ASSERT_GE(i, 0);
                    EXPECT_DOUBLE_EQ(out[s][j], in[d][i])
                        << model << " seed " << seed << ": edge " << s << " -> " << d;
                }
            nbr_graph_free(&g);
        }
    }
}

} // namespace
