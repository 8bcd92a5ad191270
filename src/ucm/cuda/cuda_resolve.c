#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * The memory-type cache's resolver: what is the memory at an address the
 * hooks never reported (allocated before they were installed, or while
 * the cache runs without hooks)? One cuPointerGetAttributes call answers
 * for every kind but one: device memory that is neither legacy, pool nor
 * managed may be a VMM mapping, which cuMemRetainAllocationHandle
 * recognises (GPU-FACTS.md: it works on VMM addresses only).
 *
 * Every attribute value is read through a zeroed 8-byte slot. The driver
 * writes 8 bytes for pointers, sizes and ALLOWED_HANDLE_TYPES and 4 for
 * the memory type, the ordinal and the booleans (test/cudasim/sim_attr.c
 * lists what the H200's driver writes); reading an 8-byte value into an int
 * would overwrite the next variable, reading a 4-byte one from a wider
 * variable would see garbage in its upper half. A zeroed slot read back at
 * the width the driver wrote is exact on this little-endian target.
 *
 * The resolver never calls cuInit: a process that has not initialised the
 * driver has no CUDA memory, and initialising it behind the application's
 * back would make every child it forks later unable to use CUDA. So
 * CUDA_ERROR_NOT_INITIALIZED (and DEINITIALIZED, at exit) mean "host".
 */

#include <ucm/cuda/cudamem.h>

#include <ucs/debug/log.h>
#include <ucs/sys/compiler_def.h>

#include <stdint.h>
#include <string.h>

/* Attributes of the one query, and their slots. Later attributes need a
 * newer toolkit; without them the answer is less complete, never wrong. */
enum {
    UCM_CUDA_ATTR_MEMORY_TYPE,
    UCM_CUDA_ATTR_DEVICE_ORDINAL,
    UCM_CUDA_ATTR_IS_MANAGED,
    UCM_CUDA_ATTR_RANGE_START,
    UCM_CUDA_ATTR_RANGE_SIZE,
#if CUDA_VERSION >= 11000
    UCM_CUDA_ATTR_LEGACY_IPC,
    UCM_CUDA_ATTR_HANDLE_TYPES,
#endif
#if CUDA_VERSION >= 11030
    UCM_CUDA_ATTR_MEMPOOL,
#endif
#if CUDA_VERSION >= 12000
    UCM_CUDA_ATTR_MAPPING_BASE,
    UCM_CUDA_ATTR_MAPPING_SIZE,
#endif
    UCM_CUDA_ATTR_LAST
};

static const CUpointer_attribute ucm_cuda_resolve_attrs[] = {
    [UCM_CUDA_ATTR_MEMORY_TYPE]    = CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
    [UCM_CUDA_ATTR_DEVICE_ORDINAL] = CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
    [UCM_CUDA_ATTR_IS_MANAGED]     = CU_POINTER_ATTRIBUTE_IS_MANAGED,
    [UCM_CUDA_ATTR_RANGE_START]    = CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
    [UCM_CUDA_ATTR_RANGE_SIZE]     = CU_POINTER_ATTRIBUTE_RANGE_SIZE,
#if CUDA_VERSION >= 11000
    [UCM_CUDA_ATTR_LEGACY_IPC]     =
            CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
    [UCM_CUDA_ATTR_HANDLE_TYPES]   = CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
#endif
#if CUDA_VERSION >= 11030
    [UCM_CUDA_ATTR_MEMPOOL]        = CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
#endif
#if CUDA_VERSION >= 12000
    [UCM_CUDA_ATTR_MAPPING_BASE]   = CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
    [UCM_CUDA_ATTR_MAPPING_SIZE]   = CU_POINTER_ATTRIBUTE_MAPPING_SIZE,
#endif
};

_Static_assert(ucs_static_array_size(ucm_cuda_resolve_attrs) ==
               UCM_CUDA_ATTR_LAST, "one attribute per slot");

typedef struct {
    uint64_t slot[UCM_CUDA_ATTR_LAST];
} ucm_cuda_attrs_t;

/* 4-byte values: the memory type, booleans */
static unsigned ucm_cuda_attr_u32(const ucm_cuda_attrs_t *a, int attr)
{
    return (uint32_t)a->slot[attr];
}

/* The device ordinal is a signed 4-byte value (-2 on host memory) */
static int ucm_cuda_attr_int(const ucm_cuda_attrs_t *a, int attr)
{
    return (int32_t)(uint32_t)a->slot[attr];
}

static uint64_t ucm_cuda_attr_u64(const ucm_cuda_attrs_t *a, int attr)
{
    return a->slot[attr];
}

static int ucm_cuda_range_contains(uint64_t start, uint64_t size,
                                   CUdeviceptr ptr)
{
    return (size != 0) && (ptr >= start) && (ptr - start < size);
}

static void ucm_cuda_resolve_extent(ucs_memtype_info_t *info, uint64_t start,
                                    uint64_t size)
{
    info->region_start  = (void*)(uintptr_t)start;
    info->region_length = size;
    info->alloc_base    = (void*)(uintptr_t)start;
    info->alloc_length  = size;
}

/*
 * The allocation's extent from the range attributes. They are not always
 * right: for memory of a host-located pool the H200's driver (580.159.04,
 * CUDA 13.0) reports RANGE_START_ADDR 0 with the right RANGE_SIZE. An
 * extent that does not contain the address is not believed: ask
 * cuMemGetAddressRange instead, and if that does not help either, answer
 * without an extent -- the lookup then returns the type uncached, which is
 * slower but never wrong.
 */
static void ucm_cuda_resolve_range(CUdeviceptr ptr, const ucm_cuda_attrs_t *a,
                                   ucs_memtype_info_t *info)
{
    uint64_t start = ucm_cuda_attr_u64(a, UCM_CUDA_ATTR_RANGE_START);
    uint64_t size  = ucm_cuda_attr_u64(a, UCM_CUDA_ATTR_RANGE_SIZE);
    CUdeviceptr base;
    size_t length;

    if (ucm_cuda_range_contains(start, size, ptr)) {
        ucm_cuda_resolve_extent(info, start, size);
    } else if ((cuMemGetAddressRange(&base, &length, ptr) == CUDA_SUCCESS) &&
               ucm_cuda_range_contains(base, length, ptr)) {
        ucm_cuda_resolve_extent(info, base, length);
    } else {
        ucs_debug("cuda resolver: no extent for %p (range [0x%lx, +%lu))",
                  (void*)ptr, (unsigned long)start, (unsigned long)size);
        ucm_cuda_resolve_extent(info, 0, 0);
    }
}

static void ucm_cuda_resolve_host(ucs_memtype_info_t *info)
{
    /* length 0: the cache derives the extent from the mapping */
    info->mem_type      = UCS_MEMORY_TYPE_HOST;
    info->device        = -1;
    info->alloc_kind    = UCS_MEMTYPE_ALLOC_HOST;
    info->region_length = 0;
}

/* The device a CUmemLocation puts memory on, or -1 with a host type. */
static void ucm_cuda_resolve_location(const CUmemLocation *location,
                                      ucs_memtype_info_t *info)
{
    if (location->type == CU_MEM_LOCATION_TYPE_DEVICE) {
        info->mem_type = UCS_MEMORY_TYPE_CUDA;
        info->device   = location->id;
    } else {
        info->mem_type = UCS_MEMORY_TYPE_HOST;
        info->device   = -1;
    }
}

/*
 * A VMM mapping? Only these have an allocation handle. Its extent is the
 * mapping (one cuMemMap, as the hooks report it: a multi-chunk range is
 * several regions). The offset of the mapping in its physical allocation is
 * not known from here; whole allocations mapped at offset 0, the common
 * case, give the same alloc_base as the hooks report.
 */
static int ucm_cuda_resolve_vmm(CUdeviceptr ptr, const ucm_cuda_attrs_t *a,
                                ucs_memtype_info_t *info)
{
#if HAVE_DECL_CUMEMRETAINALLOCATIONHANDLE
    CUmemGenericAllocationHandle handle;
    CUmemAllocationProp prop;
    CUresult ret;

    if (cuMemRetainAllocationHandle(&handle, (void*)ptr) != CUDA_SUCCESS) {
        return 0;
    }

    memset(&prop, 0, sizeof(prop));
    ret = cuMemGetAllocationPropertiesFromHandle(&prop, handle);
    cuMemRelease(handle); /* drops only the reference retained above */

    info->alloc_kind = UCS_MEMTYPE_ALLOC_VMM;
    if (ret == CUDA_SUCCESS) {
        ucm_cuda_resolve_location(&prop.location, info);
        info->handle_types = (uint32_t)prop.requestedHandleTypes;
    }

#if CUDA_VERSION >= 12000
    if (ucm_cuda_range_contains(
                ucm_cuda_attr_u64(a, UCM_CUDA_ATTR_MAPPING_BASE),
                ucm_cuda_attr_u64(a, UCM_CUDA_ATTR_MAPPING_SIZE), ptr)) {
        ucm_cuda_resolve_extent(
                info, ucm_cuda_attr_u64(a, UCM_CUDA_ATTR_MAPPING_BASE),
                ucm_cuda_attr_u64(a, UCM_CUDA_ATTR_MAPPING_SIZE));
    } else {
        ucm_cuda_resolve_extent(info, 0, 0); /* not cached */
    }
#else
    /* The range attributes describe the reservation, which may hold other
     * mappings: answer without an extent (not cached). */
    ucm_cuda_resolve_extent(info, 0, 0);
#endif
    return 1;
#else
    return 0;
#endif
}

/* Classify what the driver said about @a ptr. */
static void ucm_cuda_resolve_classify(CUdeviceptr ptr,
                                      const ucm_cuda_attrs_t *a,
                                      ucs_memtype_info_t *info)
{
    unsigned cu_type = ucm_cuda_attr_u32(a, UCM_CUDA_ATTR_MEMORY_TYPE);
    int ordinal      = ucm_cuda_attr_int(a, UCM_CUDA_ATTR_DEVICE_ORDINAL);

    if (cu_type == 0) {
        /* not CUDA memory: the driver sets no type */
        ucm_cuda_resolve_host(info);
        return;
    }

    ucm_cuda_resolve_range(ptr, a, info);
    if (cu_type == CU_MEMORYTYPE_HOST) {
        info->mem_type = UCS_MEMORY_TYPE_HOST;
        info->device   = -1;
    } else {
        info->mem_type = UCS_MEMORY_TYPE_CUDA;
        info->device   = ordinal;
    }
#if CUDA_VERSION >= 11000
    info->handle_types = (uint32_t)ucm_cuda_attr_u64(
            a, UCM_CUDA_ATTR_HANDLE_TYPES);
#endif

    if (ucm_cuda_attr_u32(a, UCM_CUDA_ATTR_IS_MANAGED)) {
        info->mem_type     = UCS_MEMORY_TYPE_CUDA_MANAGED;
        info->device       = ordinal;
        info->alloc_kind   = UCS_MEMTYPE_ALLOC_MANAGED;
        info->handle_types = 0;
        return;
    }

#if CUDA_VERSION >= 11030
    info->pool = (void*)(uintptr_t)ucm_cuda_attr_u64(a, UCM_CUDA_ATTR_MEMPOOL);
    if (info->pool != NULL) {
        /* a pool on the host (cuda.h: HOST, HOST_NUMA) gives host memory */
        info->alloc_kind = UCS_MEMTYPE_ALLOC_POOL;
        return;
    }
#endif

#if CUDA_VERSION >= 11000
    /* Only device memory: the flag says nothing useful about host memory */
    if ((cu_type != CU_MEMORYTYPE_HOST) &&
        ucm_cuda_attr_u32(a, UCM_CUDA_ATTR_LEGACY_IPC)) {
        info->alloc_kind    = UCS_MEMTYPE_ALLOC_LEGACY;
        info->handle_types |= UCS_MEMTYPE_HANDLE_LEGACY_IPC;
        return;
    }
#endif

    /* VMM mappings may be located on the host too */
    if (ucm_cuda_resolve_vmm(ptr, a, info)) {
        return;
    }

    if (cu_type == CU_MEMORYTYPE_HOST) {
        /* cuMemHostAlloc, cuMemAllocHost, cuMemHostRegister */
        info->alloc_kind = UCS_MEMTYPE_ALLOC_HOST_PINNED;
        return;
    }

    /* Device memory of no kind we can tell (an IPC import made before the
     * hooks, for instance): the type is right, and an UNKNOWN kind tells
     * the exporter not to try. */
    info->alloc_kind = UCS_MEMTYPE_ALLOC_UNKNOWN;
}

ucs_status_t ucm_cuda_resolve(void *arg, const void *address, size_t length,
                              ucs_memtype_info_t *info)
{
    CUdeviceptr ptr = (CUdeviceptr)(uintptr_t)address;
    void *data[UCM_CUDA_ATTR_LAST];
    ucs_status_t status = UCS_OK;
    ucm_cuda_attrs_t attrs;
    int entered, i;
    CUresult ret;

    memset(&attrs, 0, sizeof(attrs));
    for (i = 0; i < UCM_CUDA_ATTR_LAST; ++i) {
        data[i] = &attrs.slot[i];
    }

    /* Our driver calls (cuMemRelease is hooked) must not be reported, nor
     * change the hooks' tables. A lookup made from inside a hook or a
     * handler already holds the guard: then leave it to its owner. */
    entered = ucm_cuda_hook_enter();

    ret = cuPointerGetAttributes(UCM_CUDA_ATTR_LAST,
                                 (CUpointer_attribute*)ucm_cuda_resolve_attrs,
                                 data, ptr);
    switch (ret) {
    case CUDA_SUCCESS:
        ucm_cuda_resolve_classify(ptr, &attrs, info);
        break;
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
        /* no driver in this process (yet): no CUDA memory */
        ucm_cuda_resolve_host(info);
        break;
    default:
        ucs_debug("cuda resolver: cuPointerGetAttributes(%p) failed: %d",
                  address, (int)ret);
        status = UCS_ERR_IO_ERROR;
        break;
    }

    if (entered) {
        ucm_cuda_hook_leave();
    }
    return status;
}
