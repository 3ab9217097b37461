#include "executor.h"

#include "../core/grow.h"
#include "../core/log.h"

#include <limits.h>
#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

static int is_message(const nbr_op_t *op)
{
    return op->kind == NBR_OP_RECV || op->kind == NBR_OP_SEND;
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
    for (int r = 0; r < slots; r++)
        exec->requests[r] = MPI_REQUEST_NULL;
    for (int i = 0; i < plan->num_ops; i++)
        if (is_message(&plan->ops[i]) && plan->ops[i].bytes > INT_MAX) {
            NBR_ERROR("message of %zu bytes: over 2 GiB is not supported yet",
                      plan->ops[i].bytes);
            rc = NBR_ERR_UNSUPPORTED;
            goto out;
        }
    if (!persistent)
        return NBR_SUCCESS;
    MPI_Request *next = exec->requests;
    for (int i = 0; i < plan->num_ops; i++) {
        const nbr_op_t *op = &plan->ops[i];
        char *addr = exec->base[op->buf] + op->offset;
        if (op->kind == NBR_OP_RECV)
            NBR_MPI_CHECK(MPI_Recv_init(addr, (int)op->bytes, MPI_BYTE, op->peer,
                                        tag_base + op->tag, comm, next++));
        else if (op->kind == NBR_OP_SEND)
            NBR_MPI_CHECK(MPI_Send_init(addr, (int)op->bytes, MPI_BYTE, op->peer,
                                        tag_base + op->tag, comm, next++));
    }
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
        if (count > 0)
            NBR_MPI_CHECK(MPI_Startall(count, exec->requests + first));
    } else {
        MPI_Request *next = exec->requests;
        for (int i = 0; i < phase->num_ops; i++) {
            const nbr_op_t *op = &plan->ops[phase->first_op + i];
            char *addr = exec->base[op->buf] + op->offset;
            if (op->kind == NBR_OP_RECV)
                NBR_MPI_CHECK(MPI_Irecv(addr, (int)op->bytes, MPI_BYTE, op->peer,
                                        exec->tag_base + op->tag, exec->comm, next++));
            else if (op->kind == NBR_OP_SEND)
                NBR_MPI_CHECK(MPI_Isend(addr, (int)op->bytes, MPI_BYTE, op->peer,
                                        exec->tag_base + op->tag, exec->comm, next++));
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

/* After a phase completed: a receive that got a different byte count than
 * the plan expects means the two ranks disagree on type signatures. */
static int check_phase(nbr_exec_t *exec, int p, int mpi_rc)
{
    const nbr_plan_t *plan = exec->plan;
    const nbr_phase_t *phase = &plan->phases[p];
    int count = exec->plan->phase_first_message[p + 1] - exec->plan->phase_first_message[p];
    if (mpi_rc != MPI_SUCCESS && mpi_rc != MPI_ERR_IN_STATUS)
        return nbr_mpi_failed("MPI_Waitall", mpi_rc);
    for (int i = 0, r = 0; i < phase->num_ops && r < count; i++) {
        const nbr_op_t *op = &plan->ops[phase->first_op + i];
        if (!is_message(op))
            continue;
        MPI_Status *status = &exec->statuses[r++];
        if (mpi_rc == MPI_ERR_IN_STATUS && status->MPI_ERROR != MPI_SUCCESS) {
            int cls = MPI_SUCCESS;
            MPI_Error_class(status->MPI_ERROR, &cls);
            if (cls == MPI_ERR_TRUNCATE) {
                NBR_ERROR("message from rank %d longer than the %zu bytes expected: "
                          "send and receive signatures differ", op->peer, op->bytes);
                return NBR_ERR_TYPE_MISMATCH;
            }
            return nbr_mpi_failed("receive", status->MPI_ERROR);
        }
        if (op->kind == NBR_OP_RECV) {
            int got = 0;
            MPI_Get_count(status, MPI_BYTE, &got);
            if ((size_t)got != op->bytes) {
                NBR_ERROR("message from rank %d has %d bytes, %zu expected: "
                          "send and receive signatures differ", op->peer, got, op->bytes);
                return NBR_ERR_TYPE_MISMATCH;
            }
        }
    }
    return NBR_SUCCESS;
}

static void record(nbr_exec_t *exec, int rc)
{
    if (exec->status == NBR_SUCCESS)
        exec->status = rc;
}

int nbr_exec_start(nbr_exec_t *exec)
{
    if (exec->active)
        return NBR_ERR_REQUEST;
    exec->status = NBR_SUCCESS;
    exec->phase = 0;
    exec->active = 1;
    if (exec->plan->num_phases == 0)
        return NBR_SUCCESS;
    int rc = post_phase(exec, 0);
    record(exec, rc);
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
    record(exec, check_phase(exec, p, mpi_rc));
    exec->phase++;
    if (exec->phase < exec->plan->num_phases)
        record(exec, post_phase(exec, exec->phase));
    return NBR_SUCCESS;
}

int nbr_exec_test(nbr_exec_t *exec, int *done)
{
    *done = 0;
    if (!exec->active)
        return NBR_ERR_REQUEST;
    int finished = 1;
    while (finished && exec->phase < exec->plan->num_phases)
        finish_phase(exec, 0, &finished);
    if (exec->phase < exec->plan->num_phases)
        return NBR_SUCCESS;
    exec->active = 0;
    *done = 1;
    return exec->status;
}

int nbr_exec_wait(nbr_exec_t *exec)
{
    if (!exec->active)
        return NBR_ERR_REQUEST;
    int finished = 1;
    while (exec->phase < exec->plan->num_phases)
        finish_phase(exec, 1, &finished);
    exec->active = 0;
    return exec->status;
}

void nbr_exec_unbind(nbr_exec_t *exec)
{
    if (exec->persistent && exec->requests && exec->plan) {
        int total = exec->plan->phase_first_message[exec->plan->num_phases];
        for (int r = 0; r < total; r++)
            if (exec->requests[r] != MPI_REQUEST_NULL)
                MPI_Request_free(&exec->requests[r]);
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
    exec->requests = NULL;
    exec->statuses = NULL;
    exec->request_capacity = exec->status_capacity = 0;
}
