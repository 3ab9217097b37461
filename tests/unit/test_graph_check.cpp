// The set-up check of a graph's consistency, on virtual ranks: every
// consistent graph passes, and every one-rank edit of a list is found at the
// end whose in-list disagrees.
#include <nbrcoll.h>
extern "C" {
#include "base/engine.h"
#include "base/graph_gen.h"
#include "front/graph_check.h"
}

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

struct Lists {
    std::vector<std::vector<int>> in, out;
};

Lists lists_of(const nbr_graph_t &g)
{
    Lists l;
    for (int r = 0; r < g.nranks; r++) {
        l.in.emplace_back(nbr_graph_in(&g, r), nbr_graph_in(&g, r) + nbr_graph_indegree(&g, r));
        l.out.emplace_back(nbr_graph_out(&g, r),
                           nbr_graph_out(&g, r) + nbr_graph_outdegree(&g, r));
    }
    return l;
}

// Mismatches found per rank (empty on an engine failure).
std::vector<int> check(const Lists &l)
{
    const int n = static_cast<int>(l.in.size());
    std::vector<nbr_graph_check_t> ctx(n);
    std::vector<void *> contexts(n);
    for (int r = 0; r < n; r++) {
        ctx[r] = nbr_graph_check_t{};
        ctx[r].rank = r;
        ctx[r].indegree = static_cast<int>(l.in[r].size());
        ctx[r].outdegree = static_cast<int>(l.out[r].size());
        ctx[r].sources = l.in[r].data();
        ctx[r].destinations = l.out[r].data();
        contexts[r] = &ctx[r];
    }
    if (nbr_engine_run_local(n, contexts.data(), nbr_graph_check_step, 2) != NBR_SUCCESS)
        return {};
    std::vector<int> found(n);
    for (int r = 0; r < n; r++)
        found[r] = ctx[r].mismatches;
    return found;
}

TEST(GraphCheck, ConsistentGraphsPass)
{
    for (uint64_t seed = 1; seed <= 60; seed++) {
        const int n = 1 + static_cast<int>(seed % 29);
        nbr_graph_t g{};
        ASSERT_EQ(nbr_graph_random_multi(n, 7, seed, &g), NBR_SUCCESS);
        std::vector<int> found = check(lists_of(g));
        ASSERT_EQ(found.size(), static_cast<size_t>(n)) << "seed " << seed;
        for (int r = 0; r < n; r++)
            EXPECT_EQ(found[r], 0) << "seed " << seed << " rank " << r;
        nbr_graph_free(&g);
    }
}

TEST(GraphCheck, EveryEditOfOneListIsFoundAtTheDisagreeingEnd)
{
    int edits = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        const int n = 2 + static_cast<int>(seed % 17);
        nbr_graph_t g{};
        ASSERT_EQ(nbr_graph_random_multi(n, 5, seed, &g), NBR_SUCCESS);
        const Lists good = lists_of(g);
        nbr_graph_free(&g);
        uint64_t state = seed * 7919;
        for (int trial = 0; trial < 8; trial++) {
            Lists l = good;
            const int r = static_cast<int>(nbr_splitmix64(&state) % static_cast<uint64_t>(n));
            const int peer = static_cast<int>(nbr_splitmix64(&state) % static_cast<uint64_t>(n));
            const int kind = static_cast<int>(nbr_splitmix64(&state) % 4);
            int at = -1; // the rank whose in-list no longer matches
            if (kind == 0 && !l.out[r].empty()) { // drop an out-edge
                at = l.out[r].front();
                l.out[r].erase(l.out[r].begin());
            } else if (kind == 1) { // one more out-edge
                at = peer;
                l.out[r].push_back(peer);
            } else if (kind == 2 && !l.in[r].empty()) { // drop an in-edge
                at = r;
                l.in[r].pop_back();
            } else if (kind == 3) { // one more in-edge
                at = r;
                l.in[r].insert(l.in[r].begin(), peer);
            }
            if (at < 0)
                continue;
            edits++;
            std::vector<int> found = check(l);
            ASSERT_EQ(found.size(), static_cast<size_t>(n));
            for (int q = 0; q < n; q++)
                EXPECT_EQ(found[q], q == at ? 1 : 0)
                    << "seed " << seed << " edit " << kind << " on rank " << r << ", peer "
                    << peer << ": rank " << q;
        }
    }
    EXPECT_GT(edits, 300);
}

// One message per distinct out-neighbor: what the check costs a rank.
TEST(GraphCheck, ThousandRanksOneRound)
{
    nbr_graph_t g{};
    ASSERT_EQ(nbr_graph_erdos_renyi(1024, 0.05, 3, &g), NBR_SUCCESS);
    Lists l = lists_of(g);
    nbr_graph_free(&g);
    std::vector<int> found = check(l);
    ASSERT_EQ(found.size(), 1024u);
    for (int r = 0; r < 1024; r++)
        ASSERT_EQ(found[r], 0) << "rank " << r;
    l.in[517].pop_back();
    found = check(l);
    ASSERT_EQ(found.size(), 1024u);
    for (int r = 0; r < 1024; r++)
        EXPECT_EQ(found[r], r == 517 ? 1 : 0) << "rank " << r;
}

} // namespace
