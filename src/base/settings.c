#include "base/settings.h"

#include "base/log.h"

#include <errno.h>
#include <limits.h>
#include <nbrcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const nbr_setting_t nbr_settings[NBR_NUM_SETTINGS] = {
#define NBR_INT_SETTING(id, key, env, def, min, max, doc)                                    \
    [NBR_SETTING_##id] = {key, env, NBR_SETTING_TYPE_INT, def, min, max, NULL, NULL},
#define NBR_BOOL_SETTING(id, key, env, def, doc)                                             \
    [NBR_SETTING_##id] = {key, env, NBR_SETTING_TYPE_BOOL, def, 0, 1, NULL, NULL},
#define NBR_STRING_SETTING(id, key, env, def, what, doc)                                     \
    [NBR_SETTING_##id] = {key, env, NBR_SETTING_TYPE_STRING, 0, 0, 0, def, NULL},
#define NBR_ENUM_SETTING(id, key, env, def, words, doc)                                      \
    [NBR_SETTING_##id] = {key, env, NBR_SETTING_TYPE_ENUM, 0, 0, 0, def, words},
#include "base/settings_table.def"
};

/* The row, or NULL (logged) when a loader asks for it as the wrong type:
 * a slip in the code, not the user's. */
static const nbr_setting_t *row(nbr_setting_id_t id, nbr_setting_type_t type)
{
    if ((int)id < 0 || id >= NBR_NUM_SETTINGS || nbr_settings[id].type != type) {
        NBR_ERROR("setting %d read as the wrong type", (int)id);
        return NULL;
    }
    return &nbr_settings[id];
}

static int parse_int(const char *what, const char *text, const nbr_setting_t *s, int *value)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end != '\0' || v > INT_MAX) {
        NBR_ERROR("%s: '%s' is not an integer", what, text);
        return NBR_ERR_INFO;
    }
    if (v < s->min) {
        NBR_ERROR("%s: %ld; at least %d", what, v, s->min);
        return NBR_ERR_INFO;
    }
    if (v > s->max) {
        NBR_ERROR("%s: %ld; at most %d", what, v, s->max);
        return NBR_ERR_INFO;
    }
    *value = (int)v;
    return NBR_SUCCESS;
}

static int parse_bool(const char *what, const char *text, const nbr_setting_t *s, int *value)
{
    static const char *const on[] = {"1", "true", "yes", "on"};
    static const char *const off[] = {"0", "false", "no", "off"};
    (void)s;
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
        if (strcmp(text, on[i]) == 0 || strcmp(text, off[i]) == 0) {
            *value = strcmp(text, on[i]) == 0;
            return NBR_SUCCESS;
        }
    }
    NBR_ERROR("%s: '%s' is not one of 1/true/yes/on or 0/false/no/off", what, text);
    return NBR_ERR_INFO;
}

static int parse_enum(const char *what, const char *text, const nbr_setting_t *s, int *value)
{
    size_t n = strlen(text);
    int index = 0;
    for (const char *w = s->words; *w; index++) {
        size_t len = strcspn(w, "|");
        if (len == n && strncmp(w, text, n) == 0) {
            *value = index;
            return NBR_SUCCESS;
        }
        w += len + (w[len] == '|');
    }
    NBR_ERROR("%s: '%s' is not one of %s", what, text, s->words);
    return NBR_ERR_INFO;
}

/* Looks up key in info; *found = 0 when info is null or the row has no key. */
static int info_get(MPI_Info info, const char *key, char *value, int size, int *found)
{
    *found = 0;
    if (info == MPI_INFO_NULL || !key)
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

typedef int parse_fn(const char *what, const char *text, const nbr_setting_t *s, int *value);

/* Info, then the environment, each parsed into *value. */
static int load_number(MPI_Info info, const nbr_setting_t *s, parse_fn *parse, int *value)
{
    char text[64];
    int found = 0, rc = info_get(info, s->key, text, sizeof text, &found);
    if (rc == NBR_SUCCESS && found)
        rc = parse(s->key, text, s, value);
    const char *from_env = getenv(s->env);
    if (rc == NBR_SUCCESS && from_env && *from_env)
        rc = parse(s->env, from_env, s, value);
    return rc;
}

int nbr_setting_int_over(MPI_Info info, nbr_setting_id_t id, int *value)
{
    const nbr_setting_t *s = row(id, NBR_SETTING_TYPE_INT);
    return s ? load_number(info, s, parse_int, value) : NBR_ERR_INTERNAL;
}

int nbr_setting_int(MPI_Info info, nbr_setting_id_t id, int *value)
{
    const nbr_setting_t *s = row(id, NBR_SETTING_TYPE_INT);
    if (!s)
        return NBR_ERR_INTERNAL;
    *value = s->def;
    return load_number(info, s, parse_int, value);
}

int nbr_setting_bool(MPI_Info info, nbr_setting_id_t id, int *value)
{
    const nbr_setting_t *s = row(id, NBR_SETTING_TYPE_BOOL);
    if (!s)
        return NBR_ERR_INTERNAL;
    *value = s->def;
    return load_number(info, s, parse_bool, value);
}

int nbr_setting_enum(MPI_Info info, nbr_setting_id_t id, int *value)
{
    const nbr_setting_t *s = row(id, NBR_SETTING_TYPE_ENUM);
    if (!s)
        return NBR_ERR_INTERNAL;
    int rc = parse_enum(s->env, s->text, s, value);
    return rc == NBR_SUCCESS ? load_number(info, s, parse_enum, value) : NBR_ERR_INTERNAL;
}

int nbr_setting_string_over(MPI_Info info, nbr_setting_id_t id, char *value, int size)
{
    const nbr_setting_t *s = row(id, NBR_SETTING_TYPE_STRING);
    if (!s)
        return NBR_ERR_INTERNAL;
    int found = 0, rc = info_get(info, s->key, value, size, &found);
    if (rc != NBR_SUCCESS)
        return rc;
    const char *from_env = getenv(s->env);
    if (from_env && *from_env) {
        if ((int)strlen(from_env) >= size) {
            NBR_ERROR("%s: value too long", s->env);
            return NBR_ERR_INFO;
        }
        snprintf(value, (size_t)size, "%s", from_env);
    }
    return NBR_SUCCESS;
}

int nbr_setting_string(MPI_Info info, nbr_setting_id_t id, char *value, int size)
{
    const nbr_setting_t *s = row(id, NBR_SETTING_TYPE_STRING);
    if (!s || size < 1 || (int)strlen(s->text) >= size)
        return NBR_ERR_INTERNAL;
    snprintf(value, (size_t)size, "%s", s->text);
    return nbr_setting_string_over(info, id, value, size);
}

const char *nbr_setting_env_text(nbr_setting_id_t id)
{
    return (int)id >= 0 && id < NBR_NUM_SETTINGS ? getenv(nbr_settings[id].env) : NULL;
}

void nbr_setting_word(nbr_setting_id_t id, int index, char *word, int size)
{
    const char *w = (int)id >= 0 && id < NBR_NUM_SETTINGS ? nbr_settings[id].words : NULL;
    size_t len = 0;
    for (int i = 0; w && *w; i++) {
        len = strcspn(w, "|");
        if (i == index)
            break;
        w += len + (w[len] == '|');
        len = 0;
    }
    snprintf(word, (size_t)size, "%.*s", w ? (int)len : 0, w ? w : "");
}

void nbr_setting_name(nbr_setting_id_t id, char *name, int size)
{
    if ((int)id < 0 || id >= NBR_NUM_SETTINGS)
        snprintf(name, (size_t)size, "?");
    else if (nbr_settings[id].key)
        snprintf(name, (size_t)size, "%s / %s", nbr_settings[id].key, nbr_settings[id].env);
    else
        snprintf(name, (size_t)size, "%s", nbr_settings[id].env);
}
