#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_uct.h"
#include "perf_oob.h"
#include "perf_stats.h"
#include "perf_tests.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Wait loops look at the peer, the transport and the clock this often:
 * rarely enough to cost nothing, often enough to notice a dead peer fast. */
#define PERF_UCT_CHECK_SPINS 65536

/* ------------------------------------------------------------------------ */
/* Layout selection                                                          */
/* ------------------------------------------------------------------------ */

/* Every capability flag of an operation, in any layout. */
static uint64_t perf_uct_op_flags(perf_op_t op)
{
    switch (op) {
    case PERF_OP_AM:
        return UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY | UCT_IFACE_FLAG_AM_ZCOPY;
    case PERF_OP_PUT:
        return UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_PUT_BCOPY | UCT_IFACE_FLAG_PUT_ZCOPY;
    case PERF_OP_GET:
        return UCT_IFACE_FLAG_GET_BCOPY | UCT_IFACE_FLAG_GET_ZCOPY;
    default:
        return 0;
    }
}

/* Why @a layout cannot carry the test's messages, or NULL when it can. */
static const char *perf_uct_layout_problem(perf_uct_ctx_t *ctx, perf_layout_t layout,
                                           char *buf, size_t max)
{
    const uct_iface_attr_t *attr = &ctx->iface_attr;
    const perf_test_desc_t *test = ctx->run->test;
    size_t size = ctx->params->msg_size;
    const uct_iface_op_caps_t *caps;
    uint64_t flag;
    size_t limit;

    switch (test->op) {
    case PERF_OP_AM:
        caps = &attr->cap.am;
        flag = (layout == PERF_LAYOUT_SHORT) ? UCT_IFACE_FLAG_AM_SHORT :
               (layout == PERF_LAYOUT_BCOPY) ? UCT_IFACE_FLAG_AM_BCOPY :
                                               UCT_IFACE_FLAG_AM_ZCOPY;
        break;
    case PERF_OP_PUT:
        caps = &attr->cap.put;
        flag = (layout == PERF_LAYOUT_SHORT) ? UCT_IFACE_FLAG_PUT_SHORT :
               (layout == PERF_LAYOUT_BCOPY) ? UCT_IFACE_FLAG_PUT_BCOPY :
                                               UCT_IFACE_FLAG_PUT_ZCOPY;
        break;
    case PERF_OP_GET:
        caps = &attr->cap.get;
        flag = (layout == PERF_LAYOUT_SHORT) ? 0 :
               (layout == PERF_LAYOUT_BCOPY) ? UCT_IFACE_FLAG_GET_BCOPY :
                                               UCT_IFACE_FLAG_GET_ZCOPY;
        break;
    default:
        snprintf(buf, max, "UCT cannot run %s", test->name);
        return buf;
    }

    if ((flag == 0) || !(attr->cap.flags & flag)) {
        snprintf(buf, max, "%s/%s does not support %s %s", ctx->resource.tl_name,
                 ctx->resource.dev_name, perf_op_name(test->op), perf_layout_names[layout]);
        return buf;
    }

    if ((layout != PERF_LAYOUT_ZCOPY) && !ctx->run->mem[PERF_SIDE_SEND]->cpu_access) {
        snprintf(buf, max, "%s %s reads the buffer with the CPU, and %s memory is not "
                 "CPU-accessible: use -D zcopy", perf_op_name(test->op),
                 perf_layout_names[layout], ctx->run->mem[PERF_SIDE_SEND]->name);
        return buf;
    }

    limit = (layout == PERF_LAYOUT_SHORT) ? caps->max_short :
            (layout == PERF_LAYOUT_BCOPY) ? caps->max_bcopy : caps->max_zcopy;
    if (test->op == PERF_OP_AM) {
        if ((layout == PERF_LAYOUT_ZCOPY) && (caps->max_hdr < PERF_UCT_HDR_SIZE)) {
            snprintf(buf, max, "%s/%s am zcopy carries a header of %zu bytes, less than "
                     "the %zu the test needs", ctx->resource.tl_name,
                     ctx->resource.dev_name, caps->max_hdr, PERF_UCT_HDR_SIZE);
            return buf;
        }
        /* zcopy sends the header apart from the payload. */
        if (layout == PERF_LAYOUT_ZCOPY) {
            size -= PERF_UCT_HDR_SIZE;
        }
    }
    if (size > limit) {
        snprintf(buf, max, "%s/%s %s %s takes at most %zu bytes", ctx->resource.tl_name,
                 ctx->resource.dev_name, perf_op_name(test->op), perf_layout_names[layout],
                 limit + ((test->op == PERF_OP_AM) && (layout == PERF_LAYOUT_ZCOPY) ?
                          PERF_UCT_HDR_SIZE : 0));
        return buf;
    }
    if ((layout == PERF_LAYOUT_ZCOPY) && (ctx->params->sg_count > caps->max_iov) &&
        (caps->max_iov > 0)) {
        snprintf(buf, max, "%u scatter-gather elements exceed the %s zcopy limit of "
                 "%s/%s (%zu)", ctx->params->sg_count, perf_op_name(test->op),
                 ctx->resource.tl_name, ctx->resource.dev_name, caps->max_iov);
        return buf;
    }
    return NULL;
}

ucs_status_t perf_uct_select_layout(perf_uct_ctx_t *ctx)
{
    static const perf_layout_t order[] = {PERF_LAYOUT_SHORT, PERF_LAYOUT_BCOPY,
                                          PERF_LAYOUT_ZCOPY};
    const uct_iface_attr_t *attr = &ctx->iface_attr;
    char why[PERF_ERROR_MAX], all[PERF_ERROR_MAX] = "";
    size_t len, n;
    perf_layout_t layout = ctx->params->layout;
    unsigned i;

    if ((layout == PERF_LAYOUT_SHORT) && (ctx->run->test->flags & PERF_TEST_FLAG_NO_SHORT)) {
        perf_run_set_error(ctx->run, "%s cannot use -D short", ctx->run->test->name);
        return UCS_ERR_INVALID_PARAM;
    }

    /* Credits, replies and the end of one-sided tests are small AMs; a
     * one-sided test over a transport without them (GPU copy engines)
     * ends with an out-of-band exchange instead. */
    ctx->oob_ctl = !(attr->cap.flags & (UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY)) &&
                   (ctx->run->test->flags & PERF_TEST_FLAG_ONE_SIDED);
    if (!(attr->cap.flags & (UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY)) &&
        !ctx->oob_ctl) {
        perf_run_set_error(ctx->run, "%s/%s has no am short or am bcopy, which the test "
                           "needs for its control messages", ctx->resource.tl_name,
                           ctx->resource.dev_name);
        return UCS_ERR_UNSUPPORTED;
    }

    if (!(attr->cap.flags & perf_uct_op_flags(ctx->run->test->op))) {
        perf_run_set_error(ctx->run, "%s/%s does not support %s at all (no short, "
                           "bcopy or zcopy)", ctx->resource.tl_name,
                           ctx->resource.dev_name, perf_op_name(ctx->run->test->op));
        return UCS_ERR_UNSUPPORTED;
    }

    if ((ctx->run->test->op == PERF_OP_AM) && (ctx->params->msg_size < PERF_UCT_HDR_SIZE)) {
        perf_run_set_error(ctx->run, "%zu bytes is too small: an active message of this "
                           "test starts with an %zu-byte sequence number",
                           ctx->params->msg_size, PERF_UCT_HDR_SIZE);
        return UCS_ERR_INVALID_PARAM;
    }

    if (layout != PERF_LAYOUT_AUTO) {
        if (perf_uct_layout_problem(ctx, layout, why, sizeof(why)) != NULL) {
            perf_run_set_error(ctx->run, "cannot send %zu-byte messages: %s",
                               ctx->params->msg_size, why);
            return UCS_ERR_UNSUPPORTED;
        }
        ctx->layout = layout;
        return UCS_OK;
    }

    /* Auto: the cheapest layout that fits, as a protocol layer would pick. */
    for (i = 0; i < sizeof(order) / sizeof(order[0]); ++i) {
        if ((order[i] == PERF_LAYOUT_SHORT) && (ctx->run->test->flags & PERF_TEST_FLAG_NO_SHORT)) {
            continue;
        }
        if (perf_uct_layout_problem(ctx, order[i], why, sizeof(why)) == NULL) {
            ctx->layout = order[i];
            return UCS_OK;
        }
        /* Join the reasons, cutting what does not fit. */
        len = strlen(all);
        if ((len > 0) && (len + 2 < sizeof(all))) {
            memcpy(all + len, "; ", 3);
            len += 2;
        }
        n = strlen(why);
        if (n > sizeof(all) - len - 1) {
            n = sizeof(all) - len - 1;
        }
        memcpy(all + len, why, n);
        all[len + n] = '\0';
    }
    perf_run_set_error(ctx->run, "no %s layout can carry %zu-byte messages: %s",
                       perf_op_name(ctx->run->test->op), ctx->params->msg_size, all);
    return UCS_ERR_UNSUPPORTED;
}

/* ------------------------------------------------------------------------ */
/* Receiving                                                                 */
/* ------------------------------------------------------------------------ */

static void perf_uct_record_bad(perf_uct_side_t *side, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void perf_uct_record_bad(perf_uct_side_t *side, const char *fmt, ...)
{
    va_list ap;

    if (side->bad++ == 0) {
        va_start(ap, fmt);
        vsnprintf(side->bad_what, sizeof(side->bad_what), fmt, ap);
        va_end(ap);
    }
}

/* -V: a data message is its sequence number, then the pattern. */
static void perf_uct_check_message(perf_uct_side_t *side, const void *data, size_t length)
{
    size_t size = side->ctx->params->msg_size, bad_offset = 0;
    uint64_t seq;

    if (length != size) {
        perf_uct_record_bad(side, "message %llu has %zu bytes, expected %zu",
                            (unsigned long long)side->rx_count, length, size);
        return;
    }
    memcpy(&seq, data, sizeof(seq));
    if (seq != side->rx_count) {
        perf_uct_record_bad(side, "message %llu arrived as number %llu (lost or "
                            "reordered)", (unsigned long long)seq,
                            (unsigned long long)side->rx_count);
        return;
    }
    if (perf_mem_check_host((const char*)data + PERF_UCT_HDR_SIZE, PERF_UCT_HDR_SIZE,
                            size - PERF_UCT_HDR_SIZE, PERF_UCT_SEED_DATA, &bad_offset) > 0) {
        perf_uct_record_bad(side, "message %llu: wrong data at byte %zu",
                            (unsigned long long)seq, bad_offset);
    }
}

static ucs_status_t perf_uct_am_data_cb(void *arg, void *data, size_t length,
                                        unsigned flags)
{
    perf_uct_side_t *side = arg;

    if (side->ctx->params->flags & PERF_FLAG_VALIDATE) {
        perf_uct_check_message(side, data, length);
    }
    ++side->rx_count;
    return UCS_OK;
}

static ucs_status_t perf_uct_am_credit_cb(void *arg, void *data, size_t length,
                                          unsigned flags)
{
    perf_uct_side_t *side = arg;
    uint64_t value;

    if (length >= sizeof(value)) {
        memcpy(&value, data, sizeof(value));
        side->credit = value;
    }
    return UCS_OK;
}

static ucs_status_t perf_uct_am_fin_cb(void *arg, void *data, size_t length,
                                       unsigned flags)
{
    perf_uct_side_t *side = arg;

    side->fin = 1;
    return UCS_OK;
}

ucs_status_t perf_uct_set_handlers(perf_uct_side_t *side)
{
    static const struct {
        uint8_t           id;
        uct_am_callback_t cb;
    } handlers[] = {
        {PERF_UCT_AM_DATA,   perf_uct_am_data_cb},
        {PERF_UCT_AM_CREDIT, perf_uct_am_credit_cb},
        {PERF_UCT_AM_FIN,    perf_uct_am_fin_cb}
    };
    ucs_status_t status;
    unsigned i;

    for (i = 0; i < sizeof(handlers) / sizeof(handlers[0]); ++i) {
        status = uct_iface_set_am_handler(side->iface, handlers[i].id, handlers[i].cb,
                                          side, 0);
        if (status != UCS_OK) {
            perf_run_set_error(side->ctx->run, "cannot set an am handler: %s",
                               ucs_status_string(status));
            return status;
        }
    }
    return UCS_OK;
}

/* ------------------------------------------------------------------------ */
/* Sending                                                                   */
/* ------------------------------------------------------------------------ */

/* bcopy: sequence number, then the rest of the message from the buffer. */
static size_t perf_uct_pack_data(void *dest, void *arg)
{
    perf_uct_side_t *side = arg;
    size_t size           = side->ctx->params->msg_size;

    memcpy(dest, &side->pack_seq, PERF_UCT_HDR_SIZE);
    memcpy((char*)dest + PERF_UCT_HDR_SIZE, (const char*)side->buf.ptr + PERF_UCT_HDR_SIZE,
           size - PERF_UCT_HDR_SIZE);
    return size;
}

static size_t perf_uct_pack_buffer(void *dest, void *arg)
{
    perf_uct_side_t *side = arg;

    memcpy(dest, side->buf.ptr, side->ctx->params->msg_size);
    return side->ctx->params->msg_size;
}

static size_t perf_uct_pack_u64(void *dest, void *arg)
{
    memcpy(dest, arg, sizeof(uint64_t));
    return sizeof(uint64_t);
}

static void perf_uct_unpack_buffer(void *arg, const void *data, size_t length)
{
    perf_uct_side_t *side = arg;

    memcpy(side->buf.ptr, data, length);
}

/* An operation that takes a completion: count it when it is in flight. */
static inline ucs_status_t perf_uct_track(perf_uct_side_t *side, ucs_status_t status)
{
    if (status == UCS_INPROGRESS) {
        ++side->posted;
        return UCS_OK;
    }
    return status;
}

/* One data message (ping, pong or stream element) with number @a seq. */
static inline ucs_status_t perf_uct_send_data(perf_uct_side_t *side, uint64_t seq)
{
    perf_uct_ctx_t *ctx = side->ctx;
    size_t size         = ctx->params->msg_size;
    ssize_t packed;

    switch (ctx->layout) {
    case PERF_LAYOUT_SHORT:
        return uct_ep_am_short(side->ep, PERF_UCT_AM_DATA, seq,
                               (const char*)side->buf.ptr + PERF_UCT_HDR_SIZE,
                               (unsigned)(size - PERF_UCT_HDR_SIZE));
    case PERF_LAYOUT_BCOPY:
        side->pack_seq = seq;
        packed = uct_ep_am_bcopy(side->ep, PERF_UCT_AM_DATA, perf_uct_pack_data, side, 0);
        return (packed >= 0) ? UCS_OK : (ucs_status_t)packed;
    default:
        return perf_uct_track(side, uct_ep_am_zcopy(side->ep, PERF_UCT_AM_DATA, &seq,
                                                    PERF_UCT_HDR_SIZE, side->iov,
                                                    side->iovcnt, 0, &side->comp));
    }
}

/* One put or get of the whole message. */
static inline ucs_status_t perf_uct_send_rma(perf_uct_side_t *side)
{
    perf_uct_ctx_t *ctx = side->ctx;
    size_t size         = ctx->params->msg_size;
    ssize_t packed;

    if (ctx->run->test->op == PERF_OP_PUT) {
        switch (ctx->layout) {
        case PERF_LAYOUT_SHORT:
            return uct_ep_put_short(side->ep, side->buf.ptr, (unsigned)size,
                                    side->remote_addr, side->rkey.rkey);
        case PERF_LAYOUT_BCOPY:
            packed = uct_ep_put_bcopy(side->ep, perf_uct_pack_buffer, side,
                                      side->remote_addr, side->rkey.rkey);
            return (packed >= 0) ? UCS_OK : (ucs_status_t)packed;
        default:
            return perf_uct_track(side, uct_ep_put_zcopy(side->ep, side->iov, side->iovcnt,
                                                         side->remote_addr, side->rkey.rkey,
                                                         &side->comp));
        }
    }

    if (ctx->layout == PERF_LAYOUT_BCOPY) {
        return perf_uct_track(side, uct_ep_get_bcopy(side->ep, perf_uct_unpack_buffer, side,
                                                     size, side->remote_addr,
                                                     side->rkey.rkey, &side->comp));
    }
    return perf_uct_track(side, uct_ep_get_zcopy(side->ep, side->iov, side->iovcnt,
                                                 side->remote_addr, side->rkey.rkey,
                                                 &side->comp));
}

/* A control message carrying @a value (credit count, end of test). */
static ucs_status_t perf_uct_send_ctl(perf_uct_side_t *side, uint8_t id, uint64_t value)
{
    ssize_t packed;

    if (side->ctx->iface_attr.cap.flags & UCT_IFACE_FLAG_AM_SHORT) {
        return uct_ep_am_short(side->ep, id, value, NULL, 0);
    }
    packed = uct_ep_am_bcopy(side->ep, id, perf_uct_pack_u64, &value, 0);
    return (packed >= 0) ? UCS_OK : (ucs_status_t)packed;
}

/* ------------------------------------------------------------------------ */
/* Progress and waiting                                                      */
/* ------------------------------------------------------------------------ */

/* One round of progress; the responder's work too when it lives here. */
static inline void perf_uct_progress(perf_uct_ctx_t *ctx)
{
    uct_worker_progress(ctx->worker);
    if (ctx->resp_step != NULL) {
        ctx->resp_step(&ctx->sides[PERF_SIDE_RECV]);
    }
}

/* Progress until *counter reaches target; @a what names it in a timeout. */
static inline ucs_status_t perf_uct_wait(perf_uct_ctx_t *ctx, const uint64_t *counter,
                                         uint64_t target, const char *what)
{
    uint64_t deadline = 0;
    unsigned spins    = 0;
    ucs_status_t status;

    while (*counter < target) {
        perf_uct_progress(ctx);
        if (ucs_unlikely(++spins == PERF_UCT_CHECK_SPINS)) {
            spins  = 0;
            status = perf_uct_check(ctx, what, &deadline);
            if (status != UCS_OK) {
                return status;
            }
        }
    }
    return UCS_OK;
}

/* Progress while the transport is out of resources. */
static ucs_status_t perf_uct_backoff(perf_uct_ctx_t *ctx, ucs_status_t status,
                                     unsigned *spins_p, uint64_t *deadline_p)
{
    if (status != UCS_ERR_NO_RESOURCE) {
        perf_run_set_error(ctx->run, "sending over %s/%s failed: %s",
                           ctx->resource.tl_name, ctx->resource.dev_name,
                           ucs_status_string(status));
        return status;
    }
    perf_uct_progress(ctx);
    if (ucs_unlikely(++*spins_p == PERF_UCT_CHECK_SPINS)) {
        *spins_p = 0;
        return perf_uct_check(ctx, "send resources", deadline_p);
    }
    return UCS_OK;
}

/* Send a control message, progressing while resources are short. */
static ucs_status_t perf_uct_send_ctl_blocking(perf_uct_side_t *side, uint8_t id,
                                               uint64_t value)
{
    uint64_t deadline = 0;
    unsigned spins    = 0;
    ucs_status_t status;

    while ((status = perf_uct_send_ctl(side, id, value)) != UCS_OK) {
        status = perf_uct_backoff(side->ctx, status, &spins, &deadline);
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

/* Complete every operation of the side, remotely too (flush). */
static ucs_status_t perf_uct_flush(perf_uct_side_t *side)
{
    perf_uct_ctx_t *ctx = side->ctx;
    uint64_t deadline   = 0;
    unsigned spins      = 0;
    ucs_status_t status;

    while ((status = uct_ep_flush(side->ep, 0, &side->comp)) == UCS_ERR_NO_RESOURCE) {
        status = perf_uct_backoff(ctx, status, &spins, &deadline);
        if (status != UCS_OK) {
            return status;
        }
    }
    status = perf_uct_track(side, status);
    if (status != UCS_OK) {
        perf_run_set_error(ctx->run, "flush of %s/%s failed: %s", ctx->resource.tl_name,
                           ctx->resource.dev_name, ucs_status_string(status));
        return status;
    }
    status = perf_uct_wait(ctx, &side->completed, side->posted, "operations to complete");
    if ((status == UCS_OK) && (side->comp.status != UCS_OK)) {
        perf_run_set_error(ctx->run, "an operation on %s/%s failed: %s",
                           ctx->resource.tl_name, ctx->resource.dev_name,
                           ucs_status_string(side->comp.status));
        status = side->comp.status;
    }
    return status;
}

/* ------------------------------------------------------------------------ */
/* Responder                                                                 */
/* ------------------------------------------------------------------------ */

/* am_lat: answer every ping with a pong of the same size and layout. */
static void perf_uct_step_pong(perf_uct_side_t *side)
{
    ucs_status_t status;

    while (side->tx_count < side->rx_count) {
        status = perf_uct_send_data(side, side->tx_count);
        if (status != UCS_OK) {
            if ((status != UCS_ERR_NO_RESOURCE) && (side->ctx->async_status == UCS_OK)) {
                side->ctx->async_status = status;
            }
            return; /* retried at the next step */
        }
        ++side->tx_count;
    }
}

/*
 * am_bw: report the count of received messages every credit_step messages
 * (the initiator's window) and at the end of warm-up and of the test, where
 * the initiator waits for it.
 */
static void perf_uct_step_credit(perf_uct_side_t *side)
{
    perf_uct_ctx_t *ctx = side->ctx;
    uint64_t count      = side->rx_count;
    ucs_status_t status;

    if ((count == side->reported) ||
        ((count - side->reported < ctx->credit_step) && (count != ctx->params->warmup) &&
         (count != ctx->total))) {
        return;
    }
    status = perf_uct_send_ctl(side, PERF_UCT_AM_CREDIT, count);
    if (status == UCS_OK) {
        side->reported = count;
    } else if ((status != UCS_ERR_NO_RESOURCE) && (ctx->async_status == UCS_OK)) {
        ctx->async_status = status;
    }
}

/* The responder of a two-process run: progress until its part is done. */
static ucs_status_t perf_uct_run_responder(perf_uct_ctx_t *ctx)
{
    perf_uct_side_t *side = &ctx->sides[PERF_SIDE_RECV];
    const perf_test_desc_t *test = ctx->run->test;
    size_t bad_offset = 0;
    ucs_status_t status;

    if (test->op == PERF_OP_AM) {
        return perf_uct_wait(ctx, (test->pattern == PERF_PATTERN_PINGPONG) ?
                             &side->tx_count : &side->reported, ctx->total,
                             "messages from the initiator");
    }

    if (ctx->params->flags & PERF_FLAG_NO_RESP_PROGRESS) {
        /* -o: no progress here; the initiator's end is the final exchange,
         * which comes after the whole run, so it may take longer than a
         * single wait is allowed to (a dead peer still ends it: EOF). */
        ctx->run->oob->timeout = 0;
        return UCS_OK;
    }
    if (ctx->oob_ctl) {
        /* The initiator's end is this exchange; its transfers need no
         * progress here, so waiting in the channel is all there is to do. */
        ctx->run->oob->timeout = 0;
        status = perf_run_exchange(ctx->run, &ctx->oob_state, NULL, 0, NULL, NULL);
    } else {
        status = perf_uct_wait(ctx, &side->fin, 1, "the end of the initiator's transfers");
    }
    if ((status == UCS_OK) && (test->op == PERF_OP_PUT) &&
        (ctx->params->flags & PERF_FLAG_VALIDATE) &&
        (perf_mem_check(&side->buf, 0, ctx->params->msg_size, PERF_UCT_SEED_DATA,
                        &bad_offset) > 0)) {
        perf_uct_record_bad(side, "put target buffer: wrong data at byte %zu", bad_offset);
    }
    return status;
}

/* ------------------------------------------------------------------------ */
/* Initiator                                                                 */
/* ------------------------------------------------------------------------ */

/* am_lat: ping, wait for the pong, one sample per round trip. */
static ucs_status_t perf_uct_run_pingpong(perf_uct_ctx_t *ctx, perf_stats_t *st)
{
    perf_uct_side_t *side = &ctx->sides[PERF_SIDE_SEND];
    uint64_t deadline = 0, i;
    unsigned spins = 0;
    ucs_status_t status;

    for (i = 0; i < ctx->total; ++i) {
        if (i == ctx->params->warmup) {
            perf_stats_start(st);
        }
        while ((status = perf_uct_send_data(side, i)) != UCS_OK) {
            status = perf_uct_backoff(ctx, status, &spins, &deadline);
            if (status != UCS_OK) {
                return status;
            }
        }
        deadline = 0; /* the deadline is for a stall, not for the run */
        status   = perf_uct_wait(ctx, &side->rx_count, i + 1, "a reply");
        if (status != UCS_OK) {
            return status;
        }
        if (i >= ctx->params->warmup) {
            perf_stats_sample(st);
        }
    }
    return UCS_OK;
}

/*
 * Streams (am_bw, put_bw, get_bw): issue operations back to back, within
 * the flow-control window (am) and the outstanding limit (-O); one sample
 * per issued operation. The run ends when the responder has counted every
 * message (am) or when a flush has completed every operation (put, get).
 */
static ucs_status_t perf_uct_run_stream(perf_uct_ctx_t *ctx, perf_stats_t *st)
{
    perf_uct_side_t *side = &ctx->sides[PERF_SIDE_SEND];
    const perf_params_t *params = ctx->params;
    int am = (ctx->run->test->op == PERF_OP_AM);
    uint64_t deadline = 0, window, outstanding, i = 0;
    unsigned spins = 0;
    int started    = 0;
    ucs_status_t status;

    window      = (am && (params->window > 0)) ? params->window : UINT64_MAX;
    outstanding = (params->outstanding > 0) ? params->outstanding : UINT64_MAX;

    while (i < ctx->total) {
        if (ucs_unlikely(!started && (i == params->warmup))) {
            /* Warm-up traffic must be gone before the clock starts. */
            status = am ? perf_uct_wait(ctx, &side->credit, i, "the warm-up count") :
                          perf_uct_flush(side);
            if (status != UCS_OK) {
                return status;
            }
            perf_stats_start(st);
            started = 1;
        }

        if (ucs_unlikely((i - side->credit >= window) ||
                         (side->posted - side->completed >= outstanding))) {
            status = perf_uct_backoff(ctx, UCS_ERR_NO_RESOURCE, &spins, &deadline);
        } else {
            status = am ? perf_uct_send_data(side, i) : perf_uct_send_rma(side);
            if (ucs_likely(status == UCS_OK)) {
                deadline = 0; /* the deadline is for a stall, not for the run */
                if (++i > params->warmup) {
                    perf_stats_sample(st);
                }
                continue;
            }
            status = perf_uct_backoff(ctx, status, &spins, &deadline);
        }
        if (status != UCS_OK) {
            return status;
        }
    }

    return am ? perf_uct_wait(ctx, &side->credit, ctx->total, "the final count") :
                perf_uct_flush(side);
}

/* After a stream: make sure no zcopy is still reading the buffer. */
static ucs_status_t perf_uct_drain(perf_uct_side_t *side)
{
    return perf_uct_wait(side->ctx, &side->completed, side->posted,
                         "operations to complete");
}

static ucs_status_t perf_uct_run_initiator(perf_uct_ctx_t *ctx)
{
    perf_uct_side_t *side        = &ctx->sides[PERF_SIDE_SEND];
    const perf_test_desc_t *test = ctx->run->test;
    int pingpong                 = (test->pattern == PERF_PATTERN_PINGPONG);
    size_t bad_offset            = 0;
    ucs_status_t status;
    perf_stats_t st;
    uint64_t end;

    status = perf_stats_init(&st, ctx->params->iters, ctx->run->progress);
    if (status != UCS_OK) {
        perf_run_set_error(ctx->run, "cannot allocate %llu samples",
                           (unsigned long long)ctx->params->iters);
        return status;
    }
    if (ctx->params->warmup == 0) {
        perf_stats_start(&st);
    }

    status = pingpong ? perf_uct_run_pingpong(ctx, &st) : perf_uct_run_stream(ctx, &st);
    end    = perf_time_now();
    if (status == UCS_OK) {
        perf_stats_finish(&st, pingpong ? st.prev : end, pingpong ? 2 : 1, ctx->params,
                          &ctx->run->result);
        status = perf_uct_drain(side);
    }
    if ((status == UCS_OK) && ctx->oob_ctl && !ctx->loopback &&
        !(ctx->params->flags & PERF_FLAG_NO_RESP_PROGRESS)) {
        status = perf_run_exchange(ctx->run, &ctx->oob_state, NULL, 0, NULL, NULL);
    } else if ((status == UCS_OK) && (test->op != PERF_OP_AM) && !ctx->oob_ctl &&
               !(ctx->params->flags & PERF_FLAG_NO_RESP_PROGRESS)) {
        status = perf_uct_send_ctl_blocking(side, PERF_UCT_AM_FIN, ctx->total);
        if ((status == UCS_OK) && ctx->loopback) {
            status = perf_uct_wait(ctx, &ctx->sides[PERF_SIDE_RECV].fin, 1, "the end");
        }
    }
    if ((status == UCS_OK) && (test->op == PERF_OP_GET) &&
        (ctx->params->flags & PERF_FLAG_VALIDATE) &&
        (perf_mem_check(&side->buf, 0, ctx->params->msg_size, PERF_UCT_SEED_DATA,
                        &bad_offset) > 0)) {
        perf_uct_record_bad(side, "get result: wrong data at byte %zu", bad_offset);
    }
    if ((status == UCS_OK) && ctx->loopback && (test->op == PERF_OP_PUT) &&
        (ctx->params->flags & PERF_FLAG_VALIDATE) &&
        (perf_mem_check(&ctx->sides[PERF_SIDE_RECV].buf, 0, ctx->params->msg_size,
                        PERF_UCT_SEED_DATA, &bad_offset) > 0)) {
        perf_uct_record_bad(&ctx->sides[PERF_SIDE_RECV],
                            "put target buffer: wrong data at byte %zu", bad_offset);
    }
    perf_stats_cleanup(&st);
    return status;
}

ucs_status_t perf_uct_run_test(perf_uct_ctx_t *ctx)
{
    const perf_test_desc_t *test = ctx->run->test;
    perf_uct_step_func_t step    = NULL;

    ctx->total       = ctx->params->warmup + ctx->params->iters;
    ctx->credit_step = (ctx->params->window > 0) ?
                       ((ctx->params->window / 2 > 0) ? ctx->params->window / 2 : 1) :
                       UINT64_MAX;
    if (test->op == PERF_OP_AM) {
        step = (test->pattern == PERF_PATTERN_PINGPONG) ? perf_uct_step_pong :
                                                          perf_uct_step_credit;
    }

    if (ctx->run->role == PERF_ROLE_RESPONDER) {
        ctx->resp_step = step;
        return perf_uct_run_responder(ctx);
    }
    ctx->resp_step = ctx->loopback ? step : NULL;
    return perf_uct_run_initiator(ctx);
}
