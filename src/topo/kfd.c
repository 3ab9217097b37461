/* KFD sysfs probe; the files and fields it reads are listed in kfd.h. */
#include "topo/kfd.h"

#include "base/log.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <nbrcoll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KFD_NODES "/sys/class/kfd/kfd/topology/nodes"
#define CPU_DIR "/sys/devices/system/cpu"
#define KFD_MAX_NODES 512  /* CPU NUMA domains + GPUs (+ partitions) */
#define KFD_MAX_LINKS 512  /* io_links of one node */
#define KFD_MAX_CPUS 8192  /* logical CPUs scanned for sockets */
#define KFD_PATH_MAX 4096
#define KFD_TEXT_MAX 8192 /* a sysfs properties file is at most a page */

typedef struct kfd_node {
    unsigned id;          /* directory name under nodes/ */
    int gpu;              /* index into the answers, -1: not a (visible) GPU */
    int cpu;              /* rank among the CPU nodes (its NUMA domain), or -1 */
    uint64_t numa_weight; /* weight of the link that gave a GPU its NUMA node */
} kfd_node_t;

typedef struct kfd_scan {
    char root[KFD_PATH_MAX];
    kfd_node_t nodes[KFD_MAX_NODES];
    int num_nodes, num_gpus, num_cpus;
    unsigned cpus[KFD_MAX_CPUS]; /* scratch for count_sockets */
    int read_errno;              /* errno of the last failed read_text */
    char *message;
    size_t size;
} kfd_scan_t;

static int say(kfd_scan_t *s, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Writes the reason for a failure to the caller's message and returns rc. */
static int say(kfd_scan_t *s, int rc, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    if (s->message && s->size)
        vsnprintf(s->message, s->size, fmt, args);
    va_end(args);
    return rc;
}

static int make_path(kfd_scan_t *s, char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* root + the formatted rest; NBR_ERR_ARG when it does not fit. */
static int make_path(kfd_scan_t *s, char *path, const char *fmt, ...)
{
    char rest[KFD_PATH_MAX];
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(rest, sizeof rest, fmt, args);
    va_end(args);
    if (n < 0 || (size_t)n >= sizeof rest ||
        snprintf(path, KFD_PATH_MAX, "%s%s", s->root, rest) >= KFD_PATH_MAX)
        return say(s, NBR_ERR_ARG, "kfd: path too long under %s", s->root);
    return NBR_SUCCESS;
}

/* ------------------------------------------------------------ reading */

static int read_text(kfd_scan_t *s, const char *path, char *text, size_t size)
{
    FILE *file = fopen(path, "r");
    if (!file) {
        s->read_errno = errno;
        return say(s, NBR_ERR_IO, "kfd: cannot read %s: %s", path, strerror(errno));
    }
    errno = 0;
    size_t got = fread(text, 1, size, file);
    int failed = ferror(file);
    s->read_errno = errno;
    fclose(file);
    if (failed)
        return say(s, NBR_ERR_IO, "kfd: cannot read %s: %s", path, strerror(s->read_errno));
    if (got == size)
        return say(s, NBR_ERR_ARG, "kfd: %s is longer than %zu bytes", path, size - 1);
    text[got] = '\0';
    return NBR_SUCCESS;
}

/* The value of "key value" in a properties text, NULL when absent. Keys are
 * matched whole: "weight" does not find "weight_xgmi". */
static const char *find_key(const char *text, const char *key)
{
    size_t len = strlen(key);
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line += !!line) {
        if (strncmp(line, key, len) == 0 && (line[len] == ' ' || line[len] == '\t'))
            return line + len;
    }
    return NULL;
}

/* A decimal unsigned value followed by nothing but blanks to the line end. */
static int parse_u64(const char *at, uint64_t *value)
{
    char *end = NULL;
    while (*at == ' ' || *at == '\t')
        at++;
    if (!isdigit((unsigned char)*at))
        return 0;
    errno = 0;
    unsigned long long v = strtoull(at, &end, 10);
    if (errno != 0)
        return 0;
    while (*end == ' ' || *end == '\t' || *end == '\r')
        end++;
    if (*end != '\0' && *end != '\n')
        return 0;
    *value = v;
    return 1;
}

/* A required numeric property; errors name the file and the key. */
static int get_u64(kfd_scan_t *s, const char *path, const char *text, const char *key,
                   uint64_t *value)
{
    const char *at = find_key(text, key);
    if (!at)
        return say(s, NBR_ERR_ARG, "kfd: %s: no \"%s\"", path, key);
    if (!parse_u64(at, value))
        return say(s, NBR_ERR_ARG, "kfd: %s: \"%s\" is not a number", path, key);
    return NBR_SUCCESS;
}

/* ------------------------------------------------------ directory lists */

static int is_number(const char *name)
{
    if (!*name)
        return 0;
    for (; *name; name++)
        if (!isdigit((unsigned char)*name))
            return 0;
    return 1;
}

static int compare_unsigned(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

/* The numeric entries of a directory, sorted. *count = -1 (and success)
 * when the directory does not exist. */
static int list_numbers(kfd_scan_t *s, const char *path, unsigned *ids, int max, int *count)
{
    DIR *dir = opendir(path);
    *count = 0;
    if (!dir) {
        if (errno == ENOENT || errno == ENOTDIR) {
            *count = -1;
            return NBR_SUCCESS;
        }
        return say(s, NBR_ERR_IO, "kfd: cannot list %s: %s", path, strerror(errno));
    }
    int rc = NBR_SUCCESS;
    struct dirent *entry;
    while (rc == NBR_SUCCESS && (entry = readdir(dir)) != NULL) {
        if (!is_number(entry->d_name))
            continue;
        unsigned long id = strtoul(entry->d_name, NULL, 10);
        if (*count == max || id > UINT_MAX)
            rc = say(s, NBR_ERR_UNSUPPORTED, "kfd: %s: more than %d entries", path, max);
        else
            ids[(*count)++] = (unsigned)id;
    }
    closedir(dir);
    if (rc == NBR_SUCCESS)
        qsort(ids, (size_t)*count, sizeof(unsigned), compare_unsigned);
    return rc;
}

static kfd_node_t *node_by_id(kfd_scan_t *s, uint64_t id)
{
    for (int n = 0; n < s->num_nodes; n++)
        if (s->nodes[n].id == id)
            return &s->nodes[n];
    return NULL;
}

/* --------------------------------------------------------------- nodes */

/* Classifies one node from its properties; GPUs get their PCI address.
 * amdkfd refuses (EPERM) the properties of GPUs the process's device cgroup
 * hides; like the ROCm thunk, such nodes are left out, so the model lists
 * the GPUs this process can use. */
static int read_node(kfd_scan_t *s, kfd_node_t *node, nbr_amd_answers_t *ans)
{
    char path[KFD_PATH_MAX], text[KFD_TEXT_MAX];
    uint64_t simd = 0, cores = 0, domain = 0, location = 0;
    node->gpu = node->cpu = -1;
    int rc = make_path(s, path, KFD_NODES "/%u/properties", node->id);
    if (rc == NBR_SUCCESS)
        rc = read_text(s, path, text, sizeof text);
    if (rc == NBR_ERR_IO && (s->read_errno == EPERM || s->read_errno == EACCES)) {
        NBR_INFO("kfd: node %u is not accessible to this process; left out", node->id);
        return NBR_SUCCESS;
    }
    if (rc == NBR_SUCCESS)
        rc = get_u64(s, path, text, "simd_count", &simd);
    if (rc == NBR_SUCCESS)
        rc = get_u64(s, path, text, "cpu_cores_count", &cores);
    if (rc != NBR_SUCCESS)
        return rc;
    node->cpu = cores > 0 ? s->num_cpus++ : -1;
    if (simd == 0)
        return NBR_SUCCESS;
    rc = get_u64(s, path, text, "location_id", &location);
    /* Kernels before "domain" existed only had PCI domain 0. */
    if (rc == NBR_SUCCESS && find_key(text, "domain"))
        rc = get_u64(s, path, text, "domain", &domain);
    if (rc != NBR_SUCCESS)
        return rc;
    if (location > 0xffff || domain > 0xffffffffull)
        return say(s, NBR_ERR_ARG, "kfd: %s: PCI location %#llx / domain %#llx out of range",
                   path, (unsigned long long)location, (unsigned long long)domain);
    if (s->num_gpus == ans->num_gpus)
        return say(s, NBR_ERR_UNSUPPORTED, "kfd: more than %d GPUs", NBR_TOPO_MAX_GPUS);
    node->gpu = s->num_gpus++;
    ans->gpus[node->gpu].bdfid = domain << 32 | location;
    /* A node that is both CPU and GPU (an APU) is its own NUMA domain. */
    ans->gpus[node->gpu].numa = node->cpu;
    return NBR_SUCCESS;
}

static int read_nodes(kfd_scan_t *s, nbr_amd_answers_t *ans)
{
    char path[KFD_PATH_MAX];
    unsigned ids[KFD_MAX_NODES];
    int count = 0;
    int rc = make_path(s, path, KFD_NODES);
    if (rc == NBR_SUCCESS)
        rc = list_numbers(s, path, ids, KFD_MAX_NODES, &count);
    if (rc != NBR_SUCCESS)
        return rc;
    if (count <= 0)
        return say(s, NBR_ERR_UNSUPPORTED, "kfd: no KFD topology at %s", path);
    s->num_nodes = count;
    for (int n = 0; n < count && rc == NBR_SUCCESS; n++) {
        s->nodes[n].id = ids[n];
        rc = read_node(s, &s->nodes[n], ans);
    }
    if (rc == NBR_SUCCESS && s->num_gpus == 0)
        rc = say(s, NBR_ERR_UNSUPPORTED, "kfd: the KFD topology at %s lists no GPU", path);
    return rc;
}

/* --------------------------------------------------------------- links */

typedef struct kfd_link {
    uint64_t type, from, to, weight, min_mbps, max_mbps;
} kfd_link_t;

static int read_link(kfd_scan_t *s, const kfd_node_t *node, unsigned index, kfd_link_t *link)
{
    char path[KFD_PATH_MAX], text[KFD_TEXT_MAX];
    int rc = make_path(s, path, KFD_NODES "/%u/io_links/%u/properties", node->id, index);
    if (rc == NBR_SUCCESS)
        rc = read_text(s, path, text, sizeof text);
    if (rc == NBR_SUCCESS)
        rc = get_u64(s, path, text, "type", &link->type);
    if (rc == NBR_SUCCESS)
        rc = get_u64(s, path, text, "node_from", &link->from);
    if (rc == NBR_SUCCESS)
        rc = get_u64(s, path, text, "node_to", &link->to);
    if (rc == NBR_SUCCESS)
        rc = get_u64(s, path, text, "weight", &link->weight);
    if (rc == NBR_SUCCESS)
        rc = get_u64(s, path, text, "min_bandwidth", &link->min_mbps);
    if (rc == NBR_SUCCESS)
        rc = get_u64(s, path, text, "max_bandwidth", &link->max_mbps);
    if (rc == NBR_SUCCESS && link->from != node->id)
        rc = say(s, NBR_ERR_ARG, "kfd: %s: node_from %llu in node %u's links", path,
                 (unsigned long long)link->from, node->id);
    return rc;
}

/* Records one io_link of a GPU: to another GPU it is that pair's answer,
 * to a CPU node it names the GPU's NUMA domain (the lightest such link). */
static int add_link(kfd_scan_t *s, kfd_node_t *from, const kfd_link_t *link,
                    nbr_amd_answers_t *ans)
{
    kfd_node_t *to = node_by_id(s, link->to);
    if (!to)
        return say(s, NBR_ERR_ARG, "kfd: node %u links to node %llu, which does not exist",
                   from->id, (unsigned long long)link->to);
    if (to->gpu >= 0 && to != from) {
        nbr_amd_pair_t *p = &ans->pairs[(size_t)from->gpu * (size_t)ans->num_gpus +
                                        (size_t)to->gpu];
        p->known = 1;
        p->xgmi = link->type == NBR_KFD_IOLINK_XGMI;
        p->weight = link->weight;
        p->min_mbps = link->min_mbps;
        p->max_mbps = link->max_mbps;
    } else if (to->cpu >= 0 && to->gpu < 0) {
        nbr_amd_gpu_t *gpu = &ans->gpus[from->gpu];
        if (gpu->numa < 0 || link->weight < from->numa_weight) {
            gpu->numa = to->cpu;
            from->numa_weight = link->weight;
        }
    }
    return NBR_SUCCESS;
}

static int read_links(kfd_scan_t *s, kfd_node_t *node, nbr_amd_answers_t *ans)
{
    char path[KFD_PATH_MAX];
    unsigned ids[KFD_MAX_LINKS];
    int count = 0;
    int rc = make_path(s, path, KFD_NODES "/%u/io_links", node->id);
    if (rc == NBR_SUCCESS)
        rc = list_numbers(s, path, ids, KFD_MAX_LINKS, &count);
    for (int i = 0; i < count && rc == NBR_SUCCESS; i++) {
        kfd_link_t link;
        rc = read_link(s, node, ids[i], &link);
        if (rc == NBR_SUCCESS)
            rc = add_link(s, node, &link, ans);
    }
    return rc;
}

/* ------------------------------------------------------------- sockets */

/* Distinct physical_package_id values of the logical CPUs; 1 when the CPU
 * tree is absent or unreadable (sockets only refine locality). */
static int count_sockets(kfd_scan_t *s)
{
    unsigned packages[64];
    char path[KFD_PATH_MAX], text[64];
    int count = 0, found = 0;
    char *saved = s->message;
    s->message = NULL; /* failures here are not the probe's failure */
    if (make_path(s, path, CPU_DIR) != NBR_SUCCESS ||
        list_numbers(s, path, s->cpus, KFD_MAX_CPUS, &count) != NBR_SUCCESS)
        count = 0;
    for (int c = 0; c < count && found < 64; c++) {
        uint64_t package = 0;
        if (make_path(s, path, CPU_DIR "/cpu%u/topology/physical_package_id", s->cpus[c]) != 0 ||
            read_text(s, path, text, sizeof text) != NBR_SUCCESS || !parse_u64(text, &package))
            continue;
        int seen = 0;
        for (int p = 0; p < found; p++)
            seen |= packages[p] == package;
        if (!seen)
            packages[found++] = (unsigned)package;
    }
    s->message = saved;
    return found > 0 ? found : 1;
}

/* ------------------------------------------------------------- the probe */

/* The answers were sized for the most GPUs KFD may list; the builder wants
 * exactly the GPUs found. */
static int build(kfd_scan_t *s, const nbr_amd_answers_t *all, const nbr_topo_thresholds_t *th,
                 nbr_node_model_t *model)
{
    nbr_amd_answers_t ans;
    size_t n = (size_t)s->num_gpus, stride = (size_t)all->num_gpus;
    if (nbr_amd_answers_init(&ans, s->num_gpus) != NBR_SUCCESS)
        return say(s, NBR_ERR_NOMEM, "kfd: out of memory");
    memcpy(ans.gpus, all->gpus, n * sizeof(nbr_amd_gpu_t));
    for (size_t a = 0; a < n; a++)
        memcpy(&ans.pairs[a * n], &all->pairs[a * stride], n * sizeof(nbr_amd_pair_t));
    ans.num_numa = s->num_cpus;
    ans.num_sockets = count_sockets(s);
    int rc = nbr_amd_build_model(&ans, th, "kfd", model, s->message, s->size);
    nbr_amd_answers_free(&ans);
    return rc;
}

int nbr_model_from_kfd(const char *root, const nbr_topo_thresholds_t *th,
                       nbr_node_model_t *model, char *message, size_t size)
{
    memset(model, 0, sizeof(*model));
    /* "/" and "" both mean the real tree: paths are root + "/sys/...". */
    const char *prefix = root && strcmp(root, "/") != 0 ? root : "";
    if (!th || strlen(prefix) > KFD_PATH_MAX / 2) {
        if (message && size)
            snprintf(message, size, "kfd: %s", th ? "root path too long" : "no thresholds");
        return NBR_ERR_ARG;
    }
    nbr_amd_answers_t ans;
    kfd_scan_t *s = calloc(1, sizeof(kfd_scan_t));
    if (!s || nbr_amd_answers_init(&ans, NBR_TOPO_MAX_GPUS) != NBR_SUCCESS) {
        free(s);
        if (message && size)
            snprintf(message, size, "kfd: out of memory");
        return NBR_ERR_NOMEM;
    }
    snprintf(s->root, sizeof s->root, "%s", prefix);
    s->message = message;
    s->size = size;
    int rc = read_nodes(s, &ans);
    for (int n = 0; n < s->num_nodes && rc == NBR_SUCCESS; n++)
        if (s->nodes[n].gpu >= 0)
            rc = read_links(s, &s->nodes[n], &ans);
    if (rc == NBR_SUCCESS)
        rc = build(s, &ans, th, model);
    nbr_amd_answers_free(&ans);
    free(s);
    return rc;
}
