#include "base/settings.h"

#include "base/log.h"

#include <errno.h>
#include <limits.h>
#include <nbrcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_int(const char *what, const char *text, int min, int *value)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end != '\0' || v > INT_MAX) {
        NBR_ERROR("%s: '%s' is not an integer", what, text);
        return NBR_ERR_INFO;
    }
    if (v < min) {
        NBR_ERROR("%s: %ld; at least %d", what, v, min);
        return NBR_ERR_INFO;
    }
    *value = (int)v;
    return NBR_SUCCESS;
}

/* Looks up key in info; *found = 0 when info is null or lacks the key. */
static int info_get(MPI_Info info, const char *key, char *value, int size, int *found)
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

int nbr_setting_int(MPI_Info info, const char *key, const char *env, int min, int *value)
{
    char text[64];
    int found = 0, rc = info_get(info, key, text, sizeof text, &found);
    if (rc == NBR_SUCCESS && found)
        rc = parse_int(key, text, min, value);
    const char *from_env = getenv(env);
    if (rc == NBR_SUCCESS && from_env && *from_env)
        rc = parse_int(env, from_env, min, value);
    return rc;
}

int nbr_setting_string(MPI_Info info, const char *key, const char *env, char *value, int size)
{
    int found = 0, rc = info_get(info, key, value, size, &found);
    if (rc != NBR_SUCCESS)
        return rc;
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

static int parse_bool(const char *what, const char *text, int *value)
{
    static const char *const on[] = {"1", "true", "yes", "on"};
    static const char *const off[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
        if (strcmp(text, on[i]) == 0 || strcmp(text, off[i]) == 0) {
            *value = strcmp(text, on[i]) == 0;
            return NBR_SUCCESS;
        }
    }
    NBR_ERROR("%s: '%s' is not one of 1/true/yes/on or 0/false/no/off", what, text);
    return NBR_ERR_INFO;
}

int nbr_setting_bool(MPI_Info info, const char *key, const char *env, int *value)
{
    char text[16];
    int found = 0, rc = info_get(info, key, text, sizeof text, &found);
    if (rc == NBR_SUCCESS && found)
        rc = parse_bool(key, text, value);
    const char *from_env = getenv(env);
    if (rc == NBR_SUCCESS && from_env && *from_env)
        rc = parse_bool(env, from_env, value);
    return rc;
}
