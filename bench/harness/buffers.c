#include "harness/buffers.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "nbrcoll.h"

#define POISON_BYTE 0xA5

/* ====================================================== message sizes */

/* The sizes nbr_sim predicts for (base/graph_gen.h); ints for MPI. */
static int block_size(uint64_t bytes, int rank)
{
    return (int)nbr_block_bytes(bytes, rank);
}

static int edge_size(uint64_t bytes, int src, int dst, int occ)
{
    return (int)nbr_edge_bytes(bytes, src, dst, occ);
}

/* Fills counts[i] = size_of(i) and prefix-sum displacements; the total is
 * 64-bit so an int overflow is detected instead of wrapping. */
static uint64_t prefix_layout(int n, int *counts, int *displs,
                              int *too_big)
{
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (total > INT_MAX)
            *too_big = 1;
        displs[i] = total > INT_MAX ? 0 : (int)total;
        total += (uint64_t)counts[i];
    }
    return total;
}

/* ============================================================ layouts */

int bh_layout_plan(bh_layout_t *L, const bh_topo_t *t, bh_coll_t coll,
                   uint64_t bytes)
{
    memset(L, 0, sizeof *L);
    L->coll = coll;
    L->bytes = bytes;
    size_t in_n = (size_t)t->indeg + 1, out_n = (size_t)t->outdeg + 1;
    L->recvcounts = malloc(in_n * sizeof(int));
    L->rdispls = malloc(in_n * sizeof(int));
    L->sendcounts = malloc(out_n * sizeof(int));
    L->sdispls = malloc(out_n * sizeof(int));
    if (!L->recvcounts || !L->rdispls || !L->sendcounts || !L->sdispls)
        return -1;
    switch (coll) {
    case BH_COLL_ALLGATHER:
        L->sendcount = L->recvcount = (int)bytes;
        L->send_total = bytes;
        L->recv_total = bytes * (uint64_t)t->indeg;
        break;
    case BH_COLL_ALLGATHERV:
        L->sendcount = block_size(bytes, t->rank);
        L->send_total = (uint64_t)L->sendcount;
        for (int i = 0; i < t->indeg; i++)
            L->recvcounts[i] = block_size(bytes, t->in[i]);
        L->recv_total = prefix_layout(t->indeg, L->recvcounts, L->rdispls,
                                      &L->too_big_for_int);
        break;
    case BH_COLL_ALLTOALLV:
        for (int j = 0; j < t->outdeg; j++)
            L->sendcounts[j] = edge_size(bytes, t->rank, t->out[j],
                                         t->out_occ[j]);
        for (int i = 0; i < t->indeg; i++)
            L->recvcounts[i] = edge_size(bytes, t->in[i], t->rank,
                                         t->in_occ[i]);
        L->send_total = prefix_layout(t->outdeg, L->sendcounts, L->sdispls,
                                      &L->too_big_for_int);
        L->recv_total = prefix_layout(t->indeg, L->recvcounts, L->rdispls,
                                      &L->too_big_for_int);
        break;
    }
    return 0;
}

uint64_t bh_layout_memory(const bh_layout_t *L)
{
    uint64_t host = L->send_total + L->recv_total * (L->has.ref ? 2u : 1u);
    uint64_t dev = L->has.device ? L->send_total + L->recv_total : 0;
    return host + dev + (L->has.copy ? L->recv_total : 0);
}

int bh_layout_fits(const bh_layout_t *L, uint64_t max_mem, int rank)
{
    uint64_t need = bh_layout_memory(L);
    int too_big = L->too_big_for_int;
    MPI_Allreduce(MPI_IN_PLACE, &need, 1, MPI_UINT64_T, MPI_MAX,
                  MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &too_big, 1, MPI_INT, MPI_MAX,
                  MPI_COMM_WORLD);
    char sz[32];
    bh_size_label(L->bytes, sz, sizeof sz);
    if (too_big) {
        if (rank == 0)
            printf("# skipping %s: a displacement would overflow int\n", sz);
        return 0;
    }
    if (need > max_mem) {
        if (rank == 0)
            printf("# skipping %s: needs %.1f MiB of buffers on some rank, "
                   "--max-mem is %.1f MiB\n",
                   sz, (double)need / BH_MIB, (double)max_mem / BH_MIB);
        return 0;
    }
    return 1;
}

static void *device_alloc(uint64_t bytes)
{
    void *p = NULL;
    return nbr_mem_alloc(&p, (size_t)bytes) == NBR_SUCCESS ? p : NULL;
}

/* At least one byte each: a rank without neighbors still passes valid
 * pointers, as a real application would. */
int bh_layout_alloc(bh_layout_t *L)
{
    L->send = malloc((size_t)L->send_total + 1);
    L->recv = malloc((size_t)L->recv_total + 1);
    L->ref = L->has.ref ? malloc((size_t)L->recv_total + 1) : NULL;
    if (L->has.device) {
        L->dsend = device_alloc(L->send_total + 1);
        L->drecv = device_alloc(L->recv_total + 1);
    }
    if (L->has.copy)
        L->dcopy = device_alloc(L->recv_total + 1);
    if (!L->send || !L->recv || (L->has.ref && !L->ref))
        return -1;
    if (L->has.device && (!L->dsend || !L->drecv))
        return -1;
    return L->has.copy && !L->dcopy ? -1 : 0;
}

int bh_layout_alloc_everywhere(bh_layout_t *L, int rank)
{
    int ok = bh_layout_alloc(L) == 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok && rank == 0) {
        char sz[32];
        bh_size_label(L->bytes, sz, sizeof sz);
        printf("# skipping %s: buffer allocation failed on some rank\n", sz);
    }
    return ok;
}

void bh_layout_free(bh_layout_t *L)
{
    free(L->sendcounts);
    free(L->sdispls);
    free(L->recvcounts);
    free(L->rdispls);
    free(L->send);
    free(L->recv);
    free(L->ref);
    /* Only an nbrcoll bug makes these fail; leaking one size's buffers is
     * no reason to stop the sweep. */
    (void)nbr_mem_free(L->dsend);
    (void)nbr_mem_free(L->drecv);
    (void)nbr_mem_free(L->dcopy);
    memset(L, 0, sizeof *L);
}

uint64_t bh_send_bytes_on(const bh_layout_t *L, int j)
{
    return L->coll == BH_COLL_ALLTOALLV ? (uint64_t)L->sendcounts[j]
                                        : (uint64_t)L->sendcount;
}

/* ========================================================= send data */

/* Different for every (rank, slot, byte), so a block landing in the wrong
 * slot or at a shifted offset is detected. */
static unsigned char pattern_byte(int rank, int slot, uint64_t i)
{
    uint32_t x = (uint32_t)i * 0x9E3779B1u ^ (uint32_t)(i >> 32) ^
                 (uint32_t)rank * 0x85EBCA77u ^ (uint32_t)slot * 0xC2B2AE3Du;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    return (unsigned char)(x ^ (x >> 13));
}

void bh_fill_send(bh_layout_t *L, const bh_topo_t *t)
{
    if (L->coll != BH_COLL_ALLTOALLV) {
        for (uint64_t i = 0; i < L->send_total; i++)
            L->send[i] = pattern_byte(t->rank, 0, i);
    } else {
        for (int j = 0; j < t->outdeg; j++) {
            unsigned char *p = L->send + L->sdispls[j];
            for (int i = 0; i < L->sendcounts[j]; i++)
                p[i] = pattern_byte(t->rank, j, (uint64_t)i);
        }
    }
    if (L->has.device)
        bh_copy_or_die(L->dsend, L->send, L->send_total, "send nbr_mem_copy");
}

/* ====================================================== running calls */

int bh_run_collective(const bh_alg_t *a, const bh_layout_t *L,
                      const void *send, void *recv)
{
    switch (L->coll) {
    case BH_COLL_ALLGATHER:
        if (a->is_mpi)
            return MPI_Neighbor_allgather(send, L->sendcount, MPI_BYTE,
                                          recv, L->recvcount, MPI_BYTE,
                                          a->comm);
        return nbr_neighbor_allgather(send, L->sendcount, MPI_BYTE, recv,
                                      L->recvcount, MPI_BYTE, a->comm);
    case BH_COLL_ALLGATHERV:
        if (a->is_mpi)
            return MPI_Neighbor_allgatherv(send, L->sendcount, MPI_BYTE,
                                           recv, L->recvcounts, L->rdispls,
                                           MPI_BYTE, a->comm);
        return nbr_neighbor_allgatherv(send, L->sendcount, MPI_BYTE, recv,
                                       L->recvcounts, L->rdispls, MPI_BYTE,
                                       a->comm);
    case BH_COLL_ALLTOALLV:
        if (a->is_mpi)
            return MPI_Neighbor_alltoallv(send, L->sendcounts, L->sdispls,
                                          MPI_BYTE, recv, L->recvcounts,
                                          L->rdispls, MPI_BYTE, a->comm);
        return nbr_neighbor_alltoallv(send, L->sendcounts, L->sdispls,
                                      MPI_BYTE, recv, L->recvcounts,
                                      L->rdispls, MPI_BYTE, a->comm);
    }
    return NBR_ERR_INTERNAL;
}

static void run_or_die(const bh_alg_t *a, const bh_layout_t *L,
                       const void *send, void *recv)
{
    int rc = bh_run_collective(a, L, send, recv);
    if (rc == 0)
        return;
    char what[128];
    snprintf(what, sizeof what, "%s neighbor_%s", a->name,
             bh_coll_name(L->coll));
    if (a->is_mpi)
        bh_die_mpi(rc, what);
    bh_die_nbr(rc, what);
}

void bh_copy_or_die(void *dst, const void *src, uint64_t bytes,
                    const char *what)
{
    int rc = nbr_mem_copy(dst, src, (size_t)bytes);
    if (rc != NBR_SUCCESS)
        bh_die_nbr(rc, what);
}

void bh_run_call(const bh_alg_t *a, bh_layout_t *L)
{
    if (a->is_copy) {
        /* What one rank's receive volume costs to move inside the device:
         * the floor under any algorithm that must land it there. */
        bh_copy_or_die(L->dcopy, L->drecv, L->recv_total,
                       "copy nbr_mem_copy");
    } else if (!L->has.device) {
        run_or_die(a, L, L->send, L->recv);
    } else if (!a->is_mpi) {
        run_or_die(a, L, L->dsend, L->drecv);
    } else {
        /* An MPI that is not GPU-aware (Debian's Open MPI) cannot take the
         * device buffers: stage through host memory as an application
         * would, both copies inside the timed call. */
        bh_copy_or_die(L->send, L->dsend, L->send_total, "mpi staging D2H");
        run_or_die(a, L, L->send, L->recv);
        bh_copy_or_die(L->drecv, L->recv, L->recv_total, "mpi staging H2D");
    }
}

/* ========================================================= verification */

/* Receive slot holding byte offset off of recv. */
static int slot_of(const bh_layout_t *L, const bh_topo_t *t, uint64_t off)
{
    if (L->coll == BH_COLL_ALLGATHER)
        return (int)(off / (uint64_t)L->recvcount);
    int slot = 0;
    for (int i = 0; i < t->indeg; i++)
        if ((uint64_t)L->rdispls[i] <= off && L->recvcounts[i] > 0)
            slot = i;
    return slot;
}

static void report_mismatch(const bh_alg_t *a, const bh_layout_t *L,
                            const bh_topo_t *t, uint64_t off)
{
    uint64_t ndiff = 0;
    for (uint64_t i = off; i < L->recv_total; i++)
        ndiff += L->recv[i] != L->ref[i];
    int slot = slot_of(L, t, off);
    uint64_t start = L->coll == BH_COLL_ALLGATHER
                         ? (uint64_t)slot * (uint64_t)L->recvcount
                         : (uint64_t)L->rdispls[slot];
    fprintf(stderr,
            "%s: MISMATCH rank %d, algorithm %s, %s, bytes %llu: "
            "recv slot %d (from rank %d) offset %llu: got 0x%02x, MPI gave "
            "0x%02x%s; %llu of %llu bytes differ\n",
            bh_progname(), t->rank, a->name, bh_coll_name(L->coll),
            (unsigned long long)L->bytes, slot, t->in[slot],
            (unsigned long long)(off - start), L->recv[off], L->ref[off],
            L->recv[off] == POISON_BYTE ? " (poison: never written)" : "",
            (unsigned long long)ndiff, (unsigned long long)L->recv_total);
}

void bh_compute_reference(const bh_alg_t *mpi, bh_layout_t *L)
{
    memset(L->ref, POISON_BYTE, (size_t)L->recv_total);
    run_or_die(mpi, L, L->send, L->ref);
}

int bh_verify(const bh_alg_t *a, bh_layout_t *L, const bh_topo_t *t)
{
    memset(L->recv, POISON_BYTE, (size_t)L->recv_total);
    if (L->has.device)
        bh_copy_or_die(L->drecv, L->recv, L->recv_total,
                       "poison nbr_mem_copy");
    bh_run_call(a, L);
    if (L->has.device)
        bh_copy_or_die(L->recv, L->drecv, L->recv_total,
                       "result nbr_mem_copy");
    int ok = 1;
    if (memcmp(L->recv, L->ref, (size_t)L->recv_total) != 0) {
        uint64_t off = 0;
        while (L->recv[off] == L->ref[off])
            off++;
        report_mismatch(a, L, t, off);
        ok = 0;
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return ok;
}

int bh_device_usable(void)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    void *p = NULL;
    int rc = nbr_mem_alloc(&p, 1);
    if (rc == NBR_SUCCESS)
        rc = nbr_mem_free(p);
    int worst = rc; /* statuses are negative: MIN finds a failure */
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (worst != NBR_SUCCESS && rank == 0)
        fprintf(stderr,
                "%s: --memory device: nbr_mem_alloc failed on some "
                "rank: %s (%d); it needs a GPU nbrcoll can use, or "
                "NBR_DEVICE=emulate\n",
                bh_progname(), nbr_error_string(worst), worst);
    return worst == NBR_SUCCESS;
}
