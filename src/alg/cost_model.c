#include "alg/cost_model.h"

#include <math.h>
#include <nbrcoll.h>

static int check(const nbr_cost_params_t *p)
{
    if (!p || !(p->n >= 1) || !(p->L >= 1) || !(p->S >= 1) || !(p->delta >= 0) ||
        !(p->delta <= 1) || !(p->m >= 0) || !(p->alpha >= 0) || !(p->beta > 0))
        return NBR_ERR_ARG; /* the negated forms also reject NaN */
    return NBR_SUCCESS;
}

int nbr_cost_halving(const nbr_cost_params_t *p, nbr_cost_estimate_t *out)
{
    int rc = check(p);
    if (rc != NBR_SUCCESS || !out)
        return NBR_ERR_ARG;
    double steps = p->n > p->L ? ceil(log2(p->n / p->L)) : 0;
    double off_peers = p->delta * (p->n > p->L ? p->n - p->L : 0);
    out->halving_steps = steps;
    out->msgs_off = fmin(steps, off_peers);
    out->msgs_in = (1 - pow(1 - p->delta, steps + 2)) * p->L;
    out->bytes_in = p->delta * out->msgs_in * p->m;
    /* message sizes double each step in the worst case */
    out->t_off = out->msgs_off * p->alpha + (pow(2, out->msgs_off + 1) - 1) * p->m / p->beta;
    out->t_in = out->msgs_in * (p->alpha + out->bytes_in / p->beta);
    out->t_total = 2 * p->S * p->L * (out->t_off + out->t_in);
    return NBR_SUCCESS;
}

int nbr_cost_naive(const nbr_cost_params_t *p, double *msgs, double *t_total)
{
    if (check(p) != NBR_SUCCESS || !msgs || !t_total)
        return NBR_ERR_ARG;
    *msgs = p->delta * p->n;
    *t_total = p->S * p->L * 2 * p->delta * p->n * (p->alpha + p->m / p->beta);
    return NBR_SUCCESS;
}
