// MPI fuzzing: seeded random cases, each a fresh communicator and one call
// through nbrcoll and through Open MPI's MPI_Neighbor_* on it, bit for bit.
// Case k draws the graph, how the communicator is made, virtual nodes and
// sockets, the collective, the datatype pair, the payload and its seed;
// algorithm and call form go round (every algorithm meets every form).
// Buffers are host or device as NBR_TEST_MEMORY says (ctest runs both).
// NBR_FUZZ_CASES (200) and NBR_FUZZ_SEED (1) change the sweep; a failure
// names its case number, and NBR_FUZZ_SEED=S NBR_FUZZ_FIRST=k
// NBR_FUZZ_CASES=1 repeats it alone.
#include <cstdlib>
#include <string>
#include <vector>

#include "mpi_cases.h"
#include "mpi_harness.h"

using namespace nbrtest;

namespace {

class Fuzz : public MpiTest {};

long env_long(const char *name, long fallback)
{
    const char *v = std::getenv(name);
    return v && *v ? std::atol(v) : fallback;
}

GraphSpec draw_graph(uint64_t h)
{
    const int kind = static_cast<int>(h % 6);
    GraphSpec s{"", kind, 0.0, 0, 0, mix(h, 0x6A), false};
    switch (kind) {
    case kErdosRenyi:
        s.density = static_cast<double>(mix(h, 1) % 101) / 100.0;
        s.name = "er_p" + std::to_string(s.density);
        break;
    case kMoore:
        s.a = 1 + static_cast<int>(mix(h, 2) % 3);
        s.b = 1 + static_cast<int>(mix(h, 3) % 2);
        s.name = "moore_d" + std::to_string(s.a) + "_r" + std::to_string(s.b);
        break;
    case kStar:
        s.a = static_cast<int>(mix(h, 4) % static_cast<uint64_t>(world_size()));
        s.b = static_cast<int>(mix(h, 5) % 2);
        s.name = "star_c" + std::to_string(s.a) + (s.b ? "_out" : "_in");
        break;
    case kMulti:
        s.a = static_cast<int>(mix(h, 6) % 7);
        s.name = "multi_max" + std::to_string(s.a);
        break;
    case kEmpty:
        s.name = "empty";
        break;
    default:
        s.name = "sources_only";
    }
    return s;
}

TEST_F(Fuzz, RandomCasesMatchMpi)
{
    const long cases = env_long("NBR_FUZZ_CASES", 200), first = env_long("NBR_FUZZ_FIRST", 0);
    const uint64_t seed = static_cast<uint64_t>(env_long("NBR_FUZZ_SEED", 1));
    const std::vector<std::string> algorithms = algorithm_names();
    ASSERT_FALSE(algorithms.empty());
    const int nalg = static_cast<int>(algorithms.size());
    static const size_t sizes[] = {0, 1, 8, 40, 300, 4096, 20000, 65536};
    static const int per_node[] = {1, 2, 4, 8};
    long ran = 0;
    for (long k = first; k < first + cases; ++k) {
        const uint64_t h = mix(seed, static_cast<uint64_t>(k), 0xF022);
        const std::string algo = algorithms[static_cast<size_t>(k % nalg)];
        const Variant variant = static_cast<Variant>((k / nalg) % 3);
        const GraphSpec spec = draw_graph(mix(h, 10));
        nbr_graph_t g;
        if (!all_ranks(make_graph(spec, world_size(), &g) == NBR_SUCCESS))
            continue;
        const Mode mode = kAllModes[mix(h, 11) % 3];
        Info info{{"nbr_algorithm", algo},
                  {"nbr_ranks_per_node", std::to_string(per_node[mix(h, 12) % 4])},
                  {"nbr_ranks_per_socket", std::to_string(mix(h, 13) % 3)}};
        CommOptions opt;
        opt.info = info.info;
        opt.attach = mode == Mode::MpiLazy;
        opt.weighted = mix(h, 14) % 2;
        opt.seed = mix(h, 15);
        Case c;
        c.op = static_cast<Op>(mix(h, 16) % kNumOps);
        c.pair = static_cast<int>(mix(h, 17) % types().pairs.size());
        c.bytes = sizes[mix(h, 18) % 8];
        c.variant = variant;
        c.runs = 1 + static_cast<int>(mix(h, 19) % 3);
        c.seed = mix(h, 20);
        c.poll = variant == Variant::Nonblocking && mix(h, 21) % 2;
        c.check_calls = false;
        const std::string ctx = "fuzz case " + std::to_string(k) + " (seed " +
                                std::to_string(seed) + "): " + algo + ", " + spec.name + " [" +
                                mode_name(mode) + "]";
        MPI_Comm comm = make_comm(g, mode, opt, ctx);
        if (comm != MPI_COMM_NULL) {
            run_case(comm, c, ctx);
            ran++;
        }
        free_comm(&comm);
        nbr_graph_free(&g);
        if (HasFailure())
            break; // the first failing case is the one to repeat
    }
    EXPECT_EQ(ran, cases) << "cases whose communicator could not be made";
}

} // namespace

int main(int argc, char **argv) { return run_main(argc, argv, false); }
