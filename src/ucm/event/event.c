#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * The handler list and event dispatch.
 *
 * Handlers live in a list sorted by priority, guarded by a reader-writer
 * lock: dispatch takes it for reading, so events from many threads are
 * delivered in parallel, and setting or unsetting a handler takes it for
 * writing, which waits for running handlers to return. That is what lets
 * ucm_unset_event_handler() promise that the handler no longer runs.
 *
 * A handler may report events itself (nested dispatch takes the read lock
 * again; glibc's default rwlock lets a reader in while a writer waits,
 * which avoids a self-deadlock). It may not change the handler list: the
 * write lock would wait for its own read lock. A per-thread depth counter
 * detects that and turns it into an error instead of a hang.
 */

#include <ucm/event/event_int.h>

#include <ucs/debug/log.h>

#include <pthread.h>
#include <stdlib.h>

typedef struct ucm_event_handler {
    ucs_list_link_t      list;
    int                  events;    /* event bits and flags */
    int                  priority;
    ucm_event_callback_t cb;
    void                 *arg;
} ucm_event_handler_t;

static pthread_rwlock_t ucm_event_lock = PTHREAD_RWLOCK_INITIALIZER;
static UCS_LIST_HEAD(ucm_event_handlers);

/* How many handlers the calling thread is running (nested dispatch). */
static __thread unsigned ucm_event_depth;

/* Set while this thread replays existing allocations to a new handler with
 * the write lock held; a dispatch from that handler must not lock again. */
static __thread int ucm_event_replaying;

static void ucm_event_call_handlers(ucm_event_type_t event_type,
                                    ucm_event_t *event)
{
    ucm_event_handler_t *handler;

    ucs_list_for_each(handler, &ucm_event_handlers, list) {
        if (handler->events & event_type) {
            ++ucm_event_depth;
            handler->cb(event_type, event, handler->arg);
            --ucm_event_depth;
        }
    }
}

void ucm_event_dispatch(ucm_event_type_t event_type, ucm_event_t *event)
{
    if (ucm_event_replaying) {
        ucm_event_call_handlers(event_type, event);
        return;
    }

    pthread_rwlock_rdlock(&ucm_event_lock);
    ucm_event_call_handlers(event_type, event);
    pthread_rwlock_unlock(&ucm_event_lock);
}

/* Calls from inside a handler would wait for their own read lock. */
static int ucm_event_check_not_in_handler(const char *what)
{
    if ((ucm_event_depth == 0) && !ucm_event_replaying) {
        return 1;
    }

    ucs_error("%s called from inside a memory event handler: handlers "
              "must not change the handler list", what);
    return 0;
}

/* Called with the write lock held: replays live allocations to the new
 * handler before any later event can reach it. */
static void ucm_event_replay_existing(ucm_event_handler_t *handler)
{
    ucm_event_replaying = 1;
    ++ucm_event_depth;
    ucm_event_report_existing(handler->cb, handler->arg);
    --ucm_event_depth;
    ucm_event_replaying = 0;
}

ucs_status_t ucm_set_event_handler(int events, int priority,
                                   ucm_event_callback_t cb, void *arg)
{
    ucm_event_handler_t *handler, *pos;
    ucs_list_link_t *insert_pos;
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

    handler = calloc(1, sizeof(*handler));
    if (handler == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    handler->events   = events;
    handler->priority = priority;
    handler->cb       = cb;
    handler->arg      = arg;

    pthread_rwlock_wrlock(&ucm_event_lock);

    /* After every handler of lower or equal priority. */
    insert_pos = &ucm_event_handlers;
    ucs_list_for_each(pos, &ucm_event_handlers, list) {
        if (pos->priority > priority) {
            insert_pos = &pos->list;
            break;
        }
    }
    ucs_list_insert_before(insert_pos, &handler->list);

    if ((events & UCM_EVENT_FLAG_EXISTING_ALLOC) &&
        (events & UCM_EVENT_MEM_TYPE_ALLOC)) {
        ucm_event_replay_existing(handler);
    }

    pthread_rwlock_unlock(&ucm_event_lock);

    ucs_debug("memory event handler %p(arg=%p) set for events 0x%x, "
              "priority %d", (void*)cb, arg, events, priority);
    return UCS_OK;
}

void ucm_unset_event_handler(int events, ucm_event_callback_t cb, void *arg)
{
    ucm_event_handler_t *handler, *tmp;
    UCS_LIST_HEAD(removed);

    if (!ucm_event_check_not_in_handler("ucm_unset_event_handler")) {
        return;
    }

    pthread_rwlock_wrlock(&ucm_event_lock);
    ucs_list_for_each_safe(handler, tmp, &ucm_event_handlers, list) {
        if ((handler->cb != cb) || (handler->arg != arg)) {
            continue;
        }

        handler->events &= ~(events & UCM_EVENT_TYPES_MASK);
        if (!(handler->events & UCM_EVENT_TYPES_MASK)) {
            ucs_list_del(&handler->list);
            ucs_list_add_tail(&removed, &handler->list);
        }
    }
    pthread_rwlock_unlock(&ucm_event_lock);

    /* Freed outside the lock: no dispatch can still see them. */
    ucs_list_for_each_safe(handler, tmp, &removed, list) {
        free(handler);
    }
}

int ucm_event_installed_handler_events(void)
{
    ucm_event_handler_t *handler;
    int events = 0;

    pthread_rwlock_rdlock(&ucm_event_lock);
    ucs_list_for_each(handler, &ucm_event_handlers, list) {
        if (!(handler->events & UCM_EVENT_FLAG_NO_INSTALL)) {
            events |= handler->events & UCM_EVENT_TYPES_MASK;
        }
    }
    pthread_rwlock_unlock(&ucm_event_lock);

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
