/* Point-to-point messages of any byte count. MPI counts are ints: up to
 * INT_MAX bytes a message is that many MPI_BYTEs; beyond, it is one element
 * of a derived type made of 1 GiB blocks and a tail, whose type signature is
 * still the plain bytes, so both ends may build it from their own count. */
#ifndef NBR_MESSAGE_H
#define NBR_MESSAGE_H

#include <mpi.h>
#include <stddef.h>

typedef enum nbr_message_call {
    NBR_MSG_ISEND,
    NBR_MSG_IRECV,
    NBR_MSG_SEND_INIT,
    NBR_MSG_RECV_INIT
} nbr_message_call_t;

/* Posts (or, for the _INIT calls, creates) a message of `bytes` bytes at
 * buf. held: NULL frees a derived type at once (MPI keeps it for the
 * operation); otherwise *held receives it (MPI_DATATYPE_NULL when none),
 * for the caller to free after the request: persistent requests keep
 * theirs, since some MPIs mishandle a type freed under one. Returns
 * NBR_SUCCESS, NBR_ERR_MPI or NBR_ERR_UNSUPPORTED (2^61 bytes or more), logged. */
int nbr_message_post(nbr_message_call_t call, void *buf, size_t bytes, int peer, int tag,
                     MPI_Comm comm, MPI_Request *request, MPI_Datatype *held);

/* Receives a message MPI_Improbe matched into buf (bytes: its length). */
int nbr_message_imrecv(void *buf, size_t bytes, MPI_Message *message, MPI_Request *request);

/* The length of a probed message. */
int nbr_message_probed(const MPI_Status *status, size_t *bytes);

/* After a failure a rank sends poison in place of each message it still
 * owes in the run: one byte longer than the message, which no receive of
 * it takes as data (a block shorter than its receive is data: MPI fills
 * the receive's front). The receiver learns of the failure (an error,
 * and it poisons what it owes in turn), and no rank waits for a message
 * that will not come. A post that fails is tried once more. */
int nbr_message_poison(size_t bytes, int peer, int tag, MPI_Comm comm, MPI_Request *request);

/* Logs that peer sent poison in place of a message of `expected` bytes;
 * returns NBR_ERR_PEER. */
int nbr_message_poisoned(int peer, size_t expected);

/* A probed message from peer of `got` bytes where `expected` were planned:
 * NBR_SUCCESS when it fits (a short block), NBR_ERR_PEER for poison, else
 * NBR_ERR_TYPE_MISMATCH; logged. */
int nbr_message_mismatch(int peer, size_t got, size_t expected);

/* A finished send or receive of `expected` bytes with peer: err is the
 * request's MPI code. NBR_SUCCESS (a receive may have taken fewer bytes:
 * a short block), NBR_ERR_TYPE_MISMATCH (truncated: a longer block or
 * poison, logged) or NBR_ERR_MPI (logged as `what`). */
int nbr_message_check(int is_receive, const MPI_Status *status, int err, int peer,
                      size_t expected, const char *what);

/* The bytes a completed receive posted for `expected` bytes got. */
int nbr_message_received(const MPI_Status *status, size_t expected, size_t *got);

#endif
