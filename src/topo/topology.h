/* The machine model: what one node looks like to nbrcoll. Plain data, read
 * from a probe (rocm_smi, KFD sysfs, CUDA, hwloc) or from a text file, and
 * written back to one, so every later layer can run on a stored model with
 * no GPU present.
 *
 * GPU matrices are num_gpus x num_gpus, row = sender, column = receiver,
 * indexed by the model's GPU index (not a runtime device id):
 *   hops       T_h of rocm-leader-based-allgather.txt: physical xGMI /
 *              NVLink hops on the shortest path of direct links; for GPUs
 *              with no such path, the hops of the PCIe route (>= 1)
 *   links      T_l: number of direct links (0: not directly linked)
 *   link_type  NBR_LINK_*: how the two GPUs reach each other
 *   weight     the vendor's link weight (rocm_smi), 0 when unknown
 *   bandwidth  maximum bandwidth in GB/s, one direction, 0 when unknown
 *              or indirect
 * GPUs of one package (the two GCDs of an MI250X) are peers; each package
 * has one leader (by default its lowest GPU index, as in the paper). */
#ifndef NBR_TOPOLOGY_H
#define NBR_TOPOLOGY_H

#include <stddef.h>
#include <stdio.h>

#define NBR_TOPO_MAX_GPUS 64
#define NBR_TOPO_NAME_MAX 64
#define NBR_PCI_ID_MAX 16 /* "0000:c1:00.0" */

typedef enum nbr_link_type {
    NBR_LINK_NONE = 0,   /* no path at all (or unknown) */
    NBR_LINK_SELF = 1,   /* the diagonal */
    NBR_LINK_PCIE = 2,   /* through PCIe / the host */
    NBR_LINK_XGMI = 3,   /* AMD Infinity Fabric */
    NBR_LINK_NVLINK = 4, /* NVIDIA NVLink / NVSwitch */
    NBR_NUM_LINK_TYPES = 5
} nbr_link_type_t;

const char *nbr_link_type_name(nbr_link_type_t type);

typedef struct nbr_gpu_info {
    char pci_bus_id[NBR_PCI_ID_MAX]; /* domain:bus:device.function, lower case */
    int numa_node;                   /* -1 when unknown */
    int package;                     /* peer group: GPUs of one package */
    int leader;                      /* 1 for the leader of its package */
} nbr_gpu_info_t;

typedef struct nbr_node_model {
    char name[NBR_TOPO_NAME_MAX];
    char source[NBR_TOPO_NAME_MAX]; /* which probe or file it came from */
    int num_sockets;                /* CPU packages */
    int num_numa;                   /* NUMA domains */
    int num_gpus;
    nbr_gpu_info_t *gpus;
    int *hops;
    int *links;
    int *weight;
    int *link_type; /* nbr_link_type_t values */
    double *bandwidth;
} nbr_node_model_t;

/* Element (from, to) of a GPU matrix. */
#define NBR_TOPO_AT(model, matrix, from, to) \
    ((model)->matrix[(from) * (model)->num_gpus + (to)])

/* Classification thresholds shared by every probe. */
/* Every number the classification depends on; nbr_topo_thresholds_default
 * gives the values below, callers (and tests) may change any of them. */
typedef struct nbr_topo_thresholds {
    /* Two GPUs with at least this many direct links to each other (each
     * other's best partner) form a package of peers. MI250X: the two GCDs of
     * one package share 4 xGMI links, GCDs of different packages 1 or 2.
     * Default 4. A value above any link count means "no packages". */
    int peer_min_links;
    /* hops given to GPU pairs with no xGMI path (through PCIe and the host:
     * GPU - root port - GPU). Default 2; must be >= 1. */
    int pcie_hops;
    /* KFD's weight for one xGMI hop (KFD_CRAT_XGMI_WEIGHT, weight = 15 *
     * hops). Used only when no pair of the node reports any bandwidth (older
     * hives, MI100: amdgpu reports xGMI bandwidth only for MI200 and later):
     * then a pair whose weight is at most this counts as directly linked with
     * one link. 0 turns that fallback off. Default 15. */
    int xgmi_hop_weight;
    /* Bandwidths arrive in MB/s; the model stores GB/s = MB/s / this.
     * Default 1000 (amdgpu's MB/s are decimal: 16 lanes x 25 Gb/s / 8 =
     * 50000 MB/s = 50 GB/s per MI250X link). Must be > 0. */
    double mbps_per_gbps;
} nbr_topo_thresholds_t;

void nbr_topo_thresholds_default(nbr_topo_thresholds_t *th);

/* Writes a reason (printf-style) to message, when given, and returns rc:
 * how every topology function explains a failure to its caller. */
int nbr_topo_explain(char *message, size_t size, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Allocates a model with num_gpus GPUs: diagonal SELF, everything else
 * NONE / 0, each GPU its own package and leader, NUMA unknown. */
int nbr_model_init(nbr_node_model_t *model, int num_gpus);
void nbr_model_free(nbr_node_model_t *model);
int nbr_model_copy(nbr_node_model_t *dst, const nbr_node_model_t *src);
/* 1 when every field is equal (names and sources excluded). */
int nbr_model_equal(const nbr_node_model_t *a, const nbr_node_model_t *b);

/* A node with no GPU links: num_gpus GPUs (may be 0), one socket. */
int nbr_model_flat(nbr_node_model_t *model, int num_gpus);

/* Peers and leaders: GPUs with the same package are peers; the lowest GPU
 * index of each package leads. */
void nbr_model_assign_leaders(nbr_node_model_t *model);
/* The other GPU of a two-GPU package, or -1 when the GPU has no peer. */
int nbr_model_peer(const nbr_node_model_t *model, int gpu);

/* Fills hops from the direct links: shortest path in the graph of GPU pairs
 * with links > 0 (breadth-first); pairs with no such path get pcie_hops
 * and, if their type is NONE, type PCIE. Used by probes whose own "hops"
 * are not physical (rocm_smi reports 1 for every xGMI-reachable pair). */
void nbr_model_hops_from_links(nbr_node_model_t *model, int pcie_hops);

/* Checks a model's invariants (matrix symmetry, diagonal, non-negative
 * values, packages of at most two GPUs with one leader each). On failure
 * writes the first problem to message and returns NBR_ERR_ARG. */
int nbr_model_validate(const nbr_node_model_t *model, char *message, size_t size);

/* ------------------------------------------------------------ text files
 *
 * Format (one item per line, '#' starts a comment, blank lines ignored):
 *   nbrcoll-topology 1          first line: format and version
 *   name <word>
 *   sockets <n>                 CPU packages, >= 1
 *   numa <n>                    NUMA domains, >= 1
 *   gpus <n>                    0 .. NBR_TOPO_MAX_GPUS; before any gpu line
 *   gpu <i> pci=<id> numa=<n> package=<p> [leader]
 *                               one line per GPU, i = 0 .. n-1 in order
 *   hops | links | weight | bandwidth | link_type
 *                               a matrix keyword, followed by n rows of n
 *                               values (link_type values: none self pcie
 *                               xgmi nvlink)
 * hops, links and link_type are required when n > 0; weight and bandwidth
 * default to 0. Every matrix must be symmetric. Leaders default to the
 * lowest index of each package when no gpu line says "leader". */

/* Parses text; on error returns NBR_ERR_ARG with "line N: what" in message. */
int nbr_model_parse(const char *text, const char *source, nbr_node_model_t *model,
                    char *message, size_t message_size);
/* Reads and parses a file (NBR_ERR_IO when it cannot be read). */
int nbr_model_load(const char *path, nbr_node_model_t *model, char *message,
                   size_t message_size);
/* Writes the model in the format above; parse(write(m)) equals m. */
int nbr_model_write(const nbr_node_model_t *model, FILE *out);

/* Matrices laid out like `rocm-smi --showtopo`, peers and leaders marked. */
void nbr_model_print(const nbr_node_model_t *model, FILE *out);

#endif
