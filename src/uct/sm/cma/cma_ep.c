#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cma.h"

#include <ucs/debug/log.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

static inline uct_cma_ep_t *uct_cma_ep(uct_ep_h tl_ep)
{
    return ucs_container_of(tl_ep, uct_cma_ep_t, super.super);
}

/*
 * Move the local blocks of @a iov from or to the peer's contiguous range at
 * @a remote_addr. The kernel may stop short (at a fault, or after an
 * internal limit); the loop goes on from where it stopped, and a call that
 * moves nothing fails the operation.
 */
static ucs_status_t uct_cma_ep_xfer(uct_cma_ep_t *ep, const uct_iov_t *iov,
                                    size_t iovcnt, uint64_t remote_addr,
                                    uct_rkey_t rkey, int is_put)
{
    struct iovec local, remote;
    size_t i, j, count, done;
    uint8_t *base;
    ssize_t ret;

    if (ucs_unlikely((iovcnt > UCT_CMA_MAX_IOV) || ((pid_t)rkey != ep->pid))) {
        ucs_error("cma ep %p: %s", (void*)ep, (iovcnt > UCT_CMA_MAX_IOV) ?
                  "too many iov elements" :
                  "the key names memory of another process than the peer");
        return UCS_ERR_INVALID_PARAM;
    }
    for (i = 0; i < iovcnt; ++i) {
        count = (iov[i].count == 0) ? 1 : iov[i].count;
        for (j = 0; j < count; ++j) {
            base = (uint8_t*)iov[i].buffer + (j * iov[i].stride);
            for (done = 0; done < iov[i].length; done += (size_t)ret) {
                local.iov_base  = base + done;
                local.iov_len   = ((iov[i].length - done < ep->max_chunk) ? (iov[i].length - done) : ep->max_chunk);
                remote.iov_base = (void*)(uintptr_t)(remote_addr + done);
                remote.iov_len  = local.iov_len;
                ret = is_put ? process_vm_writev(ep->pid, &local, 1, &remote, 1, 0) :
                               process_vm_readv(ep->pid, &local, 1, &remote, 1, 0);
                if (ucs_unlikely(ret <= 0)) {
                    int err = (ret < 0) ? errno : EFAULT;
                    ucs_debug("cma ep %p: %s of %zu bytes at 0x%llx of pid %d "
                              "failed: %s", (void*)ep, is_put ? "write" : "read",
                              local.iov_len, (unsigned long long)(uintptr_t)
                              remote.iov_base, (int)ep->pid, strerror(err));
                    return uct_cma_errno_status(err);
                }
            }
            remote_addr += iov[i].length;
        }
    }
    ucs_trace_data("cma ep %p: %s %zu iov element(s) %s pid %d", (void*)ep,
                   is_put ? "put" : "get", iovcnt, is_put ? "to" : "from",
                   (int)ep->pid);
    return UCS_OK;
}

ucs_status_t uct_cma_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                  uint64_t remote_addr, uct_rkey_t rkey,
                                  uct_completion_t *comp)
{
    return uct_cma_ep_xfer(uct_cma_ep(tl_ep), iov, iovcnt, remote_addr, rkey, 1);
}

ucs_status_t uct_cma_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                  uint64_t remote_addr, uct_rkey_t rkey,
                                  uct_completion_t *comp)
{
    return uct_cma_ep_xfer(uct_cma_ep(tl_ep), iov, iovcnt, remote_addr, rkey, 0);
}

ucs_status_t uct_cma_ep_pending_add(uct_ep_h ep, uct_pending_req_t *req,
                                    unsigned flags)
{
    return UCS_ERR_BUSY; /* nothing ever runs out: retry now */
}

ucs_status_t uct_cma_ep_flush(uct_ep_h ep, unsigned flags, uct_completion_t *comp)
{
    return UCS_OK;
}

ucs_status_t uct_cma_ep_fence(uct_ep_h ep, unsigned flags)
{
    return UCS_OK;
}

ucs_status_t uct_cma_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    uct_cma_iface_t *iface = ucs_container_of(params->iface, uct_cma_iface_t,
                                              super.super);
    uct_cma_iface_addr_t a;
    uct_cma_ep_t *ep;

    if (!(params->field_mask & UCT_EP_PARAM_FIELD_IFACE_ADDR) ||
        !(params->field_mask & UCT_EP_PARAM_FIELD_DEV_ADDR) ||
        (params->iface_addr == NULL) || (params->dev_addr == NULL)) {
        ucs_error("cma: a device and an iface address are required");
        return UCS_ERR_INVALID_PARAM;
    }
    if (!params->iface->ops.iface_is_reachable(params->iface, params->dev_addr,
                                               params->iface_addr)) {
        return UCS_ERR_UNREACHABLE;
    }
    memcpy(&a, params->iface_addr, sizeof(a));

    ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    uct_base_ep_init(&ep->super, &iface->super);
    ep->pid       = (pid_t)a.pid;
    ep->max_chunk = iface->max_chunk;
    ucs_debug("cma: ep %p to pid %d", (void*)ep, (int)ep->pid);
    *ep_p = &ep->super.super;
    return UCS_OK;
}

void uct_cma_ep_destroy(uct_ep_h ep)
{
    free(uct_cma_ep(ep));
}
