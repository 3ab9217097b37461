/* Open MPI: MPI_Neighbor_allgather on a dist-graph comm vs on its dup, interleaved. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void *a, const void *b){double x=*(const double*)a,y=*(const double*)b;return (x>y)-(x<y);}
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int me, n; MPI_Comm_rank(MPI_COMM_WORLD, &me); MPI_Comm_size(MPI_COMM_WORLD, &n);
  double density = argc > 1 ? atof(argv[1]) : 0.4; int iters = argc > 2 ? atoi(argv[2]) : 2000;
  /* same random graph on every rank */
  srand(7); int *adj = calloc(n*n, sizeof(int));
  for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) if (i != j && rand() < density * RAND_MAX) adj[i*n+j] = 1;
  int src[64], dst[64], ni = 0, no = 0;
  for (int j = 0; j < n; j++) { if (adj[j*n+me]) src[ni++] = j; if (adj[me*n+j]) dst[no++] = j; }
  MPI_Comm a, b, c;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, ni, src, MPI_UNWEIGHTED, no, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &a);
  MPI_Comm_dup(a, &b);
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, ni, src, MPI_UNWEIGHTED, no, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c);
  MPI_Comm comms[3] = {a, b, c}; const char *names[3] = {"orig", "dup", "orig2"};
  char sb[64] = {0}, rb[64*64];
  double *t[3]; for (int k = 0; k < 3; k++) t[k] = malloc(iters * sizeof(double));
  unsigned s = 12345;
  for (int w = 0; w < 50; w++) for (int k = 0; k < 3; k++) MPI_Neighbor_allgather(sb, 64, MPI_BYTE, rb, 64, MPI_BYTE, comms[k]);
  for (int it = 0; it < iters; it++) {
    int order[3] = {0, 1, 2};
    for (int k = 2; k > 0; k--) { s = s * 1103515245u + 12345u; int j = (s >> 16) % (k + 1); int x = order[k]; order[k] = order[j]; order[j] = x; }
    for (int q = 0; q < 3; q++) { int k = order[q];
      MPI_Barrier(MPI_COMM_WORLD); double t0 = MPI_Wtime();
      MPI_Neighbor_allgather(sb, 64, MPI_BYTE, rb, 64, MPI_BYTE, comms[k]);
      double dt = MPI_Wtime() - t0, mx; MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); t[k][it] = mx; }
  }
  if (me == 0) for (int k = 0; k < 3; k++) { qsort(t[k], iters, sizeof(double), cmp); printf("%-6s median %.2f us  p10 %.2f\n", names[k], t[k][iters/2]*1e6, t[k][iters/10]*1e6); }
  MPI_Finalize(); return 0;
}
