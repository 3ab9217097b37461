#include "front/comm.h"

#include "base/engine.h"
#include "base/grow.h"
#include "base/log.h"
#include "alg/node_lists.h"
#include "alg/select.h"
#include "device/backend.h"
#include "front/graph_check.h"
#include "front/select.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The attribute keyval: created once (pthread_once: threads may set up
 * different communicators at the same time), freed at MPI_Finalize through
 * an attribute on MPI_COMM_SELF (deleted first thing in MPI_Finalize). */
static int state_keyval = MPI_KEYVAL_INVALID;
static pthread_once_t keyval_once = PTHREAD_ONCE_INIT;
static int keyval_status = NBR_SUCCESS;
static atomic_int next_comm_id = 0;

/* The communicators this thread found last, so that a program calling on
 * a few communicators in turn skips MPI's attribute lookup (a hash table:
 * a few more cold cache lines a call where ranks share cores; on one node
 * of 8 ranks on 2 cores, two nbrcoll communicators called in turn cost
 * 4.8-5.5 % over MPI's own call at 64 B, one alone 2.4-3.1 %). A few
 * entries, by the handle's hash. A state deleted anywhere makes every
 * thread's entries stale: its handle may come back as another
 * communicator's. */
#define FOUND_ENTRIES 8
static atomic_ulong states_deleted = 0;
static _Thread_local struct found {
    MPI_Comm comm;
    nbr_comm_t *state;
    unsigned long deleted; /* states_deleted when it was found */
} last_found[FOUND_ENTRIES];

static struct found *found_entry(MPI_Comm comm)
{
    uint64_t h = (uint64_t)(uintptr_t)comm * 0x9e3779b97f4a7c15ULL;
    return &last_found[h >> 61]; /* the top 3 bits: FOUND_ENTRIES */
}

static int delete_state(MPI_Comm comm, int keyval, void *value, void *extra)
{
    atomic_fetch_add(&states_deleted, 1);
    nbr_comm_release(value);
    return MPI_SUCCESS;
}

static int delete_keyval(MPI_Comm comm, int keyval, void *value, void *extra)
{
    if (state_keyval != MPI_KEYVAL_INVALID)
        MPI_Comm_free_keyval(&state_keyval);
    MPI_Comm_free_keyval(&keyval);
    return MPI_SUCCESS;
}

static void create_keyvals(void)
{
    int rc = NBR_SUCCESS, finalizer = MPI_KEYVAL_INVALID;
    NBR_MPI_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state,
                                         &state_keyval, NULL));
    NBR_MPI_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_keyval,
                                         &finalizer, NULL));
    NBR_MPI_CHECK(MPI_Comm_set_attr(MPI_COMM_SELF, finalizer, NULL));
out:
    keyval_status = rc;
}

static int ensure_keyval(void)
{
    if (pthread_once(&keyval_once, create_keyvals) != 0)
        return NBR_ERR_INTERNAL;
    return keyval_status;
}

const char *nbr_call_name(nbr_call_kind_t kind)
{
    static const char *const names[NBR_NUM_CALL_KINDS] = {
        "allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw"};
    return kind >= 0 && kind < NBR_NUM_CALL_KINDS ? names[kind] : "?";
}

int nbr_check_comm(MPI_Comm comm)
{
    int inter = 0;
    if (comm == MPI_COMM_NULL)
        return NBR_ERR_COMM;
    if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return NBR_ERR_COMM;
    return NBR_SUCCESS;
}

void nbr_shared_plan_release(nbr_shared_plan_t *plan)
{
    if (!plan || --plan->refs > 0)
        return;
    nbr_plan_free(&plan->plan);
    nbr_layout_free(&plan->layout);
    free(plan);
}

void nbr_comm_retain(nbr_comm_t *state)
{
    state->refs++;
}

void nbr_comm_release(nbr_comm_t *state)
{
    if (!state || --state->refs > 0)
        return;
    if (state->spare_request)
        state->free_spare(state->spare_request);
    nbr_executor_destroy(state->queue_runner);
    if (state->deciding)
        nbr_decide_free(state->deciding);
    free(state->deciding);
    free(state->decide_room);
    for (int i = 0; state->patterns && i < nbr_algorithm_count(); i++)
        nbr_algorithm_free_pattern(nbr_algorithm_at(i), state->patterns[i]);
    free(state->patterns);
    for (int c = 0; c < NBR_PLAN_CACHE; c++)
        nbr_shared_plan_release(state->cache[c]);
    nbr_shared_plan_release(state->shortcut.plan);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && state->comm != MPI_COMM_NULL)
        MPI_Comm_free(&state->comm);
    nbr_exec_domain_free(&state->exec);
    nbr_locality_free(&state->locality);
    nbr_node_lists_t lists = {.nranks = state->nranks, .lists = state->node_in_lists,
                              .degrees = state->node_in_degrees};
    nbr_node_lists_free(&lists);
    free(state->graph_out_offsets);
    free(state->graph_out_targets);
    free(state->sources);
    free(state->destinations);
    free(state->in_block);
    free(state->out_block);
    nbr_config_free(&state->config);
    free(state);
}

static int read_dist_graph(nbr_comm_t *state, MPI_Comm comm)
{
    int rc = NBR_SUCCESS, weighted = 0;
    NBR_MPI_CHECK(MPI_Dist_graph_neighbors_count(comm, &state->indegree,
                                                 &state->outdegree, &weighted));
    state->sources = malloc(((size_t)state->indegree + 1) * sizeof(int));
    state->destinations = malloc(((size_t)state->outdegree + 1) * sizeof(int));
    if (!state->sources || !state->destinations)
        return NBR_ERR_NOMEM;
    /* Weights are not needed; MPI_UNWEIGHTED is valid for either kind of
     * graph. GCC mistakes Open MPI's sentinel address for a 0-byte array. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
    NBR_MPI_CHECK(MPI_Dist_graph_neighbors(comm, state->indegree, state->sources,
                                           MPI_UNWEIGHTED, state->outdegree,
                                           state->destinations, MPI_UNWEIGHTED));
#pragma GCC diagnostic pop
out:
    return rc;
}

/* MPI-1 graph: one list, sent to and received from in its order. */
static int read_graph(nbr_comm_t *state, MPI_Comm comm)
{
    int rc = NBR_SUCCESS, n = 0;
    NBR_MPI_CHECK(MPI_Graph_neighbors_count(comm, state->rank, &n));
    state->indegree = state->outdegree = n;
    state->sources = malloc(((size_t)n + 1) * sizeof(int));
    state->destinations = malloc(((size_t)n + 1) * sizeof(int));
    if (!state->sources || !state->destinations)
        return NBR_ERR_NOMEM;
    NBR_MPI_CHECK(MPI_Graph_neighbors(comm, state->rank, n, state->sources));
    memcpy(state->destinations, state->sources, (size_t)n * sizeof(int));
out:
    return rc;
}

/* Cartesian: the user's blocks are, per dimension, the neighbor in the
 * negative direction (block 2d) and in the positive one (2d + 1);
 * MPI_PROC_NULL (a border of a non-periodic dimension) has a block that
 * nothing touches, so it is no neighbor here. What a rank sends toward +d
 * arrives as coming from the receiver's -d side, and the other way round,
 * which matters where both directions reach the same rank (a periodic
 * dimension of size 1 or 2). With the k-th-edge rule of the plans, that
 * takes the out-list per dimension as (-, +) and the in-list as (+, -):
 * this rank's first message of dimension d to a rank pairs with that
 * rank's first in-edge of d from it, its +d side. Neighbors in different
 * dimensions pair dimension by dimension, since being a rank's neighbor
 * in dimension d is symmetric. */
static int read_cart(nbr_comm_t *state, MPI_Comm comm)
{
    int rc = NBR_SUCCESS, ndims = 0;
    NBR_MPI_CHECK(MPI_Cartdim_get(comm, &ndims));
    size_t n = 2 * (size_t)ndims + 1;
    state->sources = malloc(n * sizeof(int));
    state->destinations = malloc(n * sizeof(int));
    state->in_block = malloc(n * sizeof(int));
    state->out_block = malloc(n * sizeof(int));
    if (!state->sources || !state->destinations || !state->in_block || !state->out_block)
        return NBR_ERR_NOMEM;
    state->indegree = state->outdegree = 0;
    for (int d = 0; d < ndims; d++) {
        int minus = MPI_PROC_NULL, plus = MPI_PROC_NULL;
        NBR_MPI_CHECK(MPI_Cart_shift(comm, d, 1, &minus, &plus));
        if (minus != MPI_PROC_NULL) {
            state->out_block[state->outdegree] = 2 * d;
            state->destinations[state->outdegree++] = minus;
        }
        if (plus != MPI_PROC_NULL) {
            state->out_block[state->outdegree] = 2 * d + 1;
            state->destinations[state->outdegree++] = plus;
            state->in_block[state->indegree] = 2 * d + 1;
            state->sources[state->indegree++] = plus;
        }
        if (minus != MPI_PROC_NULL) {
            state->in_block[state->indegree] = 2 * d;
            state->sources[state->indegree++] = minus;
        }
        state->cart_both_ways |= minus != MPI_PROC_NULL && minus == plus;
    }
    state->user_indegree = state->user_outdegree = 2 * ndims;
out:
    return rc;
}

/* Whether a rank appears twice in ranks[0..n). */
static int repeats_a_rank(const int *ranks, int n)
{
    if (n < 2)
        return 0;
    int *sorted = malloc((size_t)n * sizeof(int));
    if (!sorted)
        return 1; /* as if: the library is then left out where it might misplace blocks */
    memcpy(sorted, ranks, (size_t)n * sizeof(int));
    qsort(sorted, (size_t)n, sizeof(int), nbr_compare_ints);
    int repeats = 0;
    for (int i = 1; i < n && !repeats; i++)
        repeats = sorted[i] == sorted[i - 1];
    free(sorted);
    return repeats;
}

static int read_neighbors(nbr_comm_t *state, MPI_Comm comm)
{
    int rc = state->topology == MPI_CART    ? read_cart(state, comm)
             : state->topology == MPI_GRAPH ? read_graph(state, comm)
                                            : read_dist_graph(state, comm);
    if (rc == NBR_SUCCESS && state->topology != MPI_CART) {
        state->user_indegree = state->indegree;
        state->user_outdegree = state->outdegree;
    }
    return rc;
}

/* A Cartesian topology is consistent by construction; a graph's lists are
 * the user's, and a mismatch would leave some receive waiting forever. */
static int check_graph(nbr_comm_t *state)
{
    if (state->topology == MPI_CART)
        return NBR_SUCCESS;
    nbr_graph_check_t check = {.rank = state->rank, .indegree = state->indegree,
                               .outdegree = state->outdegree, .sources = state->sources,
                               .destinations = state->destinations};
    int rc = nbr_engine_run_mpi(state->comm, nbr_comm_engine_tags(state), &check,
                                nbr_graph_check_step, 2);
    return rc == NBR_SUCCESS && check.mismatches > 0 ? NBR_ERR_GRAPH : rc;
}

/* A setting's value as one int of the agreement (31 bits, >= 0). */
static int setting_hash(const nbr_shared_setting_t *setting)
{
    uint32_t h = 2166136261u;
    for (const char *c = setting->name; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    for (const char *c = setting->value; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    return (int)(h & 0x7fffffff);
}

/* Settings found to differ: every rank learns rank 0's values; a rank
 * that holds another logs its own, and rank 0 names the ranks that
 * differ from it, setting by setting. Collective (an error path). */
static void report_differing(MPI_Comm comm, const nbr_shared_setting_t *mine, int n,
                             const int *hashes, uint32_t differs)
{
    int rank = 0, size = 0, theirs[NBR_SHARED_SETTINGS_MAX];
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    memcpy(theirs, hashes, sizeof theirs);
    uint32_t mask = 0, *masks = rank == 0 ? calloc((size_t)size, sizeof(uint32_t)) : NULL;
    if (MPI_Bcast(theirs, NBR_SHARED_SETTINGS_MAX, MPI_INT, 0, comm) == MPI_SUCCESS)
        for (int i = 0; i < n; i++)
            if ((differs >> i & 1) && hashes[i] != theirs[i]) {
                mask |= 1u << i;
                NBR_ERROR("%s is '%s' on this rank, another value on rank 0: it must be the "
                          "same on every rank", mine[i].name, mine[i].value);
            }
    if (MPI_Gather(&mask, 1, MPI_UINT32_T, masks, 1, MPI_UINT32_T, 0, comm) != MPI_SUCCESS ||
        !masks)
        goto out;
    for (int i = 0; i < n; i++) {
        if (!(differs >> i & 1))
            continue;
        char list[256] = "";
        size_t used = 0;
        int listed = 0, others = 0;
        for (int r = 1; r < size; r++) {
            if (!(masks[r] >> i & 1))
                continue;
            if (listed < 16 && used < sizeof list)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%d",
                                         listed++ ? ", " : "", r);
            else
                others++;
        }
        NBR_ERROR("%s differs between ranks: rank 0 has '%s', %s %s%s another value",
                  mine[i].name, mine[i].value, listed + others > 1 ? "ranks" : "rank", list,
                  others ? " and more have" : listed > 1 ? " have" : " has");
    }
out:
    free(masks);
}

/* The first agreement of set-up: every rank's status, and whether every
 * rank has the same value of each setting all must share (a rank with
 * another algorithm, node size or graph check would post other messages
 * than its peers expect, or none), in one reduction: MIN over each hash
 * and its negation says min == max. */
static int agree_on_config(MPI_Comm comm, int local, const nbr_config_t *config)
{
    nbr_shared_setting_t settings[NBR_SHARED_SETTINGS_MAX];
    int n = local == NBR_SUCCESS ? nbr_config_shared_settings(config, settings) : 0;
    int hashes[NBR_SHARED_SETTINGS_MAX] = {0};
    int mine[1 + 2 * NBR_SHARED_SETTINGS_MAX] = {local}, least[1 + 2 * NBR_SHARED_SETTINGS_MAX];
    for (int i = 0; i < n; i++) {
        hashes[i] = setting_hash(&settings[i]);
        mine[1 + 2 * i] = hashes[i];
        mine[2 + 2 * i] = -hashes[i];
    }
    int mrc = MPI_Allreduce(mine, least, 1 + 2 * NBR_SHARED_SETTINGS_MAX, MPI_INT, MPI_MIN, comm);
    if (mrc != MPI_SUCCESS)
        return nbr_mpi_failed("MPI_Allreduce", mrc);
    if (least[0] != NBR_SUCCESS)
        return least[0];
    uint32_t differs = 0;
    for (int i = 0; i < n; i++)
        if (least[1 + 2 * i] != -least[2 + 2 * i])
            differs |= 1u << i;
    if (!differs)
        return NBR_SUCCESS;
    report_differing(comm, settings, n, hashes, differs);
    return NBR_ERR_INFO;
}

/* What every algorithm auto may price needs of the communicator (a
 * whole-graph one only where it is offered). */
static unsigned candidates_needs(const nbr_comm_t *state)
{
    unsigned needs = 0;
    for (int i = 0; i < nbr_algorithm_count(); i++) {
        const nbr_algorithm_t *a = nbr_algorithm_at(i);
        if (!(a->needs & NBR_NEEDS_WHOLE_GRAPH) ||
            state->nranks <= state->config.auto_whole_graph_ranks)
            needs |= a->needs;
    }
    return needs;
}

/* The room of the communicator's one decision under way (front/select.h):
 * for auto, the price reduce's values, its scratch and its ops. */
static int decisions_room(nbr_comm_t *state)
{
    state->deciding = calloc(1, sizeof(nbr_deciding_t));
    if (!state->deciding)
        return NBR_ERR_NOMEM;
    if (state->config.algorithm)
        return NBR_SUCCESS; /* only the sizes reduce, which needs no room */
    int nodes = state->locality.num_nodes > 0 ? state->locality.num_nodes : 1;
    size_t values = (size_t)nbr_algorithm_count() * (1 + 2 * (size_t)nodes);
    state->decide_room = malloc(3 * values * sizeof(int64_t) + values);
    state->decide_room_values = values;
    return state->decide_room ? NBR_SUCCESS : NBR_ERR_NOMEM;
}

/* Zeroed, its first lines (the shortcut's) on cache-line boundaries. */
static nbr_comm_t *state_alloc(void)
{
    size_t line = 64, bytes = (sizeof(nbr_comm_t) + line - 1) / line * line;
    nbr_comm_t *state = aligned_alloc(line, bytes);
    if (state)
        memset(state, 0, bytes);
    return state;
}

static int setup(MPI_Comm comm, MPI_Info info, nbr_comm_t **out_state)
{
    int rc = NBR_SUCCESS, topology = MPI_UNDEFINED;
    int flag = 0, *tag_ub = NULL;
    nbr_comm_t *state = NULL;
    nbr_config_t config = {0};
    NBR_MPI_CHECK(MPI_Topo_test(comm, &topology));
    if (topology != MPI_DIST_GRAPH && topology != MPI_CART && topology != MPI_GRAPH)
        return NBR_ERR_TOPOLOGY; /* the same on every rank: no agreement needed */
    /* Configuration may differ between ranks (per-rank info), and the
     * rest may fail on one rank: agree first so that every rank returns the
     * same error and nobody is left waiting. */
    int local = nbr_config_load(info, &config);
    if (local == NBR_SUCCESS)
        local = ensure_keyval();
    if (local == NBR_SUCCESS && !(state = state_alloc()))
        local = NBR_ERR_NOMEM;
    rc = agree_on_config(comm, local, &config);
    if (rc != NBR_SUCCESS) {
        free(state);
        nbr_config_free(&config);
        return rc;
    }
    state->refs = 1;
    state->comm = MPI_COMM_NULL;
    state->config = config; /* owned by state from here */
    state->id = atomic_fetch_add(&next_comm_id, 1);
    state->topology = topology;
    NBR_MPI_CHECK(PMPI_Comm_dup(comm, &state->comm));
    NBR_MPI_CHECK(MPI_Comm_set_errhandler(state->comm, MPI_ERRORS_RETURN));
    NBR_MPI_CHECK(MPI_Comm_rank(comm, &state->rank));
    NBR_MPI_CHECK(MPI_Comm_size(comm, &state->nranks));
    /* From here a step may fail on some ranks only: agree before any
     * collective, so that no rank is left behind without state. */
    NBR_CHECK(nbr_agree(comm, read_neighbors(state, comm)));
    /* facts of the whole graph, from every rank's lists */
    int mine[4] = {state->indegree == 0 && state->outdegree == 0,
                   repeats_a_rank(state->sources, state->indegree),
                   state->user_indegree != state->user_outdegree, !nbr_progress_hooked()},
        any[4] = {0, 0, 0, 0};
    NBR_MPI_CHECK(MPI_Allreduce(mine, any, 4, MPI_INT, MPI_MAX, comm));
    state->idle_ranks = any[0];
    state->repeated_sources = any[1];
    state->degrees_differ = any[2];
    state->no_progress_hook = any[3];
    if (state->no_progress_hook && state->rank == 0 &&
        (!config.algorithm || !nbr_select_one_message_per_edge(config.algorithm)))
        NBR_INFO("MPI runs no progress hook of nbrcoll's here: nonblocking and persistent "
                 "calls run one message per edge (%s)",
                 config.algorithm ? "naive's, in place of the configured plan"
                                  : "the baseline's; auto decides blocking calls only");
    /* Every rank runs every step up to the next agreement whatever its
     * check found, so that agreement carries the check's verdict too. */
    int graph = config.check_graph ? check_graph(state) : NBR_SUCCESS;
    /* With device buffers a rank's GPU is the one its runtime has current. */
    char current_pci[NBR_PCI_ID_MAX] = "";
    if (config.exec.memory != NBR_MEMORY_HOST)
        nbr_device_current_pci(current_pci, sizeof current_pci);
    nbr_locality_options_t where = {
        .ranks_per_node = config.ranks_per_node, .ranks_per_socket = config.ranks_per_socket,
        .topo_file = config.topo_file, .sysfs_root = config.sysfs_root,
        .forced_gpu = config.forced_gpu, .current_pci = current_pci};
    NBR_CHECK(nbr_locality_detect(state->comm, &where, &state->locality));
    NBR_CHECK(nbr_exec_domain_init(&state->exec, state->comm, state->id, &config.exec,
                                   &state->locality));
    NBR_MPI_CHECK(MPI_Comm_get_attr(state->comm, MPI_TAG_UB, &tag_ub, &flag));
    state->tag_windows = ((flag ? *tag_ub : 32767) - NBR_TAG_FIRST_CALL) / NBR_TAGS_PER_CALL / 2;
    state->patterns = calloc((size_t)nbr_algorithm_count(), sizeof(void *));
    NBR_CHECK(nbr_agree(comm, graph != NBR_SUCCESS ? graph
                              : !state->patterns     ? NBR_ERR_NOMEM
                                                     : decisions_room(state)));
    if (config.algorithm) { /* its facts and pattern now */
        const void *pattern = NULL;
        NBR_CHECK(nbr_comm_provide(state, config.algorithm->needs));
        NBR_CHECK(nbr_agree(comm, nbr_comm_pattern(state, config.algorithm, &pattern)));
    } else { /* every candidate's facts now: a decision point prices without waiting for them */
        NBR_CHECK(nbr_comm_provide(state, candidates_needs(state)));
    }
    NBR_MPI_CHECK(MPI_Comm_set_attr(comm, state_keyval, state));
    NBR_INFO("comm %d: %d ranks on %d nodes, node model %s (%d GPUs), algorithm %s, "
             "in/out degree %d/%d", state->id, state->nranks, state->locality.num_nodes,
             state->locality.model.source, state->locality.model.num_gpus,
             state->config.algorithm ? state->config.algorithm->name : NBR_AUTO_NAME,
             state->indegree, state->outdegree);
    *out_state = state;
    return NBR_SUCCESS;
out:
    nbr_comm_release(state);
    return rc;
}

nbr_comm_t *nbr_comm_find(MPI_Comm comm)
{
    unsigned long deleted = atomic_load_explicit(&states_deleted, memory_order_acquire);
    struct found *entry = found_entry(comm);
    if (comm == entry->comm && entry->state && deleted == entry->deleted &&
        comm != MPI_COMM_NULL)
        return entry->state;
    nbr_comm_t *state = NULL;
    int found = 0;
    if (comm == MPI_COMM_NULL || ensure_keyval() != NBR_SUCCESS ||
        MPI_Comm_get_attr(comm, state_keyval, &state, &found) != MPI_SUCCESS || !found)
        return NULL;
    *entry = (struct found){comm, state, deleted};
    return state;
}

int nbr_comm_get(MPI_Comm comm, MPI_Info info, nbr_comm_t **state)
{
    int rc = NBR_SUCCESS, found = 0;
    if (comm == MPI_COMM_NULL)
        return NBR_ERR_COMM;
    /* Fast path first: a communicator carrying our state passed every check
     * at set-up, and its kind cannot change. */
    NBR_CHECK(ensure_keyval()); /* synchronises with its creation: cheap after */
    NBR_MPI_CHECK(MPI_Comm_get_attr(comm, state_keyval, state, &found));
    if (found)
        return NBR_SUCCESS;
    NBR_CHECK(nbr_check_comm(comm));
    rc = setup(comm, info, state);
out:
    return rc;
}

/* NBR_NEEDS_NODE_IN_LISTS: one engine round inside each node. */
static int gather_node_lists(nbr_comm_t *state)
{
    nbr_node_lists_t lists = {.rank = state->rank, .nranks = state->nranks,
                              .node_of = state->locality.node_of, .my_in = state->sources,
                              .my_indegree = state->indegree};
    int rc = nbr_engine_run_mpi(state->comm, nbr_comm_engine_tags(state), &lists,
                                nbr_node_lists_step, 4);
    if (rc != NBR_SUCCESS) {
        nbr_node_lists_free(&lists);
        return rc;
    }
    state->node_in_lists = lists.lists;
    state->node_in_degrees = lists.degrees;
    return NBR_SUCCESS;
}

/* NBR_NEEDS_WHOLE_GRAPH: every rank's out-list, gathered by all. */
static int gather_whole_graph(nbr_comm_t *state)
{
    int rc = NBR_SUCCESS, n = state->nranks;
    int *degrees = malloc(((size_t)n + 1) * sizeof(int));
    int *offsets = malloc(((size_t)n + 1) * sizeof(int));
    int *targets = NULL;
    /* every rank allocates (or fails) alike from here: agree before the
     * next collective */
    rc = nbr_agree(state->comm, degrees && offsets ? NBR_SUCCESS : NBR_ERR_NOMEM);
    if (rc != NBR_SUCCESS)
        goto out;
    NBR_MPI_CHECK(MPI_Allgather(&state->outdegree, 1, MPI_INT, degrees, 1, MPI_INT, state->comm));
    long long total = 0;
    for (int r = 0; r < n; r++) {
        offsets[r] = (int)total;
        total += degrees[r];
    }
    offsets[n] = (int)total;
    if (total > INT_MAX) {
        NBR_ERROR("the graph has %lld edges; whole-graph algorithms support up to 2^31", total);
        rc = NBR_ERR_UNSUPPORTED; /* the same on every rank */
        goto out;
    }
    targets = malloc(((size_t)total + 1) * sizeof(int));
    rc = nbr_agree(state->comm, targets ? NBR_SUCCESS : NBR_ERR_NOMEM);
    if (rc != NBR_SUCCESS)
        goto out;
    NBR_MPI_CHECK(MPI_Allgatherv(state->destinations, state->outdegree, MPI_INT, targets,
                                 degrees, offsets, MPI_INT, state->comm));
    state->graph_out_offsets = offsets;
    state->graph_out_targets = targets;
    offsets = targets = NULL;
out:
    free(degrees);
    free(offsets);
    free(targets);
    return rc;
}

int nbr_comm_provide(nbr_comm_t *state, unsigned needs)
{
    int rc = NBR_SUCCESS;
    if ((needs & NBR_NEEDS_NODE_IN_LISTS) && !state->node_in_lists)
        rc = gather_node_lists(state);
    if (rc == NBR_SUCCESS && (needs & NBR_NEEDS_WHOLE_GRAPH) && !state->graph_out_offsets)
        rc = gather_whole_graph(state);
    return rc;
}

int nbr_comm_engine_tags(nbr_comm_t *state)
{
    return NBR_TAG_ENGINE + NBR_ENGINE_TAGS * (int)(state->engine_runs++ % 2);
}

int nbr_comm_next_tag_base(nbr_comm_t *state, int persistent)
{
    unsigned long long *sequence = persistent ? &state->persistent_sequence : &state->sequence;
    int window = (int)((*sequence)++ % (unsigned long long)state->tag_windows);
    if (persistent)
        window += state->tag_windows;
    return NBR_TAG_FIRST_CALL + window * NBR_TAGS_PER_CALL;
}

/* NBR_DUMP_PLAN: one file per communicator and rank, plans appended. */
static void dump_plan(const nbr_comm_t *state, const nbr_plan_t *plan)
{
    const char *dir = state->config.dump_dir;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        NBR_WARN("NBR_DUMP_PLAN: cannot create %s: %s", dir, strerror(errno));
        return;
    }
    char path[NBR_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/nbrcoll-comm%d-rank%d.txt", dir, state->id, state->rank);
    FILE *file = fopen(path, "a");
    if (!file) {
        NBR_WARN("NBR_DUMP_PLAN: cannot write %s: %s", path, strerror(errno));
        return;
    }
    nbr_plan_print(plan, file);
    fclose(file);
}

static nbr_plan_input_t plan_input(const nbr_comm_t *state)
{
    nbr_plan_input_t input = {
        .rank = state->rank, .nranks = state->nranks,
        .indegree = state->indegree, .outdegree = state->outdegree,
        .sources = state->sources, .destinations = state->destinations,
        .locality = &state->locality,
        .node_in_lists = (const int *const *)state->node_in_lists,
        .node_in_degrees = state->node_in_degrees,
        .graph_out_offsets = state->graph_out_offsets,
        .graph_out_targets = state->graph_out_targets,
        .describe = state->config.dump_dir[0] != '\0',
    };
    return input;
}

nbr_plan_input_t nbr_comm_input_for(const nbr_comm_t *state, const nbr_algorithm_t *algorithm,
                                    const nbr_layout_t *layout)
{
    nbr_plan_input_t input = plan_input(state);
    input.layout = layout;
    input.params = nbr_algorithm_params_of(&state->config.params, algorithm);
    int index = nbr_algorithm_index(algorithm);
    input.pattern = state->patterns && index >= 0 ? state->patterns[index] : NULL;
    return input;
}

/* The communicator's algorithm builds its count-independent part once. */
int nbr_comm_pattern(nbr_comm_t *state, const nbr_algorithm_t *algorithm, const void **pattern)
{
    int index = nbr_algorithm_index(algorithm), rc = NBR_SUCCESS;
    if (index < 0 || !state->patterns)
        return NBR_ERR_INTERNAL;
    if (!state->patterns[index]) {
        nbr_plan_input_t input = nbr_comm_input_for(state, algorithm, NULL);
        rc = nbr_algorithm_build_pattern(algorithm, &input, &state->patterns[index]);
    }
    *pattern = state->patterns[index];
    return rc;
}

/* A rank that cannot take part in a call facts exchange still runs its
 * rounds, silent, so that no other rank waits for it. */
static int silent_step(void *context, int round, const nbr_mailbox_t *inbox,
                       nbr_mailbox_t *outbox, int *done)
{
    (void)inbox;
    (void)outbox;
    *done = round + 1 >= *(const int *)context;
    return NBR_SUCCESS;
}

void nbr_comm_facts_begin(nbr_comm_t *state, const nbr_algorithm_t *algorithm,
                          const nbr_layout_t *layout, const nbr_value_index_t *values,
                          int tag_base, nbr_facts_run_t *run)
{
    *run = (nbr_facts_run_t){.algorithm = algorithm, .local = NBR_SUCCESS};
    run->needed = nbr_algorithm_needs_call_facts(algorithm, layout);
    if (!run->needed) {
        run->done = 1;
        return;
    }
    const void *pattern = NULL;
    int rc = nbr_comm_pattern(state, algorithm, &pattern);
    void *context = rc == NBR_SUCCESS ? calloc(1, algorithm->call_facts_size) : NULL;
    if (rc == NBR_SUCCESS && !context)
        rc = NBR_ERR_NOMEM;
    if (rc == NBR_SUCCESS) {
        nbr_plan_input_t input = nbr_comm_input_for(state, algorithm, layout);
        input.values = values;
        rc = algorithm->call_facts_init(&input, context);
    }
    run->local = rc;
    run->context = context;
    run->rounds = algorithm->call_facts_rounds;
    if (context)
        nbr_engine_begin(&run->engine, state->comm, tag_base, context, algorithm->call_facts_step,
                         NBR_CALL_FACTS_ROUNDS);
    else
        nbr_engine_begin(&run->engine, state->comm, tag_base, &run->rounds, silent_step,
                         NBR_CALL_FACTS_ROUNDS);
}

int nbr_comm_facts_advance(nbr_facts_run_t *run, int *done)
{
    int moved = run->done ? 0 : nbr_engine_advance(&run->engine, &run->done);
    *done = run->done;
    return moved;
}

int nbr_comm_facts_end(nbr_facts_run_t *run, void **facts, uint64_t *digest)
{
    *facts = NULL;
    *digest = 0;
    if (!run->needed)
        return NBR_SUCCESS;
    int rc = run->local == NBR_SUCCESS ? run->engine.status : run->local;
    if (rc == NBR_SUCCESS || rc == NBR_ERR_TYPE_MISMATCH)
        rc = run->algorithm->call_facts_check(run->context, digest);
    if (rc != NBR_SUCCESS && rc != NBR_ERR_TYPE_MISMATCH) {
        nbr_comm_free_call_facts(run->algorithm, run->context);
        run->context = NULL;
        return rc;
    }
    *facts = run->context;
    run->context = NULL;
    return rc;
}

int nbr_comm_call_facts(nbr_comm_t *state, const nbr_algorithm_t *algorithm,
                        const nbr_layout_t *layout, const nbr_value_index_t *values,
                        int tag_base, void **facts, uint64_t *digest)
{
    nbr_facts_run_t run;
    int done = 0;
    nbr_comm_facts_begin(state, algorithm, layout, values, tag_base, &run);
    while (!done)
        if (!nbr_comm_facts_advance(&run, &done) && !done)
            sched_yield(); /* ranks may share cores: let the peer run */
    return nbr_comm_facts_end(&run, facts, digest);
}

void nbr_comm_free_call_facts(const nbr_algorithm_t *algorithm, void *facts)
{
    if (facts)
        algorithm->call_facts_free(facts);
    free(facts);
}

int nbr_comm_plan(nbr_comm_t *state, const nbr_algorithm_t *algorithm,
                  const nbr_layout_t *layout, const size_t *block_sizes,
                  const void *call_facts, uint64_t facts_digest, nbr_shared_plan_t **out_plan)
{
    /* plans that depend on other ranks' sizes are this call's alone */
    int cacheable = !block_sizes, slot = 0;
    for (int c = 0; cacheable && c < NBR_PLAN_CACHE; c++) {
        nbr_shared_plan_t *cached = state->cache[c];
        if (cached && cached->algorithm == algorithm && cached->facts_digest == facts_digest &&
            nbr_layout_equal(&cached->layout, layout)) {
            cached->refs++;
            state->cache_use[c] = ++state->cache_clock;
            *out_plan = cached;
            return NBR_SUCCESS;
        }
        if (!state->cache[slot])
            continue;
        if (!cached || state->cache_use[c] < state->cache_use[slot])
            slot = c;
    }
    nbr_shared_plan_t *shared = calloc(1, sizeof(*shared));
    if (!shared)
        return NBR_ERR_NOMEM;
    shared->refs = 1;
    shared->algorithm = algorithm;
    shared->facts_digest = facts_digest;
    int rc = nbr_layout_copy(&shared->layout, layout);
    if (rc != NBR_SUCCESS) {
        free(shared);
        return rc;
    }
    const void *pattern = NULL;
    rc = nbr_comm_pattern(state, algorithm, &pattern);
    nbr_plan_input_t input = nbr_comm_input_for(state, algorithm, &shared->layout);
    input.block_sizes = block_sizes;
    input.call_facts = call_facts;
    if (rc == NBR_SUCCESS)
        rc = nbr_build_plan(algorithm, &input, &shared->plan);
    if (rc != NBR_SUCCESS) {
        nbr_layout_free(&shared->layout);
        free(shared);
        return rc;
    }
    if (state->config.dump_dir[0])
        dump_plan(state, &shared->plan);
    if (cacheable) {
        nbr_shared_plan_release(state->cache[slot]);
        shared->refs++;
        state->cache[slot] = shared;
        state->cache_use[slot] = ++state->cache_clock;
    }
    *out_plan = shared;
    return NBR_SUCCESS;
}

void nbr_comm_count(nbr_comm_t *state, const nbr_plan_t *plan, unsigned long long calls)
{
    nbr_counters_t *c = &state->counters;
    const nbr_plan_stats_t *s = &plan->stats;
    c->calls += calls;
    c->msgs_intra_node += calls * s->msgs_intra_node;
    c->bytes_intra_node += calls * s->bytes_intra_node;
    c->msgs_inter_node += calls * s->msgs_inter_node;
    c->bytes_inter_node += calls * s->bytes_inter_node;
    c->msgs_off_socket += calls * s->msgs_off_socket;
    c->bytes_off_socket += calls * s->bytes_off_socket;
    c->local_copies += calls * s->local_copies;
    c->bytes_local_copies += calls * s->bytes_local_copies;
}

void nbr_comm_count_shortcut(nbr_comm_t *state)
{
    nbr_shortcut_t *cut = &state->shortcut;
    if (cut->uncounted)
        nbr_comm_count(state, &cut->plan->plan, cut->uncounted);
    cut->uncounted = 0;
}

/* A predefined type's size, which cannot change (MPI forbids freeing
 * one); -1 for a derived type, whose handle may name another type later. */
static int predefined_size(MPI_Datatype type)
{
    int ints = 0, addresses = 0, types = 0, combiner = -1, size = -1;
    if (MPI_Type_get_envelope(type, &ints, &addresses, &types, &combiner) != MPI_SUCCESS ||
        combiner != MPI_COMBINER_NAMED || MPI_Type_size(type, &size) != MPI_SUCCESS)
        return -1;
    return size;
}

void nbr_comm_arm_shortcut(nbr_comm_t *state, nbr_shared_plan_t *plan,
                           const nbr_algorithm_t *algorithm, nbr_stream_t *stream,
                           MPI_Datatype sendtype, MPI_Datatype recvtype)
{
    nbr_comm_count_shortcut(state); /* with the plan they ran */
    plan->refs++;
    nbr_shared_plan_release(state->shortcut.plan);
    int size = sendtype == recvtype ? predefined_size(sendtype) : -1;
    state->shortcut = (nbr_shortcut_t){.block_bytes = plan->layout.send[0].bytes,
                                       .algorithm = algorithm,
                                       .stream = stream,
                                       .type = size >= 0 ? sendtype : MPI_DATATYPE_NULL,
                                       .type_size = size,
                                       .plan = plan};
}
