/**
 * @file tcp_iface.h
 * The tcp iface: one listening socket on one device's IP address (IPv4 or
 * IPv6, whichever UCX_TCP_AF_PRIO puts first among the device's), an
 * epoll set over every socket of the iface, and the lists of its endpoints
 * (connections it opened, used to send) and receive connections (accepted
 * from peers, used to receive).
 *
 * Each direction between two ifaces is its own TCP connection: an ep writes
 * frames, the peer's iface accepts the connection and reads them. This keeps
 * connection set-up free of races between two sides connecting at once. The
 * reverse direction carries only the answers to the ep's get requests
 * (tcp_get.h). A peer's failure shows up on the ep's socket as end of stream
 * or a reset.
 *
 * Progress (uct_iface_progress / uct_worker_progress) polls the epoll set
 * without blocking and handles what is ready: accepts, received frames,
 * connection completion, writability for queued data and pending requests.
 * While the iface has no connection at all it tells the worker it is idle
 * (uct_base_iface_set_idle()): the worker then polls it only one round in
 * UCT_WORKER_IDLE_POLL_PERIOD, so an unused tcp costs neither a system call
 * nor a call on the progress path. The epoll descriptor is the iface's
 * event fd for blocking waits; arming it makes the next progress poll at
 * once.
 *
 * Capabilities: active messages (short, bcopy, zcopy), get zcopy of memory
 * registered with the tcp md, pending queue, peer-failure handling,
 * connect-to-iface, event fd. A get is served by the peer's progress.
 *
 * Thread safety: none; calls on an iface and its eps are serialised by the
 * caller.
 */
#ifndef UCT_TCP_IFACE_H_
#define UCT_TCP_IFACE_H_

#include "tcp_sock.h"

#include <uct/base/uct_iface.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/mpool.h>

#include <netinet/in.h>
#include <stdint.h>

BEGIN_C_DECLS

/** Largest header of am_zcopy (user header bytes in front of the iov data). */
#define UCT_TCP_MAX_ZCOPY_HDR   256

/** Largest number of iov elements (blocks, counting uct_iov_t::count) of am_zcopy. */
#define UCT_TCP_MAX_ZCOPY_IOV   16

/** Largest am_short (8-byte header + payload): beyond, am_bcopy costs the same. */
#define UCT_TCP_MAX_SHORT       8192

/** Events handled per epoll_wait() in one progress call. */
#define UCT_TCP_MAX_EVENTS      16

/**
 * An iface with no connection has only its listener to watch, and nobody
 * waits on a connection being accepted a few microseconds late: its
 * progress polls once per this many calls (a power of two). A process whose
 * peers are all reached over shared memory thus pays about one load and
 * one branch per progress call for having tcp open.
 */

/** What a socket watched by the iface's epoll set is. */
typedef enum {
    UCT_TCP_WATCH_LISTENER, /**< the listening socket: accept */
    UCT_TCP_WATCH_EP,       /**< an ep's socket (uct_tcp_ep_t) */
    UCT_TCP_WATCH_RX        /**< an accepted socket (uct_tcp_rx_conn_t) */
} uct_tcp_watch_kind_t;

/**
 * A socket in the iface's epoll set. Embedded in its owner; the epoll data
 * points here and @a kind says which container_of() to take.
 */
typedef struct uct_tcp_watch {
    int                  fd;     /**< -1 when closed */
    uint32_t             events; /**< EPOLL* interest now registered */
    uct_tcp_watch_kind_t kind;
} uct_tcp_watch_t;

/** Options of the tcp transport (UCX_TCP_*). */
typedef struct uct_tcp_iface_config {
    uct_iface_config_t super;      /**< super.max_bcopy is UCX_TCP_SEG_SIZE */
    char               *port_range; /**< "0", "<port>" or "<first>-<last>" */
    size_t             sndbuf;     /**< UCS_MEMUNITS_AUTO: kernel default */
    size_t             rcvbuf;     /**< UCS_MEMUNITS_AUTO: kernel default */
    int                nodelay;
    int route_check; /**< pair only with peers routed via us */
    size_t             max_zcopy;
    double             keepidle;   /**< s; UCS_CONFIG_TIME_INF: off */
    double             keepintvl;  /**< s */
    unsigned           keepcnt;
} uct_tcp_iface_config_t;

typedef struct uct_tcp_iface {
    uct_base_iface_t    super;
    char                dev_name[UCT_DEVICE_NAME_MAX];
    uct_tcp_sockaddr_t addr;         /**< device address and listening port */
    int                 epfd;        /**< epoll set; also the event fd */
    uct_tcp_watch_t     listener;
    uct_tcp_sock_opts_t sock_opts;
    unsigned            unacked_max_ms; /**< data unacknowledged this long
                                             fails the ep; 0: never */
    size_t              seg_size;    /**< am_bcopy payload limit, tx buffer */
    size_t              max_short;   /**< am_short limit, 8-byte header included */
    size_t              max_zcopy;
    double              bandwidth;   /**< bytes/second for iface_query */
    int route_check;                 /**< UCX_TCP_ROUTE_CHECK */
    uct_recv_desc_t     release_desc; /**< frees kept large-frame descriptors */
    ucs_list_link_t     eps;         /**< uct_tcp_ep_t::list */
    ucs_list_link_t     rx_conns;    /**< uct_tcp_rx_conn_t::list */
    ucs_list_link_t     failed_eps;  /**< eps whose failure is not reported yet */
    /** Bumped whenever an ep or receive connection is destroyed, so that
     *  progress notices that events it already fetched may be stale. */
    unsigned            destroy_gen;
    /** Progress calls that found nothing to do since the last look at the
     *  clock for senders whose socket does not drain. */
    unsigned idle_polls;
    uint64_t stall_check_ns; /**< next look at stalled senders */
    /** The ep whose pending queue is being dispatched: its queued requests
     *  may send although the queue is not empty. */
    struct uct_tcp_ep   *dispatching_ep;
    /**
     * Segment buffers (frame header, one segment, a zcopy user header)
     * shared by the eps and receive connections: an ep holds one only while
     * a message of its own is partly sent, a receive connection only while
     * it has bytes of an incomplete frame, so idle peers cost no segment
     * memory however many there are. One buffer per chunk: the pool grows
     * to the most connections mid-message at once, never by 64 segments.
     */
    ucs_mpool_t         seg_mp;
} uct_tcp_iface_t;

/**
 * The rule of a peer check, for a socket with data of ours on it: the peer
 * has acknowledged nothing for UCX_TCP_KEEPIDLE + KEEPINTVL * KEEPCNT, seen
 * at two looks at least KEEPINTVL apart (so one lost segment after a long
 * idle time is not taken for a dead path). @a since_ns keeps the first look
 * that saw data stuck (0: none).
 * @return the milliseconds unacknowledged when the peer counts as gone, else 0.
 */
unsigned uct_tcp_iface_peer_silent(uct_tcp_iface_t *iface, int fd, uint64_t *since_ns);

/** Give back a segment buffer of iface->seg_mp (NULL is ignored). */
static inline void uct_tcp_iface_seg_put(uint8_t *buf)
{
    if (buf != NULL) {
        ucs_mpool_put(buf);
    }
}

/** Start watching @a watch->fd for @a events. @return UCS_OK or UCS_ERR_IO_ERROR. */
ucs_status_t uct_tcp_iface_watch_add(uct_tcp_iface_t *iface, uct_tcp_watch_t *watch,
                                     uint32_t events);

/** Change the events of a watched socket (no system call when unchanged). */
ucs_status_t uct_tcp_iface_watch_set(uct_tcp_iface_t *iface, uct_tcp_watch_t *watch,
                                     uint32_t events);

/** Stop watching and close the socket; @a watch->fd becomes -1. Idempotent. */
void uct_tcp_iface_watch_close(uct_tcp_iface_t *iface, uct_tcp_watch_t *watch);

/** The iface of a uct_iface_h. */
static inline uct_tcp_iface_t *uct_tcp_iface(uct_iface_h tl_iface)
{
    return ucs_container_of(tl_iface, uct_tcp_iface_t, super.super);
}

/** Interface index that gives a link-local IPv6 peer its meaning: the one
 * the iface listens on (0 for any other address). */
static inline uint32_t uct_tcp_iface_scope_id(const uct_tcp_iface_t *iface)
{
    return (iface->addr.sa.sa_family == AF_INET6) ? iface->addr.in6.sin6_scope_id : 0;
}

END_C_DECLS

#endif
