/**
 * @file uct_worker.h
 * The worker: a list of ifaces and callbacks that uct_worker_progress()
 * visits. Progress is caller-driven; nothing runs in the background.
 *
 * Callbacks live in a fixed table of UCT_WORKER_MAX_CALLBACKS slots and are
 * selected by a 64-bit mask, so a progress round is a walk over set bits.
 * A callback registered while progress runs goes to a second ("pending")
 * mask that is merged once the round ends: this is what makes registration
 * and removal safe from inside a callback without copying the table.
 */
#ifndef UCT_WORKER_H_
#define UCT_WORKER_H_

#include <uct/api/uct.h>
#include <ucs/datastruct/list.h>

#include <pthread.h>

BEGIN_C_DECLS

#define UCT_WORKER_MAX_CALLBACKS 64

/** An idle iface (uct_base_iface_set_idle()) is progressed in one round of
 *  this many (a power of 2): an unused transport costs one load and branch
 *  per round, and its system call only now and then. */
#define UCT_WORKER_IDLE_POLL_PERIOD 1024

/**
 * Flag of uct_worker_progress_register_safe(): remove the callback after it
 * has run once (its id must then not be unregistered again). Same bit as
 * upstream's UCS_CALLBACKQ_FLAG_ONESHOT.
 */
#define UCT_WORKER_CB_FLAG_ONESHOT UCS_BIT(1)

typedef struct uct_worker_callback {
    ucs_callback_t func;
    void           *arg;
    unsigned       flags; /**< UCT_WORKER_CB_FLAG_* */
} uct_worker_callback_t;

struct uct_worker {
    ucs_thread_mode_t     thread_mode;
    ucs_list_link_t       ifaces;      /**< uct_base_iface_t::worker_link */
    unsigned              num_quiet_ifaces; /**< open ifaces without progress */
    uct_worker_callback_t callbacks[UCT_WORKER_MAX_CALLBACKS]; /**< func NULL = free slot */
    unsigned              num_callbacks; /**< highest used slot + 1 */
    uint64_t              active_mask;   /**< slots progress calls */
    uint64_t              pending_mask;  /**< registered during progress, not yet active */
    unsigned              in_progress;   /**< nesting depth of uct_worker_progress() */
    unsigned              rounds;        /**< progress rounds, for idle ifaces */
    pthread_mutex_t       lock;          /**< recursive; taken only in UCS_THREAD_MODE_MULTI */
};

struct uct_base_iface;

/**
 * Add an iface to the worker's progress list (uct_base_iface_init() does
 * this). Not allowed from within uct_worker_progress() of the same worker.
 */
void uct_worker_add_iface(uct_worker_h worker, struct uct_base_iface *iface);

/** Remove an iface from the progress list (uct_base_iface_cleanup()). */
void uct_worker_remove_iface(uct_worker_h worker, struct uct_base_iface *iface);

END_C_DECLS

#endif
