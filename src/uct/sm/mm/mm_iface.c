#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mm_iface.h"
#include "posix_md.h"

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* Upper limits of the options: a FIFO of 64 Ki elements of 4 KiB, buffers
 * of 1 GiB; beyond that something is wrong with the value. */
#define UCT_MM_FIFO_SIZE_MAX   65536u
#define UCT_MM_ELEM_SIZE_MIN   64u
#define UCT_MM_ELEM_SIZE_MAX   4096u
#define UCT_MM_SEG_SIZE_MIN    256u /* > UCT_MM_AM_MAX_HDR */
#define UCT_MM_SEG_SIZE_MAX    (1ull << 30)

static ucs_config_field_t uct_mm_iface_config_fields[] = {
    {"SEG_SIZE", "8k",
     "Bytes of one receive buffer: the largest am_bcopy message.",
     offsetof(uct_mm_iface_config_t, super.max_bcopy), UCS_CONFIG_TYPE_SIZE, 0},

    {"FIFO_SIZE", "64",
     "Elements in the receive FIFO of each interface (a power of two). Also the\n"
     "number of receive buffers: the messages peers can send before the receiver\n"
     "drains them.",
     offsetof(uct_mm_iface_config_t, fifo_size), UCS_CONFIG_TYPE_UINT, 0},

    {"FIFO_ELEM_SIZE", "128",
     "Bytes of one FIFO element (a power of two, 64..4096). An am_short message\n"
     "must fit in it with its 24-byte element header.",
     offsetof(uct_mm_iface_config_t, elem_size), UCS_CONFIG_TYPE_SIZE, 0},

    {"RX_HOLD_BUFS", "64",
     "Receive buffers am handlers may keep at once (UCT_CB_PARAM_FLAG_DESC). When\n"
     "all are kept, handlers get data without FLAG_DESC and must copy it.",
     offsetof(uct_mm_iface_config_t, hold_bufs), UCS_CONFIG_TYPE_UINT, 0},

    {"RX_MAX_POLL", "16",
     "Most messages one progress call delivers.",
     offsetof(uct_mm_iface_config_t, max_poll), UCS_CONFIG_TYPE_UINT, 0},

    {"PEER_CHECK_INTERVAL", "1ms",
     "How often a sender whose peer FIFO stays full checks that the peer is alive.",
     offsetof(uct_mm_iface_config_t, peer_check_interval), UCS_CONFIG_TYPE_TIME, 0},

    {"BW", "auto",
     "Bandwidth in the performance model, bytes/s; auto measures memcpy once.",
     offsetof(uct_mm_iface_config_t, bandwidth),
     UCS_CONFIG_TYPE_SIZE_EX(UCS_CONFIG_PARSE_AUTO), 0},

    {NULL, NULL, NULL, 0, UCS_CONFIG_TYPE_INT, 0}
};

static ucs_config_table_entry_t uct_mm_iface_config_table = {
    .name   = "posix shared memory transport",
    .prefix = "POSIX_",
    .fields = uct_mm_iface_config_fields,
    .size   = sizeof(uct_mm_iface_config_t)
};

static int uct_mm_is_pow2(uint64_t x)
{
    return (x != 0) && ((x & (x - 1)) == 0);
}

static unsigned uct_mm_ilog2(uint64_t x)
{
    return 63u - (unsigned)__builtin_clzll(x);
}

static uint64_t uct_mm_align_up(uint64_t x, uint64_t align)
{
    return (x + align - 1) / align * align;
}

/* Reject values that would make a broken FIFO, naming the variable. */
static ucs_status_t uct_mm_iface_check_config(const uct_mm_iface_config_t *config)
{
    if (!uct_mm_is_pow2(config->fifo_size) || (config->fifo_size < 2) ||
        (config->fifo_size > UCT_MM_FIFO_SIZE_MAX)) {
        ucs_error("UCX_POSIX_FIFO_SIZE=%u is invalid: expected a power of two "
                  "from 2 to %u", config->fifo_size, UCT_MM_FIFO_SIZE_MAX);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!uct_mm_is_pow2(config->elem_size) ||
        (config->elem_size < UCT_MM_ELEM_SIZE_MIN) ||
        (config->elem_size > UCT_MM_ELEM_SIZE_MAX)) {
        ucs_error("UCX_POSIX_FIFO_ELEM_SIZE=%zu is invalid: expected a power of "
                  "two from %u to %u", config->elem_size, UCT_MM_ELEM_SIZE_MIN,
                  UCT_MM_ELEM_SIZE_MAX);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->super.max_bcopy < UCT_MM_SEG_SIZE_MIN) ||
        (config->super.max_bcopy > UCT_MM_SEG_SIZE_MAX)) {
        ucs_error("UCX_POSIX_SEG_SIZE=%zu is invalid: expected %u to %llu bytes",
                  config->super.max_bcopy, UCT_MM_SEG_SIZE_MIN, UCT_MM_SEG_SIZE_MAX);
        return UCS_ERR_INVALID_PARAM;
    }
    if (config->hold_bufs > UCT_MM_FIFO_SIZE_MAX) {
        ucs_error("UCX_POSIX_RX_HOLD_BUFS=%u is invalid: expected 0 to %u",
                  config->hold_bufs, UCT_MM_FIFO_SIZE_MAX);
        return UCS_ERR_INVALID_PARAM;
    }
    if (config->max_poll == 0) {
        ucs_error("UCX_POSIX_RX_MAX_POLL=0 is invalid: expected at least 1");
        return UCS_ERR_INVALID_PARAM;
    }
    if (!(config->peer_check_interval >= 0.0)) {
        ucs_error("UCX_POSIX_PEER_CHECK_INTERVAL is invalid: expected a time >= 0");
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

static uint64_t uct_mm_random64(void)
{
    uint64_t value;

    if (getrandom(&value, sizeof(value), GRND_NONBLOCK) == (ssize_t)sizeof(value)) {
        return value;
    }
    /* No entropy yet (early boot): uniqueness is all we need, not secrecy. */
    return ucs_get_time_ns() ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)&value;
}

/*
 * The wake-up channel: a datagram socket in the abstract namespace, so that
 * it vanishes with the process like the segment does (no file on disk).
 * Its name carries a random id, published in the FIFO header.
 */
static ucs_status_t uct_mm_iface_signal_init(uct_mm_iface_t *iface)
{
    struct sockaddr_un addr;
    socklen_t addrlen;
    uint64_t signal_id;
    int attempt, len;

    iface->signal_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (iface->signal_fd < 0) {
        ucs_error("posix: socket(AF_UNIX) failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    for (attempt = 0; attempt < 16; ++attempt) {
        signal_id = uct_mm_random64();
        memset(&addr, 0, sizeof(addr));
        addr.sun_family = AF_UNIX;
        len = uct_mm_fifo_signal_name(addr.sun_path + 1, sizeof(addr.sun_path) - 1,
                                      (uint32_t)getpid(), signal_id);
        addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
        if (bind(iface->signal_fd, (struct sockaddr*)&addr, addrlen) == 0) {
            iface->ctl->signal_id = signal_id;
            iface->self_addr      = addr;
            iface->self_addrlen   = addrlen;
            return UCS_OK;
        }
        if (errno != EADDRINUSE) {
            break;
        }
    }

    ucs_error("posix: cannot bind the wake-up socket: %m");
    close(iface->signal_fd);
    return UCS_ERR_IO_ERROR;
}

/* Give back a buffer an am handler kept (uct_iface_release_desc()). */
static void uct_mm_iface_release_desc(uct_recv_desc_t *self, void *desc)
{
    uct_mm_iface_t *iface = ucs_container_of(self, uct_mm_iface_t, release_desc);

    ucs_assert(iface->spare_count < iface->hold_bufs);
    iface->spare_offsets[iface->spare_count++] =
            (uint64_t)((char*)desc + iface->super.rx_headroom - iface->seg_base);
}

/* Lay out the FIFO segment and write its header; the owner is the only
 * process that can see it until the address is handed out. */
static ucs_status_t uct_mm_iface_fifo_init(uct_mm_iface_t *iface,
                                           const uct_mm_iface_config_t *config)
{
    uint64_t elems_offset, bufs_offset, buf_stride, data_offset, total, num_bufs, i;
    uct_mm_fifo_elem_t *elem;
    ucs_status_t status;

    /* Each buffer: [pad][release pointer][rx_headroom][data], data aligned. */
    data_offset  = uct_mm_align_up(UCT_RECV_DESC_HDR_SIZE + iface->super.rx_headroom,
                                   UCS_CACHE_LINE_SIZE);
    buf_stride   = data_offset + uct_mm_align_up(config->super.max_bcopy,
                                                 UCS_CACHE_LINE_SIZE);
    num_bufs     = (uint64_t)config->fifo_size + config->hold_bufs;
    elems_offset = uct_mm_align_up(sizeof(uct_mm_fifo_ctl_t), UCS_CACHE_LINE_SIZE);
    bufs_offset  = elems_offset + (uint64_t)config->fifo_size * config->elem_size;
    total        = bufs_offset + num_bufs * buf_stride;
    if ((iface->super.rx_headroom > UCT_MM_SEG_SIZE_MAX) ||
        (total > UCT_MM_FIFO_MAX_TOTAL)) {
        ucs_error("posix: FIFO of %llu buffers of %zu bytes is too large",
                  (unsigned long long)num_bufs, config->super.max_bcopy);
        return UCS_ERR_INVALID_PARAM;
    }

    iface->buf_offsets   = malloc(sizeof(uint64_t) * config->fifo_size);
    iface->spare_offsets = malloc(sizeof(uint64_t) * (config->hold_bufs + 1));
    if ((iface->buf_offsets == NULL) || (iface->spare_offsets == NULL)) {
        status = UCS_ERR_NO_MEMORY;
        goto err_free;
    }

    status = uct_mm_seg_create("ucx-posix-fifo", total, UCT_MM_SEG_FLAG_POPULATE,
                               &iface->seg);
    if (status != UCS_OK) {
        goto err_free;
    }

    iface->seg_base             = iface->seg.address;
    iface->ctl                  = (uct_mm_fifo_ctl_t*)iface->seg_base;
    iface->elems                = iface->seg_base + elems_offset;
    iface->tail                 = 0;
    iface->fifo_mask            = config->fifo_size - 1;
    iface->elem_shift           = uct_mm_ilog2(config->elem_size);
    iface->max_inline           = config->elem_size - sizeof(uct_mm_fifo_elem_t);
    iface->seg_size             = config->super.max_bcopy;
    iface->hold_bufs            = config->hold_bufs;
    iface->spare_count          = 0;
    iface->release_desc.release = uct_mm_iface_release_desc;

    /* Buffers 0..fifo_size-1 start in the elements, the rest are spares.
     * The segment is zero-filled: seq 0 means "empty" for every ticket. */
    for (i = 0; i < num_bufs; ++i) {
        uct_recv_desc_set(iface->seg_base + bufs_offset + i * buf_stride + data_offset -
                          iface->super.rx_headroom, &iface->release_desc);
        if (i < config->fifo_size) {
            elem = uct_mm_fifo_elem(iface->elems, i, iface->fifo_mask,
                                    iface->elem_shift);
            iface->buf_offsets[i] = bufs_offset + i * buf_stride + data_offset;
            elem->buf_offset      = iface->buf_offsets[i];
        } else {
            iface->spare_offsets[iface->spare_count++] = bufs_offset + i * buf_stride +
                                                         data_offset;
        }
    }

    iface->ctl->magic        = UCT_MM_FIFO_MAGIC;
    iface->ctl->version      = UCT_MM_FIFO_VERSION;
    iface->ctl->owner_pid    = (uint32_t)getpid();
    iface->ctl->fifo_size    = config->fifo_size;
    iface->ctl->elem_size    = (uint32_t)config->elem_size;
    iface->ctl->seg_size     = config->super.max_bcopy;
    iface->ctl->elems_offset = elems_offset;
    iface->ctl->bufs_offset  = bufs_offset;
    iface->ctl->buf_stride   = buf_stride;
    iface->ctl->num_bufs     = num_bufs;
    iface->ctl->total_size   = iface->seg.length;
    iface->ctl->head         = 0;
    iface->ctl->tail         = 0;
    iface->ctl->state        = UCT_MM_FIFO_STATE_OPEN;
    return UCS_OK;

err_free:
    free(iface->spare_offsets);
    free(iface->buf_offsets);
    return status;
}

static void uct_mm_iface_fifo_cleanup(uct_mm_iface_t *iface)
{
    /* Peers still mapping the FIFO learn that nobody will drain it. */
    __atomic_store_n(&iface->ctl->state, UCT_MM_FIFO_STATE_CLOSED, __ATOMIC_RELEASE);
    uct_mm_seg_destroy(&iface->seg);
    free(iface->spare_offsets);
    free(iface->buf_offsets);
}

/* ------------------------------------------------------------------------ */
/* Receive path                                                              */
/* ------------------------------------------------------------------------ */

/* Hand a buffer message to its handler. With a spare buffer in stock the
 * handler may keep the buffer; the element then gets the spare before the
 * ticket is released (so senders see the new offset, see mm_fifo.h). */
static inline void uct_mm_iface_deliver_buf(uct_mm_iface_t *iface,
                                            uct_mm_fifo_elem_t *elem, uint64_t tail,
                                            uint8_t am_id, uint32_t length)
{
    uint64_t idx = tail & iface->fifo_mask;
    char *data   = iface->seg_base + iface->buf_offsets[idx];
    ucs_status_t status;

    ucs_trace_data("posix: recv am %u length %u ticket %llu", am_id, length,
                   (unsigned long long)tail);
    if (ucs_unlikely(iface->spare_count == 0)) {
        uct_iface_invoke_am(&iface->super, am_id, data, length, 0);
        return;
    }

    /* The release pointer sits in the receiver's own segment, where a
     * misbehaving sender could have written: set it again each time. */
    uct_recv_desc_set(data - iface->super.rx_headroom, &iface->release_desc);
    status = uct_iface_invoke_am(&iface->super, am_id, data, length,
                                 UCT_CB_PARAM_FLAG_DESC);
    if (status == UCS_INPROGRESS) {
        iface->buf_offsets[idx] = iface->spare_offsets[--iface->spare_count];
        elem->buf_offset        = iface->buf_offsets[idx];
    }
}

/* Deliver the message of ticket iface->tail if it is published.
 * @return 1 if one was handled. */
static inline unsigned uct_mm_iface_poll_fifo(uct_mm_iface_t *iface)
{
    uint64_t tail = iface->tail;
    uct_mm_fifo_elem_t *elem;
    uint32_t length;
    uint8_t am_id, flags;

    elem = uct_mm_fifo_elem(iface->elems, tail, iface->fifo_mask, iface->elem_shift);
    if (__atomic_load_n(&elem->seq, __ATOMIC_ACQUIRE) != tail + 1) {
        return 0;
    }

    /* Read the header once: the sender is another process, its values are
     * checked against our own geometry, never trusted. */
    length = elem->length;
    am_id  = elem->am_id;
    flags  = elem->flags;
    if ((flags & UCT_MM_FIFO_ELEM_INLINE) && ucs_likely(length <= iface->max_inline)) {
        /* The element is reused once the handler returns: no FLAG_DESC. */
        uct_iface_invoke_am(&iface->super, am_id, uct_mm_fifo_elem_data(elem), length,
                            0);
    } else if (!(flags & UCT_MM_FIFO_ELEM_INLINE) &&
               ucs_likely(length <= iface->seg_size)) {
        uct_mm_iface_deliver_buf(iface, elem, tail, am_id, length);
    } else {
        ucs_error("posix: dropping message with bad length %u (am %u)", length, am_id);
    }

    iface->tail = tail + 1;
    __atomic_store_n(&iface->ctl->tail, tail + 1, __ATOMIC_RELEASE);
    return 1;
}

/* Work that exists only after an arm, a full peer FIFO or a peer failure. */
static unsigned uct_mm_iface_progress_slow(uct_mm_iface_t *iface)
{
    uct_mm_ep_t *ep, *tmp;
    unsigned count = 0;

    /* ARMED stays in the head word: the first sender clears it when it
     * signals. Clearing it here would leave a caller that progresses after
     * arming and then sleeps on the event fd without a wake-up. */
    iface->armed = 0;

    ucs_list_for_each_safe(ep, tmp, &iface->pending_eps, pending_link) {
        count += uct_mm_ep_progress_pending(ep);
    }

    /* Unlink before calling: the handler may destroy the ep. */
    while (!ucs_list_is_empty(&iface->failed_eps)) {
        ep = ucs_list_extract_head_elem(&iface->failed_eps, uct_mm_ep_t, failed_link);
        ep->in_failed = 0;
        ucs_debug("posix: ep %p to pid %d failed: %s", (void*)ep, (int)ep->peer.pid,
                  ucs_status_string(ep->status));
        uct_iface_handle_ep_err(&iface->super.super, &ep->super.super, ep->status);
        ++count;
    }
    return count;
}

static unsigned uct_mm_iface_progress(uct_iface_h tl_iface)
{
    uct_mm_iface_t *iface = (uct_mm_iface_t*)tl_iface;
    unsigned count        = 0;

    while ((count < iface->max_poll) && uct_mm_iface_poll_fifo(iface)) {
        ++count;
    }

    if (ucs_unlikely(iface->armed || !ucs_list_is_empty(&iface->pending_eps) ||
                     !ucs_list_is_empty(&iface->failed_eps))) {
        count += uct_mm_iface_progress_slow(iface);
    }
    return count;
}

/* ------------------------------------------------------------------------ */
/* Events                                                                    */
/* ------------------------------------------------------------------------ */

static ucs_status_t uct_mm_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    *fd_p = ((uct_mm_iface_t*)tl_iface)->signal_fd;
    return UCS_OK;
}

void uct_mm_iface_wake_self(uct_mm_iface_t *iface)
{
    char byte = 0;

    ucs_trace("posix: iface %p: work for progress after arming, waking up",
              (void *)iface);
    iface->armed = 0; /* one wake-up per arm */
    (void)sendto(iface->send_fd, &byte, 1, MSG_DONTWAIT,
                 (const struct sockaddr *)&iface->self_addr, iface->self_addrlen);
}

static ucs_status_t uct_mm_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    uct_mm_iface_t *iface = (uct_mm_iface_t*)tl_iface;
    char buf[64];
    uint64_t head;

    if (events & ~(unsigned)(UCT_EVENT_RECV | UCT_EVENT_SEND_COMP)) {
        return UCS_ERR_INVALID_PARAM;
    }
    /* Sends complete before they return: there is never a send completion
     * to wait for, so UCT_EVENT_SEND_COMP alone needs nothing. */
    if (!(events & UCT_EVENT_RECV)) {
        return UCS_OK;
    }

    /* Drain old wake-ups first; one arriving after this is at worst a
     * spurious wake-up. */
    while (recv(iface->signal_fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0) {
    }

    /* Work only progress can do: nobody would wake us for it. */
    if (!ucs_list_is_empty(&iface->pending_eps) ||
        !ucs_list_is_empty(&iface->failed_eps)) {
        return UCS_ERR_BUSY;
    }

    /* See mm_fifo.h: ordered against every sender's claim on the same word. */
    head         = __atomic_fetch_or(&iface->ctl->head, UCT_MM_FIFO_HEAD_ARMED,
                                     __ATOMIC_SEQ_CST);
    iface->armed = 1;
    if ((head & UCT_MM_FIFO_HEAD_MASK) != iface->tail) {
        return UCS_ERR_BUSY;
    }
    return UCS_OK;
}

/* ------------------------------------------------------------------------ */
/* Flush, query, addresses                                                   */
/* ------------------------------------------------------------------------ */

static ucs_status_t uct_mm_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                       uct_completion_t *comp)
{
    uct_mm_iface_t *iface = (uct_mm_iface_t*)tl_iface;

    (void)flags;
    (void)comp;

    /* Every operation completed when it returned; only queued requests are
     * still to go. */
    if (!ucs_list_is_empty(&iface->pending_eps)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

static ucs_status_t uct_mm_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    (void)tl_iface;
    (void)flags;
    /* Operations complete in order; stores become visible in order. */
    return UCS_OK;
}

static ucs_status_t uct_mm_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *attr)
{
    uct_mm_iface_t *iface = (uct_mm_iface_t*)tl_iface;

    uct_base_iface_query(&iface->super, attr);

    attr->cap.am.max_short  = iface->max_inline;
    attr->cap.am.max_bcopy  = iface->seg_size;
    attr->cap.am.min_zcopy  = 0;
    attr->cap.am.max_hdr    = UCT_MM_AM_MAX_HDR;
    attr->cap.am.max_zcopy  = iface->seg_size - UCT_MM_AM_MAX_HDR;
    attr->cap.am.max_iov    = UCT_MM_MAX_IOV;
    attr->cap.am.opt_zcopy_align = 1;
    attr->cap.am.align_mtu  = 1;

    /* RMA is memcpy into the peer's mapped memory: no length limit of the
     * transport's own except the rkey's range; short is capped so that it
     * stays a short operation. */
    attr->cap.put.max_short = iface->seg_size;
    attr->cap.put.max_bcopy = iface->seg_size;
    attr->cap.put.min_zcopy = 0;
    attr->cap.put.max_zcopy = SIZE_MAX;
    attr->cap.put.max_iov   = UCT_MM_MAX_IOV;
    attr->cap.put.opt_zcopy_align = 1;
    attr->cap.put.align_mtu = 1;

    attr->cap.get.max_bcopy = iface->seg_size;
    attr->cap.get.min_zcopy = 0;
    attr->cap.get.max_zcopy = SIZE_MAX;
    attr->cap.get.max_iov   = UCT_MM_MAX_IOV;
    attr->cap.get.opt_zcopy_align = 1;
    attr->cap.get.align_mtu = 1;

    attr->cap.flags = UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY |
                      UCT_IFACE_FLAG_AM_ZCOPY | UCT_IFACE_FLAG_PENDING |
                      UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_PUT_BCOPY |
                      UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_BCOPY |
                      UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                      UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE | UCT_IFACE_FLAG_CB_SYNC;
    attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_RECV | UCT_IFACE_FLAG_EVENT_FD;

    attr->device_addr_len = sizeof(uct_mm_device_addr_t);
    attr->iface_addr_len  = sizeof(uct_mm_iface_addr_t);
    attr->ep_addr_len     = 0;

    /* One cache line crosses cores per short message: ~80 ns one way; the
     * sender spends ~10 ns (a CAS and a few stores). */
    attr->overhead            = 10e-9;
    attr->latency             = ucs_linear_func_make(80e-9, 0.0);
    attr->bandwidth.dedicated = iface->bandwidth;
    attr->bandwidth.shared    = 0.0;
    return UCS_OK;
}

/*
 * Active messages: the sender claims a FIFO element and writes the message
 * (short: into the element; bcopy: into a segment the element points to),
 * the receiver polls the element and hands it to the handler, which copies
 * the data out. Each byte is copied twice, but on two cores: a stream of
 * segments moves at memcpy speed (12 GB/s measured on an H200 host against
 * 13 GB/s of memcpy).
 */
static ucs_status_t uct_mm_iface_estimate_perf(uct_iface_h tl_iface,
                                               uct_perf_attr_t *perf_attr)
{
    uct_mm_iface_t *iface = ucs_container_of(tl_iface, uct_mm_iface_t, super.super);

    if (!(perf_attr->field_mask & UCT_PERF_ATTR_FIELD_OPERATION)) {
        return UCS_OK;
    }
    switch (perf_attr->operation) {
    case UCT_EP_OP_AM_SHORT:
        perf_attr->send_pre_overhead   = 15e-9;
        perf_attr->recv_overhead       = 40e-9;
        break;
    case UCT_EP_OP_AM_BCOPY:
    case UCT_EP_OP_AM_ZCOPY:
        perf_attr->send_pre_overhead   = 30e-9;
        perf_attr->recv_overhead       = 50e-9;
        perf_attr->bandwidth.dedicated = iface->bandwidth;
        break;
    default:
        break;
    }
    return UCS_OK;
}

static ucs_status_t uct_mm_iface_get_device_address(uct_iface_h tl_iface,
                                                    uct_device_addr_t *addr)
{
    memcpy(addr, &((uct_mm_iface_t*)tl_iface)->dev_addr, sizeof(uct_mm_device_addr_t));
    return UCS_OK;
}

static ucs_status_t uct_mm_iface_get_address(uct_iface_h tl_iface,
                                             uct_iface_addr_t *addr)
{
    uct_mm_iface_t *iface = (uct_mm_iface_t*)tl_iface;
    uct_mm_iface_addr_t iface_addr;

    memset(&iface_addr, 0, sizeof(iface_addr));
    iface_addr.version = UCT_MM_IFACE_ADDR_VERSION;
    iface_addr.pid     = (uint32_t)getpid();
    iface_addr.fd      = iface->seg.fd;
    iface_addr.inode   = iface->seg.inode;
    memcpy(addr, &iface_addr, sizeof(iface_addr));
    return UCS_OK;
}

static int uct_mm_iface_is_reachable(const uct_iface_h tl_iface,
                                     const uct_device_addr_t *dev_addr,
                                     const uct_iface_addr_t *iface_addr)
{
    const uct_mm_iface_t *iface = (const uct_mm_iface_t*)tl_iface;
    uct_mm_iface_addr_t addr;

    /* Same kernel instance and PID namespace: the pid in the iface address
     * means the same process to us as to its owner. */
    if ((dev_addr == NULL) ||
        (memcmp(dev_addr, &iface->dev_addr, sizeof(iface->dev_addr)) != 0)) {
        return 0;
    }

    if (iface_addr != NULL) {
        memcpy(&addr, iface_addr, sizeof(addr));
        if ((addr.version != UCT_MM_IFACE_ADDR_VERSION) || ((int32_t)addr.pid <= 0) ||
            (addr.fd < 0)) {
            return 0;
        }
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Open / close                                                              */
/* ------------------------------------------------------------------------ */

static void uct_mm_iface_close(uct_iface_h tl_iface)
{
    uct_mm_iface_t *iface = (uct_mm_iface_t*)tl_iface;

    if (!ucs_list_is_empty(&iface->eps)) {
        ucs_warn("posix: iface %p closed with %zu endpoints still open",
                 (void*)iface, ucs_list_length(&iface->eps));
    }

    free(iface->put_bounce);
    close(iface->send_fd);
    close(iface->signal_fd);
    uct_mm_iface_fifo_cleanup(iface);
    uct_base_iface_cleanup(&iface->super);
    free(iface);
}

static const uct_iface_ops_t uct_mm_iface_ops = {
    .ep_am_short              = uct_mm_ep_am_short,
    .ep_am_bcopy              = uct_mm_ep_am_bcopy,
    .ep_am_zcopy              = uct_mm_ep_am_zcopy,
    .ep_put_short             = uct_mm_ep_put_short,
    .ep_put_bcopy             = uct_mm_ep_put_bcopy,
    .ep_put_zcopy             = uct_mm_ep_put_zcopy,
    .ep_get_bcopy             = uct_mm_ep_get_bcopy,
    .ep_get_zcopy             = uct_mm_ep_get_zcopy,
    .ep_pending_add           = uct_mm_ep_pending_add,
    .ep_pending_purge         = uct_mm_ep_pending_purge,
    .ep_flush                 = uct_mm_ep_flush,
    .ep_fence                 = uct_mm_ep_fence,
    .ep_create                = uct_mm_ep_create,
    .ep_destroy               = uct_mm_ep_destroy,
    .ep_get_address           = NULL,
    .ep_connect_to_ep         = NULL,
    .iface_flush              = uct_mm_iface_flush,
    .iface_fence              = uct_mm_iface_fence,
    .iface_progress           = uct_mm_iface_progress,
    .iface_event_fd_get       = uct_mm_iface_event_fd_get,
    .iface_event_arm          = uct_mm_iface_event_arm,
    .iface_close              = uct_mm_iface_close,
    .iface_query              = uct_mm_iface_query,
    .iface_get_device_address = uct_mm_iface_get_device_address,
    .iface_get_address        = uct_mm_iface_get_address,
    .iface_is_reachable       = uct_mm_iface_is_reachable
};

static void uct_mm_iface_init_dev_addr(uct_mm_device_addr_t *dev_addr)
{
    memset(dev_addr, 0, sizeof(*dev_addr));
    if (ucs_sys_get_node_id(dev_addr->node_id) != UCS_OK) {
        /* Without a boot id, the host name is the best identity we have. */
        const char *host = ucs_sys_get_host_name();
        size_t len       = strlen(host);
        memcpy(dev_addr->node_id, host,
               (len < sizeof(dev_addr->node_id)) ? len : sizeof(dev_addr->node_id));
    }
    dev_addr->pid_ns = ucs_sys_get_pid_ns();
}

static ucs_status_t uct_mm_iface_open(uct_md_h md, uct_worker_h worker,
                                      const uct_iface_params_t *params,
                                      const uct_iface_config_t *tl_config,
                                      uct_iface_h *iface_p)
{
    const uct_mm_iface_config_t *config = (const uct_mm_iface_config_t*)tl_config;
    uct_mm_iface_t *iface;
    ucs_status_t status;

    if ((params->field_mask & UCT_IFACE_PARAM_FIELD_DEVICE) &&
        (params->device.dev_name != NULL) &&
        (strcmp(params->device.dev_name, UCT_MM_DEVICE_NAME) != 0)) {
        return UCS_ERR_NO_DEVICE;
    }

    status = uct_mm_iface_check_config(config);
    if (status != UCS_OK) {
        return status;
    }

    iface = calloc(1, sizeof(*iface));
    if (iface == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_base_iface_init(&iface->super, &uct_mm_iface_ops, md, worker, params,
                                 tl_config);
    if (status != UCS_OK) {
        goto err_free;
    }

    ucs_list_head_init(&iface->eps);
    ucs_list_head_init(&iface->pending_eps);
    ucs_list_head_init(&iface->failed_eps);
    iface->max_poll               = config->max_poll;
    iface->peer_check_interval_ns = (uint64_t)(config->peer_check_interval * 1e9);
    iface->bandwidth              = (config->bandwidth == UCS_MEMUNITS_AUTO) ?
                                    uct_mm_memcpy_bandwidth() :
                                    (double)config->bandwidth;
    uct_mm_iface_init_dev_addr(&iface->dev_addr);
    iface->super.estimate_perf    = uct_mm_iface_estimate_perf;

    iface->put_bounce = malloc(config->super.max_bcopy);
    if (iface->put_bounce == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_base;
    }

    status = uct_mm_iface_fifo_init(iface, config);
    if (status != UCS_OK) {
        goto err_bounce;
    }

    status = uct_mm_iface_signal_init(iface);
    if (status != UCS_OK) {
        goto err_fifo;
    }

    iface->send_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (iface->send_fd < 0) {
        ucs_error("posix: socket(AF_UNIX) failed: %m");
        status = UCS_ERR_IO_ERROR;
        goto err_signal;
    }

    ucs_debug("posix: iface %p fifo %u x %zu, buffers of %zu bytes, fd %d inode %llu",
              (void*)iface, config->fifo_size, config->elem_size,
              config->super.max_bcopy, iface->seg.fd,
              (unsigned long long)iface->seg.inode);
    *iface_p = &iface->super.super;
    return UCS_OK;

err_signal:
    close(iface->signal_fd);
err_fifo:
    uct_mm_iface_fifo_cleanup(iface);
err_bounce:
    free(iface->put_bounce);
err_base:
    uct_base_iface_cleanup(&iface->super);
err_free:
    free(iface);
    return status;
}

static ucs_status_t uct_mm_query_devices(uct_md_h md,
                                         uct_tl_device_resource_t **devices_p,
                                         unsigned *num_devices_p)
{
    return uct_tl_single_device(UCT_MM_DEVICE_NAME, UCT_DEVICE_TYPE_SHM,
                                devices_p, num_devices_p);
}

/* ------------------------------------------------------------------------ */
/* Performance model                                                         */
/* ------------------------------------------------------------------------ */

static double uct_mm_bandwidth_measured;
static pthread_once_t uct_mm_bandwidth_once = PTHREAD_ONCE_INIT;

/* Copy a few MiB (past the private caches, like the data of a large
 * transfer) and keep the best of a few rounds. ~1 ms, once per process. */
static void uct_mm_measure_bandwidth(void)
{
    const size_t size = 4u << 20;
    uint64_t start, best = UINT64_MAX, elapsed;
    volatile char sink;
    char *src, *dst;
    int i;

    uct_mm_bandwidth_measured = 10e9; /* if we cannot measure */
    src = malloc(size);
    dst = malloc(size);
    if ((src != NULL) && (dst != NULL)) {
        memset(src, 1, size);
        memset(dst, 2, size);
        for (i = 0; i < 4; ++i) {
            start = ucs_get_time_ns();
            memcpy(dst, src, size);
            sink    = dst[i * 4096];
            elapsed = ucs_get_time_ns() - start;
            if (elapsed < best) {
                best = elapsed;
            }
        }
        (void)sink;
        if (best > 0) {
            uct_mm_bandwidth_measured = size * 1e9 / (double)best;
        }
    }
    free(dst);
    free(src);
    ucs_debug("posix: memcpy bandwidth %.1f MB/s", uct_mm_bandwidth_measured / 1e6);
}

double uct_mm_memcpy_bandwidth(void)
{
    pthread_once(&uct_mm_bandwidth_once, uct_mm_measure_bandwidth);
    return uct_mm_bandwidth_measured;
}

static uct_tl_t uct_mm_tl = {
    .name          = UCT_MM_TL_NAME,
    .query_devices = uct_mm_query_devices,
    .iface_open    = uct_mm_iface_open,
    .config        = &uct_mm_iface_config_table
};

UCS_CONFIG_REGISTER_TABLE(uct_mm_iface_config_table)
UCT_TL_REGISTER(&uct_posix_component, &uct_mm_tl)
