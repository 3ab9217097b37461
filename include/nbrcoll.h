/*
 * nbrcoll: fast MPI neighborhood collectives for GPU clusters.
 *
 * Every call takes the user's communicator with a process topology (a
 * distributed graph from MPI_Dist_graph_create(_adjacent) or the nbr_
 * constructors below, a cartesian one from MPI_Cart_create, or a graph from
 * MPI_Graph_create) and behaves like its MPI namesake: same arguments, same
 * neighbor order, same result in recvbuf. On a cartesian communicator the
 * neighbors are, per dimension, the one in the negative direction, then
 * the positive one (2 * ndims blocks); a missing one (MPI_PROC_NULL, at the
 * border of a non-periodic dimension) sends nothing and its receive block
 * is left untouched, and what a rank sends in the positive direction of a
 * dimension lands in the receiver's negative-side block (which decides
 * where blocks go on periodic dimensions of size 1 or 2). Porting an
 * application is a rename from MPI_Neighbor_* to nbr_neighbor_*.
 *
 * Library state (neighbor lists, node map, algorithm plans) is cached on the
 * communicator with an MPI attribute and freed when the communicator is freed.
 * A communicator that nbrcoll did not create is set up lazily, collectively,
 * on the first nbrcoll call that uses it.
 *
 * Every function returns NBR_SUCCESS (0) or a negative nbr_status_t; none
 * aborts, none prints except through the logger (env NBR_LOG).
 *
 * Configuration: each setting is an MPI_Info key (where it has one) and an
 * environment variable; the environment wins. A bad value is NBR_ERR_INFO,
 * and so is a setting that decides the messages (the algorithm, the node
 * size, the graph check ...) with another value on some rank. The list is
 * generated from src/base/settings_table.def (scripts/settings-doc.py
 * --write; ctest -L docs checks it):
 * <!-- settings:begin -->
 *   nbr_algorithm / NBR_ALGORITHM
 *       algorithm name; default auto: algorithm for the communicator (or, in
 *       an _init info, for one request): one of nbr_algorithm_names(); auto
 *       prices each call signature
 *   nbr_machine / NBR_MACHINE
 *       file; default unset: machine parameters auto prices with: a .machine
 *       file (topo/README.md); none: a generic 100 Gbit/s cluster built in; an
 *       unreadable file is an error
 *   nbr_auto_whole_graph_ranks / NBR_AUTO_WHOLE_GRAPH_RANKS
 *       integer >= 0; default 1024: auto prices halving and combining up to
 *       this many ranks
 *   nbr_auto_trials / NBR_AUTO_TRIALS
 *       integer 0..100; default 5: the fewest blocking calls auto times on
 *       each side of its trial (calls cheap enough get as many as fit in 100
 *       ms per side, up to 100); 0: price only
 *   nbr_ranks_per_node / NBR_RANKS_PER_NODE
 *       integer >= 0; default 0: split the job into virtual nodes of this many
 *       consecutive ranks; 0: the real nodes
 *   nbr_ranks_per_socket / NBR_RANKS_PER_SOCKET
 *       integer >= 0; default 0: virtual CPU sockets of this many ranks inside
 *       each node; 0: one per node
 *   nbr_dump_plan / NBR_DUMP_PLAN
 *       directory; default unset: every plan built is written there, one file
 *       per communicator and rank
 *   nbr_topo_file / NBR_TOPO_FILE
 *       file; default unset: use this stored node model instead of probing the
 *       machine (the .topo files of topo/, format in topo/README.md)
 *   nbr_topo_sysfs_root / NBR_TOPO_SYSFS_ROOT
 *       directory; default unset: read the KFD sysfs tree below this directory
 *       (tests, fake trees)
 *   NBR_GPU
 *       integer >= 0; default unset: every rank uses this GPU of its node;
 *       unset: the runtime's current device when the device layer is on, else
 *       local rank modulo the GPU count
 *   NBR_DEVICE
 *       auto, hip, cuda, emulate, off; default auto: the device runtime: auto
 *       takes a GPU if HIP or CUDA finds one; emulate is a CPU emulation of
 *       the device layer; off: host buffers only
 *   nbr_memory / NBR_MEMORY
 *       auto, host, device; default auto: what the buffers are: auto asks the
 *       runtime per buffer; host turns the device layer off for the
 *       communicator
 *   NBR_GPU_AWARE_MPI
 *       integer 0..1; default unset: 1: hand device pointers to MPI; 0: stage
 *       through pinned host memory; unset: ask Open MPI's MPIX_Query_*_support
 *   nbr_staging_chunk / NBR_STAGING_CHUNK
 *       integer >= 4096; default 1048576: bytes per chunk of staged inter-node
 *       messages
 *   nbr_combining_theta / NBR_COMBINING_THETA
 *       integer >= 1; default 2: combining: two ranks are friends when they
 *       share at least this many out-neighbors
 *   nbr_leader_min_bytes / NBR_LEADER_MIN_BYTES
 *       integer >= 0; default 262144: leader: blocks smaller than this go
 *       directly, as in naive
 *   nbr_aggregate_region / NBR_AGGREGATE_REGION
 *       node, socket; default node: aggregate, dedup: the regions agents
 *       gather for
 *   nbr_aggregate_message_bytes / NBR_AGGREGATE_MESSAGE_BYTES
 *       integer >= 0; default 16384: aggregate, dedup: when agents are
 *       balanced, a remote region weighs its messages times this plus its
 *       bytes (small messages balance by count, large ones by bytes)
 *   nbr_expected_starts / NBR_EXPECTED_STARTS
 *       integer >= 1; default 100: starts a persistent request is expected to
 *       run (also an _init info key); auto adds a plan's measured set-up
 *       divided by it to the plan's price (blocking and nonblocking calls set
 *       up every call: 1)
 *   nbr_check_graph / NBR_CHECK_GRAPH
 *       1/true/yes/on or 0/false/no/off; default 1: at set-up, check that
 *       every out-edge has its in-edge at the other end (one message per
 *       distinct out-neighbor and a barrier; NBR_ERR_GRAPH on every rank, the
 *       pair and counts logged)
 *   nbr_agree_errors / NBR_AGREE_ERRORS
 *       1/true/yes/on or 0/false/no/off; default 0: every call ends with one
 *       status on every rank (NBR_ERR_PEER where another rank failed;
 *       ceil(log2 P) rounds of one int per call)
 *   NBR_LOG
 *       error, warn, info, debug; default warn: how much the logger says, to
 *       stderr, prefixed with the rank (any case; another value: warn)
 *   nbr_disable / NBR_DISABLE
 *       switch; default unset: any value but empty, 0, false, no (the info key
 *       at creation only): the drop-in (libnbrcoll_mpi) passes every call to
 *       MPI unchanged
 *   NBR_DEVICE_FAULTS
 *       switch; default unset: tests: 1 wraps the device runtime in a layer
 *       that fails the call a test arms
 * <!-- settings:end -->
 *
 * Thread safety: calls on different communicators may run concurrently from
 * different threads (with MPI_THREAD_MULTIPLE); calls on one communicator
 * must be serialised by the caller, as for MPI collectives.
 *
 * Error agreement: nbr_dist_graph_create(_adjacent) and the persistent _init
 * calls agree on errors collectively (every rank returns the same status).
 * Blocking and nonblocking calls check their arguments locally before any
 * communication; as in MPI, every rank must pass consistent arguments.
 * When an MPI call fails inside a collective call, the ranks its failure
 * reaches return an error (NBR_ERR_PEER where another rank failed) and the
 * others complete correctly; nbr_agree_errors makes every rank return an
 * error.
 */
#ifndef NBRCOLL_H
#define NBRCOLL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define NBR_API __attribute__((visibility("default")))
#else
#define NBR_API
#endif

#define NBRCOLL_VERSION_MAJOR 0
#define NBRCOLL_VERSION_MINOR 1
#define NBRCOLL_VERSION_PATCH 0

/* ---------------------------------------------------------------- status */

typedef enum nbr_status {
    NBR_SUCCESS = 0,
    NBR_ERR_ARG = -1,           /* invalid argument not covered below */
    NBR_ERR_BUFFER = -2,        /* NULL buffer where data is moved */
    NBR_ERR_COUNT = -3,         /* negative count, degree or displacement */
    NBR_ERR_RANK = -4,          /* neighbor rank outside the communicator */
    NBR_ERR_TOPOLOGY = -5,      /* communicator has no process topology */
    NBR_ERR_DATATYPE = -6,      /* MPI_DATATYPE_NULL or a type MPI cannot describe
                                 * (an uncommitted one is MPI's to report:
                                 * NBR_ERR_MPI where MPI sees it) */
    NBR_ERR_TYPE_MISMATCH = -7, /* send and receive type signatures differ */
    NBR_ERR_ALGORITHM = -8,     /* unknown algorithm name */
    NBR_ERR_INFO = -9,          /* malformed MPI_Info / environment value */
    NBR_ERR_NOMEM = -10,        /* allocation failed */
    NBR_ERR_MPI = -11,          /* an MPI call failed (logged with its text) */
    NBR_ERR_REQUEST = -12,      /* request NULL or in the wrong state */
    NBR_ERR_COMM = -13,         /* MPI_COMM_NULL or an intercommunicator */
    NBR_ERR_UNSUPPORTED = -14,  /* valid, but not supported by this build */
    NBR_ERR_INTERNAL = -15,     /* a library invariant failed: a bug */
    NBR_ERR_IO = -16,           /* a file could not be read or written */
    NBR_ERR_DEVICE = -17,       /* a GPU runtime call failed (logged with its text) */
    NBR_ERR_GRAPH = -18,        /* ranks' neighbor lists disagree (an out-edge without
                                 * its in-edge): logged with both ranks and counts */
    NBR_ERR_PEER = -19          /* a rank this one receives from (directly or through
                                 * relays) failed in the same call: its log says why */
} nbr_status_t;

/* Static description of a status; never NULL. */
NBR_API const char *nbr_error_string(int status);

/* ------------------------------------------------------------- memory */

/* Device memory that nbrcoll can share between the ranks of a node (IPC),
 * from the backend in use (NBR_DEVICE): hipMalloc / cudaMalloc, or a
 * shared-memory segment under NBR_DEVICE=emulate. Buffers from anywhere
 * work with every call; these are the ones intra-node copies can always
 * read directly. bytes == 0 gives *ptr = NULL. NBR_ERR_UNSUPPORTED when
 * no device is in use. */
NBR_API int nbr_mem_alloc(void **ptr, size_t bytes);
/* Frees memory from nbr_mem_alloc; NULL is a no-op. */
NBR_API int nbr_mem_free(void *ptr);
/* Copies bytes between any two buffers, host or device, and waits for the
 * copy (tests and benchmarks use it to fill and read device buffers).
 * NBR_ERR_UNSUPPORTED when no device is in use. */
NBR_API int nbr_mem_copy(void *dst, const void *src, size_t bytes);

/* ----------------------------------------------------- communicators */

/* Same arguments as MPI_Dist_graph_create_adjacent. Creates the
 * communicator, attaches nbrcoll state and builds plans eagerly (collective
 * over comm_old). info may carry the nbr_* keys listed above; it is also
 * passed to MPI. */
NBR_API int nbr_dist_graph_create_adjacent(MPI_Comm comm_old, int indegree,
                                           const int *sources,
                                           const int *sourceweights,
                                           int outdegree,
                                           const int *destinations,
                                           const int *destweights,
                                           MPI_Info info, int reorder,
                                           MPI_Comm *comm_dist_graph);

/* Same arguments as MPI_Dist_graph_create: rank i names n source ranks, the
 * j-th with degrees[j] destinations. Neighbor lists are discovered with the
 * NBX sparse exchange (Issend + Ibarrier), never with an O(P) alltoall; the
 * result is an adjacent dist-graph communicator whose in- and out-lists are
 * ordered by (peer rank, naming rank, position in the naming rank's list),
 * so repeated edges pair up consistently. reorder is accepted and ignored
 * (ranks are never reordered). */
NBR_API int nbr_dist_graph_create(MPI_Comm comm_old, int n,
                                  const int *sources, const int *degrees,
                                  const int *destinations,
                                  const int *weights, MPI_Info info,
                                  int reorder, MPI_Comm *comm_dist_graph);

/* Attach nbrcoll state to an existing topology communicator now, with
 * configuration from info (may be MPI_INFO_NULL). Collective. Optional: any
 * nbr_ call does it lazily with configuration from the environment. */
NBR_API int nbr_comm_attach(MPI_Comm comm, MPI_Info info);

/* For code that creates communicators for others (the drop-in does, at
 * every creation of one with a process topology): collective over comm.
 * Sets nbrcoll up on comm as nbr_comm_attach does, unless off (this
 * rank's: leave comm to MPI), where *taken = 0 and nothing is set up.
 * Every rank must pass the same off: where they differ, every rank gets
 * NBR_ERR_INFO, the log naming the ranks that differ from rank 0. */
NBR_API int nbr_comm_adopt(MPI_Comm comm, MPI_Info info, int off, int *taken);

/* ------------------------------------------------------- algorithms */

/* Comma-separated list of algorithm names accepted by nbr_algorithm /
 * NBR_ALGORITHM, e.g. "naive". Static storage. */
NBR_API const char *nbr_algorithm_names(void);

/* One-line description of an algorithm, or NULL if the name is unknown. */
NBR_API const char *nbr_algorithm_description(const char *name);

/* Name of the algorithm of comm's latest call or persistent _init (sets
 * the communicator up if needed): the communicator's configured one or the
 * one an _init's info named, or with auto the one it chose; "naive" where
 * it stood in for a plan of several rounds in a nonblocking or persistent
 * call (an MPI without nbrcoll's progress hook: MPICH, or
 * MPI_THREAD_MULTIPLE); before any call, the configured one ("auto" by
 * default). */
NBR_API int nbr_comm_algorithm(MPI_Comm comm, const char **name);

/* *pending = 1 while auto's trial of some call signature on comm is under
 * way, i.e. its next blocking calls of that signature are timed against
 * other plans (README, "How auto decides"); 0 once every trial is over.
 * The same on every rank after the same calls, so a benchmark can warm up
 * until it reads 0 and then time auto's settled choice. */
NBR_API int nbr_comm_trial_pending(MPI_Comm comm, int *pending);

/* Tells automatic selection that comm's calls change from here on (a new
 * phase of the program: other block sizes, other counts): the next call of
 * each collective decides afresh, with a new trial, instead of at its next
 * scheduled decision point (README, "How auto decides"). Every rank calls
 * it between the same two neighborhood collectives on comm; it
 * communicates nothing. */
NBR_API int nbr_comm_retune(MPI_Comm comm);

/* --------------------------------------------------------- blocking */

NBR_API int nbr_neighbor_allgather(const void *sendbuf, int sendcount,
                                   MPI_Datatype sendtype, void *recvbuf,
                                   int recvcount, MPI_Datatype recvtype,
                                   MPI_Comm comm);

NBR_API int nbr_neighbor_allgatherv(const void *sendbuf, int sendcount,
                                    MPI_Datatype sendtype, void *recvbuf,
                                    const int *recvcounts, const int *displs,
                                    MPI_Datatype recvtype, MPI_Comm comm);

NBR_API int nbr_neighbor_alltoall(const void *sendbuf, int sendcount,
                                  MPI_Datatype sendtype, void *recvbuf,
                                  int recvcount, MPI_Datatype recvtype,
                                  MPI_Comm comm);

NBR_API int nbr_neighbor_alltoallv(const void *sendbuf, const int *sendcounts,
                                   const int *sdispls, MPI_Datatype sendtype,
                                   void *recvbuf, const int *recvcounts,
                                   const int *rdispls, MPI_Datatype recvtype,
                                   MPI_Comm comm);

/* Per-neighbor datatypes; displacements in bytes. Derived datatypes with
 * gaps are packed (host buffers only, as everywhere). */
NBR_API int nbr_neighbor_alltoallw(const void *sendbuf, const int *sendcounts,
                                   const MPI_Aint *sdispls,
                                   const MPI_Datatype *sendtypes, void *recvbuf,
                                   const int *recvcounts,
                                   const MPI_Aint *rdispls,
                                   const MPI_Datatype *recvtypes, MPI_Comm comm);

/* --------------------------------------------------------- requests */

/* Opaque handle of a nonblocking or persistent operation. */
typedef struct nbr_request *nbr_request_t;
#define NBR_REQUEST_NULL ((nbr_request_t)0)

/* ------------------------------------------------------ nonblocking */
/* Complete with nbr_wait / nbr_test, which set *request to NBR_REQUEST_NULL.
 * The count, displacement and datatype arrays are read at the call: the
 * caller may reuse them at once. Buffers must stay untouched until
 * completion, as in MPI. */

NBR_API int nbr_neighbor_iallgather(const void *sendbuf, int sendcount,
                                    MPI_Datatype sendtype, void *recvbuf,
                                    int recvcount, MPI_Datatype recvtype,
                                    MPI_Comm comm, nbr_request_t *request);

NBR_API int nbr_neighbor_iallgatherv(const void *sendbuf, int sendcount,
                                     MPI_Datatype sendtype, void *recvbuf,
                                     const int *recvcounts, const int *displs,
                                     MPI_Datatype recvtype, MPI_Comm comm,
                                     nbr_request_t *request);

NBR_API int nbr_neighbor_ialltoall(const void *sendbuf, int sendcount,
                                   MPI_Datatype sendtype, void *recvbuf,
                                   int recvcount, MPI_Datatype recvtype,
                                   MPI_Comm comm, nbr_request_t *request);

NBR_API int nbr_neighbor_ialltoallv(const void *sendbuf,
                                    const int *sendcounts, const int *sdispls,
                                    MPI_Datatype sendtype, void *recvbuf,
                                    const int *recvcounts, const int *rdispls,
                                    MPI_Datatype recvtype, MPI_Comm comm,
                                    nbr_request_t *request);

NBR_API int nbr_neighbor_ialltoallw(const void *sendbuf,
                                    const int *sendcounts,
                                    const MPI_Aint *sdispls,
                                    const MPI_Datatype *sendtypes,
                                    void *recvbuf, const int *recvcounts,
                                    const MPI_Aint *rdispls,
                                    const MPI_Datatype *recvtypes,
                                    MPI_Comm comm, nbr_request_t *request);

/* ------------------------------------------------------- persistent */
/* MPI-4 argument order. The plan and its MPI persistent requests are built
 * once (collectively); nbr_start runs it, nbr_wait / nbr_test complete one
 * run and leave the request inactive for the next nbr_start. Free with
 * nbr_request_free. info may carry nbr_algorithm for this request only. */

NBR_API int nbr_neighbor_allgather_init(const void *sendbuf, int sendcount,
                                        MPI_Datatype sendtype, void *recvbuf,
                                        int recvcount, MPI_Datatype recvtype,
                                        MPI_Comm comm, MPI_Info info,
                                        nbr_request_t *request);

NBR_API int nbr_neighbor_allgatherv_init(const void *sendbuf, int sendcount,
                                         MPI_Datatype sendtype, void *recvbuf,
                                         const int *recvcounts,
                                         const int *displs,
                                         MPI_Datatype recvtype, MPI_Comm comm,
                                         MPI_Info info, nbr_request_t *request);

NBR_API int nbr_neighbor_alltoall_init(const void *sendbuf, int sendcount,
                                       MPI_Datatype sendtype, void *recvbuf,
                                       int recvcount, MPI_Datatype recvtype,
                                       MPI_Comm comm, MPI_Info info,
                                       nbr_request_t *request);

NBR_API int nbr_neighbor_alltoallv_init(const void *sendbuf,
                                        const int *sendcounts,
                                        const int *sdispls,
                                        MPI_Datatype sendtype, void *recvbuf,
                                        const int *recvcounts,
                                        const int *rdispls,
                                        MPI_Datatype recvtype, MPI_Comm comm,
                                        MPI_Info info, nbr_request_t *request);

NBR_API int nbr_neighbor_alltoallw_init(const void *sendbuf,
                                        const int *sendcounts,
                                        const MPI_Aint *sdispls,
                                        const MPI_Datatype *sendtypes,
                                        void *recvbuf, const int *recvcounts,
                                        const MPI_Aint *rdispls,
                                        const MPI_Datatype *recvtypes,
                                        MPI_Comm comm, MPI_Info info,
                                        nbr_request_t *request);

/* alltoallv_init with the global index of every value (the locality-aware
 * alltoallv paper's extension): send_global_idx[sdispls[j] + e] names the
 * value in element e of send block j, recv_global_idx[rdispls[i] + e] the
 * value that element e of receive block i gets (indexed as the
 * displacements count elements). Elements a rank sends with one index
 * must hold one value, and every element a rank receives from a sender
 * with an index gets that sender's value of that index. The dedup
 * algorithm (the default's candidate for such calls) then moves a value
 * that several ranks of one node need across to that node once, and
 * inside each node once; other algorithms move every element as
 * alltoallv_init does. sendtype and recvtype must have the same size (one
 * element each). Both index arrays NULL: alltoallv_init. */
NBR_API int nbr_neighbor_alltoallv_init_ext(const void *sendbuf,
                                            const int *sendcounts,
                                            const int *sdispls,
                                            MPI_Datatype sendtype, void *recvbuf,
                                            const int *recvcounts,
                                            const int *rdispls,
                                            MPI_Datatype recvtype,
                                            const long *send_global_idx,
                                            const long *recv_global_idx,
                                            MPI_Comm comm, MPI_Info info,
                                            nbr_request_t *request);

NBR_API int nbr_start(nbr_request_t *request);
NBR_API int nbr_wait(nbr_request_t *request);
/* *flag is set to 1 when the operation completed, else 0. */
NBR_API int nbr_test(nbr_request_t *request, int *flag);
/* Frees an inactive persistent request (or a completed one); sets
 * *request to NBR_REQUEST_NULL. Freeing an active request is an error. */
NBR_API int nbr_request_free(nbr_request_t *request);
/* What a request is: the communicator its call named, whether it is
 * persistent, and whether it is active (started and not completed). */
NBR_API int nbr_request_query(nbr_request_t request, MPI_Comm *comm,
                              int *persistent, int *active);

/* --------------------------------------------------------- counters */

/* Traffic this rank sent through nbrcoll on one communicator since it was
 * set up (or last reset). Messages to the rank itself are local copies. */
typedef struct nbr_counters {
    uint64_t calls;               /* collective operations completed */
    uint64_t msgs_intra_node;     /* messages to ranks on this rank's node */
    uint64_t bytes_intra_node;
    uint64_t msgs_inter_node;     /* messages to ranks on other nodes */
    uint64_t bytes_inter_node;
    uint64_t msgs_off_socket;     /* messages leaving this rank's CPU socket */
    uint64_t bytes_off_socket;    /*   (inter-node ones included) */
    uint64_t local_copies;        /* copies inside this rank's memory */
    uint64_t bytes_local_copies;
    /* device layer (all 0 when it is off): */
    uint64_t bytes_ipc_pulled;    /* received by copying from a node peer's memory */
    uint64_t bytes_staged;        /* sent or received through pinned host staging */
    uint64_t copy_batches;        /* batched copy launches (one kernel each) */
} nbr_counters_t;

NBR_API int nbr_get_counters(MPI_Comm comm, nbr_counters_t *counters);
NBR_API int nbr_reset_counters(MPI_Comm comm);

/* Node and socket layout nbrcoll uses on comm (virtual or real). */
NBR_API int nbr_comm_locality(MPI_Comm comm, int *num_nodes, int *my_node,
                              int *my_socket);

/* Where one rank of comm lives, as every rank of comm sees it. */
typedef struct nbr_rank_place {
    int node;       /* 0 .. num_nodes-1 */
    int local_rank; /* index among the ranks of its node */
    int socket;     /* CPU socket, unique over the job */
    int numa;       /* NUMA domain on its node; -1 unknown */
    int gpu;        /* GPU index in its node's model; -1 none */
    int package;    /* its GPU's package (peer group) on the node; -1 none */
    int leader;     /* 1 when its GPU leads its package */
    int peer_rank;  /* lowest rank of its node using the peer GPU; -1 none */
} nbr_rank_place_t;

NBR_API int nbr_comm_place(MPI_Comm comm, int rank, nbr_rank_place_t *place);

#ifdef __cplusplus
}
#endif

#endif /* NBRCOLL_H */
