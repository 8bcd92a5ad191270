#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * Pointer attributes. Value sizes are what the H200's driver writes:
 * CUcontext, CUdeviceptr, void *, CUmemoryPool, size_t, BUFFER_ID,
 * MEMORY_BLOCK_ID and ALLOWED_HANDLE_TYPES are 8 bytes, P2P_TOKENS 12,
 * everything else (memory type, ordinal, booleans, access flags) 4.
 *
 * cuPointerGetAttribute fails with INVALID_VALUE on memory the driver does
 * not know (a plain host pointer); cuPointerGetAttributes succeeds and
 * reports zeroes there (device ordinal -2, CU_DEVICE_INVALID), as cuda.h
 * documents.
 */
#include "cudasim.h"

#include <string.h>

static CUmemorytype sim_range_memtype(const sim_range_t *range)
{
    /* Managed memory reports DEVICE; IS_MANAGED tells it apart. */
    return range->cpu_visible ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
}

static unsigned sim_range_handle_types(const sim_range_t *range)
{
    /* Memory imported from another process is not an exportable
     * allocation of this one: the H200 reports 0 for pool imports and for
     * mappings of imported VMM handles. */
    switch (range->kind) {
    case SIM_MEM_POOL:
        return range->pool->props.handleTypes;
    case SIM_MEM_POOL_IMPORT:
        return 0;
    case SIM_MEM_VMM:
        return range->handle->imported ? 0 :
                                         range->handle->prop.requestedHandleTypes;
    default:
        return 0; /* legacy memory exports with cuIpcGetMemHandle only */
    }
}

/* The driver maps device memory in units the attributes reveal: cuMemAlloc
 * memory in 2 MiB pages, pool memory in 32 MiB chunks, registered host
 * memory in whole pages. */
static void sim_range_mapping(const sim_range_t *range, uintptr_t *base_p,
                              size_t *size_p)
{
    size_t unit, off, end;

    switch (range->kind) {
    case SIM_MEM_LEGACY:
        unit = SIM_GRANULARITY;
        break;
    case SIM_MEM_POOL:
    case SIM_MEM_POOL_IMPORT:
        unit = SIM_POOL_CHUNK;
        break;
    case SIM_MEM_HOST_REGISTERED:
    case SIM_MEM_HOST:
    case SIM_MEM_MANAGED:
        unit = 4096;
        break;
    default:
        *base_p = range->base;
        *size_p = range->size;
        return;
    }
    off     = (range->base / unit) * unit;
    end     = SIM_ALIGN_UP(range->base + range->size, unit);
    *base_p = off;
    *size_p = end - off;
}

static void sim_put_int(void *data, int value)
{
    memcpy(data, &value, sizeof(value));
}

static void sim_put_u64(void *data, unsigned long long value)
{
    memcpy(data, &value, sizeof(value));
}

static void sim_put_ptr(void *data, const void *value)
{
    memcpy(data, &value, sizeof(value));
}

/* Answer one attribute about @a range (NULL: not CUDA memory). */
static CUresult sim_attr_get(void *data, CUpointer_attribute attr,
                             CUdeviceptr ptr, const sim_range_t *range)
{
    CUcontext ctx = sim_ctx_current();
    uintptr_t base;
    size_t size;
    int dev;

    if (range == NULL) {
        /* Only cuPointerGetAttributes gets here with NULL: defaults. */
        switch ((int)attr) {
        case CU_POINTER_ATTRIBUTE_CONTEXT:
        case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
            sim_put_ptr(data, NULL);
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
            sim_put_u64(data, 0);
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            sim_put_int(data, -2);
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
            return CUDA_ERROR_INVALID_VALUE;
        default:
            if (((int)attr < CU_POINTER_ATTRIBUTE_CONTEXT) || ((int)attr > 21)) {
                return CUDA_ERROR_INVALID_VALUE;
            }
            sim_put_int(data, 0);
            return CUDA_SUCCESS;
        }
    }

    switch ((int)attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        sim_put_ptr(data, range->ctx);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        sim_put_int(data, (int)sim_range_memtype(range));
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        sim_put_u64(data, ptr);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (!range->cpu_visible && (range->kind != SIM_MEM_MANAGED)) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        sim_put_ptr(data, (void *)ptr);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
        if (range->cpu_visible) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        /* No nv-p2p kernel interface here: zero tokens. The documented side
         * effect stays: the query turns SYNC_MEMOPS on. */
        memset(data, 0, 12);
        ((sim_range_t *)range)->sync_memops = 1;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        sim_put_int(data, range->sync_memops);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        sim_put_u64(data, range->buffer_id);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        sim_put_int(data, range->kind == SIM_MEM_MANAGED);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        sim_put_int(data, range->device);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        sim_put_int(data, range->kind == SIM_MEM_LEGACY);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        /* For VMM: the reservation, not the mapping (cuda.h). */
        sim_put_u64(data, (range->resv != NULL) ? range->resv->base :
                                                  range->base);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        sim_put_u64(data, (range->resv != NULL) ? range->resv->size :
                                                  range->size);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        sim_put_int(data, 1);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        sim_put_u64(data, sim_range_handle_types(range));
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
        /* H200: cuMemAlloc memory yes; pools no; VMM only when asked for. */
        sim_put_int(data, (range->kind == SIM_MEM_LEGACY) ||
                          ((range->kind == SIM_MEM_VMM) &&
                           range->handle->prop.allocFlags.gpuDirectRDMACapable));
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        dev = (ctx != NULL) ? ctx->device : range->device;
        sim_put_int(data, sim_range_device_access(range, dev) ?
                          CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE :
                          CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        sim_put_ptr(data, range->pool);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        sim_range_mapping(range, &base, &size);
        sim_put_u64(data, size);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        sim_range_mapping(range, &base, &size);
        sim_put_u64(data, base);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        sim_put_u64(data, (range->handle != NULL) ? range->handle->id :
                                                    range->buffer_id);
        return CUDA_SUCCESS;
    case 21: /* IS_HW_DECOMPRESS_CAPABLE: cuMemAlloc memory only */
        sim_put_int(data, range->kind == SIM_MEM_LEGACY);
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                               CUdeviceptr ptr)
{
    CUresult status = sim_enter();
    sim_range_t *range;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    range = sim_range_find(ptr);
    if ((data == NULL) || (range == NULL)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        status = sim_attr_get(data, attribute, ptr, range);
    }
    sim_leave();
    return status;
}

CUresult cuPointerGetAttributes(unsigned int numAttributes,
                                CUpointer_attribute *attributes, void **data,
                                CUdeviceptr ptr)
{
    CUresult status = sim_enter();
    sim_range_t *range;
    unsigned i;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((attributes == NULL) || (data == NULL)) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    range = sim_range_find(ptr);
    for (i = 0; (i < numAttributes) && (status == CUDA_SUCCESS); ++i) {
        if (data[i] == NULL) {
            status = CUDA_ERROR_INVALID_VALUE;
        } else {
            status = sim_attr_get(data[i], attributes[i], ptr, range);
        }
    }
out:
    sim_leave();
    return status;
}

CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attribute,
                               CUdeviceptr ptr)
{
    CUresult status = sim_enter();
    sim_range_t *range;
    int flag;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    range = sim_range_find(ptr);
    if ((value == NULL) || (range == NULL) ||
        (attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if (range->kind == SIM_MEM_VMM) {
        /* GPU-FACTS.md: NOT_SUPPORTED on VMM memory (pool memory: SUCCESS,
         * but without effect on copies: sim_range_sync_memops()). */
        status = CUDA_ERROR_NOT_SUPPORTED;
    } else {
        memcpy(&flag, value, sizeof(flag));
        range->sync_memops = (flag != 0);
        if ((flag != 0) && sim_range_sync_memops(range)) {
            /* Documented: synchronous operations still pending on the
             * region complete before this returns. */
            sim_stream_land_range_locked(range);
        }
    }
    sim_leave();
    return status;
}
