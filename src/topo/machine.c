#include "topo/machine.h"

#include "topo/text.h"

#include <math.h>
#include <nbrcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the longest line: cores with all its options */
#define MACHINE_MAX_WORDS 11

static const char *const path_names[NBR_NUM_PATHS] = {"copy", "device", "socket",
                                                      "node", "gpu",    "network"};

const char *nbr_path_name(nbr_path_t path)
{
    return path >= 0 && path < NBR_NUM_PATHS ? path_names[path] : "?";
}

/* alpha_us=A gbytes_per_s=B [overhead_us=O], in any order; bandwidth
 * required; alpha and overhead only where `cost` is a path's, burst_bytes
 * and burst_gbytes_per_s only where `nics` is given (the nics line, into
 * its machine), cached_bytes and cached_gbytes_per_s only where `cached`
 * is set (path copy). */
static int parse_cost(nbr_text_parser_t *p, char **words, int count, nbr_path_cost_t *cost,
                      double *bandwidth, nbr_machine_t *nics, int cached)
{
    int have_alpha = 0, have_bandwidth = 0, need_alpha = cost != NULL, rc = NBR_SUCCESS;
    int have_cached_bytes = 0, have_cached_rate = 0;
    for (int w = 0; w < count && rc == NBR_SUCCESS; w++) {
        const char *value;
        if (nics && (value = nbr_text_keyed(words[w], "burst_bytes"))) {
            int bytes = 0;
            rc = nbr_text_int(p, value, 0, 1 << 30, &bytes);
            nics->nic_burst = bytes;
        } else if (nics && (value = nbr_text_keyed(words[w], "burst_gbytes_per_s"))) {
            rc = nbr_text_double(p, value, &nics->nic_burst_bandwidth);
            nics->nic_burst_bandwidth *= 1e9;
            if (rc == NBR_SUCCESS && !(nics->nic_burst_bandwidth > 0))
                rc = nbr_text_error(p, "burst_gbytes_per_s must be above 0");
        } else if (cached && (value = nbr_text_keyed(words[w], "cached_bytes"))) {
            int bytes = 0;
            rc = nbr_text_int(p, value, 1, 1 << 30, &bytes);
            cost->cached_bytes = (size_t)bytes;
            have_cached_bytes = 1;
        } else if (cached && (value = nbr_text_keyed(words[w], "cached_gbytes_per_s"))) {
            rc = nbr_text_double(p, value, &cost->cached_bandwidth);
            cost->cached_bandwidth *= 1e9;
            have_cached_rate = 1;
            if (rc == NBR_SUCCESS && !(cost->cached_bandwidth > 0))
                rc = nbr_text_error(p, "cached_gbytes_per_s must be above 0");
        } else if (cost && (value = nbr_text_keyed(words[w], "alpha_us"))) {
            rc = nbr_text_double(p, value, &cost->alpha);
            cost->alpha *= 1e-6;
            have_alpha = 1;
        } else if (cost && (value = nbr_text_keyed(words[w], "overhead_us"))) {
            rc = nbr_text_double(p, value, &cost->overhead);
            cost->overhead *= 1e-6;
            if (rc == NBR_SUCCESS && !(cost->overhead > 0))
                rc = nbr_text_error(p, "overhead_us must be above 0");
        } else if ((value = nbr_text_keyed(words[w], "gbytes_per_s"))) {
            rc = nbr_text_double(p, value, bandwidth);
            *bandwidth *= 1e9;
            have_bandwidth = 1;
        } else {
            rc = nbr_text_error(p, "unknown attribute '%s'", words[w]);
        }
    }
    if (rc == NBR_SUCCESS && need_alpha && !have_alpha)
        rc = nbr_text_error(p, "alpha_us= missing");
    if (rc == NBR_SUCCESS && !have_bandwidth)
        rc = nbr_text_error(p, "gbytes_per_s= missing");
    if (rc == NBR_SUCCESS && !(*bandwidth > 0))
        rc = nbr_text_error(p, "gbytes_per_s must be above 0");
    if (rc == NBR_SUCCESS && cost && cost->overhead > cost->alpha)
        rc = nbr_text_error(p, "overhead_us must not exceed alpha_us");
    if (rc == NBR_SUCCESS && have_cached_bytes != have_cached_rate)
        rc = nbr_text_error(p, "cached_bytes= and cached_gbytes_per_s= go together");
    return rc;
}

static int parse_path(nbr_text_parser_t *p, nbr_machine_t *m, char **words, int count,
                      int *seen)
{
    for (int k = 0; k < NBR_NUM_PATHS; k++) {
        if (strcmp(words[1], path_names[k]) != 0)
            continue;
        if (seen[k])
            return nbr_text_error(p, "path %s given twice", path_names[k]);
        seen[k] = 1;
        return parse_cost(p, words + 2, count - 2, &m->path[k], &m->path[k].bandwidth, NULL,
                          k == NBR_PATH_COPY);
    }
    return nbr_text_error(p, "unknown path '%s' (copy device socket node gpu network)", words[1]);
}

/* A cores line's rate: GB/s in the text (key=value), bytes per second in
 * *rate, above 0. */
static int parse_core_rate(nbr_text_parser_t *p, const char *key, const char *value,
                           double *rate)
{
    int rc = nbr_text_double(p, value, rate);
    *rate *= 1e9;
    if (rc == NBR_SUCCESS && !(*rate > 0))
        rc = nbr_text_error(p, "%s must be above 0", key);
    return rc;
}

/* A cores line's byte count, 0 to 1 GiB. */
static int parse_core_bytes(nbr_text_parser_t *p, const char *value, size_t *bytes)
{
    int count = 0, rc = nbr_text_int(p, value, 0, 1 << 30, &count);
    *bytes = (size_t)count;
    return rc;
}

/* cores N [per=node|job] [network_gbytes_per_s=X] [eager_bytes=E]
 * [pair_gbytes_per_s=P [pair_after_bytes=A] [pair_first_gbytes_per_s=F]]
 * [message_us=Y [message_paths=all|network]] [wake_us=W] */
static int parse_cores(nbr_text_parser_t *p, nbr_machine_t *m, char **words, int count)
{
    if (count < 2 || count > MACHINE_MAX_WORDS)
        return nbr_text_error(p, "'cores' takes a count, then optionally per=node or per=job, "
                                 "network_gbytes_per_s=, eager_bytes=, pair_gbytes_per_s=, "
                                 "pair_after_bytes=, pair_first_gbytes_per_s=, message_us=, "
                                 "message_paths= and wake_us=");
    int rc = nbr_text_int(p, words[1], 1, 1 << 20, &m->cores), have_per = 0, have_rate = 0,
        have_eager = 0, have_message = 0, have_pair = 0, have_after = 0, have_first = 0,
        have_paths = 0, have_wake = 0;
    m->core_message_network_only = 0;
    m->cores_per_job = 0;
    for (int w = 2; w < count && rc == NBR_SUCCESS; w++) {
        const char *per = nbr_text_keyed(words[w], "per");
        const char *rate = nbr_text_keyed(words[w], "network_gbytes_per_s");
        const char *eager = nbr_text_keyed(words[w], "eager_bytes");
        const char *pair = nbr_text_keyed(words[w], "pair_gbytes_per_s");
        const char *after = nbr_text_keyed(words[w], "pair_after_bytes");
        const char *first = nbr_text_keyed(words[w], "pair_first_gbytes_per_s");
        const char *message = nbr_text_keyed(words[w], "message_us");
        const char *paths = nbr_text_keyed(words[w], "message_paths");
        const char *wake = nbr_text_keyed(words[w], "wake_us");
        if (per && !have_per++ && (!strcmp(per, "node") || !strcmp(per, "job"))) {
            m->cores_per_job = strcmp(per, "job") == 0;
        } else if (rate && !have_rate++) {
            rc = parse_core_rate(p, "network_gbytes_per_s", rate, &m->core_network_bandwidth);
        } else if (eager && !have_eager++) {
            rc = parse_core_bytes(p, eager, &m->core_network_eager);
        } else if (pair && !have_pair++) {
            rc = parse_core_rate(p, "pair_gbytes_per_s", pair, &m->core_pair_bandwidth);
        } else if (first && !have_first++) {
            rc = parse_core_rate(p, "pair_first_gbytes_per_s", first,
                                 &m->core_pair_first_bandwidth);
        } else if (after && !have_after++) {
            rc = parse_core_bytes(p, after, &m->core_pair_after);
        } else if (message && !have_message++) {
            rc = nbr_text_double(p, message, &m->core_message_seconds);
            m->core_message_seconds *= 1e-6;
            if (rc == NBR_SUCCESS &&
                !(m->core_message_seconds > 0 && isfinite(m->core_message_seconds)))
                rc = nbr_text_error(p, "message_us must be finite and above 0");
        } else if (paths && !have_paths++ && (!strcmp(paths, "all") || !strcmp(paths, "network"))) {
            m->core_message_network_only = strcmp(paths, "network") == 0;
        } else if (wake && !have_wake++) {
            rc = nbr_text_double(p, wake, &m->core_wake_seconds);
            m->core_wake_seconds *= 1e-6;
            if (rc == NBR_SUCCESS &&
                !(m->core_wake_seconds >= 0 && isfinite(m->core_wake_seconds)))
                rc = nbr_text_error(p, "wake_us must be 0 or more");
        } else {
            rc = nbr_text_error(p, "'%s': expected per=node, per=job, network_gbytes_per_s=, "
                                   "eager_bytes=, pair_gbytes_per_s=, pair_after_bytes=, "
                                   "pair_first_gbytes_per_s=, message_us=, "
                                   "message_paths=all|network or wake_us= (once each)",
                                   words[w]);
        }
    }
    if (rc == NBR_SUCCESS && have_paths && !have_message)
        rc = nbr_text_error(p, "message_paths= needs message_us=");
    if (rc == NBR_SUCCESS && have_pair && !have_rate)
        rc = nbr_text_error(p, "pair_gbytes_per_s= needs network_gbytes_per_s=");
    if (rc == NBR_SUCCESS && (have_after || have_first) && !have_pair)
        rc = nbr_text_error(p, "pair_after_bytes= and pair_first_gbytes_per_s= need "
                               "pair_gbytes_per_s=");
    return rc;
}

/* call start_us=S: the per-call start, >= 0 */
static int parse_call(nbr_text_parser_t *p, nbr_machine_t *m, char **words, int count)
{
    const char *value = count == 2 ? nbr_text_keyed(words[1], "start_us") : NULL;
    if (!value)
        return nbr_text_error(p, "'call' takes start_us=");
    int rc = nbr_text_double(p, value, &m->start);
    m->start *= 1e-6;
    if (rc == NBR_SUCCESS && !(m->start >= 0 && isfinite(m->start)))
        rc = nbr_text_error(p, "start_us must be 0 or more");
    return rc;
}

int nbr_machine_parse(const char *text, nbr_machine_t *m, char *message, size_t size)
{
    nbr_text_parser_t p = nbr_text_parser(text, message, size);
    int seen[NBR_NUM_PATHS] = {0}, header = 0, nics = 0, cores = 0, call = 0, rc = NBR_SUCCESS;
    memset(m, 0, sizeof(*m));
    for (char *line; rc == NBR_SUCCESS && (line = nbr_text_next_line(&p));) {
        char *words[MACHINE_MAX_WORDS + 1];
        int count = nbr_text_split(line, words, MACHINE_MAX_WORDS);
        if (count > MACHINE_MAX_WORDS) {
            rc = nbr_text_error(&p, "too many words");
        } else if (!header) {
            header = count == 2 && strcmp(words[0], "nbrcoll-machine") == 0 &&
                     strcmp(words[1], "1") == 0;
            if (!header)
                rc = nbr_text_error(&p, "expected 'nbrcoll-machine 1' first");
        } else if (strcmp(words[0], "name") == 0) {
            if (count != 2 || strlen(words[1]) >= sizeof m->name)
                rc = nbr_text_error(&p, "'name' takes one word of fewer than %zu characters",
                                    sizeof m->name);
            else
                snprintf(m->name, sizeof m->name, "%s", words[1]);
        } else if (strcmp(words[0], "path") == 0) {
            rc = count >= 2 ? parse_path(&p, m, words, count, seen)
                            : nbr_text_error(&p, "'path' needs a name");
        } else if (strcmp(words[0], "nics") == 0) {
            if (nics++)
                rc = nbr_text_error(&p, "'nics' given twice");
            else if (count < 2)
                rc = nbr_text_error(&p, "'nics' needs a count");
            else if ((rc = nbr_text_int(&p, words[1], 1, 1024, &m->nics)) == NBR_SUCCESS)
                rc = parse_cost(&p, words + 2, count - 2, NULL, &m->nic_bandwidth, m, 0);
        } else if (strcmp(words[0], "cores") == 0) {
            rc = cores++ ? nbr_text_error(&p, "'cores' given twice") : parse_cores(&p, m, words, count);
        } else if (strcmp(words[0], "call") == 0) {
            rc = call++ ? nbr_text_error(&p, "'call' given twice") : parse_call(&p, m, words, count);
        } else {
            rc = nbr_text_error(&p, "unknown key '%s'", words[0]);
        }
    }
    p.line++; /* problems found at the end point past the last line */
    if (rc == NBR_SUCCESS && !header)
        rc = nbr_text_error(&p, "empty file: expected 'nbrcoll-machine 1'");
    for (int k = 0; rc == NBR_SUCCESS && k < NBR_NUM_PATHS; k++)
        if (!seen[k])
            rc = nbr_text_error(&p, "missing 'path %s'", path_names[k]);
    if (rc == NBR_SUCCESS && !nics)
        rc = nbr_text_error(&p, "missing 'nics'");
    if (rc == NBR_SUCCESS && !m->name[0])
        snprintf(m->name, sizeof m->name, "unnamed");
    return rc;
}

int nbr_machine_load(const char *path, nbr_machine_t *machine, char *message, size_t size)
{
    char *text = NULL, where[512] = "";
    int rc = nbr_text_read_file(path, &text, message, size);
    if (rc == NBR_SUCCESS && (rc = nbr_machine_parse(text, machine, where, sizeof where)) &&
        message && size)
        snprintf(message, size, "%s: %s", path, where);
    free(text);
    return rc;
}

int nbr_machine_write(const nbr_machine_t *m, FILE *out)
{
    /* %.17g: every double reads back to itself */
    fprintf(out, "nbrcoll-machine 1\nname %s\n", m->name[0] ? m->name : "unnamed");
    for (int k = 0; k < NBR_NUM_PATHS; k++) {
        fprintf(out, "path %-7s alpha_us=%.17g gbytes_per_s=%.17g", path_names[k],
                m->path[k].alpha * 1e6, m->path[k].bandwidth * 1e-9);
        if (m->path[k].overhead > 0)
            fprintf(out, " overhead_us=%.17g", m->path[k].overhead * 1e6);
        if (m->path[k].cached_bandwidth > 0)
            fprintf(out, " cached_bytes=%zu cached_gbytes_per_s=%.17g", m->path[k].cached_bytes,
                    m->path[k].cached_bandwidth * 1e-9);
        fputc('\n', out);
    }
    fprintf(out, "nics %d gbytes_per_s=%.17g", m->nics, m->nic_bandwidth * 1e-9);
    if (m->nic_burst > 0)
        fprintf(out, " burst_bytes=%.0f", m->nic_burst);
    if (m->nic_burst_bandwidth > 0)
        fprintf(out, " burst_gbytes_per_s=%.17g", m->nic_burst_bandwidth * 1e-9);
    fputc('\n', out);
    if (m->cores > 0) {
        fprintf(out, "cores %d per=%s", m->cores, m->cores_per_job ? "job" : "node");
        if (m->core_network_bandwidth > 0)
            fprintf(out, " network_gbytes_per_s=%.17g", m->core_network_bandwidth * 1e-9);
        if (m->core_network_eager > 0)
            fprintf(out, " eager_bytes=%zu", m->core_network_eager);
        if (m->core_pair_bandwidth > 0)
            fprintf(out, " pair_gbytes_per_s=%.17g pair_after_bytes=%zu",
                    m->core_pair_bandwidth * 1e-9, m->core_pair_after);
        if (m->core_pair_bandwidth > 0 && m->core_pair_first_bandwidth > 0)
            fprintf(out, " pair_first_gbytes_per_s=%.17g", m->core_pair_first_bandwidth * 1e-9);
        if (m->core_message_seconds > 0)
            fprintf(out, " message_us=%.17g%s", m->core_message_seconds * 1e6,
                    m->core_message_network_only ? " message_paths=network" : "");
        if (m->core_wake_seconds > 0)
            fprintf(out, " wake_us=%.17g", m->core_wake_seconds * 1e6);
        fputc('\n', out);
    }
    if (m->start > 0)
        fprintf(out, "call start_us=%.17g\n", m->start * 1e6);
    return ferror(out) ? NBR_ERR_IO : NBR_SUCCESS;
}

void nbr_machine_default(nbr_machine_t *m)
{
    const double us = 1e-6, gbs = 1e9;
    *m = (nbr_machine_t){.nics = 1, .nic_bandwidth = 12.5 * gbs};
    snprintf(m->name, sizeof m->name, "generic-100gbit");
    m->path[NBR_PATH_COPY] = (nbr_path_cost_t){.alpha = 0.3 * us, .bandwidth = 10 * gbs};
    m->path[NBR_PATH_DEVICE] = (nbr_path_cost_t){.alpha = 5 * us, .bandwidth = 700 * gbs};
    m->path[NBR_PATH_SOCKET] = (nbr_path_cost_t){.alpha = 0.5 * us, .bandwidth = 10 * gbs};
    m->path[NBR_PATH_NODE] = (nbr_path_cost_t){.alpha = 0.8 * us, .bandwidth = 6 * gbs};
    m->path[NBR_PATH_GPU] = (nbr_path_cost_t){.alpha = 8 * us, .bandwidth = 50 * gbs};
    m->path[NBR_PATH_NETWORK] = (nbr_path_cost_t){.alpha = 2 * us, .bandwidth = 12.5 * gbs};
}
