/*
 * nbr_bench: times nbrcoll's neighborhood collectives against the MPI
 * library's own MPI_Neighbor_* on a synthetic communication graph.
 *
 * Every rank generates the same whole graph (graph_gen), builds one
 * dist-graph communicator per nbrcoll algorithm from its own lists, checks
 * each algorithm bit-exact against MPI, then times all algorithms size by
 * size. Run with --help for the options; bench/README.md explains the output.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "base/graph_gen.h"
#include "nbrcoll.h"

#define MAX_ALGS 32
#define ALG_NAME_MAX 64
#define POISON_BYTE 0xA5
#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)
#define BYTES_LOWER_LIMIT UINT64_C(8)
#define BYTES_UPPER_LIMIT (64 * MIB)

/* Exit statuses: usage errors differ from failures found while running. */
#define EXIT_USAGE 2

/* ================================================================ options */

typedef enum { PATTERN_RSG, PATTERN_MOORE } pattern_kind_t;
typedef enum { COLL_ALLGATHER, COLL_ALLGATHERV, COLL_ALLTOALLV } coll_kind_t;
typedef enum { MEMORY_HOST, MEMORY_DEVICE } memory_kind_t;

static const char *const coll_names[] = {"allgather", "allgatherv",
                                         "alltoallv"};

typedef struct options {
    pattern_kind_t pattern;
    double density;
    uint64_t seed;
    int dims;
    int radius;
    coll_kind_t coll;
    memory_kind_t memory; /* where the timed calls' buffers live */
    uint64_t min_bytes;
    uint64_t max_bytes;
    int warmup;
    int iters;
    char alg_names[MAX_ALGS][ALG_NAME_MAX];
    int nalgs;
    int ranks_per_node;   /* 0: let nbrcoll detect real nodes */
    int ranks_per_socket; /* 0: let nbrcoll detect real sockets */
    const char *csv_path; /* NULL: no CSV */
    uint64_t max_mem;
} options_t;

static void options_default(options_t *o)
{
    memset(o, 0, sizeof *o);
    o->pattern = PATTERN_RSG;
    o->density = 0.3;
    o->seed = 1;
    o->dims = 2;
    o->radius = 1;
    o->coll = COLL_ALLGATHER;
    o->min_bytes = 8;
    o->max_bytes = 64 * KIB;
    o->warmup = 3;
    o->iters = 20;
    strcpy(o->alg_names[0], "mpi");
    strcpy(o->alg_names[1], "naive");
    o->nalgs = 2;
    o->max_mem = GIB;
}

static void print_usage(FILE *f)
{
    fprintf(f,
        "usage: mpirun -np N nbr_bench [options]\n"
        "\n"
        "Times nbrcoll neighborhood collectives against MPI_Neighbor_*.\n"
        "\n"
        "graph:\n"
        "  --pattern rsg|moore      random sparse graph (Erdos-Renyi) or\n"
        "                           Moore stencil on a periodic grid [rsg]\n"
        "  --density P              rsg: edge probability, 0..1 [0.3]\n"
        "  --seed S                 rsg: generator seed [1]\n"
        "  --dims D                 moore: grid dimensions [2]\n"
        "  --radius R               moore: stencil radius [1]\n"
        "collective:\n"
        "  --collective C           allgather|allgatherv|alltoallv [allgather]\n"
        "  --min-bytes B            smallest per-neighbor message [8]\n"
        "  --max-bytes B            largest per-neighbor message [64Ki]\n"
        "                           powers of two from 8 to 64Mi; suffixes\n"
        "                           K/Ki = 2^10, M/Mi = 2^20\n"
        "  --warmup N               untimed calls per size and algorithm [3]\n"
        "  --iters N                timed calls per size and algorithm [20]\n"
        "  --algorithms A,B,...     'mpi' = the MPI library's own collective;\n"
        "                           'copy' = one device-to-device copy of the\n"
        "                           receive bytes (--memory device only);\n"
        "                           other names are nbrcoll algorithms [mpi,naive]\n"
        "  --memory host|device     buffers from malloc, or device buffers from\n"
        "                           nbr_mem_alloc (mpi then stages through host\n"
        "                           copies; needs a GPU or NBR_DEVICE=emulate)\n"
        "                           [host]\n"
        "locality:\n"
        "  --ranks-per-node N       split the job into virtual nodes of N ranks\n"
        "  --ranks-per-socket N     virtual CPU sockets of N ranks in a node\n"
        "output and limits:\n"
        "  --csv FILE               also write results to FILE (overwritten)\n"
        "  --max-mem B              skip sizes needing more buffer memory per\n"
        "                           rank than B (suffixes as above, G/Gi) [1Gi]\n"
        "  --help                   this text\n"
        "\n"
        "nbrcoll algorithms in this build: %s\n",
        nbr_algorithm_names());
}

/* Parses a whole decimal integer in [lo, hi]; 0 on success. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Parses a byte count with an optional binary suffix K, Ki, M, Mi, G, Gi
 * (case-insensitive letter): "64Ki" is 65536. 0 on success. */
static int parse_bytes(const char *s, uint64_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1; /* strtoull would accept "-1" */
    unsigned long long v = strtoull(s, &end, 10);
    uint64_t unit = 1;
    switch (*end) {
    case '\0': break;
    case 'K': case 'k': unit = KIB; end++; break;
    case 'M': case 'm': unit = MIB; end++; break;
    case 'G': case 'g': unit = GIB; end++; break;
    default: return -1;
    }
    if (unit > 1 && *end == 'i')
        end++;
    if (*end != '\0' || v > UINT64_MAX / unit)
        return -1;
    *out = (uint64_t)v * unit;
    return 0;
}

static int is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

/* Copies s without leading and trailing blanks into dst (size n). */
static void copy_trimmed(char *dst, size_t n, const char *s, size_t len)
{
    while (len > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        len--;
    }
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    if (len >= n)
        len = n - 1;
    memcpy(dst, s, len);
    dst[len] = '\0';
}

/* 1 if name is one entry of the comma-separated list. */
static int name_in_list(const char *name, const char *list)
{
    while (list && *list) {
        const char *comma = strchr(list, ',');
        size_t len = comma ? (size_t)(comma - list) : strlen(list);
        char entry[ALG_NAME_MAX];
        copy_trimmed(entry, sizeof entry, list, len);
        if (strcmp(entry, name) == 0)
            return 1;
        list = comma ? comma + 1 : NULL;
    }
    return 0;
}

/* Splits --algorithms into o->alg_names and checks every name now, before
 * any communicator exists, so a typo costs nothing. */
static int parse_algorithms(const char *s, options_t *o, char *err,
                            size_t errlen)
{
    o->nalgs = 0;
    while (s) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        char name[ALG_NAME_MAX];
        if (len >= ALG_NAME_MAX) {
            snprintf(err, errlen, "--algorithms: name too long");
            return -1;
        }
        copy_trimmed(name, sizeof name, s, len);
        s = comma ? comma + 1 : NULL;
        if (name[0] == '\0')
            continue; /* tolerate "mpi,,naive" and a trailing comma */
        if (strcmp(name, "mpi") != 0 && strcmp(name, "copy") != 0 &&
            !name_in_list(name, nbr_algorithm_names())) {
            snprintf(err, errlen,
                     "unknown algorithm '%s' (known: mpi,copy,%s)", name,
                     nbr_algorithm_names());
            return -1;
        }
        for (int i = 0; i < o->nalgs; i++) {
            if (strcmp(o->alg_names[i], name) == 0) {
                snprintf(err, errlen, "--algorithms: '%s' listed twice",
                         name);
                return -1;
            }
        }
        if (o->nalgs == MAX_ALGS) {
            snprintf(err, errlen, "--algorithms: more than %d names",
                     MAX_ALGS);
            return -1;
        }
        strcpy(o->alg_names[o->nalgs++], name);
    }
    if (o->nalgs == 0) {
        snprintf(err, errlen, "--algorithms: empty list");
        return -1;
    }
    return 0;
}

/* Applies one option with its value; 0 on success, else fills err. */
static int apply_option(const char *name, const char *val, options_t *o,
                        char *err, size_t errlen)
{
    long l = 0;
    int bad = 0;
    if (strcmp(name, "pattern") == 0) {
        if (strcmp(val, "rsg") == 0)
            o->pattern = PATTERN_RSG;
        else if (strcmp(val, "moore") == 0)
            o->pattern = PATTERN_MOORE;
        else
            bad = 1;
    } else if (strcmp(name, "density") == 0) {
        char *end;
        o->density = strtod(val, &end);
        bad = end == val || *end != '\0' || !(o->density >= 0.0) ||
              o->density > 1.0;
    } else if (strcmp(name, "seed") == 0) {
        char *end;
        o->seed = strtoull(val, &end, 10);
        bad = end == val || *end != '\0' || val[0] == '-';
    } else if (strcmp(name, "dims") == 0) {
        bad = parse_long(val, 1, 8, &l);
        o->dims = (int)l;
    } else if (strcmp(name, "radius") == 0) {
        bad = parse_long(val, 1, 64, &l);
        o->radius = (int)l;
    } else if (strcmp(name, "collective") == 0) {
        bad = 1;
        for (int c = 0; c < 3; c++) {
            if (strcmp(val, coll_names[c]) == 0) {
                o->coll = (coll_kind_t)c;
                bad = 0;
            }
        }
    } else if (strcmp(name, "memory") == 0) {
        if (strcmp(val, "host") == 0)
            o->memory = MEMORY_HOST;
        else if (strcmp(val, "device") == 0)
            o->memory = MEMORY_DEVICE;
        else
            bad = 1;
    } else if (strcmp(name, "min-bytes") == 0) {
        bad = parse_bytes(val, &o->min_bytes);
    } else if (strcmp(name, "max-bytes") == 0) {
        bad = parse_bytes(val, &o->max_bytes);
    } else if (strcmp(name, "warmup") == 0) {
        bad = parse_long(val, 0, 1000000, &l);
        o->warmup = (int)l;
    } else if (strcmp(name, "iters") == 0) {
        bad = parse_long(val, 1, 1000000, &l);
        o->iters = (int)l;
    } else if (strcmp(name, "algorithms") == 0) {
        return parse_algorithms(val, o, err, errlen);
    } else if (strcmp(name, "ranks-per-node") == 0) {
        bad = parse_long(val, 1, INT_MAX, &l);
        o->ranks_per_node = (int)l;
    } else if (strcmp(name, "ranks-per-socket") == 0) {
        bad = parse_long(val, 1, INT_MAX, &l);
        o->ranks_per_socket = (int)l;
    } else if (strcmp(name, "csv") == 0) {
        o->csv_path = val;
        bad = val[0] == '\0';
    } else if (strcmp(name, "max-mem") == 0) {
        bad = parse_bytes(val, &o->max_mem);
    } else {
        snprintf(err, errlen, "unknown option '--%s'", name);
        return -1;
    }
    if (bad)
        snprintf(err, errlen, "bad value '%s' for --%s", val, name);
    return bad ? -1 : 0;
}

static int check_options(const options_t *o, char *err, size_t errlen)
{
    if (!is_power_of_two(o->min_bytes) || !is_power_of_two(o->max_bytes)) {
        snprintf(err, errlen, "--min-bytes and --max-bytes must be powers "
                              "of two");
        return -1;
    }
    if (o->min_bytes < BYTES_LOWER_LIMIT ||
        o->max_bytes > BYTES_UPPER_LIMIT || o->min_bytes > o->max_bytes) {
        snprintf(err, errlen, "need 8 <= --min-bytes <= --max-bytes <= 64Mi");
        return -1;
    }
    /* --algorithms may come before --memory, so only now is it known. */
    for (int a = 0; a < o->nalgs; a++) {
        if (strcmp(o->alg_names[a], "copy") == 0 &&
            o->memory != MEMORY_DEVICE) {
            snprintf(err, errlen, "algorithm 'copy' needs --memory device "
                                  "(it times a device-to-device copy)");
            return -1;
        }
    }
    return 0;
}

/* Returns 0 to run, 1 for --help, -1 on a usage error (message in err).
 * Accepts "--name value" and "--name=value". */
static int parse_args(int argc, char **argv, options_t *o, char *err,
                      size_t errlen)
{
    options_default(o);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
            return 1;
        if (strncmp(arg, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument '%s'", arg);
            return -1;
        }
        char name[64];
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (len >= sizeof name) {
            snprintf(err, errlen, "unknown option '%s'", arg);
            return -1;
        }
        memcpy(name, arg + 2, len);
        name[len] = '\0';
        const char *val = eq ? eq + 1 : NULL;
        if (!val) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "option '--%s' needs a value", name);
                return -1;
            }
            val = argv[++i];
        }
        if (apply_option(name, val, o, err, errlen) != 0)
            return -1;
    }
    return check_options(o, err, errlen);
}

/* "rsg(d=0.30,s=1)" or "moore(d=2,r=1)": the pattern field of every row. */
static void pattern_label(const options_t *o, char *buf, size_t n)
{
    if (o->pattern == PATTERN_RSG)
        snprintf(buf, n, "rsg(d=%.2f,s=%llu)", o->density,
                 (unsigned long long)o->seed);
    else
        snprintf(buf, n, "moore(d=%d,r=%d)", o->dims, o->radius);
}

/* "64Ki" style label for the table; the CSV keeps plain byte counts. */
static void size_label(uint64_t b, char *buf, size_t n)
{
    if (b >= MIB && b % MIB == 0)
        snprintf(buf, n, "%lluMi", (unsigned long long)(b / MIB));
    else if (b >= KIB && b % KIB == 0)
        snprintf(buf, n, "%lluKi", (unsigned long long)(b / KIB));
    else
        snprintf(buf, n, "%llu", (unsigned long long)b);
}

/* ========================================================== fatal errors */

/* For failures inside collectives: peers may already be blocked in a call
 * this rank will never make, so only MPI_Abort ends the job reliably. */
static void die_nbr(int rc, const char *what)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "nbr_bench: rank %d: %s failed: %s (%d)\n", rank, what,
            nbr_error_string(rc), rc);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void die_mpi(int rc, const char *what)
{
    int rank, len;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "nbr_bench: rank %d: %s failed: %s\n", rank, what, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* ============================================================ topology */

/* One rank's view: the whole graph, its own lists, and where every rank
 * lives (needed to model the MPI library's traffic). */
typedef struct topo {
    nbr_graph_t graph;
    int rank, nranks;
    int indeg, outdeg;
    const int *in, *out; /* this rank's lists inside graph */
    int *in_occ;  /* in_occ[i]: earlier slots naming the same source */
    int *out_occ; /* out_occ[j]: earlier slots naming the same target */
    int nnodes;
    int *node_of;   /* node of every rank */
    int *socket_of; /* socket of every rank (nbrcoll numbers them over the
                       job; compared only together with node_of) */
    int nsockets;   /* distinct (node, socket) pairs */
    int socket_max; /* L: the most ranks on one socket */
} topo_t;

/* Occurrence index of every slot: the k-th edge s->d in s's out-list is
 * the k-th s in d's in-list (MPI's pairing of repeated edges), so both
 * ends of an edge can derive the same per-edge message size. */
static int *occurrences(const int *list, int n)
{
    int *occ = malloc(((size_t)n + 1) * sizeof *occ);
    if (!occ)
        return NULL;
    for (int j = 0; j < n; j++) {
        occ[j] = 0;
        for (int i = 0; i < j; i++)
            occ[j] += list[i] == list[j];
    }
    return occ;
}

static int build_graph(const options_t *o, topo_t *t)
{
    memset(t, 0, sizeof *t);
    MPI_Comm_rank(MPI_COMM_WORLD, &t->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t->nranks);
    int rc = o->pattern == PATTERN_RSG
                 ? nbr_graph_erdos_renyi(t->nranks, o->density, o->seed,
                                         &t->graph)
                 : nbr_graph_moore(t->nranks, o->dims, o->radius, &t->graph);
    if (rc != NBR_SUCCESS)
        return rc;
    t->indeg = nbr_graph_indegree(&t->graph, t->rank);
    t->outdeg = nbr_graph_outdegree(&t->graph, t->rank);
    t->in = nbr_graph_in(&t->graph, t->rank);
    t->out = nbr_graph_out(&t->graph, t->rank);
    t->in_occ = occurrences(t->in, t->indeg);
    t->out_occ = occurrences(t->out, t->outdeg);
    t->node_of = malloc((size_t)t->nranks * sizeof *t->node_of);
    t->socket_of = malloc((size_t)t->nranks * sizeof *t->socket_of);
    if (!t->in_occ || !t->out_occ || !t->node_of || !t->socket_of)
        return NBR_ERR_NOMEM;
    return NBR_SUCCESS;
}

static void free_topo(topo_t *t)
{
    nbr_graph_free(&t->graph);
    free(t->in_occ);
    free(t->out_occ);
    free(t->node_of);
    free(t->socket_of);
}

static int cmp_pair(const void *a, const void *b)
{
    const int *x = a, *y = b;
    if (x[0] != y[0])
        return (x[0] > y[0]) - (x[0] < y[0]);
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* Number of sockets and L, the largest number of ranks on one socket, from
 * the (node, socket) pairs: what halving's off-socket bound is about. */
static void count_sockets(topo_t *t)
{
    int *pairs = malloc(2 * (size_t)t->nranks * sizeof *pairs);
    if (!pairs)
        die_nbr(NBR_ERR_NOMEM, "count_sockets");
    for (int r = 0; r < t->nranks; r++) {
        pairs[2 * r] = t->node_of[r];
        pairs[2 * r + 1] = t->socket_of[r];
    }
    qsort(pairs, (size_t)t->nranks, 2 * sizeof *pairs, cmp_pair);
    t->nsockets = 0;
    t->socket_max = 0;
    for (int r = 0, run = 0; r < t->nranks; r++) {
        int same = r > 0 && cmp_pair(&pairs[2 * r], &pairs[2 * r - 2]) == 0;
        run = same ? run + 1 : 1;
        t->nsockets += !same;
        t->socket_max = run > t->socket_max ? run : t->socket_max;
    }
    free(pairs);
}

/* halving's bound on off-socket messages per rank per call,
 * ceil(log2(n / L)) + 1, in integers; 0 when one socket holds every rank. */
static int offsock_bound(const topo_t *t)
{
    if (t->socket_max <= 0 || t->nranks <= t->socket_max)
        return 0;
    int k = 0;
    while ((int64_t)t->socket_max << k < (int64_t)t->nranks)
        k++;
    return k + 1;
}

/* Node map as nbrcoll sees it on comm, gathered for every rank. */
static void gather_locality(MPI_Comm comm, topo_t *t)
{
    int mine[2];
    int rc = nbr_comm_locality(comm, &t->nnodes, &mine[0], &mine[1]);
    if (rc != NBR_SUCCESS)
        die_nbr(rc, "nbr_comm_locality");
    int *both = malloc(2 * (size_t)t->nranks * sizeof *both);
    if (!both)
        die_nbr(NBR_ERR_NOMEM, "gather_locality");
    MPI_Allgather(mine, 2, MPI_INT, both, 2, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < t->nranks; r++) {
        t->node_of[r] = both[2 * r];
        t->socket_of[r] = both[2 * r + 1];
    }
    free(both);
    count_sockets(t);
}

/* ====================================================== communicators */

typedef struct bench_alg {
    const char *name;
    int is_mpi;   /* 1: MPI_Neighbor_* on the base communicator */
    int is_copy;  /* 1: a local device copy, no communicator */
    MPI_Comm comm;
} bench_alg_t;

/* Info carrying the nbrcoll configuration; alg may be NULL (default). */
static MPI_Info make_info(const options_t *o, const char *alg)
{
    MPI_Info info;
    char v[32];
    MPI_Info_create(&info);
    if (alg)
        MPI_Info_set(info, "nbr_algorithm", alg);
    if (o->ranks_per_node > 0) {
        snprintf(v, sizeof v, "%d", o->ranks_per_node);
        MPI_Info_set(info, "nbr_ranks_per_node", v);
    }
    if (o->ranks_per_socket > 0) {
        snprintf(v, sizeof v, "%d", o->ranks_per_socket);
        MPI_Info_set(info, "nbr_ranks_per_socket", v);
    }
    return info;
}

/* nbr_dist_graph_create_adjacent agrees on errors collectively, so every
 * rank gets the same status and may return instead of aborting. */
static int create_comm(const options_t *o, const topo_t *t, const char *alg,
                       MPI_Comm *comm)
{
    MPI_Info info = make_info(o, alg);
    /* Open MPI defines MPI_UNWEIGHTED as (int *)2; GCC >= 11 then thinks a
     * zero-size array reaches a [] parameter and warns (it does the same
     * for MPI_Dist_graph_create_adjacent itself). A false positive. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
#endif
    int rc = nbr_dist_graph_create_adjacent(
        MPI_COMM_WORLD, t->indeg, t->in, MPI_UNWEIGHTED, t->outdeg, t->out,
        MPI_UNWEIGHTED, info, 0, comm);
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic pop
#endif
    MPI_Info_free(&info);
    return rc;
}

/* One communicator per nbrcoll algorithm, created up front; `mpi` runs on
 * the first one. With only `mpi` listed a default nbrcoll communicator is
 * still made: it supplies the node map. *base receives that first one. */
static int create_comms(const options_t *o, const topo_t *t,
                        bench_alg_t *algs, MPI_Comm *base)
{
    *base = MPI_COMM_NULL;
    for (int a = 0; a < o->nalgs; a++) {
        algs[a].name = o->alg_names[a];
        algs[a].is_mpi = strcmp(algs[a].name, "mpi") == 0;
        algs[a].is_copy = strcmp(algs[a].name, "copy") == 0;
        algs[a].comm = MPI_COMM_NULL;
        if (algs[a].is_mpi || algs[a].is_copy)
            continue;
        int rc = create_comm(o, t, algs[a].name, &algs[a].comm);
        if (rc != NBR_SUCCESS)
            return rc;
        if (*base == MPI_COMM_NULL)
            *base = algs[a].comm;
    }
    if (*base == MPI_COMM_NULL) {
        int rc = create_comm(o, t, NULL, base);
        if (rc != NBR_SUCCESS)
            return rc;
    }
    for (int a = 0; a < o->nalgs; a++)
        if (algs[a].is_mpi)
            algs[a].comm = *base;
    return NBR_SUCCESS;
}

/* NBR_ALGORITHM in the environment beats the info key: say so, or the
 * table would credit one algorithm with another's times. */
static void warn_overridden_algorithms(const bench_alg_t *algs, int nalgs,
                                       int rank)
{
    for (int a = 0; a < nalgs; a++) {
        if (algs[a].is_mpi || algs[a].is_copy)
            continue;
        const char *actual = NULL;
        int rc = nbr_comm_algorithm(algs[a].comm, &actual);
        if (rc != NBR_SUCCESS)
            die_nbr(rc, "nbr_comm_algorithm");
        if (rank == 0 && actual && strcmp(actual, algs[a].name) != 0)
            printf("# WARNING: '%s' was requested but nbrcoll runs '%s' "
                   "(NBR_ALGORITHM set?)\n",
                   algs[a].name, actual);
    }
}

static void free_comms(bench_alg_t *algs, int nalgs, MPI_Comm base)
{
    for (int a = 0; a < nalgs; a++)
        if (algs[a].comm != MPI_COMM_NULL && algs[a].comm != base)
            MPI_Comm_free(&algs[a].comm);
    if (base != MPI_COMM_NULL)
        MPI_Comm_free(&base);
}

/* ============================================== message sizes, buffers */

/* Size `bytes` varied by up to +-25% in eighths, chosen by a hash of key:
 * uneven enough to exercise the v-variants, averaging close to bytes. */
static int varied_size(uint64_t bytes, uint64_t key)
{
    uint64_t state = key;
    int step = (int)(nbr_splitmix64(&state) % 9) - 4; /* -4 .. 4 */
    int64_t quarter = (int64_t)(bytes / 4);
    return (int)((int64_t)bytes + quarter * step / 4);
}

/* allgatherv: every rank contributes one block of its own size. */
static int block_size(uint64_t bytes, int rank)
{
    return varied_size(bytes, UINT64_C(0xB10C) ^ ((uint64_t)rank << 20));
}

/* alltoallv: every edge (src -> dst, k-th repetition) has its own size. */
static int edge_size(uint64_t bytes, int src, int dst, int occ)
{
    uint64_t key = ((uint64_t)(uint32_t)src << 32) ^ (uint64_t)(uint32_t)dst ^
                   ((uint64_t)occ << 48);
    return varied_size(bytes, key);
}

/* Which buffers a run needs besides host send and receive. */
typedef struct buffer_set {
    int ref;    /* reference result: something is verified */
    int device; /* --memory device: device send and receive */
    int copy;   /* the `copy` row: a second device receive buffer */
} buffer_set_t;

/* Counts, displacements and buffers of one message size on one rank. */
typedef struct layout {
    uint64_t bytes;
    int sendcount, recvcount;   /* allgather(v) */
    int *sendcounts, *sdispls;  /* alltoallv, outdeg entries */
    int *recvcounts, *rdispls;  /* v-variants, indeg entries */
    uint64_t send_total, recv_total;
    int too_big_for_int;        /* a displacement would overflow int */
    buffer_set_t has;           /* set before layout_memory / layout_alloc */
    unsigned char *send, *recv, *ref;
    /* --memory device, from nbr_mem_alloc: what nbrcoll algorithms get;
     * the host buffers above fill them, check them and stage mpi. */
    void *dsend, *drecv, *dcopy;
} layout_t;

/* Fills counts[i] = size_of(i) and prefix-sum displacements; the total is
 * 64-bit so an int overflow is detected instead of wrapping. */
static uint64_t prefix_layout(int n, int *counts, int *displs,
                              int *too_big)
{
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (total > INT_MAX)
            *too_big = 1;
        displs[i] = total > INT_MAX ? 0 : (int)total;
        total += (uint64_t)counts[i];
    }
    return total;
}

/* Plans counts only (no data buffers): cheap, so the memory guard can run
 * before anything large is allocated. */
static int layout_plan(layout_t *L, const topo_t *t, coll_kind_t coll,
                       uint64_t bytes)
{
    memset(L, 0, sizeof *L);
    L->bytes = bytes;
    size_t in_n = (size_t)t->indeg + 1, out_n = (size_t)t->outdeg + 1;
    L->recvcounts = malloc(in_n * sizeof(int));
    L->rdispls = malloc(in_n * sizeof(int));
    L->sendcounts = malloc(out_n * sizeof(int));
    L->sdispls = malloc(out_n * sizeof(int));
    if (!L->recvcounts || !L->rdispls || !L->sendcounts || !L->sdispls)
        return -1;
    switch (coll) {
    case COLL_ALLGATHER:
        L->sendcount = L->recvcount = (int)bytes;
        L->send_total = bytes;
        L->recv_total = bytes * (uint64_t)t->indeg;
        break;
    case COLL_ALLGATHERV:
        L->sendcount = block_size(bytes, t->rank);
        L->send_total = (uint64_t)L->sendcount;
        for (int i = 0; i < t->indeg; i++)
            L->recvcounts[i] = block_size(bytes, t->in[i]);
        L->recv_total = prefix_layout(t->indeg, L->recvcounts, L->rdispls,
                                      &L->too_big_for_int);
        break;
    case COLL_ALLTOALLV:
        for (int j = 0; j < t->outdeg; j++)
            L->sendcounts[j] = edge_size(bytes, t->rank, t->out[j],
                                         t->out_occ[j]);
        for (int i = 0; i < t->indeg; i++)
            L->recvcounts[i] = edge_size(bytes, t->in[i], t->rank,
                                         t->in_occ[i]);
        L->send_total = prefix_layout(t->outdeg, L->sendcounts, L->sdispls,
                                      &L->too_big_for_int);
        L->recv_total = prefix_layout(t->indeg, L->recvcounts, L->rdispls,
                                      &L->too_big_for_int);
        break;
    }
    return 0;
}

/* Buffer memory this rank needs, host and device together: send + recv,
 * a reference copy of the MPI result when something is checked, and the
 * device buffers of --memory device. */
static uint64_t layout_memory(const layout_t *L)
{
    uint64_t host = L->send_total + L->recv_total * (L->has.ref ? 2u : 1u);
    uint64_t dev = L->has.device ? L->send_total + L->recv_total : 0;
    return host + dev + (L->has.copy ? L->recv_total : 0);
}

static void *device_alloc(uint64_t bytes)
{
    void *p = NULL;
    return nbr_mem_alloc(&p, (size_t)bytes) == NBR_SUCCESS ? p : NULL;
}

/* At least one byte each: a rank without neighbors still passes valid
 * pointers, as a real application would. */
static int layout_alloc(layout_t *L)
{
    L->send = malloc((size_t)L->send_total + 1);
    L->recv = malloc((size_t)L->recv_total + 1);
    L->ref = L->has.ref ? malloc((size_t)L->recv_total + 1) : NULL;
    if (L->has.device) {
        L->dsend = device_alloc(L->send_total + 1);
        L->drecv = device_alloc(L->recv_total + 1);
    }
    if (L->has.copy)
        L->dcopy = device_alloc(L->recv_total + 1);
    if (!L->send || !L->recv || (L->has.ref && !L->ref))
        return -1;
    if (L->has.device && (!L->dsend || !L->drecv))
        return -1;
    return L->has.copy && !L->dcopy ? -1 : 0;
}

static void layout_free(layout_t *L)
{
    free(L->sendcounts);
    free(L->sdispls);
    free(L->recvcounts);
    free(L->rdispls);
    free(L->send);
    free(L->recv);
    free(L->ref);
    /* Only an nbrcoll bug makes these fail; leaking one size's buffers is
     * no reason to stop the sweep. */
    (void)nbr_mem_free(L->dsend);
    (void)nbr_mem_free(L->drecv);
    (void)nbr_mem_free(L->dcopy);
    memset(L, 0, sizeof *L);
}

/* Deterministic send data, different for every (rank, slot, byte), so a
 * block landing in the wrong slot or at a shifted offset is detected. */
static unsigned char pattern_byte(int rank, int slot, uint64_t i)
{
    uint32_t x = (uint32_t)i * 0x9E3779B1u ^ (uint32_t)(i >> 32) ^
                 (uint32_t)rank * 0x85EBCA77u ^ (uint32_t)slot * 0xC2B2AE3Du;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    return (unsigned char)(x ^ (x >> 13));
}

static void fill_send(layout_t *L, const topo_t *t, coll_kind_t coll)
{
    if (coll != COLL_ALLTOALLV) {
        for (uint64_t i = 0; i < L->send_total; i++)
            L->send[i] = pattern_byte(t->rank, 0, i);
        return;
    }
    for (int j = 0; j < t->outdeg; j++) {
        unsigned char *p = L->send + L->sdispls[j];
        for (int i = 0; i < L->sendcounts[j]; i++)
            p[i] = pattern_byte(t->rank, j, (uint64_t)i);
    }
}

/* ====================================================== running calls */

/* One collective call from send into recv; returns the MPI or nbrcoll
 * status. */
static int run_collective(const bench_alg_t *a, const layout_t *L,
                          coll_kind_t coll, const void *send, void *recv)
{
    switch (coll) {
    case COLL_ALLGATHER:
        if (a->is_mpi)
            return MPI_Neighbor_allgather(send, L->sendcount, MPI_BYTE,
                                          recv, L->recvcount, MPI_BYTE,
                                          a->comm);
        return nbr_neighbor_allgather(send, L->sendcount, MPI_BYTE, recv,
                                      L->recvcount, MPI_BYTE, a->comm);
    case COLL_ALLGATHERV:
        if (a->is_mpi)
            return MPI_Neighbor_allgatherv(send, L->sendcount, MPI_BYTE,
                                           recv, L->recvcounts, L->rdispls,
                                           MPI_BYTE, a->comm);
        return nbr_neighbor_allgatherv(send, L->sendcount, MPI_BYTE, recv,
                                       L->recvcounts, L->rdispls, MPI_BYTE,
                                       a->comm);
    case COLL_ALLTOALLV:
        if (a->is_mpi)
            return MPI_Neighbor_alltoallv(send, L->sendcounts, L->sdispls,
                                          MPI_BYTE, recv, L->recvcounts,
                                          L->rdispls, MPI_BYTE, a->comm);
        return nbr_neighbor_alltoallv(send, L->sendcounts, L->sdispls,
                                      MPI_BYTE, recv, L->recvcounts,
                                      L->rdispls, MPI_BYTE, a->comm);
    }
    return NBR_ERR_INTERNAL;
}

static void run_or_die(const bench_alg_t *a, const layout_t *L,
                       coll_kind_t coll, const void *send, void *recv)
{
    int rc = run_collective(a, L, coll, send, recv);
    if (rc == 0)
        return;
    char what[128];
    snprintf(what, sizeof what, "%s neighbor_%s", a->name, coll_names[coll]);
    if (a->is_mpi)
        die_mpi(rc, what);
    die_nbr(rc, what);
}

static void copy_or_die(void *dst, const void *src, uint64_t bytes,
                        const char *what)
{
    int rc = nbr_mem_copy(dst, src, (size_t)bytes);
    if (rc != NBR_SUCCESS)
        die_nbr(rc, what);
}

/* One call of algorithm a as it is timed; the result ends up in L->recv,
 * or in L->drecv with --memory device. */
static void run_call(const bench_alg_t *a, layout_t *L, coll_kind_t coll)
{
    if (a->is_copy) {
        /* What one rank's receive volume costs to move inside the device:
         * the floor under any algorithm that must land it there. */
        copy_or_die(L->dcopy, L->drecv, L->recv_total, "copy nbr_mem_copy");
    } else if (!L->has.device) {
        run_or_die(a, L, coll, L->send, L->recv);
    } else if (!a->is_mpi) {
        run_or_die(a, L, coll, L->dsend, L->drecv);
    } else {
        /* An MPI that is not GPU-aware (Debian's Open MPI) cannot take the
         * device buffers: stage through host memory as an application
         * would, both copies inside the timed call. */
        copy_or_die(L->send, L->dsend, L->send_total, "mpi staging D2H");
        run_or_die(a, L, coll, L->send, L->recv);
        copy_or_die(L->drecv, L->recv, L->recv_total, "mpi staging H2D");
    }
}

/* ========================================================= verification */

/* Receive slot holding byte offset off of recv. */
static int slot_of(const layout_t *L, const topo_t *t, coll_kind_t coll,
                   uint64_t off)
{
    if (coll == COLL_ALLGATHER)
        return (int)(off / (uint64_t)L->recvcount);
    int slot = 0;
    for (int i = 0; i < t->indeg; i++)
        if ((uint64_t)L->rdispls[i] <= off && L->recvcounts[i] > 0)
            slot = i;
    return slot;
}

static void report_mismatch(const bench_alg_t *a, const layout_t *L,
                            const topo_t *t, coll_kind_t coll, uint64_t off)
{
    uint64_t ndiff = 0;
    for (uint64_t i = off; i < L->recv_total; i++)
        ndiff += L->recv[i] != L->ref[i];
    int slot = slot_of(L, t, coll, off);
    uint64_t start = coll == COLL_ALLGATHER
                         ? (uint64_t)slot * (uint64_t)L->recvcount
                         : (uint64_t)L->rdispls[slot];
    fprintf(stderr,
            "nbr_bench: MISMATCH rank %d, algorithm %s, %s, bytes %llu: "
            "recv slot %d (from rank %d) offset %llu: got 0x%02x, MPI gave "
            "0x%02x%s; %llu of %llu bytes differ\n",
            t->rank, a->name, coll_names[coll],
            (unsigned long long)L->bytes, slot, t->in[slot],
            (unsigned long long)(off - start), L->recv[off], L->ref[off],
            L->recv[off] == POISON_BYTE ? " (poison: never written)" : "",
            (unsigned long long)ndiff, (unsigned long long)L->recv_total);
}

/* The MPI library's result on the same input: the reference. */
static void compute_reference(const bench_alg_t *mpi, layout_t *L,
                              coll_kind_t coll)
{
    memset(L->ref, POISON_BYTE, (size_t)L->recv_total);
    run_or_die(mpi, L, coll, L->send, L->ref);
}

/* Checks one algorithm bit-exact against the reference; collective,
 * returns 1 on every rank when every rank matched. With --memory device the
 * poison goes into the device receive buffer and the result comes back. */
static int verify(const bench_alg_t *a, layout_t *L, const topo_t *t,
                  coll_kind_t coll)
{
    memset(L->recv, POISON_BYTE, (size_t)L->recv_total);
    if (L->has.device)
        copy_or_die(L->drecv, L->recv, L->recv_total, "poison nbr_mem_copy");
    run_call(a, L, coll);
    if (L->has.device)
        copy_or_die(L->recv, L->drecv, L->recv_total, "result nbr_mem_copy");
    int ok = 1;
    if (memcmp(L->recv, L->ref, (size_t)L->recv_total) != 0) {
        uint64_t off = 0;
        while (L->recv[off] == L->ref[off])
            off++;
        report_mismatch(a, L, t, coll, off);
        ok = 0;
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return ok;
}

/* ======================================================= timing, traffic */

/* Where a row's traffic columns come from. */
typedef enum { TRAFFIC_MODEL, TRAFFIC_MEASURED, TRAFFIC_NONE } traffic_kind_t;

static const char *const traffic_names[] = {"model", "measured", "-"};

typedef struct result {
    const char *alg;
    double median_us, min_us, max_us;
    double gbps; /* largest per-rank receive volume / median, 1e9 B/s */
    double inter_msgs, inter_bytes, offsock_msgs; /* per rank per call */
    double intrasock_msgs; /* to other ranks on the same socket, per rank
                              per call */
    double offsock_max;    /* off-socket messages per call, max over ranks */
    traffic_kind_t counted;
} result_t;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* samples are sorted in place. */
static void summarize(double *samples, int n, result_t *r)
{
    qsort(samples, (size_t)n, sizeof *samples, cmp_double);
    double med = n % 2 ? samples[n / 2]
                       : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    r->median_us = med * 1e6;
    r->min_us = samples[0] * 1e6;
    r->max_us = samples[n - 1] * 1e6;
}

/* One timed call: the slowest rank's time, since the collective is only
 * done when every rank is done. */
static double time_one_call(const bench_alg_t *a, layout_t *L, coll_kind_t coll)
{
    double dt, slowest;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    run_call(a, L, coll);
    dt = MPI_Wtime() - t0;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

/* Warm-up for every algorithm, then iters rounds of one call of each
 * algorithm in turn: noise that drifts over the run (a shared, oversubscribed
 * machine) hits every algorithm alike. samples[a * iters + it]. */
static void time_interleaved(const bench_alg_t *algs, int nalgs, layout_t *L,
                             coll_kind_t coll, const options_t *o, double *samples)
{
    for (int a = 0; a < nalgs; a++) {
        for (int w = 0; w < o->warmup; w++)
            run_call(&algs[a], L, coll);
        if (!algs[a].is_mpi && !algs[a].is_copy) {
            int rc = nbr_reset_counters(algs[a].comm);
            if (rc != NBR_SUCCESS)
                die_nbr(rc, "nbr_reset_counters");
        }
    }
    for (int it = 0; it < o->iters; it++)
        for (int a = 0; a < nalgs; a++)
            samples[a * o->iters + it] = time_one_call(&algs[a], L, coll);
}

/* Bytes this rank sends on out-slot j in one call. */
static uint64_t send_bytes_on(const layout_t *L, coll_kind_t coll, int j)
{
    return coll == COLL_ALLTOALLV ? (uint64_t)L->sendcounts[j]
                                  : (uint64_t)L->sendcount;
}

/* What the MPI library sends: one message per edge; an edge leaving the
 * node is inter-node, one leaving the (node, socket) pair is off-socket,
 * one to another rank of the same socket intra-socket; a self-loop is a
 * local copy, no message. */
static void model_traffic(const layout_t *L, const topo_t *t,
                          coll_kind_t coll, result_t *r)
{
    /* inter msgs, inter bytes, off-socket msgs, intra-socket msgs */
    double v[4] = {0, 0, 0, 0};
    int me = t->rank;
    for (int j = 0; j < t->outdeg; j++) {
        int d = t->out[j];
        int other_node = t->node_of[d] != t->node_of[me];
        if (other_node) {
            v[0] += 1;
            v[1] += (double)send_bytes_on(L, coll, j);
        }
        if (other_node || t->socket_of[d] != t->socket_of[me])
            v[2] += 1;
        else if (d != me)
            v[3] += 1;
    }
    double mine = v[2];
    MPI_Allreduce(MPI_IN_PLACE, v, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &r->offsock_max, 1, MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
    r->inter_msgs = v[0] / t->nranks;
    r->inter_bytes = v[1] / t->nranks;
    r->offsock_msgs = v[2] / t->nranks;
    r->intrasock_msgs = v[3] / t->nranks;
    r->counted = TRAFFIC_MODEL;
}

/* nbrcoll's own counters over the timed calls, averaged per rank and call.
 * Returns the total number of calls counted (for a sanity check). */
/* Device mode: which path the bytes took, so that a GPU run shows the IPC
 * pulls and staging it measured (nbrcoll's device counters, per rank and
 * call, averaged over ranks). */
static void report_device_paths(const bench_alg_t *a, const topo_t *t, int iters,
                                uint64_t bytes)
{
    nbr_counters_t c;
    int rc = nbr_get_counters(a->comm, &c);
    if (rc != NBR_SUCCESS)
        die_nbr(rc, "nbr_get_counters");
    uint64_t v[3] = {c.bytes_ipc_pulled, c.bytes_staged, c.copy_batches};
    MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    double per = (double)t->nranks * iters;
    if (t->rank == 0)
        printf("# %s at %llu B: per rank and call %.0f B pulled over IPC, %.0f B staged "
               "through host memory, %.1f copy launches\n",
               a->name, (unsigned long long)bytes, (double)v[0] / per, (double)v[1] / per,
               (double)v[2] / per);
}

static uint64_t measured_traffic(const bench_alg_t *a, const topo_t *t,
                                 int iters, result_t *r)
{
    nbr_counters_t c;
    int rc = nbr_get_counters(a->comm, &c);
    if (rc != NBR_SUCCESS)
        die_nbr(rc, "nbr_get_counters");
    /* every message is intra- or inter-node; the off-socket ones are
     * among them, the rest stay on the socket */
    uint64_t v[5] = {c.msgs_inter_node, c.bytes_inter_node,
                     c.msgs_off_socket, c.calls,
                     c.msgs_intra_node + c.msgs_inter_node - c.msgs_off_socket};
    double mine = (double)c.msgs_off_socket / iters;
    MPI_Allreduce(MPI_IN_PLACE, v, 5, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &r->offsock_max, 1, MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
    double per = (double)t->nranks * iters;
    r->inter_msgs = (double)v[0] / per;
    r->inter_bytes = (double)v[1] / per;
    r->offsock_msgs = (double)v[2] / per;
    r->intrasock_msgs = (double)v[4] / per;
    r->counted = TRAFFIC_MEASURED;
    return v[3];
}

/* ================================================================ output */

/* With --memory device: which runtime nbrcoll picks and whether it hands
 * device pointers to MPI, as this rank's environment says. */
static void print_memory_header(const options_t *o)
{
    if (o->memory != MEMORY_DEVICE)
        return;
    const char *dev = getenv("NBR_DEVICE");
    const char *aware = getenv("NBR_GPU_AWARE_MPI");
    const char *mem = getenv("NBR_MEMORY");
    printf("# memory device (nbr_mem_alloc): NBR_DEVICE=%s, "
           "NBR_GPU_AWARE_MPI=%s%s%s\n",
           dev && *dev ? dev : "(unset: auto)",
           aware && *aware ? aware : "(unset: nbrcoll asks MPI)",
           mem && *mem ? ", NBR_MEMORY=" : "", mem && *mem ? mem : "");
}

static void print_header(const options_t *o, const topo_t *t,
                         const bench_alg_t *algs)
{
    char pat[64];
    pattern_label(o, pat, sizeof pat);
    int inmin = INT_MAX, inmax = 0, outmin = INT_MAX, outmax = 0;
    for (int r = 0; r < t->nranks; r++) {
        int di = nbr_graph_indegree(&t->graph, r);
        int dout = nbr_graph_outdegree(&t->graph, r);
        inmin = di < inmin ? di : inmin;
        inmax = di > inmax ? di : inmax;
        outmin = dout < outmin ? dout : outmin;
        outmax = dout > outmax ? dout : outmax;
    }
    long edges = t->graph.out_offsets[t->nranks];
    double avg = (double)edges / t->nranks;
    printf("# nbr_bench: pattern %s, collective %s\n", pat,
           coll_names[o->coll]);
    char nodes[64] = "detected", sockets[64] = "detected";
    if (o->ranks_per_node)
        snprintf(nodes, sizeof nodes, "virtual, %d ranks each",
                 o->ranks_per_node);
    if (o->ranks_per_socket)
        snprintf(sockets, sizeof sockets, "virtual, %d ranks each",
                 o->ranks_per_socket);
    printf("# ranks %d, nodes %d (%s), sockets %d (%s)\n", t->nranks,
           t->nnodes, nodes, t->nsockets, sockets);
    printf("# L = %d ranks per socket at most; halving's off-socket bound "
           "ceil(log2(n/L)) + 1 = %d messages per rank per call\n",
           t->socket_max, offsock_bound(t));
    printf("# edges %ld; in-degree avg %.2f (min %d, max %d); out-degree avg "
           "%.2f (min %d, max %d)\n",
           edges, avg, inmin, inmax, avg, outmin, outmax);
    print_memory_header(o);
    printf("# warmup %d, iters %d; time = slowest rank per call, us\n",
           o->warmup, o->iters);
    int device = o->memory == MEMORY_DEVICE;
    for (int a = 0; a < o->nalgs; a++) {
        const char *d;
        if (algs[a].is_copy)
            d = "nbr_mem_copy of the receive bytes, device to device, no "
                "communication: the local copy limit";
        else if (algs[a].is_mpi && device)
            d = "MPI_Neighbor_* on host copies (device->host, call, "
                "host->device), all timed; checked";
        else if (algs[a].is_mpi)
            d = "the MPI library's MPI_Neighbor_* (reference)";
        else
            d = nbr_algorithm_description(algs[a].name);
        printf("#   %-12s %s\n", algs[a].name, d ? d : "");
    }
    printf("# GB/s = largest per-rank receive volume / median time, "
           "1e9 B/s\n");
    printf("# traffic per rank per call, mean over ranks (offsock_max: the "
           "most of any rank); counted: measured = nbrcoll counters, "
           "model = one message per edge\n");
    printf("%8s  %-12s %11s %11s %11s %8s %9s %11s %13s %8s %9s %11s  %s\n",
           "bytes", "algorithm", "median_us", "min_us", "max_us", "speedup",
           "GB/s", "inter_msgs", "inter_bytes", "offsock", "intrasock",
           "offsock_max", "counted");
    fflush(stdout);
}

/* mpi median / this median with `prec` decimals; "-" without mpi and for
 * the copy row, which is no alternative to it. */
static void format_speedup(const result_t *r, const result_t *mpi, int prec,
                           char *buf, size_t n)
{
    if (mpi && r->counted != TRAFFIC_NONE && r->median_us > 0)
        snprintf(buf, n, "%.*f", prec, mpi->median_us / r->median_us);
    else
        snprintf(buf, n, "-");
}

static void format_gbps(const result_t *r, int prec, char *buf, size_t n)
{
    if (r->gbps > 0)
        snprintf(buf, n, "%.*f", prec, r->gbps);
    else
        snprintf(buf, n, "-");
}

#define NTRAFFIC 5

/* The traffic numbers as text: inter msgs, inter bytes, off-socket,
 * intra-socket, off-socket max (bytes with bprec decimals, messages with
 * mprec); "-" for the copy row. */
static void format_traffic(const result_t *r, int mprec, int bprec,
                           char out[NTRAFFIC][32])
{
    if (r->counted == TRAFFIC_NONE) {
        for (int i = 0; i < NTRAFFIC; i++)
            snprintf(out[i], 32, "-");
        return;
    }
    snprintf(out[0], 32, "%.*f", mprec, r->inter_msgs);
    snprintf(out[1], 32, "%.*f", bprec, r->inter_bytes);
    snprintf(out[2], 32, "%.*f", mprec, r->offsock_msgs);
    snprintf(out[3], 32, "%.*f", mprec, r->intrasock_msgs);
    snprintf(out[4], 32, "%.*f", mprec, r->offsock_max);
}

static void print_row(const result_t *r, const result_t *mpi, uint64_t bytes)
{
    char sz[32], sp[32], bw[32], tr[NTRAFFIC][32];
    size_label(bytes, sz, sizeof sz);
    format_speedup(r, mpi, 2, sp, sizeof sp);
    format_gbps(r, 2, bw, sizeof bw);
    format_traffic(r, 2, 1, tr);
    printf("%8s  %-12s %11.2f %11.2f %11.2f %8s %9s %11s %13s %8s %9s %11s"
           "  %s\n",
           sz, r->alg, r->median_us, r->min_us, r->max_us, sp, bw, tr[0],
           tr[1], tr[2], tr[3], tr[4], traffic_names[r->counted]);
}

/* New columns go at the end, so scripts indexing the old ones still work. */
static const char csv_header[] =
    "pattern,ranks,nodes,collective,algorithm,bytes,median_us,min_us,max_us,"
    "speedup_vs_mpi,inter_msgs_per_rank,inter_bytes_per_rank,"
    "offsocket_msgs_per_rank,counted,bandwidth_GBps,memory,"
    "intrasocket_msgs_per_rank,offsocket_msgs_max_per_rank\n";

/* The pattern label contains commas, so it is quoted (RFC 4180). */
static void csv_row(FILE *f, const options_t *o, const topo_t *t,
                    const result_t *r, const result_t *mpi, uint64_t bytes)
{
    char pat[64], sp[32], bw[32], tr[NTRAFFIC][32];
    pattern_label(o, pat, sizeof pat);
    format_speedup(r, mpi, 4, sp, sizeof sp);
    format_gbps(r, 4, bw, sizeof bw);
    format_traffic(r, 4, 2, tr);
    fprintf(f,
            "\"%s\",%d,%d,%s,%s,%llu,%.3f,%.3f,%.3f,%s,%s,%s,%s,%s,%s,%s,%s,"
            "%s\n",
            pat, t->nranks, t->nnodes, coll_names[o->coll], r->alg,
            (unsigned long long)bytes, r->median_us, r->min_us, r->max_us, sp,
            tr[0], tr[1], tr[2], traffic_names[r->counted], bw,
            o->memory == MEMORY_DEVICE ? "device" : "host", tr[3], tr[4]);
}

/* ============================================================ the sweep */

typedef struct bench {
    const options_t *o;
    topo_t *t;
    bench_alg_t *algs;
    int mpi_index;    /* -1 if mpi is not in --algorithms */
    bench_alg_t mpi;  /* reference runner, always available */
    buffer_set_t has; /* buffers every size needs */
    FILE *csv;        /* rank 0 only; may be NULL */
    double *samples;
} bench_t;

/* Collective: 1 if this size fits on every rank, else prints why not. */
static int size_fits(const bench_t *b, const layout_t *L)
{
    uint64_t need = layout_memory(L);
    int too_big = L->too_big_for_int;
    MPI_Allreduce(MPI_IN_PLACE, &need, 1, MPI_UINT64_T, MPI_MAX,
                  MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &too_big, 1, MPI_INT, MPI_MAX,
                  MPI_COMM_WORLD);
    char sz[32];
    size_label(L->bytes, sz, sizeof sz);
    if (too_big) {
        if (b->t->rank == 0)
            printf("# skipping %s: a displacement would overflow int\n", sz);
        return 0;
    }
    if (need > b->o->max_mem) {
        if (b->t->rank == 0)
            printf("# skipping %s: needs %.1f MiB of buffers on some rank, "
                   "--max-mem is %.1f MiB\n",
                   sz, (double)need / MIB, (double)b->o->max_mem / MIB);
        return 0;
    }
    return 1;
}

/* Collective: allocates on every rank, or skips the size on all. */
static int alloc_everywhere(const bench_t *b, layout_t *L)
{
    int ok = layout_alloc(L) == 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok && b->t->rank == 0) {
        char sz[32];
        size_label(L->bytes, sz, sizeof sz);
        printf("# skipping %s: buffer allocation failed on some rank\n", sz);
    }
    return ok;
}

/* Checks an algorithm against MPI before it is timed: every nbrcoll one,
 * and mpi when it stages device buffers. Returns 0 on a verification
 * failure. */
static int check_one(bench_t *b, int a, layout_t *L)
{
    const bench_alg_t *alg = &b->algs[a];
    if (alg->is_copy || (alg->is_mpi && !b->has.device) ||
        verify(alg, L, b->t, b->o->coll))
        return 1;
    if (b->t->rank == 0)
        fprintf(stderr, "nbr_bench: algorithm '%s' disagrees with MPI "
                        "at %llu bytes (details above); stopping\n",
                alg->name, (unsigned long long)L->bytes);
    return 0;
}

/* Statistics, bandwidth and traffic of algorithm a from its timed samples;
 * recv_max is the largest receive volume of any rank. */
static void measure_one(bench_t *b, int a, layout_t *L, uint64_t recv_max,
                        result_t *r)
{
    const bench_alg_t *alg = &b->algs[a];
    r->alg = alg->name;
    summarize(b->samples + (size_t)a * b->o->iters, b->o->iters, r);
    /* bytes per microsecond * 1e-3 = GB/s */
    r->gbps = r->median_us > 0 ? (double)recv_max / r->median_us * 1e-3 : 0;
    if (alg->is_copy) {
        r->counted = TRAFFIC_NONE;
        r->inter_msgs = r->inter_bytes = r->offsock_msgs = 0;
        r->intrasock_msgs = r->offsock_max = 0;
        return;
    }
    if (alg->is_mpi) {
        model_traffic(L, b->t, b->o->coll, r);
        return;
    }
    uint64_t calls = measured_traffic(alg, b->t, b->o->iters, r);
    if (b->o->memory == MEMORY_DEVICE)
        report_device_paths(alg, b->t, b->o->iters, L->bytes);
    uint64_t expect = (uint64_t)b->t->nranks * (uint64_t)b->o->iters;
    int bound = offsock_bound(b->t);
    if (strcmp(alg->name, "halving") == 0 && r->offsock_max > bound &&
        b->t->rank == 0)
        printf("# WARNING: halving sent %.2f off-socket messages per call "
               "on some rank, above its bound %d\n",
               r->offsock_max, bound);
    if (calls != expect && b->t->rank == 0)
        printf("# WARNING: %s counted %llu calls over all ranks, expected "
               "%llu\n",
               alg->name, (unsigned long long)calls,
               (unsigned long long)expect);
}

/* One message size: every algorithm checked, then timed in interleaved
 * rounds. Returns 0 on a verification failure. */
static int bench_size(bench_t *b, uint64_t bytes)
{
    layout_t L;
    result_t res[MAX_ALGS];
    int ok = 1;
    if (layout_plan(&L, b->t, b->o->coll, bytes) != 0)
        die_nbr(NBR_ERR_NOMEM, "layout_plan");
    L.has = b->has;
    if (!size_fits(b, &L) || !alloc_everywhere(b, &L)) {
        layout_free(&L);
        return 1;
    }
    uint64_t recv_max = L.recv_total;
    MPI_Allreduce(MPI_IN_PLACE, &recv_max, 1, MPI_UINT64_T, MPI_MAX,
                  MPI_COMM_WORLD);
    fill_send(&L, b->t, b->o->coll);
    if (L.has.device)
        copy_or_die(L.dsend, L.send, L.send_total, "send nbr_mem_copy");
    if (L.has.ref)
        compute_reference(&b->mpi, &L, b->o->coll);
    for (int a = 0; a < b->o->nalgs && ok; a++)
        ok = check_one(b, a, &L);
    if (ok) {
        time_interleaved(b->algs, b->o->nalgs, &L, b->o->coll, b->o, b->samples);
        for (int a = 0; a < b->o->nalgs; a++)
            measure_one(b, a, &L, recv_max, &res[a]);
    }
    layout_free(&L);
    if (!ok || b->t->rank != 0)
        return ok;
    const result_t *mpi = b->mpi_index >= 0 ? &res[b->mpi_index] : NULL;
    for (int a = 0; a < b->o->nalgs; a++) {
        print_row(&res[a], mpi, bytes);
        if (b->csv)
            csv_row(b->csv, b->o, b->t, &res[a], mpi, bytes);
    }
    fflush(stdout);
    if (b->csv)
        fflush(b->csv);
    return 1;
}

/* Rank 0 opens the CSV; every rank learns whether that worked. */
static int open_csv(const options_t *o, int rank, FILE **csv)
{
    int ok = 1;
    *csv = NULL;
    if (!o->csv_path)
        return 1;
    if (rank == 0) {
        *csv = fopen(o->csv_path, "w");
        if (*csv)
            fputs(csv_header, *csv);
        else
            fprintf(stderr, "nbr_bench: cannot write CSV file '%s': %s\n",
                    o->csv_path, strerror(errno));
        ok = *csv != NULL;
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return ok;
}

/* Collective: 1 if every rank can allocate device memory. Without a device
 * every size would fail; say why once, and let every rank exit cleanly. */
static int device_usable(void)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    void *p = NULL;
    int rc = nbr_mem_alloc(&p, 1);
    if (rc == NBR_SUCCESS)
        rc = nbr_mem_free(p);
    int worst = rc; /* statuses are negative: MIN finds a failure */
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (worst != NBR_SUCCESS && rank == 0)
        fprintf(stderr,
                "nbr_bench: --memory device: nbr_mem_alloc failed on some "
                "rank: %s (%d); it needs a GPU nbrcoll can use, or "
                "NBR_DEVICE=emulate\n",
                nbr_error_string(worst), worst);
    return worst == NBR_SUCCESS;
}

/* Runs the whole sweep; returns the process exit status. */
static int run_benchmark(const options_t *o)
{
    topo_t t;
    bench_alg_t algs[MAX_ALGS];
    MPI_Comm base = MPI_COMM_NULL;
    int status = EXIT_SUCCESS;

    if (o->memory == MEMORY_DEVICE && !device_usable())
        return EXIT_FAILURE;
    int rc = build_graph(o, &t);
    if (rc == NBR_SUCCESS)
        rc = create_comms(o, &t, algs, &base);
    if (rc != NBR_SUCCESS) {
        /* graph generation is deterministic and creation agrees on errors,
         * so every rank is here: a clean exit is safe. */
        if (t.rank == 0)
            fprintf(stderr, "nbr_bench: setup failed: %s (%d)\n",
                    nbr_error_string(rc), rc);
        free_topo(&t);
        return EXIT_FAILURE;
    }
    gather_locality(base, &t);

    bench_t b = {.o = o, .t = &t, .algs = algs, .mpi_index = -1};
    b.mpi = (bench_alg_t){.name = "mpi", .is_mpi = 1, .comm = base};
    b.has.device = o->memory == MEMORY_DEVICE;
    for (int a = 0; a < o->nalgs; a++) {
        if (algs[a].is_mpi)
            b.mpi_index = a;
        if (algs[a].is_copy)
            b.has.copy = 1;
        else if (!algs[a].is_mpi || b.has.device)
            b.has.ref = 1; /* check_one will verify it */
    }
    b.samples = malloc((size_t)o->nalgs * (size_t)o->iters * sizeof *b.samples);
    if (!b.samples)
        die_nbr(NBR_ERR_NOMEM, "malloc");

    if (!open_csv(o, t.rank, &b.csv)) {
        status = EXIT_FAILURE;
    } else {
        if (t.rank == 0)
            print_header(o, &t, algs);
        warn_overridden_algorithms(algs, o->nalgs, t.rank);
        for (uint64_t bytes = o->min_bytes; bytes <= o->max_bytes;
             bytes *= 2) {
            if (!bench_size(&b, bytes)) {
                status = EXIT_FAILURE;
                break;
            }
        }
    }
    if (b.csv)
        fclose(b.csv);
    free(b.samples);
    free_comms(algs, o->nalgs, base);
    free_topo(&t);
    return status;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    /* Every rank parses the same argv, so every rank takes the same path
     * and only rank 0 needs to talk. */
    options_t o;
    char err[256] = "";
    int parsed = parse_args(argc, argv, &o, err, sizeof err);
    int status;
    if (parsed == 1) {
        if (rank == 0)
            print_usage(stdout);
        status = EXIT_SUCCESS;
    } else if (parsed < 0) {
        if (rank == 0)
            fprintf(stderr, "nbr_bench: error: %s\n"
                            "run 'nbr_bench --help' for usage\n", err);
        status = EXIT_USAGE;
    } else {
        status = run_benchmark(&o);
    }
    MPI_Finalize();
    return status;
}
