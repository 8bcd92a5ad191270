#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "tcp_iface.h"
#include "tcp_conn.h"
#include "tcp_ep.h"
#include "tcp_md.h"
#include "tcp_netif.h"
#include "tcp_rx.h"
#include "tcp_wire.h"

#include <ucs/config/parser.h>
#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* Performance model. Latency is what a small message costs over loopback
 * through two system calls and a wake-up; a real link adds to it, but the
 * protocol choice only needs the order of magnitude. */
#define UCT_TCP_LATENCY            10e-6
#define UCT_TCP_OVERHEAD           1e-6
/* Bandwidth when the kernel does not know the link speed (loopback, most
 * virtual devices): 10 Gbit/s. */
#define UCT_TCP_DEFAULT_BANDWIDTH  (10e9 / 8)

#define UCT_TCP_MIN_SEG_SIZE       64
#define UCT_TCP_MAX_SEG_SIZE       (16ul * 1024 * 1024)

static ucs_config_field_t uct_tcp_iface_config_fields[] = {
    {"SEG_SIZE", "256K",
     "Largest am_bcopy payload, and the size of the send and receive buffers\n"
     "a connection borrows from its iface while a message is partly sent or\n"
     "received (idle connections hold none). Larger messages are received\n"
     "into a buffer of their own. Fewer, larger segments mean fewer system\n"
     "calls per byte, which is what large messages in both directions at\n"
     "once need most.",
     offsetof(uct_tcp_iface_config_t, super.max_bcopy), UCS_CONFIG_TYPE_SIZE},

    {"MAX_ZCOPY", "16M",
     "Largest am_zcopy payload. The receiver holds a whole message in memory,\n"
     "so this also bounds what one message costs the receiving process.",
     offsetof(uct_tcp_iface_config_t, max_zcopy), UCS_CONFIG_TYPE_SIZE},

    {"PORT_RANGE", "0",
     "Ports the listening socket may bind: 0 lets the kernel choose an\n"
     "ephemeral port; a port number, or first-last, restricts it (the first\n"
     "free port of the range is taken).",
     offsetof(uct_tcp_iface_config_t, port_range), UCS_CONFIG_TYPE_STRING},

    {"SNDBUF", "auto",
     "Socket send buffer size (SO_SNDBUF). auto keeps the kernel's\n"
     "auto-tuned size, which is usually best.",
     offsetof(uct_tcp_iface_config_t, sndbuf),
     UCS_CONFIG_TYPE_SIZE_EX(UCS_CONFIG_PARSE_AUTO)},

    {"RCVBUF", "auto",
     "Socket receive buffer size (SO_RCVBUF). auto keeps the kernel's\n"
     "auto-tuned size.",
     offsetof(uct_tcp_iface_config_t, rcvbuf),
     UCS_CONFIG_TYPE_SIZE_EX(UCS_CONFIG_PARSE_AUTO)},

    {"NODELAY", "y",
     "Disable Nagle's algorithm (TCP_NODELAY), so that a small message leaves\n"
     "at once instead of waiting to be merged with the next one.",
     offsetof(uct_tcp_iface_config_t, nodelay), UCS_CONFIG_TYPE_BOOL},

    {"ROUTE_CHECK", "y",
     "Pair an interface with a peer's address only when the kernel routes that\n"
     "address out of this interface, so that traffic of an iface chosen by\n"
     "UCX_NET_DEVICES never leaves by another device. n: any address of the\n"
     "same family is taken as reachable (for policy routing, where the main\n"
     "table does not tell the path).",
     offsetof(uct_tcp_iface_config_t, route_check), UCS_CONFIG_TYPE_BOOL},

    {"KEEPIDLE", "10s",
     "Idle time of a connection before the kernel sends keepalive probes\n"
     "(SO_KEEPALIVE, TCP_KEEPIDLE); 'inf' turns them off. With KEEPINTVL and\n"
     "KEEPCNT it also bounds how long data may stay unacknowledged while the\n"
     "kernel retransmits it: a peer host or path silent for KEEPIDLE +\n"
     "KEEPINTVL * KEEPCNT fails the endpoint (UCS_ERR_ENDPOINT_TIMEOUT), found\n"
     "by the keepalive probes of UCP (UCX_KEEPALIVE_INTERVAL). A peer that is\n"
     "only slow to receive still acknowledges and is not failed.",
     offsetof(uct_tcp_iface_config_t, keepidle),
     UCS_CONFIG_TYPE_TIME_EX(UCS_CONFIG_PARSE_INF)},

    {"KEEPINTVL", "2s",
     "Time between two keepalive probes of the kernel (TCP_KEEPINTVL).",
     offsetof(uct_tcp_iface_config_t, keepintvl), UCS_CONFIG_TYPE_TIME},

    {"KEEPCNT", "3",
     "Unanswered keepalive probes after which the kernel closes the\n"
     "connection (TCP_KEEPCNT).",
     offsetof(uct_tcp_iface_config_t, keepcnt), UCS_CONFIG_TYPE_UINT},

    {NULL}};

static ucs_config_table_entry_t uct_tcp_iface_config_entry = {
    .name   = "TCP transport",
    .prefix = "TCP_",
    .fields = uct_tcp_iface_config_fields,
    .size   = sizeof(uct_tcp_iface_config_t)
};
UCS_CONFIG_REGISTER_TABLE(uct_tcp_iface_config_entry)


static int uct_tcp_iface_seconds(double value)
{
    return (value >= INT32_MAX) ? INT32_MAX : (int)ucs_max(value + 0.5, 1.0);
}

static ucs_status_t uct_tcp_iface_keepalive_init(uct_tcp_iface_t *iface,
                                                 const uct_tcp_iface_config_t *config)
{
    if ((config->keepidle == UCS_CONFIG_TIME_INF) || (config->keepidle <= 0)) {
        iface->sock_opts.keepidle = 0;
        iface->unacked_max_ms     = 0;
        return UCS_OK;
    }
    if ((config->keepintvl <= 0) || (config->keepcnt == 0) ||
        (config->keepcnt > 127)) {
        ucs_error("tcp: UCX_TCP_KEEPINTVL must be positive and UCX_TCP_KEEPCNT "
                  "1..127 (got %g s, %u)", config->keepintvl, config->keepcnt);
        return UCS_ERR_INVALID_PARAM;
    }
    iface->sock_opts.keepidle  = uct_tcp_iface_seconds(config->keepidle);
    iface->sock_opts.keepintvl = uct_tcp_iface_seconds(config->keepintvl);
    iface->sock_opts.keepcnt   = (int)config->keepcnt;
    iface->unacked_max_ms      = 1000u * (unsigned)ucs_min(
            (double)iface->sock_opts.keepidle +
            (double)iface->sock_opts.keepintvl * iface->sock_opts.keepcnt, 4e6);
    return UCS_OK;
}

ucs_status_t uct_tcp_iface_watch_add(uct_tcp_iface_t *iface, uct_tcp_watch_t *watch,
                                     uint32_t events)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.events   = events;
    ev.data.ptr = watch;
    if (epoll_ctl(iface->epfd, EPOLL_CTL_ADD, watch->fd, &ev) < 0) {
        ucs_error("tcp: epoll_ctl(ADD, fd %d) failed: %s", watch->fd, strerror(errno));
        return UCS_ERR_IO_ERROR;
    }
    watch->events = events;
    return UCS_OK;
}

ucs_status_t uct_tcp_iface_watch_set(uct_tcp_iface_t *iface, uct_tcp_watch_t *watch,
                                     uint32_t events)
{
    struct epoll_event ev;

    if (watch->events == events) {
        return UCS_OK;
    }

    memset(&ev, 0, sizeof(ev));
    ev.events   = events;
    ev.data.ptr = watch;
    if (epoll_ctl(iface->epfd, EPOLL_CTL_MOD, watch->fd, &ev) < 0) {
        ucs_error("tcp: epoll_ctl(MOD, fd %d) failed: %s", watch->fd, strerror(errno));
        return UCS_ERR_IO_ERROR;
    }
    watch->events = events;
    return UCS_OK;
}

void uct_tcp_iface_watch_close(uct_tcp_iface_t *iface, uct_tcp_watch_t *watch)
{
    if (watch->fd < 0) {
        return;
    }
    /* Removed explicitly: a forked child may hold a copy of the socket, and
     * epoll only forgets a socket when its last copy is closed. */
    epoll_ctl(iface->epfd, EPOLL_CTL_DEL, watch->fd, NULL);
    close(watch->fd);
    watch->fd     = -1;
    watch->events = 0;
}

/* Report failures queued by uct_tcp_ep_set_failed(). The error handler may
 * destroy any ep, so the list head is read afresh every time. */
static unsigned uct_tcp_iface_report_failures(uct_tcp_iface_t *iface)
{
    unsigned count = 0;
    uct_tcp_ep_t *ep;

    while (!ucs_list_is_empty(&iface->failed_eps)) {
        ep = ucs_list_extract_head_elem(&iface->failed_eps, uct_tcp_ep_t, failed_link);
        ep->on_failed_list = 0;
        uct_tcp_ep_report_failure(ep);
        ++count;
    }
    return count;
}

static inline int uct_tcp_iface_is_idle(const uct_tcp_iface_t *iface)
{
    return ucs_list_is_empty(&iface->eps) && ucs_list_is_empty(&iface->rx_conns);
}

/*
 * A sender whose peer host or path vanished waits for EPOLLOUT forever: no
 * error reaches the socket while the kernel keeps retransmitting, and an
 * endpoint without error handling gets no keepalive probes from UCP. So
 * progress that finds nothing to do looks, about once a second, at the eps
 * with data waiting and fails those whose peer acknowledges nothing (the
 * same rule as UCP's peer check). Reading the clock only every
 * UCT_TCP_STALL_POLLS idle calls keeps a busy polling loop at its speed.
 */
#define UCT_TCP_STALL_POLLS 1024
#define UCT_TCP_STALL_CHECK_NS 1000000000ull

unsigned uct_tcp_iface_peer_silent(uct_tcp_iface_t *iface, int fd, uint64_t *since_ns)
{
    unsigned ms = uct_tcp_sock_unacked_ms(fd);
    uint64_t now;

    if (ms == 0) {
        *since_ns = 0;
        return 0;
    }
    now = ucs_get_time_ns();
    if (*since_ns == 0) {
        *since_ns = now;
        return 0;
    }
    return ((ms >= iface->unacked_max_ms) &&
            (now - *since_ns >= (uint64_t)iface->sock_opts.keepintvl * 1000000000ull)) ?
           ms : 0;
}

static UCS_F_NOINLINE void uct_tcp_iface_check_stalled(uct_tcp_iface_t *iface)
{
    uint64_t now = ucs_get_time_ns();
    uct_tcp_rx_conn_t *conn, *conn_tmp;
    uct_tcp_ep_t *ep, *tmp;

    iface->idle_polls = 0;
    if ((now < iface->stall_check_ns) || (iface->unacked_max_ms == 0)) {
        return;
    }
    iface->stall_check_ns = now + UCT_TCP_STALL_CHECK_NS;
    ucs_list_for_each_safe(ep, tmp, &iface->eps, list)
    {
        /* Data waiting to go, or gets waiting for their data: if the peer
         * acknowledges nothing of ours, the path is gone. */
        if (uct_tcp_ep_is_tx_stalled(ep) || uct_tcp_get_outstanding(&ep->get)) {
            /* a failure goes to failed_eps, reported below in progress */
            (void)uct_tcp_ep_check_peer(ep);
        }
    }
    ucs_list_for_each_safe(conn, conn_tmp, &iface->rx_conns, list)
    {
        if (!ucs_queue_is_empty(&conn->responses)) {
            (void)uct_tcp_rx_conn_check_peer(conn);
        }
    }
}

static unsigned uct_tcp_iface_progress(uct_iface_h tl_iface)
{
    uct_tcp_iface_t *iface = uct_tcp_iface(tl_iface);
    struct epoll_event events[UCT_TCP_MAX_EVENTS];
    unsigned count = 0, gen;
    uct_tcp_watch_t *watch;
    int i, n;

    n = epoll_wait(iface->epfd, events, UCT_TCP_MAX_EVENTS, 0);
    if (ucs_unlikely(n < 0)) {
        if (errno != EINTR) {
            ucs_warn_once("tcp: epoll_wait(fd %d) failed: %s", iface->epfd,
                          strerror(errno));
        }
        n = 0;
    }

    gen = iface->destroy_gen;
    for (i = 0; i < n; ++i) {
        watch = events[i].data.ptr;
        switch (watch->kind) {
        case UCT_TCP_WATCH_RX:
            count += uct_tcp_rx_conn_handle_events(
                    ucs_container_of(watch, uct_tcp_rx_conn_t, watch), events[i].events);
            break;
        case UCT_TCP_WATCH_EP:
            count += uct_tcp_ep_handle_events(
                    ucs_container_of(watch, uct_tcp_ep_t, watch), events[i].events);
            break;
        case UCT_TCP_WATCH_LISTENER:
            count += uct_tcp_conn_accept(iface);
            break;
        }

        /* Something was destroyed: the remaining events may point at freed
         * memory. They are level-triggered, so the next call sees them. */
        if (iface->destroy_gen != gen) {
            break;
        }
    }

    if ((n == 0) && ucs_unlikely(++iface->idle_polls >= UCT_TCP_STALL_POLLS)) {
        uct_tcp_iface_check_stalled(iface);
    }
    if (ucs_unlikely(!ucs_list_is_empty(&iface->failed_eps))) {
        count += uct_tcp_iface_report_failures(iface);
    }
    uct_base_iface_set_idle(&iface->super, uct_tcp_iface_is_idle(iface));
    return count;
}

static ucs_status_t uct_tcp_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    *fd_p = uct_tcp_iface(tl_iface)->epfd;
    return UCS_OK;
}

/* The epoll set is level-triggered, so anything already readable keeps the
 * fd readable: only failures waiting to be reported need a nudge. */
static ucs_status_t uct_tcp_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    uct_tcp_iface_t *iface = uct_tcp_iface(tl_iface);

    /* The caller sleeps on the epoll fd next: when it wakes, a connection
     * is waiting and the following progress must look. */
    uct_base_iface_set_idle(&iface->super, 0);
    return ucs_list_is_empty(&iface->failed_eps) ? UCS_OK : UCS_ERR_BUSY;
}

static ucs_status_t uct_tcp_iface_flush_cancel(uct_tcp_iface_t *iface)
{
    uct_tcp_ep_t *ep, *tmp;

    ucs_list_for_each_safe(ep, tmp, &iface->eps, list) {
        uct_tcp_ep_flush(&ep->super.super, UCT_FLUSH_FLAG_CANCEL, NULL);
    }
    return UCS_OK;
}

/*
 * Every ep with a message in flight completes the flush once; the caller's
 * count is raised so that @a comp runs after the last of them. Requests are
 * allocated up front, so a failure leaves nothing half-queued.
 */
static ucs_status_t uct_tcp_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                        uct_completion_t *comp)
{
    uct_tcp_iface_t *iface = uct_tcp_iface(tl_iface);
    uct_tcp_ep_flush_req_t *req;
    ucs_queue_head_t reqs;
    unsigned busy = 0, i;
    uct_tcp_ep_t *ep;

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        return uct_tcp_iface_flush_cancel(iface);
    }

    ucs_list_for_each(ep, &iface->eps, list) {
        busy += uct_tcp_ep_flush_needed(ep);
    }
    if (busy == 0) {
        return UCS_OK;
    }
    if (comp == NULL) {
        return UCS_INPROGRESS;
    }

    ucs_queue_head_init(&reqs);
    for (i = 0; i < busy; ++i) {
        req = malloc(sizeof(*req));
        if (req == NULL) {
            while (!ucs_queue_is_empty(&reqs)) {
                free(ucs_queue_pull_elem_non_empty(&reqs, uct_tcp_ep_flush_req_t,
                                                   queue));
            }
            return UCS_ERR_NO_MEMORY;
        }
        req->comp = comp;
        ucs_queue_push(&reqs, &req->queue);
    }

    comp->count += (int)busy - 1;
    ucs_list_for_each(ep, &iface->eps, list) {
        if (uct_tcp_ep_flush_needed(ep)) {
            req = ucs_queue_pull_elem_non_empty(&reqs, uct_tcp_ep_flush_req_t, queue);
            uct_tcp_ep_flush_push(ep, req);
        }
    }
    return UCS_INPROGRESS;
}

static ucs_status_t uct_tcp_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    return UCS_OK; /* every connection delivers in order */
}

static ucs_status_t uct_tcp_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *attr)
{
    uct_tcp_iface_t *iface = uct_tcp_iface(tl_iface);

    uct_base_iface_query(&iface->super, attr);

    /* Active messages, and get zcopy served by the peer's progress on the
     * reverse direction of the connection (tcp_get.h). No put: a get lets
     * the reader place the data, so one protocol covers large messages. */
    attr->cap.am.max_short       = iface->max_short;
    attr->cap.am.max_bcopy       = iface->seg_size;
    attr->cap.am.min_zcopy       = 0;
    attr->cap.am.max_zcopy       = iface->max_zcopy;
    attr->cap.am.opt_zcopy_align = 1;
    attr->cap.am.align_mtu       = 1;
    attr->cap.am.max_hdr         = UCT_TCP_MAX_ZCOPY_HDR;
    attr->cap.am.max_iov         = UCT_TCP_MAX_ZCOPY_IOV;

    attr->cap.get.max_zcopy       = SIZE_MAX;
    attr->cap.get.min_zcopy       = 0;
    attr->cap.get.opt_zcopy_align = 1;
    attr->cap.get.align_mtu       = 1;
    attr->cap.get.max_iov         = 1;

    attr->cap.flags = UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY |
                      UCT_IFACE_FLAG_AM_ZCOPY | UCT_IFACE_FLAG_GET_ZCOPY |
                      UCT_IFACE_FLAG_PENDING |
                      UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                      UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                      UCT_IFACE_FLAG_CB_SYNC;
    attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                            UCT_IFACE_FLAG_EVENT_RECV | UCT_IFACE_FLAG_EVENT_FD;

    attr->device_addr_len = sizeof(uct_tcp_device_addr_t);
    attr->iface_addr_len  = sizeof(uct_tcp_iface_addr_t);
    attr->ep_addr_len     = 0;

    attr->overhead            = UCT_TCP_OVERHEAD;
    attr->latency             = ucs_linear_func_make(UCT_TCP_LATENCY, 0);
    attr->bandwidth.dedicated = iface->bandwidth;
    attr->bandwidth.shared    = 0;
    return UCS_OK;
}

static ucs_status_t uct_tcp_iface_get_device_address(uct_iface_h tl_iface,
                                                     uct_device_addr_t *addr)
{
    uct_tcp_iface_t *iface = uct_tcp_iface(tl_iface);
    uct_tcp_device_addr_t dev_addr;

    memset(&dev_addr, 0, sizeof(dev_addr));
    dev_addr.version     = UCT_TCP_WIRE_VERSION;
    uct_tcp_sockaddr_to_wire(&iface->addr, &dev_addr.family, dev_addr.addr);
    dev_addr.loopback_id = htole64(uct_tcp_netif_loopback_id());
    memcpy(addr, &dev_addr, sizeof(dev_addr));
    return UCS_OK;
}

static ucs_status_t uct_tcp_iface_get_address(uct_iface_h tl_iface,
                                              uct_iface_addr_t *addr)
{
    uct_tcp_iface_t *iface = uct_tcp_iface(tl_iface);
    uct_tcp_iface_addr_t iface_addr;

    memset(&iface_addr, 0, sizeof(iface_addr));
    iface_addr.version = UCT_TCP_WIRE_VERSION;
    iface_addr.port    = uct_tcp_sockaddr_port(&iface->addr);
    memcpy(addr, &iface_addr, sizeof(iface_addr));
    return UCS_OK;
}

/*
 * A loopback iface reaches only loopback addresses of the same host and
 * network namespace; a network device reaches the unicast addresses of its
 * own family that the kernel routes out of it (UCX_TCP_ROUTE_CHECK). A host
 * with both families thus pairs an IPv4 iface with the peer's IPv4 one and
 * an IPv6 iface with its IPv6 one, and a host with two networks each iface
 * with the peer's address on its own network.
 */
static int uct_tcp_iface_is_reachable(const uct_iface_h tl_iface,
                                      const uct_device_addr_t *dev_addr,
                                      const uct_iface_addr_t *iface_addr)
{
    uct_tcp_iface_t *iface = uct_tcp_iface(tl_iface);
    uct_tcp_device_addr_t peer;
    uct_tcp_sockaddr_t peer_sa;
    int local_lo;

    if (dev_addr == NULL) {
        return 0;
    }
    memcpy(&peer, dev_addr, sizeof(peer)); /* the blob may be unaligned */
    if ((uct_tcp_device_addr_unpack(&peer, uct_tcp_iface_scope_id(iface), &peer_sa) !=
         UCS_OK) ||
        ((iface_addr != NULL) &&
         (uct_tcp_iface_addr_check((const uct_tcp_iface_addr_t *)iface_addr) !=
          UCS_OK)) ||
        (peer_sa.sa.sa_family != iface->addr.sa.sa_family)) {
        return 0;
    }

    local_lo = uct_tcp_sockaddr_is_loopback(&iface->addr);
    if (local_lo != uct_tcp_sockaddr_is_loopback(&peer_sa)) {
        return 0;
    }
    if (local_lo) {
        return le64toh(peer.loopback_id) == uct_tcp_netif_loopback_id();
    }
    return !iface->route_check ||
           uct_tcp_netif_routes_via(iface->dev_name, &iface->addr, &peer_sa);
}

/* Room for the largest frame built in place (a bcopy segment, or a zcopy
 * frame header with its user header; the hello fits in either) and for a
 * receive ring of one segment. */
static ucs_status_t uct_tcp_iface_seg_mp_init(uct_tcp_iface_t *iface)
{
    ucs_mpool_params_t params;

    ucs_mpool_params_reset(&params);
    params.obj_size       = sizeof(uct_tcp_frame_hdr_t) +
                            uct_tcp_frame_padded(iface->seg_size) + UCT_TCP_MAX_ZCOPY_HDR;
    params.objs_per_chunk = 1;
    params.name           = "tcp_seg";
    return ucs_mpool_init(&iface->seg_mp, &params);
}

static void uct_tcp_iface_close(uct_iface_h tl_iface)
{
    uct_tcp_iface_t *iface = uct_tcp_iface(tl_iface);
    uct_tcp_rx_conn_t *conn, *tmp_conn;
    uct_tcp_ep_t *ep, *tmp_ep;

    ucs_list_for_each_safe(ep, tmp_ep, &iface->eps, list) {
        ucs_warn("tcp iface %p: ep %p was not destroyed before the iface was "
                 "closed", (void*)iface, (void*)ep);
        uct_tcp_ep_destroy(&ep->super.super);
    }
    ucs_list_for_each_safe(conn, tmp_conn, &iface->rx_conns, list) {
        uct_tcp_rx_conn_destroy(conn);
    }
    ucs_mpool_cleanup(&iface->seg_mp);

    uct_base_iface_cleanup(&iface->super);
    uct_tcp_iface_watch_close(iface, &iface->listener);
    close(iface->epfd);
    ucs_debug("tcp iface %p on %s closed", (void*)iface, iface->dev_name);
    free(iface);
}

static const uct_iface_ops_t uct_tcp_iface_ops = {
    .ep_am_short              = uct_tcp_ep_am_short,
    .ep_am_bcopy              = uct_tcp_ep_am_bcopy,
    .ep_am_zcopy              = uct_tcp_ep_am_zcopy,
    .ep_get_zcopy             = uct_tcp_ep_get_zcopy,
    .ep_pending_add           = uct_tcp_ep_pending_add,
    .ep_pending_purge         = uct_tcp_ep_pending_purge,
    .ep_flush                 = uct_tcp_ep_flush,
    .ep_fence                 = uct_tcp_ep_fence,
    .ep_create                = uct_tcp_ep_create,
    .ep_destroy               = uct_tcp_ep_destroy,
    .iface_flush              = uct_tcp_iface_flush,
    .iface_fence              = uct_tcp_iface_fence,
    .iface_progress           = uct_tcp_iface_progress,
    .iface_event_fd_get       = uct_tcp_iface_event_fd_get,
    .iface_event_arm          = uct_tcp_iface_event_arm,
    .iface_close              = uct_tcp_iface_close,
    .iface_query              = uct_tcp_iface_query,
    .iface_get_device_address = uct_tcp_iface_get_device_address,
    .iface_get_address        = uct_tcp_iface_get_address,
    .iface_is_reachable       = uct_tcp_iface_is_reachable
    /* put/get, ep_get_address, ep_connect_to_ep: unsupported (base stubs) */
};

/* "0" (any port), "<port>", or "<first>-<last>". */
static ucs_status_t uct_tcp_iface_parse_port_range(const char *str, unsigned *min_p,
                                                   unsigned *max_p)
{
    unsigned long first, last;
    char *end;

    if ((str == NULL) || (*str == '\0')) {
        goto err;
    }

    errno = 0;
    first = strtoul(str, &end, 10);
    last  = first;
    if (*end == '-') {
        last = strtoul(end + 1, &end, 10);
    }
    if ((errno != 0) || (*end != '\0') || (last > 65535) || (first > last) ||
        ((first == 0) && (last != 0))) {
        goto err;
    }

    *min_p = (unsigned)first;
    *max_p = (unsigned)last;
    return UCS_OK;

err:
    ucs_error("UCX_TCP_PORT_RANGE=%s is invalid: expected 0 (any port), a port, "
              "or first-last with 1 <= first <= last <= 65535", str ? str : "");
    return UCS_ERR_INVALID_PARAM;
}

static ucs_status_t uct_tcp_iface_check_config(const uct_tcp_iface_config_t *config)
{
    if ((config->super.max_bcopy < UCT_TCP_MIN_SEG_SIZE) ||
        (config->super.max_bcopy > UCT_TCP_MAX_SEG_SIZE)) {
        ucs_error("UCX_TCP_SEG_SIZE=%zu is out of range [%d, %lu]",
                  config->super.max_bcopy, UCT_TCP_MIN_SEG_SIZE, UCT_TCP_MAX_SEG_SIZE);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->max_zcopy == 0) ||
        (config->max_zcopy > UCT_TCP_MAX_FRAME_LEN - UCT_TCP_MAX_ZCOPY_HDR)) {
        ucs_error("UCX_TCP_MAX_ZCOPY=%zu is out of range [1, %lu]", config->max_zcopy,
                  UCT_TCP_MAX_FRAME_LEN - UCT_TCP_MAX_ZCOPY_HDR);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

static ucs_status_t uct_tcp_iface_open(uct_md_h md, uct_worker_h worker,
                                       const uct_iface_params_t *params,
                                       const uct_iface_config_t *tl_config,
                                       uct_iface_h *iface_p)
{
    const uct_tcp_iface_config_t *config = ucs_container_of(tl_config,
                                                            uct_tcp_iface_config_t,
                                                            super);
    const char *dev_name = params->device.dev_name;
    unsigned port_min, port_max;
    uct_tcp_iface_t *iface;
    uint16_t port;
    char str[UCT_TCP_SOCKADDR_STRLEN];
    ucs_status_t status;

    status = uct_tcp_iface_parse_port_range(config->port_range, &port_min, &port_max);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_tcp_iface_check_config(config);
    if (status != UCS_OK) {
        return status;
    }

    iface = calloc(1, sizeof(*iface));
    if (iface == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    snprintf(iface->dev_name, sizeof(iface->dev_name), "%s", dev_name);
    status = uct_tcp_netif_addr(
        dev_name, &ucs_container_of(md, uct_tcp_md_t, super)->af_prio, &iface->addr);
    if (status != UCS_OK) {
        ucs_error("tcp: device '%s' is unknown, down, or has no address of the "
                  "families in UCX_TCP_AF_PRIO",
                  dev_name);
        goto err_free;
    }

    iface->sock_opts.sndbuf  = (config->sndbuf == UCS_MEMUNITS_AUTO) ? 0 : config->sndbuf;
    iface->sock_opts.rcvbuf  = (config->rcvbuf == UCS_MEMUNITS_AUTO) ? 0 : config->rcvbuf;
    iface->sock_opts.nodelay = config->nodelay;
    iface->route_check       = config->route_check;
    status = uct_tcp_iface_keepalive_init(iface, config);
    if (status != UCS_OK) {
        goto err_free;
    }
    iface->seg_size          = config->super.max_bcopy;
    iface->max_short         = (iface->seg_size < UCT_TCP_MAX_SHORT) ?
                               iface->seg_size : UCT_TCP_MAX_SHORT;
    iface->max_zcopy         = config->max_zcopy;
    iface->bandwidth         = uct_tcp_netif_bandwidth(dev_name);
    if (iface->bandwidth == 0) {
        iface->bandwidth = UCT_TCP_DEFAULT_BANDWIDTH;
    }
    iface->release_desc.release = uct_tcp_rx_desc_release;
    iface->listener.fd          = -1;
    iface->listener.kind        = UCT_TCP_WATCH_LISTENER;
    ucs_list_head_init(&iface->eps);
    ucs_list_head_init(&iface->rx_conns);
    ucs_list_head_init(&iface->failed_eps);

    status = uct_tcp_iface_seg_mp_init(iface);
    if (status != UCS_OK) {
        goto err_free;
    }

    iface->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (iface->epfd < 0) {
        ucs_error("tcp: epoll_create1() failed: %s", strerror(errno));
        status = UCS_ERR_IO_ERROR;
        goto err_cleanup_mp;
    }

    /* Bound to the device's address only: nothing else of this host is
     * exposed, and traffic for this iface arrives through its device. */
    status = uct_tcp_sock_listen(&iface->addr, port_min, port_max, &iface->sock_opts,
                                 &iface->listener.fd, &port);
    if (status != UCS_OK) {
        goto err_close_epfd;
    }
    uct_tcp_sockaddr_set_port(&iface->addr, htons(port));

    status = uct_tcp_iface_watch_add(iface, &iface->listener, EPOLLIN);
    if (status != UCS_OK) {
        goto err_close_listener;
    }

    status = uct_base_iface_init(&iface->super, &uct_tcp_iface_ops, md, worker,
                                 params, tl_config);
    if (status != UCS_OK) {
        goto err_close_listener;
    }

    ucs_debug("tcp iface %p on %s listening on %s", (void*)iface, dev_name,
              uct_tcp_sockaddr_str(&iface->addr, str, sizeof(str)));
    *iface_p = &iface->super.super;
    return UCS_OK;

err_close_listener:
    uct_tcp_iface_watch_close(iface, &iface->listener);
err_close_epfd:
    close(iface->epfd);
err_cleanup_mp:
    ucs_mpool_cleanup(&iface->seg_mp);
err_free:
    free(iface);
    return status;
}

static uct_tl_t uct_tcp_tl = {
    .name          = UCT_TCP_NAME,
    .query_devices = uct_tcp_query_devices,
    .iface_open    = uct_tcp_iface_open,
    .config        = &uct_tcp_iface_config_entry
};
UCT_TL_REGISTER(&uct_tcp_component, &uct_tcp_tl)
