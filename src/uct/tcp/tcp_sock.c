#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "tcp_sock.h"

#include <ucs/debug/log.h>
#include <ucs/sys/compiler_def.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>


ucs_status_t uct_tcp_sock_errno_status(int err)
{
    switch (err) {
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case EHOSTDOWN:
    case ENETUNREACH:
    case ENETDOWN:
        return UCS_ERR_ENDPOINT_TIMEOUT;
    case ECONNRESET:
    case ECONNREFUSED:
    case ECONNABORTED:
    case EPIPE:
    case ENOTCONN:
        return UCS_ERR_CONNECTION_RESET;
    case ENOMEM:
    case ENOBUFS:
        return UCS_ERR_NO_MEMORY;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

/* The kernel's keepalive finds a peer host or path that went away while
 * the connection is idle (nothing of ours unacknowledged); a peer process
 * that merely stopped still has its kernel answer. */
static void uct_tcp_sock_apply_keepalive(int fd, const uct_tcp_sock_opts_t *opts)
{
    const struct {
        int        level, name, value;
        const char *text;
    } o[] = {
        {SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE"},
        {IPPROTO_TCP, TCP_KEEPIDLE, opts->keepidle, "TCP_KEEPIDLE"},
        {IPPROTO_TCP, TCP_KEEPINTVL, opts->keepintvl, "TCP_KEEPINTVL"},
        {IPPROTO_TCP, TCP_KEEPCNT, opts->keepcnt, "TCP_KEEPCNT"},
    };
    unsigned i;

    if (opts->keepidle <= 0) {
        return;
    }
    for (i = 0; i < sizeof(o) / sizeof(o[0]); ++i) {
        if (setsockopt(fd, o[i].level, o[i].name, &o[i].value, sizeof(o[i].value)) < 0) {
            ucs_warn("tcp: setsockopt(%s=%d) failed: %s", o[i].text, o[i].value,
                     strerror(errno));
            return;
        }
    }
}

unsigned uct_tcp_sock_unacked_ms(int fd)
{
    struct tcp_info info;
    socklen_t len = sizeof(info);

    memset(&info, 0, sizeof(info));
    /* Sent data being retransmitted, or data that could not be sent at all
     * (our own route is gone: the kernel probes instead); an answer to
     * either resets the kernel's counter. */
    if ((getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) < 0) ||
        !(((info.tcpi_unacked > 0) && (info.tcpi_retransmits > 0)) ||
          (info.tcpi_probes > 0))) {
        return 0;
    }
    return ucs_max(info.tcpi_last_ack_recv, 1u);
}

void uct_tcp_sock_delay_acks(int fd)
{
    int zero = 0;

    (void)setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof(zero));
}

/* Buffer sizes are only set when configured: a fixed SO_SNDBUF turns off the
 * kernel's auto-tuning, which is usually the better choice. Failures are
 * reported but not fatal, since the socket still works with the defaults. */
static void uct_tcp_sock_apply_opts(int fd, const uct_tcp_sock_opts_t *opts,
                                    int is_listener)
{
    int value;

    if (opts->sndbuf != 0) {
        value = (opts->sndbuf > INT32_MAX) ? INT32_MAX : (int)opts->sndbuf;
        if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &value, sizeof(value)) < 0) {
            ucs_warn("tcp: setsockopt(SO_SNDBUF=%d) failed: %s", value,
                     strerror(errno));
        }
    }
    if (opts->rcvbuf != 0) {
        value = (opts->rcvbuf > INT32_MAX) ? INT32_MAX : (int)opts->rcvbuf;
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &value, sizeof(value)) < 0) {
            ucs_warn("tcp: setsockopt(SO_RCVBUF=%d) failed: %s", value,
                     strerror(errno));
        }
    }
    if (!is_listener) {
        value = !!opts->nodelay;
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &value, sizeof(value)) < 0) {
            ucs_warn("tcp: setsockopt(TCP_NODELAY=%d) failed: %s", value,
                     strerror(errno));
        }
        uct_tcp_sock_apply_keepalive(fd, opts);
    }
}

static ucs_status_t uct_tcp_sock_create(sa_family_t family, int *fd_p)
{
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int err;

    if (fd < 0) {
        err = errno;
        ucs_error("tcp: socket(%s, SOCK_STREAM) failed: %s",
                  (family == AF_INET6) ? "AF_INET6" : "AF_INET", strerror(err));
        return uct_tcp_sock_errno_status(err);
    }
    *fd_p = fd;
    return UCS_OK;
}

ucs_status_t uct_tcp_sock_listen(const uct_tcp_sockaddr_t *addr, unsigned port_min,
                                 unsigned port_max, const uct_tcp_sock_opts_t *opts,
                                 int *fd_p, uint16_t *port_p)
{
    uct_tcp_sockaddr_t bind_addr = *addr;
    socklen_t addrlen            = sizeof(bind_addr);
    char str[UCT_TCP_SOCKADDR_STRLEN];
    ucs_status_t status;
    unsigned port;
    int fd = -1, err;

    status = uct_tcp_sock_create(addr->sa.sa_family, &fd);
    if (status != UCS_OK) {
        return status;
    }

    /* Buffer sizes set on the listener are inherited by accepted sockets,
     * and must be set before listen() to affect the TCP window scale. */
    uct_tcp_sock_apply_opts(fd, opts, 1);

    for (port = port_min;; ++port) {
        uct_tcp_sockaddr_set_port(&bind_addr, htons((uint16_t)port));
        if (bind(fd, &bind_addr.sa, uct_tcp_sockaddr_len(&bind_addr)) == 0) {
            break;
        }
        err = errno;
        if ((err != EADDRINUSE) || (port >= port_max)) {
            ucs_error("tcp: bind(%s) failed: %s",
                      uct_tcp_sockaddr_str(&bind_addr, str, sizeof(str)),
                      strerror(err));
            status = (err == EADDRINUSE) ? UCS_ERR_BUSY :
                                           uct_tcp_sock_errno_status(err);
            goto err_close;
        }
    }

    if (listen(fd, SOMAXCONN) < 0) {
        err = errno;
        ucs_error("tcp: listen(%s) failed: %s",
                  uct_tcp_sockaddr_str(&bind_addr, str, sizeof(str)), strerror(err));
        status = uct_tcp_sock_errno_status(err);
        goto err_close;
    }

    if (getsockname(fd, &bind_addr.sa, &addrlen) < 0) {
        err = errno;
        ucs_error("tcp: getsockname() failed: %s", strerror(err));
        status = uct_tcp_sock_errno_status(err);
        goto err_close;
    }

    *fd_p   = fd;
    *port_p = ntohs(uct_tcp_sockaddr_port(&bind_addr));
    return UCS_OK;

err_close:
    close(fd);
    return status;
}

ucs_status_t uct_tcp_sock_accept(int listen_fd, const uct_tcp_sock_opts_t *opts,
                                 int *fd_p, uct_tcp_sockaddr_t *peer_p)
{
    socklen_t addrlen = sizeof(*peer_p);
    uct_tcp_sock_opts_t accepted_opts;
    int fd, err;

    fd = accept4(listen_fd, &peer_p->sa, &addrlen, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
        err = errno;
        switch (err) {
        case EAGAIN:
#if EWOULDBLOCK != EAGAIN
        case EWOULDBLOCK:
#endif
            return UCS_ERR_NO_RESOURCE;
        case EINTR:
        case ECONNABORTED:
        case EPROTO:
            /* The listener is fine, that connection went away. */
            ucs_debug("tcp: accept() on fd %d: %s", listen_fd, strerror(err));
            return UCS_ERR_BUSY;
        case EMFILE:
        case ENFILE:
        case ENOBUFS:
        case ENOMEM:
            /* The connection stays in the backlog until we have room. */
            ucs_warn_once("tcp: accept() on fd %d: %s; peers wait until "
                          "descriptors are free", listen_fd, strerror(err));
            return UCS_ERR_NO_MEMORY;
        default:
            ucs_error("tcp: accept() on fd %d failed: %s", listen_fd, strerror(err));
            return uct_tcp_sock_errno_status(err);
        }
    }

    /* Buffer sizes come from the listener; TCP_NODELAY is set here so that
     * the (rare) writes on this socket are not delayed either. */
    accepted_opts        = *opts;
    accepted_opts.sndbuf = 0;
    accepted_opts.rcvbuf = 0;
    uct_tcp_sock_apply_opts(fd, &accepted_opts, 0);

    *fd_p = fd;
    return UCS_OK;
}

ucs_status_t uct_tcp_sock_connect(const uct_tcp_sockaddr_t *local,
                                  const uct_tcp_sockaddr_t *peer,
                                  const uct_tcp_sock_opts_t *opts, int *fd_p,
                                  int *errno_p)
{
    uct_tcp_sockaddr_t bind_addr = *local;
    char str[UCT_TCP_SOCKADDR_STRLEN];
    ucs_status_t status;
    int fd = -1, err;

    status = uct_tcp_sock_create(local->sa.sa_family, &fd);
    if (status != UCS_OK) {
        return status;
    }

    uct_tcp_sock_apply_opts(fd, opts, 0);

    uct_tcp_sockaddr_set_port(&bind_addr, 0);
    if (bind(fd, &bind_addr.sa, uct_tcp_sockaddr_len(&bind_addr)) < 0) {
        err = errno;
        ucs_error("tcp: bind(%s) before connect failed: %s",
                  uct_tcp_sockaddr_str(&bind_addr, str, sizeof(str)), strerror(err));
        close(fd);
        return uct_tcp_sock_errno_status(err);
    }

    *errno_p = 0;
    if ((connect(fd, &peer->sa, uct_tcp_sockaddr_len(peer)) < 0) &&
        (errno != EINPROGRESS)) {
        *errno_p = errno;
        ucs_debug("tcp: connect(%s) failed at once: %s",
                  uct_tcp_sockaddr_str(peer, str, sizeof(str)), strerror(*errno_p));
    }

    *fd_p = fd;
    return UCS_OK;
}

int uct_tcp_sock_pending_errno(int fd)
{
    socklen_t len = sizeof(int);
    int err       = 0;

    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) {
        return errno;
    }
    return err;
}

ucs_status_t uct_tcp_sock_sendv(int fd, const struct iovec *iov, size_t iovcnt,
                                size_t *sent_p)
{
    struct msghdr msg;
    ssize_t ret;
    int err;

    memset(&msg, 0, sizeof(msg));
    msg.msg_iov    = (struct iovec*)iov;
    msg.msg_iovlen = iovcnt;

    do {
        ret = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while ((ret < 0) && (errno == EINTR));

    if (ucs_likely(ret >= 0)) {
        *sent_p = (size_t)ret;
        return UCS_OK;
    }

    err     = errno;
    *sent_p = 0;
    if ((err == EAGAIN) || (err == EWOULDBLOCK)) {
        return UCS_OK;
    }
    ucs_debug("tcp: sendmsg(fd %d) failed: %s", fd, strerror(err));
    return uct_tcp_sock_errno_status(err);
}

ucs_status_t uct_tcp_sock_recv(int fd, void *buf, size_t length, size_t *recvd_p)
{
    ssize_t ret;
    int err;

    do {
        ret = recv(fd, buf, length, MSG_DONTWAIT);
    } while ((ret < 0) && (errno == EINTR));

    if (ucs_likely(ret > 0)) {
        *recvd_p = (size_t)ret;
        return UCS_OK;
    }

    *recvd_p = 0;
    if (ret == 0) {
        return (length == 0) ? UCS_OK : UCS_ERR_CONNECTION_RESET;
    }
    err = errno;
    if ((err == EAGAIN) || (err == EWOULDBLOCK)) {
        return UCS_OK;
    }
    ucs_debug("tcp: recv(fd %d) failed: %s", fd, strerror(err));
    return uct_tcp_sock_errno_status(err);
}
