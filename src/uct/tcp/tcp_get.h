/**
 * @file tcp_get.h
 * Get zcopy over tcp: the reader's ep sends a get request frame
 * (tcp_wire.h) on its connection, and the peer's receiving side of that
 * connection writes the data back on the same socket, in request order,
 * straight from the registered memory (tcp_md.h) with sendmsg. The reader
 * receives the response straight into the destination buffer, so a large
 * read costs the two copies of the kernel and no copy of ours, in as few
 * system calls as the socket buffers allow; the requests and responses use
 * the otherwise idle reverse direction of a connection, so they do not wait
 * behind the active messages an ep sends.
 *
 * Completion of a get is remote completion: the data is in the buffer. A
 * flush of the ep waits for its gets. A request the peer refuses (a key of
 * memory it no longer has registered, a range outside it) completes the get
 * with UCS_ERR_INVALID_ADDR and leaves the connection working.
 *
 * Thread safety: none (see tcp_iface.h).
 */
#ifndef UCT_TCP_GET_H_
#define UCT_TCP_GET_H_

#include "tcp_md.h"
#include "tcp_wire.h"

#include <uct/api/uct.h>
#include <ucs/datastruct/queue.h>

BEGIN_C_DECLS

struct uct_tcp_ep;
struct uct_tcp_rx_conn;

/** One get of an ep, from its call to its completion. */
typedef struct uct_tcp_get_op {
    ucs_queue_elem_t queue;
    uint8_t          *buffer;
    size_t           length;
    uct_tcp_get_req_t req;   /**< as it goes on the wire */
    uct_completion_t *comp;
} uct_tcp_get_op_t;

/** The reading side, embedded in the ep. */
typedef struct uct_tcp_get_rx {
    ucs_queue_head_t   unsent;    /**< gets whose request waits for the socket */
    ucs_queue_head_t   requested; /**< gets waiting for their response, in order */
    uct_tcp_get_resp_t hdr;       /**< response header of the first requested */
    size_t             hdr_filled;
    size_t             filled;    /**< data bytes of it received */
} uct_tcp_get_rx_t;

/** A response being written by the serving side of a connection. */
typedef struct uct_tcp_get_resp_tx {
    ucs_queue_elem_t    queue;
    uct_tcp_get_resp_t  hdr;
    uct_tcp_md_region_t *region; /**< read from; NULL for a refusal */
    const uint8_t       *data;
    size_t              length;
    size_t              sent;    /**< of the header and the data */
} uct_tcp_get_resp_tx_t;

/** uct_iface_ops_t::ep_get_zcopy of tcp: one host buffer (iovcnt <= 1). */
ucs_status_t uct_tcp_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                  uint64_t remote_addr, uct_rkey_t rkey,
                                  uct_completion_t *comp);

/** Initialise the reading side of a new ep. */
void uct_tcp_get_rx_init(uct_tcp_get_rx_t *rx);

/** Whether the ep has gets not completed yet (sent or not). */
static inline int uct_tcp_get_outstanding(const uct_tcp_get_rx_t *rx)
{
    return !ucs_queue_is_empty(&rx->unsent) || !ucs_queue_is_empty(&rx->requested);
}

/** Whether the ep has gets whose request is not sent yet. */
static inline int uct_tcp_get_has_unsent(const uct_tcp_get_rx_t *rx)
{
    return !ucs_queue_is_empty(&rx->unsent);
}

/**
 * Send the requests of waiting gets while the socket takes them (the ep is
 * connected and has nothing in flight). A failure marks the ep failed.
 */
void uct_tcp_get_send_requests(struct uct_tcp_ep *ep);

/**
 * Read responses of the ep's gets from its socket, completing each get
 * whose data is in. A malformed response or a broken connection marks the
 * ep failed. A completion may destroy the ep: the caller checks the iface's
 * destroy_gen afterwards.
 * @return gets completed.
 */
unsigned uct_tcp_get_recv(struct uct_tcp_ep *ep);

/** Move every outstanding get of @a rx to @a queue (to be completed with
 *  uct_tcp_get_complete_all() once the ep may be gone). */
void uct_tcp_get_take_all(uct_tcp_get_rx_t *rx, ucs_queue_head_t *queue);

/** Complete, with @a status, and free the gets of @a queue. */
unsigned uct_tcp_get_complete_all(ucs_queue_head_t *queue, ucs_status_t status);

/**
 * Serve the get request @a payload (a uct_tcp_get_req_t, maybe unaligned)
 * received on @a conn: queue the response and write what the socket takes.
 * @return UCS_OK, or the error that must close the connection (no memory,
 *         a failed send).
 */
ucs_status_t uct_tcp_get_serve(struct uct_tcp_rx_conn *conn, const void *payload);

/**
 * Write more of @a conn's queued responses; watches the socket for
 * writability while some remain.
 * @return UCS_OK, or the error that must close the connection.
 */
ucs_status_t uct_tcp_get_conn_send(struct uct_tcp_rx_conn *conn);

/** Drop the queued responses of a connection being destroyed. */
void uct_tcp_get_conn_cleanup(ucs_queue_head_t *responses);

END_C_DECLS

#endif
