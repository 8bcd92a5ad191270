/**
 * @file cudamem.h
 * Inside of the CUDA hook module (libucm_cuda.so).
 *
 * - cuda_hooks.c: the hook functions, one per driver entry point, and the
 *   table that names them;
 * - cuda_track.c: what the hooks learned (live allocations, memory pools,
 *   VMM physical allocations) and the events built from it;
 * - cuda_install.c: installing the hooks in the configured mode;
 * - cuda_resolve.c: the memory-type cache's resolver (one driver query for
 *   memory the hooks never saw).
 *
 * Every hook follows the same pattern: a per-thread guard (so calls the
 * driver, a handler or the module itself make from inside a hook reach the
 * original function and report nothing), the original call, and then a
 * report only if the call succeeded. Frees report before the original call
 * and undo the report if the call fails.
 */
#ifndef UCM_CUDA_CUDAMEM_H_
#define UCM_CUDA_CUDAMEM_H_

#include <ucm/api/ucm.h>
#include <ucm/bistro/bistro.h>
#include <ucs/memory/memtype_cache.h>
#include <ucm/reloc/reloc.h>

#include <cuda.h>

BEGIN_C_DECLS

/** One hooked driver entry point. */
typedef struct ucm_cuda_hook {
    const char                 *symbol;  /**< exported name */
    void                       *hook;    /**< our function */
    void                       **orig_p; /**< where the hook finds the
                                              original */
    /* Installation state (cuda_install.c). */
    void                       *target;  /**< the driver's function */
    ucm_bistro_restore_point_t *rp;      /**< bistro mode */
    ucm_reloc_patch_t          reloc;    /**< reloc mode */
    int                        installed;
} ucm_cuda_hook_t;

/** The hooks, terminated by an entry with a NULL symbol. */
extern ucm_cuda_hook_t ucm_cuda_hooks[];


/*
 * Per-thread guard.
 */

/**
 * Enter a hook. Returns 1 when the hook may report (the guard is now
 * held and must be released with ucm_cuda_hook_leave()), 0 when the thread
 * is already inside a hook or a handler: then only call the original.
 */
int ucm_cuda_hook_enter(void);

/** Release the guard taken by ucm_cuda_hook_enter(). */
void ucm_cuda_hook_leave(void);


/*
 * Reports (cuda_track.c). Called with the guard held.
 */

/** Saved state of a free announced before the original call. */
typedef struct ucm_cuda_free {
    unsigned    count;     /**< events announced */
    unsigned    max;
    ucm_event_t *events;   /**< their data, to undo on failure */
    ucm_event_t inline_event;
    unsigned    ipc_release; /**< IPC import with other references: the
                                  close only drops a reference */
    uintptr_t   ptr;         /**< the IPC import of ipc_release */
} ucm_cuda_free_t;

/** cuMemAlloc, cuMemAllocPitch: device memory of the current context. */
void ucm_cuda_report_legacy(CUdeviceptr ptr, size_t size);

/** cuMemAllocManaged. */
void ucm_cuda_report_managed(CUdeviceptr ptr, size_t size);

/** cuMemHostAlloc, cuMemAllocHost. */
void ucm_cuda_report_host_pinned(void *ptr, size_t size);

#if HAVE_DECL_CUMEMALLOCASYNC
/**
 * Stream-ordered allocation from @a pool, or from the current pool of the
 * stream's device when @a pool is NULL (cuMemAllocAsync).
 */
void ucm_cuda_report_pool_alloc(CUdeviceptr ptr, size_t size,
                                CUmemoryPool pool);

/** cuMemPoolImportPointer. */
void ucm_cuda_report_pool_import(CUdeviceptr ptr, CUmemoryPool pool);

/** cuMemPoolCreate: remember the pool's location and handle types. */
void ucm_cuda_track_pool_create(CUmemoryPool pool,
                                const CUmemPoolProps *props);

/** cuMemPoolDestroy. */
void ucm_cuda_track_pool_destroy(CUmemoryPool pool);
#endif

/** cuIpcOpenMemHandle: a mapping (or another reference to it). */
void ucm_cuda_report_ipc_open(CUdeviceptr ptr);

/**
 * Announce the free of the allocation at @a ptr (any kind but VMM) before
 * it happens. Memory the hooks never saw is looked up in the driver, so
 * its free is announced with the right extent.
 */
void ucm_cuda_free_begin(uintptr_t ptr, ucm_cuda_free_t *state);

/** cuIpcCloseMemHandle: announce only the last reference's close. */
void ucm_cuda_ipc_close_begin(CUdeviceptr ptr, ucm_cuda_free_t *state);

/** cuMemUnmap: announce the removal of every mapping in the range. */
void ucm_cuda_unmap_begin(CUdeviceptr ptr, size_t size,
                          ucm_cuda_free_t *state);

/**
 * Finish a free announced by one of the *_begin() functions: if the
 * driver call failed (@a result != CUDA_SUCCESS) the memory is still
 * there, so it is announced again.
 */
void ucm_cuda_free_end(ucm_cuda_free_t *state, CUresult result);

#if HAVE_DECL_CUMEMCREATE
/** cuMemCreate: remember the physical allocation. */
void ucm_cuda_track_vmm_create(CUmemGenericAllocationHandle handle,
                               size_t size, const CUmemAllocationProp *prop);

/** cuMemRelease. */
void ucm_cuda_track_vmm_release(CUmemGenericAllocationHandle handle);

/** cuMemMap: a mapping of (part of) a physical allocation. */
void ucm_cuda_report_vmm_map(CUdeviceptr ptr, size_t size, size_t offset,
                             CUmemGenericAllocationHandle handle);
#endif

/** Replay every live allocation as MEM_TYPE_ALLOC to @a cb. */
void ucm_cuda_track_report_existing(ucm_event_callback_t cb, void *arg);

/** Whether [address, +size) is a live allocation of the tables (the
 *  provider's alloc_is_live, ucm_memtype_provider.h). Thread safe. */
int ucm_cuda_track_is_live(const void *address, size_t size);

/** Forget everything (the hooks were removed and can no longer keep the
 *  tables true). */
void ucm_cuda_track_cleanup(void);


/*
 * Resolver (cuda_resolve.c).
 */

/**
 * Describe the memory at @a address for the memory-type cache, with one
 * cuPointerGetAttributes call (plus cuMemRetainAllocationHandle and
 * cuMemGetAllocationPropertiesFromHandle for device memory that is neither
 * legacy, pool nor managed, to recognise VMM). Follows the contract of
 * ucs_memtype_cache_resolve_func_t; @a arg is unused. Never initialises
 * the driver: before cuInit (or in a child forked after it) every address
 * is host memory. Thread safe; its driver calls bypass the hooks.
 */
ucs_status_t ucm_cuda_resolve(void *arg, const void *address, size_t length,
                              ucs_memtype_info_t *info);

END_C_DECLS

#endif
