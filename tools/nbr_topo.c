/* nbr_topo: shows the machine model nbrcoll sees, on this machine or in a
 * stored model file.
 *
 *   nbr_topo                  probe this machine, print the model and the
 *                             reasons each source was used or skipped
 *   nbr_topo --file F         print the model stored in F
 *   nbr_topo --check F        validate F; errors name the line; exit 1 if bad
 *   nbr_topo --dump F         write the (probed or --file) model to F ("-":
 *                             standard output)
 *   nbr_topo --ranks N        also show the rank -> GPU / socket map a job
 *                             of N ranks on one such node would get
 *   nbr_topo --sysfs-root D   read the KFD tree under D (a fake tree)
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "front/config.h"
#include "topo/locality.h"
#include "topo/probe.h"
#include "topo/topology.h"

#include <nbrcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct options {
    const char *file, *check, *dump, *sysfs_root;
    int ranks;
} options_t;

static int usage(FILE *out, int status)
{
    fprintf(out, "usage: nbr_topo [--file F | --check F] [--dump F] [--ranks N] "
                 "[--sysfs-root D]\n"
                 "Prints the node model nbrcoll uses: GPUs with their PCI bus, NUMA\n"
                 "domain, package (peer group) and leader role, then the link type, hop\n"
                 "(T_h), link (T_l), weight and bandwidth matrices. Without --file it\n"
                 "probes this machine (rocm_smi, KFD sysfs, CUDA, else a flat node) and\n"
                 "says why each source was used or skipped. NBR_GPU forces a GPU.\n");
    return status;
}

static int parse(int argc, char **argv, options_t *o)
{
    memset(o, 0, sizeof(*o));
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h"))
            return 1;
        if (!value)
            return -1;
        if (!strcmp(arg, "--file"))
            o->file = value;
        else if (!strcmp(arg, "--check"))
            o->check = value;
        else if (!strcmp(arg, "--dump"))
            o->dump = value;
        else if (!strcmp(arg, "--sysfs-root"))
            o->sysfs_root = value;
        else if (!strcmp(arg, "--ranks")) {
            char *end = NULL;
            long n = strtol(value, &end, 10);
            if (*end || n <= 0 || n > 1 << 20)
                return -1;
            o->ranks = (int)n;
        } else
            return -1;
        i++;
    }
    return o->file && o->check ? -1 : 0;
}

/* The map a job of `ranks` ranks on one node gets: the library's rules. */
static void print_rank_map(const nbr_node_model_t *model, int ranks, int forced_gpu)
{
    printf("\nrank -> GPU / socket map for %d ranks on this node (GPU: %s)\n", ranks,
           forced_gpu >= 0 ? "NBR_GPU" : "local rank modulo GPU count");
    printf("%6s %6s %6s %8s %8s %6s\n", "rank", "socket", "GPU", "package", "role", "NUMA");
    for (int r = 0; r < ranks; r++) {
        int gpu = nbr_local_gpu(model, r, forced_gpu, NULL);
        int socket = nbr_block_socket(r, ranks, model->num_sockets);
        if (gpu >= model->num_gpus) {
            printf("%6d: NBR_GPU=%d but the node has %d GPUs\n", r, gpu, model->num_gpus);
            continue;
        }
        if (gpu < 0) {
            printf("%6d %6d %6s %8s %8s %6s\n", r, socket, "-", "-", "-", "-");
            continue;
        }
        const nbr_gpu_info_t *info = &model->gpus[gpu];
        printf("%6d %6d %6d %8d %8s %6d\n", r, socket, gpu, info->package,
               info->leader ? "leader" : "member", info->numa_node);
    }
    printf("(sockets shown for ranks filling the sockets in blocks; in a job, bound "
           "ranks use their real socket)\n");
}

int main(int argc, char **argv)
{
    options_t o;
    int p = parse(argc, argv, &o);
    if (p != 0)
        return usage(p > 0 ? stdout : stderr, p > 0 ? 0 : 2);
    char message[1024] = "";
    nbr_node_model_t model;
    if (o.check) {
        int rc = nbr_model_load(o.check, &model, message, sizeof message);
        if (rc != NBR_SUCCESS) {
            fprintf(stderr, "%s\n", message);
            return 1;
        }
        printf("%s: ok (%d GPUs)\n", o.check, model.num_gpus);
        nbr_model_free(&model);
        return 0;
    }
    setenv("NBR_LOG", "info", 0); /* say which sources were used and why */
    nbr_probe_options_t probe = {o.file, o.sysfs_root};
    int rc = nbr_probe_node(&probe, &model);
    if (rc != NBR_SUCCESS) {
        fprintf(stderr, "nbr_topo: %s\n", nbr_error_string(rc));
        return 1;
    }
    nbr_model_print(&model, stdout);
    if (o.ranks > 0) {
        nbr_config_t config; /* NBR_GPU read and checked the way the library does */
        if (nbr_config_load(MPI_INFO_NULL, &config) != NBR_SUCCESS) {
            nbr_model_free(&model);
            return 1;
        }
        print_rank_map(&model, o.ranks, config.forced_gpu);
        nbr_config_free(&config);
    }
    if (o.dump) {
        FILE *out = strcmp(o.dump, "-") ? fopen(o.dump, "w") : stdout;
        if (!out || nbr_model_write(&model, out) != NBR_SUCCESS) {
            fprintf(stderr, "nbr_topo: cannot write %s\n", o.dump);
            rc = NBR_ERR_IO;
        }
        if (out && out != stdout)
            fclose(out);
    }
    nbr_model_free(&model);
    return rc == NBR_SUCCESS ? 0 : 1;
}
