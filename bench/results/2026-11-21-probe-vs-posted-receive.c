/* Ring exchange of 8-byte messages among all ranks, polled: a receive
 * posted before the message (irecv) against MPI_Improbe + MPI_Imrecv once
 * it has come (improbe), the two ways the device layer could take network
 * messages. Build: mpicc -O2 this.c; results in the .txt beside it. */
#include <mpi.h>
#include <stdio.h>
#include <sched.h>
/* ring exchange among all ranks: each sends 8 B to r+1, receives from r-1, polled */
int main(int c, char **v) {
  MPI_Init(&c,&v); int r,n; MPI_Comm_rank(MPI_COMM_WORLD,&r); MPI_Comm_size(MPI_COMM_WORLD,&n);
  char s[8]={0}, d[8]; int iters=200000;
  for (int mode=0; mode<2; mode++) for (int rep=0; rep<3; rep++) {
    MPI_Barrier(MPI_COMM_WORLD); double t=MPI_Wtime();
    for (int i=0;i<iters;i++) {
      MPI_Request rq=MPI_REQUEST_NULL, sq; int done=0, sdone=0;
      if (mode==0) MPI_Irecv(d,8,MPI_BYTE,(r+n-1)%n,i%100,MPI_COMM_WORLD,&rq);
      MPI_Isend(s,8,MPI_BYTE,(r+1)%n,i%100,MPI_COMM_WORLD,&sq);
      int posted = mode==0;
      while (!done || !sdone) {
        int moved=0;
        if (!posted) { int f; MPI_Message m; MPI_Improbe((r+n-1)%n,i%100,MPI_COMM_WORLD,&f,&m,MPI_STATUS_IGNORE); if (!f) MPI_Improbe((r+n-1)%n,i%100,MPI_COMM_WORLD,&f,&m,MPI_STATUS_IGNORE);
          if (f) { MPI_Imrecv(d,8,MPI_BYTE,&m,&rq); posted=1; moved=1;} }
        if (posted && !done) { MPI_Test(&rq,&done,MPI_STATUS_IGNORE); moved|=done; }
        if (!sdone) { MPI_Test(&sq,&sdone,MPI_STATUS_IGNORE); moved|=sdone; }
        if (!moved) sched_yield();
      }
    }
    t=MPI_Wtime()-t; if(!r) printf("%s rep %d: %.1f us/iter\n", mode?"improbe":"irecv  ", rep, t/iters*1e6);
  }
  MPI_Finalize(); }
