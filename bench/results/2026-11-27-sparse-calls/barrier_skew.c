#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return (x>y)-(x<y);}
int main(int argc,char**argv){
  MPI_Init(&argc,&argv);int me,n;MPI_Comm_rank(MPI_COMM_WORLD,&me);MPI_Comm_size(MPI_COMM_WORLD,&n);
  int R=1000; double *all=malloc(sizeof(double)*n), *spread=malloc(sizeof(double)*R), *q=calloc(n,sizeof(double));
  double *sorted=malloc(sizeof(double)*n); double *qs=malloc(sizeof(double)*n*R);
  for(int i=0;i<R+50;i++){
    MPI_Barrier(MPI_COMM_WORLD); double t=now();
    MPI_Gather(&t,1,MPI_DOUBLE,all,1,MPI_DOUBLE,0,MPI_COMM_WORLD);
    if(me==0&&i>=50){ for(int k=0;k<n;k++)sorted[k]=all[k]; qsort(sorted,n,sizeof(double),cmp);
      spread[i-50]=sorted[n-1]-sorted[0]; for(int k=0;k<n;k++) qs[k*R+i-50]=sorted[k]-sorted[0]; }
  }
  if(me==0){ qsort(spread,R,sizeof(double),cmp); printf("spread us: p10 %.1f median %.1f p90 %.1f\n",spread[R/10]*1e6,spread[R/2]*1e6,spread[9*R/10]*1e6);
    printf("median offset of the k-th to exit:"); for(int k=0;k<n;k++){qsort(qs+k*R,R,sizeof(double),cmp); printf(" %.0f",qs[k*R+R/2]*1e6);} printf("\n");}
  MPI_Finalize();}
