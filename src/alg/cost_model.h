/* The Hockney cost model of distance-halving-allgather.txt (Section V,
 * Eq. 1-8) for naive and distance halving on a random sparse graph:
 * n ranks, S sockets per node of L ranks each, edge density delta, m bytes
 * per message, alpha seconds per message, beta bytes per second. Pure
 * arithmetic, for an automatic algorithm selector and for reports.
 *
 * One reading differs from the printed Eq. 1. The paper counts
 * ceil(log2(n/L)) + 1 halving steps; the halving itself stops after
 * ceil(log2(n/L)) of them (2,000 ranks, L = 20: 2000 -> 1000 -> ... -> 16
 * is 7 halvings), the extra step being the intra-socket one. Off-socket
 * messages are therefore min(ceil(log2(n/L)), delta (n - L)), which gives
 * the paper's own worked example (7 off-socket messages, at most 27 in
 * all). Eq. 2 is kept as printed (exponent ceil(log2(n/L)) + 2); for that
 * example it gives 19.2 intra-socket messages where the text says 16, so
 * the model's total is 26.2 against the text's "23": the text's 16 does
 * not follow from Eq. 2 under any reading of the logarithm we found. */
#ifndef NBR_COST_MODEL_H
#define NBR_COST_MODEL_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nbr_cost_params {
    double n;      /* ranks */
    double L;      /* ranks per socket */
    double S;      /* sockets per node */
    double delta;  /* edge density, 0..1 */
    double m;      /* bytes per message */
    double alpha;  /* seconds per message */
    double beta;   /* bytes per second */
} nbr_cost_params_t;

typedef struct nbr_cost_estimate {
    double halving_steps; /* ceil(log2(n / L)), 0 when n <= L */
    double msgs_off;      /* off-socket messages per rank (Eq. 1) */
    double msgs_in;       /* intra-socket messages per rank (Eq. 2) */
    double bytes_in;      /* bytes per intra-socket message (Eq. 3) */
    double t_off, t_in;   /* seconds per rank (Eq. 6, 7) */
    double t_total;       /* the collective (Eq. 8) */
} nbr_cost_estimate_t;

/* Distance halving. NBR_ERR_ARG for parameters out of range. */
int nbr_cost_halving(const nbr_cost_params_t *p, nbr_cost_estimate_t *out);

/* Naive: messages per rank (delta n) and the collective's time (Eq. 4-5). */
int nbr_cost_naive(const nbr_cost_params_t *p, double *msgs, double *t_total);

/* The model's parameters for one rank's call (registry.h): n ranks; L the
 * ranks of its socket and S its node's ranks over L (one socket of n
 * without a locality); delta its out-degree over n - 1 (at most 1); m its
 * mean send block; alpha and beta as asked. NBR_ERR_ARG when out of the
 * model's range. */
struct nbr_cost_query;
int nbr_cost_params_of(const struct nbr_cost_query *query, nbr_cost_params_t *p);

#ifdef __cplusplus
}
#endif

#endif
