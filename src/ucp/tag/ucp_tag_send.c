#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Eager send protocols over uct active messages (host memory), for tag
 * messages and, with a first word in place of the tag and the user header
 * in front of the data, for active messages and stream bytes (ucp_am.c,
 * ucp_stream.c):
 *   short  -- am_short, tag as the 8-byte header, payload <= max_short;
 *   bcopy  -- one am_bcopy segment [tag][data];
 *   multi  -- first [tag][uuid][msg_id][length][sync_id][data], then
 *             middles [uuid][msg_id][offset][data] until the end;
 *   sync   -- single [tag][uuid][sync_id][data], or multi with sync_id set;
 *             the request completes when the receiver's ack arrives.
 *   am     -- single [word][uuid][dest ep][user hdr][data] (AM_SINGLE), or
 *             multi with AM_FIRST, dest ep in the sync slot.
 * Everything goes through the endpoint's ordered queue, so messages of one
 * endpoint reach the receiver in order and a large one is never overtaken.
 */

#include <ucp/core/ucp_int.h>
#include <ucp/rndv/ucp_rndv.h>

#include <stdlib.h>
#include <string.h>

typedef struct {
    ucp_request_t *req;
    size_t        hdr_len;
    uint64_t      hdr[5];
    size_t        length;
} ucp_tag_pack_ctx_t;

/* Bytes of the message after its protocol header: user header + data. */
static inline size_t ucp_send_total(const ucp_request_t *req)
{
    return req->u.send.prefix_len + req->dt.length;
}

static size_t ucp_tag_pack(void *dest, void *arg)
{
    ucp_tag_pack_ctx_t *ctx = arg;
    ucp_request_t *req      = ctx->req;
    size_t offset           = req->u.send.offset;
    size_t prefix_len       = req->u.send.prefix_len;
    char *p                 = (char*)dest + ctx->hdr_len;
    size_t left             = ctx->length;
    size_t n;

    memcpy(dest, ctx->hdr, ctx->hdr_len);
    if (ucs_unlikely(offset < prefix_len)) {
        n = ucs_min(prefix_len - offset, left);
        memcpy(p, (const char*)req->u.send.prefix + offset, n);
        p      += n;
        offset += n;
        left   -= n;
    }
    if (left > 0) {
        p += ucp_dt_pack(&req->dt, offset - prefix_len, p, left);
    }
    return p - (char*)dest;
}

/* What a send completes with: OK, or what the receiver's ack said. */
static ucs_status_t ucp_tag_send_result(const ucp_request_t *req)
{
    return (req->status == UCS_INPROGRESS) ? UCS_OK : req->status;
}

/* The local part of a send is done; a sync send still waits for its ack. */
static void ucp_tag_send_local_done(ucp_request_t *req)
{
    req->flags |= UCP_REQ_FLAG_LOCAL_DONE;
    if (!(req->flags & UCP_REQ_FLAG_SYNC) || (req->flags & UCP_REQ_FLAG_SYNC_ACKED)) {
        if (req->flags & UCP_REQ_FLAG_IN_SYNC_LIST) {
            ucs_list_del(&req->list);
            req->flags &= ~UCP_REQ_FLAG_IN_SYNC_LIST;
        }
        ucp_request_complete(req, ucp_tag_send_result(req));
    }
}

void ucp_tag_send_acked(ucp_request_t *req, ucs_status_t status);
void ucp_tag_send_acked(ucp_request_t *req, ucs_status_t status)
{
    req->flags |= UCP_REQ_FLAG_SYNC_ACKED;
    if (status != UCS_OK) {
        req->status = status; /* kept until the local part is done */
    }
    if (req->flags & UCP_REQ_FLAG_LOCAL_DONE) {
        ucs_list_del(&req->list);
        req->flags &= ~UCP_REQ_FLAG_IN_SYNC_LIST;
        ucp_request_complete(req, ucp_tag_send_result(req));
    }
}

static ucs_status_t ucp_tag_send_bcopy(ucp_request_t *req, uint8_t id,
                                       ucp_tag_pack_ctx_t *ctx)
{
    ssize_t ret;

    ctx->req = req;
    ret = uct_ep_am_bcopy(req->ep->uct_ep, id, ucp_tag_pack, ctx, 0);
    if (ret < 0) {
        return (ucs_status_t)ret;
    }
    req->u.send.offset += ctx->length;
    return UCS_OK;
}

static ucs_status_t ucp_tag_progress_short(ucp_request_t *req)
{
    ucs_status_t status;

    status = uct_ep_am_short(req->ep->uct_ep, UCP_AM_ID_EAGER_ONLY,
                             req->u.send.tag, req->dt.buffer,
                             (unsigned)req->dt.length);
    if (status == UCS_OK) {
        ucp_tag_send_local_done(req);
    }
    return status;
}

static ucs_status_t ucp_tag_progress_single(ucp_request_t *req)
{
    ucp_tag_pack_ctx_t ctx;
    ucs_status_t status;
    uint8_t id;

    ctx.hdr[0] = req->u.send.tag;
    if (req->u.send.kind != UCP_SEND_KIND_TAG) {
        ctx.hdr[1]  = req->worker->uuid;
        ctx.hdr[2]  = req->u.send.dest_ep;
        ctx.hdr_len = UCP_EAGER_SYNC_HDR;
        id          = UCP_AM_ID_AM_SINGLE;
    } else if (req->flags & UCP_REQ_FLAG_SYNC) {
        ctx.hdr[1]  = req->worker->uuid;
        ctx.hdr[2]  = req->u.send.sync_id;
        ctx.hdr_len = UCP_EAGER_SYNC_HDR;
        id          = UCP_AM_ID_EAGER_SYNC;
    } else {
        ctx.hdr_len = sizeof(uint64_t);
        id          = UCP_AM_ID_EAGER_ONLY;
    }
    ctx.length = ucp_send_total(req);
    status     = ucp_tag_send_bcopy(req, id, &ctx);
    if (status == UCS_OK) {
        ucp_tag_send_local_done(req);
    }
    return status;
}

static ucs_status_t ucp_tag_progress_multi(ucp_request_t *req)
{
    size_t max   = req->ep->max_bcopy;
    size_t total = ucp_send_total(req);
    ucp_tag_pack_ctx_t ctx;
    ucs_status_t status;
    uint8_t id;

    if (req->u.send.offset == 0) {
        ctx.hdr[0]  = req->u.send.tag;
        ctx.hdr[1]  = req->worker->uuid;
        ctx.hdr[2]  = req->u.send.msg_id;
        ctx.hdr[3]  = total;
        ctx.hdr_len = UCP_EAGER_FIRST_HDR;
        if (req->u.send.kind == UCP_SEND_KIND_TAG) {
            ctx.hdr[4] = req->u.send.sync_id;
            id         = UCP_AM_ID_EAGER_FIRST;
        } else {
            ctx.hdr[4] = req->u.send.dest_ep;
            id         = UCP_AM_ID_AM_FIRST;
        }
    } else {
        ctx.hdr[0]  = req->worker->uuid;
        ctx.hdr[1]  = req->u.send.msg_id;
        ctx.hdr[2]  = req->u.send.offset;
        ctx.hdr_len = UCP_EAGER_MIDDLE_HDR;
        id          = UCP_AM_ID_EAGER_MIDDLE;
    }
    ctx.length = total - req->u.send.offset;
    if (ctx.length > max - ctx.hdr_len) {
        ctx.length = max - ctx.hdr_len;
    }
    status = ucp_tag_send_bcopy(req, id, &ctx);
    if (status != UCS_OK) {
        return status;
    }
    if (req->u.send.offset < total) {
        return UCS_INPROGRESS;
    }
    ucp_tag_send_local_done(req);
    return UCS_OK;
}

static size_t ucp_tag_pack_wireup(void *dest, void *arg)
{
    ucp_request_t *req  = arg;
    ucp_worker_h worker = req->worker;

    memcpy(dest, &worker->uuid, sizeof(uint64_t));
    memcpy((char*)dest + sizeof(uint64_t), worker->address, worker->address_len);
    return sizeof(uint64_t) + worker->address_len;
}

/* Tells the peer who we are, so that it can acknowledge sync sends even
 * when it has no endpoint to us. Sent once per endpoint, before the first
 * sync send, on the same ordered connection. */
static ucs_status_t ucp_tag_wireup_progress(ucp_request_t *req)
{
    ssize_t ret;

    ret = uct_ep_am_bcopy(req->ep->uct_ep, UCP_AM_ID_WIREUP, ucp_tag_pack_wireup,
                          req, 0);
    if (ret < 0) {
        return (ucs_status_t)ret;
    }
    ucp_request_complete(req, UCS_OK);
    return UCS_OK;
}

ucs_status_t ucp_tag_send_wireup(ucp_ep_h ep)
{
    ucp_request_t *req;

    if (ep->flags & UCP_EP_FLAG_WIREUP_SENT) {
        return UCS_OK;
    }
    if (sizeof(uint64_t) + ep->worker->address_len > ep->max_bcopy) {
        ucs_error("ucp: worker address (%zu bytes) does not fit a %zu-byte segment",
                  ep->worker->address_len, ep->max_bcopy);
        return UCS_ERR_UNSUPPORTED;
    }
    req = ucp_request_get(ep->worker, NULL);
    if (req == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    req->flags   |= UCP_REQ_FLAG_INTERNAL;
    req->progress = ucp_tag_wireup_progress;
    ep->flags    |= UCP_EP_FLAG_WIREUP_SENT;
    ucp_ep_push(ep, req);
    return UCS_OK;
}

static ucs_memory_type_t ucp_tag_memtype(ucp_worker_h worker, const void *buffer,
                                         size_t length,
                                         const ucp_request_param_t *param)
{
    if ((param != NULL) && (param->op_attr_mask & UCP_OP_ATTR_FIELD_MEMORY_TYPE) &&
        (param->memory_type < UCS_MEMORY_TYPE_UNKNOWN)) {
        return param->memory_type;
    }
    return worker->context->memtype_lookup(buffer, length);
}

/* Whether @a req (datatype and memory type known) takes rendezvous. */
static int ucp_send_rndv_wanted(ucp_ep_h ep, const ucp_request_t *req,
                                ucs_memory_type_t mem_type)
{
    switch (req->u.send.proto) {
    case UCP_SEND_PROTO_EAGER:
        return 0;
    case UCP_SEND_PROTO_RNDV:
        return 1;
    default:
        return ucp_rndv_send_wanted(ep, req, mem_type);
    }
}

/* The protocol decision for a send whose request is set up (datatype,
 * memory type, message fields): rendezvous, staging, the eager protocol;
 * then into the ep's queue (or, FORCE_IMM_CMPL, one attempt). On error the
 * caller frees the request. */
static ucs_status_t ucp_send_choose(ucp_request_t *req, ucp_ep_h ep, uint32_t attr,
                                    int sync)
{
    ucp_worker_h worker        = req->worker;
    ucs_memory_type_t mem_type = req->mem_type;
    ucp_datatype_t datatype    = req->dt.datatype;
    size_t hdr_len, total;
    ucp_proto_stat_t proto;
    ucs_status_t status;

    if ((req->u.send.kind == UCP_SEND_KIND_STREAM) ||
        ((req->u.send.kind == UCP_SEND_KIND_AM) &&
         (UCP_AM_WORD_FLAGS(req->u.send.tag) & UCP_AM_SEND_FLAG_REPLY))) {
        /* The receiver needs an endpoint to us: stream bytes queue on it,
         * a reply goes through it. */
        status = ucp_tag_send_wireup(ep);
        if (status != UCS_OK) {
            return status;
        }
    }
    if (!(attr & UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL) &&
        ucp_send_rndv_wanted(ep, req, mem_type)) {
        /* Rendezvous: contiguous device data is read or written in place;
         * an IOV holding device memory is gathered into host memory first. */
        if ((mem_type != UCS_MEMORY_TYPE_HOST) &&
            ((datatype & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_IOV)) {
            status = ucp_memtype_stage_send(req, mem_type);
            if (status != UCS_OK) {
                return status;
            }
            mem_type = UCS_MEMORY_TYPE_HOST;
        }
        return ucp_rndv_send_start(req, ep, mem_type, sync);
    }
    total = ucp_send_total(req);
    if ((req->u.send.kind == UCP_SEND_KIND_AM) &&
        (total > worker->context->rndv.eager_max)) {
        ucs_error("ucp: eager active message of %zu bytes exceeds "
                  "UCX_TAG_EAGER_MAX_SIZE=%zu, which the receiver enforces",
                  total, worker->context->rndv.eager_max);
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    if (mem_type != UCS_MEMORY_TYPE_HOST) {
        /* Device memory: a synchronous cuda_copy into a host bounce buffer,
         * then the host eager protocols. */
        status = ucp_memtype_stage_send(req, mem_type);
        if (status != UCS_OK) {
            return status;
        }
    }
    if (sync) {
        status = ucp_tag_send_wireup(ep);
        if (status != UCS_OK) {
            return status;
        }
        req->flags          |= UCP_REQ_FLAG_SYNC | UCP_REQ_FLAG_IN_SYNC_LIST;
        req->u.send.sync_id  = worker->next_sync_id++;
        req->ep              = ep;
        ucs_list_add_tail(&worker->sync_reqs, &req->list);
    }

    hdr_len = (sync || (req->u.send.kind != UCP_SEND_KIND_TAG)) ?
              UCP_EAGER_SYNC_HDR : sizeof(uint64_t);
    if (!sync && (req->u.send.kind == UCP_SEND_KIND_TAG) &&
        (req->dt.length <= ep->max_short) && (req->dt.generic == NULL) &&
        ((req->dt.datatype & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_CONTIG)) {
        req->progress = ucp_tag_progress_short;
        proto         = UCP_PROTO_STAT_EAGER_SHORT;
    } else if (total + hdr_len <= ep->max_bcopy) {
        req->progress = ucp_tag_progress_single;
        proto         = UCP_PROTO_STAT_EAGER_BCOPY;
    } else {
        req->progress       = ucp_tag_progress_multi;
        req->u.send.msg_id  = worker->next_msg_id++;
        proto               = UCP_PROTO_STAT_EAGER_MULTI;
    }
    ++worker->proto_stats[(req->bounce != NULL) ? UCP_PROTO_STAT_EAGER_STAGED : proto];
    ucs_trace_req("ucp: send %p on ep %s: %zu bytes, kind %u, word 0x%llx",
                  (void*)req, ep->name, total, req->u.send.kind,
                  (unsigned long long)req->u.send.tag);

    if (attr & UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL) {
        /* One attempt, outside the queue: done now or not at all. */
        if (sync || !ucs_queue_is_empty(&ep->send_q) ||
            (req->progress == ucp_tag_progress_multi)) {
            return UCS_ERR_NO_RESOURCE;
        }
        req->ep = ep;
        return req->progress(req);
    }
    ucp_ep_push(ep, req);
    return UCS_OK;
}

/* Placeholder progress of a send posted while its ep was connecting: the
 * queue is not moved before the handshake ends, which resubmits it. */
static ucs_status_t ucp_send_deferred_progress(ucp_request_t *req)
{
    (void)req;
    return UCS_ERR_NO_RESOURCE;
}

int ucp_send_is_deferred(const ucp_request_t *req)
{
    return req->progress == ucp_send_deferred_progress;
}

void ucp_send_resubmit(ucp_request_t *req)
{
    ucp_ep_h ep  = req->ep;
    int sync     = !!(req->flags & UCP_REQ_FLAG_DEFERRED_SYNC);
    ucs_status_t status;

    req->flags &= ~(UCP_REQ_FLAG_DEFERRED | UCP_REQ_FLAG_DEFERRED_SYNC);
    status      = ucp_send_choose(req, ep, 0, sync);
    if (status != UCS_OK) {
        if (req->flags & UCP_REQ_FLAG_IN_SYNC_LIST) {
            ucs_list_del(&req->list);
            req->flags &= ~UCP_REQ_FLAG_IN_SYNC_LIST;
        }
        ucp_request_complete(req, status);
    }
}

/* Most bytes an AM or stream message sends through one am_short: its
 * origin words, user header and data, packed on the stack. */
#define UCP_SEND_SHORT_AM_MAX 256

/*
 * One am_short of @a length bytes of host memory at @a buffer: a tag message
 * with its tag as the transport's header; an AM or stream message with its
 * word as the header and [worker uuid][receiver's ep id][user header][data]
 * as the payload, the layout AM_SINGLE has. Anything else, or a transport
 * that is busy, is UCS_ERR_NO_RESOURCE: the request path then takes it.
 */
static ucs_status_t ucp_send_short(ucp_ep_h ep, const ucp_send_msg_t *msg,
                                   const void *buffer, size_t length,
                                   const ucp_request_param_t *param)
{
    uint64_t packed[UCP_SEND_SHORT_AM_MAX / sizeof(uint64_t)];
    size_t total;

    if (msg->kind == UCP_SEND_KIND_TAG) {
        if ((length > ep->max_short) ||
            (ucp_tag_memtype(ep->worker, buffer, length, param) !=
             UCS_MEMORY_TYPE_HOST)) {
            return UCS_ERR_NO_RESOURCE;
        }
        return uct_ep_am_short(ep->uct_ep, UCP_AM_ID_EAGER_ONLY, msg->word, buffer,
                               (unsigned)length);
    }
    total = 2 * sizeof(uint64_t) + msg->prefix_len + length;
    if ((total > ep->max_short) || (total > sizeof(packed)) ||
        (ucp_tag_memtype(ep->worker, buffer, length, param) != UCS_MEMORY_TYPE_HOST)) {
        return UCS_ERR_NO_RESOURCE;
    }
    packed[0] = ep->worker->uuid;
    packed[1] = ep->remote_ep_id;
    if (msg->prefix_len > 0) {
        memcpy(&packed[2], msg->prefix, msg->prefix_len);
    }
    if (length > 0) {
        memcpy((char*)&packed[2] + msg->prefix_len, buffer, length);
    }
    return uct_ep_am_short(ep->uct_ep, UCP_AM_ID_AM_SINGLE, msg->word, packed,
                           (unsigned)total);
}

ucs_status_ptr_t ucp_send_common(ucp_ep_h ep, const void *buffer, size_t count,
                                 const ucp_send_msg_t *msg,
                                 const ucp_request_param_t *param)
{
    ucp_worker_h worker = ep->worker;
    uint32_t attr       = (param != NULL) ? param->op_attr_mask : 0;
    ucp_datatype_t datatype;
    ucs_status_ptr_t ret;
    ucs_status_t status;
    ucp_request_t *req;
    size_t length;

    datatype = (attr & UCP_OP_ATTR_FIELD_DATATYPE) ? param->datatype :
                                                     ucp_dt_make_contig(1);
    ucp_worker_lock(worker);
    if (ucs_unlikely(ep->flags & (UCP_EP_FLAG_FAILED | UCP_EP_FLAG_CLOSING))) {
        ret = UCS_STATUS_PTR((ep->flags & UCP_EP_FLAG_FAILED) ? ep->status :
                                                                UCS_ERR_CANCELED);
        goto out;
    }

    /* Fast path: small contiguous host data on an idle endpoint (a
     * connecting one always has its handshake in the queue). */
    if (!msg->sync && (msg->proto != UCP_SEND_PROTO_RNDV) &&
        ((datatype & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_CONTIG) &&
        !(attr & UCP_OP_ATTR_FLAG_NO_IMM_CMPL) && ucs_queue_is_empty(&ep->send_q)) {
        length = count * (size_t)(datatype >> UCP_DATATYPE_SHIFT);
        if ((length < ucp_rndv_thresh(ep, UCP_RNDV_KIND_HOST)) &&
            (ucp_send_short(ep, msg, buffer, length, param) == UCS_OK)) {
            ++worker->proto_stats[UCP_PROTO_STAT_EAGER_SHORT];
            ret = NULL;
            goto out;
        }
    }

    req = ucp_request_get(worker, param);
    if (req == NULL) {
        ret = UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
        goto out;
    }
    req->flags |= UCP_REQ_FLAG_IN_CALL;
    ucp_request_set_callback(req, param, 0);
    status = ucp_dt_state_init(&req->dt, buffer, count, datatype, 0);
    if (status != UCS_OK) {
        goto err_req;
    }
    req->mem_type          = ucp_memtype_of_dt(worker, &req->dt, param);
    req->u.send.tag        = msg->word;
    req->u.send.kind       = msg->kind;
    req->u.send.proto      = msg->proto;
    req->u.send.dest_ep    = ep->remote_ep_id;
    req->u.send.prefix_len = msg->prefix_len;
    if (msg->prefix_len > 0) {
        /* The caller may reuse its header when the call returns. */
        req->owned = malloc(msg->prefix_len);
        if (req->owned == NULL) {
            status = UCS_ERR_NO_MEMORY;
            goto err_dt;
        }
        memcpy(req->owned, msg->prefix, msg->prefix_len);
        req->u.send.prefix = req->owned;
    }

    if (ucs_unlikely(ep->flags & UCP_EP_FLAG_CONNECTING)) {
        if (attr & UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL) {
            status = UCS_ERR_NO_RESOURCE;
            goto err_dt;
        }
        /* No lanes yet: the protocol is chosen when the handshake ends. */
        req->flags   |= UCP_REQ_FLAG_DEFERRED |
                        (msg->sync ? UCP_REQ_FLAG_DEFERRED_SYNC : 0);
        req->progress = ucp_send_deferred_progress;
        req->ep       = ep;
        ucs_queue_push(&ep->send_q, &req->queue);
        ret = ucp_request_finish_call(req, param);
        goto out;
    }
    status = ucp_send_choose(req, ep, attr, msg->sync);
    if (status != UCS_OK) {
        goto err_dt;
    }
    ret = ucp_request_finish_call(req, param);
out:
    ucp_worker_unlock(worker);
    return ret;

err_dt:
    ucp_dt_state_finish(&req->dt);
err_req:
    if (req->flags & UCP_REQ_FLAG_IN_SYNC_LIST) {
        ucs_list_del(&req->list);
    }
    ucp_request_put(req);
    ucp_worker_unlock(worker);
    return UCS_STATUS_PTR(status);
}

static ucs_status_ptr_t ucp_tag_send_common(ucp_ep_h ep, const void *buffer,
                                            size_t count, ucp_tag_t tag,
                                            const ucp_request_param_t *param,
                                            int sync)
{
    ucp_send_msg_t msg = {tag, NULL, 0, UCP_SEND_KIND_TAG, UCP_SEND_PROTO_AUTO,
                          sync};

    return ucp_send_common(ep, buffer, count, &msg, param);
}

ucs_status_ptr_t ucp_tag_send_nbx(ucp_ep_h ep, const void *buffer, size_t count,
                                  ucp_tag_t tag, const ucp_request_param_t *param)
{
    return ucp_tag_send_common(ep, buffer, count, tag, param, 0);
}

ucs_status_ptr_t ucp_tag_send_sync_nbx(ucp_ep_h ep, const void *buffer,
                                       size_t count, ucp_tag_t tag,
                                       const ucp_request_param_t *param)
{
    ucp_request_param_t p;

    /* Never completes inside the call. */
    if (param != NULL) {
        p = *param;
    } else {
        memset(&p, 0, sizeof(p));
    }
    p.op_attr_mask &= ~(uint32_t)UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
    return ucp_tag_send_common(ep, buffer, count, tag, &p, 1);
}

static void ucp_tag_param_nb(ucp_request_param_t *param, ucp_datatype_t datatype)
{
    memset(param, 0, sizeof(*param));
    param->op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param->datatype     = datatype;
}

/* The old calls take a callback without user data: installed after the
 * request exists, before anyone can complete it (we hold the lock). */
static ucs_status_ptr_t ucp_tag_send_nb_common(ucp_ep_h ep, const void *buffer,
                                               size_t count, ucp_datatype_t datatype,
                                               ucp_tag_t tag, ucp_send_callback_t cb,
                                               int sync)
{
    ucp_request_param_t param;
    ucs_status_ptr_t ret;
    ucp_request_t *req;

    ucp_tag_param_nb(&param, datatype);
    ucp_worker_lock(ep->worker);
    ret = ucp_tag_send_common(ep, buffer, count, tag, &param, sync);
    if ((ret != NULL) && !UCS_PTR_IS_ERR(ret) && (cb != NULL)) {
        req = (ucp_request_t*)ret - 1;
        req->cb.send = cb;
        req->flags  |= UCP_REQ_FLAG_CB_SEND;
    }
    ucp_worker_unlock(ep->worker);
    return ret;
}

ucs_status_ptr_t ucp_tag_send_nb(ucp_ep_h ep, const void *buffer, size_t count,
                                 ucp_datatype_t datatype, ucp_tag_t tag,
                                 ucp_send_callback_t cb)
{
    return ucp_tag_send_nb_common(ep, buffer, count, datatype, tag, cb, 0);
}

ucs_status_ptr_t ucp_tag_send_sync_nb(ucp_ep_h ep, const void *buffer,
                                      size_t count, ucp_datatype_t datatype,
                                      ucp_tag_t tag, ucp_send_callback_t cb)
{
    return ucp_tag_send_nb_common(ep, buffer, count, datatype, tag, cb, 1);
}

ucs_status_t ucp_tag_send_nbr(ucp_ep_h ep, const void *buffer, size_t count,
                              ucp_datatype_t datatype, ucp_tag_t tag, void *req)
{
    ucp_request_param_t param;
    ucs_status_ptr_t ret;

    ucp_tag_param_nb(&param, datatype);
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_REQUEST;
    param.request       = req;
    ret = ucp_tag_send_common(ep, buffer, count, tag, &param, 0);
    if (ret == NULL) {
        return UCS_OK;
    }
    return UCS_PTR_IS_ERR(ret) ? UCS_PTR_STATUS(ret) : UCS_INPROGRESS;
}
