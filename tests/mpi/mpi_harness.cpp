#include "mpi_harness.h"
#include "test_memory.h"

#include <cstring>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace nbrtest {

namespace {

// Collects the failures of the running test on this rank.
class FailureCollector : public ::testing::EmptyTestEventListener {
  public:
    void OnTestStart(const ::testing::TestInfo &) override
    {
        count_ = 0;
        text_.clear();
    }
    void OnTestPartResult(const ::testing::TestPartResult &r) override
    {
        if (!r.failed())
            return;
        ++count_;
        if (tracing() || (world_rank() != 0 && count_ <= kEchoFirst)) {
            // Right away as well: the test may hang before its TearDown
            // (rank 0's own failures are printed by gtest already).
            std::fprintf(stderr, "[rank %d] FAILURE %s:%d: %s\n", world_rank(),
                         r.file_name() ? r.file_name() : "?", r.line_number(), r.message());
            std::fflush(stderr);
        }
        if (text_.size() > kMaxText)
            return;
        std::ostringstream os;
        os << (r.file_name() ? r.file_name() : "?") << ":" << r.line_number()
           << ": " << r.message() << "\n";
        text_ += os.str();
        if (text_.size() > kMaxText)
            text_ += "... (more failures on this rank omitted)\n";
    }
    int count() const { return count_; }
    const std::string &text() const { return text_; }

  private:
    static constexpr size_t kMaxText = 6000;
    static constexpr int kEchoFirst = 2;
    int count_ = 0;
    std::string text_;
};

FailureCollector *g_collector = nullptr;
std::vector<std::function<void()>> &finalizers()
{
    static std::vector<std::function<void()>> f;
    return f;
}

}  // namespace

int world_rank()
{
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int world_size()
{
    int p = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    return p;
}

bool all_ranks(bool local, MPI_Comm comm)
{
    int in = local ? 1 : 0, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LAND, comm);
    return out != 0;
}

bool any_rank(bool local, MPI_Comm comm)
{
    int in = local ? 1 : 0, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, comm);
    return out != 0;
}

void note(const std::string &msg)
{
    std::fprintf(stderr, "[rank %d] %s\n", world_rank(), msg.c_str());
    std::fflush(stderr);
}

bool tracing()
{
    static const bool t = std::getenv("NBRTEST_TRACE") != nullptr;
    return t;
}

void at_finalize(std::function<void()> fn) { finalizers().push_back(std::move(fn)); }

void MpiTest::TearDown()
{
    // Every rank reaches this point of every test (no early returns before
    // collectives), so the gather below cannot hang on a failing rank.
    const int rank = world_rank(), size = world_size();
    std::string mine = g_collector ? g_collector->text() : std::string();
    const int fails = g_collector ? g_collector->count() : 0;
    if (fails > 0 && mine.empty())
        mine = "(failure without message)\n";
    int len = static_cast<int>(mine.size());

    std::vector<int> lens(rank == 0 ? size : 0), displs(rank == 0 ? size : 0);
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<char> all;
    if (rank == 0) {
        int total = 0;
        for (int r = 0; r < size; ++r) {
            displs[r] = total;
            total += lens[r];
        }
        all.resize(total > 0 ? total : 1);
    }
    MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(),
                displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 1; r < size; ++r) {
            if (lens[r] == 0)
                continue;
            ADD_FAILURE() << "failure(s) on rank " << r << ":\n"
                          << std::string(all.data() + displs[r], lens[r]);
        }
    }
}

int run_main(int argc, char **argv, bool errors_return)
{
    constexpr int kSkipped = 77;
    MPI_Init(&argc, &argv);
    if (errors_return) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    }
    ::testing::InitGoogleTest(&argc, argv);
    const int rank = world_rank();

    // --require-gpu: the suite is meant for a real GPU; without one every
    // rank exits with 77, which ctest reports as skipped (with the reason).
    bool require_gpu = false;
    for (int i = 1; i < argc; ++i)
        require_gpu = require_gpu || std::strcmp(argv[i], "--require-gpu") == 0;
    std::string why;
    if (require_gpu && !all_ranks(real_gpu_in_use(&why))) {
        if (rank == 0)
            std::printf("SKIPPED: no GPU for this suite: %s\n",
                        why.empty() ? "not on every rank" : why.c_str());
        MPI_Finalize();
        return kSkipped;
    }

    ::testing::TestEventListeners &listeners =
        ::testing::UnitTest::GetInstance()->listeners();
    if (rank != 0) {
        delete listeners.Release(listeners.default_result_printer());
        delete listeners.Release(listeners.default_xml_generator());
    }
    g_collector = new FailureCollector;
    listeners.Append(g_collector);  // owned by gtest from here on

    int local = RUN_ALL_TESTS();
    int global = 0;
    MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && global != 0 && local == 0)
        std::fprintf(stderr, "nbrtest: a test failed on another rank\n");

    for (auto &fn : finalizers())
        fn();
    finalizers().clear();
    MPI_Finalize();
    return global != 0 ? 1 : 0;
}

}  // namespace nbrtest
