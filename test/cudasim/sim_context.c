#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * Contexts: one primary context per device (retained/released, as cudart
 * does) and explicit contexts from cuCtxCreate, with a per-thread stack of
 * current contexts. Contexts own streams; memory belongs to devices (the
 * CONTEXT pointer attribute only records which context was current).
 * Simplification: destroying a context or resetting a primary context
 * drains its streams but does not free the memory allocated in it.
 */
#include "cudasim.h"

#include <stdlib.h>

#define SIM_CTX_STACK_MAX 32

/* Flags cuCtxCreate / cuCtxSetFlags accept: scheduling (0..4), MAP_HOST,
 * LMEM_RESIZE_TO_MAX, coredump flags, SYNC_MEMOPS. */
#define SIM_CTX_FLAGS_VALID 0xffu

static __thread CUcontext sim_ctx_stack[SIM_CTX_STACK_MAX];
static __thread int sim_ctx_depth;

int sim_ctx_valid(CUcontext ctx)
{
    return (ctx != NULL) && (ctx->magic == SIM_MAGIC_CTX);
}

CUcontext sim_ctx_current(void)
{
    if (sim_ctx_depth == 0) {
        return NULL;
    }
    return sim_ctx_valid(sim_ctx_stack[sim_ctx_depth - 1]) ?
           sim_ctx_stack[sim_ctx_depth - 1] : NULL;
}

CUresult sim_ctx_require(CUcontext *ctx_p)
{
    *ctx_p = sim_ctx_current();
    return (*ctx_p != NULL) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* ---- primary contexts ---- */

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = (pctx == NULL) ? CUDA_ERROR_INVALID_VALUE : sim_check_device(dev);
    if (status == CUDA_SUCCESS) {
        ++sim.devices[dev].primary_refs;
        *pctx = sim.devices[dev].primary;
    }
    sim_leave();
    return status;
}

static void sim_primary_deactivate_locked(int dev)
{
    sim_drain_all_locked();
    sim.devices[dev].primary_refs = 0;
}

static CUresult sim_primary_release(CUdevice dev)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = sim_check_device(dev);
    if (status == CUDA_SUCCESS) {
        if (sim.devices[dev].primary_refs == 0) {
            status = CUDA_ERROR_INVALID_CONTEXT;
        } else if (--sim.devices[dev].primary_refs == 0) {
            sim_primary_deactivate_locked(dev);
        }
    }
    sim_leave();
    return status;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return sim_primary_release(dev);
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    return sim_primary_release(dev);
}

static CUresult sim_primary_reset(CUdevice dev)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = sim_check_device(dev);
    if (status == CUDA_SUCCESS) {
        sim_primary_deactivate_locked(dev);
    }
    sim_leave();
    return status;
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    return sim_primary_reset(dev);
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    return sim_primary_reset(dev);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags,
                                    int *active)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = ((flags == NULL) || (active == NULL)) ? CUDA_ERROR_INVALID_VALUE :
             sim_check_device(dev);
    if (status == CUDA_SUCCESS) {
        *flags  = sim.devices[dev].primary_flags;
        *active = (sim.devices[dev].primary_refs > 0);
    }
    sim_leave();
    return status;
}

static CUresult sim_primary_set_flags(CUdevice dev, unsigned flags)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = (flags & ~SIM_CTX_FLAGS_VALID) ? CUDA_ERROR_INVALID_VALUE :
             sim_check_device(dev);
    if (status == CUDA_SUCCESS) {
        sim.devices[dev].primary_flags  = flags;
        sim.devices[dev].primary->flags = flags;
    }
    sim_leave();
    return status;
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    return sim_primary_set_flags(dev, flags);
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    return sim_primary_set_flags(dev, flags);
}

/* ---- explicit contexts ---- */

static CUresult sim_ctx_create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    CUresult status = sim_enter();
    CUcontext ctx;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((pctx == NULL) || (flags & ~SIM_CTX_FLAGS_VALID)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_check_device(dev)) != CUDA_SUCCESS) {
        /* status set */
    } else if (sim_ctx_depth == SIM_CTX_STACK_MAX) {
        status = CUDA_ERROR_OUT_OF_MEMORY;
    } else if ((ctx = calloc(1, sizeof(*ctx))) == NULL) {
        status = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        ctx->magic   = SIM_MAGIC_CTX;
        ctx->device  = dev;
        ctx->flags   = flags;
        ctx->id      = sim_new_id();
        ctx->next    = sim.contexts;
        sim.contexts = ctx;
        sim_ctx_stack[sim_ctx_depth++] = ctx;
        *pctx = ctx;
    }
    sim_leave();
    return status;
}

CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return sim_ctx_create(pctx, flags, dev);
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return sim_ctx_create(pctx, flags, dev);
}

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                        int numParams, unsigned int flags, CUdevice dev)
{
    if (numParams != 0) {
        return (CUresult)sim_unmodelled("cuCtxCreate_v3 with affinity");
    }
    return sim_ctx_create(pctx, flags, dev);
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                        unsigned int flags, CUdevice dev)
{
    if (ctxCreateParams != NULL) {
        return (CUresult)sim_unmodelled("cuCtxCreate_v4 with parameters");
    }
    return sim_ctx_create(pctx, flags, dev);
}

static CUresult sim_ctx_destroy(CUcontext ctx)
{
    CUresult status = sim_enter();
    int i, j;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (!sim_ctx_valid(ctx) || ctx->primary) {
        status = CUDA_ERROR_INVALID_CONTEXT;
    } else {
        sim_drain_all_locked();
        /* Remove it from this thread's stack; other threads that still
         * have it current see an invalid context from now on. */
        for (i = 0, j = 0; i < sim_ctx_depth; ++i) {
            if (sim_ctx_stack[i] != ctx) {
                sim_ctx_stack[j++] = sim_ctx_stack[i];
            }
        }
        sim_ctx_depth = j;
        /* Kept allocated: allocations still name it as their context. */
        ctx->magic = 0;
    }
    sim_leave();
    return status;
}

CUresult cuCtxDestroy(CUcontext ctx)
{
    return sim_ctx_destroy(ctx);
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    return sim_ctx_destroy(ctx);
}

/* ---- the current-context stack (thread local, no lock needed beyond the
 * validity check) ---- */

static CUresult sim_ctx_push(CUcontext ctx)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (!sim_ctx_valid(ctx)) {
        status = CUDA_ERROR_INVALID_CONTEXT;
    } else if (sim_ctx_depth == SIM_CTX_STACK_MAX) {
        status = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        sim_ctx_stack[sim_ctx_depth++] = ctx;
    }
    sim_leave();
    return status;
}

CUresult cuCtxPushCurrent(CUcontext ctx)
{
    return sim_ctx_push(ctx);
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    return sim_ctx_push(ctx);
}

static CUresult sim_ctx_pop(CUcontext *pctx)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (sim_ctx_depth == 0) {
        status = CUDA_ERROR_INVALID_CONTEXT;
    } else {
        --sim_ctx_depth;
        if (pctx != NULL) {
            *pctx = sim_ctx_stack[sim_ctx_depth];
        }
    }
    sim_leave();
    return status;
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    return sim_ctx_pop(pctx);
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    return sim_ctx_pop(pctx);
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (ctx == NULL) {
        if (sim_ctx_depth > 0) {
            --sim_ctx_depth;
        }
    } else if (!sim_ctx_valid(ctx)) {
        status = CUDA_ERROR_INVALID_CONTEXT;
    } else if (sim_ctx_depth == 0) {
        sim_ctx_stack[sim_ctx_depth++] = ctx;
    } else {
        sim_ctx_stack[sim_ctx_depth - 1] = ctx;
    }
    sim_leave();
    return status;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (pctx == NULL) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        *pctx = sim_ctx_current();
    }
    sim_leave();
    return status;
}

/* Resolve "ctx or the current one" for the *_v2 flavours taking a ctx. */
static CUresult sim_ctx_or_current(CUcontext ctx, CUcontext *ctx_p)
{
    if (ctx == NULL) {
        return sim_ctx_require(ctx_p);
    }
    *ctx_p = ctx;
    return sim_ctx_valid(ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static CUresult sim_ctx_get_device(CUdevice *device, CUcontext ctx)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (device == NULL) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_ctx_or_current(ctx, &ctx)) == CUDA_SUCCESS) {
        *device = ctx->device;
    }
    sim_leave();
    return status;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    return sim_ctx_get_device(device, NULL);
}

CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    return sim_ctx_get_device(device, ctx);
}

static CUresult sim_ctx_synchronize(CUcontext ctx)
{
    CUresult status = sim_enter();
    CUstream stream;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = sim_ctx_or_current(ctx, &ctx);
    if (status == CUDA_SUCCESS) {
        for (stream = sim.streams; stream != NULL; stream = stream->next) {
            if (stream->ctx == ctx) {
                sim_stream_wait_locked(stream);
            }
        }
    }
    sim_leave();
    return status;
}

CUresult cuCtxSynchronize(void)
{
    return sim_ctx_synchronize(NULL);
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    return sim_ctx_synchronize(ctx);
}

CUresult cuCtxGetFlags(unsigned int *flags)
{
    CUresult status = sim_enter();
    CUcontext ctx;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (flags == NULL) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_ctx_require(&ctx)) == CUDA_SUCCESS) {
        *flags = ctx->flags;
    }
    sim_leave();
    return status;
}

/* CU_CTX_SYNC_MEMOPS set here makes synchronous copies in this context wait
 * for completion, as the pointer attribute does per allocation. */
CUresult cuCtxSetFlags(unsigned int flags)
{
    CUresult status = sim_enter();
    CUcontext ctx;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (flags & ~SIM_CTX_FLAGS_VALID) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_ctx_require(&ctx)) == CUDA_SUCCESS) {
        ctx->flags = flags;
    }
    sim_leave();
    return status;
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (version == NULL) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_ctx_or_current(ctx, &ctx)) == CUDA_SUCCESS) {
        *version = 3020;
    }
    sim_leave();
    return status;
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (ctxId == NULL) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_ctx_or_current(ctx, &ctx)) == CUDA_SUCCESS) {
        *ctxId = ctx->id;
    }
    sim_leave();
    return status;
}

CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (leastPriority != NULL) {
        *leastPriority = 0;
    }
    if (greatestPriority != NULL) {
        *greatestPriority = -5;
    }
    sim_leave();
    return status;
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    CUresult status = sim_enter();
    CUcontext ctx;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (Flags != 0) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_ctx_require(&ctx)) != CUDA_SUCCESS) {
        /* status set */
    } else if (!sim_ctx_valid(peerContext)) {
        status = CUDA_ERROR_INVALID_CONTEXT;
    } else if (peerContext->device == ctx->device) {
        status = CUDA_ERROR_INVALID_DEVICE;
    } else if (ctx->peer_mask & (1ull << peerContext->device)) {
        status = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    } else {
        ctx->peer_mask |= 1ull << peerContext->device;
    }
    sim_leave();
    return status;
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
    CUresult status = sim_enter();
    CUcontext ctx;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((status = sim_ctx_require(&ctx)) != CUDA_SUCCESS) {
        /* status set */
    } else if (!sim_ctx_valid(peerContext)) {
        status = CUDA_ERROR_INVALID_CONTEXT;
    } else if (!(ctx->peer_mask & (1ull << peerContext->device))) {
        status = CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    } else {
        ctx->peer_mask &= ~(1ull << peerContext->device);
    }
    sim_leave();
    return status;
}
