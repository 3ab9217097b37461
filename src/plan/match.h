/* A whole job's plans seen together: every op numbered globally, and each
 * send paired with the receive MPI would match it with (on one (source,
 * destination, tag) channel the i-th send posted matches the i-th receive
 * posted). The verifier and the simulator both start from here. */
#ifndef NBR_MATCH_H
#define NBR_MATCH_H

#include "plan/plan.h"

typedef struct nbr_job_ops {
    int nranks;
    const nbr_plan_t *plans;
    int total;    /* ops of all ranks */
    int *base;    /* rank -> global index of its first op (nranks + 1) */
    int *owner;   /* global op -> rank */
    int *phase;   /* global op -> phase in its rank's plan */
    int *partner; /* global op -> the op it matches, -1 for copies */
} nbr_job_ops_t;

/* Numbers the ops of plans[0 .. nranks) (partners -1). Free with
 * nbr_job_ops_free whatever it returns. */
int nbr_job_ops_index(nbr_job_ops_t *ops, const nbr_plan_t *plans, int nranks);
/* Pairs the numbered ops. A send or receive without a partner (the job
 * would hang) or a pair whose sizes differ is NBR_ERR_INTERNAL, described
 * in message. */
int nbr_job_ops_pair(nbr_job_ops_t *ops, char *message, size_t message_size);
/* Both. */
int nbr_job_ops_match(nbr_job_ops_t *ops, const nbr_plan_t *plans, int nranks, char *message,
                      size_t message_size);
void nbr_job_ops_free(nbr_job_ops_t *ops);

static inline const nbr_op_t *nbr_job_op(const nbr_job_ops_t *ops, int g)
{
    int r = ops->owner[g];
    return &ops->plans[r].ops[g - ops->base[r]];
}

#endif
