#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * cudasim conformance program: the same scripted driver calls against the
 * model and against a real GPU; the transcripts must be identical
 * (h200.expected holds the real driver's).
 *
 * Two processes on device 0: the child exports, the parent imports (the
 * parent is the one that may pidfd_getfd from the other under the default
 * Yama ptrace policy). For every allocation kind the exporter allocates,
 * reports attributes, tries every export method; the importer receives
 * handles and file descriptors (SCM_RIGHTS and pidfd_getfd), imports, reads
 * the exporter's data, writes its own, and the exporter reads that back.
 *
 * Only the parent prints; the exporter sends its lines over the socket, so
 * the order is fixed. Lines carry verdicts only: CUresult names, attribute
 * values, sizes, "data ok" -- no addresses, timings or anything that depends
 * on the machine.
 */
#include "conformance.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

typedef enum {
    KIND_MEMALLOC,
    KIND_ASYNC_DEFAULT_POOL,
    KIND_POOL_POSIX_FD,
    KIND_POOL_NO_HANDLE,
    KIND_VMM_POSIX_FD,
    KIND_VMM_NO_HANDLE,
    KIND_VMM_TWO_CHUNKS,
    KIND_MANAGED,
    KIND_HOST_ALLOC,
    KIND_COUNT
} kind_t;

static const char *kind_names[KIND_COUNT] = {
    "cuMemAlloc",
    "cuMemAllocAsync default pool",
    "pool posix-fd",
    "pool no handle types",
    "vmm posix-fd",
    "vmm no handle type",
    "vmm 2 chunks posix-fd",
    "cuMemAllocManaged",
    "cuMemHostAlloc",
};

/** What the exporter hands over for one kind (fds travel separately). */
typedef struct {
    int                    has_legacy;
    CUipcMemHandle         legacy;
    int                    has_pool;     /* pool fd (SCM_RIGHTS) + ptr data */
    CUmemPoolPtrExportData ptr_data;
    int                    nchunks;      /* VMM chunk fds */
    int                    chunk_fd[2];  /* exporter's fd numbers (pidfd) */
    pid_t                  pid;
} export_pkg_t;

/* ---- data ---- */

unsigned char *hostbuf;

static void fill(unsigned char *buf, size_t len, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        buf[i] = (unsigned char)(i * 131 + seed + (i >> 12));
    }
}

static int check(const unsigned char *buf, size_t len, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        if (buf[i] != (unsigned char)(i * 131 + seed + (i >> 12))) {
            return 0;
        }
    }
    return 1;
}

static void write_pattern(const char *what, CUdeviceptr ptr, unsigned seed)
{
    CUresult r;

    fill(hostbuf, SIZE, seed);
    r = cuMemcpy(ptr, (CUdeviceptr)hostbuf, SIZE);
    if (r == CUDA_SUCCESS) {
        r = cuCtxSynchronize();
    }
    out("%s write: %s", what, res(r));
}

static void read_pattern(const char *what, CUdeviceptr ptr, unsigned seed)
{
    CUresult r;

    memset(hostbuf, 0, SIZE);
    r = cuMemcpy((CUdeviceptr)hostbuf, ptr, SIZE);
    if (r != CUDA_SUCCESS) {
        out("%s read: %s", what, res(r));
    } else {
        out("%s read: %s", what, check(hostbuf, SIZE, seed) ? "data ok" :
                                                               "DATA MISMATCH");
    }
}

/* ---- attributes ---- */

static CUmemoryPool default_pool, created_pool;

static const char *memtype_name(unsigned t)
{
    switch (t) {
    case CU_MEMORYTYPE_HOST:    return "HOST";
    case CU_MEMORYTYPE_DEVICE:  return "DEVICE";
    case CU_MEMORYTYPE_ARRAY:   return "ARRAY";
    case CU_MEMORYTYPE_UNIFIED: return "UNIFIED";
    default:                    return "0";
    }
}

static void report_int_attr(const char *name, CUpointer_attribute attr,
                            CUdeviceptr ptr, int hex)
{
    int value = 0;
    CUresult r = cuPointerGetAttribute(&value, attr, ptr);

    if (r != CUDA_SUCCESS) {
        out("attr %s: %s", name, res(r));
    } else {
        out(hex ? "attr %s: 0x%x" : "attr %s: %d", name, value);
    }
}

static void report_attributes(CUdeviceptr ptr, size_t size)
{
    unsigned memtype = 0;
    unsigned long long buffer_id = 0, handle_types = 0;
    CUdeviceptr start = 0, base = 0;
    size_t range_size = 0, mapping_size = 0;
    CUmemoryPool pool = NULL;
    CUresult r;

    r = cuPointerGetAttribute(&memtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr);
    out("attr memory type: %s", (r == CUDA_SUCCESS) ? memtype_name(memtype) :
                                                       res(r));
    report_int_attr("device ordinal", CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr,
                    0);
    report_int_attr("is managed", CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr, 0);
    report_int_attr("legacy ipc capable",
                    CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, ptr, 0);
    /* 8 bytes: the driver writes an unsigned long long here. */
    r = cuPointerGetAttribute(&handle_types,
                              CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, ptr);
    if (r != CUDA_SUCCESS) {
        out("attr allowed handle types: %s", res(r));
    } else {
        out("attr allowed handle types: 0x%llx", handle_types);
    }
    report_int_attr("sync memops", CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, ptr, 0);
    report_int_attr("gpu direct rdma capable",
                    CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, ptr, 0);

    r = cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, ptr);
    out("attr mempool: %s", (r != CUDA_SUCCESS) ? res(r) :
                            (pool == NULL) ? "none" :
                            (pool == default_pool) ? "device default pool" :
                            (pool == created_pool) ? "created pool" : "other");

    r = cuPointerGetAttribute(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, ptr);
    out("attr buffer id: %s", (r != CUDA_SUCCESS) ? res(r) :
                              (buffer_id != 0) ? "nonzero" : "0");

    r = cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                              ptr);
    if (r == CUDA_SUCCESS) {
        r = cuPointerGetAttribute(&range_size, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                  ptr);
    }
    if (r != CUDA_SUCCESS) {
        out("attr range: %s", res(r));
    } else {
        out("attr range: start %s, size %zu",
            (start == ptr) ? "= pointer" : "!= pointer", range_size);
    }

    r = cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
                              ptr);
    if (r == CUDA_SUCCESS) {
        r = cuPointerGetAttribute(&mapping_size,
                                  CU_POINTER_ATTRIBUTE_MAPPING_SIZE, ptr);
    }
    if (r != CUDA_SUCCESS) {
        out("attr mapping: %s", res(r));
    } else {
        out("attr mapping: base %s, size %zu",
            (base == ptr) ? "= pointer" : "!= pointer", mapping_size);
    }

    base = 0;
    range_size = 0;
    r = cuMemGetAddressRange(&base, &range_size, ptr);
    if (r != CUDA_SUCCESS) {
        out("cuMemGetAddressRange: %s", res(r));
    } else {
        out("cuMemGetAddressRange: %s, base %s, size %zu", res(r),
            (base == ptr) ? "= pointer" : "!= pointer", range_size);
    }
    (void)size;
}

/* ---- exporter: allocation kinds ---- */

typedef struct {
    kind_t                       kind;
    CUdeviceptr                  ptr;
    CUstream                     stream;
    CUmemoryPool                 pool;
    CUmemGenericAllocationHandle chunks[2];
    int                          nchunks;
    int                          fds[3];
    int                          nfds;
} alloc_t;

static CUresult vmm_alloc(alloc_t *a, CUmemAllocationHandleType types,
                          int nchunks)
{
    CUmemAllocationProp prop;
    CUmemAccessDesc access;
    size_t chunk = SIZE / (size_t)nchunks;
    CUresult r;
    int i;

    memset(&prop, 0, sizeof(prop));
    prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id          = 0;
    prop.requestedHandleTypes = types;
    for (i = 0; i < nchunks; ++i) {
        r = cuMemCreate(&a->chunks[i], chunk, &prop, 0);
        out("cuMemCreate %zu: %s", chunk, res(r));
        if (r != CUDA_SUCCESS) {
            return r;
        }
        a->nchunks = i + 1;
    }
    r = cuMemAddressReserve(&a->ptr, SIZE, 0, 0, 0);
    out("cuMemAddressReserve: %s", res(r));
    if (r != CUDA_SUCCESS) {
        return r;
    }
    for (i = 0; i < nchunks; ++i) {
        r = cuMemMap(a->ptr + (size_t)i * chunk, chunk, 0, a->chunks[i], 0);
        out("cuMemMap chunk %d: %s", i, res(r));
        if (r != CUDA_SUCCESS) {
            return r;
        }
    }
    memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id   = 0;
    access.flags         = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = cuMemSetAccess(a->ptr, SIZE, &access, 1);
    out("cuMemSetAccess: %s", res(r));
    return r;
}

static CUresult pool_alloc(alloc_t *a, CUmemAllocationHandleType types)
{
    CUmemPoolProps props;
    CUresult r;

    memset(&props, 0, sizeof(props));
    props.allocType     = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes   = types;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id   = 0;
    r = cuMemPoolCreate(&a->pool, &props);
    out("cuMemPoolCreate: %s", res(r));
    if (r != CUDA_SUCCESS) {
        return r;
    }
    created_pool = a->pool;
    r = cuMemAllocFromPoolAsync(&a->ptr, SIZE, a->pool, a->stream);
    out("cuMemAllocFromPoolAsync: %s", res(r));
    if (r == CUDA_SUCCESS) {
        r = cuStreamSynchronize(a->stream);
    }
    return r;
}

static CUresult do_alloc(alloc_t *a)
{
    void *host = NULL;
    CUresult r;

    switch (a->kind) {
    case KIND_MEMALLOC:
        r = cuMemAlloc(&a->ptr, SIZE);
        out("cuMemAlloc: %s", res(r));
        return r;
    case KIND_ASYNC_DEFAULT_POOL:
        r = cuMemAllocAsync(&a->ptr, SIZE, a->stream);
        out("cuMemAllocAsync: %s", res(r));
        return (r == CUDA_SUCCESS) ? cuStreamSynchronize(a->stream) : r;
    case KIND_POOL_POSIX_FD:
        return pool_alloc(a, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    case KIND_POOL_NO_HANDLE:
        return pool_alloc(a, CU_MEM_HANDLE_TYPE_NONE);
    case KIND_VMM_POSIX_FD:
        return vmm_alloc(a, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1);
    case KIND_VMM_NO_HANDLE:
        return vmm_alloc(a, CU_MEM_HANDLE_TYPE_NONE, 1);
    case KIND_VMM_TWO_CHUNKS:
        return vmm_alloc(a, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 2);
    case KIND_MANAGED:
        r = cuMemAllocManaged(&a->ptr, SIZE, CU_MEM_ATTACH_GLOBAL);
        out("cuMemAllocManaged: %s", res(r));
        return r;
    case KIND_HOST_ALLOC:
        r = cuMemHostAlloc(&host, SIZE, 0);
        out("cuMemHostAlloc: %s", res(r));
        a->ptr = (CUdeviceptr)host;
        return r;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static void do_free(alloc_t *a)
{
    CUresult r;
    int i;

    switch (a->kind) {
    case KIND_MEMALLOC:
    case KIND_MANAGED:
        out("cuMemFree: %s", res(cuMemFree(a->ptr)));
        break;
    case KIND_ASYNC_DEFAULT_POOL:
    case KIND_POOL_POSIX_FD:
    case KIND_POOL_NO_HANDLE:
        r = cuMemFreeAsync(a->ptr, a->stream);
        out("cuMemFreeAsync: %s", res(r));
        cuStreamSynchronize(a->stream);
        if (a->pool != NULL) {
            out("cuMemPoolDestroy: %s", res(cuMemPoolDestroy(a->pool)));
            created_pool = NULL;
        }
        break;
    case KIND_VMM_POSIX_FD:
    case KIND_VMM_NO_HANDLE:
    case KIND_VMM_TWO_CHUNKS:
        out("cuMemUnmap: %s", res(cuMemUnmap(a->ptr, SIZE)));
        for (i = 0; i < a->nchunks; ++i) {
            out("cuMemRelease chunk %d: %s", i, res(cuMemRelease(a->chunks[i])));
        }
        out("cuMemAddressFree: %s", res(cuMemAddressFree(a->ptr, SIZE)));
        break;
    case KIND_HOST_ALLOC:
        out("cuMemFreeHost: %s", res(cuMemFreeHost((void *)a->ptr)));
        break;
    default:
        break;
    }
    for (i = 0; i < a->nfds; ++i) {
        close(a->fds[i]);
    }
}

/* Try every export method on the allocation; fill the package. */
static void do_exports(alloc_t *a, export_pkg_t *pkg, int *pool_fd)
{
    CUmemGenericAllocationHandle h;
    CUmemoryPool pool = NULL;
    size_t chunk;
    CUresult r;
    int i, n, fd;

    r = cuIpcGetMemHandle(&pkg->legacy, a->ptr);
    out("export cuIpcGetMemHandle: %s", res(r));
    pkg->has_legacy = (r == CUDA_SUCCESS);

    r = cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
                              a->ptr);
    if ((r == CUDA_SUCCESS) && (pool != NULL)) {
        fd = -1;
        r  = cuMemPoolExportToShareableHandle(
                 &fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        out("export cuMemPoolExportToShareableHandle posix-fd: %s", res(r));
        if (r == CUDA_SUCCESS) {
            *pool_fd = fd;
            a->fds[a->nfds++] = fd;
        }
    }
    r = cuMemPoolExportPointer(&pkg->ptr_data, a->ptr);
    out("export cuMemPoolExportPointer: %s", res(r));
    pkg->has_pool = (r == CUDA_SUCCESS) && (*pool_fd >= 0);

    n     = (a->nchunks > 0) ? a->nchunks : 1;
    chunk = SIZE / (size_t)n;
    for (i = 0; i < n; ++i) {
        r = cuMemRetainAllocationHandle(&h, (void *)(a->ptr + (size_t)i * chunk));
        out("cuMemRetainAllocationHandle chunk %d: %s", i, res(r));
        if (r != CUDA_SUCCESS) {
            break;
        }
        fd = -1;
        r  = cuMemExportToShareableHandle(
                 &fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        out("export cuMemExportToShareableHandle posix-fd chunk %d: %s", i,
            res(r));
        cuMemRelease(h);
        if (r != CUDA_SUCCESS) {
            break;
        }
        pkg->chunk_fd[i]   = fd;
        a->fds[a->nfds++]  = fd;
        pkg->nchunks       = i + 1;
    }
    if (pkg->nchunks != n) {
        pkg->nchunks = 0;
    }
    if (!pkg->has_legacy && !pkg->has_pool && (pkg->nchunks == 0)) {
        out("not exportable: every export refused");
    }
}

/* After the package: an optional CHECK (the importer wrote its pattern),
 * then FREE (the importer has let go of everything). */
static void exporter_finish(alloc_t *a)
{
    uint32_t hdr[2];

    for (;;) {
        xread(hdr, sizeof(hdr));
        if ((hdr[0] == MSG_CHECK) && (hdr[1] == 0)) {
            read_pattern("exporter", a->ptr, 2);
            flush_text();
        } else if ((hdr[0] == MSG_FREE) && (hdr[1] == 0)) {
            break;
        } else {
            errno = EPROTO;
            die("exporter: unexpected message");
        }
    }
    if (a->ptr != 0) {
        do_free(a);
    }
    cuStreamDestroy(a->stream);
    flush_text();
}

static void exporter_kind(kind_t kind)
{
    export_pkg_t pkg;
    alloc_t a;
    int pool_fd = -1;

    memset(&a, 0, sizeof(a));
    memset(&pkg, 0, sizeof(pkg));
    a.kind = kind;
    tag    = kind_names[kind];
    cuStreamCreate(&a.stream, CU_STREAM_NON_BLOCKING);

    if (do_alloc(&a) != CUDA_SUCCESS) {
        a.ptr = 0;
        flush_text();
        send_msg(MSG_PKG, &pkg, sizeof(pkg));
        exporter_finish(&a);
        return;
    }
    report_attributes(a.ptr, SIZE);
    out("set sync memops: %s",
        res(cuPointerSetAttribute(&(int){1}, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                  a.ptr)));
    /* Issue 19: what a set reads back as, per kind (whether it also makes
     * copies synchronous is timing and measured by stale_send -D -S ptr). */
    report_int_attr("sync memops after set", CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                    a.ptr, 0);
    do_exports(&a, &pkg, &pool_fd);
    write_pattern("exporter", a.ptr, 1);
    flush_text();

    pkg.pid = getpid();
    send_msg(MSG_PKG, &pkg, sizeof(pkg));
    if (pkg.has_pool) {
        send_fd(pool_fd);
    }
    if (pkg.nchunks > 0) {
        /* chunk 0 by SCM_RIGHTS; the importer fetches the others (and chunk
         * 0 of a single-chunk allocation once more) with pidfd_getfd. */
        send_fd(pkg.chunk_fd[0]);
    }
    exporter_finish(&a);
}

/* ---- importer ---- */

static CUmemAccessDesc dev0_rw(void)
{
    CUmemAccessDesc access;

    memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id   = 0;
    access.flags         = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return access;
}

static void report_import_type(CUdeviceptr ptr, int handle_types)
{
    unsigned long long types = 0;
    unsigned memtype = 0;
    CUresult r = cuPointerGetAttribute(&memtype,
                                       CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr);

    out("import attr memory type: %s",
        (r == CUDA_SUCCESS) ? memtype_name(memtype) : res(r));
    if (!handle_types) {
        return;
    }

    /* An import is no exportable allocation of ours: the real driver says
     * 0 for pool and VMM imports (issue 24, item 2). */
    r = cuPointerGetAttribute(&types, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
                              ptr);
    if (r != CUDA_SUCCESS) {
        out("import attr allowed handle types: %s", res(r));
    } else {
        out("import attr allowed handle types: 0x%llx", types);
    }
}

/* Read the exporter's data, write ours, let the exporter check it. The
 * handle types are reported for pool and VMM imports. */
static void exchange_data(CUdeviceptr ptr, int handle_types)
{
    char cmd = 0;

    report_import_type(ptr, handle_types);
    read_pattern("import", ptr, 1);
    write_pattern("import", ptr, 2);
    send_msg(MSG_CHECK, &cmd, 0);
    print_peer_text();
}

static void import_legacy(const export_pkg_t *pkg)
{
    CUdeviceptr ptr = 0, ptr2 = 0;
    CUresult r;

    r = cuIpcOpenMemHandle(&ptr, pkg->legacy,
                           CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    out("import cuIpcOpenMemHandle: %s", res(r));
    if (r != CUDA_SUCCESS) {
        return;
    }
    r = cuIpcOpenMemHandle(&ptr2, pkg->legacy,
                           CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    out("import cuIpcOpenMemHandle again: %s, %s", res(r),
        (ptr2 == ptr) ? "same pointer" : "different pointer");
    exchange_data(ptr, 0);
    if (r == CUDA_SUCCESS) {
        out("import cuIpcCloseMemHandle: %s", res(cuIpcCloseMemHandle(ptr2)));
    }
    out("import cuIpcCloseMemHandle: %s", res(cuIpcCloseMemHandle(ptr)));
}

static void import_pool(export_pkg_t *pkg)
{
    CUmemAccessDesc access = dev0_rw();
    CUmemoryPool pool = NULL;
    CUdeviceptr ptr = 0;
    CUresult r;
    int fd;

    fd = recv_fd();
    out("transfer pool fd by SCM_RIGHTS: %s", (fd >= 0) ? "ok" : "failed");
    if (fd < 0) {
        return;
    }
    r = cuMemPoolImportFromShareableHandle(
            &pool, (void *)(uintptr_t)fd,
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    out("import cuMemPoolImportFromShareableHandle: %s", res(r));
    close(fd);
    if (r != CUDA_SUCCESS) {
        return;
    }
    out("import cuMemPoolSetAccess: %s",
        res(cuMemPoolSetAccess(pool, &access, 1)));
    r = cuMemPoolImportPointer(&ptr, pool, &pkg->ptr_data);
    out("import cuMemPoolImportPointer: %s", res(r));
    if (r == CUDA_SUCCESS) {
        exchange_data(ptr, 1);
        out("import cuMemFree: %s", res(cuMemFree(ptr)));
    }
    out("import cuMemPoolDestroy: %s", res(cuMemPoolDestroy(pool)));
}

/* Map imported chunks contiguously, exchange data, undo everything. */
static void import_vmm_map(CUmemGenericAllocationHandle *h, int n,
                           const char *how, int exchange)
{
    CUmemAccessDesc access = dev0_rw();
    size_t chunk = SIZE / (size_t)n;
    CUdeviceptr base = 0;
    CUresult r;
    int i, mapped = 0;

    r = cuMemAddressReserve(&base, SIZE, 0, 0, 0);
    out("import%s cuMemAddressReserve: %s", how, res(r));
    if (r != CUDA_SUCCESS) {
        return;
    }
    for (i = 0; i < n; ++i) {
        r = cuMemMap(base + (size_t)i * chunk, chunk, 0, h[i], 0);
        out("import%s cuMemMap chunk %d: %s", how, i, res(r));
        if (r != CUDA_SUCCESS) {
            break;
        }
        mapped = i + 1;
    }
    if (mapped == n) {
        r = cuMemSetAccess(base, SIZE, &access, 1);
        out("import%s cuMemSetAccess: %s", how, res(r));
        if (r == CUDA_SUCCESS) {
            if (exchange) {
                exchange_data(base, 1);
            } else {
                read_pattern("import", base, 2);
            }
        }
    }
    for (i = 0; i < mapped; ++i) {
        r = cuMemUnmap(base + (size_t)i * chunk, chunk);
        out("import%s cuMemUnmap chunk %d: %s", how, i, res(r));
    }
    out("import%s cuMemAddressFree: %s", how,
        res(cuMemAddressFree(base, SIZE)));
}

static CUresult import_vmm_fd(int fd, CUmemGenericAllocationHandle *h,
                              const char *how, int chunk)
{
    CUresult r;

    r = cuMemImportFromShareableHandle(h, (void *)(uintptr_t)fd,
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    out("import cuMemImportFromShareableHandle chunk %d (fd by %s): %s", chunk,
        how, res(r));
    close(fd);
    return r;
}

static void import_vmm(export_pkg_t *pkg)
{
    CUmemGenericAllocationHandle h[2], again;
    int fd, i, ok = 1;

    fd = recv_fd();
    out("transfer chunk 0 fd by SCM_RIGHTS: %s", (fd >= 0) ? "ok" : "failed");
    if ((fd < 0) || (import_vmm_fd(fd, &h[0], "SCM_RIGHTS", 0) != CUDA_SUCCESS)) {
        return;
    }
    for (i = 1; i < pkg->nchunks; ++i) {
        fd = pidfd_fetch(pkg->pid, pkg->chunk_fd[i]);
        out("transfer chunk %d fd by pidfd_getfd: %s", i,
            (fd >= 0) ? "ok" : "failed");
        if ((fd < 0) ||
            (import_vmm_fd(fd, &h[i], "pidfd_getfd", i) != CUDA_SUCCESS)) {
            ok = 0;
            break;
        }
    }
    if (ok) {
        import_vmm_map(h, pkg->nchunks, "", 1);
    }
    for (--i; i >= 0; --i) {
        out("import cuMemRelease chunk %d: %s", i, res(cuMemRelease(h[i])));
    }

    if (ok && (pkg->nchunks == 1)) {
        /* The same chunk once more, its fd taken with pidfd_getfd: sees the
         * data the first import wrote. */
        fd = pidfd_fetch(pkg->pid, pkg->chunk_fd[0]);
        out("transfer chunk 0 fd by pidfd_getfd: %s",
            (fd >= 0) ? "ok" : "failed");
        if ((fd >= 0) &&
            (import_vmm_fd(fd, &again, "pidfd_getfd", 0) == CUDA_SUCCESS)) {
            import_vmm_map(&again, 1, " (pidfd)", 0);
            out("import cuMemRelease chunk 0: %s", res(cuMemRelease(again)));
        }
    }
}

static void importer_kind(kind_t kind)
{
    export_pkg_t pkg;
    uint32_t k = kind;
    char cmd = 0;

    tag = kind_names[kind];
    send_msg(MSG_START, &k, sizeof(k));
    print_peer_text();
    recv_msg(MSG_PKG, &pkg, sizeof(pkg));
    if (pkg.has_legacy) {
        import_legacy(&pkg);
    } else if (pkg.has_pool) {
        import_pool(&pkg);
    } else if (pkg.nchunks > 0) {
        import_vmm(&pkg);
    }
    fflush(stdout);
    send_msg(MSG_FREE, &cmd, 0);
    print_peer_text();
}

/* ---- setup ---- */

static CUcontext init_driver(void)
{
    CUcontext ctx = NULL;
    CUresult r;

    r = cuInit(0);
    out("cuInit: %s", res(r));
    if (r == CUDA_SUCCESS) {
        r = cuDevicePrimaryCtxRetain(&ctx, 0);
        out("cuDevicePrimaryCtxRetain device 0: %s", res(r));
    }
    if (r == CUDA_SUCCESS) {
        r = cuCtxSetCurrent(ctx);
        out("cuCtxSetCurrent: %s", res(r));
    }
    if (r != CUDA_SUCCESS) {
        return NULL;
    }
    cuDeviceGetDefaultMemPool(&default_pool, 0);
    return ctx;
}

static int run_exporter(void)
{
    uint32_t k;

    is_exporter = 1;
    tag         = "exporter";
    init_driver();
    flush_text();
    for (;;) {
        uint32_t hdr[2];

        xread(hdr, sizeof(hdr));
        if (hdr[0] == MSG_QUIT) {
            break;
        }
        if ((hdr[0] != MSG_START) || (hdr[1] != sizeof(k))) {
            errno = EPROTO;
            die("exporter: unexpected message");
        }
        xread(&k, sizeof(k));
        exporter_kind((kind_t)k);
    }
    return 0;
}

static int run_importer(pid_t child)
{
    int status, k;

    tag = "importer";
    if (init_driver() == NULL) {
        send_msg(MSG_QUIT, NULL, 0);
        waitpid(child, &status, 0);
        return 1;
    }
    print_peer_text(); /* the exporter's init lines */
    tag = "device";
    report_device();
    report_local_facts();
    report_driver_facts();
    for (k = 0; k < KIND_COUNT; ++k) {
        importer_kind((kind_t)k);
        fflush(stdout);
    }
    send_msg(MSG_QUIT, NULL, 0);
    if ((waitpid(child, &status, 0) != child) || !WIFEXITED(status) ||
        (WEXITSTATUS(status) != 0)) {
        fprintf(stderr, "conformance: exporter process failed\n");
        return 1;
    }
    printf("# end\n");
    return 0;
}

int main(void)
{
    int fds[2];
    pid_t pid;

    setvbuf(stdout, NULL, _IOLBF, 0);
    hostbuf = malloc(SIZE);
    if (hostbuf == NULL) {
        die("malloc");
    }
    printf("# cudasim conformance transcript: allocation kinds on device 0, "
           "exporter and importer in two processes\n");
    fflush(stdout);
    /* The driver must not be initialised before fork: a child of an
     * initialised process cannot use CUDA. */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
        die("socketpair");
    }
    pid = fork();
    if (pid < 0) {
        die("fork");
    }
    if (pid == 0) {
        close(fds[0]);
        sock = fds[1];
        exit(run_exporter());
    }
    close(fds[1]);
    sock = fds[0];
    return run_importer(pid);
}
