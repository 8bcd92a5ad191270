#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_ucp.h"
#include "perf_stats.h"
#include "perf_tests.h"
#include "perf_time.h"
#include "perf_wire.h"

#include <stdlib.h>
#include <string.h>

/*
 * ucp_put_bw and ucp_get_bw: the initiator streams ucp_put_nbx (from its
 * send buffer into the responder's receive buffer) or ucp_get_nbx (from
 * the responder's send buffer, which holds the test pattern, into its own
 * receive buffer), at most PERF_UCP_RMA_WINDOW unfinished, then flushes
 * the endpoint; the clock stops when the flush completes. The responder
 * only progresses (unless -o) until the initiator's end message, a tag
 * message, arrives; then it checks its buffer (put, -V).
 *
 * The RMA calls are weak references: a libucp without them (RMA is being
 * written) makes these tests report "not available" instead of making the
 * tool fail to load.
 */

#define PERF_UCP_RMA_WINDOW 128 /* unfinished operations at most */

ucs_status_ptr_t ucp_put_nbx(ucp_ep_h ep, const void *buffer, size_t count,
                             uint64_t remote_addr, ucp_rkey_h rkey,
                             const ucp_request_param_t *param) __attribute__((weak));
ucs_status_ptr_t ucp_get_nbx(ucp_ep_h ep, void *buffer, size_t count,
                             uint64_t remote_addr, ucp_rkey_h rkey,
                             const ucp_request_param_t *param) __attribute__((weak));

const char *perf_ucp_rma_unavailable(void)
{
    if ((ucp_put_nbx == NULL) || (ucp_get_nbx == NULL)) {
        return "not available: this libucp has no UCP RMA (ucp_put_nbx/ucp_get_nbx)";
    }
    return NULL;
}

uint64_t perf_ucp_rma_features(const perf_ucp_ctx_t *ctx)
{
    /* Tags stay on: the end of a one-sided run is a tag message. */
    return UCP_FEATURE_TAG | ((ctx->run->test->flags & PERF_TEST_FLAG_ONE_SIDED) ?
                              UCP_FEATURE_RMA : 0);
}

/* The responder's buffer the initiator works on. */
static perf_mem_buf_t *perf_ucp_rma_remote_buf(perf_ucp_ctx_t *ctx)
{
    perf_ucp_side_t *resp = &ctx->sides[PERF_SIDE_RECV];

    return (ctx->run->test->op == PERF_OP_PUT) ? &resp->rbuf : &resp->sbuf;
}

static ucs_status_t perf_ucp_rma_expose(perf_ucp_ctx_t *ctx, perf_ucp_side_t *resp)
{
    perf_mem_buf_t *buf = perf_ucp_rma_remote_buf(ctx);
    ucp_mem_map_params_t mparams;
    ucs_status_t status;

    memset(&mparams, 0, sizeof(mparams));
    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mparams.address    = buf->ptr;
    mparams.length     = buf->length;
    status = ucp_mem_map(ctx->context, &mparams, &resp->memh);
    if (status != UCS_OK) {
        resp->memh = NULL;
        perf_run_set_error(ctx->run, "ucp_mem_map() of the %s buffer failed: %s",
                           buf->kind->name, ucs_status_string(status));
        return status;
    }
    status = ucp_rkey_pack(ctx->context, resp->memh, &resp->rkey_buffer,
                           &resp->rkey_length);
    if (status != UCS_OK) {
        resp->rkey_buffer = NULL;
        perf_run_set_error(ctx->run, "ucp_rkey_pack() failed: %s",
                           ucs_status_string(status));
    }
    return status;
}

static ucs_status_t perf_ucp_rma_import(perf_ucp_ctx_t *ctx, perf_ucp_side_t *init,
                                        uint64_t address, const void *rkey_buffer)
{
    ucs_status_t status;

    init->remote_addr = address;
    status = ucp_ep_rkey_unpack(init->ep, rkey_buffer, &init->rkey);
    if (status != UCS_OK) {
        init->rkey = NULL;
        perf_run_set_error(ctx->run, "ucp_ep_rkey_unpack() failed: %s",
                           ucs_status_string(status));
    }
    return status;
}

ucs_status_t perf_ucp_rma_wireup(perf_ucp_ctx_t *ctx, ucs_status_t status)
{
    perf_ucp_side_t *init = &ctx->sides[PERF_SIDE_SEND];
    perf_ucp_side_t *resp = &ctx->sides[PERF_SIDE_RECV];
    perf_wire_out_t out   = {0};
    const void *rkey_buffer;
    perf_wire_in_t in;
    uint64_t address;
    size_t length;
    void *data = NULL;

    if ((status == UCS_OK) && (ctx->run->role & PERF_ROLE_RESPONDER)) {
        status = perf_ucp_rma_expose(ctx, resp);
    }
    if (ctx->loopback) {
        return (status != UCS_OK) ? status :
               perf_ucp_rma_import(ctx, init, (uintptr_t)perf_ucp_rma_remote_buf(ctx)->ptr,
                                   resp->rkey_buffer);
    }

    /* Responder: address and rkey; initiator: nothing. An error on either
     * side becomes the exchange's ERROR, so both stop here alike. */
    if ((status == UCS_OK) && (ctx->run->role == PERF_ROLE_RESPONDER)) {
        perf_wire_put_u64(&out, (uintptr_t)perf_ucp_rma_remote_buf(ctx)->ptr);
        perf_wire_put_bytes(&out, resp->rkey_buffer, resp->rkey_length);
    }
    status = perf_run_exchange(ctx->run, &ctx->oob_state, out.data, out.length, &data,
                               &length);
    perf_wire_free(&out);
    if ((status != UCS_OK) || (ctx->run->role == PERF_ROLE_RESPONDER)) {
        free(data);
        return status;
    }

    perf_wire_in_init(&in, data, length);
    address = perf_wire_get_u64(&in);
    (void)perf_wire_get_bytes(&in, &rkey_buffer);
    if (in.failed || (in.offset != in.length)) {
        perf_run_set_error(ctx->run, "malformed remote key from the responder");
        status = UCS_ERR_INVALID_PARAM;
    } else {
        status = perf_ucp_rma_import(ctx, init, address, rkey_buffer);
    }
    free(data);
    return status;
}

void perf_ucp_rma_cleanup(perf_ucp_ctx_t *ctx)
{
    perf_ucp_side_t *init = &ctx->sides[PERF_SIDE_SEND];
    perf_ucp_side_t *resp = &ctx->sides[PERF_SIDE_RECV];

    if (init->rkey != NULL) {
        ucp_rkey_destroy(init->rkey);
        init->rkey = NULL;
    }
    if (resp->rkey_buffer != NULL) {
        ucp_rkey_buffer_release(resp->rkey_buffer);
        resp->rkey_buffer = NULL;
    }
    if (resp->memh != NULL) {
        ucp_mem_unmap(ctx->context, resp->memh);
        resp->memh = NULL;
    }
}

static void perf_ucp_rma_cb(void *request, ucs_status_t status, void *user_data)
{
    perf_ucp_side_t *side = user_data;

    ++side->tx_completed;
    if (status != UCS_OK) {
        perf_ucp_set_async(side, status);
    }
    ucp_request_free(request);
}

/* Count a started operation; @a sptr is what the call returned. */
static ucs_status_t perf_ucp_rma_started(perf_ucp_side_t *side, ucs_status_ptr_t sptr,
                                         const char *what)
{
    ++side->tx_posted;
    if (sptr == NULL) {
        ++side->tx_completed;
    } else if (UCS_PTR_IS_ERR(sptr)) {
        ++side->tx_completed;
        return perf_ucp_op_failed(side, what, UCS_PTR_STATUS(sptr));
    }
    return UCS_OK;
}

static inline ucs_status_t perf_ucp_rma_issue(perf_ucp_ctx_t *ctx, perf_ucp_side_t *side)
{
    size_t length = ctx->params->msg_size;
    ucp_request_param_t param;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = perf_ucp_rma_cb;
    param.user_data    = side;
    if (ctx->run->test->op == PERF_OP_PUT) {
        perf_ucp_param_mem_type(&param, side->sbuf.kind);
        return perf_ucp_rma_started(side, ucp_put_nbx(side->ep, side->sbuf.ptr, length,
                                                      side->remote_addr, side->rkey,
                                                      &param), "ucp_put_nbx");
    }
    perf_ucp_param_mem_type(&param, side->rbuf.kind);
    return perf_ucp_rma_started(side, ucp_get_nbx(side->ep, side->rbuf.ptr, length,
                                                  side->remote_addr, side->rkey, &param),
                                "ucp_get_nbx");
}

/* Every operation so far is complete at the target (put) or here (get). */
static ucs_status_t perf_ucp_rma_flush(perf_ucp_ctx_t *ctx, perf_ucp_side_t *side)
{
    ucp_request_param_t param;
    ucs_status_t status;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = perf_ucp_rma_cb;
    param.user_data    = side;
    status = perf_ucp_rma_started(side, ucp_ep_flush_nbx(side->ep, &param),
                                  "ucp_ep_flush_nbx");
    return (status != UCS_OK) ? status : perf_ucp_drain(side);
}

static ucs_status_t perf_ucp_rma_initiator(perf_ucp_ctx_t *ctx)
{
    perf_ucp_side_t *side = &ctx->sides[PERF_SIDE_SEND];
    uint64_t warmup       = ctx->params->warmup;
    size_t bad_offset     = 0;
    ucs_status_t status;
    perf_stats_t st;
    uint64_t i;

    status = perf_stats_init(&st, ctx->params->iters, ctx->run->progress);
    if (status != UCS_OK) {
        perf_run_set_error(ctx->run, "cannot allocate %llu samples",
                           (unsigned long long)ctx->params->iters);
        return status;
    }
    if (warmup == 0) {
        perf_stats_start(&st);
    }
    for (i = 0; (status == UCS_OK) && (i < ctx->total); ++i) {
        if (ucs_unlikely((i == warmup) && (warmup > 0))) {
            status = perf_ucp_rma_flush(ctx, side);
            if (status != UCS_OK) {
                break;
            }
            perf_stats_start(&st);
        }
        if (ucs_unlikely(side->tx_posted - side->tx_completed >= PERF_UCP_RMA_WINDOW)) {
            status = perf_ucp_wait(ctx, &side->tx_completed,
                                   side->tx_posted - PERF_UCP_RMA_WINDOW + 1,
                                   "one-sided operations to complete");
            if (status != UCS_OK) {
                break;
            }
        }
        status = perf_ucp_rma_issue(ctx, side);
        if (i >= warmup) {
            perf_stats_sample(&st);
        }
    }
    if (status == UCS_OK) {
        status = perf_ucp_rma_flush(ctx, side);
    }
    if (status == UCS_OK) {
        perf_stats_finish(&st, perf_time_now(), 1, ctx->params, &ctx->run->result);
    }
    perf_stats_cleanup(&st);

    if ((status == UCS_OK) && ctx->validate) {
        if ((ctx->run->test->op == PERF_OP_GET) &&
            (perf_mem_check(&side->rbuf, 0, ctx->params->msg_size, PERF_UCP_SEED_DATA,
                            &bad_offset) > 0)) {
            perf_ucp_record_bad(side, "get destination: wrong data at byte %zu",
                                bad_offset);
        } else if ((ctx->run->test->op == PERF_OP_PUT) && ctx->loopback &&
                   (perf_mem_check(&ctx->sides[PERF_SIDE_RECV].rbuf, 0,
                                   ctx->params->msg_size, PERF_UCP_SEED_DATA,
                                   &bad_offset) > 0)) {
            perf_ucp_record_bad(&ctx->sides[PERF_SIDE_RECV],
                                "put target buffer: wrong data at byte %zu", bad_offset);
        }
    }

    /* The end message; with -o the responder does not progress, and the
     * run's final exchange is its end. */
    if ((status == UCS_OK) && !ctx->loopback &&
        !(ctx->params->flags & PERF_FLAG_NO_RESP_PROGRESS)) {
        side->ack_value = ctx->total;
        status = perf_ucp_send(side, &side->ack_value, sizeof(side->ack_value),
                               PERF_UCP_TAG_ACK, 0);
        if (status == UCS_OK) {
            status = perf_ucp_drain(side);
        }
    }
    return status;
}

static ucs_status_t perf_ucp_rma_responder(perf_ucp_ctx_t *ctx)
{
    perf_ucp_side_t *side = &ctx->sides[PERF_SIDE_RECV];
    size_t bad_offset     = 0;
    ucs_status_t status;

    if (ctx->params->flags & PERF_FLAG_NO_RESP_PROGRESS) {
        /* As the UCT driver: the initiator's end is the final exchange,
         * which comes after the whole run (a dead peer still ends it). */
        ctx->run->oob->timeout = 0;
        return UCS_OK;
    }
    status = perf_ucp_post_ack(side);
    if (status == UCS_OK) {
        status = perf_ucp_wait(ctx, &side->acks, 1, "the end of the initiator's "
                               "one-sided operations");
    }
    if ((status == UCS_OK) && ctx->validate && (ctx->run->test->op == PERF_OP_PUT) &&
        (perf_mem_check(&side->rbuf, 0, ctx->params->msg_size, PERF_UCP_SEED_DATA,
                        &bad_offset) > 0)) {
        perf_ucp_record_bad(side, "put target buffer: wrong data at byte %zu", bad_offset);
    }
    return status;
}

ucs_status_t perf_ucp_rma_run(perf_ucp_ctx_t *ctx)
{
    return (ctx->run->role == PERF_ROLE_RESPONDER) ? perf_ucp_rma_responder(ctx) :
                                                     perf_ucp_rma_initiator(ctx);
}
