#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "tcp_conn.h"
#include "tcp_rx.h"
#include "tcp_wire.h"

#include <ucs/debug/log.h>

#include <string.h>
#include <sys/epoll.h>


ucs_status_t uct_tcp_conn_connect(uct_tcp_ep_t *ep)
{
    uct_tcp_iface_t *iface = ep->iface;
    uct_tcp_hello_t *hello = &ep->hello;
    char str[UCT_TCP_SOCKADDR_STRLEN];
    ucs_status_t status;
    int err;

    status = uct_tcp_sock_connect(&iface->addr, &ep->peer, &iface->sock_opts,
                                  &ep->watch.fd, &err);
    if (status != UCS_OK) {
        return status;
    }

    memset(hello, 0, sizeof(*hello));
    hello->magic   = htole32(UCT_TCP_HELLO_MAGIC);
    hello->version = UCT_TCP_WIRE_VERSION;
    uct_tcp_sockaddr_to_wire(&iface->addr, &hello->family, hello->addr);
    hello->port = uct_tcp_sockaddr_port(&iface->addr);

    ep->tx.iov[0].iov_base = hello;
    ep->tx.iov[0].iov_len  = sizeof(*hello);
    ep->tx.iovcnt          = 1;
    ep->tx.index           = 0;
    ep->tx.comp            = NULL;
    ep->status             = UCS_INPROGRESS;

    if (err != 0) {
        /* Refused or unreachable already: the socket is useless, but the
         * user hears about it through the error handler, as for a failure
         * that shows up a moment later. */
        uct_tcp_ep_set_failed(ep, uct_tcp_sock_errno_status(err));
        return UCS_OK;
    }

    /* Writability means "connected" (or failed); EPOLLIN catches a reset. */
    status = uct_tcp_iface_watch_add(iface, &ep->watch, EPOLLIN | EPOLLOUT);
    if (status != UCS_OK) {
        uct_tcp_iface_watch_close(iface, &ep->watch);
        return status;
    }

    ucs_debug("tcp ep %p: connecting from %s to %s", (void*)ep, iface->dev_name,
              uct_tcp_sockaddr_str(&ep->peer, str, sizeof(str)));
    return UCS_OK;
}

ucs_status_t uct_tcp_conn_check_connected(uct_tcp_ep_t *ep)
{
    char str[UCT_TCP_SOCKADDR_STRLEN];
    int err;

    err = uct_tcp_sock_pending_errno(ep->watch.fd);
    if (err != 0) {
        ucs_debug("tcp ep %p: connection to %s failed: %s", (void*)ep,
                  uct_tcp_sockaddr_str(&ep->peer, str, sizeof(str)), strerror(err));
        return uct_tcp_sock_errno_status(err);
    }

    ucs_debug("tcp ep %p: connected to %s", (void*)ep,
              uct_tcp_sockaddr_str(&ep->peer, str, sizeof(str)));
    return UCS_OK;
}

unsigned uct_tcp_conn_accept(uct_tcp_iface_t *iface)
{
    uct_tcp_sockaddr_t peer;
    unsigned count = 0;
    ucs_status_t status;
    int fd;

    for (;;) {
        status = uct_tcp_sock_accept(iface->listener.fd, &iface->sock_opts, &fd,
                                     &peer);
        if (status == UCS_ERR_BUSY) {
            continue; /* that one is gone; others may be waiting */
        } else if (status != UCS_OK) {
            /* NO_RESOURCE: nothing more waiting. A broken listener was
             * logged; the iface keeps serving its existing connections. */
            break;
        }

        if (uct_tcp_rx_conn_create(iface, fd, &peer) == UCS_OK) {
            ++count;
        }
    }

    return count;
}

ucs_status_t uct_tcp_conn_hello_unpack(const void *buf, uint32_t scope_id,
                                       uct_tcp_sockaddr_t *peer_p)
{
    uct_tcp_hello_t hello;

    memcpy(&hello, buf, sizeof(hello));
    if ((le32toh(hello.magic) != UCT_TCP_HELLO_MAGIC) ||
        (hello.version != UCT_TCP_WIRE_VERSION) || (hello.port == 0)) {
        return UCS_ERR_INVALID_ADDR;
    }
    return uct_tcp_sockaddr_from_wire(hello.family, hello.addr, hello.port, scope_id,
                                      peer_p);
}
