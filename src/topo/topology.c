#include "topo/topology.h"

#include "topo/text.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <nbrcoll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *link_type_names[NBR_NUM_LINK_TYPES] = {"none", "self", "pcie", "xgmi",
                                                          "nvlink"};

const char *nbr_link_type_name(nbr_link_type_t type)
{
    return (unsigned)type < NBR_NUM_LINK_TYPES ? link_type_names[type] : "?";
}

/* ------------------------------------------------------------- basics */

void nbr_topo_thresholds_default(nbr_topo_thresholds_t *th)
{
    th->peer_min_links = 4;
    th->pcie_hops = 2;
    th->xgmi_hop_weight = 15;
    th->mbps_per_gbps = 1000.0;
}


void nbr_model_free(nbr_node_model_t *model)
{
    free(model->gpus);
    free(model->hops);
    free(model->links);
    free(model->weight);
    free(model->link_type);
    free(model->bandwidth);
    memset(model, 0, sizeof(*model));
}

int nbr_model_init(nbr_node_model_t *model, int num_gpus)
{
    memset(model, 0, sizeof(*model));
    if (num_gpus < 0 || num_gpus > NBR_TOPO_MAX_GPUS)
        return NBR_ERR_ARG;
    size_t n = (size_t)num_gpus, cells = n * n + 1;
    model->num_gpus = num_gpus;
    model->num_sockets = 1;
    model->num_numa = 1;
    model->gpus = calloc(n + 1, sizeof(nbr_gpu_info_t));
    model->hops = calloc(cells, sizeof(int));
    model->links = calloc(cells, sizeof(int));
    model->weight = calloc(cells, sizeof(int));
    model->link_type = calloc(cells, sizeof(int));
    model->bandwidth = calloc(cells, sizeof(double));
    if (!model->gpus || !model->hops || !model->links || !model->weight ||
        !model->link_type || !model->bandwidth) {
        nbr_model_free(model);
        return NBR_ERR_NOMEM;
    }
    for (int g = 0; g < num_gpus; g++) {
        model->gpus[g].numa_node = -1;
        model->gpus[g].package = g;
        model->gpus[g].leader = 1;
        NBR_TOPO_AT(model, link_type, g, g) = NBR_LINK_SELF;
    }
    return NBR_SUCCESS;
}

int nbr_model_copy(nbr_node_model_t *dst, const nbr_node_model_t *src)
{
    int rc = nbr_model_init(dst, src->num_gpus);
    if (rc != NBR_SUCCESS)
        return rc;
    size_t n = (size_t)src->num_gpus, cells = n * n;
    memcpy(dst->name, src->name, sizeof dst->name);
    memcpy(dst->source, src->source, sizeof dst->source);
    dst->num_sockets = src->num_sockets;
    dst->num_numa = src->num_numa;
    memcpy(dst->gpus, src->gpus, n * sizeof(nbr_gpu_info_t));
    memcpy(dst->hops, src->hops, cells * sizeof(int));
    memcpy(dst->links, src->links, cells * sizeof(int));
    memcpy(dst->weight, src->weight, cells * sizeof(int));
    memcpy(dst->link_type, src->link_type, cells * sizeof(int));
    memcpy(dst->bandwidth, src->bandwidth, cells * sizeof(double));
    return NBR_SUCCESS;
}

int nbr_model_equal(const nbr_node_model_t *a, const nbr_node_model_t *b)
{
    if (a->num_gpus != b->num_gpus || a->num_sockets != b->num_sockets ||
        a->num_numa != b->num_numa)
        return 0;
    size_t n = (size_t)a->num_gpus, cells = n * n;
    for (size_t g = 0; g < n; g++) {
        const nbr_gpu_info_t *x = &a->gpus[g], *y = &b->gpus[g];
        if (strcmp(x->pci_bus_id, y->pci_bus_id) != 0 || x->numa_node != y->numa_node ||
            x->package != y->package || x->leader != y->leader)
            return 0;
    }
    for (size_t c = 0; c < cells; c++)
        if (a->hops[c] != b->hops[c] || a->links[c] != b->links[c] ||
            a->weight[c] != b->weight[c] || a->link_type[c] != b->link_type[c] ||
            a->bandwidth[c] != b->bandwidth[c])
            return 0;
    return 1;
}

int nbr_model_flat(nbr_node_model_t *model, int num_gpus)
{
    int rc = nbr_model_init(model, num_gpus);
    if (rc != NBR_SUCCESS)
        return rc;
    snprintf(model->name, sizeof model->name, "flat");
    snprintf(model->source, sizeof model->source, "flat");
    for (int a = 0; a < num_gpus; a++)
        for (int b = 0; b < num_gpus; b++)
            if (a != b) {
                NBR_TOPO_AT(model, link_type, a, b) = NBR_LINK_PCIE;
                NBR_TOPO_AT(model, hops, a, b) = 1;
            }
    return NBR_SUCCESS;
}

void nbr_model_assign_leaders(nbr_node_model_t *model)
{
    for (int g = 0; g < model->num_gpus; g++) {
        model->gpus[g].leader = 1;
        for (int h = 0; h < g; h++)
            if (model->gpus[h].package == model->gpus[g].package)
                model->gpus[g].leader = 0;
    }
}

int nbr_model_peer(const nbr_node_model_t *model, int gpu)
{
    for (int h = 0; h < model->num_gpus; h++)
        if (h != gpu && model->gpus[h].package == model->gpus[gpu].package)
            return h;
    return -1;
}

void nbr_model_hops_from_links(nbr_node_model_t *model, int pcie_hops)
{
    int n = model->num_gpus, queue[NBR_TOPO_MAX_GPUS], distance[NBR_TOPO_MAX_GPUS];
    for (int source = 0; source < n; source++) {
        for (int g = 0; g < n; g++)
            distance[g] = -1;
        int head = 0, tail = 0;
        distance[source] = 0;
        queue[tail++] = source;
        while (head < tail) {
            int at = queue[head++];
            for (int next = 0; next < n; next++)
                if (distance[next] < 0 && NBR_TOPO_AT(model, links, at, next) > 0) {
                    distance[next] = distance[at] + 1;
                    queue[tail++] = next;
                }
        }
        for (int g = 0; g < n; g++) {
            if (g == source)
                continue;
            int reachable = distance[g] > 0;
            NBR_TOPO_AT(model, hops, source, g) = reachable ? distance[g] : pcie_hops;
            if (!reachable && NBR_TOPO_AT(model, link_type, source, g) == NBR_LINK_NONE)
                NBR_TOPO_AT(model, link_type, source, g) = NBR_LINK_PCIE;
        }
    }
}

int nbr_topo_explain(char *message, size_t size, int rc, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    if (message && size)
        vsnprintf(message, size, fmt, args);
    va_end(args);
    return rc;
}

int nbr_model_validate(const nbr_node_model_t *model, char *message, size_t size)
{
    int n = model->num_gpus;
    if (n < 0 || n > NBR_TOPO_MAX_GPUS)
        return nbr_topo_explain(message, size, NBR_ERR_ARG, "gpus %d outside 0..%d", n, NBR_TOPO_MAX_GPUS);
    if (model->num_sockets < 1 || model->num_numa < 1)
        return nbr_topo_explain(message, size, NBR_ERR_ARG, "sockets and numa must be >= 1");
    for (int a = 0; a < n; a++) {
        if (NBR_TOPO_AT(model, hops, a, a) != 0 || NBR_TOPO_AT(model, links, a, a) != 0 ||
            NBR_TOPO_AT(model, link_type, a, a) != NBR_LINK_SELF)
            return nbr_topo_explain(message, size, NBR_ERR_ARG, "gpu %d: diagonal must be hops 0, links 0, self", a);
        if (model->gpus[a].numa_node >= model->num_numa)
            return nbr_topo_explain(message, size, NBR_ERR_ARG, "gpu %d: numa %d but only %d domains", a,
                            model->gpus[a].numa_node, model->num_numa);
        for (int b = 0; b < n; b++) {
            if (NBR_TOPO_AT(model, hops, a, b) < 0 || NBR_TOPO_AT(model, links, a, b) < 0 ||
                NBR_TOPO_AT(model, weight, a, b) < 0 || NBR_TOPO_AT(model, bandwidth, a, b) < 0)
                return nbr_topo_explain(message, size, NBR_ERR_ARG, "gpus %d,%d: negative value", a, b);
            if ((unsigned)NBR_TOPO_AT(model, link_type, a, b) >= NBR_NUM_LINK_TYPES)
                return nbr_topo_explain(message, size, NBR_ERR_ARG, "gpus %d,%d: bad link type", a, b);
            if (a != b && (NBR_TOPO_AT(model, hops, a, b) < 1 ||
                           NBR_TOPO_AT(model, link_type, a, b) == NBR_LINK_SELF))
                return nbr_topo_explain(message, size, NBR_ERR_ARG, "gpus %d,%d: distinct GPUs need hops >= 1 "
                                               "and a type other than self", a, b);
            if (NBR_TOPO_AT(model, hops, a, b) != NBR_TOPO_AT(model, hops, b, a) ||
                NBR_TOPO_AT(model, links, a, b) != NBR_TOPO_AT(model, links, b, a) ||
                NBR_TOPO_AT(model, weight, a, b) != NBR_TOPO_AT(model, weight, b, a) ||
                NBR_TOPO_AT(model, link_type, a, b) != NBR_TOPO_AT(model, link_type, b, a) ||
                NBR_TOPO_AT(model, bandwidth, a, b) != NBR_TOPO_AT(model, bandwidth, b, a))
                return nbr_topo_explain(message, size, NBR_ERR_ARG, "gpus %d,%d: matrices must be symmetric", a, b);
        }
        int members = 0, leaders = 0;
        for (int b = 0; b < n; b++)
            if (model->gpus[b].package == model->gpus[a].package) {
                members++;
                leaders += model->gpus[b].leader != 0;
            }
        if (members > 2 || leaders != 1)
            return nbr_topo_explain(message, size, NBR_ERR_ARG, "package %d: %d GPUs and %d leaders "
                                           "(at most 2 GPUs, exactly 1 leader)",
                            model->gpus[a].package, members, leaders);
    }
    return NBR_SUCCESS;
}

/* ------------------------------------------------------------ parsing */

enum { MATRIX_HOPS, MATRIX_LINKS, MATRIX_WEIGHT, MATRIX_BANDWIDTH, MATRIX_TYPE, NUM_MATRICES };
static const char *matrix_names[NUM_MATRICES] = {"hops", "links", "weight", "bandwidth",
                                                 "link_type"};

static int parse_cell(nbr_text_parser_t *p, nbr_node_model_t *m, int matrix, int cell, const char *word)
{
    if (matrix == MATRIX_BANDWIDTH)
        return nbr_text_double(p, word, &m->bandwidth[cell]);
    if (matrix == MATRIX_TYPE) {
        for (int t = 0; t < NBR_NUM_LINK_TYPES; t++)
            if (strcmp(word, link_type_names[t]) == 0) {
                m->link_type[cell] = t;
                return NBR_SUCCESS;
            }
        return nbr_text_error(p, "unknown link type '%s' (none self pcie xgmi nvlink)", word);
    }
    int *target = matrix == MATRIX_HOPS ? m->hops : matrix == MATRIX_LINKS ? m->links : m->weight;
    return nbr_text_int(p, word, 0, INT_MAX, &target[cell]);
}

/* Cell (a, b) of a matrix as a double, whatever its storage type. */
static double cell_value(const nbr_node_model_t *m, int matrix, int a, int b)
{
    int cell = a * m->num_gpus + b;
    switch (matrix) {
    case MATRIX_HOPS: return m->hops[cell];
    case MATRIX_LINKS: return m->links[cell];
    case MATRIX_WEIGHT: return m->weight[cell];
    case MATRIX_BANDWIDTH: return m->bandwidth[cell];
    default: return m->link_type[cell];
    }
}

/* Symmetry and the diagonal, reported at the row that breaks them. */
static int check_matrix(nbr_text_parser_t *p, const nbr_node_model_t *m, int matrix, const int *row_line)
{
    int n = m->num_gpus, line = p->line, rc = NBR_SUCCESS;
    double diagonal = matrix == MATRIX_TYPE ? NBR_LINK_SELF : 0;
    for (int a = 0; a < n && rc == NBR_SUCCESS; a++) {
        p->line = row_line[a];
        if (cell_value(m, matrix, a, a) != diagonal)
            rc = nbr_text_error(p, "%s row %d: the diagonal must be %s", matrix_names[matrix], a,
                             matrix == MATRIX_TYPE ? "self" : "0");
        for (int b = 0; b < a && rc == NBR_SUCCESS; b++)
            if (cell_value(m, matrix, a, b) != cell_value(m, matrix, b, a))
                rc = nbr_text_error(p, "%s row %d column %d differs from row %d column %d: "
                                    "the matrix must be symmetric",
                                 matrix_names[matrix], a, b, b, a);
    }
    p->line = rc == NBR_SUCCESS ? line : p->line;
    return rc;
}

static int parse_matrix(nbr_text_parser_t *p, nbr_node_model_t *m, int matrix)
{
    int n = m->num_gpus, row_line[NBR_TOPO_MAX_GPUS];
    char *words[NBR_TOPO_MAX_GPUS + 1];
    for (int row = 0; row < n; row++) {
        char *line = nbr_text_next_line(p);
        row_line[row] = p->line;
        if (!line)
            return nbr_text_error(p, "%s: file ends after %d of %d rows", matrix_names[matrix],
                               row, n);
        int count = nbr_text_split(line, words, NBR_TOPO_MAX_GPUS);
        if (count != n)
            return nbr_text_error(p, "%s row %d: %d values, %d expected", matrix_names[matrix],
                               row, count > NBR_TOPO_MAX_GPUS ? NBR_TOPO_MAX_GPUS + 1 : count, n);
        for (int col = 0; col < n; col++) {
            int rc = parse_cell(p, m, matrix, row * n + col, words[col]);
            if (rc != NBR_SUCCESS)
                return rc;
        }
    }
    return check_matrix(p, m, matrix, row_line);
}

/* "key=value" with the given key, or NULL. */
static int parse_gpu(nbr_text_parser_t *p, nbr_node_model_t *m, char **words, int count,
                     int *next_gpu, int *any_leader)
{
    int index = 0, rc = nbr_text_int(p, words[1], 0, NBR_TOPO_MAX_GPUS - 1, &index);
    if (rc != NBR_SUCCESS)
        return rc;
    if (index != *next_gpu || index >= m->num_gpus)
        return nbr_text_error(p, "gpu %d: expected gpu %d of %d", index, *next_gpu, m->num_gpus);
    nbr_gpu_info_t *gpu = &m->gpus[index];
    gpu->leader = 0;
    for (int w = 2; w < count; w++) {
        const char *value;
        if ((value = nbr_text_keyed(words[w], "pci"))) {
            if (strlen(value) >= NBR_PCI_ID_MAX)
                return nbr_text_error(p, "pci id '%s' too long", value);
            /* "-": unknown, as the writer spells an empty id */
            snprintf(gpu->pci_bus_id, sizeof gpu->pci_bus_id, "%s",
                     strcmp(value, "-") == 0 ? "" : value);
        } else if ((value = nbr_text_keyed(words[w], "numa"))) {
            rc = nbr_text_int(p, value, -1, INT_MAX, &gpu->numa_node);
        } else if ((value = nbr_text_keyed(words[w], "package"))) {
            rc = nbr_text_int(p, value, 0, INT_MAX, &gpu->package);
        } else if (strcmp(words[w], "leader") == 0) {
            gpu->leader = 1;
            *any_leader = 1;
        } else {
            return nbr_text_error(p, "gpu %d: unknown attribute '%s'", index, words[w]);
        }
        if (rc != NBR_SUCCESS)
            return rc;
    }
    (*next_gpu)++;
    return NBR_SUCCESS;
}

/* What the header lines have said so far. */
typedef struct seen {
    int header, gpus, sockets, numa, next_gpu, any_leader;
    int matrix[NUM_MATRICES];
} seen_t;

static int parse_line(nbr_text_parser_t *p, nbr_node_model_t *m, seen_t *seen, char *line)
{
    char *words[8];
    int count = nbr_text_split(line, words, 7), value = 0, rc;
    if (count > 7)
        return nbr_text_error(p, "too many words");
    if (!seen->header) {
        if (count != 2 || strcmp(words[0], "nbrcoll-topology") != 0 || strcmp(words[1], "1") != 0)
            return nbr_text_error(p, "expected 'nbrcoll-topology 1' first");
        seen->header = 1;
        return NBR_SUCCESS;
    }
    for (int k = 0; k < NUM_MATRICES; k++)
        if (strcmp(words[0], matrix_names[k]) == 0) {
            if (count != 1)
                return nbr_text_error(p, "'%s' stands alone; rows follow", words[0]);
            if (!seen->gpus)
                return nbr_text_error(p, "'%s' before 'gpus'", words[0]);
            if (seen->matrix[k])
                return nbr_text_error(p, "'%s' given twice", words[0]);
            seen->matrix[k] = 1;
            return parse_matrix(p, m, k);
        }
    if (strcmp(words[0], "gpu") == 0) {
        if (!seen->gpus)
            return nbr_text_error(p, "'gpu' before 'gpus'");
        if (count < 2)
            return nbr_text_error(p, "'gpu' needs an index");
        return parse_gpu(p, m, words, count, &seen->next_gpu, &seen->any_leader);
    }
    if (strcmp(words[0], "name") == 0) {
        if (count != 2 || strlen(words[1]) >= sizeof m->name)
            return nbr_text_error(p, "'name' takes one word");
        snprintf(m->name, sizeof m->name, "%s", words[1]);
        return NBR_SUCCESS;
    }
    int is_gpus = strcmp(words[0], "gpus") == 0, is_sockets = strcmp(words[0], "sockets") == 0,
        is_numa = strcmp(words[0], "numa") == 0;
    if (!is_gpus && !is_sockets && !is_numa)
        return nbr_text_error(p, "unknown key '%s'", words[0]);
    if (count != 2)
        return nbr_text_error(p, "'%s' takes one value", words[0]);
    rc = nbr_text_int(p, words[1], is_gpus ? 0 : 1, is_gpus ? NBR_TOPO_MAX_GPUS : 4096, &value);
    if (rc != NBR_SUCCESS)
        return rc;
    if (is_gpus) {
        if (seen->gpus)
            return nbr_text_error(p, "'gpus' given twice");
        int sockets = m->num_sockets, numa = m->num_numa;
        nbr_model_free(m);
        if ((rc = nbr_model_init(m, value)) != NBR_SUCCESS)
            return rc;
        m->num_sockets = sockets;
        m->num_numa = numa;
        seen->gpus = 1;
    } else if (is_sockets) {
        m->num_sockets = value;
    } else {
        m->num_numa = value;
    }
    return NBR_SUCCESS;
}

int nbr_model_parse(const char *text, const char *source, nbr_node_model_t *model,
                    char *message, size_t message_size)
{
    nbr_text_parser_t p = nbr_text_parser(text, message, message_size);
    seen_t seen = {0};
    int rc = nbr_model_init(model, 0);
    char name[NBR_TOPO_NAME_MAX] = "";
    if (rc != NBR_SUCCESS)
        return rc;
    for (char *line; rc == NBR_SUCCESS && (line = nbr_text_next_line(&p));) {
        memcpy(name, model->name, sizeof name);
        rc = parse_line(&p, model, &seen, line);
        if (!model->name[0]) /* 'gpus' re-initialises the model */
            memcpy(model->name, name, sizeof name);
    }
    p.line++; /* problems found at the end point past the last line */
    if (rc == NBR_SUCCESS && !seen.header)
        rc = nbr_text_error(&p, "empty file: expected 'nbrcoll-topology 1'");
    if (rc == NBR_SUCCESS && !seen.gpus)
        rc = nbr_text_error(&p, "missing 'gpus'");
    if (rc == NBR_SUCCESS && seen.next_gpu != model->num_gpus)
        rc = nbr_text_error(&p, "%d gpu lines for %d gpus", seen.next_gpu, model->num_gpus);
    for (int k = 0; rc == NBR_SUCCESS && k <= MATRIX_LINKS; k++)
        if (model->num_gpus > 0 && !seen.matrix[k])
            rc = nbr_text_error(&p, "missing matrix '%s'", matrix_names[k]);
    if (rc == NBR_SUCCESS && model->num_gpus > 0 && !seen.matrix[MATRIX_TYPE])
        rc = nbr_text_error(&p, "missing matrix 'link_type'");
    if (rc == NBR_SUCCESS && !seen.any_leader)
        nbr_model_assign_leaders(model);
    if (rc == NBR_SUCCESS) {
        snprintf(model->source, sizeof model->source, "%s", source ? source : "text");
        rc = nbr_model_validate(model, message, message_size);
    }
    if (rc != NBR_SUCCESS)
        nbr_model_free(model);
    return rc;
}

int nbr_model_load(const char *path, nbr_node_model_t *model, char *message,
                   size_t message_size)
{
    char *text = NULL;
    int rc = nbr_text_read_file(path, &text, message, message_size);
    if (rc == NBR_SUCCESS) {
        char source[NBR_TOPO_NAME_MAX];
        const char *base = strrchr(path, '/');
        snprintf(source, sizeof source, "file %s", base ? base + 1 : path);
        char where[512] = "";
        rc = nbr_model_parse(text, source, model, where, sizeof where);
        if (rc != NBR_SUCCESS)
            nbr_topo_explain(message, message_size, NBR_ERR_ARG, "%s: %s", path, where);
    }
    free(text);
    return rc;
}

/* ------------------------------------------------------------ writing */

static void write_matrix(const nbr_node_model_t *m, FILE *out, int matrix)
{
    int n = m->num_gpus;
    fprintf(out, "%s\n", matrix_names[matrix]);
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            int cell = a * n + b;
            const char *sep = b ? " " : "";
            switch (matrix) {
            case MATRIX_HOPS: fprintf(out, "%s%d", sep, m->hops[cell]); break;
            case MATRIX_LINKS: fprintf(out, "%s%d", sep, m->links[cell]); break;
            case MATRIX_WEIGHT: fprintf(out, "%s%d", sep, m->weight[cell]); break;
            case MATRIX_BANDWIDTH: fprintf(out, "%s%.17g", sep, m->bandwidth[cell]); break;
            default: fprintf(out, "%s%s", sep, nbr_link_type_name(m->link_type[cell])); break;
            }
        }
        fputc('\n', out);
    }
}

int nbr_model_write(const nbr_node_model_t *model, FILE *out)
{
    fprintf(out, "nbrcoll-topology 1\n");
    fprintf(out, "# written by nbrcoll from: %s\n", model->source[0] ? model->source : "?");
    if (model->name[0])
        fprintf(out, "name %s\n", model->name);
    fprintf(out, "sockets %d\nnuma %d\ngpus %d\n", model->num_sockets, model->num_numa,
            model->num_gpus);
    for (int g = 0; g < model->num_gpus; g++) {
        const nbr_gpu_info_t *gpu = &model->gpus[g];
        fprintf(out, "gpu %d pci=%s numa=%d package=%d%s\n", g,
                gpu->pci_bus_id[0] ? gpu->pci_bus_id : "-", gpu->numa_node, gpu->package,
                gpu->leader ? " leader" : "");
    }
    if (model->num_gpus > 0)
        for (int k = 0; k < NUM_MATRICES; k++)
            write_matrix(model, out, k);
    return ferror(out) ? NBR_ERR_IO : NBR_SUCCESS;
}

/* ------------------------------------------------------------ printing */

static void print_grid(const nbr_node_model_t *m, FILE *out, const char *title, int matrix)
{
    int n = m->num_gpus;
    fprintf(out, "\n%s\n%8s", title, "");
    for (int b = 0; b < n; b++) {
        char label[16];
        snprintf(label, sizeof label, "GPU%d", b);
        fprintf(out, " %8s", label);
    }
    fputc('\n', out);
    for (int a = 0; a < n; a++) {
        fprintf(out, "GPU%-3d%s ", a, m->gpus[a].leader ? "*" : " ");
        for (int b = 0; b < n; b++) {
            int cell = a * n + b;
            switch (matrix) {
            case MATRIX_HOPS: fprintf(out, " %8d", m->hops[cell]); break;
            case MATRIX_LINKS: fprintf(out, " %8d", m->links[cell]); break;
            case MATRIX_WEIGHT: fprintf(out, " %8d", m->weight[cell]); break;
            case MATRIX_BANDWIDTH: fprintf(out, " %8.0f", m->bandwidth[cell]); break;
            default: fprintf(out, " %8s", a == b ? "0" : nbr_link_type_name(m->link_type[cell]));
            }
        }
        fputc('\n', out);
    }
}

void nbr_model_print(const nbr_node_model_t *model, FILE *out)
{
    fprintf(out, "node model '%s' from %s: %d GPUs, %d CPU sockets, %d NUMA domains\n",
            model->name[0] ? model->name : "-", model->source[0] ? model->source : "?",
            model->num_gpus, model->num_sockets, model->num_numa);
    if (model->num_gpus == 0) {
        fprintf(out, "no GPUs: every rank is its own device, no peers, no GPU links\n");
        return;
    }
    fprintf(out, "\n%-7s %-14s %5s %8s %5s %8s\n", "GPU", "PCI bus", "NUMA", "package",
            "peer", "role");
    for (int g = 0; g < model->num_gpus; g++) {
        const nbr_gpu_info_t *gpu = &model->gpus[g];
        int peer = nbr_model_peer(model, g);
        char peer_text[16] = "-";
        if (peer >= 0)
            snprintf(peer_text, sizeof peer_text, "GPU%d", peer);
        fprintf(out, "GPU%-4d %-14s %5d %8d %5s %8s\n", g,
                gpu->pci_bus_id[0] ? gpu->pci_bus_id : "-", gpu->numa_node, gpu->package,
                peer_text, gpu->leader ? "leader" : "member");
    }
    print_grid(model, out, "Link type between two GPUs (* = package leader)", MATRIX_TYPE);
    print_grid(model, out, "Hops between two GPUs (T_h)", MATRIX_HOPS);
    print_grid(model, out, "Links between two GPUs (T_l)", MATRIX_LINKS);
    print_grid(model, out, "Weight between two GPUs", MATRIX_WEIGHT);
    print_grid(model, out, "Max bandwidth between two GPUs (GB/s)", MATRIX_BANDWIDTH);
}
