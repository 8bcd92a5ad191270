#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_copy.h"

#include <stdlib.h>
#include <string.h>

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

/*
 * A small copy from host to device memory as stream memory writes. The
 * driver runs a host-to-device cuMemcpyAsync below ~32 KiB inside the command
 * stream on the GPU's compute engine, and when another process has used that
 * engine since, the GPU switches contexts first: ~140 us on an H200, which
 * makes every small eager receive into device memory cost that much when two
 * processes share a GPU. 32/64-bit writes (cuStreamBatchMemOp) need no such
 * switch: an 8-byte receive costs ~6 us (docs/performance.md, "Which GPU work
 * pays the switch"). The values are read from host memory at this call, not
 * in stream order, so only an idle stream qualifies: nothing queued earlier
 * can still be writing the source. Returns 1 when the writes were queued.
 */
static int uct_cuda_copy_ep_htod_memop(uct_cuda_copy_iface_t *iface,
                                       uct_cuda_queue_t *queue, CUdeviceptr dst,
                                       const void *src, size_t length)
{
    CUstreamBatchMemOpParams ops[UCT_CUDA_COPY_MEMOP_LIMIT / 4];
    const char *from = src;
    uct_cuda_mem_desc_t desc;
    ucs_memtype_alloc_kind_t kind;
    unsigned n = 0;
    uint64_t v64;
    uint32_t v32;
    size_t off;
    CUresult res;

    if ((length > iface->htod_memop_max) || (length == 0) || ((dst | length) & 3) ||
        ((queue->outstanding | queue->batched) != 0) ||
        (uct_cuda_mem_describe((void*)(uintptr_t)dst, length, &desc) != UCS_OK) ||
        (desc.mem_type != UCS_MEMORY_TYPE_CUDA) ||
        (iface->memop_refused & UCS_BIT(desc.alloc_kind))) {
        return 0;
    }
    kind = desc.alloc_kind;
    if ((uct_cuda_mem_describe(src, length, &desc) != UCS_OK) ||
        (desc.mem_type != UCS_MEMORY_TYPE_HOST)) {
        return 0;
    }

    for (off = 0; off < length; ++n) {
        memset(&ops[n], 0, sizeof(ops[n]));
        ops[n].writeValue.address = dst + off;
        if ((((dst + off) & 7) == 0) && (length - off >= 8)) {
            memcpy(&v64, from + off, 8);
            ops[n].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
            ops[n].writeValue.value64   = v64;
            off += 8;
        } else {
            memcpy(&v32, from + off, 4);
            ops[n].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
            ops[n].writeValue.value     = v32;
            off += 4;
        }
    }

    res = cuStreamBatchMemOp(queue->stream, n, ops, 0);
    if (res != CUDA_SUCCESS) {
        const char *name = NULL;

        cuGetErrorName(res, &name);
        /* Learnt once per kind of memory: a refused call costs a round
         * through the driver on every small copy otherwise. */
        ucs_debug("cuda_copy: stream memory writes to %s memory refused (%s); "
                  "small host-to-device copies to it use cuMemcpyAsync",
                  ucs_memtype_alloc_kind_names[kind], (name != NULL) ? name : "?");
        iface->memop_refused |= UCS_BIT(kind);
        return 0;
    }
    ++iface->memop_copies;
    return 1;
}

/* Queue one copy on @a queue (its context current). With @a may_wait, on
 * the home queue, a copy between two device buffers of the home GPU may wait
 * for a batch (cuda_batch.c); every other copy goes through the same queue,
 * after the copies that wait. */
static ucs_status_t uct_cuda_copy_ep_issue(uct_cuda_copy_iface_t *iface,
                                           uct_cuda_queue_t *queue, CUdeviceptr dst,
                                           CUdeviceptr src, size_t length,
                                           int may_wait)
{
    int kernel_ok;

    if (ucs_unlikely(length <= iface->htod_memop_max) &&
        uct_cuda_copy_ep_htod_memop(iface, queue, dst, (const void*)(uintptr_t)src,
                                    length)) {
        return UCS_OK;
    }
    kernel_ok = may_wait && (queue == &iface->queue) &&
                uct_cuda_queue_may_batch(queue, length) &&
                uct_cuda_kernel_may_touch(iface->ctx, iface->home,
                                          (const void*)(uintptr_t)dst, length) &&
                uct_cuda_kernel_may_touch(iface->ctx, iface->home,
                                          (const void*)(uintptr_t)src, length);
    return uct_cuda_queue_copy(queue, dst, src, length, kernel_ok);
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
    uct_cuda_queue_launch_pushed(queue); /* in stream order, before ours */
    status = uct_cuda_copy_ep_issue(iface, queue, (CUdeviceptr)(uintptr_t)dst,
                                    (CUdeviceptr)(uintptr_t)src, length, 0);
    if (status == UCS_OK) {
        status = UCT_CUDA_CALL(UCS_LOG_LEVEL_ERROR, cuStreamSynchronize(queue->stream));
    }
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
                if (uct_cuda_copy_ep_issue(iface, queue, dst, src, iov[i].length,
                                           1) != UCS_OK) {
                    status = UCS_ERR_IO_ERROR;
                    goto err;
                }
            }
            remote += iov[i].length;
        }
    }

    status = uct_cuda_queue_push(queue, comp);
    if (status == UCS_INPROGRESS) {
        goto out;
    }
err:
    /* No op will wait for this one's copies: issue those still waiting for
     * a batch and let them finish before the caller reuses the buffers. */
    uct_cuda_queue_abandon(queue);
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
