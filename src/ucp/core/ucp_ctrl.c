#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Small control messages (rendezvous RTS/RTR/ATS, RMA answers, ...) on an
 * endpoint's active-message lane. Sent at once when the endpoint's queue is
 * empty, so they never overtake queued data; otherwise, or when the
 * transport is busy, a copy waits in the queue behind what is there.
 */

#include <ucp/core/ucp_int.h>

#include <string.h>

typedef struct {
    const void *hdr;
    size_t     hdr_len;
    const void *data;
    size_t     data_len;
} ucp_ctrl_msg_t;

static size_t ucp_ctrl_pack_parts(void *dest, void *arg)
{
    const ucp_ctrl_msg_t *msg = arg;

    memcpy(dest, msg->hdr, msg->hdr_len);
    if (msg->data_len > 0) {
        memcpy((char*)dest + msg->hdr_len, msg->data, msg->data_len);
    }
    return msg->hdr_len + msg->data_len;
}

static size_t ucp_ctrl_pack_queued(void *dest, void *arg)
{
    const ucp_request_t *req = arg;

    memcpy(dest, req->u.ctrl.blob, req->u.ctrl.blob_len);
    return req->u.ctrl.blob_len;
}

/* A queued message: its copy is the request's scratch memory, freed when the
 * request completes (sent, or failed with the ep). */
static ucs_status_t ucp_ctrl_progress(ucp_request_t *req)
{
    ssize_t ret;

    ret = uct_ep_am_bcopy(req->ep->uct_ep, (uint8_t)req->u.ctrl.ack_id,
                          ucp_ctrl_pack_queued, req, 0);
    if (ret < 0) {
        return (ucs_status_t)ret;
    }
    ucp_request_complete(req, UCS_OK);
    return UCS_OK;
}

ucs_status_t ucp_ep_send_ctrl(ucp_ep_h ep, uint8_t am_id, const void *hdr,
                              size_t hdr_len, const void *data, size_t data_len)
{
    ucp_ctrl_msg_t msg = {hdr, hdr_len, data, data_len};
    ucp_request_t *req;
    ssize_t ret;
    void *blob;

    if (ep->flags & UCP_EP_FLAG_FAILED) {
        return ep->status;
    }
    if (!(ep->flags & UCP_EP_FLAG_CONNECTING) &&
        (hdr_len + data_len > ep->max_bcopy)) {
        ucs_error("ucp: control message %u of %zu bytes exceeds the %zu-byte "
                  "segment of ep %s", am_id, hdr_len + data_len, ep->max_bcopy,
                  ep->name);
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    if (ucs_queue_is_empty(&ep->send_q)) {
        ret = uct_ep_am_bcopy(ep->uct_ep, am_id, ucp_ctrl_pack_parts, &msg, 0);
        if (ret >= 0) {
            return UCS_OK;
        } else if (ret != UCS_ERR_NO_RESOURCE) {
            return (ucs_status_t)ret;
        }
    }
    req = ucp_request_get(ep->worker, NULL);
    if (req == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    blob = ucp_request_scratch_alloc(req, hdr_len + data_len);
    if (blob == NULL) {
        ucp_request_put(req);
        return UCS_ERR_NO_MEMORY;
    }
    ucp_ctrl_pack_parts(blob, &msg);
    req->flags          |= UCP_REQ_FLAG_INTERNAL;
    req->u.ctrl.blob     = blob;
    req->u.ctrl.blob_len = hdr_len + data_len;
    req->u.ctrl.ack_id   = am_id;
    req->progress        = ucp_ctrl_progress;
    ucp_ep_push(ep, req);
    return UCS_OK;
}
