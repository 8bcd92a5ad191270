/**
 * @file mm_iface.h
 * The posix shared-memory transport: iface (receive side) and ep (send side)
 * objects, their addresses and options.
 *
 * An iface owns one receive FIFO (mm_fifo.h) in a memfd segment (mm_seg.h);
 * an ep maps the FIFO of a peer iface and writes messages into it. Every
 * operation completes before it returns (the data is in the peer's memory),
 * so flush only has to check that the peer is still there.
 *
 * Peer failure: a sender cannot see a dead receiver in the FIFO itself, so
 * when the FIFO stays full (send slow path, pending progress), on flush and
 * on UCT_SEND_FLAG_PEER_CHECK, the ep asks the kernel whether the owner
 * process still runs (pidfd) and reads the "closed" mark an owner leaves
 * when it closes its iface. A failed ep returns UCS_ERR_ENDPOINT_TIMEOUT
 * (owner process gone) or UCS_ERR_CONNECTION_RESET (owner closed its iface)
 * from every operation, and the iface error handler is called for it from
 * the next progress.
 *
 * Threading: as for every uct iface, calls on an iface and its eps are
 * serialised by the caller; other processes touch only the shared segment.
 */
#ifndef UCT_MM_IFACE_H_
#define UCT_MM_IFACE_H_

#include "mm_fifo.h"
#include "mm_seg.h"

#include <uct/base/uct_iface.h>
#include <ucs/datastruct/list.h>

#include <sys/socket.h>
#include <sys/un.h>

BEGIN_C_DECLS

#define UCT_MM_TL_NAME       "posix"
#define UCT_MM_DEVICE_NAME   "memory"
#define UCT_MM_MAX_IOV       16
/** Largest header of am_zcopy; max_zcopy leaves room for it in a buffer. */
#define UCT_MM_AM_MAX_HDR    128
/** Largest FIFO segment a sender agrees to map (garbage addresses). */
#define UCT_MM_FIFO_MAX_TOTAL (1ull << 36)

/** Transport options (UCX_POSIX_*). */
typedef struct uct_mm_iface_config {
    uct_iface_config_t super;      /**< super.max_bcopy: UCX_POSIX_SEG_SIZE */
    unsigned           fifo_size;  /**< UCX_POSIX_FIFO_SIZE */
    size_t             elem_size;  /**< UCX_POSIX_FIFO_ELEM_SIZE */
    unsigned           max_poll;   /**< UCX_POSIX_RX_MAX_POLL */
    unsigned           hold_bufs;  /**< UCX_POSIX_RX_HOLD_BUFS */
    double             peer_check_interval; /**< UCX_POSIX_PEER_CHECK_INTERVAL, s */
    size_t             bandwidth;  /**< UCX_POSIX_BW, bytes/s or auto */
} uct_mm_iface_config_t;

/** Device address: which kernel instance and PID namespace we run in. */
typedef struct UCS_S_PACKED uct_mm_device_addr {
    uint8_t node_id[16];
    uint64_t pid_ns;
} uct_mm_device_addr_t;

#define UCT_MM_IFACE_ADDR_VERSION 1u

/** Iface address: enough to attach the FIFO (see uct_mm_seg_attach()). */
typedef struct UCS_S_PACKED uct_mm_iface_addr {
    uint8_t  version;  /**< UCT_MM_IFACE_ADDR_VERSION */
    uint8_t  reserved[3];
    uint32_t pid;      /**< owner */
    int32_t  fd;       /**< owner's descriptor of the FIFO memfd */
    uint32_t reserved2;
    uint64_t inode;    /**< of the FIFO memfd */
} uct_mm_iface_addr_t;

/** Receive side: the FIFO this process owns. */
typedef struct uct_mm_iface {
    uct_base_iface_t   super;

    /* Receive fast path. */
    uct_mm_fifo_ctl_t  *ctl;
    void               *elems;
    char               *seg_base;
    uint64_t           tail;       /**< next ticket to deliver */
    uint64_t           fifo_mask;
    unsigned           elem_shift;
    unsigned           max_poll;
    size_t             max_inline; /**< data bytes an element holds */
    size_t             seg_size;   /**< data bytes a buffer holds */
    uint64_t           *buf_offsets; /**< private copy of each element's buffer */
    int                armed;      /**< we armed: progress takes its slow path once */

    /* Buffers am handlers may keep (UCT_CB_PARAM_FLAG_DESC). */
    uint64_t           *spare_offsets; /**< data offsets of free spare buffers */
    unsigned           spare_count;
    unsigned           hold_bufs;      /**< capacity of spare_offsets */
    uct_recv_desc_t    release_desc;   /**< uct_iface_release_desc() lands here */

    ucs_list_link_t    eps;         /**< uct_mm_ep_t::list */
    ucs_list_link_t    pending_eps; /**< eps with queued requests */
    ucs_list_link_t    failed_eps;  /**< eps whose failure is not yet reported */

    uct_mm_seg_t       seg;
    int                signal_fd;   /**< bound datagram socket: the event fd */
    int                send_fd;     /**< unbound datagram socket to wake peers */
    struct sockaddr_un self_addr;   /**< signal_fd's name, to wake ourselves */
    socklen_t self_addrlen;
    uint64_t           peer_check_interval_ns;
    double             bandwidth;
    char               *put_bounce; /**< put_bcopy near the end of a region */
    uct_mm_device_addr_t dev_addr;
} uct_mm_iface_t;

/**
 * Wake whoever sleeps on this iface's event fd after arming it, when work
 * that only progress can do appeared meanwhile (another thread's send left
 * requests pending): no peer would signal for it.
 */
void uct_mm_iface_wake_self(uct_mm_iface_t *iface);

/** Send side: a mapping of a peer's FIFO. */
typedef struct uct_mm_ep {
    uct_base_ep_t      super;

    /* Send fast path; geometry is copied from the peer at connect time and
     * never read from shared memory again. */
    uct_mm_fifo_ctl_t  *ctl;
    void               *elems;
    char               *seg_base;
    uint64_t           cached_tail;   /**< last tail seen; poisoned on failure */
    uint64_t           fifo_mask;
    uint64_t           fifo_size;
    unsigned           elem_shift;
    size_t             max_inline;
    size_t             seg_size;
    uint64_t           bufs_offset;   /**< valid buffer offsets: */
    uint64_t           bufs_span;     /**< bufs_offset .. bufs_offset + bufs_span,
                                           seg_size bytes fit after each */

    ucs_status_t       status;        /**< UCS_OK, or why the ep failed */
    uct_pending_queue_t pending;
    ucs_list_link_t    list;          /**< in uct_mm_iface_t::eps */
    ucs_list_link_t    pending_link;  /**< in pending_eps while in_pending */
    ucs_list_link_t    failed_link;   /**< in failed_eps while in_failed */
    int                in_pending;
    int                in_failed;
    uct_mm_peer_t      peer;
    uint64_t           next_check_ns;
    struct sockaddr_un signal_addr;
    socklen_t          signal_addrlen;
    uct_mm_seg_t       seg;
} uct_mm_ep_t;

/** The iface of an ep. */
static inline uct_mm_iface_t *uct_mm_ep_iface(const uct_mm_ep_t *ep)
{
    return (uct_mm_iface_t*)ep->super.super.iface;
}

/* Endpoint operations (mm_ep.c), installed in the iface ops table. */

/** uct_ep_create(): attach the FIFO named by params->iface_addr. */
ucs_status_t uct_mm_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p);
/** uct_ep_destroy(): drops queued requests without calling them. */
void uct_mm_ep_destroy(uct_ep_h tl_ep);
ucs_status_t uct_mm_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                const void *payload, unsigned length);
ssize_t uct_mm_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id, uct_pack_callback_t pack_cb,
                           void *arg, unsigned flags);
/** A copy into the peer's buffer: completes at once (UCS_OK, comp unused). */
ucs_status_t uct_mm_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                                unsigned header_length, const uct_iov_t *iov,
                                size_t iovcnt, unsigned flags, uct_completion_t *comp);
ucs_status_t uct_mm_ep_put_short(uct_ep_h tl_ep, const void *buffer, unsigned length,
                                 uint64_t remote_addr, uct_rkey_t rkey);
ssize_t uct_mm_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb, void *arg,
                            uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_mm_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                 uint64_t remote_addr, uct_rkey_t rkey,
                                 uct_completion_t *comp);
ucs_status_t uct_mm_ep_get_bcopy(uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb,
                                 void *arg, size_t length, uint64_t remote_addr,
                                 uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_mm_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                 uint64_t remote_addr, uct_rkey_t rkey,
                                 uct_completion_t *comp);
/** UCS_ERR_BUSY when the peer FIFO has room now (send instead). */
ucs_status_t uct_mm_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                   unsigned flags);
void uct_mm_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                             void *arg);
/** UCS_OK when the peer is alive and nothing waits; NO_RESOURCE with pending. */
ucs_status_t uct_mm_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp);
ucs_status_t uct_mm_ep_fence(uct_ep_h tl_ep, unsigned flags);

/**
 * From iface progress: retry the queued requests of an ep whose FIFO was
 * full, or check its peer when it still is. May move the ep to failed_eps.
 * @return requests completed.
 */
unsigned uct_mm_ep_progress_pending(uct_mm_ep_t *ep);

/**
 * Check the peer of @a ep now (force) or when the check interval passed.
 * On failure marks the ep failed (see uct_mm_ep_set_failed()).
 * @return UCS_OK or the ep's failure status.
 */
ucs_status_t uct_mm_ep_check_peer(uct_mm_ep_t *ep, int force);

/** Memory bandwidth estimate for the performance model (measured once). */
double uct_mm_memcpy_bandwidth(void);

END_C_DECLS

#endif
