#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "self.h"

#include <ucs/debug/log.h>

#include <stdlib.h>
#include <string.h>

/*
 * Self endpoint operations. Active messages are copied into a receive
 * descriptor of the destination iface and handed to its handler before the
 * send returns; a handler may keep the descriptor (UCS_INPROGRESS), which is
 * why a descriptor rather than the sender's buffer is delivered. Put and get
 * copy directly between the buffers: the remote address is a pointer of
 * this process and the rkey carries nothing.
 */

static inline uct_self_ep_t *uct_self_ep(uct_ep_h ep)
{
    return ucs_container_of(ep, uct_self_ep_t, super.super);
}

/* Start of the message data inside a descriptor object. */
static inline char *uct_self_desc_data(uct_self_iface_t *iface, void *obj)
{
    return (char*)obj + UCT_RECV_DESC_HDR_SIZE + iface->super.rx_headroom;
}

/* Hand a filled descriptor to the handler; recycle it unless kept. */
static inline void uct_self_deliver(uct_self_iface_t *iface, uint8_t id, void *obj,
                                    size_t length)
{
    ucs_status_t status;

    status = uct_iface_invoke_am(&iface->super, id, uct_self_desc_data(iface, obj),
                                 length, UCT_CB_PARAM_FLAG_DESC);
    if (status != UCS_INPROGRESS) {
        ucs_mpool_put(obj);
    }
}

ucs_status_t uct_self_ep_am_short(uct_ep_h ep, uint8_t id, uint64_t header,
                                  const void *payload, unsigned length)
{
    uct_self_iface_t *peer = uct_self_ep(ep)->peer;
    size_t total           = sizeof(header) + length;
    char *data;
    void *obj;

    if (ucs_unlikely(total > peer->seg_size)) {
        return UCS_ERR_INVALID_PARAM;
    }

    obj = ucs_mpool_get(&peer->desc_mp);
    if (ucs_unlikely(obj == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }

    data = uct_self_desc_data(peer, obj);
    memcpy(data, &header, sizeof(header));
    if (length > 0) { /* payload may be NULL then */
        memcpy(data + sizeof(header), payload, length);
    }
    uct_self_deliver(peer, id, obj, total);
    return UCS_OK;
}

ssize_t uct_self_ep_am_bcopy(uct_ep_h ep, uint8_t id, uct_pack_callback_t pack_cb,
                             void *arg, unsigned flags)
{
    uct_self_iface_t *peer = uct_self_ep(ep)->peer;
    size_t length;
    void *obj;

    obj = ucs_mpool_get(&peer->desc_mp);
    if (ucs_unlikely(obj == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }

    length = pack_cb(uct_self_desc_data(peer, obj), arg);
    ucs_assert_always(length <= peer->seg_size); /* memory is already overrun */
    uct_self_deliver(peer, id, obj, length);
    return (ssize_t)length;
}

ucs_status_t uct_self_ep_am_zcopy(uct_ep_h ep, uint8_t id, const void *header,
                                  unsigned header_length, const uct_iov_t *iov,
                                  size_t iovcnt, unsigned flags,
                                  uct_completion_t *comp)
{
    uct_self_iface_t *peer = uct_self_ep(ep)->peer;
    size_t total;
    char *data;
    void *obj;

    if (ucs_unlikely(iovcnt > UCT_SELF_MAX_IOV)) {
        return UCS_ERR_INVALID_PARAM;
    }
    total = header_length + uct_iov_total_length(iov, iovcnt);
    if (ucs_unlikely(total > peer->seg_size)) {
        return UCS_ERR_INVALID_PARAM;
    }

    obj = ucs_mpool_get(&peer->desc_mp);
    if (ucs_unlikely(obj == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }

    data = uct_self_desc_data(peer, obj);
    if (header_length > 0) {
        memcpy(data, header, header_length);
    }
    uct_iov_to_buffer(iov, iovcnt, data + header_length);
    uct_self_deliver(peer, id, obj, total);
    return UCS_OK; /* the user's buffers are free: comp is not used */
}

ucs_status_t uct_self_ep_put_short(uct_ep_h ep, const void *buffer, unsigned length,
                                   uint64_t remote_addr, uct_rkey_t rkey)
{
    memcpy((void*)(uintptr_t)remote_addr, buffer, length);
    return UCS_OK;
}

ssize_t uct_self_ep_put_bcopy(uct_ep_h ep, uct_pack_callback_t pack_cb, void *arg,
                              uint64_t remote_addr, uct_rkey_t rkey)
{
    /* Packing straight into the destination saves the bounce copy. */
    return (ssize_t)pack_cb((void*)(uintptr_t)remote_addr, arg);
}

ucs_status_t uct_self_ep_put_zcopy(uct_ep_h ep, const uct_iov_t *iov, size_t iovcnt,
                                   uint64_t remote_addr, uct_rkey_t rkey,
                                   uct_completion_t *comp)
{
    if (ucs_unlikely(iovcnt > UCT_SELF_MAX_IOV)) {
        return UCS_ERR_INVALID_PARAM;
    }
    uct_iov_to_buffer(iov, iovcnt, (void*)(uintptr_t)remote_addr);
    return UCS_OK;
}

ucs_status_t uct_self_ep_get_bcopy(uct_ep_h ep, uct_unpack_callback_t unpack_cb,
                                   void *arg, size_t length, uint64_t remote_addr,
                                   uct_rkey_t rkey, uct_completion_t *comp)
{
    unpack_cb(arg, (const void*)(uintptr_t)remote_addr, length);
    return UCS_OK;
}

ucs_status_t uct_self_ep_get_zcopy(uct_ep_h ep, const uct_iov_t *iov, size_t iovcnt,
                                   uint64_t remote_addr, uct_rkey_t rkey,
                                   uct_completion_t *comp)
{
    if (ucs_unlikely(iovcnt > UCT_SELF_MAX_IOV)) {
        return UCS_ERR_INVALID_PARAM;
    }
    uct_iov_from_buffer(iov, iovcnt, (const void*)(uintptr_t)remote_addr);
    return UCS_OK;
}

ucs_status_t uct_self_ep_pending_add(uct_ep_h ep, uct_pending_req_t *req,
                                     unsigned flags)
{
    /* Sends never run out of resources (NO_RESOURCE only when memory is
     * exhausted), so there is nothing to wait for: retry now. */
    return UCS_ERR_BUSY;
}

ucs_status_t uct_self_ep_flush(uct_ep_h ep, unsigned flags, uct_completion_t *comp)
{
    return UCS_OK;
}

ucs_status_t uct_self_ep_fence(uct_ep_h ep, unsigned flags)
{
    return UCS_OK;
}

ucs_status_t uct_self_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    uct_self_iface_t *iface = ucs_container_of(params->iface, uct_self_iface_t,
                                               super.super);
    uct_self_iface_t *peer;
    uct_self_ep_t *ep;

    if (!(params->field_mask & UCT_EP_PARAM_FIELD_IFACE_ADDR) ||
        (params->iface_addr == NULL)) {
        ucs_error("self: an iface address is required (connect to iface only)");
        return UCS_ERR_INVALID_PARAM;
    }

    if ((params->field_mask & UCT_EP_PARAM_FIELD_DEV_ADDR) &&
        (params->dev_addr != NULL) &&
        !params->iface->ops.iface_is_reachable(params->iface, params->dev_addr,
                                               NULL)) {
        return UCS_ERR_UNREACHABLE;
    }

    peer = uct_self_iface_lookup((const uct_self_iface_addr_t*)params->iface_addr);
    if (peer == NULL) {
        ucs_debug("self: iface address is not of an open iface of this process");
        return UCS_ERR_UNREACHABLE;
    }

    ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    uct_base_ep_init(&ep->super, &iface->super);
    ep->peer = peer;
    *ep_p    = &ep->super.super;
    return UCS_OK;
}

void uct_self_ep_destroy(uct_ep_h ep)
{
    free(uct_self_ep(ep));
}
