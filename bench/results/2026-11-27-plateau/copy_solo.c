#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9;}
volatile char sink;
int main(int argc,char**argv){ size_t b=(size_t)atol(argv[1]); int rounds=atoi(argv[2]);
 char*a=malloc(b),*c=malloc(b); memset(a,1,b); memset(c,2,b);
 for(int r=0;r<rounds;r++){ double best=1e9, all[7]; for(int i=0;i<7;i++){double t0=now(); memcpy(c,a,b); sink=c[b/2+i]; double t=now()-t0; all[i]=t; if(t<best)best=t;}
   double s[7]; memcpy(s,all,sizeof s); for(int i=0;i<7;i++)for(int j=i+1;j<7;j++) if(s[j]<s[i]){double x=s[i];s[i]=s[j];s[j]=x;}
   printf("%.1f/%.1f ", b/best/1e9, b/s[3]/1e9); fflush(stdout); struct timespec ts={0,200000000}; nanosleep(&ts,0);} printf("\n"); return 0;}
