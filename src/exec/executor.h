/* The one interface every executor implements: runs plans (plan/plan.h)
 * for one communicator. A communicator's executor kind is chosen once, when
 * its domain is set up (the MPI executor, or the device executor when the
 * device layer is on); everything above this header calls the functions
 * below and never asks which kind it holds.
 *
 * Life of an executor: create (once per request; kept between calls),
 * bind to a plan and buffers, then any number of start / test / wait runs
 * (persistent requests) or one (the others), unbind, and bind again for the
 * next call; destroy at the end. Phases run in order; a phase that fails
 * does not stop the later ones (peers wait for them), the first error is
 * the run's status.
 *
 * Error agreement (nbr_agree_errors; bound with an agreement tag): once the
 * plan's run ends on a rank, every rank learns whether any rank's run
 * failed, and a rank whose own run succeeded ends with NBR_ERR_PEER when
 * another's did not. Without it, a failure reaches only the ranks its
 * messages (or their absence) reach.
 *
 * Guard (nbr_executor_guard): a plan built on a fact every rank must hold
 * for this run (allgather through relays: every rank's block is the
 * agreed size) runs beside an agreement of that fact, from its start;
 * where some rank did not hold it, the run's own bytes are void and the
 * fallback executor (the same call planned without the fact) runs in its
 * place, on every rank. Both are in flight on their own, so progress made
 * anywhere moves them.
 *
 * Every executor of a domain that is running is on its in-flight list, and
 * progress advances all of them: waiting on one request moves the others,
 * so a peer that waits for an older request is never stuck behind the
 * order in which this rank waits (MPI allows any order). */
#ifndef NBR_EXECUTOR_H
#define NBR_EXECUTOR_H

#include "base/reduce.h"
#include "plan/plan.h"
#include "topo/locality.h"

#include <mpi.h>
#include <nbrcoll.h>

typedef struct nbr_executor nbr_executor_t;

#define NBR_GUARD_VALUES 8
typedef struct nbr_exec_domain nbr_exec_domain_t;
struct nbr_device_ctx;

/* nbr_memory: what the user's buffers are. auto asks the runtime per
 * buffer; host turns the device layer off for the communicator. */
typedef enum nbr_memory_mode {
    NBR_MEMORY_AUTO = 0,
    NBR_MEMORY_HOST = 1,
    NBR_MEMORY_DEVICE = 2
} nbr_memory_mode_t;

/* How a communicator's executors move bytes (from its configuration). */
typedef struct nbr_exec_options {
    nbr_memory_mode_t memory;
    int staging_chunk; /* bytes per staged inter-node chunk */
    int gpu_aware_mpi; /* NBR_GPU_AWARE_MPI; -1: ask MPI */
} nbr_exec_options_t;

/* One buffer a plan reads or writes. */
typedef struct nbr_exec_buffer {
    char *base;       /* byte 0 as the plan sees it */
    const void *user; /* the user's memory behind it (asked what it is);
                       * NULL: nbrcoll's own host memory */
    int staged;       /* base is a host copy MPI_Pack made of user's typed data */
} nbr_exec_buffer_t;

/* What each kind of executor provides. The kind's state embeds
 * nbr_executor_t as its first member. */
typedef struct nbr_executor_kind {
    const char *name;
    int (*create)(nbr_exec_domain_t *domain, nbr_executor_t **exec);
    /* buffers[NBR_BUF_SCRATCH].base NULL: the executor provides scratch */
    int (*bind)(nbr_executor_t *exec, const nbr_exec_buffer_t buffers[NBR_NUM_BUFFERS],
                int persistent);
    /* posts the first phase of a run (the plan has at least one) */
    int (*begin)(nbr_executor_t *exec);
    /* one step; blocking: may wait inside MPI (the run is alone in flight).
     * Returns whether anything moved; clears exec->active at the end. */
    int (*advance)(nbr_executor_t *exec, int blocking);
    void (*unbind)(nbr_executor_t *exec);
    void (*destroy)(nbr_executor_t *exec);
    /* adds what the last run moved beyond the plan's own counts (may be NULL) */
    void (*add_counters)(const nbr_executor_t *exec, nbr_counters_t *counters);
} nbr_executor_kind_t;

/* The part every executor shares; the kind's code reads and sets it. */
struct nbr_executor {
    const nbr_executor_kind_t *kind;
    nbr_exec_domain_t *domain;
    const nbr_plan_t *plan; /* NULL when unbound */
    int tag_base;
    int active; /* started, not finished */
    int plan_done; /* the run's plan has ended (its guard or agreement may not) */
    int status; /* first error of the current run */
    /* What this rank sends from here on may be wrong (any error but a
     * mismatch confined to the user's own block): later sends carry
     * poison. */
    int spoilt;
    /* A binding failure that still leaves the plan runnable (set by the
     * kind's bind): every run starts failed with it and runs as poison,
     * so that no peer waits for this rank. Persistent bindings return it. */
    int bind_status;
    /* The binder's last step of each run, once the plan's run ends on this
     * rank and before any agreement (unpacking staged receives): its error
     * is the run's. NULL: none. */
    int (*finish)(void *arg);
    void *finish_arg;
    int agree_tag;      /* >= 0: the run ends with an error agreement on this tag */
    int agreeing;       /* the error agreement is under way */
    int64_t agree_value;
    nbr_reduce_t agreement;
    int guard_tag;      /* >= 0: the run's plan runs beside a guard on this tag */
    int guarding;       /* the guard is under way */
    int guard_failed;   /* the last run's guard found a rank that did not hold
                         * it: its bytes are void, the fallback ran instead */
    int guard_count;
    int64_t guard_mine[NBR_GUARD_VALUES]; /* [0]: this rank holds it (1) or not (0) */
    int64_t guard_values[NBR_GUARD_VALUES]; /* after the run: the least of every rank's */
    nbr_reduce_t guard;
    nbr_executor_t *fallback; /* started when the guard fails (not owned) */
    nbr_executor_t *next_in_flight;
};

/* Where one communicator's executors run. */
struct nbr_exec_domain {
    nbr_executor_t *in_flight;     /* running now, progressed together (first:
                                    * nbrcoll's shortcut reads it, front/comm.h) */
    const nbr_executor_kind_t *kind;
    MPI_Comm comm;                 /* nbrcoll's private duplicate */
    struct nbr_device_ctx *device; /* the device executor's; NULL otherwise */
    int rank, nranks;              /* in comm */
    int tracked;                   /* on progress.c's list */
};

/* Collective over comm: turns the device layer on when a backend is in
 * use and options allow it (every rank makes the same choice and returns
 * the same status), and picks the kind. */
int nbr_exec_domain_init(nbr_exec_domain_t *domain, MPI_Comm comm, int comm_id,
                         const nbr_exec_options_t *options, const nbr_locality_t *locality);
void nbr_exec_domain_free(nbr_exec_domain_t *domain);

/* Whether buffer is device memory, as the domain's executors will treat it
 * (always 0 when the device layer is off). */
int nbr_exec_on_device(const nbr_exec_domain_t *domain, const nbr_exec_buffer_t *buffer);

int nbr_executor_create(nbr_exec_domain_t *domain, nbr_executor_t **exec);
/* Binds to a plan: buffers are send, receive and scratch (base NULL:
 * the executor allocates what the plan needs, on the device when a user
 * buffer is device memory). persistent: set up once for many runs.
 * agree_tag >= 0: every run ends with an error agreement over all ranks
 * on that tag (one no plan op uses, and no other call in flight). */
int nbr_executor_bind(nbr_executor_t *exec, const nbr_plan_t *plan,
                      const nbr_exec_buffer_t buffers[NBR_NUM_BUFFERS], int tag_base,
                      int persistent, int agree_tag);
/* Posts the first phase. If posting fails part way, the run is waited out
 * (peers wait for what was posted) and the error returned. */
int nbr_executor_start(nbr_executor_t *exec);
/* Executors of error agreements alone, for calls the MPI library runs:
 * nbr_executor_agree starts one from this rank's status, on agree_tag
 * (as for nbr_executor_bind); test, wait and destroy as any executor. */
int nbr_executor_create_agreement(nbr_exec_domain_t *domain, nbr_executor_t **exec);
int nbr_executor_agree(nbr_executor_t *exec, int agree_tag, int status);
/* The same once watch says *done (its return is this rank's status); till
 * then each step of the executor calls it: it is in flight from now on, so
 * progress made for any call moves it. */
int nbr_executor_agree_after(nbr_executor_t *exec, int agree_tag,
                             int (*watch)(void *arg, int *done), void *arg);
/* The runs of exec's binding run beside a guard on guard_tag (one no plan
 * op and no other call in flight uses): a MIN over every rank of count
 * values (at most NBR_GUARD_VALUES), values[0] this rank holding the
 * guarded fact (1) or not (0), the others whatever the binder wants
 * learnt alongside (in exec->guard_values after the run); where any rank
 * does not hold it, fallback (bound, idle) is started in the run's place
 * and exec->guard_failed set. A new binding clears it. */
void nbr_executor_guard(nbr_executor_t *exec, int guard_tag, const int64_t *values, int count,
                        nbr_executor_t *fallback);
/* Sets exec's finish step (see struct nbr_executor) for the runs of its
 * binding; a new binding clears it. */
void nbr_executor_on_finish(nbr_executor_t *exec, int (*finish)(void *arg), void *arg);
/* A run that has failed on this rank before it began (status, e.g. its
 * send buffer could not be packed): it runs as poison, so no peer waits
 * for it, and ends with status. nbr_executor_start is this with success. */
int nbr_executor_start_failed(nbr_executor_t *exec, int status);
/* *done = 1 once the run ended; returns the run's status then. */
int nbr_executor_test(nbr_executor_t *exec, int *done);
int nbr_executor_wait(nbr_executor_t *exec);
void nbr_executor_add_counters(const nbr_executor_t *exec, nbr_counters_t *counters);
/* Releases what the binding holds; the executor may be bound again. */
void nbr_executor_unbind(nbr_executor_t *exec);
void nbr_executor_destroy(nbr_executor_t *exec);

/* One pass over everything in flight on the domain; returns whether
 * anything moved. */
int nbr_exec_progress(nbr_exec_domain_t *domain);

/* Progress inside MPI's own engine (progress.c): every domain is tracked
 * from its init to its free, and where the MPI library offers a hook
 * (Open MPI's opal_progress) every blocking MPI call moves them all. */
int nbr_progress_track(nbr_exec_domain_t *domain);
void nbr_progress_untrack(nbr_exec_domain_t *domain);
/* One pass over every domain's operations in flight: what a rank that
 * waits does, since a peer may wait for its part in any communicator's
 * (MPI lets ranks complete operations in any order). */
int nbr_progress_all(void);
/* Whether MPI's progress moves nbrcoll's operations in this process (the
 * hook is installed on the first question). */
int nbr_progress_hooked(void);
/* Benchmarks only (bench/nbr_progress_bench.c): takes the hook out of
 * MPI's engine (on = 0) or puts it back; returns whether it is in. */
int nbr_progress_hook_switch(int on);
/* Executors joining (+1) and leaving (-1) some domain's in-flight list. */
void nbr_progress_counted(int delta);
/* Whether at most one executor of the whole process is in flight (one that
 * waits may then block inside MPI: nothing else needs to move). */
int nbr_progress_alone(void);
/* While this thread moves operations (enter returns the previous state for
 * leave), the hook leaves them alone: MPI_Test inside a step runs MPI's
 * progress, and the hook would step the same lists again. */
int nbr_progress_enter(void);
void nbr_progress_leave(int was);

/* For kinds: records a run's first error. */
static inline void nbr_executor_record(nbr_executor_t *exec, int rc)
{
    if (exec->status == NBR_SUCCESS)
        exec->status = rc;
    exec->spoilt |= rc != NBR_SUCCESS;
}

/* Whether status rc of receive op spoils what this rank sends on: not a
 * signature mismatch of a block the plan delivers into the user's receive
 * buffer when no send of the plan reads that buffer (MPI's truncation is
 * the receiver's error alone; relays of other ranks' blocks stay right). */
int nbr_executor_receive_spoils(const nbr_executor_t *exec, const nbr_op_t *op, int rc);

extern const nbr_executor_kind_t nbr_mpi_executor;
extern const nbr_executor_kind_t nbr_device_executor;

#endif
