#include "exec/executor.h"

#include "exec/channel.h"

#include <sched.h>

int nbr_exec_domain_init(nbr_exec_domain_t *domain, MPI_Comm comm, int comm_id,
                         const nbr_exec_options_t *options, const nbr_locality_t *locality)
{
    *domain = (nbr_exec_domain_t){.kind = &nbr_mpi_executor, .comm = comm};
    int rc = nbr_device_ctx_create(comm, comm_id, options, locality, &domain->device);
    if (rc == NBR_SUCCESS && domain->device)
        domain->kind = &nbr_device_executor;
    return rc;
}

void nbr_exec_domain_free(nbr_exec_domain_t *domain)
{
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
    }
    return rc;
}

int nbr_executor_bind(nbr_executor_t *exec, const nbr_plan_t *plan,
                      const nbr_exec_buffer_t buffers[NBR_NUM_BUFFERS], int tag_base,
                      int persistent)
{
    if (exec->plan)
        nbr_executor_unbind(exec);
    exec->plan = plan;
    exec->tag_base = tag_base;
    exec->active = 0;
    exec->status = NBR_SUCCESS;
    int rc = exec->kind->bind(exec, buffers, persistent);
    if (rc != NBR_SUCCESS)
        nbr_executor_unbind(exec);
    return rc;
}

static void leave_in_flight(nbr_executor_t *exec)
{
    for (nbr_executor_t **p = &exec->domain->in_flight; *p; p = &(*p)->next_in_flight)
        if (*p == exec) {
            *p = exec->next_in_flight;
            break;
        }
    exec->next_in_flight = NULL;
}

/* One step of exec; the step that ends its run takes it off the list. */
static int advance(nbr_executor_t *exec, int blocking)
{
    int moved = exec->kind->advance(exec, blocking);
    if (!exec->active)
        leave_in_flight(exec);
    return moved;
}

int nbr_exec_progress(nbr_exec_domain_t *domain)
{
    int moved = 0;
    for (nbr_executor_t *e = domain->in_flight, *next; e; e = next) {
        next = e->next_in_flight;
        moved |= advance(e, 0);
    }
    return moved;
}

int nbr_executor_start(nbr_executor_t *exec)
{
    if (exec->active || !exec->plan)
        return NBR_ERR_REQUEST;
    exec->status = NBR_SUCCESS;
    if (exec->plan->num_phases == 0)
        return NBR_SUCCESS;
    exec->active = 1;
    exec->next_in_flight = exec->domain->in_flight;
    exec->domain->in_flight = exec;
    int rc = exec->kind->begin(exec);
    if (!exec->active)
        leave_in_flight(exec);
    if (rc != NBR_SUCCESS) {
        nbr_executor_record(exec, rc);
        nbr_executor_wait(exec); /* part was posted and peers wait for the rest */
    }
    return rc;
}

int nbr_executor_test(nbr_executor_t *exec, int *done)
{
    if (exec->active)
        nbr_exec_progress(exec->domain);
    *done = !exec->active;
    return *done ? exec->status : NBR_SUCCESS;
}

int nbr_executor_wait(nbr_executor_t *exec)
{
    while (exec->active) {
        int alone = exec->domain->in_flight == exec && !exec->next_in_flight;
        /* alone, it may block inside MPI: nothing else needs to move */
        int moved = alone ? advance(exec, 1) : nbr_exec_progress(exec->domain);
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
    exec->active = 0;
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
