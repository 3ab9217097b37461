#include "harness/traffic.h"

#include <stdio.h>

#include <mpi.h>

#include "nbrcoll.h"

static const char *const counted_names[] = {"model", "measured", "-"};

const char *bh_counted_name(bh_counted_t counted)
{
    return counted_names[counted];
}

void bh_traffic_model(const bh_layout_t *L, const bh_topo_t *t,
                      bh_traffic_t *r)
{
    /* inter msgs, inter bytes, off-socket msgs, intra-socket msgs */
    double v[4] = {0, 0, 0, 0};
    int me = t->rank;
    for (int j = 0; j < t->outdeg; j++) {
        int d = t->out[j];
        int other_node = t->node_of[d] != t->node_of[me];
        if (other_node) {
            v[0] += 1;
            v[1] += (double)bh_send_bytes_on(L, j);
        }
        if (other_node || t->socket_of[d] != t->socket_of[me])
            v[2] += 1;
        else if (d != me)
            v[3] += 1;
    }
    double mine = v[2];
    MPI_Allreduce(MPI_IN_PLACE, v, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &r->offsock_max, 1, MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
    r->inter_msgs = v[0] / t->nranks;
    r->inter_bytes = v[1] / t->nranks;
    r->offsock_msgs = v[2] / t->nranks;
    r->intrasock_msgs = v[3] / t->nranks;
    r->counted = BH_TRAFFIC_MODEL;
}

static void get_counters(const bh_alg_t *a, nbr_counters_t *c)
{
    int rc = nbr_get_counters(a->comm, c);
    if (rc != NBR_SUCCESS)
        bh_die_nbr(rc, "nbr_get_counters");
}

uint64_t bh_traffic_measured(const bh_alg_t *a, const bh_topo_t *t,
                             int iters, bh_traffic_t *r)
{
    nbr_counters_t c;
    get_counters(a, &c);
    /* every message is intra- or inter-node; the off-socket ones are
     * among them, the rest stay on the socket */
    uint64_t v[5] = {c.msgs_inter_node, c.bytes_inter_node,
                     c.msgs_off_socket, c.calls,
                     c.msgs_intra_node + c.msgs_inter_node - c.msgs_off_socket};
    double mine = (double)c.msgs_off_socket / iters;
    MPI_Allreduce(MPI_IN_PLACE, v, 5, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &r->offsock_max, 1, MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
    double per = (double)t->nranks * iters;
    r->inter_msgs = (double)v[0] / per;
    r->inter_bytes = (double)v[1] / per;
    r->offsock_msgs = (double)v[2] / per;
    r->intrasock_msgs = (double)v[4] / per;
    r->counted = BH_TRAFFIC_MEASURED;
    return v[3];
}

void bh_report_device_paths(const bh_alg_t *a, const bh_topo_t *t,
                            int iters, uint64_t bytes)
{
    nbr_counters_t c;
    get_counters(a, &c);
    uint64_t v[3] = {c.bytes_ipc_pulled, c.bytes_staged, c.copy_batches};
    MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    double per = (double)t->nranks * iters;
    if (t->rank == 0)
        printf("# %s at %llu B: per rank and call %.0f B pulled over IPC, "
               "%.0f B staged through host memory, %.1f copy launches\n",
               a->name, (unsigned long long)bytes, (double)v[0] / per,
               (double)v[1] / per, (double)v[2] / per);
}
