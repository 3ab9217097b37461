/* Growing arrays: the one realloc pattern of the library; and the one
 * qsort order of ints. */
#ifndef NBR_GROW_H
#define NBR_GROW_H

#include <nbrcoll.h>
#include <stdlib.h>
#include <string.h>

/* Makes *array hold at least `needed` elements of `size` bytes, doubling
 * (from at least `minimum`) so that appending stays amortised O(1).
 * Returns NBR_SUCCESS or NBR_ERR_NOMEM (the array is then unchanged). */
static inline int nbr_grow(void **array, int *capacity, int needed, int minimum,
                           size_t size)
{
    if (needed <= *capacity)
        return NBR_SUCCESS;
    int grown_capacity = *capacity > minimum ? *capacity : minimum;
    while (grown_capacity < needed)
        grown_capacity *= 2;
    void *grown = realloc(*array, (size_t)grown_capacity * size);
    if (!grown)
        return NBR_ERR_NOMEM;
    *array = grown;
    *capacity = grown_capacity;
    return NBR_SUCCESS;
}

/* Room for one element more in *array, which holds `count`: exactly
 * count + 1, for short lists that are kept (no spare capacity to carry). */
static inline int nbr_grow_exact(void **array, int count, size_t size)
{
    void *grown = realloc(*array, ((size_t)count + 1) * size);
    if (!grown)
        return NBR_ERR_NOMEM;
    *array = grown;
    return NBR_SUCCESS;
}

/* A copy of n ints in an allocation of its own (never NULL for n = 0);
 * NULL when out of memory. */
static inline int *nbr_ints_dup(const int *src, int n)
{
    int *copy = malloc(((size_t)n + 1) * sizeof(int));
    if (copy && n > 0)
        memcpy(copy, src, (size_t)n * sizeof(int));
    return copy;
}

/* qsort's comparison for ascending ints. */
static inline int nbr_compare_ints(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

#endif
