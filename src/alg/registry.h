/* The algorithm table: every plan builder nbrcoll knows, by name. */
#ifndef NBR_ALGORITHM_H
#define NBR_ALGORITHM_H

#include "plan/plan.h"
#include "topo/locality.h"

/* Tags a plan's ops may use, [0, NBR_PLAN_TAGS): a call's tag window holds
 * two plans, its data and (allgatherv through relays) the block-size round
 * run before it, which takes the upper half. */
#define NBR_PLAN_TAGS 32

/* Everything a builder may look at for one rank. Pure data. */
typedef struct nbr_plan_input {
    int rank;
    int nranks;
    int indegree;
    int outdegree;
    const int *sources;      /* in-neighbors, in MPI order */
    const int *destinations; /* out-neighbors, in MPI order */
    const nbr_locality_t *locality; /* may be NULL (one node) */
    const nbr_layout_t *layout;
    /* In-neighbor lists of the ranks on this rank's node, indexed by comm
     * rank (NULL / 0 for ranks elsewhere): the paper's NI_r and PI_t, for
     * builders that coordinate inside a node. May be NULL. */
    const int *const *node_in_lists;
    const int *node_in_degrees;
    size_t leader_min_bytes; /* leader: blocks below this go the naive way */
    int describe;            /* write the pattern into the plan's notes */
    /* The algorithm's count-independent pattern, built once per
     * communicator by its build_pattern (NULL: the builder makes one). */
    const void *pattern;
    /* The whole graph's out-lists (CSR over nranks ranks), for builders
     * that plan globally (halving); NULL unless the algorithm asks. */
    const int *graph_out_offsets;
    const int *graph_out_targets;
    int combining_theta; /* combining: friends share at least this many */
    /* allgatherv through relays (halving): bytes of every block this rank
     * handles, by source rank, from the size round of the call; NULL
     * otherwise (the builder then falls back to naive). */
    const size_t *block_sizes;
} nbr_plan_input_t;

typedef int (*nbr_build_plan_fn)(const nbr_plan_input_t *input, nbr_plan_t *plan);

typedef enum nbr_algorithm_id {
    NBR_ALG_NAIVE = 0,
    NBR_ALG_LEADER = 1,
    NBR_ALG_HALVING = 2,
    NBR_ALG_COMBINING = 3,
    NBR_NUM_ALGORITHMS
} nbr_algorithm_id_t;

typedef struct nbr_algorithm {
    nbr_algorithm_id_t id;
    const char *name;
    const char *description;
    nbr_build_plan_fn build; /* fills a plan (not sealed) */
    int needs_node_in_lists; /* set-up gathers node_in_lists for it */
    int needs_whole_graph;   /* set-up gathers every rank's out-list */
    /* allgatherv: relays forward blocks whose size they cannot know; each
     * call first moves the sizes along the pattern (size_plan) */
    int (*size_plan)(const nbr_plan_input_t *input, nbr_plan_t *plan, size_t *offset_of);
    /* optional: the count-independent part, built once per communicator */
    int (*build_pattern)(const nbr_plan_input_t *input, void **pattern);
    void (*free_pattern)(void *pattern);
} nbr_algorithm_t;

const nbr_algorithm_t *nbr_algorithm_find(const char *name);
const nbr_algorithm_t *nbr_default_algorithm(void);

/* Builds and seals one rank's plan with the given algorithm. */
int nbr_build_plan(const nbr_algorithm_t *algorithm,
                   const nbr_plan_input_t *input, nbr_plan_t *plan);

/* Patterns computed for the whole job at once (halving, combining): runs
 * build for this rank alone (want[] marks it in an array of nranks
 * patterns of pattern_size bytes each) and returns its pattern, moved into
 * its own allocation. build frees what it made when it fails. */
typedef int (*nbr_whole_job_build_fn)(const nbr_plan_input_t *input, const char *want,
                                      void *patterns);
int nbr_pattern_of_rank(const nbr_plan_input_t *input, size_t pattern_size,
                        nbr_whole_job_build_fn build, void (*free_in_place)(void *),
                        void **pattern);

/* Self-loops as local copies: the k-th self out-edge feeds the k-th self
 * in-edge (every builder's rule; errors on mismatched sizes or counts). */
int nbr_add_self_copies(const nbr_plan_input_t *input, nbr_plan_t *plan);

/* Builders (src/host, src/device). */
int nbr_build_naive(const nbr_plan_input_t *input, nbr_plan_t *plan);
int nbr_build_leader(const nbr_plan_input_t *input, nbr_plan_t *plan);
int nbr_build_leader_pattern(const nbr_plan_input_t *input, void **pattern);
void nbr_free_leader_pattern(void *pattern);
int nbr_build_halving(const nbr_plan_input_t *input, nbr_plan_t *plan);
int nbr_build_halving_pattern(const nbr_plan_input_t *input, void **pattern);
void nbr_free_halving_pattern(void *pattern);
int nbr_halving_size_plan(const nbr_plan_input_t *input, nbr_plan_t *plan, size_t *offset_of);
int nbr_build_combining(const nbr_plan_input_t *input, nbr_plan_t *plan);
int nbr_build_combining_pattern(const nbr_plan_input_t *input, void **pattern);
void nbr_free_combining_pattern(void *pattern);

#endif
