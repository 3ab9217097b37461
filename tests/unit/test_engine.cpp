// The rounds engine in-process, and neighbor discovery on it.
#include <nbrcoll.h>
extern "C" {
#include "front/discover.h"
#include "base/engine.h"
#include "base/graph_gen.h"
}

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

TEST(Discover, RecoversEveryRanksListsFromScatteredClaims)
{
    for (uint64_t seed = 1; seed <= 40; seed++) {
        int n = 1 + (int)(seed % 23);
        nbr_graph_t g{};
        ASSERT_EQ(nbr_graph_random_multi(n, 6, seed, &g), NBR_SUCCESS);
        // Hand every edge to a random rank to name (often neither end).
        std::vector<std::vector<int>> src(n), dst(n);
        uint64_t state = seed;
        for (int s = 0; s < n; s++)
            for (int j = 0; j < nbr_graph_outdegree(&g, s); j++) {
                int namer = (int)(nbr_splitmix64(&state) % (uint64_t)n);
                src[namer].push_back(s);
                dst[namer].push_back(nbr_graph_out(&g, s)[j]);
            }
        std::vector<nbr_discover_t> ctx(n);
        std::vector<void *> contexts(n);
        for (int r = 0; r < n; r++) {
            ctx[r] = nbr_discover_t{};
            ctx[r].rank = r;
            ctx[r].nranks = n;
            ctx[r].num_named = (int)src[r].size();
            ctx[r].named_src = src[r].data();
            ctx[r].named_dst = dst[r].data();
            contexts[r] = &ctx[r];
        }
        ASSERT_EQ(nbr_engine_run_local(n, contexts.data(), nbr_discover_step, 4), NBR_SUCCESS);
        for (int r = 0; r < n; r++) {
            std::vector<int> want_out(nbr_graph_out(&g, r), nbr_graph_out(&g, r) + nbr_graph_outdegree(&g, r));
            std::vector<int> want_in(nbr_graph_in(&g, r), nbr_graph_in(&g, r) + nbr_graph_indegree(&g, r));
            std::vector<int> got_out(ctx[r].destinations, ctx[r].destinations + ctx[r].outdegree);
            std::vector<int> got_in(ctx[r].sources, ctx[r].sources + ctx[r].indegree);
            EXPECT_TRUE(std::is_sorted(got_out.begin(), got_out.end()));
            std::sort(want_out.begin(), want_out.end());
            std::sort(want_in.begin(), want_in.end());
            EXPECT_EQ(got_out, want_out) << "seed " << seed << " rank " << r;
            EXPECT_EQ(got_in, want_in) << "seed " << seed << " rank " << r;
            nbr_discover_free(&ctx[r]);
        }
        nbr_graph_free(&g);
    }
}

TEST(Discover, RepeatedEdgesPairWithTheSameWeights)
{
    // Rank 2 names 0 -> 1 twice with weights 5 and 7, rank 1 names it once
    // with weight 9: both ends must order them identically.
    int src2[] = {0, 0}, dst2[] = {1, 1}, w2[] = {5, 7};
    int src1[] = {0}, dst1[] = {1}, w1[] = {9};
    nbr_discover_t ctx[3] = {};
    void *contexts[3];
    for (int r = 0; r < 3; r++) {
        ctx[r].rank = r;
        ctx[r].nranks = 3;
        contexts[r] = &ctx[r];
    }
    ctx[1].num_named = 1, ctx[1].named_src = src1, ctx[1].named_dst = dst1, ctx[1].named_weight = w1;
    ctx[2].num_named = 2, ctx[2].named_src = src2, ctx[2].named_dst = dst2, ctx[2].named_weight = w2;
    ASSERT_EQ(nbr_engine_run_local(3, contexts, nbr_discover_step, 4), NBR_SUCCESS);
    ASSERT_EQ(ctx[0].outdegree, 3);
    ASSERT_EQ(ctx[1].indegree, 3);
    for (int k = 0; k < 3; k++)
        EXPECT_EQ(ctx[0].destweights[k], ctx[1].sourceweights[k]);
    EXPECT_EQ(ctx[0].destweights[0], 9); // namer 1 sorts before namer 2
    for (auto &c : ctx)
        nbr_discover_free(&c);
}

// A step function whose ranks disagree on the last round.
int disagreeing_step(void *context, int round, const nbr_mailbox_t *, nbr_mailbox_t *, int *done)
{
    int rank = *static_cast<int *>(context);
    *done = round >= rank;
    return 0;
}

TEST(Engine, DetectsRanksThatDisagreeOnTheLastRound)
{
    int ranks[3] = {0, 1, 2};
    void *contexts[3] = {&ranks[0], &ranks[1], &ranks[2]};
    EXPECT_EQ(nbr_engine_run_local(3, contexts, disagreeing_step, 10), NBR_ERR_INTERNAL);
}

// Token ring: each round every rank forwards what it got, plus its rank.
struct Ring {
    int rank, n;
    std::vector<int> seen;
};

int ring_step(void *context, int round, const nbr_mailbox_t *inbox, nbr_mailbox_t *outbox, int *done)
{
    Ring *ring = static_cast<Ring *>(context);
    for (int m = 0; m < inbox->count; m++) {
        const int *values = static_cast<const int *>(inbox->messages[m].data);
        EXPECT_EQ(inbox->messages[m].peer, (ring->rank + ring->n - 1) % ring->n);
        ring->seen.assign(values, values + inbox->messages[m].bytes / sizeof(int));
    }
    *done = round == ring->n;
    if (*done)
        return 0;
    std::vector<int> next = ring->seen;
    next.push_back(ring->rank);
    return nbr_mailbox_post(outbox, (ring->rank + 1) % ring->n, next.data(), next.size() * sizeof(int));
}

TEST(Engine, DeliversInOrderAcrossRounds)
{
    const int n = 5;
    std::vector<Ring> rings(n);
    std::vector<void *> contexts(n);
    for (int r = 0; r < n; r++) {
        rings[r] = Ring{r, n, {}};
        contexts[r] = &rings[r];
    }
    ASSERT_EQ(nbr_engine_run_local(n, contexts.data(), ring_step, 20), NBR_SUCCESS);
    EXPECT_EQ(rings[0].seen.size(), (size_t)n);
    EXPECT_EQ(rings[0].seen.back(), n - 1);
}

} // namespace
