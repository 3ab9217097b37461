/* Can a rank whose persistent neighborhood collective failed go on with
 * another form while its peers restart theirs? Open MPI 4.1, a ring of 4
 * ranks, a persistent alltoallv (MPIX_Neighbor_alltoallv_init) whose last
 * rank expects 2 ints fewer than it gets on the first run (MPI_ERR_TRUNCATE
 * there only). From the second run on it receives the right count and
 *   mode 0: posts MPI_Ineighbor_alltoallv instead of restarting, or
 *   mode 1: frees its request and makes a new persistent one,
 *   mode 2: restarts its request as it is,
 * while the other ranks restart theirs. Each rank prints per run whether it
 * saw an error and whether the received block is right.
 *   mpicc -O1 -Wno-stringop-overread restart_after_error.c -o restart_after_error
 *   timeout 20 mpirun --oversubscribe -np 4 ./restart_after_error MODE */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int me, P; MPI_Comm_rank(MPI_COMM_WORLD, &me); MPI_Comm_size(MPI_COMM_WORLD, &P);
  int mode = argc > 1 ? argv[1][0]-'0' : 0;
  int src = (me + P - 1) % P, dst = (me + 1) % P;
  int srcs[1] = {src}, dsts[1] = {dst};
  MPI_Comm g;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, srcs, MPI_UNWEIGHTED, 1, dsts, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g);
  MPI_Comm_set_errhandler(g, MPI_ERRORS_RETURN); MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int k = 5, victim = P - 1;
  int sb[8], rb[8], sc = k, sd = 0, rc = (me == victim) ? k - 2 : k, rd = 0;
  MPI_Request r;
  MPIX_Neighbor_alltoallv_init(sb, &sc, &sd, MPI_INT, rb, &rc, &rd, MPI_INT, g, MPI_INFO_NULL, &r);
  int broken = 0;
  for (int run = 0; run < 4; run++) {
    for (int i = 0; i < 8; i++) { sb[i] = me * 100 + run * 10 + i; rb[i] = -1; }
    if (me == victim && run >= 1) rc = k; /* after the error, victim receives right */
    int e; MPI_Request nb = MPI_REQUEST_NULL;
    if (broken && mode == 0) { e = MPI_Ineighbor_alltoallv(sb, &sc, &sd, MPI_INT, rb, &rc, &rd, MPI_INT, g, &nb); e = MPI_Wait(&nb, MPI_STATUS_IGNORE); }
    else { if (broken && mode == 1) { MPI_Request_free(&r); MPIX_Neighbor_alltoallv_init(sb, &sc, &sd, MPI_INT, rb, &rc, &rd, MPI_INT, g, MPI_INFO_NULL, &r); broken = 0; }
           MPI_Start(&r); e = MPI_Wait(&r, MPI_STATUS_IGNORE); }
    if (e != MPI_SUCCESS) broken = 1;
    int ok = rb[0] == src * 100 + run * 10 && rb[rc-1] == src*100+run*10+rc-1;
    printf("rank %d run %d err %d ok %d got %d\n", me, run, e != MPI_SUCCESS, ok, rb[0]); fflush(stdout);
  }
  MPI_Finalize();
}
