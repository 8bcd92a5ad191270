#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_ucp.h"
#include "perf_tests.h"
#include "perf_stats.h"
#include "perf_time.h"
#include "perf_wire.h"

#include <ucp/api/ucp.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/*
 * The UCP driver: tag_lat, tag_bw, tag_sync_lat, tag_sync_bw over any
 * memory kind; the same loops run ucp_am_* and stream_* (perf_ucp_am.c).
 *
 * Each side has one ucp context, one worker (two workers of one context
 * when both sides live in this process), a send buffer holding the test
 * pattern and a receive buffer. The sides exchange their worker addresses
 * over perf_oob and each creates an endpoint to the other; transports come
 * from UCX_TLS as the environment gives it, and libucp chooses among them.
 *
 *   tag_lat, tag_sync_lat  the initiator posts a receive for the pong, sends
 *                          a ping (ucp_tag_send_nbx, or _sync_nbx) and waits
 *                          for both; the responder keeps one receive posted
 *                          and answers every ping with a pong of the same
 *                          size and kind of send. Half a round trip is the
 *                          latency.
 *   tag_bw                 the initiator streams sends (at most
 *                          PERF_UCP_TX_WINDOW unfinished); the responder
 *                          keeps PERF_UCP_RX_WINDOW receives posted and sends
 *                          an ack after the warm-up and after the last
 *                          message. The clock stops at the final ack.
 *   tag_bibw (and          both sides stream at once: the initiator as in
 *   ucp_am_bibw,           tag_bw, keeping its own receive window posted;
 *   stream_bibw)           the responder sends as many messages back, its
 *                          warm-up ones at once and the measured ones after
 *                          the initiator's first measured message arrived
 *                          (its clock was running then). The clock stops
 *                          when the final ack and the responder's last
 *                          message are both in; bandwidth counts both ways.
 *
 * Like the UCT driver, the responder's work is a step function, called by
 * its own wait loop or, with both sides here (-l), by the initiator's.
 *
 * Validation (-V): every receive buffer is overwritten with a stale pattern
 * before its receive is posted and checked for the test pattern (and the
 * received length) when the receive completes; tag_bw then keeps a single
 * receive posted, so that no other message may land in the buffer between
 * completion and check.
 *
 * GPU buffers go to libucp without a memory type: it detects them, as it
 * does for an application. One-sided tests are in perf_ucp_rma.c.
 */

static int perf_ucp_side_is_local(const perf_ucp_ctx_t *ctx, int index)
{
    return (ctx->run->role & ((index == PERF_SIDE_SEND) ? PERF_ROLE_INITIATOR :
                                                          PERF_ROLE_RESPONDER)) != 0;
}

void perf_ucp_record_bad(perf_ucp_side_t *side, const char *fmt, ...)
{
    va_list ap;

    if (side->bad++ == 0) {
        va_start(ap, fmt);
        vsnprintf(side->bad_what, sizeof(side->bad_what), fmt, ap);
        va_end(ap);
    }
}

void perf_ucp_set_async(perf_ucp_side_t *side, ucs_status_t status)
{
    if (side->async_status == UCS_OK) {
        side->async_status = status;
    }
}

/* ------------------------------------------------------------------------ */
/* Operations                                                                */
/* ------------------------------------------------------------------------ */

static void perf_ucp_send_cb(void *request, ucs_status_t status, void *user_data)
{
    perf_ucp_side_t *side = user_data;

    ++side->tx_completed;
    if (status != UCS_OK) {
        perf_ucp_set_async(side, status);
    }
    ucp_request_free(request);
}

void perf_ucp_rx_complete(perf_ucp_side_t *side, ucs_status_t status, size_t length,
                          const void *host_data)
{
    size_t msg_size = side->ctx->params->msg_size;
    size_t bad_offset, nbad;

    ++side->rx_count;
    if (status != UCS_OK) {
        perf_ucp_set_async(side, status);
        return;
    }
    if (!side->ctx->validate) {
        return;
    }
    if (length != msg_size) {
        perf_ucp_record_bad(side, "message %llu: %zu bytes, expected %zu",
                            (unsigned long long)side->rx_count, length, msg_size);
        return;
    }
    nbad = (host_data != NULL) ?
           perf_mem_check_host(host_data, 0, msg_size, PERF_UCP_SEED_DATA, &bad_offset) :
           perf_mem_check(&side->rbuf, 0, msg_size, PERF_UCP_SEED_DATA, &bad_offset);
    if (nbad > 0) {
        perf_ucp_record_bad(side, "message %llu: wrong data at byte %zu",
                            (unsigned long long)side->rx_count, bad_offset);
    }
}

/* A tag data receive has completed (inside the call or from progress). */
static void perf_ucp_rx_done(perf_ucp_side_t *side, ucs_status_t status,
                             const ucp_tag_recv_info_t *info)
{
    if ((status == UCS_OK) && side->ctx->validate &&
        (info->sender_tag != PERF_UCP_TAG_DATA)) {
        ++side->rx_count;
        perf_ucp_record_bad(side, "message %llu: tag 0x%llx, expected 0x%llx",
                            (unsigned long long)side->rx_count,
                            (unsigned long long)info->sender_tag,
                            (unsigned long long)PERF_UCP_TAG_DATA);
        return;
    }
    perf_ucp_rx_complete(side, status, info->length, NULL);
}

static void perf_ucp_recv_cb(void *request, ucs_status_t status,
                             const ucp_tag_recv_info_t *info, void *user_data)
{
    perf_ucp_rx_done(user_data, status, info);
    ucp_request_free(request);
}

static void perf_ucp_ack_cb(void *request, ucs_status_t status,
                            const ucp_tag_recv_info_t *info, void *user_data)
{
    perf_ucp_side_t *side = user_data;

    (void)info;
    ++side->acks;
    if (status != UCS_OK) {
        perf_ucp_set_async(side, status);
    }
    ucp_request_free(request);
}

ucs_status_t perf_ucp_op_failed(perf_ucp_side_t *side, const char *what,
                                ucs_status_t status)
{
    perf_run_set_error(side->ctx->run, "%s failed: %s", what, ucs_status_string(status));
    return status;
}

void perf_ucp_param_mem_type(ucp_request_param_t *param, const perf_mem_kind_t *kind)
{
    if ((kind == NULL) || (kind->mem_type == UCS_MEMORY_TYPE_HOST)) {
        param->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
        param->memory_type   = UCS_MEMORY_TYPE_HOST;
    }
}

/* Start a send of @a length bytes of @a buffer with @a tag. */
ucs_status_t perf_ucp_send(perf_ucp_side_t *side, const void *buffer, size_t length,
                           ucp_tag_t tag, int sync)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sptr;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = perf_ucp_send_cb;
    param.user_data    = side;
    perf_ucp_param_mem_type(&param, (buffer == side->sbuf.ptr) ? side->sbuf.kind : NULL);
    sptr = sync ? ucp_tag_send_sync_nbx(side->ep, buffer, length, tag, &param) :
                  ucp_tag_send_nbx(side->ep, buffer, length, tag, &param);
    ++side->tx_posted;
    if (ucs_likely(sptr == NULL)) {
        ++side->tx_completed;
        return UCS_OK;
    } else if (ucs_unlikely(UCS_PTR_IS_ERR(sptr))) {
        ++side->tx_completed;
        return perf_ucp_op_failed(side, sync ? "ucp_tag_send_sync_nbx" :
                                               "ucp_tag_send_nbx", UCS_PTR_STATUS(sptr));
    }
    return UCS_OK;
}

static ucs_status_t perf_ucp_tag_send_data(perf_ucp_side_t *side)
{
    return perf_ucp_send(side, side->sbuf.ptr, side->ctx->params->msg_size,
                         PERF_UCP_TAG_DATA, side->ctx->sync);
}

static inline ucs_status_t perf_ucp_send_data(perf_ucp_side_t *side)
{
    return side->ctx->ops->send(side);
}

static inline ucs_status_t perf_ucp_post_recv(perf_ucp_side_t *side)
{
    return side->ctx->ops->post_recv(side);
}

/* Post one tag data receive into the receive buffer. */
static ucs_status_t perf_ucp_tag_post_recv(perf_ucp_side_t *side)
{
    size_t msg_size = side->ctx->params->msg_size;
    ucp_request_param_t param;
    ucp_tag_recv_info_t info;
    ucs_status_ptr_t rptr;
    ucs_status_t status;

    if (side->ctx->validate) {
        status = perf_mem_fill(&side->rbuf, 0, msg_size, PERF_UCP_SEED_STALE);
        if (status != UCS_OK) {
            return perf_ucp_op_failed(side, "filling the receive buffer", status);
        }
    }
    param.op_attr_mask      = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                              UCP_OP_ATTR_FIELD_RECV_INFO;
    param.cb.recv           = perf_ucp_recv_cb;
    param.user_data         = side;
    perf_ucp_param_mem_type(&param, side->rbuf.kind);
    param.recv_info.tag_info = &info;
    rptr = ucp_tag_recv_nbx(side->worker, side->rbuf.ptr, msg_size, PERF_UCP_TAG_DATA,
                            PERF_UCP_TAG_MASK, &param);
    ++side->rx_posted;
    if (ucs_likely(rptr == NULL)) {
        perf_ucp_rx_done(side, UCS_OK, &info);
    } else if (ucs_unlikely(UCS_PTR_IS_ERR(rptr))) {
        ++side->rx_count;
        return perf_ucp_op_failed(side, "ucp_tag_recv_nbx", UCS_PTR_STATUS(rptr));
    }
    return UCS_OK;
}

static ucs_status_t perf_ucp_tag_init(perf_ucp_side_t *side)
{
    (void)side;
    return UCS_OK;
}

const perf_ucp_data_ops_t perf_ucp_tag_ops = {
    .features  = 0,
    .init      = perf_ucp_tag_init,
    .cleanup   = NULL,
    .send      = perf_ucp_tag_send_data,
    .post_recv = perf_ucp_tag_post_recv,
    .poll      = NULL
};

/* Initiator (tag_bw): post one ack receive. */
ucs_status_t perf_ucp_post_ack(perf_ucp_side_t *side)
{
    ucp_request_param_t param;
    ucs_status_ptr_t rptr;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param.cb.recv      = perf_ucp_ack_cb;
    param.user_data    = side;
    param.memory_type  = UCS_MEMORY_TYPE_HOST;
    rptr = ucp_tag_recv_nbx(side->worker, &side->ack_rx_value, sizeof(side->ack_rx_value),
                            PERF_UCP_TAG_ACK, PERF_UCP_TAG_MASK, &param);
    ++side->acks_posted;
    if (rptr == NULL) {
        ++side->acks;
    } else if (UCS_PTR_IS_ERR(rptr)) {
        return perf_ucp_op_failed(side, "ucp_tag_recv_nbx (ack)", UCS_PTR_STATUS(rptr));
    }
    return UCS_OK;
}

/* ------------------------------------------------------------------------ */
/* Responder steps                                                           */
/* ------------------------------------------------------------------------ */

/* Ping-pong: keep one receive posted; answer every ping. */
static void perf_ucp_step_pong(perf_ucp_side_t *side)
{
    perf_ucp_ctx_t *ctx = side->ctx;

    while (side->replies < side->rx_count) {
        /* The next receive first, so that the next ping finds it posted. */
        if ((side->rx_posted == side->rx_count) && (side->rx_posted < ctx->total) &&
            (perf_ucp_post_recv(side) != UCS_OK)) {
            perf_ucp_set_async(side, UCS_ERR_IO_ERROR);
            return;
        }
        ++side->replies;
        if (perf_ucp_send_data(side) != UCS_OK) {
            perf_ucp_set_async(side, UCS_ERR_IO_ERROR);
            return;
        }
    }
    if ((side->rx_posted == side->rx_count) && (side->rx_posted < ctx->total) &&
        (perf_ucp_post_recv(side) != UCS_OK)) {
        perf_ucp_set_async(side, UCS_ERR_IO_ERROR);
    }
}

/* Keep ctx->rx_window data receives posted, up to the run's total. */
static void perf_ucp_step_rx_window(perf_ucp_side_t *side)
{
    perf_ucp_ctx_t *ctx = side->ctx;

    while ((side->rx_posted < ctx->total) &&
           (side->rx_posted - side->rx_count < ctx->rx_window)) {
        if (perf_ucp_post_recv(side) != UCS_OK) {
            perf_ucp_set_async(side, UCS_ERR_IO_ERROR);
            return;
        }
    }
}

/* Stream: keep the receive window posted; ack the warm-up and the end. */
static void perf_ucp_step_stream(perf_ucp_side_t *side)
{
    perf_ucp_ctx_t *ctx = side->ctx;
    uint64_t warmup     = ctx->params->warmup;

    perf_ucp_step_rx_window(side);
    if (side->async_status != UCS_OK) {
        return;
    }
    if (((side->replies == 0) && (warmup > 0) && (side->rx_count >= warmup)) ||
        ((side->replies < ((warmup > 0) ? 2 : 1)) && (side->rx_count == ctx->total))) {
        ++side->replies;
        side->ack_value = side->rx_count;
        if (perf_ucp_send(side, &side->ack_value, sizeof(side->ack_value),
                          PERF_UCP_TAG_ACK, 0) != UCS_OK) {
            perf_ucp_set_async(side, UCS_ERR_IO_ERROR);
        }
    }
}

/*
 * Bidirectional stream: receive and ack as perf_ucp_step_stream(), and send
 * the responder's own messages, at most PERF_UCP_TX_WINDOW unfinished. The
 * measured ones wait for the initiator's first measured message, so that
 * none of them goes out before the initiator's clock started.
 */
static void perf_ucp_step_bidir(perf_ucp_side_t *side)
{
    perf_ucp_ctx_t *ctx = side->ctx;
    uint64_t warmup     = ctx->params->warmup;

    perf_ucp_step_stream(side);
    while ((side->async_status == UCS_OK) && (side->data_sent < ctx->total) &&
           (side->tx_posted - side->tx_completed < PERF_UCP_TX_WINDOW) &&
           ((side->data_sent != warmup) || (warmup == 0) || (side->rx_count > warmup))) {
        ++side->data_sent;
        if (perf_ucp_send_data(side) != UCS_OK) {
            perf_ucp_set_async(side, UCS_ERR_IO_ERROR);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Waiting                                                                   */
/* ------------------------------------------------------------------------ */

static uint64_t perf_ucp_activity(const perf_ucp_ctx_t *ctx)
{
    const perf_ucp_side_t *side;
    uint64_t sum = 0;
    int i;

    for (i = 0; i < PERF_SIDE_LAST; ++i) {
        side = &ctx->sides[i];
        sum += side->rx_count + side->tx_completed + side->acks + side->replies;
    }
    return sum;
}

/* Peer, library errors and the stall deadline; every few thousand spins. */
static ucs_status_t perf_ucp_check(perf_ucp_ctx_t *ctx, const char *what,
                                   uint64_t *deadline_p)
{
    uint64_t now = perf_time_mono_ns();
    ucs_status_t status;
    perf_oob_t *oob;
    int i;

    for (i = 0; i < PERF_SIDE_LAST; ++i) {
        if (ctx->sides[i].async_status != UCS_OK) {
            perf_run_set_error(ctx->run, "a ucp operation of the %s failed: %s",
                               (i == PERF_SIDE_SEND) ? "initiator" : "responder",
                               ucs_status_string(ctx->sides[i].async_status));
            return ctx->sides[i].async_status;
        }
    }

    if (!ctx->loopback && (ctx->oob_state == PERF_OOB_STATE_OK)) {
        oob    = ctx->run->oob;
        status = perf_oob_check_peer(oob);
        if (status == UCS_ERR_REJECTED) {
            perf_run_set_error(ctx->run, "%s: %s", oob->peer_name, oob->error);
            ctx->oob_state = PERF_OOB_STATE_PEER_WAITING;
            return status;
        } else if (status != UCS_OK) {
            perf_run_set_error(ctx->run, "%s", oob->error);
            ctx->oob_state = PERF_OOB_STATE_CLOSED;
            return status;
        }
    }

    if ((*deadline_p == 0) || (perf_ucp_activity(ctx) != ctx->activity)) {
        ctx->activity = perf_ucp_activity(ctx);
        *deadline_p   = now + (uint64_t)(ctx->params->timeout * 1e9);
    } else if (now >= *deadline_p) {
        perf_run_set_error(ctx->run, "timed out after %.0f s waiting for %s over ucp "
                           "(UCX_TLS=%s; raise --timeout if this is expected)",
                           ctx->params->timeout, what, ctx->tls);
        return UCS_ERR_TIMED_OUT;
    }
    return UCS_OK;
}

void perf_ucp_progress(perf_ucp_ctx_t *ctx)
{
    int i;

    for (i = 0; i < PERF_SIDE_LAST; ++i) {
        if (ctx->sides[i].worker != NULL) {
            ucp_worker_progress(ctx->sides[i].worker);
            if (ctx->ops->poll != NULL) {
                ctx->ops->poll(&ctx->sides[i]);
            }
        }
    }
    if (ctx->resp_step != NULL) {
        ctx->resp_step(&ctx->sides[PERF_SIDE_RECV]);
    }
    if (ctx->init_step != NULL) {
        ctx->init_step(&ctx->sides[PERF_SIDE_SEND]);
    }
}

/* Progress until *@a counter >= @a target. */
ucs_status_t perf_ucp_wait(perf_ucp_ctx_t *ctx, const uint64_t *counter,
                           uint64_t target, const char *what)
{
    uint64_t deadline = 0;
    unsigned spins    = 0;
    ucs_status_t status;

    while (*(volatile const uint64_t*)counter < target) {
        perf_ucp_progress(ctx);
        if (ucs_unlikely(++spins == PERF_UCP_CHECK_SPINS)) {
            spins  = 0;
            status = perf_ucp_check(ctx, what, &deadline);
            if (status != UCS_OK) {
                return status;
            }
        }
    }
    return UCS_OK;
}

/* Wait for every send of @a side to complete. */
ucs_status_t perf_ucp_drain(perf_ucp_side_t *side)
{
    return perf_ucp_wait(side->ctx, &side->tx_completed, side->tx_posted,
                         "sends to complete");
}

/* ------------------------------------------------------------------------ */
/* The loops                                                                 */
/* ------------------------------------------------------------------------ */

static ucs_status_t perf_ucp_run_responder(perf_ucp_ctx_t *ctx)
{
    perf_ucp_side_t *side = &ctx->sides[PERF_SIDE_RECV];
    perf_ucp_step_func_t step = (ctx->run->test->pattern == PERF_PATTERN_PINGPONG)
                                    ? perf_ucp_step_pong
                                : ctx->bidir ? perf_ucp_step_bidir
                                             : perf_ucp_step_stream;
    uint64_t replies = (ctx->run->test->pattern == PERF_PATTERN_PINGPONG) ? ctx->total :
                       ((ctx->params->warmup > 0) ? 2 : 1);
    uint64_t deadline = 0;
    unsigned spins    = 0;
    ucs_status_t status;

    step(side);
    while ((side->replies < replies) || (side->tx_completed < side->tx_posted) ||
           (side->data_sent < (ctx->bidir ? ctx->total : 0))) {
        ucp_worker_progress(side->worker);
        if (ctx->ops->poll != NULL) {
            ctx->ops->poll(side);
        }
        step(side);
        if (ucs_unlikely(++spins == PERF_UCP_CHECK_SPINS)) {
            spins  = 0;
            status = perf_ucp_check(ctx, "messages from the initiator", &deadline);
            if (status != UCS_OK) {
                return status;
            }
        }
    }
    return perf_ucp_check(ctx, "the end", &deadline);
}

static ucs_status_t perf_ucp_run_pingpong(perf_ucp_ctx_t *ctx, perf_stats_t *st)
{
    perf_ucp_side_t *side = &ctx->sides[PERF_SIDE_SEND];
    ucs_status_t status;
    uint64_t i;

    for (i = 0; i < ctx->total; ++i) {
        if (i == ctx->params->warmup) {
            perf_stats_start(st);
        }
        status = perf_ucp_post_recv(side);
        if (status == UCS_OK) {
            status = perf_ucp_send_data(side);
        }
        if (status == UCS_OK) {
            status = perf_ucp_wait(ctx, &side->rx_count, i + 1, "a reply");
        }
        if (ctx->sync && (status == UCS_OK)) {
            status = perf_ucp_drain(side);
        }
        if (status != UCS_OK) {
            return status;
        }
        if (i >= ctx->params->warmup) {
            perf_stats_sample(st);
        }
    }
    return UCS_OK;
}

static ucs_status_t perf_ucp_run_stream(perf_ucp_ctx_t *ctx, perf_stats_t *st)
{
    perf_ucp_side_t *side = &ctx->sides[PERF_SIDE_SEND];
    uint64_t warmup       = ctx->params->warmup;
    ucs_status_t status;
    uint64_t i;

    for (i = 0; i < ((warmup > 0) ? 2 : 1); ++i) {
        status = perf_ucp_post_ack(side);
        if (status != UCS_OK) {
            return status;
        }
    }

    for (i = 0; i < ctx->total; ++i) {
        if (ucs_unlikely(i == warmup)) {
            if (warmup > 0) {
                /* Warm-up traffic must be gone before the clock starts. */
                status = perf_ucp_wait(ctx, &side->acks, 1, "the warm-up ack");
                if ((status == UCS_OK) && ctx->bidir) {
                    status = perf_ucp_wait(ctx, &side->rx_count, warmup,
                                           "the responder's warm-up messages");
                }
                if (status != UCS_OK) {
                    return status;
                }
            }
            perf_stats_start(st);
        }
        if (ucs_unlikely(side->tx_posted - side->tx_completed >= PERF_UCP_TX_WINDOW)) {
            status = perf_ucp_wait(ctx, &side->tx_completed,
                                   side->tx_posted - PERF_UCP_TX_WINDOW + 1,
                                   "sends to complete");
            if (status != UCS_OK) {
                return status;
            }
        }
        status = perf_ucp_send_data(side);
        if (ucs_unlikely(status != UCS_OK)) {
            return status;
        }
        if ((ctx->resp_step != NULL) || (ctx->init_step != NULL)) {
            perf_ucp_progress(ctx);
        }
        if (i >= warmup) {
            perf_stats_sample(st);
        }
    }
    status = perf_ucp_wait(ctx, &side->acks, side->acks_posted, "the final ack");
    if ((status == UCS_OK) && ctx->bidir) {
        status = perf_ucp_wait(ctx, &side->rx_count, ctx->total,
                               "the responder's last messages");
    }
    return status;
}

static ucs_status_t perf_ucp_run_initiator(perf_ucp_ctx_t *ctx)
{
    int pingpong = (ctx->run->test->pattern == PERF_PATTERN_PINGPONG);
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

    status = pingpong ? perf_ucp_run_pingpong(ctx, &st) : perf_ucp_run_stream(ctx, &st);
    end    = perf_time_now();
    if (status == UCS_OK) {
        perf_stats_finish(&st, pingpong ? st.prev : end,
                          perf_test_msgs_per_iter(ctx->run->test), ctx->params,
                          &ctx->run->result);
        status = perf_ucp_drain(&ctx->sides[PERF_SIDE_SEND]);
    }
    if ((status == UCS_OK) && ctx->loopback) {
        /* The responder's last replies must be out before teardown. */
        status = perf_ucp_drain(&ctx->sides[PERF_SIDE_RECV]);
    }
    perf_stats_cleanup(&st);
    return status;
}

static ucs_status_t perf_ucp_run_test(perf_ucp_ctx_t *ctx)
{
    int pingpong = (ctx->run->test->pattern == PERF_PATTERN_PINGPONG);

    ctx->rx_window = ctx->validate ? 1 : PERF_UCP_RX_WINDOW;
    ctx->bidir     = !!(ctx->run->test->flags & PERF_TEST_FLAG_BIDIR);
    if (ctx->run->role == PERF_ROLE_RESPONDER) {
        return perf_ucp_run_responder(ctx);
    }
    if (ctx->bidir) {
        ctx->init_step = perf_ucp_step_rx_window;
        ctx->init_step(&ctx->sides[PERF_SIDE_SEND]);
    }
    if (ctx->loopback) {
        ctx->resp_step = pingpong     ? perf_ucp_step_pong
                         : ctx->bidir ? perf_ucp_step_bidir
                                      : perf_ucp_step_stream;
        ctx->resp_step(&ctx->sides[PERF_SIDE_RECV]);
    }
    return perf_ucp_run_initiator(ctx);
}

/* ------------------------------------------------------------------------ */
/* Setup, wire-up, teardown                                                  */
/* ------------------------------------------------------------------------ */

static ucs_status_t perf_ucp_setup_side(perf_ucp_ctx_t *ctx, perf_ucp_side_t *side)
{
    const perf_mem_kind_t *kind = ctx->run->mem[side->index];
    size_t length               = ctx->params->msg_size;
    ucp_worker_params_t wparams;
    ucs_status_t status;

    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(ctx->context, &wparams, &side->worker);
    if (status != UCS_OK) {
        side->worker = NULL;
        perf_run_set_error(ctx->run, "ucp_worker_create() failed: %s",
                           ucs_status_string(status));
        return status;
    }
    status = ucp_worker_get_address(side->worker, &side->address, &side->address_length);
    if (status != UCS_OK) {
        side->address = NULL;
        perf_run_set_error(ctx->run, "ucp_worker_get_address() failed: %s",
                           ucs_status_string(status));
        return status;
    }

    status = perf_mem_alloc(kind, length, ctx->params->device[side->index], &side->sbuf);
    if (status == UCS_OK) {
        status = perf_mem_alloc(kind, length, ctx->params->device[side->index], &side->rbuf);
    }
    if (status != UCS_OK) {
        perf_run_set_error(ctx->run, "cannot allocate %zu bytes of %s memory", length,
                           kind->name);
        return status;
    }
    status = perf_mem_fill(&side->sbuf, 0, length, PERF_UCP_SEED_DATA);
    if (status == UCS_OK) {
        status = perf_mem_fill(&side->rbuf, 0, length, PERF_UCP_SEED_STALE);
    }
    if (status != UCS_OK) {
        perf_run_set_error(ctx->run, "cannot fill the %s buffers", kind->name);
        return status;
    }
    return ctx->ops->init(side);
}

static ucs_status_t perf_ucp_setup(perf_ucp_ctx_t *ctx)
{
    ucp_config_t *config;
    ucp_params_t params;
    ucs_status_t status;
    const char *tls;
    int i;

    tls = getenv("UCX_TLS");
    snprintf(ctx->tls, sizeof(ctx->tls), "%s", ((tls != NULL) && (*tls != '\0')) ?
                                               tls : "all");

    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        perf_run_set_error(ctx->run, "ucp_config_read() failed: %s",
                           ucs_status_string(status));
        return status;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = perf_ucp_rma_features(ctx) | ctx->ops->features;
    status = ucp_init(&params, config, &ctx->context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        ctx->context = NULL;
        perf_run_set_error(ctx->run, "ucp_init() failed (UCX_TLS=%s): %s", ctx->tls,
                           ucs_status_string(status));
        return status;
    }

    for (i = 0; i < PERF_SIDE_LAST; ++i) {
        if (perf_ucp_side_is_local(ctx, i)) {
            status = perf_ucp_setup_side(ctx, &ctx->sides[i]);
            if (status != UCS_OK) {
                return status;
            }
        }
    }
    return UCS_OK;
}

static ucs_status_t perf_ucp_connect_side(perf_ucp_ctx_t *ctx, perf_ucp_side_t *side,
                                          const void *address)
{
    ucp_ep_params_t eparams;
    ucs_status_t status;

    memset(&eparams, 0, sizeof(eparams));
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = address;
    status = ucp_ep_create(side->worker, &eparams, &side->ep);
    if (status != UCS_OK) {
        side->ep = NULL;
        perf_run_set_error(ctx->run, "ucp_ep_create() to the %s failed (UCX_TLS=%s): %s",
                           (side->index == PERF_SIDE_SEND) ? "responder" : "initiator",
                           ctx->tls, ucs_status_string(status));
    }
    return status;
}

/* Exchange worker addresses and create both endpoints. */
static ucs_status_t perf_ucp_wireup(perf_ucp_ctx_t *ctx, ucs_status_t status)
{
    perf_ucp_side_t *local;
    size_t length;
    void *data;

    if (ctx->loopback) {
        if (status == UCS_OK) {
            status = perf_ucp_connect_side(ctx, &ctx->sides[PERF_SIDE_SEND],
                                           ctx->sides[PERF_SIDE_RECV].address);
        }
        if (status == UCS_OK) {
            status = perf_ucp_connect_side(ctx, &ctx->sides[PERF_SIDE_RECV],
                                           ctx->sides[PERF_SIDE_SEND].address);
        }
        return status;
    }

    if (status != UCS_OK) {
        (void)perf_run_exchange(ctx->run, &ctx->oob_state, NULL, 0, NULL, NULL);
        return status;
    }

    local  = &ctx->sides[(ctx->run->role == PERF_ROLE_INITIATOR) ? PERF_SIDE_SEND :
                                                                   PERF_SIDE_RECV];
    status = perf_run_exchange(ctx->run, &ctx->oob_state,
                               local->address, local->address_length, &data, &length);
    if (status != UCS_OK) {
        return status;
    }
    status = perf_ucp_connect_side(ctx, local, data);
    free(data);

    /* Both endpoints exist before the first message. */
    if (perf_run_exchange(ctx->run, &ctx->oob_state, NULL, 0, NULL, NULL) != UCS_OK) {
        status = (status != UCS_OK) ? status : UCS_ERR_CANCELED;
    }
    return status;
}

/* The responder reports what its validation found (perf_run_finish). */
static ucs_status_t perf_ucp_finish(perf_ucp_ctx_t *ctx, ucs_status_t status)
{
    perf_ucp_side_t *resp = &ctx->sides[PERF_SIDE_RECV];

    if (ctx->loopback) {
        return status;
    }
    return perf_run_finish(ctx->run, &ctx->oob_state, &resp->bad, resp->bad_what,
                           sizeof(resp->bad_what), status);
}

/* Close an endpoint: flush for a bounded time, then force. */
static void perf_ucp_close_ep(perf_ucp_ctx_t *ctx, perf_ucp_side_t *side, int force)
{
    uint64_t deadline = perf_time_mono_ns() + (uint64_t)(PERF_UCP_CLOSE_TIMEOUT * 1e9);
    ucp_request_param_t param;
    ucs_status_ptr_t req;

    memset(&param, 0, sizeof(param));
    if (force) {
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    }
    req = ucp_ep_close_nbx(side->ep, &param);
    side->ep = NULL;
    if ((req == NULL) || UCS_PTR_IS_ERR(req)) {
        return;
    }
    while ((ucp_request_check_status(req) == UCS_INPROGRESS) &&
           (perf_time_mono_ns() < deadline)) {
        perf_ucp_progress(ctx);
    }
    ucp_request_free(req);
}

static void perf_ucp_cleanup(perf_ucp_ctx_t *ctx, int force)
{
    perf_ucp_side_t *side;
    int i;

    ctx->resp_step = NULL;
    perf_ucp_rma_cleanup(ctx);
    for (i = 0; i < PERF_SIDE_LAST; ++i) {
        if (ctx->sides[i].ep != NULL) {
            perf_ucp_close_ep(ctx, &ctx->sides[i], force);
        }
    }
    for (i = 0; i < PERF_SIDE_LAST; ++i) {
        side = &ctx->sides[i];
        if ((ctx->ops->cleanup != NULL) && (side->worker != NULL)) {
            ctx->ops->cleanup(side);
        }
        if (side->address != NULL) {
            ucp_worker_release_address(side->worker, side->address);
        }
        if (side->worker != NULL) {
            ucp_worker_destroy(side->worker);
        }
        perf_mem_free(&side->sbuf);
        perf_mem_free(&side->rbuf);
    }
    if (ctx->context != NULL) {
        ucp_cleanup(ctx->context);
    }
}

static ucs_status_t perf_ucp_run(perf_run_t *run)
{
    perf_ucp_ctx_t ctx;
    ucs_status_t status;
    char *p;
    int i;

    memset(&ctx, 0, sizeof(ctx));
    ctx.run      = run;
    ctx.params   = run->params;
    ctx.loopback = (run->role == PERF_ROLE_BOTH);
    ctx.validate = !!(run->params->flags & PERF_FLAG_VALIDATE);
    ctx.sync     = (run->test->op == PERF_OP_TAG_SYNC);
    ctx.ops      = (run->test->op == PERF_OP_AM) ? &perf_ucp_am_ops :
                   (run->test->op == PERF_OP_STREAM) ? &perf_ucp_stream_ops :
                                                       &perf_ucp_tag_ops;
    for (i = 0; i < PERF_SIDE_LAST; ++i) {
        ctx.sides[i].ctx   = &ctx;
        ctx.sides[i].index = i;
    }

    if ((run->test->flags & PERF_TEST_FLAG_ONE_SIDED) &&
        (perf_ucp_rma_unavailable() != NULL)) {
        perf_run_set_error(run, "%s: %s", run->test->name, perf_ucp_rma_unavailable());
        status = UCS_ERR_UNSUPPORTED;
    } else if (run->params->sg_count > 1) {
        perf_run_set_error(run, "%s: scatter-gather lists (-s a,b,...) are not supported "
                           "by the UCP tests; give one size", run->test->name);
        status = UCS_ERR_UNSUPPORTED;
    } else {
        status = perf_ucp_setup(&ctx);
    }
    status = perf_ucp_wireup(&ctx, status);
    if (run->test->flags & PERF_TEST_FLAG_ONE_SIDED) {
        status = perf_ucp_rma_wireup(&ctx, status);
    }
    if (status == UCS_OK) {
        /* UCX_TLS lists transports with commas; CSV output must not. */
        snprintf(run->result.transport, sizeof(run->result.transport), "ucp/%s",
                 ctx.tls);
        for (p = run->result.transport; *p != '\0'; ++p) {
            *p = (*p == ',') ? '+' : *p;
        }
        run->result.layout = PERF_LAYOUT_AUTO;
        ctx.total          = ctx.params->warmup + ctx.params->iters;
        status = (run->test->flags & PERF_TEST_FLAG_ONE_SIDED) ? perf_ucp_rma_run(&ctx) :
                                                                 perf_ucp_run_test(&ctx);
        if ((status == UCS_OK) && (run->role != PERF_ROLE_RESPONDER)) {
            perf_ucp_proto_describe(&ctx);
            snprintf(run->result.info, sizeof(run->result.info), "ucp %s, protocol %s, "
                     "UCX_TLS=%s", perf_op_name(run->test->op), run->result.proto,
                     run->result.transport + 4);
        }
    }
    status = perf_ucp_finish(&ctx, status);

    for (i = 0; (status == UCS_OK) && (i < PERF_SIDE_LAST); ++i) {
        if (ctx.sides[i].bad > 0) {
            perf_run_set_error(run, "validation failed at the %s: %llu bad "
                               "message(s); first: %s",
                               (i == PERF_SIDE_SEND) ? "initiator (client)" :
                                                       "responder (server)",
                               (unsigned long long)ctx.sides[i].bad,
                               ctx.sides[i].bad_what);
            status = UCS_ERR_IO_ERROR;
        }
    }

    /* Both sides close their endpoints before either destroys its worker,
     * so that no side sees the other's transport go away under an open
     * endpoint (which libucp reports as a failed peer). */
    perf_ucp_rma_cleanup(&ctx);
    if ((status == UCS_OK) && !ctx.loopback) {
        for (i = 0; i < PERF_SIDE_LAST; ++i) {
            if (ctx.sides[i].ep != NULL) {
                perf_ucp_close_ep(&ctx, &ctx.sides[i], 0);
            }
        }
        status = perf_run_exchange(ctx.run, &ctx.oob_state, NULL, 0, NULL, NULL);
    }
    perf_ucp_cleanup(&ctx, status != UCS_OK);
    return status;
}

/* UCX_TLS=self reaches only this process: -L must run as -l. */
static int perf_ucp_single_process(const perf_params_t *params)
{
    const char *tls = getenv("UCX_TLS");

    (void)params;
    return (tls != NULL) && !strcmp(tls, "self");
}

static const char *perf_ucp_unavailable(void)
{
    return NULL;
}

const perf_driver_t perf_ucp_driver = {
    .api            = PERF_API_UCP,
    .name           = "ucp",
    .description    = "protocol layer (ucp)",
    .unavailable    = perf_ucp_unavailable,
    .run            = perf_ucp_run,
    .single_process = perf_ucp_single_process
};
