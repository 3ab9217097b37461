#include "alg/registry.h"

#include "alg/builder.h"
#include "alg/select.h"
#include "base/log.h"

#include <nbrcoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rows, each defined in its algorithm's file. Adding an algorithm:
 * its file (row included) and one line in each list below. The first is
 * the default. */
extern const nbr_algorithm_t nbr_alg_naive, nbr_alg_mpi, nbr_alg_leader, nbr_alg_halving,
    nbr_alg_combining, nbr_alg_aggregate, nbr_alg_dedup;

static const nbr_algorithm_t *const table[] = {
    &nbr_alg_naive,
    &nbr_alg_mpi,
    &nbr_alg_leader,
    &nbr_alg_halving,
    &nbr_alg_combining,
    &nbr_alg_aggregate,
    &nbr_alg_dedup,
};

enum { NUM_ALGORITHMS = sizeof table / sizeof table[0] };
_Static_assert(NUM_ALGORITHMS <= NBR_MAX_ALGORITHMS, "NBR_MAX_ALGORITHMS is too small");

int nbr_algorithm_count(void)
{
    return NUM_ALGORITHMS;
}

const nbr_algorithm_t *nbr_algorithm_at(int index)
{
    return index >= 0 && index < NUM_ALGORITHMS ? table[index] : NULL;
}

int nbr_algorithm_index(const nbr_algorithm_t *algorithm)
{
    for (int i = 0; i < NUM_ALGORITHMS; i++)
        if (table[i] == algorithm)
            return i;
    return -1;
}

const nbr_algorithm_t *nbr_algorithm_find(const char *name)
{
    for (int i = 0; name && i < NUM_ALGORITHMS; i++)
        if (strcmp(table[i]->name, name) == 0)
            return table[i];
    return NULL;
}

const nbr_algorithm_t *nbr_baseline_algorithm(void)
{
    return table[0];
}

int nbr_algorithm_lookup(const char *what, const char *name, const nbr_algorithm_t **algorithm)
{
    *algorithm = nbr_algorithm_find(name);
    if (*algorithm || (name && strcmp(name, NBR_AUTO_NAME) == 0))
        return NBR_SUCCESS;
    NBR_ERROR("%s: unknown algorithm '%s' (known: %s)", what, name, nbr_algorithm_names());
    return NBR_ERR_ALGORITHM;
}

/* ------------------------------------------------------------ parameters */

int nbr_algorithm_params_load(MPI_Info info, nbr_algorithm_params_t *params)
{
    params->of = calloc(NUM_ALGORITHMS, sizeof(void *));
    if (!params->of)
        return NBR_ERR_NOMEM;
    int rc = NBR_SUCCESS;
    for (int i = 0; i < NUM_ALGORITHMS && rc == NBR_SUCCESS; i++) {
        if (!table[i]->load_params)
            continue;
        params->of[i] = calloc(1, table[i]->params_size);
        rc = params->of[i] ? table[i]->load_params(info, params->of[i]) : NBR_ERR_NOMEM;
    }
    if (rc != NBR_SUCCESS)
        nbr_algorithm_params_free(params);
    return rc;
}

void nbr_algorithm_params_free(nbr_algorithm_params_t *params)
{
    for (int i = 0; params->of && i < NUM_ALGORITHMS; i++)
        free(params->of[i]);
    free(params->of);
    params->of = NULL;
}

const void *nbr_algorithm_params_of(const nbr_algorithm_params_t *params,
                                    const nbr_algorithm_t *algorithm)
{
    int i = nbr_algorithm_index(algorithm);
    return params->of && i >= 0 ? params->of[i] : NULL;
}

/* ------------------------------------------------------------ patterns */

/* A whole-job pattern builder run for one rank: the others' patterns are
 * never filled (want[] marks this rank alone); its own is moved into an
 * allocation of its own. */
static int pattern_of_rank(const nbr_algorithm_t *algorithm, const nbr_plan_input_t *input,
                           void **pattern)
{
    if (!input->graph_out_offsets || !input->graph_out_targets)
        return NBR_ERR_INTERNAL; /* set-up gathers the graph for these algorithms */
    size_t size = algorithm->pattern_size;
    char *want = calloc((size_t)input->nranks + 1, 1);
    char *all = calloc((size_t)input->nranks + 1, size);
    int rc = want && all ? NBR_SUCCESS : NBR_ERR_NOMEM;
    if (rc == NBR_SUCCESS) {
        want[input->rank] = 1;
        rc = algorithm->whole_job_build(input, want, all);
    }
    if (rc == NBR_SUCCESS) {
        *pattern = malloc(size);
        if (*pattern) {
            memcpy(*pattern, all + (size_t)input->rank * size, size);
        } else {
            algorithm->free_in_place(all + (size_t)input->rank * size);
            rc = NBR_ERR_NOMEM;
        }
    }
    free(want);
    free(all);
    return rc;
}

int nbr_algorithm_build_pattern(const nbr_algorithm_t *algorithm, const nbr_plan_input_t *input,
                                void **pattern)
{
    *pattern = NULL;
    if (algorithm->whole_job_build)
        return pattern_of_rank(algorithm, input, pattern);
    return algorithm->build_pattern ? algorithm->build_pattern(input, pattern) : NBR_SUCCESS;
}

void nbr_algorithm_free_pattern(const nbr_algorithm_t *algorithm, void *pattern)
{
    if (!pattern)
        return;
    if (algorithm->whole_job_build) {
        algorithm->free_in_place(pattern);
        free(pattern);
    } else if (algorithm->free_pattern) {
        algorithm->free_pattern(pattern);
    }
}

/* ------------------------------------------------------------ plans */

static int plans_itself(const nbr_algorithm_t *algorithm, nbr_collective_t coll)
{
    return (algorithm->collectives & NBR_COLL_BIT(coll)) != 0;
}

/* A sealed plan: the data plan (offset_of NULL) or the size round's. The
 * algorithm's builders always see a pattern: the input's, else one made
 * for this plan alone (another algorithm's communicator, a test). */
static int build_sealed(const nbr_algorithm_t *algorithm, const nbr_plan_input_t *input,
                        nbr_plan_t *plan, size_t *offset_of)
{
    nbr_plan_init(plan, input->rank, input->nranks, input->layout->coll, algorithm->name);
    int naive = !offset_of && !plans_itself(algorithm, input->layout->coll);
    void *own = NULL;
    nbr_plan_input_t with = *input;
    int rc = NBR_SUCCESS;
    if (offset_of && !algorithm->size_plan)
        rc = NBR_ERR_INTERNAL;
    if (rc == NBR_SUCCESS && !naive && !with.pattern) {
        rc = nbr_algorithm_build_pattern(algorithm, input, &own);
        with.pattern = own;
    }
    if (rc == NBR_SUCCESS)
        rc = naive       ? nbr_build_naive(input, plan)
             : offset_of ? algorithm->size_plan(&with, plan, offset_of)
                         : algorithm->build(&with, plan);
    nbr_algorithm_free_pattern(algorithm, own);
    if (rc == NBR_SUCCESS) {
        const nbr_locality_t *loc = input->locality;
        rc = nbr_plan_seal(plan, loc ? loc->node_of : NULL, loc ? loc->socket_of : NULL);
    }
    if (rc != NBR_SUCCESS)
        nbr_plan_free(plan);
    return rc;
}

int nbr_build_plan(const nbr_algorithm_t *algorithm, const nbr_plan_input_t *input,
                   nbr_plan_t *plan)
{
    return build_sealed(algorithm, input, plan, NULL);
}

int nbr_build_size_plan(const nbr_algorithm_t *algorithm, const nbr_plan_input_t *input,
                        nbr_plan_t *plan, size_t *offset_of)
{
    return build_sealed(algorithm, input, plan, offset_of);
}

double nbr_algorithm_cost(const nbr_algorithm_t *algorithm, const nbr_cost_query_t *query)
{
    if (!plans_itself(algorithm, query->input->layout->coll))
        algorithm = &nbr_alg_naive;
    return algorithm->cost ? algorithm->cost(query) : NBR_COST_UNKNOWN;
}

const char *nbr_algorithm_names(void)
{
    /* Built from the table once; the table is constant. */
    static char names[256];
    if (names[0] == '\0') {
        snprintf(names, sizeof names, "%s", NBR_AUTO_NAME);
        for (int i = 0; i < NUM_ALGORITHMS; i++) {
            strncat(names, ",", sizeof names - strlen(names) - 1);
            strncat(names, table[i]->name, sizeof names - strlen(names) - 1);
        }
    }
    return names;
}

const char *nbr_algorithm_description(const char *name)
{
    if (name && strcmp(name, NBR_AUTO_NAME) == 0)
        return "the default: for each call signature every candidate's plan is priced on the "
               "machine model (nbr_machine) and the cheapest is taken, MPI's own collective "
               "unless another wins by 10 %; the next blocking calls then time it against its "
               "rivals and keep the fastest (nbr_auto_trials)";
    const nbr_algorithm_t *algorithm = nbr_algorithm_find(name);
    return algorithm ? algorithm->description : NULL;
}
