/* sync.c: ranks started at one agreed instant instead of after a barrier:
 * rank 0 broadcasts now + WINDOW us, every rank sleeps until then
 * (clock_nanosleep on CLOCK_MONOTONIC, one clock for every namespace of the
 * emulated cluster) and runs an 8-byte MPI_Allreduce. Prints how late the
 * last rank started, the allreduce timed from the instant, and the same
 * allreduce timed after a barrier. Run as skew.c, with WINDOW as argument:
 *   bench/cluster/local-cluster.sh 4 4 /tmp/sync 1000 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec ts;clock_gettime(CLOCK_MONOTONIC,&ts);return ts.tv_sec+1e-9*ts.tv_nsec;}
static void sleep_until(double t){struct timespec ts; ts.tv_sec=(time_t)t; ts.tv_nsec=(long)((t-ts.tv_sec)*1e9); while(clock_nanosleep(CLOCK_MONOTONIC,TIMER_ABSTIME,&ts,NULL));}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return (x>y)-(x<y);}
int main(int c,char**v){MPI_Init(&c,&v);int r,n;MPI_Comm_rank(MPI_COMM_WORLD,&r);MPI_Comm_size(MPI_COMM_WORLD,&n);
 double win=atof(v[1])*1e-6; int it=300, late=0;
 double *st=malloc(it*sizeof(double)), *dur=malloc(it*sizeof(double)), *bar=malloc(it*sizeof(double));
 for(int i=0;i<it;i++){
   double T = now()+win; MPI_Bcast(&T,1,MPI_DOUBLE,0,MPI_COMM_WORLD);
   int l = now()>T; sleep_until(T); double t0=now(); double x=1,y;
   MPI_Allreduce(&x,&y,1,MPI_DOUBLE,MPI_SUM,MPI_COMM_WORLD); double t1=now();
   double mine[3]={t0-T,t1-T,l},mx[3]; MPI_Reduce(mine,mx,3,MPI_DOUBLE,MPI_MAX,0,MPI_COMM_WORLD);
   MPI_Barrier(MPI_COMM_WORLD); double b0=now(); MPI_Allreduce(&x,&y,1,MPI_DOUBLE,MPI_SUM,MPI_COMM_WORLD); double b1=b0; b1=now()-b0; double bm; MPI_Reduce(&b1,&bm,1,MPI_DOUBLE,MPI_MAX,0,MPI_COMM_WORLD);
   if(!r){st[i]=mx[0]*1e6;dur[i]=mx[1]*1e6;late+=mx[2]>0;bar[i]=bm*1e6;}}
 if(!r){qsort(st,it,8,cmp);qsort(dur,it,8,cmp);qsort(bar,it,8,cmp);
  printf("window %.0f us: late %d/%d; start lateness median %.1f p90 %.1f; allreduce from T median %.1f min %.1f p90 %.1f; barrier-started median %.1f min %.1f p90 %.1f\n",win*1e6,late,it,st[it/2],st[9*it/10],dur[it/2],dur[0],dur[9*it/10],bar[it/2],bar[0],bar[9*it/10]);}
 MPI_Finalize();}
