#include "base/reduce.h"

#include "base/log.h"

#include <nbrcoll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* Steps: 0 folds the ranks past the power of two in, 1 .. levels exchange
 * with rank ^ 2^(step - 1), levels + 1 hands the result back out. */
typedef struct step_plan {
    int recv_peer, send_peer; /* -1: none */
    int overwrite;            /* the received values are the result, not a part */
} step_plan_t;

static int power_below(int size)
{
    int m = 1;
    while (m <= size / 2)
        m *= 2;
    return m;
}

static int levels_of(int m)
{
    int levels = 0;
    while ((1 << levels) < m)
        levels++;
    return levels;
}

static step_plan_t plan_step(const nbr_reduce_t *r)
{
    int m = power_below(r->size), levels = levels_of(m), me = r->rank;
    step_plan_t p = {-1, -1, 0};
    if (r->step == 0) {
        if (me >= m)
            p.send_peer = me - m;
        else if (me < r->size - m)
            p.recv_peer = me + m;
    } else if (r->step <= levels) {
        if (me < m)
            p.recv_peer = p.send_peer = me ^ (1 << (r->step - 1));
    } else {
        if (me >= m) {
            p.recv_peer = me - m;
            p.overwrite = 1;
        } else if (me < r->size - m) {
            p.send_peer = me + m;
        }
    }
    return p;
}

static int last_step(const nbr_reduce_t *r)
{
    return levels_of(power_below(r->size)) + 1;
}

static void combine(nbr_reduce_t *r)
{
    for (int i = 0; i < r->count; i++) {
        int64_t a = r->values[i], b = r->incoming[i];
        switch (r->ops ? (nbr_reduce_op_t)r->ops[i] : r->one_op) {
        case NBR_REDUCE_MIN: r->values[i] = b < a ? b : a; break;
        case NBR_REDUCE_MAX: r->values[i] = b > a ? b : a; break;
        default: r->values[i] = (int64_t)((uint64_t)a + (uint64_t)b); break; /* wraps */
        }
    }
}

static void note(nbr_reduce_t *r, int rc)
{
    if (r->status == NBR_SUCCESS)
        r->status = rc;
}

void nbr_reduce_begin(nbr_reduce_t *r, MPI_Comm comm, int tag, int64_t *values, int count,
                      const uint8_t *ops, nbr_reduce_op_t one_op, int64_t *scratch)
{
    memset(r, 0, sizeof *r);
    r->comm = comm;
    r->tag = tag;
    r->values = values;
    r->count = count;
    r->ops = ops;
    r->one_op = one_op;
    r->requests[0] = r->requests[1] = MPI_REQUEST_NULL;
    int64_t *room = count > NBR_REDUCE_SMALL ? scratch : r->small;
    r->incoming = room;
    r->outgoing = room + count;
    int mrc = MPI_Comm_rank(comm, &r->rank);
    if (mrc == MPI_SUCCESS)
        mrc = MPI_Comm_size(comm, &r->size);
    if (mrc != MPI_SUCCESS) /* only on an invalid communicator */
        note(r, nbr_mpi_failed("MPI_Comm_size", mrc));
    r->step = r->size > 1 && mrc == MPI_SUCCESS ? 0 : -1;
}

/* Posts what the step has not posted yet; whether both are. */
static int post(nbr_reduce_t *r, const step_plan_t *p)
{
    if (!(r->posted & 1)) {
        int mrc = p->recv_peer < 0 ? MPI_SUCCESS
                                   : MPI_Irecv(r->incoming, r->count, MPI_INT64_T, p->recv_peer,
                                               r->tag, r->comm, &r->requests[0]);
        if (mrc == MPI_SUCCESS)
            r->posted |= 1;
        else
            nbr_mpi_failed("MPI_Irecv", mrc);
    }
    if (!(r->posted & 2)) {
        if (p->send_peer >= 0 && r->count > 0)
            memcpy(r->outgoing, r->values, (size_t)r->count * sizeof(int64_t));
        int mrc = p->send_peer < 0 ? MPI_SUCCESS
                                   : MPI_Isend(r->outgoing, r->count, MPI_INT64_T, p->send_peer,
                                               r->tag, r->comm, &r->requests[1]);
        if (mrc == MPI_SUCCESS)
            r->posted |= 2;
        else
            nbr_mpi_failed("MPI_Isend", mrc);
    }
    return r->posted == 3;
}

int nbr_reduce_advance(nbr_reduce_t *r, int *done)
{
    int moved = 0;
    while (r->step >= 0) {
        step_plan_t p = plan_step(r);
        if (!post(r, &p))
            break;
        for (int i = 0; i < 2; i++) {
            if (r->requests[i] == MPI_REQUEST_NULL)
                continue;
            int flag = 0, mrc = PMPI_Test(&r->requests[i], &flag, MPI_STATUS_IGNORE);
            if (mrc != MPI_SUCCESS) {
                int rc = nbr_mpi_failed("MPI_Test", mrc);
                if (r->requests[i] == MPI_REQUEST_NULL) /* released: its value is lost */
                    note(r, rc);
            } else if (flag && i == 0) {
                r->received = 1;
            }
        }
        if (r->requests[0] != MPI_REQUEST_NULL || r->requests[1] != MPI_REQUEST_NULL)
            break;
        if (r->received) {
            if (p.overwrite)
                memcpy(r->values, r->incoming, (size_t)r->count * sizeof(int64_t));
            else
                combine(r);
        }
        moved = 1;
        r->posted = r->received = 0;
        r->step = r->step == last_step(r) ? -1 : r->step + 1;
    }
    *done = r->step < 0;
    return moved;
}

int nbr_reduce_wait(nbr_reduce_t *r)
{
    int done = 0;
    for (;;) {
        nbr_reduce_advance(r, &done);
        if (done)
            break;
        sched_yield(); /* ranks may share cores: let the peer run */
    }
    return r->status;
}
