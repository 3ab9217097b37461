#include "exec/mpi_executor.h"

#include "base/grow.h"
#include "base/log.h"
#include "exec/message.h"

#include <nbrcoll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

static int is_message(const nbr_op_t *op)
{
    return op->kind == NBR_OP_RECV || op->kind == NBR_OP_SEND;
}

/* Frees persistent request r and the type it kept. */
static void free_persistent(nbr_exec_t *exec, int r)
{
    if (exec->requests[r] != MPI_REQUEST_NULL)
        MPI_Request_free(&exec->requests[r]);
    if (exec->request_types[r] != MPI_DATATYPE_NULL)
        MPI_Type_free(&exec->request_types[r]);
}

/* Creates the MPI persistent requests of phase p that do not exist: all of
 * them at init, and again after a phase failed (finish_phase drops them:
 * Open MPI may release or spoil a persistent receive that was truncated). */
static int create_persistent(nbr_exec_t *exec, int p)
{
    int rc = NBR_SUCCESS;
    const nbr_phase_t *phase = &exec->plan->phases[p];
    MPI_Request *next = exec->requests + exec->plan->phase_first_message[p];
    for (int i = 0; i < phase->num_ops; i++) {
        const nbr_op_t *op = &exec->plan->ops[phase->first_op + i];
        if (!is_message(op))
            continue;
        MPI_Request *request = next++;
        if (*request != MPI_REQUEST_NULL)
            continue;
        NBR_CHECK(nbr_message_post(op->kind == NBR_OP_RECV ? NBR_MSG_RECV_INIT
                                                           : NBR_MSG_SEND_INIT,
                                   exec->base[op->buf] + op->offset, op->bytes, op->peer,
                                   exec->tag_base + op->tag, exec->comm, request,
                                   &exec->request_types[request - exec->requests]));
    }
out:
    return rc;
}

int nbr_exec_init(nbr_exec_t *exec, const nbr_plan_t *plan,
                  char *const base[NBR_NUM_BUFFERS], MPI_Comm comm,
                  int tag_base, int persistent)
{
    int rc = NBR_SUCCESS;
    exec->plan = plan;
    memcpy(exec->base, base, sizeof(exec->base));
    exec->comm = comm;
    exec->tag_base = tag_base;
    exec->persistent = persistent;
    exec->phase = plan->num_phases;
    exec->active = 0;
    exec->status = NBR_SUCCESS;
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
    if (rc != NBR_SUCCESS)
        nbr_exec_unbind(exec);
    return rc;
}

/* Posts phase p: its messages, then its local copies. */
static int post_phase(nbr_exec_t *exec, int p)
{
    int rc = NBR_SUCCESS;
    const nbr_plan_t *plan = exec->plan;
    const nbr_phase_t *phase = &plan->phases[p];
    int first = exec->plan->phase_first_message[p];
    int count = exec->plan->phase_first_message[p + 1] - first;
    if (exec->persistent) {
        NBR_CHECK(create_persistent(exec, p));
        if (count > 0)
            NBR_MPI_CHECK(MPI_Startall(count, exec->requests + first));
    } else {
        MPI_Request *next = exec->requests;
        for (int i = 0; i < phase->num_ops; i++) {
            const nbr_op_t *op = &plan->ops[phase->first_op + i];
            if (is_message(op))
                NBR_CHECK(nbr_message_post(op->kind == NBR_OP_RECV ? NBR_MSG_IRECV : NBR_MSG_ISEND,
                                           exec->base[op->buf] + op->offset, op->bytes, op->peer,
                                           exec->tag_base + op->tag, exec->comm, next++, NULL));
        }
    }
    for (int i = 0; i < phase->num_ops; i++) {
        const nbr_op_t *op = &plan->ops[phase->first_op + i];
        if (op->kind == NBR_OP_COPY && op->bytes > 0)
            memcpy(exec->base[op->buf] + op->offset,
                   exec->base[op->src_buf] + op->src_offset, op->bytes);
    }
out:
    return rc;
}

static MPI_Request *phase_requests(nbr_exec_t *exec, int p)
{
    return exec->persistent ? exec->requests + exec->plan->phase_first_message[p]
                            : exec->requests;
}

/* MPI_ERR_IN_STATUS from Waitall / Testall marks requests that neither
 * failed nor completed as MPI_ERR_PENDING: they are still in flight and
 * must complete before the phase may end. */
static void wait_pending(MPI_Request *requests, MPI_Status *statuses, int count)
{
    for (int r = 0; r < count; r++)
        if (statuses[r].MPI_ERROR == MPI_ERR_PENDING)
            statuses[r].MPI_ERROR = MPI_Wait(&requests[r], &statuses[r]);
}

/* After a phase completed: a receive that got a different byte count than
 * the plan expects means the two ranks disagree on type signatures. */
static int check_phase(nbr_exec_t *exec, int p, int mpi_rc)
{
    const nbr_plan_t *plan = exec->plan;
    const nbr_phase_t *phase = &plan->phases[p];
    int count = plan->phase_first_message[p + 1] - plan->phase_first_message[p];
    if (mpi_rc != MPI_SUCCESS && mpi_rc != MPI_ERR_IN_STATUS)
        return nbr_mpi_failed("MPI_Waitall", mpi_rc);
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
    }
    return rc;
}

static void record(nbr_exec_t *exec, int rc)
{
    if (exec->status == NBR_SUCCESS)
        exec->status = rc;
}

static void leave_in_flight(nbr_exec_t *exec)
{
    for (nbr_exec_t **p = exec->in_flight; p && *p; p = &(*p)->next_in_flight)
        if (*p == exec) {
            *p = exec->next_in_flight;
            break;
        }
    exec->next_in_flight = NULL;
}

int nbr_exec_start(nbr_exec_t *exec)
{
    if (exec->active)
        return NBR_ERR_REQUEST;
    exec->status = NBR_SUCCESS;
    exec->phase = 0;
    exec->active = 1;
    if (exec->in_flight) {
        exec->next_in_flight = *exec->in_flight;
        *exec->in_flight = exec;
    }
    if (exec->plan->num_phases == 0) {
        exec->active = 0;
        leave_in_flight(exec);
        return NBR_SUCCESS;
    }
    int rc = post_phase(exec, 0);
    record(exec, rc);
    if (rc != NBR_SUCCESS)
        nbr_exec_wait(exec); /* part was posted and peers wait for the rest */
    return rc;
}

/* Completes phase exec->phase (blocking or not) and posts the next one. */
static int finish_phase(nbr_exec_t *exec, int blocking, int *finished)
{
    int p = exec->phase;
    int count = exec->plan->phase_first_message[p + 1] - exec->plan->phase_first_message[p];
    int mpi_rc;
    *finished = 1;
    if (blocking) {
        mpi_rc = MPI_Waitall(count, phase_requests(exec, p), exec->statuses);
    } else {
        mpi_rc = MPI_Testall(count, phase_requests(exec, p), finished, exec->statuses);
        if (!*finished && mpi_rc == MPI_SUCCESS)
            return NBR_SUCCESS;
    }
    if (mpi_rc == MPI_ERR_IN_STATUS)
        wait_pending(phase_requests(exec, p), exec->statuses, count);
    int phase_rc = check_phase(exec, p, mpi_rc);
    if (phase_rc != NBR_SUCCESS && exec->persistent) {
        /* After an error MPI may have released a handle or left it unusable;
         * drop the phase's handles so the next start re-creates them. */
        int first = exec->plan->phase_first_message[p];
        for (int r = first; r < first + count; r++)
            free_persistent(exec, r);
    }
    record(exec, phase_rc);
    exec->phase++;
    if (exec->phase < exec->plan->num_phases)
        record(exec, post_phase(exec, exec->phase));
    return NBR_SUCCESS;
}

/* One step of exec: its phase in flight completes (blocking) or is tested;
 * returns whether a phase ended. The last one takes exec off the list. */
static int advance(nbr_exec_t *exec, int blocking)
{
    int finished = 1, before = exec->phase;
    while (finished && exec->phase < exec->plan->num_phases) {
        finish_phase(exec, blocking, &finished);
        if (blocking)
            break;
    }
    if (exec->phase >= exec->plan->num_phases) {
        exec->active = 0;
        leave_in_flight(exec);
    }
    return exec->phase != before;
}

/* One pass over every executor in flight with exec. */
static int advance_all(nbr_exec_t *exec)
{
    if (!exec->in_flight)
        return advance(exec, 0);
    int moved = 0;
    for (nbr_exec_t *e = *exec->in_flight, *next; e; e = next) {
        next = e->next_in_flight;
        moved |= advance(e, 0);
    }
    return moved;
}

int nbr_exec_test(nbr_exec_t *exec, int *done)
{
    if (exec->active)
        advance_all(exec);
    *done = !exec->active;
    return *done ? exec->status : NBR_SUCCESS;
}

int nbr_exec_wait(nbr_exec_t *exec)
{
    while (exec->active) {
        int alone = !exec->in_flight || (*exec->in_flight == exec && !exec->next_in_flight);
        if (alone)
            advance(exec, 1); /* nothing else to keep going: block in MPI */
        else if (!advance_all(exec))
            sched_yield(); /* ranks may share cores: let the peer run */
    }
    return exec->status;
}

void nbr_exec_unbind(nbr_exec_t *exec)
{
    if (exec->active)
        leave_in_flight(exec);
    if (exec->persistent && exec->requests && exec->plan) {
        int total = exec->plan->phase_first_message[exec->plan->num_phases];
        for (int r = 0; r < total; r++)
            free_persistent(exec, r);
    }
    exec->plan = NULL;
    exec->persistent = 0;
    exec->active = 0;
}

void nbr_exec_free(nbr_exec_t *exec)
{
    nbr_exec_unbind(exec);
    free(exec->requests);
    free(exec->statuses);
    free(exec->request_types);
    exec->requests = NULL;
    exec->statuses = NULL;
    exec->request_types = NULL;
    exec->request_capacity = exec->status_capacity = exec->types_capacity = 0;
}
