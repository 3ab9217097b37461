/* The CUDA source of the node model: NVIDIA GPUs through the CUDA runtime
 * (device count, PCI bus ids, cudaDeviceGetP2PAttribute), behind a table of
 * functions so tests can inject the answers of a machine they do not have.
 *
 * The runtime API does not count NVLink links, so pairs are classified from
 * what it does say:
 *   peer access and native atomics  -> nvlink, 1 direct link (count unknown)
 *   peer access without atomics     -> pcie (peer-to-peer through PCIe)
 *   no peer access                  -> pcie (through the host)
 * Hops are 1 for nvlink pairs, thresholds->pcie_hops otherwise; the weight
 * is CUDA's performance rank; bandwidth stays 0 (unknown). Devices are
 * ordered by PCI bus id, so the model does not depend on CUDA's device
 * order (CUDA_DEVICE_ORDER, CUDA_VISIBLE_DEVICES). Every GPU is its own
 * package: NVIDIA GPUs have no GCD peers. */
#ifndef NBR_CUDA_PROBE_H
#define NBR_CUDA_PROBE_H

#include "topo/topology.h"

enum { NBR_CUDA_P2P_ACCESS, NBR_CUDA_P2P_ATOMICS, NBR_CUDA_P2P_RANK };

typedef struct nbr_cuda_api {
    void *context;
    /* each returns 0 or the backend's error code */
    int (*device_count)(void *context, int *count);
    int (*pci_bus_id)(void *context, int device, char *id, int size);
    int (*p2p_attribute)(void *context, int attribute, int from, int to, int *value);
    const char *(*error_string)(void *context, int code);
} nbr_cuda_api_t;

/* The CUDA runtime, when nbrcoll was built with CUDA; else
 * NBR_ERR_UNSUPPORTED. */
int nbr_cuda_real_api(nbr_cuda_api_t *api);

/* NBR_ERR_UNSUPPORTED (with a reason) when no device answers. */
int nbr_model_from_cuda(const nbr_cuda_api_t *api, const nbr_topo_thresholds_t *thresholds,
                        nbr_node_model_t *model, char *message, size_t size);

#endif
