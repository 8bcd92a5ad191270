#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "tcp_get.h"
#include "tcp_ep.h"
#include "tcp_rx.h"

#include <ucs/debug/log.h>

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

/* ---- the reading side (ep) ---------------------------------------------- */

void uct_tcp_get_rx_init(uct_tcp_get_rx_t *rx)
{
    ucs_queue_head_init(&rx->unsent);
    ucs_queue_head_init(&rx->requested);
    rx->hdr_filled = 0;
    rx->filled     = 0;
}

ucs_status_t uct_tcp_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                  uint64_t remote_addr, uct_rkey_t rkey,
                                  uct_completion_t *comp)
{
    uct_tcp_ep_t *ep          = ucs_container_of(tl_ep, uct_tcp_ep_t, super.super);
    const uct_tcp_rkey_t *key = (const uct_tcp_rkey_t*)rkey;
    uct_tcp_get_op_t *op;
    size_t length;

    if (ep->status < 0) {
        return ep->status;
    }
    if ((iovcnt > 1) || ((iovcnt == 1) && (iov->count > 1)) ||
        (rkey == UCT_INVALID_RKEY) || (key == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }
    length = (iovcnt == 1) ? iov->length : 0;
    if ((remote_addr < key->base) || (length > key->length) ||
        (remote_addr - key->base > key->length - length)) {
        ucs_debug("tcp ep %p: get of 0x%llx+%zu outside the key's 0x%llx+%llu",
                  (void*)ep, (unsigned long long)remote_addr, length,
                  (unsigned long long)key->base, (unsigned long long)key->length);
        return UCS_ERR_INVALID_PARAM;
    }
    if (length == 0) {
        return UCS_OK;
    }

    op = malloc(sizeof(*op));
    if (op == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    op->buffer      = iov->buffer;
    op->length      = length;
    op->comp        = comp;
    op->req.address = htole64(remote_addr);
    op->req.length  = htole64(length);
    op->req.token   = htole64(key->token);

    /* The request goes when the socket takes it; the get itself never
     * asks the caller to retry. */
    ucs_queue_push(&ep->get.unsent, &op->queue);
    ucs_trace_data("tcp ep %p: get 0x%llx+%zu into %p", (void*)ep,
                   (unsigned long long)remote_addr, length, iov->buffer);
    if ((ep->status == UCS_OK) && !uct_tcp_ep_tx_busy(ep)) {
        uct_tcp_get_send_requests(ep);
    } else {
        uct_tcp_ep_update_events(ep);
    }
    /* A send that failed just now failed the ep: the get is queued and
     * completes with that failure from progress, like every other one. */
    return UCS_INPROGRESS;
}

void uct_tcp_get_send_requests(uct_tcp_ep_t *ep)
{
    uct_tcp_get_op_t *op;
    ucs_status_t status;

    while (uct_tcp_get_has_unsent(&ep->get) && (ep->status == UCS_OK) &&
           !uct_tcp_ep_tx_busy(ep)) {
        op     = ucs_queue_head_elem_non_empty(&ep->get.unsent, uct_tcp_get_op_t,
                                               queue);
        status = uct_tcp_ep_frame_send(ep, UCT_TCP_FRAME_GET_REQ, &op->req,
                                       sizeof(op->req));
        if (status != UCS_OK) {
            return; /* the ep failed; its failure completes the gets */
        }
        (void)ucs_queue_pull_non_empty(&ep->get.unsent);
        ucs_queue_push(&ep->get.requested, &op->queue);
    }
    uct_tcp_ep_update_events(ep);
}

/* Check the header of the next response against the get it answers. */
static ucs_status_t uct_tcp_get_check_resp(uct_tcp_ep_t *ep, const uct_tcp_get_op_t *op)
{
    char str[UCT_TCP_SOCKADDR_STRLEN];
    int32_t status  = (int32_t)le32toh((uint32_t)ep->get.hdr.status);
    uint64_t length = le64toh(ep->get.hdr.length);

    if ((le32toh(ep->get.hdr.magic) == UCT_TCP_GET_RESP_MAGIC) &&
        (((status == UCS_OK) && (length == op->length)) ||
         ((status < 0) && (status > UCS_ERR_LAST) && (length == 0)))) {
        return UCS_OK;
    }
    ucs_error("tcp ep %p: malformed get response from %s (magic 0x%x, status %d, "
              "%llu bytes for a get of %zu): closing the connection", (void*)ep,
              uct_tcp_sockaddr_str(&ep->peer, str, sizeof(str)),
              le32toh(ep->get.hdr.magic), status, (unsigned long long)length,
              op->length);
    return UCS_ERR_IO_ERROR;
}

/* Receive into @a buf up to @a want bytes; UCS_INPROGRESS when fewer came. */
static ucs_status_t uct_tcp_get_recv_part(uct_tcp_ep_t *ep, uint8_t *buf, size_t want,
                                          size_t *filled_p)
{
    ucs_status_t status;
    size_t recvd;

    status = uct_tcp_sock_recv(ep->watch.fd, buf + *filled_p, want - *filled_p, &recvd);
    if (status != UCS_OK) {
        return status;
    }
    *filled_p += recvd;
    return (*filled_p < want) ? UCS_INPROGRESS : UCS_OK;
}

unsigned uct_tcp_get_recv(uct_tcp_ep_t *ep)
{
    uct_tcp_iface_t *iface = ep->iface;
    unsigned gen           = iface->destroy_gen;
    unsigned count         = 0;
    uct_tcp_get_rx_t *rx   = &ep->get;
    uct_completion_t *comp;
    uct_tcp_get_op_t *op;
    ucs_status_t status;

    while (!ucs_queue_is_empty(&rx->requested)) {
        op = ucs_queue_head_elem_non_empty(&rx->requested, uct_tcp_get_op_t, queue);
        if (rx->hdr_filled < sizeof(rx->hdr)) {
            status = uct_tcp_get_recv_part(ep, (uint8_t*)&rx->hdr, sizeof(rx->hdr),
                                           &rx->hdr_filled);
            if (status == UCS_OK) {
                status = uct_tcp_get_check_resp(ep, op);
            }
            if (status != UCS_OK) {
                goto out_status;
            }
        }
        /* A refusal carries no data (uct_tcp_get_check_resp). */
        if (rx->filled < le64toh(rx->hdr.length)) {
            status = uct_tcp_get_recv_part(ep, op->buffer, op->length, &rx->filled);
            if (status != UCS_OK) {
                goto out_status;
            }
        }

        (void)ucs_queue_pull_non_empty(&rx->requested);
        rx->hdr_filled = 0;
        rx->filled     = 0;
        status         = (ucs_status_t)(int32_t)le32toh((uint32_t)rx->hdr.status);
        comp           = op->comp;
        ucs_trace_data("tcp ep %p: get into %p done: %s", (void*)ep, op->buffer,
                       ucs_status_string(status));
        if (status != UCS_OK) {
            ucs_debug("tcp ep %p: the peer refused a get of %zu bytes: %s", (void*)ep,
                      op->length, ucs_status_string(status));
        }
        free(op);
        ++count;
        if (comp != NULL) {
            uct_invoke_completion(comp, status);
        }
        if ((iface->destroy_gen != gen) || (ep->status != UCS_OK)) {
            return count;
        }
        count += uct_tcp_ep_flush_progress(ep);
        if (iface->destroy_gen != gen) {
            return count;
        }
    }
    return count;

out_status:
    if (status != UCS_INPROGRESS) {
        uct_tcp_ep_set_failed(ep, status);
    }
    return count;
}

void uct_tcp_get_take_all(uct_tcp_get_rx_t *rx, ucs_queue_head_t *queue)
{
    ucs_queue_head_init(queue);
    ucs_queue_splice(queue, &rx->requested);
    ucs_queue_splice(queue, &rx->unsent);
    rx->hdr_filled = 0;
    rx->filled     = 0;
}

unsigned uct_tcp_get_complete_all(ucs_queue_head_t *queue, ucs_status_t status)
{
    uct_completion_t *comp;
    uct_tcp_get_op_t *op;
    unsigned count = 0;

    while (!ucs_queue_is_empty(queue)) {
        op   = ucs_queue_pull_elem_non_empty(queue, uct_tcp_get_op_t, queue);
        comp = op->comp;
        free(op);
        if (comp != NULL) {
            uct_invoke_completion(comp, status);
        }
        ++count;
    }
    return count;
}

/* ---- the serving side (receive connection) ------------------------------- */

ucs_status_t uct_tcp_get_serve(uct_tcp_rx_conn_t *conn, const void *payload)
{
    uct_tcp_md_t *md = ucs_container_of(conn->iface->super.md, uct_tcp_md_t, super);
    char str[UCT_TCP_SOCKADDR_STRLEN];
    uct_tcp_get_resp_tx_t *resp;
    uct_tcp_get_req_t req;
    uint64_t address, size;
    int was_idle;

    memcpy(&req, payload, sizeof(req));
    address = le64toh(req.address);
    size    = le64toh(req.length);

    resp = malloc(sizeof(*resp));
    if (resp == NULL) {
        ucs_error("tcp: no memory for a get response");
        return UCS_ERR_NO_MEMORY;
    }
    resp->region     = uct_tcp_md_region_get(md, le64toh(req.token), address, size);
    resp->hdr.magic  = htole32(UCT_TCP_GET_RESP_MAGIC);
    resp->sent       = 0;
    if (resp->region != NULL) {
        resp->hdr.status = (int32_t)htole32((uint32_t)UCS_OK);
        resp->hdr.length = htole64(size);
        resp->data       = (const uint8_t*)(uintptr_t)address;
        resp->length     = size;
    } else {
        ucs_error("tcp: %s asked to read 0x%llx+%llu with key token 0x%llx, which "
                  "names no memory registered here: refused",
                  uct_tcp_sockaddr_str(&conn->peer, str, sizeof(str)),
                  (unsigned long long)address, (unsigned long long)size,
                  (unsigned long long)le64toh(req.token));
        resp->hdr.status = (int32_t)htole32((uint32_t)UCS_ERR_INVALID_ADDR);
        resp->hdr.length = 0;
        resp->data       = NULL;
        resp->length     = 0;
    }

    was_idle = ucs_queue_is_empty(&conn->responses);
    ucs_queue_push(&conn->responses, &resp->queue);
    return was_idle ? uct_tcp_get_conn_send(conn) : UCS_OK;
}

static void uct_tcp_get_resp_free(uct_tcp_get_resp_tx_t *resp)
{
    if (resp->region != NULL) {
        uct_tcp_md_region_put(resp->region);
    }
    free(resp);
}

ucs_status_t uct_tcp_get_conn_send(uct_tcp_rx_conn_t *conn)
{
    char str[UCT_TCP_SOCKADDR_STRLEN];
    uct_tcp_get_resp_tx_t *resp;
    struct iovec iov[2];
    ucs_status_t status;
    size_t sent, n;

    while (!ucs_queue_is_empty(&conn->responses)) {
        resp = ucs_queue_head_elem_non_empty(&conn->responses, uct_tcp_get_resp_tx_t,
                                             queue);
        if ((resp->region != NULL) && resp->region->dead) {
            ucs_diag("tcp: memory being read by %s was deregistered: closing the "
                     "connection", uct_tcp_sockaddr_str(&conn->peer, str, sizeof(str)));
            return UCS_ERR_CANCELED;
        }
        n = 0;
        if (resp->sent < sizeof(resp->hdr)) {
            iov[n].iov_base = (uint8_t*)&resp->hdr + resp->sent;
            iov[n].iov_len  = sizeof(resp->hdr) - resp->sent;
            ++n;
            iov[n].iov_base = (void*)resp->data;
            iov[n].iov_len  = resp->length;
        } else {
            iov[n].iov_base = (void*)(resp->data + resp->sent - sizeof(resp->hdr));
            iov[n].iov_len  = resp->length - (resp->sent - sizeof(resp->hdr));
        }
        n += (iov[n].iov_len > 0);

        status = uct_tcp_sock_sendv(conn->watch.fd, iov, n, &sent);
        if (status != UCS_OK) {
            return status;
        }
        resp->sent += sent;
        if (resp->sent < sizeof(resp->hdr) + resp->length) {
            return uct_tcp_iface_watch_set(conn->iface, &conn->watch,
                                           EPOLLIN | EPOLLOUT);
        }
        (void)ucs_queue_pull_non_empty(&conn->responses);
        uct_tcp_get_resp_free(resp);
    }
    return uct_tcp_iface_watch_set(conn->iface, &conn->watch, EPOLLIN);
}

void uct_tcp_get_conn_cleanup(ucs_queue_head_t *responses)
{
    while (!ucs_queue_is_empty(responses)) {
        uct_tcp_get_resp_free(ucs_queue_pull_elem_non_empty(responses,
                                                            uct_tcp_get_resp_tx_t,
                                                            queue));
    }
}
