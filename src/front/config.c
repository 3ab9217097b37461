#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include "front/config.h"

#include "base/log.h"
#include "alg/select.h"
#include "base/settings.h"

#include <nbrcoll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* nbr_algorithm / NBR_ALGORITHM, resolved to its row (NULL: auto) here and
 * only here. */
static int load_algorithm(MPI_Info info, const nbr_algorithm_t **algorithm)
{
    char name[NBR_NAME_MAX];
    snprintf(name, sizeof name, "%s", *algorithm ? (*algorithm)->name : NBR_AUTO_NAME);
    int rc = nbr_setting_string(info, "nbr_algorithm", "NBR_ALGORITHM", name, sizeof name);
    return rc == NBR_SUCCESS ? nbr_algorithm_lookup("nbr_algorithm", name, algorithm) : rc;
}

static int load_memory(MPI_Info info, nbr_memory_mode_t *mode)
{
    static const char *const names[] = {[NBR_MEMORY_AUTO] = "auto", [NBR_MEMORY_HOST] = "host",
                                        [NBR_MEMORY_DEVICE] = "device"};
    char memory[16] = "auto";
    int rc = nbr_setting_string(info, "nbr_memory", "NBR_MEMORY", memory, sizeof memory);
    if (rc != NBR_SUCCESS)
        return rc;
    for (int m = 0; m < (int)(sizeof names / sizeof names[0]); m++)
        if (strcmp(memory, names[m]) == 0) {
            *mode = (nbr_memory_mode_t)m;
            return NBR_SUCCESS;
        }
    NBR_ERROR("nbr_memory: '%s' is not host, device or auto", memory);
    return NBR_ERR_INFO;
}

/* nbr_machine / NBR_MACHINE: a machine file, or the built-in default. A
 * file that cannot be read is an error, never quietly the default: a typo
 * must not change which algorithm runs. */
static int load_machine(MPI_Info info, nbr_machine_t *machine)
{
    char path[NBR_PATH_MAX] = "", why[NBR_PATH_MAX + 256];
    int rc = nbr_setting_string(info, "nbr_machine", "NBR_MACHINE", path, sizeof path);
    nbr_machine_default(machine);
    if (rc != NBR_SUCCESS || !path[0])
        return rc;
    rc = nbr_machine_load(path, machine, why, sizeof why);
    if (rc != NBR_SUCCESS) {
        NBR_ERROR("nbr_machine: %s", why);
        return NBR_ERR_INFO;
    }
    return NBR_SUCCESS;
}

int nbr_config_load(MPI_Info info, nbr_config_t *config)
{
    int rc = NBR_SUCCESS;
    memset(config, 0, sizeof(*config));
    config->algorithm = NULL; /* auto */
    NBR_CHECK(load_algorithm(info, &config->algorithm));
    NBR_CHECK(nbr_algorithm_params_load(info, &config->params));
    NBR_CHECK(load_machine(info, &config->machine));
    config->auto_whole_graph_ranks = NBR_AUTO_WHOLE_GRAPH_RANKS_DEFAULT;
    NBR_CHECK(nbr_setting_int(info, "nbr_auto_whole_graph_ranks", "NBR_AUTO_WHOLE_GRAPH_RANKS",
                              0, &config->auto_whole_graph_ranks));
    config->expected_starts = NBR_EXPECTED_STARTS_DEFAULT;
    NBR_CHECK(nbr_setting_int(info, "nbr_expected_starts", "NBR_EXPECTED_STARTS", 1,
                              &config->expected_starts));
    config->auto_trials = NBR_AUTO_TRIALS_DEFAULT;
    NBR_CHECK(nbr_setting_int(info, "nbr_auto_trials", "NBR_AUTO_TRIALS", 0,
                              &config->auto_trials));
    if (config->auto_trials > NBR_AUTO_TRIALS_MAX) {
        NBR_ERROR("nbr_auto_trials: %d is more than %d", config->auto_trials,
                  NBR_AUTO_TRIALS_MAX);
        rc = NBR_ERR_INFO;
        goto out;
    }
    NBR_CHECK(nbr_setting_int(info, "nbr_ranks_per_node", "NBR_RANKS_PER_NODE", 0,
                              &config->ranks_per_node));
    NBR_CHECK(nbr_setting_int(info, "nbr_ranks_per_socket", "NBR_RANKS_PER_SOCKET", 0,
                              &config->ranks_per_socket));
    NBR_CHECK(nbr_setting_string(info, "nbr_dump_plan", "NBR_DUMP_PLAN", config->dump_dir,
                                 sizeof config->dump_dir));
    NBR_CHECK(nbr_setting_string(info, "nbr_topo_file", "NBR_TOPO_FILE", config->topo_file,
                                 sizeof config->topo_file));
    NBR_CHECK(nbr_setting_string(info, "nbr_topo_sysfs_root", "NBR_TOPO_SYSFS_ROOT",
                                 config->sysfs_root, sizeof config->sysfs_root));
    NBR_CHECK(load_memory(info, &config->exec.memory));
    config->exec.staging_chunk = 1 << 20; /* large enough for full link speed, small enough to overlap */
    NBR_CHECK(nbr_setting_int(info, "nbr_staging_chunk", "NBR_STAGING_CHUNK", 4096,
                              &config->exec.staging_chunk));
    config->exec.gpu_aware_mpi = -1;
    NBR_CHECK(nbr_setting_int(MPI_INFO_NULL, NULL, "NBR_GPU_AWARE_MPI", 0,
                              &config->exec.gpu_aware_mpi));
    if (config->exec.gpu_aware_mpi > 1) {
        NBR_ERROR("NBR_GPU_AWARE_MPI: %d is not 0 or 1", config->exec.gpu_aware_mpi);
        rc = NBR_ERR_INFO;
        goto out;
    }
    config->check_graph = 1;
    NBR_CHECK(nbr_setting_bool(info, "nbr_check_graph", "NBR_CHECK_GRAPH", &config->check_graph));
    NBR_CHECK(nbr_setting_bool(info, "nbr_agree_errors", "NBR_AGREE_ERRORS", &config->agree_errors));
    config->forced_gpu = -1;
    NBR_CHECK(nbr_setting_int(MPI_INFO_NULL, NULL, "NBR_GPU", 0, &config->forced_gpu));
out:
    if (rc != NBR_SUCCESS)
        nbr_config_free(config);
    return rc;
}

int nbr_config_check(MPI_Info info)
{
    nbr_config_t config;
    int rc = nbr_config_load(info, &config);
    if (rc == NBR_SUCCESS)
        nbr_config_free(&config);
    return rc;
}

void nbr_config_free(nbr_config_t *config)
{
    nbr_algorithm_params_free(&config->params);
}

int nbr_config_request_algorithm(MPI_Info info, const nbr_algorithm_t **algorithm)
{
    return load_algorithm(info, algorithm);
}

/* FNV-1a over bytes: a parameter block or a machine file as one value. */
static uint64_t digest(const void *bytes, size_t n, uint64_t h)
{
    const unsigned char *b = bytes;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static void add_setting(nbr_shared_setting_t *settings, int *n, const char *name,
                        const char *format, ...) __attribute__((format(printf, 4, 5)));

static void add_setting(nbr_shared_setting_t *settings, int *n, const char *name,
                        const char *format, ...)
{
    if (*n >= NBR_SHARED_SETTINGS_MAX)
        return;
    va_list args;
    va_start(args, format);
    snprintf(settings[*n].name, sizeof settings[*n].name, "%s", name);
    vsnprintf(settings[*n].value, sizeof settings[*n].value, format, args);
    va_end(args);
    (*n)++;
}

/* The machine as its file would say it: the same text, the same machine. */
static uint64_t machine_digest(const nbr_machine_t *machine)
{
    char *text = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&text, &length);
    if (!out)
        return 0;
    nbr_machine_write(machine, out);
    fclose(out);
    uint64_t h = digest(text, length, 0xcbf29ce484222325ULL);
    free(text);
    return h;
}

int nbr_config_shared_settings(const nbr_config_t *c, nbr_shared_setting_t *settings)
{
    static const char *const memory[] = {"auto", "host", "device"};
    int n = 0;
    add_setting(settings, &n, "nbr_algorithm / NBR_ALGORITHM", "%s",
                c->algorithm ? c->algorithm->name : NBR_AUTO_NAME);
    add_setting(settings, &n, "nbr_ranks_per_node / NBR_RANKS_PER_NODE", "%d", c->ranks_per_node);
    add_setting(settings, &n, "nbr_ranks_per_socket / NBR_RANKS_PER_SOCKET", "%d",
                c->ranks_per_socket);
    add_setting(settings, &n, "nbr_check_graph / NBR_CHECK_GRAPH", "%d", c->check_graph);
    add_setting(settings, &n, "nbr_agree_errors / NBR_AGREE_ERRORS", "%d", c->agree_errors);
    add_setting(settings, &n, "nbr_auto_trials / NBR_AUTO_TRIALS", "%d", c->auto_trials);
    add_setting(settings, &n, "nbr_auto_whole_graph_ranks / NBR_AUTO_WHOLE_GRAPH_RANKS", "%d",
                c->auto_whole_graph_ranks);
    add_setting(settings, &n, "nbr_expected_starts / NBR_EXPECTED_STARTS", "%d",
                c->expected_starts);
    add_setting(settings, &n, "nbr_memory / NBR_MEMORY", "%s", memory[c->exec.memory]);
    add_setting(settings, &n, "nbr_staging_chunk / NBR_STAGING_CHUNK", "%d",
                c->exec.staging_chunk);
    add_setting(settings, &n, "NBR_GPU_AWARE_MPI", "%d", c->exec.gpu_aware_mpi);
    add_setting(settings, &n, "nbr_machine / NBR_MACHINE", "%s (digest %016llx)",
                c->machine.name[0] ? c->machine.name : "default",
                (unsigned long long)machine_digest(&c->machine));
    for (int i = 0; i < nbr_algorithm_count(); i++) {
        const nbr_algorithm_t *a = nbr_algorithm_at(i);
        const void *params = nbr_algorithm_params_of(&c->params, a);
        char name[64];
        snprintf(name, sizeof name, "%s's own settings (nbr_%s_*)", a->name, a->name);
        if (params) /* calloc'ed and filled field by field: padding is zero */
            add_setting(settings, &n, name, "digest %016llx",
                        (unsigned long long)digest(params, a->params_size,
                                                   0xcbf29ce484222325ULL));
    }
    return n;
}
