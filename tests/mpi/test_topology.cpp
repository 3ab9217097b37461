// Topology under MPI: 16 ranks as 2 virtual nodes of 8 GCDs on the stored
// Frontier model; every rank must agree on every rank's place.
#include "mpi_harness.h"

#include <nbrcoll.h>

#include <string>
#include <vector>

using nbrtest::all_ranks;
using nbrtest::world_rank;
using nbrtest::world_size;

namespace {

struct Topology : nbrtest::MpiTest {};

std::string frontier() { return std::string(NBR_SOURCE_DIR) + "/topo/frontier-mi250x.topo"; }

// A ring communicator with the given info keys (key, value pairs).
int make_ring(std::vector<std::pair<std::string, std::string>> keys, MPI_Comm *comm)
{
    int me = world_rank(), n = world_size();
    int left = (me + n - 1) % n, right = (me + 1) % n;
    MPI_Info info;
    MPI_Info_create(&info);
    for (auto &kv : keys)
        MPI_Info_set(info, kv.first.c_str(), kv.second.c_str());
    int rc = nbr_dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, MPI_UNWEIGHTED, 1, &right,
                                            MPI_UNWEIGHTED, info, 0, comm);
    MPI_Info_free(&info);
    return rc;
}

std::vector<int> flatten(const nbr_rank_place_t &p)
{
    return {p.node, p.local_rank, p.socket, p.numa, p.gpu, p.package, p.leader, p.peer_rank};
}

TEST_F(Topology, FrontierVirtualNodesAgreeOnEveryPlace)
{
    const int n = world_size();
    MPI_Comm comm = MPI_COMM_NULL;
    int rc = make_ring({{"nbr_topo_file", frontier()}, {"nbr_ranks_per_node", "8"}}, &comm);
    EXPECT_EQ(rc, NBR_SUCCESS) << nbr_error_string(rc);
    if (!all_ranks(rc == NBR_SUCCESS))
        return;
    std::vector<int> mine; // every rank's place as this rank sees it
    for (int r = 0; r < n; r++) {
        nbr_rank_place_t p;
        EXPECT_EQ(nbr_comm_place(comm, r, &p), NBR_SUCCESS);
        std::vector<int> f = flatten(p);
        mine.insert(mine.end(), f.begin(), f.end());
        // The Frontier model: GCD = local rank, packages (0,1) (2,3) ...,
        // even GCDs lead, the peer is the neighbouring GCD of the package.
        const int local = r % 8;
        EXPECT_EQ(p.node, r / 8) << "rank " << r;
        EXPECT_EQ(p.local_rank, local);
        EXPECT_EQ(p.gpu, local) << "rank " << r;
        EXPECT_EQ(p.leader, local % 2 == 0) << "rank " << r;
        EXPECT_EQ(p.peer_rank, r ^ 1) << "rank " << r;
        EXPECT_EQ(p.socket, r / 8) << "one socket per Frontier node";
        EXPECT_GE(p.numa, 0) << "the model gives each GCD a NUMA domain";
    }
    // Agreement: elementwise min and max over ranks are equal iff all agree.
    std::vector<int> low(mine.size()), high(mine.size());
    MPI_Allreduce(mine.data(), low.data(), (int)mine.size(), MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(mine.data(), high.data(), (int)mine.size(), MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(low, high) << "ranks disagree on the rank -> GCD / peer / leader map";
    // the collectives still work on it
    int got = -1, me = world_rank();
    EXPECT_EQ(nbr_neighbor_allgather(&me, 1, MPI_INT, &got, 1, MPI_INT, comm), NBR_SUCCESS);
    EXPECT_EQ(got, (me + n - 1) % n);
    MPI_Comm_free(&comm);
}

TEST_F(Topology, BrokenModelFileFailsOnEveryRank)
{
    MPI_Comm comm = MPI_COMM_NULL;
    int rc = make_ring({{"nbr_topo_file", "/nonexistent/model.topo"}}, &comm);
    EXPECT_EQ(rc, NBR_ERR_IO) << nbr_error_string(rc);
    EXPECT_EQ(comm, MPI_COMM_NULL);
    EXPECT_TRUE(all_ranks(rc == NBR_ERR_IO)) << "the error must reach every rank";
}

TEST_F(Topology, NoModelGivesAFlatNode)
{
    // This machine has no GPU: without a file the node is flat and nothing fails.
    MPI_Comm comm = MPI_COMM_NULL;
    int rc = make_ring({}, &comm);
    EXPECT_EQ(rc, NBR_SUCCESS) << nbr_error_string(rc);
    if (!all_ranks(rc == NBR_SUCCESS))
        return;
    nbr_rank_place_t p;
    EXPECT_EQ(nbr_comm_place(comm, world_rank(), &p), NBR_SUCCESS);
    EXPECT_EQ(p.gpu, -1);
    EXPECT_EQ(p.peer_rank, -1);
    EXPECT_EQ(nbr_comm_place(comm, world_size(), &p), NBR_ERR_RANK);
    MPI_Comm_free(&comm);
}

} // namespace

int main(int argc, char **argv) { return nbrtest::run_main(argc, argv, false); }
