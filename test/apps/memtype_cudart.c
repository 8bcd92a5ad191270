#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * memtype_cudart: does memory allocated through the CUDA runtime reach the
 * memory-type cache? cudart finds the driver's functions with
 * cuGetProcAddress (and a statically linked cudart has no PLT entry for
 * them at all), so only the bistro hooks see its calls; in reloc and none
 * modes the cache must be disabled and the driver queried instead
 * (docs/memtype-cache.md, "Integration").
 *
 * Built twice (test/apps/Makefile.am): linked with libcudart.so and with
 * libcudart_static.a. Needs a GPU (cudart does not run on the driver
 * model); contrib/gpu-run.sh runs both builds in each hook mode.
 *
 * usage: memtype_cudart        (UCX_MEM_CUDA_HOOK_MODE picks the mode)
 * Prints one PASS/FAIL line per check and a summary; exit status 1 if any
 * check failed.
 */

#include <ucm/ucm_memtype.h>
#include <ucs/memory/memtype_cache.h>

#include <cuda_runtime_api.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MEMTYPE_CUDART_LINKAGE
#  define MEMTYPE_CUDART_LINKAGE "shared"
#endif

#define MEMTYPE_SIZE (4ul << 20)

static unsigned passed, failed;

typedef struct {
    ucs_memory_type_t        mem_type;
    int                      device;
    ucs_memtype_alloc_kind_t kind;
    uint32_t                 handle_types;
    void                     *pool;
} expected_t;

static void report(int ok, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void report(int ok, const char *what, const char *fmt, ...)
{
    va_list ap;

    printf("%s %s: ", ok ? "PASS" : "FAIL", what);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    if (ok) {
        ++passed;
    } else {
        ++failed;
    }
}

static const char *kind_name(ucs_memtype_alloc_kind_t kind)
{
    return ((unsigned)kind < UCS_MEMTYPE_ALLOC_LAST) ?
           ucs_memtype_alloc_kind_names[kind] : "?";
}

/* The line of /proc/self/maps holding @a ptr: shows whether CUDA memory
 * the CPU can touch is a mapping of its own (docs/memtype-cache.md). */
static void print_mapping(const char *what, const void *ptr)
{
    unsigned long start, end;
    char line[512];
    FILE *maps;

    maps = fopen("/proc/self/maps", "r");
    if (maps == NULL) {
        return;
    }
    while (fgets(line, sizeof(line), maps) != NULL) {
        if ((sscanf(line, "%lx-%lx", &start, &end) == 2) &&
            ((uintptr_t)ptr >= start) && ((uintptr_t)ptr < end)) {
            printf("MAPS %s: %s", what, line);
            break;
        }
    }
    fclose(maps);
}

/*
 * Look up [ptr, +size) twice. With events (@a events_expected) neither
 * lookup may need a driver query; @a queries_allowed is how many the first
 * may need (1 for memory allocated before attach).
 */
static void check(ucs_memtype_cache_t *cache, const char *what, void *ptr,
                  size_t size, const expected_t *exp, int cached,
                  unsigned queries_allowed)
{
    uint64_t before = ucm_memtype_resolver_count();
    ucs_memtype_info_t info;
    ucs_status_t status;
    uint64_t queries;
    int ok;

    status  = ucs_memtype_cache_lookup(cache, ptr, size, &info);
    queries = ucm_memtype_resolver_count() - before;
    ok      = (status == UCS_OK) && (info.mem_type == exp->mem_type) &&
              (info.device == exp->device) && (info.alloc_kind == exp->kind) &&
              (info.handle_types == exp->handle_types) &&
              (info.pool == exp->pool) && (info.region_start == ptr) &&
              (info.region_length == size);
    report(ok, what, "%s, %s dev %d kind %s handles 0x%x pool %p region "
           "[%p, +%zu) (expected %s dev %d kind %s handles 0x%x pool %p "
           "region [%p, +%zu))", ucs_status_string(status),
           ucs_memory_type_names[info.mem_type], info.device,
           kind_name(info.alloc_kind), info.handle_types, info.pool,
           info.region_start, info.region_length,
           ucs_memory_type_names[exp->mem_type], exp->device,
           kind_name(exp->kind), exp->handle_types, exp->pool, ptr, size);

    if (cached) {
        report(queries <= queries_allowed, what,
               "%lu driver queries on the first lookup (at most %u: %s)",
               (unsigned long)queries, queries_allowed,
               (queries_allowed == 0) ? "the hooks must have seen it" :
                                        "allocated before attach");
        before = ucm_memtype_resolver_count();
        status = ucs_memtype_cache_lookup(cache, (char*)ptr + size / 2, 1,
                                          &info);
        queries = ucm_memtype_resolver_count() - before;
        report((status == UCS_OK) && (queries == 0) &&
               (info.mem_type == exp->mem_type), what,
               "second lookup a hit (%lu queries)", (unsigned long)queries);
    }
}

/* After the free: non-pool memory is no CUDA memory any more (freed pool
 * memory may still belong to its pool; the kind is printed, not checked:
 * whether freed pinned memory stays pinned is the driver's business). */
static void check_freed(ucs_memtype_cache_t *cache, const char *what,
                        void *ptr, int pool)
{
    ucs_memtype_info_t info;
    ucs_status_t status;

    status = ucs_memtype_cache_lookup(cache, ptr, 1, &info);
    if (pool) {
        printf("INFO %s after free: %s %s kind %s\n", what,
               ucs_status_string(status), ucs_memory_type_names[info.mem_type],
               kind_name(info.alloc_kind));
        return;
    }
    report((status == UCS_OK) && (info.mem_type == UCS_MEMORY_TYPE_HOST),
           what,
           "after free: %s %s kind %s", ucs_status_string(status),
           ucs_memory_type_names[info.mem_type], kind_name(info.alloc_kind));
}

#define CUDART_CHECK(_call) \
    do { \
        cudaError_t _err = (_call); \
        if (_err != cudaSuccess) { \
            report(0, #_call, "%s", cudaGetErrorString(_err)); \
            goto out; \
        } \
    } while (0)

int main(void)
{
    const char *mode = getenv("UCX_MEM_CUDA_HOOK_MODE");
    void *early = NULL, *dev = NULL, *async = NULL, *from_pool = NULL;
    void *managed = NULL, *host = NULL;
    cudaMemPool_t default_pool, export_pool = NULL;
    struct cudaMemPoolProps props;
    ucs_memtype_cache_t *cache;
    cudaStream_t stream = NULL;
    ucs_status_t status;
    expected_t exp;
    int cached;

    if (mode == NULL) {
        mode = "bistro";
    }
    printf("memtype_cudart: cudart %s, UCX_MEM_CUDA_HOOK_MODE=%s\n",
           MEMTYPE_CUDART_LINKAGE, mode);

    /* Memory allocated before the library attached: found by a query. */
    CUDART_CHECK(cudaSetDevice(0));
    CUDART_CHECK(cudaMalloc(&early, MEMTYPE_SIZE));

    status = ucs_memtype_cache_get_global(&cache);
    if (status == UCS_OK) {
        status = ucm_memtype_cache_attach(cache);
    }
    if (status != UCS_OK) {
        report(0, "attach", "%s", ucs_status_string(status));
        goto out;
    }
    cached = ucs_memtype_cache_is_enabled(cache);
    report(cached == !strcmp(mode, "bistro"), "cache mode",
           "caching %s in %s mode", cached ? "enabled" : "disabled", mode);

    exp = (expected_t){UCS_MEMORY_TYPE_CUDA, 0, UCS_MEMTYPE_ALLOC_LEGACY,
                       UCS_MEMTYPE_HANDLE_LEGACY_IPC, NULL};
    check(cache, "cudaMalloc before attach", early, MEMTYPE_SIZE, &exp,
          cached, 1);

    CUDART_CHECK(cudaMalloc(&dev, MEMTYPE_SIZE));
    check(cache, "cudaMalloc", dev, MEMTYPE_SIZE, &exp, cached, 0);

    CUDART_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDART_CHECK(cudaDeviceGetDefaultMemPool(&default_pool, 0));
    CUDART_CHECK(cudaMallocAsync(&async, MEMTYPE_SIZE, stream));
    exp = (expected_t){UCS_MEMORY_TYPE_CUDA, 0, UCS_MEMTYPE_ALLOC_POOL, 0,
                       (void*)default_pool};
    check(cache, "cudaMallocAsync", async, MEMTYPE_SIZE, &exp, cached, 0);

    memset(&props, 0, sizeof(props));
    props.allocType     = cudaMemAllocationTypePinned;
    props.handleTypes   = cudaMemHandleTypePosixFileDescriptor;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id   = 0;
    CUDART_CHECK(cudaMemPoolCreate(&export_pool, &props));
    CUDART_CHECK(cudaMallocFromPoolAsync(&from_pool, MEMTYPE_SIZE,
                                         export_pool, stream));
    exp = (expected_t){UCS_MEMORY_TYPE_CUDA, 0, UCS_MEMTYPE_ALLOC_POOL,
                       UCS_MEMTYPE_HANDLE_POSIX_FD, (void*)export_pool};
    check(cache, "cudaMallocFromPoolAsync (pool with POSIX fd handles)",
          from_pool, MEMTYPE_SIZE, &exp, cached, 0);

    CUDART_CHECK(cudaMallocManaged(&managed, MEMTYPE_SIZE,
                                   cudaMemAttachGlobal));
    exp = (expected_t){UCS_MEMORY_TYPE_CUDA_MANAGED, 0,
                       UCS_MEMTYPE_ALLOC_MANAGED, 0, NULL};
    check(cache, "cudaMallocManaged", managed, MEMTYPE_SIZE, &exp, cached, 0);
    print_mapping("cudaMallocManaged", managed);

    CUDART_CHECK(cudaMallocHost(&host, MEMTYPE_SIZE));
    exp = (expected_t){UCS_MEMORY_TYPE_HOST, -1,
                       UCS_MEMTYPE_ALLOC_HOST_PINNED, 0, NULL};
    check(cache, "cudaMallocHost", host, MEMTYPE_SIZE, &exp, cached, 0);
    print_mapping("cudaMallocHost", host);

    /* Frees. */
    CUDART_CHECK(cudaFree(early));
    check_freed(cache, "cudaFree (before attach)", early, 0);
    early = NULL;
    CUDART_CHECK(cudaFree(dev));
    check_freed(cache, "cudaFree", dev, 0);
    dev = NULL;
    CUDART_CHECK(cudaFreeAsync(async, stream));
    check_freed(cache, "cudaFreeAsync", async, 1);
    async = NULL;
    CUDART_CHECK(cudaFreeAsync(from_pool, stream));
    check_freed(cache, "cudaFreeAsync (pool)", from_pool, 1);
    from_pool = NULL;
    CUDART_CHECK(cudaFree(managed));
    check_freed(cache, "cudaFree (managed)", managed, 0);
    managed = NULL;
    CUDART_CHECK(cudaFreeHost(host));
    check_freed(cache, "cudaFreeHost", host, 0);
    host = NULL;
    CUDART_CHECK(cudaStreamSynchronize(stream));

out:
    /* After a failure: release what is left. */
    if (early != NULL) {
        cudaFree(early);
    }
    if (dev != NULL) {
        cudaFree(dev);
    }
    if (managed != NULL) {
        cudaFree(managed);
    }
    if (host != NULL) {
        cudaFreeHost(host);
    }
    if (stream != NULL) {
        if (async != NULL) {
            cudaFreeAsync(async, stream);
        }
        if (from_pool != NULL) {
            cudaFreeAsync(from_pool, stream);
        }
        cudaStreamSynchronize(stream);
        cudaStreamDestroy(stream);
    }
    if (export_pool != NULL) {
        cudaMemPoolDestroy(export_pool);
    }

    printf("memtype_cudart(%s, %s): %u passed, %u failed\n",
           MEMTYPE_CUDART_LINKAGE, mode, passed, failed);
    return (failed == 0) ? 0 : 1;
}
