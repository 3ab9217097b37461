/* skew.c: how far apart the ranks leave an MPI_Barrier, on the one clock
 * (CLOCK_MONOTONIC) that the emulated cluster's namespaces share; and an
 * 8-byte MPI_Allreduce timed from the barrier (slowest rank) and from the
 * last rank's exit. 300 rounds. Run (repository root, as root, after
 *   mpicc -O2 -o /tmp/skew bench/results/2026-11-24-call-start/skew.c):
 *   bench/cluster/local-cluster.sh 4 4 /tmp/skew */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec ts;clock_gettime(CLOCK_MONOTONIC,&ts);return ts.tv_sec+1e-9*ts.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return (x>y)-(x<y);}
int main(int c,char**v){MPI_Init(&c,&v);int r,n;MPI_Comm_rank(MPI_COMM_WORLD,&r);MPI_Comm_size(MPI_COMM_WORLD,&n);
 int it=300; double *sk=malloc(it*sizeof(double)), *lat=malloc(it*sizeof(double)), *sync=malloc(it*sizeof(double));
 double *all=malloc(2*n*sizeof(double));
 for(int i=0;i<it;i++){ MPI_Barrier(MPI_COMM_WORLD); double t0=now(); double x=1,y;
   /* a zero-work dependency: allreduce of one double */
   MPI_Allreduce(&x,&y,1,MPI_DOUBLE,MPI_SUM,MPI_COMM_WORLD); double t1=now();
   double mine[2]={t0,t1}; MPI_Gather(mine,2,MPI_DOUBLE,all,2,MPI_DOUBLE,0,MPI_COMM_WORLD);
   if(!r){double mn=1e30,mx=-1e30,mx1=-1e30,md=0;for(int k=0;k<n;k++){if(all[2*k]<mn)mn=all[2*k];if(all[2*k]>mx)mx=all[2*k];if(all[2*k+1]>mx1)mx1=all[2*k+1];if(all[2*k+1]-all[2*k]>md)md=all[2*k+1]-all[2*k];}
     sk[i]=(mx-mn)*1e6; lat[i]=md*1e6; sync[i]=(mx1-mx)*1e6;}}
 if(!r){qsort(sk,it,8,cmp);qsort(lat,it,8,cmp);qsort(sync,it,8,cmp);
  printf("barrier exit skew us: median %.1f p10 %.1f p90 %.1f\n",sk[it/2],sk[it/10],sk[9*it/10]);
  printf("allreduce max(t1-t0) us: median %.1f ; max(t1)-max(t0): median %.1f\n",lat[it/2],sync[it/2]);}
 MPI_Finalize();}
