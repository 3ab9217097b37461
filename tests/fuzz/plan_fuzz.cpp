// nbr_plan_fuzz: seeded random cases, every rank's plan built the way a job
// builds it and proven by the verifier (every byte lands where MPI would put
// it, nothing else is written, no op reads what has not arrived).
//
//   nbr_plan_fuzz --algorithm NAME [--cases N] [--seed S] [--long]
//
// A case draws everything a plan depends on: the graph (random multigraphs
// with repeats and self-loops, Erdos-Renyi, Moore, stars, no edges), 1 to 24
// ranks (sometimes up to 64), virtual nodes and sockets, a stored node model
// or flat nodes, the collective, block sizes (0 included), the datatype's
// element size, gaps between receive slots and their order, and for
// allgatherv whether the size round ran; and the algorithms' parameters
// (combining's theta, leader's direct-block bound, aggregate's regions and
// message weight). Case k uses seed S + k: a failure
// prints the case and the command that repeats it alone. --long: 10x cases.
// Exit status: 0 when every case verified, 1 otherwise, 2 on bad usage.
#include "plan_fixture.h"

#include <nbrcoll.h>
extern "C" {
#include "base/graph_gen.h"
#include "topo/locality.h"
}

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct Case {
    uint64_t seed;
    std::string graph_text, machine_text;
    nbr_graph_t graph{};
    nbr_locality_t loc{};
    LayoutParams layout;
    bool size_round = false;
    std::string params_text;
    ~Case()
    {
        nbr_graph_free(&graph);
        nbr_locality_free(&loc);
    }
};

uint64_t draw(uint64_t *state, uint64_t n) { return nbr_splitmix64(state) % n; }

int make_graph(Case &c, uint64_t *state)
{
    const int n = draw(state, 8) == 0 ? 25 + static_cast<int>(draw(state, 40))
                                      : 1 + static_cast<int>(draw(state, 24));
    const uint64_t gseed = nbr_splitmix64(state);
    char text[128];
    int rc;
    switch (draw(state, 6)) {
    case 0:
    case 1: {
        int max_out = static_cast<int>(draw(state, 9));
        snprintf(text, sizeof text, "random_multi(n=%d, max_out=%d)", n, max_out);
        rc = nbr_graph_random_multi(n, max_out, gseed, &c.graph);
        break;
    }
    case 2: {
        double density = static_cast<double>(draw(state, 101)) / 100.0;
        snprintf(text, sizeof text, "erdos_renyi(n=%d, density=%.2f)", n, density);
        rc = nbr_graph_erdos_renyi(n, density, gseed, &c.graph);
        break;
    }
    case 3: {
        int dims = 1 + static_cast<int>(draw(state, 3)), radius = 1 + static_cast<int>(draw(state, 2));
        snprintf(text, sizeof text, "moore(n=%d, dims=%d, radius=%d)", n, dims, radius);
        rc = nbr_graph_moore(n, dims, radius, &c.graph);
        break;
    }
    case 4: {
        int center = static_cast<int>(draw(state, static_cast<uint64_t>(n)));
        int outward = static_cast<int>(draw(state, 2));
        snprintf(text, sizeof text, "star(n=%d, center=%d, outward=%d)", n, center, outward);
        rc = nbr_graph_star(n, center, outward, &c.graph);
        break;
    }
    default:
        if (draw(state, 4) == 0) {
            snprintf(text, sizeof text, "empty(n=%d)", n);
            rc = nbr_graph_empty(n, &c.graph);
        } else {
            snprintf(text, sizeof text, "random_multi(n=%d, max_out=3)", n);
            rc = nbr_graph_random_multi(n, 3, gseed, &c.graph);
        }
    }
    c.graph_text = text;
    return rc;
}

int make_machine(Case &c, uint64_t *state)
{
    static const char *const models[] = {nullptr, nullptr, "frontier-mi250x.topo",
                                         "mi250-4gpu.topo", "dgx-h100-8.topo", "pcie-4gpu.topo"};
    static const int per_node[] = {0, 1, 2, 3, 4, 8};
    const int n = c.graph.nranks;
    int rpn = per_node[draw(state, 6)];
    if (rpn == 0 || rpn > n)
        rpn = n;
    int rps = static_cast<int>(draw(state, 3)); // 0: one socket per node
    const char *model = models[draw(state, 6)];
    int rc = nbr_locality_virtual(n, rpn, rps, &c.loc);
    char why[512] = "";
    if (rc == NBR_SUCCESS && model)
        rc = nbr_locality_load_model(&c.loc, (std::string(NBR_SOURCE_DIR) + "/topo/" + model).c_str(),
                                     why, sizeof why);
    c.machine_text = std::to_string(rpn) + " ranks per node, " +
                     (rps ? std::to_string(rps) + " per socket" : std::string("one socket")) +
                     ", " + (model ? model : "flat nodes") + (why[0] ? std::string(": ") + why : "");
    return rc;
}

void make_layout(Case &c, uint64_t *state)
{
    // the verifier's time grows with the bytes: large blocks now and then
    static const size_t blocks[] = {0, 1, 3, 8, 40, 256, 700, 4096};
    static const size_t units[] = {1, 1, 2, 4, 8, 12, 16};
    LayoutParams &p = c.layout;
    p.coll = static_cast<nbr_collective_t>(draw(state, 3));
    p.unit = units[draw(state, 7)];
    const bool large = draw(state, 50) == 0 && c.graph.nranks <= 16; /* few edges */
    p.block = (large ? 70000 : blocks[draw(state, 8)]) / p.unit * p.unit;
    p.gap = draw(state, 3) == 0 ? static_cast<size_t>(draw(state, 9)) : 0;
    p.reverse = draw(state, 2) != 0;
    p.seed = nbr_splitmix64(state);
    c.size_round = draw(state, 4) != 0;
}

// The algorithms' own parameters, through the environment a job reads
// them from (nbr_job_init with no params); NULL keeps the default.
void draw_parameters(Case &c, uint64_t *state)
{
    static const char *const theta[] = {nullptr, "1", "3"};
    static const char *const leader_min[] = {nullptr, "0", "64"};
    static const char *const region[] = {nullptr, "socket"};
    static const char *const message[] = {nullptr, "0", "1000000"};
    struct Knob {
        const char *env;
        const char *value;
    } knobs[] = {{"NBR_COMBINING_THETA", theta[draw(state, 3)]},
                 {"NBR_LEADER_MIN_BYTES", leader_min[draw(state, 3)]},
                 {"NBR_AGGREGATE_REGION", region[draw(state, 2)]},
                 {"NBR_AGGREGATE_MESSAGE_BYTES", message[draw(state, 3)]}};
    c.params_text.clear();
    for (const Knob &k : knobs) {
        if (k.value) {
            setenv(k.env, k.value, 1);
            c.params_text += std::string(" ") + k.env + "=" + k.value;
        } else {
            unsetenv(k.env);
        }
    }
}

std::string describe(const Case &c, const char *algorithm)
{
    const LayoutParams &p = c.layout;
    return std::string(algorithm) + " " + nbr_collective_name(p.coll) + " on " + c.graph_text +
           ", " + c.machine_text + ", block " + std::to_string(p.block) + " unit " +
           std::to_string(p.unit) + " gap " + std::to_string(p.gap) +
           (p.reverse ? " reversed" : "") +
           (p.coll == NBR_COLL_ALLGATHERV ? (c.size_round ? ", size round" : ", no size round")
                                          : "") +
           (c.params_text.empty() ? "" : ", env" + c.params_text);
}

// Builds every rank's pattern and plan as a job does, then verifies.
int run_case(const nbr_algorithm_t *algorithm, Case &c, std::string *why)
{
    WholeJob w(&c.graph, c.layout, &c.loc);
    w.job_patterns = true;
    if (c.layout.coll == NBR_COLL_ALLGATHERV && c.size_round)
        for (const nbr_layout_t &l : w.layouts)
            w.block_sizes.push_back(l.send[0].bytes);
    int rc = w.build(algorithm);
    if (rc == NBR_SUCCESS)
        rc = w.verify();
    if (rc != NBR_SUCCESS)
        *why = w.message();
    return rc;
}

} // namespace

int main(int argc, char **argv)
{
    const char *name = nullptr;
    long cases = 10000;
    uint64_t seed = 1;
    bool long_run = false;
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : nullptr;
        if (!strcmp(argv[i], "--long"))
            long_run = true;
        else if (!strcmp(argv[i], "--algorithm") && value)
            name = argv[++i];
        else if (!strcmp(argv[i], "--cases") && value)
            cases = atol(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && value)
            seed = strtoull(argv[++i], nullptr, 10);
        else
            name = nullptr, cases = -1, i = argc;
    }
    const nbr_algorithm_t *algorithm = name ? nbr_algorithm_find(name) : nullptr;
    if (!algorithm || cases < 1) {
        fprintf(stderr, "usage: nbr_plan_fuzz --algorithm NAME [--cases N] [--seed S] [--long]\n"
                        "algorithms: %s\n", nbr_algorithm_names());
        return 2;
    }
    if (long_run)
        cases *= 10;
    auto start = std::chrono::steady_clock::now();
    long failed = 0, edges = 0, ranks = 0;
    for (long k = 0; k < cases; k++) {
        Case c;
        c.seed = seed + static_cast<uint64_t>(k);
        uint64_t state = c.seed;
        std::string why;
        int rc = make_graph(c, &state);
        if (rc == NBR_SUCCESS)
            rc = make_machine(c, &state);
        if (rc != NBR_SUCCESS)
            why = std::string("set-up of the case: ") + nbr_error_string(rc);
        make_layout(c, &state);
        draw_parameters(c, &state);
        if (rc == NBR_SUCCESS)
            rc = run_case(algorithm, c, &why);
        if (rc != NBR_SUCCESS) {
            if (failed++ < 20)
                printf("FAILED case %llu: %s: %s\n  repeat: nbr_plan_fuzz --algorithm %s --seed %llu --cases 1\n",
                       static_cast<unsigned long long>(c.seed), describe(c, name).c_str(),
                       why.c_str(), name, static_cast<unsigned long long>(c.seed));
            continue;
        }
        ranks += c.graph.nranks;
        edges += c.graph.out_offsets[c.graph.nranks];
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    printf("nbr_plan_fuzz %s: %ld cases from seed %llu, %ld failed; %ld ranks, %ld edges in all; %.1f s\n",
           name, cases, static_cast<unsigned long long>(seed), failed, ranks, edges, s);
    return failed ? 1 : 0;
}
