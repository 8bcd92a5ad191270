/**
 * @file uct_iface.h
 * Base of every iface and ep: what all transports share (worker and md
 * links, active-message handler table, error handler, pending queue),
 * so that a transport file holds only what is particular to it.
 */
#ifndef UCT_IFACE_H_
#define UCT_IFACE_H_

#include <uct/base/uct_md.h>
#include <ucs/datastruct/queue.h>
#include <ucs/debug/log.h>

BEGIN_C_DECLS

typedef struct uct_am_handler {
    uct_am_callback_t cb;
    void              *arg;
    uint32_t          flags;
} uct_am_handler_t;

/** Transports embed this as the first member of their iface. */
typedef struct uct_base_iface {
    uct_iface_t         super;
    uct_md_h            md;
    uct_worker_h        worker;
    uct_am_handler_t    am[UCT_AM_ID_MAX];
    uct_error_handler_t err_handler;
    void                *err_handler_arg;
    ucs_list_link_t     worker_link; /**< in the worker's iface list (progress) */
} uct_base_iface_t;

/** Transports embed this as the first member of their ep. */
typedef struct uct_base_ep {
    uct_ep_t super;
} uct_base_ep_t;

/**
 * Initialise the base: copy @a ops (entries left NULL become functions that
 * return UCS_ERR_UNSUPPORTED, so the inline dispatch never jumps to NULL),
 * install the default am handler (drops the message with a warning naming
 * the id), record the error handler from @a params, and add the iface to
 * the worker's progress list.
 */
ucs_status_t uct_base_iface_init(uct_base_iface_t *iface, const uct_iface_ops_t *ops,
                                 uct_md_h md, uct_worker_h worker,
                                 const uct_iface_params_t *params,
                                 const uct_iface_config_t *config);

/** Undo uct_base_iface_init() (removes the iface from the worker). */
void uct_base_iface_cleanup(uct_base_iface_t *iface);

/** Deliver a received active message to the handler of @a id. */
static inline ucs_status_t uct_iface_invoke_am(uct_base_iface_t *iface, uint8_t id,
                                               void *data, size_t length, unsigned flags)
{
    uct_am_handler_t *h = &iface->am[id & (UCT_AM_ID_MAX - 1)];
    return h->cb(h->arg, data, length, flags);
}

/**
 * Report a peer failure on @a ep: calls the iface's error handler, or logs an
 * error naming the transport and status when there is none.
 */
ucs_status_t uct_iface_handle_ep_err(uct_iface_h iface, uct_ep_h ep, ucs_status_t status);

/*
 * Pending queue shared by transports: requests wait in FIFO order and are
 * dispatched when the transport has resources again.
 */
typedef struct uct_pending_queue {
    ucs_queue_head_t queue;
} uct_pending_queue_t;

void uct_pending_queue_init(uct_pending_queue_t *pq);

/** Append @a req (uses req->priv for the link). */
void uct_pending_queue_push(uct_pending_queue_t *pq, uct_pending_req_t *req);

/**
 * Call queued requests in order until one returns UCS_ERR_NO_RESOURCE (it
 * stays at the head) or the queue is empty.
 * @return the number of requests completed.
 */
unsigned uct_pending_queue_dispatch(uct_pending_queue_t *pq);

/** Remove every request, calling @a cb (may be NULL) for each. */
void uct_pending_queue_purge(uct_pending_queue_t *pq, uct_pending_purge_callback_t cb,
                             void *arg);

static inline int uct_pending_queue_is_empty(const uct_pending_queue_t *pq)
{
    return ucs_queue_is_empty(&pq->queue);
}

END_C_DECLS

#endif
