// Graph generators and the node / socket map.
#include <nbrcoll.h>
extern "C" {
#include "base/graph_gen.h"
#include "topo/locality.h"
}

#include <gtest/gtest.h>

#include <map>
#include <utility>

namespace {

TEST(Graphs, MooreDegreeIsFullWhenTheGridIsWideEnough)
{
    nbr_graph_t g{};
    ASSERT_EQ(nbr_graph_moore(125, 3, 1, &g), NBR_SUCCESS); // 5x5x5
    for (int r = 0; r < 125; r++) {
        EXPECT_EQ(nbr_graph_outdegree(&g, r), 26);
        EXPECT_EQ(nbr_graph_indegree(&g, r), 26);
    }
    nbr_graph_free(&g);
    ASSERT_EQ(nbr_graph_moore(16, 2, 2, &g), NBR_SUCCESS); // 4x4, radius 2: wraps
    EXPECT_EQ(nbr_graph_outdegree(&g, 0), 24);
    nbr_graph_free(&g);
}

TEST(Graphs, InAndOutListsDescribeTheSameMultiset)
{
    nbr_graph_t g{};
    ASSERT_EQ(nbr_graph_random_multi(30, 12, 4, &g), NBR_SUCCESS);
    std::map<std::pair<int, int>, int> out_edges, in_edges;
    for (int r = 0; r < 30; r++) {
        for (int j = 0; j < nbr_graph_outdegree(&g, r); j++)
            out_edges[{r, nbr_graph_out(&g, r)[j]}]++;
        for (int i = 0; i < nbr_graph_indegree(&g, r); i++)
            in_edges[{nbr_graph_in(&g, r)[i], r}]++;
    }
    EXPECT_EQ(out_edges, in_edges);
    nbr_graph_free(&g);
}

TEST(Graphs, ErdosRenyiIsSeededAndNearItsDensity)
{
    nbr_graph_t a{}, b{};
    ASSERT_EQ(nbr_graph_erdos_renyi(200, 0.3, 42, &a), NBR_SUCCESS);
    ASSERT_EQ(nbr_graph_erdos_renyi(200, 0.3, 42, &b), NBR_SUCCESS);
    ASSERT_EQ(a.out_offsets[200], b.out_offsets[200]);
    for (int e = 0; e < a.out_offsets[200]; e++)
        ASSERT_EQ(a.out_targets[e], b.out_targets[e]);
    double density = a.out_offsets[200] / (200.0 * 199.0);
    EXPECT_NEAR(density, 0.3, 0.01);
    nbr_graph_free(&a);
    nbr_graph_free(&b);
}

TEST(Graphs, GridShapeIsBalanced)
{
    int shape[3];
    ASSERT_EQ(nbr_grid_shape(24, 3, shape), NBR_SUCCESS);
    EXPECT_EQ(shape[0], 4); // as MPI_Dims_create(24, 3) gives
    EXPECT_EQ(shape[1], 3);
    EXPECT_EQ(shape[2], 2);
    ASSERT_EQ(nbr_grid_shape(7, 2, shape), NBR_SUCCESS);
    EXPECT_EQ(shape[0], 7);
    EXPECT_EQ(shape[1], 1);
}

TEST(Locality, VirtualNodesAndSockets)
{
    nbr_locality_t loc;
    ASSERT_EQ(nbr_locality_virtual(10, 4, 2, &loc), NBR_SUCCESS);
    EXPECT_EQ(loc.num_nodes, 3); // 4 + 4 + 2
    EXPECT_EQ(loc.num_sockets, 5);
    const int node[] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2};
    const int socket[] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4};
    for (int r = 0; r < 10; r++) {
        EXPECT_EQ(loc.node_of[r], node[r]);
        EXPECT_EQ(loc.socket_of[r], socket[r]);
    }
    nbr_locality_free(&loc);
}

TEST(Locality, NodesFromKeysInterleaved)
{
    const int keys[] = {7, 3, 7, 3, 9};
    nbr_locality_t loc;
    ASSERT_EQ(nbr_locality_from_keys(5, keys, nullptr, 0, &loc), NBR_SUCCESS);
    EXPECT_EQ(loc.num_nodes, 3);
    EXPECT_EQ(loc.node_of[2], 0);
    EXPECT_EQ(loc.node_of[3], 1);
    EXPECT_EQ(loc.socket_of[3], 1); // one socket per node
    EXPECT_EQ(loc.num_sockets, 3);
    nbr_locality_free(&loc);
    EXPECT_EQ(nbr_locality_virtual(4, 0, 0, &loc), NBR_ERR_ARG);
}

} // namespace
