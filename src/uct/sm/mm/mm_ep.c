#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mm_iface.h"
#include "posix_md.h"

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>

#include <stdlib.h>
#include <string.h>

/* cached_tail of a failed ep: (head - poison) is >= 2^63 for every head, so
 * every send takes the slow path, which returns the failure. */
#define UCT_MM_EP_TAIL_POISON UCT_MM_FIFO_HEAD_ARMED

/* Bytes of the 8-byte active-message header of am_short. */
#define UCT_MM_AM_SHORT_HDR   sizeof(uint64_t)

/* ------------------------------------------------------------------------ */
/* Failure and peer checks (slow path)                                       */
/* ------------------------------------------------------------------------ */

/* Mark @a ep failed: every operation returns @a status from now on, and the
 * iface reports it to the error handler from its next progress. */
static void uct_mm_ep_set_failed(uct_mm_ep_t *ep, ucs_status_t status)
{
    uct_mm_iface_t *iface = uct_mm_ep_iface(ep);

    if (ep->status != UCS_OK) {
        return;
    }

    ucs_debug("posix: ep %p: peer pid %d is gone (%s)", (void*)ep, (int)ep->peer.pid,
              ucs_status_string(status));
    ep->status      = status;
    ep->cached_tail = UCT_MM_EP_TAIL_POISON;
    if (ep->in_pending) {
        ucs_list_del(&ep->pending_link);
        ep->in_pending = 0;
    }
    ucs_list_add_tail(&iface->failed_eps, &ep->failed_link);
    ep->in_failed = 1;
}

ucs_status_t uct_mm_ep_check_peer(uct_mm_ep_t *ep, int force)
{
    uct_mm_iface_t *iface = uct_mm_ep_iface(ep);
    uint64_t now;

    if (ep->status != UCS_OK) {
        return ep->status;
    }

    now = ucs_get_time_ns();
    if (!force && (now < ep->next_check_ns)) {
        return UCS_OK;
    }
    ep->next_check_ns = now + iface->peer_check_interval_ns;

    /* The owner marks its FIFO closed when it closes the iface; a killed
     * owner cannot, and the pidfd tells us instead. */
    if (__atomic_load_n(&ep->ctl->state, __ATOMIC_ACQUIRE) != UCT_MM_FIFO_STATE_OPEN) {
        uct_mm_ep_set_failed(ep, UCS_ERR_CONNECTION_RESET);
    } else if (!uct_mm_peer_is_alive(&ep->peer)) {
        uct_mm_ep_set_failed(ep, UCS_ERR_ENDPOINT_TIMEOUT);
    }
    return ep->status;
}

/* Re-read the receiver's tail. @return non-zero when ticket @a head fits. */
static int uct_mm_ep_refresh_tail(uct_mm_ep_t *ep, uint64_t head)
{
    ep->cached_tail = __atomic_load_n(&ep->ctl->tail, __ATOMIC_ACQUIRE);
    return ((head & UCT_MM_FIFO_HEAD_MASK) - ep->cached_tail) < ep->fifo_size;
}

/* The FIFO looked full: see whether it really is, and whether the peer is
 * still there to drain it. */
static UCS_F_NOINLINE ucs_status_t uct_mm_ep_fifo_full(uct_mm_ep_t *ep, uint64_t head)
{
    ucs_status_t status;

    if (ep->status != UCS_OK) {
        return ep->status;
    }
    if (uct_mm_ep_refresh_tail(ep, head)) {
        return UCS_OK;
    }
    status = uct_mm_ep_check_peer(ep, 0);
    return (status == UCS_OK) ? UCS_ERR_NO_RESOURCE : status;
}

/* Wake the receiver, which is blocked on its event fd. A full socket queue
 * means it has wake-ups already; nothing else can fail usefully here. */
static UCS_F_NOINLINE void uct_mm_ep_signal(uct_mm_ep_t *ep)
{
    char byte = 0;

    (void)sendto(uct_mm_ep_iface(ep)->send_fd, &byte, 1, MSG_DONTWAIT,
                 (const struct sockaddr*)&ep->signal_addr, ep->signal_addrlen);
}

/* ------------------------------------------------------------------------ */
/* Send fast path (protocol in mm_fifo.h)                                    */
/* ------------------------------------------------------------------------ */

/* Claim the next ticket of the peer FIFO. *head_p gets the head word as it
 * was claimed (ARMED bit included). */
static inline ucs_status_t uct_mm_ep_claim(uct_mm_ep_t *ep, uint64_t *head_p)
{
    uint64_t head = __atomic_load_n(&ep->ctl->head, __ATOMIC_RELAXED);
    ucs_status_t status;

    for (;;) {
        if (ucs_unlikely(((head & UCT_MM_FIFO_HEAD_MASK) - ep->cached_tail) >=
                         ep->fifo_size)) {
            status = uct_mm_ep_fifo_full(ep, head);
            if (status != UCS_OK) {
                return status;
            }
        }
        /* The claim that sees ARMED also clears it: that sender wakes the
         * receiver, later ones need not. The receiver stays armed until a
         * message comes, whatever it polls meanwhile (UCXX's asyncio loop
         * progresses after arming and then sleeps). */
        if (__atomic_compare_exchange_n(&ep->ctl->head, &head,
                                        (head + 1) & UCT_MM_FIFO_HEAD_MASK, 1,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            *head_p = head;
            return UCS_OK;
        }
    }
}

static inline uct_mm_fifo_elem_t *uct_mm_ep_elem(uct_mm_ep_t *ep, uint64_t head)
{
    return uct_mm_fifo_elem(ep->elems, head & UCT_MM_FIFO_HEAD_MASK, ep->fifo_mask,
                            ep->elem_shift);
}

/* Buffer of an element; NULL if the receiver wrote a bad offset. */
static inline void *uct_mm_ep_elem_buf(uct_mm_ep_t *ep, uct_mm_fifo_elem_t *elem)
{
    uint64_t offset = elem->buf_offset;

    if (ucs_unlikely((offset - ep->bufs_offset) > ep->bufs_span)) {
        return NULL;
    }
    return ep->seg_base + offset;
}

/* Make the element of ticket @a head visible to the receiver. */
static inline void uct_mm_ep_publish(uct_mm_ep_t *ep, uct_mm_fifo_elem_t *elem,
                                     uint64_t head)
{
    __atomic_store_n(&elem->seq, (head & UCT_MM_FIFO_HEAD_MASK) + 1,
                     __ATOMIC_RELEASE);
    if (ucs_unlikely(head & UCT_MM_FIFO_HEAD_ARMED)) {
        uct_mm_ep_signal(ep);
    }
}

/* A claimed ticket must always be published, or the FIFO stops behind it.
 * When the element's buffer is unusable (the peer corrupted its offset), it
 * is published with a length no element can hold, which the receiver drops. */
static UCS_F_NOINLINE void uct_mm_ep_publish_void(uct_mm_ep_t *ep,
                                                  uct_mm_fifo_elem_t *elem,
                                                  uint64_t head)
{
    ucs_error("posix: peer pid %d gave a bad buffer offset; message dropped",
              (int)ep->peer.pid);
    elem->length = UINT32_MAX;
    elem->am_id  = 0;
    elem->flags  = UCT_MM_FIFO_ELEM_INLINE;
    uct_mm_ep_publish(ep, elem, head);
}

ucs_status_t uct_mm_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                const void *payload, unsigned length)
{
    uct_mm_ep_t *ep = (uct_mm_ep_t*)tl_ep;
    uct_mm_fifo_elem_t *elem;
    ucs_status_t status;
    uint64_t head;
    char *data;

    if (ucs_unlikely((length + UCT_MM_AM_SHORT_HDR > ep->max_inline) ||
                     (id >= UCT_AM_ID_MAX))) {
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_mm_ep_claim(ep, &head);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    elem         = uct_mm_ep_elem(ep, head);
    data         = uct_mm_fifo_elem_data(elem);
    elem->length = (uint32_t)(length + UCT_MM_AM_SHORT_HDR);
    elem->am_id  = id;
    elem->flags  = UCT_MM_FIFO_ELEM_INLINE;
    memcpy(data, &header, UCT_MM_AM_SHORT_HDR);
    if (length > 0) { /* payload may be NULL then */
        memcpy(data + UCT_MM_AM_SHORT_HDR, payload, length);
    }
    uct_mm_ep_publish(ep, elem, head);
    return UCS_OK;
}

ssize_t uct_mm_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id, uct_pack_callback_t pack_cb,
                           void *arg, unsigned flags)
{
    uct_mm_ep_t *ep = (uct_mm_ep_t*)tl_ep;
    uct_mm_fifo_elem_t *elem;
    ucs_status_t status;
    uint64_t head;
    size_t length;
    void *buf;

    if (ucs_unlikely(id >= UCT_AM_ID_MAX)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (ucs_unlikely(flags & UCT_SEND_FLAG_PEER_CHECK)) {
        status = uct_mm_ep_check_peer(ep, 1);
        if (status != UCS_OK) {
            return status;
        }
    }
    /* UCT_SEND_FLAG_SIGNALED needs nothing: a receiver that waits on its
     * event fd is woken by every message (see mm_fifo.h). */

    status = uct_mm_ep_claim(ep, &head);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    elem = uct_mm_ep_elem(ep, head);
    buf  = uct_mm_ep_elem_buf(ep, elem);
    if (ucs_unlikely(buf == NULL)) {
        uct_mm_ep_publish_void(ep, elem, head);
        return UCS_ERR_IO_ERROR;
    }

    length = pack_cb(buf, arg);
    if (ucs_unlikely(length > ep->seg_size)) {
        /* The callback wrote past the buffer: memory is already corrupt. */
        ucs_fatal("posix: am_bcopy pack callback returned %zu bytes, buffer is %zu",
                  length, ep->seg_size);
    }
    elem->length = (uint32_t)length;
    elem->am_id  = id;
    elem->flags  = 0;
    uct_mm_ep_publish(ep, elem, head);
    return (ssize_t)length;
}

ucs_status_t uct_mm_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                                unsigned header_length, const uct_iov_t *iov,
                                size_t iovcnt, unsigned flags, uct_completion_t *comp)
{
    uct_mm_ep_t *ep = (uct_mm_ep_t*)tl_ep;
    uct_mm_fifo_elem_t *elem;
    ucs_status_t status;
    size_t length;
    uint64_t head;
    char *buf;

    (void)comp;
    (void)flags;

    /* Without a kernel-assisted copy a sender cannot place data in another
     * process without copying it; "zcopy" here is the single copy into the
     * receiver's buffer, done now, so the user's buffers are free at return. */
    length = uct_iov_total_length(iov, iovcnt);
    if (ucs_unlikely((id >= UCT_AM_ID_MAX) || (iovcnt > UCT_MM_MAX_IOV) ||
                     (header_length > UCT_MM_AM_MAX_HDR) ||
                     (header_length + length > ep->seg_size))) {
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_mm_ep_claim(ep, &head);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    elem = uct_mm_ep_elem(ep, head);
    buf  = uct_mm_ep_elem_buf(ep, elem);
    if (ucs_unlikely(buf == NULL)) {
        uct_mm_ep_publish_void(ep, elem, head);
        return UCS_ERR_IO_ERROR;
    }

    memcpy(buf, header, header_length);
    uct_iov_to_buffer(iov, iovcnt, buf + header_length);
    elem->length = (uint32_t)(header_length + length);
    elem->am_id  = id;
    elem->flags  = 0;
    uct_mm_ep_publish(ep, elem, head);
    return UCS_OK;
}

/* ------------------------------------------------------------------------ */
/* RMA: memcpy through the rkey's mapping; complete on return                */
/* ------------------------------------------------------------------------ */

ucs_status_t uct_mm_ep_put_short(uct_ep_h tl_ep, const void *buffer, unsigned length,
                                 uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_mm_ep_t *ep = (uct_mm_ep_t*)tl_ep;
    void *dst;

    if (ucs_unlikely(ep->status != UCS_OK)) {
        return ep->status;
    }
    dst = uct_posix_rkey_translate(rkey, remote_addr, length);
    if (ucs_unlikely(dst == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }
    memcpy(dst, buffer, length);
    return UCS_OK;
}

ssize_t uct_mm_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb, void *arg,
                            uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_mm_ep_t *ep       = (uct_mm_ep_t*)tl_ep;
    uct_mm_iface_t *iface = uct_mm_ep_iface(ep);
    size_t length;
    void *dst;

    if (ucs_unlikely(ep->status != UCS_OK)) {
        return ep->status;
    }
    if (uct_posix_rkey_translate(rkey, remote_addr, 0) == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    /* The length is known only after packing: pack straight into the remote
     * memory when a full buffer fits there, else through a bounce buffer so
     * that the callback can never write past the peer's region. */
    dst = uct_posix_rkey_translate(rkey, remote_addr, iface->seg_size);
    if (dst != NULL) {
        length = pack_cb(dst, arg);
    } else {
        length = pack_cb(iface->put_bounce, arg);
        dst    = uct_posix_rkey_translate(rkey, remote_addr, length);
        if (dst == NULL) {
            return UCS_ERR_INVALID_PARAM;
        }
        memcpy(dst, iface->put_bounce, length);
    }
    if (ucs_unlikely(length > iface->seg_size)) {
        ucs_fatal("posix: put_bcopy pack callback returned %zu bytes, max is %zu",
                  length, iface->seg_size);
    }
    return (ssize_t)length;
}

ucs_status_t uct_mm_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                 uint64_t remote_addr, uct_rkey_t rkey,
                                 uct_completion_t *comp)
{
    uct_mm_ep_t *ep = (uct_mm_ep_t*)tl_ep;
    size_t length;
    void *dst;

    (void)comp;

    if (ucs_unlikely(ep->status != UCS_OK)) {
        return ep->status;
    }
    length = uct_iov_total_length(iov, iovcnt);
    dst    = uct_posix_rkey_translate(rkey, remote_addr, length);
    if (ucs_unlikely((dst == NULL) || (iovcnt > UCT_MM_MAX_IOV))) {
        return UCS_ERR_INVALID_PARAM;
    }
    uct_iov_to_buffer(iov, iovcnt, dst);
    return UCS_OK;
}

ucs_status_t uct_mm_ep_get_bcopy(uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb,
                                 void *arg, size_t length, uint64_t remote_addr,
                                 uct_rkey_t rkey, uct_completion_t *comp)
{
    uct_mm_ep_t *ep = (uct_mm_ep_t*)tl_ep;
    const void *src;

    (void)comp;

    if (ucs_unlikely(ep->status != UCS_OK)) {
        return ep->status;
    }
    src = uct_posix_rkey_translate(rkey, remote_addr, length);
    if (ucs_unlikely(src == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }
    unpack_cb(arg, src, length);
    return UCS_OK;
}

ucs_status_t uct_mm_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                 uint64_t remote_addr, uct_rkey_t rkey,
                                 uct_completion_t *comp)
{
    uct_mm_ep_t *ep = (uct_mm_ep_t*)tl_ep;
    size_t length;
    void *src;

    (void)comp;

    if (ucs_unlikely(ep->status != UCS_OK)) {
        return ep->status;
    }
    length = uct_iov_total_length(iov, iovcnt);
    src    = uct_posix_rkey_translate(rkey, remote_addr, length);
    if (ucs_unlikely((src == NULL) || (iovcnt > UCT_MM_MAX_IOV))) {
        return UCS_ERR_INVALID_PARAM;
    }
    uct_iov_from_buffer(iov, iovcnt, src);
    return UCS_OK;
}

/* ------------------------------------------------------------------------ */
/* Pending, flush, fence                                                     */
/* ------------------------------------------------------------------------ */

ucs_status_t uct_mm_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                   unsigned flags)
{
    uct_mm_ep_t *ep = (uct_mm_ep_t*)tl_ep;

    (void)flags;

    if (ep->status != UCS_OK) {
        return ep->status;
    }
    /* Queue behind earlier requests; with none, only if the FIFO is full. */
    if (uct_pending_queue_is_empty(&ep->pending) &&
        uct_mm_ep_refresh_tail(ep, __atomic_load_n(&ep->ctl->head, __ATOMIC_RELAXED))) {
        return UCS_ERR_BUSY;
    }

    uct_pending_queue_push(&ep->pending, req);
    if (!ep->in_pending) {
        ucs_list_add_tail(&uct_mm_ep_iface(ep)->pending_eps, &ep->pending_link);
        ep->in_pending = 1;
    }
    if (ucs_unlikely(uct_mm_ep_iface(ep)->armed)) {
        uct_mm_iface_wake_self(uct_mm_ep_iface(ep));
    }
    return UCS_OK;
}

void uct_mm_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                             void *arg)
{
    uct_mm_ep_t *ep = (uct_mm_ep_t*)tl_ep;

    uct_pending_queue_purge(&ep->pending, cb, arg);
    if (ep->in_pending) {
        ucs_list_del(&ep->pending_link);
        ep->in_pending = 0;
    }
}

unsigned uct_mm_ep_progress_pending(uct_mm_ep_t *ep)
{
    unsigned count;

    if (!uct_mm_ep_refresh_tail(ep, __atomic_load_n(&ep->ctl->head,
                                                    __ATOMIC_RELAXED))) {
        /* Still full: a dead peer would keep it so forever. */
        uct_mm_ep_check_peer(ep, 0);
        return 0;
    }

    count = uct_pending_queue_dispatch(&ep->pending);
    /* A request may have failed the ep (which unlinks it) or purged it. */
    if (ep->in_pending && uct_pending_queue_is_empty(&ep->pending)) {
        ucs_list_del(&ep->pending_link);
        ep->in_pending = 0;
    }
    return count;
}

ucs_status_t uct_mm_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    uct_mm_ep_t *ep = (uct_mm_ep_t*)tl_ep;

    (void)comp;

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        /* Nothing is in flight; queued requests stay for the caller to purge. */
        return UCS_OK;
    }
    if (ep->status != UCS_OK) {
        return ep->status;
    }
    if (!uct_pending_queue_is_empty(&ep->pending)) {
        return UCS_ERR_NO_RESOURCE;
    }
    /* Everything sent is in the peer's memory; it counts only if the peer is
     * still there to read it. */
    return uct_mm_ep_check_peer(ep, 1);
}

ucs_status_t uct_mm_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    (void)tl_ep;
    (void)flags;
    return UCS_OK;
}

/* ------------------------------------------------------------------------ */
/* Connect / destroy                                                         */
/* ------------------------------------------------------------------------ */

/* Copy the FIFO geometry out of the peer's header and check that it
 * describes a FIFO inside the mapping; only the copies are used later. */
static ucs_status_t uct_mm_ep_init_fifo(uct_mm_ep_t *ep, pid_t pid)
{
    const uct_mm_fifo_ctl_t *ctl = ep->seg.address;
    uint64_t fifo_size, elem_size, seg_size, elems_offset, bufs_offset, num_bufs;
    uint64_t stride, total;

    if (ep->seg.length < sizeof(*ctl)) {
        return UCS_ERR_INVALID_ADDR;
    }

    fifo_size    = ctl->fifo_size;
    elem_size    = ctl->elem_size;
    seg_size     = ctl->seg_size;
    elems_offset = ctl->elems_offset;
    bufs_offset  = ctl->bufs_offset;
    stride       = ctl->buf_stride;
    num_bufs     = ctl->num_bufs;
    total        = ctl->total_size;

    /* Every bound first, so that the sums and products below cannot wrap. */
    if ((ctl->magic != UCT_MM_FIFO_MAGIC) || (ctl->version != UCT_MM_FIFO_VERSION) ||
        (ctl->owner_pid != (uint32_t)pid) || (total != ep->seg.length) ||
        (fifo_size < 2) || (fifo_size > 65536) || (fifo_size & (fifo_size - 1)) ||
        (elem_size < 64) || (elem_size > 4096) || (elem_size & (elem_size - 1)) ||
        (seg_size == 0) || (seg_size > (1ull << 30)) || (stride < seg_size) ||
        (stride > (1ull << 31)) || (num_bufs < fifo_size) || (num_bufs > (1ull << 20)) ||
        (elems_offset < sizeof(*ctl)) || (elems_offset > total) ||
        (bufs_offset > total) || (elems_offset % UCS_CACHE_LINE_SIZE) ||
        (elems_offset + fifo_size * elem_size > bufs_offset) ||
        (bufs_offset + num_bufs * stride > total)) {
        ucs_debug("posix: FIFO header of pid %d is not valid", (int)pid);
        return UCS_ERR_INVALID_ADDR;
    }

    ep->ctl         = ep->seg.address;
    ep->seg_base    = ep->seg.address;
    ep->elems       = ep->seg_base + elems_offset;
    ep->fifo_size   = fifo_size;
    ep->fifo_mask   = fifo_size - 1;
    ep->elem_shift  = 63u - (unsigned)__builtin_clzll(elem_size);
    ep->max_inline  = elem_size - sizeof(uct_mm_fifo_elem_t);
    ep->seg_size    = seg_size;
    ep->bufs_offset = bufs_offset;
    ep->bufs_span   = total - seg_size - bufs_offset;
    ep->cached_tail = __atomic_load_n(&ep->ctl->tail, __ATOMIC_ACQUIRE);

    memset(&ep->signal_addr, 0, sizeof(ep->signal_addr));
    ep->signal_addr.sun_family = AF_UNIX;
    ep->signal_addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
                                     uct_mm_fifo_signal_name(ep->signal_addr.sun_path + 1,
                                                             sizeof(ep->signal_addr.sun_path) - 1,
                                                             (uint32_t)pid,
                                                             ctl->signal_id));
    return UCS_OK;
}

ucs_status_t uct_mm_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    uct_mm_iface_t *iface;
    uct_mm_iface_addr_t addr;
    ucs_status_t status;
    uct_mm_ep_t *ep;

    if (!(params->field_mask & UCT_EP_PARAM_FIELD_IFACE) || (params->iface == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (!(params->field_mask & UCT_EP_PARAM_FIELD_IFACE_ADDR) ||
        (params->iface_addr == NULL)) {
        /* Only connect-to-iface: there is nothing an ep address would add. */
        return UCS_ERR_UNSUPPORTED;
    }
    iface = (uct_mm_iface_t*)params->iface;

    if ((params->field_mask & UCT_EP_PARAM_FIELD_DEV_ADDR) &&
        ((params->dev_addr == NULL) ||
         (memcmp(params->dev_addr, &iface->dev_addr, sizeof(iface->dev_addr)) != 0))) {
        return UCS_ERR_UNREACHABLE;
    }

    memcpy(&addr, params->iface_addr, sizeof(addr));
    if ((addr.version != UCT_MM_IFACE_ADDR_VERSION) || ((int32_t)addr.pid <= 0) ||
        (addr.fd < 0)) {
        return UCS_ERR_INVALID_ADDR;
    }

    ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    uct_base_ep_init(&ep->super, &iface->super);
    ep->status            = UCS_OK;
    uct_pending_queue_init(&ep->pending);

    /* Watch the process before attaching: the attach then proves that the
     * pid we watch is the FIFO's owner, not a successor with the same pid. */
    status = uct_mm_peer_open((pid_t)addr.pid, &ep->peer);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = uct_mm_seg_attach((pid_t)addr.pid, addr.fd, addr.inode, 0,
                               UCT_MM_FIFO_MAX_TOTAL, &ep->seg);
    if (status != UCS_OK) {
        goto err_peer;
    }

    status = uct_mm_ep_init_fifo(ep, (pid_t)addr.pid);
    if (status != UCS_OK) {
        goto err_detach;
    }

    ucs_list_add_tail(&iface->eps, &ep->list);
    ucs_debug("posix: ep %p connected to pid %u fifo %llu x %u", (void*)ep, addr.pid,
              (unsigned long long)ep->fifo_size, 1u << ep->elem_shift);
    *ep_p = &ep->super.super;
    return UCS_OK;

err_detach:
    uct_mm_seg_detach(&ep->seg);
err_peer:
    uct_mm_peer_close(&ep->peer);
err_free:
    free(ep);
    return status;
}

void uct_mm_ep_destroy(uct_ep_h tl_ep)
{
    uct_mm_ep_t *ep = (uct_mm_ep_t*)tl_ep;

    uct_mm_ep_pending_purge(tl_ep, NULL, NULL);
    if (ep->in_failed) {
        ucs_list_del(&ep->failed_link);
    }
    ucs_list_del(&ep->list);
    uct_mm_seg_detach(&ep->seg);
    uct_mm_peer_close(&ep->peer);
    free(ep);
}
