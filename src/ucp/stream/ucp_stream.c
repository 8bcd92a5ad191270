#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * The stream API: ordered bytes per endpoint, no message boundaries.
 * Senders use the eager path of ucp_tag_send.c (AM_SINGLE / AM_FIRST with
 * UCP_AM_WORD_STREAM); every arriving segment or fragment goes straight to
 * the endpoint (ucp_stream_deliver()): into the posted receives first, the
 * rest into a queue of chunks that later receives drain.
 *
 * Everything runs with the worker lock held.
 */

#include <ucp/core/ucp_int.h>

#include <stdlib.h>
#include <string.h>

typedef struct ucp_stream_chunk {
    ucs_list_link_t list;
    size_t          length;
    size_t          offset;  /* bytes already taken */
    char            data[];
} ucp_stream_chunk_t;

/* Bytes of one element of the receive's datatype (contig), else 1. */
static size_t ucp_stream_elem_size(const ucp_request_t *req)
{
    ucp_datatype_t dt = req->dt.datatype;

    if ((dt & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_CONTIG) {
        return ucs_max((size_t)(dt >> UCP_DATATYPE_SHIFT), (size_t)1);
    }
    return 1;
}

/* Place up to @a length bytes into @a req; returns how many it took. */
static size_t ucp_stream_fill(ucp_request_t *req, const void *data, size_t length)
{
    size_t n = ucs_min(length, req->dt.length - req->u.recv.stream_filled);
    ucs_status_t status;

    if (n == 0) {
        return 0;
    }
    status = ucp_dt_unpack(&req->dt, req->u.recv.stream_filled, data, n);
    if ((status != UCS_OK) && (req->status == UCS_INPROGRESS)) {
        req->status = status;
    }
    req->u.recv.stream_filled += n;
    return n;
}

/* Whether @a req has what it waits for: a full buffer, or (without
 * WAITALL) some whole elements. */
static int ucp_stream_recv_ready(const ucp_request_t *req)
{
    size_t filled = req->u.recv.stream_filled;

    if (filled == req->dt.length) {
        return 1;
    }
    return !(req->u.recv.stream_flags & UCP_STREAM_RECV_FLAG_WAITALL) &&
           (filled > 0) && ((filled % ucp_stream_elem_size(req)) == 0);
}

static void ucp_stream_recv_complete(ucp_request_t *req)
{
    ucs_status_t status = (req->status == UCS_INPROGRESS) ? UCS_OK : req->status;

    req->u.recv.info.length = req->u.recv.stream_filled;
    ucs_trace_req("ucp: stream receive %p done: %zu bytes", (void*)req,
                  req->u.recv.stream_filled);
    ucp_request_complete(req, status);
}

/* Move queued bytes of @a ep into @a req. */
static void ucp_stream_drain(ucp_ep_h ep, ucp_request_t *req)
{
    ucp_stream_chunk_t *chunk;
    size_t n;

    while (!ucs_list_is_empty(&ep->stream.data) && !ucp_stream_recv_ready(req)) {
        chunk = ucs_list_head_elem(&ep->stream.data, ucp_stream_chunk_t, list);
        n     = ucp_stream_fill(req, chunk->data + chunk->offset,
                                chunk->length - chunk->offset);
        chunk->offset     += n;
        ep->stream.queued -= n;
        if (chunk->offset == chunk->length) {
            ucs_list_del(&chunk->list);
            free(chunk);
        }
        if (n == 0) {
            break;
        }
    }
}

void ucp_stream_deliver(ucp_ep_h ep, const void *data, size_t length)
{
    ucp_stream_chunk_t *chunk;
    ucp_request_t *req;
    size_t n;

    while ((length > 0) && !ucs_list_is_empty(&ep->stream.reqs)) {
        req     = ucs_list_head_elem(&ep->stream.reqs, ucp_request_t, list);
        n       = ucp_stream_fill(req, data, length);
        data    = (const char*)data + n;
        length -= n;
        if (ucp_stream_recv_ready(req)) {
            ucs_list_del(&req->list);
            ucp_stream_recv_complete(req);
        }
    }
    if (length == 0) {
        return;
    }
    chunk = malloc(sizeof(*chunk) + length);
    if (chunk == NULL) {
        ucs_error("ucp: no memory for %zu stream bytes of ep %s: the stream is "
                  "broken", length, ep->name);
        ucp_ep_set_failed(ep, UCS_ERR_NO_MEMORY, 1);
        return;
    }
    chunk->length = length;
    chunk->offset = 0;
    memcpy(chunk->data, data, length);
    ucs_list_add_tail(&ep->stream.data, &chunk->list);
    ep->stream.queued += length;
}

void ucp_stream_ep_adopt(ucp_ep_h ep)
{
    ucp_ep_h other;

    ucs_list_for_each(other, &ep->worker->eps, link) {
        if ((other != ep) && (other->flags & UCP_EP_FLAG_INTERNAL) &&
            (other->remote_uuid == ep->remote_uuid) &&
            !ucs_list_is_empty(&other->stream.data)) {
            ucs_list_splice_tail(&ep->stream.data, &other->stream.data);
            ucs_list_head_init(&other->stream.data);
            ep->stream.queued   += other->stream.queued;
            other->stream.queued = 0;
        }
    }
}

void ucp_stream_ep_failed(ucp_ep_h ep, ucs_status_t status)
{
    ucp_request_t *req;

    while (!ucs_list_is_empty(&ep->stream.reqs)) {
        req = ucs_list_extract_head_elem(&ep->stream.reqs, ucp_request_t, list);
        req->u.recv.info.length = req->u.recv.stream_filled;
        ucp_request_complete(req, status);
    }
}

static void ucp_stream_free_chunks(ucs_list_link_t *list)
{
    ucp_stream_chunk_t *chunk;

    while (!ucs_list_is_empty(list)) {
        chunk = ucs_list_extract_head_elem(list, ucp_stream_chunk_t, list);
        free(chunk);
    }
}

void ucp_stream_ep_cleanup(ucp_ep_h ep)
{
    ucp_stream_ep_failed(ep, UCS_ERR_CANCELED);
    ucp_stream_free_chunks(&ep->stream.data);
    ucp_stream_free_chunks(&ep->stream.held);
    ep->stream.queued = 0;
}

/* ---- API ------------------------------------------------------------------ */

ucs_status_ptr_t ucp_stream_send_nbx(ucp_ep_h ep, const void *buffer, size_t count,
                                     const ucp_request_param_t *param)
{
    ucp_send_msg_t msg = {UCP_AM_WORD_STREAM, NULL, 0, UCP_SEND_KIND_STREAM,
                          UCP_SEND_PROTO_EAGER, 0};

    return ucp_send_common(ep, buffer, count, &msg, param);
}

ucs_status_ptr_t ucp_stream_send_nb(ucp_ep_h ep, const void *buffer, size_t count,
                                    ucp_datatype_t datatype, ucp_send_callback_t cb,
                                    unsigned flags)
{
    ucp_request_param_t param;

    (void)flags;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = datatype;
    return ucp_request_set_nb_callback(ep->worker,
                                       ucp_stream_send_nbx(ep, buffer, count, &param),
                                       cb);
}

static ucs_status_ptr_t ucp_stream_recv_common(ucp_ep_h ep, void *buffer,
                                               size_t count, size_t *length,
                                               const ucp_request_param_t *param,
                                               ucp_stream_recv_callback_t old_cb)
{
    ucp_worker_h worker = ep->worker;
    uint32_t attr       = (param != NULL) ? param->op_attr_mask : 0;
    ucs_status_ptr_t ret;
    ucs_status_t status;
    ucp_request_t *req;

    ucp_worker_lock(worker);
    if (ep->flags & UCP_EP_FLAG_FAILED) {
        ret = UCS_STATUS_PTR(ep->status);
        goto out;
    }
    req = ucp_request_get(worker, param);
    if (req == NULL) {
        ret = UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
        goto out;
    }
    req->flags |= UCP_REQ_FLAG_IN_CALL | UCP_REQ_FLAG_RECV | UCP_REQ_FLAG_RECV_LENGTH;
    if (old_cb != NULL) {
        req->cb.stream_old = old_cb;
        req->flags        |= UCP_REQ_FLAG_CB_STREAM_OLD;
    } else {
        ucp_request_set_callback(req, param, UCP_REQ_CB_STREAM_RECV);
    }
    req->u.recv.stream_flags = (attr & UCP_OP_ATTR_FIELD_FLAGS) ? param->flags : 0;
    status = ucp_request_recv_buffer(req, buffer, count, param);
    if (status != UCS_OK) {
        goto err_req;
    }
    if (req->dt.length == 0) {
        ucp_stream_recv_complete(req);
    } else {
        if (ucs_list_is_empty(&ep->stream.reqs)) {
            ucp_stream_drain(ep, req);
        }
        if (ucp_stream_recv_ready(req)) {
            ucp_stream_recv_complete(req);
        } else {
            req->ep = ep;
            ucs_list_add_tail(&ep->stream.reqs, &req->list);
        }
    }
    if ((old_cb != NULL) && (req->flags & UCP_REQ_FLAG_COMPLETED)) {
        /* The old call reports an immediate completion through length. */
        if (length != NULL) {
            *length = req->u.recv.info.length;
        }
        status = req->status;
        req->flags &= ~UCP_REQ_FLAG_IN_CALL;
        ucp_request_put(req);
        ret = (status == UCS_OK) ? NULL : UCS_STATUS_PTR(status);
        goto out;
    }
    if ((req->flags & UCP_REQ_FLAG_COMPLETED) && (length != NULL)) {
        *length = req->u.recv.info.length;
    }
    ret = ucp_request_finish_call(req, param);
out:
    ucp_worker_unlock(worker);
    return ret;

err_req:
    ucp_request_put(req);
    ucp_worker_unlock(worker);
    return UCS_STATUS_PTR(status);
}

ucs_status_ptr_t ucp_stream_recv_nbx(ucp_ep_h ep, void *buffer, size_t count,
                                     size_t *length,
                                     const ucp_request_param_t *param)
{
    return ucp_stream_recv_common(ep, buffer, count, length, param, NULL);
}

ucs_status_ptr_t ucp_stream_recv_nb(ucp_ep_h ep, void *buffer, size_t count,
                                    ucp_datatype_t datatype,
                                    ucp_stream_recv_callback_t cb, size_t *length,
                                    unsigned flags)
{
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_FLAGS;
    param.datatype     = datatype;
    param.flags        = flags;
    return ucp_stream_recv_common(ep, buffer, count, length, &param,
                                  (cb != NULL) ? cb : NULL);
}

ucs_status_ptr_t ucp_stream_recv_data_nb(ucp_ep_h ep, size_t *length)
{
    ucp_stream_chunk_t *chunk;
    ucs_status_ptr_t ret = NULL;

    ucp_worker_lock(ep->worker);
    if (!ucs_list_is_empty(&ep->stream.data)) {
        chunk = ucs_list_extract_head_elem(&ep->stream.data, ucp_stream_chunk_t,
                                           list);
        ucs_list_add_tail(&ep->stream.held, &chunk->list);
        *length            = chunk->length - chunk->offset;
        ep->stream.queued -= *length;
        ret                = chunk->data + chunk->offset;
    } else if (ep->flags & UCP_EP_FLAG_FAILED) {
        ret = UCS_STATUS_PTR(ep->status);
    }
    ucp_worker_unlock(ep->worker);
    return ret;
}

void ucp_stream_data_release(ucp_ep_h ep, void *data)
{
    ucp_stream_chunk_t *chunk;

    ucp_worker_lock(ep->worker);
    ucs_list_for_each(chunk, &ep->stream.held, list) {
        if (chunk->data + chunk->offset == (char*)data) {
            ucs_list_del(&chunk->list);
            free(chunk);
            ucp_worker_unlock(ep->worker);
            return;
        }
    }
    ucs_error("ucp_stream_data_release: %p is not stream data of ep %s", data,
              ep->name);
    ucp_worker_unlock(ep->worker);
}

ssize_t ucp_stream_worker_poll(ucp_worker_h worker, ucp_stream_poll_ep_t *poll_eps,
                               size_t max_eps, unsigned flags)
{
    ssize_t count = 0;
    ucp_ep_h ep;

    (void)flags;
    ucp_worker_lock(worker);
    ucs_list_for_each(ep, &worker->eps, link) {
        if ((size_t)count >= max_eps) {
            break;
        }
        if (!ucs_list_is_empty(&ep->stream.data)) {
            memset(&poll_eps[count], 0, sizeof(poll_eps[count]));
            poll_eps[count].ep        = ep;
            poll_eps[count].user_data = ep->user_data;
            ++count;
        }
    }
    ucp_worker_unlock(worker);
    return count;
}

ucs_status_t ucp_stream_recv_request_test(void *request, size_t *length_p)
{
    ucp_request_t *req = (ucp_request_t*)request - 1;
    ucs_status_t status = UCS_INPROGRESS;

    ucp_worker_lock(req->worker);
    if (req->flags & UCP_REQ_FLAG_COMPLETED) {
        status = req->status;
        if (length_p != NULL) {
            *length_p = req->u.recv.info.length;
        }
    }
    ucp_worker_unlock(req->worker);
    return status;
}
