#include "alg/select.h"

#include <math.h>

const nbr_algorithm_t *nbr_select_baseline(int library_usable)
{
    for (int i = 0; library_usable && i < nbr_algorithm_count(); i++)
        if (nbr_algorithm_at(i)->library)
            return nbr_algorithm_at(i);
    return nbr_baseline_algorithm();
}

int nbr_select_one_message_per_edge(const nbr_algorithm_t *algorithm)
{
    return algorithm->library || algorithm == nbr_baseline_algorithm();
}

int nbr_select_eligible(const nbr_algorithm_t *algorithm, nbr_collective_t coll, int nranks,
                        int whole_graph_ranks, int library_usable)
{
    if (!(algorithm->collectives & NBR_COLL_BIT(coll)))
        return 0;
    /* naive and mpi are one plan: one or the other runs it */
    const nbr_algorithm_t *baseline = nbr_select_baseline(library_usable);
    if (nbr_select_one_message_per_edge(algorithm) && algorithm != baseline)
        return 0;
    return !(algorithm->needs & NBR_NEEDS_WHOLE_GRAPH) || nranks <= whole_graph_ranks;
}

static int priced(double seconds)
{
    return seconds >= 0 && isfinite(seconds);
}

int nbr_select_choose(const double *seconds, int n, int fallback)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (priced(seconds[i]) && (best < 0 || seconds[i] < seconds[best]))
            best = i;
    if (best < 0 || fallback < 0 || fallback >= n || !priced(seconds[fallback]))
        return best;
    return seconds[best] < seconds[fallback] * (1 - NBR_SELECT_MARGIN) ? best : fallback;
}

int nbr_select_trial_sides(const double *job, const double *slowest, int n, int best, int fallback,
                           int max, int *taken)
{
    int num = 0;
    if (best < 0 || best >= n || max < 1)
        return 0;
    taken[num++] = best;
    if (fallback >= 0 && fallback < n && fallback != best && num < max)
        taken[num++] = fallback;
    while (num < max) {
        int next = -1;
        for (int k = 0; k < n; k++) {
            int fresh = priced(job[k]) && job[k] <= NBR_TRIAL_PRICE_FACTOR * job[best];
            for (int t = 0; t < num && fresh; t++)
                fresh = k != taken[t] &&
                        (job[k] != job[taken[t]] || slowest[k] != slowest[taken[t]]);
            if (fresh && (next < 0 || job[k] < job[next]))
                next = k;
        }
        if (next < 0)
            break;
        taken[num++] = next;
    }
    return num;
}
