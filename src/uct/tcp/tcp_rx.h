/**
 * @file tcp_rx.h
 * The receiving end of a connection: an accepted socket, the hello that
 * opens it (tcp_conn.h), and the frames (tcp_wire.h) that follow, delivered
 * to the iface's am handlers.
 *
 * Framing: every frame is an 8-byte header (am id, payload length) and the
 * payload, padded with zeros to a multiple of UCT_TCP_FRAME_ALIGN so that
 * every payload starts 8-byte aligned in the receive buffer. Reads fill a
 * buffer of one segment; every complete frame in it is handed to its
 * handler in place (no copy), valid during the call only. A frame larger
 * than the buffer is read straight into a buffer of its own, which the
 * handler may keep (UCT_CB_PARAM_FLAG_DESC, released with
 * uct_iface_release_desc()).
 *
 * A connection whose peer goes away is closed quietly: nothing in the
 * receive direction is owned by the user, and the user's ep to that peer
 * (if any) reports the failure.
 */
#ifndef UCT_TCP_RX_H_
#define UCT_TCP_RX_H_

#include "tcp_get.h"
#include "tcp_iface.h"

BEGIN_C_DECLS

/** Frames are padded to this many bytes on the wire. */
#define UCT_TCP_FRAME_ALIGN 8

/** Bytes a frame of @a length payload bytes occupies after its header. */
static inline size_t uct_tcp_frame_padded(size_t length)
{
    return (length + UCT_TCP_FRAME_ALIGN - 1) & ~((size_t)UCT_TCP_FRAME_ALIGN - 1);
}

typedef struct uct_tcp_rx_conn {
    uct_tcp_watch_t    watch;
    uct_tcp_iface_t    *iface;
    ucs_list_link_t    list;       /**< in iface->rx_conns */
    uct_tcp_sockaddr_t peer;       /**< from accept(); after the hello, the
                                        peer iface's listening address */
    int                hello_done;

    /* Receive buffer: bytes [head, tail) are received and not yet handled. */
    uint8_t            *buf;
    size_t             capacity;
    size_t             head;
    size_t             tail;

    /* A frame too large for the buffer, being read into its own memory. */
    struct {
        void           *mem;      /**< allocation (descriptor header in front) */
        uint8_t        *data;     /**< payload start */
        size_t         length;    /**< payload bytes */
        size_t         wire_len;  /**< padded length: bytes to read */
        size_t         filled;    /**< bytes read so far */
        uint8_t        am_id;
    } large;

    /** Get responses to write back on this socket (tcp_get.h), in order. */
    ucs_queue_head_t   responses;
    uint64_t           unacked_since_ns; /**< first stall check that saw
                                              response data stuck, or 0 */
    uint64_t acks_delayed_ns;            /**< last uct_tcp_sock_delay_acks() */
} uct_tcp_rx_conn_t;

/**
 * Make a receive connection of an accepted socket and watch it. Takes
 * ownership of @a fd (closed on failure too).
 */
ucs_status_t uct_tcp_rx_conn_create(uct_tcp_iface_t *iface, int fd,
                                    const uct_tcp_sockaddr_t *peer);

/**
 * Read what the socket has and deliver every complete frame. Closes and
 * frees the connection at end of stream, on an error or on a malformed
 * frame (then @a conn is gone on return).
 * @return the number of messages delivered.
 */
unsigned uct_tcp_rx_conn_progress(uct_tcp_rx_conn_t *conn);

/**
 * Handle epoll @a events of a receive connection: writability continues its
 * get responses, readability receives (uct_tcp_rx_conn_progress()).
 * @return the number of messages delivered.
 */
unsigned uct_tcp_rx_conn_handle_events(uct_tcp_rx_conn_t *conn, uint32_t events);

/**
 * A connection writing get responses whose peer has acknowledged none of
 * them for UCX_TCP_KEEPIDLE + KEEPINTVL * KEEPCNT (the rule of
 * uct_tcp_ep_check_peer()): the peer host or the path is gone. The iface's
 * eps to the same peer fail with UCS_ERR_ENDPOINT_TIMEOUT, so that the
 * user whose memory was being read learns it, and the connection closes.
 * @return whether the connection was closed.
 */
int uct_tcp_rx_conn_check_peer(uct_tcp_rx_conn_t *conn);

/** Close the socket and free the connection. */
void uct_tcp_rx_conn_destroy(uct_tcp_rx_conn_t *conn);

/**
 * uct_recv_desc_t::release for large frames a handler kept: frees the
 * allocation. Works after the iface is closed.
 */
void uct_tcp_rx_desc_release(uct_recv_desc_t *self, void *desc);

END_C_DECLS

#endif
