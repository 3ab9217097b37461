/* One collective call of a whole job, planned in one process: every rank's
 * plan input for a graph held whole, with the set-up facts an algorithm
 * needs and its patterns built the way a communicator would build them.
 * For tools and tests that study many ranks without launching them (the
 * plan bench, the verifier tests, the simulator). Pure C, no MPI. */
#ifndef NBR_JOB_H
#define NBR_JOB_H

#include "alg/registry.h"
#include "base/graph_gen.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nbr_job {
    const nbr_graph_t *graph;
    const nbr_locality_t *locality; /* NULL: one node, one socket */
    const nbr_algorithm_t *algorithm;
    const void *params;             /* the algorithm's */
    nbr_algorithm_params_t defaults; /* when the caller gave none */
    /* NBR_NEEDS_NODE_IN_LISTS: every rank's in-list, a superset of what
     * a rank's node holds (builders read only their node's). */
    const int **in_lists;
    int *in_degrees;
    /* nbr_job_build_patterns: one per rank, NULL until built. */
    const void **patterns;
    void *whole_job_patterns; /* the array a whole-job builder filled */
    void **own_patterns;      /* per-rank builders' */
    /* Value indices of the call (dedup), per rank; NULL: none. Set by the
     * caller after nbr_job_init; nbr_job_input passes them on. */
    const nbr_value_index_t *const *values;
} nbr_job_t;

/* params NULL: the algorithm's defaults (and environment, as in a job). */
int nbr_job_init(nbr_job_t *job, const nbr_graph_t *graph, const nbr_locality_t *locality,
                 const nbr_algorithm_t *algorithm, const void *params);

/* Builds every rank's pattern (nothing for algorithms without one): a
 * whole-job builder once for all ranks, else each rank's own. */
int nbr_job_build_patterns(nbr_job_t *job);

/* Rank r's input for layout (pattern set when built). */
nbr_plan_input_t nbr_job_input(const nbr_job_t *job, int rank, const nbr_layout_t *layout);

void nbr_job_free(nbr_job_t *job);

/* The algorithm's call facts exchange (nbr_algorithm_t.call_facts_step)
 * for these layouts (layouts[r] is rank r's), every rank at once in this
 * process: *facts gets one context per rank, call_facts_size bytes each;
 * NULL where the algorithm has none for this collective. A rank's check
 * failing (a signature mismatch) is returned after the exchange. Free
 * with nbr_job_free_call_facts. */
int nbr_job_call_facts(const nbr_job_t *job, const nbr_layout_t *layouts, void **facts);
/* Rank r's context in facts (NULL when facts is). */
const void *nbr_job_facts_of(const nbr_job_t *job, const void *facts, int r);
void nbr_job_free_call_facts(const nbr_job_t *job, void *facts);

/* Layouts of one synthetic call for every rank of graph (layouts[r],
 * zeroed or reused): allgather blocks of `bytes`, allgatherv blocks and
 * alltoallv messages of the benchmark's varied sizes (nbr_block_bytes,
 * nbr_edge_bytes), slots back to back in MPI order. */
int nbr_job_layouts(const nbr_graph_t *graph, nbr_collective_t coll, uint64_t bytes,
                    nbr_layout_t *layouts);

#ifdef __cplusplus
}
#endif

#endif
