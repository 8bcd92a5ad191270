#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Client/server connection establishment over a TCP socket.
 *
 * The socket carries one exchange of worker addresses:
 *   client -> server  REQUEST [hello][client's worker address]
 *   server -> client  ACCEPT  [hello][server's worker address], or REJECT
 * after which both endpoints choose their lanes from the peer's address
 * (ucp_ep_connect_lanes()), exactly as endpoints made from worker
 * addresses, so shared memory and cuda_ipc are used on one host and tcp
 * between hosts. Each side also learns the other's endpoint id, which names
 * the right endpoint for stream bytes and reply endpoints when two workers
 * have several connections.
 *
 * The socket then stays open while both endpoints live: its end (the peer
 * closed its endpoint, or the process died) fails the endpoint with
 * UCS_ERR_CONNECTION_RESET, which is how a client/server peer learns that
 * the other side has gone.
 *
 * The client's endpoint exists from ucp_ep_create() on: sends posted before
 * the answer wait in its queue (UCP_EP_FLAG_CONNECTING) and choose their
 * protocol when the lanes exist.
 *
 * All sockets are non-blocking and driven from ucp_worker_progress(); one
 * epoll set per worker holds them (nested in the worker's wakeup set).
 */

#include <ucp/core/ucp_int.h>
#include <ucs/sys/sys.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define UCP_SA_MAGIC        0x41535855u /* "UXSA" */
#define UCP_SA_VERSION      1
#define UCP_SA_MAX_ADDR     (64u * 1024)
/* How long a handshake may take before the endpoint fails. */
#define UCP_SA_TIMEOUT_NS   (30ull * 1000000000ull)
/* Progress calls between looks at sockets when no handshake is running:
 * the remaining sockets only report a peer that went away. */
#define UCP_SA_IDLE_PERIOD  32

enum {
    UCP_SA_MSG_REQUEST = 1,
    UCP_SA_MSG_ACCEPT  = 2,
    UCP_SA_MSG_REJECT  = 3
};

typedef struct ucp_sa_hello {
    uint32_t magic;
    uint16_t version;
    uint8_t  type;
    uint8_t  reserved;
    uint32_t addr_len;  /* worker address bytes that follow */
    uint32_t flags;
    uint64_t client_id;
    uint64_t ep_id;     /* the sender's endpoint */
} ucp_sa_hello_t;

typedef enum {
    UCP_SA_CONNECTING,  /* client: connect() in progress */
    UCP_SA_SENDING,     /* our hello is being written */
    UCP_SA_RECEIVING,   /* waiting for the peer's hello */
    UCP_SA_WAIT_USER,   /* server: request handed to the application */
    UCP_SA_ESTABLISHED, /* kept open to notice the peer's end */
    UCP_SA_CLOSING      /* server: reject written, then closed */
} ucp_sa_state_t;

/* A handshake connection; on the server, also the connection request the
 * application sees. */
struct ucp_conn_request {
    ucs_list_link_t         link;      /* worker's connections */
    ucp_worker_h            worker;
    struct ucp_listener     *listener; /* server: until accepted */
    ucp_ep_h                ep;
    int                     fd;
    int                     is_server;
    int                     dead;      /* server: the client went away */
    ucp_sa_state_t          state;
    uint64_t                deadline;
    char                    *out;
    size_t                  out_len;
    size_t                  out_done;
    ucp_sa_hello_t          hello;     /* the peer's */
    char                    *in;       /* hello + address */
    size_t                  in_done;
    struct sockaddr_storage local;
    struct sockaddr_storage remote;
};

struct ucp_listener {
    ucs_list_link_t               link;
    ucp_worker_h                  worker;
    int                           fd;
    struct sockaddr_storage       addr;
    ucp_listener_accept_handler_t accept_handler;
    ucp_listener_conn_handler_t   conn_handler;
};

typedef struct ucp_sa_worker {
    int             epfd;
    ucs_list_link_t listeners;
    ucs_list_link_t conns;
    unsigned        idle;
    unsigned        busy;   /* connections in a handshake */
} ucp_sa_worker_t;

static const char *ucp_sa_str(const struct sockaddr_storage *ss, char *buf,
                              size_t max)
{
    const void *a = (ss->ss_family == AF_INET6) ?
                    (const void*)&((const struct sockaddr_in6*)ss)->sin6_addr :
                    (const void*)&((const struct sockaddr_in*)ss)->sin_addr;
    unsigned port = ntohs((ss->ss_family == AF_INET6) ?
                          ((const struct sockaddr_in6*)ss)->sin6_port :
                          ((const struct sockaddr_in*)ss)->sin_port);
    char host[INET6_ADDRSTRLEN] = "?";

    inet_ntop(ss->ss_family, a, host, sizeof(host));
    snprintf(buf, max, (ss->ss_family == AF_INET6) ? "[%s]:%u" : "%s:%u", host,
             port);
    return buf;
}

/* Check a caller's socket address: IPv4 or IPv6 of the right length. */
static ucs_status_t ucp_sa_check(const ucs_sock_addr_t *sa, const char *what)
{
    if ((sa->addr == NULL) ||
        !(((sa->addr->sa_family == AF_INET) &&
           (sa->addrlen >= sizeof(struct sockaddr_in))) ||
          ((sa->addr->sa_family == AF_INET6) &&
           (sa->addrlen >= sizeof(struct sockaddr_in6))))) {
        ucs_error("ucp: %s: the socket address must be IPv4 or IPv6 (family %d, "
                  "%u bytes)", what, (sa->addr != NULL) ? sa->addr->sa_family : -1,
                  (unsigned)sa->addrlen);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

static socklen_t ucp_sa_len(const struct sockaddr *addr)
{
    return (addr->sa_family == AF_INET6) ? sizeof(struct sockaddr_in6) :
                                           sizeof(struct sockaddr_in);
}

static ucp_sa_worker_t *ucp_sa_worker_get(ucp_worker_h worker)
{
    struct epoll_event ev;
    ucp_sa_worker_t *sa;

    if (worker->sa != NULL) {
        return worker->sa;
    }
    sa = calloc(1, sizeof(*sa));
    if (sa == NULL) {
        return NULL;
    }
    sa->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (sa->epfd < 0) {
        ucs_error("ucp: epoll_create1 failed: %m");
        free(sa);
        return NULL;
    }
    ucs_list_head_init(&sa->listeners);
    ucs_list_head_init(&sa->conns);
    if (worker->wakeup) {
        memset(&ev, 0, sizeof(ev));
        ev.events = EPOLLIN;
        if (epoll_ctl(worker->epfd, EPOLL_CTL_ADD, sa->epfd, &ev) < 0) {
            ucs_warn("ucp: worker %s: ucp_worker_wait() will not wake for "
                     "connections: epoll_ctl failed: %m", worker->name);
        }
    }
    worker->sa = sa;
    return sa;
}

static ucs_status_t ucp_sa_watch(ucp_worker_h worker, int fd, uint32_t events,
                                 void *ptr, int op)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.events   = events;
    ev.data.ptr = ptr;
    if (epoll_ctl(worker->sa->epfd, op, fd, &ev) < 0) {
        ucs_error("ucp: epoll_ctl(%d) failed: %m", fd);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

/* ---- connections ----------------------------------------------------------- */

static ucp_conn_request_h ucp_sa_conn_new(ucp_worker_h worker, int fd, int is_server)
{
    ucp_conn_request_h conn = calloc(1, sizeof(*conn));

    if (conn == NULL) {
        return NULL;
    }
    conn->worker    = worker;
    conn->fd        = fd;
    conn->is_server = is_server;
    conn->deadline  = ucs_get_time_ns() + UCP_SA_TIMEOUT_NS;
    ucs_list_add_tail(&worker->sa->conns, &conn->link);
    ++worker->sa->busy;
    return conn;
}

static void ucp_sa_conn_set_state(ucp_conn_request_h conn, ucp_sa_state_t state)
{
    int was_busy = (conn->state != UCP_SA_ESTABLISHED);
    int is_busy  = (state != UCP_SA_ESTABLISHED);

    conn->state             = state;
    conn->worker->sa->busy += is_busy - was_busy;
}

static void ucp_sa_conn_free(ucp_conn_request_h conn)
{
    ucp_sa_conn_set_state(conn, UCP_SA_ESTABLISHED); /* not busy any more */
    if (conn->fd >= 0) {
        (void)epoll_ctl(conn->worker->sa->epfd, EPOLL_CTL_DEL, conn->fd, NULL);
        close(conn->fd);
    }
    ucs_list_del(&conn->link);
    free(conn->out);
    free(conn->in);
    free(conn);
}

/* Queue our hello (and @a addr) for writing. */
static ucs_status_t ucp_sa_conn_send(ucp_conn_request_h conn, uint8_t type,
                                     uint64_t ep_id, const void *addr,
                                     size_t addr_len)
{
    ucp_sa_hello_t hello;

    memset(&hello, 0, sizeof(hello));
    hello.magic     = UCP_SA_MAGIC;
    hello.version   = UCP_SA_VERSION;
    hello.type      = type;
    hello.addr_len  = (uint32_t)addr_len;
    hello.ep_id     = ep_id;
    hello.client_id = conn->worker->client_id;
    conn->out       = malloc(sizeof(hello) + addr_len);
    if (conn->out == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memcpy(conn->out, &hello, sizeof(hello));
    if (addr_len > 0) {
        memcpy(conn->out + sizeof(hello), addr, addr_len);
    }
    conn->out_len  = sizeof(hello) + addr_len;
    conn->out_done = 0;
    return UCS_OK;
}

/* Write what is pending: UCS_OK when all is out, UCS_INPROGRESS, or an
 * error. */
static ucs_status_t ucp_sa_conn_flush_out(ucp_conn_request_h conn)
{
    ssize_t n;

    while (conn->out_done < conn->out_len) {
        n = send(conn->fd, conn->out + conn->out_done,
                 conn->out_len - conn->out_done, MSG_NOSIGNAL);
        if (n < 0) {
            if ((errno == EAGAIN) || (errno == EWOULDBLOCK) || (errno == EINTR)) {
                return UCS_INPROGRESS;
            }
            return UCS_ERR_CONNECTION_RESET;
        }
        conn->out_done += n;
    }
    free(conn->out);
    conn->out     = NULL;
    conn->out_len = 0;
    return UCS_OK;
}

/* Read the peer's hello and address: UCS_OK when complete, UCS_INPROGRESS,
 * or an error (the peer closed, or sent something that is not a hello). */
static ucs_status_t ucp_sa_conn_read(ucp_conn_request_h conn)
{
    size_t want = sizeof(ucp_sa_hello_t);
    ssize_t n;

    if (conn->in == NULL) {
        conn->in = malloc(sizeof(ucp_sa_hello_t));
        if (conn->in == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
    }
    for (;;) {
        if (conn->in_done >= sizeof(ucp_sa_hello_t)) {
            want = sizeof(ucp_sa_hello_t) + conn->hello.addr_len;
        }
        if (conn->in_done == want) {
            return UCS_OK;
        }
        n = recv(conn->fd, conn->in + conn->in_done, want - conn->in_done, 0);
        if (n == 0) {
            return UCS_ERR_CONNECTION_RESET;
        } else if (n < 0) {
            return ((errno == EAGAIN) || (errno == EWOULDBLOCK) || (errno == EINTR)) ?
                   UCS_INPROGRESS : UCS_ERR_CONNECTION_RESET;
        }
        conn->in_done += n;
        if (conn->in_done == sizeof(ucp_sa_hello_t)) {
            memcpy(&conn->hello, conn->in, sizeof(conn->hello));
            if ((conn->hello.magic != UCP_SA_MAGIC) ||
                (conn->hello.version != UCP_SA_VERSION) ||
                (conn->hello.addr_len > UCP_SA_MAX_ADDR)) {
                ucs_error("ucp: connection handshake: not a hello of this "
                          "library (magic 0x%x version %u, %u address bytes)",
                          conn->hello.magic, conn->hello.version,
                          conn->hello.addr_len);
                return UCS_ERR_INVALID_ADDR;
            }
            conn->in = realloc(conn->in, sizeof(ucp_sa_hello_t) +
                                         conn->hello.addr_len + 1);
            if (conn->in == NULL) {
                return UCS_ERR_NO_MEMORY;
            }
        }
    }
}

static void ucp_sa_fail_ep(ucp_conn_request_h conn, ucs_status_t status)
{
    ucp_ep_h ep = conn->ep;
    char buf[64];

    if (ep == NULL) {
        return;
    }
    if (!(ep->flags & (UCP_EP_FLAG_FAILED | UCP_EP_FLAG_CLOSING))) {
        ucs_debug("ucp: ep %s to %s: %s", ep->name,
                  ucp_sa_str(&conn->remote, buf, sizeof(buf)),
                  ucs_status_string(status));
    }
    ep->flags &= ~UCP_EP_FLAG_CONNECTING;
    ucp_ep_set_failed(ep, status, 1);
}

/* A barrier at the head of a connecting ep's queue: every fast path that
 * sends only when the queue is empty queues instead. */
static ucs_status_t ucp_sa_barrier_progress(ucp_request_t *req)
{
    (void)req;
    return UCS_ERR_NO_RESOURCE;
}

/* The socket is done (the ep keeps the addresses); the ep fails with
 * @a status. */
static void ucp_sa_conn_end(ucp_conn_request_h conn, ucs_status_t status)
{
    if (conn->fd >= 0) {
        (void)epoll_ctl(conn->worker->sa->epfd, EPOLL_CTL_DEL, conn->fd, NULL);
        close(conn->fd);
        conn->fd = -1;
    }
    ucp_sa_conn_set_state(conn, UCP_SA_ESTABLISHED);
    ucp_sa_fail_ep(conn, status);
}

/* Client: the server accepted; give the ep its lanes and move its queue. */
static void ucp_sa_client_connected(ucp_conn_request_h conn)
{
    ucp_ep_h ep = conn->ep;
    ucp_unpacked_address_t *addr;
    ucs_queue_head_t held;
    ucp_request_t *req;
    ucs_status_t status;

    addr = malloc(sizeof(*addr));
    if (addr == NULL) {
        ucp_sa_fail_ep(conn, UCS_ERR_NO_MEMORY);
        return;
    }
    status = ucp_address_unpack(conn->in + sizeof(ucp_sa_hello_t),
                                conn->hello.addr_len, addr);
    if (status == UCS_OK) {
        status = ucp_ep_connect_lanes(ep, addr, 1);
    }
    free(addr);
    if (status != UCS_OK) {
        ucp_sa_fail_ep(conn, status);
        return;
    }
    ep->remote_ep_id = conn->hello.ep_id;
    ep->flags       &= ~UCP_EP_FLAG_CONNECTING;
    ucs_debug("ucp: ep %s connected to worker 0x%llx (its ep 0x%llx)", ep->name,
              (unsigned long long)ep->remote_uuid,
              (unsigned long long)ep->remote_ep_id);

    /* What waited goes through again, in order: sends now choose their
     * protocol, the rest keep theirs. */
    ucs_queue_head_init(&held);
    while (!ucs_queue_is_empty(&ep->send_q)) {
        req = ucs_queue_pull_elem_non_empty(&ep->send_q, ucp_request_t, queue);
        ucs_queue_push(&held, &req->queue);
    }
    while (!ucs_queue_is_empty(&held)) {
        req = ucs_queue_pull_elem_non_empty(&held, ucp_request_t, queue);
        if (req->progress == ucp_sa_barrier_progress) {
            ucp_request_complete(req, UCS_OK);
        } else if (ucp_send_is_deferred(req)) {
            ucp_send_resubmit(req);
        } else {
            ucs_queue_push(&ep->send_q, &req->queue);
        }
    }
    ucp_ep_progress_queue(ep);
}

/* Server: hand a complete request to the application. */
static void ucp_sa_server_request(ucp_conn_request_h conn)
{
    struct ucp_listener *listener = conn->listener;
    ucp_ep_params_t params;
    ucp_ep_h ep;

    ucp_sa_conn_set_state(conn, UCP_SA_WAIT_USER);
    if (listener->conn_handler.cb != NULL) {
        listener->conn_handler.cb(conn, listener->conn_handler.arg);
        return;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask   = UCP_EP_PARAM_FIELD_CONN_REQUEST;
    params.conn_request = conn;
    if (ucp_sa_ep_accept(conn->worker, &params, &ep) == UCS_OK) {
        listener->accept_handler.cb(ep, listener->accept_handler.arg);
    }
}

static void ucp_sa_conn_event(ucp_conn_request_h conn, uint32_t events)
{
    ucs_status_t status = UCS_OK;
    socklen_t len       = sizeof(int);
    int err             = 0;

    switch (conn->state) {
    case UCP_SA_CONNECTING:
        if (getsockopt(conn->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) {
            err = errno;
        }
        if (err == EINPROGRESS) {
            return;
        }
        if (err != 0) {
            char buf[64];
            ucs_error("ucp: connecting to %s failed: %s",
                      ucp_sa_str(&conn->remote, buf, sizeof(buf)), strerror(err));
            status = UCS_ERR_UNREACHABLE;
            break;
        }
        len = sizeof(conn->local);
        (void)getsockname(conn->fd, (struct sockaddr*)&conn->local, &len);
        ucp_sa_conn_set_state(conn, UCP_SA_SENDING);
        /* fall through */
    case UCP_SA_SENDING:
    case UCP_SA_CLOSING:
        status = ucp_sa_conn_flush_out(conn);
        if (status == UCS_INPROGRESS) {
            (void)ucp_sa_watch(conn->worker, conn->fd, EPOLLOUT | EPOLLIN, conn,
                               EPOLL_CTL_MOD);
            return;
        } else if (status != UCS_OK) {
            break;
        }
        if (conn->state == UCP_SA_CLOSING) {
            ucp_sa_conn_free(conn);
            return;
        }
        (void)ucp_sa_watch(conn->worker, conn->fd, EPOLLIN, conn, EPOLL_CTL_MOD);
        ucp_sa_conn_set_state(conn, conn->is_server ? UCP_SA_ESTABLISHED :
                                                      UCP_SA_RECEIVING);
        return;
    case UCP_SA_RECEIVING:
        status = ucp_sa_conn_read(conn);
        if (status == UCS_INPROGRESS) {
            return;
        } else if (status != UCS_OK) {
            break;
        }
        if (conn->is_server) {
            if (conn->hello.type != UCP_SA_MSG_REQUEST) {
                status = UCS_ERR_INVALID_ADDR;
                break;
            }
            ucp_sa_server_request(conn);
        } else if (conn->hello.type == UCP_SA_MSG_ACCEPT) {
            ucp_sa_conn_set_state(conn, UCP_SA_ESTABLISHED);
            ucp_sa_client_connected(conn);
            return;
        } else {
            status = (conn->hello.type == UCP_SA_MSG_REJECT) ? UCS_ERR_REJECTED :
                                                               UCS_ERR_INVALID_ADDR;
            break;
        }
        return;
    case UCP_SA_WAIT_USER:
    case UCP_SA_ESTABLISHED:
        if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
            char c;
            ssize_t n = recv(conn->fd, &c, 1, MSG_DONTWAIT);
            if ((n > 0) || ((n < 0) && ((errno == EAGAIN) || (errno == EINTR)))) {
                return; /* nothing is sent after the hello: ignore */
            }
            status = UCS_ERR_CONNECTION_RESET;
        }
        break;
    }
    if (status == UCS_OK) {
        return;
    }
    if (conn->is_server && (conn->ep == NULL)) {
        /* The client went away before the request was accepted: the
         * application may still hold it, so it stays until then. */
        if (conn->state == UCP_SA_WAIT_USER) {
            conn->dead = 1;
            (void)epoll_ctl(conn->worker->sa->epfd, EPOLL_CTL_DEL, conn->fd, NULL);
        } else {
            ucp_sa_conn_free(conn);
        }
        return;
    }
    ucp_sa_conn_end(conn, status);
}

static void ucp_sa_listener_accept(struct ucp_listener *listener)
{
    ucp_worker_h worker = listener->worker;
    struct sockaddr_storage peer;
    ucp_conn_request_h conn;
    socklen_t len;
    int fd, one = 1;

    for (;;) {
        len = sizeof(peer);
        fd  = accept4(listener->fd, (struct sockaddr*)&peer, &len,
                      SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if ((errno != EAGAIN) && (errno != EWOULDBLOCK) && (errno != EINTR)) {
                ucs_error("ucp: listener %d: accept failed: %m", listener->fd);
            }
            return;
        }
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        conn = ucp_sa_conn_new(worker, fd, 1);
        if (conn == NULL) {
            close(fd);
            continue;
        }
        conn->listener = listener;
        conn->remote   = peer;
        len            = sizeof(conn->local);
        (void)getsockname(fd, (struct sockaddr*)&conn->local, &len);
        ucp_sa_conn_set_state(conn, UCP_SA_RECEIVING);
        if (ucp_sa_watch(worker, fd, EPOLLIN, conn, EPOLL_CTL_ADD) != UCS_OK) {
            ucp_sa_conn_free(conn);
        }
    }
}

void ucp_sa_arm(ucp_worker_h worker)
{
    worker->sa->idle = UCP_SA_IDLE_PERIOD;
}

unsigned ucp_sa_progress(ucp_worker_h worker)
{
    ucp_sa_worker_t *sa = worker->sa;
    struct epoll_event events[16];
    struct ucp_listener *listener;
    ucp_conn_request_h conn, tmp;
    uint64_t now;
    int i, n;

    if ((sa->busy == 0) && (++sa->idle < UCP_SA_IDLE_PERIOD)) {
        return 0;
    }
    sa->idle = 0;
    n = epoll_wait(sa->epfd, events, 16, 0);
    for (i = 0; i < n; ++i) {
        ucs_list_for_each(listener, &sa->listeners, link) {
            if (listener == events[i].data.ptr) {
                ucp_sa_listener_accept(listener);
                goto next;
            }
        }
        ucp_sa_conn_event(events[i].data.ptr, events[i].events);
next:
        ;
    }
    if (sa->busy > 0) {
        now = ucs_get_time_ns();
        ucs_list_for_each_safe(conn, tmp, &sa->conns, link) {
            if ((conn->state == UCP_SA_ESTABLISHED) ||
                (conn->state == UCP_SA_WAIT_USER) || (now < conn->deadline)) {
                continue;
            }
            ucs_error("ucp: connection handshake with the %s did not finish in "
                      "%llu s", conn->is_server ? "client" : "server",
                      UCP_SA_TIMEOUT_NS / 1000000000ull);
            if (conn->ep != NULL) {
                ucp_sa_conn_end(conn, UCS_ERR_ENDPOINT_TIMEOUT);
            } else {
                ucp_sa_conn_free(conn);
            }
            break; /* the lists may have changed */
        }
    }
    return (n > 0) ? n : 0;
}

/* ---- listeners -------------------------------------------------------------- */

ucs_status_t ucp_listener_create(ucp_worker_h worker,
                                 const ucp_listener_params_t *params,
                                 ucp_listener_h *listener_p)
{
    struct ucp_listener *listener;
    ucs_status_t status;
    socklen_t len;
    char buf[64];
    int fd, one = 1;

    if ((params == NULL) || (listener_p == NULL) ||
        !(params->field_mask & UCP_LISTENER_PARAM_FIELD_SOCK_ADDR)) {
        ucs_error("ucp_listener_create: a socket address is required");
        return UCS_ERR_INVALID_PARAM;
    }
    if (!(((params->field_mask & UCP_LISTENER_PARAM_FIELD_CONN_HANDLER) &&
           (params->conn_handler.cb != NULL)) ||
          ((params->field_mask & UCP_LISTENER_PARAM_FIELD_ACCEPT_HANDLER) &&
           (params->accept_handler.cb != NULL)))) {
        ucs_error("ucp_listener_create: a connection or accept handler is "
                  "required");
        return UCS_ERR_INVALID_PARAM;
    }
    status = ucp_sa_check(&params->sockaddr, "ucp_listener_create");
    if (status != UCS_OK) {
        return status;
    }

    ucp_worker_lock(worker);
    if (ucp_sa_worker_get(worker) == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto out;
    }
    listener = calloc(1, sizeof(*listener));
    if (listener == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto out;
    }
    fd = socket(params->sockaddr.addr->sa_family,
                SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ucs_error("ucp_listener_create: socket failed: %m");
        status = (errno == EMFILE) ? UCS_ERR_EXCEEDS_LIMIT : UCS_ERR_IO_ERROR;
        free(listener);
        goto out;
    }
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memcpy(&listener->addr, params->sockaddr.addr,
           ucp_sa_len(params->sockaddr.addr));
    if ((bind(fd, params->sockaddr.addr, ucp_sa_len(params->sockaddr.addr)) < 0) ||
        (listen(fd, SOMAXCONN) < 0)) {
        status = (errno == EADDRINUSE) ? UCS_ERR_BUSY :
                 (errno == EADDRNOTAVAIL) ? UCS_ERR_INVALID_ADDR : UCS_ERR_IO_ERROR;
        ucs_error("ucp_listener_create: cannot listen on %s: %m",
                  ucp_sa_str(&listener->addr, buf, sizeof(buf)));
        close(fd);
        free(listener);
        goto out;
    }
    len = sizeof(listener->addr);
    (void)getsockname(fd, (struct sockaddr*)&listener->addr, &len);
    listener->fd     = fd;
    listener->worker = worker;
    if (params->field_mask & UCP_LISTENER_PARAM_FIELD_CONN_HANDLER) {
        listener->conn_handler = params->conn_handler;
    }
    if (params->field_mask & UCP_LISTENER_PARAM_FIELD_ACCEPT_HANDLER) {
        listener->accept_handler = params->accept_handler;
    }
    status = ucp_sa_watch(worker, fd, EPOLLIN, listener, EPOLL_CTL_ADD);
    if (status != UCS_OK) {
        close(fd);
        free(listener);
        goto out;
    }
    ucs_list_add_tail(&worker->sa->listeners, &listener->link);
    ucs_debug("ucp: worker %s listens on %s", worker->name,
              ucp_sa_str(&listener->addr, buf, sizeof(buf)));
    *listener_p = listener;
out:
    ucp_worker_unlock(worker);
    return status;
}

void ucp_listener_destroy(ucp_listener_h listener)
{
    ucp_worker_h worker = listener->worker;
    ucp_conn_request_h conn, tmp;

    ucp_worker_lock(worker);
    ucs_list_for_each_safe(conn, tmp, &worker->sa->conns, link) {
        if ((conn->listener == listener) && (conn->ep == NULL)) {
            ucp_sa_conn_free(conn); /* the client sees its end: refused */
        }
    }
    (void)epoll_ctl(worker->sa->epfd, EPOLL_CTL_DEL, listener->fd, NULL);
    close(listener->fd);
    ucs_list_del(&listener->link);
    free(listener);
    ucp_worker_unlock(worker);
}

ucs_status_t ucp_listener_query(ucp_listener_h listener, ucp_listener_attr_t *attr)
{
    if (attr->field_mask & UCP_LISTENER_ATTR_FIELD_SOCKADDR) {
        memcpy(&attr->sockaddr, &listener->addr, sizeof(attr->sockaddr));
    }
    return UCS_OK;
}

ucs_status_t ucp_conn_request_query(ucp_conn_request_h conn_request,
                                    ucp_conn_request_attr_t *attr)
{
    if (attr->field_mask & UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR) {
        memcpy(&attr->client_address, &conn_request->remote,
               sizeof(attr->client_address));
    }
    if (attr->field_mask & UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ID) {
        attr->client_id = (conn_request->hello.flags & 1) ?
                          conn_request->hello.client_id : 0;
    }
    return UCS_OK;
}

ucs_status_t ucp_listener_reject(ucp_listener_h listener,
                                 ucp_conn_request_h conn_request)
{
    ucp_worker_h worker = listener->worker;
    ucp_conn_request_h conn = conn_request;

    ucp_worker_lock(worker);
    if (conn->dead || (ucp_sa_conn_send(conn, UCP_SA_MSG_REJECT, 0, NULL, 0) !=
                       UCS_OK)) {
        ucp_sa_conn_free(conn);
    } else {
        conn->listener = NULL;
        ucp_sa_conn_set_state(conn, UCP_SA_CLOSING);
        ucp_sa_conn_event(conn, EPOLLOUT);
    }
    ucp_worker_unlock(worker);
    return UCS_OK;
}

/* ---- endpoints ---------------------------------------------------------------- */

ucs_status_t ucp_sa_ep_accept(ucp_worker_h worker, const ucp_ep_params_t *params,
                              ucp_ep_h *ep_p)
{
    ucp_conn_request_h conn = params->conn_request;
    ucp_unpacked_address_t *addr;
    unsigned flags;
    ucs_status_t status;
    ucp_ep_h ep;

    if (conn == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }
    flags = (params->field_mask & UCP_EP_PARAM_FIELD_FLAGS) ? params->flags : 0;
    ucp_worker_lock(worker);
    if (conn->dead) {
        ucs_error("ucp_ep_create: the client of this connection request has "
                  "gone away");
        status = UCS_ERR_CONNECTION_RESET;
        goto err_conn;
    }
    addr = malloc(sizeof(*addr));
    if (addr == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_conn;
    }
    status = ucp_address_unpack(conn->in + sizeof(ucp_sa_hello_t),
                                conn->hello.addr_len, addr);
    if (status == UCS_OK) {
        status = ucp_ep_create_from_address(worker, addr, 0,
                                            !(flags & UCP_EP_PARAMS_FLAGS_NO_LOOPBACK),
                                            &ep);
    }
    free(addr);
    if (status != UCS_OK) {
        goto err_conn;
    }
    status = ucp_sa_conn_send(conn, UCP_SA_MSG_ACCEPT, ep->local_id,
                              worker->address, worker->address_len);
    if (status != UCS_OK) {
        ucp_ep_destroy_internal(ep);
        goto err_conn;
    }
    ucp_ep_apply_params(ep, params);
    ep->remote_ep_id = conn->hello.ep_id;
    ep->sa           = conn;
    conn->ep         = ep;
    conn->listener   = NULL;
    ucp_sa_conn_set_state(conn, UCP_SA_SENDING);
    ucp_sa_conn_event(conn, EPOLLOUT);
    *ep_p = ep;
    ucp_worker_unlock(worker);
    return UCS_OK;

err_conn:
    ucp_sa_conn_free(conn);
    ucp_worker_unlock(worker);
    return status;
}

ucs_status_t ucp_sa_ep_connect(ucp_worker_h worker, const ucp_ep_params_t *params,
                               ucp_ep_h *ep_p)
{
    unsigned flags = (params->field_mask & UCP_EP_PARAM_FIELD_FLAGS) ?
                     params->flags : 0;
    ucp_conn_request_h conn;
    ucp_request_t *barrier;
    ucs_status_t status;
    int fd, one = 1;
    ucp_ep_h ep;

    status = ucp_sa_check(&params->sockaddr, "ucp_ep_create");
    if (status != UCS_OK) {
        return status;
    }
    if (params->field_mask & UCP_EP_PARAM_FIELD_LOCAL_SOCK_ADDR) {
        status = ucp_sa_check(&params->local_sockaddr, "ucp_ep_create (local)");
        if (status != UCS_OK) {
            return status;
        }
    }
    ucp_worker_lock(worker);
    if (ucp_sa_worker_get(worker) == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto out;
    }
    fd = socket(params->sockaddr.addr->sa_family,
                SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ucs_error("ucp_ep_create: socket failed: %m");
        status = (errno == EMFILE) ? UCS_ERR_EXCEEDS_LIMIT : UCS_ERR_IO_ERROR;
        goto out;
    }
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if ((params->field_mask & UCP_EP_PARAM_FIELD_LOCAL_SOCK_ADDR) &&
        (bind(fd, params->local_sockaddr.addr,
              ucp_sa_len(params->local_sockaddr.addr)) < 0)) {
        ucs_error("ucp_ep_create: cannot bind the local address: %m");
        close(fd);
        status = (errno == EADDRINUSE) ? UCS_ERR_BUSY : UCS_ERR_INVALID_ADDR;
        goto out;
    }
    ep      = ucp_ep_alloc(worker, UCP_EP_FLAG_CONNECTING);
    conn    = (ep != NULL) ? ucp_sa_conn_new(worker, fd, 0) : NULL;
    barrier = (conn != NULL) ? ucp_request_get(worker, NULL) : NULL;
    if (barrier == NULL) {
        if (conn != NULL) {
            ucp_sa_conn_free(conn);
        } else {
            close(fd);
        }
        if (ep != NULL) {
            ucs_list_del(&ep->link);
            free(ep);
        }
        status = UCS_ERR_NO_MEMORY;
        goto out;
    }
    ep->max_bcopy = SIZE_MAX; /* known once connected */
    ep->sa        = conn;
    conn->ep      = ep;
    memcpy(&conn->remote, params->sockaddr.addr, ucp_sa_len(params->sockaddr.addr));
    ucp_ep_apply_params(ep, params);
    barrier->flags   |= UCP_REQ_FLAG_INTERNAL;
    barrier->progress = ucp_sa_barrier_progress;
    barrier->ep       = ep;
    ucs_queue_push(&ep->send_q, &barrier->queue);
    /* Sent only on request, as upstream does. */
    status = ucp_sa_conn_send(conn, UCP_SA_MSG_REQUEST, ep->local_id,
                              worker->address, worker->address_len);
    if (status == UCS_OK) {
        if (flags & UCP_EP_PARAMS_FLAGS_SEND_CLIENT_ID) {
            ((ucp_sa_hello_t*)conn->out)->flags |= 1;
        }
        ucp_sa_conn_set_state(conn, UCP_SA_CONNECTING);
        if ((connect(fd, params->sockaddr.addr,
                     ucp_sa_len(params->sockaddr.addr)) < 0) &&
            (errno != EINPROGRESS)) {
            /* Refused at once (loopback): reported like a later failure,
             * through the ep, from the next progress. */
            ucs_debug("ucp_ep_create: connect failed at once: %m");
        }
        status = ucp_sa_watch(worker, fd, EPOLLOUT | EPOLLIN, conn, EPOLL_CTL_ADD);
    }
    if (status != UCS_OK) {
        ucp_ep_set_failed(ep, status, 0);
        ucp_ep_destroy_internal(ep);
        goto out;
    }
    ucs_debug("ucp: ep %s connecting by socket address", ep->name);
    *ep_p = ep;
out:
    ucp_worker_unlock(worker);
    return status;
}

ucs_status_t ucp_sa_ep_query(ucp_ep_h ep, ucp_ep_attr_t *attr)
{
    if (ep->sa == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    if (attr->field_mask & UCP_EP_ATTR_FIELD_LOCAL_SOCKADDR) {
        memcpy(&attr->local_sockaddr, &ep->sa->local, sizeof(attr->local_sockaddr));
    }
    if (attr->field_mask & UCP_EP_ATTR_FIELD_REMOTE_SOCKADDR) {
        memcpy(&attr->remote_sockaddr, &ep->sa->remote,
               sizeof(attr->remote_sockaddr));
    }
    return UCS_OK;
}

void ucp_sa_ep_cleanup(ucp_ep_h ep)
{
    if (ep->sa != NULL) {
        ucp_sa_conn_free(ep->sa);
        ep->sa = NULL;
    }
}

void ucp_sa_worker_cleanup(ucp_worker_h worker)
{
    ucp_sa_worker_t *sa = worker->sa;
    struct ucp_listener *listener;

    if (sa == NULL) {
        return;
    }
    while (!ucs_list_is_empty(&sa->conns)) {
        ucp_sa_conn_free(ucs_list_head_elem(&sa->conns, struct ucp_conn_request,
                                            link));
    }
    while (!ucs_list_is_empty(&sa->listeners)) {
        listener = ucs_list_extract_head_elem(&sa->listeners, struct ucp_listener,
                                              link);
        ucs_warn("ucp: worker %s destroyed with a listener not destroyed",
                 worker->name);
        close(listener->fd);
        free(listener);
    }
    close(sa->epfd);
    free(sa);
    worker->sa = NULL;
}
