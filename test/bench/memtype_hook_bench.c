#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * What the CUDA hooks and the memory-type cache add to the application's
 * allocations (issue 4: < 1 us per cuMemAllocAsync + cuMemFreeAsync pair),
 * measured in one process, so that both sides see the same driver, GPU and
 * machine state: rounds alternate between no hooks at all and bistro hooks
 * feeding the attached global cache (UCX_MEM_CUDA_HOOK_MODE switched with
 * ucm_event_reinstall). Also the cost of a cache hit on device memory and
 * of the driver query that answers every lookup when the cache is disabled
 * (reloc or none mode, or no hooks).
 *
 *   memtype_hook_bench [-n pairs-per-round] [-r rounds]
 *
 * Wall-clock nanoseconds; each pair allocates 64 KiB on a non-blocking
 * stream and frees it on the same stream, synchronised once per round.
 * Meant for the real driver (contrib/gpu-run.sh); on the model it runs,
 * but measures the model.
 */

#include <ucm/event/event.h>
#include <ucm/ucm_memtype.h>
#include <ucs/memory/memtype_cache.h>

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_PAIR_SIZE  (64ul * 1024)
#define BENCH_MAX_ROUNDS 64

static double bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

static double bench_median(double *v, int n)
{
    qsort(v, n, sizeof(*v), bench_cmp_double);
    return (n % 2) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Nanoseconds per cuMemAllocAsync + cuMemFreeAsync pair. */
static double bench_pairs(CUstream stream, int count)
{
    CUdeviceptr ptr;
    double start;
    int i;

    start = bench_now_ns();
    for (i = 0; i < count; ++i) {
        if ((cuMemAllocAsync(&ptr, BENCH_PAIR_SIZE, stream) != CUDA_SUCCESS) ||
            (cuMemFreeAsync(ptr, stream) != CUDA_SUCCESS)) {
            fprintf(stderr, "cuMemAllocAsync/cuMemFreeAsync failed\n");
            exit(1);
        }
    }
    cuStreamSynchronize(stream);
    return (bench_now_ns() - start) / count;
}

/* Install the hooks in @a mode, or remove them ("none"). */
static void bench_hooks(const char *mode)
{
    setenv("UCX_MEM_CUDA_HOOK_MODE", mode, 1);
    ucm_event_reinstall(); /* UNSUPPORTED in "none": that is the point */
}

/* Nanoseconds per lookup of [ptr, +len), @a count times. */
static double bench_lookups(ucs_memtype_cache_t *cache, const void *ptr,
                            size_t len, int count)
{
    ucs_memtype_info_t info;
    volatile int sink = 0;
    double start;
    int i;

    start = bench_now_ns();
    for (i = 0; i < count; ++i) {
        ucs_memtype_cache_lookup(cache, ptr, len, &info);
        sink += info.mem_type;
    }
    (void)sink;
    return (bench_now_ns() - start) / count;
}

static int bench_is_model(void)
{
    return dlsym(RTLD_DEFAULT, "cudasim_model_info") != NULL;
}

int main(int argc, char **argv)
{
    double off[BENCH_MAX_ROUNDS], on[BENCH_MAX_ROUNDS];
    int count = 20000, rounds = 7, c, r, driver = 0;
    double off_med, on_med, hit, query_dev, query_host;
    ucs_memtype_cache_t *cache, *uncached;
    ucs_memtype_info_t info;
    static char host_buf[4096];
    CUcontext ctx;
    CUstream stream;
    CUdeviceptr ptr;
    uint64_t calls;
    char name[128];

    while ((c = getopt(argc, argv, "n:r:")) != -1) {
        switch (c) {
        case 'n':
            count = atoi(optarg);
            break;
        case 'r':
            rounds = atoi(optarg);
            break;
        default:
            fprintf(stderr, "usage: %s [-n pairs-per-round] [-r rounds]\n",
                    argv[0]);
            return 2;
        }
    }
    if ((count <= 0) || (rounds <= 0) || (rounds > BENCH_MAX_ROUNDS)) {
        fprintf(stderr, "bad -n or -r\n");
        return 2;
    }

    if ((cuInit(0) != CUDA_SUCCESS) ||
        (cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS) ||
        (cuCtxSetCurrent(ctx) != CUDA_SUCCESS) ||
        (cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)) {
        fprintf(stderr, "CUDA initialisation failed\n");
        return 1;
    }
    cuDeviceGetName(name, sizeof(name), 0);
    cuDriverGetVersion(&driver);
    printf("memtype_hook_bench: %s, driver API %d, %s; %d rounds of %d "
           "pairs of %lu KiB\n", name, driver,
           bench_is_model() ? "cudasim model" : "real driver", rounds, count,
           BENCH_PAIR_SIZE / 1024);

    /* The global cache, as the upper layers will attach it. */
    setenv("UCX_MEM_CUDA_HOOK_MODE", "bistro", 1);
    if ((ucs_memtype_cache_get_global(&cache) != UCS_OK) ||
        (ucm_memtype_cache_attach(cache) != UCS_OK) ||
        !ucs_memtype_cache_is_enabled(cache)) {
        fprintf(stderr, "attaching the memory-type cache failed\n");
        return 1;
    }

    /* The hooks do reach the cache: a pool allocation is a hit at once. */
    calls = ucm_memtype_resolver_count();
    cuMemAllocAsync(&ptr, BENCH_PAIR_SIZE, stream);
    if ((ucs_memtype_cache_lookup(cache, (void*)ptr, BENCH_PAIR_SIZE,
                                  &info) != UCS_OK) ||
        (info.alloc_kind != UCS_MEMTYPE_ALLOC_POOL) ||
        (ucm_memtype_resolver_count() != calls)) {
        fprintf(stderr, "the hooks did not type the allocation\n");
        return 1;
    }
    hit = bench_lookups(cache, (void*)ptr, BENCH_PAIR_SIZE, 1000000);
    cuMemFreeAsync(ptr, stream);

    /* Warm the pool up in both states, then alternate. */
    bench_hooks("none");
    bench_pairs(stream, 2000);
    bench_hooks("bistro");
    bench_pairs(stream, 2000);
    for (r = 0; r < rounds; ++r) {
        bench_hooks("none");
        off[r] = bench_pairs(stream, count);
        bench_hooks("bistro");
        on[r] = bench_pairs(stream, count);
        printf("  round %d: no hooks %7.0f ns, hooks + cache %7.0f ns, "
               "added %+6.0f ns\n", r, off[r], on[r], on[r] - off[r]);
    }
    off_med = bench_median(off, rounds);
    on_med  = bench_median(on, rounds);
    printf("pair cuMemAllocAsync+cuMemFreeAsync (median): no hooks %.0f ns, "
           "hooks + cache %.0f ns, added %+.0f ns (target < 1000 ns)\n",
           off_med, on_med, on_med - off_med);
    printf("lookup hit on a device buffer (remembered): %.1f ns\n", hit);

    /* A disabled cache: every lookup is one driver query. */
    setenv("UCX_MEMTYPE_CACHE", "n", 1);
    if ((ucs_memtype_cache_create("bench-uncached", &uncached) != UCS_OK) ||
        (ucm_memtype_cache_attach(uncached) != UCS_OK)) {
        fprintf(stderr, "creating an uncached cache failed\n");
        return 1;
    }
    unsetenv("UCX_MEMTYPE_CACHE");
    cuMemAllocAsync(&ptr, BENCH_PAIR_SIZE, stream);
    cuStreamSynchronize(stream);
    query_dev  = bench_lookups(uncached, (void*)ptr, 64, 20000);
    query_host = bench_lookups(uncached, host_buf, 64, 20000);
    printf("lookup with caching disabled (one driver query each): device "
           "pool memory %.0f ns, host memory %.0f ns\n", query_dev,
           query_host);
    cuMemFreeAsync(ptr, stream);
    cuStreamSynchronize(stream);

    ucm_memtype_cache_detach(uncached);
    ucs_memtype_cache_destroy(uncached);
    ucm_memtype_cache_detach(cache);
    cuStreamDestroy(stream);
    return 0;
}
