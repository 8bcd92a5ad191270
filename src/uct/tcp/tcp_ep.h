/**
 * @file tcp_ep.h
 * A tcp endpoint: the sending end of one TCP connection to a peer iface.
 *
 * Life of an ep:
 *   connecting  -- connect() is in progress; the hello (tcp_conn.h) waits in
 *                  the tx buffer, so sends return UCS_ERR_NO_RESOURCE and
 *                  uct_ep_pending_add() queues requests;
 *   connected   -- frames go straight to the kernel; at most one message is
 *                  "in flight" (partly accepted by the kernel). While one
 *                  is, sends return UCS_ERR_NO_RESOURCE and the socket is
 *                  watched for writability, which finishes the message,
 *                  sends waiting get requests, then dispatches the pending
 *                  queue. Get responses come back on the same socket
 *                  (tcp_get.h);
 *   failed      -- the connection broke (end of stream, reset, refused);
 *                  the socket is closed, sends return the failure status,
 *                  and the next progress completes outstanding operations
 *                  with that status and calls the iface error handler. The
 *                  user then destroys the ep.
 *
 * Buffer ownership: am_short/am_bcopy copy what the kernel did not take into
 * the ep's tx buffer, so the caller's data is free on return. am_zcopy keeps
 * pointing at the caller's buffers until its completion runs.
 *
 * Thread safety: none (see tcp_iface.h).
 */
#ifndef UCT_TCP_EP_H_
#define UCT_TCP_EP_H_

#include "tcp_get.h"
#include "tcp_iface.h"
#include "tcp_wire.h"

#include <ucs/datastruct/queue.h>

#include <sys/uio.h>

BEGIN_C_DECLS

/** iovs of the message in flight: frame and user header, the data, padding. */
#define UCT_TCP_EP_TX_IOV_MAX  (UCT_TCP_MAX_ZCOPY_IOV + 2)

typedef struct uct_tcp_ep {
    uct_base_ep_t       super;
    uct_tcp_iface_t     *iface;
    uct_tcp_watch_t     watch;
    uct_tcp_sockaddr_t peer; /**< the peer iface's listening address */
    /** UCS_INPROGRESS while connecting, UCS_OK when connected, else the
     *  failure. */
    ucs_status_t        status;
    int                 on_failed_list; /**< linked in iface->failed_eps */
    uint64_t            unacked_since_ns; /**< first peer check that saw data
                                               stuck, or 0 */

    /* The message in flight: iov[index .. iovcnt) remains to be sent. */
    struct {
        struct iovec     iov[UCT_TCP_EP_TX_IOV_MAX];
        unsigned         iovcnt;
        unsigned         index;
        uct_completion_t *comp;   /**< am_zcopy completion, or NULL */
        uint8_t          *buf;    /**< segment buffer of iface->seg_mp while
                                       a frame of ours is partly sent, else
                                       NULL */
    } tx;
    /** What the connection opens with: kept apart from the segment buffers,
     *  so that many eps connecting at once do not each hold a segment. */
    uct_tcp_hello_t     hello;

    uct_pending_queue_t pending;
    ucs_queue_head_t    flush_comps;  /**< uct_tcp_ep_flush_req_t */
    uct_tcp_get_rx_t    get;          /**< outstanding gets (tcp_get.h) */
    ucs_list_link_t     list;         /**< in iface->eps */
    ucs_list_link_t     failed_link;  /**< in iface->failed_eps */
} uct_tcp_ep_t;

/** A flush waiting for an ep's message in flight (uct_tcp_ep_t::flush_comps). */
typedef struct uct_tcp_ep_flush_req {
    ucs_queue_elem_t queue;
    uct_completion_t *comp;  /**< invoked once; the request is then freed */
} uct_tcp_ep_flush_req_t;

/** Whether a message is partly sent. */
static inline int uct_tcp_ep_tx_busy(const uct_tcp_ep_t *ep)
{
    return ep->tx.index < ep->tx.iovcnt;
}

/* ---- uct_iface_ops_t entries (see uct.h for their contracts) ---- */

ucs_status_t uct_tcp_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p);

/**
 * Destroy an ep. Bytes not yet accepted by the kernel are dropped, an
 * outstanding am_zcopy and flush completions run with UCS_ERR_CANCELED, and
 * pending requests are discarded (purge them first to get them back).
 */
void uct_tcp_ep_destroy(uct_ep_h tl_ep);

ucs_status_t uct_tcp_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                 const void *payload, unsigned length);

ssize_t uct_tcp_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id, uct_pack_callback_t pack_cb,
                            void *arg, unsigned flags);

ucs_status_t uct_tcp_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                                 unsigned header_length, const uct_iov_t *iov,
                                 size_t iovcnt, unsigned flags, uct_completion_t *comp);

/** Queue @a req; UCS_ERR_BUSY when a send could go now (or the ep failed). */
ucs_status_t uct_tcp_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                    unsigned flags);

void uct_tcp_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                              void *arg);

/**
 * Local completion of sends, remote completion of gets: UCS_OK when every
 * accepted message is in the kernel and every get has its data;
 * UCS_ERR_NO_RESOURCE while pending requests wait (the flush has to queue
 * behind them); else UCS_INPROGRESS, and @a comp, when not NULL, is called
 * once the message in flight is in the kernel and the gets are done (or
 * with the failure). A
 * failed ep returns its failure status. UCT_FLUSH_FLAG_CANCEL
 * drops the message in flight (its completion gets UCS_ERR_CANCELED) and
 * closes the connection, since a torn frame cannot be followed by another.
 */
ucs_status_t uct_tcp_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp);

/** TCP delivers in order: nothing to do. */
ucs_status_t uct_tcp_ep_fence(uct_ep_h tl_ep, unsigned flags);

/* ---- used by the iface ---- */

/**
 * Handle epoll @a events of the ep's socket: connection completion, failure
 * (end of stream, error), writability (finish the message in flight, run
 * the pending queue).
 * @return the number of operations completed.
 */
unsigned uct_tcp_ep_handle_events(uct_tcp_ep_t *ep, uint32_t events);

/**
 * Mark the ep failed with @a status: close the socket, drop unsent bytes,
 * and queue the failure for uct_tcp_ep_report_failure(). Safe from inside a
 * send call (no user callback runs here). Idempotent.
 */
void uct_tcp_ep_set_failed(uct_tcp_ep_t *ep, ucs_status_t status);

/**
 * Fail @a ep with UCS_ERR_ENDPOINT_TIMEOUT when its peer has acknowledged
 * none of the data the kernel retransmits for UCX_TCP_KEEPIDLE + KEEPINTVL *
 * KEEPCNT (seen at two looks at least KEEPINTVL apart); UCP's peer check
 * and the iface's watch over stalled senders call it.
 *
 * @return UCS_OK while the peer counts as alive, else the ep's error.
 */
ucs_status_t uct_tcp_ep_check_peer(uct_tcp_ep_t *ep);

/** Whether @a ep has bytes or requests waiting for the socket to drain. */
int uct_tcp_ep_is_tx_stalled(const uct_tcp_ep_t *ep);

/**
 * Complete the outstanding operations of a failed ep with its status and
 * call the iface error handler (which may destroy the ep). Called from
 * progress for each ep of iface->failed_eps, after unlinking it.
 */
void uct_tcp_ep_report_failure(uct_tcp_ep_t *ep);

/**
 * Whether a flush of the ep has to wait: a user message is partly sent on
 * a working connection (the hello alone does not count), or a get has not
 * got its data.
 */
static inline int uct_tcp_ep_flush_needed(const uct_tcp_ep_t *ep)
{
    return ((ep->status == UCS_OK) && uct_tcp_ep_tx_busy(ep)) ||
           uct_tcp_get_outstanding(&ep->get);
}

/** Recompute which events the ep's socket is watched for. */
void uct_tcp_ep_update_events(uct_tcp_ep_t *ep);

/**
 * Send a transport frame (id >= UCT_AM_ID_MAX) of @a length payload bytes
 * on a connected ep with nothing in flight; the kernel's leftovers stay in
 * flight as for am_short. @return UCS_OK, or the failure (ep marked failed).
 */
ucs_status_t uct_tcp_ep_frame_send(uct_tcp_ep_t *ep, uint8_t id, const void *payload,
                                   size_t length);

/** Run the ep's flush completions when nothing is left to wait for.
 *  @return completions run. */
unsigned uct_tcp_ep_flush_progress(uct_tcp_ep_t *ep);

/**
 * Queue @a req (allocated with malloc(), freed by the ep) to complete when
 * the message in flight is in the kernel. Only when uct_tcp_ep_flush_needed().
 */
void uct_tcp_ep_flush_push(uct_tcp_ep_t *ep, uct_tcp_ep_flush_req_t *req);

END_C_DECLS

#endif
