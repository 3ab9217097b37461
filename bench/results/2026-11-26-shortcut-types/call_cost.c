#include <mpi.h>
#include <nbrcoll.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return (x>y)-(x<y);}
int main(int argc,char**argv){
  MPI_Init(&argc,&argv); int me,n; MPI_Comm_rank(MPI_COMM_WORLD,&me); MPI_Comm_size(MPI_COMM_WORLD,&n);
  int src[2]={(me+n-1)%n,(me+1)%n}, dst[2]={(me+1)%n,(me+n-1)%n};
  MPI_Comm g,d; MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD,2,src,MPI_UNWEIGHTED,2,dst,MPI_UNWEIGHTED,MPI_INFO_NULL,0,&g);
  MPI_Info info; MPI_Info_create(&info); MPI_Info_set(info,"nbr_algorithm",argv[2]);
  nbr_dist_graph_create_adjacent(MPI_COMM_WORLD,2,src,MPI_UNWEIGHTED,2,dst,MPI_UNWEIGHTED,info,0,&d);
  int bytes=atoi(argv[1]); char*s=calloc(bytes,1),*r=calloc(2*bytes,1);
  for(int i=0;i<300;i++) nbr_neighbor_allgather(s,bytes,MPI_BYTE,r,bytes,MPI_BYTE,d);
  int iters=4000, block=5; double *t[3]; for(int c=0;c<3;c++) t[c]=malloc(iters*sizeof(double));
  for(int it=0; it<iters; it+=block) for(int k=0;k<3;k++){ int c=(k+it/block)%3;
    for(int j=it;j<it+block;j++){ MPI_Barrier(MPI_COMM_WORLD); double t0=MPI_Wtime();
      if(c==1) nbr_neighbor_allgather(s,bytes,MPI_BYTE,r,bytes,MPI_BYTE,d); else MPI_Neighbor_allgather(s,bytes,MPI_BYTE,r,bytes,MPI_BYTE,c?d:g);
      double dt=MPI_Wtime()-t0,mx; MPI_Allreduce(&dt,&mx,1,MPI_DOUBLE,MPI_MAX,MPI_COMM_WORLD); t[c][j]=mx; } }

  const char*name="?"; nbr_comm_algorithm(d,&name);
  if(!me){ for(int c=0;c<3;c++){ qsort(t[c],iters,sizeof(double),cmp); printf("%s median %.2f us  p25 %.2f\n", c==1?name:c?"mpi-on-d":"mpi-on-g", t[c][iters/2]*1e6, t[c][iters/4]*1e6);} }
  MPI_Finalize(); }
