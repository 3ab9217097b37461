// The device layer under MPI: buffers from nbr_mem_alloc, the node channel
// (IPC pulls through descriptor rings), host staging between nodes, and the
// counters that show which path the bytes took. Runs wherever a device
// backend is in use: NBR_DEVICE=emulate in CI, a GPU when one is lent.
// Without one every test is skipped (same decision on every rank).
#include <mpi.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "device/backend.h"
#include "base/graph_gen.h"
#include "mpi_harness.h"
#include "nbrcoll.h"
#include "test_memory.h"

using namespace nbrtest;

namespace {

// Every rank gets the same answer: the environment is the job's.
bool have_backend(std::string *why)
{
    const nbr_device_backend_t *backend = nullptr;
    const int rc = nbr_device_current(&backend);
    if (rc != NBR_SUCCESS || !backend) {
        *why = rc != NBR_SUCCESS ? nbr_error_string(rc) : "NBR_DEVICE finds no device";
        return false;
    }
    return true;
}

#define SKIP_WITHOUT_BACKEND()                                                   \
    do {                                                                         \
        std::string why_;                                                        \
        if (!all_ranks(have_backend(&why_)))                                     \
            GTEST_SKIP() << "no device backend: " << why_;                       \
    } while (0)

class DeviceLayer : public MpiTest {};

// A dist-graph communicator of an Erdős–Rényi graph, with nbrcoll's naive
// plan so that the expected counters follow from the graph alone.
struct GraphComm {
    nbr_graph_t g{};
    MPI_Comm comm = MPI_COMM_NULL;
    GraphComm(double density, uint64_t seed, const char *memory = nullptr)
    {
        const int P = world_size(), me = world_rank();
        EXPECT_EQ(nbr_graph_erdos_renyi(P, density, seed, &g), NBR_SUCCESS);
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "nbr_algorithm", "naive");
        if (memory)
            MPI_Info_set(info, "nbr_memory", memory);
        const int rc = nbr_dist_graph_create_adjacent(
            MPI_COMM_WORLD, nbr_graph_indegree(&g, me), nbr_graph_in(&g, me), MPI_UNWEIGHTED,
            nbr_graph_outdegree(&g, me), nbr_graph_out(&g, me), MPI_UNWEIGHTED, info, 0, &comm);
        EXPECT_EQ(rc, NBR_SUCCESS) << nbr_error_string(rc);
        MPI_Info_free(&info);
    }
    ~GraphComm()
    {
        if (comm != MPI_COMM_NULL)
            MPI_Comm_free(&comm);
        nbr_graph_free(&g);
    }
    int indeg() const { return nbr_graph_indegree(&g, world_rank()); }
    int outdeg() const { return nbr_graph_outdegree(&g, world_rank()); }
};

// Byte i of what rank r sends in call k.
uint8_t pattern(int r, int k, size_t i)
{
    return static_cast<uint8_t>(r * 131 + k * 17 + i * 7 + (i >> 8));
}

struct DeviceBuffers {
    size_t sbytes, rbytes;
    uint8_t *send = nullptr, *recv = nullptr;
    DeviceBuffers(size_t s, size_t r) : sbytes(s), rbytes(r)
    {
        send = static_cast<uint8_t *>(device_alloc(s));
        recv = static_cast<uint8_t *>(device_alloc(r));
    }
    ~DeviceBuffers()
    {
        device_free(send);
        device_free(recv);
    }
    void fill(int k)
    {
        std::vector<uint8_t> h(sbytes);
        for (size_t i = 0; i < sbytes; ++i)
            h[i] = pattern(world_rank(), k, i);
        device_copy(send, h.data(), sbytes);
        std::vector<uint8_t> z(rbytes, 0xEE);
        device_copy(recv, z.data(), rbytes);
    }
    // Every in-neighbor's block arrived whole.
    void check(const GraphComm &gc, int k, size_t block, const std::string &what)
    {
        std::vector<uint8_t> h(rbytes);
        device_copy(h.data(), recv, rbytes);
        const int *in = nbr_graph_in(&gc.g, world_rank());
        for (int i = 0; i < gc.indeg(); ++i)
            for (size_t b = 0; b < block; ++b)
                if (h[i * block + b] != pattern(in[i], k, b)) {
                    ADD_FAILURE() << what << ": call " << k << ", block " << i << " (from rank "
                                  << in[i] << ") byte " << b;
                    return;
                }
    }
};

std::vector<int> nodes_of(MPI_Comm comm)
{
    std::vector<int> node(world_size(), -1);
    for (int r = 0; r < world_size(); ++r) {
        nbr_rank_place_t place;
        EXPECT_EQ(nbr_comm_place(comm, r, &place), NBR_SUCCESS);
        node[r] = place.node;
    }
    return node;
}

TEST_F(DeviceLayer, CountersShowIpcPullsAndStaging)
{
    SKIP_WITHOUT_BACKEND();
    const int me = world_rank();
    const size_t block = 64 * 1024 + 3;  // odd: no 16-byte vector path for the tail
    GraphComm gc(0.5, 21);
    if (gc.comm == MPI_COMM_NULL)
        return;
    DeviceBuffers b(block, block * gc.indeg());
    nbr_reset_counters(gc.comm);
    b.fill(0);
    EXPECT_EQ(nbr_neighbor_allgather(b.send, static_cast<int>(block), MPI_BYTE, b.recv,
                                     static_cast<int>(block), MPI_BYTE, gc.comm),
              NBR_SUCCESS);
    b.check(gc, 0, block, "allgather");

    // Expected from the graph: intra-node in-edges are pulled, inter-node
    // edges are staged at both ends unless MPI takes device pointers.
    const std::vector<int> node = nodes_of(gc.comm);
    uint64_t pulled = 0, staged = 0;
    for (int i = 0; i < gc.indeg(); ++i) {
        const int src = nbr_graph_in(&gc.g, me)[i];
        if (src == me)
            continue;
        (node[src] == node[me] ? pulled : staged) += block;
    }
    for (int j = 0; j < gc.outdeg(); ++j) {
        const int dst = nbr_graph_out(&gc.g, me)[j];
        if (dst != me && node[dst] != node[me])
            staged += block;
    }
    const char *aware = std::getenv("NBR_GPU_AWARE_MPI");
    if (aware && std::strcmp(aware, "1") == 0)
        staged = 0;
    nbr_counters_t c{};
    EXPECT_EQ(nbr_get_counters(gc.comm, &c), NBR_SUCCESS);
    EXPECT_EQ(c.bytes_ipc_pulled, pulled) << "rank " << me;
    EXPECT_EQ(c.bytes_staged, staged) << "rank " << me;
    if (pulled + staged > 0) {
        EXPECT_GE(c.copy_batches, 1u) << "rank " << me << ": bytes moved without a copy";
    }
    EXPECT_TRUE(any_rank(c.bytes_ipc_pulled > 0) || world_size() == 1)
        << "no rank pulled anything: the test graph misses the node channel";
}

// More operations in flight than a ring has descriptors, waited for in
// reverse order: senders must wait for ring slots, and waiting on one
// request must progress the others.
TEST_F(DeviceLayer, ManyOperationsInFlightWaitedInReverse)
{
    SKIP_WITHOUT_BACKEND();
    constexpr int kOps = 100;  // a ring holds 32 descriptors per pair
    const size_t block = 40;
    GraphComm gc(0.6, 22);
    if (gc.comm == MPI_COMM_NULL)
        return;
    std::vector<DeviceBuffers *> bufs;
    std::vector<nbr_request_t> reqs(kOps, NBR_REQUEST_NULL);
    for (int k = 0; k < kOps; ++k) {
        bufs.push_back(new DeviceBuffers(block, block * gc.indeg()));
        bufs[k]->fill(k);
        EXPECT_EQ(nbr_neighbor_iallgather(bufs[k]->send, static_cast<int>(block), MPI_BYTE,
                                          bufs[k]->recv, static_cast<int>(block), MPI_BYTE,
                                          gc.comm, &reqs[k]),
                  NBR_SUCCESS);
    }
    for (int k = kOps - 1; k >= 0; --k)
        EXPECT_EQ(nbr_wait(&reqs[k]), NBR_SUCCESS) << "operation " << k;
    for (int k = 0; k < kOps; ++k) {
        bufs[k]->check(gc, k, block, "iallgather");
        delete bufs[k];
    }
}

// Persistent alltoallv: the same request started many times, new data
// each time (IPC mappings opened once, reused).
TEST_F(DeviceLayer, PersistentAlltoallvRestarts)
{
    SKIP_WITHOUT_BACKEND();
    const int me = world_rank();
    GraphComm gc(0.5, 23);
    if (gc.comm == MPI_COMM_NULL)
        return;
    const int outdeg = gc.outdeg(), indeg = gc.indeg();
    // edge (src -> dst): 1000 + 37 * ((src + 3 * dst) % 11) bytes
    auto edge_bytes = [](int s, int d) { return 1000 + 37 * ((s + 3 * d) % 11); };
    std::vector<int> sc(outdeg), sd(outdeg), rc(indeg), rd(indeg);
    int total = 0;
    for (int j = 0; j < outdeg; ++j) {
        sc[j] = edge_bytes(me, nbr_graph_out(&gc.g, me)[j]);
        sd[j] = total;
        total += sc[j];
    }
    int rtotal = 0;
    for (int i = 0; i < indeg; ++i) {
        rc[i] = edge_bytes(nbr_graph_in(&gc.g, me)[i], me);
        rd[i] = rtotal;
        rtotal += rc[i];
    }
    uint8_t *send = static_cast<uint8_t *>(device_alloc(total + 1));
    uint8_t *recv = static_cast<uint8_t *>(device_alloc(rtotal + 1));
    nbr_request_t req = NBR_REQUEST_NULL;
    EXPECT_EQ(nbr_neighbor_alltoallv_init(send, sc.data(), sd.data(), MPI_BYTE, recv, rc.data(),
                                          rd.data(), MPI_BYTE, gc.comm, MPI_INFO_NULL, &req),
              NBR_SUCCESS);
    for (int run = 0; run < 5 && req != NBR_REQUEST_NULL; ++run) {
        // block j carries (me, destination, run) in every byte pattern
        std::vector<uint8_t> h(total + 1);
        for (int j = 0; j < outdeg; ++j)
            for (int b = 0; b < sc[j]; ++b)
                h[sd[j] + b] = pattern(me * 7 + nbr_graph_out(&gc.g, me)[j], run, b);
        device_copy(send, h.data(), h.size());
        EXPECT_EQ(nbr_start(&req), NBR_SUCCESS);
        EXPECT_EQ(nbr_wait(&req), NBR_SUCCESS);
        std::vector<uint8_t> got(rtotal + 1);
        device_copy(got.data(), recv, got.size());
        for (int i = 0; i < indeg; ++i) {
            const int src = nbr_graph_in(&gc.g, me)[i];
            for (int b = 0; b < rc[i]; ++b)
                if (got[rd[i] + b] != pattern(src * 7 + me, run, b)) {
                    ADD_FAILURE() << "run " << run << " block from " << src << " byte " << b;
                    break;
                }
        }
    }
    EXPECT_EQ(nbr_request_free(&req), NBR_SUCCESS);
    device_free(send);
    device_free(recv);
}

// allgatherv where receivers expect other lengths than their senders send,
// several chunks longer or shorter (also exact multiples of a chunk, and
// one byte off), on device and on host buffers: exactly the ranks with a
// wrong in-edge report NBR_ERR_TYPE_MISMATCH, nobody hangs, and nothing is
// left behind: the next call on the communicator is correct everywhere.
TEST_F(DeviceLayer, MessagesOfOtherLengthsFailWithoutHanging)
{
    SKIP_WITHOUT_BACKEND();
    const int me = world_rank();
    const char *env = std::getenv("NBR_STAGING_CHUNK");
    const int chunk = env ? std::atoi(env) : (1 << 20);
    // dense enough that a few ranks still have a faulty edge
    GraphComm gc(world_size() < 4 ? 1.0 : 0.6, 26);
    if (gc.comm == MPI_COMM_NULL)
        return;
    // what rank r sends: 3 to 5 chunks, every other one an exact multiple
    auto sent = [chunk](int r) { return (3 + r % 3) * chunk + (r % 2 ? 0 : 123); };
    // what rank d expects from rank s in the faulty call
    auto expected = [&](int s, int d) {
        if (s == d)
            return sent(s);
        switch ((s * 7 + d * 3) % 5) {
        case 1: return sent(s) + 3 * chunk;  // the sender has fewer chunks
        case 2: return sent(s) - 2 * chunk;  // the sender has more
        case 3: return sent(s) + 1;
        default: return sent(s);
        }
    };
    const int *in = nbr_graph_in(&gc.g, me);
    // a longer message than expected is the error; a shorter one fills
    // the slot's front (docs/reliability.md, "Short and long blocks")
    bool faulty_in_edge = false;
    for (int i = 0; i < gc.indeg(); ++i)
        faulty_in_edge |= expected(in[i], me) < sent(in[i]);
    EXPECT_TRUE(any_rank(faulty_in_edge) || world_size() == 1)
        << "the test graph has no faulty edge";
    for (bool on_device : {true, false}) {
        const std::string where = on_device ? "device buffers" : "host buffers";
        for (bool faulty : {true, false}) {
            std::vector<int> counts(gc.indeg()), displs(gc.indeg());
            int rtotal = 0;
            for (int i = 0; i < gc.indeg(); ++i) {
                counts[i] = faulty ? expected(in[i], me) : sent(in[i]);
                displs[i] = rtotal;
                rtotal += counts[i];
            }
            std::vector<uint8_t> h(sent(me)), got(rtotal + 1, 0xEE);
            for (size_t b = 0; b < h.size(); ++b)
                h[b] = pattern(me, faulty, b);
            uint8_t *send = h.data(), *recv = got.data();
            if (on_device) {
                send = static_cast<uint8_t *>(device_alloc(h.size()));
                recv = static_cast<uint8_t *>(device_alloc(got.size()));
                device_copy(send, h.data(), h.size());
                device_copy(recv, got.data(), got.size()); /* what a short block leaves */
            }
            const int rc = nbr_neighbor_allgatherv(send, sent(me), MPI_BYTE, recv, counts.data(),
                                                   displs.data(), MPI_BYTE, gc.comm);
            if (on_device) {
                device_copy(got.data(), recv, got.size());
                device_free(send);
                device_free(recv);
            }
            if (faulty) {
                EXPECT_EQ(rc, faulty_in_edge ? NBR_ERR_TYPE_MISMATCH : NBR_SUCCESS)
                    << where << ", rank " << me << ": " << nbr_error_string(rc);
                for (int i = 0; rc == NBR_SUCCESS && i < gc.indeg(); ++i)
                    for (int b = 0; b < counts[i]; ++b) {
                        const uint8_t want = b < sent(in[i]) ? pattern(in[i], true, b) : 0xEE;
                        if (got[displs[i] + b] != want) {
                            ADD_FAILURE() << where << ": short block from rank " << in[i]
                                          << ", byte " << b << " of a slot of " << counts[i];
                            break;
                        }
                    }
                continue;
            }
            EXPECT_EQ(rc, NBR_SUCCESS) << where << ", the correct call after the faulty one";
            for (int i = 0; i < gc.indeg(); ++i)
                for (int b = 0; b < counts[i]; ++b)
                    if (got[displs[i] + b] != pattern(in[i], false, b)) {
                        ADD_FAILURE() << where << ": block from rank " << in[i] << " byte " << b;
                        break;
                    }
        }
    }
}

// Datatypes with gaps cannot be packed from device memory: a clear error
// on every rank, before any communication.
TEST_F(DeviceLayer, GappedDatatypeOnDeviceIsRefused)
{
    SKIP_WITHOUT_BACKEND();
    GraphComm gc(0.5, 24);
    if (gc.comm == MPI_COMM_NULL)
        return;
    MPI_Datatype vec;
    MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    void *send = device_alloc(64), *recv = device_alloc(64 * (gc.indeg() + 1));
    EXPECT_EQ(nbr_neighbor_allgather(send, 1, vec, recv, 1, vec, gc.comm), NBR_ERR_UNSUPPORTED);
    MPI_Type_free(&vec);
    device_free(send);
    device_free(recv);
}

// nbr_memory=host turns the layer off: same results over plain MPI, no
// device counters (host buffers: they work with the layer off everywhere).
TEST_F(DeviceLayer, MemoryHostTurnsTheLayerOff)
{
    SKIP_WITHOUT_BACKEND();
    const int me = world_rank();
    const int block = 1000;
    GraphComm gc(0.5, 25, "host");
    if (gc.comm == MPI_COMM_NULL)
        return;
    std::vector<uint8_t> send(block), recv((size_t)block * gc.indeg() + 1, 0xEE);
    for (int i = 0; i < block; ++i)
        send[i] = pattern(me, 3, (size_t)i);
    EXPECT_EQ(nbr_neighbor_allgather(send.data(), block, MPI_BYTE, recv.data(), block, MPI_BYTE,
                                     gc.comm),
              NBR_SUCCESS);
    const int *in = nbr_graph_in(&gc.g, me);
    for (int i = 0; i < gc.indeg(); ++i)
        for (int b = 0; b < block; ++b)
            if (recv[(size_t)i * block + b] != pattern(in[i], 3, (size_t)b)) {
                ADD_FAILURE() << "block " << i << " (from rank " << in[i] << ") byte " << b;
                break;
            }
    nbr_counters_t c{};
    EXPECT_EQ(nbr_get_counters(gc.comm, &c), NBR_SUCCESS);
    EXPECT_EQ(c.bytes_ipc_pulled + c.bytes_staged + c.copy_batches, 0u);
}

TEST_F(DeviceLayer, MemAllocArguments)
{
    SKIP_WITHOUT_BACKEND();
    void *p = reinterpret_cast<void *>(0x1);
    EXPECT_EQ(nbr_mem_alloc(nullptr, 8), NBR_ERR_ARG);
    EXPECT_EQ(nbr_mem_alloc(&p, 0), NBR_SUCCESS);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(nbr_mem_free(nullptr), NBR_SUCCESS);
    int on_stack = 0;
    EXPECT_NE(nbr_mem_free(&on_stack), NBR_SUCCESS);
    EXPECT_EQ(nbr_mem_alloc(&p, 100), NBR_SUCCESS);
    const nbr_device_backend_t *backend = nullptr;
    nbr_device_current(&backend);
    nbr_mem_kind_t kind = NBR_MEM_HOST;
    int device = -1;
    ASSERT_NE(backend, nullptr);
    EXPECT_EQ(backend->pointer_kind(static_cast<char *>(p) + 50, &kind, &device), NBR_SUCCESS);
    EXPECT_EQ(kind, NBR_MEM_DEVICE);
    EXPECT_EQ(backend->pointer_kind(&on_stack, &kind, &device), NBR_SUCCESS);
    EXPECT_EQ(kind, NBR_MEM_HOST);
    EXPECT_EQ(nbr_mem_free(p), NBR_SUCCESS);
}

}  // namespace

int main(int argc, char **argv) { return nbrtest::run_main(argc, argv, false); }
