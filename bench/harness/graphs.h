/* The communication graph of a bench run and the communicators over it:
 * the synthetic patterns (rsg, moore) of base/graph_gen.h, one rank's view
 * of the whole graph with the node and socket map nbrcoll sees, and one
 * dist-graph communicator per algorithm to compare. */
#ifndef NBR_BENCH_HARNESS_GRAPHS_H
#define NBR_BENCH_HARNESS_GRAPHS_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "base/graph_gen.h"

typedef enum { BH_PATTERN_RSG, BH_PATTERN_MOORE } bh_pattern_t;

/* Which synthetic graph: rsg uses density and seed, moore dims and radius. */
typedef struct bh_graph_spec {
    bh_pattern_t pattern;
    double density;
    uint64_t seed;
    int dims;
    int radius;
} bh_graph_spec_t;

/* Locality handed to nbrcoll through info keys. */
typedef struct bh_locality {
    int ranks_per_node;   /* 0: let nbrcoll detect real nodes */
    int ranks_per_socket; /* 0: let nbrcoll detect real sockets */
} bh_locality_t;

/* One rank's view: the whole graph, its own lists, and where every rank
 * lives (needed to model the MPI library's traffic). */
typedef struct bh_topo {
    nbr_graph_t graph;
    int rank, nranks;
    int indeg, outdeg;
    const int *in, *out; /* this rank's lists inside graph */
    int *in_occ;  /* in_occ[i]: earlier slots naming the same source */
    int *out_occ; /* out_occ[j]: earlier slots naming the same target */
    int nnodes;
    int *node_of;   /* node of every rank */
    int *socket_of; /* socket of every rank (nbrcoll numbers them over the
                       job; compared only together with node_of) */
    int nsockets;   /* distinct (node, socket) pairs */
    int socket_max; /* L: the most ranks on one socket */
} bh_topo_t;

/* "rsg(d=0.30,s=1)" or "moore(d=2,r=1)": the pattern field of every row. */
void bh_pattern_label(const bh_graph_spec_t *spec, char *buf, size_t n);

/* The whole graph of spec over nranks ranks (no MPI). */
int bh_graph_generate(const bh_graph_spec_t *spec, int nranks, nbr_graph_t *graph);

/* Every rank generates the same whole graph of spec over MPI_COMM_WORLD
 * and takes its own view of it. 0 or an nbr_status_t; bh_topo_free is safe
 * after a failure too. The node map is not known until
 * bh_topo_gather_locality. */
int bh_topo_build(const bh_graph_spec_t *spec, bh_topo_t *t);
/* The same for a whole graph from elsewhere (a matrix's, say), which t
 * takes over: bh_topo_free frees it. */
int bh_topo_adopt(bh_topo_t *t, nbr_graph_t graph);
void bh_topo_free(bh_topo_t *t);

/* Node and socket map as nbrcoll sees it on comm (an nbrcoll
 * communicator), gathered for every rank; collective, aborts on failure. */
void bh_topo_gather_locality(MPI_Comm comm, bh_topo_t *t);

/* halving's bound on off-socket messages per rank per call,
 * ceil(log2(n / L)) + 1, in integers; 0 when one socket holds every rank. */
int bh_offsock_bound(const bh_topo_t *t);

#define BH_MAX_ALGS 32
#define BH_ALG_NAME_MAX 64

/* The algorithms to compare, in order: 'mpi' (the MPI library), 'copy' (a
 * device-to-device copy, no communication) or nbrcoll algorithm names. */
typedef struct bh_alg_list {
    char names[BH_MAX_ALGS][BH_ALG_NAME_MAX];
    int n;
} bh_alg_list_t;

typedef struct bh_alg {
    const char *name;
    int is_mpi;   /* 1: MPI_Neighbor_* on the base communicator */
    int is_copy;  /* 1: a local device copy, no communicator */
    MPI_Comm comm;
} bh_alg_t;

/* nbrcoll dist-graph communicator over t's lists with algorithm alg (NULL:
 * nbrcoll's choice) and the locality of loc. nbrcoll agrees on errors
 * collectively, so every rank gets the same status and may return instead
 * of aborting. */
int bh_create_comm(const bh_locality_t *loc, const bh_topo_t *t,
                   const char *alg, MPI_Comm *comm);

/* One communicator per nbrcoll algorithm of list into algs[0 .. list->n),
 * created up front; 'mpi' runs on the first one. With only 'mpi' listed a
 * default nbrcoll communicator is still made: it supplies the node map.
 * *base receives that first one. Same error contract as bh_create_comm. */
int bh_create_comms(const bh_locality_t *loc, const bh_topo_t *t,
                    const bh_alg_list_t *list, bh_alg_t *algs,
                    MPI_Comm *base);

/* NBR_ALGORITHM in the environment beats the info key: rank 0 says so, or
 * the table would credit one algorithm with another's times. */
void bh_warn_overridden_algorithms(const bh_alg_t *algs, int nalgs,
                                   int rank);

void bh_free_comms(bh_alg_t *algs, int nalgs, MPI_Comm base);

#endif
