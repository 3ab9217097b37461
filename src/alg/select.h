/* Automatic selection, the part that is pure: which algorithms may be
 * priced for a call, and which price wins. The front end (front/select.c)
 * builds each candidate's plan, has every rank price its own with the
 * simulator's estimate, and turns them into one price per candidate with
 * an allreduce (max) before asking nbr_select_choose. */
#ifndef NBR_SELECT_H
#define NBR_SELECT_H

#include "alg/registry.h"
#include "base/settings.h"

/* The name users give for automatic selection (nbr_algorithm=auto). */
#define NBR_AUTO_NAME "auto"

/* A candidate must win by this fraction over the baseline (what MPI's own
 * collectives move) to be chosen: an estimate
 * is not a measurement, and losing to MPI is worse than not winning. */
#define NBR_SELECT_MARGIN 0.10

/* nbr_auto_whole_graph_ranks when not configured (the settings table's). */
#define NBR_AUTO_WHOLE_GRAPH_RANKS_DEFAULT NBR_SETTING_AUTO_WHOLE_GRAPH_RANKS_DEFAULT

/* nbr_auto_trials when not configured: the fewest blocking calls timed on
 * each side of auto's trial (front/select.h); with fewer, one plan's
 * spread of call times leaves near-ties to noise. Cheap calls get more, as
 * many rounds as fit in NBR_TRIAL_SIDE_SECONDS per side (all sides' calls
 * of a round together), up to NBR_AUTO_TRIALS_MAX: the shorter a call, the
 * larger the share of the machine's jitter in its time, and the less a
 * trial call costs. 100 calls of 20 us take 2 ms; calls of about 1.5 ms get
 * about 50, a third of a second a signature (docs/decisions.md, D7). */
#define NBR_AUTO_TRIALS_DEFAULT NBR_SETTING_AUTO_TRIALS_DEFAULT
#define NBR_AUTO_TRIALS_MAX NBR_SETTING_AUTO_TRIALS_MAX
#define NBR_TRIAL_SIDE_SECONDS 0.1

/* auto's fallback, the plan MPI itself runs: where the MPI library can run
 * the calls (library_usable: the communicator's buffers are host memory on
 * every rank) its own collective, the registry's library row; elsewhere
 * naive's plan, the same messages. */
const nbr_algorithm_t *nbr_select_baseline(int library_usable);

/* Whether algorithm's plans are one message per edge (the library's call,
 * naive's): MPI's own progress completes them, with no rank of nbrcoll's
 * forwarding anything. */
int nbr_select_one_message_per_edge(const nbr_algorithm_t *algorithm);

/* Whether algorithm is priced for coll on a communicator of nranks ranks:
 * it plans coll itself (for the others it would only repeat naive's plan),
 * a whole-graph algorithm only up to whole_graph_ranks ranks (its set-up
 * gathers every rank's out-list on every rank), and of naive and mpi only
 * the baseline. */
int nbr_select_eligible(const nbr_algorithm_t *algorithm, nbr_collective_t coll, int nranks,
                        int whole_graph_ranks, int library_usable);

/* The index of the cheapest of n prices (seconds; a negative or infinite
 * price is no price): fallback (the default plan's index) unless another
 * is cheaper than it by NBR_SELECT_MARGIN; -1 when none has a price. */
int nbr_select_choose(const double *seconds, int n, int fallback);

/* Rivals priced within this factor of the winner join its trial: the
 * model's errors measured up to about that. */
#define NBR_TRIAL_PRICE_FACTOR 2.0

/* The sides of auto's trial (front/select.h), at most max of them, into
 * taken (indices into the n candidates): best; fallback (the baseline)
 * when another plan won; then, cheapest first, the others whose job price
 * is within NBR_TRIAL_PRICE_FACTOR of best's. One whose job price and
 * slowest rank both equal a side's already taken is that side's plan
 * (leader on one node is naive's) and stays out; the job price alone does
 * not make two plans one, since the busiest node's interfaces can bound
 * two plans alike: on the emulated cluster, RSG 0.7 at 256 KiB priced
 * leader and halving at 27.2 ms each, the trial left halving out, and it
 * was 10 % faster (docs/decisions.md, D10). Returns how many sides it
 * took (1: no rival). */
int nbr_select_trial_sides(const double *job, const double *slowest, int n, int best, int fallback,
                           int max, int *taken);

#endif
