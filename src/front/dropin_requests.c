/* nbrcoll operations as MPI_Request handles (the design is
 * docs/architecture.md, "Drop-in"; why generalized requests:
 * docs/decisions.md, D46).
 *
 * An operation the program holds is an `op`: the nbrcoll request, and as
 * its handle a generalized request (MPI_Grequest_start), which gives a
 * handle MPI itself knows and no real request can share. MPI never sees
 * it complete on its own: the completion calls are interposed here.
 * Every one of them first advances each running op (nbrcoll moves data
 * only when tested), then answers for the program's own requests through
 * PMPI with ours replaced by MPI_REQUEST_NULL (the arrays keep their
 * indices), and for ours from the op: an empty status (MPI says nothing
 * of a collective's), the run's error through its communicator's handler.
 * A nonblocking op's handle is released when its completion is reported;
 * a persistent one's at MPI_Request_free, so the program's handle keeps
 * its value from start to start.
 *
 * While ops run, a blocking completion call polls (test, yield, again)
 * instead of blocking in MPI, which would stall them. One lock guards the
 * table and the ops; it is held across a blocking call only when one op
 * runs and at most one thread calls MPI (MPI_Wait's nbr_wait path). */
#include "front/dropin.h"

#include <nbrcoll_mpi.h>

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct op {
    MPI_Request token;       /* the program's handle */
    nbr_request_t request;   /* NBR_REQUEST_NULL once a nonblocking run ended */
    MPI_Comm comm;           /* the call's: errors go to its handler */
    int persistent;
    int active;              /* started; its completion not yet reported */
    int ended;               /* the run ended (code says how), unreported */
    int code;                /* MPI error class of the ended run */
    struct op *next_in_bucket;
    struct op *prev, *next;  /* all ops, for progress */
} op_t;

enum { NUM_BUCKETS = 1024, SMALL = 16 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static op_t *buckets[NUM_BUCKETS];
static op_t *all_ops;
static int num_ops;     /* read without the lock for the fast paths */
static int num_running; /* active and not ended */

static int any_ops(void)
{
    return __atomic_load_n(&num_ops, __ATOMIC_ACQUIRE) > 0;
}

static size_t bucket_of(MPI_Request token)
{
    uintptr_t bits = 0; /* a pointer in Open MPI, an int in MPICH */
    memcpy(&bits, &token, sizeof(token) < sizeof(bits) ? sizeof(token) : sizeof(bits));
    return (size_t)((bits >> 4) ^ (bits >> 14)) % NUM_BUCKETS;
}

static op_t *find(MPI_Request token)
{
    if (token == MPI_REQUEST_NULL)
        return NULL;
    for (op_t *op = buckets[bucket_of(token)]; op; op = op->next_in_bucket)
        if (op->token == token)
            return op;
    return NULL;
}

static void insert(op_t *op)
{
    size_t b = bucket_of(op->token);
    op->next_in_bucket = buckets[b];
    buckets[b] = op;
    op->prev = NULL;
    op->next = all_ops;
    if (all_ops)
        all_ops->prev = op;
    all_ops = op;
    __atomic_store_n(&num_ops, num_ops + 1, __ATOMIC_RELEASE);
    if (op->active)
        num_running++;
}

static void remove_op(op_t *op)
{
    op_t **link = &buckets[bucket_of(op->token)];
    while (*link != op)
        link = &(*link)->next_in_bucket;
    *link = op->next_in_bucket;
    if (op->prev)
        op->prev->next = op->next;
    else
        all_ops = op->next;
    if (op->next)
        op->next->prev = op->prev;
    __atomic_store_n(&num_ops, num_ops - 1, __ATOMIC_RELEASE);
}

/* ------------------------------------------------- generalized requests */

/* MPI asks these only if a handle reaches it unanswered (a call this
 * library does not interpose): an empty status, nothing to free or cancel. */
static int query_empty(void *extra, MPI_Status *status)
{
    (void)extra;
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    status->MPI_ERROR = MPI_SUCCESS;
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    return MPI_SUCCESS;
}

static int free_nothing(void *extra)
{
    (void)extra;
    return MPI_SUCCESS;
}

static int cancel_nothing(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

/* Releases op's handle (completing it first: MPI frees a generalized
 * request once it is complete and freed) and op itself. */
static void release(op_t *op)
{
    remove_op(op);
    if (op->request != NBR_REQUEST_NULL)
        nbr_request_free(&op->request);
    PMPI_Grequest_complete(op->token);
    PMPI_Request_free(&op->token);
    free(op);
}

int nbr_dropin_adopt(nbr_request_t *request, MPI_Request *token)
{
    MPI_Comm comm = MPI_COMM_NULL;
    int persistent = 0, active = 0;
    int rc = nbr_request_query(*request, &comm, &persistent, &active);
    if (rc != NBR_SUCCESS)
        return rc;
    op_t *op = calloc(1, sizeof(*op));
    if (!op || PMPI_Grequest_start(query_empty, free_nothing, cancel_nothing, NULL,
                                   &op->token) != MPI_SUCCESS) {
        free(op);
        if (active)
            nbr_wait(request); /* its peers are in it: finish it */
        if (*request != NBR_REQUEST_NULL)
            nbr_request_free(request);
        return NBR_ERR_NOMEM;
    }
    op->request = *request;
    op->comm = comm;
    op->persistent = persistent;
    op->active = active;
    pthread_mutex_lock(&lock);
    insert(op);
    pthread_mutex_unlock(&lock);
    *request = NBR_REQUEST_NULL;
    *token = op->token;
    return NBR_SUCCESS;
}

int nbr_request_to_mpi(nbr_request_t *request, MPI_Request *mpi_request)
{
    if (!request || *request == NBR_REQUEST_NULL)
        return NBR_ERR_REQUEST;
    if (!mpi_request)
        return NBR_ERR_ARG;
    return nbr_dropin_adopt(request, mpi_request);
}

/* ---------------------------------------------------------- progress */

static void advance(op_t *op)
{
    int done = 0;
    int rc = nbr_test(&op->request, &done);
    if (done || rc != NBR_SUCCESS) {
        op->ended = 1;
        op->code = nbr_dropin_error_class(rc);
        num_running--;
    }
}

/* Moves every running op one step (lock held). */
static void progress(void)
{
    for (op_t *op = all_ops; op && num_running > 0; op = op->next)
        if (op->active && !op->ended)
            advance(op);
}

static void progress_now(void)
{
    if (!any_ops())
        return;
    pthread_mutex_lock(&lock);
    progress();
    pthread_mutex_unlock(&lock);
}

/* A blocking call that polls: let ranks that share cores run. */
static void pause_poll(void)
{
    sched_yield();
}

/* What a completed collective's status holds: nothing (MPI_ERROR is set
 * only where arrays of statuses report errors). */
static void set_empty(MPI_Status *status)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
}

/* Reports an ended op's completion to the program (lock held): its
 * status, its handle (released for a nonblocking op), its error class. */
static int report(op_t *op, MPI_Request *handle, MPI_Status *status)
{
    int code = op->code;
    set_empty(status);
    op->active = op->ended = 0;
    op->code = MPI_SUCCESS;
    if (!op->persistent) {
        release(op);
        *handle = MPI_REQUEST_NULL;
    }
    return code;
}

/* The answer for an op of ours that is inactive (a persistent request not
 * started): complete at once, empty status. */
static int inactive_answer(MPI_Status *status)
{
    set_empty(status);
    return MPI_SUCCESS;
}

/* ------------------------------------------------ arrays of requests */

/* A completion call's array as PMPI sees it: the program's own requests,
 * ours replaced by MPI_REQUEST_NULL; ops[i] is ours at index i. */
typedef struct view {
    int count;
    op_t **ops;
    MPI_Request *others;
    int num_ours;
    op_t *ops_small[SMALL];
    MPI_Request others_small[SMALL];
} view_t;

/* Builds v over requests (lock held); MPI_ERR_NO_MEM if it cannot. */
static int view_build(view_t *v, int count, const MPI_Request *requests)
{
    v->count = count;
    v->num_ours = 0;
    v->ops = v->ops_small;
    v->others = v->others_small;
    if (count > SMALL) {
        v->ops = malloc((size_t)count * sizeof(*v->ops));
        v->others = malloc((size_t)count * sizeof(*v->others));
        if (!v->ops || !v->others) {
            if (v->ops != v->ops_small)
                free(v->ops);
            if (v->others != v->others_small)
                free(v->others);
            return MPI_ERR_NO_MEM;
        }
    }
    for (int i = 0; i < count; i++) {
        v->ops[i] = find(requests[i]);
        v->others[i] = v->ops[i] ? MPI_REQUEST_NULL : requests[i];
        v->num_ours += v->ops[i] != NULL;
    }
    return MPI_SUCCESS;
}

static void view_free(view_t *v)
{
    if (v->ops != v->ops_small)
        free(v->ops);
    if (v->others != v->others_small)
        free(v->others);
}

/* The program's requests as PMPI left them (completed ones freed). */
static void view_write_back(const view_t *v, MPI_Request *requests)
{
    for (int i = 0; i < v->count; i++)
        if (!v->ops[i])
            requests[i] = v->others[i];
}

/* Whether every one of ours in v that is active has ended (lock held);
 * *running_ours counts those still running. */
static int ours_ended(const view_t *v, int *running_ours)
{
    int running = 0;
    for (int i = 0; i < v->count; i++)
        if (v->ops[i] && v->ops[i]->active && !v->ops[i]->ended)
            running++;
    if (running_ours)
        *running_ours = running;
    return running == 0;
}

/* An ended op of ours in v, the first by index, or -1 (lock held);
 * *any_active: whether one of ours in v is active at all. */
static int first_ended(const view_t *v, int *any_active)
{
    *any_active = 0;
    for (int i = 0; i < v->count; i++) {
        op_t *op = v->ops[i];
        if (op && op->active) {
            *any_active = 1;
            if (op->ended)
                return i;
        }
    }
    return -1;
}

/* Reports every active op of ours in v (all ended) and folds their
 * errors into code, the PMPI call's answer (lock held). With statuses,
 * an error anywhere makes MPI_ERR_IN_STATUS and each status says its
 * own; without, the first error is returned. The error handler runs for
 * ours only when PMPI raised nothing already. */
static int report_all(const view_t *v, MPI_Request *requests, MPI_Status *statuses, int code)
{
    int first_error = MPI_SUCCESS;
    MPI_Comm error_comm = MPI_COMM_NULL;
    int ours_failed = 0;
    for (int i = 0; i < v->count; i++) {
        op_t *op = v->ops[i];
        if (!op)
            continue;
        MPI_Status *status = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
        MPI_Comm comm = op->comm;
        /* report releases a nonblocking op: op is not read after it */
        int op_code = op->active ? report(op, &requests[i], status) : inactive_answer(status);
        if (status != MPI_STATUS_IGNORE)
            status->MPI_ERROR = op_code;
        if (op_code != MPI_SUCCESS && !ours_failed) {
            ours_failed = 1;
            first_error = op_code;
            error_comm = comm;
        }
    }
    if (!ours_failed)
        return code;
    if (code != MPI_SUCCESS) /* PMPI has reported its own already */
        return statuses == MPI_STATUSES_IGNORE ? code : MPI_ERR_IN_STATUS;
    if (statuses == MPI_STATUSES_IGNORE)
        return nbr_dropin_raise(error_comm, first_error);
    for (int i = 0; i < v->count; i++)
        if (!v->ops[i])
            statuses[i].MPI_ERROR = MPI_SUCCESS;
    return nbr_dropin_raise(error_comm, MPI_ERR_IN_STATUS);
}

/* ------------------------------------------------- single requests */

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    if (!request || !any_ops())
        return PMPI_Wait(request, status);
    pthread_mutex_lock(&lock);
    op_t *op = find(*request);
    if (!op) {
        int running = num_running;
        pthread_mutex_unlock(&lock);
        if (running == 0)
            return PMPI_Wait(request, status);
        for (;;) { /* the program's request; ours move meanwhile */
            int flag = 0;
            progress_now();
            int code = PMPI_Test(request, &flag, status);
            if (flag || code != MPI_SUCCESS)
                return code;
            pause_poll();
        }
    }
    if (!op->active) {
        pthread_mutex_unlock(&lock);
        return inactive_answer(status);
    }
    int level = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&level);
    if (!op->ended && num_running == 1 && level != MPI_THREAD_MULTIPLE) {
        /* the only one running: nbrcoll may block inside MPI for it */
        int rc = nbr_wait(&op->request);
        op->ended = 1;
        op->code = nbr_dropin_error_class(rc);
        num_running--;
    }
    while (!op->ended) {
        progress();
        if (op->ended)
            break;
        pthread_mutex_unlock(&lock);
        pause_poll();
        pthread_mutex_lock(&lock);
    }
    MPI_Comm comm = op->comm;
    int code = report(op, request, status);
    pthread_mutex_unlock(&lock);
    return nbr_dropin_raise(comm, code);
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (!request || !flag || !any_ops())
        return PMPI_Test(request, flag, status);
    pthread_mutex_lock(&lock);
    progress();
    op_t *op = find(*request);
    if (!op) {
        pthread_mutex_unlock(&lock);
        return PMPI_Test(request, flag, status);
    }
    *flag = !op->active || op->ended;
    int code = MPI_SUCCESS;
    MPI_Comm comm = op->comm;
    if (!op->active)
        code = inactive_answer(status);
    else if (op->ended)
        code = report(op, request, status);
    pthread_mutex_unlock(&lock);
    return nbr_dropin_raise(comm, code);
}

int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    if (!flag || !any_ops())
        return PMPI_Request_get_status(request, flag, status);
    pthread_mutex_lock(&lock);
    progress();
    op_t *op = find(request);
    if (!op) {
        pthread_mutex_unlock(&lock);
        return PMPI_Request_get_status(request, flag, status);
    }
    *flag = !op->active || op->ended; /* the handle stays as it is */
    if (*flag)
        set_empty(status);
    pthread_mutex_unlock(&lock);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ arrays */

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    if (count <= 0 || !requests || !any_ops())
        return PMPI_Waitall(count, requests, statuses);
    view_t v;
    pthread_mutex_lock(&lock);
    int code = view_build(&v, count, requests);
    int idle = code == MPI_SUCCESS && v.num_ours == 0 && num_running == 0;
    pthread_mutex_unlock(&lock);
    if (code != MPI_SUCCESS || idle) {
        if (code == MPI_SUCCESS)
            view_free(&v);
        return code == MPI_SUCCESS ? PMPI_Waitall(count, requests, statuses) : code;
    }
    for (;;) {
        pthread_mutex_lock(&lock);
        progress();
        int ours_done = ours_ended(&v, NULL);
        int running = num_running;
        pthread_mutex_unlock(&lock);
        if (ours_done) {
            if (running == 0) { /* nothing of ours left to move: MPI may block */
                code = PMPI_Waitall(count, v.others, statuses);
                break;
            }
            int flag = 0;
            code = PMPI_Testall(count, v.others, &flag, statuses);
            if (flag || code != MPI_SUCCESS)
                break;
        }
        pause_poll();
    }
    pthread_mutex_lock(&lock);
    view_write_back(&v, requests);
    code = report_all(&v, requests, statuses, code);
    pthread_mutex_unlock(&lock);
    view_free(&v);
    return code;
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    if (count <= 0 || !requests || !flag || !any_ops())
        return PMPI_Testall(count, requests, flag, statuses);
    view_t v;
    pthread_mutex_lock(&lock);
    progress();
    int code = view_build(&v, count, requests);
    if (code != MPI_SUCCESS) {
        pthread_mutex_unlock(&lock);
        return code;
    }
    *flag = 0;
    if (ours_ended(&v, NULL)) {
        /* MPI completes all or none: ours wait until the rest are done */
        code = PMPI_Testall(count, v.others, flag, statuses);
        if (*flag || code != MPI_SUCCESS) {
            view_write_back(&v, requests);
            code = report_all(&v, requests, statuses, code);
        }
    }
    pthread_mutex_unlock(&lock);
    view_free(&v);
    return code;
}

/* One pass of Waitany / Testany: *index the completed request's, or
 * MPI_UNDEFINED with *flag set when none is active, *flag 0 when active
 * ones remain unfinished. */
static int any_pass(view_t *v, MPI_Request requests[], int *index, int *flag,
                    MPI_Status *status)
{
    int any_active = 0;
    pthread_mutex_lock(&lock);
    progress();
    int i = first_ended(v, &any_active);
    if (i >= 0) {
        MPI_Comm comm = v->ops[i]->comm;
        int code = report(v->ops[i], &requests[i], status); /* spends the view */
        pthread_mutex_unlock(&lock);
        *index = i;
        *flag = 1;
        return nbr_dropin_raise(comm, code);
    }
    pthread_mutex_unlock(&lock);
    int code = PMPI_Testany(v->count, v->others, index, flag, status);
    view_write_back(v, requests);
    if (code != MPI_SUCCESS || !*flag || *index != MPI_UNDEFINED)
        return code;
    /* none of the program's own active: done unless ours run */
    *flag = !any_active;
    if (*flag)
        set_empty(status);
    return MPI_SUCCESS;
}

static int any_setup(view_t *v, int count, MPI_Request requests[], int *idle)
{
    pthread_mutex_lock(&lock);
    int code = view_build(v, count, requests);
    *idle = code == MPI_SUCCESS && v->num_ours == 0 && num_running == 0;
    pthread_mutex_unlock(&lock);
    if (code == MPI_SUCCESS && *idle)
        view_free(v);
    return code;
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    if (count <= 0 || !requests || !index || !any_ops())
        return PMPI_Waitany(count, requests, index, status);
    view_t v;
    int idle = 0, code = any_setup(&v, count, requests, &idle);
    if (code != MPI_SUCCESS || idle)
        return code != MPI_SUCCESS ? code : PMPI_Waitany(count, requests, index, status);
    int flag = 0;
    while ((code = any_pass(&v, requests, index, &flag, status)) == MPI_SUCCESS && !flag)
        pause_poll();
    view_free(&v);
    return code;
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    if (count <= 0 || !requests || !index || !flag || !any_ops())
        return PMPI_Testany(count, requests, index, flag, status);
    view_t v;
    int idle = 0, code = any_setup(&v, count, requests, &idle);
    if (code != MPI_SUCCESS || idle)
        return code != MPI_SUCCESS ? code : PMPI_Testany(count, requests, index, flag, status);
    code = any_pass(&v, requests, index, flag, status);
    view_free(&v);
    return code;
}

/* One pass of Waitsome / Testsome: the program's completed requests
 * (PMPI_Testsome), then ours that ended, appended. *outcount
 * MPI_UNDEFINED when nothing is active. */
static int some_pass(view_t *v, MPI_Request requests[], int *outcount, int indices[],
                     MPI_Status statuses[])
{
    int n = 0;
    int code = PMPI_Testsome(v->count, v->others, &n, indices, statuses);
    view_write_back(v, requests);
    int none_active = n == MPI_UNDEFINED;
    if (n == MPI_UNDEFINED)
        n = 0;
    int num_others = n;
    int first_error = MPI_SUCCESS;
    MPI_Comm error_comm = MPI_COMM_NULL;
    pthread_mutex_lock(&lock);
    progress();
    for (int i = 0; i < v->count; i++) {
        op_t *op = v->ops[i];
        if (!op || !op->active)
            continue;
        none_active = 0;
        if (!op->ended)
            continue;
        MPI_Comm comm = op->comm;
        MPI_Status *status = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[n];
        int op_code = report(op, &requests[i], status); /* spends the view */
        if (status != MPI_STATUS_IGNORE)
            status->MPI_ERROR = op_code;
        if (op_code != MPI_SUCCESS && first_error == MPI_SUCCESS) {
            first_error = op_code;
            error_comm = comm;
        }
        indices[n++] = i;
    }
    pthread_mutex_unlock(&lock);
    *outcount = none_active ? MPI_UNDEFINED : n;
    if (first_error == MPI_SUCCESS || code != MPI_SUCCESS)
        return code;
    if (statuses == MPI_STATUSES_IGNORE)
        return nbr_dropin_raise(error_comm, first_error);
    for (int k = 0; k < num_others; k++)
        statuses[k].MPI_ERROR = MPI_SUCCESS;
    return nbr_dropin_raise(error_comm, MPI_ERR_IN_STATUS);
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    if (incount <= 0 || !requests || !outcount || !indices || !any_ops())
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    view_t v;
    int idle = 0, code = any_setup(&v, incount, requests, &idle);
    if (code != MPI_SUCCESS || idle)
        return code != MPI_SUCCESS ? code
                                   : PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    while ((code = some_pass(&v, requests, outcount, indices, statuses)) == MPI_SUCCESS &&
           *outcount == 0)
        pause_poll();
    view_free(&v);
    return code;
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    if (incount <= 0 || !requests || !outcount || !indices || !any_ops())
        return PMPI_Testsome(incount, requests, outcount, indices, statuses);
    view_t v;
    int idle = 0, code = any_setup(&v, incount, requests, &idle);
    if (code != MPI_SUCCESS || idle)
        return code != MPI_SUCCESS ? code
                                   : PMPI_Testsome(incount, requests, outcount, indices, statuses);
    code = some_pass(&v, requests, outcount, indices, statuses);
    view_free(&v);
    return code;
}

/* ------------------------------------------- start, free, cancel, end */

/* Starts a persistent op of ours (lock held). */
static int start_op(op_t *op)
{
    if (!op->persistent || op->active)
        return MPI_ERR_REQUEST; /* MPI: only inactive persistent requests start */
    int code = nbr_dropin_error_class(nbr_start(&op->request));
    if (code == MPI_SUCCESS) {
        op->active = 1;
        op->ended = 0;
        num_running++;
    }
    return code;
}

int MPI_Start(MPI_Request *request)
{
    if (!request || !any_ops())
        return PMPI_Start(request);
    pthread_mutex_lock(&lock);
    op_t *op = find(*request);
    if (!op) {
        pthread_mutex_unlock(&lock);
        return PMPI_Start(request);
    }
    MPI_Comm comm = op->comm;
    int code = start_op(op);
    pthread_mutex_unlock(&lock);
    return nbr_dropin_raise(comm, code);
}

int MPI_Startall(int count, MPI_Request requests[])
{
    if (count <= 0 || !requests || !any_ops())
        return PMPI_Startall(count, requests);
    view_t v;
    pthread_mutex_lock(&lock);
    int code = view_build(&v, count, requests);
    if (code != MPI_SUCCESS) {
        pthread_mutex_unlock(&lock);
        return code;
    }
    /* ours in order (every rank starts its collectives in the same order),
     * then the program's own */
    for (int i = 0; i < count && code == MPI_SUCCESS; i++)
        if (v.ops[i]) {
            MPI_Comm comm = v.ops[i]->comm;
            code = nbr_dropin_raise(comm, start_op(v.ops[i]));
        }
    pthread_mutex_unlock(&lock);
    if (code == MPI_SUCCESS && v.num_ours < count) {
        int m = 0; /* PMPI_Startall takes no null handles: compact */
        for (int i = 0; i < count; i++)
            if (!v.ops[i])
                v.others[m++] = requests[i];
        code = PMPI_Startall(m, v.others);
    }
    view_free(&v);
    return code;
}

int MPI_Request_free(MPI_Request *request)
{
    if (!request || !any_ops())
        return PMPI_Request_free(request);
    pthread_mutex_lock(&lock);
    op_t *op = find(*request);
    if (!op) {
        pthread_mutex_unlock(&lock);
        return PMPI_Request_free(request);
    }
    MPI_Comm comm = op->comm;
    int code = MPI_SUCCESS;
    if (op->active) {
        code = MPI_ERR_REQUEST; /* MPI: erroneous for a running collective */
    } else {
        release(op);
        *request = MPI_REQUEST_NULL;
    }
    pthread_mutex_unlock(&lock);
    return nbr_dropin_raise(comm, code);
}

int MPI_Cancel(MPI_Request *request)
{
    if (!request || !any_ops())
        return PMPI_Cancel(request);
    pthread_mutex_lock(&lock);
    op_t *op = find(*request);
    MPI_Comm comm = op ? op->comm : MPI_COMM_NULL;
    pthread_mutex_unlock(&lock);
    if (!op)
        return PMPI_Cancel(request);
    return nbr_dropin_raise(comm, MPI_ERR_REQUEST); /* MPI: collectives cannot be cancelled */
}

/* Persistent requests the program left inactive are freed before MPI
 * ends (their nbrcoll state holds communicators). Active ones are the
 * program's error, as in MPI; they are left alone. */
int MPI_Finalize(void)
{
    pthread_mutex_lock(&lock);
    op_t *op = all_ops;
    while (op) {
        op_t *next = op->next;
        if (!op->active)
            release(op);
        op = next;
    }
    pthread_mutex_unlock(&lock);
    nbr_dropin_free_keyvals();
    return PMPI_Finalize();
}
