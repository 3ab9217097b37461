/* finalize_guard.c: bounds MPI_Finalize on local-cluster.sh's MPICH runs.
 *
 * MPICH 4.0 over UCX 1.13's TCP transport hangs in MPI_Finalize now and
 * then (one launch in five at 2 x 2, most at 4 x 4): one rank keeps
 * polling to close its endpoint to a peer that has already entered the
 * launcher's exit barrier and no longer progresses UCX, and the peer waits
 * in that barrier for it (the UCX bug reported as openucx/ucx#8738).  Every
 * result is out by then, but the job never ends.
 *
 * local-cluster.sh preloads this into the ranks.  The program's finalize
 * is deferred to the process's exit (on_exit), where it runs under an
 * alarm: a rank still inside it after LC_FINALIZE_GRACE seconds (default
 * 10) says so on stderr and exits with the status its program exited
 * with.  Output is flushed before finalize starts, so none is lost.
 *
 * Ranks that leave in the middle of the launcher's barrier make Hydra
 * report errors and exit statuses of its own, so each rank also writes
 * its program's status to LC_GUARD_DIR/rank-$PMI_RANK as it starts
 * finalize ("finalizing") and how finalize ended ("returned" or "cut");
 * when a guard cut a finalize short and every rank got to its exit,
 * local-cluster.sh takes the job's status from those files.
 *
 * The guard takes PMPI_Finalize, through which a PMPI tool (nbrcoll's
 * drop-in) ends MPI, and MPI_Finalize where that is MPICH's own alias of
 * PMPI_Finalize; a tool's MPI_Finalize still runs first.  MPI_Finalized
 * answers true once the program has finalized. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*finalize_fn)(void);

static int deferred;          /* the program has called MPI_Finalize */
static volatile sig_atomic_t exit_status;

/* The status file and its two possible texts, made before the alarm is
 * armed: the handler may only write them. */
static char status_path[4096];
static char text_returned[32], text_cut[32];

static void write_status(const char *text)
{
    if (!status_path[0])
        return;
    int fd = open(status_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return;
    ssize_t ignored = write(fd, text, strlen(text));
    (void)ignored;
    close(fd);
}

static void prepare_status(int status)
{
    const char *dir = getenv("LC_GUARD_DIR");
    const char *rank = getenv("PMI_RANK");
    if (!dir || !rank)
        return;
    int n = snprintf(status_path, sizeof status_path, "%s/rank-%s", dir, rank);
    if (n < 0 || (size_t)n >= sizeof status_path) {
        status_path[0] = '\0';
        return;
    }
    snprintf(text_returned, sizeof text_returned, "%d returned\n", status);
    snprintf(text_cut, sizeof text_cut, "%d cut\n", status);
    char text_finalizing[32];
    snprintf(text_finalizing, sizeof text_finalizing, "%d finalizing\n", status);
    write_status(text_finalizing);
}

static finalize_fn next_symbol(const char *name)
{
    finalize_fn fn;
    void *sym = dlsym(RTLD_NEXT, name);
    memcpy(&fn, &sym, sizeof fn); /* object to function pointer, as POSIX allows */
    return fn;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] =
        "finalize_guard: MPI_Finalize did not return within the grace time "
        "(UCX TCP close hang); exiting with the program's status\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    write_status(text_cut);
    _exit(exit_status);
}

static void finalize_at_exit(int status, void *arg)
{
    (void)arg;
    exit_status = status;
    unsigned grace = 10;
    const char *env = getenv("LC_FINALIZE_GRACE");
    if (env && atoi(env) > 0)
        grace = (unsigned)atoi(env);
    prepare_status(status);
    fflush(NULL);
    signal(SIGALRM, on_alarm);
    alarm(grace);
    finalize_fn real = next_symbol("PMPI_Finalize");
    if (real)
        real();
    alarm(0);
    write_status(text_returned);
}

int PMPI_Finalize(void)
{
    if (!deferred) {
        deferred = 1;
        if (on_exit(finalize_at_exit, NULL) != 0) {
            finalize_fn real = next_symbol("PMPI_Finalize");
            return real ? real() : MPI_ERR_INTERN;
        }
    }
    return MPI_SUCCESS;
}

int MPI_Finalize(void)
{
    finalize_fn next = next_symbol("MPI_Finalize");
    if (next && next != next_symbol("PMPI_Finalize"))
        return next(); /* a PMPI tool's; it ends in PMPI_Finalize above */
    return PMPI_Finalize();
}

int PMPI_Finalized(int *flag)
{
    if (deferred && flag) {
        *flag = 1;
        return MPI_SUCCESS;
    }
    int (*real)(int *);
    void *sym = dlsym(RTLD_NEXT, "PMPI_Finalized");
    memcpy(&real, &sym, sizeof real);
    return real ? real(flag) : MPI_ERR_INTERN;
}

int MPI_Finalized(int *flag)
{
    return PMPI_Finalized(flag);
}
