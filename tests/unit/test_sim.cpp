// The plan simulator on small plans whose times are computed by hand, then
// on whole jobs of every algorithm.
#include "plan_fixture.h"

extern "C" {
#include "alg/leader/leader_pattern.h"
#include "plan/sim.h"
#include "topo/machine.h"
}

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

// Round numbers, so the expected times below are easy to check by hand.
nbr_machine_t test_machine()
{
    nbr_machine_t m{};
    snprintf(m.name, sizeof m.name, "test");
    const double us = 1e-6, gbs = 1e9;
    m.path[NBR_PATH_COPY] = {0.5 * us, 10 * gbs, 0, 0, 0};
    m.path[NBR_PATH_DEVICE] = {4 * us, 1000 * gbs, 0, 0, 0};
    m.path[NBR_PATH_SOCKET] = {1 * us, 5 * gbs, 0, 0, 0};
    m.path[NBR_PATH_NODE] = {2 * us, 4 * gbs, 0, 0, 0};
    m.path[NBR_PATH_GPU] = {8 * us, 50 * gbs, 0, 0, 0};
    m.path[NBR_PATH_NETWORK] = {10 * us, 1 * gbs, 0, 0, 0};
    m.nics = 1;
    m.nic_bandwidth = 1 * gbs;
    return m;
}

// Plans written op by op: phases[r][p] lists rank r's ops of phase p.
struct Op {
    nbr_op_kind_t kind;
    int peer;
    size_t bytes;
    int tag = 0;
};

struct Plans {
    std::vector<nbr_plan_t> plans;
    explicit Plans(const std::vector<std::vector<std::vector<Op>>> &phases,
                   const nbr_locality_t *loc = nullptr)
        : plans(phases.size())
    {
        int n = (int)phases.size();
        for (int r = 0; r < n; r++) {
            nbr_plan_t *plan = &plans[r];
            nbr_plan_init(plan, r, n, NBR_COLL_ALLGATHER, "hand");
            size_t offset = 0;
            for (const auto &phase : phases[r]) {
                EXPECT_EQ(nbr_plan_begin_phase(plan), NBR_SUCCESS);
                for (const Op &op : phase) {
                    int rc = op.kind == NBR_OP_SEND
                                 ? nbr_plan_add_send(plan, op.peer, op.tag, NBR_BUF_SEND, 0, op.bytes)
                             : op.kind == NBR_OP_RECV
                                 ? nbr_plan_add_recv(plan, op.peer, op.tag, NBR_BUF_RECV, offset,
                                                     op.bytes)
                                 : nbr_plan_add_copy(plan, NBR_BUF_RECV, offset, NBR_BUF_SEND, 0,
                                                     op.bytes);
                    EXPECT_EQ(rc, NBR_SUCCESS);
                    offset += op.bytes;
                }
            }
            EXPECT_EQ(nbr_plan_seal(plan, loc ? loc->node_of : nullptr,
                                    loc ? loc->socket_of : nullptr),
                      NBR_SUCCESS);
        }
    }
    ~Plans()
    {
        for (auto &p : plans)
            nbr_plan_free(&p);
    }
};

struct Simulated {
    nbr_sim_result_t result{};
    std::vector<double> ends;
    std::string message;
    int rc;
    Simulated(const Plans &p, const nbr_locality_t *loc, const nbr_machine_t &m, int device = 0)
        : ends(p.plans.size())
    {
        nbr_sim_input_t in{(int)p.plans.size(), p.plans.data(), loc, &m, device};
        char text[256];
        rc = nbr_simulate(&in, &result, ends.data(), text, sizeof text);
        message = text;
    }
};

const double us = 1e-6;

// Ranks 0-3 on nodes {0, 1} and {2, 3}: rank 0 sends 5000 B to rank 1 on
// its socket (1 us + 1 us on test_machine), rank 1 forwards them to rank
// 2 on the other node in a second phase (10 us + 5 us); rank 3's phases
// as given.
std::vector<std::vector<std::vector<Op>>> relay_phases(std::vector<std::vector<Op>> rank3 = {})
{
    return {{{{NBR_OP_SEND, 1, 5000}}},
            {{{NBR_OP_RECV, 0, 5000}}, {{NBR_OP_SEND, 2, 5000}}},
            {{{NBR_OP_RECV, 1, 5000}}},
            rank3};
}
const double relay_seconds = (1 * us + 5000 / 5e9) + (10 * us + 5000 / 1e9);

TEST(Simulator, OneMessageBetweenNodes)
{
    nbr_machine_t m = test_machine();
    Machine two(nullptr, 2, 1); // ranks 0 and 1 on nodes 0 and 1
    Plans p({{{{NBR_OP_SEND, 1, 1000}}}, {{{NBR_OP_RECV, 0, 1000}}}}, &two.loc);
    Simulated run(p, &two.loc, m);
    ASSERT_EQ(run.rc, NBR_SUCCESS) << run.message;
    // alpha 10 us + 1000 B at 1 GB/s (1 us); both ends complete together
    EXPECT_NEAR(run.result.seconds, 11 * us, 1e-12);
    EXPECT_NEAR(run.ends[0], 11 * us, 1e-12);
    EXPECT_NEAR(run.ends[1], 11 * us, 1e-12);
    EXPECT_EQ(run.result.messages[NBR_PATH_NETWORK], 1u);
    EXPECT_EQ(run.result.bytes[NBR_PATH_NETWORK], 1000u);
    EXPECT_EQ(run.result.max_rank_network_messages, 1u);
}

TEST(Simulator, PathsByPlace)
{
    nbr_machine_t m = test_machine();
    nbr_locality_t loc{};
    ASSERT_EQ(nbr_locality_virtual(8, 4, 2, &loc), NBR_SUCCESS); // 2 nodes x 2 sockets x 2
    nbr_sim_input_t in{8, nullptr, &loc, &m, 0};
    EXPECT_EQ(nbr_sim_path(&in, 0, 0), NBR_PATH_COPY);
    EXPECT_EQ(nbr_sim_path(&in, 0, 1), NBR_PATH_SOCKET);
    EXPECT_EQ(nbr_sim_path(&in, 0, 2), NBR_PATH_NODE);
    EXPECT_EQ(nbr_sim_path(&in, 0, 4), NBR_PATH_NETWORK);
    in.device_buffers = 1;
    EXPECT_EQ(nbr_sim_path(&in, 0, 0), NBR_PATH_DEVICE);
    EXPECT_EQ(nbr_sim_path(&in, 0, 2), NBR_PATH_GPU);
    EXPECT_EQ(nbr_sim_path(&in, 3, 4), NBR_PATH_NETWORK);
    in.locality = nullptr; // one node, one socket
    in.device_buffers = 0;
    EXPECT_EQ(nbr_sim_path(&in, 0, 7), NBR_PATH_SOCKET);
    nbr_locality_free(&loc);
}

// Ranks 0-3 (node 0) each send 1 MB to rank r + 4 (node 1) at once.
std::vector<std::vector<std::vector<Op>>> four_streams()
{
    std::vector<std::vector<std::vector<Op>>> phases(8);
    for (int r = 0; r < 4; r++) {
        phases[r] = {{{NBR_OP_SEND, r + 4, 1000000}}};
        phases[r + 4] = {{{NBR_OP_RECV, r, 1000000}}};
    }
    return phases;
}

// On nodes {0, 1} and {2, 3}: 0 -> 2 and 1 -> 3, 1000 B each.
std::vector<std::vector<std::vector<Op>>> two_crossings()
{
    return {{{{NBR_OP_SEND, 2, 1000}}},
            {{{NBR_OP_SEND, 3, 1000}}},
            {{{NBR_OP_RECV, 0, 1000}}},
            {{{NBR_OP_RECV, 1, 1000}}}};
}

// Four streams from node 0 to node 1: one NIC per node shares its rate
// among them.
TEST(Simulator, ContendedNodeLink)
{
    nbr_machine_t m = test_machine();
    Machine two(nullptr, 8, 4);
    Plans p(four_streams(), &two.loc);
    Simulated run(p, &two.loc, m);
    ASSERT_EQ(run.rc, NBR_SUCCESS) << run.message;
    // each rank's own port: 10 us + 1 ms; the NIC carries 4 ms of bytes
    // after the start-up, a quarter of its rate to each: all four arrive
    // at 10 us + 4 ms (first come, first served would have let the first
    // arrive at 10 us + 1 ms)
    EXPECT_NEAR(run.result.seconds, 10 * us + 4e-3, 1e-9);
    for (int k = 0; k < 8; k++)
        EXPECT_NEAR(run.ends[k], 10 * us + 4e-3, 1e-9) << k;
    // two NICs per node: two streams at once, 2 ms
    m.nics = 2;
    Simulated two_nics(p, &two.loc, m);
    ASSERT_EQ(two_nics.rc, NBR_SUCCESS);
    EXPECT_NEAR(two_nics.result.seconds, 10 * us + 2e-3, 1e-9);
}

// A NIC shares its rate fairly among the messages in it: a short one is
// not held behind a long one, and each side's interface counts, out and in.
TEST(Simulator, InterfacesShareTheirRateFairly)
{
    nbr_machine_t m = test_machine();
    Machine three(nullptr, 6, 2); // nodes {0, 1}, {2, 3}, {4, 5}
    // 0 -> 2 (1 MB) and 1 -> 3 (250 kB) at once, out of node 0: half the
    // rate each until the short one is done at 0.5 ms, then the long one
    // alone: 1 MB in 1.25 ms
    Plans p({{{{NBR_OP_SEND, 2, 1000000}}},
             {{{NBR_OP_SEND, 3, 250000}}},
             {{{NBR_OP_RECV, 0, 1000000}}},
             {{{NBR_OP_RECV, 1, 250000}}},
             {},
             {}},
            &three.loc);
    Simulated run(p, &three.loc, m);
    ASSERT_EQ(run.rc, NBR_SUCCESS) << run.message;
    EXPECT_NEAR(run.ends[3], 10 * us + 0.5e-3, 1e-9);
    EXPECT_NEAR(run.ends[2], 10 * us + 1.25e-3, 1e-9);
    // 0 -> 4 and 2 -> 5 (1 MB each), out of two nodes into one: node 2's
    // interface in carries both, 2 ms
    Plans q({{{{NBR_OP_SEND, 4, 1000000}}},
             {},
             {{{NBR_OP_SEND, 5, 1000000}}},
             {},
             {{{NBR_OP_RECV, 0, 1000000}}},
             {{{NBR_OP_RECV, 2, 1000000}}}},
            &three.loc);
    Simulated into_one(q, &three.loc, m);
    ASSERT_EQ(into_one.rc, NBR_SUCCESS) << into_one.message;
    EXPECT_NEAR(into_one.ends[4], 10 * us + 2e-3, 1e-9);
    EXPECT_NEAR(into_one.ends[5], 10 * us + 2e-3, 1e-9);
    // a message that comes later takes its share from then on: 1 -> 3
    // (1 MB) is sent after a local copy of 5 MB (0.5 us + 500 us), at
    // 510.5 us; 0 -> 2 (1 MB, sent at 10 us) has had 500.5 us alone and
    // needs 499.5 us more at half the rate: it arrives at 1509.5 us; the
    // other has then had 499.5 us and ends alone at 2010 us (2 ms of bytes
    // from 10 us)
    Plans r({{{{NBR_OP_SEND, 2, 1000000}}},
             {{{NBR_OP_COPY, -1, 5000000}}, {{NBR_OP_SEND, 3, 1000000}}},
             {{{NBR_OP_RECV, 0, 1000000}}},
             {{{NBR_OP_RECV, 1, 1000000}}},
             {},
             {}},
            &three.loc);
    Simulated later(r, &three.loc, m);
    ASSERT_EQ(later.rc, NBR_SUCCESS) << later.message;
    EXPECT_NEAR(later.ends[2], 1509.5 * us, 1e-9);
    EXPECT_NEAR(later.ends[3], 2010 * us, 1e-9);
}

// An interface with a burst (machine.h, burst_bytes) passes the first
// bytes sent through it in a call at once, the rest at its rate.
TEST(Simulator, InterfacesPassABurstThenTheirRate)
{
    nbr_machine_t m = test_machine();
    Machine two(nullptr, 8, 4);
    Plans p(four_streams(), &two.loc);
    m.nic_burst = 1500000;
    Simulated run(p, &two.loc, m);
    ASSERT_EQ(run.rc, NBR_SUCCESS) << run.message;
    // sent in rank order at 10 us: rank 0's 1 MB passes on the burst (its
    // own port's 1 ms of bytes is all it waits), rank 1's first 0.5 MB
    // too; then 0.5, 1 and 1 ms of bytes share the rate three ways (rank 1
    // through at 1.5 ms) and the last two two ways (0.5 ms each, 1 ms).
    // Without the burst all four took 4 ms (ContendedNodeLink).
    EXPECT_NEAR(run.ends[4], 1010 * us, 1e-9);
    EXPECT_NEAR(run.ends[5], 1510 * us, 1e-9);
    EXPECT_NEAR(run.ends[6], 2510 * us, 1e-9);
    EXPECT_NEAR(run.ends[7], 2510 * us, 1e-9);
}

// Every rank's end time of a job that must simulate.
std::vector<double> ends_of(const Plans &p, const nbr_locality_t *loc, const nbr_machine_t &m)
{
    Simulated run(p, loc, m);
    EXPECT_EQ(run.rc, NBR_SUCCESS) << run.message;
    return run.ends;
}

// The cores' network rate (machine.h) holds back messages sent by
// rendezvous, and only their bytes past the sender's interface's burst:
// messages up to eager_bytes and bytes that pass on a burst take no core.
TEST(Simulator, EagerMessagesAndBurstsTakeNoCore)
{
    nbr_machine_t m = test_machine();
    Machine two(nullptr, 4, 2); // nodes {0, 1} and {2, 3}
    Plans q(two_crossings(), &two.loc);
    m.cores = 1;
    m.cores_per_job = 1;
    m.core_network_bandwidth = 0.05e9; // 1000 B: 20 us of the job's one core
    auto ends = [&]() { return ends_of(q, &two.loc, m); };
    std::vector<double> e = ends();
    EXPECT_NEAR(e[2], 20 * us, 1e-12) << "as in SharedCoresQueueHostBytes";
    EXPECT_NEAR(e[3], 40 * us, 1e-12);
    m.core_network_eager = 1000; // both eager: the wire's pace, 10 us + 2 x 1 us
    e = ends();
    EXPECT_NEAR(e[2], 12 * us, 1e-12);
    EXPECT_NEAR(e[3], 12 * us, 1e-12);
    m.core_network_eager = 999; // one byte short: by rendezvous again
    e = ends();
    EXPECT_NEAR(e[3], 40 * us, 1e-12);
    // a burst of 1000 B passes rank 0's message whole (its port's 10 us +
    // 1 us is all); rank 1's finds it spent and takes the core first
    m.core_network_eager = 0;
    m.nic_burst = 1000;
    e = ends();
    EXPECT_NEAR(e[2], 11 * us, 1e-12);
    EXPECT_NEAR(e[3], 20 * us, 1e-12);
}

// A lone pair (machine.h, pair_gbytes_per_s): a rank whose messages between
// nodes in a phase all go to and come from one peer moves their first
// pair_after_bytes at pair_first_gbytes_per_s (or the cores' network rate)
// and the rest at the pair rate; a rank that sends one way, or to one peer
// and takes from another, does not.
TEST(Simulator, LonePairsTakeThePairRate)
{
    nbr_machine_t m = test_machine();
    Machine two(nullptr, 4, 2); // nodes {0, 1} and {2, 3}
    m.cores = 2;
    m.cores_per_job = 1;
    m.core_network_bandwidth = 0.05e9; // 1000 B: 20 us of a core
    m.core_pair_bandwidth = 0.025e9;
    m.core_pair_after = 400;
    // 0 <-> 2 both ways, 1 -> 3 one way; rank 1 also sends inside its node
    // to rank 0, which the pair does not count
    Plans p({{{{NBR_OP_SEND, 2, 1000}, {NBR_OP_RECV, 2, 1000}, {NBR_OP_RECV, 1, 10}}},
             {{{NBR_OP_SEND, 3, 1000}, {NBR_OP_SEND, 0, 10}}},
             {{{NBR_OP_SEND, 0, 1000}, {NBR_OP_RECV, 0, 1000}}},
             {{{NBR_OP_RECV, 1, 1000}}}},
            &two.loc);
    std::vector<double> e = ends_of(p, &two.loc, m);
    // the pair's messages: 400 B at 0.05 GB/s (8 us) + 600 B at 0.025 (24
    // us), queued on the two cores behind rank 1's 20 us (first come:
    // ranks 0 and 1 issue at 0; rank 2's waits for the first free core)
    EXPECT_NEAR(e[3], 20 * us, 1e-12) << "one way: the cores' rate";
    EXPECT_NEAR(e[0], 52 * us, 1e-12) << "rank 2's 32 us after rank 1's 20";
    EXPECT_NEAR(e[2], 52 * us, 1e-12);
    m.core_pair_after = 1000; // the whole message before the pair rate
    e = ends_of(p, &two.loc, m);
    EXPECT_NEAR(e[0], 40 * us, 1e-12);
    // the first bytes at a rate of their own: 400 B at 0.1 GB/s (4 us) +
    // 600 B at 0.025 (24 us), after rank 1's 20 us
    m.core_pair_after = 400;
    m.core_pair_first_bandwidth = 0.1e9;
    e = ends_of(p, &two.loc, m);
    EXPECT_NEAR(e[0], 48 * us, 1e-12);
    EXPECT_NEAR(e[3], 20 * us, 1e-12) << "one way: still the cores' rate";
    m.core_pair_first_bandwidth = 0;
    m.core_pair_after = 0;
    m.core_pair_bandwidth = 0; // no pair rate: as any message
    e = ends_of(p, &two.loc, m);
    EXPECT_NEAR(e[0], 40 * us, 1e-12);
    // rank 0 sends to 2 but takes from 3: not a pair
    m.core_pair_bandwidth = 0.025e9;
    Plans q({{{{NBR_OP_SEND, 2, 1000}, {NBR_OP_RECV, 3, 1000}}},
             {{}},
             {{{NBR_OP_RECV, 0, 1000}}},
             {{{NBR_OP_SEND, 0, 1000}}}},
            &two.loc);
    e = ends_of(q, &two.loc, m);
    EXPECT_NEAR(e[2], 20 * us, 1e-12);
    EXPECT_NEAR(e[0], 20 * us, 1e-12);
}

// With a burst rate (machine.h, burst_gbytes_per_s) the bytes that pass on
// both interfaces' bursts go at that rate on the sender's port and in
// flight, the rest at the path's.
TEST(Simulator, BurstBytesTakeTheBurstRate)
{
    nbr_machine_t m = test_machine();
    Machine two(nullptr, 4, 2); // nodes {0, 1} and {2, 3}
    Plans q(two_crossings(), &two.loc);
    m.nic_burst = 1500;
    auto ends = [&]() { return ends_of(q, &two.loc, m); };
    std::vector<double> e = ends();
    EXPECT_NEAR(e[2], 11 * us, 1e-12) << "10 us + 1000 B at the path's 1 GB/s";
    EXPECT_NEAR(e[3], 11 * us, 1e-12);
    m.nic_burst_bandwidth = 10e9;
    e = ends();
    EXPECT_NEAR(e[2], 10.1 * us, 1e-12) << "all 1000 B on the burst, at 10 GB/s";
    // rank 1's: 500 B left on both bursts (0.05 us), 500 B at 1 GB/s
    EXPECT_NEAR(e[3], 10.55 * us, 1e-12);
    m.nic_burst = 0;
    e = ends();
    // no burst: the rate has nothing to pass, and the two share the
    // interface out of node 0 (2 us of bytes, then the flight)
    EXPECT_NEAR(e[2], 12 * us, 1e-12);
    EXPECT_NEAR(e[3], 12 * us, 1e-12);
}

// Host-memory bytes (messages inside a node, local copies) wait for a free
// core when the ranks sharing the cores outnumber them; start-ups and
// network messages do not.
TEST(Simulator, SharedCoresQueueHostBytes)
{
    nbr_machine_t m = test_machine();
    Machine two(nullptr, 4, 2); // nodes {0, 1} and {2, 3}
    // 0 -> 1 and 2 -> 3 inside their nodes: 1 us + 10000 B at 5 GB/s (2 us)
    Plans p({{{{NBR_OP_SEND, 1, 10000}}},
             {{{NBR_OP_RECV, 0, 10000}}},
             {{{NBR_OP_SEND, 3, 10000}}},
             {{{NBR_OP_RECV, 2, 10000}}}},
            &two.loc);
    // every rank's end, and the job's (the last of them)
    auto ends = [&](const Plans &plans) {
        Simulated run(plans, &two.loc, m);
        EXPECT_EQ(run.rc, NBR_SUCCESS) << run.message;
        return run.ends;
    };
    auto last = [](const std::vector<double> &e) { return *std::max_element(e.begin(), e.end()); };
    const double sent = 3 * us;
    EXPECT_NEAR(last(ends(p)), sent, 1e-12) << "no cores line";
    m.cores = 1;
    EXPECT_NEAR(last(ends(p)), sent, 1e-12) << "one core per node of two: the nodes do not meet";
    m.cores_per_job = 1;
    std::vector<double> job = ends(p);
    EXPECT_NEAR(job[1], sent, 1e-12);
    EXPECT_NEAR(job[3], 2 * us + sent, 1e-12) << "one core for the job: rank 2's bytes wait 2 us";
    m.cores = 4;
    EXPECT_NEAR(last(ends(p)), sent, 1e-12) << "as many cores as ranks: nobody waits";
    // network bytes are the NICs', not the cores': 0 -> 2 and 1 -> 3
    m.cores = 1;
    Plans q(two_crossings(), &two.loc);
    std::vector<double> net = ends(q);
    EXPECT_NEAR(net[2], 12 * us, 1e-12); // 10 us + 2 x 1 us on the shared NIC only
    EXPECT_NEAR(net[3], 12 * us, 1e-12);
    // unless the cores move network bytes too: 1000 B at 0.05 GB/s is 20 us
    // of the job's one core, rank 1's after rank 0's (no flight time left:
    // without overhead_us the start-up is all the sender's)
    m.core_network_bandwidth = 0.05e9;
    net = ends(q);
    EXPECT_NEAR(net[2], 20 * us, 1e-12);
    EXPECT_NEAR(net[3], 40 * us, 1e-12);
    m.cores = 2;
    net = ends(q);
    EXPECT_NEAR(net[3], 20 * us, 1e-12) << "a core each: side by side";
    m.core_network_bandwidth = 1e9; // faster than the wire: the wire's pace
    net = ends(q);
    EXPECT_NEAR(net[3], 12 * us, 1e-12);
    m.core_network_bandwidth = 0;
    m.cores = 1;
    // a local copy queues as well: two ranks of one node, one core
    m.cores_per_job = 0;
    Plans c({{{{NBR_OP_COPY, -1, 10000}}}, {{{NBR_OP_COPY, -1, 10000}}}, {}, {}}, &two.loc);
    std::vector<double> copies = ends(c);
    EXPECT_NEAR(copies[0], 1.5 * us, 1e-12); // 0.5 us + 10000 B at 10 GB/s
    EXPECT_NEAR(copies[1], 3 * us, 1e-12);
}

// Where ranks outnumber their cores, every message's hand-off takes core
// time before it goes (machine.h, message_us), in a queue of its own: the
// hand-offs wait for each other, not for another rank's byte time.
TEST(Simulator, HandoffsTakeTurnsOnSharedCores)
{
    nbr_machine_t m = test_machine();
    Machine two(nullptr, 4, 2); // nodes {0, 1} and {2, 3}
    m.core_message_seconds = 4 * us;
    // 0 -> 1 and 2 -> 3 inside their nodes: 1 us + 10000 B at 5 GB/s (2 us)
    Plans p({{{{NBR_OP_SEND, 1, 10000}}},
             {{{NBR_OP_RECV, 0, 10000}}},
             {{{NBR_OP_SEND, 3, 10000}}},
             {{{NBR_OP_RECV, 2, 10000}}}},
            &two.loc);
    Simulated own(p, &two.loc, m);
    ASSERT_EQ(own.rc, NBR_SUCCESS) << own.message;
    EXPECT_NEAR(own.ends[1], 3 * us, 1e-12) << "no cores line: no hand-off";
    m.cores = 1;
    m.cores_per_job = 1;
    Simulated one(p, &two.loc, m);
    ASSERT_EQ(one.rc, NBR_SUCCESS) << one.message;
    // rank 0's hand-off 0-4 us, its bytes 4-6 us: arrives at 7 us; rank 2's
    // hand-off waits for it (4-8 us), its bytes 8-10 us: 11 us
    EXPECT_NEAR(one.ends[1], 7 * us, 1e-12);
    EXPECT_NEAR(one.ends[3], 11 * us, 1e-12);
    m.cores = 2;
    Simulated both(p, &two.loc, m);
    ASSERT_EQ(both.rc, NBR_SUCCESS) << both.message;
    EXPECT_NEAR(both.ends[3], 7 * us, 1e-12) << "a core each: side by side";
    m.cores = 4;
    Simulated enough(p, &two.loc, m);
    ASSERT_EQ(enough.rc, NBR_SUCCESS) << enough.message;
    EXPECT_NEAR(enough.ends[3], 3 * us, 1e-12) << "a core per rank: no hand-off cost";
    // with message_paths=network, messages inside a node take none, on the
    // one core: rank 0's bytes 0-2 us, arriving at 3 us; rank 2's queue
    // behind them, 2-4 us, arriving at 5 us
    m.cores = 1;
    m.core_message_network_only = 1;
    std::vector<double> inside = ends_of(p, &two.loc, m);
    EXPECT_NEAR(inside[1], 3 * us, 1e-12);
    EXPECT_NEAR(inside[3], 5 * us, 1e-12);
    // and the sender still holds its port for the bytes alone (its whole
    // 1 us start-up is flight): rank 0's second message to rank 1 goes at
    // 2 us, its bytes 2-4 us, arriving at 5 us (6 us with the start-up on
    // the port)
    Plans twice({{{{NBR_OP_SEND, 1, 10000}, {NBR_OP_SEND, 1, 10000, 1}}},
                 {{{NBR_OP_RECV, 0, 10000}, {NBR_OP_RECV, 0, 10000, 1}}},
                 {},
                 {}},
                &two.loc);
    EXPECT_NEAR(ends_of(twice, &two.loc, m)[1], 5 * us, 1e-12);
    m.core_message_network_only = 0;
    // rank 0 copies 100000 B (10.5 us of the one core's byte time) while
    // rank 2 sends 1000 B to rank 1 across the network: its hand-off (4 us)
    // does not wait for the copy, then 10 us + 1 us on the wire
    m.cores = 1;
    Plans c({{{{NBR_OP_COPY, -1, 100000}}},
             {{{NBR_OP_RECV, 2, 1000}}},
             {{{NBR_OP_SEND, 1, 1000}}},
             {}},
            &two.loc);
    Simulated beside(c, &two.loc, m);
    ASSERT_EQ(beside.rc, NBR_SUCCESS) << beside.message;
    EXPECT_NEAR(beside.ends[0], 10.5 * us, 1e-12);
    EXPECT_NEAR(beside.ends[1], 15 * us, 1e-12);
    m.core_message_network_only = 1; // a message between nodes still takes it
    EXPECT_NEAR(ends_of(c, &two.loc, m)[1], 15 * us, 1e-12);
    m.core_message_network_only = 0;
    // a sender handing its messages off holds its port for their bytes
    // alone, the hand-off being the CPU time a start-up's overhead stands
    // for elsewhere: rank 2 sends 1000 B to rank 0, then to rank 1. The
    // first: hand-off 0-4 us, 1 us on the port and the wire, 10 us of
    // flight: 15 us. The second: hand-off 5-9 us, arrives at 20 us (held
    // for the whole 10 us start-up, it would have waited until 15 us)
    Plans two_sends({{{{NBR_OP_RECV, 2, 1000}}},
                     {{{NBR_OP_RECV, 2, 1000}}},
                     {{{NBR_OP_SEND, 0, 1000}, {NBR_OP_SEND, 1, 1000}}},
                     {}},
                    &two.loc);
    Simulated handed(two_sends, &two.loc, m);
    ASSERT_EQ(handed.rc, NBR_SUCCESS) << handed.message;
    EXPECT_NEAR(handed.ends[0], 15 * us, 1e-12);
    EXPECT_NEAR(handed.ends[1], 20 * us, 1e-12);
    m.cores = 4; // a core per rank: no hand-off, the start-up holds the port
    Simulated held(two_sends, &two.loc, m);
    ASSERT_EQ(held.rc, NBR_SUCCESS) << held.message;
    EXPECT_NEAR(held.ends[0], 11 * us, 1e-12);
    EXPECT_NEAR(held.ends[1], 22 * us, 1e-12);
}

// Every rank starts at the machine's per-call start; the job's price pays
// it once.
TEST(Simulator, EveryRankStartsAtTheCallStart)
{
    nbr_machine_t m = test_machine();
    Machine two(nullptr, 4, 2);
    Plans p(relay_phases(), &two.loc);
    m.start = 5 * us;
    Simulated run(p, &two.loc, m);
    ASSERT_EQ(run.rc, NBR_SUCCESS) << run.message;
    EXPECT_NEAR(run.ends[2], 5 * us + relay_seconds, 1e-12) << "the relay, shifted by the start";
    EXPECT_NEAR(run.ends[3], 5 * us, 1e-12) << "a rank with nothing to do ends at the start";
    const double node_bytes[4] = {0, 0, 0, 0};
    EXPECT_NEAR(nbr_sim_job_price(&m, 20 * us, node_bytes, 2), 25 * us, 1e-12);
}

// Where ranks share cores, a rank waits wake_us for a core before each
// phase after its first (machine.h); with a core each it does not.
TEST(Simulator, LaterPhasesWaitForACoreOnSharedCores)
{
    nbr_machine_t m = test_machine();
    Machine two(nullptr, 4, 2); // nodes {0, 1} and {2, 3}
    // rank 3 copies 1000 B (0.6 us) in each of two phases
    Plans p(relay_phases({{{NBR_OP_COPY, -1, 1000}}, {{NBR_OP_COPY, -1, 1000}}}), &two.loc);
    m.core_wake_seconds = 7 * us;
    std::vector<double> own = ends_of(p, &two.loc, m);
    EXPECT_NEAR(own[2], relay_seconds, 1e-12) << "no cores line: no wake";
    m.cores = 2;
    m.cores_per_job = 1; // 4 ranks, 2 cores: every rank shares
    std::vector<double> shared = ends_of(p, &two.loc, m);
    EXPECT_NEAR(shared[0], 1 * us + 5000 / 5e9, 1e-12) << "one phase: no wake";
    EXPECT_NEAR(shared[2], relay_seconds + 7 * us, 1e-12) << "rank 1's second phase waits 7 us";
    EXPECT_NEAR(shared[3], 8.2 * us, 1e-12) << "its copies on the other core, 7 us apart";
    m.cores = 4;
    EXPECT_NEAR(ends_of(p, &two.loc, m)[2], relay_seconds, 1e-12) << "a core per rank: no wake";
}

// Rank 0 sends to rank 1 on its socket; rank 1 forwards to rank 2 on the
// other node in a second phase.
TEST(Simulator, TwoPhaseRelay)
{
    nbr_machine_t m = test_machine();
    Machine two(nullptr, 4, 2); // nodes {0, 1} and {2, 3}
    Plans p(relay_phases(), &two.loc);
    Simulated run(p, &two.loc, m);
    ASSERT_EQ(run.rc, NBR_SUCCESS) << run.message;
    const double hop1 = 1 * us + 5000 / 5e9;  // socket: 1 us + 1 us
    const double hop2 = 10 * us + 5000 / 1e9; // network: 10 us + 5 us
    EXPECT_NEAR(run.ends[0], hop1, 1e-12);
    EXPECT_NEAR(run.ends[1], hop1 + hop2, 1e-12);
    EXPECT_NEAR(run.ends[2], hop1 + hop2, 1e-12);
    EXPECT_EQ(run.ends[3], 0.0); // nothing to do
    EXPECT_NEAR(run.result.seconds, hop1 + hop2, 1e-12);
    EXPECT_NE(run.result.last_rank, 0);
}

// A rank's sends go out one after the other; its copies run beside them.
TEST(Simulator, PortSerialisesSendsCopiesOverlap)
{
    nbr_machine_t m = test_machine();
    Plans p({{{{NBR_OP_SEND, 1, 5000}, {NBR_OP_SEND, 2, 5000}, {NBR_OP_SEND, 3, 5000},
               {NBR_OP_COPY, -1, 10000}}},
             {{{NBR_OP_RECV, 0, 5000}}},
             {{{NBR_OP_RECV, 0, 5000}}},
             {{{NBR_OP_RECV, 0, 5000}}}});
    Simulated run(p, nullptr, m); // one node, one socket
    ASSERT_EQ(run.rc, NBR_SUCCESS) << run.message;
    const double each = 1 * us + 5000 / 5e9; // 2 us
    EXPECT_NEAR(run.ends[1], each, 1e-12);
    EXPECT_NEAR(run.ends[2], 2 * each, 1e-12);
    EXPECT_NEAR(run.ends[3], 3 * each, 1e-12);
    EXPECT_NEAR(run.ends[0], 3 * each, 1e-12); // the copy (1.5 us) hides behind them
    EXPECT_EQ(run.result.messages[NBR_PATH_COPY], 1u);
    EXPECT_EQ(run.result.bytes[NBR_PATH_COPY], 10000u);
    // a long copy outlasts the sends
    Plans q({{{{NBR_OP_SEND, 1, 5000}, {NBR_OP_COPY, -1, 100000}}}, {{{NBR_OP_RECV, 0, 5000}}}});
    Simulated longer(q, nullptr, m);
    ASSERT_EQ(longer.rc, NBR_SUCCESS);
    EXPECT_NEAR(longer.ends[0], 0.5 * us + 100000 / 1e10, 1e-12);
}

// A copy that fits the cached size runs at the cached rate, a larger one at
// the path's; the rank's estimate (auto's price) reads the same.
TEST(Simulator, SmallCopiesRunAtTheCachedRate)
{
    nbr_machine_t m = test_machine();
    m.path[NBR_PATH_COPY].cached_bytes = 65536;
    m.path[NBR_PATH_COPY].cached_bandwidth = 40e9;
    for (size_t bytes : {size_t(65536), size_t(65537)}) {
        Plans p({{{{NBR_OP_COPY, -1, bytes}}}});
        Simulated run(p, nullptr, m);
        ASSERT_EQ(run.rc, NBR_SUCCESS) << run.message;
        double rate = bytes <= 65536 ? 40e9 : 10e9; // 2.14 us against 7.05 us
        EXPECT_NEAR(run.ends[0], 0.5 * us + bytes / rate, 1e-12) << bytes;
        nbr_sim_input_t in{1, nullptr, nullptr, &m, 0};
        EXPECT_NEAR(nbr_sim_rank_estimate(&in, &p.plans[0]), 0.5 * us + bytes / rate, 1e-12);
    }
}

// With an overhead below alpha (LogP), a rank's sends hold its port only
// for the overhead and their latencies overlap; phases still pay theirs in
// turn.
TEST(Simulator, OverheadLetsLatenciesOverlap)
{
    nbr_machine_t m = test_machine();
    m.path[NBR_PATH_SOCKET].overhead = 0.25 * us; // of alpha 1 us
    Plans p({{{{NBR_OP_SEND, 1, 5000}, {NBR_OP_SEND, 2, 5000}, {NBR_OP_SEND, 3, 5000}}},
             {{{NBR_OP_RECV, 0, 5000}}},
             {{{NBR_OP_RECV, 0, 5000}}},
             {{{NBR_OP_RECV, 0, 5000}}}});
    Simulated run(p, nullptr, m);
    ASSERT_EQ(run.rc, NBR_SUCCESS) << run.message;
    const double busy = 0.25 * us + 1 * us, alone = 1 * us + 1 * us; // 5000 B at 5 GB/s: 1 us
    EXPECT_NEAR(run.ends[1], alone, 1e-12);
    EXPECT_NEAR(run.ends[2], busy + alone, 1e-12);
    EXPECT_NEAR(run.ends[3], 2 * busy + alone, 1e-12);
    EXPECT_NEAR(run.ends[0], 2 * busy + alone, 1e-12); // 3.5 us, not 3 x 2 us
    nbr_sim_input_t in{4, nullptr, nullptr, &m, 0};
    EXPECT_NEAR(nbr_sim_rank_estimate(&in, &p.plans[0]), 2 * busy + alone, 1e-12);
    // between nodes: the interfaces carry the bytes, the latency comes after
    Machine two(nullptr, 2, 1);
    m.path[NBR_PATH_NETWORK].overhead = 2 * us; // of alpha 10 us
    Plans q({{{{NBR_OP_SEND, 1, 1000}, {NBR_OP_SEND, 1, 1000}}},
             {{{NBR_OP_RECV, 0, 1000}, {NBR_OP_RECV, 0, 1000}}}},
            &two.loc);
    Simulated net(q, &two.loc, m);
    ASSERT_EQ(net.rc, NBR_SUCCESS) << net.message;
    // second send starts at 2 + 1 us, arrives 10 + 1 us later
    EXPECT_NEAR(net.result.seconds, 3 * us + 11 * us, 1e-12);
}

// A receive posted late holds the message, and its sender, until then.
TEST(Simulator, LateReceiverHoldsTheSender)
{
    nbr_machine_t m = test_machine();
    Plans p({{{{NBR_OP_SEND, 1, 0}}},
             {{{NBR_OP_COPY, -1, 1000000}}, {{NBR_OP_RECV, 0, 0}}}});
    Simulated run(p, nullptr, m);
    ASSERT_EQ(run.rc, NBR_SUCCESS) << run.message;
    const double copy = 0.5 * us + 1e6 / 1e10; // 100.5 us
    EXPECT_NEAR(run.ends[1], copy, 1e-12);
    EXPECT_NEAR(run.ends[0], copy, 1e-12);
}

// The node model's GPU pair bandwidth wins for device buffers.
TEST(Simulator, GpuPairsFromTheNodeModel)
{
    nbr_machine_t m = test_machine();
    Machine node("mi250-4gpu.topo", 8, 8);
    ASSERT_GT(node.loc.model.num_gpus, 1);
    double pair = NBR_TOPO_AT(&node.loc.model, bandwidth, 0, 1);
    ASSERT_GT(pair, 0);
    Plans p({{{{NBR_OP_SEND, 1, 1000000}}}, {{{NBR_OP_RECV, 0, 1000000}}}, {}, {}, {}, {}, {}, {}},
            &node.loc);
    Simulated run(p, &node.loc, m, 1);
    ASSERT_EQ(run.rc, NBR_SUCCESS) << run.message;
    EXPECT_NEAR(run.result.seconds, 8 * us + 1e6 / (pair * 1e9), 1e-12);
    EXPECT_EQ(run.result.messages[NBR_PATH_GPU], 1u);
    Simulated host(p, &node.loc, m, 0); // the same bytes through host memory
    EXPECT_NEAR(host.result.seconds, 1 * us + 1e6 / 5e9, 1e-12);
}

// One rank's estimate of its own part, as auto computes it: no other
// rank's timing, its interface shared by as many as use it.
TEST(Simulator, RankEstimates)
{
    nbr_machine_t m = test_machine();
    Machine two(nullptr, 2, 1);
    Plans one({{{{NBR_OP_SEND, 1, 1000}}}, {{{NBR_OP_RECV, 0, 1000}}}}, &two.loc);
    nbr_sim_input_t in{2, nullptr, &two.loc, &m, 0};
    EXPECT_NEAR(nbr_sim_rank_estimate(&in, &one.plans[0]), 11 * us, 1e-12); // its send
    EXPECT_NEAR(nbr_sim_rank_estimate(&in, &one.plans[1]), 11 * us, 1e-12); // the message alone
    // four ranks through one NIC: each counts the interface four times
    Machine eight(nullptr, 8, 4);
    std::vector<std::vector<std::vector<Op>>> phases(8);
    for (int r = 0; r < 4; r++) {
        phases[r] = {{{NBR_OP_SEND, r + 4, 1000000}}};
        phases[r + 4] = {{{NBR_OP_RECV, r, 1000000}}};
    }
    Plans four(phases, &eight.loc);
    nbr_sim_input_t in8{8, nullptr, &eight.loc, &m, 0};
    EXPECT_NEAR(nbr_sim_rank_estimate(&in8, &four.plans[0]), 4e-3, 1e-9);
    EXPECT_NEAR(nbr_sim_rank_estimate(&in8, &four.plans[5]), 4e-3, 1e-9);
    // phases add up; a copy longer than the sends sets its phase
    Machine four_ranks(nullptr, 4, 2);
    Plans relay({{{{NBR_OP_SEND, 1, 5000}}},
                 {{{NBR_OP_RECV, 0, 5000}}, {{NBR_OP_SEND, 2, 5000}, {NBR_OP_COPY, -1, 1000000}}},
                 {{{NBR_OP_RECV, 1, 5000}}},
                 {}},
                &four_ranks.loc);
    nbr_sim_input_t in4{4, nullptr, &four_ranks.loc, &m, 0};
    EXPECT_NEAR(nbr_sim_rank_estimate(&in4, &relay.plans[1]),
                (1 * us + 5000 / 5e9) + (0.5 * us + 1e6 / 1e10), 1e-12);
    EXPECT_EQ(nbr_sim_rank_estimate(&in4, &relay.plans[3]), 0.0);
}

TEST(Simulator, HangsAndUnmatchedMessagesAreErrors)
{
    nbr_machine_t m = test_machine();
    // each waits for the other's second-phase message first
    Plans cycle({{{{NBR_OP_RECV, 1, 8, 1}}, {{NBR_OP_SEND, 1, 8, 0}}},
                 {{{NBR_OP_RECV, 0, 8, 0}}, {{NBR_OP_SEND, 0, 8, 1}}}});
    Simulated hang(cycle, nullptr, m);
    EXPECT_EQ(hang.rc, NBR_ERR_INTERNAL);
    EXPECT_NE(hang.message.find("hang"), std::string::npos) << hang.message;
    Plans lonely({{{{NBR_OP_SEND, 1, 8}}}, {}});
    Simulated unmatched(lonely, nullptr, m);
    EXPECT_EQ(unmatched.rc, NBR_ERR_INTERNAL);
    EXPECT_NE(unmatched.message.find("no matching receive"), std::string::npos)
        << unmatched.message;
}

// Sends and receives pair up by channel (source, destination, tag), then
// by posting order, whatever order the tags are posted in: every pairing
// here has its own byte count, so a wrong one is an error. Rank 2 posts
// more messages to rank 1 than one pair usually carries.
TEST(Simulator, MessagesPairByTagThenPostingOrder)
{
    nbr_machine_t m = test_machine();
    std::vector<Op> sends0, recvs1, sends2;
    const int tags0[] = {3, 1, 1, 2, 1};
    for (int i = 0; i < 5; i++)
        sends0.push_back({NBR_OP_SEND, 1, 100 + (size_t)i, tags0[i]});
    // rank 1 takes tag 1 first, then 2, then 3: within tag 1, as posted
    recvs1 = {{NBR_OP_RECV, 0, 101, 1}, {NBR_OP_RECV, 0, 102, 1}, {NBR_OP_RECV, 0, 104, 1},
              {NBR_OP_RECV, 0, 103, 2}, {NBR_OP_RECV, 0, 100, 3}};
    for (int i = 0; i < 20; i++) // tags 19..0, then received 0..19
        sends2.push_back({NBR_OP_SEND, 1, 200 + (size_t)i, 19 - i});
    for (int t = 0; t < 20; t++)
        recvs1.push_back({NBR_OP_RECV, 2, 200 + (size_t)(19 - t), t});
    Plans ordered({{sends0}, {recvs1}, {sends2}});
    Simulated ok(ordered, nullptr, m);
    EXPECT_EQ(ok.rc, NBR_SUCCESS) << ok.message;
    EXPECT_EQ(ok.result.messages[NBR_PATH_SOCKET] + ok.result.messages[NBR_PATH_NETWORK], 25u);
    // the same with two tag-1 receives swapped pairs 101 with 102: refused
    std::swap(recvs1[0], recvs1[1]);
    Plans swapped({{sends0}, {recvs1}, {sends2}});
    Simulated wrong(swapped, nullptr, m);
    EXPECT_EQ(wrong.rc, NBR_ERR_INTERNAL);
    EXPECT_NE(wrong.message.find("sends 101 bytes"), std::string::npos) << wrong.message;
}

// Whole jobs: every algorithm's plans simulate; fewer, larger messages
// (halving) beat one per edge on a slow network with many small blocks.
TEST(Simulator, WholeJobsOfEveryAlgorithm)
{
    nbr_machine_t m = test_machine();
    nbr_graph_t g{};
    const int n = 64;
    ASSERT_EQ(nbr_graph_erdos_renyi(n, 0.5, 5, &g), NBR_SUCCESS);
    Machine nodes("frontier-mi250x.topo", n, 8);
    LayoutParams lp;
    lp.block = 64;
    double naive_seconds = 0, halving_seconds = 0;
    const nbr_leader_params_t every_block{0};
    for (int i = 0; i < nbr_algorithm_count(); i++) {
        const nbr_algorithm_t *a = nbr_algorithm_at(i);
        SCOPED_TRACE(a->name);
        WholeJob w(&g, lp, &nodes.loc);
        if (std::string(a->name) == "leader")
            w.params = &every_block;
        ASSERT_EQ(w.build(a), NBR_SUCCESS) << w.message();
        nbr_sim_input_t in{n, w.plans.data(), &nodes.loc, &m, 0};
        nbr_sim_result_t result{};
        char message[256];
        ASSERT_EQ(nbr_simulate(&in, &result, nullptr, message, sizeof message), NBR_SUCCESS)
            << message;
        EXPECT_GT(result.seconds, 0);
        EXPECT_LE(result.mean_seconds, result.seconds);
        uint64_t network = 0;
        for (int r = 0; r < n; r++)
            network += w.plans[r].stats.msgs_inter_node;
        EXPECT_EQ(result.messages[NBR_PATH_NETWORK], network) << "the plans' own count";
        if (std::string(a->name) == "naive")
            naive_seconds = result.seconds;
        if (std::string(a->name) == "halving")
            halving_seconds = result.seconds;
    }
    EXPECT_LT(halving_seconds, naive_seconds);
    nbr_graph_free(&g);
}

} // namespace
