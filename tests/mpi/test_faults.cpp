// Fault injection through the test-only PMPI layer (mpi_shim.h): the N-th
// MPI call of one kind fails, for every N up to the calls a clean run makes
// (a spread of them where there are many), and every algorithm, call form
// and call kind nbrcoll makes.
//
// What must hold, whatever fails:
//  * no rank hangs (the ctest timeout is the judge) or crashes;
//  * inside a collective call (the plan's messages): the rank where the
//    call failed returns an error; every other rank returns an error or
//    exactly the right result (a rank whose data never passed through the
//    failed one after the failure has nothing wrong to report); the same
//    communicator then runs the collective again, right on every rank;
//  * with nbr_agree_errors (NBR_AGREE_ERRORS=1, mpi.faults.agree.np4):
//    every rank returns an error, or every rank succeeds (a retry mended
//    it) with right results;
//  * in set-up (communicator creation, the engine's exchanges and the
//    collectives that agree): every rank returns the same status;
//  * after the communicator is freed, no request, datatype, keyval or
//    communicator made through MPI is left (counted by the shim).
// Collective kinds fail on every rank (mpi_shim.h says why).
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <cstdio>
#include <string>
#include <vector>

#include "mpi_cases.h"
#include "mpi_harness.h"
#include "mpi_shim.h"
#include "device/backend.h"

using namespace nbrtest;

namespace {

class Faults : public MpiTest {};

// NBR_AGREE_ERRORS=1: every call ends in one status on every rank.
bool agreeing()
{
    const char *v = std::getenv("NBR_AGREE_ERRORS");
    return v && std::string(v) == "1";
}

bool collective_kind(nbr_shim_call_t k)
{
    return k >= NBR_SHIM_FIRST_COLLECTIVE;
}

// Which N to try out of `calls`: all of few, else the first three, the
// middle and the last two.
std::vector<long> sweep(long calls)
{
    std::vector<long> n;
    for (long i = 1; i <= calls; ++i)
        if (calls <= 8 || i <= 3 || i == calls / 2 || i >= calls - 1)
            n.push_back(i);
    return n;
}

long max_over_ranks(long v)
{
    long m = v;
    MPI_Allreduce(&v, &m, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

// One run of c's collective on r in c's call form; persistent: *req made
// by the caller. Statuses of the posting and of the completion alike.
int run_once(CaseRunner &r, const Case &c, nbr_request_t *req)
{
    int rc = NBR_SUCCESS;
    switch (c.variant) {
    case Variant::Blocking:
        return r.call_blocking();
    case Variant::Nonblocking:
        rc = r.call_nonblocking(req);
        break;
    case Variant::Persistent:
        rc = nbr_start(req);
        break;
    }
    if (rc != NBR_SUCCESS)
        return rc;
    if (!c.poll)
        return nbr_wait(req);
    for (int flag = 0;;) {
        if ((rc = nbr_test(req, &flag)) != NBR_SUCCESS || flag)
            return rc;
    }
}

// Every request, datatype and communicator made since `before` is freed.
void expect_nothing_left(const nbr_shim_live_t &before)
{
    nbr_shim_live_t after{};
    nbr_shim_count_live(&after);
    EXPECT_EQ(after.requests, before.requests) << "requests left";
    EXPECT_EQ(after.datatypes, before.datatypes) << "datatypes left";
    EXPECT_EQ(after.comms, before.comms) << "communicators left";
}

struct Tally {
    long points = 0, mended = 0, failing_rank_errors = 0, other_errors = 0, other_right = 0;
};

// Faults inside the collective calls of one communicator: every kind and
// N for this algorithm and call form, added to tally.
// One kind of call that can be made to fail: an MPI call through the shim,
// or a GPU runtime call through the device backend's counting layer
// (NBR_DEVICE_FAULTS=1, device buffers).
struct Injector {
    std::string name;
    std::function<void(long)> arm; // the nth call from now fails (0: none)
    std::function<long()> calls;
    std::function<bool()> fired;
};

std::vector<Injector> call_injectors()
{
    static const nbr_shim_call_t kinds[] = {
        NBR_SHIM_ISEND,     NBR_SHIM_IRECV,    NBR_SHIM_SEND_INIT, NBR_SHIM_RECV_INIT,
        NBR_SHIM_START,     NBR_SHIM_STARTALL, NBR_SHIM_WAIT,      NBR_SHIM_WAITALL,
        NBR_SHIM_TEST,      NBR_SHIM_TESTALL,  NBR_SHIM_IMPROBE,   NBR_SHIM_IMRECV,
        NBR_SHIM_PACK,      NBR_SHIM_UNPACK};
    std::vector<Injector> all;
    for (nbr_shim_call_t k : kinds)
        all.push_back({std::string("MPI_") + nbr_shim_name(k),
                       [k](long n) { nbr_shim_arm(k, n); }, [k] { return nbr_shim_calls(k); },
                       [] { return nbr_shim_fired() != 0; }});
    const char *device = std::getenv("NBR_DEVICE_FAULTS");
    static const char *const device_names[] = {"pointer_kind", "mem_alloc",     "host_alloc",
                                               "ipc_get",      "ipc_open",      "stream_create",
                                               "copy",         "progress",      "synchronize"};
    for (int k = 0; device && std::string(device) == "1" && k < NBR_DEVICE_NUM_CALLS; ++k) {
        const auto call = static_cast<nbr_device_call_t>(k);
        all.push_back({std::string("device ") + device_names[k],
                       [call](long n) { nbr_device_fault_arm(call, n); },
                       [call] { return nbr_device_fault_calls(call); },
                       [] { return nbr_device_fault_fired() != 0; }});
    }
    return all;
}

// Faults inside the collective calls of one communicator: every kind and
// N for this algorithm and call form, added to tally.
void sweep_calls(MPI_Comm comm, const std::string &algo, Case c, Tally &tally)
{
    const int me = world_rank(), np = world_size();
    const std::vector<Injector> injectors = call_injectors();
    CaseRunner r(comm, c, algo);
    nbr_request_t req = NBR_REQUEST_NULL;
    if (c.variant == Variant::Persistent) {
        EXPECT_EQ(r.call_init(MPI_INFO_NULL, &req), NBR_SUCCESS) << r.where();
    }
    int run = 0;
    // A clean run first: the plan is built (set-up's own calls are not
    // this sweep's) and the calls of each kind counted.
    r.prepare(run);
    r.reference();
    for (const Injector &in : injectors)
        in.arm(0);
    EXPECT_EQ(run_once(r, c, &req), NBR_SUCCESS) << r.where() << ": clean run";
    std::vector<long> counted;
    for (const Injector &in : injectors)
        counted.push_back(in.calls());
    for (size_t ki = 0; ki < injectors.size(); ++ki) {
        const Injector &in = injectors[ki];
        const int failing = static_cast<int>((ki + algo.size()) % static_cast<size_t>(np));
        const long calls = max_over_ranks(me == failing ? counted[ki] : 0);
        for (long n : sweep(calls)) {
            const std::string where = r.where() + ": call " + std::to_string(n) + " to " +
                                      in.name + " fails on rank " + std::to_string(failing);
            if (tracing() && me == 0)
                note(where);
            nbr_shim_live_t live_before{}, live_after{};
            nbr_shim_count_live(&live_before);
            ++run;
            r.prepare(run);
            r.reference();
            in.arm(me == failing ? n : 0);
            const int rc = run_once(r, c, &req);
            int fired = in.fired();
            in.arm(0);
            MPI_Bcast(&fired, 1, MPI_INT, failing, MPI_COMM_WORLD);
            // A failure mended by a retry where no rank could be told any
            // more (after the last vote of an engine run the call made)
            // leaves every rank right: success everywhere is allowed then.
            const bool all_succeeded = all_ranks(rc == NBR_SUCCESS);
            tally.mended += fired && all_succeeded && me == 0;
            if (agreeing() && fired && !all_succeeded) {
                EXPECT_NE(rc, NBR_SUCCESS) << where << ": success on one rank with "
                                           << "nbr_agree_errors, an error on another";
            }
            if (me == failing && fired && !all_succeeded) {
                EXPECT_NE(rc, NBR_SUCCESS) << where << ": the failing rank reports success";
                tally.failing_rank_errors += rc != NBR_SUCCESS;
            } else if (rc == NBR_SUCCESS) {
                EXPECT_TRUE(r.check(run)) << where << ": a rank reporting success is wrong";
                tally.other_right += fired;
            } else {
                EXPECT_TRUE(fired) << where << ": " << status_text(rc) << " with no fault";
                tally.other_errors += fired;
            }
            tally.points += fired && me == 0;
            if (c.variant == Variant::Nonblocking && req != NBR_REQUEST_NULL) {
                ADD_FAILURE() << where << ": the request outlived its failed run";
                nbr_request_free(&req);
            }
            // The communicator is whole again: the next run is right everywhere.
            ++run;
            r.prepare(run);
            r.reference();
            const int again = run_once(r, c, &req);
            EXPECT_EQ(again, NBR_SUCCESS) << where << ": the run after it: " << status_text(again);
            if (again == NBR_SUCCESS) {
                EXPECT_TRUE(r.check(run)) << where << ": the run after it";
            }
            nbr_shim_count_live(&live_after);
            EXPECT_EQ(live_after.requests, live_before.requests)
                << where << ": MPI requests left behind";
            if (any_rank(::testing::Test::HasFailure()))
                break;
        }
        if (any_rank(::testing::Test::HasFailure()))
            break;
    }
    if (req != NBR_REQUEST_NULL) {
        EXPECT_EQ(nbr_request_free(&req), NBR_SUCCESS);
    }
}

TEST_F(Faults, CollectiveCallsEndInErrorsOrRightResults)
{
    nbr_graph_t g;
    const GraphSpec spec{"er_p0.6", kErdosRenyi, 0.6, 0, 0, 7, false};
    ASSERT_EQ(make_graph(spec, world_size(), &g), NBR_SUCCESS);
    // eager and rendezvous; then a datatype with gaps (packed into staging)
    static const size_t sizes[] = {64, 128 * 1024, 4096};
    Tally tally;
    nbr_shim_live_t before{};
    nbr_shim_count_live(&before);
    for (const std::string &algo : algorithm_names()) {
        for (size_t bytes : sizes)
            for (int v = 0; v < 4; ++v) {
                RankComm rc(&g, {{"nbr_algorithm", algo}, {"nbr_ranks_per_node", "2"}});
                if (!rc.ready(algo, algo.c_str()))
                    continue;
                Case c;
                c.op = bytes > 4096 ? Op::Allgather : Op::Alltoallv;
                c.pair = bytes == 4096 ? types().find("vec") : 0;
                c.bytes = bytes;
                c.variant = static_cast<Variant>(std::min(v, 2));
                c.poll = v == 3; // nonblocking, completed by nbr_test
                c.seed = 11;
                c.check_calls = false;
                sweep_calls(rc.comm, algo, c, tally);
                if (any_rank(HasFailure()))
                    break;
            }
        if (any_rank(HasFailure()))
            break;
    }
    expect_nothing_left(before);
    nbr_graph_free(&g);
    long sums[5] = {tally.points, tally.mended, tally.failing_rank_errors, tally.other_errors,
                    tally.other_right};
    MPI_Allreduce(MPI_IN_PLACE, sums, 5, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank() == 0)
        std::printf("[ faults   ] %ld faults inside calls: %ld mended by a retry (success and "
                    "right results everywhere); otherwise the failing rank returned an error "
                    "%ld times, and other ranks %ld errors and %ld right results\n",
                    sums[0], sums[1], sums[2], sums[3], sums[4]);
    EXPECT_GT(sums[0], 0);
    EXPECT_EQ(sums[2], sums[0] - sums[1]);
}

// Calls in flight complete in any order on each rank (MPI allows it), and
// so must their error agreements (NBR_AGREE_ERRORS=1 in the .agree tests;
// without it this is a plain ordering test): rank 0 makes a blocking call
// before it waits for an earlier nonblocking one, the others wait for the
// nonblocking one first. An agreement that moved only when its own request
// is waited for would leave rank 0 inside the blocking call and the others
// in the first call's agreement.
TEST_F(Faults, CallsInFlightFinishInAnyOrder)
{
    nbr_graph_t g;
    const GraphSpec spec{"er_p0.6", kErdosRenyi, 0.6, 0, 0, 7, false};
    ASSERT_EQ(make_graph(spec, world_size(), &g), NBR_SUCCESS);
    for (const std::string algo : {"mpi", "naive", "halving"}) {
        RankComm rc(&g, {{"nbr_algorithm", algo}, {"nbr_ranks_per_node", "2"}});
        if (!rc.ready(algo, algo.c_str()))
            continue;
        Case first, second;
        first.op = second.op = Op::Allgather;
        first.bytes = second.bytes = 256;
        first.variant = Variant::Nonblocking;
        second.seed = 2;
        first.check_calls = second.check_calls = false;
        CaseRunner a(rc.comm, first, algo + " nonblocking"), b(rc.comm, second, algo + " blocking");
        a.prepare(1);
        b.prepare(1);
        a.reference();
        b.reference();
        nbr_request_t req = NBR_REQUEST_NULL;
        EXPECT_EQ(a.call_nonblocking(&req), NBR_SUCCESS) << a.where();
        if (world_rank() == 0) {
            EXPECT_EQ(b.call_blocking(), NBR_SUCCESS) << b.where();
            EXPECT_EQ(nbr_wait(&req), NBR_SUCCESS) << a.where();
        } else {
            EXPECT_EQ(nbr_wait(&req), NBR_SUCCESS) << a.where();
            EXPECT_EQ(b.call_blocking(), NBR_SUCCESS) << b.where();
        }
        EXPECT_TRUE(a.check(1)) << a.where();
        EXPECT_TRUE(b.check(1)) << b.where();
        if (any_rank(HasFailure()))
            break;
    }
    nbr_graph_free(&g);
}

// Faults in set-up: nbr_dist_graph_create_adjacent with an algorithm whose
// pattern is computed then (engine rounds), where every rank must return
// the same status, and the first call (plan, call facts: engine rounds and
// agreements again, and the plan's messages), where a rank that reports
// success must be right.
TEST_F(Faults, SetUpEndsWithTheSameStatusOnEveryRank)
{
    const int me = world_rank(), np = world_size();
    nbr_graph_t g;
    const GraphSpec spec{"er_p0.6", kErdosRenyi, 0.6, 0, 0, 7, false};
    ASSERT_EQ(make_graph(spec, np, &g), NBR_SUCCESS);
    static const nbr_shim_call_t kinds[] = {
        NBR_SHIM_ISSEND,    NBR_SHIM_IPROBE,    NBR_SHIM_RECV,      NBR_SHIM_TESTALL,
        NBR_SHIM_TEST,      NBR_SHIM_IALLREDUCE, NBR_SHIM_ALLREDUCE, NBR_SHIM_ALLGATHER,
        NBR_SHIM_BCAST,     NBR_SHIM_COMM_DUP,  NBR_SHIM_COMM_SPLIT, NBR_SHIM_COMM_SPLIT_TYPE};
    long points = 0, all_failed = 0, all_passed = 0;
    nbr_shim_live_t before{};
    nbr_shim_count_live(&before);
    for (const std::string &algo : algorithm_names()) {
        Case c;
        c.op = Op::Alltoallv;
        c.bytes = 256;
        c.seed = 5;
        // Counted on a clean creation and first call.
        std::vector<long> counted;
        {
            nbr_shim_arm(NBR_SHIM_ISEND, 0);
            RankComm rc(&g, {{"nbr_algorithm", algo}, {"nbr_ranks_per_node", "2"}});
            if (rc.comm != MPI_COMM_NULL) {
                CaseRunner r(rc.comm, c, algo);
                r.prepare(0);
                EXPECT_EQ(r.call_blocking(), NBR_SUCCESS) << algo << ": clean first call";
            }
            for (nbr_shim_call_t k : kinds)
                counted.push_back(nbr_shim_calls(k));
        }
        for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ++ki) {
            const nbr_shim_call_t kind = kinds[ki];
            const bool everywhere = collective_kind(kind);
            const int failing =
                everywhere ? -1 : static_cast<int>((ki + algo.size()) % static_cast<size_t>(np));
            const long calls = max_over_ranks(everywhere || me == failing ? counted[ki] : 0);
            for (long n : sweep(calls)) {
                const std::string where =
                    algo + " set-up: call " + std::to_string(n) + " to MPI_" +
                    nbr_shim_name(kind) + " fails on " +
                    (everywhere ? std::string("every rank") : "rank " + std::to_string(failing));
                if (tracing() && me == 0)
                    note(where);
                nbr_shim_arm(kind, everywhere || me == failing ? n : 0);
                int created = NBR_SUCCESS, called = NBR_SUCCESS;
                {
                    RankComm rc(&g, {{"nbr_algorithm", algo}, {"nbr_ranks_per_node", "2"}});
                    created = rc.rc;
                    // creation: the same status on every rank
                    nbr_shim_pause(1);
                    const bool all_made = all_ranks(rc.comm != MPI_COMM_NULL);
                    EXPECT_TRUE(all_made || all_ranks(rc.comm == MPI_COMM_NULL))
                        << where << ": creation returned " << status_text(created);
                    nbr_shim_pause(0);
                    if (all_made) {
                        // the first call: what a call's faults promise
                        // (a rank reporting success is right)
                        CaseRunner r(rc.comm, c, where);
                        r.prepare(0);
                        called = r.call_blocking();
                        nbr_shim_disarm();
                        r.reference();
                        if (called == NBR_SUCCESS) {
                            EXPECT_TRUE(r.check(0)) << where;
                        }
                    }
                    nbr_shim_disarm();
                }
                const bool failed = created != NBR_SUCCESS || called != NBR_SUCCESS;
                points++;
                all_failed += all_ranks(failed);
                all_passed += all_ranks(!failed);
                if (any_rank(HasFailure()))
                    break;
            }
            if (any_rank(HasFailure()))
                break;
        }
        if (any_rank(HasFailure()))
            break;
    }
    expect_nothing_left(before);
    nbr_graph_free(&g);
    if (me == 0)
        std::printf("[ faults   ] %ld faults in set-up and first calls: %ld failed on every "
                    "rank, %ld were mended by a retry on every rank, the rest failed on some\n",
                    points, all_failed, all_passed);
    EXPECT_GT(points, 0);
}

}  // namespace

int main(int argc, char **argv) { return run_main(argc, argv, true); }
