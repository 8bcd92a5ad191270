#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * The handler list and event dispatch.
 *
 * Events are reported from anywhere: from inside malloc() and free() (Open
 * MPI reports heap trims through ucm_vm_munmap() from its sbrk hook while
 * glibc holds the arena lock), from CUDA calls, from signal-unsafe and
 * lock-holding contexts we cannot see. So a dispatch never waits, never
 * allocates and never touches thread-local storage (a first access to the
 * TLS of a dlopen()ed library allocates): the handlers are an immutable
 * table published through one pointer, and readers only announce
 * themselves in one of two counters.
 *
 * A change of handlers (rare: initialisation and teardown) builds a new
 * table, publishes it, and then waits until no dispatch can still read the
 * old one: it flips the epoch that new dispatches count themselves in and
 * waits for the counter of the previous epoch to drain, twice, so that
 * also a dispatch that read the epoch just before a flip is waited for.
 * Only then is the old table freed; that is also what lets
 * ucm_unset_event_handler() promise that the handler no longer runs.
 *
 * Such a wait would never end in a thread that is itself inside a handler,
 * so handlers may not change the handler list; a per-thread mark (no TLS,
 * see util/thread_mark.h) turns that into an error instead of a hang.
 * Handlers may report events themselves (nested dispatch just counts
 * again).
 */

#include <ucm/event/event_int.h>
#include <ucm/util/thread_mark.h>

#include <ucs/debug/log.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int                  events;   /* event bits and flags */
    int                  priority;
    ucm_event_callback_t cb;
    void                 *arg;
} ucm_event_handler_t;

/* Sorted by priority; never changed once published. */
typedef struct {
    unsigned            count;
    ucm_event_handler_t handlers[];
} ucm_event_table_t;

static _Atomic(ucm_event_table_t*) ucm_event_table;
static atomic_uint                 ucm_event_epoch;
static atomic_ulong                ucm_event_readers[2];

/* Serialises changes of the table; never taken by a dispatch. */
static pthread_mutex_t ucm_event_writer_lock = PTHREAD_MUTEX_INITIALIZER;


static void ucm_event_call_handlers(const ucm_event_table_t *table,
                                    ucm_event_type_t event_type,
                                    ucm_event_t *event)
{
    const ucm_event_handler_t *handler;
    int marked;

    if (table == NULL) {
        return;
    }

    marked = ucm_thread_mark_enter(UCM_THREAD_MARK_HANDLER) >= 0;
    for (handler = table->handlers; handler < table->handlers + table->count;
         ++handler) {
        if (handler->events & event_type) {
            handler->cb(event_type, event, handler->arg);
        }
    }
    if (marked) {
        ucm_thread_mark_leave(UCM_THREAD_MARK_HANDLER);
    }
}

void ucm_event_dispatch(ucm_event_type_t event_type, ucm_event_t *event)
{
    unsigned e;

    /* Sequentially consistent: a writer that publishes a table, flips the
     * epoch and then reads our counter as zero is ordered before our
     * increment, and our load of the table then sees its new table. */
    e = atomic_load_explicit(&ucm_event_epoch, memory_order_seq_cst) & 1;
    atomic_fetch_add_explicit(&ucm_event_readers[e], 1, memory_order_seq_cst);
    ucm_event_call_handlers(atomic_load_explicit(&ucm_event_table,
                                                 memory_order_seq_cst),
                            event_type, event);
    atomic_fetch_sub_explicit(&ucm_event_readers[e], 1, memory_order_release);
}

/* Wait until no dispatch that started before the call can still read a
 * table that was replaced before it. Writer lock held. */
static void ucm_event_synchronize(void)
{
    unsigned round, prev;

    for (round = 0; round < 2; ++round) {
        prev = atomic_fetch_add_explicit(&ucm_event_epoch, 1,
                                         memory_order_seq_cst) & 1;
        while (atomic_load_explicit(&ucm_event_readers[prev],
                                    memory_order_acquire) != 0) {
            sched_yield();
        }
    }
}

/* Publish @a table and free the one it replaces. Writer lock held. */
static void ucm_event_table_replace(ucm_event_table_t *table)
{
    ucm_event_table_t *old;

    old = atomic_exchange_explicit(&ucm_event_table, table,
                                   memory_order_seq_cst);
    ucm_event_synchronize();
    free(old);
}

static ucm_event_table_t *ucm_event_table_alloc(unsigned count)
{
    ucm_event_table_t *table;

    table = malloc(sizeof(*table) + count * sizeof(table->handlers[0]));
    if (table != NULL) {
        table->count = 0;
    }
    return table;
}

/* Waiting for dispatches from inside a handler would wait for ourselves. */
static int ucm_event_check_not_in_handler(const char *what)
{
    if ((ucm_thread_mark_get(UCM_THREAD_MARK_HANDLER) == 0) &&
        (ucm_thread_mark_get(UCM_THREAD_MARK_CUDA_HOOK) == 0)) {
        return 1;
    }

    ucs_error("%s called from inside a memory event handler or hook: "
              "handlers must not change the handler list", what);
    return 0;
}

/* The replay runs as a dispatch would: the handler is marked, so that it
 * cannot change the list, and its CUDA calls are not reported again. */
static void ucm_event_replay_existing(const ucm_event_handler_t *handler)
{
    int marked = ucm_thread_mark_enter(UCM_THREAD_MARK_HANDLER) >= 0;

    ucm_event_report_existing(handler->cb, handler->arg);
    if (marked) {
        ucm_thread_mark_leave(UCM_THREAD_MARK_HANDLER);
    }
}

/* A copy of the current table with @a handler inserted after every handler
 * of lower or equal priority. Writer lock held. */
static ucm_event_table_t *ucm_event_table_with(const ucm_event_handler_t *handler)
{
    const ucm_event_table_t *cur = atomic_load_explicit(&ucm_event_table,
                                                        memory_order_relaxed);
    unsigned n = (cur == NULL) ? 0 : cur->count;
    ucm_event_table_t *table;
    unsigned i, pos;

    table = ucm_event_table_alloc(n + 1);
    if (table == NULL) {
        return NULL;
    }

    for (pos = 0; (pos < n) && (cur->handlers[pos].priority <= handler->priority);
         ++pos) {
    }
    for (i = 0; i < pos; ++i) {
        table->handlers[i] = cur->handlers[i];
    }
    table->handlers[pos] = *handler;
    for (i = pos; i < n; ++i) {
        table->handlers[i + 1] = cur->handlers[i];
    }
    table->count = n + 1;
    return table;
}

ucs_status_t ucm_set_event_handler(int events, int priority,
                                   ucm_event_callback_t cb, void *arg)
{
    ucm_event_handler_t handler;
    ucm_event_table_t *table;
    ucs_status_t status;
    int install;

    if ((cb == NULL) || !(events & UCM_EVENT_TYPES_MASK)) {
        ucs_error("ucm_set_event_handler: invalid handler %p or events 0x%x",
                  (void*)cb, events);
        return UCS_ERR_INVALID_PARAM;
    }

    if (!ucm_event_check_not_in_handler("ucm_set_event_handler")) {
        return UCS_ERR_BUSY;
    }

    if (!(events & UCM_EVENT_FLAG_NO_INSTALL)) {
        install = events & UCM_EVENT_TYPES_MASK & ~ucm_event_external_mask();
        if (install != 0) {
            status = ucm_event_install(install);
            if (status != UCS_OK) {
                return status;
            }
        }
    }

    handler.events   = events;
    handler.priority = priority;
    handler.cb       = cb;
    handler.arg      = arg;

    pthread_mutex_lock(&ucm_event_writer_lock);
    table = ucm_event_table_with(&handler);
    if (table == NULL) {
        pthread_mutex_unlock(&ucm_event_writer_lock);
        return UCS_ERR_NO_MEMORY;
    }
    ucm_event_table_replace(table);

    /* After publishing: an allocation reported meanwhile reaches the
     * handler live, and so does its free. The replay may therefore
     * announce an allocation whose free the handler has already seen;
     * replays are marked (UCM_EVENT_FLAG_EXISTING_ALLOC in the event type)
     * so that a handler can check that the allocation is still live
     * (ucm_mem_type_alloc_is_live()) under its own lock. */
    if ((events & UCM_EVENT_FLAG_EXISTING_ALLOC) &&
        (events & UCM_EVENT_MEM_TYPE_ALLOC)) {
        ucm_event_replay_existing(&handler);
    }
    pthread_mutex_unlock(&ucm_event_writer_lock);

    ucs_debug("memory event handler %p(arg=%p) set for events 0x%x, "
              "priority %d", (void*)cb, arg, events, priority);
    return UCS_OK;
}

void ucm_unset_event_handler(int events, ucm_event_callback_t cb, void *arg)
{
    const ucm_event_table_t *cur;
    ucm_event_handler_t *handler;
    ucm_event_table_t *table;
    unsigned i;
    int changed = 0;

    if (!ucm_event_check_not_in_handler("ucm_unset_event_handler")) {
        return;
    }

    pthread_mutex_lock(&ucm_event_writer_lock);
    cur = atomic_load_explicit(&ucm_event_table, memory_order_relaxed);
    if (cur == NULL) {
        goto out_unlock;
    }

    table = ucm_event_table_alloc(cur->count);
    if (table == NULL) {
        /* Cannot build a new table: keep the handler rather than free
         * what a running dispatch may read. */
        ucs_error("ucm_unset_event_handler: no memory, handler %p kept",
                  (void*)cb);
        goto out_unlock;
    }

    for (i = 0; i < cur->count; ++i) {
        handler  = &table->handlers[table->count];
        *handler = cur->handlers[i];
        if ((handler->cb == cb) && (handler->arg == arg)) {
            handler->events &= ~(events & UCM_EVENT_TYPES_MASK);
            changed          = 1;
            if (!(handler->events & UCM_EVENT_TYPES_MASK)) {
                continue;
            }
        }
        ++table->count;
    }

    if (changed) {
        ucm_event_table_replace(table);
    } else {
        free(table);
    }

out_unlock:
    pthread_mutex_unlock(&ucm_event_writer_lock);
}

int ucm_event_installed_handler_events(void)
{
    const ucm_event_table_t *table;
    int events = 0;
    unsigned i;

    pthread_mutex_lock(&ucm_event_writer_lock);
    table = atomic_load_explicit(&ucm_event_table, memory_order_relaxed);
    for (i = 0; (table != NULL) && (i < table->count); ++i) {
        if (!(table->handlers[i].events & UCM_EVENT_FLAG_NO_INSTALL)) {
            events |= table->handlers[i].events & UCM_EVENT_TYPES_MASK;
        }
    }
    pthread_mutex_unlock(&ucm_event_writer_lock);

    return events;
}

void ucm_vm_mmap(void *addr, size_t length)
{
    ucm_event_t event;

    event.vm_mapped.address = addr;
    event.vm_mapped.size    = length;
    ucm_event_dispatch(UCM_EVENT_VM_MAPPED, &event);
}

void ucm_vm_munmap(void *addr, size_t length)
{
    ucm_event_t event;

    event.vm_unmapped.address = addr;
    event.vm_unmapped.size    = length;
    ucm_event_dispatch(UCM_EVENT_VM_UNMAPPED, &event);
}
