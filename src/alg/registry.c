#include "alg/registry.h"

#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

static const nbr_algorithm_t algorithms[NBR_NUM_ALGORITHMS] = {
    {NBR_ALG_NAIVE, "naive",
     "one isend/irecv per edge, as MPI libraries do: the baseline",
     nbr_build_naive, 0, 0, NULL, NULL, NULL},
    {NBR_ALG_LEADER, "leader",
     "topology- and load-aware allgather(v): blocks cross to a node once, "
     "scattered over its leader GPUs, then redistributed (large messages)",
     nbr_build_leader, 1, 0, NULL, nbr_build_leader_pattern, nbr_free_leader_pattern},
    {NBR_ALG_HALVING, "halving",
     "distance halving allgather: ranks halve the job recursively, each handing "
     "the other half's traffic to one agent there, then deliver inside the socket "
     "(small and medium messages, CPU clusters)",
     nbr_build_halving, 0, 1, nbr_halving_size_plan, nbr_build_halving_pattern,
     nbr_free_halving_pattern},
    {NBR_ALG_COMBINING, "combining",
     "common-neighbor message combining allgather: friends (ranks sharing at least "
     "nbr_combining_theta out-neighbors) swap blocks and split their common neighbors, "
     "each sending both blocks in one message to its half",
     nbr_build_combining, 0, 1, NULL, nbr_build_combining_pattern,
     nbr_free_combining_pattern},
};

const nbr_algorithm_t *nbr_algorithm_find(const char *name)
{
    for (int i = 0; name && i < NBR_NUM_ALGORITHMS; i++)
        if (strcmp(algorithms[i].name, name) == 0)
            return &algorithms[i];
    return NULL;
}

const nbr_algorithm_t *nbr_default_algorithm(void)
{
    return &algorithms[NBR_ALG_NAIVE];
}

int nbr_build_plan(const nbr_algorithm_t *algorithm,
                   const nbr_plan_input_t *input, nbr_plan_t *plan)
{
    nbr_plan_init(plan, input->rank, input->nranks, input->layout->coll,
                  algorithm->name);
    int rc = algorithm->build(input, plan);
    if (rc == NBR_SUCCESS) {
        const nbr_locality_t *loc = input->locality;
        rc = nbr_plan_seal(plan, loc ? loc->node_of : NULL, loc ? loc->socket_of : NULL);
    }
    if (rc != NBR_SUCCESS)
        nbr_plan_free(plan);
    return rc;
}

int nbr_pattern_of_rank(const nbr_plan_input_t *input, size_t pattern_size,
                        nbr_whole_job_build_fn build, void (*free_in_place)(void *),
                        void **pattern)
{
    *pattern = NULL;
    if (!input->graph_out_offsets || !input->graph_out_targets)
        return NBR_ERR_INTERNAL; /* set-up gathers the graph for these algorithms */
    char *want = calloc((size_t)input->nranks + 1, 1);
    char *all = calloc((size_t)input->nranks + 1, pattern_size);
    int rc = want && all ? NBR_SUCCESS : NBR_ERR_NOMEM;
    if (rc == NBR_SUCCESS) {
        want[input->rank] = 1;
        rc = build(input, want, all);
    }
    if (rc == NBR_SUCCESS) {
        *pattern = malloc(pattern_size);
        if (*pattern) {
            memcpy(*pattern, all + (size_t)input->rank * pattern_size, pattern_size);
        } else {
            free_in_place(all + (size_t)input->rank * pattern_size);
            rc = NBR_ERR_NOMEM;
        }
    }
    free(want);
    free(all);
    return rc;
}

const char *nbr_algorithm_names(void)
{
    /* Built from the table once; the table is constant. */
    static char names[256];
    if (names[0] == '\0') {
        for (int i = 0; i < NBR_NUM_ALGORITHMS; i++) {
            if (i)
                strncat(names, ",", sizeof names - strlen(names) - 1);
            strncat(names, algorithms[i].name, sizeof names - strlen(names) - 1);
        }
    }
    return names;
}

const char *nbr_algorithm_description(const char *name)
{
    const nbr_algorithm_t *algorithm = nbr_algorithm_find(name);
    return algorithm ? algorithm->description : NULL;
}
