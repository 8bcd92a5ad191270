#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * Inter-process sharing, with the verdicts of GPU-FACTS.md:
 * - legacy IPC (cuIpcGetMemHandle / Open / Close): cuMemAlloc memory only;
 * - VMM shareable handles: POSIX fd (or fabric with CUDASIM_FABRIC=1) of a
 *   physical allocation created with that handle type;
 * - pools: the pool's shareable handle plus cuMemPoolExportPointer data,
 *   only for pools created with handle types;
 * - everything else (default pool, no handle types, managed, host memory)
 *   is refused with CUDA_ERROR_INVALID_VALUE.
 *
 * A POSIX-fd handle is a dup of the memfd itself, so it travels through
 * SCM_RIGHTS or pidfd_getfd like any fd. Handles without an fd (legacy
 * 64-byte handles, fabric handles) carry the exporter's pid, its fd number
 * and the memfd's inode: the importer takes a copy of that fd with
 * pidfd_getfd (or opens /proc/<pid>/fd/<n>) and checks the inode, so a dead
 * exporter or a recycled fd number is detected and nothing is ever left
 * behind in the file system.
 */
#include "cudasim.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open  434 /* same number on every architecture */
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

#define SIM_IPC_MAGIC_LEGACY  0x50495343u /* "CSIP" */
#define SIM_IPC_MAGIC_FABRIC  0x42465343u /* "CSFB" */
#define SIM_IPC_MAGIC_POOLPTR 0x50505343u /* "CSPP" */

/** Layout of CUipcMemHandle in the model. */
typedef struct sim_legacy_handle {
    uint32_t magic;
    int32_t  pid;        /**< exporter */
    int32_t  fd;         /**< exporter's arena memfd */
    int32_t  device;
    uint64_t ino;        /**< arena inode, to detect a stale handle */
    uint64_t offset;     /**< allocation offset in the arena */
    uint64_t size;       /**< allocation size */
    uint64_t heap_len;   /**< bytes reserved for it */
    uint64_t buffer_id;
    uint64_t reserved;
} sim_legacy_handle_t;

/** Layout of CUmemFabricHandle in the model (only with CUDASIM_FABRIC=1). */
typedef struct sim_fabric_handle {
    uint32_t magic;
    int32_t  pid;
    int32_t  fd;
    uint32_t kind;       /**< sim_shm_kind_t */
    uint64_t ino;
    uint8_t  reserved[40];
} sim_fabric_handle_t;

/** Layout of CUmemPoolPtrExportData in the model. */
typedef struct sim_pool_ptr_data {
    uint32_t magic;
    int32_t  pid;
    uint64_t pool_id;    /**< sim_shm_header_t.object_id of the pool */
    uint64_t offset;
    uint64_t size;
    uint64_t heap_len;
    uint8_t  reserved[24];
} sim_pool_ptr_data_t;

_Static_assert(sizeof(sim_legacy_handle_t) == CU_IPC_HANDLE_SIZE,
               "legacy handle layout");
_Static_assert(sizeof(sim_fabric_handle_t) == sizeof(CUmemFabricHandle),
               "fabric handle layout");
_Static_assert(sizeof(sim_pool_ptr_data_t) == sizeof(CUmemPoolPtrExportData),
               "pool pointer data layout");

/** One cuIpcOpenMemHandle mapping; a second open of the handle shares it. */
typedef struct sim_ipc_import {
    pid_t                 pid;
    uint64_t              ino;
    uint64_t              offset;
    char                  *map;      /**< user view of whole pages */
    char                  *shadow;
    size_t                map_len;
    unsigned              refs;
    sim_range_t           *range;
    struct sim_ipc_import *next;
} sim_ipc_import_t;

int sim_fetch_remote_fd(pid_t pid, int remote_fd, uint64_t ino)
{
    char path[64];
    int pidfd, fd = -1;

    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd >= 0) {
        fd = (int)syscall(SYS_pidfd_getfd, pidfd, remote_fd, 0);
        close(pidfd);
    }
    if (fd < 0) {
        /* Older kernels, or no ptrace permission for pidfd_getfd. */
        snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, remote_fd);
        fd = open(path, O_RDWR | O_CLOEXEC);
    }
    if ((fd >= 0) && (sim_fd_ino(fd) != ino)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

int sim_ipc_import_contains(uintptr_t addr)
{
    sim_ipc_import_t *imp;

    for (imp = sim.imports; imp != NULL; imp = imp->next) {
        if (addr - (uintptr_t)imp->map < imp->map_len) {
            return 1;
        }
    }
    return 0;
}

/* ---- legacy IPC ---- */

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    CUresult status = sim_enter();
    sim_legacy_handle_t h;
    sim_range_t *range;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    range = sim_range_find(dptr);
    if ((pHandle == NULL) || (range == NULL) ||
        (range->kind != SIM_MEM_LEGACY)) {
        /* Pools, VMM, managed and host memory are not legacy-capable. */
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        memset(&h, 0, sizeof(h));
        h.magic     = SIM_IPC_MAGIC_LEGACY;
        h.pid       = getpid();
        h.fd        = range->heap->fd;
        h.device    = range->device;
        h.ino       = range->heap->ino;
        h.offset    = range->heap_off;
        h.size      = range->size;
        h.heap_len  = range->heap_len;
        h.buffer_id = range->buffer_id;
        memcpy(pHandle->reserved, &h, sizeof(h));
    }
    sim_leave();
    return status;
}

static CUresult sim_ipc_open_locked(CUdeviceptr *pdptr,
                                    const sim_legacy_handle_t *h)
{
    size_t pstart, pend, delta;
    sim_ipc_import_t *imp;
    sim_range_t *range;
    CUcontext ctx;
    CUresult status;
    int fd;

    status = sim_ctx_require(&ctx);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((h->magic != SIM_IPC_MAGIC_LEGACY) || (h->size == 0)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (h->pid == getpid()) {
        /* The driver does not open a process's own handles. */
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    for (imp = sim.imports; imp != NULL; imp = imp->next) {
        if ((imp->pid == h->pid) && (imp->ino == h->ino) &&
            (imp->offset == h->offset)) {
            /* GPU-FACTS.md: a second open returns the same pointer. */
            ++imp->refs;
            *pdptr = imp->range->base;
            return CUDA_SUCCESS;
        }
    }

    fd = sim_fetch_remote_fd(h->pid, h->fd, h->ino);
    if (fd < 0) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    imp    = calloc(1, sizeof(*imp));
    pstart = (h->offset / 4096) * 4096;
    pend   = SIM_ALIGN_UP(h->offset + h->heap_len, 4096);
    delta  = h->offset - pstart;
    status = CUDA_ERROR_MAP_FAILED;
    if (imp == NULL) {
        goto err_close;
    }
    imp->map_len = pend - pstart;
    imp->map     = sim_map(fd, pstart, imp->map_len, sim_user_prot(0),
                           SIM_GRANULARITY);
    if (imp->map == NULL) {
        goto err_free;
    }
    imp->shadow = sim_map(fd, pstart, imp->map_len, PROT_READ | PROT_WRITE,
                          4096);
    if (imp->shadow == NULL) {
        goto err_unmap;
    }
    range = sim_range_new(SIM_MEM_LEGACY_IMPORT, (uintptr_t)imp->map + delta,
                          h->size, h->device);
    if ((range == NULL) || (sim_range_insert(range) != 0)) {
        free(range);
        goto err_unmap_shadow;
    }
    close(fd); /* the mappings keep the memory */
    range->shadow = imp->shadow + delta;
    range->import = imp;
    imp->pid      = h->pid;
    imp->ino      = h->ino;
    imp->offset   = h->offset;
    imp->refs     = 1;
    imp->range    = range;
    imp->next     = sim.imports;
    sim.imports   = imp;
    *pdptr        = range->base;
    return CUDA_SUCCESS;

err_unmap_shadow:
    munmap(imp->shadow, imp->map_len);
err_unmap:
    munmap(imp->map, imp->map_len);
err_free:
    free(imp);
err_close:
    close(fd);
    return status;
}

static CUresult sim_ipc_open(CUdeviceptr *pdptr, CUipcMemHandle handle,
                             unsigned Flags)
{
    CUresult status = sim_enter();
    sim_legacy_handle_t h;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    memcpy(&h, handle.reserved, sizeof(h));
    /* The H200 insists on CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS. */
    if ((pdptr == NULL) || (Flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        status = sim_ipc_open_locked(pdptr, &h);
    }
    sim_leave();
    return status;
}

CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle,
                            unsigned int Flags)
{
    return sim_ipc_open(pdptr, handle, Flags);
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
                               unsigned int Flags)
{
    return sim_ipc_open(pdptr, handle, Flags);
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    CUresult status = sim_enter();
    sim_ipc_import_t **ip, *imp;
    sim_range_t *range;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    range = sim_range_find(dptr);
    if ((range == NULL) || (range->kind != SIM_MEM_LEGACY_IMPORT) ||
        (range->base != dptr)) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    imp = range->import;
    if (--imp->refs > 0) {
        goto out;
    }
    sim_drain_all_locked();
    for (ip = &sim.imports; *ip != imp; ip = &(*ip)->next) {
    }
    *ip = imp->next;
    sim_range_remove(range);
    free(range);
    munmap(imp->shadow, imp->map_len);
    munmap(imp->map, imp->map_len);
    free(imp);
out:
    sim_leave();
    return status;
}

/* ---- shareable handles (shared by VMM and pools) ---- */

static int sim_single_handle_type(CUmemAllocationHandleType type)
{
    return (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ||
           (type == CU_MEM_HANDLE_TYPE_FABRIC);
}

/* Write the shareable handle for memfd @a fd of kind @a kind. */
static CUresult sim_export_fd(void *out, int fd, uint64_t ino,
                              CUmemAllocationHandleType type,
                              sim_shm_kind_t kind)
{
    sim_fabric_handle_t fh;
    int new_fd;

    if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
        new_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (new_fd < 0) {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        *(int *)out = new_fd;
        return CUDA_SUCCESS;
    }
    memset(&fh, 0, sizeof(fh));
    fh.magic = SIM_IPC_MAGIC_FABRIC;
    fh.pid   = getpid();
    fh.fd    = fd;
    fh.kind  = kind;
    fh.ino   = ino;
    memcpy(out, &fh, sizeof(fh));
    return CUDA_SUCCESS;
}

/*
 * Get a private fd for an incoming shareable handle: a dup of a POSIX fd
 * (the caller keeps and closes its own), or the exporter's fd fetched for a
 * fabric handle. Checks that the memfd is of the expected kind.
 */
static CUresult sim_import_fd(void *in, CUmemAllocationHandleType type,
                              sim_shm_kind_t kind, int *fd_p,
                              sim_shm_header_t *hdr)
{
    sim_fabric_handle_t fh;
    int fd;

    if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
        fd = fcntl((int)(uintptr_t)in, F_DUPFD_CLOEXEC, 0);
        if (fd < 0) {
            return CUDA_ERROR_INVALID_VALUE;
        }
    } else if (type == CU_MEM_HANDLE_TYPE_FABRIC) {
        if (!sim.cfg.fabric) {
            return CUDA_ERROR_NOT_PERMITTED;
        }
        if (in == NULL) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        memcpy(&fh, in, sizeof(fh));
        if ((fh.magic != SIM_IPC_MAGIC_FABRIC) || (fh.kind != kind)) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        fd = sim_fetch_remote_fd(fh.pid, fh.fd, fh.ino);
        if (fd < 0) {
            return CUDA_ERROR_INVALID_HANDLE;
        }
    } else {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if ((sim_shm_read_header(fd, hdr) != 0) || (hdr->kind != kind) ||
        !(hdr->handle_types & type)) {
        close(fd);
        return CUDA_ERROR_INVALID_VALUE;
    }
    *fd_p = fd;
    return CUDA_SUCCESS;
}

/* ---- VMM ---- */

CUresult cuMemExportToShareableHandle(void *shareableHandle,
                                      CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType,
                                      unsigned long long flags)
{
    CUresult status = sim_enter();
    sim_vmm_handle_t *h;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    h = sim_vmm_lookup(handle);
    if ((shareableHandle == NULL) || (h == NULL) || (flags != 0) ||
        !sim_single_handle_type(handleType) ||
        !(h->prop.requestedHandleTypes & handleType)) {
        /* Includes every allocation made without handle types. */
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        status = sim_export_fd(shareableHandle, h->fd, h->ino, handleType,
                               SIM_SHM_VMM);
    }
    sim_leave();
    return status;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                        void *osHandle,
                                        CUmemAllocationHandleType shHandleType)
{
    CUresult status = sim_enter();
    CUmemAllocationProp prop;
    sim_shm_header_t hdr;
    sim_vmm_handle_t *h;
    int fd;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (handle == NULL) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    status = sim_import_fd(osHandle, shHandleType, SIM_SHM_VMM, &fd, &hdr);
    if (status != CUDA_SUCCESS) {
        goto out;
    }
    memset(&prop, 0, sizeof(prop));
    prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = (CUmemAllocationHandleType)hdr.handle_types;
    prop.location.type        = (CUmemLocationType)hdr.location_type;
    prop.location.id          = hdr.device;
    h = sim_vmm_handle_new(fd, hdr.size, &prop, 1);
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

/* ---- pools ---- */

CUresult cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool,
                                          CUmemAllocationHandleType handleType,
                                          unsigned long long flags)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((handle_out == NULL) || !sim_pool_valid(pool) || pool->imported ||
        (flags != 0) || !sim_single_handle_type(handleType) ||
        !(pool->props.handleTypes & handleType)) {
        /* Includes the default pool, whose handle types are NONE. */
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((handleType == CU_MEM_HANDLE_TYPE_FABRIC) && !sim.cfg.fabric) {
        status = CUDA_ERROR_NOT_PERMITTED; /* no IMEX channel */
    } else {
        status = sim_export_fd(handle_out, pool->heap->fd, pool->heap->ino,
                               handleType, SIM_SHM_POOL);
    }
    sim_leave();
    return status;
}

CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out,
                                            void *handle,
                                            CUmemAllocationHandleType handleType,
                                            unsigned long long flags)
{
    CUresult status = sim_enter();
    sim_shm_header_t hdr;
    CUmemoryPool pool;
    int fd, host;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((pool_out == NULL) || (flags != 0)) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    status = sim_import_fd(handle, handleType, SIM_SHM_POOL, &fd, &hdr);
    if (status != CUDA_SUCCESS) {
        goto out;
    }
    host = (hdr.location_type != CU_MEM_LOCATION_TYPE_DEVICE);
    pool = calloc(1, sizeof(*pool));
    if ((pool == NULL) || ((pool->heap = sim_heap_open(fd, host)) == NULL)) {
        free(pool);
        close(fd);
        status = CUDA_ERROR_MAP_FAILED;
        goto out;
    }
    close(fd); /* sim_heap_open keeps its own */
    pool->magic                = SIM_MAGIC_POOL;
    pool->imported             = 1;
    pool->device               = hdr.device;
    pool->props.allocType      = CU_MEM_ALLOCATION_TYPE_PINNED;
    pool->props.handleTypes    = (CUmemAllocationHandleType)hdr.handle_types;
    pool->props.location.type  = (CUmemLocationType)hdr.location_type;
    pool->props.location.id    = hdr.device;
    /* GPU-FACTS.md: the importer must cuMemPoolSetAccess before use; until
     * then no device of this process may touch the memory. */
    pool->next = sim.pools;
    sim.pools  = pool;
    *pool_out  = pool;
out:
    sim_leave();
    return status;
}

CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData *shareData_out,
                                CUdeviceptr ptr)
{
    CUresult status = sim_enter();
    sim_pool_ptr_data_t data;
    sim_range_t *range;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    range = sim_range_find(ptr);
    if ((shareData_out == NULL) || (range == NULL) ||
        (range->kind != SIM_MEM_POOL) || (range->base != ptr) ||
        (range->pool->props.handleTypes == CU_MEM_HANDLE_TYPE_NONE)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else {
        memset(&data, 0, sizeof(data));
        data.magic    = SIM_IPC_MAGIC_POOLPTR;
        data.pid      = getpid();
        data.pool_id  = range->pool->heap->hdr.object_id;
        data.offset   = range->heap_off;
        data.size     = range->size;
        data.heap_len = range->heap_len;
        memcpy(shareData_out, &data, sizeof(data));
    }
    sim_leave();
    return status;
}

CUresult cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool,
                                CUmemPoolPtrExportData *shareData)
{
    CUresult status = sim_enter();
    sim_pool_ptr_data_t data;
    sim_range_t *range;
    uintptr_t base;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((ptr_out == NULL) || (shareData == NULL) || !sim_pool_valid(pool) ||
        !pool->imported || pool->destroyed) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    memcpy(&data, shareData, sizeof(data));
    if ((data.magic != SIM_IPC_MAGIC_POOLPTR) ||
        (data.pool_id != pool->heap->hdr.object_id) || (data.size == 0) ||
        (data.offset + data.heap_len > pool->heap->capacity)) {
        status = CUDA_ERROR_INVALID_VALUE;
        goto out;
    }
    base  = (uintptr_t)pool->heap->user + data.offset;
    range = sim_range_find(base);
    if ((range != NULL) && (range->kind == SIM_MEM_POOL_IMPORT) &&
        (range->base == base)) {
        ++range->import_refs;
        *ptr_out = base;
        goto out;
    }
    range = sim_range_new(SIM_MEM_POOL_IMPORT, base, data.size, pool->device);
    if ((range == NULL) || (sim_range_insert(range) != 0)) {
        free(range);
        status = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    range->pool        = pool;
    range->heap        = pool->heap;
    range->heap_off    = data.offset;
    range->heap_len    = data.heap_len;
    range->shadow      = pool->heap->shadow + data.offset;
    range->cpu_visible = pool->heap->cpu_visible;
    range->import_refs = 1;
    ++pool->live;
    *ptr_out = base;
out:
    sim_leave();
    return status;
}
