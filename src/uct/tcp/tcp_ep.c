#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "tcp_ep.h"
#include "tcp_conn.h"
#include "tcp_rx.h"
#include "tcp_wire.h"

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>

#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>


/* Padding source: frames are padded to UCT_TCP_FRAME_ALIGN with zeros. */
static const uint8_t uct_tcp_ep_zeros[UCT_TCP_FRAME_ALIGN];


static inline uct_tcp_ep_t *uct_tcp_ep(uct_ep_h tl_ep)
{
    return ucs_container_of(tl_ep, uct_tcp_ep_t, super.super);
}

/*
 * Whether a new message may be sent now: connected, nothing in flight, and
 * no older request waiting in the pending queue (unless it is that queue
 * being dispatched), so that messages leave in the order they were asked.
 */
static inline ucs_status_t uct_tcp_ep_check_send(uct_tcp_ep_t *ep)
{
    if (ucs_likely((ep->status == UCS_OK) && !uct_tcp_ep_tx_busy(ep) &&
                   (uct_pending_queue_is_empty(&ep->pending) ||
                    (ep->iface->dispatching_ep == ep)))) {
        return UCS_OK;
    }
    return (ep->status < 0) ? ep->status : UCS_ERR_NO_RESOURCE;
}

/* Writability is only interesting while connecting, while a message is in
 * flight or while requests (or get requests) wait; otherwise it would wake
 * progress for nothing. Readability is always watched: it is how get
 * responses arrive and how a peer's failure shows. */
void uct_tcp_ep_update_events(uct_tcp_ep_t *ep)
{
    uint32_t events = EPOLLIN;

    if (ep->watch.fd < 0) {
        return;
    }

    if ((ep->status == UCS_INPROGRESS) || uct_tcp_ep_tx_busy(ep) ||
        !uct_pending_queue_is_empty(&ep->pending) || uct_tcp_get_has_unsent(&ep->get)) {
        events |= EPOLLOUT;
    }
    uct_tcp_iface_watch_set(ep->iface, &ep->watch, events);
}

int uct_tcp_ep_is_tx_stalled(const uct_tcp_ep_t *ep)
{
    return (ep->status == UCS_OK) &&
           (uct_tcp_ep_tx_busy(ep) || !uct_pending_queue_is_empty(&ep->pending));
}

/* Move the in-flight position forward by @a sent bytes, skipping empty
 * elements, so that "busy" always means bytes remain. */
static void uct_tcp_ep_tx_advance(uct_tcp_ep_t *ep, size_t sent)
{
    struct iovec *iov;

    while (ep->tx.index < ep->tx.iovcnt) {
        iov = &ep->tx.iov[ep->tx.index];
        if (sent < iov->iov_len) {
            iov->iov_base  = (uint8_t*)iov->iov_base + sent;
            iov->iov_len  -= sent;
            return;
        }
        sent -= iov->iov_len;
        ++ep->tx.index;
    }
}

/* Nothing is in flight any more: the segment buffer goes back to the pool. */
static void uct_tcp_ep_tx_reset(uct_tcp_ep_t *ep)
{
    ep->tx.iovcnt = 0;
    ep->tx.index  = 0;
    uct_tcp_iface_seg_put(ep->tx.buf);
    ep->tx.buf = NULL;
}

/* A segment buffer for the message about to be built (ep->tx.buf is NULL
 * whenever nothing is in flight). */
static inline ucs_status_t uct_tcp_ep_tx_buf_get(uct_tcp_ep_t *ep)
{
    ep->tx.buf = ucs_mpool_get(&ep->iface->seg_mp);
    if (ucs_unlikely(ep->tx.buf == NULL)) {
        ucs_error("tcp ep %p: no memory for a send buffer of %zu-byte segments",
                  (void*)ep, ep->iface->seg_size);
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
}

/*
 * The kernel took @a sent of the @a total bytes in @a iov, which point at
 * the caller's memory: copy the rest into the tx buffer and make it the
 * message in flight.
 */
static ucs_status_t uct_tcp_ep_tx_keep_copy(uct_tcp_ep_t *ep, const struct iovec *iov,
                                            size_t iovcnt, size_t sent, size_t total)
{
    uint8_t *dst;
    size_t i, skip, len;

    /* Part of the frame is on the wire: without a buffer for the rest the
     * stream cannot continue. */
    if (uct_tcp_ep_tx_buf_get(ep) != UCS_OK) {
        uct_tcp_ep_set_failed(ep, UCS_ERR_NO_MEMORY);
        return UCS_ERR_NO_MEMORY;
    }
    dst = ep->tx.buf;

    for (i = 0, skip = sent; i < iovcnt; ++i) {
        if (skip >= iov[i].iov_len) {
            skip -= iov[i].iov_len;
            continue;
        }
        len = iov[i].iov_len - skip;
        memcpy(dst, (const uint8_t*)iov[i].iov_base + skip, len);
        dst += len;
        skip = 0;
    }

    ep->tx.iov[0].iov_base = ep->tx.buf;
    ep->tx.iov[0].iov_len  = total - sent;
    ep->tx.iovcnt          = 1;
    ep->tx.index           = 0;
    ep->tx.comp            = NULL;
    uct_tcp_ep_update_events(ep);
    return UCS_OK;
}

/* Send a frame of id @a id whose payload is [a, +alen) then [b, +blen),
 * padded; what the kernel does not take is copied and stays in flight. The
 * ep must be connected with nothing in flight. */
static inline ucs_status_t uct_tcp_ep_send_frame2(uct_tcp_ep_t *ep, uint8_t id,
                                                  const void *a, size_t alen,
                                                  const void *b, size_t blen)
{
    size_t payload_len = alen + blen;
    size_t padded      = uct_tcp_frame_padded(payload_len);
    uct_tcp_frame_hdr_t hdr;
    struct iovec iov[4];
    size_t sent, total;
    ucs_status_t status;

    uct_tcp_frame_hdr_init(&hdr, id, (uint32_t)payload_len);
    iov[0].iov_base = &hdr;
    iov[0].iov_len  = sizeof(hdr);
    iov[1].iov_base = (void*)a;
    iov[1].iov_len  = alen;
    iov[2].iov_base = (void*)b;
    iov[2].iov_len  = blen;
    iov[3].iov_base = (void*)uct_tcp_ep_zeros;
    iov[3].iov_len  = padded - payload_len;
    total           = sizeof(hdr) + padded;

    status = uct_tcp_sock_sendv(ep->watch.fd, iov, 4, &sent);
    if (ucs_unlikely(status != UCS_OK)) {
        uct_tcp_ep_set_failed(ep, status);
        return status;
    }
    if (ucs_unlikely(sent < total)) {
        return uct_tcp_ep_tx_keep_copy(ep, iov, 4, sent, total);
    }
    return UCS_OK;
}

ucs_status_t uct_tcp_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                 const void *payload, unsigned length)
{
    uct_tcp_ep_t *ep = uct_tcp_ep(tl_ep);
    ucs_status_t status;

    status = uct_tcp_ep_check_send(ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (ucs_unlikely((id >= UCT_AM_ID_MAX) ||
                     (sizeof(header) + length > ep->iface->max_short))) {
        return UCS_ERR_INVALID_PARAM;
    }
    return uct_tcp_ep_send_frame2(ep, id, &header, sizeof(header), payload, length);
}

ucs_status_t uct_tcp_ep_frame_send(uct_tcp_ep_t *ep, uint8_t id, const void *payload,
                                   size_t length)
{
    ucs_assert((ep->status == UCS_OK) && !uct_tcp_ep_tx_busy(ep));
    return uct_tcp_ep_send_frame2(ep, id, payload, length, NULL, 0);
}

/* A peer check (UCT_SEND_FLAG_PEER_CHECK, UCP's keepalive probe): a peer
 * host or path that went away shows as data of ours the kernel keeps
 * retransmitting without any acknowledgement. It must be seen at two
 * looks at least TCP_KEEPINTVL apart, so one lost segment after a long
 * idle time (when the last acknowledgement is old anyway) is not taken for
 * a dead path. */
UCS_F_NOINLINE ucs_status_t uct_tcp_ep_check_peer(uct_tcp_ep_t *ep)
{
    uct_tcp_iface_t *iface = ep->iface;
    char str[UCT_TCP_SOCKADDR_STRLEN];
    unsigned ms;

    if (ep->status != UCS_OK) {
        return (ep->status < 0) ? ep->status : UCS_OK;
    }
    if ((iface->unacked_max_ms == 0) || (ep->watch.fd < 0)) {
        return UCS_OK;
    }
    ms = uct_tcp_iface_peer_silent(iface, ep->watch.fd, &ep->unacked_since_ns);
    if (ms == 0) {
        return UCS_OK;
    }
    ucs_diag("tcp ep %p: %s acknowledged nothing for %u ms while data was "
             "retransmitted (UCX_TCP_KEEPIDLE + KEEPINTVL * KEEPCNT = %u ms)",
             (void*)ep, uct_tcp_sockaddr_str(&ep->peer, str, sizeof(str)), ms,
             iface->unacked_max_ms);
    uct_tcp_ep_set_failed(ep, UCS_ERR_ENDPOINT_TIMEOUT);
    return UCS_ERR_ENDPOINT_TIMEOUT;
}

ssize_t uct_tcp_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id, uct_pack_callback_t pack_cb,
                            void *arg, unsigned flags)
{
    uct_tcp_ep_t *ep = uct_tcp_ep(tl_ep);
    uct_tcp_frame_hdr_t hdr;
    size_t length, padded, sent, total;
    uint8_t *payload;
    ucs_status_t status;

    if (ucs_unlikely(flags & UCT_SEND_FLAG_PEER_CHECK)) {
        status = uct_tcp_ep_check_peer(ep);
        if (status != UCS_OK) {
            return status;
        }
    }
    status = uct_tcp_ep_check_send(ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (ucs_unlikely(id >= UCT_AM_ID_MAX)) {
        return UCS_ERR_INVALID_PARAM;
    }

    /* Pack straight into the tx buffer: if the kernel does not take it all,
     * the rest is already where it has to wait. */
    status = uct_tcp_ep_tx_buf_get(ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    payload = ep->tx.buf + sizeof(hdr);
    length  = pack_cb(payload, arg);
    ucs_assert_always(length <= ep->iface->seg_size);
    padded  = uct_tcp_frame_padded(length);
    memset(payload + length, 0, padded - length);

    uct_tcp_frame_hdr_init(&hdr, id, (uint32_t)length);
    memcpy(ep->tx.buf, &hdr, sizeof(hdr));
    total = sizeof(hdr) + padded;

    ep->tx.iov[0].iov_base = ep->tx.buf;
    ep->tx.iov[0].iov_len  = total;
    status = uct_tcp_sock_sendv(ep->watch.fd, ep->tx.iov, 1, &sent);
    if (ucs_unlikely(status != UCS_OK)) {
        uct_tcp_ep_set_failed(ep, status);
        return status;
    }
    if (ucs_unlikely(sent < total)) {
        ep->tx.iovcnt = 1;
        ep->tx.index  = 0;
        ep->tx.comp   = NULL;
        uct_tcp_ep_tx_advance(ep, sent);
        uct_tcp_ep_update_events(ep);
    } else {
        uct_tcp_ep_tx_reset(ep);
    }
    return (ssize_t)length;
}

/*
 * Lay out a zcopy frame in ep->tx.iov: [frame header + user header] (in the
 * tx buffer), the caller's blocks, padding.
 * @return the number of iov elements, or 0 when the iov is too long.
 */
static size_t uct_tcp_ep_zcopy_build(uct_tcp_ep_t *ep, uint8_t id, const void *header,
                                     unsigned header_length, const uct_iov_t *iov,
                                     size_t iovcnt, size_t *total_p)
{
    size_t n = 1, payload_len = header_length, i, padded;
    uct_tcp_frame_hdr_t hdr;
    unsigned count, j;

    for (i = 0; i < iovcnt; ++i) {
        count = (iov[i].count == 0) ? 1 : iov[i].count;
        for (j = 0; j < count; ++j) {
            if (iov[i].length == 0) {
                continue;
            }
            if (n > UCT_TCP_MAX_ZCOPY_IOV) {
                return 0;
            }
            ep->tx.iov[n].iov_base = (uint8_t*)iov[i].buffer + ((size_t)j * iov[i].stride);
            ep->tx.iov[n].iov_len  = iov[i].length;
            payload_len           += iov[i].length;
            ++n;
        }
    }

    if (payload_len > header_length + ep->iface->max_zcopy) {
        return 0;
    }

    uct_tcp_frame_hdr_init(&hdr, id, (uint32_t)payload_len);
    memcpy(ep->tx.buf, &hdr, sizeof(hdr));
    if (header_length > 0) { /* header may be NULL when empty */
        memcpy(ep->tx.buf + sizeof(hdr), header, header_length);
    }
    ep->tx.iov[0].iov_base = ep->tx.buf;
    ep->tx.iov[0].iov_len  = sizeof(hdr) + header_length;

    padded = uct_tcp_frame_padded(payload_len);
    if (padded > payload_len) {
        ep->tx.iov[n].iov_base = (void*)uct_tcp_ep_zeros;
        ep->tx.iov[n].iov_len  = padded - payload_len;
        ++n;
    }

    *total_p = sizeof(hdr) + padded;
    return n;
}

ucs_status_t uct_tcp_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                                 unsigned header_length, const uct_iov_t *iov,
                                 size_t iovcnt, unsigned flags, uct_completion_t *comp)
{
    uct_tcp_ep_t *ep = uct_tcp_ep(tl_ep);
    size_t n, total, sent;
    ucs_status_t status;

    status = uct_tcp_ep_check_send(ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (ucs_unlikely((id >= UCT_AM_ID_MAX) || (header_length > UCT_TCP_MAX_ZCOPY_HDR))) {
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_tcp_ep_tx_buf_get(ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    n = uct_tcp_ep_zcopy_build(ep, id, header, header_length, iov, iovcnt, &total);
    if (ucs_unlikely(n == 0)) {
        uct_tcp_ep_tx_reset(ep);
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_tcp_sock_sendv(ep->watch.fd, ep->tx.iov, n, &sent);
    if (ucs_unlikely(status != UCS_OK)) {
        uct_tcp_ep_set_failed(ep, status);
        return status;
    }
    if (sent == total) {
        uct_tcp_ep_tx_reset(ep);
        return UCS_OK;
    }

    /* The caller's buffers stay in use until the kernel has taken the rest. */
    ep->tx.iovcnt = (unsigned)n;
    ep->tx.index  = 0;
    ep->tx.comp   = comp;
    uct_tcp_ep_tx_advance(ep, sent);
    uct_tcp_ep_update_events(ep);
    return UCS_INPROGRESS;
}

/* Run the flush completions of @a queue with @a status, freeing the
 * requests. The queue must not belong to an ep a callback could destroy. */
static unsigned uct_tcp_ep_flush_queue_complete(ucs_queue_head_t *queue,
                                                ucs_status_t status)
{
    uct_tcp_ep_flush_req_t *req;
    uct_completion_t *comp;
    unsigned count = 0;

    while (!ucs_queue_is_empty(queue)) {
        req  = ucs_queue_pull_elem_non_empty(queue, uct_tcp_ep_flush_req_t, queue);
        comp = req->comp;
        free(req);
        uct_invoke_completion(comp, status);
        ++count;
    }
    return count;
}

/*
 * Send more of the message in flight. When it is done, its completion and
 * the flushes waiting for it run.
 * @return operations completed.
 */
static unsigned uct_tcp_ep_tx_progress(uct_tcp_ep_t *ep)
{
    ucs_queue_head_t flushes;
    uct_completion_t *comp;
    ucs_status_t status;
    size_t sent;

    status = uct_tcp_sock_sendv(ep->watch.fd, &ep->tx.iov[ep->tx.index],
                                ep->tx.iovcnt - ep->tx.index, &sent);
    if (status != UCS_OK) {
        uct_tcp_ep_set_failed(ep, status);
        return 0;
    }

    uct_tcp_ep_tx_advance(ep, sent);
    if (uct_tcp_ep_tx_busy(ep)) {
        return 0;
    }

    /* Detach everything first: a callback may send again, or destroy ep.
     * Flushes also wait for the ep's gets (remote completion). */
    comp        = ep->tx.comp;
    ep->tx.comp = NULL;
    uct_tcp_ep_tx_reset(ep);
    ucs_queue_head_init(&flushes);
    if (!uct_tcp_get_outstanding(&ep->get)) {
        ucs_queue_splice(&flushes, &ep->flush_comps);
    }

    if (comp != NULL) {
        uct_invoke_completion(comp, UCS_OK);
    }
    return 1 + uct_tcp_ep_flush_queue_complete(&flushes, UCS_OK);
}

unsigned uct_tcp_ep_flush_progress(uct_tcp_ep_t *ep)
{
    ucs_queue_head_t flushes;

    if (uct_tcp_ep_flush_needed(ep) || ucs_queue_is_empty(&ep->flush_comps)) {
        return 0;
    }
    ucs_queue_head_init(&flushes);
    ucs_queue_splice(&flushes, &ep->flush_comps);
    return uct_tcp_ep_flush_queue_complete(&flushes, UCS_OK);
}

/* Run waiting requests in order, for as long as the connection takes data. */
static unsigned uct_tcp_ep_dispatch_pending(uct_tcp_ep_t *ep)
{
    uct_tcp_iface_t *iface = ep->iface;
    unsigned count;

    iface->dispatching_ep = ep;
    count                 = uct_pending_queue_dispatch(&ep->pending);
    iface->dispatching_ep = NULL;
    return count;
}

/*
 * Readable (or error/hang-up) on a sending socket with no get waiting for a
 * response: the peer writes nothing else on it, so this is end of stream, a
 * reset, or a peer that is not following the protocol.
 * @return UCS_OK when it was a spurious wake-up, else the failure.
 */
static ucs_status_t uct_tcp_ep_check_alive(uct_tcp_ep_t *ep, uint32_t events)
{
    ucs_status_t status;
    uint8_t byte;
    size_t recvd;
    int err;

    if (events & EPOLLERR) {
        err = uct_tcp_sock_pending_errno(ep->watch.fd);
        if (err != 0) {
            return uct_tcp_sock_errno_status(err);
        }
    }

    status = uct_tcp_sock_recv(ep->watch.fd, &byte, 1, &recvd);
    if (status != UCS_OK) {
        return status;
    }
    if (recvd > 0) {
        ucs_error("tcp ep %p: the peer sent data no get asked for: closing the "
                  "connection", (void*)ep);
        return UCS_ERR_CONNECTION_RESET;
    }
    return (events & (EPOLLHUP | EPOLLERR)) ? UCS_ERR_CONNECTION_RESET : UCS_OK;
}

unsigned uct_tcp_ep_handle_events(uct_tcp_ep_t *ep, uint32_t events)
{
    uct_tcp_iface_t *iface = ep->iface;
    unsigned gen           = iface->destroy_gen;
    unsigned count         = 0;
    ucs_status_t status;

    if (ep->status == UCS_INPROGRESS) {
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
            return 0; /* connect() has not finished */
        }
        status = uct_tcp_conn_check_connected(ep);
        if (status != UCS_OK) {
            uct_tcp_ep_set_failed(ep, status);
            return 0;
        }
        ep->status = UCS_OK;
        events    |= EPOLLOUT; /* the hello is waiting */
    } else if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        if (!ucs_queue_is_empty(&ep->get.requested)) {
            /* responses, or the failure that ends them */
            count += uct_tcp_get_recv(ep);
            if ((iface->destroy_gen != gen) || (ep->status != UCS_OK)) {
                return count;
            }
        } else {
            status = uct_tcp_ep_check_alive(ep, events);
            if (status != UCS_OK) {
                uct_tcp_ep_set_failed(ep, status);
                return 0;
            }
        }
    }

    if (!(events & EPOLLOUT)) {
        return 0;
    }

    if (uct_tcp_ep_tx_busy(ep)) {
        count += uct_tcp_ep_tx_progress(ep);
        /* A completion may have destroyed this ep (or another one whose
         * events are stale now): leave the rest to the next progress. */
        if ((iface->destroy_gen != gen) || (ep->status != UCS_OK)) {
            return count;
        }
    }

    if (!uct_tcp_ep_tx_busy(ep) && uct_tcp_get_has_unsent(&ep->get)) {
        uct_tcp_get_send_requests(ep);
        if (ep->status != UCS_OK) {
            return count;
        }
    }

    if (!uct_tcp_ep_tx_busy(ep) && !uct_pending_queue_is_empty(&ep->pending)) {
        count += uct_tcp_ep_dispatch_pending(ep);
        if (iface->destroy_gen != gen) {
            return count;
        }
    }

    uct_tcp_ep_update_events(ep);
    return count;
}

void uct_tcp_ep_set_failed(uct_tcp_ep_t *ep, ucs_status_t status)
{
    char str[UCT_TCP_SOCKADDR_STRLEN];

    if (ep->status < 0) {
        return;
    }

    ucs_debug("tcp ep %p: connection to %s failed: %s", (void*)ep,
              uct_tcp_sockaddr_str(&ep->peer, str, sizeof(str)),
              ucs_status_string(status));

    /* A torn frame cannot be continued: what was not sent is dropped. The
     * zcopy completion stays, to be told the failure. */
    ep->status = status;
    uct_tcp_iface_watch_close(ep->iface, &ep->watch);
    uct_tcp_ep_tx_reset(ep);
    if (!ep->on_failed_list) {
        ucs_list_add_tail(&ep->iface->failed_eps, &ep->failed_link);
        ep->on_failed_list = 1;
    }
}

void uct_tcp_ep_report_failure(uct_tcp_ep_t *ep)
{
    ucs_status_t status    = ep->status;
    uct_completion_t *comp = ep->tx.comp;
    ucs_queue_head_t flushes, gets;

    /* The handler may destroy the ep: take its completions out first, and
     * run them afterwards with the failure, whatever the handler did. */
    ep->tx.comp = NULL;
    ucs_queue_head_init(&flushes);
    ucs_queue_splice(&flushes, &ep->flush_comps);
    uct_tcp_get_take_all(&ep->get, &gets);

    uct_iface_handle_ep_err(&ep->iface->super.super, &ep->super.super, status);

    if (comp != NULL) {
        uct_invoke_completion(comp, status);
    }
    uct_tcp_get_complete_all(&gets, status);
    uct_tcp_ep_flush_queue_complete(&flushes, status);
}

ucs_status_t uct_tcp_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    uct_tcp_iface_t *iface = uct_tcp_iface(params->iface);
    const uct_tcp_device_addr_t *dev_addr;
    const uct_tcp_iface_addr_t *iface_addr;
    uct_tcp_sockaddr_t peer;
    uct_tcp_ep_t *ep;
    ucs_status_t status;

    if (!(params->field_mask & UCT_EP_PARAM_FIELD_DEV_ADDR) ||
        !(params->field_mask & UCT_EP_PARAM_FIELD_IFACE_ADDR)) {
        ucs_error("tcp: an ep connects to an iface: device and iface addresses "
                  "are required");
        return UCS_ERR_INVALID_PARAM;
    }

    dev_addr   = (const uct_tcp_device_addr_t*)params->dev_addr;
    iface_addr = (const uct_tcp_iface_addr_t*)params->iface_addr;
    if ((uct_tcp_device_addr_unpack(dev_addr, uct_tcp_iface_scope_id(iface), &peer) !=
         UCS_OK) ||
        (uct_tcp_iface_addr_check(iface_addr) != UCS_OK)) {
        ucs_error("tcp: invalid peer address (not a unicast IPv4 or IPv6 tcp "
                  "address of wire version %d)",
                  UCT_TCP_WIRE_VERSION);
        return UCS_ERR_INVALID_ADDR;
    }
    if (peer.sa.sa_family != iface->addr.sa.sa_family) {
        ucs_error("tcp: peer address is %s but iface %s listens on %s",
                  (peer.sa.sa_family == AF_INET6) ? "IPv6" : "IPv4", iface->dev_name,
                  (peer.sa.sa_family == AF_INET6) ? "IPv4" : "IPv6");
        return UCS_ERR_UNREACHABLE;
    }
    uct_tcp_sockaddr_set_port(&peer, iface_addr->port);

    ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    uct_base_ep_init(&ep->super, &iface->super);
    ep->iface                = iface;
    ep->watch.fd             = -1;
    ep->watch.kind           = UCT_TCP_WATCH_EP;
    ep->peer                 = peer;
    uct_pending_queue_init(&ep->pending);
    ucs_queue_head_init(&ep->flush_comps);
    uct_tcp_get_rx_init(&ep->get);
    ucs_list_add_tail(&iface->eps, &ep->list);
    uct_base_iface_set_idle(&iface->super, 0);

    status = uct_tcp_conn_connect(ep);
    if (status != UCS_OK) {
        goto err_unlink;
    }

    *ep_p = &ep->super.super;
    return UCS_OK;

err_unlink:
    ucs_list_del(&ep->list);
    uct_tcp_iface_seg_put(ep->tx.buf);
    free(ep);
    return status;
}

void uct_tcp_ep_destroy(uct_ep_h tl_ep)
{
    uct_tcp_ep_t *ep       = uct_tcp_ep(tl_ep);
    uct_tcp_iface_t *iface = ep->iface;
    uct_completion_t *comp = ep->tx.comp;
    ucs_queue_head_t flushes, gets;

    ucs_debug("tcp ep %p: destroy%s%s", (void*)ep,
              uct_tcp_ep_tx_busy(ep) ? ", dropping a message not fully sent" : "",
              uct_tcp_get_outstanding(&ep->get) ? ", canceling its gets" : "");

    if (ep->on_failed_list) {
        ucs_list_del(&ep->failed_link);
    }
    if (!uct_pending_queue_is_empty(&ep->pending)) {
        ucs_debug("tcp ep %p: discarding requests still pending", (void*)ep);
        uct_pending_queue_purge(&ep->pending, NULL, NULL);
    }

    uct_tcp_iface_watch_close(iface, &ep->watch);
    ucs_list_del(&ep->list);
    ucs_queue_head_init(&flushes);
    ucs_queue_splice(&flushes, &ep->flush_comps);
    uct_tcp_get_take_all(&ep->get, &gets);
    uct_tcp_iface_seg_put(ep->tx.buf);
    free(ep);
    ++iface->destroy_gen;

    /* The ep is gone; callbacks may now do anything. */
    if (comp != NULL) {
        uct_invoke_completion(comp, UCS_ERR_CANCELED);
    }
    uct_tcp_get_complete_all(&gets, UCS_ERR_CANCELED);
    uct_tcp_ep_flush_queue_complete(&flushes, UCS_ERR_CANCELED);
}

ucs_status_t uct_tcp_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                    unsigned flags)
{
    uct_tcp_ep_t *ep = uct_tcp_ep(tl_ep);

    if (uct_tcp_ep_check_send(ep) != UCS_ERR_NO_RESOURCE) {
        return UCS_ERR_BUSY; /* send now, or learn the failure by sending */
    }

    uct_pending_queue_push(&ep->pending, req);
    uct_tcp_ep_update_events(ep);
    return UCS_OK;
}

void uct_tcp_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                              void *arg)
{
    uct_tcp_ep_t *ep = uct_tcp_ep(tl_ep);

    uct_pending_queue_purge(&ep->pending, cb, arg);
    uct_tcp_ep_update_events(ep);
}

void uct_tcp_ep_flush_push(uct_tcp_ep_t *ep, uct_tcp_ep_flush_req_t *req)
{
    ucs_queue_push(&ep->flush_comps, &req->queue);
}

/* Cancel: the frame in flight cannot be finished later, so the connection
 * is closed and the ep fails quietly (no error handler: the user asked). */
static ucs_status_t uct_tcp_ep_flush_cancel(uct_tcp_ep_t *ep)
{
    uct_completion_t *comp = ep->tx.comp;
    ucs_queue_head_t flushes, gets;

    if ((ep->status < 0) || !uct_tcp_ep_flush_needed(ep)) {
        return UCS_OK;
    }

    ep->tx.comp = NULL;
    ucs_queue_head_init(&flushes);
    ucs_queue_splice(&flushes, &ep->flush_comps);
    uct_tcp_get_take_all(&ep->get, &gets);
    uct_tcp_ep_tx_reset(ep);
    uct_tcp_iface_watch_close(ep->iface, &ep->watch);
    ep->status = UCS_ERR_CANCELED;

    if (comp != NULL) {
        uct_invoke_completion(comp, UCS_ERR_CANCELED);
    }
    uct_tcp_get_complete_all(&gets, UCS_ERR_CANCELED);
    uct_tcp_ep_flush_queue_complete(&flushes, UCS_ERR_CANCELED);
    return UCS_OK;
}

ucs_status_t uct_tcp_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    uct_tcp_ep_t *ep = uct_tcp_ep(tl_ep);
    uct_tcp_ep_flush_req_t *req;

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        return uct_tcp_ep_flush_cancel(ep);
    }
    if (ep->status < 0) {
        return ep->status;
    }
    if (!uct_pending_queue_is_empty(&ep->pending)) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (!uct_tcp_ep_flush_needed(ep)) {
        return UCS_OK;
    }
    if (comp == NULL) {
        return UCS_INPROGRESS;
    }

    req = malloc(sizeof(*req));
    if (req == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    req->comp = comp;
    uct_tcp_ep_flush_push(ep, req);
    return UCS_INPROGRESS;
}

ucs_status_t uct_tcp_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    return UCS_OK;
}
