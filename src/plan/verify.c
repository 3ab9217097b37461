#include "plan/verify.h"

#include "plan/match.h"

#include <nbrcoll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A byte's provenance: which rank's send buffer, which offset. 0 = never
 * written. */
typedef uint64_t label_t;
static label_t make_label(int rank, size_t offset)
{
    return ((label_t)(rank + 1) << 40) | (label_t)offset;
}

typedef struct verifier {
    const nbr_graph_t *graph;
    const nbr_layout_t *layouts;
    const nbr_plan_t *plans;
    const size_t *const *same; /* per rank, send byte -> the byte it stands for */
    int nranks;
    char *message;
    size_t message_size;
    size_t *buffer_size[NBR_NUM_BUFFERS]; /* per rank */
    label_t **memory[NBR_NUM_BUFFERS];    /* per rank */
    unsigned char **recv_writes;          /* per rank: writes per recv byte */
    nbr_job_ops_t ops;                    /* every op numbered, sends paired */
    label_t **snapshot;                   /* global send op -> data in flight */
} verifier_t;

/* The label of send byte `offset` of rank r: its own, or the one it
 * stands for. */
static label_t send_label(const verifier_t *v, int r, size_t offset)
{
    return make_label(r, v->same && v->same[r] ? v->same[r][offset] : offset);
}

static int fail(verifier_t *v, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    if (v->message && v->message_size)
        vsnprintf(v->message, v->message_size, fmt, args);
    va_end(args);
    return NBR_ERR_INTERNAL;
}

static const nbr_op_t *global_op(const verifier_t *v, int g)
{
    return nbr_job_op(&v->ops, g);
}

/* ----------------------------------------------------------- set-up */

static int allocate(verifier_t *v)
{
    int n = v->nranks;
    for (int b = 0; b < NBR_NUM_BUFFERS; b++) {
        v->buffer_size[b] = calloc((size_t)n, sizeof(size_t));
        v->memory[b] = calloc((size_t)n, sizeof(label_t *));
        if (!v->buffer_size[b] || !v->memory[b])
            return NBR_ERR_NOMEM;
    }
    v->recv_writes = calloc((size_t)n, sizeof(unsigned char *));
    if (!v->recv_writes)
        return NBR_ERR_NOMEM;
    for (int r = 0; r < n; r++) {
        v->buffer_size[NBR_BUF_SEND][r] = nbr_layout_send_extent(&v->layouts[r]);
        v->buffer_size[NBR_BUF_RECV][r] = nbr_layout_recv_extent(&v->layouts[r]);
        v->buffer_size[NBR_BUF_SCRATCH][r] = v->plans[r].scratch_bytes;
        for (int b = 0; b < NBR_NUM_BUFFERS; b++) {
            v->memory[b][r] = calloc(v->buffer_size[b][r] + 1, sizeof(label_t));
            if (!v->memory[b][r])
                return NBR_ERR_NOMEM;
        }
        v->recv_writes[r] = calloc(v->buffer_size[NBR_BUF_RECV][r] + 1, 1);
        if (!v->recv_writes[r])
            return NBR_ERR_NOMEM;
        /* only bytes inside send slots are data: the gaps stay unlabelled */
        const nbr_layout_t *layout = &v->layouts[r];
        for (int s = 0; s < layout->num_send_slots; s++)
            for (size_t k = 0; k < layout->send[s].bytes; k++)
                v->memory[NBR_BUF_SEND][r][layout->send[s].offset + k] =
                    send_label(v, r, layout->send[s].offset + k);
    }
    int rc = nbr_job_ops_index(&v->ops, v->plans, n);
    if (rc != NBR_SUCCESS)
        return rc;
    v->snapshot = calloc((size_t)v->ops.total + 1, sizeof(label_t *));
    return v->snapshot ? NBR_SUCCESS : NBR_ERR_NOMEM;
}

static void release(verifier_t *v)
{
    for (int b = 0; b < NBR_NUM_BUFFERS; b++) {
        for (int r = 0; v->memory[b] && r < v->nranks; r++)
            free(v->memory[b][r]);
        free(v->memory[b]);
        free(v->buffer_size[b]);
    }
    for (int r = 0; v->recv_writes && r < v->nranks; r++)
        free(v->recv_writes[r]);
    for (int g = 0; v->snapshot && g < v->ops.total; g++)
        free(v->snapshot[g]);
    free(v->recv_writes);
    nbr_job_ops_free(&v->ops);
    free(v->snapshot);
}

/* ----------------------------------------------------- static checks */

static int check_bounds(verifier_t *v)
{
    for (int r = 0; r < v->nranks; r++) {
        const nbr_plan_t *plan = &v->plans[r];
        int covered = 0;
        for (int p = 0; p < plan->num_phases; p++)
            covered += plan->phases[p].num_ops;
        if (covered != plan->num_ops || plan->rank != r || plan->nranks != v->nranks)
            return fail(v, "rank %d: plan header inconsistent (phases cover %d of %d ops)",
                        r, covered, plan->num_ops);
        for (int i = 0; i < plan->num_ops; i++) {
            const nbr_op_t *op = &plan->ops[i];
            if (op->buf >= NBR_NUM_BUFFERS ||
                (op->kind == NBR_OP_COPY && op->src_buf >= NBR_NUM_BUFFERS))
                return fail(v, "rank %d op %d: bad buffer", r, i);
            if (op->kind != NBR_OP_SEND && op->buf == NBR_BUF_SEND)
                return fail(v, "rank %d op %d: writes the send buffer", r, i);
            if (op->kind != NBR_OP_COPY && (op->peer < 0 || op->peer >= v->nranks))
                return fail(v, "rank %d op %d: peer %d out of range", r, i, op->peer);
            if (op->bytes == 0)
                continue; /* touches nothing, wherever it points */
            if (op->offset + op->bytes > v->buffer_size[op->buf][r])
                return fail(v, "rank %d op %d: %s[%zu..%zu) past the buffer end %zu", r, i,
                            nbr_buffer_name(op->buf), op->offset, op->offset + op->bytes,
                            v->buffer_size[op->buf][r]);
            if (op->kind == NBR_OP_COPY &&
                op->src_offset + op->bytes > v->buffer_size[op->src_buf][r])
                return fail(v, "rank %d op %d: copy source past the buffer end", r, i);
        }
    }
    return NBR_SUCCESS;
}

typedef struct interval {
    int buf;
    size_t start, end;
    int writes;
    int op;
} interval_t;

static int compare_interval(const void *a, const void *b)
{
    const interval_t *x = a, *y = b;
    if (x->buf != y->buf)
        return x->buf - y->buf;
    return x->start < y->start ? -1 : (x->start > y->start);
}

/* Within a phase, nothing may touch a range that is being written. */
static int check_phase_conflicts(verifier_t *v)
{
    int rc = NBR_SUCCESS;
    for (int r = 0; r < v->nranks && rc == NBR_SUCCESS; r++) {
        const nbr_plan_t *plan = &v->plans[r];
        interval_t *list = malloc(2 * (size_t)plan->num_ops * sizeof(interval_t) + 1);
        if (!list)
            return NBR_ERR_NOMEM;
        for (int p = 0; p < plan->num_phases && rc == NBR_SUCCESS; p++) {
            int n = 0;
            for (int i = 0; i < plan->phases[p].num_ops; i++) {
                int index = plan->phases[p].first_op + i;
                const nbr_op_t *op = &plan->ops[index];
                if (op->bytes == 0)
                    continue;
                int writes = op->kind != NBR_OP_SEND;
                list[n++] = (interval_t){op->buf, op->offset, op->offset + op->bytes, writes, index};
                if (op->kind == NBR_OP_COPY)
                    list[n++] = (interval_t){op->src_buf, op->src_offset,
                                             op->src_offset + op->bytes, 0, index};
            }
            qsort(list, (size_t)n, sizeof(interval_t), compare_interval);
            size_t reach = 0, write_reach = 0;
            for (int k = 0; k < n; k++) {
                if (k == 0 || list[k].buf != list[k - 1].buf)
                    reach = write_reach = 0;
                if ((list[k].writes && list[k].start < reach) || list[k].start < write_reach) {
                    rc = fail(v, "rank %d phase %d: op %d touches %s[%zu..%zu) while "
                                 "another op of the phase writes or reads it",
                              r, p, list[k].op, nbr_buffer_name(list[k].buf),
                              list[k].start, list[k].end);
                    break;
                }
                if (list[k].end > reach)
                    reach = list[k].end;
                if (list[k].writes && list[k].end > write_reach)
                    write_reach = list[k].end;
            }
        }
        free(list);
    }
    return rc;
}

/* ------------------------------------------------------- simulation */

/* Labels of (buf, offset, bytes) on rank r; unwritten bytes fail. */
static int read_labels(verifier_t *v, int r, int buf, size_t offset, size_t bytes,
                       label_t *out, int op)
{
    const label_t *src = v->memory[buf][r] + offset;
    for (size_t k = 0; k < bytes; k++) {
        if (src[k] == 0)
            return fail(v, "rank %d op %d reads %s byte %zu, which nothing wrote", r, op,
                        nbr_buffer_name(buf), offset + k);
        out[k] = src[k];
    }
    return NBR_SUCCESS;
}

static void write_labels(verifier_t *v, int r, int buf, size_t offset, size_t bytes,
                         const label_t *labels)
{
    memcpy(v->memory[buf][r] + offset, labels, bytes * sizeof(label_t));
    if (buf == NBR_BUF_RECV)
        for (size_t k = 0; k < bytes; k++)
            if (v->recv_writes[r][offset + k] < 255)
                v->recv_writes[r][offset + k]++;
}

/* Phase start: local copies run, sends capture what they will carry. */
static int start_phase(verifier_t *v, int r, int p)
{
    const nbr_plan_t *plan = &v->plans[r];
    const nbr_phase_t *phase = &plan->phases[p];
    int rc = NBR_SUCCESS;
    for (int i = 0; i < phase->num_ops && rc == NBR_SUCCESS; i++) {
        int index = phase->first_op + i, g = v->ops.base[r] + index;
        const nbr_op_t *op = &plan->ops[index];
        if (op->kind == NBR_OP_RECV)
            continue;
        label_t *labels = malloc((op->bytes + 1) * sizeof(label_t));
        if (!labels)
            return NBR_ERR_NOMEM;
        int src_buf = op->kind == NBR_OP_COPY ? op->src_buf : op->buf;
        size_t src_offset = op->kind == NBR_OP_COPY ? op->src_offset : op->offset;
        rc = read_labels(v, r, src_buf, src_offset, op->bytes, labels, index);
        if (rc == NBR_SUCCESS && op->kind == NBR_OP_COPY) {
            write_labels(v, r, op->buf, op->offset, op->bytes, labels);
            free(labels);
        } else if (rc == NBR_SUCCESS) {
            v->snapshot[g] = labels;
        } else {
            free(labels);
        }
    }
    return rc;
}

/* Has rank r posted the ops of its phase p (started it, or gone past it)? */
static int reached(const int *phase_now, const int *started, int r, int p)
{
    return phase_now[r] > p || (phase_now[r] == p && started[r]);
}

static int phase_can_finish(verifier_t *v, const int *phase_now, const int *started,
                            int r, int *blocker)
{
    const nbr_plan_t *plan = &v->plans[r];
    const nbr_phase_t *phase = &plan->phases[phase_now[r]];
    for (int i = 0; i < phase->num_ops; i++) {
        int g = v->ops.base[r] + phase->first_op + i;
        if (global_op(v, g)->kind == NBR_OP_COPY)
            continue;
        int other = v->ops.partner[g];
        if (!reached(phase_now, started, v->ops.owner[other], v->ops.phase[other])) {
            *blocker = g;
            return 0;
        }
    }
    return 1;
}

static void finish_phase(verifier_t *v, int r, int p)
{
    const nbr_plan_t *plan = &v->plans[r];
    const nbr_phase_t *phase = &plan->phases[p];
    for (int i = 0; i < phase->num_ops; i++) {
        int g = v->ops.base[r] + phase->first_op + i;
        const nbr_op_t *op = global_op(v, g);
        if (op->kind != NBR_OP_RECV)
            continue;
        int send = v->ops.partner[g];
        write_labels(v, r, op->buf, op->offset, op->bytes, v->snapshot[send]);
        free(v->snapshot[send]);
        v->snapshot[send] = NULL;
    }
}

static int simulate(verifier_t *v)
{
    int n = v->nranks, rc = NBR_SUCCESS;
    int *phase_now = calloc((size_t)n, sizeof(int));
    int *started = calloc((size_t)n, sizeof(int));
    if (!phase_now || !started) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    for (int progress = 1; progress;) {
        progress = 0;
        for (int r = 0; r < n; r++)
            if (phase_now[r] < v->plans[r].num_phases && !started[r]) {
                if ((rc = start_phase(v, r, phase_now[r])) != NBR_SUCCESS)
                    goto out;
                started[r] = progress = 1;
            }
        for (int r = 0; r < n; r++) {
            int blocker = -1;
            if (started[r] && phase_can_finish(v, phase_now, started, r, &blocker)) {
                finish_phase(v, r, phase_now[r]);
                phase_now[r]++;
                started[r] = 0;
                progress = 1;
            }
        }
    }
    for (int r = 0; r < n; r++) {
        if (phase_now[r] == v->plans[r].num_phases)
            continue;
        int blocker = -1;
        phase_can_finish(v, phase_now, started, r, &blocker);
        const nbr_op_t *op = global_op(v, blocker);
        int other = v->ops.partner[blocker];
        rc = fail(v, "hang: rank %d waits in phase %d on its %s %s rank %d (tag %d), "
                     "which rank %d posts in its phase %d but is stuck in phase %d",
                  r, phase_now[r], op->kind == NBR_OP_SEND ? "send" : "receive",
                  op->kind == NBR_OP_SEND ? "to" : "from", op->peer, op->tag,
                  v->ops.owner[other], v->ops.phase[other], phase_now[v->ops.owner[other]]);
        goto out;
    }
out:
    free(phase_now);
    free(started);
    return rc;
}

/* ----------------------------------------------------------- oracle */

typedef struct out_edge {
    int src, dst, occurrence, position;
} out_edge_t;

static int compare_out_edge(const void *a, const void *b)
{
    const out_edge_t *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    return x->occurrence - y->occurrence;
}

/* Numbers each edge's occurrence among equal (src, dst) pairs of a list. */
static void number_occurrences(const int *list, int n, int *seen, int *occurrence)
{
    for (int i = 0; i < n; i++)
        occurrence[i] = seen[list[i]]++;
    for (int i = 0; i < n; i++)
        seen[list[i]] = 0;
}

static int check_slot(verifier_t *v, int r, int slot, int src, const nbr_slot_t *from)
{
    const nbr_slot_t *to = &v->layouts[r].recv[slot];
    if (to->bytes != from->bytes)
        return fail(v, "layouts disagree: rank %d expects %zu bytes from rank %d, which "
                       "sends %zu", r, to->bytes, src, from->bytes);
    for (size_t k = 0; k < to->bytes; k++) {
        label_t got = v->memory[NBR_BUF_RECV][r][to->offset + k];
        label_t want = send_label(v, src, from->offset + k);
        if (v->recv_writes[r][to->offset + k] != 1)
            return fail(v, "rank %d recv byte %zu (slot %d, from rank %d) written %d times",
                        r, to->offset + k, slot, src, v->recv_writes[r][to->offset + k]);
        if (got != want)
            return fail(v, "rank %d recv byte %zu (slot %d) holds rank %d byte %llu; "
                           "expected rank %d byte %zu", r, to->offset + k, slot,
                        (int)(got >> 40) - 1, (unsigned long long)(got & ((1ull << 40) - 1)),
                        src, from->offset + k);
    }
    return NBR_SUCCESS;
}

static int check_results(verifier_t *v)
{
    const nbr_graph_t *g = v->graph;
    int rc = NBR_SUCCESS, n = v->nranks;
    long edges = g->out_offsets[n];
    out_edge_t *index = malloc(((size_t)edges + 1) * sizeof(out_edge_t));
    int *seen = calloc((size_t)n, sizeof(int));
    int *occurrence = malloc(((size_t)edges + 1) * sizeof(int));
    unsigned char *in_slot = NULL;
    if (!index || !seen || !occurrence) {
        rc = NBR_ERR_NOMEM;
        goto out;
    }
    for (int s = 0; s < n; s++) { /* where the k-th s -> d edge sits in s's out-list */
        number_occurrences(nbr_graph_out(g, s), nbr_graph_outdegree(g, s), seen, occurrence);
        for (int j = 0; j < nbr_graph_outdegree(g, s); j++)
            index[g->out_offsets[s] + j] =
                (out_edge_t){s, nbr_graph_out(g, s)[j], occurrence[j], j};
    }
    qsort(index, (size_t)edges, sizeof(out_edge_t), compare_out_edge);
    for (int r = 0; r < n && rc == NBR_SUCCESS; r++) {
        const nbr_layout_t *layout = &v->layouts[r];
        const int *in = nbr_graph_in(g, r);
        number_occurrences(in, nbr_graph_indegree(g, r), seen, occurrence);
        for (int i = 0; i < nbr_graph_indegree(g, r) && rc == NBR_SUCCESS; i++) {
            int src_slot = 0;
            if (layout->coll == NBR_COLL_ALLTOALLV) {
                out_edge_t key = {in[i], r, occurrence[i], 0};
                out_edge_t *hit = bsearch(&key, index, (size_t)edges, sizeof(out_edge_t),
                                          compare_out_edge);
                if (!hit) {
                    rc = fail(v, "graph: rank %d's in-edge %d from %d has no out-edge", r, i,
                              in[i]);
                    break;
                }
                src_slot = hit->position;
            }
            rc = check_slot(v, r, i, in[i], &v->layouts[in[i]].send[src_slot]);
        }
        /* Bytes between and after the slots must be untouched. */
        size_t size = v->buffer_size[NBR_BUF_RECV][r];
        free(in_slot);
        in_slot = calloc(size + 1, 1);
        if (!in_slot) {
            rc = NBR_ERR_NOMEM;
            break;
        }
        for (int i = 0; i < layout->num_recv_slots; i++)
            memset(in_slot + layout->recv[i].offset, 1, layout->recv[i].bytes);
        for (size_t k = 0; k < size && rc == NBR_SUCCESS; k++)
            if (!in_slot[k] && v->recv_writes[r][k])
                rc = fail(v, "rank %d wrote recv byte %zu, outside every slot", r, k);
    }
out:
    free(in_slot);
    free(index);
    free(seen);
    free(occurrence);
    return rc;
}

int nbr_verify_plans(const nbr_graph_t *graph, const nbr_layout_t *layouts,
                     const nbr_plan_t *plans, char *message, size_t message_size)
{
    return nbr_verify_plans_same(graph, layouts, plans, NULL, message, message_size);
}

int nbr_verify_plans_same(const nbr_graph_t *graph, const nbr_layout_t *layouts,
                          const nbr_plan_t *plans, const size_t *const *same, char *message,
                          size_t message_size)
{
    verifier_t v = {.graph = graph, .layouts = layouts, .plans = plans, .same = same,
                    .nranks = graph->nranks, .message = message,
                    .message_size = message_size};
    if (message && message_size)
        message[0] = '\0';
    int rc = allocate(&v);
    if (rc == NBR_SUCCESS)
        rc = check_bounds(&v);
    if (rc == NBR_SUCCESS)
        rc = check_phase_conflicts(&v);
    if (rc == NBR_SUCCESS)
        rc = nbr_job_ops_pair(&v.ops, v.message, v.message_size);
    if (rc == NBR_SUCCESS)
        rc = simulate(&v);
    if (rc == NBR_SUCCESS)
        rc = check_results(&v);
    release(&v);
    return rc;
}
