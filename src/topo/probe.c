#include "topo/probe.h"

#include "topo/cuda_probe.h"
#include "topo/kfd.h"
#include "topo/rsmi.h"
#include "base/log.h"

#include <hwloc.h>
#include <pthread.h>
#include <nbrcoll.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------- hwloc */

static pthread_mutex_t machine_lock = PTHREAD_MUTEX_INITIALIZER;
static hwloc_topology_t machine_topology;
static int machine_status; /* of the load; meaningful once machine_loaded */
static int machine_loaded;

/* Fault injection for tests (nbr_probe_hwloc_fail_at): every hwloc call
 * that can fail is counted, and the armed one fails as hwloc would. */
static _Atomic long hwloc_fail_at, hwloc_calls; /* probes may run on several threads */

static int hwloc_fails(void)
{
    return ++hwloc_calls == hwloc_fail_at;
}

static void load_machine(void)
{
    machine_loaded = 1;
    if (hwloc_fails() || hwloc_topology_init(&machine_topology) != 0) {
        machine_status = NBR_ERR_NOMEM;
        return;
    }
    hwloc_topology_set_io_types_filter(machine_topology, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_fails() || hwloc_topology_load(machine_topology) != 0) {
        hwloc_topology_destroy(machine_topology);
        NBR_INFO("hwloc: could not load this machine's topology");
        machine_status = NBR_ERR_UNSUPPORTED;
        return;
    }
    machine_status = NBR_SUCCESS;
}

/* This machine's topology with its PCI devices, loaded once per process
 * and kept (a lazily initialised cache): the machine does not change, a
 * load costs milliseconds, and each load with PCI leaves memory behind in
 * the PCI backend (about 370 KiB per load, measured with heaptrack), which
 * a load per communicator turned into a leak (docs/decisions.md, D48). */
static int load_hwloc(hwloc_topology_t *topology)
{
    pthread_mutex_lock(&machine_lock);
    if (!machine_loaded)
        load_machine();
    int rc = machine_status;
    pthread_mutex_unlock(&machine_lock);
    *topology = machine_topology;
    return rc;
}

static int count_of(hwloc_topology_t topology, hwloc_obj_type_t type)
{
    int n = hwloc_fails() ? -1 : hwloc_get_nbobjs_by_type(topology, type);
    return n > 0 ? n : 1;
}

/* The object of `type` containing every CPU of set, or NULL. */
static hwloc_obj_t enclosing(hwloc_topology_t topology, hwloc_const_cpuset_t set,
                             hwloc_obj_type_t type)
{
    hwloc_obj_t obj = hwloc_fails() ? NULL : hwloc_get_obj_covering_cpuset(topology, set);
    while (obj && obj->type != type)
        obj = obj->parent;
    return obj;
}

static int numa_of_cpuset(hwloc_topology_t topology, hwloc_const_cpuset_t set)
{
    hwloc_obj_t numa = hwloc_fails() ? NULL
                                     : hwloc_get_next_obj_covering_cpuset_by_type(
                                           topology, set, HWLOC_OBJ_NUMANODE, NULL);
    /* covering: the only NUMA domain whose CPUs include all of set */
    return numa && hwloc_bitmap_isincluded(set, numa->cpuset) ? (int)numa->logical_index : -1;
}

static int read_host_place(nbr_host_place_t *place)
{
    hwloc_topology_t topology;
    int rc = load_hwloc(&topology);
    if (rc != NBR_SUCCESS)
        return rc;
    place->num_sockets = count_of(topology, HWLOC_OBJ_PACKAGE);
    place->num_numa = count_of(topology, HWLOC_OBJ_NUMANODE);
    place->socket = place->numa = -1;
    place->bound = 0;
    hwloc_cpuset_t set = hwloc_fails() ? NULL : hwloc_bitmap_alloc();
    if (set && !hwloc_fails() && hwloc_get_cpubind(topology, set, HWLOC_CPUBIND_PROCESS) == 0) {
        hwloc_obj_t package = enclosing(topology, set, HWLOC_OBJ_PACKAGE);
        place->bound = package != NULL;
        /* Not bound to one socket: where it runs now is the best guess. */
        if (!package && !hwloc_fails() &&
            hwloc_get_last_cpu_location(topology, set, HWLOC_CPUBIND_PROCESS) == 0)
            package = enclosing(topology, set, HWLOC_OBJ_PACKAGE);
        if (package)
            place->socket = (int)package->logical_index;
        place->numa = numa_of_cpuset(topology, set);
    }
    hwloc_bitmap_free(set);
    return NBR_SUCCESS;
}

/* A lazily initialised cache: this process does not move between
 * machines, and hwloc's load is not free. */
static pthread_mutex_t place_lock = PTHREAD_MUTEX_INITIALIZER;
static nbr_host_place_t place_cached;
static int place_state; /* 0 unknown, 1 cached, -1 failed */

int nbr_probe_host_place(nbr_host_place_t *place)
{
    pthread_mutex_lock(&place_lock);
    if (place_state == 0) {
        int rc = read_host_place(&place_cached);
        place_state = rc == NBR_SUCCESS ? 1 : -1;
        if (rc != NBR_SUCCESS)
            place_cached = (nbr_host_place_t){1, 1, -1, -1, 0};
    }
    *place = place_cached;
    int state = place_state;
    pthread_mutex_unlock(&place_lock);
    return state == 1 ? NBR_SUCCESS : NBR_ERR_UNSUPPORTED;
}

void nbr_probe_hwloc_fail_at(long n)
{
    pthread_mutex_lock(&place_lock);
    pthread_mutex_lock(&machine_lock);
    if (machine_loaded && machine_status == NBR_SUCCESS)
        hwloc_topology_destroy(machine_topology);
    machine_loaded = 0;
    place_state = 0;
    hwloc_fail_at = n;
    hwloc_calls = 0;
    pthread_mutex_unlock(&machine_lock);
    pthread_mutex_unlock(&place_lock);
}

long nbr_probe_hwloc_calls(void)
{
    return hwloc_calls;
}

/* Sockets, NUMA domains and each GPU's NUMA domain from hwloc. */
static void add_cpu_side(nbr_node_model_t *model)
{
    hwloc_topology_t topology;
    if (load_hwloc(&topology) != NBR_SUCCESS)
        return;
    model->num_sockets = count_of(topology, HWLOC_OBJ_PACKAGE);
    model->num_numa = count_of(topology, HWLOC_OBJ_NUMANODE);
    for (int g = 0; g < model->num_gpus; g++) {
        nbr_gpu_info_t *gpu = &model->gpus[g];
        hwloc_obj_t pci = gpu->pci_bus_id[0] && !hwloc_fails()
                              ? hwloc_get_pcidev_by_busidstring(topology, gpu->pci_bus_id)
                              : NULL;
        hwloc_obj_t parent =
            pci && !hwloc_fails() ? hwloc_get_non_io_ancestor_obj(topology, pci) : NULL;
        if (parent && parent->cpuset)
            gpu->numa_node = numa_of_cpuset(topology, parent->cpuset);
        if (gpu->numa_node >= model->num_numa)
            gpu->numa_node = -1;
    }
}

/* ------------------------------------------------------------ sources */

static int from_rocm_smi(nbr_node_model_t *model, const nbr_topo_thresholds_t *thresholds)
{
    nbr_rsmi_api_t api;
    char why[256] = "";
    int rc = nbr_rsmi_real_api(&api);
    if (rc != NBR_SUCCESS) {
        NBR_INFO("topology: rocm_smi not used: nbrcoll was built without it");
        return rc;
    }
    /* Without the AMD kernel driver rsmi_init can only fail, and it prints
     * to stderr when it does: nbrcoll must stay quiet on such machines. */
    if (access("/dev/kfd", F_OK) != 0) {
        NBR_INFO("topology: rocm_smi not used: no AMD GPU driver (/dev/kfd absent)");
        return NBR_ERR_UNSUPPORTED;
    }
    rc = nbr_model_from_rsmi(&api, thresholds, model, why, sizeof why);
    if (rc != NBR_SUCCESS)
        NBR_INFO("topology: rocm_smi not used: %s", why[0] ? why : nbr_error_string(rc));
    return rc;
}

static int from_kfd(nbr_node_model_t *model, const char *root,
                    const nbr_topo_thresholds_t *thresholds)
{
    char why[256] = "";
    int rc = nbr_model_from_kfd(root ? root : "", thresholds, model, why, sizeof why);
    if (rc != NBR_SUCCESS)
        NBR_INFO("topology: KFD sysfs not used: %s", why[0] ? why : nbr_error_string(rc));
    return rc;
}

static int from_cuda(nbr_node_model_t *model, const nbr_topo_thresholds_t *thresholds)
{
    nbr_cuda_api_t api;
    char why[256] = "";
    int rc = nbr_cuda_real_api(&api);
    if (rc != NBR_SUCCESS) {
        NBR_INFO("topology: CUDA not used: nbrcoll was built without it");
        return rc;
    }
    rc = nbr_model_from_cuda(&api, thresholds, model, why, sizeof why);
    if (rc != NBR_SUCCESS)
        NBR_INFO("topology: CUDA not used: %s", why[0] ? why : nbr_error_string(rc));
    return rc;
}

int nbr_probe_node(const nbr_probe_options_t *options, nbr_node_model_t *model)
{
    if (options->topo_file && options->topo_file[0]) {
        char why[600] = "";
        int rc = nbr_model_load(options->topo_file, model, why, sizeof why);
        if (rc != NBR_SUCCESS)
            NBR_ERROR("topology file: %s", why);
        else
            NBR_INFO("topology: from file %s", options->topo_file);
        return rc;
    }
    NBR_INFO("topology: no topology file given (NBR_TOPO_FILE, nbr_topo_file)");
    nbr_topo_thresholds_t thresholds;
    nbr_topo_thresholds_default(&thresholds);
    int rc = from_rocm_smi(model, &thresholds);
    if (rc != NBR_SUCCESS)
        rc = from_kfd(model, options->sysfs_root, &thresholds);
    if (rc != NBR_SUCCESS)
        rc = from_cuda(model, &thresholds);
    if (rc != NBR_SUCCESS) {
        NBR_INFO("topology: no GPU found: flat node (no GPU links, one device per rank)");
        rc = nbr_model_flat(model, 0);
    }
    if (rc == NBR_SUCCESS)
        add_cpu_side(model);
    return rc;
}
