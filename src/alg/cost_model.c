#include "alg/cost_model.h"

#include "alg/registry.h"

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

int nbr_cost_params_of(const nbr_cost_query_t *query, nbr_cost_params_t *p)
{
    const nbr_plan_input_t *in = query->input;
    const nbr_layout_t *layout = in->layout;
    const nbr_locality_t *loc = in->locality;
    int n = in->nranks, same_socket = n, same_node = n;
    if (loc) {
        same_socket = same_node = 0;
        for (int r = 0; r < n; r++) {
            same_socket += loc->socket_of[r] == loc->socket_of[in->rank];
            same_node += loc->node_of[r] == loc->node_of[in->rank];
        }
    }
    double bytes = 0;
    for (int i = 0; i < layout->num_send_slots; i++)
        bytes += (double)layout->send[i].bytes;
    *p = (nbr_cost_params_t){
        .n = n, .L = same_socket, .S = ceil((double)same_node / same_socket),
        .delta = n > 1 ? fmin(1.0, (double)in->outdegree / (n - 1)) : 0,
        .m = layout->num_send_slots > 0 ? bytes / layout->num_send_slots : 0,
        .alpha = query->alpha, .beta = query->beta};
    return check(p);
}
