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
    int rc = nbr_setting_string_over(info, NBR_SETTING_ALGORITHM, name, sizeof name);
    return rc == NBR_SUCCESS ? nbr_algorithm_lookup(nbr_settings[NBR_SETTING_ALGORITHM].key,
                                                    name, algorithm)
                             : rc;
}

/* nbr_memory's words are in the mode's order (settings_table.def). */
_Static_assert(NBR_MEMORY_AUTO == 0 && NBR_MEMORY_HOST == 1 && NBR_MEMORY_DEVICE == 2,
               "nbr_memory's words follow nbr_memory_mode_t");

static int load_memory(MPI_Info info, nbr_memory_mode_t *mode)
{
    int m = 0;
    int rc = nbr_setting_enum(info, NBR_SETTING_MEMORY, &m);
    *mode = (nbr_memory_mode_t)m;
    return rc;
}

/* nbr_machine / NBR_MACHINE: a machine file, or the built-in default. A
 * file that cannot be read is an error, never quietly the default: a typo
 * must not change which algorithm runs. */
static int load_machine(MPI_Info info, nbr_machine_t *machine)
{
    char path[NBR_PATH_MAX] = "", why[NBR_PATH_MAX + 256];
    int rc = nbr_setting_string(info, NBR_SETTING_MACHINE, path, sizeof path);
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
    NBR_CHECK(nbr_setting_int(info, NBR_SETTING_AUTO_WHOLE_GRAPH_RANKS,
                              &config->auto_whole_graph_ranks));
    NBR_CHECK(nbr_setting_int(info, NBR_SETTING_EXPECTED_STARTS, &config->expected_starts));
    NBR_CHECK(nbr_setting_int(info, NBR_SETTING_AUTO_TRIALS, &config->auto_trials));
    NBR_CHECK(nbr_setting_int(info, NBR_SETTING_RANKS_PER_NODE, &config->ranks_per_node));
    NBR_CHECK(nbr_setting_int(info, NBR_SETTING_RANKS_PER_SOCKET, &config->ranks_per_socket));
    NBR_CHECK(nbr_setting_string(info, NBR_SETTING_DUMP_PLAN, config->dump_dir,
                                 sizeof config->dump_dir));
    NBR_CHECK(nbr_setting_string(info, NBR_SETTING_TOPO_FILE, config->topo_file,
                                 sizeof config->topo_file));
    NBR_CHECK(nbr_setting_string(info, NBR_SETTING_TOPO_SYSFS_ROOT, config->sysfs_root,
                                 sizeof config->sysfs_root));
    NBR_CHECK(load_memory(info, &config->exec.memory));
    NBR_CHECK(nbr_setting_int(info, NBR_SETTING_STAGING_CHUNK, &config->exec.staging_chunk));
    NBR_CHECK(nbr_setting_int(info, NBR_SETTING_GPU_AWARE_MPI, &config->exec.gpu_aware_mpi));
    NBR_CHECK(nbr_setting_bool(info, NBR_SETTING_CHECK_GRAPH, &config->check_graph));
    NBR_CHECK(nbr_setting_bool(info, NBR_SETTING_AGREE_ERRORS, &config->agree_errors));
    NBR_CHECK(nbr_setting_int(info, NBR_SETTING_GPU, &config->forced_gpu));
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

static void add_named(nbr_shared_setting_t *settings, int *n, const char *name,
                      const char *format, ...) __attribute__((format(printf, 4, 5)));
static void add_setting(nbr_shared_setting_t *settings, int *n, nbr_setting_id_t id,
                        const char *format, ...) __attribute__((format(printf, 4, 5)));

static void add_value(nbr_shared_setting_t *settings, int *n, const char *name,
                      const char *format, va_list args) __attribute__((format(printf, 4, 0)));

static void add_value(nbr_shared_setting_t *settings, int *n, const char *name,
                      const char *format, va_list args)
{
    if (*n >= NBR_SHARED_SETTINGS_MAX)
        return;
    snprintf(settings[*n].name, sizeof settings[*n].name, "%s", name);
    vsnprintf(settings[*n].value, sizeof settings[*n].value, format, args);
    (*n)++;
}

static void add_named(nbr_shared_setting_t *settings, int *n, const char *name,
                      const char *format, ...)
{
    va_list args;
    va_start(args, format);
    add_value(settings, n, name, format, args);
    va_end(args);
}

/* A row of the table, named as the log names it ("key / ENV"). */
static void add_setting(nbr_shared_setting_t *settings, int *n, nbr_setting_id_t id,
                        const char *format, ...)
{
    char name[sizeof settings[0].name];
    nbr_setting_name(id, name, (int)sizeof name);
    va_list args;
    va_start(args, format);
    add_value(settings, n, name, format, args);
    va_end(args);
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
    int n = 0;
    char memory[16];
    nbr_setting_word(NBR_SETTING_MEMORY, (int)c->exec.memory, memory, sizeof memory);
    add_setting(settings, &n, NBR_SETTING_ALGORITHM, "%s",
                c->algorithm ? c->algorithm->name : NBR_AUTO_NAME);
    add_setting(settings, &n, NBR_SETTING_RANKS_PER_NODE, "%d", c->ranks_per_node);
    add_setting(settings, &n, NBR_SETTING_RANKS_PER_SOCKET, "%d", c->ranks_per_socket);
    add_setting(settings, &n, NBR_SETTING_CHECK_GRAPH, "%d", c->check_graph);
    add_setting(settings, &n, NBR_SETTING_AGREE_ERRORS, "%d", c->agree_errors);
    add_setting(settings, &n, NBR_SETTING_AUTO_TRIALS, "%d", c->auto_trials);
    add_setting(settings, &n, NBR_SETTING_AUTO_WHOLE_GRAPH_RANKS, "%d",
                c->auto_whole_graph_ranks);
    add_setting(settings, &n, NBR_SETTING_EXPECTED_STARTS, "%d", c->expected_starts);
    add_setting(settings, &n, NBR_SETTING_MEMORY, "%s", memory);
    add_setting(settings, &n, NBR_SETTING_STAGING_CHUNK, "%d", c->exec.staging_chunk);
    add_setting(settings, &n, NBR_SETTING_GPU_AWARE_MPI, "%d", c->exec.gpu_aware_mpi);
    add_setting(settings, &n, NBR_SETTING_MACHINE, "%s (digest %016llx)",
                c->machine.name[0] ? c->machine.name : "default",
                (unsigned long long)machine_digest(&c->machine));
    for (int i = 0; i < nbr_algorithm_count(); i++) {
        const nbr_algorithm_t *a = nbr_algorithm_at(i);
        const void *params = nbr_algorithm_params_of(&c->params, a);
        char name[64];
        snprintf(name, sizeof name, "%s's own settings (nbr_%s_*)", a->name, a->name);
        if (params) /* calloc'ed and filled field by field: padding is zero */
            add_named(settings, &n, name, "digest %016llx",
                      (unsigned long long)digest(params, a->params_size,
                                                 0xcbf29ce484222325ULL));
    }
    return n;
}
