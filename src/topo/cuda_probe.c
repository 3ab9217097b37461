#include "topo/cuda_probe.h"

#include <ctype.h>
#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

#ifdef NBR_HAVE_CUDA
#include <cuda_runtime_api.h>

static int real_device_count(void *context, int *count)
{
    return (int)cudaGetDeviceCount(count);
}

static int real_pci_bus_id(void *context, int device, char *id, int size)
{
    return (int)cudaDeviceGetPCIBusId(id, size, device);
}

static int real_p2p_attribute(void *context, int attribute, int from, int to, int *value)
{
    static const enum cudaDeviceP2PAttr attributes[] = {
        cudaDevP2PAttrAccessSupported, cudaDevP2PAttrNativeAtomicSupported,
        cudaDevP2PAttrPerformanceRank};
    return (int)cudaDeviceGetP2PAttribute(value, attributes[attribute], from, to);
}

static const char *real_error_string(void *context, int code)
{
    return cudaGetErrorString((cudaError_t)code);
}
#endif

int nbr_cuda_real_api(nbr_cuda_api_t *api)
{
#ifdef NBR_HAVE_CUDA
    *api = (nbr_cuda_api_t){NULL, real_device_count, real_pci_bus_id, real_p2p_attribute,
                            real_error_string};
    return NBR_SUCCESS;
#else
    memset(api, 0, sizeof(*api));
    return NBR_ERR_UNSUPPORTED;
#endif
}

static const char *error_text(const nbr_cuda_api_t *api, int code)
{
    const char *text = api->error_string ? api->error_string(api->context, code) : NULL;
    return text ? text : "unknown error";
}

typedef struct cuda_gpu {
    int device;
    char pci[NBR_PCI_ID_MAX];
} cuda_gpu_t;

static int compare_pci(const void *a, const void *b)
{
    return strcmp(((const cuda_gpu_t *)a)->pci, ((const cuda_gpu_t *)b)->pci);
}

/* CUDA writes "0000:1B:00.0"; the model keeps ids in lower case. */
static void lower(char *text)
{
    for (; *text; text++)
        *text = (char)tolower((unsigned char)*text);
}

static int classify_pair(const nbr_cuda_api_t *api, const nbr_topo_thresholds_t *th,
                         nbr_node_model_t *model, const cuda_gpu_t *gpus, int a, int b,
                         char *message, size_t size)
{
    int access = 0, atomics = 0, rank = 0, code;
    if ((code = api->p2p_attribute(api->context, NBR_CUDA_P2P_ACCESS, gpus[a].device,
                                   gpus[b].device, &access)) != 0 ||
        (code = api->p2p_attribute(api->context, NBR_CUDA_P2P_ATOMICS, gpus[a].device,
                                   gpus[b].device, &atomics)) != 0 ||
        (code = api->p2p_attribute(api->context, NBR_CUDA_P2P_RANK, gpus[a].device,
                                   gpus[b].device, &rank)) != 0)
        return nbr_topo_explain(message, size, NBR_ERR_UNSUPPORTED,
                                "cuda: peer attributes of devices %d, %d: %s", gpus[a].device,
                                gpus[b].device, error_text(api, code));
    int nvlink = access && atomics;
    NBR_TOPO_AT(model, link_type, a, b) = nvlink ? NBR_LINK_NVLINK : NBR_LINK_PCIE;
    NBR_TOPO_AT(model, links, a, b) = nvlink ? 1 : 0;
    NBR_TOPO_AT(model, hops, a, b) = nvlink ? 1 : th->pcie_hops;
    NBR_TOPO_AT(model, weight, a, b) = rank > 0 ? rank : 0;
    return NBR_SUCCESS;
}

/* CUDA answers per ordered pair; the model needs one symmetric value. */
static void symmetrize(nbr_node_model_t *model)
{
    for (int a = 0; a < model->num_gpus; a++)
        for (int b = 0; b < a; b++) {
            int nvlink = NBR_TOPO_AT(model, link_type, a, b) == NBR_LINK_NVLINK &&
                         NBR_TOPO_AT(model, link_type, b, a) == NBR_LINK_NVLINK;
            int weight = NBR_TOPO_AT(model, weight, a, b) > NBR_TOPO_AT(model, weight, b, a)
                             ? NBR_TOPO_AT(model, weight, a, b)
                             : NBR_TOPO_AT(model, weight, b, a);
            int hops = NBR_TOPO_AT(model, hops, a, b) > NBR_TOPO_AT(model, hops, b, a)
                           ? NBR_TOPO_AT(model, hops, a, b)
                           : NBR_TOPO_AT(model, hops, b, a);
            for (int k = 0; k < 2; k++) {
                int x = k ? b : a, y = k ? a : b;
                NBR_TOPO_AT(model, link_type, x, y) = nvlink ? NBR_LINK_NVLINK : NBR_LINK_PCIE;
                NBR_TOPO_AT(model, links, x, y) = nvlink;
                NBR_TOPO_AT(model, hops, x, y) = nvlink ? 1 : hops;
                NBR_TOPO_AT(model, weight, x, y) = weight;
            }
        }
}

int nbr_model_from_cuda(const nbr_cuda_api_t *api, const nbr_topo_thresholds_t *th,
                        nbr_node_model_t *model, char *message, size_t size)
{
    int count = 0, code = api->device_count(api->context, &count), rc = NBR_SUCCESS;
    cuda_gpu_t gpus[NBR_TOPO_MAX_GPUS];
    if (code != 0)
        return nbr_topo_explain(message, size, NBR_ERR_UNSUPPORTED, "cuda: no device: %s",
                                error_text(api, code));
    if (count <= 0)
        return nbr_topo_explain(message, size, NBR_ERR_UNSUPPORTED, "cuda: no device");
    if (count > NBR_TOPO_MAX_GPUS)
        return nbr_topo_explain(message, size, NBR_ERR_UNSUPPORTED,
                                "cuda: %d devices, more than the %d a model holds", count,
                                NBR_TOPO_MAX_GPUS);
    for (int d = 0; d < count; d++) {
        gpus[d].device = d;
        if ((code = api->pci_bus_id(api->context, d, gpus[d].pci, sizeof gpus[d].pci)) != 0)
            return nbr_topo_explain(message, size, NBR_ERR_UNSUPPORTED,
                                    "cuda: PCI bus id of device %d: %s", d, error_text(api, code));
        gpus[d].pci[NBR_PCI_ID_MAX - 1] = '\0';
        lower(gpus[d].pci);
    }
    qsort(gpus, (size_t)count, sizeof gpus[0], compare_pci);
    if ((rc = nbr_model_init(model, count)) != NBR_SUCCESS)
        return rc;
    snprintf(model->name, sizeof model->name, "cuda-%d", count);
    snprintf(model->source, sizeof model->source, "cuda");
    for (int a = 0; a < count && rc == NBR_SUCCESS; a++) {
        memcpy(model->gpus[a].pci_bus_id, gpus[a].pci, sizeof gpus[a].pci);
        for (int b = 0; b < count && rc == NBR_SUCCESS; b++)
            if (a != b)
                rc = classify_pair(api, th, model, gpus, a, b, message, size);
    }
    if (rc == NBR_SUCCESS) {
        symmetrize(model);
        rc = nbr_model_validate(model, message, size);
    }
    if (rc != NBR_SUCCESS)
        nbr_model_free(model);
    return rc;
}
