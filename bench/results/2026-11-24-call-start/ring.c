/* ring.c: every rank sends 8 B to rank + STRIDE and receives from
 * rank - STRIDE, timed as nbr_bench times a call (a barrier, the slowest
 * rank's time), median of 400 calls. nbr_calibrate now measures stride 1
 * as the per-call start. Run as skew.c: local-cluster.sh 4 4 /tmp/ring 1 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return (x>y)-(x<y);}
int main(int c,char**v){MPI_Init(&c,&v);int r,n;MPI_Comm_rank(MPI_COMM_WORLD,&r);MPI_Comm_size(MPI_COMM_WORLD,&n);
 int it=400; int stride=atoi(v[1]); double *s=malloc(it*8); char a[8]={0},b[8];
 for(int i=0;i<it+10;i++){MPI_Request q[2]; MPI_Barrier(MPI_COMM_WORLD); double t0=MPI_Wtime();
  MPI_Irecv(b,8,MPI_CHAR,(r-stride+n)%n,0,MPI_COMM_WORLD,&q[0]); MPI_Isend(a,8,MPI_CHAR,(r+stride)%n,0,MPI_COMM_WORLD,&q[1]); MPI_Waitall(2,q,MPI_STATUSES_IGNORE);
  double dt=MPI_Wtime()-t0,mx; MPI_Allreduce(&dt,&mx,1,MPI_DOUBLE,MPI_MAX,MPI_COMM_WORLD); if(i>=10)s[i-10]=mx*1e6;}
 if(!r){qsort(s,it,8,cmp);printf("ring stride %d 8 B: median %.1f min %.1f p90 %.1f us\n",stride,s[it/2],s[0],s[9*it/10]);}
 MPI_Finalize();}
