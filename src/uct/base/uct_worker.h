/**
 * @file uct_worker.h
 * The worker: a list of ifaces and callbacks that uct_worker_progress()
 * visits. Progress is caller-driven; nothing runs in the background.
 */
#ifndef UCT_WORKER_H_
#define UCT_WORKER_H_

#include <uct/api/uct.h>
#include <ucs/datastruct/list.h>

BEGIN_C_DECLS

#define UCT_WORKER_MAX_CALLBACKS 64

typedef struct uct_worker_callback {
    ucs_callback_t func;
    void           *arg;
} uct_worker_callback_t;

struct uct_worker {
    ucs_thread_mode_t     thread_mode;
    ucs_list_link_t       ifaces;      /**< uct_base_iface_t::worker_link */
    uct_worker_callback_t callbacks[UCT_WORKER_MAX_CALLBACKS]; /**< func NULL = free slot */
    unsigned              num_callbacks; /**< highest used slot + 1 */
};

END_C_DECLS

#endif
