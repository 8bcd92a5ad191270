/**
 * @file mm_fifo.h
 * The receive FIFO of a posix iface: its layout in shared memory and the
 * lock-free protocol by which many sender processes fill it and its one
 * owner drains it.
 *
 * Layout of the FIFO segment (one memfd per iface, see mm_seg.h):
 *
 *   [ ctl: info line | head line | tail line ]   uct_mm_fifo_ctl_t
 *   [ elements: fifo_size x elem_size ]          uct_mm_fifo_elem_t + inline data
 *   [ buffers: num_bufs x buf_stride ]           bcopy/zcopy payloads
 *
 * Each element (a power-of-two number of cache lines) carries a sequence
 * word, the message header and, for am_short, the data itself, so a short
 * message moves as one cache line. Larger messages go to the element's
 * buffer, whose offset the receiver keeps in the element. There are more
 * buffers than elements: when an am handler keeps a buffer (returns
 * UCS_INPROGRESS on UCT_CB_PARAM_FLAG_DESC), the receiver gives the element
 * a spare buffer before it frees the element, and takes the kept one back
 * into its spares on uct_iface_release_desc(). A buffer is laid out as
 * [pad][release pointer][rx_headroom][data: seg_size], data cache-aligned;
 * the element's offset points at the data, so senders know nothing of it.
 *
 * Protocol. Tickets are 63-bit numbers; ticket t uses element t % fifo_size.
 *
 *   sender:  1. h = head; if h - tail_seen >= fifo_size, re-read tail (acquire)
 *               and give up with UCS_ERR_NO_RESOURCE if still full;
 *            2. CAS head: h -> (h + 1) without ARMED; on failure another
 *               sender won, retry;
 *            3. write the element (header, data or buffer);
 *            4. store elem.seq = h + 1 with release;
 *            5. if the head word had the ARMED bit, wake the receiver.
 *   receiver: poll elem[tail].seq == tail + 1 (acquire); deliver; then
 *            store ctl.tail = tail + 1 with release, which frees the element.
 *
 * Why this is correct:
 *  - one owner per ticket: head only moves by CAS, so two senders never hold
 *    the same ticket, and a sender claims a ticket only after it has seen
 *    (acquire on tail) that the receiver released the element's previous
 *    lap. The receiver's reads of that element happen before its release of
 *    tail, so the sender's writes cannot overwrite a message being read.
 *  - publication: the payload stores are sequenced before the release store
 *    of seq; the receiver's acquire load of seq == t + 1 therefore sees them.
 *    Stale values are t + 1 - k * fifo_size, never t + 1, and the zeroed
 *    start (seq 0) never equals t + 1 >= 1, so no flag has to be reset.
 *  - no stall on full: a ticket is taken only when its element is free, so
 *    a claimed element is always filled at once. A sender killed between
 *    claim and publish does block the FIFO behind it (the receiver cannot
 *    tell "slow" from "dead" without the sender's identity); the receiver
 *    never blocks, it just sees nothing more.
 *  - tail_seen is only ever an older value of tail, so a sender may think
 *    the FIFO is full when it is not (it then re-reads), never the reverse.
 *  - wake-ups: the receiver sets ARMED in the head word with an atomic OR
 *    that returns the old head; senders claim with CAS on the same word. The
 *    two read-modify-writes are ordered: if the claim came first, the OR
 *    sees head != tail and arming reports UCS_ERR_BUSY; if the OR came
 *    first, the sender's CAS sees ARMED and signals after publishing. So the
 *    receiver never sleeps on a published or about-to-be-published message,
 *    and the sender's fast path pays no extra fence for it. The claim that
 *    sees ARMED clears it, so one message after an arm signals, and an arm
 *    lasts until that message whatever the receiver does in between.
 *
 * The sender reads only its own cache of tail and the head line (which
 * stays in its cache unless others send too); the receiver polls one seq
 * word when idle and writes tail in a line of its own.
 */
#ifndef UCT_MM_FIFO_H_
#define UCT_MM_FIFO_H_

#include <ucs/sys/compiler_def.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

BEGIN_C_DECLS

#define UCT_MM_FIFO_MAGIC      0x4f46494658435575ull /* "uUCXFIFO" little endian */
#define UCT_MM_FIFO_VERSION    1u

/** Bit of ctl.head set while the receiver waits on its event fd. */
#define UCT_MM_FIFO_HEAD_ARMED UCS_BIT(63)
#define UCT_MM_FIFO_HEAD_MASK  (UCT_MM_FIFO_HEAD_ARMED - 1)

/** ctl.state values: the owner says it closed the iface. */
#define UCT_MM_FIFO_STATE_OPEN   0u
#define UCT_MM_FIFO_STATE_CLOSED 1u

/** Element flags. */
#define UCT_MM_FIFO_ELEM_INLINE  UCS_BIT(0) /**< data in the element (am_short) */

/** Longest abstract socket name suffix of the wake-up channel. */
#define UCT_MM_FIFO_SIGNAL_NAME_MAX 48

/** Start of the FIFO segment. Three cache lines with different writers. */
typedef struct uct_mm_fifo_ctl {
    /* Written once by the owner before its address is published; read by
     * senders only while they connect (and then copied, never trusted again). */
    uint64_t magic;
    uint32_t version;
    uint32_t owner_pid;
    uint32_t fifo_size;    /**< elements, a power of two */
    uint32_t elem_size;    /**< bytes per element, a power of two >= 64 */
    uint64_t seg_size;     /**< data bytes of one buffer */
    uint64_t elems_offset; /**< from the segment start */
    uint64_t bufs_offset;
    uint64_t buf_stride;   /**< bytes from one buffer to the next, >= seg_size */
    uint64_t num_bufs;
    uint64_t total_size;   /**< of the whole segment */
    uint64_t signal_id;    /**< names the owner's wake-up socket */

    /* Claimed tickets (bit 63: ARMED). Senders CAS it. */
    uint64_t head  __attribute__((aligned(UCS_CACHE_LINE_SIZE)));

    /* Written by the owner only: released tickets, and whether it closed. */
    uint64_t tail  __attribute__((aligned(UCS_CACHE_LINE_SIZE)));
    uint32_t state;
} __attribute__((aligned(UCS_CACHE_LINE_SIZE))) uct_mm_fifo_ctl_t;

/** Head of a FIFO element; inline data follows. */
typedef struct uct_mm_fifo_elem {
    uint64_t seq;        /**< ticket + 1 once published */
    uint32_t length;     /**< bytes of the message (am_short: header included) */
    uint8_t  am_id;
    uint8_t  flags;      /**< UCT_MM_FIFO_ELEM_* */
    uint16_t reserved;
    uint64_t buf_offset; /**< owner-written: this element's buffer in the segment */
} uct_mm_fifo_elem_t;

/** Inline data of an element. */
static inline void *uct_mm_fifo_elem_data(uct_mm_fifo_elem_t *elem)
{
    return elem + 1;
}

/** Element of ticket @a ticket in an element array. */
static inline uct_mm_fifo_elem_t *
uct_mm_fifo_elem(void *elems, uint64_t ticket, uint64_t mask, unsigned elem_shift)
{
    return (uct_mm_fifo_elem_t*)((char*)elems + ((ticket & mask) << elem_shift));
}

/** Write the abstract socket name of a FIFO's wake-up channel (NUL-terminated). */
static inline int uct_mm_fifo_signal_name(char *buf, size_t max, uint32_t pid,
                                          uint64_t signal_id)
{
    return snprintf(buf, max, "ucx-posix-%u-%016llx", pid,
                    (unsigned long long)signal_id);
}

END_C_DECLS

#endif
