// Resource use over many cycles, per algorithm: persistent start/wait
// cycles of one request, and communicator create/free cycles (each with
// one call, so that plans and their buffers are made and freed too).
// Measured at the start (after a warm-up of a tenth of the cycles, which
// fills the allocator's and MPI's own caches) and at the end: resident
// memory may grow by at most kRssSlack (a leak of 10 bytes per cycle over
// 100,000 cycles shows), open file descriptors and /dev/shm entries not
// at all, and the MPI requests, datatypes, keyvals and communicators made
// through MPI (counted by mpi_shim.c) are back where they were.
// NBR_RESOURCE_STARTS (100000) and NBR_RESOURCE_CREATES (10000) change
// the cycle counts.
#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mpi_cases.h"
#include "mpi_harness.h"
#include "mpi_shim.h"

using namespace nbrtest;

namespace {

class Resources : public MpiTest {};

constexpr long kRssSlack = 1L << 20;

long env_long(const char *name, long fallback)
{
    const char *v = std::getenv(name);
    return v && *v ? std::atol(v) : fallback;
}

struct Usage {
    long rss = 0, fds = 0, shm = 0;
    nbr_shim_live_t mpi{};
};

long entries(const char *dir)
{
    long n = 0;
    if (DIR *d = opendir(dir)) {
        while (const dirent *e = readdir(d))
            n += e->d_name[0] != '.';
        closedir(d);
    }
    return n;
}

// nbrcoll's segments made by this job's processes (node channels:
// nbrcoll-<pid>-..., emulated device memory: nbrcoll-emu-<ns>-<pid>-...);
// the node's /dev/shm also holds other jobs' files.
long shm_entries()
{
    static std::vector<long> pids;
    if (pids.empty()) {
        pids.resize(static_cast<size_t>(world_size()));
        long me = static_cast<long>(getpid());
        MPI_Allgather(&me, 1, MPI_LONG, pids.data(), 1, MPI_LONG, MPI_COMM_WORLD);
    }
    long n = 0;
    if (DIR *d = opendir("/dev/shm")) {
        while (const dirent *e = readdir(d)) {
            unsigned long long ns = 0, pid = 0;
            const bool ours =
                std::sscanf(e->d_name, "nbrcoll-emu-%llu-%llu-", &ns, &pid) == 2 ||
                std::sscanf(e->d_name, "nbrcoll-%llu-", &pid) == 1;
            for (long p : pids)
                n += ours && static_cast<unsigned long long>(p) == pid;
        }
        closedir(d);
    }
    return n;
}

// Virtual nodes of half the ranks: the node-aware algorithms cross nodes.
std::string ranks_per_node()
{
    return std::to_string(world_size() > 1 ? world_size() / 2 : 1);
}

// Collective (all ranks at the same point).
Usage measure()
{
    Usage u;
    if (FILE *f = std::fopen("/proc/self/status", "r")) {
        char line[256];
        while (std::fgets(line, sizeof line, f))
            if (std::strncmp(line, "VmRSS:", 6) == 0)
                u.rss = std::atol(line + 6) * 1024;
        std::fclose(f);
    }
    u.fds = entries("/proc/self/fd") - 1; // the one opendir holds
    // /dev/shm is the node's: read it when every rank has come this far
    MPI_Barrier(MPI_COMM_WORLD);
    u.shm = shm_entries();
    nbr_shim_count_live(&u.mpi);
    return u;
}

// Compares start and end on every rank; prints rank 0's.
void expect_flat(const Usage &a, const Usage &b, const std::string &what)
{
    EXPECT_LE(b.rss - a.rss, kRssSlack) << what << ": resident memory grew";
    EXPECT_EQ(b.fds, a.fds) << what << ": file descriptors";
    EXPECT_EQ(b.mpi.requests, a.mpi.requests) << what << ": MPI requests";
    EXPECT_EQ(b.mpi.datatypes, a.mpi.datatypes) << what << ": MPI datatypes";
    EXPECT_EQ(b.mpi.keyvals, a.mpi.keyvals) << what << ": MPI keyvals";
    EXPECT_EQ(b.mpi.comms, a.mpi.comms) << what << ": MPI communicators";
    EXPECT_EQ(b.shm, a.shm) << what << ": /dev/shm entries";
    if (world_rank() == 0)
        std::printf("[ usage    ] %s: RSS %+ld KiB (of %ld KiB), fds %ld -> %ld, /dev/shm %ld "
                    "-> %ld, requests %ld -> %ld, datatypes %ld -> %ld, keyvals %ld -> %ld, "
                    "comms %ld -> %ld\n",
                    what.c_str(), (b.rss - a.rss) / 1024, b.rss / 1024, a.fds, b.fds, a.shm,
                    b.shm, a.mpi.requests, b.mpi.requests, a.mpi.datatypes, b.mpi.datatypes,
                    a.mpi.keyvals, b.mpi.keyvals, a.mpi.comms, b.mpi.comms);
}

nbr_graph_t test_graph()
{
    nbr_graph_t g;
    const GraphSpec spec{"er_p1", kErdosRenyi, 1.0, 0, 0, 3, false};
    EXPECT_EQ(make_graph(spec, world_size(), &g), NBR_SUCCESS);
    return g;
}

Case test_case()
{
    Case c;
    c.op = Op::Allgatherv;
    c.bytes = 512;
    c.seed = 9;
    c.check_calls = false;
    return c;
}

TEST_F(Resources, PersistentStartWaitCyclesHoldNothing)
{
    const long cycles = env_long("NBR_RESOURCE_STARTS", 100000);
    nbr_graph_t g = test_graph();
    for (const std::string &algo : algorithm_names()) {
        RankComm rc(&g, {{"nbr_algorithm", algo}, {"nbr_ranks_per_node", ranks_per_node()}});
        if (!rc.ready(algo, algo.c_str()))
            continue;
        Case c = test_case();
        c.variant = Variant::Persistent;
        CaseRunner r(rc.comm, c, algo);
        nbr_request_t req = NBR_REQUEST_NULL;
        EXPECT_EQ(r.call_init(MPI_INFO_NULL, &req), NBR_SUCCESS) << algo;
        r.prepare(0);
        r.reference();
        long failed = 0;
        Usage start;
        for (long i = 0; i < cycles; ++i) {
            if (i == cycles / 10)
                start = measure();
            failed += nbr_start(&req) != NBR_SUCCESS || nbr_wait(&req) != NBR_SUCCESS;
        }
        Usage end = measure();
        EXPECT_EQ(failed, 0) << algo << ": failed cycles";
        EXPECT_TRUE(r.check(0)) << algo << ": the last cycle's result";
        EXPECT_EQ(nbr_request_free(&req), NBR_SUCCESS);
        expect_flat(start, end, algo + ", " + std::to_string(cycles) + " start/wait cycles");
    }
    nbr_graph_free(&g);
}

TEST_F(Resources, CommunicatorCreateFreeCyclesHoldNothing)
{
    const long cycles = env_long("NBR_RESOURCE_CREATES", 10000);
    nbr_graph_t g = test_graph();
    const Case c = test_case();
    for (const std::string &algo : algorithm_names()) {
        long failed = 0;
        Usage start;
        for (long i = 0; i < cycles; ++i) {
            if (i == cycles / 10)
                start = measure();
            RankComm rc(&g, {{"nbr_algorithm", algo}, {"nbr_ranks_per_node", ranks_per_node()}});
            failed += rc.rc != NBR_SUCCESS;
            if (rc.comm == MPI_COMM_NULL)
                break; // a failure on one rank is seen on all (creation agrees)
            CaseRunner r(rc.comm, c, algo);
            r.prepare(0);
            failed += r.call_blocking() != NBR_SUCCESS;
        }
        Usage end = measure();
        EXPECT_EQ(failed, 0) << algo << ": failed cycles";
        expect_flat(start, end, algo + ", " + std::to_string(cycles) + " create/call/free cycles");
    }
    nbr_graph_free(&g);
}

}  // namespace

int main(int argc, char **argv) { return run_main(argc, argv, false); }
