#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "tcp_rx.h"
#include "tcp_conn.h"
#include "tcp_ep.h"
#include "tcp_wire.h"

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>

#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

ucs_status_t uct_tcp_rx_conn_create(uct_tcp_iface_t *iface, int fd,
                                    const uct_tcp_sockaddr_t *peer)
{
    uct_tcp_rx_conn_t *conn;
    char str[UCT_TCP_SOCKADDR_STRLEN];
    ucs_status_t status;

    conn = calloc(1, sizeof(*conn));
    if (conn == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_close_fd;
    }

    /* One segment of the largest bcopy frame; larger frames get their own
     * buffer. The hello fits in any capacity (it is smaller than a frame
     * header plus a minimal segment). The ring itself comes from the iface's
     * pool only while bytes are waiting in it. */
    conn->capacity = sizeof(uct_tcp_frame_hdr_t) + uct_tcp_frame_padded(iface->seg_size);

    ucs_queue_head_init(&conn->responses);
    conn->watch.fd   = fd;
    conn->watch.kind = UCT_TCP_WATCH_RX;
    conn->iface      = iface;
    conn->peer       = *peer;

    status = uct_tcp_iface_watch_add(iface, &conn->watch, EPOLLIN);
    if (status != UCS_OK) {
        goto err_free_conn;
    }

    ucs_list_add_tail(&iface->rx_conns, &conn->list);
    uct_base_iface_set_idle(&iface->super, 0);
    ucs_debug("tcp iface %p: accepted connection %p from %s", (void*)iface,
              (void*)conn, uct_tcp_sockaddr_str(peer, str, sizeof(str)));
    return UCS_OK;

err_free_conn:
    free(conn);
err_close_fd:
    close(fd);
    return status;
}

void uct_tcp_rx_conn_destroy(uct_tcp_rx_conn_t *conn)
{
    uct_tcp_iface_t *iface = conn->iface;

    uct_tcp_iface_watch_close(iface, &conn->watch);
    ucs_list_del(&conn->list);
    free(conn->large.mem);
    uct_tcp_iface_seg_put(conn->buf);
    uct_tcp_get_conn_cleanup(&conn->responses);
    free(conn);
    ++iface->destroy_gen;
}

/* End of a connection from the receive side: the peer closed it (its ep was
 * destroyed or its process is gone) or it broke. Losing half a frame is only
 * worth a debug line: the peer's own ep has already told its user. */
static void uct_tcp_rx_conn_close(uct_tcp_rx_conn_t *conn, ucs_status_t status)
{
    char str[UCT_TCP_SOCKADDR_STRLEN];

    ucs_debug("tcp iface %p: connection %p from %s closed (%s)%s", (void*)conn->iface,
              (void*)conn, uct_tcp_sockaddr_str(&conn->peer, str, sizeof(str)),
              ucs_status_string(status),
              ((conn->tail > conn->head) || (conn->large.mem != NULL)) ?
              ", a partly received message is dropped" : "");
    uct_tcp_rx_conn_destroy(conn);
}

void uct_tcp_rx_desc_release(uct_recv_desc_t *self, void *desc)
{
    free((char*)desc - UCT_RECV_DESC_HDR_SIZE);
}

/* Allocation for a large frame: [release pointer][rx headroom][payload], the
 * layout uct_iface_release_desc() expects. */
static ucs_status_t uct_tcp_rx_large_start(uct_tcp_rx_conn_t *conn, uint8_t am_id,
                                           size_t length)
{
    size_t headroom = conn->iface->super.rx_headroom;
    size_t wire_len = uct_tcp_frame_padded(length);
    uint8_t *desc;

    conn->large.mem = malloc(UCT_RECV_DESC_HDR_SIZE + headroom + wire_len);
    if (conn->large.mem == NULL) {
        ucs_error("tcp: no memory for a %zu-byte message", length);
        return UCS_ERR_NO_MEMORY;
    }

    desc = (uint8_t*)conn->large.mem + UCT_RECV_DESC_HDR_SIZE;
    uct_recv_desc_set(desc, &conn->iface->release_desc);
    conn->large.data     = desc + headroom;
    conn->large.length   = length;
    conn->large.wire_len = wire_len;
    conn->large.filled   = 0;
    conn->large.am_id    = am_id;
    return UCS_OK;
}

/* The large frame is complete: hand it over as a descriptor the handler may
 * keep. */
static void uct_tcp_rx_large_deliver(uct_tcp_rx_conn_t *conn)
{
    void *mem = conn->large.mem;
    ucs_status_t status;

    conn->large.mem = NULL;
    status = uct_iface_invoke_am(&conn->iface->super, conn->large.am_id,
                                 conn->large.data, conn->large.length,
                                 UCT_CB_PARAM_FLAG_DESC);
    if (status != UCS_INPROGRESS) {
        free(mem);
    }
}

/*
 * Deliver every complete frame in [head, tail). A frame that cannot fit in
 * the buffer moves to the large-frame path with what has arrived of it.
 * @return messages delivered, or a negative status for a malformed frame.
 */
static ssize_t uct_tcp_rx_conn_dispatch(uct_tcp_rx_conn_t *conn)
{
    uct_tcp_frame_hdr_t hdr;
    size_t avail, length, frame_len;
    ssize_t count = 0;
    ucs_status_t status;

    while ((avail = conn->tail - conn->head) >= sizeof(hdr)) {
        memcpy(&hdr, conn->buf + conn->head, sizeof(hdr));
        length = uct_tcp_frame_hdr_length(&hdr);
        if (hdr.am_id == UCT_TCP_FRAME_GET_REQ) {
            if (length != sizeof(uct_tcp_get_req_t)) {
                ucs_error("tcp: malformed get request of %zu bytes from a peer: "
                          "closing the connection", length);
                return UCS_ERR_IO_ERROR;
            }
            frame_len = sizeof(hdr) + uct_tcp_frame_padded(length);
            if (frame_len > avail) {
                break;
            }
            status = uct_tcp_get_serve(conn, conn->buf + conn->head + sizeof(hdr));
            if (status != UCS_OK) {
                return status;
            }
            conn->head += frame_len;
            continue;
        }
        if ((hdr.am_id >= UCT_AM_ID_MAX) || (length > UCT_TCP_MAX_FRAME_LEN)) {
            ucs_error("tcp: malformed frame from a peer (am id %u, length %zu): "
                      "closing the connection", hdr.am_id, length);
            return UCS_ERR_IO_ERROR;
        }

        frame_len = sizeof(hdr) + uct_tcp_frame_padded(length);
        if (frame_len <= avail) {
            uct_iface_invoke_am(&conn->iface->super, hdr.am_id,
                                conn->buf + conn->head + sizeof(hdr), length, 0);
            conn->head += frame_len;
            ++count;
        } else if (frame_len > conn->capacity) {
            status = uct_tcp_rx_large_start(conn, hdr.am_id, length);
            if (status != UCS_OK) {
                return status;
            }
            /* Everything after the header belongs to this frame. */
            conn->large.filled = avail - sizeof(hdr);
            memcpy(conn->large.data, conn->buf + conn->head + sizeof(hdr),
                   conn->large.filled);
            conn->head = conn->tail;
            break;
        } else {
            break; /* the rest of it is still on its way */
        }
    }

    return count;
}

/* Read more of the large frame, straight into its buffer. */
static unsigned uct_tcp_rx_conn_progress_large(uct_tcp_rx_conn_t *conn)
{
    ucs_status_t status;
    size_t recvd;

    status = uct_tcp_sock_recv(conn->watch.fd, conn->large.data + conn->large.filled,
                               conn->large.wire_len - conn->large.filled, &recvd);
    if (status != UCS_OK) {
        uct_tcp_rx_conn_close(conn, status);
        return 0;
    }

    conn->large.filled += recvd;
    if (conn->large.filled < conn->large.wire_len) {
        return 0;
    }

    uct_tcp_rx_large_deliver(conn);
    return 1;
}

/* The hello opens every connection (tcp_conn.h); until it has been checked,
 * nothing reaches a handler. */
static ucs_status_t uct_tcp_rx_conn_check_hello(uct_tcp_rx_conn_t *conn)
{
    uct_tcp_sockaddr_t peer;
    char str[UCT_TCP_SOCKADDR_STRLEN];

    if (conn->tail - conn->head < sizeof(uct_tcp_hello_t)) {
        return UCS_INPROGRESS;
    }

    if (uct_tcp_conn_hello_unpack(conn->buf + conn->head,
                                  uct_tcp_iface_scope_id(conn->iface), &peer) != UCS_OK) {
        ucs_diag("tcp iface %p: connection from %s is not a tcp transport peer "
                 "(bad hello): closing it", (void*)conn->iface,
                 uct_tcp_sockaddr_str(&conn->peer, str, sizeof(str)));
        return UCS_ERR_INVALID_ADDR;
    }

    conn->peer        = peer;
    conn->head       += sizeof(uct_tcp_hello_t);
    conn->hello_done  = 1;
    ucs_debug("tcp iface %p: connection %p is from iface %s", (void*)conn->iface,
              (void*)conn, uct_tcp_sockaddr_str(&peer, str, sizeof(str)));
    return UCS_OK;
}

/*
 * Messages and their answers travel on two connections (ours to the peer,
 * the peer's to us), so what this socket receives is never answered on it
 * and Linux acknowledges every small read at once: one more packet per
 * message for both kernels, ~0.5 us each way over loopback. In the mode
 * it keeps for sockets that answer, the kernel acknowledges on its timer
 * or after a full segment instead (bulk data still gets an ack every two
 * segments). It leaves that mode when such a timer fires (an idle
 * connection), hence the renewal, at most once a millisecond of reads.
 */
#define UCT_TCP_RX_DELAY_ACKS_NS 1000000ull

static inline void uct_tcp_rx_conn_delay_acks(uct_tcp_rx_conn_t *conn)
{
    uint64_t now = ucs_get_time_ns();

    if (now - conn->acks_delayed_ns >= UCT_TCP_RX_DELAY_ACKS_NS) {
        conn->acks_delayed_ns = now;
        uct_tcp_sock_delay_acks(conn->watch.fd);
    }
}

unsigned uct_tcp_rx_conn_progress(uct_tcp_rx_conn_t *conn)
{
    ucs_status_t status;
    ssize_t count;
    size_t recvd;

    if (conn->large.mem != NULL) {
        return uct_tcp_rx_conn_progress_large(conn);
    }

    if (conn->buf == NULL) {
        conn->buf = ucs_mpool_get(&conn->iface->seg_mp);
        if (conn->buf == NULL) {
            ucs_error("tcp: no memory for a receive buffer of %zu-byte segments",
                      conn->iface->seg_size);
            uct_tcp_rx_conn_close(conn, UCS_ERR_NO_MEMORY);
            return 0;
        }
    }

    status = uct_tcp_sock_recv(conn->watch.fd, conn->buf + conn->tail,
                               conn->capacity - conn->tail, &recvd);
    if (status != UCS_OK) {
        uct_tcp_rx_conn_close(conn, status);
        return 0;
    }

    conn->tail += recvd;
    uct_tcp_rx_conn_delay_acks(conn);
    if (!conn->hello_done) {
        status = uct_tcp_rx_conn_check_hello(conn);
        if (status == UCS_INPROGRESS) {
            return 0;
        } else if (status != UCS_OK) {
            uct_tcp_rx_conn_close(conn, status);
            return 0;
        }
    }

    count = uct_tcp_rx_conn_dispatch(conn);
    if (count < 0) {
        uct_tcp_rx_conn_close(conn, (ucs_status_t)count);
        return 0;
    }

    /* Keep the partial frame at the start, so that the buffer always has
     * room for a whole segment (and payloads stay aligned). An empty ring
     * goes back to the pool: idle connections hold no segment memory. */
    if (conn->head == conn->tail) {
        conn->head = conn->tail = 0;
        uct_tcp_iface_seg_put(conn->buf);
        conn->buf = NULL;
    } else if (conn->head > 0) {
        memmove(conn->buf, conn->buf + conn->head, conn->tail - conn->head);
        conn->tail -= conn->head;
        conn->head  = 0;
    }

    return (unsigned)count;
}

unsigned uct_tcp_rx_conn_handle_events(uct_tcp_rx_conn_t *conn, uint32_t events)
{
    ucs_status_t status;

    if ((events & EPOLLOUT) && !ucs_queue_is_empty(&conn->responses)) {
        status = uct_tcp_get_conn_send(conn);
        if (status != UCS_OK) {
            uct_tcp_rx_conn_close(conn, status);
            return 0;
        }
    }
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        return uct_tcp_rx_conn_progress(conn);
    }
    return 0;
}

int uct_tcp_rx_conn_check_peer(uct_tcp_rx_conn_t *conn)
{
    uct_tcp_iface_t *iface = conn->iface;
    char str[UCT_TCP_SOCKADDR_STRLEN];
    uct_tcp_ep_t *ep;
    unsigned ms;

    ms = uct_tcp_iface_peer_silent(iface, conn->watch.fd, &conn->unacked_since_ns);
    if (ms == 0) {
        return 0;
    }
    ucs_diag("tcp iface %p: %s acknowledged nothing of the data it asked to read "
             "for %u ms (UCX_TCP_KEEPIDLE + KEEPINTVL * KEEPCNT = %u ms): failing "
             "the endpoints to it", (void*)iface,
             uct_tcp_sockaddr_str(&conn->peer, str, sizeof(str)), ms,
             iface->unacked_max_ms);
    ucs_list_for_each(ep, &iface->eps, list) {
        if (uct_tcp_sockaddr_equal(&ep->peer, &conn->peer)) {
            uct_tcp_ep_set_failed(ep, UCS_ERR_ENDPOINT_TIMEOUT);
        }
    }
    uct_tcp_rx_conn_close(conn, UCS_ERR_ENDPOINT_TIMEOUT);
    return 1;
}
