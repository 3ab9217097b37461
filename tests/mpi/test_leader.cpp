// leader under MPI: 16 ranks as 2 virtual nodes x 8 GCDs on the stored
// Frontier model, every call bit-exact against MPI_Neighbor_allgather(v).
#include "mpi_cases.h"
#include "mpi_harness.h"
#include "test_memory.h"

#include <nbrcoll.h>
extern "C" {
#include "base/graph_gen.h"
}

#include <set>
#include <string>
#include <vector>

using nbrtest::all_ranks;
using nbrtest::world_rank;
using nbrtest::world_size;

namespace {

struct Leader : nbrtest::MpiTest {};

// A graph on the leader algorithm, 8 ranks per virtual Frontier node.
std::vector<std::pair<std::string, std::string>> leader_info()
{
    return {{"nbr_algorithm", "leader"},
            {"nbr_ranks_per_node", "8"},
            {"nbr_leader_min_bytes", "0"},
            {"nbr_topo_file", std::string(NBR_SOURCE_DIR) + "/topo/frontier-mi250x.topo"}};
}

int count_of(int rank, int n) { return n == 0 ? 0 : n + (rank * 7) % 11; } // uneven, odd

void check_graph(const nbr_graph_t *g, const char *what)
{
    nbrtest::RankComm c(g, leader_info());
    if (!c.ready(what, "leader"))
        return;
    int rc = NBR_SUCCESS;
    const int me = world_rank(), indeg = (int)c.in.size();
    for (int n : {0, 1, 7, 1000, 65537}) {
        // allgather, blocking
        std::vector<int> send(n), got((size_t)n * indeg + 1, -1), want((size_t)n * indeg + 1, -1);
        nbrtest::fill_ints(send, me, 0);
        nbrtest::Mirror<int> dsend(send), dgot(got);
        dsend.to_device();
        dgot.to_device();
        EXPECT_EQ(nbr_neighbor_allgather(dsend.ptr(), n, MPI_INT, dgot.ptr(), n, MPI_INT, c.comm),
                  NBR_SUCCESS);
        dgot.to_host();
        MPI_Neighbor_allgather(send.data(), n, MPI_INT, want.data(), n, MPI_INT, c.comm);
        EXPECT_EQ(got, want) << what << ": allgather of " << n << " ints on rank " << me;
        // allgatherv with uneven counts, persistent, three runs
        std::vector<int> counts(indeg), displs(indeg);
        int total = 0;
        for (int i = 0; i < indeg; i++) {
            counts[i] = count_of(c.in[i], n);
            displs[i] = total;
            total += counts[i] + 2; // gaps stay untouched
        }
        std::vector<int> vsend(count_of(me, n)), vgot(total + 1, -1), vwant(total + 1, -1);
        nbr_request_t req = NBR_REQUEST_NULL;
        nbrtest::Mirror<int> dvsend(vsend), dvgot(vgot);
        dvgot.to_device();
        rc = nbr_neighbor_allgatherv_init(dvsend.ptr(), (int)vsend.size(), MPI_INT, dvgot.ptr(),
                                          counts.data(), displs.data(), MPI_INT, c.comm,
                                          MPI_INFO_NULL, &req);
        EXPECT_EQ(rc, NBR_SUCCESS);
        for (int round = 0; round < 3 && rc == NBR_SUCCESS; round++) {
            nbrtest::fill_ints(vsend, me, round);
            dvsend.to_device();
            EXPECT_EQ(nbr_start(&req), NBR_SUCCESS);
            EXPECT_EQ(nbr_wait(&req), NBR_SUCCESS);
            dvgot.to_host();
            MPI_Neighbor_allgatherv(vsend.data(), (int)vsend.size(), MPI_INT, vwant.data(),
                                    counts.data(), displs.data(), MPI_INT, c.comm);
            EXPECT_EQ(vgot, vwant) << what << ": allgatherv round " << round << ", n " << n;
        }
        if (req != NBR_REQUEST_NULL)
            nbr_request_free(&req);
    }
    // each block crossed to each remote node once
    nbr_counters_t counters;
    EXPECT_EQ(nbr_reset_counters(c.comm), NBR_SUCCESS);
    std::vector<int> send(1000), recv(1000 * (size_t)indeg + 1);
    EXPECT_EQ(nbr_neighbor_allgather(send.data(), 1000, MPI_INT, recv.data(), 1000, MPI_INT, c.comm),
              NBR_SUCCESS);
    EXPECT_EQ(nbr_get_counters(c.comm, &counters), NBR_SUCCESS);
    std::set<int> remote;
    for (int d : c.out)
        if (d / 8 != me / 8)
            remote.insert(d / 8);
    EXPECT_EQ(counters.bytes_inter_node, 4000u * remote.size()) << what << " rank " << me;
}

TEST_F(Leader, ErdosRenyiOnTwoFrontierNodes)
{
    for (double density : {0.2, 0.4, 0.8}) {
        nbr_graph_t g;
        nbr_graph_erdos_renyi(world_size(), density, 42, &g);
        check_graph(&g, ("rsg " + std::to_string(density)).c_str());
        nbr_graph_free(&g);
    }
}

TEST_F(Leader, MooreAndMultigraphs)
{
    nbr_graph_t g;
    nbr_graph_moore(world_size(), 2, 1, &g);
    check_graph(&g, "moore d2 r1");
    nbr_graph_free(&g);
    nbr_graph_random_multi(world_size(), 12, 5, &g);
    check_graph(&g, "multigraph");
    nbr_graph_free(&g);
}

} // namespace

int main(int argc, char **argv) { return nbrtest::run_main(argc, argv, false); }
