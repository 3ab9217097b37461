/* Operations in flight: one nbr_request per blocking, nonblocking or
 * persistent call. */
#ifndef NBR_REQUEST_H
#define NBR_REQUEST_H

#include "front/comm.h"
#include "front/select.h"
#include "exec/executor.h"

/* A user buffer as the plan sees it. Dense datatypes (no gaps: size ==
 * extent == true extent) are used in place; others are packed into (send)
 * or unpacked from (receive) a contiguous staging buffer with MPI_Pack, so
 * plans only ever move byte ranges. alltoallw gives every slot its own
 * type: dense only when all of them are. */
typedef struct nbr_typed_buffer {
    char *user;
    MPI_Datatype type; /* a duplicate when staged: the user may free theirs */
    int owns_type;
    int dense;
    int type_size;
    MPI_Aint extent, true_lb;
    int num_slots;
    int *counts;       /* staged only: element count per slot */
    MPI_Aint *starts;  /* staged only: where a slot's data starts in user, bytes */
    MPI_Datatype *types; /* alltoallw, staged only: each slot's type (duplicates,
                          * a run of equal ones shares one) */
    int owns_types;
    char *staging;
    size_t staging_bytes;
} nbr_typed_buffer_t;

/* One call's arguments, whatever the collective; arrays are indexed by the
 * user's blocks (a cartesian communicator's MPI_PROC_NULL ones included). */
typedef struct nbr_call {
    nbr_call_kind_t kind;
    const void *sendbuf;
    int sendcount;          /* allgather(v), alltoall */
    const int *sendcounts;  /* alltoallv, alltoallw */
    const int *sdispls;     /* alltoallv (elements) */
    const MPI_Aint *sdispls_w; /* alltoallw (bytes) */
    MPI_Datatype sendtype;  /* all but alltoallw */
    const MPI_Datatype *sendtypes; /* alltoallw */
    void *recvbuf;
    int recvcount;          /* allgather, alltoall */
    const int *recvcounts;  /* allgatherv, alltoallv, alltoallw */
    const int *rdispls;     /* allgatherv, alltoallv (elements) */
    const MPI_Aint *rdispls_w; /* alltoallw (bytes) */
    MPI_Datatype recvtype;  /* all but alltoallw */
    const MPI_Datatype *recvtypes; /* alltoallw */
    MPI_Comm comm;
    int blocking; /* a blocking call: auto may time it (its trial) */
    /* alltoallv_init_ext: the global index of every element of the send
     * and receive buffers (indexed as the displacements count) */
    const long *send_global_idx, *recv_global_idx;
} nbr_call_t;

/* How far a request's preparation got (request.c): a call that needs a
 * collective stage (a decision, a call facts exchange, a size round)
 * passes through them in flight when it is nonblocking; LAUNCHED once its
 * plan (or the library's collective) started. */
typedef enum nbr_stage {
    NBR_STAGE_CHOOSE = 0,
    NBR_STAGE_DECIDE,
    NBR_STAGE_FACTS,
    NBR_STAGE_FACTS_AGREE,
    NBR_STAGE_SIZES,
    NBR_STAGE_BUILD,
    NBR_STAGE_READY, /* prepared: launches when it is the queue's head */
    NBR_STAGE_LAUNCHED
} nbr_stage_t;

struct nbr_request {
    nbr_comm_t *comm;
    MPI_Comm user_comm; /* the communicator the call named (its error handler's) */
    nbr_shared_plan_t *plan;
    nbr_executor_t *exec; /* of the communicator's kind; kept with the request */
    /* nbr_agree_errors: the tag this call's runs agree on (-1: off), and
     * for calls the MPI library runs, the executor of that agreement
     * (kept with the request) */
    int agree_tag;
    nbr_executor_t *agreement;
    int running;             /* started, not completed yet */
    int persistent;
    /* the call's preparation (request.c) */
    nbr_stage_t stage;
    int status;              /* a failure on the way, the same on every rank: the call's */
    int tag_base;
    nbr_stream_t *stream;    /* NULL: persistent */
    unsigned long long stream_call; /* the call's number in its stream */
    const nbr_algorithm_t *algorithm;
    nbr_priced_call_t priced;
    size_t uniform_bytes;    /* the block relays assume (NBR_NOT_UNIFORM: none) */
    nbr_facts_run_t facts_run;
    void *facts;
    uint64_t digest;
    nbr_reduce_t reduce;     /* agreeing on the facts exchange's outcome */
    int64_t reduced;
    /* the size round of an allgatherv through relays */
    nbr_executor_t *sizes_exec;
    nbr_plan_t sizes_plan;
    nbr_layout_t sizes_layout;
    int sizes_started;
    uint64_t my_size;
    uint64_t *sizes_in;
    size_t *offset_of;
    char *sizes_scratch;
    /* a guarded allgather: this rank's blocks at the agreed size or not,
     * the stand-in buffers of a rank whose are not, the fallback */
    int guarded, holds;
    char *stand_in;
    nbr_shared_plan_t *fallback_plan;
    nbr_executor_t *fallback;
    struct nbr_request *queue_next;
    /* a call that waits for a stage: its own copies of the arrays and the
     * derived datatypes the program may release once the call returns */
    void *held_arrays;
    MPI_Datatype *held_types;
    int num_held_types;
    nbr_layout_t layout; /* this call's; kept (with its memory) on reuse */
    nbr_typed_buffer_t send, recv;
    size_t *block_sizes; /* allgatherv through relays: this call's size round */
    int sizes_differ;    /* a sender announced another size than our slot */
    nbr_decision_t *trial; /* a blocking call auto times (front/select.h) */
    /* value indices of an _ext call, slot by slot (values.send points
     * into value_storage) */
    int has_values;
    nbr_value_index_t values;
    int64_t *value_storage;
    size_t *value_at;
    /* The MPI library runs this call itself (front/library.c): the call's
     * arguments, kept for it, and its MPI request once posted. */
    int library;
    nbr_call_t call;
    int library_send_type_owned, library_recv_type_owned; /* call's types are duplicates */
    /* a persistent alltoallw: the call's type arrays, with duplicates of
     * derived types (owned where the flag says so) */
    MPI_Datatype *library_types[2];
    char *library_types_owned[2];
    MPI_Request library_request;
};

/* Validates the call, builds or finds its plan and prepares a request
 * (inactive). info: for persistent calls, may pick an algorithm. */
int nbr_request_create(const nbr_call_t *call, MPI_Info info, int persistent,
                       nbr_request_t *request);

#endif
