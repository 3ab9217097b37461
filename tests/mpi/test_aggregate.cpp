// aggregate and dedup under MPI, on virtual nodes: alltoallv,
// alltoallv_init_ext and alltoall bit-exact against MPI_Neighbor_alltoallv;
// one message per node pair and direction, and dedup's bytes between nodes
// (each distinct value once per node it goes to); a signature mismatch
// reported without a hang; auto pricing both, one exchange after another.
#include "mpi_cases.h"
#include "mpi_harness.h"
#include "test_memory.h"

#include <nbrcoll.h>
extern "C" {
#include "base/graph_gen.h"
#include "front/select.h"
}

#include <cmath>

#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using nbrtest::world_rank;
using nbrtest::world_size;

namespace {

struct Aggregate : nbrtest::MpiTest {};

// The value a rank's element e holds, named by its index: a few values,
// each sent to many ranks and repeated inside blocks.
long index_of(int rank, int e) { return (long)rank * 100 + e % 3; }
double value_of(long index) { return 0.25 * (double)index + 1.0; }

// One rank's side of a whole-graph alltoallv with value indices: every
// edge k carries `elements` doubles (edge-dependent, some empty).
struct Exchange {
    std::vector<int> scounts, sdispls, rcounts, rdispls;
    std::vector<long> sidx, ridx;
    std::vector<double> send;
    Exchange(const nbrtest::RankComm &c, int elements)
    {
        const int me = world_rank();
        for (size_t j = 0; j < c.out.size(); j++) {
            int n = (elements + c.out[j] + me) % (elements + 1);
            sdispls.push_back((int)sidx.size());
            scounts.push_back(n);
            for (int e = 0; e < n; e++) {
                sidx.push_back(index_of(me, e));
                send.push_back(value_of(index_of(me, e)));
            }
        }
        for (size_t i = 0; i < c.in.size(); i++) {
            int n = (elements + me + c.in[i]) % (elements + 1);
            rdispls.push_back((int)ridx.size());
            rcounts.push_back(n);
            for (int e = 0; e < n; e++)
                ridx.push_back(index_of(c.in[i], e));
        }
        sidx.push_back(0), ridx.push_back(0), send.push_back(0); // never empty
    }
};

nbr_graph_t graph_for(uint64_t seed)
{
    nbr_graph_t g{};
    EXPECT_EQ(nbr_graph_random_multi(world_size(), 5, seed, &g), NBR_SUCCESS);
    return g;
}

int node_of(int rank, int rpn) { return rank / rpn; }

// Node pairs (source node, destination node) the graph sends between.
std::set<std::pair<int, int>> node_pairs(const nbr_graph_t &g, int rpn)
{
    std::set<std::pair<int, int>> pairs;
    for (int r = 0; r < g.nranks; r++)
        for (int e = g.out_offsets[r]; e < g.out_offsets[r + 1]; e++)
            if (node_of(r, rpn) != node_of(g.out_targets[e], rpn))
                pairs.insert({node_of(r, rpn), node_of(g.out_targets[e], rpn)});
    return pairs;
}

uint64_t sum_over_ranks(uint64_t mine)
{
    uint64_t all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

} // namespace

TEST_F(Aggregate, PersistentExtBitExactWithItsMessagesAndBytes)
{
    for (int rpn : {2, 4}) {
        if (world_size() < 2 * rpn)
            continue;
        for (uint64_t seed = 1; seed <= 3; seed++) {
            nbr_graph_t g = graph_for(seed);
            const std::string ranks = std::to_string(rpn);
            for (const char *algorithm : {"aggregate", "dedup", "auto", "naive", "mpi"}) {
                nbrtest::RankComm c(&g, {{"nbr_ranks_per_node", ranks}});
                const std::string what = std::string(algorithm) + ", nodes of " + ranks +
                                         ", seed " + std::to_string(seed);
                if (!c.ready(what, "auto"))
                    continue;
                Exchange x(c, 5);
                std::vector<double> got(x.ridx.size(), -1), want(x.ridx.size(), -1);
                MPI_Neighbor_alltoallv(x.send.data(), x.scounts.data(), x.sdispls.data(),
                                       MPI_DOUBLE, want.data(), x.rcounts.data(),
                                       x.rdispls.data(), MPI_DOUBLE, c.comm);
                MPI_Info info;
                MPI_Info_create(&info);
                MPI_Info_set(info, "nbr_algorithm", algorithm);
                // device buffers too, with NBR_TEST_MEMORY=device
                nbrtest::Mirror<double> send_m(x.send), got_m(got);
                send_m.to_device();
                nbr_request_t req = NBR_REQUEST_NULL;
                int rc = nbr_neighbor_alltoallv_init_ext(
                    send_m.ptr(), x.scounts.data(), x.sdispls.data(), MPI_DOUBLE, got_m.ptr(),
                    x.rcounts.data(), x.rdispls.data(), MPI_DOUBLE, x.sidx.data(), x.ridx.data(),
                    c.comm, info, &req);
                MPI_Info_free(&info);
                EXPECT_EQ(rc, NBR_SUCCESS) << what;
                nbr_reset_counters(c.comm);
                for (int run = 0; run < 3 && rc == NBR_SUCCESS; run++) {
                    std::fill(got.begin(), got.end(), -1.0);
                    got_m.to_device();
                    EXPECT_EQ(nbr_start(&req), NBR_SUCCESS) << what;
                    EXPECT_EQ(nbr_wait(&req), NBR_SUCCESS) << what;
                    got_m.to_host();
                    EXPECT_EQ(got, want) << what << ", run " << run << ", rank " << world_rank();
                }
                nbr_counters_t k{};
                nbr_get_counters(c.comm, &k);
                uint64_t msgs = sum_over_ranks(k.msgs_inter_node) / 3;
                uint64_t bytes = sum_over_ranks(k.bytes_inter_node) / 3;
                const std::string name = algorithm;
                if (name == "aggregate" || name == "dedup") {
                    EXPECT_EQ(msgs, node_pairs(g, rpn).size())
                        << what << ": one message per node pair and direction";
                }
                if (name == "dedup") { // each distinct (source, value) once per node
                    std::set<std::tuple<int, int, long>> crossing;
                    for (int q = 0; q < g.nranks; q++)
                        for (int e = g.out_offsets[q]; e < g.out_offsets[q + 1]; e++) {
                            int dst = g.out_targets[e], j = e - g.out_offsets[q];
                            int n = (5 + dst + q) % 6;
                            (void)j;
                            if (node_of(q, rpn) != node_of(dst, rpn))
                                for (int v = 0; v < n; v++)
                                    crossing.insert({node_of(dst, rpn), q, index_of(q, v)});
                        }
                    EXPECT_EQ(bytes, crossing.size() * sizeof(double)) << what;
                }
                if (req != NBR_REQUEST_NULL)
                    nbr_request_free(&req);
            }
            nbr_graph_free(&g);
        }
    }
}

// Blocking and nonblocking alltoall(v) through aggregate: the exchange
// runs at every call; changing counts between calls is fine.
TEST_F(Aggregate, BlockingAndNonblockingCalls)
{
    nbr_graph_t g = graph_for(7);
    nbrtest::RankComm c(&g, {{"nbr_algorithm", "aggregate"}, {"nbr_ranks_per_node", "2"}});
    if (c.ready("aggregate blocking", "aggregate")) {
        for (int elements : {3, 0, 11}) {
            Exchange x(c, elements);
            std::vector<double> got(x.ridx.size(), -1), want(x.ridx.size(), -1);
            MPI_Neighbor_alltoallv(x.send.data(), x.scounts.data(), x.sdispls.data(), MPI_DOUBLE,
                                   want.data(), x.rcounts.data(), x.rdispls.data(), MPI_DOUBLE,
                                   c.comm);
            EXPECT_EQ(nbr_neighbor_alltoallv(x.send.data(), x.scounts.data(), x.sdispls.data(),
                                             MPI_DOUBLE, got.data(), x.rcounts.data(),
                                             x.rdispls.data(), MPI_DOUBLE, c.comm),
                      NBR_SUCCESS);
            EXPECT_EQ(got, want) << "alltoallv of up to " << elements << " doubles";
            std::fill(got.begin(), got.end(), -1.0);
            nbr_request_t req = NBR_REQUEST_NULL;
            EXPECT_EQ(nbr_neighbor_ialltoallv(x.send.data(), x.scounts.data(), x.sdispls.data(),
                                              MPI_DOUBLE, got.data(), x.rcounts.data(),
                                              x.rdispls.data(), MPI_DOUBLE, c.comm, &req),
                      NBR_SUCCESS);
            EXPECT_EQ(nbr_wait(&req), NBR_SUCCESS);
            EXPECT_EQ(got, want) << "ialltoallv of up to " << elements << " doubles";
        }
        const int outdeg = (int)c.out.size(), indeg = (int)c.in.size();
        std::vector<int> send((size_t)outdeg * 4 + 1), got((size_t)indeg * 4 + 1, -1),
            want((size_t)indeg * 4 + 1, -1);
        nbrtest::fill_ints(send, world_rank(), 3);
        MPI_Neighbor_alltoall(send.data(), 4, MPI_INT, want.data(), 4, MPI_INT, c.comm);
        EXPECT_EQ(nbr_neighbor_alltoall(send.data(), 4, MPI_INT, got.data(), 4, MPI_INT, c.comm),
                  NBR_SUCCESS);
        EXPECT_EQ(got, want) << "alltoall of 4 ints";
    }
    nbr_graph_free(&g);
}

// A receive count one int short of its sender's: the receiver, and only
// it, reports the mismatch; nobody hangs and the communicator keeps
// working.
TEST_F(Aggregate, SignatureMismatchIsReportedWithoutAHang)
{
    const int P = world_size(), me = world_rank();
    if (P < 4)
        return;
    nbr_graph_t g{};
    std::vector<int> src, dst; // a ring across nodes of 2
    for (int r = 0; r < P; r++) {
        src.push_back(r);
        dst.push_back((r + 2) % P);
    }
    EXPECT_EQ(nbr_graph_from_edges(P, P, src.data(), dst.data(), &g), NBR_SUCCESS);
    nbrtest::RankComm c(&g, {{"nbr_algorithm", "aggregate"}, {"nbr_ranks_per_node", "2"}});
    if (c.ready("mismatch", "aggregate")) {
        int scount = 4, rcount = me == 2 ? 3 : 4, sd = 0, rd = 0;
        std::vector<int> send(8, me), got(8, -1);
        nbr_request_t req = NBR_REQUEST_NULL;
        int rc = nbr_neighbor_alltoallv_init(send.data(), &scount, &sd, MPI_INT, got.data(),
                                             &rcount, &rd, MPI_INT, c.comm, MPI_INFO_NULL, &req);
        EXPECT_EQ(rc, NBR_SUCCESS);
        if (rc == NBR_SUCCESS) {
            EXPECT_EQ(nbr_start(&req), NBR_SUCCESS);
            int waited = nbr_wait(&req);
            int mismatch = waited == NBR_ERR_TYPE_MISMATCH, any = 0;
            MPI_Allreduce(&mismatch, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            EXPECT_EQ(any, 1) << "some rank reports the mismatch";
            EXPECT_EQ(waited, me == 2 ? NBR_ERR_TYPE_MISMATCH : NBR_SUCCESS)
                << "rank " << me << ": " << nbr_error_string(waited);
            nbr_request_free(&req);
        }
        // still usable
        int one = 1, sum = 0;
        EXPECT_EQ(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c.comm), MPI_SUCCESS);
        EXPECT_EQ(sum, P);
    }
    nbr_graph_free(&g);
}

// auto prices aggregate and dedup for every _init_ext: two exchanges back
// to back, many times. Each must price them (a finite price on every
// rank): when two rounds-engine runs shared their tags, a rank still
// probing for the first took the second's messages and priced them at
// infinity (seen on this ring, every time within a few rounds).
TEST_F(Aggregate, AutoPricesBothManyTimes)
{
    const int P = world_size();
    nbr_graph_t g{}; // every rank to the next three
    std::vector<int> src, dst;
    for (int r = 0; r < P; r++)
        for (int k = 1; k <= 3 && k < P; k++) {
            src.push_back(r);
            dst.push_back((r + k) % P);
        }
    EXPECT_EQ(nbr_graph_from_edges(P, (long)src.size(), src.data(), dst.data(), &g),
              NBR_SUCCESS);
    nbrtest::RankComm c(&g, {{"nbr_ranks_per_node", "2"}});
    if (c.ready("auto pricing", "auto")) {
        Exchange x(c, 6);
        // the layout and value indices the request would make, slot by slot
        nbr_layout_t layout{};
        nbr_layout_init(&layout, NBR_COLL_ALLTOALLV, (int)c.out.size(), (int)c.in.size());
        std::vector<size_t> send_at{0}, recv_at{0};
        std::vector<int64_t> sidx(x.sidx.begin(), x.sidx.end()), ridx(x.ridx.begin(), x.ridx.end());
        for (size_t j = 0; j < c.out.size(); j++) {
            layout.send[j] = {(size_t)x.sdispls[j] * 8, (size_t)x.scounts[j] * 8};
            send_at.push_back(send_at.back() + (size_t)x.scounts[j]);
        }
        for (size_t i = 0; i < c.in.size(); i++) {
            layout.recv[i] = {(size_t)x.rdispls[i] * 8, (size_t)x.rcounts[i] * 8};
            recv_at.push_back(recv_at.back() + (size_t)x.rcounts[i]);
        }
        const nbr_value_index_t values = {8, sidx.data(), ridx.data(), send_at.data(),
                                          recv_at.data()};
        const nbr_priced_call_t priced = {NBR_CALL_ALLTOALLV, 0, 0, &values, 0, 100};
        nbr_comm_t *state = nullptr;
        EXPECT_EQ(nbr_comm_get(c.comm, MPI_INFO_NULL, &state), NBR_SUCCESS);
        std::vector<const nbr_algorithm_t *> cand(nbr_algorithm_count());
        std::vector<nbr_sim_parts_t> mine(cand.size() + 1);
        for (int round = 0; round < 20 && state; round++) {
            int count = 0, fallback = -1;
            EXPECT_EQ(nbr_select_local_prices(state, &layout, &priced,
                                              nbr_comm_next_tag_base(state, 0), cand.data(),
                                              mine.data(), &count, &fallback),
                      NBR_SUCCESS);
            int priced_both = 0;
            for (int k = 0; k < count; k++) {
                std::string name = cand[k]->name;
                if (name == "aggregate" || name == "dedup") {
                    EXPECT_TRUE(std::isfinite(mine[k].seconds))
                        << name << " unpriced in round " << round << " on rank " << world_rank();
                    priced_both++;
                }
            }
            EXPECT_EQ(priced_both, 2) << "both are candidates for a call with value indices";
        }
        nbr_layout_free(&layout);
    }
    nbr_graph_free(&g);
}

int main(int argc, char **argv) { return nbrtest::run_main(argc, argv, false); }
