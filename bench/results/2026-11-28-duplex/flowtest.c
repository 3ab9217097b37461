#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* flowtest TOTAL_BYTES K REPS [XOR]: each rank sends TOTAL_BYTES split evenly
 * to K ranks of other nodes (4 ranks a node; K = 1: r + 4, a ring) and takes
 * as much from the ranks that send to it; with K = 1 and XOR, to and from
 * r^XOR (one connection both ways). Prints each round and the job's MB/s.
 * Build: mpicc -O2 -o flowtest flowtest.c */
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, n; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
  long total = atol(argv[1]); int k = atoi(argv[2]), reps = atoi(argv[3]);
  int rpn = 4, node = r / rpn, nodes = n / rpn;
  int offn = n - rpn; if (k > offn) k = offn;
  long each = total / k;
  char *sb = malloc(total), *rb = malloc(total);
  memset(sb, r, total); memset(rb, 0, total);
  int *to = malloc(k * sizeof(int)), *from = malloc(k * sizeof(int));
  for (int i = 0; i < k; i++) { /* partner i: shift by (i+1) off-node ranks */
    int s = rpn + (i * (nodes > 1 ? 1 : 0)) ; (void)s;
    int off = rpn * (1 + i % (nodes - 1)) + (i / (nodes - 1)) % rpn;
    to[i] = (r + off) % n; from[i] = (r - off + n) % n;
  }
  if (argc > 4 && k == 1) { int x = atoi(argv[4]); to[0] = from[0] = r ^ x; }
  MPI_Request *rq = malloc(2 * k * sizeof(MPI_Request));
  double best = 1e9, sum = 0, ts[64];
  for (int it = 0; it < reps + 1; it++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < k; i++) MPI_Irecv(rb + i * each, each, MPI_BYTE, from[i], 0, MPI_COMM_WORLD, &rq[i]);
    for (int i = 0; i < k; i++) MPI_Isend(sb + i * each, each, MPI_BYTE, to[i], 0, MPI_COMM_WORLD, &rq[k + i]);
    MPI_Waitall(2 * k, rq, MPI_STATUSES_IGNORE);
    double t = MPI_Wtime() - t0, tm;
    MPI_Allreduce(&t, &tm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (it > 0) { ts[it - 1] = tm; if (tm < best) best = tm; sum += tm; }
  }
  if (r == 0) {
    printf("total %ld k %d: ms", total, k);
    for (int i = 0; i < reps; i++) printf(" %.1f", ts[i] * 1e3);
    printf("  aggregate MB/s best %.1f mean %.1f\n", (double)total * n / best / 1e6, (double)total * n / (sum / reps) / 1e6);
  }
  MPI_Finalize();
  return 0;
}
