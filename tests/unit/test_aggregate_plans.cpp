// aggregate (three-step locality-aware alltoallv): the verifier over
// seeded graphs and region layouts, and the messages between regions the
// graph implies: one per region pair and direction.
#include "plan_fixture.h"

extern "C" {
#include "alg/aggregate/aggregate.h"
}

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>
#include <string>
#include <utility>
#include <vector>

namespace {

const nbr_algorithm_t *aggregate() { return nbr_algorithm_find("aggregate"); }

struct Graph {
    nbr_graph_t g{};
    ~Graph() { nbr_graph_free(&g); }
};

// Ranks placed on nodes by a key per rank (regions of any sizes, not
// contiguous), one socket per node unless ranks_per_socket.
struct Placement {
    nbr_locality_t loc{};
    Placement(const std::vector<int> &node_key, int ranks_per_socket = 0)
    {
        EXPECT_EQ(nbr_locality_from_keys((int)node_key.size(), node_key.data(), nullptr,
                                         ranks_per_socket, &loc),
                  NBR_SUCCESS);
    }
    ~Placement() { nbr_locality_free(&loc); }
};

// Messages between nodes, by (source node, destination node).
std::map<std::pair<int, int>, int> messages_between_nodes(const std::vector<nbr_plan_t> &plans,
                                                          const nbr_locality_t &loc)
{
    std::map<std::pair<int, int>, int> n;
    for (const nbr_plan_t &plan : plans)
        for (int i = 0; i < plan.num_ops; i++)
            if (plan.ops[i].kind == NBR_OP_SEND) {
                int a = loc.node_of[plan.rank], b = loc.node_of[plan.ops[i].peer];
                if (a != b)
                    n[{a, b}]++;
            }
    return n;
}

// Node pairs the graph sends between.
std::set<std::pair<int, int>> node_pairs(const nbr_graph_t &g, const nbr_locality_t &loc)
{
    std::set<std::pair<int, int>> pairs;
    for (int r = 0; r < g.nranks; r++)
        for (int e = g.out_offsets[r]; e < g.out_offsets[r + 1]; e++) {
            int a = loc.node_of[r], b = loc.node_of[g.out_targets[e]];
            if (a != b)
                pairs.insert({a, b});
        }
    return pairs;
}

// The graph of seed s: random multigraphs (repeated edges, self-loops) and
// Erdos-Renyi graphs of several densities, 1-40 ranks.
int seeded_graph(uint64_t s, nbr_graph_t *g)
{
    uint64_t state = s * 0x9E3779B97F4A7C15ull + 11;
    int n = 1 + (int)(nbr_splitmix64(&state) % 40);
    if (nbr_splitmix64(&state) % 2)
        return nbr_graph_random_multi(n, 1 + (int)(nbr_splitmix64(&state) % 8), s, g);
    double density = 0.05 + 0.9 * (double)(nbr_splitmix64(&state) % 1000) / 1000.0;
    return nbr_graph_erdos_renyi(n, density, s, g);
}

// Regions for seed s: one region, one rank per region, or random node
// keys (uneven sizes, members not contiguous).
std::vector<int> seeded_keys(uint64_t s, int n)
{
    uint64_t state = s * 31 + 7;
    std::vector<int> key(n);
    int kind = (int)(s % 4), nodes = 1 + (int)(nbr_splitmix64(&state) % (uint64_t)(n > 1 ? n : 1));
    for (int r = 0; r < n; r++)
        key[r] = kind == 0 ? 0 : kind == 1 ? r : (int)(nbr_splitmix64(&state) % (uint64_t)nodes);
    return key;
}

} // namespace

TEST(AggregatePlans, VerifierOverSeededGraphsAndRegions)
{
    int checked = 0;
    for (uint64_t s = 1; s <= 1200; s++) {
        Graph G;
        ASSERT_EQ(seeded_graph(s, &G.g), NBR_SUCCESS) << "seed " << s;
        Placement place(seeded_keys(s, G.g.nranks), s % 5 == 0 ? 2 : 0);
        LayoutParams lp;
        lp.coll = NBR_COLL_ALLTOALLV;
        lp.block = (s % 3 == 0) ? 0 : 24; // all empty blocks, or 0-24 bytes each
        lp.gap = s % 2;                   // gaps: the packing and unpacking copies
        lp.reverse = s % 7 == 0;
        lp.seed = s;
        WholeJob w(&G.g, lp, &place.loc);
        const std::string what = "seed " + std::to_string(s) + ", " + std::to_string(G.g.nranks) +
                                 " ranks on " + std::to_string(place.loc.num_nodes) + " nodes";
        ASSERT_EQ(w.build(aggregate()), NBR_SUCCESS) << what << ": " << w.message();
        ASSERT_EQ(w.verify(), NBR_SUCCESS) << what << ": " << w.message();
        // one message per node pair and direction, nothing else between nodes
        auto sent = messages_between_nodes(w.plans, place.loc);
        auto pairs = node_pairs(G.g, place.loc);
        EXPECT_EQ(sent.size(), pairs.size()) << what;
        for (const auto &p : pairs)
            EXPECT_EQ(sent[p], 1) << what << ": node " << p.first << " -> " << p.second;
        checked++;
    }
    EXPECT_EQ(checked, 1200);
}

// Socket regions: one message per socket pair; messages between sockets of
// one node count too.
TEST(AggregatePlans, SocketRegions)
{
    Graph G;
    ASSERT_EQ(nbr_graph_erdos_renyi(24, 0.6, 5, &G.g), NBR_SUCCESS);
    Placement place(std::vector<int>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                     1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                    3); // 2 nodes x 4 sockets x 3 ranks
    nbr_algorithm_params_t all{};
    ASSERT_EQ(nbr_algorithm_params_load(MPI_INFO_NULL, &all), NBR_SUCCESS);
    nbr_aggregate_params_t p =
        *(const nbr_aggregate_params_t *)nbr_algorithm_params_of(&all, aggregate());
    p.by_socket = 1;
    LayoutParams lp;
    lp.coll = NBR_COLL_ALLTOALLV;
    lp.block = 16;
    WholeJob w(&G.g, lp, &place.loc);
    w.params = &p;
    ASSERT_EQ(w.build(aggregate()), NBR_SUCCESS) << w.message();
    ASSERT_EQ(w.verify(), NBR_SUCCESS) << w.message();
    std::map<std::pair<int, int>, int> sent;
    for (const nbr_plan_t &plan : w.plans)
        for (int i = 0; i < plan.num_ops; i++)
            if (plan.ops[i].kind == NBR_OP_SEND &&
                place.loc.socket_of[plan.rank] != place.loc.socket_of[plan.ops[i].peer] &&
                plan.ops[i].tag == 2)
                sent[{place.loc.socket_of[plan.rank], place.loc.socket_of[plan.ops[i].peer]}]++;
    EXPECT_EQ(sent.size(), 8u * 7u) << "a dense graph joins every socket pair";
    for (const auto &kv : sent)
        EXPECT_EQ(kv.second, 1) << "socket " << kv.first.first << " -> " << kv.first.second;
    nbr_algorithm_params_free(&all);
}

// Agents share the remote nodes: with 8 nodes of 4 ranks and every rank
// sending to every other node, each rank sends for at most 2 nodes.
TEST(AggregatePlans, AgentsShareTheRemoteNodes)
{
    Graph G;
    ASSERT_EQ(nbr_graph_erdos_renyi(32, 1.0, 3, &G.g), NBR_SUCCESS);
    Machine m(nullptr, 32, 4);
    LayoutParams lp;
    lp.coll = NBR_COLL_ALLTOALLV;
    lp.block = 8;
    WholeJob w(&G.g, lp, &m.loc);
    ASSERT_EQ(w.build(aggregate()), NBR_SUCCESS) << w.message();
    ASSERT_EQ(w.verify(), NBR_SUCCESS) << w.message();
    for (const nbr_plan_t &plan : w.plans) {
        int between = 0;
        for (int i = 0; i < plan.num_ops; i++)
            between += plan.ops[i].kind == NBR_OP_SEND &&
                       m.loc.node_of[plan.ops[i].peer] != m.loc.node_of[plan.rank];
        EXPECT_LE(between, 2) << "rank " << plan.rank << " sends to " << between << " nodes";
        EXPECT_EQ(plan.stats.msgs_inter_node, (uint64_t)between);
    }
}

// Without its call facts (a tool, another algorithm's request) the builder
// gives naive's plan, which the verifier accepts too.
TEST(AggregatePlans, NoFactsMeansNaive)
{
    Graph G;
    ASSERT_EQ(nbr_graph_erdos_renyi(12, 0.5, 9, &G.g), NBR_SUCCESS);
    Machine m(nullptr, 12, 4);
    LayoutParams lp;
    lp.coll = NBR_COLL_ALLTOALLV;
    WholeJob w(&G.g, lp, &m.loc);
    nbr_job_t job;
    ASSERT_EQ(nbr_job_init(&job, &G.g, &m.loc, aggregate(), nullptr), NBR_SUCCESS);
    for (int r = 0; r < 12; r++) {
        nbr_plan_input_t input = nbr_job_input(&job, r, &w.layouts[r]);
        ASSERT_EQ(nbr_build_plan(aggregate(), &input, &w.plans[r]), NBR_SUCCESS);
        EXPECT_EQ(w.plans[r].num_phases, 1) << "rank " << r;
    }
    nbr_job_free(&job);
    EXPECT_EQ(w.verify(), NBR_SUCCESS) << w.message();
}

// ------------------------------------------------------------ dedup

namespace {

const nbr_algorithm_t *dedup() { return nbr_algorithm_find("dedup"); }

// Value indices of a whole job for 8-byte elements: the e-th element of
// every block rank q sends holds value (q, hash(e) mod distinct), so the
// same value goes to many ranks and repeats inside a block; every receive
// element names the index its sender gave it.
struct Values {
    static constexpr size_t element = 8;
    std::vector<std::vector<int64_t>> send, recv;
    std::vector<std::vector<size_t>> send_at, recv_at, same_bytes;
    std::vector<nbr_value_index_t> index;
    std::vector<const nbr_value_index_t *> pointers;
    std::vector<const size_t *> same; // for the verifier

    static int64_t value(uint64_t seed, int e, int distinct)
    {
        uint64_t state = seed * 977 + (uint64_t)e;
        return (int64_t)(nbr_splitmix64(&state) % (uint64_t)distinct);
    }

    Values(const nbr_graph_t &g, const std::vector<nbr_layout_t> &layouts, uint64_t seed,
           int distinct)
    {
        int n = g.nranks;
        send.resize(n), recv.resize(n), send_at.resize(n), recv_at.resize(n);
        same_bytes.resize(n), index.resize(n);
        for (int r = 0; r < n; r++) {
            const nbr_layout_t &l = layouts[r];
            send_at[r].push_back(0);
            same_bytes[r].assign(nbr_layout_send_extent(&l) + 1, 0);
            for (size_t b = 0; b < same_bytes[r].size(); b++)
                same_bytes[r][b] = b;
            std::map<int64_t, size_t> first; // value -> its first byte
            for (int j = 0; j < l.num_send_slots; j++) {
                for (size_t e = 0; e < l.send[j].bytes / element; e++) {
                    int64_t v = value(seed + (uint64_t)r, (int)e, distinct);
                    send[r].push_back(v);
                    size_t at = l.send[j].offset + e * element;
                    auto hit = first.emplace(v, at).first;
                    for (size_t b = 0; b < element; b++)
                        same_bytes[r][at + b] = hit->second + b;
                }
                send_at[r].push_back(send[r].size());
            }
            recv_at[r].push_back(0);
            for (int i = 0; i < l.num_recv_slots; i++) {
                int src = nbr_graph_in(&g, r)[i];
                for (size_t e = 0; e < l.recv[i].bytes / element; e++)
                    recv[r].push_back(value(seed + (uint64_t)src, (int)e, distinct));
                recv_at[r].push_back(recv[r].size());
            }
        }
        for (int r = 0; r < n; r++) {
            index[r] = {element, send[r].data(), recv[r].data(), send_at[r].data(),
                        recv_at[r].data()};
            pointers.push_back(&index[r]);
            same.push_back(same_bytes[r].data());
        }
    }
};

// Bytes sent between nodes in the g step (tag 2).
uint64_t bytes_between_nodes(const std::vector<nbr_plan_t> &plans, const nbr_locality_t &loc)
{
    uint64_t bytes = 0;
    for (const nbr_plan_t &plan : plans)
        for (int i = 0; i < plan.num_ops; i++)
            if (plan.ops[i].kind == NBR_OP_SEND &&
                loc.node_of[plan.rank] != loc.node_of[plan.ops[i].peer])
                bytes += plan.ops[i].bytes;
    return bytes;
}

} // namespace

TEST(DedupPlans, VerifierOverSeededGraphsWithValues)
{
    int fewer = 0;
    for (uint64_t s = 1; s <= 1000; s++) {
        Graph G;
        ASSERT_EQ(seeded_graph(s, &G.g), NBR_SUCCESS) << "seed " << s;
        Placement place(seeded_keys(s, G.g.nranks));
        LayoutParams lp;
        lp.coll = NBR_COLL_ALLTOALLV;
        lp.unit = Values::element;
        lp.block = (s % 5 == 0) ? 0 : 6 * Values::element; // 0-6 elements per block
        lp.gap = s % 2;
        lp.reverse = s % 7 == 0;
        lp.seed = s;
        const std::string what = "seed " + std::to_string(s) + ", " + std::to_string(G.g.nranks) +
                                 " ranks on " + std::to_string(place.loc.num_nodes) + " nodes";
        WholeJob d(&G.g, lp, &place.loc), a(&G.g, lp, &place.loc);
        Values v(G.g, d.layouts, s, 1 + (int)(s % 4));
        d.values = v.pointers;
        d.same = v.same;
        ASSERT_EQ(d.build(dedup()), NBR_SUCCESS) << what << ": " << d.message();
        ASSERT_EQ(d.verify(), NBR_SUCCESS) << what << ": " << d.message();
        ASSERT_EQ(a.build(aggregate()), NBR_SUCCESS) << what << ": " << a.message();
        // the same messages between nodes as aggregate, never more bytes
        auto sent = messages_between_nodes(d.plans, place.loc);
        auto pairs = node_pairs(G.g, place.loc);
        EXPECT_EQ(sent.size(), pairs.size()) << what;
        for (const auto &p : pairs)
            EXPECT_EQ(sent[p], 1) << what << ": node " << p.first << " -> " << p.second;
        uint64_t dedup_bytes = bytes_between_nodes(d.plans, place.loc);
        uint64_t aggregate_bytes = bytes_between_nodes(a.plans, place.loc);
        EXPECT_LE(dedup_bytes, aggregate_bytes) << what;
        // exactly: each distinct (source, value) once per node it goes to
        std::set<std::tuple<int, int, int64_t>> crossing; // (dest node, source, value)
        for (int q = 0; q < G.g.nranks; q++)
            for (int j = 0; j < d.layouts[q].num_send_slots; j++) {
                int dst = nbr_graph_out(&G.g, q)[j];
                if (place.loc.node_of[dst] == place.loc.node_of[q])
                    continue;
                for (size_t e = v.send_at[q][j]; e < v.send_at[q][j + 1]; e++)
                    crossing.insert({place.loc.node_of[dst], q, v.send[q][e]});
            }
        EXPECT_EQ(dedup_bytes, crossing.size() * Values::element) << what;
        // and aggregate moves every block's bytes once
        uint64_t blocks = 0;
        for (int q = 0; q < G.g.nranks; q++)
            for (int j = 0; j < d.layouts[q].num_send_slots; j++)
                if (place.loc.node_of[nbr_graph_out(&G.g, q)[j]] != place.loc.node_of[q])
                    blocks += d.layouts[q].send[j].bytes;
        EXPECT_EQ(aggregate_bytes, blocks) << what;
        fewer += dedup_bytes < aggregate_bytes;
    }
    EXPECT_GT(fewer, 300) << "values repeat: dedup should move fewer bytes between nodes";
}

// Each value crosses between two nodes once: a rank whose 8 elements all
// hold one value, sent to the 3 ranks of another node, sends 8 bytes there.
TEST(DedupPlans, OneValueCrossesOnce)
{
    Graph G;
    std::vector<int> s{0, 0, 0}, dst{4, 5, 6};
    ASSERT_EQ(nbr_graph_from_edges(8, 3, s.data(), dst.data(), &G.g), NBR_SUCCESS);
    Machine m(nullptr, 8, 4);
    LayoutParams lp;
    lp.coll = NBR_COLL_ALLTOALLV;
    lp.unit = Values::element;
    lp.block = 64;
    WholeJob w(&G.g, lp, &m.loc);
    for (auto &l : w.layouts) // every block 8 elements
        for (int j = 0; j < l.num_send_slots; j++)
            l.send[j] = {(size_t)j * 64, 64};
    for (auto &l : w.layouts)
        for (int i = 0; i < l.num_recv_slots; i++)
            l.recv[i] = {(size_t)i * 64, 64};
    Values v(G.g, w.layouts, 1, 1); // one distinct value
    w.values = v.pointers;
    w.same = v.same;
    ASSERT_EQ(w.build(dedup()), NBR_SUCCESS) << w.message();
    ASSERT_EQ(w.verify(), NBR_SUCCESS) << w.message();
    EXPECT_EQ(bytes_between_nodes(w.plans, m.loc), 8u);
}
