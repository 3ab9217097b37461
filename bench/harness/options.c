#include "harness/options.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "nbrcoll.h"

#define BYTES_LOWER_LIMIT UINT64_C(8)
#define BYTES_UPPER_LIMIT (64 * BH_MIB)

/* ===================================================== generic parsing */

static int is_flag(const char *name, const char *const *flags)
{
    for (; flags && *flags; flags++)
        if (strcmp(name, *flags) == 0)
            return 1;
    return 0;
}

int bh_parse_argv(int argc, char **argv, bh_option_fn apply, void *ctx,
                  char *err, size_t errlen)
{
    return bh_parse_argv_flags(argc, argv, NULL, apply, ctx, err, errlen);
}

int bh_parse_argv_flags(int argc, char **argv, const char *const *flags,
                        bh_option_fn apply, void *ctx, char *err,
                        size_t errlen)
{
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
        if (!val && !is_flag(name, flags)) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "option '--%s' needs a value", name);
                return -1;
            }
            val = argv[++i];
        }
        if (apply(name, val, ctx, err, errlen) != 0)
            return -1;
    }
    return 0;
}

int bh_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int bh_parse_bytes(const char *s, uint64_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1; /* strtoull would accept "-1" */
    unsigned long long v = strtoull(s, &end, 10);
    uint64_t unit = 1;
    switch (*end) {
    case '\0': break;
    case 'K': case 'k': unit = BH_KIB; end++; break;
    case 'M': case 'm': unit = BH_MIB; end++; break;
    case 'G': case 'g': unit = BH_GIB; end++; break;
    default: return -1;
    }
    if (unit > 1 && *end == 'i')
        end++;
    if (*end != '\0' || v > UINT64_MAX / unit)
        return -1;
    *out = (uint64_t)v * unit;
    return 0;
}

int bh_is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

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
        char entry[BH_ALG_NAME_MAX];
        copy_trimmed(entry, sizeof entry, list, len);
        if (strcmp(entry, name) == 0)
            return 1;
        list = comma ? comma + 1 : NULL;
    }
    return 0;
}

int bh_parse_algorithms(const char *s, bh_alg_list_t *list, char *err,
                        size_t errlen)
{
    list->n = 0;
    while (s) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        char name[BH_ALG_NAME_MAX];
        if (len >= BH_ALG_NAME_MAX) {
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
        for (int i = 0; i < list->n; i++) {
            if (strcmp(list->names[i], name) == 0) {
                snprintf(err, errlen, "--algorithms: '%s' listed twice",
                         name);
                return -1;
            }
        }
        if (list->n == BH_MAX_ALGS) {
            snprintf(err, errlen, "--algorithms: more than %d names",
                     BH_MAX_ALGS);
            return -1;
        }
        strcpy(list->names[list->n++], name);
    }
    if (list->n == 0) {
        snprintf(err, errlen, "--algorithms: empty list");
        return -1;
    }
    return 0;
}

/* ============================================== nbr_bench's option set */

void bh_options_default(bh_options_t *o)
{
    memset(o, 0, sizeof *o);
    o->graph.pattern = BH_PATTERN_RSG;
    o->graph.density = 0.3;
    o->graph.seed = 1;
    o->graph.dims = 2;
    o->graph.radius = 1;
    o->coll = BH_COLL_ALLGATHER;
    o->min_bytes = 8;
    o->max_bytes = 64 * BH_KIB;
    o->size_factor = 2;
    o->warmup = 3;
    o->iters = 20;
    o->block = 1;
    o->order_seed = 0;
    strcpy(o->algs.names[0], "mpi");
    strcpy(o->algs.names[1], "naive");
    o->algs.n = 2;
    o->max_mem = BH_GIB;
}

void bh_print_usage(FILE *f)
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
        "  --step F                 sizes grow by this factor: 2, 4, 8, 16 [2]\n"
        "  --warmup N               untimed calls per size and algorithm [3]\n"
        "  --iters N                timed calls per size and algorithm [20]\n"
        "  --block K                each round times K calls of an algorithm in\n"
        "                           a row, as a program calls one collective\n"
        "                           again and again; 1: one call each, the\n"
        "                           algorithms shuffled call by call [1]\n"
        "  --order-seed N           the rounds' orders of the algorithms come\n"
        "                           from a seed: N picks another set of them,\n"
        "                           so that repeated runs are not in the same\n"
        "                           order [0]\n"
        "  --algorithms A,B,...     'mpi' = the MPI library's own collective,\n"
        "                           called directly (nbrcoll's mpi algorithm\n"
        "                           makes the same call, auto's baseline);\n"
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

int bh_graph_option(const char *name, const char *val, bh_graph_spec_t *spec)
{
    long l = 0;
    int bad = 0;
    if (strcmp(name, "pattern") == 0) {
        if (strcmp(val, "rsg") == 0)
            spec->pattern = BH_PATTERN_RSG;
        else if (strcmp(val, "moore") == 0)
            spec->pattern = BH_PATTERN_MOORE;
        else
            bad = 1;
    } else if (strcmp(name, "density") == 0) {
        char *end;
        spec->density = strtod(val, &end);
        bad = end == val || *end != '\0' || !(spec->density >= 0.0) ||
              spec->density > 1.0;
    } else if (strcmp(name, "seed") == 0) {
        char *end;
        spec->seed = strtoull(val, &end, 10);
        bad = end == val || *end != '\0' || val[0] == '-';
    } else if (strcmp(name, "dims") == 0) {
        bad = bh_parse_long(val, 1, 8, &l);
        spec->dims = (int)l;
    } else if (strcmp(name, "radius") == 0) {
        bad = bh_parse_long(val, 1, 64, &l);
        spec->radius = (int)l;
    } else {
        return 1;
    }
    return bad ? -1 : 0;
}

int bh_run_option(const char *name, const char *val, int *warmup, int *iters,
                  bh_locality_t *loc)
{
    long l = 0;
    int bad = 0;
    if (strcmp(name, "warmup") == 0) {
        bad = bh_parse_long(val, 0, 1000000, &l);
        *warmup = (int)l;
    } else if (strcmp(name, "iters") == 0) {
        bad = bh_parse_long(val, 1, 1000000, &l);
        *iters = (int)l;
    } else if (loc && strcmp(name, "ranks-per-node") == 0) {
        bad = bh_parse_long(val, 1, INT_MAX, &l);
        loc->ranks_per_node = (int)l;
    } else if (loc && strcmp(name, "ranks-per-socket") == 0) {
        bad = bh_parse_long(val, 1, INT_MAX, &l);
        loc->ranks_per_socket = (int)l;
    } else {
        return 1;
    }
    return bad ? -1 : 0;
}

/* nbr_bench's bh_option_fn; ctx is its bh_options_t. */
static int apply_option(const char *name, const char *val, void *ctx,
                        char *err, size_t errlen)
{
    bh_options_t *o = ctx;
    long l = 0;
    int bad = 0, run = 1;
    int graph = bh_graph_option(name, val, &o->graph);
    if (graph <= 0) {
        bad = graph < 0;
    } else if (strcmp(name, "collective") == 0) {
        bad = bh_coll_from_name(val, &o->coll);
    } else if (strcmp(name, "memory") == 0) {
        if (strcmp(val, "host") == 0)
            o->memory = BH_MEMORY_HOST;
        else if (strcmp(val, "device") == 0)
            o->memory = BH_MEMORY_DEVICE;
        else
            bad = 1;
    } else if (strcmp(name, "min-bytes") == 0) {
        bad = bh_parse_bytes(val, &o->min_bytes);
    } else if (strcmp(name, "max-bytes") == 0) {
        bad = bh_parse_bytes(val, &o->max_bytes);
    } else if (strcmp(name, "step") == 0) {
        bad = bh_parse_long(val, 2, 16, &l) || !bh_is_power_of_two((uint64_t)l);
        o->size_factor = (int)l;
    } else if ((run = bh_run_option(name, val, &o->warmup, &o->iters,
                                    &o->locality)) <= 0) {
        bad = run < 0;
    } else if (strcmp(name, "block") == 0) {
        bad = bh_parse_long(val, 1, 1000000, &l);
        o->block = (int)l;
    } else if (strcmp(name, "order-seed") == 0) {
        bad = bh_parse_long(val, 0, 1000000000, &o->order_seed);
    } else if (strcmp(name, "algorithms") == 0) {
        return bh_parse_algorithms(val, &o->algs, err, errlen);
    } else if (strcmp(name, "csv") == 0) {
        o->csv_path = val;
        bad = val[0] == '\0';
    } else if (strcmp(name, "max-mem") == 0) {
        bad = bh_parse_bytes(val, &o->max_mem);
    } else {
        snprintf(err, errlen, "unknown option '--%s'", name);
        return -1;
    }
    if (bad)
        snprintf(err, errlen, "bad value '%s' for --%s", val, name);
    return bad ? -1 : 0;
}

static int check_options(const bh_options_t *o, char *err, size_t errlen)
{
    if (!bh_is_power_of_two(o->min_bytes) ||
        !bh_is_power_of_two(o->max_bytes)) {
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
    for (int a = 0; a < o->algs.n; a++) {
        if (strcmp(o->algs.names[a], "copy") == 0 &&
            o->memory != BH_MEMORY_DEVICE) {
            snprintf(err, errlen, "algorithm 'copy' needs --memory device "
                                  "(it times a device-to-device copy)");
            return -1;
        }
    }
    return 0;
}

int bh_options_parse(int argc, char **argv, bh_options_t *o, char *err,
                     size_t errlen)
{
    bh_options_default(o);
    int rc = bh_parse_argv(argc, argv, apply_option, o, err, errlen);
    return rc != 0 ? rc : check_options(o, err, errlen);
}
