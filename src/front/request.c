#include "front/request.h"

#include "base/log.h"
#include "base/settings.h"
#include "front/call_layout.h"
#include "front/library.h"
#include "front/select.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- requests */

/* Everything a request holds for one call; memory for the next stays. */
static void request_reset(nbr_request_t req)
{
    if (req->exec && req->exec->plan)
        nbr_executor_unbind(req->exec);
    nbr_typed_buffer_free(&req->send);
    nbr_typed_buffer_free(&req->recv);
    req->send.type = req->recv.type = MPI_DATATYPE_NULL;
    req->send.dense = req->recv.dense = 1;
    free(req->block_sizes);
    req->block_sizes = NULL;
    free(req->value_storage);
    free(req->value_at);
    req->value_storage = NULL;
    req->value_at = NULL;
    req->has_values = 0;
    req->sizes_differ = 0;
    free(req->discard);
    req->discard = NULL;
    nbr_shared_plan_release(req->plan);
    req->plan = NULL;
    nbr_library_release(req);
    req->library = 0;
}

static void request_destroy(nbr_request_t req)
{
    if (!req)
        return;
    nbr_comm_t *state = req->comm;
    request_reset(req);
    nbr_executor_destroy(req->exec);
    nbr_executor_destroy(req->agreement);
    nbr_layout_free(&req->layout);
    free(req);
    if (state)
        nbr_comm_release(state);
}

/* A finished request: kept as its communicator's spare when the slot is
 * free and the communicator still lives (refs > 1: ours is not the last). */
static void request_retire(nbr_request_t req)
{
    nbr_comm_t *state = req->comm;
    if (req->persistent || state->spare_request || state->refs <= 1) {
        request_destroy(req);
        return;
    }
    request_reset(req);
    req->comm = NULL; /* a spare holds no reference */
    state->spare_request = req;
    state->free_spare = request_destroy;
    nbr_comm_release(state);
}

/* The algorithm a request runs: the communicator's, or for a persistent
 * request the one its info names (NULL: auto, front/select.c). Persistent set-up is collective, so the
 * choice is agreed on every rank (same status, same algorithm) before
 * anything collective happens, and the node lists an algorithm needs are
 * gathered by every rank or by none. */
static int choose_algorithm(MPI_Info info, int persistent, nbr_comm_t *state,
                            const nbr_algorithm_t **chosen, int *expected_starts)
{
    const nbr_algorithm_t *algorithm = state->config.algorithm;
    int rc = NBR_SUCCESS;
    *expected_starts = state->config.expected_starts;
    if (persistent && info != MPI_INFO_NULL)
        rc = nbr_config_request_algorithm(info, &algorithm);
    if (persistent && rc == NBR_SUCCESS && info != MPI_INFO_NULL)
        rc = nbr_setting_int(info, "nbr_expected_starts", "NBR_EXPECTED_STARTS", 1,
                             expected_starts);
    if (persistent) {
        /* one MIN over (status, id, -id): equal ids everywhere iff min id == -min(-id) */
        int id = nbr_algorithm_index(algorithm);
        int mine[3] = {rc, rc == NBR_SUCCESS ? id : 0, rc == NBR_SUCCESS ? -id : 0}, low[3];
        int mrc = MPI_Allreduce(mine, low, 3, MPI_INT, MPI_MIN, state->comm);
        if (mrc != MPI_SUCCESS)
            return nbr_mpi_failed("MPI_Allreduce", mrc);
        if (low[0] != NBR_SUCCESS)
            return low[0];
        if (low[1] != -low[2]) {
            NBR_ERROR("persistent request: ranks name different algorithms in nbr_algorithm");
            return NBR_ERR_ALGORITHM;
        }
    }
    if (algorithm && (rc = nbr_comm_provide(state, algorithm->needs)) != NBR_SUCCESS)
        return rc;
    *chosen = algorithm; /* NULL: auto decides once the layout is known */
    return NBR_SUCCESS;
}

/* ------------------------------------------------------------ sizes */

/* Runs an internal plan over nbrcoll's own host buffers to its end, on the
 * communicator's executor kind (every rank picks the same), so that calls
 * still in flight keep moving while this one waits. */
static int run_now(nbr_comm_t *state, const nbr_plan_t *plan, char *const base[NBR_NUM_BUFFERS],
                   int tag_base)
{
    nbr_executor_t *exec = NULL;
    nbr_exec_buffer_t buffers[NBR_NUM_BUFFERS];
    for (int b = 0; b < NBR_NUM_BUFFERS; b++)
        buffers[b] = (nbr_exec_buffer_t){.base = base[b]};
    int rc = nbr_executor_create(&state->exec, &exec);
    if (rc == NBR_SUCCESS)
        rc = nbr_executor_bind(exec, plan, buffers, tag_base, 0, -1);
    if (rc == NBR_SUCCESS)
        rc = nbr_executor_start(exec);
    if (rc == NBR_SUCCESS)
        rc = nbr_executor_wait(exec);
    nbr_executor_destroy(exec);
    return rc;
}

/* allgatherv through relays: before the data, every rank's block size (8
 * bytes) travels the algorithm's own pattern, so that each relay learns
 * the size of every block it forwards. Blocking, on the call's upper tags
 * (the data plan uses the lower ones); every rank of the call runs it. */
static int exchange_block_sizes(nbr_comm_t *state, const nbr_algorithm_t *algorithm,
                                int tag_base, const nbr_layout_t *layout, size_t **out)
{
    int rc = NBR_SUCCESS, n = state->nranks, indeg = state->indegree;
    nbr_layout_t sizes_layout = {0};
    nbr_plan_t plan;
    uint64_t mine = layout->send[0].bytes;
    uint64_t *received = calloc((size_t)indeg + 1, sizeof(uint64_t));
    size_t *offset_of = malloc(((size_t)n + 1) * sizeof(size_t));
    size_t *sizes = malloc(((size_t)n + 1) * sizeof(size_t));
    char *scratch = NULL;
    nbr_plan_init(&plan, state->rank, n, NBR_COLL_ALLGATHER, algorithm->name);
    if (!received || !offset_of || !sizes) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    NBR_CHECK(nbr_layout_init(&sizes_layout, NBR_COLL_ALLGATHER, 1, indeg));
    sizes_layout.send[0] = (nbr_slot_t){0, sizeof(uint64_t)};
    for (int i = 0; i < indeg; i++)
        sizes_layout.recv[i] = (nbr_slot_t){(size_t)i * sizeof(uint64_t), sizeof(uint64_t)};
    nbr_plan_input_t input = nbr_comm_input_for(state, algorithm, &sizes_layout);
    NBR_CHECK(nbr_build_size_plan(algorithm, &input, &plan, offset_of));
    if (plan.scratch_bytes > 0 && !(scratch = malloc(plan.scratch_bytes))) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    char *base[NBR_NUM_BUFFERS] = {(char *)&mine, (char *)received, scratch};
    NBR_CHECK(run_now(state, &plan, base, tag_base + NBR_PLAN_TAGS));
    for (int r = 0; r < n; r++) {
        uint64_t size = 0;
        if (offset_of[r] != SIZE_MAX)
            memcpy(&size, scratch + offset_of[r], sizeof size);
        sizes[r] = (size_t)size;
    }
    sizes[state->rank] = (size_t)mine;
    *out = sizes;
    sizes = NULL;
out:
    nbr_plan_free(&plan);
    nbr_layout_free(&sizes_layout);
    free(received);
    free(offset_of);
    free(sizes);
    free(scratch);
    return rc;
}

/* A receive slot that differs from the size its sender announced is a
 * signature mismatch: 1 here, reported at completion (the plan still runs,
 * so that no peer waits), like a truncated message in the other plans. */
static int block_sizes_differ(const nbr_comm_t *state, const nbr_layout_t *layout,
                              const size_t *sizes)
{
    for (int i = 0; i < state->indegree; i++) {
        int src = state->sources[i];
        if (src != state->rank && layout->recv[i].bytes != sizes[src]) {
            NBR_ERROR("allgatherv: rank %d sends %zu bytes, %zu expected: send and receive "
                      "signatures differ", src, sizes[src], layout->recv[i].bytes);
            return 1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------- executors */

static nbr_exec_buffer_t exec_buffer(const nbr_typed_buffer_t *buf)
{
    return (nbr_exec_buffer_t){.base = nbr_typed_buffer_base(buf), .user = buf->user, .staged = !buf->dense};
}

/* A run's finish step (exec/executor.h): staged receives back into the
 * user's typed buffer, before any error agreement. */
static int unpack_received(void *arg)
{
    nbr_request_t req = arg;
    if (req->exec->bind_status != NBR_SUCCESS)
        return NBR_SUCCESS; /* the user's memory may not be host memory: leave it */
    return nbr_typed_buffer_transfer(&req->recv, req->plan->layout.recv, req->comm->comm, NBR_UNPACK);
}

static int bind(nbr_request_t req, nbr_comm_t *state, int tag_base, int persistent)
{
    if (!req->exec) {
        int rc = nbr_executor_create(&state->exec, &req->exec);
        if (rc != NBR_SUCCESS)
            return rc;
    }
    nbr_exec_buffer_t buffers[NBR_NUM_BUFFERS] = {exec_buffer(&req->send),
                                                  exec_buffer(&req->recv), {0}};
    int rc = nbr_executor_bind(req->exec, &req->plan->plan, buffers, tag_base, persistent,
                               req->agree_tag);
    if (rc == NBR_SUCCESS && !req->recv.dense)
        nbr_executor_on_finish(req->exec, unpack_received, req);
    return rc;
}

/* req NULL: this rank could not allocate one; it still takes part in what
 * is collective for persistent requests, so nobody waits for it. */
static int prepare(const nbr_call_t *call, const nbr_algorithm_t *algorithm,
                   int expected_starts, nbr_comm_t *state, int tag_base, int persistent,
                   nbr_request_t req)
{
    int rc = req ? nbr_call_describe(call, state, req) : NBR_ERR_NOMEM;
    if (persistent) /* _init is collective: the steps below are too */
        rc = nbr_agree(state->comm, rc);
    if (rc != NBR_SUCCESS)
        return rc;
    nbr_layout_t *layout = &req->layout;
    req->trial = NULL;
    if (!algorithm) {
        nbr_exec_buffer_t send = exec_buffer(&req->send), recv = exec_buffer(&req->recv);
        int device = nbr_exec_on_device(&state->exec, &send) ||
                     nbr_exec_on_device(&state->exec, &recv);
        nbr_priced_call_t priced = {call->kind,
                                    (size_t)call->sendcount * (size_t)req->send.type_size,
                                    req->has_values ? &req->values : NULL, device,
                                    persistent ? expected_starts : 1};
        NBR_CHECK(nbr_comm_select(state, &priced, layout, persistent, call->blocking, &algorithm,
                                  &req->trial));
    }
    state->last_algorithm = algorithm;
    if (algorithm->size_plan && call->kind == NBR_CALL_ALLGATHERV) {
        NBR_CHECK(exchange_block_sizes(state, algorithm, tag_base, layout, &req->block_sizes));
        req->sizes_differ = block_sizes_differ(state, layout, req->block_sizes);
    }
    /* aggregate's agents depend on every rank's sizes: an exchange first,
     * every call (the v-forms' sizes may change on any rank), once for a
     * persistent request; a hard failure anywhere fails it everywhere */
    void *facts = NULL;
    uint64_t digest = 0;
    rc = nbr_comm_call_facts(state, algorithm, layout, req->has_values ? &req->values : NULL,
                             &facts, &digest);
    if (rc == NBR_ERR_TYPE_MISMATCH) {
        NBR_ERROR("%s: another node sends this node other sizes than its ranks receive: send "
                  "and receive signatures differ", nbr_call_name(call->kind));
        req->sizes_differ = 1;
        rc = NBR_SUCCESS;
    }
    if (nbr_algorithm_needs_call_facts(algorithm, layout))
        rc = nbr_agree(state->comm, rc);
    if (rc == NBR_SUCCESS)
        rc = nbr_comm_plan(state, algorithm, layout, req->block_sizes, facts, digest, &req->plan);
    nbr_comm_free_call_facts(algorithm, facts);
    if (rc != NBR_SUCCESS)
        goto out;
    /* the library takes the user's arguments as they are; its plan only
     * says what it moves (counters) */
    req->library = algorithm->library && nbr_comm_library_usable(state, layout->coll);
    if (req->library) {
        NBR_CHECK(nbr_library_keep(req, call));
        if (req->agree_tag >= 0 && !req->agreement)
            NBR_CHECK(nbr_executor_create_agreement(&state->exec, &req->agreement));
        /* the next such call may take the shortcut (one agreeing on errors
         * takes the long way) */
        if (call->blocking && call->kind == NBR_CALL_ALLGATHER && !req->trial &&
            !state->config.agree_errors)
            nbr_comm_arm_shortcut(state, req->plan, algorithm,
                                  state->config.algorithm
                                      ? NULL
                                      : nbr_comm_decision(state, NBR_CALL_ALLGATHER,
                                                          req->plan->layout.send[0].bytes),
                                  call->sendtype, call->recvtype);
        return NBR_SUCCESS;
    }
    /* plans move bytes: staged buffers get their area (and their own
     * type) now that a plan, not the library, will run the call */
    NBR_CHECK(nbr_typed_buffer_stage(&req->send));
    NBR_CHECK(nbr_typed_buffer_stage(&req->recv));
    rc = bind(req, state, tag_base, persistent);
    if (rc != NBR_SUCCESS) {
        nbr_shared_plan_release(req->plan);
        req->plan = NULL;
    }
out:
    return rc;
}

int nbr_request_create(const nbr_call_t *call, MPI_Info info, int persistent,
                       nbr_request_t *request)
{
    nbr_comm_t *state = NULL;
    if (!request)
        return NBR_ERR_REQUEST;
    *request = NBR_REQUEST_NULL;
    int rc = nbr_comm_get(call->comm, MPI_INFO_NULL, &state);
    if (rc != NBR_SUCCESS)
        return rc;
    /* Every rank takes this call's tags before any check that may fail on
     * some ranks only: sequence numbers must stay equal everywhere. */
    int tag_base = nbr_comm_next_tag_base(state, persistent);
    const nbr_algorithm_t *algorithm = NULL;
    int expected_starts = 1;
    rc = choose_algorithm(info, persistent, state, &algorithm, &expected_starts);
    if (rc != NBR_SUCCESS)
        return rc; /* agreed already for persistent requests */
    nbr_request_t req = NULL;
    if (!persistent && state->spare_request) {
        req = state->spare_request;
        state->spare_request = NULL;
    } else if ((req = calloc(1, sizeof(*req)))) {
        req->send.type = req->recv.type = MPI_DATATYPE_NULL;
        req->send.dense = req->recv.dense = 1;
        req->library_request = MPI_REQUEST_NULL;
    }
    if (req) {
        req->persistent = persistent;
        req->agree_tag =
            state->config.agree_errors ? tag_base + NBR_TAG_AGREE_IN_CALL : -1;
        req->comm = state;
        req->user_comm = call->comm;
        nbr_comm_retain(state);
    }
    rc = prepare(call, algorithm, expected_starts, state, tag_base, persistent, req);
    if (persistent)
        rc = nbr_agree(state->comm, rc); /* _init is collective: one status for all */
    if (rc != NBR_SUCCESS) {
        request_destroy(req);
        return rc;
    }
    *request = req;
    return NBR_SUCCESS;
}

/* A run with sizes_differ ends in NBR_ERR_TYPE_MISMATCH: it says more
 * than success or the MPI library's own failure for the same cause. */
static int mismatch_says_more(nbr_request_t req, int rc)
{
    return req->sizes_differ && (rc == NBR_SUCCESS || rc == NBR_ERR_MPI) ? NBR_ERR_TYPE_MISMATCH
                                                                       : rc;
}

/* nbr_agree_errors on a call the MPI library runs. A nonblocking one is
 * watched: from its start the request's agreement executor is in flight,
 * tests the library's request and then agrees, so progress made anywhere
 * (a blocking call waiting out what is in flight) moves it. A blocking one
 * agrees right after the library's call. */
static int watched(nbr_request_t req)
{
    return req->agreement && !req->call.blocking;
}

/* The agreement from this rank's status, to its end. */
static int agree_now(nbr_request_t req, int rc)
{
    nbr_executor_agree(req->agreement, req->agree_tag, rc);
    return nbr_executor_wait(req->agreement);
}

int nbr_start(nbr_request_t *request)
{
    if (!request || !*request)
        return NBR_ERR_REQUEST;
    nbr_request_t req = *request;
    if (req->running)
        return NBR_ERR_REQUEST;
    if (req->library) {
        int rc = nbr_library_start(req);
        if (watched(req) && rc == NBR_SUCCESS)
            rc = nbr_executor_agree_after(req->agreement, req->agree_tag, nbr_library_poll, req);
        else if (watched(req)) /* the others agree on it: take part, then report */
            agree_now(req, rc);
        req->running = rc == NBR_SUCCESS;
        return rc == NBR_SUCCESS ? rc : mismatch_says_more(req, rc); /* blocking: it ran */
    }
    /* a send buffer that could not be packed still runs, as poison: the
     * peers wait for its messages (the error comes at completion). A
     * binding that failed runs so too, and packs nothing: it may have
     * failed because the typed buffer is device memory, which MPI_Pack
     * cannot read. */
    int packed = req->exec->bind_status != NBR_SUCCESS
                     ? req->exec->bind_status
                     : nbr_typed_buffer_transfer(&req->send, req->plan->layout.send, req->comm->comm, NBR_PACK);
    req->running = 1;
    int rc = nbr_executor_start_failed(req->exec, packed);
    if (rc != NBR_SUCCESS)
        req->running = 0;
    return rc;
}

/* A run has ended (status rc): count, and retire non-persistent requests. */
static int complete(nbr_request_t *request, int rc)
{
    nbr_request_t req = *request;
    req->running = 0;
    if (!req->library) /* staged receives were unpacked by the run's finish step */
        nbr_executor_add_counters(req->exec, &req->comm->counters);
    rc = mismatch_says_more(req, rc);
    nbr_comm_count(req->comm, &req->plan->plan, 1);
    if (!req->persistent) {
        request_retire(req);
        *request = NBR_REQUEST_NULL;
    }
    return rc;
}

int nbr_wait(nbr_request_t *request)
{
    if (!request || !*request)
        return NBR_ERR_REQUEST;
    nbr_request_t req = *request;
    if (!req->running)
        return NBR_SUCCESS; /* an inactive persistent request, as in MPI */
    if (!req->library)
        return complete(request, nbr_executor_wait(req->exec));
    if (watched(req))
        return complete(request, nbr_executor_wait(req->agreement));
    int rc = nbr_library_wait(req);
    return complete(request, req->agreement ? agree_now(req, rc) : rc);
}

int nbr_test(nbr_request_t *request, int *flag)
{
    if (!request || !*request || !flag)
        return NBR_ERR_REQUEST;
    nbr_request_t req = *request;
    *flag = 0;
    if (!req->running) {
        *flag = 1;
        return NBR_SUCCESS;
    }
    if (!req->library) {
        int rc = nbr_executor_test(req->exec, flag);
        return *flag ? complete(request, rc) : rc;
    }
    int rc = watched(req) ? nbr_executor_test(req->agreement, flag) : nbr_library_test(req, flag);
    if (*flag && req->agreement && !watched(req))
        rc = agree_now(req, rc);
    return *flag ? complete(request, rc) : rc;
}

int nbr_request_query(nbr_request_t request, MPI_Comm *comm, int *persistent, int *active)
{
    if (!request)
        return NBR_ERR_REQUEST;
    if (!comm || !persistent || !active)
        return NBR_ERR_ARG;
    *comm = request->user_comm;
    *persistent = request->persistent;
    *active = request->running;
    return NBR_SUCCESS;
}

int nbr_request_free(nbr_request_t *request)
{
    if (!request || !*request)
        return NBR_ERR_REQUEST;
    if ((*request)->running)
        return NBR_ERR_REQUEST;
    request_retire(*request);
    *request = NBR_REQUEST_NULL;
    return NBR_SUCCESS;
}
