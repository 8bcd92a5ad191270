#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_iface.h"

/*
 * Stand-ins for operations a transport does not implement. The public
 * inline calls in uct.h jump through the ops table without a NULL check (a
 * send is one indirect call), so uct_base_iface_init() fills every NULL
 * entry with one of these: an unsupported call returns
 * UCS_ERR_UNSUPPORTED instead of crashing. Calls without a status to return
 * do nothing (progress reports no events, reachability says "no").
 */

static ucs_status_t uct_stub_ep_am_short(uct_ep_h ep, uint8_t id, uint64_t header,
                                         const void *payload, unsigned length)
{
    return UCS_ERR_UNSUPPORTED;
}

static ssize_t uct_stub_ep_am_bcopy(uct_ep_h ep, uint8_t id,
                                    uct_pack_callback_t pack_cb, void *arg,
                                    unsigned flags)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t uct_stub_ep_am_zcopy(uct_ep_h ep, uint8_t id, const void *header,
                                         unsigned header_length, const uct_iov_t *iov,
                                         size_t iovcnt, unsigned flags,
                                         uct_completion_t *comp)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t uct_stub_ep_put_short(uct_ep_h ep, const void *buffer,
                                          unsigned length, uint64_t remote_addr,
                                          uct_rkey_t rkey)
{
    return UCS_ERR_UNSUPPORTED;
}

static ssize_t uct_stub_ep_put_bcopy(uct_ep_h ep, uct_pack_callback_t pack_cb,
                                     void *arg, uint64_t remote_addr, uct_rkey_t rkey)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t uct_stub_ep_put_zcopy(uct_ep_h ep, const uct_iov_t *iov,
                                          size_t iovcnt, uint64_t remote_addr,
                                          uct_rkey_t rkey, uct_completion_t *comp)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t uct_stub_ep_get_bcopy(uct_ep_h ep, uct_unpack_callback_t unpack_cb,
                                          void *arg, size_t length,
                                          uint64_t remote_addr, uct_rkey_t rkey,
                                          uct_completion_t *comp)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t uct_stub_ep_get_zcopy(uct_ep_h ep, const uct_iov_t *iov,
                                          size_t iovcnt, uint64_t remote_addr,
                                          uct_rkey_t rkey, uct_completion_t *comp)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t uct_stub_ep_pending_add(uct_ep_h ep, uct_pending_req_t *req,
                                            unsigned flags)
{
    return UCS_ERR_UNSUPPORTED;
}

static void uct_stub_ep_pending_purge(uct_ep_h ep, uct_pending_purge_callback_t cb,
                                      void *arg)
{
    /* Nothing can be pending where nothing can be added. */
}

static ucs_status_t uct_stub_ep_flush(uct_ep_h ep, unsigned flags,
                                      uct_completion_t *comp)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t uct_stub_ep_fence(uct_ep_h ep, unsigned flags)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t uct_stub_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    return UCS_ERR_UNSUPPORTED;
}

static void uct_stub_ep_destroy(uct_ep_h ep)
{
    /* Unreachable in practice: an iface that cannot create eps has none. */
}

static ucs_status_t uct_stub_ep_get_address(uct_ep_h ep, uct_ep_addr_t *addr)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t uct_stub_ep_connect_to_ep(uct_ep_h ep,
                                              const uct_device_addr_t *dev_addr,
                                              const uct_ep_addr_t *ep_addr)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t uct_stub_iface_flush(uct_iface_h iface, unsigned flags,
                                         uct_completion_t *comp)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t uct_stub_iface_fence(uct_iface_h iface, unsigned flags)
{
    return UCS_ERR_UNSUPPORTED;
}

static unsigned uct_stub_iface_progress(uct_iface_h iface)
{
    return 0;
}

static ucs_status_t uct_stub_iface_event_fd_get(uct_iface_h iface, int *fd_p)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t uct_stub_iface_event_arm(uct_iface_h iface, unsigned events)
{
    return UCS_ERR_UNSUPPORTED;
}

static void uct_stub_iface_close(uct_iface_h iface)
{
    ucs_fatal("iface %p has no close operation", (void*)iface);
}

static ucs_status_t uct_stub_iface_query(uct_iface_h iface, uct_iface_attr_t *attr)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t uct_stub_iface_get_device_address(uct_iface_h iface,
                                                      uct_device_addr_t *addr)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t uct_stub_iface_get_address(uct_iface_h iface,
                                               uct_iface_addr_t *addr)
{
    return UCS_ERR_UNSUPPORTED;
}

static int uct_stub_iface_is_reachable(const uct_iface_h iface,
                                       const uct_device_addr_t *dev_addr,
                                       const uct_iface_addr_t *iface_addr)
{
    return 0;
}

#define UCT_STUB_FILL(_ops, _name) \
    if ((_ops)->_name == NULL) { \
        (_ops)->_name = uct_stub_##_name; \
    }

void uct_iface_ops_fill_stubs(uct_iface_ops_t *ops)
{
    UCT_STUB_FILL(ops, ep_am_short);
    UCT_STUB_FILL(ops, ep_am_bcopy);
    UCT_STUB_FILL(ops, ep_am_zcopy);
    UCT_STUB_FILL(ops, ep_put_short);
    UCT_STUB_FILL(ops, ep_put_bcopy);
    UCT_STUB_FILL(ops, ep_put_zcopy);
    UCT_STUB_FILL(ops, ep_get_bcopy);
    UCT_STUB_FILL(ops, ep_get_zcopy);
    UCT_STUB_FILL(ops, ep_pending_add);
    UCT_STUB_FILL(ops, ep_pending_purge);
    UCT_STUB_FILL(ops, ep_flush);
    UCT_STUB_FILL(ops, ep_fence);
    UCT_STUB_FILL(ops, ep_create);
    UCT_STUB_FILL(ops, ep_destroy);
    UCT_STUB_FILL(ops, ep_get_address);
    UCT_STUB_FILL(ops, ep_connect_to_ep);
    UCT_STUB_FILL(ops, iface_flush);
    UCT_STUB_FILL(ops, iface_fence);
    UCT_STUB_FILL(ops, iface_progress);
    UCT_STUB_FILL(ops, iface_event_fd_get);
    UCT_STUB_FILL(ops, iface_event_arm);
    UCT_STUB_FILL(ops, iface_close);
    UCT_STUB_FILL(ops, iface_query);
    UCT_STUB_FILL(ops, iface_get_device_address);
    UCT_STUB_FILL(ops, iface_get_address);
    UCT_STUB_FILL(ops, iface_is_reachable);
}
