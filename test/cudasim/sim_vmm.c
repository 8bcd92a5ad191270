#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * The virtual memory management API: physical allocations (one memfd each,
 * created by cuMemCreate or imported from a shareable handle), address
 * reservations (anonymous PROT_NONE mappings) and cuMemMap of the former
 * into the latter. Each mapping is one registry range, so a VA range built
 * from several chunks is several ranges, as in the driver.
 */
#include "cudasim.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

sim_vmm_handle_t *sim_vmm_lookup(CUmemGenericAllocationHandle h)
{
    sim_vmm_handle_t *handle;

    /* Search the list instead of dereferencing: a stale or made-up handle
     * gets an error, not a crash. */
    for (handle = sim.handles; handle != NULL; handle = handle->next) {
        if ((uintptr_t)handle == (uintptr_t)h) {
            return (handle->magic == SIM_MAGIC_VMM) ? handle : NULL;
        }
    }
    return NULL;
}

static int sim_vmm_is_host(const CUmemAllocationProp *prop)
{
    return prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE;
}

sim_vmm_handle_t *sim_vmm_handle_new(int fd, size_t size,
                                     const CUmemAllocationProp *prop,
                                     int imported)
{
    sim_vmm_handle_t *handle = calloc(1, sizeof(*handle));

    if (handle == NULL) {
        return NULL;
    }
    handle->shadow = sim_map(fd, 0, size, PROT_READ | PROT_WRITE, 4096);
    if (handle->shadow == NULL) {
        free(handle);
        return NULL;
    }
    handle->magic    = SIM_MAGIC_VMM;
    handle->fd       = fd;
    handle->ino      = sim_fd_ino(fd);
    handle->size     = size;
    handle->prop     = *prop;
    handle->imported = imported;
    handle->refs     = 1;
    handle->user_refs = 1;
    handle->id       = sim_new_id();
    handle->next     = sim.handles;
    sim.handles      = handle;
    if (!imported && !sim_vmm_is_host(prop)) {
        sim.devices[prop->location.id].used += size;
    }
    return handle;
}

void sim_vmm_unref_locked(sim_vmm_handle_t *handle)
{
    sim_vmm_handle_t **hp;

    if (--handle->refs > 0) {
        return;
    }
    for (hp = &sim.handles; *hp != NULL; hp = &(*hp)->next) {
        if (*hp == handle) {
            *hp = handle->next;
            break;
        }
    }
    if (!handle->imported && !sim_vmm_is_host(&handle->prop)) {
        sim.devices[handle->prop.location.id].used -= handle->size;
    }
    munmap(handle->shadow, handle->size);
    close(handle->fd);
    handle->magic = 0;
    free(handle);
}

sim_reservation_t *sim_reservation_find(uintptr_t addr)
{
    sim_reservation_t *resv;

    for (resv = sim.reservations; resv != NULL; resv = resv->next) {
        if (addr - resv->base < resv->size) {
            return resv;
        }
    }
    return NULL;
}

static CUresult sim_check_location(const CUmemLocation *loc)
{
    switch (loc->type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        return sim_check_device(loc->id);
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUresult status = sim_enter();
    sim_shm_header_t hdr = {{0}};
    sim_vmm_handle_t *h;
    char name[64];
    int fd;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((handle == NULL) || (prop == NULL) || (flags != 0) || (size == 0) ||
        (size % SIM_GRANULARITY) ||
        (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) ||
        (prop->requestedHandleTypes &
         ~(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR |
           CU_MEM_HANDLE_TYPE_FABRIC))) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    status = sim_check_location(&prop->location);
    if (status != CUDA_SUCCESS) {
        goto out;
    }
    /* GPU-FACTS.md: without an IMEX channel, fabric handles are refused. */
    if ((prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_FABRIC) &&
        !sim.cfg.fabric) {
        status = CUDA_ERROR_NOT_PERMITTED;
        goto out;
    }
    if (!sim_vmm_is_host(prop) &&
        (sim.devices[prop->location.id].used + size > sim.cfg.device_mem)) {
        status = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }

    hdr.kind          = SIM_SHM_VMM;
    hdr.device        = sim_vmm_is_host(prop) ? 0 : prop->location.id;
    hdr.handle_types  = prop->requestedHandleTypes;
    hdr.location_type = prop->location.type;
    hdr.object_id     = ((uint64_t)getpid() << 32) | sim_new_id();
    snprintf(name, sizeof(name), "cudasim-vmm-%llx",
             (unsigned long long)hdr.object_id);
    fd = sim_shm_create(name, &hdr, size);
    if (fd < 0) {
        status = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    h = sim_vmm_handle_new(fd, size, prop, 0);
    if (h == NULL) {
        close(fd);
        status = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
out:
    sim_leave();
    return status;
}

/* Drops the creation reference; the memory lives on while mapped. */
CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult status = sim_enter();
    sim_vmm_handle_t *h;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    h = sim_vmm_lookup(handle);
    if ((h == NULL) || (h->user_refs == 0)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        --h->user_refs;
        sim_vmm_unref_locked(h);
    }
    sim_leave();
    return status;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                             CUdeviceptr addr, unsigned long long flags)
{
    CUresult status = sim_enter();
    sim_reservation_t *resv;
    char *area, *start;
    size_t span;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (alignment == 0) {
        alignment = SIM_GRANULARITY;
    }
    if ((ptr == NULL) || (size == 0) || (size % SIM_GRANULARITY) ||
        (alignment & (alignment - 1)) || (alignment % SIM_GRANULARITY) ||
        (flags & ~1ull)) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    resv = calloc(1, sizeof(*resv));
    span = size + alignment;
    area = mmap((void *)addr, span, PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if ((resv == NULL) || (area == MAP_FAILED)) {
        free(resv);
        status = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    start = (char *)SIM_ALIGN_UP((uintptr_t)area, alignment);
    if (start > area) {
        munmap(area, (size_t)(start - area));
    }
    if (area + span > start + size) {
        munmap(start + size, (size_t)(area + span - (start + size)));
    }
    resv->base        = (uintptr_t)start;
    resv->size        = size;
    resv->next        = sim.reservations;
    sim.reservations  = resv;
    *ptr = resv->base;
out:
    sim_leave();
    return status;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CUresult status = sim_enter();
    sim_reservation_t **rp, *resv;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    for (rp = &sim.reservations; *rp != NULL; rp = &(*rp)->next) {
        if (((*rp)->base == ptr) && ((*rp)->size == size)) {
            break;
        }
    }
    if ((*rp == NULL) || sim_range_overlaps(ptr, size)) {
        /* Unknown range, or chunks still mapped into it. */
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        resv = *rp;
        *rp  = resv->next;
        munmap((void *)resv->base, resv->size);
        free(resv);
    }
    sim_leave();
    return status;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                  CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
    CUresult status = sim_enter();
    sim_reservation_t *resv;
    sim_range_t *range;
    sim_vmm_handle_t *h;
    int host;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    h    = sim_vmm_lookup(handle);
    resv = sim_reservation_find(ptr);
    if ((h == NULL) || (h->user_refs == 0) || (resv == NULL) ||
        (flags != 0) || (size == 0) ||
        (size % SIM_GRANULARITY) || (offset % SIM_GRANULARITY) ||
        (ptr % SIM_GRANULARITY) || (offset + size > h->size) ||
        (ptr + size > resv->base + resv->size)) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    if (sim_range_overlaps(ptr, size)) {
        status = CUDA_ERROR_ALREADY_MAPPED;
        goto out;
    }
    host  = sim_vmm_is_host(&h->prop);
    range = sim_range_new(SIM_MEM_VMM, ptr, size,
                          host ? 0 : h->prop.location.id);
    if (range == NULL) {
        status = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    /* Host memory becomes CPU-accessible only with cuMemSetAccess. */
    if (mmap((void *)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd,
             (off_t)(SIM_SHM_HEADER_SIZE + offset)) == MAP_FAILED) {
        free(range);
        status = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    if (sim_range_insert(range) != 0) {
        mmap((void *)ptr, size, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        free(range);
        status = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    /* VMM memory is not tied to a context. */
    range->ctx         = NULL;
    range->handle      = h;
    range->handle_off  = offset;
    range->resv        = resv;
    range->shadow      = h->shadow + offset;
    range->cpu_visible = host;
    ++h->refs;
out:
    sim_leave();
    return status;
}

/* Whether [ptr, ptr+size) is exactly tiled by mappings; -1 otherwise. */
static int sim_vmm_tiles(CUdeviceptr ptr, size_t size)
{
    uintptr_t addr = ptr;
    sim_range_t *range;

    while (addr < ptr + size) {
        range = sim_range_find(addr);
        if ((range == NULL) || (range->kind != SIM_MEM_VMM) ||
            (range->base != addr) || (addr + range->size > ptr + size)) {
            return -1;
        }
        addr += range->size;
    }
    return (size > 0) ? 0 : -1;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult status = sim_enter();
    sim_range_t *range;
    uintptr_t addr, next;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    /* The H200 accepts a range with unmapped holes, inside a reservation;
     * every mapping touched must lie inside the range. */
    if ((size == 0) || (sim_reservation_find(ptr) == NULL) ||
        (sim_reservation_find(ptr + size - 1) == NULL)) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    for (addr = ptr; addr < ptr + size; addr = next) {
        range = sim_range_find(addr);
        next  = (range != NULL) ? (range->base + range->size) :
                                  (addr + SIM_GRANULARITY);
        if ((range != NULL) && ((range->kind != SIM_MEM_VMM) ||
                                (range->base < ptr) || (next > ptr + size))) {
            status = CUDA_ERROR_INVALID_VALUE;
            goto out;
        }
    }
    sim_drain_all_locked();
    for (addr = ptr; addr < ptr + size; addr = next) {
        range = sim_range_find(addr);
        if (range == NULL) {
            next = addr + SIM_GRANULARITY;
            continue;
        }
        next  = range->base + range->size;
        /* Put the reservation's placeholder back. */
        mmap((void *)range->base, range->size, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        sim_range_remove(range);
        sim_vmm_unref_locked(range->handle);
        free(range);
    }
out:
    sim_leave();
    return status;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size,
                        const CUmemAccessDesc *desc, size_t count)
{
    CUresult status = sim_enter();
    sim_range_t *range;
    uintptr_t addr;
    size_t i;
    int host_prot;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((desc == NULL) || (count == 0) || (sim_vmm_tiles(ptr, size) != 0)) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    for (i = 0; i < count; ++i) {
        if ((sim_check_location(&desc[i].location) != CUDA_SUCCESS) ||
            ((desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE) &&
             (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ) &&
             (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))) {
            status = CUDA_ERROR_INVALID_VALUE;
            goto out;
        }
    }
    for (addr = ptr; addr < ptr + size; addr += range->size) {
        range = sim_range_find(addr);
        for (i = 0; i < count; ++i) {
            if (desc[i].location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
                if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_NONE) {
                    range->access_mask &= ~(1ull << desc[i].location.id);
                } else {
                    range->access_mask |= 1ull << desc[i].location.id;
                }
            } else if (range->cpu_visible || sim.cfg.cpu_access) {
                /* Host access to host-located memory is CPU access. */
                host_prot = (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_NONE) ?
                            PROT_NONE : (desc[i].flags ==
                                         CU_MEM_ACCESS_FLAGS_PROT_READ) ?
                            PROT_READ : (PROT_READ | PROT_WRITE);
                mprotect((void *)range->base, range->size, host_prot);
            }
        }
        if (sim.cfg.cpu_access && !range->cpu_visible && range->access_mask) {
            mprotect((void *)range->base, range->size, PROT_READ | PROT_WRITE);
        }
    }
out:
    sim_leave();
    return status;
}

CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
                        CUdeviceptr ptr)
{
    CUresult status = sim_enter();
    sim_range_t *range;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    range = sim_range_find(ptr);
    if ((flags == NULL) || (location == NULL) || (range == NULL) ||
        (range->kind != SIM_MEM_VMM) ||
        (location->type != CU_MEM_LOCATION_TYPE_DEVICE) ||
        (sim_check_device(location->id) != CUDA_SUCCESS)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        *flags = (range->access_mask & (1ull << location->id)) ?
                 CU_MEM_ACCESS_FLAGS_PROT_READWRITE :
                 CU_MEM_ACCESS_FLAGS_PROT_NONE;
    }
    sim_leave();
    return status;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity,
                                       const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((granularity == NULL) || (prop == NULL) ||
        ((option != CU_MEM_ALLOC_GRANULARITY_MINIMUM) &&
         (option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_check_location(&prop->location)) == CUDA_SUCCESS) {
        *granularity = SIM_GRANULARITY;
    }
    sim_leave();
    return status;
}

/* GPU-FACTS.md: works on VMM addresses only (not pools, not cuMemAlloc). */
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle,
                                     void *addr)
{
    CUresult status = sim_enter();
    sim_range_t *range;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    range = sim_range_find((uintptr_t)addr);
    if ((handle == NULL) || (range == NULL) || (range->kind != SIM_MEM_VMM)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        ++range->handle->refs;
        ++range->handle->user_refs;
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)range->handle;
    }
    sim_leave();
    return status;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                CUmemGenericAllocationHandle handle)
{
    CUresult status = sim_enter();
    sim_vmm_handle_t *h;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    h = sim_vmm_lookup(handle);
    if ((prop == NULL) || (h == NULL)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        *prop = h->prop;
    }
    sim_leave();
    return status;
}
