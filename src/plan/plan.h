/* The plan IR: what one rank does for one collective call, as data.
 *
 * A plan is a list of phases; a phase is a list of operations over byte
 * ranges of three buffers: the user's send buffer, the user's receive buffer
 * and a plan-owned scratch buffer. Phase semantics, which the executor
 * implements and the verifier checks:
 *   - all receives of a phase are posted, then all sends, then the local
 *     copies run; the phase ends when every receive and send has completed;
 *   - sends and copies read data present at the start of the phase;
 *   - inside one phase, a range written (receive or copy destination) does
 *     not overlap any other range the phase reads or writes;
 *   - messages between two ranks with one tag match in posting order (MPI's
 *     non-overtaking rule); tags are plan-local, 0 .. num_tags-1.
 * Builders are pure C: no MPI, no GPU. */
#ifndef NBR_PLAN_H
#define NBR_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum nbr_buffer {
    NBR_BUF_SEND = 0,
    NBR_BUF_RECV = 1,
    NBR_BUF_SCRATCH = 2,
    NBR_NUM_BUFFERS = 3
} nbr_buffer_t;

typedef enum nbr_op_kind {
    NBR_OP_RECV = 0, /* receive bytes from peer into (buf, offset) */
    NBR_OP_SEND = 1, /* send bytes at (buf, offset) to peer */
    NBR_OP_COPY = 2  /* copy (src_buf, src_offset) -> (buf, offset) locally */
} nbr_op_kind_t;

typedef struct nbr_op {
    uint8_t kind;    /* nbr_op_kind_t */
    uint8_t buf;     /* buffer written (RECV, COPY) or read (SEND) */
    uint8_t src_buf; /* COPY only */
    uint8_t tag;     /* plan-local tag */
    int peer;        /* communicator rank; -1 for COPY */
    size_t offset;
    size_t src_offset; /* COPY only */
    size_t bytes;
} nbr_op_t;

typedef struct nbr_phase {
    int first_op;
    int num_ops;
} nbr_phase_t;

typedef enum nbr_collective {
    NBR_COLL_ALLGATHER = 0,
    NBR_COLL_ALLGATHERV = 1,
    NBR_COLL_ALLTOALLV = 2,
    NBR_NUM_COLLECTIVES = 3
} nbr_collective_t;

const char *nbr_collective_name(nbr_collective_t coll);

/* Where each neighbor's block lives in the send and receive buffers, in
 * bytes from the buffer's base. allgather(v): one send slot; alltoallv: one
 * per out-neighbor. Receive slots: one per in-neighbor. */
typedef struct nbr_slot {
    size_t offset;
    size_t bytes;
} nbr_slot_t;

typedef struct nbr_layout {
    nbr_collective_t coll;
    int num_send_slots;
    int num_recv_slots;
    nbr_slot_t *send; /* num_send_slots entries */
    nbr_slot_t *recv; /* num_recv_slots entries */
    int send_capacity, recv_capacity;
} nbr_layout_t;

/* Sets a zeroed layout up with zeroed slots. */
int nbr_layout_init(nbr_layout_t *layout, nbr_collective_t coll,
                    int num_send_slots, int num_recv_slots);
/* Like init, for a layout reused call after call: memory only grows. */
int nbr_layout_reserve(nbr_layout_t *layout, nbr_collective_t coll,
                       int num_send_slots, int num_recv_slots);
void nbr_layout_free(nbr_layout_t *layout);
int nbr_layout_equal(const nbr_layout_t *a, const nbr_layout_t *b);
int nbr_layout_copy(nbr_layout_t *dst, const nbr_layout_t *src);
/* One past the last byte any slot touches. */
size_t nbr_layout_send_extent(const nbr_layout_t *layout);
size_t nbr_layout_recv_extent(const nbr_layout_t *layout);

/* Messages and bytes a plan sends per execution, by locality class. */
typedef struct nbr_plan_stats {
    uint64_t msgs_intra_node, bytes_intra_node;
    uint64_t msgs_inter_node, bytes_inter_node;
    uint64_t msgs_off_socket, bytes_off_socket;
    uint64_t local_copies, bytes_local_copies;
} nbr_plan_stats_t;

typedef struct nbr_plan {
    int rank;
    int nranks;
    nbr_collective_t coll;
    const char *algorithm; /* static name */
    int num_tags;
    size_t scratch_bytes;
    int num_phases;
    nbr_phase_t *phases;
    int num_ops;
    int ops_capacity;
    nbr_op_t *ops;
    int phases_capacity;
    int max_phase_messages; /* most sends + receives in any phase */
    int *phase_first_message; /* num_phases + 1: prefix sums of messages */
    char *notes;              /* the builder's account of its pattern, when asked */
    size_t notes_length, notes_capacity;
    nbr_plan_stats_t stats;
    /* What every run ends in on this rank, found when it was built: a
     * self-loop whose block is longer than its slot is MPI's truncation
     * (NBR_ERR_TYPE_MISMATCH), and the run still goes on for the peers. */
    int local_status;
} nbr_plan_t;

/* Building: init, then begin_phase / add ops, then seal. */
void nbr_plan_init(nbr_plan_t *plan, int rank, int nranks,
                   nbr_collective_t coll, const char *algorithm);
void nbr_plan_free(nbr_plan_t *plan);
int nbr_plan_begin_phase(nbr_plan_t *plan);
int nbr_plan_add_send(nbr_plan_t *plan, int peer, int tag, nbr_buffer_t buf,
                      size_t offset, size_t bytes);
int nbr_plan_add_recv(nbr_plan_t *plan, int peer, int tag, nbr_buffer_t buf,
                      size_t offset, size_t bytes);
int nbr_plan_add_copy(nbr_plan_t *plan, nbr_buffer_t dst_buf,
                      size_t dst_offset, nbr_buffer_t src_buf,
                      size_t src_offset, size_t bytes);
/* Orders each phase as receives, sends, copies (stable, so matching order is
 * kept), drops empty phases and counts messages per locality class:
 * node_of / socket_of map ranks to nodes and sockets (socket ids are global,
 * unique across nodes). Either may be NULL: everything then counts as one
 * node / one socket. */
int nbr_plan_seal(nbr_plan_t *plan, const int *node_of, const int *socket_of);

/* Appends a line to the plan's notes (what a builder decided and why: the
 * paper's matrices for the leader plan); printed by nbr_plan_print. */
int nbr_plan_note(nbr_plan_t *plan, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Readable dump: header, stats, notes, one line per op. */
void nbr_plan_print(const nbr_plan_t *plan, FILE *out);

const char *nbr_buffer_name(nbr_buffer_t buf);

#endif
