#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* phases BLOCK REPS [SEP]: halving's steps on Moore d2 r1, 4 nodes x 4 ranks,
 * with plain MPI: phase 1 exchanges 1 block with r^8, phase 2 2 blocks with
 * r^4, phase 3 3 blocks with the two ring neighbours in the node (barriers
 * between phases unless SEP is 0); prints each phase's slowest rank.
 * Build: mpicc -O2 -o phases phases.c */
static double xchg(int np, const int *peer, const long *bytes, char *sb, char *rb) {
  MPI_Request rq[8]; long off = 0;
  double t0 = MPI_Wtime();
  for (int i = 0; i < np; i++) { MPI_Irecv(rb + off, bytes[i], MPI_BYTE, peer[i], 0, MPI_COMM_WORLD, &rq[i]); off += bytes[i]; }
  for (int i = 0; i < np; i++) MPI_Isend(sb, bytes[i], MPI_BYTE, peer[i], 0, MPI_COMM_WORLD, &rq[np + i]);
  MPI_Waitall(2 * np, rq, MPI_STATUSES_IGNORE);
  return MPI_Wtime() - t0;
}
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
  long b = atol(argv[1]); int reps = atoi(argv[2]); int sep = argc > 3 ? atoi(argv[3]) : 1;
  char *sb = malloc(6 * b), *rb = malloc(6 * b);
  memset(sb, r, 6 * b); memset(rb, 0, 6 * b);
  int base = r & ~3, lo = base + ((r - base + 3) & 3), hi = base + ((r - base + 1) & 3);
  int p1 = r ^ 8, p2 = r ^ 4; int p3[2] = {lo, hi};
  long b1 = b, b2 = 2 * b, b3[2] = {3 * b, 3 * b};
  for (int it = 0; it <= reps; it++) {
    double t[4], tm[4];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    t[0] = xchg(1, &p1, &b1, sb, rb); if (sep) MPI_Barrier(MPI_COMM_WORLD);
    t[1] = xchg(1, &p2, &b2, sb, rb); if (sep) MPI_Barrier(MPI_COMM_WORLD);
    t[2] = xchg(2, p3, b3, sb, rb);
    t[3] = MPI_Wtime() - t0;
    MPI_Allreduce(t, tm, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (r == 0 && it > 0) printf("block %ld: phase1 %.0f ms (%.0f MB/s) phase2 %.0f ms (%.0f MB/s) phase3 %.0f ms (%.0f MB/s) total %.0f ms\n", b,
      tm[0]*1e3, 16.0*b/tm[0]/1e6, tm[1]*1e3, 32.0*b/tm[1]/1e6, tm[2]*1e3, 96.0*b/tm[2]/1e6, tm[3]*1e3);
  }
  MPI_Finalize(); return 0;
}
