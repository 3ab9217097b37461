/* rocm_smi probe and the classification shared with the KFD probe; the
 * facts this relies on are listed in rsmi.h. */
#include "topo/rsmi.h"

#include "base/log.h"

#include <ctype.h>
#include <limits.h>
#include <nbrcoll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef NBR_HAVE_ROCM_SMI
#include <rocm_smi/rocm_smi.h>
#include <unistd.h>
#endif

/* ------------------------------------------------------------ PCI ids */

/* The PCI address without rocm_smi's reserved / partition bits 16..31, so
 * ids from different sources compare equal. */
static uint64_t bdf_key(uint64_t bdfid)
{
    return (bdfid & 0xffffffff00000000ull) | (bdfid & 0xffffull);
}

void nbr_amd_format_bdf(uint64_t bdfid, char *out, size_t size)
{
    snprintf(out, size, "%04x:%02x:%02x.%x", (unsigned)(bdfid >> 32),
             (unsigned)((bdfid >> 8) & 0xff), (unsigned)((bdfid >> 3) & 0x1f),
             (unsigned)(bdfid & 0x7));
}

/* Reads exactly `digits` hex digits (at most `digits` when flexible). */
static const char *hex_field(const char *at, int digits, int flexible, unsigned long *value)
{
    unsigned long v = 0;
    int n = 0;
    while (n < digits && isxdigit((unsigned char)at[n])) {
        int c = tolower((unsigned char)at[n]);
        v = v * 16 + (unsigned long)(isdigit(c) ? c - '0' : c - 'a' + 10);
        n++;
    }
    if (n == 0 || (!flexible && n != digits))
        return NULL;
    *value = v;
    return at + n;
}

int nbr_amd_parse_bdf(const char *text, uint64_t *bdfid)
{
    unsigned long domain = 0, bus = 0, dev = 0, fn = 0;
    if (!text)
        return NBR_ERR_ARG;
    /* With a domain there are two colons: "dddd:bb:dd.f"; without, one. */
    const char *colon = strchr(text, ':');
    const char *at = text;
    if (colon && strchr(colon + 1, ':')) {
        at = hex_field(at, 8, 1, &domain);
        if (!at || *at++ != ':')
            return NBR_ERR_ARG;
    }
    at = hex_field(at, 2, 0, &bus);
    if (!at || *at++ != ':')
        return NBR_ERR_ARG;
    at = hex_field(at, 2, 0, &dev);
    if (!at || *at++ != '.' || dev > 0x1f)
        return NBR_ERR_ARG;
    at = hex_field(at, 1, 0, &fn);
    if (!at || *at != '\0' || fn > 7)
        return NBR_ERR_ARG;
    *bdfid = (uint64_t)domain << 32 | (uint64_t)bus << 8 | (uint64_t)dev << 3 | fn;
    return NBR_SUCCESS;
}

/* ------------------------------------------------------------ answers */

int nbr_amd_answers_init(nbr_amd_answers_t *answers, int num_gpus)
{
    memset(answers, 0, sizeof(*answers));
    if (num_gpus < 0 || num_gpus > NBR_TOPO_MAX_GPUS)
        return NBR_ERR_ARG;
    size_t n = (size_t)num_gpus;
    answers->num_gpus = num_gpus;
    answers->gpus = calloc(n + 1, sizeof(nbr_amd_gpu_t));
    answers->pairs = calloc(n * n + 1, sizeof(nbr_amd_pair_t));
    if (!answers->gpus || !answers->pairs) {
        nbr_amd_answers_free(answers);
        return NBR_ERR_NOMEM;
    }
    for (size_t g = 0; g < n; g++)
        answers->gpus[g].numa = -1;
    return NBR_SUCCESS;
}

void nbr_amd_answers_free(nbr_amd_answers_t *answers)
{
    free(answers->gpus);
    free(answers->pairs);
    memset(answers, 0, sizeof(*answers));
}

/* ------------------------------------------------------ classification */

static const nbr_amd_pair_t *pair_at(const nbr_amd_answers_t *ans, int from, int to)
{
    return &ans->pairs[(size_t)from * (size_t)ans->num_gpus + (size_t)to];
}

/* The probe's answer for a pair, either direction: the model is symmetric
 * and KFD lists io_links both ways, but one missing direction is no reason
 * to lose the pair. */
static const nbr_amd_pair_t *either_way(const nbr_amd_answers_t *ans, int a, int b)
{
    const nbr_amd_pair_t *p = pair_at(ans, a, b);
    return p->known ? p : pair_at(ans, b, a);
}

static int any_bandwidth(const nbr_amd_answers_t *ans)
{
    size_t cells = (size_t)ans->num_gpus * (size_t)ans->num_gpus;
    for (size_t c = 0; c < cells; c++)
        if (ans->pairs[c].known && ans->pairs[c].xgmi && ans->pairs[c].max_mbps > 0)
            return 1;
    return 0;
}

/* Direct xGMI links of one pair: max / min bandwidth (rounded, at least 1)
 * when both are reported; without any bandwidth on the whole node, 1 when
 * the weight says one xGMI hop; otherwise 0 (indirect or not xGMI). */
static int direct_links(const nbr_amd_pair_t *p, int node_has_bandwidth,
                        const nbr_topo_thresholds_t *th)
{
    if (!p->known || !p->xgmi)
        return 0;
    if (p->max_mbps > 0 && p->min_mbps > 0) {
        uint64_t links = (p->max_mbps + p->min_mbps / 2) / p->min_mbps;
        return links < 1 ? 1 : links > INT_MAX ? INT_MAX : (int)links;
    }
    if (!node_has_bandwidth && th->xgmi_hop_weight > 0 && p->weight > 0 &&
        p->weight <= (uint64_t)th->xgmi_hop_weight)
        return 1;
    return 0;
}

/* order[model index] = probe index, by PCI address (then the full id, so
 * partitions sharing an address keep a fixed order). Insertion sort: at
 * most NBR_TOPO_MAX_GPUS entries. */
static void order_by_pci(const nbr_amd_answers_t *ans, int *order)
{
    for (int g = 0; g < ans->num_gpus; g++) {
        int at = g;
        uint64_t key = bdf_key(ans->gpus[g].bdfid), full = ans->gpus[g].bdfid;
        while (at > 0) {
            const nbr_amd_gpu_t *prev = &ans->gpus[order[at - 1]];
            uint64_t prev_key = bdf_key(prev->bdfid);
            if (prev_key < key || (prev_key == key && prev->bdfid <= full))
                break;
            order[at] = order[at - 1];
            at--;
        }
        order[at] = g;
    }
}

static void fill_pair(nbr_node_model_t *m, int a, int b, const nbr_amd_pair_t *p, int links,
                      const nbr_topo_thresholds_t *th)
{
    int type = !p->known ? NBR_LINK_NONE : p->xgmi ? NBR_LINK_XGMI : NBR_LINK_PCIE;
    int weight = p->weight > INT_MAX ? INT_MAX : (int)p->weight;
    double gbps = links > 0 ? (double)p->max_mbps / th->mbps_per_gbps : 0.0;
    NBR_TOPO_AT(m, link_type, a, b) = NBR_TOPO_AT(m, link_type, b, a) = type;
    NBR_TOPO_AT(m, links, a, b) = NBR_TOPO_AT(m, links, b, a) = links;
    NBR_TOPO_AT(m, weight, a, b) = NBR_TOPO_AT(m, weight, b, a) = weight;
    NBR_TOPO_AT(m, bandwidth, a, b) = NBR_TOPO_AT(m, bandwidth, b, a) = gbps;
}

/* Each GPU's best partner: most direct links, at least peer_min_links,
 * lowest index on ties; -1 when none qualifies. */
static int best_partner(const nbr_node_model_t *m, int g, int min_links)
{
    int best = -1, best_links = min_links > 0 ? min_links - 1 : 0;
    for (int h = 0; h < m->num_gpus; h++)
        if (h != g && NBR_TOPO_AT(m, links, g, h) > best_links) {
            best = h;
            best_links = NBR_TOPO_AT(m, links, g, h);
        }
    return best;
}

/* Packages are mutual best partners (so never more than two GPUs),
 * numbered in order of their lowest GPU index. */
static void assign_packages(nbr_node_model_t *m, int min_links)
{
    int partner[NBR_TOPO_MAX_GPUS];
    for (int g = 0; g < m->num_gpus; g++) {
        partner[g] = best_partner(m, g, min_links);
        m->gpus[g].package = -1;
    }
    int next = 0;
    for (int g = 0; g < m->num_gpus; g++) {
        if (m->gpus[g].package >= 0)
            continue;
        m->gpus[g].package = next;
        int p = partner[g];
        if (p > g && partner[p] == g)
            m->gpus[p].package = next;
        next++;
    }
    nbr_model_assign_leaders(m);
}

static int node_counts(const nbr_amd_answers_t *ans, nbr_node_model_t *m, char *message,
                       size_t size)
{
    int highest = -1;
    for (int g = 0; g < m->num_gpus; g++)
        if (m->gpus[g].numa_node > highest)
            highest = m->gpus[g].numa_node;
    m->num_numa = ans->num_numa > 0 ? ans->num_numa : highest + 1;
    if (m->num_numa < 1)
        m->num_numa = 1;
    m->num_sockets = ans->num_sockets > 0 ? ans->num_sockets : 1;
    if (highest >= m->num_numa)
        return nbr_topo_explain(message, size, NBR_ERR_ARG, "a GPU is on NUMA node %d of %d", highest,
                   m->num_numa);
    return NBR_SUCCESS;
}

/* Thresholds a user set by hand: refused with a reason rather than left to
 * produce a model that fails validation for an obscure one. */
static int check_thresholds(const nbr_topo_thresholds_t *th, char *message, size_t size)
{
    if (th->pcie_hops < 1)
        return nbr_topo_explain(message, size, NBR_ERR_ARG, "threshold pcie_hops %d: must be >= 1",
                   th->pcie_hops);
    if (!(th->mbps_per_gbps > 0))
        return nbr_topo_explain(message, size, NBR_ERR_ARG, "threshold mbps_per_gbps %g: must be > 0",
                   th->mbps_per_gbps);
    return NBR_SUCCESS;
}

int nbr_amd_build_model(const nbr_amd_answers_t *ans, const nbr_topo_thresholds_t *th,
                        const char *source, nbr_node_model_t *model, char *message,
                        size_t size)
{
    int order[NBR_TOPO_MAX_GPUS];
    memset(model, 0, sizeof(*model));
    int rc = check_thresholds(th, message, size);
    if (rc != NBR_SUCCESS)
        return rc;
    rc = nbr_model_init(model, ans->num_gpus);
    if (rc != NBR_SUCCESS)
        return nbr_topo_explain(message, size, rc, "%d GPUs: cannot build a model", ans->num_gpus);
    snprintf(model->source, sizeof model->source, "%s", source);
    snprintf(model->name, sizeof model->name, "%s", source);
    order_by_pci(ans, order);
    for (int g = 0; g < ans->num_gpus; g++) {
        const nbr_amd_gpu_t *gpu = &ans->gpus[order[g]];
        nbr_amd_format_bdf(gpu->bdfid, model->gpus[g].pci_bus_id,
                           sizeof model->gpus[g].pci_bus_id);
        model->gpus[g].numa_node = gpu->numa < 0 ? -1 : gpu->numa;
    }
    int has_bandwidth = any_bandwidth(ans);
    for (int a = 0; a < ans->num_gpus; a++)
        for (int b = a + 1; b < ans->num_gpus; b++) {
            const nbr_amd_pair_t *p = either_way(ans, order[a], order[b]);
            fill_pair(model, a, b, p, direct_links(p, has_bandwidth, th), th);
        }
    nbr_model_hops_from_links(model, th->pcie_hops);
    assign_packages(model, th->peer_min_links);
    rc = node_counts(ans, model, message, size);
    if (rc == NBR_SUCCESS)
        rc = nbr_model_validate(model, message, size);
    if (rc != NBR_SUCCESS)
        nbr_model_free(model);
    return rc;
}

/* ------------------------------------------------------------ rocm_smi */

#ifdef NBR_HAVE_ROCM_SMI

/* Not an rsmi_status_t: the status real_init returns without calling
 * rsmi_init when the node has no amdkfd driver at all. */
enum { NO_KFD_STATUS = -1 };

/* rsmi_init prints to stderr when it fails (no /sys/class/drm, ...); on
 * nodes without the amdkfd driver, where it cannot succeed, it is not
 * called, so nbrcoll stays silent there. */
static int real_init(void *context)
{
    if (access("/sys/class/kfd", F_OK) != 0)
        return NO_KFD_STATUS;
    return (int)rsmi_init(0);
}

static void real_shut_down(void *context)
{
    (void)rsmi_shut_down();
}

static int real_num_devices(void *context, uint32_t *count)
{
    return (int)rsmi_num_monitor_devices(count);
}

static int real_pci_id(void *context, uint32_t dev, uint64_t *bdfid)
{
    return (int)rsmi_dev_pci_id_get(dev, bdfid);
}

/* rocm_smi returns the device's numa_node sysfs value as uint32_t, so -1
 * ("no NUMA affinity") arrives as 0xffffffff. */
static int real_numa_node(void *context, uint32_t dev, int32_t *numa)
{
    uint32_t node = 0;
    rsmi_status_t status = rsmi_topo_numa_affinity_get(dev, &node);
    if (status == RSMI_STATUS_SUCCESS)
        *numa = node > (uint32_t)INT32_MAX ? -1 : (int32_t)node;
    return (int)status;
}

static int real_link_type(void *context, uint32_t a, uint32_t b, uint64_t *hops, int *is_xgmi)
{
    RSMI_IO_LINK_TYPE type = RSMI_IOLINK_TYPE_UNDEFINED;
    rsmi_status_t status = rsmi_topo_get_link_type(a, b, hops, &type);
    if (status == RSMI_STATUS_SUCCESS)
        *is_xgmi = type == RSMI_IOLINK_TYPE_XGMI;
    return (int)status;
}

static int real_link_weight(void *context, uint32_t a, uint32_t b, uint64_t *weight)
{
    return (int)rsmi_topo_get_link_weight(a, b, weight);
}

static int real_minmax_bandwidth(void *context, uint32_t a, uint32_t b, uint64_t *min_mbps,
                                 uint64_t *max_mbps)
{
    return (int)rsmi_minmax_bandwidth_get(a, b, min_mbps, max_mbps);
}

static const char *real_status_string(void *context, int status)
{
    const char *text = NULL;
    if (status == NO_KFD_STATUS)
        return "no amdkfd driver (/sys/class/kfd absent), rsmi_init not called";
    if (rsmi_status_string((rsmi_status_t)status, &text) != RSMI_STATUS_SUCCESS || !text)
        return "unknown rocm_smi status";
    return text;
}

int nbr_rsmi_real_api(nbr_rsmi_api_t *api)
{
    memset(api, 0, sizeof(*api));
    api->init = real_init;
    api->shut_down = real_shut_down;
    api->num_devices = real_num_devices;
    api->pci_id = real_pci_id;
    api->numa_node = real_numa_node;
    api->link_type = real_link_type;
    api->link_weight = real_link_weight;
    api->minmax_bandwidth = real_minmax_bandwidth;
    api->status_string = real_status_string;
    return NBR_SUCCESS;
}

#else

int nbr_rsmi_real_api(nbr_rsmi_api_t *api)
{
    memset(api, 0, sizeof(*api));
    return NBR_ERR_UNSUPPORTED;
}

#endif

static int api_complete(const nbr_rsmi_api_t *api)
{
    return api && api->init && api->shut_down && api->num_devices && api->pci_id &&
           api->numa_node && api->link_type && api->link_weight && api->minmax_bandwidth &&
           api->status_string;
}

/* A failed rocm_smi call: rocm_smi's own text goes to message, which the
 * caller logs once (the probe chain's one info line); the status number
 * only to the debug log. Returns rc. */
static int rsmi_failed(const nbr_rsmi_api_t *api, const char *call, int status, int rc,
                       char *message, size_t size)
{
    const char *text = api->status_string(api->context, status);
    NBR_DEBUG("rocm_smi: %s returned status %d: %s", call, status, text);
    return nbr_topo_explain(message, size, rc, "rocm_smi: %s failed: %s", call, text);
}

/* rsmi_init and the device count; on success rocm_smi is initialised and
 * the caller must shut it down. */
static int rsmi_start(const nbr_rsmi_api_t *api, uint32_t *count, char *message, size_t size)
{
    if (!api_complete(api))
        return nbr_topo_explain(message, size, NBR_ERR_UNSUPPORTED, "rocm_smi: not in this build");
    int status = api->init(api->context);
    if (status != 0)
        return rsmi_failed(api, "rsmi_init", status, NBR_ERR_UNSUPPORTED, message, size);
    status = api->num_devices(api->context, count);
    if (status != 0) {
        api->shut_down(api->context);
        return rsmi_failed(api, "rsmi_num_monitor_devices", status, NBR_ERR_UNSUPPORTED,
                           message, size);
    }
    if (*count == 0 || *count > NBR_TOPO_MAX_GPUS) {
        api->shut_down(api->context);
        return nbr_topo_explain(message, size, NBR_ERR_UNSUPPORTED, "rocm_smi: %u GPUs (supported: 1..%d)",
                   (unsigned)*count, NBR_TOPO_MAX_GPUS);
    }
    return NBR_SUCCESS;
}

static int ask_gpu(const nbr_rsmi_api_t *api, uint32_t dev, nbr_amd_gpu_t *gpu, char *message,
                   size_t size)
{
    int32_t numa = -1;
    int status = api->pci_id(api->context, dev, &gpu->bdfid);
    if (status != 0)
        return rsmi_failed(api, "rsmi_dev_pci_id_get", status, NBR_ERR_IO, message, size);
    status = api->numa_node(api->context, dev, &numa);
    if (status != 0)
        return rsmi_failed(api, "rsmi_topo_numa_affinity_get", status, NBR_ERR_IO, message,
                           size);
    gpu->numa = numa < 0 ? -1 : numa;
    return NBR_SUCCESS;
}

/* One ordered pair. Only hops == 1 with XGMI is a GPU-GPU xGMI path; only
 * such pairs have bandwidth to ask for (rocm_smi refuses the others), and a
 * refusal there leaves the bandwidth unknown rather than failing the probe. */
static int ask_pair(const nbr_rsmi_api_t *api, uint32_t a, uint32_t b, nbr_amd_pair_t *p,
                    char *message, size_t size)
{
    uint64_t hops = 0;
    int is_xgmi = 0;
    int status = api->link_type(api->context, a, b, &hops, &is_xgmi);
    if (status != 0)
        return rsmi_failed(api, "rsmi_topo_get_link_type", status, NBR_ERR_IO, message, size);
    status = api->link_weight(api->context, a, b, &p->weight);
    if (status != 0)
        return rsmi_failed(api, "rsmi_topo_get_link_weight", status, NBR_ERR_IO, message,
                           size);
    p->known = 1;
    p->xgmi = is_xgmi && hops == 1;
    if (!p->xgmi)
        return NBR_SUCCESS;
    status = api->minmax_bandwidth(api->context, a, b, &p->min_mbps, &p->max_mbps);
    if (status != 0) {
        NBR_DEBUG("rocm_smi: rsmi_minmax_bandwidth_get(%u, %u): %s; bandwidth unknown",
                  (unsigned)a, (unsigned)b, api->status_string(api->context, status));
        p->min_mbps = p->max_mbps = 0;
    }
    return NBR_SUCCESS;
}

static int ask_all(const nbr_rsmi_api_t *api, nbr_amd_answers_t *ans, char *message,
                   size_t size)
{
    uint32_t n = (uint32_t)ans->num_gpus;
    for (uint32_t a = 0; a < n; a++) {
        int rc = ask_gpu(api, a, &ans->gpus[a], message, size);
        if (rc != NBR_SUCCESS)
            return rc;
    }
    for (uint32_t a = 0; a < n; a++)
        for (uint32_t b = 0; b < n; b++) {
            if (a == b)
                continue;
            int rc = ask_pair(api, a, b, &ans->pairs[(size_t)a * n + b], message, size);
            if (rc != NBR_SUCCESS)
                return rc;
        }
    return NBR_SUCCESS;
}

int nbr_model_from_rsmi(const nbr_rsmi_api_t *api, const nbr_topo_thresholds_t *th,
                        nbr_node_model_t *model, char *message, size_t size)
{
    nbr_amd_answers_t ans;
    uint32_t count = 0;
    memset(model, 0, sizeof(*model));
    if (!th)
        return nbr_topo_explain(message, size, NBR_ERR_ARG, "rocm_smi: no thresholds");
    int rc = rsmi_start(api, &count, message, size);
    if (rc != NBR_SUCCESS)
        return rc;
    rc = nbr_amd_answers_init(&ans, (int)count);
    if (rc == NBR_SUCCESS) {
        rc = ask_all(api, &ans, message, size);
        if (rc == NBR_SUCCESS)
            rc = nbr_amd_build_model(&ans, th, "rocm_smi", model, message, size);
        nbr_amd_answers_free(&ans);
    } else {
        nbr_topo_explain(message, size, rc, "rocm_smi: out of memory");
    }
    api->shut_down(api->context);
    return rc;
}

int nbr_rsmi_device_for_pci(const nbr_rsmi_api_t *api, const char *pci_bus_id, uint32_t *dev)
{
    char why[256] = "";
    uint64_t wanted = 0, bdfid = 0;
    uint32_t count = 0;
    if (nbr_amd_parse_bdf(pci_bus_id, &wanted) != NBR_SUCCESS) {
        NBR_INFO("rocm_smi: malformed PCI bus id \"%s\"", pci_bus_id ? pci_bus_id : "(null)");
        return NBR_ERR_ARG;
    }
    int rc = rsmi_start(api, &count, why, sizeof why);
    if (rc != NBR_SUCCESS) {
        NBR_INFO("%s", why);
        return rc;
    }
    rc = nbr_topo_explain(why, sizeof why, NBR_ERR_ARG, "rocm_smi: no device has PCI bus id %s", pci_bus_id);
    for (uint32_t d = 0; rc == NBR_ERR_ARG && d < count; d++) {
        int status = api->pci_id(api->context, d, &bdfid);
        if (status != 0)
            rc = rsmi_failed(api, "rsmi_dev_pci_id_get", status, NBR_ERR_IO, why, sizeof why);
        else if (bdf_key(bdfid) == bdf_key(wanted)) {
            *dev = d;
            rc = NBR_SUCCESS;
        }
    }
    api->shut_down(api->context);
    if (rc != NBR_SUCCESS)
        NBR_INFO("%s", why);
    return rc;
}
