#include "exec/message.h"

#include "base/log.h"

#include <limits.h>
#include <nbrcoll.h>

/* Large messages are counted in blocks of this many bytes. */
#define NBR_MESSAGE_BLOCK ((size_t)1 << 30)

/* How MPI sees `bytes` bytes: *count elements of *type. A derived type is
 * committed and must be freed by the caller (free_type). */
static int message_type(size_t bytes, MPI_Datatype *type, int *count)
{
    int rc = NBR_SUCCESS;
    MPI_Datatype block = MPI_DATATYPE_NULL;
    *type = MPI_BYTE;
    if (bytes <= INT_MAX) {
        *count = (int)bytes;
        return NBR_SUCCESS;
    }
    size_t blocks = bytes / NBR_MESSAGE_BLOCK, tail = bytes % NBR_MESSAGE_BLOCK;
    if (blocks > INT_MAX) {
        NBR_ERROR("message of %zu bytes: too large for MPI", bytes);
        return NBR_ERR_UNSUPPORTED;
    }
    NBR_MPI_CHECK(MPI_Type_contiguous((int)NBR_MESSAGE_BLOCK, MPI_BYTE, &block));
    int lengths[2] = {(int)blocks, (int)tail};
    MPI_Aint displacements[2] = {0, (MPI_Aint)(blocks * NBR_MESSAGE_BLOCK)};
    MPI_Datatype types[2] = {block, MPI_BYTE};
    NBR_MPI_CHECK(MPI_Type_create_struct(tail ? 2 : 1, lengths, displacements, types, type));
    NBR_MPI_CHECK(MPI_Type_commit(type));
    *count = 1;
out:
    if (block != MPI_DATATYPE_NULL)
        MPI_Type_free(&block);
    if (rc != NBR_SUCCESS && *type != MPI_BYTE && *type != MPI_DATATYPE_NULL)
        MPI_Type_free(type);
    return rc;
}

/* MPI keeps a freed type alive for the nonblocking operations using it. */
static void free_type(MPI_Datatype *type)
{
    if (*type != MPI_BYTE)
        MPI_Type_free(type);
}

int nbr_message_post(nbr_message_call_t call, void *buf, size_t bytes, int peer, int tag,
                     MPI_Comm comm, MPI_Request *request, MPI_Datatype *held)
{
    MPI_Datatype type;
    int count;
    int rc = message_type(bytes, &type, &count);
    if (rc != NBR_SUCCESS)
        return rc;
    int mrc = MPI_SUCCESS;
    const char *name = "MPI_Isend";
    switch (call) {
    case NBR_MSG_ISEND:
        mrc = MPI_Isend(buf, count, type, peer, tag, comm, request);
        break;
    case NBR_MSG_IRECV:
        name = "MPI_Irecv";
        mrc = MPI_Irecv(buf, count, type, peer, tag, comm, request);
        break;
    case NBR_MSG_SEND_INIT:
        name = "MPI_Send_init";
        mrc = MPI_Send_init(buf, count, type, peer, tag, comm, request);
        break;
    case NBR_MSG_RECV_INIT:
        name = "MPI_Recv_init";
        mrc = MPI_Recv_init(buf, count, type, peer, tag, comm, request);
        break;
    }
    if (held && mrc == MPI_SUCCESS)
        *held = type == MPI_BYTE ? MPI_DATATYPE_NULL : type;
    else
        free_type(&type);
    return mrc == MPI_SUCCESS ? NBR_SUCCESS : nbr_mpi_failed(name, mrc);
}

int nbr_message_imrecv(void *buf, size_t bytes, MPI_Message *message, MPI_Request *request)
{
    MPI_Datatype type;
    int count;
    int rc = message_type(bytes, &type, &count);
    if (rc != NBR_SUCCESS)
        return rc;
    int mrc = MPI_Imrecv(buf, count, type, message, request);
    free_type(&type);
    return mrc == MPI_SUCCESS ? NBR_SUCCESS : nbr_mpi_failed("MPI_Imrecv", mrc);
}

int nbr_message_probed(const MPI_Status *status, size_t *bytes)
{
    MPI_Count elements = 0;
    int mrc = MPI_Get_elements_x(status, MPI_BYTE, &elements);
    if (mrc != MPI_SUCCESS)
        return nbr_mpi_failed("MPI_Get_elements_x", mrc);
    *bytes = elements < 0 ? 0 : (size_t)elements;
    return NBR_SUCCESS;
}

/* bytes bytes, every one read from the same byte: a vector of stride 0
 * (a send may read a byte twice), in 1 GiB blocks past INT_MAX. */
static int repeated_byte(size_t bytes, MPI_Datatype *type)
{
    int rc = NBR_SUCCESS;
    MPI_Datatype block = MPI_DATATYPE_NULL, blocks = MPI_DATATYPE_NULL, tail = MPI_DATATYPE_NULL;
    *type = MPI_DATATYPE_NULL;
    if (bytes <= INT_MAX) {
        NBR_MPI_CHECK(MPI_Type_vector((int)bytes, 1, 0, MPI_BYTE, type));
    } else {
        size_t count = bytes / NBR_MESSAGE_BLOCK, rest = bytes % NBR_MESSAGE_BLOCK;
        if (count > INT_MAX) /* over 2^61 bytes: no message of a real job */
            return NBR_ERR_UNSUPPORTED;
        NBR_MPI_CHECK(MPI_Type_vector((int)NBR_MESSAGE_BLOCK, 1, 0, MPI_BYTE, &block));
        NBR_MPI_CHECK(MPI_Type_create_hvector((int)count, 1, 0, block, &blocks));
        NBR_MPI_CHECK(MPI_Type_vector((int)rest, 1, 0, MPI_BYTE, &tail));
        int lengths[2] = {1, 1};
        MPI_Aint at[2] = {0, 0};
        MPI_Datatype parts[2] = {blocks, tail};
        NBR_MPI_CHECK(MPI_Type_create_struct(2, lengths, at, parts, type));
    }
    NBR_MPI_CHECK(MPI_Type_commit(type));
out:
    if (block != MPI_DATATYPE_NULL)
        MPI_Type_free(&block);
    if (blocks != MPI_DATATYPE_NULL)
        MPI_Type_free(&blocks);
    if (tail != MPI_DATATYPE_NULL)
        MPI_Type_free(&tail);
    if (rc != NBR_SUCCESS && *type != MPI_DATATYPE_NULL)
        MPI_Type_free(type);
    return rc;
}

int nbr_message_poison(size_t bytes, int peer, int tag, MPI_Comm comm, MPI_Request *request)
{
    static const char byte = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    int rc = repeated_byte(bytes + 1, &type), mrc = MPI_SUCCESS;
    for (int attempt = 0; rc == NBR_SUCCESS && attempt < 2; attempt++) /* the peer waits: once more */
        if ((mrc = MPI_Isend(&byte, 1, type, peer, tag, comm, request)) == MPI_SUCCESS)
            break;
    if (type != MPI_DATATYPE_NULL)
        MPI_Type_free(&type); /* MPI keeps it for the send */
    if (rc == NBR_SUCCESS && mrc != MPI_SUCCESS)
        rc = nbr_mpi_failed("MPI_Isend (poison)", mrc);
    return rc;
}

int nbr_message_poisoned(int peer, size_t expected)
{
    NBR_ERROR("rank %d sent poison in place of the %zu bytes expected: it failed earlier in "
              "this call (its log says why), or the two ranks' type signatures differ", peer,
              expected);
    return NBR_ERR_PEER;
}

int nbr_message_mismatch(int peer, size_t got, size_t expected)
{
    if (got == expected + 1)
        return nbr_message_poisoned(peer, expected);
    if (got <= expected)
        return NBR_SUCCESS; /* a short block fills the slot's front, as MPI does */
    NBR_ERROR("message from rank %d has %zu bytes, %zu expected: send and receive "
              "signatures differ", peer, got, expected);
    return NBR_ERR_TYPE_MISMATCH;
}

int nbr_message_check(int is_receive, const MPI_Status *status, int err, int peer,
                      size_t expected, const char *what)
{
    int cls = MPI_SUCCESS;
    if (err != MPI_SUCCESS) {
        MPI_Error_class(err, &cls);
        if (cls != MPI_ERR_TRUNCATE)
            return nbr_mpi_failed(what, err);
    } else if (is_receive) {
        /* fewer bytes: a short block, as in MPI. More: Open MPI 4.1 has
         * been seen to complete a restarted persistent receive that way
         * with success, its status saying the sender's longer count */
        size_t got = 0;
        int rc = nbr_message_received(status, expected, &got);
        if (rc != NBR_SUCCESS || got <= expected)
            return rc;
    } else {
        return NBR_SUCCESS;
    }
    /* longer than its receive: the sender's block, or its poison */
    NBR_ERROR("message from rank %d longer than the %zu bytes expected: send and receive "
              "signatures differ, or it failed earlier in this call (its log says why)",
              peer, expected);
    return NBR_ERR_TYPE_MISMATCH;
}

int nbr_message_received(const MPI_Status *status, size_t expected, size_t *got)
{
    MPI_Datatype type;
    int count;
    int rc = message_type(expected, &type, &count);
    if (rc != NBR_SUCCESS)
        return rc;
    MPI_Count elements = 0;
    int mrc = MPI_Get_elements_x(status, type, &elements);
    free_type(&type);
    if (mrc != MPI_SUCCESS)
        return nbr_mpi_failed("MPI_Get_elements_x", mrc);
    *got = elements < 0 ? 0 : (size_t)elements;
    return NBR_SUCCESS;
}
