#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Tag matching: the expected queue (posted receives, in posting order) and
 * the unexpected queue (arrived messages, in arrival order), both searched
 * front to back so that the first match wins; messages still arriving in
 * fragments are also on the rx_inflight list. Active-message handlers for
 * the eager protocols of ucp_tag_send.c live here too.
 */

#include <ucp/core/ucp_int.h>
#include <ucp/rndv/ucp_rndv.h>

#include <stdlib.h>
#include <string.h>

void ucp_tag_send_acked(ucp_request_t *req, ucs_status_t status);

static inline int ucp_tag_match(ucp_tag_t sender, ucp_tag_t tag, ucp_tag_t mask)
{
    return ((sender ^ tag) & mask) == 0;
}

static ucp_request_t *ucp_tag_find_expected(ucp_worker_h worker, ucp_tag_t tag)
{
    ucp_request_t *req;

    ucs_list_for_each(req, &worker->expected, list) {
        if (ucp_tag_match(tag, req->u.recv.tag, req->u.recv.tag_mask)) {
            ucs_list_del(&req->list);
            req->flags &= ~UCP_REQ_FLAG_EXPECTED;
            return req;
        }
    }
    return NULL;
}

static void ucp_tag_ack(ucp_worker_h worker, uint64_t uuid, uint64_t sync_id)
{
    ucp_ep_h ep;

    if (sync_id == 0) {
        return;
    }
    ep = ucp_worker_find_ep(worker, uuid);
    if ((ep == NULL) || (ucp_ep_send_ack(ep, sync_id) != UCS_OK)) {
        ucs_error("ucp: cannot acknowledge sync send 0x%llx to worker 0x%llx",
                  (unsigned long long)sync_id, (unsigned long long)uuid);
    }
}

/* Start a matched receive: capacity, sender info. */
static void ucp_tag_recv_matched(ucp_request_t *req, ucp_tag_t tag, size_t length)
{
    req->u.recv.info.sender_tag = tag;
    req->u.recv.info.length     = length;
}

static void ucp_tag_recv_finish(ucp_request_t *req, ucs_status_t status)
{
    if ((status == UCS_OK) && (req->u.recv.info.length > req->dt.length)) {
        status = UCS_ERR_MESSAGE_TRUNCATED;
    }
    ucp_request_complete(req, status);
}

static ucs_status_t ucp_tag_recv_data(ucp_request_t *req, size_t offset,
                                      const void *data, size_t length)
{
    if (req->status != UCS_INPROGRESS) {
        return req->status;
    }
    return ucp_dt_unpack(&req->dt, offset, data, length);
}

/* Give a receive the arrived part of an unexpected message. */
static void ucp_tag_recv_from_desc(ucp_request_t *req, struct ucp_recv_desc *rdesc)
{
    ucs_status_t status;

    if (rdesc->is_rndv) {
        ucp_rndv_recv_start(req, rdesc->data, rdesc->received);
        free(rdesc->data);
        free(rdesc);
        return;
    }
    ucp_tag_recv_matched(req, rdesc->tag, rdesc->length);
    status = ucp_tag_recv_data(req, 0, rdesc->data, rdesc->received);
    free(rdesc->data);
    rdesc->data = NULL;
    ucp_tag_ack(req->worker, rdesc->uuid, rdesc->sync_id);
    if ((rdesc->received == rdesc->length) || (status != UCS_OK)) {
        if (rdesc->in_rx) {
            /* Failed while fragments still come: drop the rest. */
            rdesc->req = NULL;
            rdesc->data = NULL;
        } else {
            free(rdesc);
        }
        ucp_tag_recv_finish(req, status);
        return;
    }
    rdesc->req = req; /* the rest goes straight to the receive */
}

static struct ucp_recv_desc *ucp_tag_rdesc_new(ucp_tag_t tag, size_t length,
                                               uint64_t uuid, uint64_t sync_id)
{
    struct ucp_recv_desc *rdesc = calloc(1, sizeof(*rdesc));

    if (rdesc == NULL) {
        return NULL;
    }
    rdesc->data = malloc(length ? length : 1);
    if (rdesc->data == NULL) {
        free(rdesc);
        return NULL;
    }
    rdesc->tag     = tag;
    rdesc->length  = length;
    rdesc->uuid    = uuid;
    rdesc->sync_id = sync_id;
    return rdesc;
}

/* A whole message arrived in one piece. */
static void ucp_tag_recv_count(ucp_worker_h worker, const ucp_request_t *req,
                               ucp_proto_stat_t proto)
{
    if ((req != NULL) && (req->bounce != NULL)) {
        proto = UCP_PROTO_STAT_EAGER_STAGED;
    }
    ++worker->proto_stats[proto];
}

static ucs_status_t ucp_tag_eager_single(ucp_worker_h worker, ucp_tag_t tag,
                                         uint64_t uuid, uint64_t sync_id,
                                         const void *data, size_t length,
                                         ucp_proto_stat_t proto)
{
    struct ucp_recv_desc *rdesc;
    ucp_request_t *req;

    req = ucp_tag_find_expected(worker, tag);
    ucp_tag_recv_count(worker, req, proto);
    if (req != NULL) {
        ucp_tag_recv_matched(req, tag, length);
        ucp_tag_ack(worker, uuid, sync_id);
        ucp_tag_recv_finish(req, ucp_tag_recv_data(req, 0, data, length));
        return UCS_OK;
    }
    rdesc = ucp_tag_rdesc_new(tag, length, uuid, sync_id);
    if (rdesc == NULL) {
        ucs_error("ucp: no memory for an unexpected message of %zu bytes", length);
        return UCS_OK;
    }
    memcpy(rdesc->data, data, length);
    rdesc->received = length;
    rdesc->in_unexp = 1;
    ucs_list_add_tail(&worker->unexpected, &rdesc->list);
    return UCS_OK;
}

/* A message shorter than its fixed header comes from a broken or hostile
 * peer: it is dropped, with an error naming it, before any field is read. */
static int ucp_tag_am_is_short(const char *what, size_t length, size_t header)
{
    if (length >= header) {
        return 0;
    }
    ucs_error("ucp: %s message of %zu bytes dropped (header is %zu)", what,
              length, header);
    return 1;
}

static ucs_status_t ucp_tag_am_eager_only(void *arg, void *data, size_t length,
                                          unsigned flags)
{
    ucp_worker_iface_t *wiface = arg;
    uint64_t tag;

    (void)flags;
    if (ucp_tag_am_is_short("eager", length, sizeof(tag))) {
        return UCS_OK;
    }
    memcpy(&tag, data, sizeof(tag));
    /* Both sides run the same transport: what fits its am_short came so. */
    return ucp_tag_eager_single(wiface->worker, tag, 0, 0,
                                (char*)data + sizeof(tag), length - sizeof(tag),
                                (length <= wiface->attr.cap.am.max_short) ?
                                UCP_PROTO_STAT_EAGER_SHORT :
                                UCP_PROTO_STAT_EAGER_BCOPY);
}

static ucs_status_t ucp_tag_am_eager_sync(void *arg, void *data, size_t length,
                                          unsigned flags)
{
    ucp_worker_iface_t *wiface = arg;
    uint64_t hdr[3];

    (void)flags;
    if (ucp_tag_am_is_short("eager sync", length, sizeof(hdr))) {
        return UCS_OK;
    }
    memcpy(hdr, data, sizeof(hdr));
    return ucp_tag_eager_single(wiface->worker, hdr[0], hdr[1], hdr[2],
                                (char*)data + sizeof(hdr), length - sizeof(hdr),
                                UCP_PROTO_STAT_EAGER_BCOPY);
}

/*
 * A multi-fragment message announcing more than UCX_TAG_EAGER_MAX_SIZE: no
 * sender with our settings sends that eagerly (it takes rendezvous), so the
 * header is corrupt or hostile, or the peer runs with a larger limit. It is
 * dropped before anything is reserved -- also when a receive is posted, so
 * that the outcome does not depend on timing; its later fragments find no
 * message and are dropped too. As for every other malformed header, the
 * endpoint stays up: the sender is named only by this same header.
 */
static int ucp_tag_eager_too_long(ucp_worker_h worker, const uint64_t *hdr)
{
    size_t eager_max = worker->context->rndv.eager_max;

    if (hdr[3] <= eager_max) {
        return 0;
    }
    ucs_error("ucp: eager message 0x%llx of worker 0x%llx (tag 0x%llx) dropped: "
              "it announces %llu bytes, more than UCX_TAG_EAGER_MAX_SIZE=%zu "
              "(a sender with the same setting uses rendezvous for it)",
              (unsigned long long)hdr[2], (unsigned long long)hdr[1],
              (unsigned long long)hdr[0], (unsigned long long)hdr[3], eager_max);
    return 1;
}

static ucs_status_t ucp_tag_am_eager_first(void *arg, void *data, size_t length,
                                           unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    struct ucp_recv_desc *rdesc;
    const char *payload;
    ucp_request_t *req;
    uint64_t hdr[5];
    size_t len;

    (void)flags;
    if (ucp_tag_am_is_short("eager first", length, sizeof(hdr))) {
        return UCS_OK;
    }
    memcpy(hdr, data, sizeof(hdr));
    payload = (const char*)data + sizeof(hdr);
    len     = length - sizeof(hdr);
    if (len > hdr[3]) {
        ucs_error("ucp: first fragment of %zu bytes exceeds its message of %llu",
                  len, (unsigned long long)hdr[3]);
        return UCS_OK;
    }
    if (ucp_tag_eager_too_long(worker, hdr)) {
        /* A sync send would wait for ever: tell it. */
        ucp_tag_ack(worker, hdr[1], hdr[4] ? (hdr[4] | UCP_SYNC_ACK_DROPPED) : 0);
        return UCS_OK;
    }

    req = ucp_tag_find_expected(worker, hdr[0]);
    ucp_tag_recv_count(worker, req, UCP_PROTO_STAT_EAGER_MULTI);
    if (req != NULL) {
        rdesc = calloc(1, sizeof(*rdesc));
        if (rdesc == NULL) {
            ucp_tag_recv_finish(req, UCS_ERR_NO_MEMORY);
            return UCS_OK;
        }
        rdesc->tag    = hdr[0];
        rdesc->length = hdr[3];
        rdesc->uuid   = hdr[1];
        rdesc->req    = req;
        ucp_tag_recv_matched(req, hdr[0], hdr[3]);
        ucp_tag_ack(worker, hdr[1], hdr[4]);
        (void)ucp_tag_recv_data(req, 0, payload, len);
    } else {
        rdesc = ucp_tag_rdesc_new(hdr[0], hdr[3], hdr[1], hdr[4]);
        if (rdesc == NULL) {
            ucs_error("ucp: no memory for an unexpected message of %llu bytes",
                      (unsigned long long)hdr[3]);
            return UCS_OK;
        }
        memcpy(rdesc->data, payload, len);
        rdesc->in_unexp = 1;
        ucs_list_add_tail(&worker->unexpected, &rdesc->list);
    }
    rdesc->msg_id   = hdr[2];
    rdesc->received = len;
    rdesc->in_rx    = 1;
    ucs_list_add_tail(&worker->rx_inflight, &rdesc->rx_link);
    return UCS_OK;
}

static ucs_status_t ucp_tag_am_eager_middle(void *arg, void *data, size_t length,
                                            unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    struct ucp_recv_desc *rdesc;
    const char *payload;
    ucp_request_t *req;
    uint64_t hdr[3];
    size_t len;

    (void)flags;
    if (ucp_tag_am_is_short("eager middle", length, sizeof(hdr))) {
        return UCS_OK;
    }
    memcpy(hdr, data, sizeof(hdr));
    payload = (const char*)data + sizeof(hdr);
    len     = length - sizeof(hdr);

    ucs_list_for_each(rdesc, &worker->rx_inflight, rx_link) {
        if ((rdesc->uuid == hdr[0]) && (rdesc->msg_id == hdr[1])) {
            break;
        }
    }
    if (&rdesc->rx_link == &worker->rx_inflight) {
        ucs_debug("ucp: fragment of unknown message 0x%llx dropped",
                  (unsigned long long)hdr[1]);
        return UCS_OK;
    }
    if ((hdr[2] != rdesc->received) || (len > rdesc->length - rdesc->received)) {
        ucs_error("ucp: fragment at %llu+%zu does not fit message of %zu bytes",
                  (unsigned long long)hdr[2], len, rdesc->length);
        return UCS_OK;
    }
    if (rdesc->is_am) {
        ucp_am_rdesc_fragment(worker, rdesc, payload, len);
        return UCS_OK;
    }
    req = rdesc->req;
    if (req != NULL) {
        (void)ucp_tag_recv_data(req, hdr[2], payload, len);
    } else if (rdesc->data != NULL) {
        memcpy(rdesc->data + hdr[2], payload, len);
    }
    rdesc->received += len;
    if (rdesc->received < rdesc->length) {
        return UCS_OK;
    }
    ucs_list_del(&rdesc->rx_link);
    rdesc->in_rx = 0;
    if (req != NULL) {
        free(rdesc);
        ucp_tag_recv_finish(req, req->status == UCS_INPROGRESS ? UCS_OK : req->status);
    } else if (!rdesc->in_unexp && (rdesc->data == NULL)) {
        free(rdesc); /* its receive failed earlier */
    }
    return UCS_OK;
}

static ucs_status_t ucp_tag_am_sync_ack(void *arg, void *data, size_t length,
                                        unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    ucp_request_t *req;
    uint64_t sync_id;

    (void)flags;
    if (ucp_tag_am_is_short("sync ack", length, sizeof(sync_id))) {
        return UCS_OK;
    }
    memcpy(&sync_id, data, sizeof(sync_id));
    ucs_list_for_each(req, &worker->sync_reqs, list) {
        if (req->u.send.sync_id == (sync_id & ~UCP_SYNC_ACK_DROPPED)) {
            if (sync_id & UCP_SYNC_ACK_DROPPED) {
                ucs_error("ucp: sync send 0x%llx of %zu bytes was dropped by the "
                          "receiver: larger than its UCX_TAG_EAGER_MAX_SIZE",
                          (unsigned long long)req->u.send.sync_id, req->dt.length);
            }
            ucp_tag_send_acked(req, (sync_id & UCP_SYNC_ACK_DROPPED) ?
                                    UCS_ERR_EXCEEDS_LIMIT : UCS_OK);
            return UCS_OK;
        }
    }
    ucs_debug("ucp: ack for unknown sync send 0x%llx", (unsigned long long)sync_id);
    return UCS_OK;
}

/* A rendezvous announcement: matched now, or kept (the RTS message itself)
 * until a receive or msg_recv takes it; probe sees its full length. */
static ucs_status_t ucp_tag_am_rndv_rts(void *arg, void *data, size_t length,
                                        unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    struct ucp_recv_desc *rdesc;
    ucp_rndv_rts_t rts;
    ucp_request_t *req;

    (void)flags;
    if (length < sizeof(rts)) {
        ucs_error("ucp: RTS of %zu bytes dropped (header is %zu)", length,
                  sizeof(rts));
        return UCS_OK;
    }
    memcpy(&rts, data, sizeof(rts));
    req = ucp_tag_find_expected(worker, rts.tag);
    if (req != NULL) {
        ucp_rndv_recv_start(req, data, length);
        return UCS_OK;
    }
    rdesc = ucp_tag_rdesc_new(rts.tag, length, rts.uuid, 0);
    if (rdesc == NULL) {
        ucs_error("ucp: no memory for an unexpected rendezvous message");
        return UCS_OK;
    }
    memcpy(rdesc->data, data, length);
    rdesc->length   = rts.length; /* what probe reports */
    rdesc->received = length;     /* bytes of the RTS kept in data */
    rdesc->is_rndv  = 1;
    rdesc->in_unexp = 1;
    ucs_list_add_tail(&worker->unexpected, &rdesc->list);
    return UCS_OK;
}

static ucs_status_t ucp_tag_am_wireup(void *arg, void *data, size_t length,
                                      unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    ucp_unpacked_address_t *addr;
    uint64_t uuid;
    ucp_ep_h ep;

    (void)flags;
    if (ucp_tag_am_is_short("wireup", length, sizeof(uuid))) {
        return UCS_OK;
    }
    memcpy(&uuid, data, sizeof(uuid));
    if (ucp_worker_find_ep(worker, uuid) != NULL) {
        return UCS_OK;
    }
    addr = malloc(sizeof(*addr));
    if (addr == NULL) {
        return UCS_OK;
    }
    if ((ucp_address_unpack((char*)data + sizeof(uuid), length - sizeof(uuid),
                            addr) == UCS_OK) &&
        (ucp_ep_create_from_address(worker, addr, UCP_EP_FLAG_INTERNAL, 1,
                                    &ep) == UCS_OK)) {
        ucs_debug("ucp: worker %s: reply endpoint to 0x%llx created", worker->name,
                  (unsigned long long)uuid);
    }
    free(addr);
    return UCS_OK;
}

static ucs_status_t ucp_tag_am_keepalive(void *arg, void *data, size_t length,
                                         unsigned flags)
{
    (void)arg;
    (void)data;
    (void)length;
    (void)flags;
    return UCS_OK;
}

void ucp_tag_set_am_handlers(ucp_worker_iface_t *wiface)
{
    static const struct {
        uint8_t           id;
        uct_am_callback_t cb;
    } handlers[] = {
        {UCP_AM_ID_EAGER_ONLY,   ucp_tag_am_eager_only},
        {UCP_AM_ID_EAGER_SYNC,   ucp_tag_am_eager_sync},
        {UCP_AM_ID_EAGER_FIRST,  ucp_tag_am_eager_first},
        {UCP_AM_ID_EAGER_MIDDLE, ucp_tag_am_eager_middle},
        {UCP_AM_ID_SYNC_ACK,     ucp_tag_am_sync_ack},
        {UCP_AM_ID_WIREUP,       ucp_tag_am_wireup},
        {UCP_AM_ID_KEEPALIVE,    ucp_tag_am_keepalive},
        {UCP_AM_ID_RNDV_RTS,     ucp_tag_am_rndv_rts},
        {UCP_AM_ID_RNDV_RTR,     ucp_rndv_am_rtr},
        {UCP_AM_ID_RNDV_ATS,     ucp_rndv_am_ats},
        {UCP_AM_ID_RNDV_ATP,     ucp_rndv_am_atp},
        {UCP_AM_ID_RNDV_FRAG,    ucp_rndv_am_frag},
        {UCP_AM_ID_RNDV_FRAG_ACK, ucp_rndv_am_frag_ack},
        {UCP_AM_ID_RNDV_DATA,    ucp_rndv_am_data},
    };
    unsigned i;

    for (i = 0; i < sizeof(handlers) / sizeof(handlers[0]); ++i) {
        uct_iface_set_am_handler(wiface->iface, handlers[i].id, handlers[i].cb,
                                 wiface, 0);
    }
}

/* Messages still arriving from a failed peer will never finish. */
void ucp_tag_ep_failed(ucp_worker_h worker, uint64_t uuid, ucs_status_t status)
{
    struct ucp_recv_desc *rdesc, *tmp;

    ucp_rndv_peer_failed(worker, uuid, status);
    ucs_list_for_each_safe(rdesc, tmp, &worker->rx_inflight, rx_link) {
        if (rdesc->uuid != uuid) {
            continue;
        }
        ucs_list_del(&rdesc->rx_link);
        rdesc->in_rx = 0;
        if (rdesc->req != NULL) {
            ucp_request_complete(rdesc->req, status);
            free(rdesc);
        } else if (rdesc->in_unexp) {
            ucs_list_del(&rdesc->list);
            free(rdesc->data);
            free(rdesc);
        } else if (rdesc->is_am) {
            free(rdesc->data); /* an AM's block, or NULL for stream bytes */
            free(rdesc);
        }
    }
}

void ucp_tag_worker_cleanup(ucp_worker_h worker)
{
    struct ucp_recv_desc *rdesc, *tmp;
    ucp_request_t *req;

    ucs_list_for_each_safe(rdesc, tmp, &worker->rx_inflight, rx_link) {
        ucs_list_del(&rdesc->rx_link);
        rdesc->in_rx = 0;
        if (rdesc->req != NULL) {
            rdesc->req->flags |= UCP_REQ_FLAG_RELEASED;
            ucp_request_complete(rdesc->req, UCS_ERR_CANCELED);
            free(rdesc);
        } else if (!rdesc->in_unexp) {
            free(rdesc->data);
            free(rdesc);
        }
    }
    while (!ucs_list_is_empty(&worker->unexpected)) {
        rdesc = ucs_list_extract_head_elem(&worker->unexpected,
                                           struct ucp_recv_desc, list);
        free(rdesc->data);
        free(rdesc);
    }
    while (!ucs_list_is_empty(&worker->expected)) {
        req = ucs_list_extract_head_elem(&worker->expected, ucp_request_t, list);
        req->flags &= ~UCP_REQ_FLAG_EXPECTED;
        req->flags |= UCP_REQ_FLAG_RELEASED;
        ucp_request_complete(req, UCS_ERR_CANCELED);
    }
}

/* ---- API ------------------------------------------------------------------ */

static ucs_status_ptr_t ucp_tag_recv_common(ucp_worker_h worker, void *buffer,
                                            size_t count, ucp_tag_t tag,
                                            ucp_tag_t tag_mask,
                                            struct ucp_recv_desc *message,
                                            const ucp_request_param_t *param,
                                            ucp_tag_recv_callback_t old_cb)
{
    struct ucp_recv_desc *rdesc = message;
    ucs_status_ptr_t ret;
    ucs_status_t status;
    ucp_request_t *req;

    ucp_worker_lock(worker);
    req = ucp_request_get(worker, param);
    if (req == NULL) {
        ucp_worker_unlock(worker);
        return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    }
    req->flags |= UCP_REQ_FLAG_IN_CALL | UCP_REQ_FLAG_RECV;
    ucp_request_set_callback(req, param, 1);
    if (old_cb != NULL) {
        req->cb.recv = old_cb;
        req->flags  |= UCP_REQ_FLAG_CB_RECV;
    }
    status = ucp_request_recv_buffer(req, buffer, count, param);
    if (status != UCS_OK) {
        goto err_req;
    }
    req->u.recv.tag      = tag;
    req->u.recv.tag_mask = tag_mask;

    if (rdesc == NULL) {
        ucs_list_for_each(rdesc, &worker->unexpected, list) {
            if (ucp_tag_match(rdesc->tag, tag, tag_mask)) {
                break;
            }
        }
        if (&rdesc->list == &worker->unexpected) {
            rdesc = NULL;
        } else {
            ucs_list_del(&rdesc->list);
            rdesc->in_unexp = 0;
        }
    }
    if (rdesc != NULL) {
        ucp_tag_recv_from_desc(req, rdesc);
    } else {
        req->flags |= UCP_REQ_FLAG_EXPECTED;
        ucs_list_add_tail(&worker->expected, &req->list);
    }
    if ((old_cb != NULL) && (req->flags & UCP_REQ_FLAG_COMPLETED)) {
        /* The old calls always return a request, callback already called. */
        req->flags &= ~UCP_REQ_FLAG_IN_CALL;
        old_cb(req + 1, req->status, &req->u.recv.info);
        ret = req + 1;
    } else {
        ret = ucp_request_finish_call(req, param);
    }
    ucp_worker_unlock(worker);
    return ret;

err_req:
    ucp_request_put(req);
    ucp_worker_unlock(worker);
    return UCS_STATUS_PTR(status);
}

ucs_status_ptr_t ucp_tag_recv_nbx(ucp_worker_h worker, void *buffer, size_t count,
                                  ucp_tag_t tag, ucp_tag_t tag_mask,
                                  const ucp_request_param_t *param)
{
    return ucp_tag_recv_common(worker, buffer, count, tag, tag_mask, NULL, param,
                               NULL);
}

static ucs_status_ptr_t ucp_tag_recv_nb_common(ucp_worker_h worker, void *buffer,
                                               size_t count, ucp_datatype_t datatype,
                                               ucp_tag_t tag, ucp_tag_t tag_mask,
                                               struct ucp_recv_desc *message,
                                               ucp_tag_recv_callback_t cb,
                                               void *req)
{
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.datatype     = datatype;
    if (req != NULL) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_REQUEST;
        param.request       = req;
    }
    return ucp_tag_recv_common(worker, buffer, count, tag, tag_mask, message,
                               &param, cb);
}

ucs_status_ptr_t ucp_tag_recv_nb(ucp_worker_h worker, void *buffer, size_t count,
                                 ucp_datatype_t datatype, ucp_tag_t tag,
                                 ucp_tag_t tag_mask, ucp_tag_recv_callback_t cb)
{
    return ucp_tag_recv_nb_common(worker, buffer, count, datatype, tag, tag_mask,
                                  NULL, cb, NULL);
}

ucs_status_t ucp_tag_recv_nbr(ucp_worker_h worker, void *buffer, size_t count,
                              ucp_datatype_t datatype, ucp_tag_t tag,
                              ucp_tag_t tag_mask, void *req)
{
    ucs_status_ptr_t ret;

    ret = ucp_tag_recv_nb_common(worker, buffer, count, datatype, tag, tag_mask,
                                 NULL, NULL, req);
    return UCS_PTR_IS_ERR(ret) ? UCS_PTR_STATUS(ret) : UCS_OK;
}

ucp_tag_message_h ucp_tag_probe_nb(ucp_worker_h worker, ucp_tag_t tag,
                                   ucp_tag_t tag_mask, int remove,
                                   ucp_tag_recv_info_t *info)
{
    struct ucp_recv_desc *rdesc, *found = NULL;

    ucp_worker_lock(worker);
    ucs_list_for_each(rdesc, &worker->unexpected, list) {
        if (ucp_tag_match(rdesc->tag, tag, tag_mask)) {
            found = rdesc;
            break;
        }
    }
    if (found != NULL) {
        if (info != NULL) {
            info->sender_tag = found->tag;
            info->length     = found->length;
        }
        if (remove) {
            ucs_list_del(&found->list);
            found->in_unexp = 0;
        }
    }
    ucp_worker_unlock(worker);
    return found;
}

ucs_status_ptr_t ucp_tag_msg_recv_nb(ucp_worker_h worker, void *buffer,
                                     size_t count, ucp_datatype_t datatype,
                                     ucp_tag_message_h message,
                                     ucp_tag_recv_callback_t cb)
{
    return ucp_tag_recv_nb_common(worker, buffer, count, datatype, message->tag,
                                  UINT64_MAX, message, cb, NULL);
}

ucs_status_ptr_t ucp_tag_msg_recv_nbx(ucp_worker_h worker, void *buffer,
                                      size_t count, ucp_tag_message_h message,
                                      const ucp_request_param_t *param)
{
    return ucp_tag_recv_common(worker, buffer, count, message->tag, UINT64_MAX,
                               message, param, NULL);
}
