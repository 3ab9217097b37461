/* MPI_Neighbor_allgather on the user's comm vs nbrcoll (forced mpi, auto) on theirs, interleaved shuffled. */
#include <mpi.h>
#include <nbrcoll.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void *a, const void *b){double x=*(const double*)a,y=*(const double*)b;return (x>y)-(x<y);}
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int me, n; MPI_Comm_rank(MPI_COMM_WORLD, &me); MPI_Comm_size(MPI_COMM_WORLD, &n);
  double density = argc > 1 ? atof(argv[1]) : 0.4; int iters = argc > 2 ? atoi(argv[2]) : 2000;
  srand(7); int *adj = calloc(n*n, sizeof(int));
  for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) if (i != j && rand() < density * RAND_MAX) adj[i*n+j] = 1;
  int src[64], dst[64], ni = 0, no = 0;
  for (int j = 0; j < n; j++) { if (adj[j*n+me]) src[ni++] = j; if (adj[me*n+j]) dst[no++] = j; }
  #ifndef KK
#define KK 4 /* rows: mpi, nbr:mpi, nbr:auto, mpi on the nbrcoll communicator */
#endif
  enum { K = KK };
  MPI_Comm comms[4]; const char *names[4] = {"mpi", "nbr:mpi", "nbr:auto", "mpi-on-nbr"};
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, ni, src, MPI_UNWEIGHTED, no, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &comms[0]);
  MPI_Info info; MPI_Info_create(&info); MPI_Info_set(info, "nbr_algorithm", "mpi");
  nbr_dist_graph_create_adjacent(MPI_COMM_WORLD, ni, src, MPI_UNWEIGHTED, no, dst, MPI_UNWEIGHTED, info, 0, &comms[1]);
  MPI_Info_set(info, "nbr_algorithm", "auto");
  nbr_dist_graph_create_adjacent(MPI_COMM_WORLD, ni, src, MPI_UNWEIGHTED, no, dst, MPI_UNWEIGHTED, info, 0, &comms[2]);
  if (K > 3) comms[3] = comms[2]; /* plain MPI on the nbrcoll auto comm */
  char sb[64] = {0}, rb[64*64];
  double *t[K]; for (int k = 0; k < K; k++) t[k] = malloc(iters * sizeof(double));
  unsigned s = 12345;
  for (int w = 0; w < 200; w++) for (int k = 0; k < K; k++) { if (k == 0 || k == 3) MPI_Neighbor_allgather(sb, 64, MPI_BYTE, rb, 64, MPI_BYTE, comms[k]); else nbr_neighbor_allgather(sb, 64, MPI_BYTE, rb, 64, MPI_BYTE, comms[k]); }
  for (int it = 0; it < iters; it++) {
    int order[K]; for (int k = 0; k < K; k++) order[k] = k;
    for (int k = K-1; k > 0; k--) { s = s * 1103515245u + 12345u; int j = (s >> 16) % (k + 1); int x = order[k]; order[k] = order[j]; order[j] = x; }
    for (int q = 0; q < K; q++) { int k = order[q];
      MPI_Barrier(MPI_COMM_WORLD); double t0 = MPI_Wtime();
      if (k == 0 || k == 3) MPI_Neighbor_allgather(sb, 64, MPI_BYTE, rb, 64, MPI_BYTE, comms[k]); else nbr_neighbor_allgather(sb, 64, MPI_BYTE, rb, 64, MPI_BYTE, comms[k]);
      double dt = MPI_Wtime() - t0, mx; MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); t[k][it] = mx; }
  }
  const char *alg = "?"; nbr_comm_algorithm(comms[K > 2 ? 2 : 1], &alg);
  if (me == 0) { printf("auto runs %s | ", alg); for (int k = 0; k < K; k++) { qsort(t[k], iters, sizeof(double), cmp); printf("%s %.2f (p10 %.2f)  ", names[k], t[k][iters/2]*1e6, t[k][iters/10]*1e6); } printf("\n"); }
  MPI_Finalize(); return 0;
}
