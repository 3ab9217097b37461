/* Helpers every plan builder uses. */
#ifndef NBR_BUILDER_H
#define NBR_BUILDER_H

#include "alg/registry.h"

/* The send slot of out-edge j: its own in alltoallv, the one block else. */
static inline int nbr_send_slot_of(const nbr_layout_t *layout, int out_index)
{
    return layout->coll == NBR_COLL_ALLTOALLV ? out_index : 0;
}

/* The baseline plan, one message per edge; other builders fall back to it
 * for the cases they do not improve. */
int nbr_build_naive(const nbr_plan_input_t *input, nbr_plan_t *plan);

/* Self-loops as local copies: the k-th self out-edge feeds the k-th self
 * in-edge (every builder's rule; errors on mismatched sizes or counts). */
int nbr_add_self_copies(const nbr_plan_input_t *input, nbr_plan_t *plan);

/* Greedy matchings (halving's agents, combining's friends) take pairs
 * heaviest first; ties go to the lower a, then the lower b, so every rank
 * computes the same matching. */
typedef struct nbr_weighted_pair {
    int weight, a, b;
} nbr_weighted_pair_t;

/* A list of candidate pairs, reused round after round (clear: num = 0). */
typedef struct nbr_pair_list {
    nbr_weighted_pair_t *pairs;
    int num, capacity;
    nbr_weighted_pair_t *spare; /* the sort's */
    int spare_capacity;
} nbr_pair_list_t;

int nbr_pair_list_add(nbr_pair_list_t *list, int weight, int a, int b);
/* Heaviest first, then lower a, then lower b: linear when the pairs were
 * added in (a, b) order. */
void nbr_pair_list_sort(nbr_pair_list_t *list);
void nbr_pair_list_free(nbr_pair_list_t *list);

/* The transpose of a whole graph's out-lists (CSR over n ranks): every
 * rank's distinct in-neighbors, ascending, itself included only when
 * keep_self (a self-loop). *offsets has n + 2 entries, (*offsets)[t] ..
 * (*offsets)[t + 1] the list of t; free both. */
int nbr_distinct_in_lists(int n, const int *out_offsets, const int *out_targets, int keep_self,
                          int **offsets, int **sources);

/* Repeated edges: the k-th edge to a rank pairs with the k-th edge from it,
 * so neighbor lists are read by occurrence. */
int nbr_list_occurrence(const int *list, int index); /* k of list[index] */
int nbr_list_find_kth(const int *list, int n, int value, int k); /* position or -1 */
int nbr_list_count(const int *list, int n, int value);

/* A rank's in-edges by source: the positions of sources[0..n) ordered by
 * (source, position), so that a builder finds every slot of one sender in
 * log time (relay plans deliver each received block to all its slots; a
 * scan of the whole in-list per block cost O(indegree^2) per rank). */
typedef struct nbr_in_index {
    int *order;
    const int *sources;
    int n;
} nbr_in_index_t;

int nbr_in_index_build(const int *sources, int n, nbr_in_index_t *index);
/* Where src's positions start in index->order, ascending (*count of them;
 * 0 when src sends this rank nothing). */
int nbr_in_index_find(const nbr_in_index_t *index, int src, int *count);
void nbr_in_index_free(nbr_in_index_t *index);

#endif
