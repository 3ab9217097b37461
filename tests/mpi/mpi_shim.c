/* The test-only PMPI layer of mpi_shim.h. */
#define _GNU_SOURCE
#include "mpi_shim.h"

#include <mpi.h>

#include <dlfcn.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const call_names[NBR_SHIM_NUM_CALLS] = {
    "Isend",  "Irecv",    "Issend",    "Send_init", "Recv_init",  "Start",
    "Startall", "Iprobe", "Improbe",   "Imrecv",    "Recv",       "Wait",
    "Waitall", "Test",    "Testall",   "Pack",      "Unpack",     "Ibarrier",  "Iallreduce", "Allreduce",
    "Allgather", "Bcast", "Comm_dup",  "Comm_split", "Comm_split_type"};

static long counts[NBR_SHIM_NUM_CALLS];
static int armed_call = -1;
static long armed_nth;
static int fired;
static int paused;

const char *nbr_shim_name(nbr_shim_call_t call)
{
    return call >= 0 && call < NBR_SHIM_NUM_CALLS ? call_names[call] : "?";
}

void nbr_shim_arm(nbr_shim_call_t call, long nth)
{
    memset(counts, 0, sizeof counts);
    armed_call = nth > 0 ? (int)call : -1;
    armed_nth = nth;
    fired = 0;
}

void nbr_shim_disarm(void)
{
    armed_call = -1;
}

void nbr_shim_pause(int pause)
{
    paused = pause;
}

long nbr_shim_calls(nbr_shim_call_t call)
{
    return call >= 0 && call < NBR_SHIM_NUM_CALLS ? counts[call] : 0;
}

int nbr_shim_fired(void)
{
    return fired;
}

/* Counts a call; true when it is the one to fail. */
static int inject(nbr_shim_call_t call)
{
    if (call >= NBR_SHIM_NUM_CALLS || paused) /* a call that is never failed */
        return 0;
    if (++counts[call] != armed_nth || (int)call != armed_call)
        return 0;
    fired = 1;
    if (getenv("NBR_SHIM_TRACE")) { /* where the failure lands */
        void *frames[16];
        backtrace_symbols_fd(frames, backtrace(frames, 16), 2);
    }
    return 1;
}

/* A collective kind counts only calls over the whole job (a communicator
 * of MPI_COMM_WORLD's size): those are the same operations, in the same
 * order, on every rank, so the N-th fails everywhere at once. Calls over
 * parts of the job (a node's ranks) are different operations on different
 * ranks and are never failed. */
static int inject_collective(nbr_shim_call_t call, MPI_Comm comm)
{
    int size = 0, world = 0;
    if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS ||
        PMPI_Comm_size(MPI_COMM_WORLD, &world) != MPI_SUCCESS || size != world)
        return 0;
    return inject(call);
}

/* Whether this call (of `kind`, over comm) is the one to fail. */
static int fails(nbr_shim_call_t kind, MPI_Comm comm)
{
    return kind >= NBR_SHIM_FIRST_COLLECTIVE && kind < NBR_SHIM_NUM_CALLS
               ? inject_collective(kind, comm)
               : inject(kind);
}

/* ------------------------------------------------------------ live objects */

typedef struct handle_set {
    uintptr_t *keys;
    long count, capacity;
} handle_set_t;

static handle_set_t live_requests, live_types, live_keyvals, live_comms;

static uintptr_t key_of(const void *handle, size_t size)
{
    uintptr_t key = 0;
    memcpy(&key, handle, size < sizeof key ? size : sizeof key);
    return key;
}

static void set_add(handle_set_t *set, uintptr_t key)
{
    if (set->count == set->capacity) {
        long capacity = set->capacity ? 2 * set->capacity : 64;
        uintptr_t *keys = realloc(set->keys, (size_t)capacity * sizeof(uintptr_t));
        if (!keys)
            return; /* a test would then see a count off: never silently right */
        set->keys = keys;
        set->capacity = capacity;
    }
    set->keys[set->count++] = key;
}

/* Handles not in the set (made before the program's first wrapped call,
 * or by MPI itself) are ignored. */
static void set_remove(handle_set_t *set, uintptr_t key)
{
    for (long i = set->count - 1; i >= 0; i--)
        if (set->keys[i] == key) {
            set->keys[i] = set->keys[--set->count];
            return;
        }
}

void nbr_shim_count_live(nbr_shim_live_t *live)
{
    live->requests = live_requests.count;
    live->datatypes = live_types.count;
    live->keyvals = live_keyvals.count;
    live->comms = live_comms.count;
}

#define ADD(set, handle) set_add(&(set), key_of(&(handle), sizeof(handle)))
#define REMOVE(set, handle) set_remove(&(set), key_of(&(handle), sizeof(handle)))

/* Requests that a completion call set to MPI_REQUEST_NULL are gone. */
static void forget_completed(const MPI_Request *before, const MPI_Request *after, int count)
{
    for (int i = 0; i < count; i++)
        if (before[i] != MPI_REQUEST_NULL && after[i] == MPI_REQUEST_NULL)
            REMOVE(live_requests, before[i]);
}

/* ------------------------------------------------------------ wrappers */

/* The real function: the next definition of PMPI_<fn> after this program. */
#define REAL(fn)                                                                   \
    static __typeof__(PMPI_##fn) *real_;                                           \
    if (!real_)                                                                    \
        real_ = (__typeof__(PMPI_##fn) *)dlsym(RTLD_NEXT, "PMPI_" #fn)

/* Defines MPI_<fn> and PMPI_<fn>, both calling shim_<fn>. */
#define BOTH_NAMES(fn, params, args)                                               \
    int MPI_##fn params { return shim_##fn args; }                                 \
    int PMPI_##fn params { return shim_##fn args; }

/* A call that makes one object of a kind counted in `set`; comm: the
 * communicator a collective kind runs over (MPI_COMM_NULL otherwise). */
#define MAKER(fn, kind, set, params, args, made, comm)                             \
    static int shim_##fn params                                                    \
    {                                                                              \
        REAL(fn);                                                                  \
        if (fails(kind, comm))                                                     \
            return MPI_ERR_OTHER;                                                  \
        int rc = real_ args;                                                       \
        if (rc == MPI_SUCCESS)                                                     \
            ADD(set, *(made));                                                     \
        return rc;                                                                 \
    }                                                                              \
    BOTH_NAMES(fn, params, args)

/* A call that makes one request. */
#define REQUEST_MAKER(fn, kind, params, args, request, comm)                       \
    MAKER(fn, kind, live_requests, params, args, request, comm)

REQUEST_MAKER(Isend, NBR_SHIM_ISEND,
              (const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request *request),
              (buf, count, type, dest, tag, comm, request), request, comm)
REQUEST_MAKER(Issend, NBR_SHIM_ISSEND,
              (const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request *request),
              (buf, count, type, dest, tag, comm, request), request, comm)
REQUEST_MAKER(Irecv, NBR_SHIM_IRECV,
              (void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
               MPI_Request *request),
              (buf, count, type, source, tag, comm, request), request, comm)
REQUEST_MAKER(Send_init, NBR_SHIM_SEND_INIT,
              (const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request *request),
              (buf, count, type, dest, tag, comm, request), request, comm)
REQUEST_MAKER(Recv_init, NBR_SHIM_RECV_INIT,
              (void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
               MPI_Request *request),
              (buf, count, type, source, tag, comm, request), request, comm)
REQUEST_MAKER(Imrecv, NBR_SHIM_IMRECV,
              (void *buf, int count, MPI_Datatype type, MPI_Message *message,
               MPI_Request *request),
              (buf, count, type, message, request), request, MPI_COMM_NULL)
REQUEST_MAKER(Ibarrier, NBR_SHIM_IBARRIER, (MPI_Comm comm, MPI_Request *request),
              (comm, request), request, comm)
REQUEST_MAKER(Iallreduce, NBR_SHIM_IALLREDUCE,
              (const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm, MPI_Request *request),
              (sendbuf, recvbuf, count, type, op, comm, request), request, comm)

/* A call that may fail and makes nothing. */
#define PLAIN(fn, kind, params, args, comm)                                              \
    static int shim_##fn params                                                    \
    {                                                                              \
        REAL(fn);                                                                  \
        if (fails(kind, comm))                                                       \
            return MPI_ERR_OTHER;                                                  \
        return real_ args;                                                         \
    }                                                                              \
    BOTH_NAMES(fn, params, args)

PLAIN(Start, NBR_SHIM_START, (MPI_Request *request), (request), MPI_COMM_NULL)
PLAIN(Startall, NBR_SHIM_STARTALL, (int count, MPI_Request requests[]), (count, requests), MPI_COMM_NULL)
PLAIN(Iprobe, NBR_SHIM_IPROBE,
      (int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status),
      (source, tag, comm, flag, status), comm)
PLAIN(Improbe, NBR_SHIM_IMPROBE,
      (int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
       MPI_Status *status),
      (source, tag, comm, flag, message, status), comm)
PLAIN(Recv, NBR_SHIM_RECV,
      (void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
       MPI_Status *status),
      (buf, count, type, source, tag, comm, status), comm)
PLAIN(Pack, NBR_SHIM_PACK,
      (const void *inbuf, int incount, MPI_Datatype type, void *outbuf, int outsize,
       int *position, MPI_Comm comm),
      (inbuf, incount, type, outbuf, outsize, position, comm), comm)
PLAIN(Unpack, NBR_SHIM_UNPACK,
      (const void *inbuf, int insize, int *position, void *outbuf, int outcount,
       MPI_Datatype type, MPI_Comm comm),
      (inbuf, insize, position, outbuf, outcount, type, comm), comm)
PLAIN(Allreduce, NBR_SHIM_ALLREDUCE,
      (const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
       MPI_Comm comm),
      (sendbuf, recvbuf, count, type, op, comm), comm)
PLAIN(Allgather, NBR_SHIM_ALLGATHER,
      (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
       int recvcount, MPI_Datatype recvtype, MPI_Comm comm),
      (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm), comm)
PLAIN(Bcast, NBR_SHIM_BCAST, (void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm),
      (buf, count, type, root, comm), comm)

/* Completion calls over an array of requests. */
#define COMPLETER(fn, kind, params, args, count, requests)                         \
    static int shim_##fn params                                                    \
    {                                                                              \
        REAL(fn);                                                                  \
        if (inject(kind))                                                          \
            return MPI_ERR_OTHER;                                                  \
        MPI_Request small[64] = {MPI_REQUEST_NULL}, *before = small;               \
        if ((count) > 64 && !(before = malloc((size_t)(count) * sizeof(MPI_Request)))) \
            return MPI_ERR_NO_MEM;                                                 \
        if ((count) > 0)                                                           \
            memcpy(before, requests, (size_t)(count) * sizeof(MPI_Request));       \
        int rc = real_ args;                                                       \
        forget_completed(before, requests, count);                                 \
        if (before != small)                                                       \
            free(before);                                                          \
        return rc;                                                                 \
    }                                                                              \
    BOTH_NAMES(fn, params, args)

COMPLETER(Wait, NBR_SHIM_WAIT, (MPI_Request *request, MPI_Status *status), (request, status),
          1, request)
COMPLETER(Test, NBR_SHIM_TEST, (MPI_Request *request, int *flag, MPI_Status *status),
          (request, flag, status), 1, request)
COMPLETER(Waitall, NBR_SHIM_WAITALL,
          (int count, MPI_Request requests[], MPI_Status statuses[]),
          (count, requests, statuses), count, requests)
COMPLETER(Testall, NBR_SHIM_TESTALL,
          (int count, MPI_Request requests[], int *flag, MPI_Status statuses[]),
          (count, requests, flag, statuses), count, requests)
/* Never failed: nbrcoll waits and tests through the four above. */
COMPLETER(Waitany, NBR_SHIM_NUM_CALLS,
          (int count, MPI_Request requests[], int *index, MPI_Status *status),
          (count, requests, index, status), count, requests)
COMPLETER(Testany, NBR_SHIM_NUM_CALLS,
          (int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status),
          (count, requests, index, flag, status), count, requests)
COMPLETER(Waitsome, NBR_SHIM_NUM_CALLS,
          (int incount, MPI_Request requests[], int *outcount, int indices[],
           MPI_Status statuses[]),
          (incount, requests, outcount, indices, statuses), incount, requests)
COMPLETER(Testsome, NBR_SHIM_NUM_CALLS,
          (int incount, MPI_Request requests[], int *outcount, int indices[],
           MPI_Status statuses[]),
          (incount, requests, outcount, indices, statuses), incount, requests)

static int shim_Request_free(MPI_Request *request)
{
    REAL(Request_free);
    MPI_Request before = *request;
    int rc = real_(request);
    if (rc == MPI_SUCCESS)
        REMOVE(live_requests, before);
    return rc;
}
BOTH_NAMES(Request_free, (MPI_Request *request), (request))

/* A call that frees one object of a kind counted in `set`. */
#define FREER(fn, set, type)                                                       \
    static int shim_##fn(type *handle)                                             \
    {                                                                              \
        REAL(fn);                                                                  \
        type before = *handle;                                                     \
        int rc = real_(handle);                                                    \
        if (rc == MPI_SUCCESS)                                                     \
            REMOVE(set, before);                                                   \
        return rc;                                                                 \
    }                                                                              \
    BOTH_NAMES(fn, (type * handle), (handle))

MAKER(Type_contiguous, NBR_SHIM_NUM_CALLS, live_types,
      (int count, MPI_Datatype old, MPI_Datatype *made), (count, old, made), made, MPI_COMM_NULL)
MAKER(Type_create_struct, NBR_SHIM_NUM_CALLS, live_types,
      (int count, const int lengths[], const MPI_Aint displacements[],
       const MPI_Datatype types[], MPI_Datatype *made),
      (count, lengths, displacements, types, made), made, MPI_COMM_NULL)
MAKER(Type_dup, NBR_SHIM_NUM_CALLS, live_types, (MPI_Datatype old, MPI_Datatype *made),
      (old, made), made, MPI_COMM_NULL)
FREER(Type_free, live_types, MPI_Datatype)

MAKER(Comm_create_keyval, NBR_SHIM_NUM_CALLS, live_keyvals,
      (MPI_Comm_copy_attr_function *copy, MPI_Comm_delete_attr_function *del, int *made,
       void *extra),
      (copy, del, made, extra), made, MPI_COMM_NULL)
FREER(Comm_free_keyval, live_keyvals, int)

MAKER(Comm_dup, NBR_SHIM_COMM_DUP, live_comms, (MPI_Comm comm, MPI_Comm *made),
      (comm, made), made, comm)
MAKER(Comm_split, NBR_SHIM_COMM_SPLIT, live_comms,
      (MPI_Comm comm, int color, int key, MPI_Comm *made), (comm, color, key, made), made, comm)
MAKER(Comm_split_type, NBR_SHIM_COMM_SPLIT_TYPE, live_comms,
      (MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *made),
      (comm, type, key, info, made), made, comm)
MAKER(Dist_graph_create_adjacent, NBR_SHIM_NUM_CALLS, live_comms,
      (MPI_Comm comm, int indegree, const int sources[], const int sourceweights[],
       int outdegree, const int destinations[], const int destweights[], MPI_Info info,
       int reorder, MPI_Comm *made),
      (comm, indegree, sources, sourceweights, outdegree, destinations, destweights, info,
       reorder, made),
      made, comm)
MAKER(Dist_graph_create, NBR_SHIM_NUM_CALLS, live_comms,
      (MPI_Comm comm, int n, const int sources[], const int degrees[],
       const int destinations[], const int weights[], MPI_Info info, int reorder,
       MPI_Comm *made),
      (comm, n, sources, degrees, destinations, weights, info, reorder, made), made, comm)
FREER(Comm_free, live_comms, MPI_Comm)
