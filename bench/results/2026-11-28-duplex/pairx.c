#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* pairx BYTES REPS ACTIVE MASK[,MASK..] [oneway]: ranks with r % 4 < ACTIVE
 * exchange BYTES with each partner r^MASK, both ways on one connection (or
 * with oneway only the lower rank sends). MASK >= 100 (4 ranks a node): the
 * same node pair as r^(MASK-100), but each connection one way: send to the
 * next local rank there, take from the previous one. MASK < 0: a ring, send
 * to r-MASK, take from r+MASK. Prints the mean of REPS timed rounds (after
 * one untimed) and what all flows carried a second, whole and per flow.
 * Up to 8 masks. Build: mpicc -O2 -o pairx pairx.c */
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, n; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
  long b = atol(argv[1]); int reps = atoi(argv[2]), active = atoi(argv[3]);
  int masks[8], k = 0; char *s = strdup(argv[4]);
  for (char *t = strtok(s, ","); t; t = strtok(NULL, ",")) masks[k++] = atoi(t);
  int oneway = argc > 5;
  int me_on = (r % 4) < active;
  char *sb = malloc(b), *rb = malloc(b * k); memset(sb, 1, b); memset(rb, 0, b * k);
  MPI_Request rq[16]; int flows = 0;
  for (int q = 0; q < n; q++) for (int i = 0; i < k; i++) if ((q % 4) < active && (!oneway || q < (q ^ masks[i]))) flows++;
  double ts[32];
  for (int it = 0; it <= reps; it++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime(); int m = 0;
    if (me_on) for (int i = 0; i < k; i++) {
      int p = r ^ masks[i], src = p, dst = p;
      if (masks[i] >= 100) { int x = masks[i] - 100; dst = ((r ^ x) & ~3) | ((r + 1) & 3); src = ((r ^ x) & ~3) | ((r + 3) & 3); }
      if (masks[i] < 0) { dst = (r - masks[i]) % n; src = (r + masks[i] + n) % n; }
      if (!oneway || p < r) MPI_Irecv(rb + i * b, b, MPI_BYTE, src, 0, MPI_COMM_WORLD, &rq[m++]);
      if (!oneway || r < p) MPI_Isend(sb, b, MPI_BYTE, dst, 0, MPI_COMM_WORLD, &rq[m++]);
    }
    MPI_Waitall(m, rq, MPI_STATUSES_IGNORE);
    double t = MPI_Wtime() - t0, tm;
    MPI_Allreduce(&t, &tm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (it) ts[it - 1] = tm;
  }
  if (r == 0) {
    double sum = 0; for (int i = 0; i < reps; i++) sum += ts[i];
    double agg = (double)b * flows / (sum / reps) / 1e6;
    printf("active %d masks %s %s flows %d: mean %.0f ms aggregate %.0f MB/s, per flow %.1f\n", active, argv[4], oneway ? "oneway" : "both", flows, sum / reps * 1e3, agg, agg / flows);
  }
  MPI_Finalize(); return 0;
}
