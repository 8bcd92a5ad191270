#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * The stream API: ordered bytes per endpoint, no message boundaries.
 * Small sends take the eager path of ucp_tag_send.c (AM_SINGLE / AM_FIRST
 * with UCP_AM_WORD_STREAM); large ones a rendezvous (an AM_RTS with the
 * stream word), so that GPU memory moves by the tag path's get / put /
 * pipeline protocols. Everything that arrives for an endpoint is a chunk in
 * its queue, in order: bytes, or an announcement not fetched yet.
 *
 * Posted receives take chunks from the queue's head in order, each at the
 * place in the byte stream it has: the first receive with room gets the
 * next bytes at its filled offset. Bytes are copied at once. An
 * announcement that fits in that receive's room is fetched straight into
 * its buffer at that offset (the device buffer itself for staged GPU
 * receives) and leaves the queue, so the next chunks go on behind it while
 * it is in flight: several rendezvous of one stream move at once, as tag
 * messages do. One that does not fit is fetched into host memory first and
 * holds the queue until it is there. A receive completes, in posting order,
 * when its bytes are all there.
 *
 * Everything runs with the worker lock held.
 */

#include <ucp/core/ucp_int.h>
#include <ucp/rndv/ucp_rndv.h>

#include <stdlib.h>
#include <string.h>

typedef struct ucp_stream_chunk {
    ucs_list_link_t list;     /* ep->stream.data, .fetches or .held */
    ucp_ep_h        ep;       /* whose queue; NULL once the ep is gone */
    size_t          length;   /* bytes (an announcement: of its message) */
    size_t          offset;   /* bytes already taken */
    char            *bytes;   /* the bytes; NULL: an announcement */
    ucp_request_t   *target;  /* the receive a direct fetch writes */
    uint32_t        rts_len;  /* an announcement: its bytes in data[] */
    uint8_t         fetching; /* a fetch is in flight */
    char            data[];
} ucp_stream_chunk_t;

static void ucp_stream_chunk_free(ucp_stream_chunk_t *chunk)
{
    if ((chunk->bytes != NULL) && (chunk->bytes != chunk->data)) {
        free(chunk->bytes);
    }
    free(chunk);
}

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

/* Whether @a req has what it waits for, all landed: a full buffer, or
 * (without WAITALL) some whole elements. */
static int ucp_stream_recv_ready(const ucp_request_t *req)
{
    size_t filled = req->u.recv.stream_filled;

    if (req->u.recv.stream_pending > 0) {
        return 0;
    }
    if (filled == req->dt.length) {
        return 1;
    }
    return !(req->u.recv.stream_flags & UCP_STREAM_RECV_FLAG_WAITALL) &&
           (filled > 0) && ((filled % ucp_stream_elem_size(req)) == 0);
}

/* A staged device receive that rendezvous writes into: copy the bounce
 * bytes [dev_done, filled) to the device, so that all bytes before the
 * next direct fetch are there. */
static ucs_status_t ucp_stream_flush_bounce(ucp_request_t *req)
{
    char *dev    = ucp_memtype_bounce_target(req);
    size_t done  = req->u.recv.stream_dev_done;
    size_t fill  = req->u.recv.stream_filled;
    ucs_status_t status = UCS_OK;

    if ((dev != NULL) && (fill > done)) {
        status = ucp_memtype_copy(req->worker, dev + done, (char*)req->dt.buffer + done,
                                  fill - done);
    }
    req->u.recv.stream_dev_done = fill;
    return status;
}

static void ucp_stream_recv_finish(ucp_request_t *req, ucs_status_t status)
{
    if (req->u.recv.stream_dev_done > 0) {
        /* Part of it is in the device already: finish it here, so that
         * completion does not copy the whole bounce over it. */
        if ((ucp_stream_flush_bounce(req) != UCS_OK) && (status == UCS_OK)) {
            status = UCS_ERR_IO_ERROR;
        }
        ucp_memtype_unstage_contig(req);
    }
    req->u.recv.info.length = req->u.recv.stream_filled;
    ucs_trace_req("ucp: stream receive %p done: %zu bytes, %s", (void*)req,
                  req->u.recv.stream_filled, ucs_status_string(status));
    ucp_request_complete(req, status);
}

/* Complete the receives at the head that have all their bytes. */
static void ucp_stream_complete_ready(ucp_ep_h ep)
{
    ucp_request_t *req;

    while (!ucs_list_is_empty(&ep->stream.reqs)) {
        req = ucs_list_head_elem(&ep->stream.reqs, ucp_request_t, list);
        if (!ucp_stream_recv_ready(req)) {
            return;
        }
        ucs_list_del(&req->list);
        --ep->worker->stream_waiting;
        ucp_stream_recv_finish(req, (req->status == UCS_INPROGRESS) ? UCS_OK :
                                                                      req->status);
    }
}

/* The receive the next bytes of the stream belong to: the first one with
 * room, or NULL. */
static ucp_request_t *ucp_stream_cursor(ucp_ep_h ep)
{
    ucp_request_t *req;

    ucs_list_for_each(req, &ep->stream.reqs, list) {
        if (req->u.recv.stream_filled < req->dt.length) {
            return req;
        }
    }
    return NULL;
}

static void ucp_stream_chunk_remove(ucp_ep_h ep, ucp_stream_chunk_t *chunk)
{
    ucs_list_del(&chunk->list);
    ep->stream.queued -= chunk->length - chunk->offset;
    ucp_stream_chunk_free(chunk);
}

static void ucp_stream_advance(ucp_ep_h ep);

/* A fetch of announcement @a chunk ended (inside ucp_stream_fetch or from
 * progress). */
static void ucp_stream_fetched(ucp_ep_h ep, ucp_stream_chunk_t *chunk,
                               ucs_status_t status)
{
    ucp_request_t *req = chunk->target;
    int direct         = (chunk->bytes == NULL);

    chunk->fetching = 0;
    if (direct) {
        /* A direct fetch: off the fetches list, no longer counted queued. */
        ucs_list_del(&chunk->list);
        if (req != NULL) {
            --req->u.recv.stream_pending;
        }
        ucp_stream_chunk_free(chunk);
    }
    if (status != UCS_OK) {
        ucs_error("ucp: fetching stream bytes of ep %s failed: %s", ep->name,
                  ucs_status_string(status));
        if (!direct) {
            ucp_stream_chunk_remove(ep, chunk);
        }
        ucp_ep_set_failed(ep, status, 1);
        return;
    }
    /* Into host memory: bytes like any other chunk's now. A direct one:
     * its receive may be complete. */
    ucp_stream_complete_ready(ep);
}

static void ucp_stream_fetch_cb(void *request, ucs_status_t status, size_t length,
                                void *user_data)
{
    ucp_stream_chunk_t *chunk = user_data;
    ucp_ep_h ep               = chunk->ep;

    (void)length;
    ucp_request_free(request);
    if (ep == NULL) {
        ucp_stream_chunk_free(chunk); /* its ep went away meanwhile */
        return;
    }
    ucp_stream_fetched(ep, chunk, status);
    ucp_stream_advance(ep);
}

/* Whether announcement @a chunk can be fetched straight into @a req. */
static int ucp_stream_fits(const ucp_request_t *req, const ucp_stream_chunk_t *chunk)
{
    return (req != NULL) && (req->dt.generic == NULL) &&
           ((req->dt.datatype & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_CONTIG) &&
           (chunk->length <= req->dt.length - req->u.recv.stream_filled);
}

/* A fetch of queued @a chunk could not start: the stream is broken. */
static void ucp_stream_fetch_failed(ucp_ep_h ep, ucp_stream_chunk_t *chunk,
                                    ucs_status_t status)
{
    ucs_error("ucp: cannot fetch %zu stream bytes of ep %s: %s", chunk->length,
              ep->name, ucs_status_string(status));
    ucp_stream_chunk_remove(ep, chunk);
    ucp_ep_set_failed(ep, status, 1);
}

/*
 * Fetch announcement @a chunk, the queue's head: into @a req's buffer at
 * its filled offset when it fits there (the chunk then leaves the queue
 * for ep->stream.fetches), else (also for @a req NULL) into host memory
 * the chunk owns, the chunk staying at the head. Returns 1 when the fetch
 * ended inside the call.
 */
static int ucp_stream_fetch(ucp_ep_h ep, ucp_stream_chunk_t *chunk, ucp_request_t *req)
{
    ucp_worker_h worker = ep->worker;
    ucp_request_param_t param;
    ucs_status_t status;
    ucp_request_t *fr;
    char *target, *dev;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param.memory_type  = UCS_MEMORY_TYPE_HOST;
    if (ucp_stream_fits(req, chunk)) {
        dev = ucp_memtype_bounce_target(req);
        if (dev != NULL) {
            status = ucp_stream_flush_bounce(req);
            if (status != UCS_OK) {
                ucp_stream_fetch_failed(ep, chunk, status);
                return 1;
            }
            target = dev + req->u.recv.stream_filled;
        } else {
            target = (char*)req->dt.buffer + req->u.recv.stream_filled;
        }
        param.memory_type = req->mem_type;
        chunk->target     = req;
        /* Its place in the stream is taken now: later chunks go after. */
        req->u.recv.stream_filled += chunk->length;
        if (dev != NULL) {
            req->u.recv.stream_dev_done = req->u.recv.stream_filled;
        }
        ++req->u.recv.stream_pending;
        ucs_list_del(&chunk->list);
        ucs_list_add_tail(&ep->stream.fetches, &chunk->list);
        ep->stream.queued -= chunk->length;
    } else {
        chunk->bytes = malloc(ucs_max(chunk->length, (size_t)1));
        if (chunk->bytes == NULL) {
            ucp_stream_fetch_failed(ep, chunk, UCS_ERR_NO_MEMORY);
            return 1;
        }
        target        = chunk->bytes;
        chunk->target = NULL;
    }

    chunk->fetching = 1;
    fr = ucp_request_get(worker, &param);
    if (fr == NULL) {
        ucp_stream_fetched(ep, chunk, UCS_ERR_NO_MEMORY);
        return 1;
    }
    fr->flags       |= UCP_REQ_FLAG_IN_CALL | UCP_REQ_FLAG_RECV |
                       UCP_REQ_FLAG_RECV_LENGTH | UCP_REQ_FLAG_CB_RECV_AM;
    fr->cb.recv_am   = ucp_stream_fetch_cb;
    fr->user_data    = chunk;
    /* The target is contiguous memory of a known type that the rendezvous
     * writes directly: no staging set-up (a host bounce of the whole
     * length that the rendezvous would free at once). */
    status = ucp_dt_state_init(&fr->dt, target, chunk->length, ucp_dt_make_contig(1), 1);
    fr->mem_type = param.memory_type;
    if (status != UCS_OK) {
        ucp_request_put(fr);
        ucp_stream_fetched(ep, chunk, status);
        return 1;
    }
    ucs_trace_req("ucp: ep %s: fetching %zu stream bytes into %s memory%s", ep->name,
                  chunk->length, ucs_memory_type_names[param.memory_type],
                  (chunk->target != NULL) ? " of the receive" : " of ours");
    ucp_rndv_recv_start(fr, chunk->data, chunk->rts_len);
    fr->flags &= ~UCP_REQ_FLAG_IN_CALL;
    if (!(fr->flags & UCP_REQ_FLAG_COMPLETED)) {
        return 0;
    }
    status = fr->status;
    ucp_request_put(fr);
    ucp_stream_fetched(ep, chunk, status);
    return 1;
}

/* Give the queue's head chunks to the posted receives, in order. */
static void ucp_stream_advance(ucp_ep_h ep)
{
    ucp_stream_chunk_t *chunk;
    ucp_request_t *req;
    size_t n;

    while (!ucs_list_is_empty(&ep->stream.data) &&
           !(ep->flags & UCP_EP_FLAG_FAILED)) {
        req = ucp_stream_cursor(ep);
        if (req == NULL) {
            break;
        }
        chunk = ucs_list_head_elem(&ep->stream.data, ucp_stream_chunk_t, list);
        if (chunk->fetching) {
            break; /* into host memory: ucp_stream_fetch_cb resumes */
        }
        if (chunk->bytes == NULL) {
            (void)ucp_stream_fetch(ep, chunk, req);
            continue;
        }
        n = ucp_stream_fill(req, chunk->bytes + chunk->offset,
                            chunk->length - chunk->offset);
        chunk->offset     += n;
        ep->stream.queued -= n;
        if (chunk->offset == chunk->length) {
            ucs_list_del(&chunk->list);
            ucp_stream_chunk_free(chunk);
        }
    }
    ucp_stream_complete_ready(ep);
}

static ucp_stream_chunk_t *ucp_stream_chunk_new(ucp_ep_h ep, size_t data_len)
{
    ucp_stream_chunk_t *chunk = malloc(sizeof(*chunk) + data_len);

    if (chunk == NULL) {
        ucs_error("ucp: no memory for %zu stream bytes of ep %s: the stream is "
                  "broken", data_len, ep->name);
        ucp_ep_set_failed(ep, UCS_ERR_NO_MEMORY, 1);
        return NULL;
    }
    memset(chunk, 0, sizeof(*chunk));
    chunk->ep = ep;
    return chunk;
}

void ucp_stream_deliver(ucp_ep_h ep, const void *data, size_t length)
{
    ucp_stream_chunk_t *chunk;
    ucp_request_t *req;
    size_t n;

    /* Straight into the posted receives, unless older chunks wait. */
    if (ucs_list_is_empty(&ep->stream.data)) {
        while ((length > 0) && ((req = ucp_stream_cursor(ep)) != NULL)) {
            n       = ucp_stream_fill(req, data, length);
            data    = (const char*)data + n;
            length -= n;
        }
        ucp_stream_complete_ready(ep);
    }
    if (length == 0) {
        return;
    }
    chunk = ucp_stream_chunk_new(ep, length);
    if (chunk == NULL) {
        return;
    }
    chunk->length = length;
    chunk->bytes  = chunk->data;
    memcpy(chunk->data, data, length);
    ucs_list_add_tail(&ep->stream.data, &chunk->list);
    ep->stream.queued += length;
}

void ucp_stream_deliver_rts(ucp_ep_h ep, const void *rts, size_t length)
{
    ucp_stream_chunk_t *chunk;
    ucp_rndv_rts_t hdr;

    memcpy(&hdr, rts, sizeof(hdr));
    if (hdr.length == 0) {
        ucp_am_rndv_drop(ep->worker, rts);
        return;
    }
    chunk = ucp_stream_chunk_new(ep, length);
    if (chunk == NULL) {
        ucp_am_rndv_drop(ep->worker, rts);
        return;
    }
    chunk->length  = hdr.length;
    chunk->rts_len = (uint32_t)length;
    memcpy(chunk->data, rts, length);
    ucs_list_add_tail(&ep->stream.data, &chunk->list);
    ep->stream.queued += chunk->length;
    ucs_trace_req("ucp: ep %s: %zu stream bytes announced", ep->name, chunk->length);
    ucp_stream_advance(ep);
}

void ucp_stream_ep_adopt(ucp_ep_h ep)
{
    ucp_stream_chunk_t *chunk;
    ucp_ep_h other;

    ucs_list_for_each(other, &ep->worker->eps, link) {
        if ((other != ep) && (other->flags & UCP_EP_FLAG_INTERNAL) &&
            (other->remote_uuid == ep->remote_uuid) &&
            !ucs_list_is_empty(&other->stream.data)) {
            ucs_list_for_each(chunk, &other->stream.data, list) {
                chunk->ep = ep;
            }
            ucs_list_splice_tail(&ep->stream.data, &other->stream.data);
            ucs_list_head_init(&other->stream.data);
            ep->stream.queued   += other->stream.queued;
            other->stream.queued = 0;
        }
    }
}

void ucp_stream_ep_failed(ucp_ep_h ep, ucs_status_t status)
{
    ucp_stream_chunk_t *chunk;
    ucp_request_t *req;

    /* A fetch in flight no longer counts for a receive that is done. */
    ucs_list_for_each(chunk, &ep->stream.data, list) {
        chunk->target = NULL;
    }
    ucs_list_for_each(chunk, &ep->stream.fetches, list) {
        chunk->target = NULL;
    }
    while (!ucs_list_is_empty(&ep->stream.reqs)) {
        req = ucs_list_extract_head_elem(&ep->stream.reqs, ucp_request_t, list);
        --ep->worker->stream_waiting;
        ucp_stream_recv_finish(req, status);
    }
}

static void ucp_stream_free_chunks(ucp_worker_h worker, ucs_list_link_t *list)
{
    ucp_stream_chunk_t *chunk;

    while (!ucs_list_is_empty(list)) {
        chunk = ucs_list_extract_head_elem(list, ucp_stream_chunk_t, list);
        if (chunk->fetching) {
            chunk->ep = NULL; /* freed by its fetch's completion */
            continue;
        }
        if (chunk->bytes == NULL) {
            ucp_am_rndv_drop(worker, chunk->data);
        }
        ucp_stream_chunk_free(chunk);
    }
}

void ucp_stream_ep_cleanup(ucp_ep_h ep)
{
    ucp_stream_ep_failed(ep, UCS_ERR_CANCELED);
    ucp_stream_free_chunks(ep->worker, &ep->stream.data);
    ucp_stream_free_chunks(ep->worker, &ep->stream.held);
    ucp_stream_free_chunks(ep->worker, &ep->stream.fetches);
    ep->stream.queued = 0;
}

/* ---- API ------------------------------------------------------------------ */

ucs_status_ptr_t ucp_stream_send_nbx(ucp_ep_h ep, const void *buffer, size_t count,
                                     const ucp_request_param_t *param)
{
    ucp_send_msg_t msg = {UCP_AM_WORD_STREAM, NULL, 0, UCP_SEND_KIND_STREAM,
                          UCP_SEND_PROTO_AUTO, 0};

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
    req->u.recv.stream_filled   = 0;
    req->u.recv.stream_dev_done = 0;
    req->u.recv.stream_pending  = 0;
    if (req->dt.length == 0) {
        ucp_stream_recv_finish(req, UCS_OK);
    } else {
        req->ep = ep;
        ucs_list_add_tail(&ep->stream.reqs, &req->list);
        ++worker->stream_waiting;
        ucp_stream_advance(ep);
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
        chunk = ucs_list_head_elem(&ep->stream.data, ucp_stream_chunk_t, list);
        if ((chunk->bytes == NULL) && !chunk->fetching &&
            ucs_list_is_empty(&ep->stream.reqs)) {
            /* An announcement: fetched into host memory first. */
            (void)ucp_stream_fetch(ep, chunk, NULL);
        }
        chunk = ucs_list_is_empty(&ep->stream.data) ? NULL :
                ucs_list_head_elem(&ep->stream.data, ucp_stream_chunk_t, list);
        if ((chunk != NULL) && (chunk->bytes != NULL) && !chunk->fetching) {
            ucs_list_del(&chunk->list);
            ucs_list_add_tail(&ep->stream.held, &chunk->list);
            *length            = chunk->length - chunk->offset;
            ep->stream.queued -= *length;
            ret                = chunk->bytes + chunk->offset;
        }
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
        if (chunk->bytes + chunk->offset == (char*)data) {
            ucs_list_del(&chunk->list);
            ucp_stream_chunk_free(chunk);
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
