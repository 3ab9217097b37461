/* nbrcoll's state for one user communicator, cached on it as an MPI
 * attribute and freed with it (or when the last request using it is freed). */
#ifndef NBR_COMM_H
#define NBR_COMM_H

#include "alg/select.h"
#include "base/engine.h"
#include "front/config.h"
#include "plan/plan.h"
#include "topo/locality.h"
#include "exec/executor.h"

#include <mpi.h>
#include <nbrcoll.h>

/* A built plan with the layout it was built for; shared by the cache and the
 * requests running it. */
typedef struct nbr_shared_plan {
    int refs;
    const nbr_algorithm_t *algorithm;
    nbr_layout_t layout;
    uint64_t facts_digest; /* of the call facts it was built from (0: none) */
    nbr_plan_t plan;
} nbr_shared_plan_t;

/* The MPI neighborhood collective a call makes. Its plan's collective
 * (plan.h) is the shape of the data: alltoall and alltoallw move one block
 * per out-neighbor, as alltoallv does. */
typedef enum nbr_call_kind {
    NBR_CALL_ALLGATHER = 0,
    NBR_CALL_ALLGATHERV,
    NBR_CALL_ALLTOALL,
    NBR_CALL_ALLTOALLV,
    NBR_CALL_ALLTOALLW,
    NBR_NUM_CALL_KINDS
} nbr_call_kind_t;

static inline nbr_collective_t nbr_call_shape(nbr_call_kind_t kind)
{
    return kind == NBR_CALL_ALLGATHER    ? NBR_COLL_ALLGATHER
           : kind == NBR_CALL_ALLGATHERV ? NBR_COLL_ALLGATHERV
                                         : NBR_COLL_ALLTOALLV;
}

/* One block size for every neighbor, the same on every rank (MPI makes
 * the send and receive signatures match): allgather and alltoall. */
static inline int nbr_call_uniform(nbr_call_kind_t kind)
{
    return kind == NBR_CALL_ALLGATHER || kind == NBR_CALL_ALLTOALL;
}

const char *nbr_call_name(nbr_call_kind_t kind);

/* What a communicator's calls of one collective in one form run: auto's
 * choice (or the configured algorithm) and, for allgather, the block size
 * every rank sent and received when it was decided, which relay plans
 * take for every block (NBR_NOT_UNIFORM: ranks differed; relays then run
 * allgather as allgatherv, with its size round). Decided only at calls
 * every rank knows to be decision points (front/select.h), from what every
 * rank contributed there. */
#define NBR_TRIAL_SIDES 4
#define NBR_NOT_UNIFORM SIZE_MAX

typedef struct nbr_decision {
    int valid;
    const nbr_algorithm_t *algorithm;
    size_t uniform_bytes;
    /* The trial (blocking calls, front/select.h): sides[0] the priced
     * winner, then its rivals, timed in turns; num_sides 0 when there is
     * no trial or it is over. */
    int num_sides;
    const nbr_algorithm_t *sides[NBR_TRIAL_SIDES];
    int trial_calls; /* timed calls so far */
    int calls;       /* counted calls per side, set after the first counted round */
    int retried;     /* a second trial: the winner, the first's, close ones, the baseline */
    nbr_call_kind_t kind;
    double seconds[NBR_TRIAL_SIDES][NBR_AUTO_TRIALS_MAX]; /* this rank's runs */
} nbr_decision_t;

/* The calls of one collective in one form (blocking or nonblocking) on a
 * communicator. MPI has every rank make a communicator's collective calls
 * in the same order, and never matches a blocking call with a nonblocking
 * one, so a stream's count of calls is a fact every rank shares; a rank's
 * block sizes are not (MPI asks only each sender and its receiver to
 * agree). Persistent requests decide at their _init and keep no stream. */
typedef struct nbr_stream {
    unsigned long long calls; /* made so far on this rank: the same on every rank */
    /* A decision point is due at the first call numbered redecide_from or
     * later unless one came since: set, at a point in the stream every rank
     * shares, by nbr_comm_retune and by a decision on calls that moved
     * nothing. */
    unsigned long long redecide_from;
    unsigned long long decided_at; /* the call that last decided */
    nbr_decision_t decision;  /* valid from the first call's decision on */
    uint64_t signature;       /* this rank's sizes at the last decision */
} nbr_stream_t;

#define NBR_PLAN_CACHE 8

/* A blocking allgather like the last one the MPI library ran for the
 * communicator runs by a shortcut (front/library.c) that checks it in a
 * few loads and counts it later. */
typedef struct nbr_shortcut {
    size_t block_bytes;                /* 0: none armed */
    const nbr_algorithm_t *algorithm;  /* the library row */
    nbr_stream_t *stream;              /* the blocking allgathers' */
    MPI_Datatype type;                 /* the arming call's, where predefined (its
                                        * size cannot change); else MPI_DATATYPE_NULL */
    int type_size;                     /* its size: calls with it skip MPI_Type_size */
    unsigned long long uncounted;      /* calls not in the counters yet */
    nbr_shared_plan_t *plan;           /* what a call moves (counters); referenced */
} nbr_shortcut_t;

typedef struct nbr_comm {
    /* What the shortcut reads and writes comes first, together: on cores
     * that several ranks share, every call finds the caches cold, and each
     * line touched costs. On one node of 8 ranks on 2 cores, a 64 B
     * allgather the library ran measured 6 % slower through nbrcoll than
     * MPI's own call while these were scattered over the state
     * (docs/decisions.md, D3). */
    MPI_Comm comm; /* private duplicate: nbrcoll's traffic never meets the user's */
    nbr_shortcut_t shortcut;
    int trials; /* decisions whose trial is under way (num_sides > 0) */
    unsigned long long sequence; /* nonblocking / blocking calls so far */
    /* Requests that wait for a collective stage (a decision, a call facts
     * exchange, a size round) or for one before them: each launches its
     * plan in call order, so that the MPI library's own collectives are
     * started in the same order on every rank. */
    struct nbr_request *queue_head, *queue_tail;
    nbr_executor_t *queue_runner; /* in flight while the queue is not empty */
    int queue_running;            /* inside the runner's step */
    /* The one decision that may be under way (the queue's head decides; a
     * blocking call or an _init first empties the queue), and its reduces'
     * room, made at set-up where a failure could still be agreed. */
    struct nbr_deciding *deciding;
    int64_t *decide_room;
    size_t decide_room_values;
    const nbr_algorithm_t *last_algorithm; /* of the latest call; NULL: none yet */
    nbr_exec_domain_t exec; /* how its requests run: MPI or device executor */
    int refs;
    int id;        /* creation order in this process, for dump file names */
    int rank, nranks;
    /* The neighbors nbrcoll moves data with, in the order the plans use:
     * messages on one pair of ranks match in this order (the k-th edge
     * to a rank with its k-th edge from this one). */
    int indegree, outdegree;
    int *sources, *destinations;
    /* The MPI view: the communicator's topology (MPI_DIST_GRAPH, MPI_CART
     * or MPI_GRAPH), its degrees (the blocks in the user's buffers and the
     * entries of the count arrays, a cartesian one's missing neighbors
     * included) and the user's block of each neighbor above; NULL where
     * neighbor k is block k (graphs). See read_neighbors in comm.c. */
    int topology;
    int user_indegree, user_outdegree;
    /* Some rank has no neighbor at all (agreed at set-up). PETSc's PetscSF
     * skips its neighborhood calls on such ranks, which MPI does not
     * allow but Open MPI and MPICH tolerate: under auto nothing may then
     * wait for every rank (front/select.h). */
    int idle_ranks;
    /* Some rank lists one source twice (multigraphs, self-loops, periodic
     * dimensions of 1 or 2), some rank's in- and out-degree differ (both
     * agreed at set-up): facts the MPI library's own calls may get wrong
     * (nbr_comm_library_usable). */
    int repeated_sources, degrees_differ;
    /* Some rank's MPI runs no hook of nbrcoll's in its progress engine
     * (MPICH; MPI_THREAD_MULTIPLE; agreed at set-up, exec/progress.c):
     * there a nonblocking operation moves only inside nbrcoll's own calls,
     * so a plan that needs a peer to forward blocks would stall while
     * that peer waits in a barrier (front/select.h). */
    int no_progress_hook;
    int *in_block, *out_block;
    int cart_both_ways; /* a periodic dimension of size 1 or 2 (every rank agrees) */
    nbr_config_t config; /* with the communicator's algorithm (NULL: auto) */
    nbr_locality_t locality;
    /* plans built lately, least recently used replaced: a program's
     * signatures and auto's trial, which runs its sides in turns */
    nbr_shared_plan_t *cache[NBR_PLAN_CACHE];
    unsigned long long cache_use[NBR_PLAN_CACHE], cache_clock;
    unsigned long long persistent_sequence; /* persistent requests made so far */
    int tag_windows;                        /* per kind: half of the tag space each */
    unsigned engine_runs;                   /* rounds-engine runs so far */
    nbr_counters_t counters;
    /* Set-up facts algorithms need (nbr_comm_provide); NULL until needed.
     * NBR_NEEDS_NODE_IN_LISTS: in-lists of the ranks on this node. */
    int **node_in_lists;
    int *node_in_degrees;
    /* NBR_NEEDS_WHOLE_GRAPH: every rank's out-list (CSR). */
    int *graph_out_offsets;
    int *graph_out_targets;
    /* Every algorithm's count-independent pattern, by registry index: the
     * communicator's built at set-up, others when first needed. */
    void **patterns;
    /* what each collective's blocking [1] and nonblocking [0] calls run */
    nbr_stream_t streams[NBR_NUM_CALL_KINDS][2];
    /* A finished non-persistent request kept for the next call, so that a
     * blocking call allocates nothing in the steady state. Holds no
     * reference on this state; freed with it by free_spare (requests are
     * built above this file, which does not know them). */
    struct nbr_request *spare_request;
    void (*free_spare)(struct nbr_request *spare);
} nbr_comm_t;

/* Tags: set-up's engine runs use [0, 8) (a run NBR_ENGINE_TAGS, consecutive
 * runs on a communicator alternating between two sets: see
 * nbr_comm_engine_tags); each collective call takes a window of
 * NBR_TAGS_PER_CALL tags above that, chosen by its sequence number: its
 * data plan's, a second plan's (an allgatherv's size round, or the
 * fallback of a guarded allgather: never both), its error agreement
 * (nbr_agree_errors), its guard, the two reduces of a decision and the
 * engine runs of its call facts exchanges. Blocking and nonblocking calls
 * cycle through the lower half of the windows, persistent requests (which
 * keep theirs for life) through the upper half, so a long-lived
 * persistent request never shares a window with a later nonblocking call;
 * up to tag_windows operations of each kind may be in flight at once.
 * Every rank makes the same calls in the same order, so the sequence
 * numbers agree without communication. */
#define NBR_TAG_ENGINE 0
#define NBR_TAG_FIRST_CALL 8
#define NBR_TAG_SECOND_PLAN_IN_CALL NBR_PLAN_TAGS
#define NBR_TAG_AGREE_IN_CALL (2 * NBR_PLAN_TAGS)
#define NBR_TAG_GUARD_IN_CALL (NBR_TAG_AGREE_IN_CALL + 1)
#define NBR_TAG_DECIDE_IN_CALL (NBR_TAG_AGREE_IN_CALL + 2) /* two */
#define NBR_TAG_FACTS_IN_CALL (NBR_TAG_AGREE_IN_CALL + 4)
#define NBR_FACTS_RUNS_IN_CALL 3 /* the candidates' that have call facts, and the call's own */
#define NBR_TAGS_PER_CALL (NBR_TAG_FACTS_IN_CALL + NBR_FACTS_RUNS_IN_CALL * NBR_ENGINE_TAGS)

/* The tag base of the next rounds-engine run on state's communicator.
 * Runs alternate between two pairs of tags: a rank that has not yet seen
 * the last barrier of one run still probes with its tags, while a faster
 * rank may already send the next run's first messages. */
int nbr_comm_engine_tags(nbr_comm_t *state);

/* The state of comm if nbrcoll has set it up, else NULL: a lookup only. */
nbr_comm_t *nbr_comm_find(MPI_Comm comm);

/* The state of comm, set up now (collectively) if absent, with info's
 * configuration (MPI_INFO_NULL: environment and defaults). Not referenced:
 * valid while the user's communicator lives. */
int nbr_comm_get(MPI_Comm comm, MPI_Info info, nbr_comm_t **state);

void nbr_comm_retain(nbr_comm_t *state);
void nbr_comm_release(nbr_comm_t *state);

/* Tag base for the next collective call (advances its kind's sequence). */
int nbr_comm_next_tag_base(nbr_comm_t *state, int persistent);

/* The plan for this layout with this algorithm: a cached one of this
 * algorithm, layout and call facts digest; else a new one (cached unless
 * block_sizes is given: see nbr_plan_input_t), with the algorithm's
 * pattern built and kept first if it has none yet. call_facts: what the
 * call's facts exchange gathered (nbr_comm_call_facts), or NULL. Returned
 * referenced: release with nbr_shared_plan_release. */
int nbr_comm_plan(nbr_comm_t *state, const nbr_algorithm_t *algorithm,
                  const nbr_layout_t *layout, const size_t *block_sizes,
                  const void *call_facts, uint64_t facts_digest, nbr_shared_plan_t **plan);

/* A call facts exchange of algorithm for one layout and value indices (may
 * be NULL; nbr_algorithm_t), in flight. Every rank of the communicator
 * runs it, whatever fails on it (a rank that cannot take part sits its
 * rounds out), so nobody waits. */
typedef struct nbr_facts_run {
    const nbr_algorithm_t *algorithm;
    void *context; /* the algorithm's; NULL: none needed, or this rank sits out */
    int needed;
    int local;     /* this rank's status before the exchange */
    int rounds;    /* sitting out: the rounds to keep step with */
    int done;
    nbr_engine_run_t engine;
} nbr_facts_run_t;

/* Starts it on NBR_ENGINE_TAGS tags from tag_base (the call's own). */
void nbr_comm_facts_begin(nbr_comm_t *state, const nbr_algorithm_t *algorithm,
                          const nbr_layout_t *layout, const nbr_value_index_t *values,
                          int tag_base, nbr_facts_run_t *run);
/* Moves it on; *done = 1 once it ended. Returns whether anything moved. */
int nbr_comm_facts_advance(nbr_facts_run_t *run, int *done);
/* The ended exchange's facts: *facts (free with nbr_comm_free_call_facts)
 * is NULL when the algorithm needs none; NBR_ERR_TYPE_MISMATCH says a send
 * and receive signature disagree here (the plan still runs); other errors
 * mean no plan (not agreed: the caller does). */
int nbr_comm_facts_end(nbr_facts_run_t *run, void **facts, uint64_t *digest);
/* All three at once. */
int nbr_comm_call_facts(nbr_comm_t *state, const nbr_algorithm_t *algorithm,
                        const nbr_layout_t *layout, const nbr_value_index_t *values,
                        int tag_base, void **facts, uint64_t *digest);
void nbr_comm_free_call_facts(const nbr_algorithm_t *algorithm, void *facts);

/* What a builder of algorithm sees of this communicator: its facts, the
 * algorithm's parameters and, when built, its pattern. layout may be NULL
 * (building a pattern). */
nbr_plan_input_t nbr_comm_input_for(const nbr_comm_t *state, const nbr_algorithm_t *algorithm,
                                    const nbr_layout_t *layout);
void nbr_shared_plan_release(nbr_shared_plan_t *plan);

/* algorithm's pattern (NULL for algorithms without one), built now from
 * the facts its needs name (which nbr_comm_provide gathered) when absent. */
int nbr_comm_pattern(nbr_comm_t *state, const nbr_algorithm_t *algorithm, const void **pattern);

/* Gathers the set-up facts of needs (NBR_NEEDS_*) not gathered yet.
 * Collective over the comm: every rank passes the same needs. */
int nbr_comm_provide(nbr_comm_t *state, unsigned needs);

/* Where the MPI library's own alltoall forms deliver wrong blocks:
 * - Open MPI up to 5.0, its nonblocking and persistent forms where both
 *   directions of a periodic cartesian dimension reach the same rank
 *   (MPI-4.1 section 8.6 says which block is whose; open-mpi/ompi#14416);
 * - MPICH (4.0 here) reverses the receives of every source a rank lists
 *   more than once, in every form, and graphs keep them in order
 *   (pmodels/mpich#7945);
 * - MPICH 4.0's alltoallw converts the receive counts over the
 *   out-degree and the send counts over the in-degree: where the two
 *   differ it moves the wrong blocks or fails (pmodels/mpich#6233, fixed
 *   in 4.1). */
static inline int nbr_library_misplaces_alltoall(const nbr_comm_t *state)
{
#if defined(MPICH_NUMVERSION)
    return state->repeated_sources ||
           (MPICH_NUMVERSION >= 40000000 && MPICH_NUMVERSION < 40100000 && state->degrees_differ);
#else
    return state->cart_both_ways;
#endif
}

/* Whether the MPI library may run this communicator's calls of shape
 * coll itself (the library row, front/library.c): only where every rank's
 * buffers are host memory, i.e. the device layer is off, which every rank
 * agreed on at set-up (a rank on device buffers would post naive's
 * messages where its peers call the library's collective: they would
 * never meet); and not the alltoall forms where the library gets them
 * wrong (nbr_library_misplaces_alltoall). */
static inline int nbr_comm_library_usable(const nbr_comm_t *state, nbr_collective_t coll)
{
    return state->exec.device == NULL &&
           !(coll == NBR_COLL_ALLTOALLV && nbr_library_misplaces_alltoall(state));
}

/* Adds calls completed runs of plan to the counters. */
void nbr_comm_count(nbr_comm_t *state, const nbr_plan_t *plan, unsigned long long calls);

/* The shortcut's calls added to the counters (before they are read). */
void nbr_comm_count_shortcut(nbr_comm_t *state);

/* Arms the shortcut for blocking allgathers like the one plan (referenced
 * here) was built for, run by the library row algorithm as the blocking
 * allgathers' stream has it; a predefined type both sides of that call
 * used keeps its size there. */
void nbr_comm_arm_shortcut(nbr_comm_t *state, nbr_shared_plan_t *plan,
                           const nbr_algorithm_t *algorithm, nbr_stream_t *stream,
                           MPI_Datatype sendtype, MPI_Datatype recvtype);

/* The user's block of in-neighbor (out-neighbor) k. */
static inline int nbr_comm_in_block(const nbr_comm_t *state, int k)
{
    return state->in_block ? state->in_block[k] : k;
}

static inline int nbr_comm_out_block(const nbr_comm_t *state, int k)
{
    return state->out_block ? state->out_block[k] : k;
}

/* Waits (progressing) until every queued request of state has launched:
 * a blocking call or an _init, which may wait, does so first, so that the
 * collectives of calls are started in call order. */
int nbr_comm_drain(nbr_comm_t *state);

/* Validates comm: not null, an intracommunicator. */
int nbr_check_comm(MPI_Comm comm);

#endif
