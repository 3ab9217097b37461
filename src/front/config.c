#include "front/config.h"

#include "alg/registry.h"
#include "base/log.h"

#include <errno.h>
#include <limits.h>
#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

static int parse_positive(const char *what, const char *text, int *value)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end != '\0' || v < 0 || v > INT_MAX) {
        NBR_ERROR("%s: '%s' is not a non-negative integer", what, text);
        return NBR_ERR_INFO;
    }
    *value = (int)v;
    return NBR_SUCCESS;
}

static int check_algorithm(const char *what, const char *name)
{
    if (nbr_algorithm_find(name))
        return NBR_SUCCESS;
    NBR_ERROR("%s: unknown algorithm '%s' (known: %s)", what, name,
              nbr_algorithm_names());
    return NBR_ERR_ALGORITHM;
}

/* Looks up key in info; *found = 0 when info is null or lacks the key. */
static int info_get(MPI_Info info, const char *key, char *value, int size,
                    int *found)
{
    *found = 0;
    if (info == MPI_INFO_NULL)
        return NBR_SUCCESS;
    int len = 0, rc = NBR_SUCCESS;
    NBR_MPI_CHECK(MPI_Info_get_valuelen(info, key, &len, found));
    if (!*found)
        return NBR_SUCCESS;
    if (len >= size) {
        NBR_ERROR("info key %s: value too long", key);
        return NBR_ERR_INFO;
    }
    NBR_MPI_CHECK(MPI_Info_get(info, key, size - 1, value, found));
out:
    return rc;
}

/* Applies one setting from info, then from the environment. */
static int load_int(MPI_Info info, const char *key, const char *env, int *value)
{
    char text[64];
    int found = 0, rc = info_get(info, key, text, sizeof text, &found);
    if (rc == NBR_SUCCESS && found)
        rc = parse_positive(key, text, value);
    const char *from_env = getenv(env);
    if (rc == NBR_SUCCESS && from_env && *from_env)
        rc = parse_positive(env, from_env, value);
    return rc;
}

static int load_string(MPI_Info info, const char *key, const char *env,
                       char *value, int size)
{
    char text[NBR_PATH_MAX];
    int found = 0, rc = info_get(info, key, text, sizeof text, &found);
    if (rc != NBR_SUCCESS)
        return rc;
    if (found)
        snprintf(value, (size_t)size, "%s", text);
    const char *from_env = getenv(env);
    if (from_env && *from_env) {
        if ((int)strlen(from_env) >= size) {
            NBR_ERROR("%s: value too long", env);
            return NBR_ERR_INFO;
        }
        snprintf(value, (size_t)size, "%s", from_env);
    }
    return NBR_SUCCESS;
}

int nbr_config_load(MPI_Info info, nbr_config_t *config)
{
    int rc = NBR_SUCCESS;
    memset(config, 0, sizeof(*config));
    snprintf(config->algorithm, sizeof config->algorithm, "%s", nbr_default_algorithm()->name);
    NBR_CHECK(load_string(info, "nbr_algorithm", "NBR_ALGORITHM", config->algorithm,
                          sizeof config->algorithm));
    NBR_CHECK(check_algorithm("nbr_algorithm", config->algorithm));
    NBR_CHECK(load_int(info, "nbr_ranks_per_node", "NBR_RANKS_PER_NODE",
                       &config->ranks_per_node));
    NBR_CHECK(load_int(info, "nbr_ranks_per_socket", "NBR_RANKS_PER_SOCKET",
                       &config->ranks_per_socket));
    NBR_CHECK(load_string(info, "nbr_dump_plan", "NBR_DUMP_PLAN", config->dump_dir,
                          sizeof config->dump_dir));
    NBR_CHECK(load_string(info, "nbr_topo_file", "NBR_TOPO_FILE", config->topo_file,
                          sizeof config->topo_file));
    NBR_CHECK(load_string(info, "nbr_topo_sysfs_root", "NBR_TOPO_SYSFS_ROOT",
                          config->sysfs_root, sizeof config->sysfs_root));
    config->leader_min_bytes = 256 * 1024; /* the paper's large-message range */
    NBR_CHECK(load_int(info, "nbr_leader_min_bytes", "NBR_LEADER_MIN_BYTES",
                       &config->leader_min_bytes));
    char memory[16] = "auto";
    NBR_CHECK(load_string(info, "nbr_memory", "NBR_MEMORY", memory, sizeof memory));
    if (strcmp(memory, "auto") == 0) {
        config->exec.memory = NBR_MEMORY_AUTO;
    } else if (strcmp(memory, "host") == 0) {
        config->exec.memory = NBR_MEMORY_HOST;
    } else if (strcmp(memory, "device") == 0) {
        config->exec.memory = NBR_MEMORY_DEVICE;
    } else {
        NBR_ERROR("nbr_memory: '%s' is not host, device or auto", memory);
        rc = NBR_ERR_INFO;
        goto out;
    }
    config->exec.staging_chunk = 1 << 20; /* large enough for full link speed, small enough to overlap */
    NBR_CHECK(load_int(info, "nbr_staging_chunk", "NBR_STAGING_CHUNK", &config->exec.staging_chunk));
    if (config->exec.staging_chunk < 4096) {
        NBR_ERROR("nbr_staging_chunk: %d bytes; at least 4096", config->exec.staging_chunk);
        rc = NBR_ERR_INFO;
        goto out;
    }
    config->combining_theta = 2; /* one shared neighbor saves no message */
    NBR_CHECK(load_int(info, "nbr_combining_theta", "NBR_COMBINING_THETA",
                       &config->combining_theta));
    if (config->combining_theta < 1) {
        NBR_ERROR("nbr_combining_theta: %d; at least 1", config->combining_theta);
        rc = NBR_ERR_INFO;
        goto out;
    }
    config->exec.gpu_aware_mpi = -1;
    const char *aware = getenv("NBR_GPU_AWARE_MPI");
    if (aware && *aware) {
        if (strcmp(aware, "0") && strcmp(aware, "1")) {
            NBR_ERROR("NBR_GPU_AWARE_MPI: '%s' is not 0 or 1", aware);
            rc = NBR_ERR_INFO;
            goto out;
        }
        config->exec.gpu_aware_mpi = aware[0] - '0';
    }
    config->forced_gpu = -1;
    const char *gpu = getenv("NBR_GPU");
    if (gpu && *gpu)
        NBR_CHECK(parse_positive("NBR_GPU", gpu, &config->forced_gpu));
out:
    return rc;
}

int nbr_config_request_algorithm(MPI_Info info, char *algorithm)
{
    int rc = load_string(info, "nbr_algorithm", "NBR_ALGORITHM", algorithm, NBR_NAME_MAX);
    return rc == NBR_SUCCESS ? check_algorithm("nbr_algorithm", algorithm) : rc;
}
