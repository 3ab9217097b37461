/* The AMD probes' shared half: the rocm_smi questions nbrcoll asks, behind a
 * table of function pointers so tests can inject answers, the classification
 * thresholds, and the builder that turns per-pair answers (from rocm_smi or
 * from KFD sysfs, src/topo/kfd.h) into a nbr_node_model_t.
 *
 * Traps handled on purpose (rocm_smi_lib and amdkfd behaviour):
 *  - rocm_smi's "hops" are not physical: rsmi_topo_get_link_type answers
 *    hops 1 / XGMI for every GPU pair KFD lists an xGMI io_link for, and KFD
 *    lists one for every GPU of the xGMI hive, directly linked or not. Pairs
 *    with no GPU-GPU io_link get hops 2..4 through the CPU and the type of
 *    the GPU-CPU link, which is XGMI on nodes whose CPU talks Infinity Fabric
 *    to the GPUs (Frontier): so only hops == 1 with XGMI means "an xGMI path
 *    between these two GPUs".
 *  - direct peers report max / min bandwidth = number of links times / one
 *    link's bandwidth; indirect peers report 0 (amdgpu: "num links returns 0
 *    for indirect peers since indirect route is unknown"). A pair is direct
 *    when both are non-zero; physical hops then come from a breadth-first
 *    search over the direct links (nbr_model_hops_from_links).
 *  - rsmi device indices are not HIP device ids: GPUs are ordered by PCI bus
 *    id in the model, and nbr_rsmi_device_for_pci maps back. */
#ifndef NBR_TOPO_RSMI_H
#define NBR_TOPO_RSMI_H

#include "topo/topology.h"

#include <stddef.h>
#include <stdint.h>

/* -------------------------------------------------- answers, per device */

/* What a probe learned about one GPU and one ordered GPU pair, indexed by
 * the probe's own device numbering. Filled by kfd.c and by
 * nbr_model_from_rsmi, turned into a model by nbr_amd_build_model. */
typedef struct nbr_amd_gpu {
    uint64_t bdfid; /* rocm_smi layout: domain << 32 | bus << 8 | dev << 3 | fn */
    int numa;       /* NUMA node, -1 unknown */
} nbr_amd_gpu_t;

typedef struct nbr_amd_pair {
    int known;         /* 0: the probe has no answer for this ordered pair */
    int xgmi;          /* 1: an xGMI path exists between the two GPUs */
    uint64_t min_mbps; /* one link's bandwidth, 0 unknown or indirect */
    uint64_t max_mbps; /* all links' bandwidth, 0 unknown or indirect */
    uint64_t weight;   /* the vendor's weight, 0 unknown */
} nbr_amd_pair_t;

typedef struct nbr_amd_answers {
    int num_gpus;
    int num_numa;    /* NUMA domains; 0: one more than the highest GPU numa */
    int num_sockets; /* CPU packages; 0: 1 */
    nbr_amd_gpu_t *gpus;   /* num_gpus */
    nbr_amd_pair_t *pairs; /* num_gpus x num_gpus, row = from */
} nbr_amd_answers_t;

/* Allocates gpus and pairs (zeroed, numa -1) for num_gpus GPUs. */
int nbr_amd_answers_init(nbr_amd_answers_t *answers, int num_gpus);
void nbr_amd_answers_free(nbr_amd_answers_t *answers);

/* Classifies answers into model (which it initialises; freed on failure):
 * GPUs ordered by PCI bus id, links / bandwidth / weight / link type per
 * pair, hops by breadth-first search, packages by th->peer_min_links,
 * leaders, then nbr_model_validate. source names the probe. On error
 * (NBR_ERR_ARG: bad thresholds or answers) the reason is in message. */
int nbr_amd_build_model(const nbr_amd_answers_t *answers, const nbr_topo_thresholds_t *th,
                        const char *source, nbr_node_model_t *model, char *message,
                        size_t size);

/* Writes "dddd:bb:dd.f" (lower case) for a rocm_smi-layout BDF id. */
void nbr_amd_format_bdf(uint64_t bdfid, char *out, size_t size);
/* Parses "dddd:bb:dd.f" or "bb:dd.f" (any case) into the rocm_smi layout;
 * NBR_ERR_ARG when malformed. */
int nbr_amd_parse_bdf(const char *text, uint64_t *bdfid);

/* -------------------------------------------------------------- rocm_smi */

/* The rocm_smi calls nbrcoll makes. Every function returns 0 on success or
 * the backend's own non-zero status (for the real backend an rsmi_status_t),
 * which status_string describes. Device indices are rocm_smi's. */
typedef struct nbr_rsmi_api {
    void *context; /* passed to every function; the real backend's is NULL */
    /* rsmi_init / rsmi_shut_down; nbrcoll brackets each query with them
     * (rocm_smi counts references, so nesting is fine). */
    int (*init)(void *context);
    void (*shut_down)(void *context);
    /* rsmi_num_monitor_devices */
    int (*num_devices)(void *context, uint32_t *count);
    /* rsmi_dev_pci_id_get: BDF id in the layout above */
    int (*pci_id)(void *context, uint32_t dev, uint64_t *bdfid);
    /* rsmi_topo_numa_affinity_get: the Linux NUMA node, -1 when none */
    int (*numa_node)(void *context, uint32_t dev, int32_t *numa);
    /* rsmi_topo_get_link_type: rocm_smi's hops (not physical, see above) and
     * whether the type is RSMI_IOLINK_TYPE_XGMI */
    int (*link_type)(void *context, uint32_t a, uint32_t b, uint64_t *hops, int *is_xgmi);
    /* rsmi_topo_get_link_weight */
    int (*link_weight)(void *context, uint32_t a, uint32_t b, uint64_t *weight);
    /* rsmi_minmax_bandwidth_get, MB/s; rocm_smi answers it only for pairs
     * with an xGMI io_link (0 / 0 for indirect ones) */
    int (*minmax_bandwidth)(void *context, uint32_t a, uint32_t b, uint64_t *min_mbps,
                            uint64_t *max_mbps);
    /* a static description of a status this table returned; never NULL */
    const char *(*status_string)(void *context, int status);
} nbr_rsmi_api_t;

/* The real librocm_smi64 backend. NBR_ERR_UNSUPPORTED (and api zeroed) when
 * this build has no rocm_smi (NBR_HAVE_ROCM_SMI unset). Calling it starts
 * nothing: rsmi_init runs inside the queries below, and not at all on a
 * node without /sys/class/kfd (init then fails with status -1, described
 * by status_string), because rocm_smi prints to stderr when it fails. */
int nbr_rsmi_real_api(nbr_rsmi_api_t *api);

/* Builds the node model from rocm_smi's answers (see the traps above).
 * NBR_ERR_UNSUPPORTED: rocm_smi cannot start or sees no GPU (fall back to
 * the next probe); NBR_ERR_IO: a query failed; NBR_ERR_ARG: the answers do
 * not make a valid model. message says why, with rocm_smi's own text. */
int nbr_model_from_rsmi(const nbr_rsmi_api_t *api, const nbr_topo_thresholds_t *th,
                        nbr_node_model_t *model, char *message, size_t size);

/* The rocm_smi device index whose PCI bus id is pci_bus_id ("0000:c1:00.0",
 * as hipDeviceGetPCIBusId writes it). NBR_ERR_ARG when no device has it or
 * the id is malformed, NBR_ERR_UNSUPPORTED when rocm_smi cannot start. */
int nbr_rsmi_device_for_pci(const nbr_rsmi_api_t *api, const char *pci_bus_id, uint32_t *dev);

#endif
