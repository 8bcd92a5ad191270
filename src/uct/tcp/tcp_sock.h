/**
 * @file tcp_sock.h
 * Thin wrappers around the socket calls of the tcp transport. They exist so
 * that every socket is created the same way (non-blocking, close-on-exec,
 * with the configured options), every send carries MSG_NOSIGNAL (a dead peer
 * must give an error, never SIGPIPE), and errno becomes a ucs_status_t in one
 * place.
 *
 * Thread safety: the functions keep no state; a socket must be used by one
 * thread at a time, as every uct object is.
 */
#ifndef UCT_TCP_SOCK_H_
#define UCT_TCP_SOCK_H_

#include "tcp_addr.h"

#include <ucs/type/status.h>

#include <netinet/in.h>
#include <stddef.h>
#include <sys/uio.h>

BEGIN_C_DECLS

/** Socket options applied to every socket of an iface. */
typedef struct uct_tcp_sock_opts {
    size_t sndbuf;  /**< SO_SNDBUF, or 0 to keep the kernel's (auto-tuned) size */
    size_t rcvbuf;  /**< SO_RCVBUF, or 0 to keep the kernel's size */
    int    nodelay; /**< TCP_NODELAY: small messages leave at once */
    int    keepidle;  /**< TCP_KEEPIDLE, s; 0: no SO_KEEPALIVE */
    int    keepintvl; /**< TCP_KEEPINTVL, s */
    int    keepcnt;   /**< TCP_KEEPCNT */
} uct_tcp_sock_opts_t;

/**
 * Map a socket errno to a status. Peer failures become the statuses an
 * error handler expects: UCS_ERR_ENDPOINT_TIMEOUT when the peer could not be
 * reached in time (ETIMEDOUT, EHOSTUNREACH, ...), UCS_ERR_CONNECTION_RESET
 * for the rest of the connection errors (ECONNRESET, EPIPE, ECONNREFUSED).
 * Local resource errors map to UCS_ERR_NO_MEMORY / UCS_ERR_IO_ERROR.
 */
ucs_status_t uct_tcp_sock_errno_status(int err);

/**
 * Create a listening socket on @a addr (its port is ignored; its family
 * picks the socket's) trying ports
 * @a port_min .. @a port_max in turn; port_min == 0 lets the kernel pick an
 * ephemeral port. The socket is non-blocking and close-on-exec.
 *
 * @param fd_p    receives the socket; the caller closes it.
 * @param port_p  receives the port bound, host byte order.
 * @return UCS_OK, UCS_ERR_BUSY when every port of the range is in use, or
 *         the mapped errno of the failing call (logged with its name).
 */
ucs_status_t uct_tcp_sock_listen(const uct_tcp_sockaddr_t *addr, unsigned port_min,
                                 unsigned port_max, const uct_tcp_sock_opts_t *opts,
                                 int *fd_p, uint16_t *port_p);

/**
 * Accept one pending connection as a non-blocking socket with @a opts.
 *
 * @param peer_p  receives the peer's address.
 * @return UCS_OK; UCS_ERR_NO_RESOURCE when none is waiting; UCS_ERR_BUSY
 *         for a connection the peer dropped before we took it (try the
 *         next one); UCS_ERR_NO_MEMORY when out of descriptors or memory
 *         (the connection waits in the backlog); any other status is a
 *         failure of the listening socket itself.
 */
ucs_status_t uct_tcp_sock_accept(int listen_fd, const uct_tcp_sock_opts_t *opts,
                                 int *fd_p, uct_tcp_sockaddr_t *peer_p);

/**
 * Start a non-blocking connection from @a local (port ignored: the kernel
 * picks one; binding the address makes traffic leave through the device the
 * iface was opened on) to @a peer.
 *
 * @param fd_p       receives the socket; the caller closes it.
 * @param errno_p    receives 0 when the connection is established or in
 *                   progress, else the errno of a connect() that failed at
 *                   once (refused, unreachable): the socket is still
 *                   returned, so that the failure can be reported the same
 *                   way as one that happens later.
 * @return UCS_OK, or an error when no socket could be made at all.
 */
ucs_status_t uct_tcp_sock_connect(const uct_tcp_sockaddr_t *local,
                                  const uct_tcp_sockaddr_t *peer,
                                  const uct_tcp_sock_opts_t *opts, int *fd_p,
                                  int *errno_p);

/**
 * The pending error of a socket (SO_ERROR), which also clears it.
 * @return 0 or an errno.
 */
int uct_tcp_sock_pending_errno(int fd);

/**
 * Send as much of @a iov as the kernel takes now, without blocking and
 * without SIGPIPE.
 *
 * @param sent_p  receives the number of bytes sent (0 when the socket
 *                buffer is full).
 * @return UCS_OK (also for a partial or empty send), or the failure status
 *         of the connection (see uct_tcp_sock_errno_status()).
 */
ucs_status_t uct_tcp_sock_sendv(int fd, const struct iovec *iov, size_t iovcnt,
                                size_t *sent_p);

/**
 * Receive up to @a length bytes without blocking.
 *
 * @param recvd_p  receives the number of bytes read (0 when nothing was
 *                 waiting).
 * @return UCS_OK (also when nothing was read), UCS_ERR_CONNECTION_RESET when
 *         the peer closed the connection (end of stream), or the failure
 *         status of the connection.
 */
ucs_status_t uct_tcp_sock_recv(int fd, void *buf, size_t length, size_t *recvd_p);

/**
 * How long the peer of connected socket @a fd has acknowledged nothing
 * while data of ours is stuck: retransmitted, or probed for because it
 * cannot leave (TCP_INFO), in ms; 0 when no data is stuck. A receiver
 * that is merely slow still acknowledges (its window probes), so a large
 * value means the path or the peer's host is gone.
 */
unsigned uct_tcp_sock_unacked_ms(int fd);

/**
 * Let the kernel delay the acknowledgements of what @a fd receives
 * (TCP_QUICKACK 0: the mode Linux keeps for a socket that answers its
 * peer). The kernel leaves that mode after a delayed acknowledgement timed
 * out, so callers repeat it now and then.
 */
void uct_tcp_sock_delay_acks(int fd);

END_C_DECLS

#endif
