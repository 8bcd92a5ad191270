#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * Copies and memsets. Addresses are translated to shadow (model) addresses
 * when the call is made, piece by piece, so a copy may cross the chunks of a
 * multi-chunk VMM range; memory nobody registered is pageable host memory.
 *
 * When a "synchronous" call returns follows the driver's documented
 * behaviour ("API synchronization behavior"):
 * - to host memory (DtoH), and from pinned host memory: complete on return;
 * - from pageable host memory: the source is captured at the call (the
 *   driver stages it), the transfer may still be in flight;
 * - device to device, and memset of device memory: may still be in flight;
 * unless the memory has SYNC_MEMOPS set (cuPointerSetAttribute; managed
 * memory has it; on pool memory the H200 accepts the attribute and ignores
 * it, see sim_range_sync_memops()) or the context has CU_CTX_SYNC_MEMOPS,
 * which make every synchronous operation complete before returning.
 * "May still be in flight" is a late operation (CUDASIM_LATE_LANDING, on by
 * default): it lands only when something synchronises with its stream
 * (sim_stream.c); with CUDASIM_LATE_LANDING=0 it runs like any other
 * operation of its stream (at once, or late with CUDASIM_ASYNC=1).
 * The *Async calls never wait; a pageable source is captured at the call.
 */
#include "cudasim.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Where one byte of a copy lives. */
typedef struct sim_piece {
    char        *shadow;
    size_t      avail;  /**< contiguous bytes from shadow on */
    sim_range_t *range; /**< NULL: pageable host memory */
} sim_piece_t;

static CUresult sim_piece_get(uintptr_t addr, int device, sim_piece_t *piece)
{
    sim_range_t *range = sim_range_find(addr);

    if (range == NULL) {
        if ((addr == 0) || sim_addr_is_dangling(addr)) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        piece->shadow = (char *)addr;
        piece->avail  = SIZE_MAX;
        piece->range  = NULL;
        return CUDA_SUCCESS;
    }
    if (!sim_range_device_access(range, device)) {
        /* The H200 refuses the copy up front (no sticky fault). */
        sim_warn("device %d has no access to %p (cuMemSetAccess / "
                 "cuMemPoolSetAccess missing)", device, (void *)addr);
        return CUDA_ERROR_INVALID_VALUE;
    }
    piece->shadow = range->shadow + (addr - range->base);
    piece->avail  = range->base + range->size - addr;
    piece->range  = range;
    return CUDA_SUCCESS;
}

static CUresult sim_op_add_seg(sim_op_t *op, char *dst, const char *src,
                               size_t len)
{
    sim_seg_t *segs = realloc(op->segs, (op->nsegs + 1) * sizeof(*segs));

    if (segs == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    op->segs              = segs;
    op->segs[op->nsegs].dst = dst;
    op->segs[op->nsegs].src = src;
    op->segs[op->nsegs].len = len;
    ++op->nsegs;
    return CUDA_SUCCESS;
}

/* Does a synchronous operation on these ranges have to complete first? */
static int sim_sync_memops(const sim_range_t *range, CUstream stream)
{
    return (stream->ctx->flags & CU_CTX_SYNC_MEMOPS) ||
           ((range != NULL) && sim_range_sync_memops(range));
}

static int sim_is_host(const sim_range_t *range)
{
    return (range == NULL) || range->cpu_visible;
}

/*
 * Whether a copy or memset is late (CUDASIM_LATE_LANDING): a "synchronous"
 * call the driver lets return before it lands (!wait), or an asynchronous
 * one into device memory on a default stream (legacy or per-thread). The
 * second is what a Python client does: CuPy fills an array by
 * cudaMemcpyAsync from pageable memory on the legacy stream (ndarray.set)
 * and zeroes one by a memset there, then hands the pointer to MPI; nothing
 * on another stream or in another process waits for it. Work on streams of
 * their own (the library's) is not held: whoever queues it waits for it.
 */
static int sim_is_late(int async_api, int wait, CUdeviceptr dst, CUstream stream)
{
    sim_piece_t dp;

    if (!sim.cfg.late_landing) {
        return 0;
    }
    if (!async_api) {
        return !wait;
    }
    return (stream->kind != SIM_STREAM_USER) &&
           (sim_piece_get(dst, stream->ctx->device, &dp) == CUDA_SUCCESS) &&
           !sim_is_host(dp.range);
}

/*
 * Build the copy operation; *wait_p tells whether a synchronous call must
 * wait for it. Pageable sources are captured now in async mode.
 */
static CUresult sim_copy_build(uintptr_t dst, uintptr_t src, size_t len,
                               CUstream stream, sim_op_t *op, int *wait_p)
{
    sim_piece_t dp, sp;
    size_t n, staged = 0, total = len;
    int first = 1, device = stream->ctx->device;
    CUresult status;
    char *stage;

    while (len > 0) {
        if (((status = sim_piece_get(dst, device, &dp)) != CUDA_SUCCESS) ||
            ((status = sim_piece_get(src, device, &sp)) != CUDA_SUCCESS)) {
            return status;
        }
        if ((dp.avail < len) && (dp.range != NULL) &&
            (sim_range_find(dp.range->base + dp.range->size) == NULL)) {
            return CUDA_ERROR_INVALID_VALUE; /* runs past the allocation */
        }
        if ((sp.avail < len) && (sp.range != NULL) &&
            (sim_range_find(sp.range->base + sp.range->size) == NULL)) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        if (first) {
            if (sim_is_host(dp.range)) {
                *wait_p = 1;
            } else if (sp.range == NULL) {
                *wait_p = sim_sync_memops(dp.range, stream);
            } else if (sp.range->cpu_visible) {
                *wait_p = 1; /* pinned host source */
            } else {
                *wait_p = sim_sync_memops(dp.range, stream) ||
                          sim_sync_memops(sp.range, stream);
            }
            first = 0;
        }
        n = len;
        n = (dp.avail < n) ? dp.avail : n;
        n = (sp.avail < n) ? sp.avail : n;
        if ((sp.range == NULL) && (sim.cfg.async || sim.cfg.late_landing)) {
            /* Capture pageable source bytes, as the driver stages them. */
            if (op->staging == NULL) {
                op->staging = malloc(total);
                if (op->staging == NULL) {
                    return CUDA_ERROR_OUT_OF_MEMORY;
                }
            }
            stage = (char *)op->staging + staged;
            memcpy(stage, sp.shadow, n);
            sp.shadow = stage;
        }
        status = sim_op_add_seg(op, dp.shadow, sp.shadow, n);
        if (status != CUDA_SUCCESS) {
            return status;
        }
        staged += n;
        dst    += n;
        src    += n;
        len    -= n;
    }
    return CUDA_SUCCESS;
}

CUresult sim_copy_op_add_locked(sim_op_t *op, uintptr_t dst, uintptr_t src,
                                size_t len, CUstream stream)
{
    int wait = 0;

    return sim_copy_build(dst, src, len, stream, op, &wait);
}

static CUresult sim_copy(CUdeviceptr dst, CUdeviceptr src, size_t len,
                         CUstream hstream, int ptsz, int async_api)
{
    CUresult status = sim_enter();
    CUstream stream;
    sim_op_t *op;
    int wait = 0;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = sim_stream_resolve(hstream, ptsz, &stream);
    if ((status != CUDA_SUCCESS) || (len == 0)) {
        goto out;
    }
    if ((dst == 0) || (src == 0)) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    op = sim_op_new(SIM_OP_COPY);
    if (op == NULL) {
        status = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    status = sim_copy_build(dst, src, len, stream, op, &wait);
    if (status != CUDA_SUCCESS) {
        sim_op_free(op);
        goto out;
    }
    op->late = sim_is_late(async_api, wait, dst, stream);
    sim_stream_submit_locked(stream, op);
    if (!async_api && wait) {
        sim_stream_wait_locked(stream);
    }
out:
    sim_leave();
    return status;
}

static CUresult sim_memset(CUdeviceptr dst, unsigned value, unsigned elem_size,
                           size_t count, CUstream hstream, int ptsz,
                           int async_api)
{
    CUresult status = sim_enter();
    size_t len = count * elem_size, n;
    CUdeviceptr dst0 = dst;
    CUstream stream;
    sim_piece_t dp;
    sim_op_t *op = NULL;
    int wait = 0, first = 1;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = sim_stream_resolve(hstream, ptsz, &stream);
    if ((status != CUDA_SUCCESS) || (count == 0)) {
        goto out;
    }
    if ((dst == 0) || (dst % elem_size)) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    op = sim_op_new(SIM_OP_MEMSET);
    if (op == NULL) {
        status = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    op->value     = value;
    op->elem_size = elem_size;
    while (len > 0) {
        status = sim_piece_get(dst, stream->ctx->device, &dp);
        if (status != CUDA_SUCCESS) {
            goto err;
        }
        if ((dp.avail < len) && (dp.range != NULL) &&
            (sim_range_find(dp.range->base + dp.range->size) == NULL)) {
            status = CUDA_ERROR_INVALID_VALUE;
            goto err;
        }
        if (first) {
            wait  = sim_is_host(dp.range) || sim_sync_memops(dp.range, stream);
            first = 0;
        }
        n      = (dp.avail < len) ? dp.avail : len;
        status = sim_op_add_seg(op, dp.shadow, NULL, n);
        if (status != CUDA_SUCCESS) {
            goto err;
        }
        dst += n;
        len -= n;
    }
    op->late = sim_is_late(async_api, wait, dst0, stream);
    sim_stream_submit_locked(stream, op);
    if (!async_api && wait) {
        sim_stream_wait_locked(stream);
    }
    goto out;

err:
    sim_op_free(op);
out:
    sim_leave();
    return status;
}

/*
 * cuStreamBatchMemOp: 32- and 64-bit writes are modelled (waits, flushes and
 * barriers are not, and fail loudly). As in the driver, each value is taken
 * at the call and lands in stream order; a 64-bit write becomes two 32-bit
 * words (little-endian, like the GPU). The H200's driver refuses writes to
 * stream-ordered pool memory with CUDA_ERROR_INVALID_VALUE (measured with
 * gpu_pingpong_floor -p), and so does the model. Everything is checked
 * before anything is queued, so a refused batch writes nothing.
 */
static CUresult sim_batch_memop(CUstream hstream, unsigned count,
                                const CUstreamBatchMemOpParams *ops, unsigned flags,
                                int ptsz)
{
    CUresult status = sim_enter();
    CUstream stream;
    sim_piece_t dp;
    sim_op_t *op;
    unsigned i, w, words;
    size_t size;
    uint32_t v[2];

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = sim_stream_resolve(hstream, ptsz, &stream);
    if (status != CUDA_SUCCESS) {
        goto out;
    }
    if (!sim.cfg.memops) {
        /* As a device or driver without stream memory operations. */
        status = CUDA_ERROR_NOT_SUPPORTED;
        goto out;
    }
    if ((count == 0) || (ops == NULL) || (flags != 0)) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    for (i = 0; i < count; ++i) {
        if ((ops[i].operation != CU_STREAM_MEM_OP_WRITE_VALUE_32) &&
            (ops[i].operation != CU_STREAM_MEM_OP_WRITE_VALUE_64)) {
            status = (CUresult)sim_unmodelled("cuStreamBatchMemOp with operations "
                                              "other than writes");
            goto out;
        }
        size = (ops[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_64) ? 8 : 4;
        if ((ops[i].writeValue.address % size) ||
            (ops[i].writeValue.flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) ||
            (sim_piece_get(ops[i].writeValue.address, stream->ctx->device, &dp) !=
             CUDA_SUCCESS) ||
            (dp.avail < size) ||
            ((dp.range != NULL) && ((dp.range->kind == SIM_MEM_POOL) ||
                                    (dp.range->kind == SIM_MEM_POOL_IMPORT)))) {
            status = CUDA_ERROR_INVALID_VALUE;
            goto out;
        }
    }
    for (i = 0; i < count; ++i) {
        words = (ops[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_64) ? 2 : 1;
        if (words == 2) {
            v[0] = (uint32_t)ops[i].writeValue.value64;
            v[1] = (uint32_t)(ops[i].writeValue.value64 >> 32);
        } else {
            v[0] = ops[i].writeValue.value;
        }
        for (w = 0; w < words; ++w) {
            sim_piece_get(ops[i].writeValue.address + 4 * w, stream->ctx->device, &dp);
            op = sim_op_new(SIM_OP_MEMSET);
            if ((op == NULL) || (sim_op_add_seg(op, dp.shadow, NULL, 4) != CUDA_SUCCESS)) {
                free(op);
                status = CUDA_ERROR_OUT_OF_MEMORY;
                goto out;
            }
            op->value     = v[w];
            op->elem_size = 4;
            sim_stream_submit_locked(stream, op);
        }
    }
out:
    sim_leave();
    return status;
}

/* ---- entry points: one per exported symbol, as in the driver ---- */

CUresult cuStreamBatchMemOp_v2(CUstream stream, unsigned int count,
                               CUstreamBatchMemOpParams *paramArray, unsigned int flags)
{
    return sim_batch_memop(stream, count, paramArray, flags, 0);
}

CUresult cuStreamBatchMemOp_v2_ptsz(CUstream stream, unsigned int count,
                                    CUstreamBatchMemOpParams *paramArray,
                                    unsigned int flags)
{
    return sim_batch_memop(stream, count, paramArray, flags, 1);
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return sim_copy(dst, src, ByteCount, NULL, 0, 0);
}

CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return sim_copy(dst, src, ByteCount, NULL, 1, 0);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                       CUstream hStream)
{
    return sim_copy(dst, src, ByteCount, hStream, 0, 1);
}

CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                            CUstream hStream)
{
    return sim_copy(dst, src, ByteCount, hStream, 1, 1);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost,
                         size_t ByteCount)
{
    return sim_copy(dstDevice, (CUdeviceptr)srcHost, ByteCount, NULL, 0, 0);
}

CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost,
                              size_t ByteCount)
{
    return sim_copy(dstDevice, (CUdeviceptr)srcHost, ByteCount, NULL, 1, 0);
}

CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return sim_copy((CUdeviceptr)dstHost, srcDevice, ByteCount, NULL, 0, 0);
}

CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice,
                              size_t ByteCount)
{
    return sim_copy((CUdeviceptr)dstHost, srcDevice, ByteCount, NULL, 1, 0);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                         size_t ByteCount)
{
    return sim_copy(dstDevice, srcDevice, ByteCount, NULL, 0, 0);
}

CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                              size_t ByteCount)
{
    return sim_copy(dstDevice, srcDevice, ByteCount, NULL, 1, 0);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost,
                              size_t ByteCount, CUstream hStream)
{
    return sim_copy(dstDevice, (CUdeviceptr)srcHost, ByteCount, hStream, 0, 1);
}

CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost,
                                   size_t ByteCount, CUstream hStream)
{
    return sim_copy(dstDevice, (CUdeviceptr)srcHost, ByteCount, hStream, 1, 1);
}

CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice,
                              size_t ByteCount, CUstream hStream)
{
    return sim_copy((CUdeviceptr)dstHost, srcDevice, ByteCount, hStream, 0, 1);
}

CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice,
                                   size_t ByteCount, CUstream hStream)
{
    return sim_copy((CUdeviceptr)dstHost, srcDevice, ByteCount, hStream, 1, 1);
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                              size_t ByteCount, CUstream hStream)
{
    return sim_copy(dstDevice, srcDevice, ByteCount, hStream, 0, 1);
}

CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                   size_t ByteCount, CUstream hStream)
{
    return sim_copy(dstDevice, srcDevice, ByteCount, hStream, 1, 1);
}

static int sim_peer_ctx_ok(CUcontext a, CUcontext b)
{
    int ok;

    /* Errors of the entry check surface in sim_copy() right after. */
    if (sim_enter() != CUDA_SUCCESS) {
        return 1;
    }
    ok = sim_ctx_valid(a) && sim_ctx_valid(b);
    sim_leave();
    return ok;
}

CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext,
                      CUdeviceptr srcDevice, CUcontext srcContext,
                      size_t ByteCount)
{
    if (!sim_peer_ctx_ok(dstContext, srcContext)) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    return sim_copy(dstDevice, srcDevice, ByteCount, NULL, 0, 0);
}

CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext,
                           CUdeviceptr srcDevice, CUcontext srcContext,
                           size_t ByteCount)
{
    if (!sim_peer_ctx_ok(dstContext, srcContext)) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    return sim_copy(dstDevice, srcDevice, ByteCount, NULL, 1, 0);
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                           CUdeviceptr srcDevice, CUcontext srcContext,
                           size_t ByteCount, CUstream hStream)
{
    if (!sim_peer_ctx_ok(dstContext, srcContext)) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    return sim_copy(dstDevice, srcDevice, ByteCount, hStream, 0, 1);
}

CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext,
                                CUdeviceptr srcDevice, CUcontext srcContext,
                                size_t ByteCount, CUstream hStream)
{
    if (!sim_peer_ctx_ok(dstContext, srcContext)) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    return sim_copy(dstDevice, srcDevice, ByteCount, hStream, 1, 1);
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return sim_memset(dstDevice, uc, 1, N, NULL, 0, 0);
}

CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return sim_memset(dstDevice, uc, 1, N, NULL, 1, 0);
}

CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return sim_memset(dstDevice, us, 2, N, NULL, 0, 0);
}

CUresult cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return sim_memset(dstDevice, us, 2, N, NULL, 1, 0);
}

CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return sim_memset(dstDevice, ui, 4, N, NULL, 0, 0);
}

CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return sim_memset(dstDevice, ui, 4, N, NULL, 1, 0);
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                         CUstream hStream)
{
    return sim_memset(dstDevice, uc, 1, N, hStream, 0, 1);
}

CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                              CUstream hStream)
{
    return sim_memset(dstDevice, uc, 1, N, hStream, 1, 1);
}

CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N,
                          CUstream hStream)
{
    return sim_memset(dstDevice, us, 2, N, hStream, 0, 1);
}

CUresult cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us,
                               size_t N, CUstream hStream)
{
    return sim_memset(dstDevice, us, 2, N, hStream, 1, 1);
}

CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                          CUstream hStream)
{
    return sim_memset(dstDevice, ui, 4, N, hStream, 0, 1);
}

CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                               CUstream hStream)
{
    return sim_memset(dstDevice, ui, 4, N, hStream, 1, 1);
}
