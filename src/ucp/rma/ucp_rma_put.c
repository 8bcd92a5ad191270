#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Put: the data goes in fragments of one active message each; only the
 * last asks for an answer (the others are answered only when refused), so
 * a put costs one answer however large it is. The request completes when
 * that answer arrives: the data is then in the target's memory.
 */

#include <ucp/rma/ucp_rma.h>

#include <string.h>

typedef struct {
    ucp_rma_req_hdr_t hdr;
    const void        *data;
} ucp_rma_put_frag_t;

static size_t ucp_rma_put_pack(void *dest, void *arg)
{
    ucp_rma_put_frag_t *frag = arg;

    memcpy(dest, &frag->hdr, sizeof(frag->hdr));
    memcpy((char*)dest + sizeof(frag->hdr), frag->data, frag->hdr.length);
    return sizeof(frag->hdr) + frag->hdr.length;
}

static ucs_status_t ucp_rma_put_progress(ucp_request_t *req)
{
    ucp_ep_h ep     = req->ep;
    size_t max_frag = ep->max_bcopy - sizeof(ucp_rma_req_hdr_t);
    size_t length   = req->dt.length;
    ucp_rma_put_frag_t frag;
    ssize_t ret;

    memset(&frag.hdr, 0, sizeof(frag.hdr));
    frag.hdr.uuid   = ep->worker->uuid;
    frag.hdr.op_id  = req->u.rma.id;
    frag.hdr.rma_id = req->u.rma.rkey_id;
    do {
        frag.hdr.offset  = req->u.rma.sent;
        frag.hdr.address = req->u.rma.remote_addr + req->u.rma.sent;
        frag.hdr.length  = (length - req->u.rma.sent < max_frag) ?
                           length - req->u.rma.sent : max_frag;
        frag.hdr.flags   = (req->u.rma.sent + frag.hdr.length == length) ?
                           UCP_RMA_FLAG_REPLY : 0;
        frag.data        = (const char*)req->dt.buffer + req->u.rma.sent;
        ret = uct_ep_am_bcopy(ep->uct_ep, UCP_AM_ID_RMA_PUT, ucp_rma_put_pack,
                              &frag, 0);
        if (ret < 0) {
            return (ucs_status_t)ret;
        }
        req->u.rma.sent += frag.hdr.length;
    } while (!(frag.hdr.flags & UCP_RMA_FLAG_REPLY));
    ++ep->rma.issued;
    req->u.rma.in_queue = 0;
    return UCS_OK;
}

static void ucp_rma_put_init(ucp_request_t *req, void *arg)
{
    (void)arg;
    req->progress = ucp_rma_put_progress;
}

static ucs_status_ptr_t ucp_rma_put_common(ucp_ep_h ep, const void *buffer,
                                           size_t count, uint64_t remote_addr,
                                           ucp_rkey_h rkey,
                                           const ucp_request_param_t *param)
{
    return ucp_rma_op_post(ep, UCP_RMA_KIND_PUT, buffer, count, remote_addr,
                           rkey, param, ucp_rma_put_init, NULL);
}

ucs_status_ptr_t ucp_put_nbx(ucp_ep_h ep, const void *buffer, size_t count,
                             uint64_t remote_addr, ucp_rkey_h rkey,
                             const ucp_request_param_t *param)
{
    return ucp_rma_put_common(ep, buffer, count, remote_addr, rkey, param);
}

ucs_status_ptr_t ucp_put_nb(ucp_ep_h ep, const void *buffer, size_t length,
                            uint64_t remote_addr, ucp_rkey_h rkey,
                            ucp_send_callback_t cb)
{
    return ucp_request_set_nb_callback(ep->worker,
                                   ucp_rma_put_common(ep, buffer, length,
                                                      remote_addr, rkey, NULL),
                                   cb);
}

ucs_status_t ucp_put_nbi(ucp_ep_h ep, const void *buffer, size_t length,
                         uint64_t remote_addr, ucp_rkey_h rkey)
{
    return ucp_rma_nbi_status(ucp_rma_put_common(ep, buffer, length,
                                                 remote_addr, rkey, NULL));
}
