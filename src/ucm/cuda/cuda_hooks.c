#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * The hook functions. Each has the signature of its driver entry point and
 * the shape described in cudamem.h: guard, original call, report on
 * success (allocations) or announce before and undo on failure (frees).
 *
 * The driver exports old ABI versions next to the current ones (cuMemAlloc
 * with 32-bit sizes beside cuMemAlloc_v2) and per-thread-default-stream
 * variants (_ptsz); each is a separate function, so each gets a hook. The
 * old versions are declared here, since cuda.h only names the current
 * ones.
 */

#include <ucm/cuda/cudamem.h>

#include <ucm/util/thread_mark.h>

#include <stddef.h>

/* The guard is a thread mark, not __thread: this module is dlopen()ed, and
 * the first access to its TLS from a thread would allocate, which a CUDA
 * call made from inside an allocator must not do (util/thread_mark.h). */
int ucm_cuda_hook_enter(void)
{
    int depth = ucm_thread_mark_enter(UCM_THREAD_MARK_CUDA_HOOK);

    if (depth == 0) {
        return 1;
    }
    if (depth > 0) {
        ucm_thread_mark_leave(UCM_THREAD_MARK_CUDA_HOOK); /* already inside */
    }
    /* Inside a hook already, or no slot (more threads inside hooks than
     * the table holds): call the original without reporting. */
    return 0;
}

void ucm_cuda_hook_leave(void)
{
    ucm_thread_mark_leave(UCM_THREAD_MARK_CUDA_HOOK);
}

/*
 * The pointer to the original of _sym, and the first lines of its hook: a
 * thread already inside a hook just calls the original. The symbol name is
 * only ever pasted (##), never expanded, because cuda.h defines some names
 * as macros (cuMemAlloc -> cuMemAlloc_v2) and each version needs its own.
 */
#define UCM_CUDA_ORIG(_sym)  ucm_cuda_orig_##_sym

/* The original to call. An acquire load: installing the hooks again
 * (ucm_event_reinstall) stores the pointer while other threads run the
 * hook (found by ThreadSanitizer). */
#define UCM_CUDA_CALL_ORIG(_sym) \
    __atomic_load_n(&ucm_cuda_orig_##_sym, __ATOMIC_ACQUIRE)

/* Pastes _sym itself rather than going through UCM_CUDA_CALL_ORIG: an
 * argument passed on to another macro is expanded first, and cuda.h
 * defines the unversioned names (cuMemAlloc) as their _v2 variants. */
#define UCM_CUDA_PASS_THROUGH(_sym, ...) \
    if (!ucm_cuda_hook_enter()) { \
        return __atomic_load_n(&ucm_cuda_orig_##_sym, \
                               __ATOMIC_ACQUIRE)(__VA_ARGS__); \
    }


/*
 * Legacy device memory.
 */

static CUresult (*UCM_CUDA_ORIG(cuMemAlloc))(unsigned *dptr, unsigned size);
static CUresult (*UCM_CUDA_ORIG(cuMemAlloc_v2))(CUdeviceptr *dptr,
                                                size_t size);
static CUresult (*UCM_CUDA_ORIG(cuMemAllocPitch))(unsigned *dptr,
                                                  unsigned *pitch,
                                                  unsigned width,
                                                  unsigned height,
                                                  unsigned elem_size);
static CUresult (*UCM_CUDA_ORIG(cuMemAllocPitch_v2))(CUdeviceptr *dptr,
                                                     size_t *pitch,
                                                     size_t width,
                                                     size_t height,
                                                     unsigned elem_size);
static CUresult (*UCM_CUDA_ORIG(cuMemFree))(unsigned dptr);
static CUresult (*UCM_CUDA_ORIG(cuMemFree_v2))(CUdeviceptr dptr);

static CUresult ucm_cuda_cuMemAlloc(unsigned *dptr, unsigned size)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemAlloc, dptr, size);
    ret = UCM_CUDA_CALL_ORIG(cuMemAlloc)(dptr, size);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_report_legacy(*dptr, size);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemAlloc_v2, dptr, size);
    ret = UCM_CUDA_CALL_ORIG(cuMemAlloc_v2)(dptr, size);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_report_legacy(*dptr, size);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemAllocPitch(unsigned *dptr, unsigned *pitch,
                                         unsigned width, unsigned height,
                                         unsigned elem_size)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemAllocPitch, dptr, pitch, width, height,
                          elem_size);
    ret = UCM_CUDA_CALL_ORIG(cuMemAllocPitch)(dptr, pitch, width, height,
                                         elem_size);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_report_legacy(*dptr, (size_t)*pitch * height);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch,
                                            size_t width, size_t height,
                                            unsigned elem_size)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemAllocPitch_v2, dptr, pitch, width, height,
                          elem_size);
    ret = UCM_CUDA_CALL_ORIG(cuMemAllocPitch_v2)(dptr, pitch, width, height,
                                            elem_size);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_report_legacy(*dptr, *pitch * height);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemFree(unsigned dptr)
{
    ucm_cuda_free_t state;
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemFree, dptr);
    ucm_cuda_free_begin(dptr, &state);
    ret = UCM_CUDA_CALL_ORIG(cuMemFree)(dptr);
    ucm_cuda_free_end(&state, ret);
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemFree_v2(CUdeviceptr dptr)
{
    ucm_cuda_free_t state;
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemFree_v2, dptr);
    ucm_cuda_free_begin(dptr, &state);
    ret = UCM_CUDA_CALL_ORIG(cuMemFree_v2)(dptr);
    ucm_cuda_free_end(&state, ret);
    ucm_cuda_hook_leave();
    return ret;
}


/*
 * Managed and pinned host memory.
 */

static CUresult (*UCM_CUDA_ORIG(cuMemAllocManaged))(CUdeviceptr *dptr,
                                                    size_t size,
                                                    unsigned flags);
static CUresult (*UCM_CUDA_ORIG(cuMemHostAlloc))(void **pp, size_t size,
                                                 unsigned flags);
static CUresult (*UCM_CUDA_ORIG(cuMemAllocHost))(void **pp, unsigned size);
static CUresult (*UCM_CUDA_ORIG(cuMemAllocHost_v2))(void **pp, size_t size);
static CUresult (*UCM_CUDA_ORIG(cuMemFreeHost))(void *p);

static CUresult ucm_cuda_cuMemAllocManaged(CUdeviceptr *dptr, size_t size,
                                           unsigned flags)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemAllocManaged, dptr, size, flags);
    ret = UCM_CUDA_CALL_ORIG(cuMemAllocManaged)(dptr, size, flags);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_report_managed(*dptr, size);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemHostAlloc(void **pp, size_t size, unsigned flags)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemHostAlloc, pp, size, flags);
    ret = UCM_CUDA_CALL_ORIG(cuMemHostAlloc)(pp, size, flags);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_report_host_pinned(*pp, size);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemAllocHost(void **pp, unsigned size)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemAllocHost, pp, size);
    ret = UCM_CUDA_CALL_ORIG(cuMemAllocHost)(pp, size);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_report_host_pinned(*pp, size);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemAllocHost_v2(void **pp, size_t size)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemAllocHost_v2, pp, size);
    ret = UCM_CUDA_CALL_ORIG(cuMemAllocHost_v2)(pp, size);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_report_host_pinned(*pp, size);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemFreeHost(void *p)
{
    ucm_cuda_free_t state;
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemFreeHost, p);
    ucm_cuda_free_begin((uintptr_t)p, &state);
    ret = UCM_CUDA_CALL_ORIG(cuMemFreeHost)(p);
    ucm_cuda_free_end(&state, ret);
    ucm_cuda_hook_leave();
    return ret;
}


#if HAVE_DECL_CUMEMALLOCASYNC
/*
 * Stream-ordered allocator. A free is a free at the host call: a transfer
 * issued after cuMemFreeAsync would be a user error anyway.
 */

static CUresult (*UCM_CUDA_ORIG(cuMemAllocAsync))(CUdeviceptr *dptr,
                                                  size_t size,
                                                  CUstream stream);
static CUresult (*UCM_CUDA_ORIG(cuMemAllocAsync_ptsz))(CUdeviceptr *dptr,
                                                       size_t size,
                                                       CUstream stream);
static CUresult (*UCM_CUDA_ORIG(cuMemAllocFromPoolAsync))(CUdeviceptr *dptr,
                                                          size_t size,
                                                          CUmemoryPool pool,
                                                          CUstream stream);
static CUresult
(*UCM_CUDA_ORIG(cuMemAllocFromPoolAsync_ptsz))(CUdeviceptr *dptr, size_t size,
                                               CUmemoryPool pool,
                                               CUstream stream);
static CUresult (*UCM_CUDA_ORIG(cuMemFreeAsync))(CUdeviceptr dptr,
                                                 CUstream stream);
static CUresult (*UCM_CUDA_ORIG(cuMemFreeAsync_ptsz))(CUdeviceptr dptr,
                                                      CUstream stream);
static CUresult (*UCM_CUDA_ORIG(cuMemPoolCreate))(CUmemoryPool *pool,
                                                  const CUmemPoolProps *props);
static CUresult (*UCM_CUDA_ORIG(cuMemPoolDestroy))(CUmemoryPool pool);

static CUresult ucm_cuda_cuMemAllocAsync(CUdeviceptr *dptr, size_t size,
                                         CUstream stream)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemAllocAsync, dptr, size, stream);
    ret = UCM_CUDA_CALL_ORIG(cuMemAllocAsync)(dptr, size, stream);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_report_pool_alloc(*dptr, size, NULL);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size,
                                              CUstream stream)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemAllocAsync_ptsz, dptr, size, stream);
    ret = UCM_CUDA_CALL_ORIG(cuMemAllocAsync_ptsz)(dptr, size, stream);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_report_pool_alloc(*dptr, size, NULL);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemAllocFromPoolAsync(CUdeviceptr *dptr,
                                                 size_t size,
                                                 CUmemoryPool pool,
                                                 CUstream stream)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemAllocFromPoolAsync, dptr, size, pool, stream);
    ret = UCM_CUDA_CALL_ORIG(cuMemAllocFromPoolAsync)(dptr, size, pool, stream);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_report_pool_alloc(*dptr, size, pool);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr,
                                                      size_t size,
                                                      CUmemoryPool pool,
                                                      CUstream stream)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemAllocFromPoolAsync_ptsz, dptr, size, pool,
                          stream);
    ret = UCM_CUDA_CALL_ORIG(cuMemAllocFromPoolAsync_ptsz)(dptr, size, pool,
                                                      stream);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_report_pool_alloc(*dptr, size, pool);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemFreeAsync(CUdeviceptr dptr, CUstream stream)
{
    ucm_cuda_free_t state;
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemFreeAsync, dptr, stream);
    ucm_cuda_free_begin(dptr, &state);
    ret = UCM_CUDA_CALL_ORIG(cuMemFreeAsync)(dptr, stream);
    ucm_cuda_free_end(&state, ret);
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream)
{
    ucm_cuda_free_t state;
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemFreeAsync_ptsz, dptr, stream);
    ucm_cuda_free_begin(dptr, &state);
    ret = UCM_CUDA_CALL_ORIG(cuMemFreeAsync_ptsz)(dptr, stream);
    ucm_cuda_free_end(&state, ret);
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemPoolCreate(CUmemoryPool *pool,
                                         const CUmemPoolProps *props)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemPoolCreate, pool, props);
    ret = UCM_CUDA_CALL_ORIG(cuMemPoolCreate)(pool, props);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_track_pool_create(*pool, props);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemPoolDestroy(CUmemoryPool pool)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemPoolDestroy, pool);
    ret = UCM_CUDA_CALL_ORIG(cuMemPoolDestroy)(pool);
    if (ret == CUDA_SUCCESS) {
        /* Allocations still alive keep the type recorded for them. */
        ucm_cuda_track_pool_destroy(pool);
    }
    ucm_cuda_hook_leave();
    return ret;
}
#endif /* HAVE_DECL_CUMEMALLOCASYNC */


#if HAVE_DECL_CUMEMALLOCASYNC && HAVE_DECL_CUMEMPOOLEXPORTPOINTER
static CUresult
(*UCM_CUDA_ORIG(cuMemPoolImportPointer))(CUdeviceptr *ptr, CUmemoryPool pool,
                                         CUmemPoolPtrExportData *data);

static CUresult ucm_cuda_cuMemPoolImportPointer(CUdeviceptr *ptr,
                                                CUmemoryPool pool,
                                                CUmemPoolPtrExportData *data)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemPoolImportPointer, ptr, pool, data);
    ret = UCM_CUDA_CALL_ORIG(cuMemPoolImportPointer)(ptr, pool, data);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_report_pool_import(*ptr, pool);
    }
    ucm_cuda_hook_leave();
    return ret;
}
#endif


#if HAVE_DECL_CUMEMCREATE
/*
 * Virtual memory management: physical allocations are tracked from
 * cuMemCreate to cuMemRelease; address ranges exist from cuMemMap to
 * cuMemUnmap.
 */

static CUresult
(*UCM_CUDA_ORIG(cuMemCreate))(CUmemGenericAllocationHandle *handle,
                              size_t size, const CUmemAllocationProp *prop,
                              unsigned long long flags);
static CUresult
(*UCM_CUDA_ORIG(cuMemRelease))(CUmemGenericAllocationHandle handle);
static CUresult (*UCM_CUDA_ORIG(cuMemMap))(CUdeviceptr ptr, size_t size,
                                           size_t offset,
                                           CUmemGenericAllocationHandle handle,
                                           unsigned long long flags);
static CUresult (*UCM_CUDA_ORIG(cuMemUnmap))(CUdeviceptr ptr, size_t size);

static CUresult ucm_cuda_cuMemCreate(CUmemGenericAllocationHandle *handle,
                                     size_t size,
                                     const CUmemAllocationProp *prop,
                                     unsigned long long flags)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemCreate, handle, size, prop, flags);
    ret = UCM_CUDA_CALL_ORIG(cuMemCreate)(handle, size, prop, flags);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_track_vmm_create(*handle, size, prop);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemRelease, handle);
    ret = UCM_CUDA_CALL_ORIG(cuMemRelease)(handle);
    if (ret == CUDA_SUCCESS) {
        /* Mappings of it stay valid until unmapped. */
        ucm_cuda_track_vmm_release(handle);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                  CUmemGenericAllocationHandle handle,
                                  unsigned long long flags)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemMap, ptr, size, offset, handle, flags);
    ret = UCM_CUDA_CALL_ORIG(cuMemMap)(ptr, size, offset, handle, flags);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_report_vmm_map(ptr, size, offset, handle);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    ucm_cuda_free_t state;
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuMemUnmap, ptr, size);
    ucm_cuda_unmap_begin(ptr, size, &state);
    ret = UCM_CUDA_CALL_ORIG(cuMemUnmap)(ptr, size);
    ucm_cuda_free_end(&state, ret);
    ucm_cuda_hook_leave();
    return ret;
}
#endif /* HAVE_DECL_CUMEMCREATE */


/*
 * Legacy IPC: an opened handle is a mapping of another process's memory.
 */

static CUresult (*UCM_CUDA_ORIG(cuIpcOpenMemHandle))(CUdeviceptr *ptr,
                                                     CUipcMemHandle handle,
                                                     unsigned flags);
static CUresult (*UCM_CUDA_ORIG(cuIpcOpenMemHandle_v2))(CUdeviceptr *ptr,
                                                        CUipcMemHandle handle,
                                                        unsigned flags);
static CUresult (*UCM_CUDA_ORIG(cuIpcCloseMemHandle))(CUdeviceptr ptr);

static CUresult ucm_cuda_cuIpcOpenMemHandle(CUdeviceptr *ptr,
                                            CUipcMemHandle handle,
                                            unsigned flags)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuIpcOpenMemHandle, ptr, handle, flags);
    ret = UCM_CUDA_CALL_ORIG(cuIpcOpenMemHandle)(ptr, handle, flags);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_report_ipc_open(*ptr);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuIpcOpenMemHandle_v2(CUdeviceptr *ptr,
                                               CUipcMemHandle handle,
                                               unsigned flags)
{
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuIpcOpenMemHandle_v2, ptr, handle, flags);
    ret = UCM_CUDA_CALL_ORIG(cuIpcOpenMemHandle_v2)(ptr, handle, flags);
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_report_ipc_open(*ptr);
    }
    ucm_cuda_hook_leave();
    return ret;
}

static CUresult ucm_cuda_cuIpcCloseMemHandle(CUdeviceptr ptr)
{
    ucm_cuda_free_t state;
    CUresult ret;

    UCM_CUDA_PASS_THROUGH(cuIpcCloseMemHandle, ptr);
    ucm_cuda_ipc_close_begin(ptr, &state);
    ret = UCM_CUDA_CALL_ORIG(cuIpcCloseMemHandle)(ptr);
    ucm_cuda_free_end(&state, ret);
    ucm_cuda_hook_leave();
    return ret;
}


#define UCM_CUDA_HOOK_ENTRY(_sym) \
    {#_sym, (void*)ucm_cuda_##_sym, (void**)&ucm_cuda_orig_##_sym, NULL, \
     NULL, {NULL, NULL, NULL, {NULL, NULL}}, 0}

ucm_cuda_hook_t ucm_cuda_hooks[] = {
    UCM_CUDA_HOOK_ENTRY(cuMemAlloc),
    UCM_CUDA_HOOK_ENTRY(cuMemAlloc_v2),
    UCM_CUDA_HOOK_ENTRY(cuMemAllocPitch),
    UCM_CUDA_HOOK_ENTRY(cuMemAllocPitch_v2),
    UCM_CUDA_HOOK_ENTRY(cuMemFree),
    UCM_CUDA_HOOK_ENTRY(cuMemFree_v2),
    UCM_CUDA_HOOK_ENTRY(cuMemAllocManaged),
    UCM_CUDA_HOOK_ENTRY(cuMemHostAlloc),
    UCM_CUDA_HOOK_ENTRY(cuMemAllocHost),
    UCM_CUDA_HOOK_ENTRY(cuMemAllocHost_v2),
    UCM_CUDA_HOOK_ENTRY(cuMemFreeHost),
#if HAVE_DECL_CUMEMALLOCASYNC
    UCM_CUDA_HOOK_ENTRY(cuMemAllocAsync),
    UCM_CUDA_HOOK_ENTRY(cuMemAllocAsync_ptsz),
    UCM_CUDA_HOOK_ENTRY(cuMemAllocFromPoolAsync),
    UCM_CUDA_HOOK_ENTRY(cuMemAllocFromPoolAsync_ptsz),
    UCM_CUDA_HOOK_ENTRY(cuMemFreeAsync),
    UCM_CUDA_HOOK_ENTRY(cuMemFreeAsync_ptsz),
    UCM_CUDA_HOOK_ENTRY(cuMemPoolCreate),
    UCM_CUDA_HOOK_ENTRY(cuMemPoolDestroy),
#endif
#if HAVE_DECL_CUMEMALLOCASYNC && HAVE_DECL_CUMEMPOOLEXPORTPOINTER
    UCM_CUDA_HOOK_ENTRY(cuMemPoolImportPointer),
#endif
#if HAVE_DECL_CUMEMCREATE
    UCM_CUDA_HOOK_ENTRY(cuMemCreate),
    UCM_CUDA_HOOK_ENTRY(cuMemRelease),
    UCM_CUDA_HOOK_ENTRY(cuMemMap),
    UCM_CUDA_HOOK_ENTRY(cuMemUnmap),
#endif
    UCM_CUDA_HOOK_ENTRY(cuIpcOpenMemHandle),
    UCM_CUDA_HOOK_ENTRY(cuIpcOpenMemHandle_v2),
    UCM_CUDA_HOOK_ENTRY(cuIpcCloseMemHandle),
    {NULL}
};
