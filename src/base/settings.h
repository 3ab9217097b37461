/* Reading one setting: an MPI_Info key, overridden by an environment
 * variable of the same meaning (nbrcoll.h lists them). The front end's
 * configuration and every algorithm's own parameters read theirs this way.
 * Errors are logged with the key and the text, and returned as
 * NBR_ERR_INFO. */
#ifndef NBR_SETTINGS_H
#define NBR_SETTINGS_H

#include <mpi.h>

/* *value keeps its default when neither info (may be MPI_INFO_NULL) nor
 * the environment names the setting; otherwise it must be an integer in
 * [min, INT_MAX]. */
int nbr_setting_int(MPI_Info info, const char *key, const char *env, int min, int *value);

/* The same for a string of fewer than size bytes. */
int nbr_setting_string(MPI_Info info, const char *key, const char *env, char *value, int size);

/* The same for a switch: 1/true/yes/on or 0/false/no/off; *value is 0 or 1. */
int nbr_setting_bool(MPI_Info info, const char *key, const char *env, int *value);

#endif
