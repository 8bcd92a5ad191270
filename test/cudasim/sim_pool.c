#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * Memory pools and the stream-ordered allocator: a default pool per device
 * (never exportable), explicit pools with handle types and a device or host
 * location, the device's current pool, pool attributes and access.
 * A pool is one memfd heap; importing a pool maps that whole memfd, and an
 * imported pointer is an offset into it (sim_ipc.c).
 *
 * Allocation happens at the call: stream order is trivially respected. A
 * cuMemFreeAsync removes the pointer at the call (so it is invalid from then
 * on, as DESIGN.md treats it) but returns the block to the pool only when
 * the stream reaches the free, so queued work can still touch it.
 */
#include "cudasim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIM_HANDLE_TYPES_LINUX \
    (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC)

int sim_pool_valid(CUmemoryPool pool)
{
    return (pool != NULL) && (pool->magic == SIM_MAGIC_POOL);
}

static int sim_location_is_host(const CUmemLocation *loc)
{
    return (loc->type == CU_MEM_LOCATION_TYPE_HOST) ||
           (loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA) ||
           (loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT);
}

static CUresult sim_pool_check_props(const CUmemPoolProps *props)
{
    if ((props == NULL) || (props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED) ||
        (props->handleTypes & ~SIM_HANDLE_TYPES_LINUX)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (props->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
        if (sim_check_device(props->location.id) != CUDA_SUCCESS) {
            return CUDA_ERROR_INVALID_DEVICE;
        }
    } else if (!sim_location_is_host(&props->location)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* Unlike cuMemCreate, the H200 creates (and allocates from) a pool with
     * fabric handle types without an IMEX channel; the export is refused. */
    return CUDA_SUCCESS;
}

static CUresult sim_pool_create_locked(const CUmemPoolProps *props,
                                       int is_default, CUmemoryPool *pool_p)
{
    sim_shm_header_t hdr = {{0}};
    CUmemoryPool pool;
    size_t capacity;
    char name[64];
    int host, i;

    pool = calloc(1, sizeof(*pool));
    if (pool == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    host           = sim_location_is_host(&props->location);
    pool->props    = *props;
    pool->device   = host ? 0 : props->location.id;
    pool->is_default = is_default;
    capacity = (props->maxSize != 0) ?
               SIM_ALIGN_UP(props->maxSize, SIM_GRANULARITY) :
               sim.cfg.device_mem;
    hdr.kind          = SIM_SHM_POOL;
    hdr.device        = pool->device;
    hdr.handle_types  = props->handleTypes;
    hdr.location_type = props->location.type;
    /* Unique across processes: the importer checks pointer data against it. */
    hdr.object_id     = ((uint64_t)getpid() << 32) | sim_new_id();
    snprintf(name, sizeof(name), "cudasim-pool-%llx",
             (unsigned long long)hdr.object_id);
    pool->heap = sim_heap_create(name, &hdr, capacity, host);
    if (pool->heap == NULL) {
        free(pool);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (i = 0; i < sim.cfg.num_devices; ++i) {
        /* The owner device always has access; a host pool is reachable from
         * every device. Others need cuMemPoolSetAccess. */
        pool->access[i] = (host || (i == pool->device)) ?
                          CU_MEM_ACCESS_FLAGS_PROT_READWRITE :
                          CU_MEM_ACCESS_FLAGS_PROT_NONE;
    }
    pool->reuse[0] = pool->reuse[1] = pool->reuse[2] = 1;
    pool->magic = SIM_MAGIC_POOL;
    pool->next  = sim.pools;
    sim.pools   = pool;
    *pool_p     = pool;
    return CUDA_SUCCESS;
}

CUresult sim_pool_default_locked(int device, CUmemoryPool *pool_p)
{
    CUmemPoolProps props;
    CUresult status;

    if (sim.devices[device].default_pool == NULL) {
        memset(&props, 0, sizeof(props));
        props.allocType     = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.handleTypes   = CU_MEM_HANDLE_TYPE_NONE;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id   = device;
        status = sim_pool_create_locked(&props, 1,
                                        &sim.devices[device].default_pool);
        if (status != CUDA_SUCCESS) {
            return status;
        }
    }
    *pool_p = sim.devices[device].default_pool;
    return CUDA_SUCCESS;
}

/* Free the pool once it is destroyed and nothing refers to it any more. */
static void sim_pool_finalize_locked(CUmemoryPool pool)
{
    CUmemoryPool *pp;

    if (!pool->destroyed || (pool->live > 0)) {
        return;
    }
    for (pp = &sim.pools; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == pool) {
            *pp = pool->next;
            break;
        }
    }
    sim_heap_destroy(pool->heap);
    pool->magic = 0;
    free(pool);
}

void sim_pool_unref_locked(CUmemoryPool pool)
{
    --pool->live;
    sim_pool_finalize_locked(pool);
}

void sim_pool_release_locked(sim_range_t *range)
{
    CUmemoryPool pool = range->pool;

    if (range->kind == SIM_MEM_POOL) {
        sim_heap_free(pool->heap, range->heap_off, range->heap_len);
        if (!sim_location_is_host(&pool->props.location)) {
            sim.devices[pool->device].used -= range->heap_len;
        }
    }
    free(range);
    sim_pool_unref_locked(pool);
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = (pool == NULL) ? CUDA_ERROR_INVALID_VALUE :
             sim_pool_check_props(poolProps);
    if (status == CUDA_SUCCESS) {
        status = sim_pool_create_locked(poolProps, 0, pool);
    }
    sim_leave();
    return status;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    CUresult status = sim_enter();
    int i;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (!sim_pool_valid(pool) || pool->destroyed || pool->is_default) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        sim_drain_all_locked();
        for (i = 0; i < sim.cfg.num_devices; ++i) {
            if (sim.devices[i].current_pool == pool) {
                sim.devices[i].current_pool = NULL;
            }
        }
        /* Outstanding allocations keep it alive, as in the driver. */
        pool->destroyed = 1;
        sim_pool_finalize_locked(pool);
    }
    sim_leave();
    return status;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = (pool_out == NULL) ? CUDA_ERROR_INVALID_VALUE :
             sim_check_device(dev);
    if (status == CUDA_SUCCESS) {
        status = sim_pool_default_locked(dev, pool_out);
    }
    sim_leave();
    return status;
}

CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = (pool == NULL) ? CUDA_ERROR_INVALID_VALUE : sim_check_device(dev);
    if (status == CUDA_SUCCESS) {
        if (sim.devices[dev].current_pool != NULL) {
            *pool = sim.devices[dev].current_pool;
        } else {
            status = sim_pool_default_locked(dev, pool);
        }
    }
    sim_leave();
    return status;
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = sim_check_device(dev);
    if (status != CUDA_SUCCESS) {
        /* status set */
    } else if (!sim_pool_valid(pool) || pool->destroyed || pool->imported ||
               (pool->props.location.type != CU_MEM_LOCATION_TYPE_DEVICE) ||
               (pool->device != dev)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        sim.devices[dev].current_pool = pool->is_default ? NULL : pool;
    }
    sim_leave();
    return status;
}

/* Stream-ordered allocation from @a pool (NULL: the device's current pool). */
static CUresult sim_alloc_async(CUdeviceptr *dptr, size_t size,
                                CUmemoryPool pool, CUstream hstream, int ptsz)
{
    CUresult status = sim_enter();
    sim_range_t *range;
    CUstream stream;
    size_t len, off;
    int host;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((dptr == NULL) || (size == 0)) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    status = sim_stream_resolve(hstream, ptsz, &stream);
    if (status != CUDA_SUCCESS) {
        goto out;
    }
    if (pool == NULL) {
        pool = sim.devices[stream->ctx->device].current_pool;
        if (pool == NULL) {
            status = sim_pool_default_locked(stream->ctx->device, &pool);
            if (status != CUDA_SUCCESS) {
                goto out;
            }
        }
    } else if (!sim_pool_valid(pool) || pool->destroyed || pool->imported) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }

    len = SIM_ALIGN_UP(size, SIM_SMALL_ALIGN);
    if (sim_heap_alloc(pool->heap, len, sim_alloc_align(size), &off) != 0) {
        status = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    host  = sim_location_is_host(&pool->props.location);
    range = sim_range_new(SIM_MEM_POOL, (uintptr_t)pool->heap->user + off,
                          size, host ? stream->ctx->device : pool->device);
    if ((range == NULL) || (sim_range_insert(range) != 0)) {
        free(range);
        sim_heap_free(pool->heap, off, len);
        status = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    range->ctx         = stream->ctx;
    range->pool        = pool;
    range->heap        = pool->heap;
    range->heap_off    = off;
    range->heap_len    = len;
    range->shadow      = pool->heap->shadow + off;
    range->cpu_visible = host;
    ++pool->live;
    if (!host) {
        sim.devices[pool->device].used += len;
    }
    if (pool->heap->used > pool->used_high) {
        pool->used_high = pool->heap->used;
    }
    *dptr = range->base;

out:
    sim_leave();
    return status;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return sim_alloc_async(dptr, bytesize, NULL, hStream, 0);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                              CUstream hStream)
{
    return sim_alloc_async(dptr, bytesize, NULL, hStream, 1);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                 CUmemoryPool pool, CUstream hStream)
{
    if (pool == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return sim_alloc_async(dptr, bytesize, pool, hStream, 0);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                      CUmemoryPool pool, CUstream hStream)
{
    if (pool == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return sim_alloc_async(dptr, bytesize, pool, hStream, 1);
}

static CUresult sim_free_async(CUdeviceptr dptr, CUstream hstream, int ptsz)
{
    CUresult status = sim_enter();
    sim_range_t *range;
    CUstream stream;
    sim_op_t *op;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = sim_stream_resolve(hstream, ptsz, &stream);
    if (status != CUDA_SUCCESS) {
        goto out;
    }
    range = sim_range_find(dptr);
    if ((range == NULL) || (range->base != dptr) ||
        ((range->kind != SIM_MEM_POOL) && (range->kind != SIM_MEM_LEGACY) &&
         (range->kind != SIM_MEM_POOL_IMPORT))) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    if ((range->kind == SIM_MEM_POOL_IMPORT) && (range->import_refs > 1)) {
        --range->import_refs;
        goto out;
    }
    op = sim_op_new(SIM_OP_POOL_FREE);
    if (op == NULL) {
        status = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    sim_range_remove(range);
    op->range = range;
    sim_stream_submit_locked(stream, op);

out:
    sim_leave();
    return status;
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    return sim_free_async(dptr, hStream, 0);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    return sim_free_async(dptr, hStream, 1);
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    /* Freed blocks already went back to the kernel (sim_heap_free). */
    if (!sim_pool_valid(pool)) {
        status = CUDA_ERROR_INVALID_VALUE;
    }
    sim_leave();
    return status;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                               void *value)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (!sim_pool_valid(pool) || (value == NULL)) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    switch ((int)attr) {
    case 1: /* REUSE_FOLLOW_EVENT_DEPENDENCIES */
    case 2: /* REUSE_ALLOW_OPPORTUNISTIC */
    case 3: /* REUSE_ALLOW_INTERNAL_DEPENDENCIES */
        pool->reuse[attr - 1] = *(int *)value;
        break;
    case 4: /* RELEASE_THRESHOLD */
        pool->release_threshold = *(cuuint64_t *)value;
        break;
    case 6: /* RESERVED_MEM_HIGH: may only be reset to 0 */
    case 8: /* USED_MEM_HIGH */
        if (*(cuuint64_t *)value != 0) {
            status = CUDA_ERROR_INVALID_VALUE;
        } else {
            pool->used_high = (pool->heap != NULL) ? pool->heap->used : 0;
        }
        break;
    default:
        status = CUDA_ERROR_INVALID_VALUE;
        break;
    }
out:
    sim_leave();
    return status;
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                               void *value)
{
    CUresult status = sim_enter();
    cuuint64_t used;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (!sim_pool_valid(pool) || (value == NULL)) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    used = pool->heap->used;
    switch ((int)attr) {
    case 1:
    case 2:
    case 3:
        *(int *)value = pool->reuse[attr - 1];
        break;
    case 4:
        *(cuuint64_t *)value = pool->release_threshold;
        break;
    case 5: /* RESERVED_MEM_CURRENT: the model reserves what is used */
    case 7: /* USED_MEM_CURRENT */
        *(cuuint64_t *)value = SIM_ALIGN_UP(used, SIM_GRANULARITY);
        if (attr == 7) {
            *(cuuint64_t *)value = used;
        }
        break;
    case 6:
    case 8:
        *(cuuint64_t *)value = pool->used_high;
        break;
    default:
        status = CUDA_ERROR_INVALID_VALUE;
        break;
    }
out:
    sim_leave();
    return status;
}

CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map,
                            size_t count)
{
    CUresult status = sim_enter();
    size_t i;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (!sim_pool_valid(pool) || ((map == NULL) && (count > 0))) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    /* Validate all descriptors before changing anything. */
    for (i = 0; i < count; ++i) {
        if ((map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) ||
            (sim_check_device(map[i].location.id) != CUDA_SUCCESS) ||
            ((map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE) &&
             (map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ) &&
             (map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)) ||
            (!pool->imported && (map[i].location.id == pool->device) &&
             (map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))) {
            status = CUDA_ERROR_INVALID_VALUE;
            goto out;
        }
    }
    for (i = 0; i < count; ++i) {
        pool->access[map[i].location.id] = map[i].flags;
    }
out:
    sim_leave();
    return status;
}

CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool,
                            CUmemLocation *location)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (!sim_pool_valid(memPool) || (flags == NULL) || (location == NULL) ||
        (location->type != CU_MEM_LOCATION_TYPE_DEVICE) ||
        (sim_check_device(location->id) != CUDA_SUCCESS)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        *flags = memPool->access[location->id];
    }
    sim_leave();
    return status;
}
