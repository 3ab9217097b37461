/* An allreduce of a few 64-bit values over every rank of a communicator,
 * made of tagged point-to-point messages and advanced step by step.
 *
 * Why not MPI_Iallreduce: nbrcoll runs agreements from inside operations
 * in flight (a nonblocking call waiting for its decision, a call facts
 * exchange, a call's error agreement), which progress in whatever order
 * each rank's program tests them. MPI matches collectives on a
 * communicator by the order they are started, so two such agreements
 * started in another order on two ranks would meet the wrong partner.
 * Messages on a tag of the call's own are matched by tag: any order works.
 *
 * The pattern: with m the largest power of two <= P, rank m + i first
 * hands its values to rank i (i < P - m); the m ranks then exchange with
 * rank ^ 2^k for k = 0 .. log2(m) - 1, combining as they go; rank i hands
 * the result back to rank m + i. Each element has its own operation. */
#ifndef NBR_REDUCE_H
#define NBR_REDUCE_H

#include <mpi.h>
#include <stdint.h>

typedef enum nbr_reduce_op {
    NBR_REDUCE_MIN = 0,
    NBR_REDUCE_MAX = 1,
    NBR_REDUCE_SUM = 2
} nbr_reduce_op_t;

/* Up to this many values need no scratch of the caller's. */
#define NBR_REDUCE_SMALL 8

typedef struct nbr_reduce {
    MPI_Comm comm;
    int tag, rank, size;
    int count;
    int64_t *values;       /* the caller's: this rank's, then the result */
    const uint8_t *ops;    /* the caller's: one nbr_reduce_op_t per value; NULL: all one_op */
    nbr_reduce_op_t one_op;
    int64_t *incoming;     /* what the step received */
    int64_t *outgoing;     /* what it sends: a copy, values change meanwhile */
    int64_t small[2 * NBR_REDUCE_SMALL];
    int step;              /* nbr_reduce.c's steps; -1 once done */
    int posted;            /* of the step: bit 0 the receive, bit 1 the send */
    int received;          /* the step's receive completed with its values */
    int status;            /* first failure this rank met */
    MPI_Request requests[2]; /* receive, send */
} nbr_reduce_t;

/* Starts reducing values[0 .. count) (ops per element, or all by one_op
 * when ops is NULL) on tag of comm. The arrays stay the caller's and must
 * live until it is done; so must scratch, 2 * count values, which a reduce
 * of more than NBR_REDUCE_SMALL values needs (allocated where a failure
 * could still be agreed on: a rank that cannot take part leaves its peers
 * waiting). */
void nbr_reduce_begin(nbr_reduce_t *r, MPI_Comm comm, int tag, int64_t *values, int count,
                      const uint8_t *ops, nbr_reduce_op_t one_op, int64_t *scratch);

/* One step, never waiting: *done = 1 once values holds the result.
 * Returns whether anything moved. A post that fails is tried again at the
 * next step (a peer waits for the message); a failure that loses a value
 * is kept in r->status (the result is then incomplete on this rank). */
int nbr_reduce_advance(nbr_reduce_t *r, int *done);

/* To the end (yielding while it waits); returns r->status. */
int nbr_reduce_wait(nbr_reduce_t *r);

/* Non-negative doubles compare as their bit patterns: MAX and MIN of
 * prices in seconds (INFINITY included) as int64 values. */
static inline int64_t nbr_reduce_from_double(double x)
{
    union {
        double d;
        int64_t i;
    } u = {.d = x > 0 ? x : 0.0};
    return u.i;
}

static inline double nbr_reduce_to_double(int64_t bits)
{
    union {
        int64_t i;
        double d;
    } u = {.i = bits};
    return u.d;
}

#endif
