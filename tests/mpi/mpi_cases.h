// Shared machinery of the MPI integration tests: datatypes, building
// dist-graph communicators from whole graphs, and running one neighborhood
// collective through nbrcoll and through Open MPI's MPI_Neighbor_* on the
// same communicator, comparing the results bit for bit.
#ifndef NBRCOLL_TESTS_MPI_CASES_H
#define NBRCOLL_TESTS_MPI_CASES_H

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "base/graph_gen.h"
#include "nbrcoll.h"

namespace nbrtest {

// ------------------------------------------------------------ datatypes

struct TypeDesc {
    const char *name;
    MPI_Datatype type;
    MPI_Aint extent;  // lb is 0 for every type here
    int size;         // bytes of data per element
};

// sendcount = units * send_mult, recvcount = units * recv_mult: both sides
// move the same type signature.
struct TypePair {
    std::string name;
    const TypeDesc *send;
    int send_mult;
    const TypeDesc *recv;
    int recv_mult;
    size_t unit_bytes() const { return static_cast<size_t>(send->size) * send_mult; }
};

struct Types {
    TypeDesc byte_, int_, double_;
    TypeDesc vec;       // 4 ints, stride 2 ints: gaps inside and between
    TypeDesc struct_a;  // {int@0, double@8, char@20}, resized to extent 32
    TypeDesc struct_b;  // same signature, {int@9, double@1, char@0}, extent 16
    std::vector<TypePair> pairs;  // every pair the collective suites cycle through
    int find(const std::string &pair_name) const;
};

// Created on first use (after MPI_Init), freed before MPI_Finalize.
const Types &types();

// An info object, freed when it goes out of scope.
struct Info {
    MPI_Info info = MPI_INFO_NULL;
    Info() = default;
    Info(std::initializer_list<std::pair<const char *, std::string>> kv)
    {
        MPI_Info_create(&info);
        for (auto &p : kv)
            MPI_Info_set(info, p.first, p.second.c_str());
    }
    ~Info()
    {
        if (info != MPI_INFO_NULL)
            MPI_Info_free(&info);
    }
    Info(const Info &) = delete;
    Info &operator=(const Info &) = delete;
};

// ------------------------------------------------------------ neighbors

// One entry per block of the user's buffers, in MPI's order: for a
// cartesian communicator 2 * ndims blocks, block 2d the neighbor toward -d
// and 2d + 1 toward +d, MPI_PROC_NULL where there is none.
struct Neighbors {
    int topo = MPI_DIST_GRAPH;       // MPI_Topo_test of the communicator
    std::vector<int> in, out;        // MPI_Dist_graph_neighbors order (or graph's, cart's)
    std::vector<int> inw, outw;      // weights when weighted
    bool weighted = false;
    // Which message lands where: in-block i receives what in[i] sends on its
    // out-block j with out_edge[j] == in_edge[i] (j among its blocks to this
    // rank). Graphs: the occurrence of the peer in the list (the k-th edge
    // to a process matches the k-th edge from it). Cartesian: the block
    // itself and, receiving, the sender's block i ^ 1 (MPI-4.1 section 8.6:
    // what goes toward -d arrives in the +d block), which decides where
    // both directions reach the same rank (periodic dimensions of size 1, 2).
    std::vector<int> in_edge, out_edge;
    int indeg() const { return static_cast<int>(in.size()); }
    int outdeg() const { return static_cast<int>(out.size()); }
};

// Local; the communicator must have a dist-graph, cartesian or graph topology.
Neighbors query_neighbors(MPI_Comm comm);

// ------------------------------------------------------------ communicators

enum class Mode {
    NbrAdjacent,  // nbr_dist_graph_create_adjacent
    MpiLazy,      // MPI_Dist_graph_create_adjacent, nbrcoll sets up lazily
    NbrGeneral,   // nbr_dist_graph_create, edges named by arbitrary ranks
};
const char *mode_name(Mode m);
extern const Mode kAllModes[3];

struct CommOptions {
    MPI_Info info = MPI_INFO_NULL;  // for the nbr_ constructors
    bool weighted = false;          // adjacent modes: pass edge weights
    uint64_t seed = 1;              // NbrGeneral: who names which edge
    bool attach = false;            // MpiLazy: call nbr_comm_attach(info)
};

// Collective. Creates the communicator of graph g on MPI_COMM_WORLD in the
// given way and checks its neighbor lists against g (exact lists for the
// adjacent forms; per-rank multisets, sorted by peer, for the general form).
// Returns MPI_COMM_NULL on every rank if creation failed on any rank.
MPI_Comm make_comm(const nbr_graph_t &g, Mode mode, const CommOptions &opt,
                   const std::string &ctx);

// The calling rank's side of a whole graph as a communicator from
// nbr_dist_graph_create_adjacent with these info keys (collective); rc is
// its status, comm MPI_COMM_NULL on failure. Freed with the object.
struct RankComm {
    MPI_Comm comm = MPI_COMM_NULL;
    std::vector<int> in, out;
    int rc = NBR_SUCCESS;
    RankComm(const nbr_graph_t *g, const std::vector<std::pair<std::string, std::string>> &info);
    ~RankComm();
    // Collective: records a failure unless every rank made the communicator
    // and it runs this algorithm; true when the test may go on.
    bool ready(const std::string &what, const char *algorithm) const;
    RankComm(const RankComm &) = delete;
    RankComm &operator=(const RankComm &) = delete;
};

// Distinct ints for (rank, element, round): blocks that land in the wrong
// place or run show up.
void fill_ints(std::vector<int> &v, int rank, int round);

// Frees a communicator made by make_comm (no-op for MPI_COMM_NULL).
void free_comm(MPI_Comm *comm);

// Weight a test gives to edge (src -> dst, k-th occurrence).
int edge_weight(int src, int dst, int k);

// ------------------------------------------------------------ cases

// The first three keep their indices: suites derive cases from them.
enum class Op { Allgather, Allgatherv, Alltoallv, Alltoall, Alltoallw };
constexpr int kNumOps = 5;
enum class Variant { Blocking, Nonblocking, Persistent };
const char *op_name(Op op);
const char *variant_name(Variant v);

struct Case {
    Op op = Op::Allgather;
    // Index into types().pairs. alltoallw: about half of the edges use it,
    // the others a pair drawn per edge (among the dense pairs when this one
    // is dense, so that such buffers can live on the device).
    int pair = 0;
    size_t bytes = 0;         // typical payload per edge; 0 means empty
    Variant variant = Variant::Blocking;
    int runs = 3;             // persistent: starts of one request
    uint64_t seed = 1;
    bool no_zero_edges = false;  // never draw a zero count for an edge
    bool poll = false;        // nonblocking: complete with nbr_test polling
    bool check_calls = true;  // check nbr_counters.calls advances
    MPI_Info init_info = MPI_INFO_NULL;  // persistent: info of the _init call
};

std::string describe(const Case &c);

// One case, step by step (for tests that interleave several operations).
// Owns the buffers; argument arrays stay valid while the runner lives.
class CaseRunner {
  public:
    CaseRunner(MPI_Comm comm, const Case &c, const std::string &ctx);
    ~CaseRunner();
    CaseRunner(const CaseRunner &) = delete;
    CaseRunner &operator=(const CaseRunner &) = delete;

    const std::string &where() const;
    // Send data of this run; sentinel bytes in both receive buffers.
    void prepare(int run);
    // MPI_Neighbor_* into the reference buffer (collective); always the
    // blocking form (see reference() in mpi_cases.cpp).
    void reference();
    int call_blocking();
    // Posts with copies of the count arrays and overwrites the copies at
    // once (the library must have copied them).
    int call_nonblocking(nbr_request_t *req);
    int call_init(MPI_Info info, nbr_request_t *req);
    // Checks both results of this run on their own (gaps and blocks toward
    // MPI_PROC_NULL untouched, every slot equals what its source sent) and
    // against each other.
    bool check(int run);
    // Payload of each out-block per operation (0 toward MPI_PROC_NULL).
    std::vector<size_t> out_bytes() const;

  private:
    struct Impl;
    Impl *impl_;
};

// Prints status and its nbr_error_string.
std::string status_text(int rc);

struct CaseResult {
    bool nbr_ok = false;             // every nbrcoll call returned success
    int nbr_ops = 0;                 // operations completed through nbrcoll
    std::vector<size_t> out_bytes;   // payload of each out-block per operation
};

// Collective over comm. Runs the case through nbrcoll and through MPI,
// records mismatches with gtest (never returns early).
CaseResult run_case(MPI_Comm comm, const Case &c, const std::string &ctx);

// ------------------------------------------------------------ graphs

struct GraphSpec {
    std::string name;
    int kind;          // see make_graph
    double density;
    int a, b;          // dims/radius, center/outward, max_out
    uint64_t seed;
    bool sparse;       // few edges per rank: fit for multi-MiB messages
};

enum GraphKind {
    kErdosRenyi,
    kMoore,
    kStar,
    kMulti,
    kEmpty,
    kSourcesOnly,  // even ranks: in-degree 0, out-degree > 0
};

// Returns 0 or an nbr_status_t.
int make_graph(const GraphSpec &spec, int nranks, nbr_graph_t *g);

// Names of the algorithms from nbr_algorithm_names().
std::vector<std::string> algorithm_names();

// The algorithm a call of variant v on comm runs where configured names
// one: configured, or naive's messages in place of a plan of several
// rounds for a nonblocking or persistent call where MPI runs no progress
// hook of nbrcoll's (MPICH; front/select.h, nbr_standing_of).
std::string algorithm_run(MPI_Comm comm, const std::string &configured, Variant v);

// Local hash of several values (for deterministic pseudo-random choices).
uint64_t mix(uint64_t a, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0,
             uint64_t e = 0);

}  // namespace nbrtest

#endif
