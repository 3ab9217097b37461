/* nbrcoll's operations in flight advance inside the MPI library's own
 * progress engine, so that a rank blocked in any MPI call (a barrier, a
 * receive, a collective on another communicator) still takes its part in
 * them, as MPI's progress rule asks of a nonblocking collective.
 *
 * Open MPI runs opal_progress in every blocking call and in every test;
 * its libopen-pal exports opal_progress_register, which nbrcoll finds at
 * run time (no build dependency, one binary for every MPI) and hands a
 * callback that moves every communicator's operations one step. MPICH
 * 4.0 exports no such hook: there, as in Open MPI at MPI_THREAD_MULTIPLE
 * (where another thread's MPI call would run the callback beside this
 * thread's nbrcoll call), operations move inside nbrcoll's own calls and
 * the drop-in's completion calls only. */
#define _GNU_SOURCE /* dl_iterate_phdr, RTLD_NOLOAD */
#include "exec/executor.h"

#include "base/grow.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static nbr_exec_domain_t **domains;
static int num_domains, domains_capacity;
static atomic_int executors_in_flight;
static _Thread_local int inside; /* this thread is moving nbrcoll's operations */
static int (*unregister)(int (*callback)(void));
static int hook_state; /* 0: not tried, 1: installed, 2: switched off, -1: none */

static void install(void);

int nbr_progress_hooked(void)
{
    pthread_mutex_lock(&registry_lock);
    if (hook_state == 0)
        install();
    int hooked = hook_state == 1;
    pthread_mutex_unlock(&registry_lock);
    return hooked;
}

void nbr_progress_counted(int delta)
{
    atomic_fetch_add_explicit(&executors_in_flight, delta, memory_order_relaxed);
}

int nbr_progress_alone(void)
{
    return atomic_load_explicit(&executors_in_flight, memory_order_relaxed) <= 1;
}

int nbr_progress_enter(void)
{
    int was = inside;
    inside = 1;
    return was;
}

void nbr_progress_leave(int was)
{
    inside = was;
}

int nbr_progress_all(void)
{
    int moved = 0;
    for (int i = 0; i < num_domains; i++)
        moved |= nbr_exec_progress(domains[i]);
    return moved;
}

/* The callback: nothing in flight costs one load. Inside nbrcoll's own
 * progress (MPI_Test from an executor step runs opal_progress again) it
 * returns at once. */
static int on_mpi_progress(void)
{
    if (atomic_load_explicit(&executors_in_flight, memory_order_relaxed) == 0 || inside)
        return 0;
    return nbr_progress_all();
}

/* An object of the process whose path contains name, for dlsym when
 * libmpi was loaded with RTLD_LOCAL (a Python module, a plugin). */
typedef struct found_object {
    const char *name;
    char path[4096];
} found_object_t;

static int match_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    found_object_t *found = arg;
    if (!info->dlpi_name || !strstr(info->dlpi_name, found->name))
        return 0;
    snprintf(found->path, sizeof found->path, "%s", info->dlpi_name);
    return 1;
}

static void *find_symbol(const char *object, const char *symbol)
{
    void *address = dlsym(RTLD_DEFAULT, symbol);
    found_object_t found = {.name = object};
    if (address || !dl_iterate_phdr(match_object, &found))
        return address;
    void *handle = dlopen(found.path, RTLD_LAZY | RTLD_NOLOAD);
    if (handle) {
        address = dlsym(handle, symbol);
        dlclose(handle);
    }
    return address;
}

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first: the callback
 * goes before MPI does. */
static int unhook(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)value;
    (void)extra;
    if (hook_state == 1 && unregister)
        unregister(on_mpi_progress);
    hook_state = -1;
    MPI_Comm_free_keyval(&keyval);
    return MPI_SUCCESS;
}

static void install(void)
{
    int level = MPI_THREAD_SINGLE, keyval = MPI_KEYVAL_INVALID;
    int (*register_callback)(int (*callback)(void)) =
        (int (*)(int (*)(void)))find_symbol("libopen-pal", "opal_progress_register");
    unregister = (int (*)(int (*)(void)))find_symbol("libopen-pal", "opal_progress_unregister");
    hook_state = -1;
    if (!register_callback || !unregister || MPI_Query_thread(&level) != MPI_SUCCESS ||
        level == MPI_THREAD_MULTIPLE)
        return;
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, unhook, &keyval, NULL) != MPI_SUCCESS)
        return;
    if (MPI_Comm_set_attr(MPI_COMM_SELF, keyval, NULL) != MPI_SUCCESS) {
        MPI_Comm_free_keyval(&keyval);
        return;
    }
    if (register_callback(on_mpi_progress) == 0) /* OPAL_SUCCESS */
        hook_state = 1;
}

int nbr_progress_hook_switch(int on)
{
    int (*register_callback)(int (*callback)(void)) =
        (int (*)(int (*)(void)))find_symbol("libopen-pal", "opal_progress_register");
    pthread_mutex_lock(&registry_lock);
    if (hook_state == 0)
        install();
    if (on && hook_state == 2 && register_callback && register_callback(on_mpi_progress) == 0)
        hook_state = 1;
    else if (!on && hook_state == 1 && unregister(on_mpi_progress) == 0)
        hook_state = 2; /* switched off: MPI_Finalize's unhook leaves it */
    pthread_mutex_unlock(&registry_lock);
    return hook_state == 1;
}

int nbr_progress_track(nbr_exec_domain_t *domain)
{
    pthread_mutex_lock(&registry_lock);
    if (hook_state == 0)
        install();
    int rc = nbr_grow((void **)&domains, &domains_capacity, num_domains + 1, 8,
                      sizeof(*domains));
    if (rc == 0)
        domains[num_domains++] = domain;
    pthread_mutex_unlock(&registry_lock);
    return rc;
}

void nbr_progress_untrack(nbr_exec_domain_t *domain)
{
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < num_domains; i++)
        if (domains[i] == domain) {
            domains[i] = domains[--num_domains];
            break;
        }
    pthread_mutex_unlock(&registry_lock);
}
