// MPI integration suite: every nbrcoll neighborhood collective, blocking,
// nonblocking and persistent, compared bit for bit with Open MPI's
// MPI_Neighbor_* on the same communicator, over many graphs built in all
// three ways. Run under mpirun with any number of ranks.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mpi_cases.h"
#include "mpi_harness.h"

using namespace nbrtest;

namespace {

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

// ------------------------------------------------------------ graph sets

std::vector<GraphSpec> er_graphs()
{
    return {
        {"er_p0.15", kErdosRenyi, 0.15, 0, 0, 101, false},
        {"er_p0.4", kErdosRenyi, 0.4, 0, 0, 102, false},
        {"er_p0.9", kErdosRenyi, 0.9, 0, 0, 103, false},
    };
}

std::vector<GraphSpec> moore_graphs()
{
    std::vector<GraphSpec> g;
    for (int d = 1; d <= 3; ++d)
        for (int r = 1; r <= 2; ++r)
            g.push_back({"moore_d" + std::to_string(d) + "_r" + std::to_string(r), kMoore, 0, d,
                         r, 0, d == 1 && r == 1});
    return g;
}

std::vector<GraphSpec> star_graphs()
{
    return {
        {"star_out_c0", kStar, 0, 0, 1, 0, false},
        {"star_in_clast", kStar, 0, -1, 0, 0, false},
    };
}

GraphSpec empty_graph() { return {"empty", kEmpty, 0, 0, 0, 0, true}; }

std::vector<GraphSpec> multi_graphs()
{
    return {
        {"multi_max4", kMulti, 0, 4, 0, 7, false},
        {"multi_max1", kMulti, 0, 1, 0, 8, true},
    };
}

GraphSpec sources_only_graph() { return {"sources_only", kSourcesOnly, 0, 0, 0, 0, true}; }

// Graph of a spec for this job, or a failure. Local (every rank builds it).
bool build_graph(const GraphSpec &s, nbr_graph_t *g)
{
    std::memset(g, 0, sizeof *g);
    const int rc = make_graph(s, world_size(), g);
    EXPECT_EQ(rc, NBR_SUCCESS) << "graph generator for " << s.name << " failed";
    return rc == NBR_SUCCESS;
}

int max_outdegree(const nbr_graph_t &g)
{
    int m = 0;
    for (int r = 0; r < g.nranks; ++r)
        m = std::max(m, nbr_graph_outdegree(&g, r));
    return m;
}

int max_degree(const nbr_graph_t &g)
{
    int m = max_outdegree(g);
    for (int r = 0; r < g.nranks; ++r)
        m = std::max(m, nbr_graph_indegree(&g, r));
    return m;
}

// Keeps dense graphs cheap on an oversubscribed node: at most about `budget`
// bytes sent or received per rank per operation.
size_t cap_bytes(size_t bytes, const nbr_graph_t &g, size_t budget)
{
    const size_t deg = static_cast<size_t>(std::max(1, max_degree(g)));
    return std::min(bytes, std::max<size_t>(budget / deg, 1));
}

// The algorithm a comm gets: the suite cycles through every registered one.
std::string pick_algorithm(size_t i)
{
    static const std::vector<std::string> names = algorithm_names();
    return names.empty() ? std::string("naive") : names[i % names.size()];
}

// The standard battery on one communicator: allgather(v) and alltoallv with
// every type pair once, alltoall and alltoallw (every edge its own pair
// anyway) with every fourth pair, which ones rotating with the graph and
// mode (the run time); sizes and variants rotating with the graph and mode
// indices.
std::vector<Case> standard_battery(int gi, int mi, const nbr_graph_t &g)
{
    static const size_t sizes[] = {0, 1, 300, 6 * KiB, 70 * KiB};
    const int npairs = static_cast<int>(types().pairs.size());
    std::vector<Case> cases;
    for (int op = 0; op < kNumOps; ++op) {
        for (int pair = 0; pair < npairs; ++pair) {
            if (op >= 3 && (gi + mi + pair) % 4 != 0)
                continue;
            Case c;
            c.op = static_cast<Op>(op);
            c.pair = pair;
            c.bytes = cap_bytes(sizes[(gi + 2 * mi + op + pair) % 5], g, 2 * MiB);
            c.variant = static_cast<Variant>((gi + mi + 2 * op + pair) % 3);
            c.seed = mix(static_cast<uint64_t>(gi), static_cast<uint64_t>(mi),
                         static_cast<uint64_t>(op), static_cast<uint64_t>(pair), 0xBA77);
            c.poll = (c.seed >> 7) & 1;
            c.runs = 3;
            cases.push_back(c);
        }
    }
    return cases;
}

// Builds each graph of the list in each mode and runs the battery on it.
void run_graph_suite(const std::vector<GraphSpec> &specs, int gbase)
{
    for (size_t s = 0; s < specs.size(); ++s) {
        const int gi = gbase + static_cast<int>(s);
        nbr_graph_t g;
        if (!all_ranks(build_graph(specs[s], &g)))
            continue;
        for (int mi = 0; mi < 3; ++mi) {
            const Mode mode = kAllModes[mi];
            const std::string algo = pick_algorithm(static_cast<size_t>(gi + mi));
            Info info{{"nbr_algorithm", algo}};
            CommOptions opt;
            opt.info = mode == Mode::MpiLazy ? MPI_INFO_NULL : info.info;
            opt.weighted = (gi % 2) == 0;  // zero-degree ranks: MPI_WEIGHTS_EMPTY
            opt.seed = mix(static_cast<uint64_t>(gi), 0xED6E);
            const std::string ctx = specs[s].name + " [" + mode_name(mode) + "]";
            MPI_Comm comm = make_comm(g, mode, opt, specs[s].name);
            if (comm == MPI_COMM_NULL)
                continue;
            std::vector<Case> cases = standard_battery(gi, mi, g);
            // Half of the persistent requests name their algorithm in the
            // _init info as well.
            if ((gi + mi) % 2 == 0)
                for (Case &c : cases)
                    if (c.variant == Variant::Persistent)
                        c.init_info = info.info;
            // The very first nbrcoll call on a lazily set-up communicator is
            // a collective, not nbr_get_counters.
            if (mode == Mode::MpiLazy)
                cases.front().check_calls = false;
            for (const Case &c : cases)
                run_case(comm, c, ctx);
            if (mode != Mode::MpiLazy) {
                const char *name = nullptr;
                const int rc = nbr_comm_algorithm(comm, &name);
                EXPECT_EQ(rc, NBR_SUCCESS) << ctx << ": nbr_comm_algorithm";
                if (rc == NBR_SUCCESS && name && algo == "auto") {
                    // auto says what it chose for the latest call: a real one
                    const std::vector<std::string> list = algorithm_names();
                    EXPECT_NE(std::string(name), "auto") << ctx << ": auto chose nothing";
                    EXPECT_NE(std::find(list.begin(), list.end(), name), list.end()) << ctx;
                } else if (rc == NBR_SUCCESS && name) {
                    // the battery's last case ran it
                    EXPECT_EQ(algorithm_run(comm, algo, cases.back().variant), name)
                        << ctx << ": info nbr_algorithm not honoured";
                }
            }
            free_comm(&comm);
        }
        nbr_graph_free(&g);
    }
}

class Api : public MpiTest {};
class Collectives : public MpiTest {};
class VirtualNodes : public MpiTest {};

}  // namespace

// ================================================================ API

TEST_F(Api, AlgorithmNamesListNaive)
{
    const char *names = nbr_algorithm_names();
    EXPECT_NE(names, nullptr);
    const std::vector<std::string> list = algorithm_names();
    EXPECT_NE(std::find(list.begin(), list.end(), "naive"), list.end())
        << "nbr_algorithm_names() = \"" << (names ? names : "NULL") << "\"";
    for (const std::string &n : list) {
        const char *d = nbr_algorithm_description(n.c_str());
        EXPECT_TRUE(d && *d) << "no description for algorithm " << n;
    }
    EXPECT_EQ(nbr_algorithm_description("nosuch"), nullptr);
}

TEST_F(Api, UnknownAlgorithmRejectedOnEveryRank)
{
    const int me = world_rank(), P = world_size();
    const int right = (me + 1) % P, left = (me + P - 1) % P;
    for (int only_one = 0; only_one < 2; ++only_one) {
        // only_one: just the last rank asks for the unknown algorithm; the
        // creation agrees on the error anyway.
        const bool bad = !only_one || me == P - 1;
        Info info{{"nbr_algorithm", bad ? "nosuch" : "naive"}};
        MPI_Comm comm = MPI_COMM_NULL;
        const int rc = nbr_dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, MPI_UNWEIGHTED, 1,
                                                      &right, MPI_UNWEIGHTED, info.info, 0, &comm);
        EXPECT_EQ(rc, NBR_ERR_ALGORITHM)
            << "rank " << me << (only_one ? " (only the last rank named it)" : "")
            << ": got " << status_text(rc);
        EXPECT_EQ(comm, MPI_COMM_NULL) << "rank " << me << ": communicator returned on error";
        if (comm != MPI_COMM_NULL)
            MPI_Comm_free(&comm);
    }
}

// ================================================================ graphs

TEST_F(Collectives, ErdosRenyi) { run_graph_suite(er_graphs(), 0); }

TEST_F(Collectives, Moore) { run_graph_suite(moore_graphs(), 10); }

TEST_F(Collectives, StarInAndOut) { run_graph_suite(star_graphs(), 20); }

// Every rank passes NULL neighbor arrays and MPI_UNWEIGHTED (odd index).
TEST_F(Collectives, EmptyGraph) { run_graph_suite({empty_graph()}, 31); }

TEST_F(Collectives, RandomMultigraphSelfLoops) { run_graph_suite(multi_graphs(), 40); }

TEST_F(Collectives, ZeroInDegreeSenders) { run_graph_suite({sources_only_graph()}, 50); }

// Message sizes from 0 B to 256 KiB on two graphs, every variant.
TEST_F(Collectives, SizeSweep)
{
    static const size_t sizes[] = {0, 1, 8, 64, 512, 4 * KiB, 32 * KiB, 256 * KiB};
    const std::vector<GraphSpec> specs = {moore_graphs()[2], multi_graphs()[0]};
    const int pairs[] = {types().find("byte"), types().find("vec->int"),
                         types().find("structA->structB")};
    for (size_t s = 0; s < specs.size(); ++s) {
        nbr_graph_t g;
        if (!all_ranks(build_graph(specs[s], &g)))
            continue;
        CommOptions opt;
        MPI_Comm comm = make_comm(g, s == 0 ? Mode::NbrAdjacent : Mode::MpiLazy, opt,
                                  specs[s].name);
        if (comm != MPI_COMM_NULL) {
            int k = 0;
            for (int op = 0; op < 3; ++op)
                for (size_t b : sizes)
                    for (int pair : pairs) {
                        Case c;
                        c.op = static_cast<Op>(op);
                        c.pair = pair;
                        c.bytes = cap_bytes(b, g, 4 * MiB);
                        c.variant = static_cast<Variant>(k % 3);
                        c.runs = 2;
                        c.seed = mix(s, static_cast<uint64_t>(k), 0x5133);
                        c.check_calls = k > 0;
                        ++k;
                        run_case(comm, c, specs[s].name + " sweep");
                    }
        }
        free_comm(&comm);
        nbr_graph_free(&g);
    }
}

// 1 MiB and 4 MiB per edge, only on sparse graphs.
TEST_F(Collectives, LargeMessagesSparseGraphs)
{
    std::vector<GraphSpec> specs = {moore_graphs()[0], multi_graphs()[1]};
    if (world_size() <= 8)
        specs.push_back(star_graphs()[0]);
    const int byte = types().find("byte"), dbl = types().find("double"),
              i2v = types().find("int->vec");
    struct Big {
        Op op;
        int pair;
        size_t bytes;
        Variant v;
    };
    const std::vector<Big> bigs = {
        {Op::Allgather, byte, 4 * MiB, Variant::Blocking},
        {Op::Allgatherv, dbl, 4 * MiB, Variant::Nonblocking},
        {Op::Alltoallv, byte, 4 * MiB, Variant::Persistent},
        {Op::Alltoallv, dbl, 1 * MiB, Variant::Blocking},
        {Op::Allgather, i2v, 1 * MiB, Variant::Persistent},
        {Op::Alltoallv, i2v, 1 * MiB, Variant::Nonblocking},
        {Op::Alltoall, dbl, 1 * MiB, Variant::Persistent},
        {Op::Alltoallw, i2v, 1 * MiB, Variant::Blocking},  // about half of it packed
    };
    for (size_t s = 0; s < specs.size(); ++s) {
        nbr_graph_t g;
        if (!all_ranks(build_graph(specs[s], &g)))
            continue;
        CommOptions opt;
        MPI_Comm comm = make_comm(g, kAllModes[s % 3], opt, specs[s].name);
        if (comm != MPI_COMM_NULL) {
            int k = 0;
            for (const Big &b : bigs) {
                Case c;
                c.op = b.op;
                c.pair = b.pair;
                c.bytes = b.bytes;
                c.variant = b.v;
                c.runs = 2;
                c.seed = mix(s, static_cast<uint64_t>(k), 0xB16);
                c.check_calls = k > 0;
                ++k;
                run_case(comm, c, specs[s].name + " large");
            }
        }
        free_comm(&comm);
        nbr_graph_free(&g);
    }
}

// Several nonblocking and persistent operations in flight on one
// communicator at once, one of each collective, completed in another order
// than started.
TEST_F(Collectives, SeveralOperationsInFlight)
{
    nbr_graph_t g;
    if (!all_ranks(build_graph(multi_graphs()[0], &g)))
        return;
    CommOptions opt;
    MPI_Comm comm = make_comm(g, Mode::NbrAdjacent, opt, "multi_max4");
    if (comm != MPI_COMM_NULL) {
        const int pairs[kNumOps] = {types().find("int"), types().find("structA->structB"),
                                    types().find("vec"), types().find("double"),
                                    types().find("vec->int")};
        std::vector<Case> cs(kNumOps);
        for (int i = 0; i < kNumOps; ++i) {
            cs[i].op = static_cast<Op>(i);
            cs[i].pair = pairs[i];
            cs[i].bytes = 2000 + 700 * static_cast<size_t>(i);
            cs[i].seed = 77 + static_cast<uint64_t>(i);
        }
        {
            CaseRunner a(comm, cs[0], "in-flight"), b(comm, cs[1], "in-flight"),
                c(comm, cs[2], "in-flight"), d(comm, cs[3], "in-flight"),
                e(comm, cs[4], "in-flight");
            CaseRunner *r[kNumOps] = {&a, &b, &c, &d, &e};
            nbr_request_t req[kNumOps];
            std::fill(req, req + kNumOps, NBR_REQUEST_NULL);
            for (int i = 0; i < kNumOps; ++i) {
                r[i]->prepare(0);
                EXPECT_EQ(r[i]->call_nonblocking(&req[i]), NBR_SUCCESS) << r[i]->where();
            }
            for (int i = 0; i < kNumOps; ++i)
                r[i]->reference();
            for (int i = kNumOps - 1; i >= 0; --i) {
                if (req[i] != NBR_REQUEST_NULL) {
                    EXPECT_EQ(nbr_wait(&req[i]), NBR_SUCCESS) << r[i]->where();
                }
                r[i]->check(0);
            }

            // Persistent: all five started, then completed in reverse.
            for (int i = 0; i < kNumOps; ++i) {
                EXPECT_EQ(r[i]->call_init(MPI_INFO_NULL, &req[i]), NBR_SUCCESS) << r[i]->where();
            }
            for (int run = 1; run <= 2; ++run) {
                for (int i = 0; i < kNumOps; ++i) {
                    r[i]->prepare(run);
                    if (req[i] != NBR_REQUEST_NULL) {
                        EXPECT_EQ(nbr_start(&req[i]), NBR_SUCCESS) << r[i]->where();
                    }
                }
                for (int i = kNumOps - 1; i >= 0; --i) {
                    if (req[i] != NBR_REQUEST_NULL) {
                        EXPECT_EQ(nbr_wait(&req[i]), NBR_SUCCESS) << r[i]->where();
                    }
                }
                for (int i = 0; i < kNumOps; ++i) {
                    r[i]->reference();
                    r[i]->check(run);
                }
            }
            for (int i = 0; i < kNumOps; ++i)
                if (req[i] != NBR_REQUEST_NULL) {
                    EXPECT_EQ(nbr_request_free(&req[i]), NBR_SUCCESS) << r[i]->where();
                }
        }
    }
    free_comm(&comm);
    nbr_graph_free(&g);
}

// State cached on a communicator survives MPI_Comm_dup and freeing the
// original; many communicators in a row are created and freed cleanly.
TEST_F(Collectives, DupAndFreeCommunicators)
{
    nbr_graph_t g;
    if (!all_ranks(build_graph(moore_graphs()[2], &g)))
        return;
    Case c;
    c.op = Op::Alltoallv;
    c.pair = types().find("vec->int");
    c.bytes = 1000;
    c.variant = Variant::Persistent;
    c.runs = 2;
    for (int rep = 0; rep < 6; ++rep) {
        CommOptions opt;
        opt.seed = static_cast<uint64_t>(rep);
        MPI_Comm comm = make_comm(g, kAllModes[rep % 3], opt, "moore_d2_r1");
        if (comm == MPI_COMM_NULL)
            continue;
        c.seed = static_cast<uint64_t>(rep);
        c.check_calls = rep % 3 != 1;
        run_case(comm, c, "before dup");
        MPI_Comm dup = MPI_COMM_NULL;
        MPI_Comm_dup(comm, &dup);
        free_comm(&comm);
        c.check_calls = false;  // the dup may or may not inherit counters
        c.variant = static_cast<Variant>(rep % 3);
        run_case(dup, c, "on dup after freeing the original");
        c.variant = Variant::Persistent;
        free_comm(&dup);
    }
    nbr_graph_free(&g);
}

// ================================================================ locality

// Virtual nodes of nbr_ranks_per_node ranks (info "2", or the environment,
// which wins): the naive algorithm sends one message per out-edge, so the
// counters must split exactly by the locality of each edge.
TEST_F(VirtualNodes, NaiveCountersSplitByNode)
{
    const int me = world_rank(), P = world_size();
    int rpn = 2;
    if (const char *env = std::getenv("NBR_RANKS_PER_NODE"))
        rpn = std::atoi(env);
    if (rpn < 1) {
        ADD_FAILURE() << "bad NBR_RANKS_PER_NODE in the test environment";
        rpn = 2;
    }
    const int want_nodes = (P + rpn - 1) / rpn;

    const std::vector<GraphSpec> specs = {moore_graphs()[2], multi_graphs()[0], star_graphs()[0],
                                          sources_only_graph(), er_graphs()[1]};
    for (size_t s = 0; s < specs.size(); ++s) {
        nbr_graph_t g;
        if (!all_ranks(build_graph(specs[s], &g)))
            continue;
        const Mode mode = kAllModes[s % 3];
        Info info{{"nbr_ranks_per_node", "2"}, {"nbr_algorithm", "naive"}};
        CommOptions opt;
        opt.info = info.info;
        opt.attach = true;  // MpiLazy: attach with the info
        const std::string ctx = specs[s].name + " [" + mode_name(mode) + "] vnodes";
        MPI_Comm comm = make_comm(g, mode, opt, specs[s].name);
        if (comm == MPI_COMM_NULL) {
            nbr_graph_free(&g);
            continue;
        }

        int num_nodes = -1, my_node = -1, my_socket = -1;
        const int lrc = nbr_comm_locality(comm, &num_nodes, &my_node, &my_socket);
        EXPECT_EQ(lrc, NBR_SUCCESS) << ctx << ": nbr_comm_locality";
        EXPECT_EQ(num_nodes, want_nodes) << ctx << ": rank " << me << " with " << rpn
                                         << " ranks per node";
        std::vector<int> node_of(P, -1);
        MPI_Allgather(&my_node, 1, MPI_INT, node_of.data(), 1, MPI_INT, MPI_COMM_WORLD);
        std::vector<int> per_node(std::max(num_nodes, 1), 0);
        for (int r = 0; r < P; ++r) {
            if (node_of[r] < 0 || node_of[r] >= num_nodes) {
                ADD_FAILURE() << ctx << ": rank " << r << " on node " << node_of[r] << " of "
                              << num_nodes;
                continue;
            }
            per_node[node_of[r]]++;
        }
        for (int n = 0; n < num_nodes; ++n) {
            EXPECT_GE(per_node[n], 1) << ctx << ": node " << n << " has no rank";
            EXPECT_LE(per_node[n], rpn) << ctx << ": node " << n << " has too many ranks";
        }
        const char *algo = nullptr;
        EXPECT_EQ(nbr_comm_algorithm(comm, &algo), NBR_SUCCESS);
        EXPECT_STREQ(algo ? algo : "NULL", "naive") << ctx;

        const Neighbors nb = query_neighbors(comm);
        int k = 0;
        for (int op = 0; op < kNumOps; ++op) {
            for (int v = 0; v < 3; ++v, ++k) {
                Case c;
                c.op = static_cast<Op>(op);
                c.pair = k % 2 ? types().find("double") : types().find("int->vec");
                c.bytes = 96 + 40 * static_cast<size_t>(k);
                c.variant = static_cast<Variant>(v);
                c.runs = 2;
                c.no_zero_edges = true;
                c.seed = mix(s, static_cast<uint64_t>(k), 0xC0);
                EXPECT_EQ(nbr_reset_counters(comm), NBR_SUCCESS) << ctx;
                const CaseResult res = run_case(comm, c, ctx);
                nbr_counters_t got{};
                EXPECT_EQ(nbr_get_counters(comm, &got), NBR_SUCCESS) << ctx;
                if (!res.nbr_ok)
                    continue;
                nbr_counters_t want{};
                for (int j = 0; j < nb.outdeg(); ++j) {
                    const int d = nb.out[j];
                    const uint64_t b = res.out_bytes[j] * static_cast<uint64_t>(res.nbr_ops);
                    const uint64_t m = static_cast<uint64_t>(res.nbr_ops);
                    if (d == me) {
                        want.local_copies += m;
                        want.bytes_local_copies += b;
                    } else if (node_of[d] == my_node) {
                        want.msgs_intra_node += m;
                        want.bytes_intra_node += b;
                    } else {
                        want.msgs_inter_node += m;
                        want.bytes_inter_node += b;
                    }
                }
                const std::string w = ctx + " " + describe(c) + " rank " + std::to_string(me);
                EXPECT_EQ(got.calls, static_cast<uint64_t>(res.nbr_ops)) << w << ": calls";
                EXPECT_EQ(got.msgs_intra_node, want.msgs_intra_node) << w << ": msgs_intra_node";
                EXPECT_EQ(got.bytes_intra_node, want.bytes_intra_node) << w << ": bytes_intra_node";
                EXPECT_EQ(got.msgs_inter_node, want.msgs_inter_node) << w << ": msgs_inter_node";
                EXPECT_EQ(got.bytes_inter_node, want.bytes_inter_node) << w << ": bytes_inter_node";
                EXPECT_EQ(got.local_copies, want.local_copies) << w << ": local_copies";
                EXPECT_EQ(got.bytes_local_copies, want.bytes_local_copies)
                    << w << ": bytes_local_copies";
                EXPECT_GE(got.msgs_off_socket, got.msgs_inter_node)
                    << w << ": off-socket messages must include inter-node ones";
                EXPECT_LE(got.msgs_off_socket, got.msgs_inter_node + got.msgs_intra_node) << w;
                EXPECT_GE(got.bytes_off_socket, got.bytes_inter_node) << w;
            }
        }
        free_comm(&comm);
        nbr_graph_free(&g);
    }
}

int main(int argc, char **argv) { return run_main(argc, argv, false); }
