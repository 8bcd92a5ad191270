#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * Classic allocations: cuMemAlloc / cuMemAllocPitch (memfd arena per device,
 * legacy-IPC capable), managed memory, pinned host memory and host
 * registration, cuMemFree, cuMemGetAddressRange and cuMemGetInfo.
 */
#include "cudasim.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

size_t sim_alloc_align(size_t size)
{
    /* Like the driver: big allocations are 2 MiB aligned, small ones share
     * 2 MiB pages at a smaller alignment. */
    return (size >= SIM_GRANULARITY) ? SIM_GRANULARITY : SIM_SMALL_ALIGN;
}

static CUresult sim_arena_get_locked(int device, sim_heap_t **arena_p)
{
    sim_device_t *dev = &sim.devices[device];
    sim_shm_header_t hdr = {{0}};
    char name[64];

    if (dev->arena == NULL) {
        hdr.kind          = SIM_SHM_ARENA;
        hdr.device        = device;
        hdr.location_type = CU_MEM_LOCATION_TYPE_DEVICE;
        hdr.object_id     = sim_new_id();
        snprintf(name, sizeof(name), "cudasim-arena-dev%d", device);
        dev->arena = sim_heap_create(name, &hdr, sim.cfg.device_mem, 0);
        if (dev->arena == NULL) {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    *arena_p = dev->arena;
    return CUDA_SUCCESS;
}

/* Allocate @a size bytes of legacy device memory (lock held). */
static CUresult sim_legacy_alloc_locked(CUdeviceptr *dptr, size_t size)
{
    size_t len = SIM_ALIGN_UP(size, SIM_SMALL_ALIGN);
    sim_heap_t *arena;
    sim_range_t *range;
    CUcontext ctx;
    CUresult status;
    size_t off;

    if ((dptr == NULL) || (size == 0)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    status = sim_ctx_require(&ctx);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = sim_arena_get_locked(ctx->device, &arena);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (sim_heap_alloc(arena, len, sim_alloc_align(size), &off) != 0) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    range = sim_range_new(SIM_MEM_LEGACY, (uintptr_t)arena->user + off, size,
                          ctx->device);
    if ((range == NULL) || (sim_range_insert(range) != 0)) {
        free(range);
        sim_heap_free(arena, off, len);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    range->heap     = arena;
    range->heap_off = off;
    range->heap_len = len;
    range->shadow   = arena->shadow + off;
    sim.devices[ctx->device].used += len;
    *dptr = range->base;
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = sim_legacy_alloc_locked(dptr, bytesize);
    sim_leave();
    return status;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
                            size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
    CUresult status = sim_enter();
    size_t pitch;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((pPitch == NULL) || (WidthInBytes == 0) || (Height == 0) ||
        ((ElementSizeBytes != 4) && (ElementSizeBytes != 8) &&
         (ElementSizeBytes != 16))) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        pitch  = SIM_ALIGN_UP(WidthInBytes, 512);
        status = sim_legacy_alloc_locked(dptr, pitch * Height);
        if (status == CUDA_SUCCESS) {
            *pPitch = pitch;
        }
    }
    sim_leave();
    return status;
}

/* Anonymous, CPU-visible memory: managed and pinned host allocations. */
static CUresult sim_host_like_alloc_locked(sim_mem_kind_t kind, size_t size,
                                           unsigned flags, void **ptr_p)
{
    size_t len = SIM_ALIGN_UP(size, 4096);
    sim_range_t *range;
    CUcontext ctx;
    CUresult status;
    void *ptr;

    if ((ptr_p == NULL) || (size == 0)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    status = sim_ctx_require(&ctx);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    ptr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
               -1, 0);
    if (ptr == MAP_FAILED) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    range = sim_range_new(kind, (uintptr_t)ptr, size, ctx->device);
    if ((range == NULL) || (sim_range_insert(range) != 0)) {
        free(range);
        munmap(ptr, len);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    range->shadow      = ptr;
    range->cpu_visible = (kind != SIM_MEM_MANAGED); /* managed: type DEVICE */
    range->heap_len    = len;
    range->host_flags  = flags;
    /* GPU-FACTS.md: managed memory reports SYNC_MEMOPS=1. */
    range->sync_memops = (kind == SIM_MEM_MANAGED);
    *ptr_p = ptr;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
                           unsigned int flags)
{
    CUresult status = sim_enter();
    void *ptr;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((dptr == NULL) || ((flags != CU_MEM_ATTACH_GLOBAL) &&
                           (flags != CU_MEM_ATTACH_HOST))) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        status = sim_host_like_alloc_locked(SIM_MEM_MANAGED, bytesize, flags,
                                            &ptr);
        if (status == CUDA_SUCCESS) {
            *dptr = (CUdeviceptr)ptr;
        }
    }
    sim_leave();
    return status;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE |
                            CU_MEMHOSTALLOC_DEVICEMAP |
                            CU_MEMHOSTALLOC_WRITECOMBINED)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        status = sim_host_like_alloc_locked(SIM_MEM_HOST, bytesize, Flags, pp);
    }
    sim_leave();
    return status;
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return cuMemHostAlloc(pp, bytesize, 0);
}

void sim_range_release_locked(sim_range_t *range)
{
    sim_range_remove(range);
    sim_range_free_locked(range);
}

void sim_range_free_locked(sim_range_t *range)
{
    switch (range->kind) {
    case SIM_MEM_LEGACY:
        sim_heap_free(range->heap, range->heap_off, range->heap_len);
        sim.devices[range->device].used -= range->heap_len;
        break;
    case SIM_MEM_MANAGED:
    case SIM_MEM_HOST:
        munmap((void *)range->base, range->heap_len);
        break;
    case SIM_MEM_POOL:
    case SIM_MEM_POOL_IMPORT:
        sim_pool_release_locked(range);
        return; /* the pool owns the range from here */
    default:
        break;
    }
    free(range);
}

/* cuMemFree frees classic, managed and stream-ordered memory (the latter
 * after an implicit synchronisation, as the driver does). */
CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    CUresult status = sim_enter();
    sim_range_t *range;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (dptr != 0) {
        range = sim_range_find(dptr);
        if ((range == NULL) || (range->base != dptr) ||
            ((range->kind != SIM_MEM_LEGACY) &&
             (range->kind != SIM_MEM_MANAGED) &&
             (range->kind != SIM_MEM_POOL) &&
             (range->kind != SIM_MEM_POOL_IMPORT))) {
            status = CUDA_ERROR_INVALID_VALUE;
        } else if ((range->kind == SIM_MEM_POOL_IMPORT) &&
                   (range->import_refs > 1)) {
            --range->import_refs;
        } else {
            sim_drain_all_locked();
            sim_range_release_locked(range);
        }
    }
    sim_leave();
    return status;
}

CUresult cuMemFreeHost(void *p)
{
    CUresult status = sim_enter();
    sim_range_t *range;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    range = sim_range_find((uintptr_t)p);
    if ((range == NULL) || (range->base != (uintptr_t)p) ||
        (range->kind != SIM_MEM_HOST)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        sim_drain_all_locked();
        sim_range_release_locked(range);
    }
    sim_leave();
    return status;
}

static CUresult sim_host_register(void *p, size_t bytesize, unsigned Flags)
{
    CUresult status = sim_enter();
    sim_range_t *range;
    CUcontext ctx;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((p == NULL) || (bytesize == 0) ||
        (Flags & ~(unsigned)(CU_MEMHOSTREGISTER_PORTABLE |
                             CU_MEMHOSTREGISTER_DEVICEMAP |
                             CU_MEMHOSTREGISTER_IOMEMORY |
                             CU_MEMHOSTREGISTER_READ_ONLY))) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_ctx_require(&ctx)) != CUDA_SUCCESS) {
        /* status set */
    } else if (sim_range_overlaps((uintptr_t)p, bytesize)) {
        status = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    } else {
        range = sim_range_new(SIM_MEM_HOST_REGISTERED, (uintptr_t)p, bytesize,
                              ctx->device);
        if ((range == NULL) || (sim_range_insert(range) != 0)) {
            free(range);
            status = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            range->shadow      = p;
            range->cpu_visible = 1;
            range->host_flags  = Flags;
        }
    }
    sim_leave();
    return status;
}

CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    return sim_host_register(p, bytesize, Flags);
}

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    return sim_host_register(p, bytesize, Flags);
}

CUresult cuMemHostUnregister(void *p)
{
    CUresult status = sim_enter();
    sim_range_t *range;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    range = sim_range_find((uintptr_t)p);
    if ((range == NULL) || (range->base != (uintptr_t)p) ||
        (range->kind != SIM_MEM_HOST_REGISTERED)) {
        status = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    } else {
        sim_drain_all_locked();
        sim_range_release_locked(range);
    }
    sim_leave();
    return status;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p,
                                      unsigned int Flags)
{
    CUresult status = sim_enter();
    sim_range_t *range;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    range = sim_range_find((uintptr_t)p);
    if ((pdptr == NULL) || (Flags != 0) || (range == NULL) ||
        ((range->kind != SIM_MEM_HOST) &&
         (range->kind != SIM_MEM_HOST_REGISTERED))) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        /* Unified addressing: the device sees host memory at its address. */
        *pdptr = (CUdeviceptr)p;
    }
    sim_leave();
    return status;
}

CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    CUresult status = sim_enter();
    sim_range_t *range;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    range = sim_range_find((uintptr_t)p);
    if ((pFlags == NULL) || (range == NULL) || (range->kind != SIM_MEM_HOST)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        *pFlags = range->host_flags;
    }
    sim_leave();
    return status;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize,
                                 CUdeviceptr dptr)
{
    CUresult status = sim_enter();
    sim_range_t *range;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    range = sim_range_find(dptr);
    if (range == NULL) {
        status = CUDA_ERROR_NOT_FOUND;
    } else {
        /* For VMM memory this is the mapping, not the reservation. */
        if (pbase != NULL) {
            *pbase = range->base;
        }
        if (psize != NULL) {
            *psize = range->size;
        }
    }
    sim_leave();
    return status;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    CUresult status = sim_enter();
    CUcontext ctx;
    size_t used;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((free_bytes == NULL) || (total == NULL)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_ctx_require(&ctx)) == CUDA_SUCCESS) {
        used        = sim.devices[ctx->device].used;
        *total      = sim.cfg.device_mem;
        *free_bytes = (used < *total) ? (*total - used) : 0;
    }
    sim_leave();
    return status;
}
