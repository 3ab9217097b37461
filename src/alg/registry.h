/* The algorithm registry: every plan builder nbrcoll knows, each as one
 * self-describing row (nbr_algorithm_t) defined in the algorithm's own file
 * and listed once in registry.c. Everything above this layer (set-up,
 * requests, tools, tests) reaches an algorithm only through its row:
 * what it plans, what set-up must gather for it, its own parameters, its
 * pattern, its cost. Builders are pure C: no MPI or GPU call inside. */
#ifndef NBR_REGISTRY_H
#define NBR_REGISTRY_H

#include "base/engine.h"
#include "plan/plan.h"
#include "topo/locality.h"

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Tags a plan's ops may use, [0, NBR_PLAN_TAGS): a call's tag window holds
 * two plans, its data and (allgatherv through relays) the block-size round
 * run before it, which takes the upper half. */
#define NBR_PLAN_TAGS 32

/* What set-up gathers for an algorithm (nbr_algorithm_t.needs). */
enum {
    /* In-neighbor lists of the ranks on this rank's node (leader). */
    NBR_NEEDS_NODE_IN_LISTS = 1u << 0,
    /* Every rank's out-list (halving, combining plan the whole job). */
    NBR_NEEDS_WHOLE_GRAPH = 1u << 1,
};

/* nbr_algorithm_t.collectives: the collectives an algorithm plans itself. */
#define NBR_COLL_BIT(coll) (1u << (coll))

/* Value indices (nbr_neighbor_alltoallv_init_ext): the global index of
 * every element of every slot, slot by slot in the layout's order (send
 * slot j's elements are send[send_at[j]] .. send[send_at[j + 1] - 1]),
 * every element element_bytes long. Elements a rank sends with one index
 * hold one value, which dedup moves once per region pair. */
typedef struct nbr_value_index {
    size_t element_bytes;
    const int64_t *send, *recv;
    const size_t *send_at, *recv_at; /* slots + 1 */
} nbr_value_index_t;

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
    /* NBR_NEEDS_NODE_IN_LISTS: in-neighbor lists of the ranks on this
     * rank's node, indexed by comm rank (NULL / 0 for ranks elsewhere): the
     * leader paper's NI_r and PI_t. NULL otherwise. */
    const int *const *node_in_lists;
    const int *node_in_degrees;
    /* NBR_NEEDS_WHOLE_GRAPH: the whole graph's out-lists (CSR over nranks
     * ranks). NULL otherwise. */
    const int *graph_out_offsets;
    const int *graph_out_targets;
    /* The algorithm's own parameters (its load_params made them). */
    const void *params;
    /* The algorithm's count-independent pattern, built once per
     * communicator (NULL: nbr_build_plan makes one for this plan). */
    const void *pattern;
    /* allgatherv through relays (size_plan): bytes of every block this rank
     * handles, by source rank, from the size round of the call; NULL
     * otherwise (the builder then falls back to naive). */
    const size_t *block_sizes;
    /* Algorithms with call facts (nbr_algorithm_t.call_facts_step): what
     * the call's facts exchange gathered for this rank; NULL otherwise (the
     * builder then falls back to naive). */
    const void *call_facts;
    const nbr_value_index_t *values; /* the call's value indices, or NULL */
    int describe; /* write the pattern into the plan's notes */
} nbr_plan_input_t;

/* A cost question: one rank's plan input on a machine (alpha-beta). The
 * simulator will bring a fuller machine model; until then the hooks that
 * know an analytic model use these two numbers. */
typedef struct nbr_cost_query {
    const nbr_plan_input_t *input;
    double alpha; /* seconds per message */
    double beta;  /* bytes per second */
} nbr_cost_query_t;

/* What a cost hook returns when it has no estimate for the query. */
#define NBR_COST_UNKNOWN (-1.0)

typedef struct nbr_algorithm {
    const char *name;
    const char *description;
    /* NBR_COLL_BIT of every collective it plans; for the others
     * nbr_build_plan takes naive's plan. */
    unsigned collectives;
    unsigned needs; /* NBR_NEEDS_* */
    /* Plans with value indices only (dedup: without them it would be
     * aggregate's plan): auto prices it only for calls that have them. */
    int needs_values;
    /* Runs as the MPI library's own MPI_Neighbor_* call on the user's
     * arguments (front/library.c) where the library can take the buffers
     * (host memory); its plan says what that moves (for counters and
     * prices) and is what runs on device buffers. */
    int library;
    /* Its own parameters: params_size bytes, filled by load_params with the
     * defaults, then from info (may be MPI_INFO_NULL), then the environment.
     * NULL / 0: none. */
    size_t params_size;
    int (*load_params)(MPI_Info info, void *params);
    /* Fills a plan (nbr_build_plan seals it); input->pattern is set when the
     * algorithm has one. */
    int (*build)(const nbr_plan_input_t *input, nbr_plan_t *plan);
    /* allgatherv through relays: relays forward blocks whose size they
     * cannot know, so each call first moves the sizes along the pattern
     * with this plan (an allgather of 8-byte blocks); offset_of[r] is where
     * rank r's size lands in scratch, SIZE_MAX when nowhere. */
    int (*size_plan)(const nbr_plan_input_t *input, nbr_plan_t *plan, size_t *offset_of);
    /* The count-independent pattern, built once per communicator; one of:
     * per rank (build_pattern / free_pattern), or for the whole job at once
     * (whole_job_build fills the pattern of every rank r with want[r] != 0,
     * want NULL: all, in an array of pattern_size-byte patterns; it frees
     * what it made when it fails). */
    int (*build_pattern)(const nbr_plan_input_t *input, void **pattern);
    void (*free_pattern)(void *pattern);
    size_t pattern_size;
    int (*whole_job_build)(const nbr_plan_input_t *input, const char *want, void *patterns);
    void (*free_in_place)(void *pattern);
    /* Predicted seconds of this rank's part of the collective, or
     * NBR_COST_UNKNOWN; NULL: always unknown. */
    double (*cost)(const nbr_cost_query_t *query);
    /* Call facts: what a plan needs from other ranks that depends on the
     * call's block sizes (aggregate: its region's edges with their bytes,
     * its partners in other regions). call_facts_init makes this rank's
     * context (call_facts_size bytes) from its input, layout and pattern
     * included; call_facts_step then runs under the rounds engine on every
     * rank at once (collective), and the builder finds the context in
     * input->call_facts. call_facts_check says whether the exchange
     * worked on this rank (a send and receive size that disagree:
     * NBR_ERR_TYPE_MISMATCH, though the plan still runs) and gives a
     * digest of what the plan depends on (equal digests, equal plans);
     * call_facts_free frees what init and the rounds made. NULL step:
     * none. */
    size_t call_facts_size;
    int call_facts_rounds; /* the rounds its step takes, every rank alike */
    int (*call_facts_init)(const nbr_plan_input_t *input, void *facts);
    nbr_round_fn call_facts_step;
    int (*call_facts_check)(const void *facts, uint64_t *digest);
    void (*call_facts_free)(void *facts);
} nbr_algorithm_t;

/* The most rounds a call facts exchange takes (engines stop there). */
#define NBR_CALL_FACTS_ROUNDS 8

/* Whether a plan of algorithm for layout needs the call's facts. */
static inline int nbr_algorithm_needs_call_facts(const nbr_algorithm_t *algorithm,
                                                 const nbr_layout_t *layout)
{
    return algorithm->call_facts_step &&
           (algorithm->collectives & NBR_COLL_BIT(layout->coll)) != 0;
}

/* The registry holds at most this many rows (a bound for fixed arrays). */
#define NBR_MAX_ALGORITHMS 8

int nbr_algorithm_count(void);
const nbr_algorithm_t *nbr_algorithm_at(int index);
int nbr_algorithm_index(const nbr_algorithm_t *algorithm);
const nbr_algorithm_t *nbr_algorithm_find(const char *name);
const nbr_algorithm_t *nbr_baseline_algorithm(void);

/* Looks name up; "auto" (automatic selection, alg/select.h) gives NULL.
 * Logs the known names when it is neither (what: the setting that named
 * it) and returns NBR_ERR_ALGORITHM. */
int nbr_algorithm_lookup(const char *what, const char *name, const nbr_algorithm_t **algorithm);

/* Every algorithm's parameters, loaded together (each row reads its own
 * keys), so a bad value is an error at set-up whichever algorithm runs. */
typedef struct nbr_algorithm_params {
    void **of; /* by registry index; NULL for algorithms without any */
} nbr_algorithm_params_t;

int nbr_algorithm_params_load(MPI_Info info, nbr_algorithm_params_t *params);
void nbr_algorithm_params_free(nbr_algorithm_params_t *params);
const void *nbr_algorithm_params_of(const nbr_algorithm_params_t *params,
                                    const nbr_algorithm_t *algorithm);

/* The algorithm's pattern for input's rank; *pattern stays NULL for
 * algorithms without one. */
int nbr_algorithm_build_pattern(const nbr_algorithm_t *algorithm, const nbr_plan_input_t *input,
                                void **pattern);
void nbr_algorithm_free_pattern(const nbr_algorithm_t *algorithm, void *pattern);

/* Builds and seals one rank's plan: naive's plan for a collective the
 * algorithm does not plan; a pattern made for this plan alone when the
 * input carries none. */
int nbr_build_plan(const nbr_algorithm_t *algorithm, const nbr_plan_input_t *input,
                   nbr_plan_t *plan);

/* The same for the size round of an allgatherv through relays (size_plan):
 * input's layout is an allgather of 8-byte blocks. */
int nbr_build_size_plan(const nbr_algorithm_t *algorithm, const nbr_plan_input_t *input,
                        nbr_plan_t *plan, size_t *offset_of);

/* The algorithm's estimate for query, or NBR_COST_UNKNOWN. */
double nbr_algorithm_cost(const nbr_algorithm_t *algorithm, const nbr_cost_query_t *query);

#ifdef __cplusplus
}
#endif

#endif
