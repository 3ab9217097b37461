#include "harness/report.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "nbrcoll.h"

double bh_gbps(uint64_t bytes, double us)
{
    /* bytes per microsecond * 1e-3 = GB/s */
    return us > 0 ? (double)bytes / us * 1e-3 : 0;
}

/* ============================================================ header */

/* With --memory device: which runtime nbrcoll picks and whether it hands
 * device pointers to MPI, as this rank's environment says. */
static void print_memory_header(const bh_options_t *o)
{
    if (o->memory != BH_MEMORY_DEVICE)
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

/* What each row of the table is. */
static void print_algorithms(const bh_options_t *o, const bh_alg_t *algs)
{
    int device = o->memory == BH_MEMORY_DEVICE;
    for (int a = 0; a < o->algs.n; a++) {
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
}

void bh_print_header(const bh_options_t *o, const bh_topo_t *t,
                     const bh_alg_t *algs)
{
    char pat[64];
    bh_pattern_label(&o->graph, pat, sizeof pat);
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
    printf("# %s: pattern %s, collective %s\n", bh_progname(), pat,
           bh_coll_name(o->coll));
    char nodes[64] = "detected", sockets[64] = "detected";
    if (o->locality.ranks_per_node)
        snprintf(nodes, sizeof nodes, "virtual, %d ranks each",
                 o->locality.ranks_per_node);
    if (o->locality.ranks_per_socket)
        snprintf(sockets, sizeof sockets, "virtual, %d ranks each",
                 o->locality.ranks_per_socket);
    printf("# ranks %d, nodes %d (%s), sockets %d (%s)\n", t->nranks,
           t->nnodes, nodes, t->nsockets, sockets);
    printf("# L = %d ranks per socket at most; halving's off-socket bound "
           "ceil(log2(n/L)) + 1 = %d messages per rank per call\n",
           t->socket_max, bh_offsock_bound(t));
    printf("# edges %ld; in-degree avg %.2f (min %d, max %d); out-degree avg "
           "%.2f (min %d, max %d)\n",
           edges, avg, inmin, inmax, avg, outmin, outmax);
    print_memory_header(o);
    printf("# warmup %d, iters %d, block %d, order seed %ld; time = slowest rank per "
           "call, us\n",
           o->warmup, o->iters, o->block, o->order_seed);
    print_algorithms(o, algs);
    printf("# GB/s = largest per-rank receive volume / median time, "
           "1e9 B/s\n");
    printf("# traffic per rank per call, mean over ranks (offsock_max: the "
           "most of any rank); counted: measured = nbrcoll counters, "
           "model = one message per edge\n");
    printf("%8s  %-16s %11s %11s %11s %8s %9s %11s %13s %8s %9s %11s  %s\n",
           "bytes", "algorithm", "median_us", "min_us", "max_us", "speedup",
           "GB/s", "inter_msgs", "inter_bytes", "offsock", "intrasock",
           "offsock_max", "counted");
    fflush(stdout);
}

/* ============================================================ numbers */

/* mpi median / this median with `prec` decimals; "-" without mpi and for
 * the copy row, which is no alternative to it. */
static void format_speedup(const bh_result_t *r, const bh_result_t *mpi,
                           int prec, char *buf, size_t n)
{
    if (mpi && r->traffic.counted != BH_TRAFFIC_NONE && r->time.median_us > 0)
        snprintf(buf, n, "%.*f", prec,
                 mpi->time.median_us / r->time.median_us);
    else
        snprintf(buf, n, "-");
}

static void format_gbps(const bh_result_t *r, int prec, char *buf, size_t n)
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
static void format_traffic(const bh_traffic_t *r, int mprec, int bprec,
                           char out[NTRAFFIC][32])
{
    if (r->counted == BH_TRAFFIC_NONE) {
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

/* ============================================================ rows */

void bh_print_row(const bh_result_t *r, const bh_result_t *mpi,
                  uint64_t bytes)
{
    char sz[32], sp[32], bw[32], tr[NTRAFFIC][32], name[40];
    bh_size_label(bytes, sz, sizeof sz);
    if (strcmp(r->chosen, r->alg) != 0)
        snprintf(name, sizeof name, "%s:%s", r->alg, r->chosen);
    else
        snprintf(name, sizeof name, "%s", r->alg);
    format_speedup(r, mpi, 2, sp, sizeof sp);
    format_gbps(r, 2, bw, sizeof bw);
    format_traffic(&r->traffic, 2, 1, tr);
    printf("%8s  %-16s %11.2f %11.2f %11.2f %8s %9s %11s %13s %8s %9s %11s"
           "  %s\n",
           sz, name, r->time.median_us, r->time.min_us, r->time.max_us, sp,
           bw, tr[0], tr[1], tr[2], tr[3], tr[4],
           bh_counted_name(r->traffic.counted));
}

/* New columns go at the end, so scripts indexing the old ones still work. */
static const char csv_header[] =
    "pattern,ranks,nodes,collective,algorithm,bytes,median_us,min_us,max_us,"
    "speedup_vs_mpi,inter_msgs_per_rank,inter_bytes_per_rank,"
    "offsocket_msgs_per_rank,counted,bandwidth_GBps,memory,"
    "intrasocket_msgs_per_rank,offsocket_msgs_max_per_rank,chosen\n";

int bh_csv_open(const char *path, int rank, FILE **csv)
{
    int ok = 1;
    *csv = NULL;
    if (!path)
        return 1;
    if (rank == 0) {
        *csv = fopen(path, "w");
        if (*csv)
            fputs(csv_header, *csv);
        else
            fprintf(stderr, "%s: cannot write CSV file '%s': %s\n",
                    bh_progname(), path, strerror(errno));
        ok = *csv != NULL;
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return ok;
}

/* The pattern label contains commas, so it is quoted (RFC 4180). */
void bh_csv_row(FILE *f, const bh_options_t *o, const bh_topo_t *t,
                const bh_result_t *r, const bh_result_t *mpi, uint64_t bytes)
{
    char pat[64], sp[32], bw[32], tr[NTRAFFIC][32];
    bh_pattern_label(&o->graph, pat, sizeof pat);
    format_speedup(r, mpi, 4, sp, sizeof sp);
    format_gbps(r, 4, bw, sizeof bw);
    format_traffic(&r->traffic, 4, 2, tr);
    fprintf(f,
            "\"%s\",%d,%d,%s,%s,%llu,%.3f,%.3f,%.3f,%s,%s,%s,%s,%s,%s,%s,%s,"
            "%s,%s\n",
            pat, t->nranks, t->nnodes, bh_coll_name(o->coll), r->alg,
            (unsigned long long)bytes, r->time.median_us, r->time.min_us,
            r->time.max_us, sp, tr[0], tr[1], tr[2],
            bh_counted_name(r->traffic.counted), bw,
            o->memory == BH_MEMORY_DEVICE ? "device" : "host", tr[3], tr[4],
            r->chosen);
}
