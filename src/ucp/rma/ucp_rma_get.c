#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Get: one read request per fragment, each sized so that its answer (the
 * data) fits one active message; the request completes when every fragment
 * was answered.
 */

#include <ucp/rma/ucp_rma.h>

#include <string.h>

static size_t ucp_rma_get_pack(void *dest, void *arg)
{
    memcpy(dest, arg, sizeof(ucp_rma_req_hdr_t));
    return sizeof(ucp_rma_req_hdr_t);
}

static size_t ucp_rma_get_frag_size(ucp_ep_h ep)
{
    return ep->max_bcopy - sizeof(ucp_rma_rep_hdr_t);
}

static ucs_status_t ucp_rma_get_progress(ucp_request_t *req)
{
    ucp_ep_h ep   = req->ep;
    size_t length = req->dt.length;
    ucp_rma_req_hdr_t hdr;
    ssize_t ret;

    memset(&hdr, 0, sizeof(hdr));
    hdr.uuid   = ep->worker->uuid;
    hdr.op_id  = req->u.rma.id;
    hdr.rma_id = req->u.rma.rkey_id;
    hdr.flags  = UCP_RMA_FLAG_REPLY;
    do {
        hdr.offset  = req->u.rma.sent;
        hdr.address = req->u.rma.remote_addr + req->u.rma.sent;
        hdr.length  = length - req->u.rma.sent;
        if (hdr.length > ucp_rma_get_frag_size(ep)) {
            hdr.length = ucp_rma_get_frag_size(ep);
        }
        ret = uct_ep_am_bcopy(ep->uct_ep, UCP_AM_ID_RMA_GET_REQ, ucp_rma_get_pack,
                              &hdr, 0);
        if (ret < 0) {
            return (ucs_status_t)ret;
        }
        req->u.rma.sent += hdr.length;
        ++ep->rma.issued;
    } while (req->u.rma.sent < length);
    req->u.rma.in_queue = 0;
    return UCS_OK;
}

/* One answer per fragment. */
static void ucp_rma_get_init(ucp_request_t *req, void *arg)
{
    size_t frag = ucp_rma_get_frag_size(req->ep);

    (void)arg;
    req->u.rma.pending = (req->dt.length == 0) ? 1 :
                         (unsigned)((req->dt.length + frag - 1) / frag);
    req->progress      = ucp_rma_get_progress;
}

static ucs_status_ptr_t ucp_rma_get_common(ucp_ep_h ep, void *buffer,
                                           size_t count, uint64_t remote_addr,
                                           ucp_rkey_h rkey,
                                           const ucp_request_param_t *param)
{
    return ucp_rma_op_post(ep, UCP_RMA_KIND_GET, buffer, count, remote_addr,
                           rkey, param, ucp_rma_get_init, NULL);
}

ucs_status_ptr_t ucp_get_nbx(ucp_ep_h ep, void *buffer, size_t count,
                             uint64_t remote_addr, ucp_rkey_h rkey,
                             const ucp_request_param_t *param)
{
    return ucp_rma_get_common(ep, buffer, count, remote_addr, rkey, param);
}

ucs_status_ptr_t ucp_get_nb(ucp_ep_h ep, void *buffer, size_t length,
                            uint64_t remote_addr, ucp_rkey_h rkey,
                            ucp_send_callback_t cb)
{
    return ucp_request_set_nb_callback(ep->worker,
                                   ucp_rma_get_common(ep, buffer, length,
                                                      remote_addr, rkey, NULL),
                                   cb);
}

ucs_status_t ucp_get_nbi(ucp_ep_h ep, void *buffer, size_t length,
                         uint64_t remote_addr, ucp_rkey_h rkey)
{
    return ucp_rma_nbi_status(ucp_rma_get_common(ep, buffer, length,
                                                 remote_addr, rkey, NULL));
}
