/* plain_mpi_bench: a neighborhood-collective micro-benchmark written for
 * plain MPI. It knows nothing of nbrcoll: it is the program a user already
 * has, run as it is and again under the drop-in
 * (LD_PRELOAD=libnbrcoll_mpi.so) to see what nbrcoll gives without a
 * change (bench/README.md, "Drop-in speedup").
 *
 * For a Moore neighborhood on a periodic grid of ranks or a seeded random
 * sparse graph (RSG): MPI_Neighbor_allgather and MPI_Neighbor_alltoallv,
 * each blocking, nonblocking (MPI_Ineighbor_* + MPI_Wait) and persistent
 * (MPI_Neighbor_*_init, or Open MPI's MPIX_ names, + MPI_Start /
 * MPI_Wait). Every block received is checked against what its sender
 * wrote; the time of one call is the slowest rank's over --iters calls,
 * --repeats times, forms interleaved; rank 0 prints min / median / max
 * per call and a checksum of everything received.
 *
 * --reference yes runs every call also on a second communicator over the
 * same graph, created with the info key nbr_disable=true: MPI ignores the
 * key, the drop-in leaves that communicator to MPI. Its rows ("reference
 * ...") are then MPI's own collective timed in the same run, interleaved
 * with the program's, so drift between runs cannot pass for a speedup
 * (bench/dropin_speedup.py with one file). Without the drop-in, the two
 * sides are both MPI: their ratio is the bench's noise.
 *
 *   plain_mpi_bench [--pattern moore|rsg] [--dims D] [--radius R]
 *                   [--density P] [--seed S] [--bytes B1,B2,...]
 *                   [--iters N] [--warmup W] [--repeats K] [--reference yes] */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if MPI_VERSION < 4
#include <mpi-ext.h>
#define MPI_Neighbor_allgather_init MPIX_Neighbor_allgather_init
#define MPI_Neighbor_alltoallv_init MPIX_Neighbor_alltoallv_init
#endif

enum { ALLGATHER, ALLTOALLV, NUM_COLLS };
enum { BLOCKING, NONBLOCKING, PERSISTENT, NUM_FORMS };
static const char *coll_names[NUM_COLLS] = {"allgather", "alltoallv"};
static const char *form_names[NUM_FORMS] = {"blocking", "nonblocking", "persistent"};

typedef struct graph {
    int indeg, outdeg;
    int *in, *out;
} graph_t;

static int rank, size;

static unsigned draw(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffff;
}

/* Moore: every offset in [-r, r]^d but 0 on a periodic grid of ranks;
 * symmetric, so in = out. */
static void moore(int d, int r, graph_t *g)
{
    int dims[8] = {0}, me[8], n = 1;
    MPI_Dims_create(size, d, dims);
    for (int k = 0, rest = rank; k < d; k++) {
        me[k] = rest % dims[k];
        rest /= dims[k];
    }
    for (int k = 0; k < d; k++)
        n *= 2 * r + 1;
    g->in = malloc(sizeof(int) * (size_t)n);
    g->out = malloc(sizeof(int) * (size_t)n);
    g->indeg = g->outdeg = 0;
    for (int code = 0; code < n; code++) {
        int nb = 0, stride = 1, zero = 1;
        for (int k = 0, c = code; k < d; k++) {
            int off = c % (2 * r + 1) - r;
            c /= 2 * r + 1;
            zero &= off == 0;
            nb += ((me[k] + off) % dims[k] + dims[k]) % dims[k] * stride;
            stride *= dims[k];
        }
        if (!zero)
            g->in[g->indeg++] = g->out[g->outdeg++] = nb;
    }
}

/* RSG: each directed edge with probability p; every rank draws the whole
 * graph from the seed and keeps its own lists. */
static void rsg(double p, unsigned seed, graph_t *g)
{
    g->in = malloc(sizeof(int) * (size_t)size);
    g->out = malloc(sizeof(int) * (size_t)size);
    g->indeg = g->outdeg = 0;
    for (int s = 0; s < size; s++)
        for (int t = 0; t < size; t++)
            if (s != t && draw(&seed) < (unsigned)(p * 0xffffff)) {
                if (s == rank)
                    g->out[g->outdeg++] = t;
                if (t == rank)
                    g->in[g->indeg++] = s;
            }
}

/* Byte k of what sender puts in the block for receiver (allgather: one
 * block for all, receiver -1). */
static unsigned char pattern(int sender, int receiver, size_t k)
{
    return (unsigned char)(sender * 131 + (receiver + 1) * 17 + (int)(k % 251));
}

/* side 0: the program's communicator; side 1 (--reference): MPI's */
enum { PROGRAM, REFERENCE, NUM_SIDES };

typedef struct run {
    graph_t g;
    MPI_Comm comm[NUM_SIDES];
    size_t bytes;
    unsigned char *send, *recv;
    int *scounts, *sdispls, *rcounts, *rdispls;
    MPI_Request persistent[NUM_SIDES][NUM_COLLS];
} run_t;

static void call(run_t *r, int side, int coll, int form)
{
    MPI_Request req;
    MPI_Comm comm = r->comm[side];
    int n = (int)r->bytes;
    if (form == PERSISTENT) {
        MPI_Start(&r->persistent[side][coll]);
        MPI_Wait(&r->persistent[side][coll], MPI_STATUS_IGNORE);
    } else if (coll == ALLGATHER && form == BLOCKING) {
        MPI_Neighbor_allgather(r->send, n, MPI_BYTE, r->recv, n, MPI_BYTE, comm);
    } else if (coll == ALLGATHER) {
        MPI_Ineighbor_allgather(r->send, n, MPI_BYTE, r->recv, n, MPI_BYTE, comm, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else if (form == BLOCKING) {
        MPI_Neighbor_alltoallv(r->send, r->scounts, r->sdispls, MPI_BYTE, r->recv, r->rcounts,
                               r->rdispls, MPI_BYTE, comm);
    } else {
        MPI_Ineighbor_alltoallv(r->send, r->scounts, r->sdispls, MPI_BYTE, r->recv, r->rcounts,
                                r->rdispls, MPI_BYTE, comm, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
}

/* Fills the send buffer for coll and clears the receive buffer. */
static void prepare(run_t *r, int coll)
{
    if (coll == ALLGATHER) {
        for (size_t k = 0; k < r->bytes; k++)
            r->send[k] = pattern(rank, -1, k);
    } else {
        for (int j = 0; j < r->g.outdeg; j++)
            for (size_t k = 0; k < r->bytes; k++)
                r->send[(size_t)j * r->bytes + k] = pattern(rank, r->g.out[j], k);
    }
    memset(r->recv, 0, r->bytes * (size_t)(r->g.indeg + 1));
}

/* Wrong bytes received, and a checksum (FNV-1a) of the receive buffer. */
static long verify(const run_t *r, int coll, uint64_t *hash)
{
    long wrong = 0;
    for (int i = 0; i < r->g.indeg; i++)
        for (size_t k = 0; k < r->bytes; k++) {
            unsigned char want = pattern(r->g.in[i], coll == ALLGATHER ? -1 : rank, k);
            unsigned char got = r->recv[(size_t)i * r->bytes + k];
            wrong += got != want;
            *hash = (*hash ^ got) * 1099511628211ull;
        }
    return wrong;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static size_t *parse_sizes(const char *list, int *count)
{
    size_t *sizes = malloc(sizeof(size_t) * 64);
    *count = 0;
    for (const char *p = list; *p && *count < 64;) {
        char *end;
        sizes[(*count)++] = strtoull(p, &end, 10);
        p = *end == ',' ? end + 1 : end + strlen(end);
    }
    return sizes;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *pattern_name = "moore", *bytes_list = "64,1024,16384,262144";
    int dims = 2, radius = 1, iters = 100, warmup = 10, repeats = 5, sides = 1;
    double density = 0.3;
    unsigned seed = 1;
    for (int a = 1; a + 1 < argc; a += 2) {
        const char *k = argv[a], *v = argv[a + 1];
        if (!strcmp(k, "--pattern")) pattern_name = v;
        else if (!strcmp(k, "--dims")) dims = atoi(v);
        else if (!strcmp(k, "--radius")) radius = atoi(v);
        else if (!strcmp(k, "--density")) density = atof(v);
        else if (!strcmp(k, "--seed")) seed = (unsigned)atoi(v);
        else if (!strcmp(k, "--bytes")) bytes_list = v;
        else if (!strcmp(k, "--iters")) iters = atoi(v);
        else if (!strcmp(k, "--warmup")) warmup = atoi(v);
        else if (!strcmp(k, "--repeats")) repeats = atoi(v);
        else if (!strcmp(k, "--reference")) sides = strcmp(v, "yes") ? 1 : NUM_SIDES;
        else {
            if (rank == 0)
                fprintf(stderr, "plain_mpi_bench: unknown option %s\n", k);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (dims < 1 || dims > 8 || radius < 1 || iters < 1 || repeats < 1 || warmup < 0) {
        if (rank == 0)
            fprintf(stderr, "plain_mpi_bench: bad --dims, --radius, --iters, --warmup or --repeats\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    run_t r;
    memset(&r, 0, sizeof(r));
    if (!strcmp(pattern_name, "rsg"))
        rsg(density, seed, &r.g);
    else
        moore(dims, radius, &r.g);
    MPI_Info reference_info;
    MPI_Info_create(&reference_info);
    MPI_Info_set(reference_info, "nbr_disable", "true");
    for (int side = 0; side < sides; side++)
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, r.g.indeg, r.g.in, MPI_UNWEIGHTED,
                                       r.g.outdeg, r.g.out, MPI_UNWEIGHTED,
                                       side == REFERENCE ? reference_info : MPI_INFO_NULL, 0,
                                       &r.comm[side]);
    MPI_Info_free(&reference_info);
    int num_sizes = 0;
    size_t *sizes = parse_sizes(bytes_list, &num_sizes);
    int max_degree = r.g.indeg > r.g.outdeg ? r.g.indeg : r.g.outdeg;
    r.scounts = malloc(sizeof(int) * (size_t)(max_degree + 1));
    r.sdispls = malloc(sizeof(int) * (size_t)(max_degree + 1));
    r.rcounts = malloc(sizeof(int) * (size_t)(max_degree + 1));
    r.rdispls = malloc(sizeof(int) * (size_t)(max_degree + 1));
    double *samples =
        malloc(sizeof(double) * (size_t)repeats * NUM_SIDES * NUM_COLLS * NUM_FORMS);
    if (rank == 0)
        printf("# plain_mpi_bench: %s, %d ranks, in-degree of rank 0 %d, %d iterations x %d "
               "repeats%s\n",
               pattern_name, size, r.g.indeg, iters, repeats,
               sides > 1 ? ", each call also on a reference communicator (nbr_disable)" : "");
    for (int s = 0; s < num_sizes; s++) {
        r.bytes = sizes[s];
        r.send = malloc(r.bytes * (size_t)(max_degree + 1));
        r.recv = malloc(r.bytes * (size_t)(max_degree + 1));
        for (int j = 0; j <= max_degree; j++) {
            r.scounts[j] = r.rcounts[j] = (int)r.bytes;
            r.sdispls[j] = r.rdispls[j] = j * (int)r.bytes;
        }
        for (int side = 0; side < sides; side++) {
            MPI_Neighbor_allgather_init(r.send, (int)r.bytes, MPI_BYTE, r.recv, (int)r.bytes,
                                        MPI_BYTE, r.comm[side], MPI_INFO_NULL,
                                        &r.persistent[side][ALLGATHER]);
            MPI_Neighbor_alltoallv_init(r.send, r.scounts, r.sdispls, MPI_BYTE, r.recv,
                                        r.rcounts, r.rdispls, MPI_BYTE, r.comm[side],
                                        MPI_INFO_NULL, &r.persistent[side][ALLTOALLV]);
        }
        long wrong[NUM_SIDES][NUM_COLLS][NUM_FORMS] = {{{0}}};
        uint64_t hash[NUM_SIDES][NUM_COLLS][NUM_FORMS];
        for (int c = 0; c < NUM_COLLS; c++)
            for (int f = 0; f < NUM_FORMS; f++)
                for (int side = 0; side < sides; side++) {
                    /* checked first, then warmed up */
                    hash[side][c][f] = 1469598103934665603ull;
                    prepare(&r, c);
                    call(&r, side, c, f);
                    wrong[side][c][f] = verify(&r, c, &hash[side][c][f]);
                    for (int w = 0; w < warmup; w++)
                        call(&r, side, c, f);
                }
        for (int k = 0; k < repeats; k++)
            for (int c = 0; c < NUM_COLLS; c++) {
                prepare(&r, c);
                for (int f = 0; f < NUM_FORMS; f++)
                    for (int side = 0; side < sides; side++) {
                        /* sides alternate which goes first */
                        int at = (side + k) % sides;
                        MPI_Barrier(MPI_COMM_WORLD);
                        double t0 = MPI_Wtime();
                        for (int i = 0; i < iters; i++)
                            call(&r, at, c, f);
                        double t = (MPI_Wtime() - t0) / iters, slowest = 0;
                        MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
                        samples[((at * NUM_COLLS + c) * NUM_FORMS + f) * repeats + k] = slowest;
                    }
            }
        for (int side = 0; side < sides; side++)
            for (int c = 0; c < NUM_COLLS; c++)
                for (int f = 0; f < NUM_FORMS; f++) {
                    long all_wrong = 0;
                    uint64_t all_hash = 0, mine = hash[side][c][f] * (uint64_t)(2 * rank + 1);
                    MPI_Reduce(&wrong[side][c][f], &all_wrong, 1, MPI_LONG, MPI_SUM, 0,
                               MPI_COMM_WORLD);
                    MPI_Reduce(&mine, &all_hash, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
                    double *t = &samples[((side * NUM_COLLS + c) * NUM_FORMS + f) * repeats];
                    qsort(t, (size_t)repeats, sizeof(double), compare_doubles);
                    if (rank == 0)
                        printf("%s%s %s %zu B: min %.1f median %.1f max %.1f us, wrong bytes "
                               "%ld, checksum %016llx\n",
                               side == REFERENCE ? "reference " : "", coll_names[c],
                               form_names[f], r.bytes, t[0] * 1e6, t[repeats / 2] * 1e6,
                               t[repeats - 1] * 1e6, all_wrong, (unsigned long long)all_hash);
                }
        for (int side = 0; side < sides; side++) {
            MPI_Request_free(&r.persistent[side][ALLGATHER]);
            MPI_Request_free(&r.persistent[side][ALLTOALLV]);
        }
        free(r.send);
        free(r.recv);
    }
    for (int side = 0; side < sides; side++)
        MPI_Comm_free(&r.comm[side]);
    free(sizes), free(samples), free(r.g.in), free(r.g.out);
    free(r.scounts), free(r.sdispls), free(r.rcounts), free(r.rdispls);
    MPI_Finalize();
    return 0;
}
