/* The MPI executor: runs a plan over MPI nonblocking point-to-point (host
 * buffers, or device buffers when the device layer is off and MPI is
 * GPU-aware). Per phase: receives posted, sends posted, local copies
 * (memcpy), then the phase's messages complete. Persistent bindings create
 * MPI persistent requests for every message once and start them per phase. */
#include "exec/executor.h"

#include "base/grow.h"
#include "base/log.h"
#include "exec/message.h"

#include <stdlib.h>
#include <string.h>

typedef struct nbr_mpi_exec {
    nbr_executor_t core;
    MPI_Comm comm;
    char *base[NBR_NUM_BUFFERS]; /* byte 0 of each buffer */
    char *own_scratch;           /* when the binder gave none; kept between binds */
    size_t own_scratch_bytes;
    int persistent;
    MPI_Request *requests;       /* persistent: every message op; else one phase */
    MPI_Datatype *request_types; /* persistent: a message's type over 2 GiB, else NULL type */
    MPI_Status *statuses;        /* one phase */
    int request_capacity, status_capacity, types_capacity; /* kept between binds */
    int phase;                   /* phase in flight; num_phases when idle */
    int retried;                 /* the phase's Testall failed once: retried */
} nbr_mpi_exec_t;

static int is_message(const nbr_op_t *op)
{
    return op->kind == NBR_OP_RECV || op->kind == NBR_OP_SEND;
}

/* Frees persistent request r and the type it kept. */
static void free_persistent(nbr_mpi_exec_t *exec, int r)
{
    if (exec->requests[r] != MPI_REQUEST_NULL)
        PMPI_Request_free(&exec->requests[r]);
    if (exec->request_types[r] != MPI_DATATYPE_NULL)
        MPI_Type_free(&exec->request_types[r]);
}

/* Creates the MPI persistent requests of phase p that do not exist: all of
 * them at init, and again after a phase failed (finish_phase drops them:
 * Open MPI may release or spoil a persistent receive that was truncated). */
static int create_persistent(nbr_mpi_exec_t *exec, int p)
{
    int rc = NBR_SUCCESS;
    const nbr_phase_t *phase = &exec->core.plan->phases[p];
    MPI_Request *next = exec->requests + exec->core.plan->phase_first_message[p];
    for (int i = 0; i < phase->num_ops; i++) {
        const nbr_op_t *op = &exec->core.plan->ops[phase->first_op + i];
        if (!is_message(op))
            continue;
        MPI_Request *request = next++;
        if (*request != MPI_REQUEST_NULL)
            continue;
        NBR_CHECK(nbr_message_post(op->kind == NBR_OP_RECV ? NBR_MSG_RECV_INIT
                                                           : NBR_MSG_SEND_INIT,
                                   exec->base[op->buf] + op->offset, op->bytes, op->peer,
                                   exec->core.tag_base + op->tag, exec->comm, request,
                                   &exec->request_types[request - exec->requests]));
    }
out:
    return rc;
}

static nbr_mpi_exec_t *of(nbr_executor_t *exec)
{
    return (nbr_mpi_exec_t *)exec;
}

static int create(nbr_exec_domain_t *domain, nbr_executor_t **out)
{
    nbr_mpi_exec_t *exec = calloc(1, sizeof(*exec));
    if (!exec)
        return NBR_ERR_NOMEM;
    exec->comm = domain->comm;
    *out = &exec->core;
    return NBR_SUCCESS;
}

static void unbind(nbr_executor_t *core);

static int bind(nbr_executor_t *core, const nbr_exec_buffer_t buffers[NBR_NUM_BUFFERS],
                int persistent)
{
    int rc = NBR_SUCCESS;
    nbr_mpi_exec_t *exec = of(core);
    const nbr_plan_t *plan = core->plan;
    for (int b = 0; b < NBR_NUM_BUFFERS; b++)
        exec->base[b] = buffers[b].base;
    if (!exec->base[NBR_BUF_SCRATCH] && plan->scratch_bytes > 0) {
        /* kept from call to call: a large allocation is fresh pages from
         * the kernel each time, zeroed on first touch, and at 16 MiB
         * blocks that cost halving more than its messages */
        if (exec->own_scratch_bytes < plan->scratch_bytes) {
            free(exec->own_scratch);
            exec->own_scratch_bytes = 0;
            if (!(exec->own_scratch = malloc(plan->scratch_bytes)))
                return NBR_ERR_NOMEM;
            exec->own_scratch_bytes = plan->scratch_bytes;
        }
        exec->base[NBR_BUF_SCRATCH] = exec->own_scratch;
    }
    exec->persistent = persistent;
    exec->phase = plan->num_phases;
    int total = plan->phase_first_message[plan->num_phases];
    int slots = persistent ? total : plan->max_phase_messages;
    NBR_CHECK(nbr_grow((void **)&exec->requests, &exec->request_capacity, slots + 1, 1,
                       sizeof(MPI_Request)));
    NBR_CHECK(nbr_grow((void **)&exec->statuses, &exec->status_capacity,
                       plan->max_phase_messages + 1, 1, sizeof(MPI_Status)));
    if (persistent)
        NBR_CHECK(nbr_grow((void **)&exec->request_types, &exec->types_capacity, slots + 1, 1,
                           sizeof(MPI_Datatype)));
    for (int r = 0; r < slots; r++) {
        exec->requests[r] = MPI_REQUEST_NULL;
        if (persistent)
            exec->request_types[r] = MPI_DATATYPE_NULL;
    }
    if (!persistent)
        return NBR_SUCCESS;
    for (int p = 0; p < plan->num_phases; p++)
        NBR_CHECK(create_persistent(exec, p));
out:
    return rc;
}

static void record(nbr_mpi_exec_t *exec, int rc)
{
    nbr_executor_record(&exec->core, rc);
}

static int failed(const nbr_mpi_exec_t *exec)
{
    return exec->core.spoilt;
}

/* Posts message op into *request as a one-off operation. After an error in
 * the run a send carries poison instead (message.h); a post that fails is
 * tried once more (a send as poison), because the peer waits for the
 * message either way. */
static void post_message(nbr_mpi_exec_t *exec, const nbr_op_t *op, MPI_Request *request)
{
    int send = op->kind == NBR_OP_SEND, tag = exec->core.tag_base + op->tag;
    for (int attempt = 0; attempt < 2; attempt++) {
        *request = MPI_REQUEST_NULL;
        int rc = send && failed(exec)
                     ? nbr_message_poison(op->bytes, op->peer, tag, exec->comm, request)
                     : nbr_message_post(send ? NBR_MSG_ISEND : NBR_MSG_IRECV,
                                        exec->base[op->buf] + op->offset, op->bytes, op->peer,
                                        tag, exec->comm, request, NULL);
        record(exec, rc);
        if (rc == NBR_SUCCESS)
            return;
    }
    *request = MPI_REQUEST_NULL;
}

/* Starts persistent message op, whose handle is *request; after an error
 * in the run a send goes as poison in a one-off request in the handle's
 * place (the next start re-creates the handle). */
static void start_message(nbr_mpi_exec_t *exec, const nbr_op_t *op, MPI_Request *request)
{
    int r = (int)(request - exec->requests);
    if (op->kind == NBR_OP_SEND && failed(exec)) {
        free_persistent(exec, r);
        post_message(exec, op, request);
        return;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        int mrc = *request == MPI_REQUEST_NULL ? MPI_ERR_REQUEST : PMPI_Start(request);
        if (mrc == MPI_SUCCESS)
            return;
        if (*request != MPI_REQUEST_NULL)
            record(exec, nbr_mpi_failed("MPI_Start", mrc));
        free_persistent(exec, r);
        if (op->kind == NBR_OP_SEND) { /* failed now: poison */
            post_message(exec, op, request);
            return;
        }
        record(exec, create_persistent(exec, exec->phase));
    }
}

/* Posts phase p: its messages, then its local copies. Every message is
 * posted whatever fails: peers wait for each. */
static void post_phase(nbr_mpi_exec_t *exec, int p)
{
    const nbr_plan_t *plan = exec->core.plan;
    const nbr_phase_t *phase = &plan->phases[p];
    int first = plan->phase_first_message[p];
    int count = plan->phase_first_message[p + 1] - first;
    MPI_Request *next = exec->requests + (exec->persistent ? first : 0);
    if (exec->persistent) {
        record(exec, create_persistent(exec, p));
        if (!failed(exec) && count > 0) {
            int mrc = PMPI_Startall(count, next);
            if (mrc == MPI_SUCCESS)
                next = NULL; /* all started */
            else
                record(exec, nbr_mpi_failed("MPI_Startall", mrc));
        }
    }
    for (int i = 0; next && i < phase->num_ops; i++) {
        const nbr_op_t *op = &plan->ops[phase->first_op + i];
        if (!is_message(op))
            continue;
        if (exec->persistent)
            start_message(exec, op, next++);
        else
            post_message(exec, op, next++);
    }
    for (int i = 0; i < phase->num_ops; i++) {
        const nbr_op_t *op = &plan->ops[phase->first_op + i];
        if (op->kind == NBR_OP_COPY && op->bytes > 0)
            memcpy(exec->base[op->buf] + op->offset,
                   exec->base[op->src_buf] + op->src_offset, op->bytes);
    }
}

static MPI_Request *phase_requests(nbr_mpi_exec_t *exec, int p)
{
    return exec->persistent ? exec->requests + exec->core.plan->phase_first_message[p]
                            : exec->requests;
}

/* MPI_ERR_IN_STATUS from Waitall / Testall marks requests that neither
 * failed nor completed as MPI_ERR_PENDING: they are still in flight and
 * must complete before the phase may end. */
static void wait_pending(MPI_Request *requests, MPI_Status *statuses, int count)
{
    for (int r = 0; r < count; r++)
        if (statuses[r].MPI_ERROR == MPI_ERR_PENDING)
            statuses[r].MPI_ERROR = PMPI_Wait(&requests[r], &statuses[r]);
}

/* After a phase completed (mpi_rc MPI_SUCCESS, or MPI_ERR_IN_STATUS with
 * each request's code in its status): a receive that got a different byte
 * count than the plan expects means the two ranks disagree on type
 * signatures. */
static int check_phase(nbr_mpi_exec_t *exec, int p, int mpi_rc, int *spoils)
{
    const nbr_plan_t *plan = exec->core.plan;
    const nbr_phase_t *phase = &plan->phases[p];
    int count = plan->phase_first_message[p + 1] - plan->phase_first_message[p];
    int rc = NBR_SUCCESS;
    for (int i = 0, r = 0; i < phase->num_ops && r < count; i++) {
        const nbr_op_t *op = &plan->ops[phase->first_op + i];
        if (!is_message(op))
            continue;
        MPI_Status *status = &exec->statuses[r++];
        int receive = op->kind == NBR_OP_RECV;
        int op_rc = nbr_message_check(receive, status,
                                      mpi_rc == MPI_ERR_IN_STATUS ? status->MPI_ERROR
                                                                  : MPI_SUCCESS,
                                      op->peer, op->bytes, receive ? "receive" : "send");
        /* a signature mismatch says more than a generic MPI failure */
        if (rc == NBR_SUCCESS || op_rc == NBR_ERR_TYPE_MISMATCH)
            rc = op_rc == NBR_SUCCESS ? rc : op_rc;
        *spoils |= receive ? nbr_executor_receive_spoils(&exec->core, op, op_rc)
                           : op_rc != NBR_SUCCESS;
    }
    return rc;
}

static int begin(nbr_executor_t *core)
{
    nbr_mpi_exec_t *exec = of(core);
    exec->phase = 0;
    exec->retried = 0;
    post_phase(exec, 0);
    return NBR_SUCCESS; /* errors are the run's status */
}

/* Completes phase exec->phase (blocking or not) and posts the next one. */
static int finish_phase(nbr_mpi_exec_t *exec, int blocking, int *finished)
{
    int p = exec->phase;
    int count = exec->core.plan->phase_first_message[p + 1] - exec->core.plan->phase_first_message[p];
    int mpi_rc;
    *finished = 1;
    MPI_Request *requests = phase_requests(exec, p);
    nbr_world_handler_t saved = {MPI_ERRHANDLER_NULL, 0};
    if (NBR_MPI_RAISES_ALL_ON_WORLD)
        nbr_world_handler_aside(&saved);
    if (blocking)
        mpi_rc = PMPI_Waitall(count, requests, exec->statuses);
    else
        mpi_rc = PMPI_Testall(count, requests, finished, exec->statuses);
    nbr_world_handler_restore(&saved);
    if (!blocking && !*finished && mpi_rc == MPI_SUCCESS)
        return NBR_SUCCESS;
    if (mpi_rc != MPI_SUCCESS && mpi_rc != MPI_ERR_IN_STATUS) {
        /* The call failed as a whole: the requests' states are unknown and
         * peers wait for them. Testing, try again at the next step; then
         * wait for each request on its own. */
        record(exec, nbr_mpi_failed(blocking ? "MPI_Waitall" : "MPI_Testall", mpi_rc));
        if (!blocking && !exec->retried) {
            exec->retried = 1;
            *finished = 0;
            return NBR_SUCCESS;
        }
        for (int r = 0; r < count; r++)
            exec->statuses[r].MPI_ERROR = MPI_ERR_PENDING;
        mpi_rc = MPI_ERR_IN_STATUS;
    }
    exec->retried = 0;
    if (mpi_rc == MPI_ERR_IN_STATUS)
        wait_pending(requests, exec->statuses, count);
    int spoils = 0;
    int phase_rc = check_phase(exec, p, mpi_rc, &spoils);
    if (phase_rc != NBR_SUCCESS && exec->persistent) {
        /* After an error MPI may have released a handle or left it unusable;
         * drop the phase's handles so the next start re-creates them. */
        int first = exec->core.plan->phase_first_message[p];
        for (int r = first; r < first + count; r++)
            free_persistent(exec, r);
    }
    int was_spoilt = exec->core.spoilt;
    record(exec, phase_rc);
    exec->core.spoilt = was_spoilt || spoils; /* a mismatch of the user's own block spoils nothing */
    exec->phase++;
    if (exec->phase < exec->core.plan->num_phases)
        post_phase(exec, exec->phase);
    return NBR_SUCCESS;
}

/* One step: the phase in flight completes (blocking) or is tested, and
 * (not blocking) the next ones as long as they complete at once. */
static int advance(nbr_executor_t *core, int blocking)
{
    nbr_mpi_exec_t *exec = of(core);
    int finished = 1, before = exec->phase;
    while (finished && exec->phase < core->plan->num_phases) {
        finish_phase(exec, blocking, &finished);
        if (blocking)
            break;
    }
    if (exec->phase >= core->plan->num_phases)
        core->active = 0;
    return exec->phase != before;
}

static void unbind(nbr_executor_t *core)
{
    nbr_mpi_exec_t *exec = of(core);
    if (exec->persistent && exec->requests && core->plan) {
        int total = core->plan->phase_first_message[core->plan->num_phases];
        for (int r = 0; r < total; r++)
            free_persistent(exec, r);
    }
    exec->persistent = 0;
}

static void destroy(nbr_executor_t *core)
{
    nbr_mpi_exec_t *exec = of(core);
    free(exec->requests);
    free(exec->statuses);
    free(exec->request_types);
    free(exec->own_scratch);
    free(exec);
}

const nbr_executor_kind_t nbr_mpi_executor = {
    .name = "mpi",
    .create = create,
    .bind = bind,
    .begin = begin,
    .advance = advance,
    .unbind = unbind,
    .destroy = destroy,
};
