#include "alg/select.h"

#include <math.h>

int nbr_select_eligible(const nbr_algorithm_t *algorithm, nbr_collective_t coll, int nranks,
                        int whole_graph_ranks)
{
    if (!(algorithm->collectives & NBR_COLL_BIT(coll)))
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
