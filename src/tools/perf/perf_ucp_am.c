#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_ucp.h"

#include <stdlib.h>
#include <string.h>

/*
 * Data messages of ucp_am_lat / ucp_am_bw and stream_lat / stream_bw. The
 * loops of perf_ucp.c run them unchanged: only "send one message" and
 * "make room for one message" differ from the tag tests.
 *
 * Active messages: one handler per worker (UCP_AM_FLAG_WHOLE_MSG) counts
 * each message. Eager data is checked (-V) where the library delivers it,
 * in host memory; it is not copied into the receive buffer, as upstream's
 * perftest does not either. A rendezvous message is fetched into the
 * receive buffer with ucp_am_recv_data_nbx, of whatever kind it is, which
 * is where GPU memory moves by the tag path's protocols. With -V fetches go
 * one at a time (the others wait in a queue, kept with UCS_INPROGRESS), so
 * that no fetch overwrites the buffer while another is being checked.
 *
 * Stream: every receive asks for one whole message (WAITALL), so that each
 * completion is one message of the ping-pong or the window.
 */

/* ---- active messages ---------------------------------------------------- */

static void perf_ucp_am_send_cb(void *request, ucs_status_t status, void *user_data)
{
    perf_ucp_side_t *side = user_data;

    ++side->tx_completed;
    if (status != UCS_OK) {
        perf_ucp_set_async(side, status);
    }
    ucp_request_free(request);
}

static ucs_status_t perf_ucp_am_send(perf_ucp_side_t *side)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sptr;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = perf_ucp_am_send_cb;
    param.user_data    = side;
    perf_ucp_param_mem_type(&param, side->sbuf.kind);
    sptr = ucp_am_send_nbx(side->ep, PERF_UCP_AM_ID, side->am_header,
                           side->ctx->params->am_header, side->sbuf.ptr,
                           side->ctx->params->msg_size, &param);
    ++side->tx_posted;
    if (ucs_likely(sptr == NULL)) {
        ++side->tx_completed;
    } else if (ucs_unlikely(UCS_PTR_IS_ERR(sptr))) {
        ++side->tx_completed;
        return perf_ucp_op_failed(side, "ucp_am_send_nbx", UCS_PTR_STATUS(sptr));
    }
    return UCS_OK;
}

static void perf_ucp_am_fetch_cb(void *request, ucs_status_t status, size_t length,
                                 void *user_data)
{
    perf_ucp_side_t *side = user_data;

    side->am_fetching = 0;
    perf_ucp_rx_complete(side, status, length, NULL);
    ucp_request_free(request);
}

/* Receive rendezvous message @a desc of @a length bytes into rbuf. */
static void perf_ucp_am_fetch(perf_ucp_side_t *side, void *desc, size_t length)
{
    ucp_request_param_t param;
    ucs_status_ptr_t rptr;
    ucs_status_t status;

    if (side->ctx->validate) {
        status = perf_mem_fill(&side->rbuf, 0, side->ctx->params->msg_size,
                               PERF_UCP_SEED_STALE);
        if (status != UCS_OK) {
            ucp_am_data_release(side->worker, desc);
            perf_ucp_rx_complete(side, status, 0, NULL);
            return;
        }
    }
    if (length > side->rbuf.length) {
        /* Never write past the buffer: count it as a wrong message. */
        ucp_am_data_release(side->worker, desc);
        perf_ucp_rx_complete(side, UCS_OK, length, NULL);
        return;
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv_am   = perf_ucp_am_fetch_cb;
    param.user_data    = side;
    perf_ucp_param_mem_type(&param, side->rbuf.kind);
    side->am_fetching = 1;
    rptr = ucp_am_recv_data_nbx(side->worker, desc, side->rbuf.ptr, length, &param);
    if (rptr == NULL) {
        side->am_fetching = 0;
        perf_ucp_rx_complete(side, UCS_OK, length, NULL);
    } else if (UCS_PTR_IS_ERR(rptr)) {
        side->am_fetching = 0;
        perf_ucp_rx_complete(side, UCS_PTR_STATUS(rptr), 0, NULL);
    }
}

static int perf_ucp_am_header_bad(perf_ucp_side_t *side, const void *header,
                                  size_t header_length)
{
    size_t bad_offset;

    if (header_length != side->ctx->params->am_header) {
        perf_ucp_record_bad(side, "message %llu: %zu header bytes, expected %u",
                            (unsigned long long)side->rx_count + 1, header_length,
                            side->ctx->params->am_header);
        return 1;
    }
    if ((header_length > 0) &&
        (perf_mem_check_host(header, 0, header_length, PERF_UCP_SEED_DATA,
                             &bad_offset) > 0)) {
        perf_ucp_record_bad(side, "message %llu: wrong header byte %zu",
                            (unsigned long long)side->rx_count + 1, bad_offset);
        return 1;
    }
    return 0;
}

static ucs_status_t perf_ucp_am_recv_cb(void *arg, const void *header,
                                        size_t header_length, void *data,
                                        size_t length, const ucp_am_recv_param_t *param)
{
    perf_ucp_side_t *side = arg;
    unsigned next;

    if (side->ctx->validate && perf_ucp_am_header_bad(side, header, header_length)) {
        ++side->rx_count;
        return UCS_OK; /* the library frees or releases what it gave */
    }
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        perf_ucp_rx_complete(side, UCS_OK, length, data);
        return UCS_OK;
    }
    if (!side->ctx->validate || !side->am_fetching) {
        perf_ucp_am_fetch(side, data, length);
        return UCS_OK;
    }
    next = (side->am_tail + 1) % PERF_UCP_AM_QUEUE;
    if (next == side->am_head) {
        perf_ucp_set_async(side, UCS_ERR_EXCEEDS_LIMIT);
        return UCS_OK;
    }
    side->am_queue[side->am_tail]     = data;
    side->am_queue_len[side->am_tail] = length;
    side->am_tail                     = next;
    return UCS_INPROGRESS;
}

/* -V: start the next queued fetch once the previous one is checked. */
static void perf_ucp_am_poll(perf_ucp_side_t *side)
{
    unsigned head;

    while (!side->am_fetching && (side->am_head != side->am_tail)) {
        head          = side->am_head;
        side->am_head = (head + 1) % PERF_UCP_AM_QUEUE;
        perf_ucp_am_fetch(side, side->am_queue[head], side->am_queue_len[head]);
    }
}

/* No receive to post: the handler takes every message as it comes. */
static ucs_status_t perf_ucp_am_post_recv(perf_ucp_side_t *side)
{
    ++side->rx_posted;
    return UCS_OK;
}

static ucs_status_t perf_ucp_am_init(perf_ucp_side_t *side)
{
    unsigned hdr_len = side->ctx->params->am_header;
    ucp_am_handler_param_t hparam;
    ucp_worker_attr_t wattr;
    ucs_status_t status;
    unsigned i;

    wattr.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
    status = ucp_worker_query(side->worker, &wattr);
    if (status != UCS_OK) {
        return perf_ucp_op_failed(side, "ucp_worker_query", status);
    }
    if (hdr_len > wattr.max_am_header) {
        perf_run_set_error(side->ctx->run, "-H %u: the worker takes active-message "
                           "headers of at most %zu bytes", hdr_len,
                           wattr.max_am_header);
        return UCS_ERR_INVALID_PARAM;
    }
    if (hdr_len > 0) {
        side->am_header = malloc(hdr_len);
        if (side->am_header == NULL) {
            return perf_ucp_op_failed(side, "allocating the header", UCS_ERR_NO_MEMORY);
        }
        for (i = 0; i < hdr_len; ++i) {
            ((uint8_t*)side->am_header)[i] = perf_mem_pattern_byte(i, PERF_UCP_SEED_DATA);
        }
    }

    hparam.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                        UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    hparam.id         = PERF_UCP_AM_ID;
    hparam.flags      = UCP_AM_FLAG_WHOLE_MSG;
    hparam.cb         = perf_ucp_am_recv_cb;
    hparam.arg        = side;
    status = ucp_worker_set_am_recv_handler(side->worker, &hparam);
    if (status != UCS_OK) {
        return perf_ucp_op_failed(side, "ucp_worker_set_am_recv_handler", status);
    }
    return UCS_OK;
}

static void perf_ucp_am_cleanup(perf_ucp_side_t *side)
{
    while (side->am_head != side->am_tail) {
        ucp_am_data_release(side->worker, side->am_queue[side->am_head]);
        side->am_head = (side->am_head + 1) % PERF_UCP_AM_QUEUE;
    }
    free(side->am_header);
    side->am_header = NULL;
}

const perf_ucp_data_ops_t perf_ucp_am_ops = {
    .features  = UCP_FEATURE_AM,
    .init      = perf_ucp_am_init,
    .cleanup   = perf_ucp_am_cleanup,
    .send      = perf_ucp_am_send,
    .post_recv = perf_ucp_am_post_recv,
    .poll      = perf_ucp_am_poll
};

/* ---- stream ------------------------------------------------------------- */

static ucs_status_t perf_ucp_stream_send(perf_ucp_side_t *side)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sptr;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = perf_ucp_am_send_cb;
    param.user_data    = side;
    perf_ucp_param_mem_type(&param, side->sbuf.kind);
    sptr = ucp_stream_send_nbx(side->ep, side->sbuf.ptr, side->ctx->params->msg_size,
                               &param);
    ++side->tx_posted;
    if (ucs_likely(sptr == NULL)) {
        ++side->tx_completed;
    } else if (ucs_unlikely(UCS_PTR_IS_ERR(sptr))) {
        ++side->tx_completed;
        return perf_ucp_op_failed(side, "ucp_stream_send_nbx", UCS_PTR_STATUS(sptr));
    }
    return UCS_OK;
}

static void perf_ucp_stream_recv_cb(void *request, ucs_status_t status, size_t length,
                                    void *user_data)
{
    perf_ucp_rx_complete(user_data, status, length, NULL);
    ucp_request_free(request);
}

static ucs_status_t perf_ucp_stream_post_recv(perf_ucp_side_t *side)
{
    size_t msg_size = side->ctx->params->msg_size;
    ucp_request_param_t param;
    ucs_status_ptr_t rptr;
    ucs_status_t status;
    size_t length;

    if (side->ctx->validate) {
        status = perf_mem_fill(&side->rbuf, 0, msg_size, PERF_UCP_SEED_STALE);
        if (status != UCS_OK) {
            return perf_ucp_op_failed(side, "filling the receive buffer", status);
        }
    }
    param.op_attr_mask  = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                          UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.recv_stream = perf_ucp_stream_recv_cb;
    param.user_data      = side;
    param.flags          = UCP_STREAM_RECV_FLAG_WAITALL;
    perf_ucp_param_mem_type(&param, side->rbuf.kind);
    rptr = ucp_stream_recv_nbx(side->ep, side->rbuf.ptr, msg_size, &length, &param);
    ++side->rx_posted;
    if (ucs_likely(rptr == NULL)) {
        perf_ucp_rx_complete(side, UCS_OK, length, NULL);
    } else if (ucs_unlikely(UCS_PTR_IS_ERR(rptr))) {
        ++side->rx_count;
        return perf_ucp_op_failed(side, "ucp_stream_recv_nbx", UCS_PTR_STATUS(rptr));
    }
    return UCS_OK;
}

static ucs_status_t perf_ucp_stream_init(perf_ucp_side_t *side)
{
    (void)side;
    return UCS_OK;
}

const perf_ucp_data_ops_t perf_ucp_stream_ops = {
    .features  = UCP_FEATURE_STREAM,
    .init      = perf_ucp_stream_init,
    .cleanup   = NULL,
    .send      = perf_ucp_stream_send,
    .post_recv = perf_ucp_stream_post_recv,
    .poll      = NULL
};
