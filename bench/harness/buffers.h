/* Buffers of one message size and the calls that use them: per-edge sizes
 * and displacements for each collective, host and device buffers
 * (nbr_mem_alloc), the send pattern, one call of an algorithm as it is
 * timed, and the bit-exact check against the MPI library's result. */
#ifndef NBR_BENCH_HARNESS_BUFFERS_H
#define NBR_BENCH_HARNESS_BUFFERS_H

#include <stdint.h>

#include "harness/common.h"
#include "harness/graphs.h"

/* Which buffers a run needs besides host send and receive. */
typedef struct bh_buffer_set {
    int ref;    /* reference result: something is verified */
    int device; /* --memory device: device send and receive */
    int copy;   /* the `copy` row: a second device receive buffer */
} bh_buffer_set_t;

/* Counts, displacements and buffers of one message size on one rank. */
typedef struct bh_layout {
    bh_coll_t coll;
    uint64_t bytes;
    int sendcount, recvcount;   /* allgather(v) */
    int *sendcounts, *sdispls;  /* alltoallv, outdeg entries */
    int *recvcounts, *rdispls;  /* v-variants, indeg entries */
    uint64_t send_total, recv_total;
    int too_big_for_int;        /* a displacement would overflow int */
    bh_buffer_set_t has;        /* set before the memory and alloc calls */
    unsigned char *send, *recv, *ref;
    /* --memory device, from nbr_mem_alloc: what nbrcoll algorithms get;
     * the host buffers above fill them, check them and stage mpi. */
    void *dsend, *drecv, *dcopy;
} bh_layout_t;

/* Plans counts only (no data buffers) for `bytes` per neighbor: cheap, so
 * the memory guard can run before anything large is allocated. allgather
 * sends exactly `bytes`; allgatherv blocks and alltoallv edges vary by up
 * to +-25 %, the same on both ends. 0, or -1 when out of memory. */
int bh_layout_plan(bh_layout_t *L, const bh_topo_t *t, bh_coll_t coll,
                   uint64_t bytes);

/* Buffer memory this rank needs, host and device together: send + recv,
 * a reference copy of the MPI result when something is checked, and the
 * device buffers of --memory device. */
uint64_t bh_layout_memory(const bh_layout_t *L);

/* Collective: 1 if the size fits on every rank (no int overflow, at most
 * max_mem bytes of buffers), else rank 0 prints why it is skipped. */
int bh_layout_fits(const bh_layout_t *L, uint64_t max_mem, int rank);

/* Allocates L's buffers; 0, or -1 if one failed (bh_layout_free still
 * frees the others). */
int bh_layout_alloc(bh_layout_t *L);

/* Collective: allocates on every rank, or rank 0 says the size is skipped
 * and every rank returns 0. */
int bh_layout_alloc_everywhere(bh_layout_t *L, int rank);

void bh_layout_free(bh_layout_t *L);

/* Bytes this rank sends on out-slot j in one call. */
uint64_t bh_send_bytes_on(const bh_layout_t *L, int j);

/* Deterministic send data, different for every (rank, slot, byte), copied
 * into the device send buffer too when there is one. */
void bh_fill_send(bh_layout_t *L, const bh_topo_t *t);

/* One collective call from send into recv; returns the MPI or nbrcoll
 * status. */
int bh_run_collective(const bh_alg_t *a, const bh_layout_t *L,
                      const void *send, void *recv);

/* One call of algorithm a as it is timed; the result ends up in L->recv,
 * or in L->drecv with device buffers. Aborts on failure. */
void bh_run_call(const bh_alg_t *a, bh_layout_t *L);

/* nbr_mem_copy, aborting on failure. */
void bh_copy_or_die(void *dst, const void *src, uint64_t bytes,
                    const char *what);

/* The MPI library's result on the same input into L->ref: the reference.
 * mpi is an 'mpi' algorithm, whether or not it is timed. */
void bh_compute_reference(const bh_alg_t *mpi, bh_layout_t *L);

/* Checks one algorithm bit-exact against the reference; collective,
 * returns 1 on every rank when every rank matched. A rank that differs
 * prints where (slot, source rank, offset, bytes) on stderr. With device
 * buffers the poison goes into the device receive buffer and the result
 * comes back. */
int bh_verify(const bh_alg_t *a, bh_layout_t *L, const bh_topo_t *t);

/* Collective: 1 if every rank can allocate device memory. Without a device
 * every size would fail; rank 0 says why once, so every rank can exit
 * cleanly. */
int bh_device_usable(void);

#endif
