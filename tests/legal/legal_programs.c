/* legal_programs: a seeded generator of legal but unusual MPI programs
 * around the neighborhood collectives, and their runner, in one MPI job.
 *
 *   legal_programs --first SEED --count N [--calls-per-program K] [--trace]
 *
 * runs the programs of seeds SEED .. SEED+N-1 one after another. Every rank
 * draws the same program from the seed (one generator stream, consumed the
 * same way everywhere); what a rank may choose alone (completion method and
 * order, buffer layouts) comes from hashes of (seed, rank, ...), which any
 * rank can recompute, so a receiver knows what each sender sends.
 *
 * A program creates 1-3 topology communicators (distributed graphs made
 * adjacent or not: rings, random sparse and dense multigraphs with repeated
 * edges and self-loops, isolated ranks, sources-only and sinks-only ranks,
 * two components; cartesian grids with periodic and open dimensions of 1
 * and 2; MPI-1 graphs, symmetric multigraphs), some on fewer ranks than the
 * world; then K neighborhood calls: allgather with one block size per
 * connected send/receive component (only a sender and its receivers must
 * agree), allgatherv, alltoall, alltoallv with zero counts, alltoallw; a
 * vector type on either end; blocking, nonblocking (several in flight, on
 * one or several communicators, completed by Wait / Waitall / Waitany /
 * Testall / Test loops in a per-rank order) and persistent (started several
 * times, then freed); interleaved with barriers, a world allreduce on a
 * duplicate, point-to-point shifts, while requests are in flight; and
 * erroneous calls (one receiver's count short of its sender's: an error on
 * that rank only), each followed by correct calls on the same communicator.
 *
 * Deadlock freedom: every rank makes the same calls on a communicator in
 * the same order, and every blocking operation (barrier, allreduce,
 * sendrecv, blocking collective) is reached by all its participants before
 * any of them waits for something only a later step provides.
 *
 * Plain MPI is the reference (Open MPI 4.1, MPICH 4.0), so the programs keep
 * out of what it gets wrong itself (each place says why; MPICH's at the
 * choice of a call): Open MPI's nonblocking and persistent
 * alltoall forms misplace blocks where both directions of a periodic
 * dimension reach the same rank (open-mpi/ompi#14416), so there the
 * alltoall family is blocking only; its blocking allgather skips the call
 * on a rank whose send or receive count is 0, so blocking allgathers
 * move at least one int; it requires a rank's alltoall send and receive
 * sizes to be equal; and after an erroneous call it may leave receives
 * posted, so a short receiver has a single in-edge.
 *
 * MPI_Dist_graph_create leaves the neighbor order to MPI (Open MPI's varies
 * from run to run): the lists are gathered after creation, and data, counts
 * and digests hang on edges named apart from the order (topo_t.cid).
 *
 * Results: every sender's data is a function of (seed, call, sender, block,
 * element), so each receiver checks its whole receive buffer (gaps and
 * MPI_PROC_NULL slots included, which must keep their fill) on its own:
 * "FAIL seed S call C rank R: what" on stderr. Received bytes and each
 * call's error yes/no fold into a digest per rank (FNV-1a 64), combined in
 * rank order at rank 0, which prints "program SEED digest HEX calls C" (and
 * "begin SEED" on stderr first, so that a hang names its program). The
 * exit status is 1 when any check failed. */
#include "legal_shim.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 64      /* ranks */
#define MAXT 3       /* topologies per program */
#define MAXLIVE 16   /* operations alive at once (in flight or persistent) */
#define MAXFLIGHT 6  /* nonblocking and started persistent ones */
#define MAXPERS 4    /* persistent requests per program */
#define MAXARRAY 64  /* requests in one completion call */
#define CID_REPEATS 4096

enum { K_ADJACENT, K_DIST, K_CART, K_GRAPH };
enum { OP_AG, OP_AGV, OP_A2A, OP_A2AV, OP_A2AW };
enum { F_BLOCKING, F_NONBLOCKING, F_PERSISTENT };
enum { M_WAIT, M_WAITALL, M_WAITANY, M_TESTALL, M_TEST, M_COUNT };

static const char *op_names[] = {"allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw"};
static const char *form_names[] = {"blocking", "nonblocking", "persistent"};

static int P, me;
static uint64_t seed_now; /* the program being run */
static int call_now = -1; /* for FAIL lines outside calls */
static long failures_total;
static int trace;
static int avoid_allgather_sizes; /* --avoid allgather-sizes (diagnosis) */
static MPI_Comm world_dup;
static MPI_Datatype vec2; /* 2 ints, stride 2: extent 3 ints, a gap in each */

/* ---------------------------------------------------------------- hashing */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A hash of up to four values under a key: every per-rank and per-edge
 * choice is one, so any rank can compute any other rank's. */
static uint64_t h4(uint64_t key, uint64_t a, uint64_t b, uint64_t c)
{
    return mix64(key ^ mix64(a + 0x9e3779b97f4a7c15ull * (1 + mix64(b ^ mix64(c + 77)))));
}

typedef struct {
    uint64_t s;
} rng_t;

static uint64_t rnext(rng_t *g)
{
    g->s += 0x9e3779b97f4a7c15ull;
    return mix64(g->s);
}

static int rint_(rng_t *g, int n) { return n <= 0 ? 0 : (int)(rnext(g) % (uint64_t)n); }
static int chance(rng_t *g, int percent) { return rint_(g, 100) < percent; }

static void shuffle(rng_t *g, int *v, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = rint_(g, i + 1), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}
#define FNV_START 0xcbf29ce484222325ull

/* element e of block blk sent by rank sender in call (blk: 0 for
 * allgather, the edge's canonical id for alltoall) */
static int value(int call, int sender, int blk, int e)
{
    return (int)(uint32_t)h4(seed_now, (uint64_t)call, ((uint64_t)sender << 32) | (uint64_t)blk,
                             (uint64_t)e);
}
/* what a receive buffer holds before the call, and a send buffer's gaps */
static int filler(int call, int rank, int at, int salt)
{
    return (int)(uint32_t)h4(seed_now ^ 0x5eedf111u, (uint64_t)call * 8 + (uint64_t)salt,
                             (uint64_t)rank, (uint64_t)at);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    fprintf(stderr, "FAIL seed %llu call %d rank %d: %s\n", (unsigned long long)seed_now, call_now,
            me, text);
    fflush(stderr);
    failures_total++;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "legal_programs: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* MPICH 4.0 as the reference: it reports no short receive in its blocking
 * allgather, and after one a persistent request of the program may fail
 * to start or corrupt the heap; there the programs make correct calls
 * only (what nbrcoll does with erroneous ones is held to Open MPI's). */
static int mpich_reference(void)
{
#if defined(MPICH_NUMVERSION)
    return 1;
#else
    return 0;
#endif
}

/* -------------------------------------------------------------- topologies */

typedef struct {
    int kind, members; /* world ranks 0 .. members-1 belong (reorder is 0) */
    MPI_Comm comm;     /* MPI_COMM_NULL on the other ranks */
    int small_periodic;
    int repeated;       /* some rank lists a source twice */
    int degrees_differ; /* some rank's in- and out-degree differ */
    int indeg[MAXP], outdeg[MAXP];
    int *in[MAXP], *out[MAXP]; /* every rank's lists, MPI_PROC_NULL kept */
    int *match[MAXP];          /* in-slot j of r gets out-slot match[r][j] of in[r][j] */
    /* An out-slot's edge named apart from the slot order, which
     * MPI_Dist_graph_create leaves to MPI (Open MPI's varies from run to
     * run): destination * CID_REPEATS + how many earlier slots of the
     * sender go there too. Data and counts hang on it, so that results
     * and digests do not depend on the order. */
    int *cid[MAXP];
    /* union-find: a rank's sends s, its receives P + r (allgather's
     * components), and 2P + r for the undirected graph (alltoall's) */
    int parent[3 * MAXP];
    char desc[96];
} topo_t;

static int uf_find(topo_t *t, int x)
{
    while (t->parent[x] != x)
        x = t->parent[x] = t->parent[t->parent[x]];
    return x;
}

static void set_list(int **dst, const int *src, int n)
{
    *dst = xcalloc((size_t)n, sizeof(int));
    memcpy(*dst, src, (size_t)n * sizeof(int));
}

/* A directed multigraph on the world: one of a few shapes, then maybe a
 * repeated edge and a self-loop. Returns the number of edges. */
static int make_edges(rng_t *g, int (*e)[2], int cap, char *desc, int len)
{
    static const char *shapes[] = {"ring",  "sparse",   "dense", "two-components",
                                   "bipartite", "isolated", "star",  "empty"};
    int shape = rint_(g, 8), n = 0;
#define EDGE(a, b)                 \
    do {                           \
        if (n < cap) {             \
            e[n][0] = (a);         \
            e[n][1] = (b);         \
            n++;                   \
        }                          \
    } while (0)
    switch (shape) {
    case 0: { /* directed ring, step 1 or more */
        int step = 1 + rint_(g, P > 1 ? P - 1 : 1);
        for (int r = 0; r < P; r++)
            EDGE(r, (r + step) % P);
        break;
    }
    case 1:
        for (int r = 0; r < P; r++)
            for (int k = rint_(g, 3); k > 0; k--)
                EDGE(r, rint_(g, P));
        break;
    case 2:
        for (int a = 0; a < P; a++)
            for (int b = 0; b < P; b++)
                for (int k = chance(g, 70) + chance(g, 10); k > 0; k--)
                    EDGE(a, b);
        break;
    case 3: { /* no edge between the halves */
        int half = P / 2 > 0 ? P / 2 : 1;
        for (int r = 0; r < P; r++) {
            int lo = r < half ? 0 : half, hi = r < half ? half : P;
            for (int k = 1 + rint_(g, 2); k > 0; k--)
                EDGE(r, lo + rint_(g, hi - lo));
        }
        break;
    }
    case 4: { /* the first half only sends, the rest only receive */
        int half = P / 2 > 0 ? P / 2 : 1;
        for (int a = 0; a < half; a++)
            for (int b = half; b < P; b++)
                if (chance(g, 60))
                    EDGE(a, b);
        break;
    }
    case 5: { /* about half the ranks take no part at all */
        int live[MAXP], nl = 0;
        for (int r = 0; r < P; r++)
            if (chance(g, 50))
                live[nl++] = r;
        for (int i = 0; i < nl; i++)
            for (int k = rint_(g, 3); k > 0; k--)
                EDGE(live[i], live[rint_(g, nl)]);
        break;
    }
    case 6: { /* one rank sends to all, or all send to one */
        int c = rint_(g, P), inward = chance(g, 50);
        for (int r = 0; r < P; r++)
            if (r != c)
                EDGE(inward ? r : c, inward ? c : r);
        break;
    }
    default:
        break;
    }
    if (n > 0 && chance(g, 30)) { /* repeat an edge */
        int k = rint_(g, n);
        EDGE(e[k][0], e[k][1]);
    }
    if (chance(g, 25)) { /* a self-loop */
        int r = rint_(g, P);
        EDGE(r, r);
    }
#undef EDGE
    snprintf(desc, (size_t)len, "%s, %d edges", shapes[shape], n);
    return n;
}

/* Every rank's in- and out-lists from an edge list, each in a random order. */
static void lists_from_edges(rng_t *g, topo_t *t, int (*e)[2], int n)
{
    int buf[4 * MAXP * MAXP + 8];
    for (int r = 0; r < P; r++) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (e[i][0] == r)
                buf[k++] = e[i][1];
        shuffle(g, buf, k);
        t->outdeg[r] = k;
        set_list(&t->out[r], buf, k);
        k = 0;
        for (int i = 0; i < n; i++)
            if (e[i][1] == r)
                buf[k++] = e[i][0];
        shuffle(g, buf, k);
        t->indeg[r] = k;
        set_list(&t->in[r], buf, k);
    }
}

/* Which out-slot of its sender feeds each in-slot: for graphs the k-th
 * time r lists s as a source pairs with the k-th time s lists r as a
 * destination; on a grid the block from the lower neighbor along a
 * dimension is the one it sent upward, and the other way round (which is
 * what makes a periodic dimension of 1 or 2 well defined). */
static void compute_matching(topo_t *t, int cart)
{
    for (int r = 0; r < P; r++) {
        t->cid[r] = xcalloc((size_t)t->outdeg[r], sizeof(int));
        for (int k = 0; k < t->outdeg[r]; k++) {
            int d = t->out[r][k], occ = 0;
            for (int i = 0; i < k; i++)
                occ += t->out[r][i] == d;
            t->cid[r][k] = (d == MPI_PROC_NULL ? MAXP : d) * CID_REPEATS + occ;
        }
    }
    for (int r = 0; r < P; r++) {
        t->match[r] = xcalloc((size_t)t->indeg[r], sizeof(int));
        for (int j = 0; j < t->indeg[r]; j++) {
            int s = t->in[r][j];
            if (s == MPI_PROC_NULL) {
                t->match[r][j] = -1;
                continue;
            }
            if (cart) {
                t->match[r][j] = j ^ 1;
                continue;
            }
            int nth = 0;
            for (int i = 0; i < j; i++)
                nth += t->in[r][i] == s;
            int k = 0;
            for (; k < t->outdeg[s]; k++)
                if (t->out[s][k] == r && nth-- == 0)
                    break;
            if (k == t->outdeg[s]) {
                fprintf(stderr, "legal_programs: seed %llu: inconsistent lists (a generator bug)\n",
                        (unsigned long long)seed_now);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            t->match[r][j] = k;
        }
    }
    for (int x = 0; x < 3 * P; x++)
        t->parent[x] = x;
    for (int r = 0; r < P; r++)
        for (int j = 0; j < t->indeg[r]; j++)
            if (t->in[r][j] != MPI_PROC_NULL) {
                int a = uf_find(t, t->in[r][j]), b = uf_find(t, P + r);
                if (a != b)
                    t->parent[a] = b;
                a = uf_find(t, 2 * P + t->in[r][j]), b = uf_find(t, 2 * P + r);
                if (a != b)
                    t->parent[a] = b;
            }
}

static int same_list(const int *a, const int *b, int n)
{
    return n == 0 || memcmp(a, b, (size_t)n * sizeof(int)) == 0;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* MPI_Dist_graph_create chooses the neighbor order itself: every rank's
 * lists are gathered, and must hold the edges given, in some order. */
static void gather_dist_lists(topo_t *t)
{
    int deg[2] = {0, 0}, degs[2 * MAXP];
    int *in = NULL, *out = NULL;
    if (t->comm != MPI_COMM_NULL) {
        int weighted;
        MPI_Dist_graph_neighbors_count(t->comm, &deg[0], &deg[1], &weighted);
        in = xcalloc((size_t)deg[0], sizeof(int));
        out = xcalloc((size_t)deg[1], sizeof(int));
        int *w1 = xcalloc((size_t)deg[0], sizeof(int)), *w2 = xcalloc((size_t)deg[1], sizeof(int));
        MPI_Dist_graph_neighbors(t->comm, deg[0], in, w1, deg[1], out, w2);
        free(w1);
        free(w2);
    }
    MPI_Allgather(deg, 2, MPI_INT, degs, 2, MPI_INT, MPI_COMM_WORLD);
    for (int pass = 0; pass < 2; pass++) {
        int counts[MAXP], displs[MAXP], total = 0;
        for (int r = 0; r < P; r++) {
            counts[r] = degs[2 * r + pass];
            displs[r] = total;
            total += counts[r];
        }
        int *all = xcalloc((size_t)total, sizeof(int));
        MPI_Allgatherv(pass ? out : in, deg[pass], MPI_INT, all, counts, displs, MPI_INT,
                       MPI_COMM_WORLD);
        for (int r = 0; r < P; r++) {
            int **lists = pass ? t->out : t->in, *want = pass ? t->outdeg : t->indeg;
            int *a = xcalloc((size_t)want[r] + 1, sizeof(int)), *b = all + displs[r];
            memcpy(a, lists[r], (size_t)want[r] * sizeof(int));
            int *c = xcalloc((size_t)counts[r] + 1, sizeof(int));
            memcpy(c, b, (size_t)counts[r] * sizeof(int));
            qsort(a, (size_t)want[r], sizeof(int), cmp_int);
            qsort(c, (size_t)counts[r], sizeof(int), cmp_int);
            if (counts[r] != want[r] || !same_list(a, c, counts[r])) {
                if (r == me)
                    fail("MPI_Dist_graph_create: %s-neighbors are not the edges given",
                         pass ? "out" : "in");
            } else {
                memcpy(lists[r], b, (size_t)counts[r] * sizeof(int));
            }
            free(a);
            free(c);
        }
        free(all);
    }
    free(in);
    free(out);
}

/* This rank's lists as MPI reports them must be the ones the program
 * gave (and, on a grid, the ones MPI defines). */
static void check_lists(topo_t *t)
{
    if (t->comm == MPI_COMM_NULL)
        return;
    int ni = t->indeg[me], no = t->outdeg[me];
    int *in = xcalloc((size_t)ni, sizeof(int)), *out = xcalloc((size_t)no, sizeof(int));
    int ok = 1;
    if (t->kind == K_ADJACENT) {
        int a, b, w;
        MPI_Dist_graph_neighbors_count(t->comm, &a, &b, &w);
        ok = a == ni && b == no;
        if (ok) {
            int *w1 = xcalloc((size_t)a, sizeof(int)), *w2 = xcalloc((size_t)b, sizeof(int));
            MPI_Dist_graph_neighbors(t->comm, a, in, w1, b, out, w2);
            free(w1);
            free(w2);
        }
    } else if (t->kind == K_CART) {
        int nd = 0;
        MPI_Cartdim_get(t->comm, &nd);
        ok = 2 * nd == ni;
        for (int d = 0; ok && d < nd; d++)
            MPI_Cart_shift(t->comm, d, 1, &in[2 * d], &in[2 * d + 1]);
        memcpy(out, in, (size_t)ni * sizeof(int));
    } else if (t->kind == K_GRAPH) {
        int n = 0;
        MPI_Graph_neighbors_count(t->comm, me, &n);
        ok = n == ni;
        if (ok)
            MPI_Graph_neighbors(t->comm, me, n, in);
        memcpy(out, in, (size_t)ni * sizeof(int));
    }
    if (!ok || !same_list(in, t->in[me], ni) || !same_list(out, t->out[me], no))
        fail("%s: MPI's neighbor lists differ from the ones given", t->desc);
    free(in);
    free(out);
}

static void make_topology(rng_t *g, topo_t *t)
{
    static int edges[4 * MAXP * MAXP + 8][2];
    memset(t, 0, sizeof(*t));
    int pick = rint_(g, 100);
    t->kind = pick < 40 ? K_ADJACENT : pick < 60 ? K_DIST : pick < 85 ? K_CART : K_GRAPH;
    t->members = P;
    t->comm = MPI_COMM_NULL;
    char shape[48];
    int rc = MPI_SUCCESS;

    if (t->kind == K_ADJACENT || t->kind == K_DIST) {
        int n = make_edges(g, edges, 4 * MAXP * MAXP, shape, sizeof(shape));
        lists_from_edges(g, t, edges, n);
        if (t->kind == K_ADJACENT) {
            int weighted = chance(g, 30);
            snprintf(t->desc, sizeof(t->desc), "dist_graph_adjacent(%s%s)", shape,
                     weighted ? ", weighted" : "");
            int ni = t->indeg[me], no = t->outdeg[me];
            int *wi = xcalloc((size_t)ni, sizeof(int)), *wo = xcalloc((size_t)no, sizeof(int));
            for (int j = 0; j < ni; j++)
                wi[j] = 1 + (int)(h4(seed_now, 11, (uint64_t)me, (uint64_t)j) % 9);
            for (int j = 0; j < no; j++)
                wo[j] = 1 + (int)(h4(seed_now, 12, (uint64_t)me, (uint64_t)j) % 9);
            int dummy[1] = {0}; /* Open MPI takes no NULL arrays, even empty ones */
            rc = MPI_Dist_graph_create_adjacent(
                MPI_COMM_WORLD, ni, ni ? t->in[me] : dummy,
                weighted ? (ni ? wi : MPI_WEIGHTS_EMPTY) : MPI_UNWEIGHTED, no,
                no ? t->out[me] : dummy, weighted ? (no ? wo : MPI_WEIGHTS_EMPTY) : MPI_UNWEIGHTED,
                MPI_INFO_NULL, 0, &t->comm);
            free(wi);
            free(wo);
        } else {
            /* each edge is named by a random rank, grouped by source */
            int *owner = xcalloc((size_t)n, sizeof(int));
            for (int i = 0; i < n; i++)
                owner[i] = rint_(g, P);
            int sources[MAXP + 1], degrees[MAXP + 1], ns = 0, nd = 0;
            int *dests = xcalloc((size_t)n + 1, sizeof(int));
            for (int s = 0; s < P; s++) {
                int d0 = nd;
                for (int i = 0; i < n; i++)
                    if (owner[i] == me && edges[i][0] == s)
                        dests[nd++] = edges[i][1];
                if (nd > d0) {
                    sources[ns] = s;
                    degrees[ns++] = nd - d0;
                }
            }
            if ((me + n) % 3 == 0) { /* a source with no destinations is legal */
                sources[ns] = me;
                degrees[ns++] = 0;
            }
            snprintf(t->desc, sizeof(t->desc), "dist_graph(%s)", shape);
            rc = MPI_Dist_graph_create(MPI_COMM_WORLD, ns, sources, degrees, dests, MPI_UNWEIGHTED,
                                       MPI_INFO_NULL, 0, &t->comm);
            free(owner);
            free(dests);
        }
    } else if (t->kind == K_CART) {
        /* all ranks, or fewer: the rest get MPI_COMM_NULL */
        int m = chance(g, 75) ? P : P > 2 ? P - 1 - rint_(g, P / 2) : P;
        int nd = 1 + rint_(g, 3), dims[3] = {1, 1, 1}, periods[3];
        int left = m;
        for (int d = 0; d < nd - 1; d++) { /* a random factor of what is left */
            int f[MAXP], nf = 0;
            for (int x = 1; x <= left; x++)
                if (left % x == 0)
                    f[nf++] = x;
            dims[d] = f[rint_(g, nf)];
            left /= dims[d];
        }
        dims[nd - 1] = left;
        shuffle(g, dims, nd);
        char *p = t->desc;
        p += sprintf(p, "cart(");
        for (int d = 0; d < nd; d++) {
            periods[d] = chance(g, 60);
            p += sprintf(p, "%s%d%s", d ? "x" : "", dims[d], periods[d] ? "p" : "");
            t->small_periodic |= periods[d] && dims[d] <= 2;
        }
        sprintf(p, " of %d)", P);
        t->members = m;
        for (int r = 0; r < P; r++) {
            int lst[6], n = 0;
            if (r < m) {
                int c[3], rest = r;
                for (int d = nd - 1; d >= 0; d--) { /* row-major: the last fastest */
                    c[d] = rest % dims[d];
                    rest /= dims[d];
                }
                for (int d = 0; d < nd; d++) {
                    int stride = 1;
                    for (int x = d + 1; x < nd; x++)
                        stride *= dims[x];
                    for (int dir = -1; dir <= 1; dir += 2) {
                        int cc = c[d] + dir;
                        if (cc < 0 || cc >= dims[d]) {
                            if (!periods[d]) {
                                lst[n++] = MPI_PROC_NULL;
                                continue;
                            }
                            cc = (cc + dims[d]) % dims[d];
                        }
                        lst[n++] = r + (cc - c[d]) * stride;
                    }
                }
            }
            t->indeg[r] = t->outdeg[r] = n;
            set_list(&t->in[r], lst, n);
            set_list(&t->out[r], lst, n);
        }
        rc = MPI_Cart_create(MPI_COMM_WORLD, nd, dims, periods, 0, &t->comm);
    } else {
        /* MPI-1 graph: symmetric, with repeated edges and self-loops */
        int m = chance(g, 75) ? P : P > 2 ? P - 1 : P;
        int lst[MAXP][4 * MAXP], deg[MAXP] = {0}, ne = 0;
        for (int a = 0; a < m; a++)
            for (int b = a; b < m; b++) {
                int k = (a == b ? chance(g, 15) : chance(g, 45)) + chance(g, 8);
                for (; k > 0; k--) {
                    lst[a][deg[a]++] = b;
                    if (a != b)
                        lst[b][deg[b]++] = a;
                    ne++;
                }
            }
        int index[MAXP], edges_flat[4 * MAXP * MAXP + 1], total = 0;
        for (int r = 0; r < P; r++) {
            int n = r < m ? deg[r] : 0;
            if (n)
                shuffle(g, lst[r], n);
            t->indeg[r] = t->outdeg[r] = n;
            set_list(&t->in[r], lst[r], n);
            set_list(&t->out[r], lst[r], n);
            if (r < m) {
                memcpy(edges_flat + total, lst[r], (size_t)n * sizeof(int));
                total += n;
                index[r] = total;
            }
        }
        t->members = m;
        snprintf(t->desc, sizeof(t->desc), "graph(%d nodes of %d, %d edges)", m, P, ne);
        rc = MPI_Graph_create(MPI_COMM_WORLD, m, index, edges_flat, 0, &t->comm);
    }
    if (rc != MPI_SUCCESS)
        fail("%s: creation failed", t->desc);
    if (t->comm != MPI_COMM_NULL) {
        MPI_Comm_set_errhandler(t->comm, MPI_ERRORS_RETURN);
        if ((rc = lg_attach(t->comm)) != 0)
            fail("%s: nbr_comm_attach failed: %d", t->desc, rc);
    }
    if (t->kind == K_DIST)
        gather_dist_lists(t);
    else
        check_lists(t);
    compute_matching(t, t->kind == K_CART);
    for (int r = 0; r < P; r++) {
        t->degrees_differ |= t->indeg[r] != t->outdeg[r];
        for (int i = 0; i < t->indeg[r]; i++)
            for (int j = 0; j < i; j++)
                t->repeated |= t->in[r][i] != MPI_PROC_NULL && t->in[r][i] == t->in[r][j];
    }
}

static void free_topology(topo_t *t)
{
    if (t->comm != MPI_COMM_NULL)
        MPI_Comm_free(&t->comm);
    for (int r = 0; r < P; r++) {
        free(t->in[r]);
        free(t->out[r]);
        free(t->match[r]);
        free(t->cid[r]);
    }
}

/* -------------------------------------------------------------- operations */

/* One block of a buffer: count items of type (0 MPI_INT, 1 vec2) from int
 * offset off: n ints of signature. For a receive block, peer and blk say
 * whose block of what index it is (peer MPI_PROC_NULL: nothing comes). */
typedef struct {
    int type, count, off, n, peer, blk;
} blk_t;

static int extent_ints(int type) { return type ? 3 : 1; }
static int span(const blk_t *b) { return b->count * extent_ints(b->type); }
static int pos(const blk_t *b, int e)
{
    return b->off + (b->type ? 3 * (e / 2) + 2 * (e % 2) : e);
}
static MPI_Datatype mpi_type(int type) { return type ? vec2 : MPI_INT; }

typedef struct {
    int used, op, form, topo, call;
    uint64_t key; /* every count and layout derives from it */
    int vec, big, uniform;
    /* erroneous: victim's in-slot force_j, fed by edge force_k (canonical
     * id) of force_s, gets one int less */
    int erroneous, victim, force_s, force_k, force_j;
    int member;  /* this rank belongs to the communicator */
    int flying;  /* started and not yet completed, in the program (every rank) */
    int active;  /* this rank holds the started request */
    int initerr; /* a persistent _init that failed here */
    int ns, nr;
    blk_t *sb, *rb;
    int *sbuf, *rbuf, slen, rlen;
    int scount, rcount, stype, rtype;
    int *scounts, *sdispls, *rcounts, *rdispls;
    MPI_Aint *swdispls, *rwdispls;
    MPI_Datatype *stypes, *rtypes;
    lg_request req;
} op_t;

typedef struct {
    int ntopo;
    topo_t topo[MAXT];
    op_t live[MAXLIVE];
    int calls, max_calls;
    uint64_t *call_hash; /* per call: its error flag and received bytes */
    uint64_t misc_hash;  /* point-to-point and allreduce results, in step order */
    /* a short receiver's buffers, kept to the end: MPI may still touch
     * them after the error */
    void **grave;
    int ngrave;
} prog_t;

/* A block size: often 0 or a few ints, some tens, rarely thousands (past
 * the eager limit, where progress matters); even under a vector type. */
static int draw_count(const op_t *o, uint64_t h)
{
    int r = (int)(h % 100), c;
    h >>= 8;
    if (r < 20)
        c = 0;
    else if (r < 80)
        c = 1 + (int)(h % 8);
    else if (r < 97 || !o->big)
        c = 9 + (int)(h % 32);
    else
        c = 1000 + (int)(h % 2000);
    return o->vec ? c & ~1 : c;
}

/* The block a short receiver truncates: at least 2 ints, so that its count
 * is not 0 (plain Open MPI 4.1 reports no error for a receive of 0). */
static int forced(const op_t *o, int c) { return c >= 2 ? c : 2; }

/* allgather: one count per component of "s sends to r" (only a sender and
 * its receivers must agree); alltoall: per component where a rank's own
 * sends and receives are tied too (Open MPI 4.1 requires a rank's alltoall
 * send and receive sizes to be equal, MPI_ERR_TRUNCATE before sending) */
static int node_count(const op_t *o, topo_t *t, int node)
{
    int tied = o->op == OP_A2A || avoid_allgather_sizes;
    if (tied && node >= P)
        node -= P;
    int root = uf_find(t, tied ? 2 * P + node : node);
    int short_root = uf_find(t, tied ? 2 * P + o->victim : P + o->victim);
    int c = draw_count(o, o->uniform ? h4(o->key, 1, 0, 0) : h4(o->key, 2, (uint64_t)root, 0));
    /* plain Open MPI 4.1's blocking allgather returns at once, without
     * sending or receiving, on a rank whose send or receive count is 0
     * (its other forms do not): a bug of its own, kept out of the suite */
    if (c == 0 && o->op == OP_AG && o->form == F_BLOCKING)
        c = o->vec ? 2 : 1;
    return o->erroneous && root == short_root ? forced(o, c) : c;
}
/* allgatherv: one count per sender */
static int sender_count(const op_t *o, int s)
{
    int c = draw_count(o, h4(o->key, 3, (uint64_t)s, 0));
    return o->erroneous && s == o->force_s ? forced(o, c) : c;
}
/* alltoallv / w: one count per edge, by the edge's canonical id */
static int edge_count(const op_t *o, int s, int cid)
{
    int c = draw_count(o, h4(o->key, 4, (uint64_t)s, (uint64_t)cid));
    return o->erroneous && s == o->force_s && cid == o->force_k ? forced(o, c) : c;
}
/* a receive slot that nothing reaches (MPI_PROC_NULL): any count */
static int null_count(const op_t *o, int r, int j)
{
    return draw_count(o, h4(o->key, 5, (uint64_t)r, (uint64_t)j));
}
/* whether this rank describes a side (or a slot) with the vector type */
static int vec_choice(const op_t *o, int side, int slot)
{
    return o->vec && (h4(o->key, 6 + (uint64_t)side, (uint64_t)me, (uint64_t)slot + 1) & 1);
}

/* Lays blocks out in a per-rank random order with gaps of 0-2 items:
 * displacements in items of the block's type. */
static int scatter_layout(const op_t *o, blk_t *b, int n, int salt)
{
    int order[4 * MAXP * MAXP + 8];
    for (int i = 0; i < n; i++)
        order[i] = i;
    rng_t g = {h4(o->key, 20 + (uint64_t)salt, (uint64_t)me, 0)};
    shuffle(&g, order, n);
    int at = 0;
    for (int i = 0; i < n; i++) {
        blk_t *x = &b[order[i]];
        int ext = extent_ints(x->type);
        at += rint_(&g, 3) * ext;
        at = (at + ext - 1) / ext * ext; /* displacements count whole items */
        x->off = at;
        at += span(x);
    }
    return at;
}

/* This rank's arguments of an operation (members only). */
static void build(op_t *o, topo_t *t)
{
    int ns = o->ns = t->outdeg[me], nr = o->nr = t->indeg[me];
    int victim = o->erroneous && me == o->victim;
    o->sb = xcalloc((size_t)ns + 1, sizeof(blk_t));
    o->rb = xcalloc((size_t)nr + 1, sizeof(blk_t));
    o->scounts = xcalloc((size_t)ns, sizeof(int));
    o->sdispls = xcalloc((size_t)ns, sizeof(int));
    o->rcounts = xcalloc((size_t)nr, sizeof(int));
    o->rdispls = xcalloc((size_t)nr, sizeof(int));
    o->swdispls = xcalloc((size_t)ns, sizeof(MPI_Aint));
    o->rwdispls = xcalloc((size_t)nr, sizeof(MPI_Aint));
    o->stypes = xcalloc((size_t)ns, sizeof(MPI_Datatype));
    o->rtypes = xcalloc((size_t)nr, sizeof(MPI_Datatype));
    int slen = 0, rlen = 0;

    /* receive blocks: what each in-slot gets, from whom */
    for (int j = 0; j < nr; j++) {
        blk_t *b = &o->rb[j];
        int s = t->in[me][j], k = t->match[me][j];
        b->peer = s;
        b->blk = o->op == OP_AG || o->op == OP_AGV || s == MPI_PROC_NULL ? 0 : t->cid[s][k];
        switch (o->op) {
        case OP_AG:
        case OP_A2A: b->n = node_count(o, t, P + me); break;
        case OP_AGV: b->n = s == MPI_PROC_NULL ? null_count(o, me, j) : sender_count(o, s); break;
        default: b->n = s == MPI_PROC_NULL ? null_count(o, me, j) : edge_count(o, s, b->blk); break;
        }
        if (victim && (o->op == OP_AG || j == o->force_j))
            b->n--; /* the erroneous receiver: one int short */
    }
    /* send blocks: block k goes to out-slot k (allgather: one block);
     * alltoall without out-neighbors still passes its count (Open MPI
     * checks it against the receive count) */
    int nsb = o->op == OP_AG || o->op == OP_AGV ? 1 : ns;
    int ntemplate = o->op == OP_A2A && ns == 0 ? 1 : nsb;
    for (int k = 0; k < ntemplate; k++) {
        blk_t *b = &o->sb[k];
        b->blk = o->op == OP_AG || o->op == OP_AGV || k >= ns ? 0 : t->cid[me][k];
        if (o->op == OP_AG || o->op == OP_A2A)
            b->n = node_count(o, t, me);
        else if (o->op == OP_AGV)
            b->n = sender_count(o, me);
        else
            b->n = edge_count(o, me, b->blk);
    }

    /* types: one per side, or per slot for alltoallw; the vector type only
     * where every block it describes has an even length */
    int all_even = 1;
    for (int j = 0; j < nr; j++)
        all_even &= o->rb[j].n % 2 == 0;
    o->rtype = !victim && all_even && vec_choice(o, 1, -1);
    all_even = 1;
    for (int k = 0; k < ntemplate; k++)
        all_even &= o->sb[k].n % 2 == 0;
    o->stype = all_even && vec_choice(o, 0, -1);
    for (int j = 0; j < nr; j++) {
        blk_t *b = &o->rb[j];
        b->type = o->op == OP_A2AW ? !victim && b->n % 2 == 0 && vec_choice(o, 1, j) : o->rtype;
        b->count = b->n / (b->type ? 2 : 1);
    }
    for (int k = 0; k < ntemplate; k++) {
        blk_t *b = &o->sb[k];
        b->type = o->op == OP_A2AW ? b->n % 2 == 0 && vec_choice(o, 0, k) : o->stype;
        b->count = b->n / (b->type ? 2 : 1);
    }

    /* layouts: fixed slots for allgather / alltoall, scattered otherwise */
    if (o->op == OP_AG || o->op == OP_A2A) {
        o->rcount = nr ? o->rb[0].count : node_count(o, t, P + me) / (o->rtype ? 2 : 1);
        if (victim)
            o->rcount = node_count(o, t, P + me) - 1;
        for (int j = 0; j < nr; j++)
            o->rb[j].off = j * o->rcount * extent_ints(o->rtype);
        rlen = nr * o->rcount * extent_ints(o->rtype);
        o->scount = o->sb[0].count;
        if (o->op == OP_AG) {
            slen = span(&o->sb[0]);
        } else {
            for (int k = 0; k < ns; k++)
                o->sb[k].off = k * o->scount * extent_ints(o->stype);
            slen = ns * o->scount * extent_ints(o->stype);
        }
    } else {
        rlen = scatter_layout(o, o->rb, nr, 1);
        if (o->op == OP_AGV) {
            o->scount = o->sb[0].count;
            slen = span(&o->sb[0]);
        } else {
            slen = scatter_layout(o, o->sb, ns, 0);
        }
    }
    for (int j = 0; j < nr; j++) {
        o->rcounts[j] = o->rb[j].count;
        o->rdispls[j] = o->rb[j].off / extent_ints(o->rb[j].type);
        o->rwdispls[j] = (MPI_Aint)o->rb[j].off * (MPI_Aint)sizeof(int);
        o->rtypes[j] = mpi_type(o->rb[j].type);
    }
    for (int k = 0; k < ns && nsb == ns && o->op != OP_AG && o->op != OP_AGV; k++) {
        o->scounts[k] = o->sb[k].count;
        o->sdispls[k] = o->sb[k].off / extent_ints(o->sb[k].type);
        o->swdispls[k] = (MPI_Aint)o->sb[k].off * (MPI_Aint)sizeof(int);
        o->stypes[k] = mpi_type(o->sb[k].type);
    }
    /* room past the end: a short receiver gets one int more than it
     * asked for, and a library writing past a block must show */
    o->slen = slen + 4;
    o->rlen = rlen + 8;
    o->sbuf = xcalloc((size_t)o->slen, sizeof(int));
    o->rbuf = xcalloc((size_t)o->rlen, sizeof(int));
}

static void unbuild(op_t *o)
{
    free(o->sb);
    free(o->rb);
    free(o->scounts);
    free(o->sdispls);
    free(o->rcounts);
    free(o->rdispls);
    free(o->swdispls);
    free(o->rwdispls);
    free(o->stypes);
    free(o->rtypes);
    free(o->sbuf);
    free(o->rbuf);
    memset(o, 0, sizeof(*o));
}

/* The buffers of one run: send blocks hold their values, everything else
 * filler the receiver must never see. */
static void fill(op_t *o)
{
    for (int i = 0; i < o->slen; i++)
        o->sbuf[i] = filler(o->call, me, i, 1);
    int nsb = o->op == OP_AG || o->op == OP_AGV ? 1 : o->ns;
    for (int k = 0; k < nsb; k++)
        for (int e = 0; e < o->sb[k].n; e++)
            o->sbuf[pos(&o->sb[k], e)] = value(o->call, me, o->sb[k].blk, e);
    for (int i = 0; i < o->rlen; i++)
        o->rbuf[i] = filler(o->call, me, i, 2);
}

static const char *where(const op_t *o, const topo_t *t)
{
    static char text[200];
    snprintf(text, sizeof(text), "%s%s %s on %s", o->erroneous ? "erroneous " : "",
             form_names[o->form], op_names[o->op], t->desc);
    return text;
}

/* For a FAIL line: which call's data a wrong int is, if any (a block
 * delivered to the wrong slot or a message of another call). */
static const char *whose(int got, int calls, int at)
{
    static char text[96];
    for (int c = 0; c <= calls; c++)
        for (int salt = 1; salt <= 2; salt++)
            for (int r = 0; r < P; r++)
                if (filler(c, r, at, salt) == got) {
                    snprintf(text, sizeof(text), " (%s int %d of rank %d in call %d)",
                             salt == 1 ? "a gap: send buffer" : "the fill: receive buffer", at,
                             r, c);
                    return text;
                }
    for (int c = 0; c <= calls; c++)
        for (int s = 0; s < P; s++)
            for (int d = -1; d <= MAXP && d <= P; d++)
                for (int occ = 0; occ < (d < 0 ? 1 : 4); occ++)
                    for (int e = 0; e < 64; e++) {
                        int b = d < 0 ? 0 : d * CID_REPEATS + occ;
                        if (value(c, s, b, e) != got)
                            continue;
                        if (d < 0)
                            snprintf(text, sizeof(text), " (call %d's int %d of rank %d's block)",
                                     c, e, s);
                        else
                            snprintf(text, sizeof(text),
                                     " (call %d's int %d of rank %d's block to rank %d, edge %d)",
                                     c, e, s, d, occ);
                        return text;
                    }
    return "";
}

/* The digest of a receive buffer: its blocks' ints, block by block in the
 * order of (sender, repeat of the edge), not in slot or buffer order, which
 * MPI_Dist_graph_create leaves to MPI (the self-check has seen that
 * nothing else in the buffer changed). */
static uint64_t fold_blocks(uint64_t h, const op_t *o)
{
    int order[4 * MAXP * MAXP + 8], key[4 * MAXP * MAXP + 8];
    for (int j = 0; j < o->nr; j++) {
        int peer = o->rb[j].peer == MPI_PROC_NULL ? MAXP : o->rb[j].peer, occ = 0;
        for (int i = 0; i < j; i++)
            occ += o->rb[i].peer == o->rb[j].peer;
        key[j] = peer * CID_REPEATS + occ;
        order[j] = j;
    }
    for (int i = 1; i < o->nr; i++) /* insertion sort: a few slots */
        for (int x = i; x > 0 && key[order[x - 1]] > key[order[x]]; x--) {
            int tmp = order[x];
            order[x] = order[x - 1];
            order[x - 1] = tmp;
        }
    for (int i = 0; i < o->nr; i++) {
        const blk_t *b = &o->rb[order[i]];
        int head[2] = {key[order[i]], b->n};
        h = fnv(h, head, sizeof(head));
        for (int e = 0; e < b->n; e++)
            h = fnv(h, &o->rbuf[pos(b, e)], sizeof(int));
    }
    return h;
}

/* A run completed with status err: check it, fold it into the digest. */
static void finish(prog_t *pr, op_t *o, int err)
{
    topo_t *t = &pr->topo[o->topo];
    int victim = o->erroneous && me == o->victim;
    call_now = o->call;
    char text[MPI_MAX_ERROR_STRING + 64];
    if (victim && !err)
        fail("%s: no error where the receive count is short", where(o, t));
    if (!victim && err) {
        lg_error_text(err, text, sizeof(text));
        fail("%s: error %s", where(o, t), text);
    }
    uint64_t h = fnv(FNV_START, (char[]){err != 0}, 1);
    if (!victim && !err) {
        int *want = xcalloc((size_t)o->rlen, sizeof(int));
        for (int i = 0; i < o->rlen; i++)
            want[i] = filler(o->call, me, i, 2);
        for (int j = 0; j < o->nr; j++) {
            const blk_t *b = &o->rb[j];
            if (b->peer != MPI_PROC_NULL)
                for (int e = 0; e < b->n; e++)
                    want[pos(b, e)] = value(o->call, b->peer, b->blk, e);
        }
        for (int i = 0; i < o->rlen; i++)
            if (o->rbuf[i] != want[i]) {
                int slot = -1;
                for (int j = 0; j < o->nr; j++)
                    if (i >= o->rb[j].off && i < o->rb[j].off + span(&o->rb[j]))
                        slot = j;
                if (slot < 0)
                    fail("%s: int %d of the receive buffer (outside every block) changed",
                         where(o, t), i);
                else
                    fail("%s: in-slot %d (from rank %d, %d ints): int %d is %d, want %d%s",
                         where(o, t), slot, o->rb[slot].peer, o->rb[slot].n,
                         i - o->rb[slot].off, o->rbuf[i], want[i], whose(o->rbuf[i], o->call, i));
                break;
            }
        free(want);
        h = fold_blocks(h, o);
    }
    pr->call_hash[o->call] = h;
    call_now = -1;
}

/* Starts a blocking, nonblocking or persistent call (init and first start
 * for persistent). Returns the call's status. */
static int issue(op_t *o, MPI_Comm c, int init)
{
    const void *sb = o->sbuf;
    void *rb = o->rbuf;
    MPI_Datatype st = mpi_type(o->stype), rt = mpi_type(o->rtype);
    lg_request *r = &o->req;
    switch (o->form * 8 + o->op) {
#define ARGS_AG sb, o->scount, st, rb, o->rcount, rt, c
#define ARGS_AGV sb, o->scount, st, rb, o->rcounts, o->rdispls, rt, c
#define ARGS_A2AV sb, o->scounts, o->sdispls, st, rb, o->rcounts, o->rdispls, rt, c
#define ARGS_A2AW sb, o->scounts, o->swdispls, o->stypes, rb, o->rcounts, o->rwdispls, o->rtypes, c
    case F_BLOCKING * 8 + OP_AG: return lg_neighbor_allgather(ARGS_AG);
    case F_BLOCKING * 8 + OP_AGV: return lg_neighbor_allgatherv(ARGS_AGV);
    case F_BLOCKING * 8 + OP_A2A: return lg_neighbor_alltoall(ARGS_AG);
    case F_BLOCKING * 8 + OP_A2AV: return lg_neighbor_alltoallv(ARGS_A2AV);
    case F_BLOCKING * 8 + OP_A2AW: return lg_neighbor_alltoallw(ARGS_A2AW);
    case F_NONBLOCKING * 8 + OP_AG: return lg_ineighbor_allgather(ARGS_AG, r);
    case F_NONBLOCKING * 8 + OP_AGV: return lg_ineighbor_allgatherv(ARGS_AGV, r);
    case F_NONBLOCKING * 8 + OP_A2A: return lg_ineighbor_alltoall(ARGS_AG, r);
    case F_NONBLOCKING * 8 + OP_A2AV: return lg_ineighbor_alltoallv(ARGS_A2AV, r);
    case F_NONBLOCKING * 8 + OP_A2AW: return lg_ineighbor_alltoallw(ARGS_A2AW, r);
    }
    if (!init)
        return lg_start(r);
    int rc = 0;
    switch (o->op) {
    case OP_AG: rc = lg_neighbor_allgather_init(ARGS_AG, MPI_INFO_NULL, r); break;
    case OP_AGV: rc = lg_neighbor_allgatherv_init(ARGS_AGV, MPI_INFO_NULL, r); break;
    case OP_A2A: rc = lg_neighbor_alltoall_init(ARGS_AG, MPI_INFO_NULL, r); break;
    case OP_A2AV: rc = lg_neighbor_alltoallv_init(ARGS_A2AV, MPI_INFO_NULL, r); break;
    case OP_A2AW: rc = lg_neighbor_alltoallw_init(ARGS_A2AW, MPI_INFO_NULL, r); break;
    }
#undef ARGS_AG
#undef ARGS_AGV
#undef ARGS_A2AV
#undef ARGS_A2AW
    return rc;
}

/* One run of o under a fresh call number: the same on every rank; members
 * call, the others only count it. */
static void run(prog_t *pr, op_t *o, int init)
{
    topo_t *t = &pr->topo[o->topo];
    o->call = pr->calls++;
    pr->call_hash[o->call] = 0x11111111; /* not a member */
    if (trace && me == 0)
        fprintf(stderr, "  call %d: %s%s\n", o->call, where(o, t), init ? "" : " (start)");
    if (trace && o->erroneous && me == o->victim && o->member)
        fprintf(stderr, "    short receiver %d: in-slot %d from rank %d\n", me, o->force_j,
                o->force_s);
    if (trace > 1 && o->member) { /* one write per rank, so lines do not mix */
        char line[4096];
        int n = snprintf(line, sizeof(line), "    call %d rank %d sends", o->call, me);
        for (int k = 0; k < o->ns && n < 4000; k++) {
            const blk_t *b = &o->sb[o->op <= OP_AGV ? 0 : k];
            n += snprintf(line + n, sizeof(line) - (size_t)n, " %d->%d:%d%s", k, t->out[me][k],
                          b->n, b->type ? "v" : "");
        }
        n += snprintf(line + n, sizeof(line) - (size_t)n, "; receives");
        for (int j = 0; j < o->nr && n < 4000; j++)
            n += snprintf(line + n, sizeof(line) - (size_t)n, " %d<-%d:%d%s", j, t->in[me][j],
                          o->rb[j].n, o->rb[j].type ? "v" : "");
        fprintf(stderr, "%s\n", line);
    }
    if (!o->member)
        return;
    fill(o);
    call_now = o->call;
    int rc = o->form == F_PERSISTENT && o->initerr ? o->initerr : issue(o, t->comm, init);
    if (o->form == F_PERSISTENT && init && rc == 0)
        rc = issue(o, t->comm, 0);
    else if (o->form == F_PERSISTENT && init)
        o->initerr = rc;
    call_now = -1;
    if (o->form == F_BLOCKING || rc != 0)
        finish(pr, o, rc);
    else
        o->active = 1;
}

/* ----------------------------------------------------------------- steps */

static op_t *free_slot(prog_t *pr)
{
    for (int i = 0; i < MAXLIVE; i++)
        if (!pr->live[i].used)
            return &pr->live[i];
    return NULL;
}

static int count_live(prog_t *pr, int form, int flying_only)
{
    int n = 0;
    for (int i = 0; i < MAXLIVE; i++) {
        op_t *o = &pr->live[i];
        n += o->used && (form < 0 || o->form == form) && (!flying_only || o->flying);
    }
    return n;
}

static void new_op(rng_t *g, prog_t *pr, op_t *o)
{
    memset(o, 0, sizeof(*o));
    o->topo = rint_(g, pr->ntopo);
    topo_t *t = &pr->topo[o->topo];
    int pick = rint_(g, 100);
    o->op = pick < 30 ? OP_AG : pick < 45 ? OP_AGV : pick < 62 ? OP_A2A
          : pick < 88 ? OP_A2AV : OP_A2AW;
    o->form = rint_(g, 3);
    if (count_live(pr, F_PERSISTENT, 0) >= MAXPERS && o->form == F_PERSISTENT)
        o->form = F_NONBLOCKING;
    if (count_live(pr, -1, 1) >= MAXFLIGHT && o->form != F_BLOCKING)
        o->form = F_BLOCKING;
    /* Open MPI's own nonblocking / persistent alltoall misplaces blocks
     * on periodic dimensions of 1 and 2 (ompi#14416): not a legal program
     * to hold a library to while plain MPI gets it wrong */
    if (t->small_periodic && o->op >= OP_A2A)
        o->form = F_BLOCKING;
#if defined(MPICH_NUMVERSION)
    /* MPICH reverses the receives of a source listed twice in its alltoall
     * forms (pmodels/mpich#7945), and 4.0's alltoallw takes its counts
     * over the wrong degrees (pmodels/mpich#6233): there the programs keep
     * to the allgather forms and alltoallv */
    if (t->repeated && o->op >= OP_A2A)
        o->op = pick % 2 ? OP_AG : OP_AGV;
    if (MPICH_NUMVERSION < 40100000 && t->degrees_differ && o->op == OP_A2AW)
        o->op = OP_A2AV;
    /* MPICH 4.0's persistent neighborhood requests are no yardstick: a
     * completion call on an inactive one hangs (pmodels/mpich#6334), a
     * start after some completions is refused as already active; there
     * the programs start nonblocking calls instead (the drop-in's
     * persistent programs have a point-to-point reference) */
    if (MPICH_NUMVERSION < 40100000 && o->form == F_PERSISTENT)
        o->form = F_NONBLOCKING;
#endif
    o->key = rnext(g);
    o->vec = chance(g, 25);
    o->big = chance(g, 5);
    o->uniform = chance(g, 30);
    /* erroneous: a receiver expects one int less than its sender sends.
     * What plain Open MPI 4.1 makes of it decides the shape: the receiver
     * has one real in-edge, from another rank (a blocking call returns at
     * the first error with its other receives still posted, where later
     * calls' messages land; a truncation from the rank itself is not
     * reported); small blocks; not alltoall (Open MPI's local size check
     * fails the call before it sends, and its peers wait) */
    if (o->form == F_BLOCKING && o->op != OP_A2AW && o->op != OP_A2A && chance(g, 35) &&
        !mpich_reference()) {
        static int cand[4 * MAXP * MAXP + 8][2];
        int nc = 0;
        for (int r = 0; r < t->members; r++) {
            int real = 0, at = -1;
            for (int j = 0; j < t->indeg[r]; j++)
                if (t->in[r][j] != MPI_PROC_NULL)
                    real++, at = j;
            if (real == 1 && t->in[r][at] != r)
                cand[nc][0] = r, cand[nc++][1] = at;
        }
        if (nc > 0) {
            int c = rint_(g, nc), r = cand[c][0], j = cand[c][1];
            o->erroneous = 1;
            o->victim = r;
            o->force_j = j;
            o->force_s = t->in[r][j];
            o->force_k = t->cid[o->force_s][t->match[r][j]];
            o->big = 0;
        }
    }
    o->used = 1;
    o->member = me < t->members;
}

static void completion(rng_t *g, prog_t *pr, int all)
{
    /* which ones: the same on every rank */
    op_t *pick[MAXARRAY];
    int n = 0;
    for (int i = 0; i < MAXLIVE; i++)
        if (pr->live[i].flying && (all || chance(g, 60)))
            pick[n++] = &pr->live[i];
    if (n == 0)
        return;
    if (trace && me == 0)
        fprintf(stderr, "  complete %d request(s)\n", n);
    /* how and in which order: this rank's own */
    rng_t mine = {h4(rnext(g), 31, (uint64_t)me, 0)};
    op_t *ops[MAXARRAY];
    int m = 0;
    for (int i = 0; i < n; i++)
        if (pick[i]->active)
            ops[m++] = pick[i];
    int order[MAXARRAY];
    for (int i = 0; i < m; i++)
        order[i] = i;
    shuffle(&mine, order, m);
    lg_request reqs[MAXARRAY];
    int errs[MAXARRAY] = {0};
    char done[MAXARRAY] = {0};
    for (int i = 0; i < m; i++)
        reqs[i] = ops[order[i]]->req;
    switch (rint_(&mine, M_COUNT)) {
    case M_WAIT:
        for (int i = 0; i < m; i++)
            errs[i] = lg_wait(&reqs[i]);
        break;
    case M_WAITALL: lg_waitall(m, reqs, errs); break;
    case M_WAITANY:
        for (int left = m; left > 0; left--) {
            int idx = 0, err = 0;
            lg_waitany(m, reqs, done, &idx, &err);
            errs[idx] = err;
        }
        break;
    case M_TESTALL: {
        int flag = 0;
        while (!flag)
            lg_testall(m, reqs, done, errs, &flag);
        break;
    }
    default:
        for (int left = m; left > 0;)
            for (int i = 0; i < m; i++) {
                if (done[i])
                    continue;
                int flag = 0, rc = lg_test(&reqs[i], &flag);
                if (flag || rc != 0) {
                    done[i] = 1;
                    errs[i] = rc;
                    left--;
                }
            }
        break;
    }
    for (int i = 0; i < m; i++) {
        op_t *o = ops[order[i]];
        o->req = reqs[i];
        o->active = 0;
        finish(pr, o, errs[i]);
    }
    for (int i = 0; i < n; i++) {
        pick[i]->flying = 0;
        if (pick[i]->form == F_NONBLOCKING)
            unbuild(pick[i]);
    }
}

static void misc_step(rng_t *g, prog_t *pr)
{
    int what = rint_(g, 6), d = rint_(g, P);
    int tag = 100 + rint_(g, 100);
    uint64_t key = rnext(g);
    int right = (me + d) % P, left = (me + P - d) % P;
    switch (what) {
    case 0:
        if (trace && me == 0)
            fprintf(stderr, "  barrier on MPI_COMM_WORLD\n");
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case 1: {
        int t = rint_(g, pr->ntopo);
        if (trace && me == 0)
            fprintf(stderr, "  barrier on %s\n", pr->topo[t].desc);
        if (pr->topo[t].comm != MPI_COMM_NULL && MPI_Barrier(pr->topo[t].comm) != MPI_SUCCESS)
            fail("MPI_Barrier on %s failed", pr->topo[t].desc);
        break;
    }
    case 2: { /* a blocking collective on another communicator */
        long long mine = (long long)(h4(key, (uint64_t)me, 0, 0) % 1000), sum = 0, want = 0;
        for (int r = 0; r < P; r++)
            want += (long long)(h4(key, (uint64_t)r, 0, 0) % 1000);
        if (trace && me == 0)
            fprintf(stderr, "  allreduce on a duplicate of MPI_COMM_WORLD\n");
        MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, world_dup);
        if (sum != want)
            fail("MPI_Allreduce: %lld, want %lld", sum, want);
        pr->misc_hash = fnv(pr->misc_hash, &sum, sizeof(sum));
        break;
    }
    case 3:
    case 4: { /* a shift by d: Sendrecv, or Isend + Recv + Wait */
        int n = chance(g, 10) ? 3000 : 1 + rint_(g, 16); /* sometimes past the eager limit */
        int *out = xcalloc((size_t)n, sizeof(int)), *in = xcalloc((size_t)n, sizeof(int));
        for (int i = 0; i < n; i++)
            out[i] = (int)h4(key, (uint64_t)me, (uint64_t)i, 1);
        if (trace && me == 0)
            fprintf(stderr, "  %s shift by %d, %d ints\n", what == 3 ? "sendrecv" : "isend+recv", d,
                    n);
        if (what == 3) {
            MPI_Sendrecv(out, n, MPI_INT, right, tag, in, n, MPI_INT, left, tag, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
        } else {
            MPI_Request r;
            MPI_Isend(out, n, MPI_INT, right, tag, MPI_COMM_WORLD, &r);
            MPI_Recv(in, n, MPI_INT, left, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        for (int i = 0; i < n; i++)
            if (in[i] != (int)h4(key, (uint64_t)left, (uint64_t)i, 1)) {
                fail("point-to-point from rank %d: int %d wrong", left, i);
                break;
            }
        pr->misc_hash = fnv(pr->misc_hash, in, (size_t)n * sizeof(int));
        free(out);
        free(in);
        break;
    }
    default:
        if (trace && me == 0)
            fprintf(stderr, "  barrier on the duplicate\n");
        MPI_Barrier(world_dup);
        break;
    }
}

/* One program: returns its digest at rank 0 (0 elsewhere). */
static uint64_t run_program(uint64_t seed, int max_calls, int *calls_out)
{
    seed_now = seed;
    rng_t g = {mix64(seed * 0x2545f4914f6cdd1dull + 1)};
    static prog_t pr;
    memset(&pr, 0, sizeof(pr));
    pr.max_calls = max_calls;
    pr.call_hash = xcalloc((size_t)max_calls + 8, sizeof(uint64_t));
    pr.grave = xcalloc(2 * (size_t)max_calls + 2, sizeof(void *));
    pr.misc_hash = FNV_START;
    pr.ntopo = 1 + rint_(&g, MAXT);
    for (int i = 0; i < pr.ntopo; i++) {
        make_topology(&g, &pr.topo[i]);
        if (trace && me == 0)
            fprintf(stderr, "  comm %d: %s\n", i, pr.topo[i].desc);
    }

    for (int step = 0; pr.calls < max_calls && step < 20 * max_calls; step++) {
        int pick = rint_(&g, 100);
        if (pick < 45) { /* a new call */
            op_t *o = free_slot(&pr);
            if (!o) {
                completion(&g, &pr, 1);
                continue;
            }
            new_op(&g, &pr, o);
            if (o->member)
                build(o, &pr.topo[o->topo]);
            run(&pr, o, 1);
            if (o->form == F_BLOCKING && o->erroneous && me == o->victim) {
                pr.grave[pr.ngrave++] = o->sbuf;
                pr.grave[pr.ngrave++] = o->rbuf;
                o->sbuf = o->rbuf = NULL;
            }
            if (o->form == F_BLOCKING)
                unbuild(o);
            else
                o->flying = 1;
        } else if (pick < 55) { /* start a persistent request again */
            op_t *cand[MAXLIVE];
            int nc = 0;
            for (int i = 0; i < MAXLIVE; i++)
                if (pr.live[i].used && pr.live[i].form == F_PERSISTENT && !pr.live[i].flying)
                    cand[nc++] = &pr.live[i];
            if (nc == 0 || count_live(&pr, -1, 1) >= MAXFLIGHT)
                continue;
            op_t *o = cand[rint_(&g, nc)];
            run(&pr, o, 0);
            o->flying = 1;
        } else if (pick < 72) {
            completion(&g, &pr, 0);
        } else {
            misc_step(&g, &pr);
        }
    }
    completion(&g, &pr, 1);
    for (int i = 0; i < MAXLIVE; i++) {
        op_t *o = &pr.live[i];
        if (o->used && o->form == F_PERSISTENT) {
            if (o->member && !o->initerr && lg_request_free(&o->req) != 0)
                fail("freeing a persistent %s failed", op_names[o->op]);
            unbuild(o);
        }
    }
    for (int i = 0; i < pr.ntopo; i++)
        free_topology(&pr.topo[i]);
    for (int i = 0; i < pr.ngrave; i++)
        free(pr.grave[i]);
    free(pr.grave);

    uint64_t mine = FNV_START;
    mine = fnv(mine, pr.call_hash, (size_t)pr.calls * sizeof(uint64_t));
    mine = fnv(mine, &pr.misc_hash, sizeof(pr.misc_hash));
    uint64_t all[MAXP], digest = FNV_START;
    MPI_Gather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    for (int r = 0; r < P; r++)
        digest = fnv(digest, &all[r], sizeof(all[r]));
    free(pr.call_hash);
    *calls_out = pr.calls;
    return me == 0 ? digest : 0;
}

static void usage(void)
{
    if (me == 0)
        fprintf(stderr, "usage: legal_programs --first SEED --count N [--calls-per-program K] "
                        "[--trace [--trace]] [--avoid allgather-sizes]\n"
                        "  --trace: each step on stderr (twice: every rank's blocks)\n"
                        "  --avoid allgather-sizes: a rank's allgather send and receive sizes\n"
                        "    are equal (to look past a library that requires it)\n");
    MPI_Finalize();
    exit(2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (P > MAXP) {
        if (me == 0)
            fprintf(stderr, "legal_programs: at most %d ranks\n", MAXP);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned long long first = 1;
    long count = 1;
    int calls = 12;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--first") && i + 1 < argc)
            first = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--count") && i + 1 < argc)
            count = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--calls-per-program") && i + 1 < argc)
            calls = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--trace"))
            trace++;
        else if (!strcmp(argv[i], "--avoid") && i + 1 < argc &&
                 !strcmp(argv[i + 1], "allgather-sizes"))
            avoid_allgather_sizes = 1, i++;
        else
            usage();
    }
    if (calls < 1 || count < 0)
        usage();
    /* errors come back as codes: a Waitall's error goes to MPI_COMM_WORLD
     * in Open MPI, a collective's to its communicator */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &world_dup);
    MPI_Comm_set_errhandler(world_dup, MPI_ERRORS_RETURN);
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec2);
    MPI_Type_commit(&vec2);

    long total_calls = 0;
    for (long i = 0; i < count; i++) {
        uint64_t seed = first + (uint64_t)i;
        if (me == 0) {
            fprintf(stderr, "begin %llu\n", (unsigned long long)seed);
            fflush(stderr);
        }
        int c = 0;
        uint64_t digest = run_program(seed, calls, &c);
        total_calls += c;
        if (me == 0) {
            printf("program %llu digest %016llx calls %d\n", (unsigned long long)seed,
                   (unsigned long long)digest, c);
            fflush(stdout);
        }
    }
    long failures = 0;
    MPI_Allreduce(&failures_total, &failures, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) {
        printf("summary: %ld programs, %ld calls, %ld failures (%s, %d ranks)\n", count,
               total_calls, failures, LG_BUILD, P);
        fflush(stdout);
    }
    MPI_Type_free(&vec2);
    MPI_Comm_free(&world_dup);
    MPI_Finalize();
    return failures ? 1 : 0;
}
