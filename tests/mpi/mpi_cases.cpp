#include "mpi_cases.h"
#include "test_memory.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>

#include <gtest/gtest.h>

#include "mpi_harness.h"

extern "C" {
#include "alg/registry.h"
#include "alg/select.h"
#include "front/comm.h"
}

namespace nbrtest {

// ================================================================ helpers

uint64_t mix(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
    uint64_t st = 0x243F6A8885A308D3ull;
    uint64_t h = 0;
    for (uint64_t v : {a, b, c, d, e}) {
        st ^= v * 0x9E3779B97F4A7C15ull + h;
        h = nbr_splitmix64(&st);
    }
    return h;
}

namespace {

template <class T>
T *ptr_or_null(std::vector<T> &v)
{
    return v.empty() ? nullptr : v.data();
}
template <class T>
const T *ptr_or_null(const std::vector<T> &v)
{
    return v.empty() ? nullptr : v.data();
}

void fill_random(uint8_t *p, size_t n, uint64_t key)
{
    uint64_t st = key;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = nbr_splitmix64(&st);
        std::memcpy(p + i, &v, 8);
    }
    if (i < n) {
        uint64_t v = nbr_splitmix64(&st);
        std::memcpy(p + i, &v, n - i);
    }
}

inline uint8_t sentinel_byte(size_t pos, int run)
{
    return static_cast<uint8_t>(0xA5u ^ ((pos * 131u + static_cast<size_t>(run) * 29u) & 0xFFu));
}

void fill_sentinel(std::vector<uint8_t> &b, int run)
{
    for (size_t i = 0; i < b.size(); ++i)
        b[i] = sentinel_byte(i, run);
}

std::vector<uint8_t> pack(const void *buf, int count, MPI_Datatype t)
{
    std::vector<uint8_t> out;
    if (count <= 0)
        return out;
    int sz = 0;
    MPI_Pack_size(count, t, MPI_COMM_SELF, &sz);
    out.resize(static_cast<size_t>(sz));
    int pos = 0;
    MPI_Pack(buf, count, t, out.data(), sz, &pos, MPI_COMM_SELF);
    out.resize(static_cast<size_t>(pos));
    return out;
}

}  // namespace

std::string status_text(int rc)
{
    std::ostringstream os;
    const char *s = nbr_error_string(rc);
    os << rc << " (" << (s ? s : "NULL") << ")";
    return os.str();
}

namespace {

// Occurrence index of each entry among equal entries before it.
std::vector<int> occurrences(const std::vector<int> &v)
{
    std::vector<int> k(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
        int c = 0;
        for (size_t j = 0; j < i; ++j)
            c += (v[j] == v[i]);
        k[i] = c;
    }
    return k;
}

Types *g_types = nullptr;

TypeDesc make_desc(const char *name, MPI_Datatype t)
{
    TypeDesc d{name, t, 0, 0};
    MPI_Aint lb = 0;
    MPI_Type_get_extent(t, &lb, &d.extent);
    MPI_Type_size(t, &d.size);
    return d;
}

MPI_Datatype make_struct(const MPI_Aint displs[3], MPI_Aint extent)
{
    int lens[3] = {1, 1, 1};
    MPI_Datatype ts[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    MPI_Datatype raw, out;
    MPI_Type_create_struct(3, lens, displs, ts, &raw);
    MPI_Type_create_resized(raw, 0, extent, &out);
    MPI_Type_free(&raw);
    MPI_Type_commit(&out);
    return out;
}

}  // namespace

// ================================================================ types

int Types::find(const std::string &pair_name) const
{
    for (size_t i = 0; i < pairs.size(); ++i)
        if (pairs[i].name == pair_name)
            return static_cast<int>(i);
    ADD_FAILURE() << "test bug: no type pair " << pair_name;
    return 0;
}

const Types &types()
{
    if (g_types)
        return *g_types;
    Types *t = new Types;
    t->byte_ = make_desc("byte", MPI_BYTE);
    t->int_ = make_desc("int", MPI_INT);
    t->double_ = make_desc("double", MPI_DOUBLE);

    MPI_Datatype vec;
    MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    t->vec = make_desc("vec4s2", vec);

    const MPI_Aint da[3] = {0, 8, 20};
    t->struct_a = make_desc("structA", make_struct(da, 32));
    const MPI_Aint db[3] = {9, 1, 0};
    t->struct_b = make_desc("structB", make_struct(db, 16));

    t->pairs = {
        {"byte", &t->byte_, 1, &t->byte_, 1},
        {"int", &t->int_, 1, &t->int_, 1},
        {"double", &t->double_, 1, &t->double_, 1},
        {"int->vec", &t->int_, 4, &t->vec, 1},
        {"vec->int", &t->vec, 1, &t->int_, 4},
        {"vec", &t->vec, 1, &t->vec, 1},
        {"structA->structB", &t->struct_a, 1, &t->struct_b, 1},
        {"structA", &t->struct_a, 1, &t->struct_a, 1},
    };
    g_types = t;
    at_finalize([] {
        MPI_Type_free(&g_types->vec.type);
        MPI_Type_free(&g_types->struct_a.type);
        MPI_Type_free(&g_types->struct_b.type);
        delete g_types;
        g_types = nullptr;
    });
    return *g_types;
}

// ================================================================ neighbors

Neighbors query_neighbors(MPI_Comm comm)
{
    Neighbors nb;
    MPI_Topo_test(comm, &nb.topo);
    if (nb.topo == MPI_CART) {
        int ndims = 0;
        MPI_Cartdim_get(comm, &ndims);
        for (int d = 0; d < ndims; ++d) {
            int minus = MPI_PROC_NULL, plus = MPI_PROC_NULL;
            MPI_Cart_shift(comm, d, 1, &minus, &plus);
            nb.in.insert(nb.in.end(), {minus, plus});
            nb.out.insert(nb.out.end(), {minus, plus});
        }
        for (int b = 0; b < 2 * ndims; ++b) {
            nb.out_edge.push_back(b);
            nb.in_edge.push_back(b ^ 1);
        }
        return nb;
    }
    if (nb.topo == MPI_GRAPH) {
        int me = 0, n = 0;
        MPI_Comm_rank(comm, &me);
        MPI_Graph_neighbors_count(comm, me, &n);
        std::vector<int> list(n + 1);
        MPI_Graph_neighbors(comm, me, n, list.data());
        nb.in.assign(list.begin(), list.begin() + n);
        nb.out = nb.in;
        nb.in_edge = nb.out_edge = occurrences(nb.in);
        return nb;
    }
    int indeg = 0, outdeg = 0, weighted = 0;
    MPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted);
    nb.weighted = weighted != 0;
    std::vector<int> in(indeg + 1), out(outdeg + 1), inw(indeg + 1), outw(outdeg + 1);
    MPI_Dist_graph_neighbors(comm, indeg, in.data(),
                             weighted ? inw.data() : MPI_UNWEIGHTED, outdeg,
                             out.data(), weighted ? outw.data() : MPI_UNWEIGHTED);
    nb.in.assign(in.begin(), in.begin() + indeg);
    nb.out.assign(out.begin(), out.begin() + outdeg);
    if (weighted) {
        nb.inw.assign(inw.begin(), inw.begin() + indeg);
        nb.outw.assign(outw.begin(), outw.begin() + outdeg);
    }
    nb.in_edge = occurrences(nb.in);
    nb.out_edge = occurrences(nb.out);
    return nb;
}

// ================================================================ comms

const Mode kAllModes[3] = {Mode::NbrAdjacent, Mode::MpiLazy, Mode::NbrGeneral};

const char *mode_name(Mode m)
{
    switch (m) {
    case Mode::NbrAdjacent: return "nbr_adjacent";
    case Mode::MpiLazy: return "mpi_lazy";
    case Mode::NbrGeneral: return "nbr_general";
    }
    return "?";
}

int edge_weight(int src, int dst, int k) { return 1 + (src * 7 + dst * 3 + k) % 97; }

namespace {

std::string list_text(const std::vector<int> &v)
{
    std::ostringstream os;
    os << "[";
    for (size_t i = 0; i < v.size(); ++i)
        os << (i ? " " : "") << v[i];
    os << "]";
    return os.str();
}

}  // namespace

MPI_Comm make_comm(const nbr_graph_t &g, Mode mode, const CommOptions &opt,
                   const std::string &ctx)
{
    const int me = world_rank(), P = world_size();
    std::string where = ctx + " [" + mode_name(mode) + "] rank " + std::to_string(me);

    std::vector<int> in(nbr_graph_in(&g, me), nbr_graph_in(&g, me) + nbr_graph_indegree(&g, me));
    std::vector<int> out(nbr_graph_out(&g, me), nbr_graph_out(&g, me) + nbr_graph_outdegree(&g, me));
    std::vector<int> kin = occurrences(in), kout = occurrences(out);
    std::vector<int> inw(in.size()), outw(out.size());
    for (size_t i = 0; i < in.size(); ++i)
        inw[i] = edge_weight(in[i], me, kin[i]);
    for (size_t j = 0; j < out.size(); ++j)
        outw[j] = edge_weight(me, out[j], kout[j]);

    const bool weighted = opt.weighted && mode != Mode::NbrGeneral;
    const int *srcw = MPI_UNWEIGHTED, *dstw = MPI_UNWEIGHTED;
    if (weighted) {
        srcw = in.empty() ? MPI_WEIGHTS_EMPTY : inw.data();
        dstw = out.empty() ? MPI_WEIGHTS_EMPTY : outw.data();
    }

    MPI_Comm comm = MPI_COMM_NULL;
    int rc = NBR_SUCCESS;
    const char *what = "";
    switch (mode) {
    case Mode::NbrAdjacent:
        what = "nbr_dist_graph_create_adjacent";
        rc = nbr_dist_graph_create_adjacent(
            MPI_COMM_WORLD, static_cast<int>(in.size()), ptr_or_null(in), srcw,
            static_cast<int>(out.size()), ptr_or_null(out), dstw, opt.info, 0, &comm);
        break;
    case Mode::MpiLazy: {
        what = "MPI_Dist_graph_create_adjacent";
        int mrc = MPI_Dist_graph_create_adjacent(
            MPI_COMM_WORLD, static_cast<int>(in.size()), ptr_or_null(in), srcw,
            static_cast<int>(out.size()), ptr_or_null(out), dstw, MPI_INFO_NULL, 0, &comm);
        rc = mrc == MPI_SUCCESS ? NBR_SUCCESS : NBR_ERR_MPI;
        if (rc == NBR_SUCCESS && opt.attach) {
            what = "nbr_comm_attach";
            rc = nbr_comm_attach(comm, opt.info);
        }
        break;
    }
    case Mode::NbrGeneral: {
        what = "nbr_dist_graph_create";
        // Every edge is named by a rank picked by a hash: often neither of
        // its endpoints. Runs of one source are split at random points, so
        // a source may appear several times in sources[].
        std::vector<int> sources, degrees, dests;
        long e = 0;
        int last_src = -1;
        for (int s = 0; s < P; ++s) {
            const int *o = nbr_graph_out(&g, s);
            for (int j = 0; j < nbr_graph_outdegree(&g, s); ++j, ++e) {
                if (static_cast<int>(mix(opt.seed, static_cast<uint64_t>(e), 0x0E) % P) != me)
                    continue;
                if (s != last_src || mix(opt.seed, static_cast<uint64_t>(e), 0x5B) % 4 == 0) {
                    sources.push_back(s);
                    degrees.push_back(0);
                    last_src = s;
                }
                degrees.back()++;
                dests.push_back(o[j]);
            }
        }
        rc = nbr_dist_graph_create(MPI_COMM_WORLD, static_cast<int>(sources.size()),
                                   ptr_or_null(sources), ptr_or_null(degrees),
                                   ptr_or_null(dests), MPI_UNWEIGHTED, opt.info, 0,
                                   &comm);
        break;
    }
    }

    const bool local_ok = rc == NBR_SUCCESS && comm != MPI_COMM_NULL;
    EXPECT_TRUE(local_ok) << where << ": " << what << " returned " << status_text(rc)
                          << (comm == MPI_COMM_NULL ? " and no communicator" : "");
    if (!local_ok)
        note(where + ": " + what + " returned " + status_text(rc));
    if (!all_ranks(local_ok)) {
        if (comm != MPI_COMM_NULL)
            MPI_Comm_free(&comm);
        return MPI_COMM_NULL;
    }

    // The communicator must carry exactly the intended graph.
    int topo = MPI_UNDEFINED;
    MPI_Topo_test(comm, &topo);
    EXPECT_EQ(topo, MPI_DIST_GRAPH) << where << ": not a dist-graph communicator";
    int crank = -1, csize = -1;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    EXPECT_EQ(crank, me) << where << ": ranks were reordered";
    EXPECT_EQ(csize, P) << where;
    if (!all_ranks(topo == MPI_DIST_GRAPH)) {
        MPI_Comm_free(&comm);  // unusable: give up on it on every rank
        return MPI_COMM_NULL;
    }
    Neighbors nb = query_neighbors(comm);
    if (mode == Mode::NbrGeneral) {
        EXPECT_TRUE(std::is_sorted(nb.in.begin(), nb.in.end()))
            << where << ": in-list not ordered by peer rank: " << list_text(nb.in);
        EXPECT_TRUE(std::is_sorted(nb.out.begin(), nb.out.end()))
            << where << ": out-list not ordered by peer rank: " << list_text(nb.out);
        std::vector<int> a = nb.in, b = in;
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        EXPECT_EQ(a, b) << where << ": in-neighbor multiset differs from the graph: got "
                        << list_text(a) << " want " << list_text(b);
        a = nb.out;
        b = out;
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        EXPECT_EQ(a, b) << where << ": out-neighbor multiset differs from the graph: got "
                        << list_text(a) << " want " << list_text(b);
    } else {
        EXPECT_EQ(nb.in, in) << where << ": in-neighbors " << list_text(nb.in)
                             << " want " << list_text(in);
        EXPECT_EQ(nb.out, out) << where << ": out-neighbors " << list_text(nb.out)
                               << " want " << list_text(out);
        EXPECT_EQ(nb.weighted, weighted) << where << ": weighted flag";
        if (weighted && nb.weighted) {
            EXPECT_EQ(nb.inw, inw) << where << ": in-weights";
            EXPECT_EQ(nb.outw, outw) << where << ": out-weights";
        }
    }
    return comm;
}

void free_comm(MPI_Comm *comm)
{
    if (*comm != MPI_COMM_NULL)
        MPI_Comm_free(comm);
}

// ================================================================ graphs

int make_graph(const GraphSpec &s, int P, nbr_graph_t *g)
{
    switch (s.kind) {
    case kErdosRenyi: return nbr_graph_erdos_renyi(P, s.density, s.seed, g);
    case kMoore: return nbr_graph_moore(P, s.a, s.b, g);
    case kStar: return nbr_graph_star(P, s.a < 0 ? P - 1 : s.a, s.b, g);
    case kMulti: return nbr_graph_random_multi(P, s.a, s.seed, g);
    case kEmpty: return nbr_graph_empty(P, g);
    case kSourcesOnly: {
        // Even ranks only send, odd ranks only receive; some edges repeat.
        std::vector<int> src, dst;
        for (int r = 0; r < P; r += 2) {
            if (r + 1 < P) {
                src.push_back(r);
                dst.push_back(r + 1);
                if (r % 4 == 0) {
                    src.push_back(r);
                    dst.push_back(r + 1);
                }
            }
            const int d = (r + 3) % P;
            if (d % 2 == 1 && d != r + 1) {
                src.push_back(r);
                dst.push_back(d);
            }
        }
        return nbr_graph_from_edges(P, static_cast<long>(src.size()), ptr_or_null(src),
                                    ptr_or_null(dst), g);
    }
    }
    return NBR_ERR_ARG;
}

RankComm::RankComm(const nbr_graph_t *g,
                   const std::vector<std::pair<std::string, std::string>> &keys)
{
    const int me = world_rank();
    in.assign(nbr_graph_in(g, me), nbr_graph_in(g, me) + nbr_graph_indegree(g, me));
    out.assign(nbr_graph_out(g, me), nbr_graph_out(g, me) + nbr_graph_outdegree(g, me));
    MPI_Info info;
    MPI_Info_create(&info);
    for (const auto &kv : keys)
        MPI_Info_set(info, kv.first.c_str(), kv.second.c_str());
    rc = nbr_dist_graph_create_adjacent(MPI_COMM_WORLD, static_cast<int>(in.size()), in.data(),
                                        MPI_UNWEIGHTED, static_cast<int>(out.size()), out.data(),
                                        MPI_UNWEIGHTED, info, 0, &comm);
    MPI_Info_free(&info);
}

RankComm::~RankComm()
{
    if (comm != MPI_COMM_NULL)
        MPI_Comm_free(&comm);
}

bool RankComm::ready(const std::string &what, const char *algorithm) const
{
    EXPECT_EQ(rc, NBR_SUCCESS) << what << ": " << nbr_error_string(rc);
    if (!all_ranks(rc == NBR_SUCCESS))
        return false;
    const char *name = nullptr;
    EXPECT_EQ(nbr_comm_algorithm(comm, &name), NBR_SUCCESS);
    EXPECT_STREQ(name, algorithm) << what;
    return true;
}

void fill_ints(std::vector<int> &v, int rank, int round)
{
    for (size_t i = 0; i < v.size(); i++)
        v[i] = rank * 1000003 + static_cast<int>(i) * 31 + round * 7;
}

std::vector<std::string> algorithm_names()
{
    std::vector<std::string> out;
    const char *s = nbr_algorithm_names();
    if (!s)
        return out;
    std::string cur;
    for (const char *p = s;; ++p) {
        if (*p == ',' || *p == '\0') {
            size_t b = cur.find_first_not_of(" \t"), e = cur.find_last_not_of(" \t");
            if (b != std::string::npos)
                out.push_back(cur.substr(b, e - b + 1));
            cur.clear();
            if (*p == '\0')
                break;
        } else {
            cur += *p;
        }
    }
    return out;
}

// ================================================================ cases

const char *op_name(Op op)
{
    switch (op) {
    case Op::Allgather: return "allgather";
    case Op::Allgatherv: return "allgatherv";
    case Op::Alltoallv: return "alltoallv";
    case Op::Alltoall: return "alltoall";
    case Op::Alltoallw: return "alltoallw";
    }
    return "?";
}

const char *variant_name(Variant v)
{
    switch (v) {
    case Variant::Blocking: return "blocking";
    case Variant::Nonblocking: return "nonblocking";
    case Variant::Persistent: return "persistent";
    }
    return "?";
}

std::string describe(const Case &c)
{
    std::ostringstream os;
    os << op_name(c.op) << " " << (c.op == Op::Alltoallw ? "mostly " : "")
       << types().pairs[c.pair].name << " ~" << c.bytes << "B " << variant_name(c.variant);
    if (c.variant == Variant::Persistent)
        os << " x" << c.runs;
    if (c.variant == Variant::Nonblocking && c.poll)
        os << " (test-poll)";
    os << " seed=" << c.seed;
    return os.str();
}

namespace {

constexpr size_t kGuard = 64;  // sentinel bytes before and after each recv buffer

bool dense(const TypeDesc *t)
{
    return t->size == t->extent;
}

// One block per neighbor, each with its own element count (and, for
// alltoallw, type) at its own place in the buffer.
bool per_block(Op op)
{
    return op == Op::Alltoall || op == Op::Alltoallv || op == Op::Alltoallw;
}

// Everything about one case that does not change between runs. Blocks are
// indexed like the user's arrays (Neighbors); a block toward MPI_PROC_NULL
// has a nonzero count (where the case moves bytes) and must stay untouched.
struct Plan {
    const TypeDesc *st, *rt;  // the case's pair (alltoallw: per block below)
    Op op;
    uint64_t seed;
    long n;  // typical units per edge
    bool null_bufs;
    int me;
    Neighbors nb;
    std::vector<int> kin, kout;  // nb.in_edge, nb.out_edge
    // send side (elements of the send type): the call's arguments...
    int scount = 0;
    std::vector<int> scounts, sdispls;
    std::vector<MPI_Aint> sdispls_w;   // alltoallw: bytes
    std::vector<MPI_Datatype> stypes;  // alltoallw
    // ...and per out-block (allgather(v): the one block sent to all)
    std::vector<const TypeDesc *> stype;
    std::vector<int> ocount;
    std::vector<size_t> soff;  // bytes from the start of the send buffer
    size_t sbytes = 0;
    bool sdense = true;        // every send type dense
    // receive side (elements of the receive type)
    int rcount = 0;
    std::vector<int> rcounts, rdispls;
    std::vector<MPI_Aint> rdispls_w;
    std::vector<MPI_Datatype> rtypes;
    std::vector<const TypeDesc *> rtype;
    std::vector<size_t> roff;  // bytes from the start of the layout (without guard)
    size_t rbytes = 0;         // without guards
    bool rdense = true;
    // per in-block: what the source sends on that edge
    std::vector<int> src_count;
    std::vector<const TypeDesc *> src_type;
    std::vector<uint8_t> mask;  // 1 where the receive type writes (with guards)

    long vary(uint64_t h, bool no_zero, long units) const
    {
        if (units == 0)
            return 0;
        if (!no_zero && h % 8 == 0)
            return 0;
        const long lo = units - units / 4;
        return lo + static_cast<long>(h % static_cast<uint64_t>(units / 2 + 1));
    }
    uint64_t key(int run, int src, int dst, int k) const
    {
        return mix(seed, static_cast<uint64_t>(run), static_cast<uint64_t>(src),
                   static_cast<uint64_t>(static_cast<int64_t>(dst)), static_cast<uint64_t>(k));
    }
    // Key of the data src sends on its edge to this rank (see Neighbors).
    uint64_t edge_key(int run, int src, int k) const
    {
        return per_block(op) ? key(run, src, me, k) : key(run, src, -1, 0);
    }
    // Key of what this rank sends on out-block j.
    uint64_t out_key(int run, int j) const
    {
        return per_block(op) ? key(run, me, nb.out[j], kout[j]) : key(run, me, -1, 0);
    }
    size_t slot_offset(int i) const { return kGuard + roff[i]; }
    bool missing_in(int i) const { return nb.in[i] == MPI_PROC_NULL; }
    bool missing_out(int j) const { return nb.out[j] == MPI_PROC_NULL; }
};

// Places blocks of the given sizes (elements or bytes) in a buffer in a
// shuffled order with small gaps of up to max_gap; returns the total size.
long place_blocks(const std::vector<long> &sizes, uint64_t seed, std::vector<long> &displs,
                  int max_gap)
{
    const size_t m = sizes.size();
    std::vector<size_t> order(m);
    for (size_t i = 0; i < m; ++i)
        order[i] = i;
    for (size_t i = m; i > 1; --i)
        std::swap(order[i - 1], order[mix(seed, i, 0x5F) % i]);
    displs.assign(m, 0);
    long pos = 0;
    for (size_t idx = 0; idx < m; ++idx) {
        const size_t i = order[idx];
        pos += static_cast<long>(mix(seed, i, 0x6A) % static_cast<uint64_t>(max_gap + 1));
        displs[i] = pos;
        pos += sizes[i];
    }
    return pos + 1;
}

// Element displacements of blocks of the given counts; total elements.
int place_elements(const std::vector<int> &counts, uint64_t seed, std::vector<int> &displs)
{
    std::vector<long> sizes(counts.begin(), counts.end()), d;
    const long total = place_blocks(sizes, seed, d, 2);
    displs.assign(d.begin(), d.end());
    return static_cast<int>(total);
}

Plan make_plan(MPI_Comm comm, const Case &c)
{
    const Types &T = types();
    const TypePair &tp = T.pairs[c.pair];
    Plan p;
    p.st = tp.send;
    p.rt = tp.recv;
    p.op = c.op;
    p.seed = c.seed;
    MPI_Comm_rank(comm, &p.me);
    p.nb = query_neighbors(comm);
    p.kin = p.nb.in_edge;
    p.kout = p.nb.out_edge;
    const size_t ub = tp.unit_bytes();
    p.n = c.bytes == 0 ? 0 : std::max<long>(1, static_cast<long>(c.bytes / ub));
    p.null_bufs = p.n == 0;
    const int indeg = p.nb.indeg(), outdeg = p.nb.outdeg();
    const bool nz = c.no_zero_edges;

    auto units_v = [&](int src) {
        return p.vary(mix(c.seed, static_cast<uint64_t>(src), 0xA6), nz, p.n);
    };
    auto units_a = [&](int src, int dst, int k, long units) {
        return p.vary(mix(c.seed, static_cast<uint64_t>(src), static_cast<uint64_t>(dst),
                          static_cast<uint64_t>(k), 0xA7),
                      nz, units);
    };
    // alltoallw: the type pair of edge (src -> dst, the sender's edge id k),
    // which both of its ends compute alike.
    std::vector<int> dense_pairs;
    for (size_t i = 0; i < T.pairs.size(); ++i)
        if (dense(T.pairs[i].send) && dense(T.pairs[i].recv))
            dense_pairs.push_back(static_cast<int>(i));
    const bool case_dense = dense(tp.send) && dense(tp.recv);
    auto edge_pair = [&](int src, int dst, int k) {
        const uint64_t h = mix(c.seed, static_cast<uint64_t>(src), static_cast<uint64_t>(dst),
                               static_cast<uint64_t>(k), 0xA8);
        if (h & 1)
            return c.pair;
        return case_dense ? dense_pairs[(h >> 1) % dense_pairs.size()]
                          : static_cast<int>((h >> 1) % T.pairs.size());
    };
    auto edge_units = [&](int pair) {
        return c.bytes == 0
                   ? 0L
                   : std::max<long>(1, static_cast<long>(c.bytes / T.pairs[pair].unit_bytes()));
    };

    const uint64_t sseed = mix(c.seed, static_cast<uint64_t>(p.me), 0x51);
    const uint64_t rseed = mix(c.seed, static_cast<uint64_t>(p.me), 0x52);
    p.src_count.assign(indeg, 0);
    p.src_type.assign(indeg, p.st);
    p.rtype.assign(indeg, p.rt);
    p.stype.assign(per_block(c.op) ? outdeg : 1, p.st);
    switch (c.op) {
    case Op::Allgather:
        p.scount = static_cast<int>(p.n) * tp.send_mult;
        p.rcount = static_cast<int>(p.n) * tp.recv_mult;
        p.rcounts.assign(indeg, p.rcount);
        p.rdispls.resize(indeg);
        for (int i = 0; i < indeg; ++i) {
            p.rdispls[i] = i * p.rcount;
            p.src_count[i] = p.scount;
        }
        p.sbytes = static_cast<size_t>(p.scount) * p.st->extent;
        p.rbytes = static_cast<size_t>(indeg) * p.rcount * p.rt->extent;
        break;
    case Op::Allgatherv: {
        p.scount = static_cast<int>(units_v(p.me)) * tp.send_mult;
        p.rcounts.resize(indeg);
        for (int i = 0; i < indeg; ++i) {
            // a missing neighbor's block is there and must stay untouched
            const long u = p.missing_in(i) ? p.n : units_v(p.nb.in[i]);
            p.rcounts[i] = static_cast<int>(u) * tp.recv_mult;
            p.src_count[i] = static_cast<int>(u) * tp.send_mult;
        }
        p.sbytes = static_cast<size_t>(p.scount) * p.st->extent;
        p.rbytes = static_cast<size_t>(place_elements(p.rcounts, rseed, p.rdispls)) * p.rt->extent;
        break;
    }
    case Op::Alltoall:
        p.scount = static_cast<int>(p.n) * tp.send_mult;
        p.rcount = static_cast<int>(p.n) * tp.recv_mult;
        p.scounts.assign(outdeg, p.scount);
        p.sdispls.resize(outdeg);
        for (int j = 0; j < outdeg; ++j)
            p.sdispls[j] = j * p.scount;
        p.rcounts.assign(indeg, p.rcount);
        p.rdispls.resize(indeg);
        for (int i = 0; i < indeg; ++i) {
            p.rdispls[i] = i * p.rcount;
            p.src_count[i] = p.scount;
        }
        p.sbytes = static_cast<size_t>(outdeg) * p.scount * p.st->extent;
        p.rbytes = static_cast<size_t>(indeg) * p.rcount * p.rt->extent;
        break;
    case Op::Alltoallv: {
        p.scounts.resize(outdeg);
        for (int j = 0; j < outdeg; ++j) {
            const long u = p.missing_out(j) ? p.n : units_a(p.me, p.nb.out[j], p.kout[j], p.n);
            p.scounts[j] = static_cast<int>(u) * tp.send_mult;
        }
        p.sbytes = static_cast<size_t>(place_elements(p.scounts, sseed, p.sdispls)) * p.st->extent;
        p.rcounts.resize(indeg);
        for (int i = 0; i < indeg; ++i) {
            const long u = p.missing_in(i) ? p.n : units_a(p.nb.in[i], p.me, p.kin[i], p.n);
            p.rcounts[i] = static_cast<int>(u) * tp.recv_mult;
            p.src_count[i] = static_cast<int>(u) * tp.send_mult;
        }
        p.rbytes = static_cast<size_t>(place_elements(p.rcounts, rseed, p.rdispls)) * p.rt->extent;
        break;
    }
    case Op::Alltoallw: {
        // Byte displacements with gaps of any byte count (no alignment).
        std::vector<long> sizes(outdeg), d;
        p.scounts.resize(outdeg);
        p.stypes.resize(outdeg);
        for (int j = 0; j < outdeg; ++j) {
            const int pair = p.missing_out(j) ? c.pair : edge_pair(p.me, p.nb.out[j], p.kout[j]);
            const TypePair &e = T.pairs[pair];
            const long units = edge_units(pair);
            const long u =
                p.missing_out(j) ? units : units_a(p.me, p.nb.out[j], p.kout[j], units);
            p.stype[j] = e.send;
            p.stypes[j] = e.send->type;
            p.scounts[j] = static_cast<int>(u) * e.send_mult;
            sizes[j] = static_cast<long>(p.scounts[j]) * e.send->extent;
        }
        p.sbytes = static_cast<size_t>(place_blocks(sizes, sseed, d, 11));
        p.sdispls_w.assign(d.begin(), d.end());
        sizes.assign(indeg, 0);
        p.rcounts.resize(indeg);
        p.rtypes.resize(indeg);
        for (int i = 0; i < indeg; ++i) {
            const int pair = p.missing_in(i) ? c.pair : edge_pair(p.nb.in[i], p.me, p.kin[i]);
            const TypePair &e = T.pairs[pair];
            const long units = edge_units(pair);
            const long u =
                p.missing_in(i) ? units : units_a(p.nb.in[i], p.me, p.kin[i], units);
            p.rtype[i] = e.recv;
            p.rtypes[i] = e.recv->type;
            p.rcounts[i] = static_cast<int>(u) * e.recv_mult;
            p.src_type[i] = e.send;
            p.src_count[i] = static_cast<int>(u) * e.send_mult;
            sizes[i] = static_cast<long>(p.rcounts[i]) * e.recv->extent;
        }
        p.rbytes = static_cast<size_t>(place_blocks(sizes, rseed, d, 11));
        p.rdispls_w.assign(d.begin(), d.end());
        break;
    }
    }
    if (p.op == Op::Alltoallw) {
        p.soff.assign(p.sdispls_w.begin(), p.sdispls_w.end());
        p.roff.assign(p.rdispls_w.begin(), p.rdispls_w.end());
    } else {
        p.soff.assign(p.stype.size(), 0);
        for (size_t j = 0; per_block(c.op) && j < p.soff.size(); ++j)
            p.soff[j] = static_cast<size_t>(p.sdispls[j]) * p.st->extent;
        p.roff.resize(indeg);
        for (int i = 0; i < indeg; ++i)
            p.roff[i] = static_cast<size_t>(p.rdispls[i]) * p.rt->extent;
    }
    p.ocount = per_block(c.op) ? p.scounts : std::vector<int>(1, p.scount);
    // alltoallw: every block's type; the others: the one type, also where a
    // rank has no block (nbrcoll checks the type against the memory anyway)
    p.sdense = dense(p.st);
    p.rdense = dense(p.rt);
    if (p.op == Op::Alltoallw) {
        p.sdense = std::all_of(p.stype.begin(), p.stype.end(), dense);
        p.rdense = std::all_of(p.rtype.begin(), p.rtype.end(), dense);
    }

    // Which bytes of the receive buffer the receive types may write.
    p.mask.assign(p.rbytes + 2 * kGuard, 0);
    for (int i = 0; i < indeg; ++i) {
        if (p.rcounts[i] == 0 || p.missing_in(i))
            continue;
        const int len = p.rcounts[i] * p.rtype[i]->size;
        std::vector<uint8_t> ones(static_cast<size_t>(len), 1);
        int pos = 0;
        MPI_Unpack(ones.data(), len, &pos, p.mask.data() + p.slot_offset(i), p.rcounts[i],
                   p.rtype[i]->type, MPI_COMM_SELF);
    }
    return p;
}

void fill_send(const Plan &p, int run, std::vector<uint8_t> &sbuf)
{
    if (sbuf.empty())
        return;
    if (!per_block(p.op)) {
        fill_random(sbuf.data(), sbuf.size(), p.out_key(run, 0));
        return;
    }
    fill_random(sbuf.data(), sbuf.size(), p.key(run, p.me, -2, 0));  // gaps
    for (int j = 0; j < p.nb.outdeg(); ++j)
        fill_random(sbuf.data() + p.soff[j],
                    static_cast<size_t>(p.scounts[j]) * p.stype[j]->extent, p.out_key(run, j));
}

// Block of the receive buffer holding byte offset off (with guards), or -1.
int slot_of(const Plan &p, size_t off)
{
    for (int i = 0; i < p.nb.indeg(); ++i) {
        const size_t b = p.slot_offset(i);
        const size_t e = b + static_cast<size_t>(p.rcounts[i]) * p.rtype[i]->extent;
        if (off >= b && off < e)
            return i;
    }
    return -1;
}

std::string where_text(const Plan &p, size_t off)
{
    std::ostringstream os;
    os << "byte " << static_cast<long>(off) - static_cast<long>(kGuard) << " of recvbuf";
    if (off < kGuard || off >= kGuard + p.rbytes)
        os << " (guard zone outside the receive layout)";
    const int i = slot_of(p, off);
    if (i >= 0 && p.missing_in(i))
        os << " (block " << i << ", toward MPI_PROC_NULL: must stay untouched)";
    else if (i >= 0)
        os << " (block " << i << ", source " << p.nb.in[i] << ")";
    return os.str();
}

// Checks one receive buffer on its own: gaps and blocks of missing
// neighbors untouched, each block holds exactly what its source sent
// there. Returns true when it passes.
bool check_result(const Plan &p, const std::vector<uint8_t> &buf, int run,
                  const std::string &who, const std::string &where)
{
    bool ok = true;
    for (size_t b = 0; b < buf.size(); ++b) {
        if (!p.mask[b] && buf[b] != sentinel_byte(b, run)) {
            ADD_FAILURE() << where << " run " << run << ": " << who << " wrote "
                          << where_text(p, b) << ", which the receive layout leaves untouched";
            ok = false;
            break;
        }
    }
    for (int i = 0; i < p.nb.indeg(); ++i) {
        if (p.rcounts[i] == 0 || p.missing_in(i))
            continue;
        const int src = p.nb.in[i];
        const TypeDesc *st = p.src_type[i];
        std::vector<uint8_t> srcbuf(static_cast<size_t>(p.src_count[i]) * st->extent);
        fill_random(srcbuf.data(), srcbuf.size(), p.edge_key(run, src, p.kin[i]));
        std::vector<uint8_t> want = pack(srcbuf.data(), p.src_count[i], st->type);
        std::vector<uint8_t> got =
            pack(buf.data() + p.slot_offset(i), p.rcounts[i], p.rtype[i]->type);
        if (want != got) {
            size_t d = 0;
            while (d < want.size() && d < got.size() && want[d] == got[d])
                ++d;
            ADD_FAILURE() << where << " run " << run << ": " << who << " block " << i
                          << " (source " << src << ", its edge " << p.kin[i]
                          << ") differs from the data the source sent, first at packed byte "
                          << d << " of " << want.size();
            ok = false;
            break;
        }
    }
    return ok;
}

bool compare_bufs(const Plan &p, const std::vector<uint8_t> &ref, const std::vector<uint8_t> &got,
                  int run, const std::string &where)
{
    if (ref == got)
        return true;
    size_t d = 0;
    while (ref[d] == got[d])
        ++d;
    ADD_FAILURE() << where << " run " << run << ": nbrcoll result differs from MPI_Neighbor_* at "
                  << where_text(p, d) << ": MPI 0x" << std::hex << int(ref[d]) << ", nbrcoll 0x"
                  << int(got[d]) << std::dec;
    return false;
}

}  // namespace

struct CaseRunner::Impl {
    MPI_Comm comm;
    Case c;
    Plan p;
    std::string where;
    std::vector<uint8_t> sbuf, ref, tst;
    const void *sp = nullptr;
    uint8_t *rref = nullptr, *rtst = nullptr;
    // device mirrors handed to nbrcoll (NBR_TEST_MEMORY)
    uint8_t *dsend = nullptr, *drecv = nullptr;
};

namespace {

// Whether nbrcoll gets device memory for one buffer of this case; is_dense:
// every datatype of that buffer is.
bool on_device(const Case &c, int me, int which, bool is_dense)
{
    switch (test_memory()) {
    case TestMemory::Host: return false;
    case TestMemory::Device: return is_dense;
    case TestMemory::Mixed: return is_dense && (mix(c.seed, static_cast<uint64_t>(me), which, c.bytes) & 1);
    }
    return false;
}

}  // namespace

CaseRunner::CaseRunner(MPI_Comm comm, const Case &c, const std::string &ctx) : impl_(new Impl)
{
    Impl &m = *impl_;
    m.comm = comm;
    m.c = c;
    m.p = make_plan(comm, c);
    m.where = ctx + " " + describe(c) + " rank " + std::to_string(m.p.me);
    if (tracing() && m.p.me == 0)
        note("case " + ctx + " " + describe(c));
    m.sbuf.resize(m.p.sbytes);
    m.ref.resize(m.p.rbytes + 2 * kGuard);
    m.tst.resize(m.p.rbytes + 2 * kGuard);
    m.sp = m.p.null_bufs ? nullptr : ptr_or_null(m.sbuf);
    m.rref = m.p.null_bufs ? nullptr : m.ref.data() + kGuard;
    m.rtst = m.p.null_bufs ? nullptr : m.tst.data() + kGuard;
    if (!m.p.null_bufs && m.p.sbytes > 0 && on_device(c, m.p.me, 1, m.p.sdense)) {
        m.dsend = static_cast<uint8_t *>(device_alloc(m.p.sbytes));
        if (m.dsend)
            m.sp = m.dsend;
    }
    if (!m.p.null_bufs && on_device(c, m.p.me, 2, m.p.rdense)) {
        m.drecv = static_cast<uint8_t *>(device_alloc(m.tst.size()));
        if (m.drecv)
            m.rtst = m.drecv + kGuard;
    }
}

CaseRunner::~CaseRunner()
{
    if (impl_->dsend)
        device_free(impl_->dsend);
    if (impl_->drecv)
        device_free(impl_->drecv);
    delete impl_;
}

const std::string &CaseRunner::where() const { return impl_->where; }

void CaseRunner::prepare(int run)
{
    Impl &m = *impl_;
    fill_send(m.p, run, m.sbuf);
    fill_sentinel(m.ref, run);
    fill_sentinel(m.tst, run);
    if (m.dsend)
        device_copy(m.dsend, m.sbuf.data(), m.sbuf.size());
    if (m.drecv)
        device_copy(m.drecv, m.tst.data(), m.tst.size());
}

// Always the blocking MPI_Neighbor_*: Open MPI 4.1's nonblocking and
// persistent alltoall forms misplace blocks where both directions of a
// periodic cartesian dimension reach the same rank (open-mpi/ompi#14416).
void CaseRunner::reference()
{
    Impl &m = *impl_;
    Plan &p = m.p;
    // Open MPI rejects some NULL arguments that MPI allows with zero
    // counts or degree (e.g. allgatherv's recvcounts on a rank without
    // in-neighbors); nbrcoll gets the NULLs, the reference dummies.
    static uint8_t dummy[16];
    static int zeros[4];
    static MPI_Aint zero_displs[4];
    MPI_Datatype no_types[4] = {MPI_BYTE, MPI_BYTE, MPI_BYTE, MPI_BYTE};
    // the host copy of a device send buffer: MPI need not read GPU memory
    const void *sp = m.dsend ? static_cast<const void *>(m.sbuf.data()) : m.sp ? m.sp : dummy;
    uint8_t *rref = m.rref ? m.rref : dummy;
    const int *rcounts = p.rcounts.empty() ? zeros : p.rcounts.data();
    const int *rdispls = p.rdispls.empty() ? zeros : p.rdispls.data();
    const int *scounts = p.scounts.empty() ? zeros : p.scounts.data();
    const int *sdispls = p.sdispls.empty() ? zeros : p.sdispls.data();
    const MPI_Aint *sdw = p.sdispls_w.empty() ? zero_displs : p.sdispls_w.data();
    const MPI_Aint *rdw = p.rdispls_w.empty() ? zero_displs : p.rdispls_w.data();
    const MPI_Datatype *stypes = p.stypes.empty() ? no_types : p.stypes.data();
    const MPI_Datatype *rtypes = p.rtypes.empty() ? no_types : p.rtypes.data();
    int mrc = MPI_SUCCESS;
    switch (m.c.op) {
    case Op::Allgather:
        mrc = MPI_Neighbor_allgather(sp, p.scount, p.st->type, rref, p.rcount, p.rt->type,
                                     m.comm);
        break;
    case Op::Allgatherv:
        mrc = MPI_Neighbor_allgatherv(sp, p.scount, p.st->type, rref, rcounts,
                                      rdispls, p.rt->type, m.comm);
        break;
    case Op::Alltoallv:
        mrc = MPI_Neighbor_alltoallv(sp, scounts, sdispls,
                                     p.st->type, rref, rcounts,
                                     rdispls, p.rt->type, m.comm);
        break;
    case Op::Alltoall:
        mrc = MPI_Neighbor_alltoall(sp, p.scount, p.st->type, rref, p.rcount, p.rt->type,
                                    m.comm);
        break;
    case Op::Alltoallw: {
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION >= 40000000 && MPICH_NUMVERSION < 40100000
        // MPICH 4.0 converts alltoallw's counts over the wrong degrees
        // (pmodels/mpich#6233); its large-count form takes them as they are
        std::vector<MPI_Count> sc(scounts, scounts + p.nb.outdeg()), rc(rcounts, rcounts + p.nb.indeg());
        sc.push_back(0);
        rc.push_back(0);
        mrc = MPI_Neighbor_alltoallw_c(sp, sc.data(), sdw, stypes, rref, rc.data(), rdw, rtypes,
                                       m.comm);
#else
        mrc = MPI_Neighbor_alltoallw(sp, scounts, sdw, stypes, rref, rcounts, rdw, rtypes,
                                     m.comm);
#endif
        break;
    }
    }
    EXPECT_EQ(mrc, MPI_SUCCESS) << m.where << ": MPI reference call failed";
}

// Whether the MPI library's own call is a reference for this rank: MPICH
// reverses the receives of a source a rank lists more than once in its
// alltoall forms (pmodels/mpich#7945). Where it is not, nbrcoll is held
// to the data the sources sent alone.
static bool reference_trusted(const Plan &p)
{
#if defined(MPICH_NUMVERSION)
    if (p.op == Op::Alltoall || p.op == Op::Alltoallv || p.op == Op::Alltoallw) {
        std::vector<int> sources;
        for (int r : p.nb.in)
            if (r != MPI_PROC_NULL)
                sources.push_back(r);
        std::sort(sources.begin(), sources.end());
        return std::adjacent_find(sources.begin(), sources.end()) == sources.end();
    }
#endif
    (void)p;
    return true;
}

int CaseRunner::call_blocking()
{
    Impl &m = *impl_;
    Plan &p = m.p;
    switch (m.c.op) {
    case Op::Allgather:
        return nbr_neighbor_allgather(m.sp, p.scount, p.st->type, m.rtst, p.rcount, p.rt->type,
                                      m.comm);
    case Op::Allgatherv:
        return nbr_neighbor_allgatherv(m.sp, p.scount, p.st->type, m.rtst, ptr_or_null(p.rcounts),
                                       ptr_or_null(p.rdispls), p.rt->type, m.comm);
    case Op::Alltoallv:
        return nbr_neighbor_alltoallv(m.sp, ptr_or_null(p.scounts), ptr_or_null(p.sdispls),
                                      p.st->type, m.rtst, ptr_or_null(p.rcounts),
                                      ptr_or_null(p.rdispls), p.rt->type, m.comm);
    case Op::Alltoall:
        return nbr_neighbor_alltoall(m.sp, p.scount, p.st->type, m.rtst, p.rcount, p.rt->type,
                                     m.comm);
    case Op::Alltoallw:
        return nbr_neighbor_alltoallw(m.sp, ptr_or_null(p.scounts), ptr_or_null(p.sdispls_w),
                                      ptr_or_null(p.stypes), m.rtst, ptr_or_null(p.rcounts),
                                      ptr_or_null(p.rdispls_w), ptr_or_null(p.rtypes), m.comm);
    }
    return NBR_ERR_INTERNAL;
}

int CaseRunner::call_nonblocking(nbr_request_t *req)
{
    Impl &m = *impl_;
    Plan &p = m.p;
    std::vector<int> scounts = p.scounts, sdispls = p.sdispls, rcounts = p.rcounts,
                     rdispls = p.rdispls;
    std::vector<MPI_Aint> sdw = p.sdispls_w, rdw = p.rdispls_w;
    std::vector<MPI_Datatype> stypes = p.stypes, rtypes = p.rtypes;
    int rc = NBR_ERR_INTERNAL;
    switch (m.c.op) {
    case Op::Allgather:
        rc = nbr_neighbor_iallgather(m.sp, p.scount, p.st->type, m.rtst, p.rcount, p.rt->type,
                                     m.comm, req);
        break;
    case Op::Allgatherv:
        rc = nbr_neighbor_iallgatherv(m.sp, p.scount, p.st->type, m.rtst, ptr_or_null(rcounts),
                                      ptr_or_null(rdispls), p.rt->type, m.comm, req);
        break;
    case Op::Alltoallv:
        rc = nbr_neighbor_ialltoallv(m.sp, ptr_or_null(scounts), ptr_or_null(sdispls),
                                     p.st->type, m.rtst, ptr_or_null(rcounts),
                                     ptr_or_null(rdispls), p.rt->type, m.comm, req);
        break;
    case Op::Alltoall:
        rc = nbr_neighbor_ialltoall(m.sp, p.scount, p.st->type, m.rtst, p.rcount, p.rt->type,
                                    m.comm, req);
        break;
    case Op::Alltoallw:
        rc = nbr_neighbor_ialltoallw(m.sp, ptr_or_null(scounts), ptr_or_null(sdw),
                                     ptr_or_null(stypes), m.rtst, ptr_or_null(rcounts),
                                     ptr_or_null(rdw), ptr_or_null(rtypes), m.comm, req);
        break;
    }
    for (auto *v : {&scounts, &sdispls, &rcounts, &rdispls})
        std::fill(v->begin(), v->end(), -1000000);
    for (auto *v : {&sdw, &rdw})
        std::fill(v->begin(), v->end(), -1000000);
    for (auto *v : {&stypes, &rtypes})
        std::fill(v->begin(), v->end(), MPI_DATATYPE_NULL);
    return rc;
}

int CaseRunner::call_init(MPI_Info info, nbr_request_t *req)
{
    Impl &m = *impl_;
    Plan &p = m.p;
    switch (m.c.op) {
    case Op::Allgather:
        return nbr_neighbor_allgather_init(m.sp, p.scount, p.st->type, m.rtst, p.rcount,
                                           p.rt->type, m.comm, info, req);
    case Op::Allgatherv:
        return nbr_neighbor_allgatherv_init(m.sp, p.scount, p.st->type, m.rtst,
                                            ptr_or_null(p.rcounts), ptr_or_null(p.rdispls),
                                            p.rt->type, m.comm, info, req);
    case Op::Alltoallv:
        return nbr_neighbor_alltoallv_init(m.sp, ptr_or_null(p.scounts), ptr_or_null(p.sdispls),
                                           p.st->type, m.rtst, ptr_or_null(p.rcounts),
                                           ptr_or_null(p.rdispls), p.rt->type, m.comm, info,
                                           req);
    case Op::Alltoall:
        return nbr_neighbor_alltoall_init(m.sp, p.scount, p.st->type, m.rtst, p.rcount,
                                          p.rt->type, m.comm, info, req);
    case Op::Alltoallw:
        return nbr_neighbor_alltoallw_init(
            m.sp, ptr_or_null(p.scounts), ptr_or_null(p.sdispls_w), ptr_or_null(p.stypes), m.rtst,
            ptr_or_null(p.rcounts), ptr_or_null(p.rdispls_w), ptr_or_null(p.rtypes), m.comm,
            info, req);
    }
    return NBR_ERR_INTERNAL;
}

bool CaseRunner::check(int run)
{
    Impl &m = *impl_;
    if (m.p.null_bufs)
        return true;
    if (m.drecv)
        device_copy(m.tst.data(), m.drecv, m.tst.size());
    const bool trusted = reference_trusted(m.p);
    if (trusted)
        check_result(m.p, m.ref, run, "MPI_Neighbor_* (reference)", m.where);
    if (!check_result(m.p, m.tst, run, "nbrcoll", m.where))
        return false;
    return !trusted || compare_bufs(m.p, m.ref, m.tst, run, m.where);
}

std::vector<size_t> CaseRunner::out_bytes() const
{
    const Plan &p = impl_->p;
    std::vector<size_t> out(p.nb.outdeg());
    for (int j = 0; j < p.nb.outdeg(); ++j) {
        const int b = per_block(p.op) ? j : 0;
        out[j] = p.missing_out(j) ? 0 : static_cast<size_t>(p.ocount[b]) * p.stype[b]->size;
    }
    return out;
}

namespace {

int poll_until_done(nbr_request_t *req)
{
    int flag = 0, rc = NBR_SUCCESS;
    for (;;) {
        rc = nbr_test(req, &flag);
        if (rc != NBR_SUCCESS || flag)
            return rc;
        sched_yield();
    }
}

}  // namespace

CaseResult run_case(MPI_Comm comm, const Case &c, const std::string &ctx)
{
    CaseResult res;
    CaseRunner R(comm, c, ctx);
    const std::string &where = R.where();
    res.out_bytes = R.out_bytes();

    auto expect_ok = [&](int rc, const char *call) {
        if (rc == NBR_SUCCESS)
            return true;
        ADD_FAILURE() << where << ": " << call << " returned " << status_text(rc);
        note(where + ": " + call + " returned " + status_text(rc));
        res.nbr_ok = false;
        return false;
    };

    nbr_counters_t c0{}, c1{};
    const bool have_c0 = c.check_calls && nbr_get_counters(comm, &c0) == NBR_SUCCESS;
    res.nbr_ok = true;

    switch (c.variant) {
    case Variant::Blocking:
        R.prepare(0);
        R.reference();
        if (expect_ok(R.call_blocking(), "blocking call")) {
            res.nbr_ops = 1;
            R.check(0);
        }
        break;
    case Variant::Nonblocking: {
        R.prepare(0);
        nbr_request_t req = NBR_REQUEST_NULL;
        const bool posted = expect_ok(R.call_nonblocking(&req), "nonblocking call");
        if (posted) {
            EXPECT_NE(req, NBR_REQUEST_NULL) << where << ": no request returned";
        }
        R.reference();  // runs while the nbrcoll operation is in flight
        if (posted && req != NBR_REQUEST_NULL) {
            const int rc = c.poll ? poll_until_done(&req) : nbr_wait(&req);
            if (expect_ok(rc, c.poll ? "nbr_test" : "nbr_wait")) {
                EXPECT_EQ(req, NBR_REQUEST_NULL)
                    << where << ": request not reset to NBR_REQUEST_NULL on completion";
                res.nbr_ops = 1;
                R.check(0);
            }
        }
        break;
    }
    case Variant::Persistent: {
        nbr_request_t req = NBR_REQUEST_NULL;
        if (!expect_ok(R.call_init(c.init_info, &req), "persistent _init"))
            break;
        EXPECT_NE(req, NBR_REQUEST_NULL) << where << ": _init returned no request";
        if (req == NBR_REQUEST_NULL)
            break;
        for (int run = 0; run < c.runs; ++run) {
            R.prepare(run);  // new send data in the same buffer for every start
            if (!expect_ok(nbr_start(&req), "nbr_start"))
                break;
            const bool by_test = run == c.runs - 1;  // the last run is polled
            int rc;
            if (by_test) {
                rc = poll_until_done(&req);
                R.reference();
            } else {
                R.reference();
                rc = nbr_wait(&req);
            }
            if (!expect_ok(rc, by_test ? "nbr_test" : "nbr_wait"))
                break;
            EXPECT_NE(req, NBR_REQUEST_NULL)
                << where << ": persistent request reset to NULL on completion";
            if (req == NBR_REQUEST_NULL)
                break;
            res.nbr_ops++;
            R.check(run);
        }
        if (req != NBR_REQUEST_NULL) {
            expect_ok(nbr_request_free(&req), "nbr_request_free");
            EXPECT_EQ(req, NBR_REQUEST_NULL) << where << ": nbr_request_free left the handle";
        }
        break;
    }
    }

    if (have_c0) {
        if (nbr_get_counters(comm, &c1) == NBR_SUCCESS) {
            EXPECT_EQ(c1.calls - c0.calls, static_cast<uint64_t>(res.nbr_ops))
                << where << ": nbr_counters.calls did not count the completed operations";
        } else {
            ADD_FAILURE() << where << ": nbr_get_counters failed after the case";
        }
    }
    return res;
}

std::string algorithm_run(MPI_Comm comm, const std::string &configured, Variant v)
{
    nbr_comm_t *state = nullptr;
    const nbr_algorithm_t *a = nbr_algorithm_find(configured.c_str());
    if (v == Variant::Blocking || !a || nbr_comm_get(comm, MPI_INFO_NULL, &state) != NBR_SUCCESS ||
        !state->no_progress_hook || nbr_select_one_message_per_edge(a))
        return configured;
    return nbr_baseline_algorithm()->name;
}

}  // namespace nbrtest
