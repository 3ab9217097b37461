/* Reading one setting: an MPI_Info key, overridden by an environment
 * variable of the same meaning. Every setting is a row of
 * base/settings_table.def (key, environment name, type, default, range);
 * the front end's configuration, every algorithm's own parameters and the
 * environment-only switches read theirs through it. Errors are logged
 * with the key or variable and the text, and returned as NBR_ERR_INFO. */
#ifndef NBR_SETTINGS_H
#define NBR_SETTINGS_H

#include <limits.h>
#include <mpi.h>

typedef enum nbr_setting_id {
#define NBR_INT_SETTING(id, key, env, def, min, max, doc) NBR_SETTING_##id,
#define NBR_BOOL_SETTING(id, key, env, def, doc) NBR_SETTING_##id,
#define NBR_STRING_SETTING(id, key, env, def, what, doc) NBR_SETTING_##id,
#define NBR_ENUM_SETTING(id, key, env, def, words, doc) NBR_SETTING_##id,
#include "base/settings_table.def"
    NBR_NUM_SETTINGS
} nbr_setting_id_t;

typedef enum nbr_setting_type {
    NBR_SETTING_TYPE_INT,
    NBR_SETTING_TYPE_BOOL,
    NBR_SETTING_TYPE_STRING,
    NBR_SETTING_TYPE_ENUM
} nbr_setting_type_t;

typedef struct nbr_setting {
    const char *key; /* MPI_Info key; NULL: the environment only */
    const char *env;
    nbr_setting_type_t type;
    int def;          /* int, bool */
    int min, max;     /* int */
    const char *text; /* string, enum: the default */
    const char *words; /* enum: the values, '|'-separated */
} nbr_setting_t;

extern const nbr_setting_t nbr_settings[NBR_NUM_SETTINGS];

/* Int and switch rows' defaults and bounds as constants, for array sizes
 * and the static checks of constants named elsewhere:
 * NBR_SETTING_<ID>_DEFAULT, _MIN, _MAX. */
enum {
#define NBR_INT_SETTING(id, key, env, def, min, max, doc)                                    \
    NBR_SETTING_##id##_DEFAULT = (def), NBR_SETTING_##id##_MIN = (min),                    \
    NBR_SETTING_##id##_MAX = (max),
#define NBR_BOOL_SETTING(id, key, env, def, doc) NBR_SETTING_##id##_DEFAULT = (def),
#include "base/settings_table.def"
    NBR_SETTING_CONSTANTS_END
};

/* *value is the row's default unless info (may be MPI_INFO_NULL) or the
 * environment names the setting; an int must lie in [min, max]. */
int nbr_setting_int(MPI_Info info, nbr_setting_id_t id, int *value);
/* A switch: 1/true/yes/on or 0/false/no/off; *value is 0 or 1. */
int nbr_setting_bool(MPI_Info info, nbr_setting_id_t id, int *value);
/* An enum: *value is the index of its word in the row's words. */
int nbr_setting_enum(MPI_Info info, nbr_setting_id_t id, int *value);
/* A string of fewer than size bytes. */
int nbr_setting_string(MPI_Info info, nbr_setting_id_t id, char *value, int size);

/* The same without the default: *value keeps what it holds unless info or
 * the environment names the setting (a request's over its communicator's). */
int nbr_setting_int_over(MPI_Info info, nbr_setting_id_t id, int *value);
int nbr_setting_string_over(MPI_Info info, nbr_setting_id_t id, char *value, int size);

/* The environment's text for the row (NULL when unset), for the switches
 * read once outside any communicator (NBR_LOG, NBR_DEVICE ...). */
const char *nbr_setting_env_text(nbr_setting_id_t id);

/* Word index of an enum row into word (size bytes); "" when out of range. */
void nbr_setting_word(nbr_setting_id_t id, int index, char *word, int size);

/* "key / ENV", or "ENV" alone, as the log names the setting. */
void nbr_setting_name(nbr_setting_id_t id, char *name, int size);

#endif
