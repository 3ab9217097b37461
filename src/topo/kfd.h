/* The KFD sysfs probe: the node model from the amdkfd topology the kernel
 * publishes, for nodes where rocm_smi is absent. It reads, under a root path
 * that tests point at a fake tree:
 *
 *   <root>/sys/class/kfd/kfd/topology/nodes/<n>/properties
 *       "key value" lines (kfd_topology.c node_show). A node with
 *       simd_count > 0 is a GPU, one with cpu_cores_count > 0 a CPU NUMA
 *       domain. For GPUs: domain (PCI domain) and location_id (bus << 8 |
 *       device << 3 | function, pci_dev_id()).
 *   <root>/sys/class/kfd/kfd/topology/nodes/<n>/io_links/<i>/properties
 *       type (2 PCIe, 11 xGMI: HSA_IOLINK_TYPE_*), node_from, node_to,
 *       weight (15 per xGMI hop), min_bandwidth, max_bandwidth (MB/s; for
 *       xGMI peers max = links x one link's, min = one link's, both 0 for
 *       peers reached only through another GPU).
 *   <root>/sys/devices/system/cpu/cpu<k>/topology/physical_package_id
 *       optional: the number of CPU sockets (1 when absent).
 *
 * A GPU's NUMA node is the CPU node its io_link leads to (its rank among
 * the CPU nodes). Classification is shared with rocm_smi (rsmi.h). */
#ifndef NBR_TOPO_KFD_H
#define NBR_TOPO_KFD_H

#include "topo/rsmi.h"
#include "topo/topology.h"

#include <stddef.h>

/* KFD io_link types (include/uapi/linux/kfd_sysfs.h, HSA_IOLINK_TYPE_*). */
#define NBR_KFD_IOLINK_PCIE 2
#define NBR_KFD_IOLINK_XGMI 11

/* Builds the model from the KFD tree under root ("" or NULL: the real "/").
 *   NBR_ERR_UNSUPPORTED  no KFD topology under root, or it lists no GPU:
 *                        not present, fall back to the next probe
 *   NBR_ERR_IO           a file of the tree cannot be read
 *   NBR_ERR_ARG          the tree is malformed (missing key, garbage value,
 *                        link to an unknown node, ...)
 * message says which file and why. */
int nbr_model_from_kfd(const char *root, const nbr_topo_thresholds_t *th,
                       nbr_node_model_t *model, char *message, size_t size);

#endif
