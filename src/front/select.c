/* Decisions on a communicator (front/select.h has the rule; alg/select.h
 * the part that is pure): every rank builds its own plan under every
 * candidate and prices it with the simulator's one-rank estimate on the
 * configured machine; a reduce makes the ranks' prices the job's (the
 * slowest rank) and adds up the bytes through every node's interfaces,
 * which a rank alone cannot know; every rank takes the same cheapest. */
#include "front/select.h"

#include "alg/select.h"
#include "base/log.h"
#include "plan/sim.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A decision's stages: the sizes reduce, the candidates' call facts
 * exchanges, their prices (computed, then reduced), done. */
enum { DECIDE_SIZES, DECIDE_FACTS, DECIDE_PRICE, DECIDE_PRICES, DECIDE_DONE };

/* The decision points after a stream's first call: early ones catch a
 * program whose sizes settle after a few calls, later ones cost one reduce
 * in 256 calls. */
#define NBR_RECHECK_EVERY 256

static int on_schedule(unsigned long long n)
{
    return n == 4 || n == 16 || n == 64 || n % NBR_RECHECK_EVERY == 0;
}

int nbr_relays_allgather(const nbr_algorithm_t *algorithm, nbr_call_kind_t kind)
{
    return kind == NBR_CALL_ALLGATHER && algorithm && algorithm->size_plan != NULL;
}

/* Whether calls of kind on state need decisions at all: auto's, and a
 * configured algorithm's that relays allgather blocks (the block size). */
static int decides(const nbr_comm_t *state, nbr_call_kind_t kind, int blocking)
{
    const nbr_algorithm_t *standing = nbr_standing_algorithm(state, kind, blocking);
    return !standing || nbr_relays_allgather(standing, kind);
}

const nbr_algorithm_t *nbr_standing_of(const nbr_comm_t *state, const nbr_algorithm_t *configured,
                                        nbr_call_kind_t kind, int blocking)
{
    int stalls = !blocking && state->no_progress_hook; /* a relay would wait for its peers */
    if (configured)
        return stalls && !nbr_select_one_message_per_edge(configured) ? nbr_baseline_algorithm()
                                                                      : configured;
    if (!state->idle_ranks && !stalls)
        return NULL;
    return nbr_select_baseline(nbr_comm_library_usable(state, nbr_call_shape(kind)));
}

const nbr_algorithm_t *nbr_standing_algorithm(const nbr_comm_t *state, nbr_call_kind_t kind,
                                              int blocking)
{
    return nbr_standing_of(state, state->config.algorithm, kind, blocking);
}

int nbr_stream_due(const nbr_comm_t *state, const nbr_stream_t *stream, nbr_call_kind_t kind,
                   int blocking, unsigned long long n)
{
    if (!decides(state, kind, blocking))
        return 0;
    return !stream->decision.valid || on_schedule(n) ||
           (stream->redecide_from > stream->decided_at && n >= stream->redecide_from);
}

const nbr_algorithm_t *nbr_stream_algorithm(const nbr_comm_t *state, nbr_stream_t *stream,
                                            nbr_call_kind_t kind, int blocking,
                                            nbr_decision_t **trial)
{
    nbr_decision_t *d = &stream->decision;
    *trial = NULL;
    if (!d->valid)
        return nbr_standing_algorithm(state, kind, blocking);
    if (blocking && d->num_sides > 0) {
        *trial = d;
        return d->sides[nbr_trial_side(d)];
    }
    return d->algorithm;
}

/* What a rank's sizes say for the reduce of a decision point: for
 * allgather and alltoall the two block sizes (kept in d->sizes), for the
 * v- and w-forms a digest of every slot's. */
static uint64_t signature_of(const nbr_priced_call_t *call, const nbr_layout_t *layout)
{
    uint64_t h = 0xcbf29ce484222325ULL;
#define MIX(x) (h = (h ^ (uint64_t)(x)) * 0x100000001b3ULL)
    MIX(call->kind);
    if (nbr_call_uniform(call->kind)) {
        MIX(call->send_block_bytes);
        MIX(call->recv_block_bytes);
    } else {
        for (int i = 0; i < layout->num_send_slots; i++)
            MIX(layout->send[i].bytes);
        for (int i = 0; i < layout->num_recv_slots; i++)
            MIX(layout->recv[i].bytes);
    }
    MIX(call->device_buffers);
#undef MIX
    return h;
}

/* The job's seconds of a reduce over every rank (a guard runs one beside
 * its plan): a message per step, each on the slowest path it may take. */
static double reduce_seconds(const nbr_comm_t *state)
{
    int steps = 0, m = 1;
    while (m <= state->nranks / 2) {
        m *= 2;
        steps++;
    }
    steps += state->nranks > m ? 2 : 0;
    nbr_path_t path = state->locality.num_nodes > 1 ? NBR_PATH_NETWORK : NBR_PATH_SOCKET;
    return steps * nbr_path_seconds(&state->config.machine, path, 2 * sizeof(int64_t));
}

/* This rank's price of algorithm's plan for layout in parts (seconds
 * INFINITY when it cannot build one), its call facts (if it has them)
 * given. allgatherv through relays, and allgather through them where
 * ranks' blocks differ: the blocks it forwards are priced at this rank's
 * own size (their real sizes are only known from the size round the call
 * runs), plus that round; allgather where every block is the same size:
 * the plan and, beside it, its guard. facts_seconds: what the call facts
 * exchange took, a set-up each of the plan's runs pays a share of. */
static void price(nbr_comm_t *state, const nbr_algorithm_t *algorithm, const nbr_layout_t *layout,
                  const nbr_priced_call_t *call, size_t uniform_bytes, const void *facts,
                  double facts_seconds, nbr_sim_parts_t *parts)
{
    nbr_sim_parts_t round;
    const void *pattern = NULL;
    nbr_plan_t plan, sizes_plan;
    nbr_layout_t sizes = {0}, as_v = {0};
    size_t *block_sizes = NULL, *offset_of = NULL;
    int guarded = nbr_relays_allgather(algorithm, call->kind) && uniform_bytes != NBR_NOT_UNIFORM;
    int relay = algorithm->size_plan &&
                (layout->coll == NBR_COLL_ALLGATHERV ||
                 (nbr_relays_allgather(algorithm, call->kind) && !guarded));
    *parts = (nbr_sim_parts_t){.seconds = INFINITY};
    if (nbr_comm_pattern(state, algorithm, &pattern) != NBR_SUCCESS)
        return;
    if (relay && layout->coll == NBR_COLL_ALLGATHER) { /* as allgatherv */
        if (nbr_layout_copy(&as_v, layout) != NBR_SUCCESS)
            return;
        as_v.coll = NBR_COLL_ALLGATHERV;
        layout = &as_v;
    }
    nbr_plan_input_t input = nbr_comm_input_for(state, algorithm, layout);
    input.call_facts = facts;
    nbr_sim_input_t machine = {.locality = &state->locality, .machine = &state->config.machine,
                               .device_buffers = call->device_buffers};
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
    if (facts)
        parts->seconds += facts_seconds / (call->expected_starts > 0 ? call->expected_starts : 1);
    if (guarded && parts->seconds < reduce_seconds(state))
        parts->seconds = reduce_seconds(state);
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
    nbr_layout_free(&sizes);
    nbr_layout_free(&as_v);
    free(block_sizes);
    free(offset_of);
}

/* The candidates for coll on state: the same on every rank (they depend on
 * the communicator and the collective only); *fallback the baseline's. */
static int candidates_of(const nbr_comm_t *state, nbr_collective_t coll, int has_values,
                         const nbr_algorithm_t **candidates, int *fallback)
{
    int count = 0;
    *fallback = -1;
    for (int i = 0; i < nbr_algorithm_count(); i++) {
        const nbr_algorithm_t *a = nbr_algorithm_at(i);
        if (!nbr_select_eligible(a, coll, state->nranks, state->config.auto_whole_graph_ranks,
                                 nbr_comm_library_usable(state, coll)) ||
            (a->needs_values && !has_values))
            continue;
        if (a == nbr_select_baseline(nbr_comm_library_usable(state, coll)))
            *fallback = count;
        candidates[count++] = a;
    }
    return count;
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

/* No trial for calls priced above this: a trial runs a few dozen calls, some
 * of slower plans, which at seconds per call a program calling a few times
 * would not win back. Up to it the trial costs a few seconds at most, and
 * it is needed there: calls of tens of milliseconds, where plans priced
 * alike (both at the interfaces' floor) or the price's choice of MPI
 * measured 6-18 % behind another plan (docs/decisions.md, D9). */
#define NBR_TRIAL_MAX_SECONDS 0.2

static void trial_sides(nbr_comm_t *state, const double *job, const double *slowest,
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
    state->trials++;
}

/* The side a trial's next call runs. Round k starts at its k-th side, so
 * that no side always follows the same one (the bench's fixed order favoured
 * its first place by 2.5-12 %). On one node of 8, Moore d3 r1 at 16-64 KiB,
 * the trial times combining 25-35 % faster and halving 10-20 % slower than
 * the bench does, in a fixed order and in this one alike: that bias is
 * something else, not yet found (docs/decisions.md, D6). */
int nbr_trial_side(const nbr_decision_t *trial)
{
    int sides = trial->num_sides, round = trial->trial_calls / sides;
    return (trial->trial_calls + round) % sides;
}

/* ------------------------------------------------------ a decision */

/* The price reduce's values: [candidate] each's slowest rank (MAX, as
 * bits), then [candidate][node][out, in] the bytes through each node's
 * interfaces (SUM). */
static size_t price_values(int n, int nodes)
{
    return (size_t)n * (1 + 2 * (size_t)nodes);
}

static int nodes_of(const nbr_comm_t *state)
{
    return state->locality.num_nodes > 0 ? state->locality.num_nodes : 1;
}

static void free_facts(nbr_deciding_t *d)
{
    for (int k = 0; k < d->count; k++) {
        nbr_comm_free_call_facts(d->candidates[k], d->facts[k]);
        d->facts[k] = NULL;
    }
}

void nbr_decide_begin(nbr_deciding_t *d, nbr_comm_t *state, nbr_stream_t *stream,
                      unsigned long long call_number, const nbr_priced_call_t *call,
                      const nbr_layout_t *layout, int tag_base)
{
    memset(d, 0, sizeof *d);
    d->state = state;
    d->stream = stream;
    d->call_number = call_number;
    d->call = *call;
    d->layout = layout;
    d->tag_base = tag_base;
    d->signature = signature_of(call, layout);
    int unchanged = stream && stream->decision.valid && stream->signature == d->signature &&
                    !(stream->redecide_from > stream->decided_at &&
                      call_number >= stream->redecide_from);
    int64_t s = (int64_t)call->send_block_bytes, q = (int64_t)call->recv_block_bytes;
    if (!nbr_call_uniform(call->kind))
        s = q = 0;
    int64_t sizes[6] = {NBR_SUCCESS, unchanged, s, -s, q, -q};
    memcpy(d->sizes, sizes, sizeof sizes);
    d->stage = DECIDE_SIZES;
    nbr_reduce_begin(&d->reduce, state->comm, tag_base + NBR_TAG_DECIDE_IN_CALL, d->sizes, 6, NULL,
                     NBR_REDUCE_MIN, NULL);
}

/* Where every rank's blocks were one size, that size; else none. */
static size_t uniform_of(const nbr_deciding_t *d)
{
    const int64_t *v = d->sizes;
    if (!nbr_call_uniform(d->call.kind) || v[2] != -v[3] || v[4] != -v[5] || v[2] != v[4])
        return NBR_NOT_UNIFORM;
    return (size_t)v[2];
}

/* The next candidate whose call facts exchange is due, started; 0: none left. */
static int next_facts(nbr_deciding_t *d)
{
    while (d->facts_next < d->count) {
        int k = d->facts_next++;
        if (!nbr_algorithm_needs_call_facts(d->candidates[k], d->layout))
            continue;
        int run = 0;
        for (int j = 0; j < k; j++)
            run += nbr_algorithm_needs_call_facts(d->candidates[j], d->layout);
        if (run >= NBR_FACTS_RUNS_IN_CALL - 1) /* the call's own keeps the last */
            continue;
        nbr_comm_facts_begin(d->state, d->candidates[k], d->layout, d->call.values,
                             d->tag_base + NBR_TAG_FACTS_IN_CALL + run * NBR_ENGINE_TAGS,
                             &d->facts_run);
        d->facts_run_started = MPI_Wtime();
        d->facts_run_of = k;
        return 1;
    }
    return 0;
}

/* Where the agreed block sizes of an allgather or alltoall are not one
 * size, auto leaves the library out (the same verdict on every rank:
 * uniform_bytes is agreed). Open MPI 4.1's alltoall fails a rank whose send
 * and receive sizes differ before it sends, and its nonblocking
 * collectives stop a schedule at its first truncated receive: either way
 * peers wait for messages that never come, where MPI asks only that each
 * sender match its receivers. nbrcoll's own messages keep the rule of one
 * edge ("Short and long blocks" in docs/reliability.md). */
static int library_refuses(const nbr_deciding_t *d, const nbr_algorithm_t *candidate)
{
    return candidate->library && nbr_call_uniform(d->call.kind) &&
           d->uniform_bytes == NBR_NOT_UNIFORM;
}

/* The sizes are agreed and some rank's changed: price every candidate,
 * after the call facts exchanges of those that have them. */
static void reprice_begin(nbr_deciding_t *d)
{
    nbr_comm_t *state = d->state;
    d->count = candidates_of(state, d->layout->coll, d->call.values != NULL, d->candidates,
                             &d->fallback);
    d->uniform_bytes = uniform_of(d);
    for (int k = 0; k < d->count; k++)
        if (library_refuses(d, d->candidates[k]))
            d->candidates[k] = nbr_baseline_algorithm(); /* naive: the same plan and price */
    d->stage = DECIDE_FACTS;
    d->facts_next = 0;
    if (!next_facts(d))
        d->stage = DECIDE_PRICE; /* no exchange: straight to the prices */
}

static void prices_begin(nbr_deciding_t *d)
{
    nbr_comm_t *state = d->state;
    int n = d->count, nodes = nodes_of(state);
    int node = state->locality.node_of ? state->locality.node_of[state->rank] : 0;
    size_t values = price_values(n, nodes);
    d->stage = DECIDE_PRICES;
    d->prices = state->decide_room;
    d->scratch = state->decide_room + values;
    d->ops = (uint8_t *)(state->decide_room + 3 * values);
    memset(d->prices, 0, values * sizeof(int64_t));
    for (int k = 0; k < n; k++) {
        nbr_sim_parts_t parts = {.seconds = INFINITY};
        /* a rank that cannot plan a candidate prices it at infinity, so the
         * job's price (the max) rules it out on every rank */
        if (d->status == NBR_SUCCESS &&
            (d->facts_rc[k] == NBR_SUCCESS || d->facts_rc[k] == NBR_ERR_TYPE_MISMATCH))
            price(state, d->candidates[k], d->layout, &d->call, d->uniform_bytes, d->facts[k],
                  d->facts_seconds[k], &parts);
        d->prices[k] = nbr_reduce_from_double(parts.seconds);
        d->ops[k] = NBR_REDUCE_MAX;
        int64_t *bytes = d->prices + n + ((size_t)k * nodes + node) * 2;
        bytes[0] = (int64_t)parts.net_out_bytes;
        bytes[1] = (int64_t)parts.net_in_bytes;
    }
    memset(d->ops + n, NBR_REDUCE_SUM, values - (size_t)n);
    nbr_reduce_begin(&d->reduce, state->comm, d->tag_base + NBR_TAG_DECIDE_IN_CALL + 1, d->prices,
                     (int)values, d->ops, NBR_REDUCE_MAX, d->scratch);
}

/* The job's price of each candidate from the reduced values: the slowest
 * rank (slowest) or the busiest node's interfaces, whichever is longer;
 * cells: room for 2 x nodes doubles. */
static void job_prices(const nbr_comm_t *state, const int64_t *reduced, int n, double *cells,
                       double *job, double *slowest)
{
    int nodes = nodes_of(state);
    for (int k = 0; k < n; k++) {
        const int64_t *b = reduced + n + (size_t)k * nodes * 2;
        for (int c = 0; c < 2 * nodes; c++)
            cells[c] = (double)b[c];
        slowest[k] = nbr_reduce_to_double(reduced[k]);
        job[k] = nbr_sim_job_price(&state->config.machine, slowest[k], cells, nodes);
    }
}

/* Keeps the outcome in the stream (a blocking stream's winner goes on
 * trial) and takes the chosen candidate's call facts for the call. */
static void commit(nbr_deciding_t *d, const double *job, const double *slowest, int best)
{
    nbr_comm_t *state = d->state;
    d->algorithm = d->candidates[best];
    d->chosen_facts = d->facts[best];
    d->chosen_digest = d->digests[best];
    d->chosen_facts_rc = d->facts_rc[best];
    d->facts[best] = NULL;
    nbr_stream_t *stream = d->stream;
    if (!stream)
        return;
    nbr_decision_t *kept = &stream->decision;
    if (kept->valid && kept->num_sides > 0)
        state->trials--; /* replaced while on trial */
    *kept = (nbr_decision_t){.valid = 1, .algorithm = d->algorithm,
                             .uniform_bytes = d->uniform_bytes, .kind = d->call.kind};
    if (stream == nbr_comm_stream(state, d->call.kind, 1))
        trial_sides(state, job, slowest, d->candidates, d->count, best, d->fallback, kept);
}

static int end(nbr_deciding_t *d, int status)
{
    d->stage = DECIDE_DONE;
    free_facts(d);
    if (status == NBR_SUCCESS && d->stream) {
        d->stream->signature = d->signature;
        d->stream->decided_at = d->call_number;
        d->stream->decision.uniform_bytes = d->uniform_bytes;
    }
    return status;
}

/* The sizes reduce is done: keep the decision, take the configured
 * algorithm, or price. */
static int sizes_agreed(nbr_deciding_t *d, int *done)
{
    nbr_comm_t *state = d->state;
    int status = (int)d->sizes[0];
    if (status == NBR_SUCCESS)
        status = d->reduce.status;
    if (status != NBR_SUCCESS) {
        *done = 1;
        return end(d, status);
    }
    d->uniform_bytes = uniform_of(d);
    if (d->sizes[1] && d->stream) { /* nobody's sizes changed: as it was */
        d->algorithm = d->stream->decision.algorithm;
        d->uniform_bytes = d->stream->decision.uniform_bytes;
        *done = 1;
        return end(d, NBR_SUCCESS);
    }
    if (state->config.algorithm) {
        d->algorithm = state->config.algorithm;
        if (d->stream)
            d->stream->decision = (nbr_decision_t){.valid = 1, .algorithm = d->algorithm,
                                                   .uniform_bytes = d->uniform_bytes,
                                                   .kind = d->call.kind};
        *done = 1;
        return end(d, NBR_SUCCESS);
    }
    reprice_begin(d);
    return NBR_SUCCESS;
}

static int prices_agreed(nbr_deciding_t *d)
{
    nbr_comm_t *state = d->state;
    int n = d->count;
    double job[NBR_MAX_ALGORITHMS], slowest[NBR_MAX_ALGORITHMS];
    if (d->reduce.status != NBR_SUCCESS)
        return end(d, d->reduce.status);
    job_prices(state, d->prices, n, (double *)d->scratch, job, slowest); /* scratch: free now */
    int best = nbr_select_choose(job, n, d->fallback);
    if (best < 0) {
        NBR_ERROR("auto: no algorithm could plan this %s on every rank", nbr_call_name(d->call.kind));
        return end(d, NBR_ERR_INTERNAL);
    }
    /* a call that moves nothing anywhere (the baseline costs nothing on
     * every rank) says nothing about the next: take it, decide again then */
    int nothing = d->fallback >= 0 && job[d->fallback] <= 0;
    if (nothing)
        best = d->fallback;
    log_prices(state, d->call.kind, d->layout, job, d->candidates, n, best);
    commit(d, job, slowest, best);
    d->fresh = 1;
    int rc = end(d, NBR_SUCCESS);
    if (nothing && d->stream)
        d->stream->redecide_from = d->call_number + 1;
    return rc;
}

int nbr_decide_advance(nbr_deciding_t *d, int *done, int *moved)
{
    int finished = 0;
    *done = 0;
    for (;;) {
        switch (d->stage) {
        case DECIDE_SIZES:
            *moved |= nbr_reduce_advance(&d->reduce, &finished);
            if (!finished)
                return NBR_SUCCESS;
            int rc = sizes_agreed(d, done);
            if (*done)
                return rc;
            break;
        case DECIDE_FACTS:
            *moved |= nbr_comm_facts_advance(&d->facts_run, &finished);
            if (!finished)
                return NBR_SUCCESS;
            int k = d->facts_run_of;
            d->facts_rc[k] = nbr_comm_facts_end(&d->facts_run, &d->facts[k], &d->digests[k]);
            d->facts_seconds[k] = MPI_Wtime() - d->facts_run_started;
            if (!next_facts(d))
                prices_begin(d);
            break;
        case DECIDE_PRICE:
            prices_begin(d);
            break;
        case DECIDE_PRICES:
            *moved |= nbr_reduce_advance(&d->reduce, &finished);
            if (!finished)
                return NBR_SUCCESS;
            *done = 1;
            return prices_agreed(d);
        default:
            *done = 1;
            return NBR_ERR_INTERNAL;
        }
    }
}

int nbr_decide(nbr_deciding_t *d, nbr_comm_t *state, nbr_stream_t *stream,
               unsigned long long call_number, const nbr_priced_call_t *call,
               const nbr_layout_t *layout, int tag_base)
{
    int done = 0, rc = NBR_SUCCESS;
    nbr_decide_begin(d, state, stream, call_number, call, layout, tag_base);
    while (!done) {
        int moved = 0;
        rc = nbr_decide_advance(d, &done, &moved);
        if (!done && !moved && !nbr_progress_all())
            sched_yield(); /* ranks may share cores: let the peer run */
    }
    return rc;
}

void nbr_decide_free(nbr_deciding_t *d)
{
    free_facts(d);
    nbr_comm_free_call_facts(d->algorithm, d->chosen_facts);
    d->chosen_facts = NULL;
}

/* ------------------------------------------------ the parts, for tests */

int nbr_select_local_prices(nbr_comm_t *state, const nbr_layout_t *layout,
                            const nbr_priced_call_t *call, int tag_base,
                            const nbr_algorithm_t **candidates, nbr_sim_parts_t *prices,
                            int *count, int *fallback)
{
    *count = candidates_of(state, layout->coll, call->values != NULL, candidates, fallback);
    for (int k = 0, run = 0; k < *count; k++) {
        void *facts = NULL;
        uint64_t digest = 0;
        double started = MPI_Wtime();
        int rc = NBR_SUCCESS;
        if (nbr_algorithm_needs_call_facts(candidates[k], layout))
            rc = nbr_comm_call_facts(state, candidates[k], layout, call->values,
                                     tag_base + NBR_TAG_FACTS_IN_CALL + NBR_ENGINE_TAGS * run++,
                                     &facts, &digest);
        prices[k] = (nbr_sim_parts_t){.seconds = INFINITY};
        if (rc == NBR_SUCCESS || rc == NBR_ERR_TYPE_MISMATCH)
            price(state, candidates[k], layout, call,
                  nbr_call_uniform(call->kind) ? call->send_block_bytes : NBR_NOT_UNIFORM, facts,
                  MPI_Wtime() - started, &prices[k]);
        nbr_comm_free_call_facts(candidates[k], facts);
    }
    return NBR_SUCCESS;
}

int nbr_select_job_prices(nbr_comm_t *state, const nbr_sim_parts_t *mine, int n, int tag_base,
                          double *job, double *slowest)
{
    int nodes = nodes_of(state);
    int node = state->locality.node_of ? state->locality.node_of[state->rank] : 0;
    size_t values = price_values(n, nodes);
    if (!state->decide_room || values > state->decide_room_values)
        return NBR_ERR_INTERNAL; /* the same on every rank */
    int64_t *v = state->decide_room, *scratch = v + values;
    uint8_t *ops = (uint8_t *)(v + 3 * values);
    double own[NBR_MAX_ALGORITHMS];
    memset(v, 0, values * sizeof(int64_t));
    memset(ops, NBR_REDUCE_SUM, values);
    for (int k = 0; k < n; k++) {
        v[k] = nbr_reduce_from_double(mine[k].seconds);
        ops[k] = NBR_REDUCE_MAX;
        v[n + ((size_t)k * nodes + node) * 2] = (int64_t)mine[k].net_out_bytes;
        v[n + ((size_t)k * nodes + node) * 2 + 1] = (int64_t)mine[k].net_in_bytes;
    }
    nbr_reduce_t r;
    nbr_reduce_begin(&r, state->comm, tag_base + NBR_TAG_DECIDE_IN_CALL + 1, v, (int)values, ops,
                     NBR_REDUCE_MAX, scratch);
    int rc = nbr_reduce_wait(&r);
    if (rc == NBR_SUCCESS)
        job_prices(state, v, n, (double *)scratch, job, slowest ? slowest : own);
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
     * the machine fall outside it), which wavers less than the median
     * (docs/decisions.md, D8) */
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
        /* naive stands in for the library where the sizes keep it out */
        base = trial->sides[t] == baseline || trial->sides[t] == nbr_baseline_algorithm() ? t
                                                                                       : base;
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
     * at 64 KiB kept combining at 0.68x of halving; docs/decisions.md, D11) */
    int again = keep != 0 && !trial->retried;
    NBR_INFO("comm %d: auto's %s for blocking %s (middle half of %d calls): %s: %s %s",
             state->id, trial->retried ? "second trial" : "trial",
             nbr_call_name(trial->kind), calls, text,
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
