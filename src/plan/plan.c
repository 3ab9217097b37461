#include "plan/plan.h"

#include "base/grow.h"

#include <nbrcoll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *nbr_collective_name(nbr_collective_t coll)
{
    static const char *names[] = {"allgather", "allgatherv", "alltoallv"};
    return (unsigned)coll < NBR_NUM_COLLECTIVES ? names[coll] : "?";
}

const char *nbr_buffer_name(nbr_buffer_t buf)
{
    static const char *names[] = {"send", "recv", "scratch"};
    return (unsigned)buf < NBR_NUM_BUFFERS ? names[buf] : "?";
}

/* ------------------------------------------------------------- layouts */

int nbr_layout_reserve(nbr_layout_t *layout, nbr_collective_t coll,
                       int num_send_slots, int num_recv_slots)
{
    /* +1: a zero-degree rank still gets a valid pointer */
    if (nbr_grow((void **)&layout->send, &layout->send_capacity, num_send_slots + 1, 1,
                 sizeof(nbr_slot_t)) != NBR_SUCCESS ||
        nbr_grow((void **)&layout->recv, &layout->recv_capacity, num_recv_slots + 1, 1,
                 sizeof(nbr_slot_t)) != NBR_SUCCESS)
        return NBR_ERR_NOMEM;
    layout->coll = coll;
    layout->num_send_slots = num_send_slots;
    layout->num_recv_slots = num_recv_slots;
    return NBR_SUCCESS;
}

int nbr_layout_init(nbr_layout_t *layout, nbr_collective_t coll,
                    int num_send_slots, int num_recv_slots)
{
    memset(layout, 0, sizeof(*layout));
    int rc = nbr_layout_reserve(layout, coll, num_send_slots, num_recv_slots);
    if (rc != NBR_SUCCESS) {
        nbr_layout_free(layout);
        return rc;
    }
    memset(layout->send, 0, (size_t)layout->send_capacity * sizeof(nbr_slot_t));
    memset(layout->recv, 0, (size_t)layout->recv_capacity * sizeof(nbr_slot_t));
    return NBR_SUCCESS;
}

void nbr_layout_free(nbr_layout_t *layout)
{
    free(layout->send);
    free(layout->recv);
    layout->send = layout->recv = NULL;
    layout->num_send_slots = layout->num_recv_slots = 0;
    layout->send_capacity = layout->recv_capacity = 0;
}

int nbr_layout_equal(const nbr_layout_t *a, const nbr_layout_t *b)
{
    return a->coll == b->coll && a->num_send_slots == b->num_send_slots &&
           a->num_recv_slots == b->num_recv_slots &&
           memcmp(a->send, b->send, (size_t)a->num_send_slots * sizeof(nbr_slot_t)) == 0 &&
           memcmp(a->recv, b->recv, (size_t)a->num_recv_slots * sizeof(nbr_slot_t)) == 0;
}

int nbr_layout_copy(nbr_layout_t *dst, const nbr_layout_t *src)
{
    int rc = nbr_layout_init(dst, src->coll, src->num_send_slots, src->num_recv_slots);
    if (rc != NBR_SUCCESS)
        return rc;
    memcpy(dst->send, src->send, (size_t)src->num_send_slots * sizeof(nbr_slot_t));
    memcpy(dst->recv, src->recv, (size_t)src->num_recv_slots * sizeof(nbr_slot_t));
    return NBR_SUCCESS;
}

static size_t slots_extent(const nbr_slot_t *slots, int n)
{
    size_t end = 0;
    for (int i = 0; i < n; i++)
        if (slots[i].bytes > 0 && slots[i].offset + slots[i].bytes > end)
            end = slots[i].offset + slots[i].bytes;
    return end;
}

size_t nbr_layout_send_extent(const nbr_layout_t *layout)
{
    return slots_extent(layout->send, layout->num_send_slots);
}

size_t nbr_layout_recv_extent(const nbr_layout_t *layout)
{
    return slots_extent(layout->recv, layout->num_recv_slots);
}

/* --------------------------------------------------------------- plans */

void nbr_plan_init(nbr_plan_t *plan, int rank, int nranks,
                   nbr_collective_t coll, const char *algorithm)
{
    memset(plan, 0, sizeof(*plan));
    plan->rank = rank;
    plan->nranks = nranks;
    plan->coll = coll;
    plan->algorithm = algorithm;
}

void nbr_plan_free(nbr_plan_t *plan)
{
    if (!plan)
        return;
    free(plan->ops);
    free(plan->phases);
    free(plan->phase_first_message);
    free(plan->notes);
    memset(plan, 0, sizeof(*plan));
}

int nbr_plan_begin_phase(nbr_plan_t *plan)
{
    if (nbr_grow((void **)&plan->phases, &plan->phases_capacity, plan->num_phases + 1, 4,
                 sizeof(nbr_phase_t)) != NBR_SUCCESS)
        return NBR_ERR_NOMEM;
    plan->phases[plan->num_phases].first_op = plan->num_ops;
    plan->phases[plan->num_phases].num_ops = 0;
    plan->num_phases++;
    return NBR_SUCCESS;
}

static int push_op(nbr_plan_t *plan, const nbr_op_t *op)
{
    if (plan->num_phases == 0)
        return NBR_ERR_INTERNAL; /* builder forgot nbr_plan_begin_phase */
    if (op->tag >= 64)
        return NBR_ERR_INTERNAL;
    if (nbr_grow((void **)&plan->ops, &plan->ops_capacity, plan->num_ops + 1, 16,
                 sizeof(nbr_op_t)) != NBR_SUCCESS)
        return NBR_ERR_NOMEM;
    plan->ops[plan->num_ops++] = *op;
    plan->phases[plan->num_phases - 1].num_ops++;
    if (op->kind != NBR_OP_COPY && op->tag + 1 > plan->num_tags)
        plan->num_tags = op->tag + 1;
    return NBR_SUCCESS;
}

int nbr_plan_add_send(nbr_plan_t *plan, int peer, int tag, nbr_buffer_t buf,
                      size_t offset, size_t bytes)
{
    if (peer < 0 || peer >= plan->nranks || tag < 0)
        return NBR_ERR_INTERNAL;
    nbr_op_t op = {.kind = NBR_OP_SEND, .buf = (uint8_t)buf, .tag = (uint8_t)tag,
                   .peer = peer, .offset = offset, .bytes = bytes};
    return push_op(plan, &op);
}

int nbr_plan_add_recv(nbr_plan_t *plan, int peer, int tag, nbr_buffer_t buf,
                      size_t offset, size_t bytes)
{
    if (peer < 0 || peer >= plan->nranks || tag < 0 || buf == NBR_BUF_SEND)
        return NBR_ERR_INTERNAL;
    nbr_op_t op = {.kind = NBR_OP_RECV, .buf = (uint8_t)buf, .tag = (uint8_t)tag,
                   .peer = peer, .offset = offset, .bytes = bytes};
    return push_op(plan, &op);
}

int nbr_plan_add_copy(nbr_plan_t *plan, nbr_buffer_t dst_buf,
                      size_t dst_offset, nbr_buffer_t src_buf,
                      size_t src_offset, size_t bytes)
{
    if (dst_buf == NBR_BUF_SEND)
        return NBR_ERR_INTERNAL;
    nbr_op_t op = {.kind = NBR_OP_COPY, .buf = (uint8_t)dst_buf,
                   .src_buf = (uint8_t)src_buf, .peer = -1,
                   .offset = dst_offset, .src_offset = src_offset, .bytes = bytes};
    return push_op(plan, &op);
}

static void count_send(nbr_plan_stats_t *stats, const nbr_op_t *op, int rank,
                       const int *node_of, const int *socket_of)
{
    int same_node = !node_of || node_of[op->peer] == node_of[rank];
    int same_socket = same_node && (!socket_of || socket_of[op->peer] == socket_of[rank]);
    if (same_node) {
        stats->msgs_intra_node++;
        stats->bytes_intra_node += op->bytes;
    } else {
        stats->msgs_inter_node++;
        stats->bytes_inter_node += op->bytes;
    }
    if (!same_socket) {
        stats->msgs_off_socket++;
        stats->bytes_off_socket += op->bytes;
    }
}

int nbr_plan_seal(nbr_plan_t *plan, const int *node_of, const int *socket_of)
{
    nbr_op_t *sorted = malloc((size_t)(plan->num_ops + 1) * sizeof(nbr_op_t));
    free(plan->phase_first_message);
    plan->phase_first_message = malloc(((size_t)plan->num_phases + 1) * sizeof(int));
    if (!sorted || !plan->phase_first_message) {
        free(sorted);
        return NBR_ERR_NOMEM;
    }
    int total_messages = 0;
    memset(&plan->stats, 0, sizeof(plan->stats));
    plan->max_phase_messages = 0;
    int kept_phases = 0, next = 0;
    for (int p = 0; p < plan->num_phases; p++) {
        const nbr_phase_t phase = plan->phases[p];
        if (phase.num_ops == 0)
            continue;
        int first = next, messages = 0;
        for (int kind = NBR_OP_RECV; kind <= NBR_OP_COPY; kind++)
            for (int i = 0; i < phase.num_ops; i++) {
                const nbr_op_t *op = &plan->ops[phase.first_op + i];
                if (op->kind != kind)
                    continue;
                sorted[next++] = *op;
                if (kind == NBR_OP_SEND)
                    count_send(&plan->stats, op, plan->rank, node_of, socket_of);
                if (kind == NBR_OP_COPY) {
                    plan->stats.local_copies++;
                    plan->stats.bytes_local_copies += op->bytes;
                } else {
                    messages++;
                }
            }
        plan->phases[kept_phases].first_op = first;
        plan->phases[kept_phases].num_ops = next - first;
        plan->phase_first_message[kept_phases] = total_messages;
        total_messages += messages;
        kept_phases++;
        if (messages > plan->max_phase_messages)
            plan->max_phase_messages = messages;
    }
    if (next > 0) /* ops is NULL for an empty plan */
        memcpy(plan->ops, sorted, (size_t)next * sizeof(nbr_op_t));
    free(sorted);
    plan->num_ops = next;
    plan->num_phases = kept_phases;
    plan->phase_first_message[kept_phases] = total_messages;
    return NBR_SUCCESS;
}

int nbr_plan_note(nbr_plan_t *plan, const char *fmt, ...)
{
    char line[512];
    va_list args;
    va_start(args, fmt);
    int length = vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
    if (length < 0)
        return NBR_ERR_INTERNAL;
    size_t need = plan->notes_length + strlen(line) + 2;
    if (need > plan->notes_capacity) {
        size_t capacity = need > 2 * plan->notes_capacity ? need : 2 * plan->notes_capacity;
        char *grown = realloc(plan->notes, capacity);
        if (!grown)
            return NBR_ERR_NOMEM;
        plan->notes = grown;
        plan->notes_capacity = capacity;
    }
    plan->notes_length += (size_t)sprintf(plan->notes + plan->notes_length, "%s\n", line);
    return NBR_SUCCESS;
}

void nbr_plan_print(const nbr_plan_t *plan, FILE *out)
{
    static const char *kinds[] = {"recv", "send", "copy"};
    const nbr_plan_stats_t *s = &plan->stats;
    fprintf(out, "plan %s %s rank %d of %d: %d phases, %d ops, %d tags, scratch %zu B\n",
            plan->algorithm, nbr_collective_name(plan->coll), plan->rank,
            plan->nranks, plan->num_phases, plan->num_ops, plan->num_tags,
            plan->scratch_bytes);
    fprintf(out, "  sent intra-node %llu msgs %llu B, inter-node %llu msgs %llu B, "
                 "off-socket %llu msgs %llu B, local copies %llu (%llu B)\n",
            (unsigned long long)s->msgs_intra_node, (unsigned long long)s->bytes_intra_node,
            (unsigned long long)s->msgs_inter_node, (unsigned long long)s->bytes_inter_node,
            (unsigned long long)s->msgs_off_socket, (unsigned long long)s->bytes_off_socket,
            (unsigned long long)s->local_copies, (unsigned long long)s->bytes_local_copies);
    if (plan->notes_length > 0)
        fprintf(out, "%s", plan->notes);
    for (int p = 0; p < plan->num_phases; p++) {
        fprintf(out, "  phase %d\n", p);
        for (int i = 0; i < plan->phases[p].num_ops; i++) {
            const nbr_op_t *op = &plan->ops[plan->phases[p].first_op + i];
            if (op->kind == NBR_OP_COPY)
                fprintf(out, "    copy %s[%zu..%zu) <- %s[%zu..%zu)\n",
                        nbr_buffer_name(op->buf), op->offset, op->offset + op->bytes,
                        nbr_buffer_name(op->src_buf), op->src_offset,
                        op->src_offset + op->bytes);
            else
                fprintf(out, "    %s %s %d tag %d %s[%zu..%zu)\n", kinds[op->kind],
                        op->kind == NBR_OP_SEND ? "to" : "from", op->peer, op->tag,
                        nbr_buffer_name(op->buf), op->offset, op->offset + op->bytes);
        }
    }
}
