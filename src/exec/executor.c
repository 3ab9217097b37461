#include "exec/executor.h"

#include "exec/channel.h"
#include "base/log.h"
#include "exec/message.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

int nbr_exec_domain_init(nbr_exec_domain_t *domain, MPI_Comm comm, int comm_id,
                         const nbr_exec_options_t *options, const nbr_locality_t *locality)
{
    *domain = (nbr_exec_domain_t){.kind = &nbr_mpi_executor, .comm = comm};
    if (MPI_Comm_rank(comm, &domain->rank) != MPI_SUCCESS ||
        MPI_Comm_size(comm, &domain->nranks) != MPI_SUCCESS)
        return NBR_ERR_MPI; /* cannot fail on a valid communicator */
    int rc = nbr_device_ctx_create(comm, comm_id, options, locality, &domain->device);
    if (rc == NBR_SUCCESS && domain->device)
        domain->kind = &nbr_device_executor;
    if (rc == NBR_SUCCESS)
        rc = nbr_progress_track(domain);
    domain->tracked = rc == NBR_SUCCESS;
    return rc;
}

void nbr_exec_domain_free(nbr_exec_domain_t *domain)
{
    if (domain->tracked)
        nbr_progress_untrack(domain);
    domain->tracked = 0;
    nbr_device_ctx_free(domain->device);
    domain->device = NULL;
}

int nbr_exec_on_device(const nbr_exec_domain_t *domain, const nbr_exec_buffer_t *buffer)
{
    const struct nbr_device_ctx *ctx = domain->device;
    nbr_mem_kind_t kind = NBR_MEM_HOST;
    int device = -1;
    if (!ctx || !buffer->user || buffer->staged)
        return 0;
    if (ctx->memory == NBR_MEMORY_DEVICE)
        return 1;
    return ctx->backend->pointer_kind(buffer->user, &kind, &device) == NBR_SUCCESS &&
           kind == NBR_MEM_DEVICE;
}

int nbr_executor_create(nbr_exec_domain_t *domain, nbr_executor_t **exec)
{
    *exec = NULL;
    int rc = domain->kind->create(domain, exec);
    if (rc == NBR_SUCCESS) {
        (*exec)->kind = domain->kind;
        (*exec)->domain = domain;
        (*exec)->agree_tag = (*exec)->guard_tag = -1;
    }
    return rc;
}

/* One rank alone has nobody to agree with. */
static int agree_tag_of(const nbr_exec_domain_t *domain, int agree_tag)
{
    return domain->nranks > 1 ? agree_tag : -1;
}

int nbr_executor_bind(nbr_executor_t *exec, const nbr_plan_t *plan,
                      const nbr_exec_buffer_t buffers[NBR_NUM_BUFFERS], int tag_base,
                      int persistent, int agree_tag)
{
    if (exec->plan)
        nbr_executor_unbind(exec);
    exec->plan = plan;
    exec->tag_base = tag_base;
    exec->agree_tag = agree_tag_of(exec->domain, agree_tag);
    exec->active = 0;
    exec->status = NBR_SUCCESS;
    exec->bind_status = NBR_SUCCESS;
    exec->finish = NULL;
    exec->finish_arg = NULL;
    exec->guard_tag = -1;
    exec->guard_failed = 0;
    exec->fallback = NULL;
    int rc = exec->kind->bind(exec, buffers, persistent);
    if (rc == NBR_SUCCESS && persistent)
        rc = exec->bind_status; /* _init agrees on it: no run needed */
    if (rc != NBR_SUCCESS)
        nbr_executor_unbind(exec);
    return rc;
}

static void leave_in_flight(nbr_executor_t *exec)
{
    for (nbr_executor_t **p = &exec->domain->in_flight; *p; p = &(*p)->next_in_flight)
        if (*p == exec) {
            *p = exec->next_in_flight;
            nbr_progress_counted(-1);
            break;
        }
    exec->next_in_flight = NULL;
}

static const nbr_executor_kind_t agreement_only; /* below */

/* ------------------------------------------- error agreement and guard */

/* Both are reduces over every rank on the call's own tags (base/reduce.h:
 * point-to-point, so agreements of calls in flight at once never meet
 * each other's messages, whatever order they progress in): the error
 * agreement the least status (an error anywhere makes NBR_ERR_PEER where
 * the run succeeded), the guard the least of every rank's "holds". */
static void agree_begin(nbr_executor_t *exec)
{
    exec->active = 1;
    exec->agreeing = 1;
    exec->agree_value = exec->status;
    nbr_reduce_begin(&exec->agreement, exec->domain->comm, exec->agree_tag, &exec->agree_value, 1,
                     NULL, NBR_REDUCE_MIN, NULL);
}

static int agree_advance(nbr_executor_t *exec)
{
    int done = 0, moved = nbr_reduce_advance(&exec->agreement, &done);
    if (!done)
        return moved;
    exec->agreeing = 0;
    exec->active = 0;
    nbr_executor_record(exec, exec->agreement.status); /* a value lost here */
    if (exec->agree_value != NBR_SUCCESS)
        nbr_executor_record(exec, NBR_ERR_PEER); /* this rank's own error stays */
    return 1;
}

static void guard_begin(nbr_executor_t *exec)
{
    exec->guarding = 1;
    exec->guard_failed = 0;
    memcpy(exec->guard_values, exec->guard_mine, sizeof exec->guard_values);
    nbr_reduce_begin(&exec->guard, exec->domain->comm, exec->guard_tag, exec->guard_values,
                     exec->guard_count, NULL, NBR_REDUCE_MIN, NULL);
}

static int guard_advance(nbr_executor_t *exec)
{
    int done = 0, moved = nbr_reduce_advance(&exec->guard, &done);
    if (done) {
        exec->guarding = 0;
        /* a value lost on this rank: take the fallback too (its peers that
         * learned of a failing rank take it; one that learned nothing may
         * not: the fallback's messages then find no partner, and it waits) */
        exec->guard_failed = exec->guard_values[0] == 0 || exec->guard.status != NBR_SUCCESS;
    }
    return moved || done;
}

/* The plan's run ended on this rank: unless its guard failed, the
 * binder's finish step, then the agreement, if bound with one (so that it
 * covers the finish step too); a failed guard starts the fallback. */
static void plan_ended(nbr_executor_t *exec)
{
    if (exec->guard_failed) {
        exec->status = NBR_SUCCESS; /* the run's bytes are void, its errors too */
        if (exec->fallback)
            nbr_executor_start(exec->fallback);
        return;
    }
    if (exec->plan)
        nbr_executor_record(exec, exec->plan->local_status);
    if (exec->finish)
        nbr_executor_record(exec, exec->finish(exec->finish_arg));
    if (exec->agree_tag >= 0)
        agree_begin(exec);
}

/* One step of exec; the step that ends its run takes it off the list. A
 * guarded run ends when its plan and its guard both have. */
static int advance(nbr_executor_t *exec, int blocking)
{
    int moved = 0;
    if (exec->agreeing) {
        moved = agree_advance(exec);
    } else {
        if (exec->guarding)
            moved = guard_advance(exec);
        if (!exec->plan_done) {
            /* blocking inside MPI would starve the guard */
            moved |= exec->kind->advance(exec, blocking && !exec->guarding);
            exec->plan_done = !exec->active;
            exec->active = 1;
        }
        if (exec->plan_done && !exec->guarding) {
            exec->active = 0;
            plan_ended(exec);
            moved = 1;
        }
    }
    if (!exec->active)
        leave_in_flight(exec);
    return moved;
}

int nbr_exec_progress(nbr_exec_domain_t *domain)
{
    int moved = 0, was = nbr_progress_enter();
    for (nbr_executor_t *e = domain->in_flight, *next; e; e = next) {
        next = e->next_in_flight;
        moved |= advance(e, 0);
    }
    nbr_progress_leave(was);
    return moved;
}

static void join_in_flight(nbr_executor_t *exec)
{
    exec->active = 1;
    exec->next_in_flight = exec->domain->in_flight;
    exec->domain->in_flight = exec;
    nbr_progress_counted(1);
}

int nbr_executor_start(nbr_executor_t *exec)
{
    return nbr_executor_start_failed(exec, NBR_SUCCESS);
}

static int start(nbr_executor_t *exec, int status);

/* Starting posts messages and tests them (MPI_Test runs MPI's progress,
 * and with it the hook, which must not step this half-started run). */
int nbr_executor_start_failed(nbr_executor_t *exec, int status)
{
    int was = nbr_progress_enter();
    int rc = start(exec, status);
    nbr_progress_leave(was);
    return rc;
}

int nbr_executor_receive_spoils(const nbr_executor_t *exec, const nbr_op_t *op, int rc)
{
    if (rc == NBR_SUCCESS)
        return 0;
    if (rc != NBR_ERR_TYPE_MISMATCH || op->buf != NBR_BUF_RECV)
        return 1;
    const nbr_plan_t *plan = exec->plan;
    for (int i = 0; i < plan->num_ops; i++)
        if (plan->ops[i].kind == NBR_OP_SEND && plan->ops[i].buf == NBR_BUF_RECV)
            return 1;
    return 0;
}

static int start(nbr_executor_t *exec, int status)
{
    if (exec->active || !exec->plan)
        return NBR_ERR_REQUEST;
    exec->status = exec->bind_status != NBR_SUCCESS ? exec->bind_status : status;
    exec->spoilt = exec->status != NBR_SUCCESS;
    exec->agreeing = exec->plan_done = 0;
    join_in_flight(exec);
    if (exec->guard_tag >= 0)
        guard_begin(exec);
    int rc = NBR_SUCCESS;
    if (exec->plan->num_phases > 0 || exec->kind == &agreement_only)
        rc = exec->kind->begin(exec);
    else
        exec->active = 0; /* nothing to move: straight to its end */
    exec->plan_done = !exec->active;
    exec->active = 1;
    if (exec->plan_done && !exec->guarding) {
        exec->active = 0;
        plan_ended(exec);
        if (!exec->active)
            leave_in_flight(exec);
    }
    if (rc != NBR_SUCCESS) {
        nbr_executor_record(exec, rc);
        nbr_executor_wait(exec); /* part was posted and peers wait for the rest */
    }
    return rc;
}

/* The kind of an executor that runs agreements alone: no plan, no bytes;
 * watching, its step tests what it watches (the run ends when that ends). */
typedef struct nbr_alone_exec {
    nbr_executor_t core;
    int (*watch)(void *arg, int *done);
    void *watch_arg;
} nbr_alone_exec_t;

static int alone_create(nbr_exec_domain_t *domain, nbr_executor_t **exec)
{
    (void)domain;
    nbr_alone_exec_t *alone = calloc(1, sizeof(*alone));
    *exec = alone ? &alone->core : NULL;
    return alone ? NBR_SUCCESS : NBR_ERR_NOMEM;
}

static int alone_begin(nbr_executor_t *core)
{
    core->active = ((nbr_alone_exec_t *)core)->watch != NULL;
    return NBR_SUCCESS;
}

static int alone_advance(nbr_executor_t *core, int blocking)
{
    (void)blocking;
    nbr_alone_exec_t *alone = (nbr_alone_exec_t *)core;
    int done = 0, rc = alone->watch ? alone->watch(alone->watch_arg, &done) : NBR_SUCCESS;
    if (alone->watch && !done)
        return 0;
    nbr_executor_record(core, rc);
    core->active = 0;
    return 1;
}

static void alone_destroy(nbr_executor_t *exec)
{
    free(exec);
}

static const nbr_executor_kind_t agreement_only = {
    .name = "agreement", .create = alone_create, .begin = alone_begin,
    .advance = alone_advance, .destroy = alone_destroy};
static const nbr_plan_t no_phases;

int nbr_executor_create_agreement(nbr_exec_domain_t *domain, nbr_executor_t **exec)
{
    nbr_exec_domain_t alone = *domain;
    alone.kind = &agreement_only;
    int rc = nbr_executor_create(&alone, exec);
    if (rc == NBR_SUCCESS) {
        (*exec)->domain = domain;
        (*exec)->plan = &no_phases;
    }
    return rc;
}

void nbr_executor_guard(nbr_executor_t *exec, int guard_tag, const int64_t *values, int count,
                        nbr_executor_t *fallback)
{
    exec->guard_tag = guard_tag; /* one rank too: it may not hold it itself */
    exec->guard_count = count < NBR_GUARD_VALUES ? count : NBR_GUARD_VALUES;
    memcpy(exec->guard_mine, values, (size_t)exec->guard_count * sizeof(int64_t));
    exec->fallback = fallback;
    exec->guard_failed = 0;
}

void nbr_executor_on_finish(nbr_executor_t *exec, int (*finish)(void *arg), void *arg)
{
    exec->finish = finish;
    exec->finish_arg = arg;
}

/* A run of an agreement executor: no phases, so the watch (if any) is
 * the run, then the agreement. */
static int alone_start(nbr_executor_t *exec, int agree_tag, int (*watch)(void *arg, int *done),
                       void *arg, int status)
{
    if (exec->kind != &agreement_only || exec->active)
        return NBR_ERR_REQUEST;
    nbr_alone_exec_t *alone = (nbr_alone_exec_t *)exec;
    alone->watch = watch;
    alone->watch_arg = arg;
    exec->agree_tag = agree_tag_of(exec->domain, agree_tag);
    return nbr_executor_start_failed(exec, status);
}

int nbr_executor_agree_after(nbr_executor_t *exec, int agree_tag,
                             int (*watch)(void *arg, int *done), void *arg)
{
    return alone_start(exec, agree_tag, watch, arg, NBR_SUCCESS);
}

int nbr_executor_agree(nbr_executor_t *exec, int agree_tag, int status)
{
    return alone_start(exec, agree_tag, NULL, NULL, status);
}

int nbr_executor_test(nbr_executor_t *exec, int *done)
{
    if (exec->active)
        nbr_progress_all();
    *done = !exec->active;
    return *done ? exec->status : NBR_SUCCESS;
}

int nbr_executor_wait(nbr_executor_t *exec)
{
    while (exec->active) {
        /* alone in the process, it may block inside MPI: nothing else
         * needs to move */
        int alone = exec->domain->in_flight == exec && !exec->next_in_flight &&
                    nbr_progress_alone();
        int was = nbr_progress_enter();
        int moved = alone ? advance(exec, 1) : nbr_progress_all();
        nbr_progress_leave(was);
        if (!moved)
            sched_yield(); /* ranks may share cores: let the peer run */
    }
    return exec->status;
}

void nbr_executor_add_counters(const nbr_executor_t *exec, nbr_counters_t *counters)
{
    if (exec->kind->add_counters)
        exec->kind->add_counters(exec, counters);
}

void nbr_executor_unbind(nbr_executor_t *exec)
{
    if (exec->active)
        leave_in_flight(exec);
    exec->active = exec->agreeing = exec->guarding = 0;
    if (exec->kind->unbind)
        exec->kind->unbind(exec);
    exec->plan = NULL;
}

void nbr_executor_destroy(nbr_executor_t *exec)
{
    if (!exec)
        return;
    if (exec->plan)
        nbr_executor_unbind(exec);
    exec->kind->destroy(exec);
}
