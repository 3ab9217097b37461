// The host algorithms halving and combining under MPI: virtual sockets
// (nbr_ranks_per_socket, 2 unless the environment says otherwise), every
// call bit-exact against MPI_Neighbor_allgather(v), blocking, nonblocking
// and persistent; for halving also the off-socket bound on the counters.
#include "mpi_cases.h"
#include "mpi_harness.h"

#include <nbrcoll.h>
extern "C" {
#include "alg/select.h"
#include "base/graph_gen.h"
#include "front/select.h"
}

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

using nbrtest::all_ranks;
using nbrtest::world_rank;
using nbrtest::world_size;

namespace {

struct HostAlgorithms : nbrtest::MpiTest {};

int ranks_per_socket()
{
    const char *env = std::getenv("NBR_RANKS_PER_SOCKET");
    return env && *env ? std::atoi(env) : 2;
}

int count_of(int rank, int n) { return n == 0 ? 0 : n + (rank * 7) % 11; }

void check_graph(const nbr_graph_t *g, const std::string &what, const char *algorithm)
{
    nbrtest::RankComm c(g, {{"nbr_algorithm", algorithm}, {"nbr_ranks_per_socket", "2"}});
    if (!c.ready(what, algorithm))
        return;
    int rc = NBR_SUCCESS;
    const int me = world_rank(), indeg = (int)c.in.size(), P = world_size();
    const int L = ranks_per_socket();
    // halving keeps its off-socket bound; combining sends at most one
    // message per rank; auto may choose leader, which splits blocks
    const std::string name = algorithm;
    const int bound = name == "auto" || name == "mpi" ? INT32_MAX
                      : name != "halving" ? P
                      : P > L             ? (int)std::ceil(std::log2((double)P / L)) + 1
                                          : 0;
    for (int n : {0, 1, 7, 1000, 65537}) {
        std::vector<int> send(n + 1), got((size_t)n * indeg + 1, -1),
            want((size_t)n * indeg + 1, -1);
        // another block size: its calls decide again (else a relay keeps
        // the agreed size, and its guard falls back to naive's messages)
        EXPECT_EQ(nbr_comm_retune(c.comm), NBR_SUCCESS);
        // blocking, with the off-socket bound on the counters
        nbrtest::fill_ints(send, me, 0);
        EXPECT_EQ(nbr_reset_counters(c.comm), NBR_SUCCESS);
        EXPECT_EQ(nbr_neighbor_allgather(send.data(), n, MPI_INT, got.data(), n, MPI_INT, c.comm),
                  NBR_SUCCESS);
        MPI_Neighbor_allgather(send.data(), n, MPI_INT, want.data(), n, MPI_INT, c.comm);
        EXPECT_EQ(got, want) << what << ": allgather of " << n << " ints on rank " << me;
        nbr_counters_t k{};
        EXPECT_EQ(nbr_get_counters(c.comm, &k), NBR_SUCCESS);
        EXPECT_LE((int)k.msgs_off_socket, bound) << what << ": rank " << me << ", " << n << " ints";
        // nonblocking
        std::fill(got.begin(), got.end(), -1);
        nbr_request_t req = NBR_REQUEST_NULL;
        EXPECT_EQ(nbr_neighbor_iallgather(send.data(), n, MPI_INT, got.data(), n, MPI_INT, c.comm,
                                          &req), NBR_SUCCESS);
        EXPECT_EQ(nbr_wait(&req), NBR_SUCCESS);
        EXPECT_EQ(got, want) << what << ": iallgather of " << n << " ints on rank " << me;
        // persistent, three runs with new data
        rc = nbr_neighbor_allgather_init(send.data(), n, MPI_INT, got.data(), n, MPI_INT, c.comm,
                                         MPI_INFO_NULL, &req);
        EXPECT_EQ(rc, NBR_SUCCESS);
        for (int round = 1; round <= 3 && rc == NBR_SUCCESS; round++) {
            nbrtest::fill_ints(send, me, round);
            EXPECT_EQ(nbr_start(&req), NBR_SUCCESS);
            EXPECT_EQ(nbr_wait(&req), NBR_SUCCESS);
            MPI_Neighbor_allgather(send.data(), n, MPI_INT, want.data(), n, MPI_INT, c.comm);
            EXPECT_EQ(got, want) << what << ": persistent run " << round << ", n " << n;
        }
        if (req != NBR_REQUEST_NULL)
            nbr_request_free(&req);
        // allgatherv (halving and combining relay through their size round),
        // uneven counts with gaps
        std::vector<int> counts(indeg + 1), displs(indeg + 1);  // never NULL for Open MPI
        int total = 0;
        for (int i = 0; i < indeg; i++) {
            counts[i] = count_of(c.in[i], n);
            displs[i] = total;
            total += counts[i] + 2;
        }
        // one spare element: Open MPI rejects a NULL buffer even with count 0
        const int vcount = count_of(me, n);
        std::vector<int> vsend(vcount + 1), vgot(total + 1, -1), vwant(total + 1, -1);
        nbrtest::fill_ints(vsend, me, 9);
        EXPECT_EQ(nbr_neighbor_allgatherv(vsend.data(), vcount, MPI_INT, vgot.data(),
                                          counts.data(), displs.data(), MPI_INT, c.comm),
                  NBR_SUCCESS);
        MPI_Neighbor_allgatherv(vsend.data(), vcount, MPI_INT, vwant.data(),
                                counts.data(), displs.data(), MPI_INT, c.comm);
        EXPECT_EQ(vgot, vwant) << what << ": allgatherv, n " << n;
    }
}

class PerAlgorithm : public HostAlgorithms, public ::testing::WithParamInterface<const char *> {};

TEST_P(PerAlgorithm, ErdosRenyi)
{
    for (double density : {0.05, 0.3, 0.7, 1.0}) {
        nbr_graph_t g;
        nbr_graph_erdos_renyi(world_size(), density, 17, &g);
        check_graph(&g, "rsg " + std::to_string(density), GetParam());
        nbr_graph_free(&g);
    }
}

TEST_P(PerAlgorithm, MooreAndMultigraphs)
{
    nbr_graph_t g;
    nbr_graph_moore(world_size(), 2, 2, &g);
    check_graph(&g, "moore d2 r2", GetParam());
    nbr_graph_free(&g);
    nbr_graph_random_multi(world_size(), 6, 3, &g);
    check_graph(&g, "multigraph", GetParam());
    nbr_graph_free(&g);
}

// allgatherv through relays (halving, combining): a receiver whose count
// disagrees with what its sender announced in the size round gets
// NBR_ERR_TYPE_MISMATCH; everyone else completes.
TEST_F(HostAlgorithms, RelayAllgathervSizeMismatchIsReported)
{
    for (const char *algorithm : {"halving", "combining"}) {
        nbr_graph_t g;
        nbr_graph_erdos_renyi(world_size(), 1.0, 5, &g);
        nbrtest::RankComm c(&g, {{"nbr_algorithm", algorithm}, {"nbr_ranks_per_socket", "2"}});
        nbr_graph_free(&g);
        if (!all_ranks(c.rc == NBR_SUCCESS))
            return;
        const int me = world_rank(), indeg = (int)c.in.size();
        std::vector<int> counts(indeg + 1, 10), displs(indeg + 1);
        for (int i = 0; i < indeg; i++)
            displs[i] = 10 * i;
        const bool liar = me == world_size() - 1 && indeg > 0;
        if (liar)
            counts[0] = 9; // expects one int less from its first in-neighbor
        std::vector<int> send(11, me), recv(10 * (size_t)indeg + 1, -1);
        const int rc = nbr_neighbor_allgatherv(send.data(), 10, MPI_INT, recv.data(),
                                               counts.data(), displs.data(), MPI_INT, c.comm);
        EXPECT_EQ(rc, liar ? NBR_ERR_TYPE_MISMATCH : NBR_SUCCESS) << algorithm << ", rank " << me;
        EXPECT_TRUE(all_ranks(true)) << algorithm << ": every rank got here";
    }
}

// Several multi-phase operations in flight, waited for in opposite orders
// on even and odd ranks (legal in MPI): waiting on one must move the
// others, or a peer stuck behind an unposted phase never returns.
TEST_P(PerAlgorithm, WaitsInDifferentOrders)
{
    nbr_graph_t g;
    nbr_graph_erdos_renyi(world_size(), 0.6, 23, &g);
    nbrtest::RankComm c(&g, {{"nbr_algorithm", GetParam()}, {"nbr_ranks_per_socket", "2"}});
    nbr_graph_free(&g);
    if (!c.ready("waits in different orders", GetParam()))
        return;
    const int me = world_rank(), indeg = (int)c.in.size(), n = 300, ops = 4;
    std::vector<std::vector<int>> send(ops, std::vector<int>(n)), got(ops), want(ops);
    std::vector<nbr_request_t> req(ops, NBR_REQUEST_NULL);
    for (int k = 0; k < ops; k++) {
        nbrtest::fill_ints(send[k], me, k);
        got[k].assign((size_t)n * indeg + 1, -1);
        want[k].assign((size_t)n * indeg + 1, -1);
        EXPECT_EQ(nbr_neighbor_iallgather(send[k].data(), n, MPI_INT, got[k].data(), n, MPI_INT,
                                          c.comm, &req[k]), NBR_SUCCESS);
    }
    for (int i = 0; i < ops; i++) {
        const int k = me % 2 ? ops - 1 - i : i;
        EXPECT_EQ(nbr_wait(&req[k]), NBR_SUCCESS) << "operation " << k << " on rank " << me;
    }
    for (int k = 0; k < ops; k++) {
        MPI_Neighbor_allgather(send[k].data(), n, MPI_INT, want[k].data(), n, MPI_INT, c.comm);
        EXPECT_EQ(got[k], want[k]) << "operation " << k << " on rank " << me;
    }
}

// auto: every rank prices every candidate for itself, and ranks do prefer
// different ones (a star's centre sends to everyone, its leaves to one);
// the job's price (the max) must still give one choice on every rank, the
// one nbr_select_choose makes of those maxima, and results stay exact.
TEST_F(HostAlgorithms, AutoChoosesAlikeWhereRanksPreferDifferently)
{
    const int me = world_rank(), P = world_size();
    int differing = 0, checked = 0;
    for (int shape = 0; shape < 3; shape++) {
        nbr_graph_t g;
        if (shape == 0)
            nbr_graph_star(P, 0, 1, &g);
        else if (shape == 1)
            nbr_graph_erdos_renyi(P, 0.6, 31, &g);
        else
            nbr_graph_moore(P, 2, 2, &g);
        nbrtest::RankComm c(&g, {{"nbr_algorithm", "auto"}, {"nbr_ranks_per_node", "2"}});
        nbr_graph_free(&g);
        if (!c.ready("auto", "auto"))
            continue;
        nbr_comm_t *state = nullptr;
        EXPECT_EQ(nbr_comm_get(c.comm, MPI_INFO_NULL, &state), NBR_SUCCESS);
        const int indeg = (int)c.in.size();
        for (int n : {1, 64, 4096, 65536}) {
            nbr_layout_t layout{};
            nbr_layout_init(&layout, NBR_COLL_ALLGATHER, 1, indeg);
            layout.send[0] = {0, (size_t)n * sizeof(int)};
            for (int i = 0; i < indeg; i++)
                layout.recv[i] = {(size_t)i * n * sizeof(int), (size_t)n * sizeof(int)};
            std::vector<const nbr_algorithm_t *> cand(nbr_algorithm_count());
            std::vector<nbr_sim_parts_t> mine(cand.size() + 1);
            std::vector<double> own(cand.size() + 1), job(cand.size() + 1);
            int count = 0, fallback = -1;
            const nbr_priced_call_t priced = {NBR_CALL_ALLGATHER, (size_t)n * sizeof(int),
                                              (size_t)n * sizeof(int), nullptr, 0, 1};
            const int tags = nbr_comm_next_tag_base(state, 0);
            EXPECT_EQ(nbr_select_local_prices(state, &layout, &priced, tags, cand.data(),
                                              mine.data(), &count, &fallback),
                      NBR_SUCCESS);
            nbr_layout_free(&layout);
            for (int k = 0; k < count; k++)
                own[k] = mine[k].seconds;
            const int local = nbr_select_choose(own.data(), count, fallback);
            int low = 0, high = 0;
            MPI_Allreduce(&local, &low, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            MPI_Allreduce(&local, &high, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            differing += low != high;
            EXPECT_EQ(nbr_select_job_prices(state, mine.data(), count, tags, job.data(), nullptr),
                      NBR_SUCCESS);
            const int expected = nbr_select_choose(job.data(), count, fallback);
            // the call itself, bit-exact, and what it chose (decided
            // afresh for this block size)
            EXPECT_EQ(nbr_comm_retune(c.comm), NBR_SUCCESS);
            std::vector<int> send(n, me), got((size_t)n * indeg + 1, -1),
                want((size_t)n * indeg + 1, -1);
            nbrtest::fill_ints(send, me, n);
            EXPECT_EQ(nbr_neighbor_allgather(send.data(), n, MPI_INT, got.data(), n, MPI_INT,
                                             c.comm),
                      NBR_SUCCESS);
            MPI_Neighbor_allgather(send.data(), n, MPI_INT, want.data(), n, MPI_INT, c.comm);
            EXPECT_EQ(got, want) << "shape " << shape << ", " << n << " ints, rank " << me;
            const char *name = nullptr;
            EXPECT_EQ(nbr_comm_algorithm(c.comm, &name), NBR_SUCCESS);
            int index = -1;
            for (int k = 0; k < count && name; k++)
                if (std::string(cand[k]->name) == name)
                    index = k;
            EXPECT_EQ(index, expected) << "rank " << me << " ran " << (name ? name : "?");
            MPI_Allreduce(&index, &low, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            MPI_Allreduce(&index, &high, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            EXPECT_EQ(low, high) << "ranks ran different algorithms";
            checked++;
        }
    }
    EXPECT_EQ(checked, 12);
    if (P >= 4) {
        EXPECT_GT(differing, 0) << "no case where ranks prefer different algorithms locally";
    }
}

// What auto decided (and the state of its trial) for the blocking
// allgathers on the communicator of state; nullptr before any.
const nbr_decision_t *allgather_decision(nbr_comm_t *state)
{
    const nbr_decision_t *d = &nbr_comm_stream(state, NBR_CALL_ALLGATHER, 1)->decision;
    return d->valid ? d : nullptr;
}

// auto's trial: after the deciding call, the priced winner and then each of
// its rivals run 1 + nbr_auto_trials blocking calls, then every rank keeps
// the same one of them; nonblocking calls meanwhile run the winner and leave
// the trial alone. Every call bit-exact. nbr_auto_trials 0: the priced
// winner throughout.
TEST_F(HostAlgorithms, AutoTrialRunsEverySideThenAgrees)
{
    const int me = world_rank(), P = world_size(), n = 256;
    // CMake starts this program on 4, 8 and 16 ranks
    ASSERT_GE(P, 2) << "a trial needs two ranks";
    for (int trials : {2, 0}) {
        nbr_graph_t g;
        nbr_graph_moore(P, 2, 2, &g);
        nbrtest::RankComm c(&g, {{"nbr_algorithm", "auto"},
                                 {"nbr_ranks_per_node", "2"},
                                 {"nbr_auto_trials", std::to_string(trials)}});
        nbr_graph_free(&g);
        if (!c.ready("auto", "auto"))
            continue;
        const int indeg = (int)c.in.size();
        std::vector<int> send(n), got((size_t)n * indeg + 1), want((size_t)n * indeg + 1);
        auto ran_now = [&]() {
            const char *name = nullptr;
            EXPECT_EQ(nbr_comm_algorithm(c.comm, &name), NBR_SUCCESS);
            return std::string(name ? name : "?");
        };
        auto call = [&](int k, bool blocking) {
            nbrtest::fill_ints(send, me, k);
            std::fill(got.begin(), got.end(), -1);
            std::fill(want.begin(), want.end(), -1);
            if (blocking) {
                EXPECT_EQ(nbr_neighbor_allgather(send.data(), n, MPI_INT, got.data(), n,
                                                 MPI_INT, c.comm),
                          NBR_SUCCESS);
            } else {
                nbr_request_t req = NBR_REQUEST_NULL;
                EXPECT_EQ(nbr_neighbor_iallgather(send.data(), n, MPI_INT, got.data(), n,
                                                  MPI_INT, c.comm, &req),
                          NBR_SUCCESS);
                EXPECT_EQ(nbr_wait(&req), NBR_SUCCESS);
            }
            MPI_Neighbor_allgather(send.data(), n, MPI_INT, want.data(), n, MPI_INT, c.comm);
            EXPECT_EQ(got, want) << "trials " << trials << ", call " << k << ", rank " << me;
            return ran_now();
        };
        const std::string winner = call(0, true);
        // the trial's sides, as the decision holds them
        nbr_comm_t *state = nullptr;
        ASSERT_EQ(nbr_comm_get(c.comm, MPI_INFO_NULL, &state), NBR_SUCCESS);
        const nbr_decision_t *d = allgather_decision(state);
        ASSERT_NE(d, nullptr);
        int pending = -1;
        EXPECT_EQ(nbr_comm_trial_pending(c.comm, nullptr), NBR_ERR_ARG);
        EXPECT_EQ(nbr_comm_trial_pending(c.comm, &pending), NBR_SUCCESS);
        EXPECT_EQ(pending, trials > 0 ? 1 : 0) << "a trial follows the deciding call";
        if (trials == 0) {
            EXPECT_EQ(d->num_sides, 0);
            for (int k = 1; k < 6; k++)
                EXPECT_EQ(call(k, true), winner) << "no trial: call " << k;
            continue;
        }
        ASSERT_GE(d->num_sides, 2) << "Moore d2 r2 on virtual nodes has rivals to try";
        // a first trial, and a second (the winner, the first's, those close
        // to it and the baseline) when the first overturned the price; sides
        // in turns
        // the first round is not counted; cheap calls get more rounds
        const int least = trials + 1, most = NBR_AUTO_TRIALS_MAX + 1;
        std::vector<std::string> names;
        int k = 1, rounds = 0;
        for (; d->num_sides > 0 && rounds < 3; rounds++) {
            std::vector<std::string> now;
            for (int t = 0; t < d->num_sides; t++)
                now.push_back(d->sides[t]->name);
            EXPECT_EQ(now[0], winner) << "every trial includes the priced winner";
            if (rounds == 1) {
                EXPECT_GE(now.size(), 2u) << "the second trial: the winner against the first's";
                EXPECT_LE(now.size(), (size_t)NBR_TRIAL_SIDES) << "close ones and the baseline";
            }
            names.insert(names.end(), now.begin(), now.end());
            const int sides = (int)now.size(), retried = d->retried;
            int j = 0;
            for (; d->num_sides > 0 && d->retried == retried && j <= sides * most; j++) {
                // round r starts at its r-th side
                EXPECT_EQ(call(k++, true), now[(j % sides + j / sides) % sides])
                    << "round " << rounds << ", call " << j;
                if (rounds == 0 && j == 0) {
                    // (without MPI's progress hook, MPICH's case, one
                    // message per edge: the baseline)
                    const std::string nonblocking =
                        state->no_progress_hook
                            ? nbr_select_baseline(nbr_comm_library_usable(state, NBR_COLL_ALLGATHER))
                                  ->name
                            : winner;
                    EXPECT_EQ(call(100, false), nonblocking)
                        << "a nonblocking call runs the winner (with the hook)";
                }
            }
            EXPECT_EQ(j % sides, 0) << "whole rounds";
            EXPECT_GE(j, sides * least) << "at least nbr_auto_trials counted rounds";
            EXPECT_LE(j, sides * most) << "at most " << NBR_AUTO_TRIALS_MAX;
            EXPECT_EQ(j, sides * (d->calls + 1)) << "as many as the decision says";
        }
        EXPECT_GE(rounds, 1);
        EXPECT_LE(rounds, 2);
        const std::string kept = call(k++, true);
        EXPECT_NE(std::find(names.begin(), names.end(), kept), names.end()) << kept;
        EXPECT_EQ(call(k++, true), kept);
        EXPECT_EQ(d->num_sides, 0) << "the trial is over";
        EXPECT_EQ(nbr_comm_trial_pending(c.comm, &pending), NBR_SUCCESS);
        EXPECT_EQ(pending, 0) << "the trial is over";
        int mine = (int)(std::find(names.begin(), names.end(), kept) - names.begin());
        int low = 0, high = 0;
        MPI_Allreduce(&mine, &low, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&mine, &high, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        EXPECT_EQ(low, high) << "ranks kept different algorithms after the trial";
    }
}

// A persistent request of the library row calls the library again at every
// start with the types of its _init; MPI lets the program free its types
// after _init, so the request must hold its own.
TEST_F(HostAlgorithms, LibraryPersistentOutlivesTheUsersTypes)
{
    nbr_graph_t g;
    nbr_graph_erdos_renyi(world_size(), 0.6, 29, &g);
    nbrtest::RankComm c(&g, {{"nbr_algorithm", "mpi"}});
    nbr_graph_free(&g);
    if (!c.ready("library persistent request", "mpi"))
        return;
    const int me = world_rank(), indeg = (int)c.in.size(), n = 100;
    MPI_Datatype pair, pair_too;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Type_dup(pair, &pair_too);
    std::vector<int> send(2 * n), got((size_t)2 * n * indeg + 1, -1),
        want((size_t)2 * n * indeg + 1, -1);
    nbr_request_t req = NBR_REQUEST_NULL;
    ASSERT_EQ(nbr_neighbor_allgather_init(send.data(), n, pair, got.data(), n, pair_too, c.comm,
                                          MPI_INFO_NULL, &req),
              NBR_SUCCESS);
    MPI_Type_free(&pair);
    MPI_Type_free(&pair_too);
    for (int round = 0; round < 2; round++) {
        nbrtest::fill_ints(send, me, round);
        std::fill(got.begin(), got.end(), -1);
        EXPECT_EQ(nbr_start(&req), NBR_SUCCESS);
        EXPECT_EQ(nbr_wait(&req), NBR_SUCCESS);
        MPI_Neighbor_allgather(send.data(), 2 * n, MPI_INT, want.data(), 2 * n, MPI_INT, c.comm);
        EXPECT_EQ(got, want) << "round " << round << " on rank " << me;
    }
    EXPECT_EQ(nbr_request_free(&req), NBR_SUCCESS);
}

// On a star (the center has no in-neighbors, the leaves no out-neighbors)
// the mpi algorithm's alltoallv and alltoallw deliver every block, with
// counts MPI would refuse on each empty side (MPI reads none of them).
// MPICH 4.0's own alltoallw takes its counts over the wrong degree there
// (it delivered nothing, or failed on the garbage): nbrcoll leaves the
// library out on such communicators.
TEST_F(HostAlgorithms, LibraryRowOnUnequalDegrees)
{
    nbr_graph_t g;
    nbr_graph_star(world_size(), 0, 1, &g);
    nbrtest::RankComm c(&g, {{"nbr_algorithm", "mpi"}});
    nbr_graph_free(&g);
    if (!c.ready("library call on a star", "mpi"))
        return;
    const int me = world_rank(), indeg = (int)c.in.size(), outdeg = (int)c.out.size(), n = 7;
    const int garbage = -5;
    auto counts = [&](int degree) { return std::vector<int>((size_t)degree + 1, degree ? n : garbage); };
    auto displs = [&](int degree) {
        std::vector<int> d((size_t)degree + 1, degree ? 0 : 1 << 30);
        for (int k = 0; k < degree; k++)
            d[(size_t)k] = k * n;
        return d;
    };
    std::vector<int> scounts = counts(outdeg), rcounts = counts(indeg), sdispls = displs(outdeg),
                     rdispls = displs(indeg);
    std::vector<int> clean_s((size_t)outdeg + 1, n), clean_r((size_t)indeg + 1, n);
    std::vector<MPI_Aint> swdispls(sdispls.begin(), sdispls.end()), rwdispls(rdispls.begin(), rdispls.end());
    for (auto &d : swdispls)
        d *= (MPI_Aint)sizeof(int);
    for (auto &d : rwdispls)
        d *= (MPI_Aint)sizeof(int);
    std::vector<MPI_Datatype> stypes((size_t)outdeg + 1, outdeg ? MPI_INT : MPI_DATATYPE_NULL),
        rtypes((size_t)indeg + 1, indeg ? MPI_INT : MPI_DATATYPE_NULL);
    std::vector<int> send((size_t)n * (outdeg + 1)), got((size_t)n * indeg + 1, -1),
        want((size_t)n * indeg + 1, -1);
    std::vector<int> zero((size_t)std::max(indeg, outdeg) + 1, 0);
    nbrtest::fill_ints(send, me, 3);
    for (int w = 0; w < 2; w++) {
        std::fill(got.begin(), got.end(), -1);
        nbr_request_t req = NBR_REQUEST_NULL;
        int rc = w ? nbr_neighbor_ialltoallw(send.data(), scounts.data(), swdispls.data(),
                                             stypes.data(), got.data(), rcounts.data(),
                                             rwdispls.data(), rtypes.data(), c.comm, &req)
                   : nbr_neighbor_ialltoallv(send.data(), scounts.data(), sdispls.data(), MPI_INT,
                                             got.data(), rcounts.data(), rdispls.data(), MPI_INT,
                                             c.comm, &req);
        ASSERT_EQ(rc, NBR_SUCCESS) << (w ? "alltoallw" : "alltoallv") << " on rank " << me;
        EXPECT_EQ(nbr_wait(&req), NBR_SUCCESS) << (w ? "alltoallw" : "alltoallv") << " on rank " << me;
        MPI_Neighbor_alltoallv(send.data(), outdeg ? clean_s.data() : zero.data(),
                               outdeg ? sdispls.data() : zero.data(), MPI_INT, want.data(),
                               indeg ? clean_r.data() : zero.data(),
                               indeg ? rdispls.data() : zero.data(), MPI_INT, c.comm);
        EXPECT_EQ(got, want) << (w ? "alltoallw" : "alltoallv") << " on rank " << me;
    }
}

// The trial's rule on given times (every rank reports the same, so the
// slowest rank's are these): the fastest side is kept, but a plan of
// nbrcoll's own must beat the baseline (called mpi here) by 3 %; when
// the kept one is not the priced winner, a second trial of the winner, it,
// the sides within 10 % of it and the baseline decides.
TEST_F(HostAlgorithms, AutoTrialKeepsTheBaselineOnNearTies)
{
    nbr_graph_t g;
    nbr_graph_moore(world_size(), 2, 1, &g);
    nbrtest::RankComm c(&g, {{"nbr_algorithm", "auto"}, {"nbr_auto_trials", "3"}});
    nbr_graph_free(&g);
    if (!c.ready("auto", "auto"))
        return;
    nbr_comm_t *state = nullptr;
    ASSERT_EQ(nbr_comm_get(c.comm, MPI_INFO_NULL, &state), NBR_SUCCESS);
    const nbr_algorithm_t *halving = nbr_algorithm_find("halving"),
                          *combining = nbr_algorithm_find("combining"),
                          *mpi = nbr_select_baseline(nbr_comm_library_usable(state, NBR_COLL_ALLGATHER));
    // the library without the device layer, naive with it (NBR_DEVICE=emulate)
    EXPECT_STREQ(mpi->name, nbr_comm_library_usable(state, NBR_COLL_ALLGATHER) ? "mpi" : "naive");
    // runs one trial over sides with these times (us) per side; returns
    // the counted calls per side
    auto run = [&](nbr_decision_t *d, std::vector<double> us) {
        EXPECT_EQ((size_t)d->num_sides, us.size());
        const int sides = d->num_sides, retried = d->retried;
        int k = 0;
        for (; d->num_sides == sides && d->retried == retried && k < 1000; k++) {
            EXPECT_EQ(nbr_trial_side(d), (k % sides + k / sides) % sides) << "call " << k;
            EXPECT_EQ(nbr_comm_trial_record(state, d, us[nbr_trial_side(d)] * 1e-6), NBR_SUCCESS);
        }
        EXPECT_EQ(k % sides, 0);
        return k / sides - 1;
    };
    auto fresh = [&]() {
        nbr_decision_t d{};
        d.valid = 1;
        d.kind = NBR_CALL_ALLGATHER;
        d.algorithm = halving; // the priced winner
        d.num_sides = 3;
        d.sides[0] = halving;
        d.sides[1] = mpi;
        d.sides[2] = combining;
        state->trials++; // as keeping a decision on trial does
        return d;
    };
    nbr_decision_t d = fresh();
    // as many rounds as fit in 100 ms per side by the sides' calls of the
    // first counted round together (3.94 ms for 3 sides), at least
    // nbr_auto_trials (3 here), at most NBR_AUTO_TRIALS_MAX
    EXPECT_EQ(run(&d, {1000, 1040, 1900}), 76);
    EXPECT_EQ(d.num_sides, 0) << "the priced winner was fastest by 4 %: no second trial";
    EXPECT_EQ(d.algorithm, halving);

    d = fresh();
    run(&d, {1000, 1010, 980}); // 1-3 % faster than mpi: near-ties
    ASSERT_EQ(d.num_sides, 3) << "mpi kept over combining, so a second trial against halving, "
                                 "with combining (close) again";
    EXPECT_EQ(d.sides[0], halving);
    EXPECT_EQ(d.sides[1], mpi);
    EXPECT_EQ(d.sides[2], combining);
    EXPECT_EQ(run(&d, {3100, 3070, 3130}), 32);
    EXPECT_EQ(d.num_sides, 0);
    EXPECT_EQ(d.algorithm, mpi) << "halving 1 % slower than mpi in both trials";

    d = fresh();
    EXPECT_EQ(run(&d, {16000, 16000, 14400}), 6); // combining 10 % faster; dear calls: 6
    ASSERT_EQ(d.num_sides, 3) << "the winner, the first trial's and the baseline";
    EXPECT_EQ(d.sides[0], halving);
    EXPECT_EQ(d.sides[1], combining);
    EXPECT_EQ(d.sides[2], mpi);
    EXPECT_EQ(run(&d, {10, 9.6, 9.8}), NBR_AUTO_TRIALS_MAX); // 2 % faster: the baseline stays
    EXPECT_EQ(d.num_sides, 0);
    EXPECT_EQ(d.algorithm, mpi);

    // four sides: one that beat the priced winner within 10 % of the first
    // trial's fastest runs again; one further behind does not, nor one
    // within 10 % that lost to the priced winner
    const nbr_algorithm_t *leader = nbr_algorithm_find("leader");
    const struct {
        double halving_us, leader_us;
        bool close;
    } cases[] = {{1000, 940, true}, {1000, 1000, false}, {950, 980, false}};
    for (const auto &c4 : cases) {
        d = fresh();
        d.num_sides = 4;
        d.sides[3] = leader;
        run(&d, {c4.halving_us, 1100, 900, c4.leader_us});
        const bool close = c4.close;
        ASSERT_EQ(d.num_sides, close ? 4 : 3) << "leader at " << c4.leader_us << " us";
        EXPECT_EQ(d.sides[0], halving);
        EXPECT_EQ(d.sides[1], combining);
        if (close) {
            EXPECT_EQ(d.sides[2], leader);
        }
        EXPECT_EQ(d.sides[d.num_sides - 1], mpi) << "the baseline last";
        std::vector<double> second(d.num_sides, 1000.0);
        second[close ? 2 : 1] = 800; // leader, or combining, now clearly ahead
        run(&d, second);
        EXPECT_EQ(d.num_sides, 0);
        EXPECT_EQ(d.algorithm, close ? leader : combining);
    }

    // a side is rated by the mean of its middle half of calls, not by its
    // median: halving's calls alternate 1300 and 900 us (67 counted: the
    // round of 4450 us fits 67 in 3 x 100 ms), the middle half's mean 1106
    // against combining's steady 1150, where the median (1300) would have
    // rated combining faster and called a second trial
    d = fresh();
    int halving_calls = 0;
    for (int k = 0; d.num_sides == 3 && d.retried == 0 && k < 1000; k++) {
        const nbr_algorithm_t *side = d.sides[nbr_trial_side(&d)];
        double t = side == halving ? (halving_calls++ % 2 ? 1300 : 900) : side == mpi ? 2000 : 1150;
        EXPECT_EQ(nbr_comm_trial_record(state, &d, t * 1e-6), NBR_SUCCESS);
    }
    EXPECT_EQ(halving_calls, 68) << "one uncounted, 67 counted";
    EXPECT_EQ(d.num_sides, 0) << "no second trial";
    EXPECT_EQ(d.algorithm, halving);
    EXPECT_EQ(state->trials, 0) << "every trial counted out as it ended";
}

// No trial where the winner is priced above 200 ms a call: on a 10 Mbit/s
// network (this rank's own machine file), 1 MiB blocks to 24 neighbors on
// virtual nodes of 2 cost seconds; a small block still gets its trial.
TEST_F(HostAlgorithms, AutoTrialsOnlyWhereCallsAreCheap)
{
    const int me = world_rank(), P = world_size();
    ASSERT_GE(P, 4) << "needs two virtual nodes of two";
    const std::string machine = "/tmp/nbr-test-slow-" + std::to_string(getpid()) + ".machine";
    { /* the emulated cluster's file with its network at 10 Mbit/s */
        std::ifstream emulated(std::string(NBR_SOURCE_DIR) + "/topo/emulated-4x4-1gbit.machine");
        std::ofstream file(machine);
        for (std::string line; std::getline(emulated, line);) {
            if (line.rfind("path network", 0) == 0)
                line = "path network alpha_us=50 gbytes_per_s=0.00125";
            else if (line.rfind("nics", 0) == 0)
                line = "nics 1 gbytes_per_s=0.00125";
            file << line << "\n";
        }
        ASSERT_TRUE(emulated.eof() && file.good()) << machine;
    }
    nbr_graph_t g;
    nbr_graph_moore(P, 2, 2, &g);
    nbrtest::RankComm c(&g, {{"nbr_algorithm", "auto"},
                             {"nbr_ranks_per_node", "2"},
                             {"nbr_machine", machine}});
    std::remove(machine.c_str()); /* read when the communicator was made */
    nbr_graph_free(&g);
    if (!c.ready("auto", "auto"))
        return;
    nbr_comm_t *state = nullptr;
    ASSERT_EQ(nbr_comm_get(c.comm, MPI_INFO_NULL, &state), NBR_SUCCESS);
    const int indeg = (int)c.in.size();
    for (int n : {4, 262144}) { // 16 B and 1 MiB blocks, each decided afresh
        EXPECT_EQ(nbr_comm_retune(c.comm), NBR_SUCCESS);
        std::vector<int> send(n), got((size_t)n * indeg + 1, -1), want((size_t)n * indeg + 1, -1);
        nbrtest::fill_ints(send, me, n);
        EXPECT_EQ(nbr_neighbor_allgather(send.data(), n, MPI_INT, got.data(), n, MPI_INT, c.comm),
                  NBR_SUCCESS);
        MPI_Neighbor_allgather(send.data(), n, MPI_INT, want.data(), n, MPI_INT, c.comm);
        EXPECT_EQ(got, want) << n << " ints, rank " << me;
        const nbr_decision_t *d = allgather_decision(state);
        ASSERT_NE(d, nullptr);
        if (n == 4)
            EXPECT_GE(d->num_sides, 2) << "16 B blocks: a trial";
        else
            EXPECT_EQ(d->num_sides, 0) << "1 MiB blocks at 10 Mbit/s: priced above 200 ms";
    }
}

INSTANTIATE_TEST_SUITE_P(Host, PerAlgorithm,
                         ::testing::Values("halving", "combining", "auto", "mpi"));

// The library's blocking collective must not shut nbrcoll's own requests
// out: with a relay plan (halving, one rank per socket: several phases) in
// flight on the same communicator, even ranks make a blocking mpi call
// before waiting for it and odd ranks after (legal in MPI). Blocking inside
// the library there would hang: the even rank would wait in it for the odd
// one, which waits for the relay's next phase from the even one.
TEST_F(HostAlgorithms, LibraryCallKeepsOtherRequestsMoving)
{
    ASSERT_GE(world_size(), 4) << "run with 4 or more ranks: halving needs several phases";
    nbr_graph_t g;
    nbr_graph_erdos_renyi(world_size(), 1.0, 23, &g); // every rank relays for others
    nbrtest::RankComm c(&g, {{"nbr_algorithm", "mpi"}, {"nbr_ranks_per_socket", "1"}});
    nbr_graph_free(&g);
    if (!c.ready("library call beside a relay plan", "mpi"))
        return;
    const int me = world_rank(), indeg = (int)c.in.size(), n = 300;
    std::vector<int> send(n), relay_send(n), got((size_t)n * indeg + 1, -1),
        relay_got((size_t)n * indeg + 1, -1), want((size_t)n * indeg + 1, -1),
        relay_want((size_t)n * indeg + 1, -1);
    nbrtest::fill_ints(send, me, 1);
    nbrtest::fill_ints(relay_send, me, 2);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "nbr_algorithm", "halving");
    nbr_request_t relay = NBR_REQUEST_NULL;
    const int rc = nbr_neighbor_allgather_init(relay_send.data(), n, MPI_INT, relay_got.data(), n,
                                               MPI_INT, c.comm, info, &relay);
    MPI_Info_free(&info);
    ASSERT_EQ(rc, NBR_SUCCESS);
    EXPECT_EQ(nbr_start(&relay), NBR_SUCCESS);
    if (me % 2 == 0) {
        EXPECT_EQ(nbr_neighbor_allgather(send.data(), n, MPI_INT, got.data(), n, MPI_INT, c.comm),
                  NBR_SUCCESS);
        EXPECT_EQ(nbr_wait(&relay), NBR_SUCCESS);
    } else {
        EXPECT_EQ(nbr_wait(&relay), NBR_SUCCESS);
        EXPECT_EQ(nbr_neighbor_allgather(send.data(), n, MPI_INT, got.data(), n, MPI_INT, c.comm),
                  NBR_SUCCESS);
    }
    const char *algorithm = nullptr;
    EXPECT_EQ(nbr_comm_algorithm(c.comm, &algorithm), NBR_SUCCESS);
    EXPECT_STREQ(algorithm ? algorithm : "NULL", "mpi");
    EXPECT_EQ(nbr_request_free(&relay), NBR_SUCCESS);
    MPI_Neighbor_allgather(send.data(), n, MPI_INT, want.data(), n, MPI_INT, c.comm);
    MPI_Neighbor_allgather(relay_send.data(), n, MPI_INT, relay_want.data(), n, MPI_INT, c.comm);
    EXPECT_EQ(got, want) << "library call on rank " << me;
    EXPECT_EQ(relay_got, relay_want) << "relay plan on rank " << me;
    // calls like the last one take the shortcut past the request: still
    // exact, still counted (naive's plan: one message per edge off-rank)
    nbr_counters_t before{}, after{};
    for (int k = 3; k < 6; k++) {
        nbrtest::fill_ints(send, me, k);
        std::fill(got.begin(), got.end(), -1);
        EXPECT_EQ(nbr_get_counters(c.comm, &before), NBR_SUCCESS);
        EXPECT_EQ(nbr_neighbor_allgather(send.data(), n, MPI_INT, got.data(), n, MPI_INT, c.comm),
                  NBR_SUCCESS);
        EXPECT_EQ(nbr_get_counters(c.comm, &after), NBR_SUCCESS);
        MPI_Neighbor_allgather(send.data(), n, MPI_INT, want.data(), n, MPI_INT, c.comm);
        EXPECT_EQ(got, want) << "call " << k << " on rank " << me;
        EXPECT_EQ(after.calls - before.calls, 1u) << "call " << k;
        // the complete graph: as many sends as in-neighbors
        EXPECT_EQ(after.msgs_intra_node + after.msgs_inter_node - before.msgs_intra_node -
                      before.msgs_inter_node,
                  (uint64_t)indeg)
            << "call " << k << " on rank " << me;
    }
    // the shortcut counts its calls later: several between two reads, and
    // none left over after a reset
    const int calls = 3;
    EXPECT_EQ(nbr_get_counters(c.comm, &before), NBR_SUCCESS);
    for (int k = 0; k < calls; k++)
        EXPECT_EQ(nbr_neighbor_allgather(send.data(), n, MPI_INT, got.data(), n, MPI_INT, c.comm),
                  NBR_SUCCESS);
    EXPECT_EQ(nbr_get_counters(c.comm, &after), NBR_SUCCESS);
    EXPECT_EQ(after.calls - before.calls, (uint64_t)calls);
    EXPECT_EQ(after.msgs_intra_node + after.msgs_inter_node - before.msgs_intra_node -
                  before.msgs_inter_node,
              (uint64_t)calls * (uint64_t)indeg);
    EXPECT_EQ(nbr_neighbor_allgather(send.data(), n, MPI_INT, got.data(), n, MPI_INT, c.comm),
              NBR_SUCCESS);
    EXPECT_EQ(nbr_reset_counters(c.comm), NBR_SUCCESS);
    EXPECT_EQ(nbr_neighbor_allgather(send.data(), n, MPI_INT, got.data(), n, MPI_INT, c.comm),
              NBR_SUCCESS);
    EXPECT_EQ(nbr_get_counters(c.comm, &after), NBR_SUCCESS);
    EXPECT_EQ(after.calls, 1u) << "the call before the reset is not counted after it";
}

// nbrcoll remembers the communicator a thread called on last, so that the
// next call finds its state without MPI's attribute lookup. A freed
// communicator's handle comes back as the next one's (Open MPI reuses it):
// each new ring (another shift, so another source) must get its own state
// and its own data, by the shortcut too. The last ring's state is kept
// alive here (a reference), so that the new one cannot take its address
// and hide a stale answer.
void attach_mpi(MPI_Comm comm)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "nbr_algorithm", "mpi");
    EXPECT_EQ(nbr_comm_attach(comm, info), NBR_SUCCESS);
    MPI_Info_free(&info);
}

TEST(HostShortcut, FreedCommunicatorsHandleComesBack)
{
    const int me = world_rank(), n = world_size(), count = 5;
    std::vector<int> send(count), got(count), want(count);
    nbr_comm_t *kept = nullptr;
    for (int shift = 1; shift <= 3; shift++) {
        const int dest = (me + shift) % n, source = ((me - shift) % n + n) % n;
        MPI_Comm comm = MPI_COMM_NULL;
        ASSERT_EQ(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &source, MPI_UNWEIGHTED, 1,
                                                 &dest, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &comm),
                  MPI_SUCCESS);
        attach_mpi(comm);
        for (int call = 0; call < 3; call++) { // the second and third take the shortcut
            nbrtest::fill_ints(send, me, shift * 10 + call);
            nbrtest::fill_ints(want, source, shift * 10 + call);
            std::fill(got.begin(), got.end(), -1);
            EXPECT_EQ(nbr_neighbor_allgather(send.data(), count, MPI_INT, got.data(), count,
                                             MPI_INT, comm),
                      NBR_SUCCESS);
            EXPECT_EQ(got, want) << "shift " << shift << ", call " << call << ", rank " << me;
        }
        nbr_comm_t *state = nullptr;
        EXPECT_EQ(nbr_comm_get(comm, MPI_INFO_NULL, &state), NBR_SUCCESS);
        EXPECT_EQ(nbr_comm_find(comm), state) << "shift " << shift;
        EXPECT_NE(state, kept);
        nbr_counters_t counters{};
        EXPECT_EQ(nbr_get_counters(comm, &counters), NBR_SUCCESS);
        EXPECT_EQ(counters.calls, 3u) << "shift " << shift << ": this ring's calls only";
        nbr_comm_release(kept);
        nbr_comm_retain(state);
        kept = state;
        MPI_Comm_free(&comm);
    }
    nbr_comm_release(kept);
}

// The shortcut keeps a predefined type's size from the call that armed it
// and asks MPI for any other type's. A freed derived type's handle may
// come back as another type of another size (Open MPI reuses it): a call
// with it must not pass for one of the old block size, which its counters
// would show (bytes of the new blocks, every call).
TEST(HostShortcut, TypesOfOtherSizes)
{
    const int me = world_rank(), n = world_size();
    const int dest = (me + 1) % n, source = (me + n - 1) % n;
    MPI_Comm comm = MPI_COMM_NULL;
    ASSERT_EQ(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &source, MPI_UNWEIGHTED, 1, &dest,
                                             MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &comm),
              MPI_SUCCESS);
    attach_mpi(comm);
    std::vector<int> send(12), got(12), want(12);
    // one call in ints units: block_ints ints a block, as count of type
    auto call = [&](MPI_Datatype type, int count, int block_ints, int round) {
        nbrtest::fill_ints(send, me, round);
        nbrtest::fill_ints(want, source, round);
        std::fill(got.begin(), got.end(), -1);
        nbr_counters_t before{}, after{};
        EXPECT_EQ(nbr_get_counters(comm, &before), NBR_SUCCESS);
        EXPECT_EQ(nbr_neighbor_allgather(send.data(), count, type, got.data(), count, type, comm),
                  NBR_SUCCESS);
        EXPECT_EQ(nbr_get_counters(comm, &after), NBR_SUCCESS);
        EXPECT_TRUE(std::equal(got.begin(), got.begin() + block_ints, want.begin()))
            << "round " << round << ", rank " << me;
        const uint64_t bytes = after.bytes_intra_node + after.bytes_inter_node -
                               before.bytes_intra_node - before.bytes_inter_node;
        EXPECT_EQ(bytes, source == me ? 0u : (uint64_t)block_ints * sizeof(int))
            << "round " << round << ", rank " << me;
    };
    for (int round = 0; round < 3; round++) // the later two by the shortcut
        call(MPI_INT, 5, 5, round);
    call(MPI_BYTE, 20, 5, 3); // the same bytes in another predefined type
    MPI_Datatype pair = MPI_DATATYPE_NULL, triple = MPI_DATATYPE_NULL;
    ASSERT_EQ(MPI_Type_contiguous(2, MPI_INT, &pair), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_commit(&pair), MPI_SUCCESS);
    for (int round = 4; round < 7; round++) // a new block size: pair's call arms the shortcut
        call(pair, 3, 6, round);
    MPI_Type_free(&pair);
    ASSERT_EQ(MPI_Type_contiguous(3, MPI_INT, &triple), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_commit(&triple), MPI_SUCCESS);
    for (int round = 7; round < 10; round++) // 9 ints a block, not 6
        call(triple, 3, 9, round);
    MPI_Type_free(&triple);
    MPI_Comm_free(&comm);
}

// A thread remembers several communicators at once (a benchmark, or a
// program with several halos, calls them in turn): each call finds its
// own communicator's state, with its own data and counters, whichever
// was called before it.
TEST(HostShortcut, CommunicatorsCalledInTurn)
{
    const int me = world_rank(), n = world_size(), count = 3, rings = 12, rounds = 3;
    std::vector<MPI_Comm> comms(rings, MPI_COMM_NULL);
    for (int k = 0; k < rings; k++) {
        const int shift = 1 + k % (n - 1 > 0 ? n - 1 : 1);
        const int dest = (me + shift) % n, source = ((me - shift) % n + n) % n;
        ASSERT_EQ(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &source, MPI_UNWEIGHTED, 1,
                                                 &dest, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                                 &comms[k]),
                  MPI_SUCCESS);
        attach_mpi(comms[k]);
    }
    std::vector<int> send(count), got(count), want(count);
    for (int round = 0; round < rounds; round++)
        for (int k = 0; k < rings; k++) {
            const int shift = 1 + k % (n - 1 > 0 ? n - 1 : 1);
            const int source = ((me - shift) % n + n) % n;
            nbrtest::fill_ints(send, me, 100 * k + round);
            nbrtest::fill_ints(want, source, 100 * k + round);
            std::fill(got.begin(), got.end(), -1);
            EXPECT_EQ(nbr_neighbor_allgather(send.data(), count, MPI_INT, got.data(), count,
                                             MPI_INT, comms[k]),
                      NBR_SUCCESS);
            EXPECT_EQ(got, want) << "ring " << k << ", round " << round << ", rank " << me;
        }
    for (int k = 0; k < rings; k++) {
        nbr_comm_t *state = nullptr;
        EXPECT_EQ(nbr_comm_get(comms[k], MPI_INFO_NULL, &state), NBR_SUCCESS);
        EXPECT_EQ(nbr_comm_find(comms[k]), state) << "ring " << k;
        nbr_counters_t counters{};
        EXPECT_EQ(nbr_get_counters(comms[k], &counters), NBR_SUCCESS);
        EXPECT_EQ(counters.calls, (uint64_t)rounds) << "ring " << k << ": its own calls only";
        MPI_Comm_free(&comms[k]);
    }
}

}  // namespace

int main(int argc, char **argv) { return nbrtest::run_main(argc, argv, false); }
