// Common-neighbor message combining: the pattern's rules (Fig. 1 of the
// paper, the sorted-halves split) and the verifier over seeded graphs.
#include "plan_fixture.h"

extern "C" {
#include "alg/combining.h"
}

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <sstream>
#include <string>
#include <vector>

namespace {

const nbr_algorithm_t *combining() { return nbr_algorithm_find("combining"); }

struct Patterns : JobPatterns<nbr_combining_pattern_t, nbr_combining_pattern_free> {
    Patterns(const nbr_graph_t &g, int theta) : JobPatterns(g.nranks)
    {
        rc = nbr_combining_build(g.nranks, g.out_offsets, g.out_targets, theta, nullptr, p.data());
    }
};

struct Graph {
    nbr_graph_t g{};
    ~Graph() { nbr_graph_free(&g); }
};

// Messages a rank sends per call.
int messages(const nbr_plan_t &plan)
{
    int k = 0;
    for (int i = 0; i < plan.num_ops; i++)
        k += plan.ops[i].kind == NBR_OP_SEND;
    return k;
}

// The paper's Fig. 1: p1 = 0 and p2 = 1 share k = 7 out-neighbors 2..8.
TEST(CombiningPlans, Fig1TwoFriendsSplitTheirCommonNeighbors)
{
    Graph G;
    std::vector<int> s, d;
    for (int p = 0; p < 2; p++)
        for (int t = 2; t < 9; t++) {
            s.push_back(p);
            d.push_back(t);
        }
    ASSERT_EQ(nbr_graph_from_edges(9, (long)s.size(), s.data(), d.data(), &G.g), NBR_SUCCESS);
    Patterns pats(G.g, 2);
    ASSERT_EQ(pats.rc, NBR_SUCCESS);
    const nbr_combining_pattern_t &a = pats.p[0], &b = pats.p[1];
    ASSERT_EQ(a.num_pairs, 1);
    ASSERT_EQ(b.num_pairs, 1);
    EXPECT_EQ(a.pairs[0].friend_rank, 1);
    EXPECT_EQ(b.pairs[0].friend_rank, 0);
    // sorted halves, the lower rank takes the first (larger) half
    EXPECT_EQ(std::vector<int>(a.pairs[0].on, a.pairs[0].on + a.pairs[0].num_on),
              (std::vector<int>{2, 3, 4, 5}));
    EXPECT_EQ(std::vector<int>(b.pairs[0].on, b.pairs[0].on + b.pairs[0].num_on),
              (std::vector<int>{6, 7, 8}));
    EXPECT_EQ(a.num_direct + b.num_direct, 0);
    for (int t = 2; t < 9; t++) {
        ASSERT_EQ(pats.p[t].num_in, 1) << "neighbor " << t << " receives one combined message";
        EXPECT_EQ(pats.p[t].in[0].sender, t < 6 ? 0 : 1);
        EXPECT_EQ(pats.p[t].in[0].blocks[0], 0);
        EXPECT_EQ(pats.p[t].in[0].blocks[1], 1);
    }
    LayoutParams lp;
    WholeJob w(&G.g, lp);
    w.patterns = pats.pointers();
    ASSERT_EQ(w.build(combining()), NBR_SUCCESS) << w.message();
    ASSERT_EQ(w.verify(), NBR_SUCCESS) << w.message();
    EXPECT_EQ(messages(w.plans[0]), 1 + 4) << "k/2 + 1 stages instead of k";
    EXPECT_EQ(messages(w.plans[1]), 1 + 3);
}

TEST(CombiningPlans, ThetaLimitsFriendship)
{
    Graph G; // 0 and 1 share two neighbors
    std::vector<int> s{0, 0, 1, 1}, d{2, 3, 2, 3};
    ASSERT_EQ(nbr_graph_from_edges(4, 4, s.data(), d.data(), &G.g), NBR_SUCCESS);
    Patterns two(G.g, 2), three(G.g, 3);
    EXPECT_EQ(two.p[0].num_pairs, 1);
    EXPECT_EQ(three.p[0].num_pairs, 0);
    EXPECT_EQ(three.p[0].num_direct, 2) << "no friends: everything goes directly";
}

TEST(CombiningPlans, PairsAreMutualAndCoverEveryEdgeOnce)
{
    Graph G;
    ASSERT_EQ(nbr_graph_erdos_renyi(40, 0.5, 3, &G.g), NBR_SUCCESS);
    Patterns pats(G.g, 2);
    ASSERT_EQ(pats.rc, NBR_SUCCESS);
    for (int p = 0; p < 40; p++) {
        std::set<int> covered;
        for (int i = 0; i < pats.p[p].num_pairs; i++) {
            const nbr_combining_pair_t &x = pats.p[p].pairs[i];
            bool mutual = false;
            for (int j = 0; j < pats.p[x.friend_rank].num_pairs; j++)
                mutual |= pats.p[x.friend_rank].pairs[j].friend_rank == p;
            EXPECT_TRUE(mutual) << p << " pairs with " << x.friend_rank << " alone";
        }
        // every distinct out-neighbor gets p's block exactly once
        std::multiset<int> got;
        for (int t = 0; t < 40; t++)
            for (int k = 0; k < pats.p[t].num_in; k++)
                for (int b = 0; b < 2; b++)
                    if (pats.p[t].in[k].blocks[b] == p)
                        got.insert(t);
        std::set<int> want;
        for (int e = G.g.out_offsets[p]; e < G.g.out_offsets[p + 1]; e++)
            if (G.g.out_targets[e] != p)
                want.insert(G.g.out_targets[e]);
        EXPECT_EQ(got.size(), want.size()) << "rank " << p;
        EXPECT_EQ(std::set<int>(got.begin(), got.end()), want) << "rank " << p;
    }
}

TEST(CombiningPlans, SameGraphSamePlan)
{
    Graph a, b;
    ASSERT_EQ(nbr_graph_erdos_renyi(48, 0.4, 8, &a.g), NBR_SUCCESS);
    ASSERT_EQ(nbr_graph_erdos_renyi(48, 0.4, 8, &b.g), NBR_SUCCESS);
    Patterns pa(a.g, 2), pb(b.g, 2);
    for (int r = 0; r < 48; r++) {
        ASSERT_EQ(pa.p[r].num_pairs, pb.p[r].num_pairs) << "rank " << r;
        for (int i = 0; i < pa.p[r].num_pairs; i++)
            EXPECT_EQ(pa.p[r].pairs[i].friend_rank, pb.p[r].pairs[i].friend_rank);
    }
}

TEST(CombiningPlans, VerifierOverSeededGraphs)
{
    const double deltas[] = {0.05, 0.2, 0.4, 0.8};
    const int thetas[] = {1, 2, 4};
    int graphs = 0;
    for (int i = 0; i < 240; i++) {
        Graph G;
        const int n = 2 + (i * 29) % 70, theta = thetas[i % 3];
        if (i % 5 == 4)
            ASSERT_EQ(nbr_graph_random_multi(n, 6, 500 + i, &G.g), NBR_SUCCESS);
        else
            ASSERT_EQ(nbr_graph_erdos_renyi(n, deltas[i % 4], 500 + i, &G.g), NBR_SUCCESS);
        Patterns pats(G.g, theta);
        ASSERT_EQ(pats.rc, NBR_SUCCESS);
        LayoutParams lp;
        lp.block = 1 + i % 17;
        WholeJob w(&G.g, lp);
        nbr_combining_params_t params{theta};
        w.params = &params;
        w.patterns = pats.pointers();
        std::ostringstream what;
        what << "graph " << i << " n=" << n << " theta=" << theta;
        ASSERT_EQ(w.build(combining()), NBR_SUCCESS) << what.str() << ": " << w.message();
        ASSERT_EQ(w.verify(), NBR_SUCCESS) << what.str() << ": " << w.message();
        graphs++;
    }
    for (int d = 1; d <= 3; d++)
        for (int r = 1; r <= 2; r++) {
            Graph G;
            const int n = d == 1 ? 30 : d == 2 ? 64 : 125;
            ASSERT_EQ(nbr_graph_moore(n, d, r, &G.g), NBR_SUCCESS);
            Patterns pats(G.g, 2);
            LayoutParams lp;
            WholeJob w(&G.g, lp);
            w.patterns = pats.pointers();
            ASSERT_EQ(w.build(combining()), NBR_SUCCESS) << w.message();
            ASSERT_EQ(w.verify(), NBR_SUCCESS) << "moore d" << d << " r" << r << ": " << w.message();
            graphs++;
        }
    EXPECT_GE(graphs, 246);
}

// The pattern's rule computed the obvious way (sets, every pair every
// round): the builder counts friends through in-lists on sparse graphs and
// keeps shared counts on dense ones; both must give exactly this.
struct Expected {
    std::vector<std::pair<int, std::vector<int>>> pairs; // friend, neighbors served
    std::vector<int> direct;
};

std::vector<Expected> by_definition(const nbr_graph_t &g, int theta)
{
    const int n = g.nranks;
    std::vector<std::set<int>> active(n);
    for (int p = 0; p < n; p++)
        for (int e = g.out_offsets[p]; e < g.out_offsets[p + 1]; e++)
            if (g.out_targets[e] != p)
                active[p].insert(g.out_targets[e]);
    std::vector<Expected> out(n);
    for (bool more = true; more;) {
        std::vector<std::tuple<int, int, int>> cands; // -weight, p, q
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                int w = 0;
                for (int t : active[p])
                    w += (int)active[q].count(t);
                if (w >= theta)
                    cands.emplace_back(-w, p, q);
            }
        std::sort(cands.begin(), cands.end());
        std::vector<bool> paired(n);
        more = false;
        for (auto &[negw, p, q] : cands) {
            if (paired[p] || paired[q])
                continue;
            paired[p] = paired[q] = true;
            more = true;
            std::vector<int> common;
            for (int t : active[p])
                if (active[q].count(t))
                    common.push_back(t);
            for (int t : common) {
                active[p].erase(t);
                active[q].erase(t);
            }
            size_t first = (common.size() + 1) / 2;
            out[p].pairs.emplace_back(q, std::vector<int>(common.begin(), common.begin() + first));
            out[q].pairs.emplace_back(p, std::vector<int>(common.begin() + first, common.end()));
        }
    }
    for (int p = 0; p < n; p++)
        out[p].direct.assign(active[p].begin(), active[p].end());
    return out;
}

TEST(CombiningPlans, SparseAndDenseGraphsFollowTheDefinition)
{
    int checked = 0;
    for (double density : {0.03, 0.1, 0.3, 0.6, 0.95})
        for (int theta : {1, 2, 3})
            for (uint64_t seed : {3u, 11u}) {
                Graph G;
                const int n = 20 + (int)(seed * 7) % 50;
                ASSERT_EQ(nbr_graph_erdos_renyi(n, density, seed, &G.g), NBR_SUCCESS);
                Patterns pats(G.g, theta);
                ASSERT_EQ(pats.rc, NBR_SUCCESS);
                std::vector<Expected> want = by_definition(G.g, theta);
                for (int r = 0; r < n; r++) {
                    const nbr_combining_pattern_t &got = pats.p[r];
                    std::ostringstream what;
                    what << "n " << n << " density " << density << " theta " << theta
                         << " rank " << r;
                    ASSERT_EQ(got.num_pairs, (int)want[r].pairs.size()) << what.str();
                    for (int i = 0; i < got.num_pairs; i++) {
                        EXPECT_EQ(got.pairs[i].friend_rank, want[r].pairs[i].first) << what.str();
                        EXPECT_EQ(std::vector<int>(got.pairs[i].on,
                                                   got.pairs[i].on + got.pairs[i].num_on),
                                  want[r].pairs[i].second)
                            << what.str();
                    }
                    EXPECT_EQ(std::vector<int>(got.direct, got.direct + got.num_direct),
                              want[r].direct)
                        << what.str();
                }
                checked++;
            }
    EXPECT_EQ(checked, 30);
}

// Dense graphs: fewer messages than naive.
TEST(CombiningPlans, FewerMessagesThanNaiveOnDenseGraphs)
{
    Graph G;
    ASSERT_EQ(nbr_graph_erdos_renyi(64, 0.8, 12, &G.g), NBR_SUCCESS);
    Patterns pats(G.g, 2);
    LayoutParams lp;
    WholeJob w(&G.g, lp), naive(&G.g, lp);
    w.patterns = pats.pointers();
    ASSERT_EQ(w.build(combining()), NBR_SUCCESS);
    ASSERT_EQ(naive.build(nbr_algorithm_find("naive")), NBR_SUCCESS);
    long ours = 0, base = 0;
    for (int r = 0; r < 64; r++) {
        ours += messages(w.plans[r]);
        base += messages(naive.plans[r]);
    }
    EXPECT_LT(ours, base * 3 / 4) << "combining " << ours << " vs naive " << base;
}

}  // namespace

// allgatherv over 1,000 seeded graphs: blocks of every size (0 included),
// the sizes from the call's size round; and the size round itself tells
// each rank where every block it relays or receives lands.
TEST(CombiningPlans, AllgathervWithItsSizeRound)
{
    for (int i = 0; i < 1000; i++) {
        Graph G;
        const int n = 2 + (i * 37) % 60;
        if (i % 4 == 3)
            ASSERT_EQ(nbr_graph_random_multi(n, 6, 900 + i, &G.g), NBR_SUCCESS);
        else
            ASSERT_EQ(nbr_graph_erdos_renyi(n, 0.1 + 0.2 * (i % 4), 900 + i, &G.g), NBR_SUCCESS);
        Patterns pats(G.g, 2);
        ASSERT_EQ(pats.rc, NBR_SUCCESS);
        LayoutParams lp;
        lp.coll = NBR_COLL_ALLGATHERV;
        lp.block = 40;
        lp.gap = i % 2;
        lp.seed = 77 + i;
        WholeJob w(&G.g, lp);
        nbr_combining_params_t params{2};
        w.params = &params;
        w.patterns = pats.pointers();
        for (int r = 0; r < n; r++)
            w.block_sizes.push_back(w.layouts[r].send[0].bytes);
        std::ostringstream what;
        what << "allgatherv graph " << i << " n=" << n;
        ASSERT_EQ(w.build(combining()), NBR_SUCCESS) << what.str() << ": " << w.message();
        ASSERT_EQ(w.verify(), NBR_SUCCESS) << what.str() << ": " << w.message();
        // the size round: an allgather of 8 bytes whose plan says where
        // every block a rank takes lands; the verifier accepts it, and a
        // rank learns the size of every block its data plan moves
        LayoutParams sp;
        sp.block = 8;
        WholeJob sizes(&G.g, sp);
        sizes.params = &params;
        sizes.patterns = pats.pointers();
        ASSERT_EQ(sizes.build(combining()), NBR_SUCCESS);
        ASSERT_EQ(sizes.verify(), NBR_SUCCESS) << what.str() << ": " << sizes.message();
        nbr_job_t job;
        ASSERT_EQ(nbr_job_init(&job, &G.g, nullptr, combining(), &params), NBR_SUCCESS);
        for (int r = 0; r < n; r++) {
            nbr_plan_input_t input = nbr_job_input(&job, r, &sizes.layouts[r]);
            input.pattern = pats.pointers()[r];
            std::vector<size_t> offset_of(n + 1, 0);
            nbr_plan_t plan;
            ASSERT_EQ(nbr_build_size_plan(combining(), &input, &plan, offset_of.data()),
                      NBR_SUCCESS);
            const nbr_combining_pattern_t &p = pats.p[r];
            for (int k = 0; k < p.num_pairs; k++)
                if (p.pairs[k].num_on > 0) {
                    EXPECT_NE(offset_of[p.pairs[k].friend_rank], SIZE_MAX)
                        << what.str() << ": rank " << r << " relays its friend's block";
                }
            for (int k = 0; k < p.num_in; k++)
                for (int b = 0; b < 2 && p.in[k].blocks[b] >= 0; b++)
                    EXPECT_NE(offset_of[p.in[k].blocks[b]], SIZE_MAX) << what.str();
            nbr_plan_free(&plan);
        }
        nbr_job_free(&job);
    }
}
