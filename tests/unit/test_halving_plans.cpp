// Distance halving: the pattern's rules and the verifier over many seeded
// graphs, virtual sockets of L ranks.
#include "plan_fixture.h"

extern "C" {
#include "alg/halving.h"
#include "topo/locality.h"
}

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace {

const nbr_algorithm_t *halving() { return nbr_algorithm_find("halving"); }

// Every rank's pattern for one graph and socket layout.
struct Patterns : JobPatterns<nbr_halving_pattern_t, nbr_halving_pattern_free> {
    Patterns(const nbr_graph_t &g, const nbr_locality_t &loc) : JobPatterns(g.nranks)
    {
        rc = nbr_halving_build(g.nranks, g.out_offsets, g.out_targets, loc.socket_of, 0, nullptr,
                               p.data());
    }
};

struct Job {
    nbr_graph_t g{};
    nbr_locality_t loc{};
    Job(int n, int rps) { EXPECT_EQ(nbr_locality_virtual(n, n, rps, &loc), NBR_SUCCESS); }
    ~Job()
    {
        nbr_graph_free(&g);
        nbr_locality_free(&loc);
    }
};

std::string text_of(const nbr_plan_t &plan)
{
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    nbr_plan_print(&plan, f);
    fclose(f);
    std::string s(buf, len);
    free(buf);
    return s;
}

int bound(int n, int L) { return n > L ? (int)std::ceil(std::log2((double)n / L)) + 1 : 0; }

// Builds, verifies, checks the off-socket bound; returns the most messages
// any rank sends (0 on failure).
void check_graph(Job &job, int L, const std::string &what, size_t block = 8)
{
    const int n = job.g.nranks;
    Patterns pats(job.g, job.loc);
    ASSERT_EQ(pats.rc, NBR_SUCCESS) << what;
    LayoutParams lp;
    lp.block = block;
    WholeJob w(&job.g, lp, &job.loc);
    w.patterns = pats.pointers();
    ASSERT_EQ(w.build(halving()), NBR_SUCCESS) << what << ": " << w.message();
    ASSERT_EQ(w.verify(), NBR_SUCCESS) << what << ": " << w.message();
    for (int r = 0; r < n; r++)
        EXPECT_LE((int)w.plans[r].stats.msgs_off_socket, bound(n, L))
            << what << ": rank " << r << " sends too many off-socket messages";
}

TEST(HalvingPlans, TwoSocketsOneAgentEach)
{
    // 8 ranks, sockets of 4, everyone sends to everyone: one step (split at
    // the socket boundary), each rank hands the other socket to one agent.
    Job job(8, 4);
    std::vector<int> s, d;
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++)
            if (a != b) {
                s.push_back(a);
                d.push_back(b);
            }
    ASSERT_EQ(nbr_graph_from_edges(8, (long)s.size(), s.data(), d.data(), &job.g), NBR_SUCCESS);
    Patterns pats(job.g, job.loc);
    ASSERT_EQ(pats.rc, NBR_SUCCESS);
    for (int r = 0; r < 8; r++) {
        const nbr_halving_pattern_t &p = pats.p[r];
        ASSERT_EQ(p.num_steps, 1) << "rank " << r;
        EXPECT_EQ(p.ranks_per_socket, 4);
        const int agent = p.steps[0].send.peer;
        EXPECT_NE(agent / 4, r / 4) << "rank " << r << ": the agent is across the boundary";
        EXPECT_EQ(p.steps[0].num_recv, 1) << "rank " << r << ": one origin per agent";
        for (int k = 0; k < p.num_final_send; k++)
            EXPECT_EQ(p.final_send[k].peer / 4, r / 4) << "final messages stay in the socket";
    }
    check_graph(job, 4, "complete graph on 2 sockets");
}

TEST(HalvingPlans, SameGraphSamePlan)
{
    for (int round = 0; round < 2; round++) {
        Job a(64, 4), b(64, 4);
        ASSERT_EQ(nbr_graph_erdos_renyi(64, 0.3, 77, &a.g), NBR_SUCCESS);
        ASSERT_EQ(nbr_graph_erdos_renyi(64, 0.3, 77, &b.g), NBR_SUCCESS);
        LayoutParams lp;
        Patterns pa(a.g, a.loc), pb(b.g, b.loc);
        WholeJob wa(&a.g, lp, &a.loc), wb(&b.g, lp, &b.loc);
        wa.patterns = pa.pointers();
        wb.patterns = pb.pointers();
        ASSERT_EQ(wa.build(halving()), NBR_SUCCESS);
        ASSERT_EQ(wb.build(halving()), NBR_SUCCESS);
        for (int r = 0; r < 64; r++)
            ASSERT_EQ(text_of(wa.plans[r]), text_of(wb.plans[r])) << "rank " << r;
    }
}

// The builder makes the pattern itself when the communicator has none
// (a per-request algorithm): the same plans.
TEST(HalvingPlans, BuilderWithoutPatternAgrees)
{
    Job job(24, 4);
    ASSERT_EQ(nbr_graph_erdos_renyi(24, 0.4, 5, &job.g), NBR_SUCCESS);
    LayoutParams lp;
    Patterns pats(job.g, job.loc);
    WholeJob with(&job.g, lp, &job.loc), without(&job.g, lp, &job.loc);
    with.patterns = pats.pointers();
    ASSERT_EQ(with.build(halving()), NBR_SUCCESS);
    ASSERT_EQ(without.build(halving()), NBR_SUCCESS) << without.message();
    for (int r = 0; r < 24; r++)
        EXPECT_EQ(text_of(with.plans[r]), text_of(without.plans[r])) << "rank " << r;
    EXPECT_EQ(without.verify(), NBR_SUCCESS) << without.message();
}

// >= 500 seeded graphs: Erdos-Renyi 0.05 .. 0.8 and Moore d 1..3, r 1..2,
// L in {1, 4, 16, 20}, up to 512 ranks here (2,048 below).
TEST(HalvingPlans, VerifierOverSeededGraphs)
{
    const int Ls[] = {1, 4, 16, 20};
    const double deltas[] = {0.05, 0.1, 0.2, 0.3, 0.5, 0.8};
    int graphs = 0;
    for (int i = 0; i < 420; i++) {
        const int L = Ls[i % 4];
        const int n = 2 + (int)((i * 37) % 90);
        Job job(n, L);
        const double delta = deltas[i % 6];
        ASSERT_EQ(nbr_graph_erdos_renyi(n, delta, 1000 + i, &job.g), NBR_SUCCESS);
        std::ostringstream what;
        what << "er n=" << n << " delta=" << delta << " L=" << L << " seed=" << 1000 + i;
        check_graph(job, L, what.str(), 1 + i % 24);
        graphs++;
    }
    for (int d = 1; d <= 3; d++)
        for (int r = 1; r <= 2; r++)
            for (int i = 0; i < 16; i++) {
                const int L = Ls[i % 4];
                const int n = d == 1 ? 8 + 9 * i : d == 2 ? 16 + 7 * i : 27 + 11 * i;
                Job job(n, L);
                ASSERT_EQ(nbr_graph_moore(n, d, r, &job.g), NBR_SUCCESS);
                std::ostringstream what;
                what << "moore n=" << n << " d=" << d << " r=" << r << " L=" << L;
                check_graph(job, L, what.str(), 8);
                graphs++;
            }
    for (int i = 0; i < 8; i++) {
        Job job(512, Ls[i % 4]);
        ASSERT_EQ(nbr_graph_erdos_renyi(512, i < 4 ? 0.05 : 0.2, 9000 + i, &job.g), NBR_SUCCESS);
        check_graph(job, Ls[i % 4], "er n=512 L=" + std::to_string(Ls[i % 4]));
        graphs++;
    }
    EXPECT_GE(graphs, 500);
}

// allgatherv: with the sizes the call's size round delivers, the same
// pattern moves blocks of uneven (and zero) sizes.
TEST(HalvingPlans, AllgathervWithTheSizeRound)
{
    const int Ls[] = {1, 4, 16, 20};
    for (int i = 0; i < 120; i++) {
        const int n = 2 + (i * 41) % 100, L = Ls[i % 4];
        Job job(n, L);
        if (i % 3 == 2)
            ASSERT_EQ(nbr_graph_random_multi(n, 5, 700 + i, &job.g), NBR_SUCCESS);
        else
            ASSERT_EQ(nbr_graph_erdos_renyi(n, 0.05 + 0.1 * (i % 8), 700 + i, &job.g),
                      NBR_SUCCESS);
        Patterns pats(job.g, job.loc);
        ASSERT_EQ(pats.rc, NBR_SUCCESS);
        LayoutParams lp;
        lp.coll = NBR_COLL_ALLGATHERV;
        lp.block = 40;
        lp.gap = i % 2 ? 3 : 0;
        lp.seed = 31 + i;
        WholeJob w(&job.g, lp, &job.loc);
        w.patterns = pats.pointers();
        for (int r = 0; r < n; r++)
            w.block_sizes.push_back(w.layouts[r].send[0].bytes);
        std::ostringstream what;
        what << "allgatherv n=" << n << " L=" << L << " graph " << i;
        ASSERT_EQ(w.build(halving()), NBR_SUCCESS) << what.str() << ": " << w.message();
        ASSERT_EQ(w.verify(), NBR_SUCCESS) << what.str() << ": " << w.message();
        if (i == 0) {
            // without the size round: the naive plan
            WholeJob plain(&job.g, lp, &job.loc);
            plain.patterns = pats.pointers();
            ASSERT_EQ(plain.build(halving()), NBR_SUCCESS);
            for (int r = 0; r < n; r++)
                EXPECT_LE(plain.plans[r].num_phases, 1) << "rank " << r << ": naive is one phase";
        }
    }
}

TEST(HalvingPlans, VerifierAt2048Ranks)
{
    const int Ls[] = {1, 4, 16, 20};
    for (int i = 0; i < 4; i++) {
        Job job(2048, Ls[i]);
        ASSERT_EQ(nbr_graph_erdos_renyi(2048, 0.02, 4242 + i, &job.g), NBR_SUCCESS);
        check_graph(job, Ls[i], "er n=2048 delta=0.02 L=" + std::to_string(Ls[i]));
    }
}

}  // namespace
