#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_cuda_fns.h"
#include "perf_memory.h"

#include <stdlib.h>
#include <string.h>

/*
 * The CUDA memory kinds of ucx_perftest, one allocator each. Kinds that
 * have a runtime call allocate through cudart (so the memory hooks see them
 * as they see an application's), or through the driver where cudart cannot
 * run (the CI driver model, --cuda-api driver). The VMM kinds have no
 * runtime form and always use the driver; so does pool creation, which
 * allocates nothing (a cudaMemPool_t is a CUmemoryPool).
 */

#define PERF_MEM_CUDA_MAX_CHUNKS 4 /* cuda-vmm-chunked: physical allocations */

/** What one CUDA buffer holds besides its address. */
typedef struct perf_mem_cuda_priv {
    CUmemoryPool                 pool;     /* cuda-pool*: the buffer's own pool */
    size_t                       reserved; /* VMM: the VA range */
    size_t                       chunk;    /* VMM: bytes per physical allocation */
    unsigned                     nchunks;
    CUmemGenericAllocationHandle handles[PERF_MEM_CUDA_MAX_CHUNKS];
} perf_mem_cuda_priv_t;

/* Report a failed CUDA call (the caller only says "cannot allocate"). */
static ucs_status_t perf_mem_cu_check(const char *call, CUresult res)
{
    if (res == CUDA_SUCCESS) {
        return UCS_OK;
    }
    perf_print_error("%s failed: %s", call, perf_cuda_error(res));
    return UCS_ERR_NO_MEMORY;
}

static ucs_status_t perf_mem_rt_check(const char *call, cudaError_t err)
{
    if (err == cudaSuccess) {
        return UCS_OK;
    }
    perf_print_error("%s failed: %s", call, perf_cudart.cudaGetErrorString(err));
    return UCS_ERR_NO_MEMORY;
}

static ucs_status_t perf_mem_cuda_begin(perf_mem_buf_t *buf)
{
    char error[PERF_ERROR_MAX];

    if (perf_cuda_set_device(buf->device, error, sizeof(error)) != UCS_OK) {
        perf_print_error("%s", error);
        return UCS_ERR_NO_DEVICE;
    }
    return UCS_OK;
}

static ucs_status_t perf_mem_cuda_write(perf_mem_buf_t *buf, size_t offset,
                                        const void *src, size_t length)
{
    return perf_cuda_copy_to_device(buf->device, (char*)buf->ptr + offset, src, length);
}

static ucs_status_t perf_mem_cuda_read(const perf_mem_buf_t *buf, size_t offset,
                                       void *dst, size_t length)
{
    return perf_cuda_copy_from_device(buf->device, dst, (const char*)buf->ptr + offset,
                                      length);
}

/* ---- cuda, cuda-managed: cudaMalloc(Managed) / cuMemAlloc(Managed) ------ */

static ucs_status_t perf_mem_cuda_alloc_common(size_t length, perf_mem_buf_t *buf,
                                               int managed)
{
    CUdeviceptr dptr = 0;
    CUresult res;

    if (perf_mem_cuda_begin(buf) != UCS_OK) {
        return UCS_ERR_NO_DEVICE;
    }
    if (perf_cuda_use_runtime()) {
        return managed ?
               perf_mem_rt_check("cudaMallocManaged",
                                 perf_cudart.cudaMallocManaged(&buf->ptr, length,
                                                               cudaMemAttachGlobal)) :
               perf_mem_rt_check("cudaMalloc", perf_cudart.cudaMalloc(&buf->ptr, length));
    }
    res = managed ? perf_cu.cuMemAllocManaged(&dptr, length, CU_MEM_ATTACH_GLOBAL) :
                    perf_cu.cuMemAlloc(&dptr, length);
    buf->ptr = (void*)dptr;
    return perf_mem_cu_check(managed ? "cuMemAllocManaged" : "cuMemAlloc", res);
}

static ucs_status_t perf_mem_cuda_legacy_alloc(size_t length, perf_mem_buf_t *buf)
{
    return perf_mem_cuda_alloc_common(length, buf, 0);
}

static ucs_status_t perf_mem_cuda_managed_alloc(size_t length, perf_mem_buf_t *buf)
{
    return perf_mem_cuda_alloc_common(length, buf, 1);
}

static void perf_mem_cuda_legacy_free(perf_mem_buf_t *buf)
{
    if (perf_mem_cuda_begin(buf) != UCS_OK) {
        return;
    }
    if (perf_cuda_use_runtime()) {
        perf_cudart.cudaFree(buf->ptr);
    } else {
        perf_cu.cuMemFree((CUdeviceptr)buf->ptr);
    }
}

/* ---- cuda-async, cuda-pool, cuda-pool-noipc: stream-ordered ------------- */

/*
 * From @a pool, or from the device's default pool when it is NULL.
 * Synchronized at once: the transports use the memory from their own
 * streams, which the allocation's stream order does not cover.
 */
static ucs_status_t perf_mem_cuda_alloc_ordered(size_t length, CUmemoryPool pool,
                                                perf_mem_buf_t *buf)
{
    CUdeviceptr dptr = 0;
    cudaError_t err;
    CUresult res;

    if (perf_cuda_use_runtime()) {
        err = (pool == NULL) ?
              perf_cudart.cudaMallocAsync(&buf->ptr, length, 0) :
              perf_cudart.cudaMallocFromPoolAsync(&buf->ptr, length, pool, 0);
        err = (err == cudaSuccess) ? perf_cudart.cudaStreamSynchronize(0) : err;
        return perf_mem_rt_check((pool == NULL) ? "cudaMallocAsync" :
                                                  "cudaMallocFromPoolAsync", err);
    }
    res = (pool == NULL) ? perf_cu.cuMemAllocAsync(&dptr, length, NULL) :
                           perf_cu.cuMemAllocFromPoolAsync(&dptr, length, pool, NULL);
    res = (res == CUDA_SUCCESS) ? perf_cu.cuStreamSynchronize(NULL) : res;
    buf->ptr = (void*)dptr;
    return perf_mem_cu_check((pool == NULL) ? "cuMemAllocAsync" :
                                              "cuMemAllocFromPoolAsync", res);
}

static ucs_status_t perf_mem_cuda_async_alloc(size_t length, perf_mem_buf_t *buf)
{
    if (perf_mem_cuda_begin(buf) != UCS_OK) {
        return UCS_ERR_NO_DEVICE;
    }
    return perf_mem_cuda_alloc_ordered(length, NULL, buf);
}

static void perf_mem_cuda_async_free(perf_mem_buf_t *buf)
{
    perf_mem_cuda_priv_t *priv = buf->priv;

    if (perf_mem_cuda_begin(buf) != UCS_OK) {
        return;
    }
    if (perf_cuda_use_runtime()) {
        perf_cudart.cudaFreeAsync(buf->ptr, 0);
        perf_cudart.cudaStreamSynchronize(0);
    } else {
        perf_cu.cuMemFreeAsync((CUdeviceptr)buf->ptr, NULL);
        perf_cu.cuStreamSynchronize(NULL);
    }
    if (priv != NULL) {
        perf_cu.cuMemPoolDestroy(priv->pool);
    }
    free(priv);
}

/* An explicit pool per buffer, with or without a shareable handle type. */
static ucs_status_t perf_mem_cuda_pool_alloc_common(size_t length, perf_mem_buf_t *buf,
                                                    int exportable)
{
    perf_mem_cuda_priv_t *priv;
    CUmemPoolProps props;
    ucs_status_t status;

    if (perf_mem_cuda_begin(buf) != UCS_OK) {
        return UCS_ERR_NO_DEVICE;
    }
    priv = calloc(1, sizeof(*priv));
    if (priv == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memset(&props, 0, sizeof(props));
    props.allocType     = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes   = exportable ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR :
                                       CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id   = buf->device;
    status = perf_mem_cu_check("cuMemPoolCreate",
                               perf_cu.cuMemPoolCreate(&priv->pool, &props));
    if (status != UCS_OK) {
        free(priv);
        return status;
    }
    status = perf_mem_cuda_alloc_ordered(length, priv->pool, buf);
    if (status != UCS_OK) {
        perf_cu.cuMemPoolDestroy(priv->pool);
        free(priv);
        return status;
    }
    buf->priv = priv;
    return UCS_OK;
}

static ucs_status_t perf_mem_cuda_pool_alloc(size_t length, perf_mem_buf_t *buf)
{
    return perf_mem_cuda_pool_alloc_common(length, buf, 1);
}

static ucs_status_t perf_mem_cuda_pool_noipc_alloc(size_t length, perf_mem_buf_t *buf)
{
    return perf_mem_cuda_pool_alloc_common(length, buf, 0);
}

/* ---- cuda-vmm, cuda-vmm-noipc, cuda-vmm-chunked: cuMemCreate ------------ */

static void perf_mem_cuda_vmm_release(perf_mem_cuda_priv_t *priv, CUdeviceptr base,
                                      unsigned mapped)
{
    unsigned i;

    for (i = 0; i < mapped; ++i) {
        perf_cu.cuMemUnmap(base + i * priv->chunk, priv->chunk);
    }
    for (i = 0; i < priv->nchunks; ++i) {
        perf_cu.cuMemRelease(priv->handles[i]);
    }
    if (base != 0) {
        perf_cu.cuMemAddressFree(base, priv->reserved);
    }
    free(priv);
}

static ucs_status_t perf_mem_cuda_vmm_alloc_common(size_t length, perf_mem_buf_t *buf,
                                                   int exportable, unsigned max_chunks)
{
    CUmemAllocationProp prop;
    perf_mem_cuda_priv_t *priv;
    CUmemAccessDesc access;
    CUdeviceptr base = 0;
    size_t gran, per_chunk;
    unsigned i, mapped = 0, wanted;
    const char *what;
    CUresult res;

    if (perf_mem_cuda_begin(buf) != UCS_OK) {
        return UCS_ERR_NO_DEVICE;
    }
    priv = calloc(1, sizeof(*priv));
    if (priv == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    memset(&prop, 0, sizeof(prop));
    prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id          = buf->device;
    prop.requestedHandleTypes = exportable ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR :
                                             CU_MEM_HANDLE_TYPE_NONE;
    what = "cuMemGetAllocationGranularity";
    res  = perf_cu.cuMemGetAllocationGranularity(&gran, &prop,
                                                     CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (res != CUDA_SUCCESS) {
        goto err;
    }

    /* Chunked: at least two physical allocations even for a small message,
     * so that every size crosses a chunk boundary the transport must see. */
    wanted = 1;
    if (max_chunks > 1) {
        wanted = (unsigned)((length + gran - 1) / gran);
        wanted = (wanted < 2) ? 2 : (wanted > max_chunks) ? max_chunks : wanted;
    }
    per_chunk      = (length + wanted - 1) / wanted;
    priv->chunk    = (per_chunk + gran - 1) / gran * gran;
    priv->reserved = priv->chunk * wanted;

    what = "cuMemAddressReserve";
    res  = perf_cu.cuMemAddressReserve(&base, priv->reserved, gran, 0, 0);
    if (res != CUDA_SUCCESS) {
        base = 0;
        goto err;
    }
    for (i = 0; i < wanted; ++i) {
        what = "cuMemCreate";
        res  = perf_cu.cuMemCreate(&priv->handles[i], priv->chunk, &prop, 0);
        if (res != CUDA_SUCCESS) {
            goto err;
        }
        ++priv->nchunks;
        what = "cuMemMap";
        res  = perf_cu.cuMemMap(base + i * priv->chunk, priv->chunk, 0,
                                    priv->handles[i], 0);
        if (res != CUDA_SUCCESS) {
            goto err;
        }
        ++mapped;
    }
    memset(&access, 0, sizeof(access));
    access.location = prop.location;
    access.flags    = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    what = "cuMemSetAccess";
    res  = perf_cu.cuMemSetAccess(base, priv->reserved, &access, 1);
    if (res != CUDA_SUCCESS) {
        goto err;
    }
    buf->ptr  = (void*)base;
    buf->priv = priv;
    return UCS_OK;

err:
    perf_mem_cuda_vmm_release(priv, base, mapped);
    return perf_mem_cu_check(what, res);
}

static ucs_status_t perf_mem_cuda_vmm_alloc(size_t length, perf_mem_buf_t *buf)
{
    return perf_mem_cuda_vmm_alloc_common(length, buf, 1, 1);
}

static ucs_status_t perf_mem_cuda_vmm_noipc_alloc(size_t length, perf_mem_buf_t *buf)
{
    return perf_mem_cuda_vmm_alloc_common(length, buf, 0, 1);
}

static ucs_status_t perf_mem_cuda_vmm_chunked_alloc(size_t length, perf_mem_buf_t *buf)
{
    return perf_mem_cuda_vmm_alloc_common(length, buf, 1, PERF_MEM_CUDA_MAX_CHUNKS);
}

static void perf_mem_cuda_vmm_free(perf_mem_buf_t *buf)
{
    perf_mem_cuda_priv_t *priv = buf->priv;

    if (perf_mem_cuda_begin(buf) == UCS_OK) {
        perf_mem_cuda_vmm_release(priv, (CUdeviceptr)buf->ptr, priv->nchunks);
    }
}

/* ---- the table ----------------------------------------------------------- */

#define PERF_MEM_CUDA_KIND(_name, _desc, _type, _cpu, _alloc, _free, _write, _read) \
    { .name = (_name), .description = (_desc), .mem_type = (_type), \
      .cpu_access = (_cpu), .unavailable = perf_cuda_unavailable, \
      .alloc = (_alloc), .free = (_free), .write = (_write), .read = (_read) }

static const perf_mem_kind_t perf_mem_cuda_kinds[] = {
    PERF_MEM_CUDA_KIND("cuda", "NVIDIA device memory (cudaMalloc)",
                       UCS_MEMORY_TYPE_CUDA, 0, perf_mem_cuda_legacy_alloc,
                       perf_mem_cuda_legacy_free, perf_mem_cuda_write, perf_mem_cuda_read),
    PERF_MEM_CUDA_KIND("cuda-managed", "NVIDIA managed memory (cudaMallocManaged)",
                       UCS_MEMORY_TYPE_CUDA_MANAGED, 1, perf_mem_cuda_managed_alloc,
                       perf_mem_cuda_legacy_free, perf_mem_host_write,
                       perf_mem_host_read),
    PERF_MEM_CUDA_KIND("cuda-async", "cudaMallocAsync on the default pool",
                       UCS_MEMORY_TYPE_CUDA, 0, perf_mem_cuda_async_alloc,
                       perf_mem_cuda_async_free, perf_mem_cuda_write, perf_mem_cuda_read),
    PERF_MEM_CUDA_KIND("cuda-pool", "explicit pool with POSIX-fd handles",
                       UCS_MEMORY_TYPE_CUDA, 0, perf_mem_cuda_pool_alloc,
                       perf_mem_cuda_async_free, perf_mem_cuda_write, perf_mem_cuda_read),
    PERF_MEM_CUDA_KIND("cuda-pool-noipc", "explicit pool without handle types",
                       UCS_MEMORY_TYPE_CUDA, 0, perf_mem_cuda_pool_noipc_alloc,
                       perf_mem_cuda_async_free, perf_mem_cuda_write, perf_mem_cuda_read),
    PERF_MEM_CUDA_KIND("cuda-vmm", "cuMemCreate with a POSIX-fd handle",
                       UCS_MEMORY_TYPE_CUDA, 0, perf_mem_cuda_vmm_alloc,
                       perf_mem_cuda_vmm_free, perf_mem_cuda_write, perf_mem_cuda_read),
    PERF_MEM_CUDA_KIND("cuda-vmm-noipc", "cuMemCreate without a shareable handle",
                       UCS_MEMORY_TYPE_CUDA, 0, perf_mem_cuda_vmm_noipc_alloc,
                       perf_mem_cuda_vmm_free, perf_mem_cuda_write, perf_mem_cuda_read),
    PERF_MEM_CUDA_KIND("cuda-vmm-chunked", "one VA range over several cuMemCreate chunks",
                       UCS_MEMORY_TYPE_CUDA, 0, perf_mem_cuda_vmm_chunked_alloc,
                       perf_mem_cuda_vmm_free, perf_mem_cuda_write, perf_mem_cuda_read),
};

void perf_mem_cuda_register(void)
{
    size_t i;

    for (i = 0; i < sizeof(perf_mem_cuda_kinds) / sizeof(perf_mem_cuda_kinds[0]); ++i) {
        (void)perf_mem_kind_register(&perf_mem_cuda_kinds[i]);
    }
}
