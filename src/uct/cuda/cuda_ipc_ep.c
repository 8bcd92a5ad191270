#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_ipc.h"

#include <stdlib.h>

/*
 * cuda_ipc operations: find (or import) the mapping of the peer object the
 * key describes, then one cuMemcpyAsync per iov block on the iface's
 * stream for the device that memory lives on (copies with different peer
 * GPUs run concurrently). cuMemcpyAsync takes the direction from unified
 * addressing, so the local buffer may also be host memory (a rendezvous
 * into a host receive buffer, or a put from a host send buffer). Copies
 * between a device buffer of the iface's GPU and a mapping of that GPU or of
 * a peer GPU may instead wait for the next progress and go out as one
 * kernel with others (cuda_batch.c). The mapping
 * stays referenced until the operation's event has fired, so the cache
 * never unmaps memory a copy still uses.
 */

static UCS_F_ALWAYS_INLINE uct_cuda_ipc_iface_t *uct_cuda_ipc_ep_iface(uct_ep_h ep)
{
    return ucs_container_of(ep->iface, uct_cuda_ipc_iface_t, super.super);
}

ucs_status_t uct_cuda_ipc_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    uct_cuda_ipc_iface_t *iface = ucs_container_of(params->iface,
                                                   uct_cuda_ipc_iface_t, super.super);
    uct_cuda_ipc_ep_t *ep;

    ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    uct_base_ep_init(&ep->super, &iface->super);
    *ep_p = &ep->super.super;
    return UCS_OK;
}

void uct_cuda_ipc_ep_destroy(uct_ep_h ep)
{
    free(ucs_container_of(ep, uct_cuda_ipc_ep_t, super.super));
}

/* Both ends of a copy where the batch kernel, running in the iface's
 * context, may touch them: the mapping lives in the iface's context, and is
 * memory of our GPU or, with BATCH_PEER, of a GPU ours reaches peer-to-peer
 * (imports are mapped with access for our GPU: the kernel reads or writes
 * them over the link); the local buffer is memory the kernel reaches. */
static int uct_cuda_ipc_ep_kernel_ok(const uct_cuda_ipc_iface_t *iface,
                                     const uct_cuda_ipc_mapping_t *mapping,
                                     const void *local, size_t len)
{
    return (mapping->local_gpu || (iface->batch_peer && mapping->peer_gpu)) &&
           uct_cuda_kernel_may_touch(iface->ctx, iface->device, local, len);
}

static void uct_cuda_ipc_ep_op_done(void *arg)
{
    uct_cuda_ipc_mapping_t *mapping = arg;

    uct_cuda_ipc_mapping_put(mapping->cache, mapping);
}

static ucs_status_t uct_cuda_ipc_ep_zcopy(uct_ep_h ep, const uct_iov_t *iov,
                                          size_t iovcnt, uint64_t remote_addr,
                                          uct_rkey_t rkey, uct_completion_t *comp,
                                          int is_put)
{
    uct_cuda_ipc_iface_t *iface     = uct_cuda_ipc_ep_iface(ep);
    const uct_cuda_ipc_key_t *key   = &((const uct_cuda_ipc_rkey_t*)rkey)->key;
    size_t total                    = uct_iov_total_length(iov, iovcnt);
    uct_cuda_ipc_mapping_t *mapping;
    uct_cuda_queue_t *queue;
    CUdeviceptr remote, local;
    int pushed;
    ucs_status_t status;
    unsigned count, j;
    int kernel_ok;
    size_t i;

    if ((remote_addr < key->remote_base) ||
        (total > key->length) ||
        (remote_addr - key->remote_base > key->length - total)) {
        ucs_error("cuda_ipc: 0x%lx..+%zu is outside the key's 0x%lx..+%lu",
                  (unsigned long)remote_addr, total, (unsigned long)key->remote_base,
                  (unsigned long)key->length);
        return UCS_ERR_INVALID_PARAM;
    }

    pushed = uct_cuda_ctx_push(iface->ctx);
    queue  = uct_cuda_ipc_iface_queue(iface, key->device);
    if (queue == NULL) {
        status = UCS_ERR_NO_RESOURCE;
        goto out;
    }

    status = uct_cuda_ipc_cache_get(&iface->cache, key, &mapping);
    if (status != UCS_OK) {
        goto out;
    }

    remote = mapping->local_base + (remote_addr - key->remote_base);
    for (i = 0; i < iovcnt; ++i) {
        count     = (iov[i].count == 0) ? 1 : iov[i].count;
        kernel_ok = uct_cuda_queue_may_batch(queue, iov[i].length) &&
                    uct_cuda_ipc_ep_kernel_ok(iface, mapping, iov[i].buffer,
                                              (count - 1) * iov[i].stride +
                                                      iov[i].length);
        for (j = 0; j < count; ++j) {
            local = (CUdeviceptr)(uintptr_t)iov[i].buffer + (size_t)j * iov[i].stride;
            if ((iov[i].length > 0) &&
                (uct_cuda_queue_copy(queue, is_put ? remote : local,
                                     is_put ? local : remote, iov[i].length,
                                     kernel_ok) != UCS_OK)) {
                status = UCS_ERR_IO_ERROR;
                goto err;
            }
            remote += iov[i].length;
        }
    }

    status = uct_cuda_queue_push_cb(queue, comp, uct_cuda_ipc_ep_op_done,
                                    mapping);
    if (status == UCS_INPROGRESS) {
        goto out;
    }

err:
    /* Nothing to wait for will release the mapping: make sure no copy still
     * uses it (copies waiting for a batch included), then drop our
     * reference. */
    uct_cuda_queue_abandon(queue);
    uct_cuda_ipc_mapping_put(&iface->cache, mapping);
out:
    uct_cuda_ctx_pop(pushed);
    return status;
}

ucs_status_t uct_cuda_ipc_ep_put_zcopy(uct_ep_h ep, const uct_iov_t *iov,
                                       size_t iovcnt, uint64_t remote_addr,
                                       uct_rkey_t rkey, uct_completion_t *comp)
{
    return uct_cuda_ipc_ep_zcopy(ep, iov, iovcnt, remote_addr, rkey, comp, 1);
}

ucs_status_t uct_cuda_ipc_ep_get_zcopy(uct_ep_h ep, const uct_iov_t *iov,
                                       size_t iovcnt, uint64_t remote_addr,
                                       uct_rkey_t rkey, uct_completion_t *comp)
{
    return uct_cuda_ipc_ep_zcopy(ep, iov, iovcnt, remote_addr, rkey, comp, 0);
}

ucs_status_t uct_cuda_ipc_ep_flush(uct_ep_h ep, unsigned flags,
                                   uct_completion_t *comp)
{
    return uct_cuda_ipc_iface_flush_all(uct_cuda_ipc_ep_iface(ep), comp);
}
