/* Automatic selection over a communicator (alg/select.h has the rule):
 * every rank builds its own plan under every candidate algorithm and
 * prices it with the simulator's one-rank estimate on the configured
 * machine; an allreduce (max) makes the ranks' prices the job's, and one
 * (sum) adds up the bytes through every node's interfaces, which a rank
 * alone cannot know; every rank takes the same cheapest. Decisions are
 * kept per call signature. */
#include "front/select.h"

#include "alg/select.h"
#include "base/log.h"
#include "plan/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* allgather and alltoall: the block size, which MPI makes the same on
 * every rank (from the call's count and type: a rank without neighbors
 * must see the same signatures as the others, or it would skip a pricing
 * its peers make); the v- and w-forms: one decision per collective (see
 * nbr_decision_t). */
static size_t signature(nbr_call_kind_t kind, size_t block_bytes)
{
    return nbr_call_uniform(kind) ? block_bytes : 0;
}

nbr_decision_t *nbr_comm_decision(nbr_comm_t *state, nbr_call_kind_t kind, size_t block_bytes)
{
    for (int i = 0; i < NBR_DECISIONS; i++) {
        nbr_decision_t *d = &state->decisions[i];
        if (d->valid && d->kind == kind && d->block_bytes == signature(kind, block_bytes))
            return d;
    }
    return NULL;
}

/* No trial for calls priced above this: a trial runs a few dozen calls, some
 * of slower plans, which at seconds per call a program calling a few times
 * would not win back. Up to it the trial costs a few seconds at most, and
 * it is needed there: on one node of 8, Moore d3 r1 with 4 MiB blocks
 * (60-90 ms a call), halving beat MPI by 12-18 % in two grids where the
 * price (and so auto without a trial) chose MPI. It was 100 ms until the
 * emulated 4 x 4 cluster priced leader and halving alike at 107 ms with 1
 * MiB blocks (RSG 0.4, 0.7, Moore d2 r2: both at the interfaces' floor),
 * where registry order then kept leader; on RSG 0.7 its median was
 * 0.92-0.94x of halving's in three grids. */
#define NBR_TRIAL_MAX_SECONDS 0.2

static void trial_sides(const nbr_comm_t *state, const double *job, const double *slowest,
                        const nbr_algorithm_t *const *candidates, int n, int best, int fallback,
                        nbr_decision_t *d)
{
    int taken[NBR_TRIAL_SIDES];
    int num = nbr_select_trial_sides(job, slowest, n, best, fallback, NBR_TRIAL_SIDES, taken);
    d->num_sides = 0;
    if (state->config.auto_trials <= 0 || state->nranks < 2 || num < 2 ||
        job[best] > NBR_TRIAL_MAX_SECONDS)
        return;
    for (int t = 0; t < num; t++)
        d->sides[t] = candidates[taken[t]];
    d->num_sides = num;
}

static void keep_decision(nbr_comm_t *state, const nbr_priced_call_t *call, const double *job,
                          const double *slowest, const nbr_algorithm_t *const *candidates, int n,
                          int best, int fallback)
{
    nbr_decision_t *slot = &state->decisions[0];
    for (int i = 0; i < NBR_DECISIONS; i++) {
        nbr_decision_t *d = &state->decisions[i];
        if (!d->valid || d->last_use < slot->last_use)
            slot = d;
        if (!d->valid)
            break;
    }
    if (slot->valid && slot->num_sides > 0)
        state->trials--; /* replaced while on trial */
    *slot = (nbr_decision_t){.valid = 1, .kind = call->kind,
                             .block_bytes = signature(call->kind, call->block_bytes),
                             .algorithm = candidates[best], .last_use = ++state->decision_clock};
    trial_sides(state, job, slowest, candidates, n, best, fallback, slot);
    if (slot->num_sides > 0)
        state->trials++;
}

/* This rank's price of algorithm's plan for layout in parts (seconds
 * INFINITY when it cannot build one). allgatherv through relays: the blocks it
 * forwards are priced at this rank's own size (their real sizes are only
 * known from the size round the call runs), plus that round. */
static void price(nbr_comm_t *state, const nbr_algorithm_t *algorithm,
                  const nbr_layout_t *layout, const nbr_priced_call_t *call,
                  nbr_sim_parts_t *parts)
{
    const nbr_value_index_t *values = call->values;
    int device_buffers = call->device_buffers;
    double started = MPI_Wtime();
    nbr_sim_parts_t round;
    const void *pattern = NULL;
    nbr_plan_t plan, sizes_plan;
    nbr_layout_t sizes = {0};
    size_t *block_sizes = NULL, *offset_of = NULL;
    int relay = layout->coll == NBR_COLL_ALLGATHERV && algorithm->size_plan;
    void *facts = NULL;
    uint64_t digest = 0;
    *parts = (nbr_sim_parts_t){.seconds = INFINITY};
    /* collective (every rank, whatever fails on it, before any early
     * return); a rank that cannot price it rules it out for all */
    int facts_rc = nbr_comm_call_facts(state, algorithm, layout, values, &facts, &digest);
    if ((facts_rc != NBR_SUCCESS && facts_rc != NBR_ERR_TYPE_MISMATCH) ||
        nbr_comm_pattern(state, algorithm, &pattern) != NBR_SUCCESS) {
        nbr_comm_free_call_facts(algorithm, facts);
        return;
    }
    nbr_plan_input_t input = nbr_comm_input_for(state, algorithm, layout);
    input.call_facts = facts;
    nbr_sim_input_t machine = {.locality = &state->locality, .machine = &state->config.machine,
                               .device_buffers = device_buffers};
    if (relay) {
        block_sizes = malloc(((size_t)state->nranks + 1) * sizeof(size_t));
        offset_of = malloc(((size_t)state->nranks + 1) * sizeof(size_t));
        if (!block_sizes || !offset_of ||
            nbr_layout_init(&sizes, NBR_COLL_ALLGATHER, 1, state->indegree) != NBR_SUCCESS)
            goto out;
        for (int r = 0; r < state->nranks; r++)
            block_sizes[r] = layout->send[0].bytes;
        sizes.send[0] = (nbr_slot_t){0, sizeof(uint64_t)};
        for (int i = 0; i < state->indegree; i++)
            sizes.recv[i] = (nbr_slot_t){(size_t)i * sizeof(uint64_t), sizeof(uint64_t)};
        input.block_sizes = block_sizes;
    }
    if (nbr_build_plan(algorithm, &input, &plan) != NBR_SUCCESS)
        goto out;
    nbr_sim_rank_parts(&machine, &plan, parts);
    nbr_plan_free(&plan);
    /* a call facts exchange is a plan's set-up every rank pays anew for
     * each plan (for a blocking call, at every call): its measured time,
     * spread over the runs the plan is expected to make */
    if (facts)
        parts->seconds += (MPI_Wtime() - started) / (call->expected_starts > 0
                                                          ? call->expected_starts
                                                          : 1);
    if (relay) {
        nbr_plan_input_t round_input = nbr_comm_input_for(state, algorithm, &sizes);
        if (nbr_build_size_plan(algorithm, &round_input, &sizes_plan, offset_of) !=
            NBR_SUCCESS) {
            parts->seconds = INFINITY;
            goto out;
        }
        nbr_sim_rank_parts(&machine, &sizes_plan, &round);
        nbr_plan_free(&sizes_plan);
        parts->seconds += round.seconds;
        parts->net_out_bytes += round.net_out_bytes;
        parts->net_in_bytes += round.net_in_bytes;
    }
out:
    nbr_comm_free_call_facts(algorithm, facts);
    nbr_layout_free(&sizes);
    free(block_sizes);
    free(offset_of);
}

static void log_prices(const nbr_comm_t *state, nbr_call_kind_t kind, const nbr_layout_t *layout,
                       const double *job, const nbr_algorithm_t *const *candidates, int n,
                       int chosen)
{
    if (!nbr_log_enabled(NBR_LOG_INFO))
        return;
    char text[512] = "";
    size_t used = 0;
    for (int k = 0; k < n && used < sizeof text; k++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%s %.1f us",
                                 k ? ", " : "", candidates[k]->name, job[k] * 1e6);
    NBR_INFO("comm %d: auto chose %s for %s (block %zu bytes, machine %s): %s", state->id,
             candidates[chosen]->name, nbr_call_name(kind),
             layout->num_send_slots > 0 ? layout->send[0].bytes : 0, state->config.machine.name,
             text);
}

int nbr_select_local_prices(nbr_comm_t *state, const nbr_layout_t *layout,
                            const nbr_priced_call_t *call, const nbr_algorithm_t **candidates,
                            nbr_sim_parts_t *prices, int *count, int *fallback)
{
    unsigned needs = 0;
    *count = 0;
    *fallback = -1;
    for (int i = 0; i < nbr_algorithm_count(); i++) {
        const nbr_algorithm_t *a = nbr_algorithm_at(i);
        if (!nbr_select_eligible(a, layout->coll, state->nranks,
                                 state->config.auto_whole_graph_ranks,
                                 nbr_comm_library_usable(state, layout->coll)) ||
            (a->needs_values && !call->values))
            continue;
        if (a == nbr_select_baseline(nbr_comm_library_usable(state, layout->coll)))
            *fallback = *count;
        needs |= a->needs;
        candidates[(*count)++] = a;
    }
    int rc = nbr_comm_provide(state, needs); /* collective, agreed */
    /* a rank that cannot plan a candidate prices it at infinity, so the
     * job's price (the max) rules it out on every rank */
    for (int k = 0; rc == NBR_SUCCESS && k < *count; k++)
        price(state, candidates[k], layout, call, &prices[k]);
    return rc;
}

int nbr_select_job_prices(nbr_comm_t *state, const nbr_sim_parts_t *mine, int n, double *job,
                          double *slowest)
{
    int nodes = state->locality.num_nodes > 0 ? state->locality.num_nodes : 1;
    int node = state->locality.node_of ? state->locality.node_of[state->rank] : 0;
    size_t cells = (size_t)n * (size_t)nodes * 2; /* [candidate][node][out, in] */
    double *seconds = malloc(((size_t)n + 1) * sizeof(double));
    double *bytes = calloc(cells + 1, sizeof(double));
    double *sums = malloc((cells + 1) * sizeof(double));
    int rc = nbr_agree(state->comm, seconds && bytes && sums ? NBR_SUCCESS : NBR_ERR_NOMEM);
    if (rc != NBR_SUCCESS)
        goto out;
    for (int k = 0; k < n; k++) {
        seconds[k] = mine[k].seconds;
        bytes[((size_t)k * nodes + node) * 2] = mine[k].net_out_bytes;
        bytes[((size_t)k * nodes + node) * 2 + 1] = mine[k].net_in_bytes;
    }
    int mrc = MPI_Allreduce(seconds, job, n, MPI_DOUBLE, MPI_MAX, state->comm);
    if (mrc == MPI_SUCCESS)
        mrc = MPI_Allreduce(bytes, sums, (int)cells, MPI_DOUBLE, MPI_SUM, state->comm);
    if (mrc != MPI_SUCCESS) {
        rc = nbr_mpi_failed("MPI_Allreduce", mrc);
        goto out;
    }
    if (slowest) /* before the interfaces' bound is folded in */
        memcpy(slowest, job, (size_t)n * sizeof(double));
    for (int k = 0; k < n; k++)
        job[k] = nbr_sim_job_price(&state->config.machine, job[k],
                                   &sums[(size_t)k * nodes * 2], nodes);
out:
    free(seconds);
    free(bytes);
    free(sums);
    return rc;
}

/* The side a trial's next call runs. Round k starts at its k-th side, so
 * that no side always follows the same one (the bench's fixed order favoured
 * its first place by 2.5-12 %). On one node of 8, Moore d3 r1 at 16-64 KiB,
 * the trial times combining 25-35 % faster and halving 10-20 % slower than
 * the bench does, in a fixed order and in this one alike: that bias is
 * something else, not yet found. */
int nbr_trial_side(const nbr_decision_t *trial)
{
    int sides = trial->num_sides, round = trial->trial_calls / sides;
    return (trial->trial_calls + round) % sides;
}

int nbr_comm_select(nbr_comm_t *state, const nbr_priced_call_t *call, const nbr_layout_t *layout,
                    int persistent, int blocking, const nbr_algorithm_t **chosen,
                    nbr_decision_t **trial)
{
    nbr_call_kind_t kind = call->kind;
    nbr_decision_t *known = persistent ? NULL : nbr_comm_decision(state, kind, call->block_bytes);
    *trial = NULL;
    if (known) {
        known->last_use = ++state->decision_clock;
        *chosen = known->algorithm;
        if (blocking && known->num_sides > 0) {
            *chosen = known->sides[nbr_trial_side(known)];
            *trial = known;
        }
        return NBR_SUCCESS;
    }
    int count = nbr_algorithm_count(), n = 0, fallback = -1, rc = NBR_SUCCESS;
    const nbr_algorithm_t **candidates = malloc((size_t)count * sizeof(*candidates));
    nbr_sim_parts_t *mine = malloc(((size_t)count + 1) * sizeof(*mine));
    double *job = malloc(((size_t)count + 1) * sizeof(double));
    double *slowest = malloc(((size_t)count + 1) * sizeof(double));
    rc = nbr_agree(state->comm,
                   candidates && mine && job && slowest ? NBR_SUCCESS : NBR_ERR_NOMEM);
    if (rc != NBR_SUCCESS)
        goto out;
    /* the candidates are the same on every rank: they depend on the
     * communicator and the collective only */
    NBR_CHECK(nbr_select_local_prices(state, layout, call, candidates, mine, &n, &fallback));
    NBR_CHECK(nbr_select_job_prices(state, mine, n, job, slowest));
    int best = nbr_select_choose(job, n, fallback);
    if (best < 0) {
        NBR_ERROR("auto: no algorithm could plan this %s on every rank", nbr_call_name(kind));
        rc = NBR_ERR_INTERNAL;
        goto out;
    }
    /* a call that moves nothing anywhere (the baseline costs nothing on
     * every rank) says nothing about the next: take it, decide again then */
    if (fallback >= 0 && job[fallback] <= 0)
        best = fallback;
    else if (!persistent)
        keep_decision(state, call, job, slowest, candidates, n, best, fallback);
    log_prices(state, kind, layout, job, candidates, n, best);
    *chosen = candidates[best];
out:
    free(candidates);
    free(mine);
    free(job);
    free(slowest);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The mean of the middle half of n samples (sorted in place); of 3, the
 * median; of 1 or 2, their mean. */
static double middle_mean(double *samples, int n)
{
    qsort(samples, (size_t)n, sizeof(double), cmp_double);
    int low = (n + 1) / 4, high = n - low;
    double sum = 0;
    for (int k = low; k < high; k++)
        sum += samples[k];
    return sum / (high - low);
}

/* A plan of nbrcoll's own replaces the baseline only when its trial was
 * faster by this fraction: a near-tie is noise, and losing to MPI is worse
 * than not winning (on one node of 8 ranks sharing 2 cores, calls of one
 * plan spread over 2x, so 5 calls' medians of equal plans differ by a few
 * per cent). */
#define NBR_TRIAL_MARGIN 0.03

/* A side this close to the first trial's fastest joins the second trial. */
#define NBR_TRIAL_CLOSE 0.10

int nbr_comm_trial_record(nbr_comm_t *state, nbr_decision_t *trial, double seconds)
{
    /* the sides run in turns, so that a disturbance of the machine falls
     * on all of them alike; the first round is not counted (it pays for
     * each plan's first run) */
    int sides = trial->num_sides;
    int side = nbr_trial_side(trial), round = trial->trial_calls / sides;
    if (round > 0)
        trial->seconds[side][round - 1] = seconds;
    ++trial->trial_calls;
    if (trial->trial_calls == sides) {
        trial->calls = state->config.auto_trials;
    } else if (trial->trial_calls == 2 * sides) {
        /* after the first counted round: as many rounds as fit in the
         * time the sides may take together, each side's call timed on its
         * slowest rank (one allreduce, so that every rank runs as many);
         * a slow baseline then buys the cheap sides more calls */
        double mine[NBR_TRIAL_SIDES] = {0}, slowest[NBR_TRIAL_SIDES] = {0}, round_seconds = 0;
        for (int t = 0; t < sides; t++)
            mine[t] = trial->seconds[t][0];
        int mrc = MPI_Allreduce(mine, slowest, sides, MPI_DOUBLE, MPI_MAX, state->comm);
        if (mrc != MPI_SUCCESS)
            return nbr_mpi_failed("MPI_Allreduce", mrc);
        for (int t = 0; t < sides; t++)
            round_seconds += slowest[t];
        double fit = round_seconds > 0 && isfinite(round_seconds)
                         ? floor(sides * NBR_TRIAL_SIDE_SECONDS / round_seconds)
                         : 0;
        if (fit > trial->calls)
            trial->calls = fit < NBR_AUTO_TRIALS_MAX ? (int)fit : NBR_AUTO_TRIALS_MAX;
    }
    int calls = trial->calls;
    if (trial->trial_calls < sides * (calls + 1))
        return NBR_SUCCESS;
    /* each call's time is its slowest rank's (the calls started together,
     * so the max over ranks of each call is what the job waited); a side's
     * time is the mean of its middle half of calls (the typical call: the
     * fastest would favour plans whose times spread widest, and bursts of
     * the machine fall outside it), which wavers less than the median: on
     * the emulated cluster, Moore d3 r1 at 16 B, medians of 30 calls put
     * combining at 0.99-1.24x of halving's time where the bench measured
     * 1.07-1.18x, and 4 runs of 18 kept it (bench/results/2026-11-27-trial-budget) */
    double all[NBR_TRIAL_SIDES * NBR_AUTO_TRIALS_MAX] = {0}, job[NBR_TRIAL_SIDES];
    int mrc = MPI_Allreduce(trial->seconds, all, NBR_TRIAL_SIDES * NBR_AUTO_TRIALS_MAX,
                            MPI_DOUBLE, MPI_MAX, state->comm);
    if (mrc != MPI_SUCCESS)
        return nbr_mpi_failed("MPI_Allreduce", mrc);
    for (int t = 0; t < sides; t++) {
        double *calls_of = all + (size_t)t * NBR_AUTO_TRIALS_MAX;
        job[t] = middle_mean(calls_of, calls);
    }
    const nbr_algorithm_t *baseline =
        nbr_select_baseline(nbr_comm_library_usable(state, nbr_call_shape(trial->kind)));
    int keep = 0, base = -1, fastest;
    char text[256] = "";
    size_t used = 0;
    for (int t = 0; t < sides; t++) {
        keep = job[t] < job[keep] ? t : keep;
        base = trial->sides[t] == baseline ? t : base;
        if (used < sizeof text)
            used += (size_t)snprintf(text + used, sizeof text - used, "%s%s %.1f us",
                                     t ? ", " : "", trial->sides[t]->name, job[t] * 1e6);
    }
    fastest = keep;
    if (base >= 0 && job[keep] > job[base] * (1 - NBR_TRIAL_MARGIN))
        keep = base;
    /* the clock overturns the price only when a second trial, the priced
     * winner against the first's and the baseline, agrees: one disturbed
     * trial must not lock in a plan the model rated far better (Moore d2
     * r2 at 16 KiB on the emulated cluster kept naive at 0.20x of halving
     * once); a side that beat the priced winner and came within
     * NBR_TRIAL_CLOSE of the fastest runs again too, so that a near-tie is
     * not settled by one trial's few calls (on one node of 8, Moore d3 r1
     * at 64 KiB kept combining at 0.68x of halving) */
    int again = keep != 0 && !trial->retried;
    NBR_INFO("comm %d: auto's %s for %s (block %zu bytes, middle half of %d calls): %s: %s %s",
             state->id, trial->retried ? "second trial" : "trial",
             nbr_call_name(trial->kind), trial->block_bytes, calls, text,
             again ? "a second trial for" : "keeps", trial->sides[keep]->name);
    if (again) {
        const nbr_algorithm_t *first = trial->sides[keep], *close[NBR_TRIAL_SIDES];
        int num_close = 0;
        for (int t = 1; t < sides; t++)
            if (t != keep && t != base && job[t] < job[0] &&
                job[t] <= job[fastest] * (1 + NBR_TRIAL_CLOSE))
                close[num_close++] = trial->sides[t];
        trial->num_sides = 1;
        trial->sides[trial->num_sides++] = first;
        for (int t = 0; t < num_close; t++)
            trial->sides[trial->num_sides++] = close[t];
        if (base > 0 && first != baseline)
            trial->sides[trial->num_sides++] = baseline;
        trial->trial_calls = 0;
        trial->retried = 1;
        return NBR_SUCCESS;
    }
    trial->algorithm = trial->sides[keep];
    trial->num_sides = 0;
    state->trials--;
    return NBR_SUCCESS;
}
