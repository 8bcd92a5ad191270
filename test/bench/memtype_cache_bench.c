#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Memory-type cache benchmark: nanoseconds per lookup (and per update) with
 * N regions cached, from one thread and from two threads at once.
 *
 *   memtype_cache_bench [-s seconds-per-run] [-r n1,n2,...]
 *
 * Every cell is the best of 3 runs of the given length (default 0.3 s).
 *
 * Columns (ns of CPU time per call of the calling thread, lower is better;
 * thread CPU time rather than wall time, so that time slices taken by other
 * processes on a shared machine do not count; 2T = each of two threads
 * looking up at the same time, per call of one thread):
 *   same       the same buffer again and again (a send loop): the answer
 *              comes from the thread's remembered hits
 *   random     a random region each time: a search of the tree
 *   host       random addresses in a 64 MiB malloc'd buffer that the hooks
 *              never saw: answered by the cached host extent (the resolver
 *              was asked once)
 *   upd+rm     an update and a remove of one region (an alloc+free event
 *              pair), single thread
 *   same+upd   "same", while another thread does update+remove pairs on
 *              other regions nonstop (every update invalidates remembered
 *              hits, so this is the worst case for them)
 * and one line with the cost of a true miss on host memory (resolver call
 * plus reading /proc/self/maps), microseconds.
 */
#include <ucs/memory/memtype_cache.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define BENCH_BASE        0x7e0000000000ul /* fake device regions */
#define BENCH_STRIDE      (64ul * 1024)
#define BENCH_LENGTH      (32ul * 1024)
#define BENCH_ADDRS       (1u << 16)       /* precomputed random queries */
#define BENCH_HOST_SIZE   (64ul << 20)
#define BENCH_BATCH       4096             /* lookups between clock reads */
#define BENCH_NEW_MAPS    64

/* Each cell is measured this many times and the best kept: the machine
 * is shared, and time slices lost to other processes only add. */
#define BENCH_REPEAT      3
#define BENCH_BEST(_expr) \
    ({ \
        double _best = 1e30, _v; \
        int _r; \
        for (_r = 0; _r < BENCH_REPEAT; ++_r) { \
            _v    = (_expr); \
            _best = (_v < _best) ? _v : _best; \
        } \
        _best; \
    })

typedef enum {
    BENCH_SAME,
    BENCH_RANDOM,
    BENCH_HOST
} bench_pattern_t;

typedef struct {
    ucs_memtype_cache_t *cache;
    const uintptr_t     *addrs;      /* BENCH_ADDRS queries */
    double              seconds;
    pthread_barrier_t   *barrier;
    double              ns_per_op;   /* result */
} bench_thread_t;

static volatile long bench_sink;
static atomic_int    bench_stop;
static atomic_uint   bench_resolver_calls;


static double bench_clock(clockid_t clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double bench_now(void)
{
    return bench_clock(CLOCK_MONOTONIC);
}

/* CPU time of the calling thread: what the operations cost, without the
 * time slices other processes take on a shared machine. */
static double bench_cpu(void)
{
    return bench_clock(CLOCK_THREAD_CPUTIME_ID);
}

static uint64_t bench_rand(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* Stands in for the CUDA module: everything it is asked about is host
 * memory (the device regions are all known to the cache). */
static ucs_status_t bench_resolve(void *arg, const void *address,
                                  size_t length, ucs_memtype_info_t *info)
{
    atomic_fetch_add(&bench_resolver_calls, 1);
    info->mem_type   = UCS_MEMORY_TYPE_HOST;
    info->alloc_kind = UCS_MEMTYPE_ALLOC_HOST;
    return UCS_OK;
}

static ucs_memtype_info_t bench_info(unsigned i)
{
    ucs_memtype_info_t info;

    memset(&info, 0, sizeof(info));
    info.mem_type     = UCS_MEMORY_TYPE_CUDA;
    info.device       = (int)(i % 8);
    info.alloc_kind   = UCS_MEMTYPE_ALLOC_POOL;
    info.handle_types = UCS_MEMTYPE_HANDLE_POSIX_FD;
    info.alloc_base   = (void*)(BENCH_BASE + i * BENCH_STRIDE);
    info.alloc_length = BENCH_LENGTH;
    return info;
}

static void bench_check(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        fprintf(stderr, "%s failed: %s\n", what, ucs_status_string(status));
        exit(1);
    }
}

static void bench_fill_addrs(uintptr_t *addrs, bench_pattern_t pattern,
                             unsigned regions, uintptr_t host)
{
    uint64_t state = 88172645463325252ull;
    unsigned i;

    for (i = 0; i < BENCH_ADDRS; ++i) {
        switch (pattern) {
        case BENCH_SAME:
            addrs[i] = BENCH_BASE + 128;
            break;
        case BENCH_RANDOM:
            addrs[i] = BENCH_BASE +
                       (bench_rand(&state) % regions) * BENCH_STRIDE +
                       bench_rand(&state) % (BENCH_LENGTH - 256);
            break;
        case BENCH_HOST:
            addrs[i] = host + bench_rand(&state) % (BENCH_HOST_SIZE - 256);
            break;
        }
    }
}

/* Lookups of the precomputed queries until the time is up. */
static void *bench_lookup_thread(void *arg)
{
    bench_thread_t *t = arg;
    unsigned long ops = 0;
    ucs_memtype_info_t info;
    double start, deadline, now;
    unsigned i, idx = 0;
    long sink = 0;

    pthread_barrier_wait(t->barrier);
    deadline = bench_now() + t->seconds;
    start    = bench_cpu();
    do {
        for (i = 0; i < BENCH_BATCH; ++i) {
            ucs_memtype_cache_lookup(t->cache, (void*)t->addrs[idx], 256,
                                     &info);
            sink += info.device;
            idx   = (idx + 1) & (BENCH_ADDRS - 1);
        }
        ops += BENCH_BATCH;
    } while (bench_now() < deadline);
    now = bench_cpu();

    bench_sink   += sink;
    t->ns_per_op  = (now - start) * 1e9 / ops;
    return NULL;
}

/* Update+remove pairs on regions above the looked-up ones, nonstop. */
static void *bench_update_thread(void *arg)
{
    bench_thread_t *t       = arg;
    ucs_memtype_info_t info = bench_info(0);
    uintptr_t address       = BENCH_BASE - 16 * BENCH_STRIDE;
    unsigned long ops       = 0;
    double start;

    pthread_barrier_wait(t->barrier);
    start = bench_cpu();
    while (!atomic_load(&bench_stop)) {
        ucs_memtype_cache_update(t->cache, (void*)address, BENCH_LENGTH, &info);
        ucs_memtype_cache_remove(t->cache, (void*)address, BENCH_LENGTH);
        ++ops;
    }
    t->ns_per_op = (bench_cpu() - start) * 1e9 / (ops ? ops : 1);
    return NULL;
}

/* ns per lookup per thread, with @a nthreads threads looking up at once and
 * optionally one thread updating. */
static double bench_lookups(ucs_memtype_cache_t *cache, const uintptr_t *addrs,
                            unsigned nthreads, int with_updates,
                            double seconds)
{
    bench_thread_t threads[3];
    pthread_t ids[3];
    pthread_barrier_t barrier;
    unsigned i, total = nthreads + (with_updates ? 1 : 0);
    double sum = 0;

    pthread_barrier_init(&barrier, NULL, total);
    atomic_store(&bench_stop, 0);
    for (i = 0; i < total; ++i) {
        threads[i].cache   = cache;
        threads[i].addrs   = addrs;
        threads[i].seconds = seconds;
        threads[i].barrier = &barrier;
        pthread_create(&ids[i], NULL,
                       (i < nthreads) ? bench_lookup_thread :
                                        bench_update_thread,
                       &threads[i]);
    }
    for (i = 0; i < nthreads; ++i) {
        pthread_join(ids[i], NULL);
        sum += threads[i].ns_per_op;
    }
    atomic_store(&bench_stop, 1);
    for (; i < total; ++i) {
        pthread_join(ids[i], NULL);
    }
    pthread_barrier_destroy(&barrier);
    return sum / nthreads;
}

static double bench_update_pairs(ucs_memtype_cache_t *cache, unsigned regions,
                                 double seconds)
{
    ucs_memtype_info_t info = bench_info(0);
    uint64_t state          = 2463534242ull;
    unsigned long ops       = 0;
    double start, deadline;
    uintptr_t address;
    unsigned i;

    deadline = bench_now() + seconds;
    start    = bench_cpu();
    do {
        for (i = 0; i < 256; ++i) {
            /* a fresh address among the cached ones, like a new allocation */
            address = BENCH_BASE + (bench_rand(&state) % regions) *
                                   BENCH_STRIDE + BENCH_LENGTH;
            ucs_memtype_cache_update(cache, (void*)address, 4096, &info);
            ucs_memtype_cache_remove(cache, (void*)address, 4096);
        }
        ops += 256;
    } while (bench_now() < deadline);
    return (bench_cpu() - start) * 1e9 / ops;
}

/* Microseconds of the first lookup of a new host mapping. */
static double bench_host_miss(ucs_memtype_cache_t *cache)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    ucs_memtype_info_t info;
    double total = 0, start;
    unsigned i;
    char *area;

    /* every other page read-write: BENCH_NEW_MAPS separate mappings */
    area = mmap(NULL, 2 * BENCH_NEW_MAPS * page, PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED) {
        return -1;
    }
    for (i = 0; i < BENCH_NEW_MAPS; ++i) {
        mprotect(area + 2 * i * page, page, PROT_READ | PROT_WRITE);
    }
    for (i = 0; i < BENCH_NEW_MAPS; ++i) {
        start = bench_now();
        ucs_memtype_cache_lookup(cache, area + 2 * i * page, 64, &info);
        total += bench_now() - start;
    }
    munmap(area, 2 * BENCH_NEW_MAPS * page);
    return total * 1e6 / BENCH_NEW_MAPS;
}

int main(int argc, char **argv)
{
    static const unsigned default_sizes[] = {16, 1024, 65536};
    unsigned sizes[16], nsizes = 0, n, i;
    double seconds = 0.3, same1, same2, rnd1, rnd2, host1, host2, pair, busy;
    double miss;
    ucs_memtype_cache_t *cache;
    ucs_memtype_info_t info;
    uintptr_t *addrs;
    char *list, *tok;
    void *host;
    int opt;

    while ((opt = getopt(argc, argv, "s:r:h")) != -1) {
        switch (opt) {
        case 's':
            seconds = atof(optarg);
            break;
        case 'r':
            list = strdup(optarg);
            for (tok = strtok(list, ","); (tok != NULL) && (nsizes < 16);
                 tok = strtok(NULL, ",")) {
                sizes[nsizes++] = (unsigned)atoi(tok);
            }
            free(list);
            break;
        default:
            printf("usage: %s [-s seconds-per-run] [-r regions,...]\n",
                   argv[0]);
            return opt == 'h' ? 0 : 1;
        }
    }
    if (nsizes == 0) {
        memcpy(sizes, default_sizes, sizeof(default_sizes));
        nsizes = 3;
    }

    addrs = malloc(BENCH_ADDRS * sizeof(*addrs));
    host  = malloc(BENCH_HOST_SIZE);
    if ((addrs == NULL) || (host == NULL)) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    memset(host, 0, BENCH_HOST_SIZE); /* map it: one host mapping */

    printf("# memtype cache, ns per call (best of %d runs of %.2f s, %ld cpus)\n",
           BENCH_REPEAT, seconds, sysconf(_SC_NPROCESSORS_ONLN));
    printf("%8s %9s %9s %9s %9s %9s %9s %9s %9s\n", "regions", "same-1T",
           "same-2T", "random-1T", "random-2T", "host-1T", "host-2T",
           "upd+rm", "same+upd");

    for (n = 0; n < nsizes; ++n) {
        bench_check(ucs_memtype_cache_create("bench", &cache), "create");
        bench_check(ucs_memtype_cache_set_resolver(cache, bench_resolve, NULL),
                    "set_resolver");
        for (i = 0; i < sizes[n]; ++i) {
            info = bench_info(i);
            bench_check(ucs_memtype_cache_update(cache,
                                                 (void*)(BENCH_BASE +
                                                         i * BENCH_STRIDE),
                                                 BENCH_LENGTH, &info),
                        "update");
        }

        bench_fill_addrs(addrs, BENCH_SAME, sizes[n], 0);
        same1 = BENCH_BEST(bench_lookups(cache, addrs, 1, 0, seconds));
        same2 = BENCH_BEST(bench_lookups(cache, addrs, 2, 0, seconds));
        busy  = BENCH_BEST(bench_lookups(cache, addrs, 1, 1, seconds));
        bench_fill_addrs(addrs, BENCH_RANDOM, sizes[n], 0);
        rnd1 = BENCH_BEST(bench_lookups(cache, addrs, 1, 0, seconds));
        rnd2 = BENCH_BEST(bench_lookups(cache, addrs, 2, 0, seconds));
        bench_fill_addrs(addrs, BENCH_HOST, sizes[n], (uintptr_t)host);
        host1 = BENCH_BEST(bench_lookups(cache, addrs, 1, 0, seconds));
        host2 = BENCH_BEST(bench_lookups(cache, addrs, 2, 0, seconds));
        pair  = BENCH_BEST(bench_update_pairs(cache, sizes[n], seconds));

        printf("%8u %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n",
               sizes[n], same1, same2, rnd1, rnd2, host1, host2, pair, busy);
        fflush(stdout);
        ucs_memtype_cache_destroy(cache);
    }

    bench_check(ucs_memtype_cache_create("bench-miss", &cache), "create");
    bench_check(ucs_memtype_cache_set_resolver(cache, bench_resolve, NULL),
                "set_resolver");
    atomic_store(&bench_resolver_calls, 0);
    miss = bench_host_miss(cache);
    printf("# first lookup of a new host mapping (resolver + /proc/self/maps):"
           " %.1f us; resolver calls %u for %u mappings\n", miss,
           atomic_load(&bench_resolver_calls), BENCH_NEW_MAPS);
    ucs_memtype_cache_destroy(cache);

    free(host);
    free(addrs);
    return 0;
}
