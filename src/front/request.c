#include "front/request.h"

#include "base/log.h"
#include "base/settings.h"
#include "front/call_layout.h"
#include "front/library.h"
#include "front/select.h"

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- requests */

static void sizes_release(nbr_request_t req);
static void release_held(nbr_request_t req);

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
    nbr_shared_plan_release(req->plan);
    req->plan = NULL;
    if (req->fallback && req->fallback->plan)
        nbr_executor_unbind(req->fallback);
    nbr_shared_plan_release(req->fallback_plan);
    req->fallback_plan = NULL;
    free(req->stand_in);
    req->stand_in = NULL;
    sizes_release(req);
    nbr_comm_free_call_facts(req->algorithm, req->facts);
    req->facts = NULL;
    nbr_library_release(req);
    release_held(req);
    req->library = 0;
    req->guarded = 0;
    req->status = NBR_SUCCESS;
}

static void request_destroy(nbr_request_t req)
{
    if (!req)
        return;
    nbr_comm_t *state = req->comm;
    request_reset(req);
    nbr_executor_destroy(req->exec);
    nbr_executor_destroy(req->fallback);
    nbr_executor_destroy(req->sizes_exec);
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

/* ------------------------------------------------------ the size round */

/* allgatherv through relays (and allgather through them where ranks'
 * blocks differ): before the data, every rank's block size (8 bytes)
 * travels the algorithm's own pattern, so that each relay learns the size
 * of every block it forwards. A run of its own, on the call's second
 * plan's tags; every rank of the call runs it. */
static int sizes_begin(nbr_request_t req)
{
    nbr_comm_t *state = req->comm;
    const nbr_algorithm_t *algorithm = req->algorithm;
    int rc = NBR_SUCCESS, n = state->nranks, indeg = state->indegree;
    req->my_size = req->layout.send[0].bytes;
    req->sizes_in = calloc((size_t)indeg + 1, sizeof(uint64_t));
    req->offset_of = malloc(((size_t)n + 1) * sizeof(size_t));
    nbr_plan_init(&req->sizes_plan, state->rank, n, NBR_COLL_ALLGATHER, algorithm->name);
    if (!req->sizes_in || !req->offset_of)
        return NBR_ERR_NOMEM;
    NBR_CHECK(nbr_layout_init(&req->sizes_layout, NBR_COLL_ALLGATHER, 1, indeg));
    req->sizes_layout.send[0] = (nbr_slot_t){0, sizeof(uint64_t)};
    for (int i = 0; i < indeg; i++)
        req->sizes_layout.recv[i] = (nbr_slot_t){(size_t)i * sizeof(uint64_t), sizeof(uint64_t)};
    nbr_plan_input_t input = nbr_comm_input_for(state, algorithm, &req->sizes_layout);
    NBR_CHECK(nbr_build_size_plan(algorithm, &input, &req->sizes_plan, req->offset_of));
    if (req->sizes_plan.scratch_bytes > 0 &&
        !(req->sizes_scratch = malloc(req->sizes_plan.scratch_bytes)))
        return NBR_ERR_NOMEM;
    if (!req->sizes_exec)
        NBR_CHECK(nbr_executor_create(&state->exec, &req->sizes_exec));
    nbr_exec_buffer_t buffers[NBR_NUM_BUFFERS] = {{.base = (char *)&req->my_size},
                                                  {.base = (char *)req->sizes_in},
                                                  {.base = req->sizes_scratch}};
    NBR_CHECK(nbr_executor_bind(req->sizes_exec, &req->sizes_plan, buffers,
                                req->tag_base + NBR_TAG_SECOND_PLAN_IN_CALL, 0, -1));
    rc = nbr_executor_start(req->sizes_exec);
out:
    return rc;
}

/* What the size round learnt, as every rank's block size; a receive slot
 * shorter than the size its sender announced is a signature mismatch,
 * reported at completion (the plan still runs, so that no peer waits); a
 * longer one takes the block in its front, as MPI does. */
static int sizes_end(nbr_request_t req)
{
    nbr_comm_t *state = req->comm;
    int n = state->nranks;
    size_t *sizes = malloc(((size_t)n + 1) * sizeof(size_t));
    if (!sizes)
        return NBR_ERR_NOMEM;
    for (int r = 0; r < n; r++) {
        uint64_t size = 0;
        if (req->offset_of[r] != SIZE_MAX)
            memcpy(&size, req->sizes_scratch + req->offset_of[r], sizeof size);
        sizes[r] = (size_t)size;
    }
    sizes[state->rank] = (size_t)req->my_size;
    free(req->block_sizes);
    req->block_sizes = sizes;
    for (int i = 0; i < state->indegree; i++) {
        int src = state->sources[i];
        if (src != state->rank && req->layout.recv[i].bytes < sizes[src]) {
            NBR_ERROR("%s: rank %d sends %zu bytes, %zu expected: send and receive signatures "
                      "differ", nbr_call_name(req->priced.kind), src, sizes[src],
                      req->layout.recv[i].bytes);
            req->sizes_differ = 1;
            break;
        }
    }
    return NBR_SUCCESS;
}

static void sizes_release(nbr_request_t req)
{
    if (req->sizes_exec && req->sizes_exec->plan)
        nbr_executor_unbind(req->sizes_exec);
    nbr_plan_free(&req->sizes_plan);
    nbr_layout_free(&req->sizes_layout);
    free(req->sizes_in);
    free(req->offset_of);
    free(req->sizes_scratch);
    req->sizes_in = NULL;
    req->offset_of = NULL;
    req->sizes_scratch = NULL;
}

/* ---------------------------------------------------------- executors */

static nbr_exec_buffer_t exec_buffer(const nbr_typed_buffer_t *buf)
{
    return (nbr_exec_buffer_t){.base = nbr_typed_buffer_base(buf), .user = buf->user,
                               .staged = !buf->dense};
}

/* A run's finish step (exec/executor.h): staged receives back into the
 * user's typed buffer, before any error agreement. */
static int unpack_received(void *arg)
{
    nbr_request_t req = arg;
    if (req->exec->bind_status != NBR_SUCCESS)
        return NBR_SUCCESS; /* the user's memory may not be host memory: leave it */
    return nbr_typed_buffer_transfer(&req->recv, req->plan->layout.recv, req->comm->comm,
                                     NBR_UNPACK);
}

static int unpack_fallback(void *arg)
{
    nbr_request_t req = arg;
    if (req->fallback->bind_status != NBR_SUCCESS)
        return NBR_SUCCESS;
    return nbr_typed_buffer_transfer(&req->recv, req->fallback_plan->layout.recv,
                                     req->comm->comm, NBR_UNPACK);
}

static int bind_one(nbr_request_t req, nbr_executor_t **exec, const nbr_plan_t *plan,
                    const nbr_exec_buffer_t buffers[NBR_NUM_BUFFERS], int tag_base,
                    int (*finish)(void *arg))
{
    if (!*exec) {
        int rc = nbr_executor_create(&req->comm->exec, exec);
        if (rc != NBR_SUCCESS)
            return rc;
    }
    int rc = nbr_executor_bind(*exec, plan, buffers, tag_base, req->persistent, req->agree_tag);
    if (rc == NBR_SUCCESS && !req->recv.dense && finish)
        nbr_executor_on_finish(*exec, finish, req);
    return rc;
}

/* A guarded allgather (a relay over the agreed block size): a rank whose
 * own blocks are another size moves stand-ins in the plan (zeros out,
 * scratch in) and the guard voids the run on every rank; the fallback,
 * naive's plan on the user's layout, then runs instead. */
static int bind_guarded(nbr_request_t req, nbr_layout_t *stand_in_layout)
{
    nbr_comm_t *state = req->comm;
    nbr_exec_buffer_t user[NBR_NUM_BUFFERS] = {exec_buffer(&req->send), exec_buffer(&req->recv),
                                               {0}};
    nbr_exec_buffer_t plan_buffers[NBR_NUM_BUFFERS] = {user[0], user[1], {0}};
    if (!req->holds) {
        plan_buffers[0] = (nbr_exec_buffer_t){.base = req->stand_in};
        plan_buffers[1] = (nbr_exec_buffer_t){.base = req->stand_in + req->uniform_bytes};
    }
    (void)stand_in_layout;
    int rc = nbr_comm_plan(state, nbr_baseline_algorithm(), &req->layout, NULL, NULL, 0,
                           &req->fallback_plan);
    if (rc == NBR_SUCCESS)
        rc = bind_one(req, &req->fallback, &req->fallback_plan->plan, user,
                      req->tag_base + NBR_TAG_SECOND_PLAN_IN_CALL, unpack_fallback);
    if (rc == NBR_SUCCESS)
        rc = bind_one(req, &req->exec, &req->plan->plan, plan_buffers, req->tag_base,
                      req->holds ? unpack_received : NULL);
    /* beside whether every rank holds the size, every rank's sizes: a
     * blocking stream takes them for its next call (select.h) */
    int64_t s = (int64_t)req->priced.send_block_bytes, q = (int64_t)req->priced.recv_block_bytes;
    const int64_t guard[5] = {req->holds, s, -s, q, -q};
    if (rc == NBR_SUCCESS)
        nbr_executor_guard(req->exec, req->tag_base + NBR_TAG_GUARD_IN_CALL, guard, 5,
                           req->fallback);
    return rc;
}

/* -------------------------------------------------------- preparation */

/* The algorithm of a persistent request: the communicator's, or the one
 * its info names (NULL: auto). _init is collective, so the choice is
 * agreed on every rank (same status, same algorithm) before anything
 * collective happens, and the set-up facts an algorithm needs are
 * gathered by every rank or by none. */
static int persistent_algorithm(MPI_Info info, nbr_comm_t *state,
                                const nbr_algorithm_t **chosen, int *expected_starts)
{
    const nbr_algorithm_t *algorithm = state->config.algorithm;
    int rc = NBR_SUCCESS;
    *expected_starts = state->config.expected_starts;
    if (info != MPI_INFO_NULL)
        rc = nbr_config_request_algorithm(info, &algorithm);
    if (rc == NBR_SUCCESS && info != MPI_INFO_NULL)
        rc = nbr_setting_int_over(info, NBR_SETTING_EXPECTED_STARTS, expected_starts);
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
    if (algorithm && (rc = nbr_comm_provide(state, algorithm->needs)) != NBR_SUCCESS)
        return rc;
    *chosen = algorithm; /* NULL: auto decides once the layout is known */
    return NBR_SUCCESS;
}

/* Whether a persistent request with this algorithm decides at _init:
 * auto's, and a relay's allgather (the block size). */
static int persistent_decides(const nbr_request_t req)
{
    return !req->algorithm || nbr_relays_allgather(req->algorithm, req->priced.kind);
}

/* Whether allgather's relays run it as allgatherv: ranks' blocks differed. */
static int sized_round(const nbr_request_t req)
{
    const nbr_algorithm_t *a = req->algorithm;
    return a->size_plan && (req->layout.coll == NBR_COLL_ALLGATHERV ||
                            (nbr_relays_allgather(a, req->priced.kind) &&
                             req->uniform_bytes == NBR_NOT_UNIFORM));
}

/* The plan, and what runs it: the library's collective, or an executor
 * bound to the user's buffers (guarded for a relay over the agreed block
 * size, outside persistent requests, whose sizes never change). */
static int build(nbr_request_t req)
{
    nbr_comm_t *state = req->comm;
    const nbr_algorithm_t *algorithm = req->algorithm;
    nbr_layout_t *layout = &req->layout, stand_in = {0};
    int rc = NBR_SUCCESS;
    state->last_algorithm = algorithm;
    req->guarded = !req->persistent && nbr_relays_allgather(algorithm, req->priced.kind) &&
                   req->uniform_bytes != NBR_NOT_UNIFORM;
    if (req->guarded) {
        size_t S = req->uniform_bytes;
        req->holds = req->priced.send_block_bytes == S && req->priced.recv_block_bytes == S;
        if (!req->holds) { /* the plan's shape, over stand-ins */
            free(req->stand_in);
            req->stand_in = calloc(S * ((size_t)state->indegree + 1) + 1, 1);
            if (!req->stand_in)
                return NBR_ERR_NOMEM;
            NBR_CHECK(nbr_layout_init(&stand_in, NBR_COLL_ALLGATHER, 1, state->indegree));
            stand_in.send[0] = (nbr_slot_t){0, S};
            for (int i = 0; i < state->indegree; i++)
                stand_in.recv[i] = (nbr_slot_t){(size_t)i * S, S};
            layout = &stand_in;
        }
    } else if (sized_round(req) && layout->coll == NBR_COLL_ALLGATHER) {
        layout->coll = NBR_COLL_ALLGATHERV; /* the same slots, sizes from the round */
    }
    NBR_CHECK(nbr_comm_plan(state, algorithm, layout, req->block_sizes, req->facts, req->digest,
                            &req->plan));
    nbr_comm_free_call_facts(algorithm, req->facts);
    req->facts = NULL;
    /* the library takes the user's arguments as they are; its plan only
     * says what it moves (counters) */
    req->library = algorithm->library && nbr_comm_library_usable(state, layout->coll);
    if (req->library) {
        NBR_CHECK(nbr_library_keep(req, &req->call));
        if (req->agree_tag >= 0 && !req->agreement)
            NBR_CHECK(nbr_executor_create_agreement(&state->exec, &req->agreement));
        /* the next such call may take the shortcut (one agreeing on errors
         * takes the long way) */
        if (req->call.blocking && req->priced.kind == NBR_CALL_ALLGATHER && !req->trial &&
            !state->config.agree_errors)
            nbr_comm_arm_shortcut(state, req->plan, algorithm, req->stream, req->call.sendtype,
                                  req->call.recvtype);
        goto out;
    }
    /* plans move bytes: staged buffers get their area (and their own
     * type) now that a plan, not the library, will run the call */
    NBR_CHECK(nbr_typed_buffer_stage(&req->send));
    NBR_CHECK(nbr_typed_buffer_stage(&req->recv));
    if (req->guarded) {
        rc = bind_guarded(req, &stand_in);
    } else {
        nbr_exec_buffer_t buffers[NBR_NUM_BUFFERS] = {exec_buffer(&req->send),
                                                      exec_buffer(&req->recv), {0}};
        rc = bind_one(req, &req->exec, &req->plan->plan, buffers, req->tag_base, unpack_received);
    }
    if (rc != NBR_SUCCESS) {
        nbr_shared_plan_release(req->plan);
        req->plan = NULL;
    }
out:
    nbr_layout_free(&stand_in);
    return rc;
}

/* The call facts exchange of the algorithm the call runs, on the last of
 * the call's facts runs (a decision's candidates take the others). */
static void begin_own_facts(nbr_request_t req)
{
    req->stage = NBR_STAGE_FACTS;
    nbr_comm_facts_begin(req->comm, req->algorithm, &req->layout,
                         req->has_values ? &req->values : NULL,
                         req->tag_base + NBR_TAG_FACTS_IN_CALL +
                             (NBR_FACTS_RUNS_IN_CALL - 1) * NBR_ENGINE_TAGS,
                         &req->facts_run);
}

/* Moves req's preparation on as far as it goes without waiting for
 * another rank. A stage that failed on every rank (a decision's or a call
 * facts exchange's agreed status) ends it with req->status. */
static void prepare_step(nbr_request_t req, int *moved)
{
    nbr_comm_t *state = req->comm;
    int rc = NBR_SUCCESS, done = 0;
    for (;;) {
        switch (req->stage) {
        case NBR_STAGE_CHOOSE: {
            if (req->persistent)
                req->algorithm = nbr_standing_of(state, req->algorithm, req->priced.kind, 0);
            int due = req->persistent ? persistent_decides(req)
                                      : nbr_stream_due(state, req->stream, req->priced.kind,
                                                       req->call.blocking, req->stream_call);
            req->trial = NULL;
            if (due) {
                nbr_decide_begin(state->deciding, state, req->stream, req->stream_call,
                                 &req->priced, &req->layout, req->tag_base);
                req->stage = NBR_STAGE_DECIDE;
                break;
            }
            if (!req->persistent) {
                req->algorithm = nbr_stream_algorithm(state, req->stream, req->priced.kind, req->call.blocking,
                                                      &req->trial);
                req->uniform_bytes = req->stream->decision.valid
                                         ? req->stream->decision.uniform_bytes
                                         : NBR_NOT_UNIFORM;
            }
            begin_own_facts(req);
            break;
        }
        case NBR_STAGE_DECIDE: {
            nbr_deciding_t *d = state->deciding;
            rc = nbr_decide_advance(d, &done, moved);
            if (!done)
                return;
            if (rc != NBR_SUCCESS) {
                nbr_decide_free(d);
                goto failed;
            }
            req->algorithm = d->algorithm;
            req->uniform_bytes = d->uniform_bytes;
            if (!d->fresh && req->stream) /* a kept decision: a trial may be under way */
                req->algorithm = nbr_stream_algorithm(state, req->stream, req->priced.kind, req->call.blocking,
                                                      &req->trial);
            /* the chosen candidate's call facts serve the call */
            void *facts = d->chosen_facts;
            int facts_rc = d->chosen_facts_rc;
            uint64_t digest = d->chosen_digest;
            const nbr_algorithm_t *decided = d->algorithm;
            d->chosen_facts = NULL;
            nbr_decide_free(d);
            if (facts && req->algorithm == decided) {
                req->facts = facts;
                req->digest = digest;
                req->reduced = facts_rc;
                nbr_reduce_begin(&req->reduce, state->comm,
                                 req->tag_base + NBR_TAG_DECIDE_IN_CALL + 1, &req->reduced, 1,
                                 NULL, NBR_REDUCE_MIN, NULL);
                req->stage = NBR_STAGE_FACTS_AGREE;
                break;
            }
            nbr_comm_free_call_facts(decided, facts);
            begin_own_facts(req);
            break;
        }
        case NBR_STAGE_FACTS:
            /* aggregate's agents depend on every rank's sizes: an exchange
             * first, every call (the v-forms' sizes may change on any rank),
             * once for a persistent request */
            *moved |= nbr_comm_facts_advance(&req->facts_run, &done);
            if (!done)
                return;
            if (!req->facts_run.needed) {
                req->stage = NBR_STAGE_SIZES;
                req->sizes_started = 0;
                break;
            }
            /* a signature mismatch, seen where the facts meet (an agent,
             * not the receiver MPI would tell), goes into the agreement */
            req->reduced = nbr_comm_facts_end(&req->facts_run, &req->facts, &req->digest);
            /* a hard failure anywhere fails it everywhere */
            nbr_reduce_begin(&req->reduce, state->comm, req->tag_base + NBR_TAG_DECIDE_IN_CALL + 1,
                             &req->reduced, 1, NULL, NBR_REDUCE_MIN, NULL);
            req->stage = NBR_STAGE_FACTS_AGREE;
            break;
        case NBR_STAGE_FACTS_AGREE:
            *moved |= nbr_reduce_advance(&req->reduce, &done);
            if (!done)
                return;
            rc = (int)req->reduced;
            if (rc == NBR_SUCCESS)
                rc = req->reduce.status;
            if (rc == NBR_ERR_TYPE_MISMATCH) {
                /* some send and receive signatures differ: the plan would
                 * spill one pair's error over every block aggregated with
                 * it. Every rank runs MPI's messages instead, so that, as in
                 * MPI, the receiver of a longer block alone gets the error */
                NBR_INFO("%s: send and receive signatures differ somewhere: this call runs "
                         "the baseline's messages", nbr_call_name(req->priced.kind));
                nbr_comm_free_call_facts(req->algorithm, req->facts);
                req->facts = NULL;
                req->algorithm = nbr_select_baseline(nbr_comm_library_usable(state,
                                                                             req->layout.coll));
                rc = NBR_SUCCESS;
            }
            if (rc != NBR_SUCCESS)
                goto failed;
            req->stage = NBR_STAGE_SIZES;
            req->sizes_started = 0;
            break;
        case NBR_STAGE_SIZES:
            if (!sized_round(req)) {
                req->stage = NBR_STAGE_BUILD;
                break;
            }
            if (!req->sizes_started) {
                req->sizes_started = 1;
                if ((rc = sizes_begin(req)) != NBR_SUCCESS)
                    goto failed;
            }
            if (req->sizes_exec->active) /* in flight: progress moves it */
                return;
            rc = req->sizes_exec->status;
            if (rc == NBR_SUCCESS)
                rc = sizes_end(req);
            sizes_release(req);
            if (rc != NBR_SUCCESS)
                goto failed;
            req->stage = NBR_STAGE_BUILD;
            break;
        case NBR_STAGE_BUILD:
            if ((rc = build(req)) != NBR_SUCCESS)
                goto failed;
            req->stage = NBR_STAGE_READY;
            *moved = 1;
            return;
        default:
            return;
        }
        *moved = 1;
    }
failed:
    req->status = rc;
    req->stage = NBR_STAGE_LAUNCHED; /* nothing to launch: the call ends in rc */
    *moved = 1;
}
/* ------------------------------------------------------ held arguments */

/* A nonblocking call that waits for a stage (a decision, a call facts
 * exchange, its turn) reads its arguments again when it is prepared and
 * launched: from its own copies of what MPI lets the program change or
 * release once the call returned (the count, displacement and type
 * arrays; a derived datatype, which MPI_Type_free may release while an
 * operation uses it), never from the program's. */
static int hold_type(nbr_request_t req, MPI_Datatype *type)
{
    MPI_Datatype user = *type;
    int ints = 0, addresses = 0, types = 0, combiner = MPI_COMBINER_NAMED;
    if (user == MPI_DATATYPE_NULL ||
        MPI_Type_get_envelope(user, &ints, &addresses, &types, &combiner) != MPI_SUCCESS ||
        combiner == MPI_COMBINER_NAMED)
        return NBR_SUCCESS;
    for (int i = 0; i < req->num_held_types; i += 2) /* (user, copy) pairs */
        if (req->held_types[i] == user) {
            *type = req->held_types[i + 1];
            return NBR_SUCCESS;
        }
    MPI_Datatype *grown = realloc(req->held_types, (size_t)(req->num_held_types + 2) *
                                                       sizeof(MPI_Datatype));
    if (!grown)
        return NBR_ERR_NOMEM;
    req->held_types = grown;
    MPI_Datatype copy = MPI_DATATYPE_NULL;
    int mrc = MPI_Type_dup(user, &copy);
    if (mrc != MPI_SUCCESS)
        return nbr_mpi_failed("MPI_Type_dup", mrc);
    grown[req->num_held_types++] = user;
    grown[req->num_held_types++] = copy;
    *type = copy;
    return NBR_SUCCESS;
}

/* The copy of a type the call named (itself when not held). */
static MPI_Datatype held_type_of(const nbr_request_t req, MPI_Datatype user)
{
    for (int i = 0; i < req->num_held_types; i += 2)
        if (req->held_types[i] == user)
            return req->held_types[i + 1];
    return user;
}

static void *copy_array(char **room, const void *array, size_t bytes)
{
    if (!array)
        return NULL;
    void *copy = *room;
    memcpy(copy, array, bytes);
    *room += bytes;
    return copy;
}

static int hold_arguments(nbr_request_t req)
{
    nbr_call_t *c = &req->call;
    size_t out = (size_t)req->comm->user_outdegree, in = (size_t)req->comm->user_indegree;
    size_t bytes = (2 * out + 2 * in) * sizeof(int) + (out + in) * sizeof(MPI_Aint) +
                   (out + in) * sizeof(MPI_Datatype) + 1;
    char *room = malloc(bytes);
    if (!room)
        return NBR_ERR_NOMEM;
    req->held_arrays = room;
    /* the widest first: every array stays aligned */
    MPI_Datatype *sendtypes = copy_array(&room, c->sendtypes, out * sizeof(MPI_Datatype));
    MPI_Datatype *recvtypes = copy_array(&room, c->recvtypes, in * sizeof(MPI_Datatype));
    c->sdispls_w = copy_array(&room, c->sdispls_w, out * sizeof(MPI_Aint));
    c->rdispls_w = copy_array(&room, c->rdispls_w, in * sizeof(MPI_Aint));
    c->sendcounts = copy_array(&room, c->sendcounts, out * sizeof(int));
    c->sdispls = copy_array(&room, c->sdispls, out * sizeof(int));
    c->recvcounts = copy_array(&room, c->recvcounts, in * sizeof(int));
    c->rdispls = copy_array(&room, c->rdispls, in * sizeof(int));
    int rc = NBR_SUCCESS;
    if (c->kind != NBR_CALL_ALLTOALLW) {
        NBR_CHECK(hold_type(req, &c->sendtype));
        NBR_CHECK(hold_type(req, &c->recvtype));
    }
    for (size_t k = 0; sendtypes && k < out; k++)
        NBR_CHECK(hold_type(req, &sendtypes[k]));
    for (size_t k = 0; recvtypes && k < in; k++)
        NBR_CHECK(hold_type(req, &recvtypes[k]));
    c->sendtypes = sendtypes;
    c->recvtypes = recvtypes;
    /* what the typed buffers kept of the program's types */
    nbr_typed_buffer_t *bufs[2] = {&req->send, &req->recv};
    for (int b = 0; b < 2; b++) {
        if (!bufs[b]->owns_type)
            bufs[b]->type = held_type_of(req, bufs[b]->type);
        for (int k = 0; !bufs[b]->owns_types && bufs[b]->types && k < bufs[b]->num_slots; k++)
            bufs[b]->types[k] = held_type_of(req, bufs[b]->types[k]);
    }
out:
    return rc;
}

static void release_held(nbr_request_t req)
{
    for (int i = 1; i < req->num_held_types; i += 2)
        MPI_Type_free(&req->held_types[i]);
    free(req->held_types);
    free(req->held_arrays);
    req->held_types = NULL;
    req->held_arrays = NULL;
    req->num_held_types = 0;
}

/* ------------------------------------------------------------ the queue */

/* Requests wait in their communicator's queue, in call order, while one of
 * them has a stage to wait for: the head prepares (only it may decide: the
 * communicator holds one decision's room) and launches, then the next.
 * The queue's runner, an executor in flight while the queue is not empty,
 * does this from wherever nbrcoll makes progress, so a rank whose program
 * waits elsewhere still takes its part in the stages its peers wait for. */
static int launch(nbr_request_t req);

static int run_queue(void *arg, int *done)
{
    nbr_comm_t *state = arg;
    *done = 0;
    if (state->queue_running)
        return NBR_SUCCESS; /* a stage's own progress came back here */
    state->queue_running = 1;
    for (nbr_request_t req; (req = state->queue_head);) {
        int moved = 0;
        prepare_step(req, &moved);
        if (req->stage == NBR_STAGE_READY && req->running)
            launch(req); /* its failure is the request's, reported at completion */
        if (req->stage != NBR_STAGE_LAUNCHED) {
            state->queue_running = 0;
            return NBR_SUCCESS;
        }
        state->queue_head = req->queue_next;
        req->queue_next = NULL;
    }
    state->queue_tail = NULL;
    state->queue_running = 0;
    *done = 1;
    return NBR_SUCCESS;
}

static int enqueue(nbr_request_t req)
{
    nbr_comm_t *state = req->comm;
    int start = !state->queue_head;
    if (state->queue_tail)
        state->queue_tail->queue_next = req;
    else
        state->queue_head = req;
    state->queue_tail = req;
    if (!start)
        return NBR_SUCCESS; /* the runner is in flight */
    int rc = state->queue_runner
                 ? NBR_SUCCESS
                 : nbr_executor_create_agreement(&state->exec, &state->queue_runner);
    return rc == NBR_SUCCESS ? nbr_executor_agree_after(state->queue_runner, -1, run_queue, state)
                             : rc;
}

int nbr_comm_drain(nbr_comm_t *state)
{
    while (state->queue_head)
        if (!nbr_progress_all())
            sched_yield(); /* ranks may share cores: let the peer run */
    return NBR_SUCCESS;
}

/* A request that may wait in MPI (blocking calls, _init): its preparation
 * to the end, here. */
static void prepare_now(nbr_request_t req)
{
    while (req->stage < NBR_STAGE_READY) {
        int moved = 0;
        prepare_step(req, &moved);
        if (req->stage < NBR_STAGE_READY && !moved && !nbr_progress_all())
            sched_yield();
    }
}

/* --------------------------------------------------------------- calls */

/* The call's price inputs: block bytes, value indices, buffer kind. */
static nbr_priced_call_t priced_call(const nbr_call_t *call, nbr_request_t req,
                                     int expected_starts)
{
    nbr_comm_t *state = req->comm;
    nbr_exec_buffer_t send = exec_buffer(&req->send), recv = exec_buffer(&req->recv);
    int device = nbr_exec_on_device(&state->exec, &send) || nbr_exec_on_device(&state->exec, &recv);
    size_t s = 0, q = 0;
    if (nbr_call_uniform(call->kind)) {
        s = (size_t)call->sendcount * (size_t)req->send.type_size;
        q = (size_t)call->recvcount * (size_t)req->recv.type_size;
    }
    return (nbr_priced_call_t){call->kind, s, q, req->has_values ? &req->values : NULL, device,
                               expected_starts};
}

/* req NULL: this rank could not allocate one; it still takes part in what
 * is collective for persistent requests, so nobody waits for it. */
static int create_persistent(const nbr_call_t *call, MPI_Info info, nbr_comm_t *state,
                             nbr_request_t req)
{
    int expected_starts = 1;
    nbr_comm_drain(state); /* _init may wait: the earlier calls launch first */
    int rc = persistent_algorithm(info, state, req ? &req->algorithm : &(const nbr_algorithm_t *){0},
                                  &expected_starts);
    if (rc != NBR_SUCCESS)
        return rc; /* agreed */
    rc = req ? nbr_call_describe(call, state, req) : NBR_ERR_NOMEM;
    rc = nbr_agree(state->comm, rc); /* _init is collective: the steps below are too */
    if (rc != NBR_SUCCESS)
        return rc;
    req->call = *call;
    req->priced = priced_call(call, req, expected_starts);
    prepare_now(req);
    return nbr_agree(state->comm, req->status); /* one status for all */
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
    if (call->blocking)
        nbr_comm_drain(state); /* a blocking call may wait: the earlier ones launch first */
    /* Every rank takes this call's tags and number before any check that
     * may fail on some ranks only: they must stay equal everywhere. */
    int tag_base = nbr_comm_next_tag_base(state, persistent);
    nbr_stream_t *stream = persistent ? NULL : nbr_comm_stream(state, call->kind, call->blocking);
    unsigned long long number = stream ? ++stream->calls : 0;
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
        req->agree_tag = state->config.agree_errors ? tag_base + NBR_TAG_AGREE_IN_CALL : -1;
        req->comm = state;
        req->user_comm = call->comm;
        req->tag_base = tag_base;
        req->stream = stream;
        req->stream_call = number;
        req->stage = NBR_STAGE_CHOOSE;
        req->status = NBR_SUCCESS;
        req->trial = NULL;
        req->algorithm = NULL;
        nbr_comm_retain(state);
    }
    if (persistent) {
        rc = create_persistent(call, info, state, req);
    } else {
        rc = req ? nbr_call_describe(call, state, req) : NBR_ERR_NOMEM;
        if (rc == NBR_SUCCESS) {
            req->call = *call;
            req->priced = priced_call(call, req, 1);
            if (call->blocking) {
                prepare_now(req);
                rc = req->status;
            } else if (!state->queue_head) {
                int moved = 0;
                prepare_step(req, &moved); /* as far as it goes without waiting */
            }
        }
    }
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

/* Starts a prepared request's run: the library's collective, or the plan
 * (packing staged send data first). */
static int launch(nbr_request_t req)
{
    req->stage = NBR_STAGE_LAUNCHED;
    req->comm->last_algorithm = req->algorithm;
    if (req->library) {
        int rc = nbr_library_start(req);
        if (watched(req) && rc == NBR_SUCCESS)
            rc = nbr_executor_agree_after(req->agreement, req->agree_tag, nbr_library_poll, req);
        else if (watched(req)) /* the others agree on it: take part, then report */
            agree_now(req, rc);
        if (rc != NBR_SUCCESS)
            req->status = mismatch_says_more(req, rc);
        return rc;
    }
    /* a send buffer that could not be packed still runs, as poison: the
     * peers wait for its messages (the error comes at completion). A
     * binding that failed runs so too, and packs nothing: it may have
     * failed because the typed buffer is device memory, which MPI_Pack
     * cannot read. */
    int packed = req->exec->bind_status != NBR_SUCCESS
                     ? req->exec->bind_status
                     : nbr_typed_buffer_transfer(&req->send, req->layout.send, req->comm->comm,
                                                 NBR_PACK); /* the user's slots: a guarded
                                                             * plan may run on stand-ins */
    int rc = nbr_executor_start_failed(req->exec, packed);
    if (rc != NBR_SUCCESS)
        req->status = rc;
    return rc;
}

int nbr_start(nbr_request_t *request)
{
    if (!request || !*request)
        return NBR_ERR_REQUEST;
    nbr_request_t req = *request;
    if (req->running)
        return NBR_ERR_REQUEST;
    req->running = 1;
    nbr_comm_t *state = req->comm;
    if (req->persistent) {
        req->status = NBR_SUCCESS;
        req->stage = NBR_STAGE_READY;
    }
    if (req->stage == NBR_STAGE_READY && !state->queue_head) {
        int rc = launch(req);
        /* a blocking library call ran to its end in it: its error is the call's */
        if (rc != NBR_SUCCESS && (!req->persistent || req->call.blocking))
            req->running = 0;
        return rc != NBR_SUCCESS ? req->status : NBR_SUCCESS;
    }
    if (req->stage == NBR_STAGE_LAUNCHED) /* its preparation failed on every rank */
        return NBR_SUCCESS;              /* (reported at completion) */
    int rc = req->persistent ? NBR_SUCCESS : hold_arguments(req);
    if (rc != NBR_SUCCESS) {
        req->running = 0;
        return rc; /* before anything of it moved */
    }
    return enqueue(req);
}

/* A run has ended (status rc): count, and retire non-persistent requests.
 * A blocking allgather whose guard failed decides again at its stream's
 * next call (every rank's guard says the same). */
static int complete(nbr_request_t *request, int rc)
{
    nbr_request_t req = *request;
    req->running = 0;
    const nbr_plan_t *ran = req->plan ? &req->plan->plan : NULL;
    if (req->guarded && req->exec->guard_failed) {
        ran = &req->fallback_plan->plan;
        nbr_executor_add_counters(req->fallback, &req->comm->counters);
        /* a blocking stream's calls follow each other on every rank, and
         * the guard told every rank everyone's sizes: its next call relays
         * them (or, where they differ, runs as allgatherv) */
        const int64_t *v = req->exec->guard_values;
        if (req->stream && req->call.blocking && req->exec->guard.status == NBR_SUCCESS)
            req->stream->decision.uniform_bytes =
                v[1] == -v[2] && v[3] == -v[4] && v[1] == v[3] ? (size_t)v[1] : NBR_NOT_UNIFORM;
    } else if (ran && !req->library) { /* staged receives were unpacked by the run's finish step */
        nbr_executor_add_counters(req->exec, &req->comm->counters);
    }
    rc = mismatch_says_more(req, rc);
    if (ran)
        nbr_comm_count(req->comm, ran, 1);
    if (!req->persistent) {
        request_retire(req);
        *request = NBR_REQUEST_NULL;
    }
    return rc;
}

/* The run's own executor, then a guard's fallback if it took over. */
static int run_test(nbr_request_t req, int *done)
{
    int rc = nbr_executor_test(req->exec, done);
    if (*done && req->guarded && req->exec->guard_failed)
        rc = nbr_executor_test(req->fallback, done);
    return rc;
}

int nbr_wait(nbr_request_t *request)
{
    if (!request || !*request)
        return NBR_ERR_REQUEST;
    nbr_request_t req = *request;
    if (!req->running)
        return NBR_SUCCESS; /* an inactive persistent request, as in MPI */
    while (req->stage != NBR_STAGE_LAUNCHED)
        if (!nbr_progress_all())
            sched_yield(); /* the queue's runner moves it */
    if (req->status != NBR_SUCCESS && !req->exec && !req->library)
        return complete(request, req->status);
    if (req->status != NBR_SUCCESS && req->library && !watched(req))
        return complete(request, req->status);
    if (!req->library) {
        int rc = nbr_executor_wait(req->exec);
        if (req->guarded && req->exec->guard_failed)
            rc = nbr_executor_wait(req->fallback);
        return complete(request, req->status != NBR_SUCCESS ? req->status : rc);
    }
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
    if (req->stage != NBR_STAGE_LAUNCHED) {
        nbr_progress_all();
        if (req->stage != NBR_STAGE_LAUNCHED)
            return NBR_SUCCESS;
    }
    if (req->status != NBR_SUCCESS && ((!req->exec && !req->library) ||
                                       (req->library && !watched(req)))) {
        *flag = 1;
        return complete(request, req->status);
    }
    if (!req->library) {
        int rc = run_test(req, flag);
        return *flag ? complete(request, req->status != NBR_SUCCESS ? req->status : rc) : rc;
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
