/**
 * @file uct_iface.h
 * Base of every iface and ep: what all transports share (worker and md
 * links, active-message handler table, error handler, pending queue),
 * so that a transport file holds only what is particular to it.
 */
#ifndef UCT_IFACE_H_
#define UCT_IFACE_H_

#include <uct/base/uct_md.h>
#include <uct/api/v2/uct_v2.h>
#include <ucs/datastruct/queue.h>
#include <ucs/debug/log.h>

#include <string.h>

BEGIN_C_DECLS

typedef struct uct_am_handler {
    uct_am_callback_t cb;
    void              *arg;
    uint32_t          flags;
} uct_am_handler_t;

/**
 * A transport's cost model (see uct_iface_estimate_perf()). Called with the
 * operation and memory types checked and every output field already filled
 * from uct_iface_query(), so it overrides only what it models better.
 */
typedef ucs_status_t (*uct_iface_estimate_perf_func_t)(uct_iface_h iface,
                                                       uct_perf_attr_t *perf_attr);

/** Transports embed this as the first member of their iface. */
typedef struct uct_base_iface {
    uct_iface_t         super;
    uct_md_h            md;
    uct_worker_h        worker;
    uct_am_handler_t    am[UCT_AM_ID_MAX];
    uct_error_handler_t err_handler;
    void                *err_handler_arg;
    ucs_list_link_t     worker_link; /**< in the worker's iface list (progress) */
    /** The transport has a progress function: only such ifaces are on the
     *  worker's list, so one whose operations complete in their call (cma)
     *  costs progress nothing. */
    int                 has_progress;
    /** Set by the transport while it has nothing to progress but a rare
     *  look (a listening socket): the worker then calls its progress only
     *  once in UCT_WORKER_IDLE_POLL_PERIOD rounds, without an indirect call
     *  in the others. See uct_base_iface_set_idle(). */
    int                 progress_idle;
    char                tl_name[UCT_TL_NAME_MAX]; /**< from params, for messages */
    size_t              rx_headroom; /**< params->rx_headroom, or 0 */
    /** Set after uct_base_iface_init() by a transport with its own model;
     *  NULL: estimates come from uct_iface_query() alone. */
    uct_iface_estimate_perf_func_t estimate_perf;
} uct_base_iface_t;

/**
 * Tell the worker whether @a iface is idle (nothing but a rare look to
 * progress). A transport clears it as soon as it has work -- an ep created,
 * an event fd armed -- and may set it at the end of a progress call that
 * found nothing left; a new connection is then seen within
 * UCT_WORKER_IDLE_POLL_PERIOD progress rounds.
 */
static inline void uct_base_iface_set_idle(uct_base_iface_t *iface, int idle)
{
    iface->progress_idle = idle;
}

/** Transports embed this as the first member of their ep. */
typedef struct uct_base_ep {
    uct_ep_t super;
} uct_base_ep_t;

/** Bind a new ep to its iface (the inline dispatch reads ep->iface). */
static inline void uct_base_ep_init(uct_base_ep_t *ep, uct_base_iface_t *iface)
{
    ep->super.iface = &iface->super;
}

/*
 * Receive descriptors kept by an am handler.
 *
 * A handler that gets UCT_CB_PARAM_FLAG_DESC may return UCS_INPROGRESS and
 * later call uct_iface_release_desc(desc) with desc = data - rx_headroom
 * (data itself when the iface was opened without rx_headroom, the common
 * case). The function is iface-agnostic, so the descriptor itself must say
 * how it is released: a transport that passes FLAG_DESC stores, in the
 * UCT_RECV_DESC_HDR_SIZE bytes right before desc, a pointer to a
 * uct_recv_desc_t whose release function it owns. The layout of such a
 * buffer is therefore:
 *
 *     [uct_recv_desc_t *][rx_headroom bytes, the user's][data ...]
 *     ^ transport         ^ desc                          ^ data
 *
 * One uct_recv_desc_t per iface (or per pool) is enough; it is typically
 * embedded in the iface and found back with ucs_container_of().
 */
typedef struct uct_recv_desc uct_recv_desc_t;

/** Give back the buffer whose desc pointer (see above) is @a desc. */
typedef void (*uct_recv_desc_release_func_t)(uct_recv_desc_t *self, void *desc);

struct uct_recv_desc {
    uct_recv_desc_release_func_t release;
};

/** Bytes a transport reserves in front of desc for the release pointer. */
#define UCT_RECV_DESC_HDR_SIZE sizeof(uct_recv_desc_t*)

/** Store @a rdesc in front of @a desc (no alignment needed). */
static inline void uct_recv_desc_set(void *desc, uct_recv_desc_t *rdesc)
{
    memcpy((char*)desc - UCT_RECV_DESC_HDR_SIZE, &rdesc, sizeof(rdesc));
}

/** The uct_recv_desc_t stored in front of @a desc. */
static inline uct_recv_desc_t *uct_recv_desc_get(const void *desc)
{
    uct_recv_desc_t *rdesc;

    memcpy(&rdesc, (const char*)desc - UCT_RECV_DESC_HDR_SIZE, sizeof(rdesc));
    return rdesc;
}

/*
 * Scatter/gather helpers for zcopy operations. An iov element describes
 * @a count blocks of @a length bytes, @a stride bytes apart (stride is
 * ignored when count is 1; count 0 is treated as 1 so that callers that
 * leave it zeroed still work).
 */

/** Total bytes of @a iov[0..iovcnt). */
size_t uct_iov_total_length(const uct_iov_t *iov, size_t iovcnt);

/** Copy the bytes described by @a iov into the contiguous @a dest. @return bytes. */
size_t uct_iov_to_buffer(const uct_iov_t *iov, size_t iovcnt, void *dest);

/** Copy the contiguous @a src into the buffers of @a iov. @return bytes. */
size_t uct_iov_from_buffer(const uct_iov_t *iov, size_t iovcnt, const void *src);

/**
 * Initialise the base: copy @a ops (entries left NULL become functions that
 * return UCS_ERR_UNSUPPORTED, so the inline dispatch never jumps to NULL;
 * iface_close and iface_query are mandatory: UCS_ERR_INVALID_PARAM),
 * install the default am handler (drops the message with a warning naming
 * the id), record the error handler from @a params, and add the iface to
 * the worker's progress list.
 */
ucs_status_t uct_base_iface_init(uct_base_iface_t *iface, const uct_iface_ops_t *ops,
                                 uct_md_h md, uct_worker_h worker,
                                 const uct_iface_params_t *params,
                                 const uct_iface_config_t *config);

/**
 * Replace every NULL entry of @a ops by a stand-in: UCS_ERR_UNSUPPORTED for
 * calls that return a status, nothing / 0 for the others (pending_purge,
 * ep_destroy, iface_progress, iface_is_reachable). uct_base_iface_init()
 * calls it; transports that build an ops table at run time may too.
 */
void uct_iface_ops_fill_stubs(uct_iface_ops_t *ops);

/** Undo uct_base_iface_init() (removes the iface from the worker). */
void uct_base_iface_cleanup(uct_base_iface_t *iface);

/**
 * Start an iface query: zero @a attr and fill what every iface shares
 * (max_num_eps unlimited, priority 0). The transport then sets its
 * capabilities and performance model.
 */
void uct_base_iface_query(uct_base_iface_t *iface, uct_iface_attr_t *attr);

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
