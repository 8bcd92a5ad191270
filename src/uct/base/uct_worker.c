#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_worker.h"
#include "uct_iface.h"

#include <ucs/debug/log.h>

#include <stdlib.h>
#include <string.h>

/*
 * Only UCS_THREAD_MODE_MULTI workers lock: single-threaded users (the common
 * case, ucp serialises per worker) pay one predictable branch per call.
 * The lock is recursive so that a callback may (un)register callbacks and
 * the progress of one iface may open or close another on the same thread.
 */
static inline void uct_worker_lock(uct_worker_h worker)
{
    if (ucs_unlikely(worker->thread_mode == UCS_THREAD_MODE_MULTI)) {
        pthread_mutex_lock(&worker->lock);
    }
}

static inline void uct_worker_unlock(uct_worker_h worker)
{
    if (ucs_unlikely(worker->thread_mode == UCS_THREAD_MODE_MULTI)) {
        pthread_mutex_unlock(&worker->lock);
    }
}

ucs_status_t uct_worker_create(ucs_async_context_t *async,
                               ucs_thread_mode_t thread_mode,
                               uct_worker_h *worker_p)
{
    pthread_mutexattr_t attr;
    uct_worker_h worker;

    (void)async; /* progress is caller-driven; there is no async thread */

    if ((worker_p == NULL) || (thread_mode >= UCS_THREAD_MODE_LAST)) {
        return UCS_ERR_INVALID_PARAM;
    }

    worker = calloc(1, sizeof(*worker));
    if (worker == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    worker->thread_mode = thread_mode;
    ucs_list_head_init(&worker->ifaces);

    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&worker->lock, &attr);
    pthread_mutexattr_destroy(&attr);

    ucs_debug("created worker %p (thread mode %d)", (void*)worker, thread_mode);
    *worker_p = worker;
    return UCS_OK;
}

void uct_worker_destroy(uct_worker_h worker)
{
    if (worker == NULL) {
        return;
    }

    if (!ucs_list_is_empty(&worker->ifaces) || (worker->num_quiet_ifaces > 0)) {
        ucs_warn("worker %p destroyed with %zu iface(s) still open", (void*)worker,
                 ucs_list_length(&worker->ifaces) + worker->num_quiet_ifaces);
    }
    pthread_mutex_destroy(&worker->lock);
    free(worker);
}

/* Slots registered during the round that just ended become active. */
static void uct_worker_activate_pending(uct_worker_h worker)
{
    worker->active_mask  |= worker->pending_mask;
    worker->pending_mask  = 0;
}

/* Recompute num_callbacks (highest used slot + 1) after a change. */
static void uct_worker_update_num_callbacks(uct_worker_h worker)
{
    uint64_t used = worker->active_mask | worker->pending_mask;

    worker->num_callbacks = (used == 0) ? 0 : (64 - __builtin_clzll(used));
}

static unsigned uct_worker_progress_callbacks(uct_worker_h worker)
{
    uint64_t mask = worker->active_mask; /* this round: the slots active now */
    uct_worker_callback_t *cb;
    unsigned count = 0;
    uint64_t bit;
    int slot;

    while (mask != 0) {
        slot  = __builtin_ctzll(mask);
        bit   = UCS_BIT(slot);
        mask &= mask - 1;

        /* An earlier callback of this round may have removed this one. */
        if (!(worker->active_mask & bit)) {
            continue;
        }

        cb = &worker->callbacks[slot];
        if (ucs_unlikely(cb->flags & UCT_WORKER_CB_FLAG_ONESHOT)) {
            ucs_callback_t func = cb->func;
            void *arg           = cb->arg;

            /* Free the slot first: the callback may register a new one. */
            worker->active_mask &= ~bit;
            cb->func             = NULL;
            uct_worker_update_num_callbacks(worker);
            count               += func(arg);
        } else {
            count += cb->func(cb->arg);
        }
    }
    return count;
}

unsigned uct_worker_progress(uct_worker_h worker)
{
    uct_base_iface_t *iface;
    unsigned count = 0;
    int idle_turn;

    uct_worker_lock(worker);
    ++worker->in_progress;

    idle_turn = ((++worker->rounds & (UCT_WORKER_IDLE_POLL_PERIOD - 1)) == 0);
    ucs_list_for_each(iface, &worker->ifaces, worker_link) {
        if (ucs_likely(!iface->progress_idle) || idle_turn) {
            count += iface->super.ops.iface_progress(&iface->super);
        }
    }

    if (worker->active_mask != 0) {
        count += uct_worker_progress_callbacks(worker);
    }

    if ((--worker->in_progress == 0) && (worker->pending_mask != 0)) {
        uct_worker_activate_pending(worker);
    }
    uct_worker_unlock(worker);
    return count;
}

void uct_worker_progress_register_safe(uct_worker_h worker, ucs_callback_t func,
                                       void *arg, unsigned flags, int *id_p)
{
    uint64_t used;
    int slot;

    uct_worker_lock(worker);

    used = worker->active_mask | worker->pending_mask;
    if (ucs_unlikely(used == UINT64_MAX)) {
        uct_worker_unlock(worker);
        ucs_error("worker %p: all %d progress callback slots are in use",
                  (void*)worker, UCT_WORKER_MAX_CALLBACKS);
        *id_p = -1;
        return;
    }

    slot                           = __builtin_ctzll(~used);
    worker->callbacks[slot].func   = func;
    worker->callbacks[slot].arg    = arg;
    worker->callbacks[slot].flags  = flags;
    /* Inside progress the new callback waits for the next round, so that
     * a callback registering itself again cannot loop within one round. */
    if (worker->in_progress) {
        worker->pending_mask |= UCS_BIT(slot);
    } else {
        worker->active_mask |= UCS_BIT(slot);
    }
    uct_worker_update_num_callbacks(worker);

    uct_worker_unlock(worker);
    *id_p = slot;
}

void uct_worker_progress_unregister_safe(uct_worker_h worker, int *id_p)
{
    int slot = *id_p;

    if ((slot < 0) || (slot >= UCT_WORKER_MAX_CALLBACKS)) {
        return; /* never registered, or already removed */
    }

    uct_worker_lock(worker);
    worker->active_mask          &= ~UCS_BIT(slot);
    worker->pending_mask         &= ~UCS_BIT(slot);
    worker->callbacks[slot].func  = NULL;
    worker->callbacks[slot].arg   = NULL;
    uct_worker_update_num_callbacks(worker);
    uct_worker_unlock(worker);

    *id_p = -1;
}

void uct_worker_add_iface(uct_worker_h worker, struct uct_base_iface *iface)
{
    uct_worker_lock(worker);
    if (iface->has_progress) {
        ucs_list_add_tail(&worker->ifaces, &iface->worker_link);
    } else {
        ++worker->num_quiet_ifaces;
    }
    uct_worker_unlock(worker);
}

void uct_worker_remove_iface(uct_worker_h worker, struct uct_base_iface *iface)
{
    uct_worker_lock(worker);
    if (iface->has_progress) {
        ucs_list_del(&iface->worker_link);
    } else {
        --worker->num_quiet_ifaces;
    }
    uct_worker_unlock(worker);
}
