#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_copy.h"

#include <stdlib.h>

/*
 * cuda_copy operations. put copies local buffers to remote_addr, get copies
 * remote_addr into local buffers; both addresses are pointers of this
 * process and cuMemcpyAsync picks the direction from unified addressing.
 */

static UCS_F_ALWAYS_INLINE uct_cuda_copy_iface_t *
uct_cuda_copy_ep_iface(uct_ep_h ep)
{
    return ucs_container_of(ep->iface, uct_cuda_copy_iface_t, super.super);
}

/* A blocking copy on the stream of the device the memory belongs to. */
static ucs_status_t uct_cuda_copy_ep_copy_sync(uct_cuda_copy_iface_t *iface,
                                               void *dst, const void *src,
                                               size_t length)
{
    uct_cuda_queue_t *queue;
    ucs_status_t status;
    CUcontext ctx;
    int pushed;

    queue = uct_cuda_copy_iface_queue(iface, dst, src, length, &ctx);
    if (queue == NULL) {
        return UCS_ERR_IO_ERROR;
    }
    pushed = uct_cuda_ctx_push(ctx);
    status = uct_cuda_queue_copy_sync(queue, dst, src, length);
    uct_cuda_ctx_pop(pushed);
    return status;
}

ucs_status_t uct_cuda_copy_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    uct_cuda_copy_iface_t *iface = ucs_container_of(params->iface,
                                                    uct_cuda_copy_iface_t,
                                                    super.super);
    uct_cuda_copy_ep_t *ep;

    ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    uct_base_ep_init(&ep->super, &iface->super);
    *ep_p = &ep->super.super;
    return UCS_OK;
}

void uct_cuda_copy_ep_destroy(uct_ep_h ep)
{
    free(ucs_container_of(ep, uct_cuda_copy_ep_t, super.super));
}

ucs_status_t uct_cuda_copy_ep_put_short(uct_ep_h ep, const void *buffer,
                                        unsigned length, uint64_t remote_addr,
                                        uct_rkey_t rkey)
{
    return uct_cuda_copy_ep_copy_sync(uct_cuda_copy_ep_iface(ep),
                                      (void*)(uintptr_t)remote_addr, buffer, length);
}

ssize_t uct_cuda_copy_ep_put_bcopy(uct_ep_h ep, uct_pack_callback_t pack_cb,
                                   void *arg, uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_cuda_copy_iface_t *iface = uct_cuda_copy_ep_iface(ep);
    ucs_status_t status;
    size_t length;

    length = pack_cb(iface->bounce, arg);
    if (length > iface->max_bcopy) {
        return UCS_ERR_INVALID_PARAM;
    }
    status = uct_cuda_copy_ep_copy_sync(iface, (void*)(uintptr_t)remote_addr,
                                        iface->bounce, length);
    return (status == UCS_OK) ? (ssize_t)length : status;
}

ucs_status_t uct_cuda_copy_ep_get_bcopy(uct_ep_h ep, uct_unpack_callback_t unpack_cb,
                                        void *arg, size_t length,
                                        uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    uct_cuda_copy_iface_t *iface = uct_cuda_copy_ep_iface(ep);
    ucs_status_t status;

    if (length > iface->max_bcopy) {
        return UCS_ERR_INVALID_PARAM;
    }
    status = uct_cuda_copy_ep_copy_sync(iface, iface->bounce,
                                        (const void*)(uintptr_t)remote_addr, length);
    if (status == UCS_OK) {
        unpack_cb(arg, iface->bounce, length);
    }
    return status;
}

/* Queue one copy per iov block; the last one carries the completion. */
static ucs_status_t uct_cuda_copy_ep_zcopy(uct_ep_h ep, const uct_iov_t *iov,
                                           size_t iovcnt, uint64_t remote_addr,
                                           uct_completion_t *comp, int is_put)
{
    uct_cuda_copy_iface_t *iface = uct_cuda_copy_ep_iface(ep);
    CUdeviceptr remote           = (CUdeviceptr)remote_addr;
    const void *first            = (iovcnt > 0) ? iov[0].buffer : NULL;
    CUdeviceptr local, src, dst;
    uct_cuda_queue_t *queue;
    ucs_status_t status;
    unsigned count, j;
    CUcontext ctx;
    int pushed;
    size_t i;

    /* One queue for the whole operation: its blocks are one transfer. */
    queue = uct_cuda_copy_iface_queue(iface,
                                      is_put ? (void*)(uintptr_t)remote_addr : first,
                                      is_put ? first : (void*)(uintptr_t)remote_addr,
                                      (iovcnt > 0) ? iov[0].length : 0, &ctx);
    if (queue == NULL) {
        return UCS_ERR_IO_ERROR;
    }
    pushed = uct_cuda_ctx_push(ctx);

    for (i = 0; i < iovcnt; ++i) {
        count = (iov[i].count == 0) ? 1 : iov[i].count;
        for (j = 0; j < count; ++j) {
            local = (CUdeviceptr)(uintptr_t)iov[i].buffer + (size_t)j * iov[i].stride;
            src   = is_put ? local : remote;
            dst   = is_put ? remote : local;
            if (iov[i].length > 0) {
                if (UCT_CUDA_CALL(UCS_LOG_LEVEL_ERROR,
                                  cuMemcpyAsync(dst, src, iov[i].length,
                                                queue->stream)) != UCS_OK) {
                    /* Copies already queued finish before any later flush. */
                    status = UCS_ERR_IO_ERROR;
                    goto out;
                }
            }
            remote += iov[i].length;
        }
    }

    status = uct_cuda_queue_push(queue, comp);
out:
    uct_cuda_ctx_pop(pushed);
    return status;
}

ucs_status_t uct_cuda_copy_ep_put_zcopy(uct_ep_h ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey, uct_completion_t *comp)
{
    return uct_cuda_copy_ep_zcopy(ep, iov, iovcnt, remote_addr, comp, 1);
}

ucs_status_t uct_cuda_copy_ep_get_zcopy(uct_ep_h ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey, uct_completion_t *comp)
{
    return uct_cuda_copy_ep_zcopy(ep, iov, iovcnt, remote_addr, comp, 0);
}

ucs_status_t uct_cuda_copy_ep_flush(uct_ep_h ep, unsigned flags,
                                    uct_completion_t *comp)
{
    return uct_cuda_copy_iface_flush_queues(uct_cuda_copy_ep_iface(ep), comp);
}
