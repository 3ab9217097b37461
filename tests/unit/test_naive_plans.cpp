// The naive builder over >= 1,000 seeded graphs, every plan proven by the
// verifier for allgather, allgatherv and alltoallv.
#include "plan_fixture.h"

#include <gtest/gtest.h>

namespace {

const nbr_algorithm_t *naive() { return nbr_algorithm_find("naive"); }

struct GraphOwner {
    nbr_graph_t graph{};
    ~GraphOwner() { nbr_graph_free(&graph); }
};

// Verifies all three collectives on one graph; returns a failure text or "".
std::string check_all(const nbr_graph_t *graph, uint64_t seed, size_t block)
{
    const nbr_collective_t colls[] = {NBR_COLL_ALLGATHER, NBR_COLL_ALLGATHERV,
                                      NBR_COLL_ALLTOALLV};
    for (nbr_collective_t coll : colls) {
        LayoutParams p;
        p.coll = coll;
        p.block = block;
        p.seed = seed;
        p.gap = seed % 3;
        p.reverse = seed % 2;
        WholeJob job(graph, p);
        if (job.build(naive()) != NBR_SUCCESS || job.verify() != NBR_SUCCESS)
            return std::string(nbr_collective_name(coll)) + ": " + job.message();
    }
    return "";
}

TEST(NaivePlans, ErdosRenyiSweep)
{
    // 40 densities x 15 sizes = 600 graphs, 2 .. 512 ranks.
    const int sizes[] = {2, 3, 5, 8, 13, 16, 24, 31, 48, 64, 96, 128, 200, 256, 512};
    int graphs = 0;
    for (int d = 0; d < 40; d++) {
        double density = 0.05 + 0.75 * d / 39.0;
        for (int n : sizes) {
            if (n == 512 && d % 8 != 0)
                continue; // keep the suite fast: 5 densities at 512 ranks
            GraphOwner g;
            uint64_t seed = 1000u * d + n;
            ASSERT_EQ(nbr_graph_erdos_renyi(n, density, seed, &g.graph), NBR_SUCCESS);
            std::string failure = check_all(&g.graph, seed, n >= 256 ? 2 : 5);
            ASSERT_EQ(failure, "") << "ER n=" << n << " density=" << density;
            graphs++;
        }
    }
    EXPECT_GE(graphs, 500);
}

TEST(NaivePlans, MooreNeighborhoods)
{
    int graphs = 0;
    for (int dims = 1; dims <= 3; dims++)
        for (int radius = 1; radius <= 2; radius++)
            for (int n = 1; n <= 64; n += (n < 16 ? 1 : 7)) {
                GraphOwner g;
                ASSERT_EQ(nbr_graph_moore(n, dims, radius, &g.graph), NBR_SUCCESS);
                std::string failure = check_all(&g.graph, (uint64_t)n * 31 + dims, 4);
                ASSERT_EQ(failure, "") << "moore n=" << n << " d=" << dims << " r=" << radius;
                graphs++;
            }
    EXPECT_GE(graphs, 100);
}

TEST(NaivePlans, StarsEmptyAndMultigraphs)
{
    int graphs = 0;
    for (int n = 1; n <= 40; n++) {
        for (int outward = 0; outward <= 1; outward++) {
            GraphOwner g;
            ASSERT_EQ(nbr_graph_star(n, n / 2, outward, &g.graph), NBR_SUCCESS);
            ASSERT_EQ(check_all(&g.graph, n, 6), "") << "star n=" << n;
            graphs++;
        }
        GraphOwner e;
        ASSERT_EQ(nbr_graph_empty(n, &e.graph), NBR_SUCCESS);
        ASSERT_EQ(check_all(&e.graph, n, 6), "") << "empty n=" << n;
        graphs++;
        // self-loops and repeated edges, several draws per size
        for (int draw = 0; draw < 5; draw++) {
            GraphOwner m;
            uint64_t seed = 77u * n + draw;
            ASSERT_EQ(nbr_graph_random_multi(n, 2 * n + 3, seed, &m.graph), NBR_SUCCESS);
            ASSERT_EQ(check_all(&m.graph, seed, 7), "") << "multigraph n=" << n;
            graphs++;
        }
    }
    EXPECT_GE(graphs, 300);
}

TEST(NaivePlans, MessageCountsMatchEdges)
{
    GraphOwner g;
    ASSERT_EQ(nbr_graph_random_multi(12, 20, 5, &g.graph), NBR_SUCCESS);
    LayoutParams p;
    p.block = 16;
    WholeJob job(&g.graph, p);
    ASSERT_EQ(job.build(naive()), NBR_SUCCESS);
    for (int r = 0; r < 12; r++) {
        int self = 0, others = 0;
        for (int j = 0; j < nbr_graph_outdegree(&g.graph, r); j++)
            (nbr_graph_out(&g.graph, r)[j] == r ? self : others)++;
        const nbr_plan_stats_t &s = job.plans[r].stats;
        EXPECT_EQ(s.msgs_intra_node, (uint64_t)others); // no locality: one node
        EXPECT_EQ(s.msgs_inter_node, 0u);
        EXPECT_EQ(s.local_copies, (uint64_t)self);
        EXPECT_EQ(s.bytes_intra_node, 16u * others);
        EXPECT_EQ(job.plans[r].num_phases, nbr_graph_outdegree(&g.graph, r) +
                                                   nbr_graph_indegree(&g.graph, r) > 0 ? 1 : 0);
    }
}

TEST(NaivePlans, LocalityClassesFromVirtualNodes)
{
    GraphOwner g;
    ASSERT_EQ(nbr_graph_erdos_renyi(16, 0.5, 3, &g.graph), NBR_SUCCESS);
    nbr_locality_t loc;
    ASSERT_EQ(nbr_locality_virtual(16, 4, 2, &loc), NBR_SUCCESS);
    LayoutParams p;
    p.block = 10;
    WholeJob job(&g.graph, p, &loc);
    ASSERT_EQ(job.build(naive()), NBR_SUCCESS);
    for (int r = 0; r < 16; r++) {
        uint64_t intra = 0, inter = 0, off_socket = 0;
        for (int j = 0; j < nbr_graph_outdegree(&g.graph, r); j++) {
            int d = nbr_graph_out(&g.graph, r)[j];
            (d / 4 == r / 4 ? intra : inter)++;
            off_socket += d / 2 != r / 2;
        }
        EXPECT_EQ(job.plans[r].stats.msgs_intra_node, intra);
        EXPECT_EQ(job.plans[r].stats.msgs_inter_node, inter);
        EXPECT_EQ(job.plans[r].stats.msgs_off_socket, off_socket);
        EXPECT_EQ(job.plans[r].stats.bytes_inter_node, 10 * inter);
    }
    nbr_locality_free(&loc);
}

TEST(NaivePlans, ZeroByteAllgatherSendsNothing)
{
    GraphOwner g;
    ASSERT_EQ(nbr_graph_erdos_renyi(8, 0.5, 9, &g.graph), NBR_SUCCESS);
    LayoutParams p;
    p.block = 0;
    WholeJob job(&g.graph, p);
    ASSERT_EQ(job.build(naive()), NBR_SUCCESS);
    ASSERT_EQ(job.verify(), NBR_SUCCESS) << job.message();
    for (int r = 0; r < 8; r++)
        EXPECT_EQ(job.plans[r].num_ops, 0);
}

// A self-loop follows one edge's rule: a longer block than its slot is
// the rank's mismatch, carried by the plan (the run still goes on for the
// peers), and a shorter one is copied into the slot's front.
TEST(NaivePlans, SelfLoopOfAnotherLengthFollowsOneEdgesRule)
{
    const int src[] = {0, 0};
    const int dst[] = {0, 0};
    GraphOwner g;
    ASSERT_EQ(nbr_graph_from_edges(1, 2, src, dst, &g.graph), NBR_SUCCESS);
    LayoutParams p;
    p.coll = NBR_COLL_ALLTOALLV;
    p.block = 4;
    for (int longer : {1, 0}) {
        WholeJob job(&g.graph, p);
        const size_t slot = 4;
        job.layouts[0].recv[1].bytes = slot;
        job.layouts[0].send[1].bytes = longer ? slot + 1 : slot - 1;
        ASSERT_EQ(job.build(naive()), NBR_SUCCESS);
        const nbr_plan_t &plan = job.plans[0];
        EXPECT_EQ(plan.local_status, longer ? NBR_ERR_TYPE_MISMATCH : NBR_SUCCESS);
        size_t copied = 0;
        for (int i = 0; i < plan.num_ops; ++i)
            if (plan.ops[i].kind == NBR_OP_COPY && plan.ops[i].offset == job.layouts[0].recv[1].offset)
                copied += plan.ops[i].bytes;
        EXPECT_EQ(copied, longer ? 0 : slot - 1) << (longer ? "longer" : "shorter");
    }
}

} // namespace
