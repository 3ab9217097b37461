/* Helpers every builder uses (builder.h). */
#include "alg/builder.h"

#include "base/grow.h"
#include "base/log.h"

#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

int nbr_add_self_copies(const nbr_plan_input_t *in, nbr_plan_t *plan)
{
    const nbr_layout_t *layout = in->layout;
    int next_out = 0, rc = NBR_SUCCESS;
    for (int i = 0; i < in->indegree && rc == NBR_SUCCESS; i++) {
        if (in->sources[i] != in->rank)
            continue;
        while (next_out < in->outdegree && in->destinations[next_out] != in->rank)
            next_out++;
        if (next_out == in->outdegree) {
            NBR_ERROR("rank %d lists itself more often as source than as destination",
                      in->rank);
            return NBR_ERR_TOPOLOGY;
        }
        const nbr_slot_t *src = &layout->send[nbr_send_slot_of(layout, next_out++)];
        const nbr_slot_t *dst = &layout->recv[i];
        /* one edge's rule (a shorter block fills the slot's front); a
         * longer one is this rank's error, its peers still get theirs */
        if (src->bytes > dst->bytes) {
            NBR_ERROR("self-loop: %zu bytes sent, %zu expected: send and receive signatures "
                      "differ", src->bytes, dst->bytes);
            plan->local_status = NBR_ERR_TYPE_MISMATCH;
        } else if (src->bytes > 0) {
            rc = nbr_plan_add_copy(plan, NBR_BUF_RECV, dst->offset, NBR_BUF_SEND,
                                   src->offset, src->bytes);
        }
    }
    while (next_out < in->outdegree && in->destinations[next_out] != in->rank)
        next_out++;
    if (rc == NBR_SUCCESS && next_out < in->outdegree) {
        NBR_ERROR("rank %d lists itself more often as destination than as source",
                  in->rank);
        return NBR_ERR_TOPOLOGY;
    }
    return rc;
}

int nbr_list_occurrence(const int *list, int index)
{
    int k = 0;
    for (int i = 0; i < index; i++)
        k += list[i] == list[index];
    return k;
}

int nbr_list_find_kth(const int *list, int n, int value, int k)
{
    for (int i = 0; i < n; i++)
        if (list[i] == value && k-- == 0)
            return i;
    return -1;
}

int nbr_distinct_in_lists(int n, const int *out_offsets, const int *out_targets, int keep_self,
                          int **offsets, int **sources)
{
    int *last = malloc(((size_t)n + 1) * sizeof(int));
    int *at = calloc((size_t)n + 2, sizeof(int));
    int *from = malloc(((size_t)out_offsets[n] + 1) * sizeof(int));
    if (!last || !at || !from) {
        free(last);
        free(at);
        free(from);
        return NBR_ERR_NOMEM;
    }
    /* two passes over the edges, counting then placing; at[t + 1] is where
     * t's list fills from during the second */
    for (int pass = 0; pass < 2; pass++) {
        for (int t = 0; t < n; t++)
            last[t] = -1;
        for (int p = 0; p < n; p++) /* ascending p: the lists come out sorted */
            for (int e = out_offsets[p]; e < out_offsets[p + 1]; e++) {
                int t = out_targets[e];
                if (last[t] == p || (t == p && !keep_self))
                    continue;
                last[t] = p;
                if (pass == 0)
                    at[t + 2]++;
                else
                    from[at[t + 1]++] = p;
            }
        if (pass == 0)
            for (int t = 0; t < n; t++)
                at[t + 2] += at[t + 1];
    }
    free(last);
    *offsets = at;
    *sources = from;
    return NBR_SUCCESS;
}

typedef struct source_at {
    int source, position;
} source_at_t;

static int by_source_then_position(const void *x, const void *y)
{
    const source_at_t *a = x, *b = y;
    if (a->source != b->source)
        return a->source < b->source ? -1 : 1;
    return (a->position > b->position) - (a->position < b->position);
}

int nbr_in_index_build(const int *sources, int n, nbr_in_index_t *index)
{
    *index = (nbr_in_index_t){.sources = sources, .n = n};
    if (!(index->order = malloc(((size_t)n + 1) * sizeof(int))))
        return NBR_ERR_NOMEM;
    source_at_t *pairs = malloc(((size_t)n + 1) * sizeof(source_at_t));
    if (!pairs) {
        nbr_in_index_free(index);
        return NBR_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++)
        pairs[i] = (source_at_t){sources[i], i};
    qsort(pairs, (size_t)n, sizeof(source_at_t), by_source_then_position);
    for (int i = 0; i < n; i++)
        index->order[i] = pairs[i].position;
    free(pairs);
    return NBR_SUCCESS;
}

int nbr_in_index_find(const nbr_in_index_t *index, int src, int *count)
{
    int lo = 0, hi = index->n; /* the first position whose source >= src */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (index->sources[index->order[mid]] < src)
            lo = mid + 1;
        else
            hi = mid;
    }
    int end = lo;
    while (end < index->n && index->sources[index->order[end]] == src)
        end++;
    *count = end - lo;
    return lo;
}

void nbr_in_index_free(nbr_in_index_t *index)
{
    free(index->order);
    index->order = NULL;
}

int nbr_list_count(const int *list, int n, int value)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += list[i] == value;
    return k;
}

static int heavier_first(const void *x, const void *y)
{
    const nbr_weighted_pair_t *p = x, *q = y;
    if (p->weight != q->weight)
        return q->weight - p->weight;
    if (p->a != q->a)
        return p->a - q->a;
    return p->b - q->b;
}

int nbr_pair_list_add(nbr_pair_list_t *list, int weight, int a, int b)
{
    int rc = nbr_grow((void **)&list->pairs, &list->capacity, list->num + 1, 64,
                      sizeof(nbr_weighted_pair_t));
    if (rc == NBR_SUCCESS)
        list->pairs[list->num++] = (nbr_weighted_pair_t){weight, a, b};
    return rc;
}

/* Pairs added in (a, b) order, as the builders add them, need only a
 * stable counting sort by weight, into the spare array (kept from call to
 * call, as the list is, so that big lists do not fault in fresh pages each
 * round): linear where qsort was most of the pattern's time. */
static int counting_sort(nbr_pair_list_t *list)
{
    const nbr_weighted_pair_t *pairs = list->pairs;
    int n = list->num, max_weight = 0;
    for (int i = 0; i < n; i++) {
        if (pairs[i].weight < 0 ||
            (i > 0 && (pairs[i - 1].a > pairs[i].a ||
                       (pairs[i - 1].a == pairs[i].a && pairs[i - 1].b >= pairs[i].b))))
            return 0;
        if (pairs[i].weight > max_weight)
            max_weight = pairs[i].weight;
    }
    if (max_weight > n)
        return 0;
    if (list->spare_capacity < n) {
        free(list->spare);
        list->spare_capacity = 0;
        if (!(list->spare = malloc((size_t)list->capacity * sizeof(nbr_weighted_pair_t))))
            return 0;
        list->spare_capacity = list->capacity;
    }
    int *first = calloc((size_t)max_weight + 2, sizeof(int));
    if (!first)
        return 0;
    for (int i = 0; i < n; i++) /* heaviest first: weight w starts after all heavier */
        first[max_weight - pairs[i].weight + 1]++;
    for (int w = 1; w <= max_weight + 1; w++)
        first[w] += first[w - 1];
    for (int i = 0; i < n; i++)
        list->spare[first[max_weight - pairs[i].weight]++] = pairs[i];
    free(first);
    nbr_weighted_pair_t *sorted = list->spare;
    int sorted_capacity = list->spare_capacity;
    list->spare = list->pairs;
    list->spare_capacity = list->capacity;
    list->pairs = sorted;
    list->capacity = sorted_capacity;
    return 1;
}

void nbr_pair_list_sort(nbr_pair_list_t *list)
{
    if (!counting_sort(list))
        qsort(list->pairs, (size_t)list->num, sizeof(nbr_weighted_pair_t), heavier_first);
}

void nbr_pair_list_free(nbr_pair_list_t *list)
{
    free(list->pairs);
    free(list->spare);
    memset(list, 0, sizeof(*list));
}
