/*
 * Regression program for the MPI_Init deadlock (docs/hooks.md, "Events
 * from inside the allocator"): Open MPI reports heap trims through
 * ucm_vm_munmap() from its sbrk hook, inside free(), while glibc holds the
 * arena lock. Whatever our libraries do on that path must not allocate
 * (the arena lock is held: a self-deadlock), nor wait on a lock (its
 * holder may be waiting for that arena).
 *
 * The program interposes the allocator and the blocking lock functions,
 * loads libucp with dlopen() as Open MPI loads its pml (so the TLS of our
 * libraries is dynamic, allocated on first use in each thread), makes the
 * memory-type cache hold a host region, and then, in a fresh thread,
 * reports an unmap of a page in the middle of that region while it
 * pretends to be inside free() with the arena locked. Every allocation or
 * blocking lock the report makes in that window is counted and named; the
 * program exits 1 if there was any, and 3 if the report did not return
 * within the deadline.
 *
 * usage: ucm_event_in_free LIBUCP_PATH LIBUCM_PATH [threads]
 *   (Open MPI's common ucx component links both: it reports through
 *   ucm_vm_munmap() itself)
 *   threads > 1 also runs that many threads that allocate, free and report
 *   unmaps while the cache is looked up, for ThreadSanitizer.
 * exit: 0 clean, 1 violations, 2 set-up failed, 3 deadline, 77 skipped.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__has_feature)
#  if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
      __has_feature(memory_sanitizer)
#    define UCM_TEST_SANITIZED 1
#  endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#  define UCM_TEST_SANITIZED 1
#endif

#ifndef UCM_TEST_SANITIZED
/* glibc's own entry points, so that the interposers need no dlsym(). */
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *ptr, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *ptr);

/* Set while this thread "holds the arena lock". The executable's TLS is
 * static: reading it never allocates. */
static __thread int in_trim;
static volatile int violations;
static const char *first_violation;

static void note(const char *what)
{
    if (in_trim) {
        if (__sync_fetch_and_add(&violations, 1) == 0) {
            first_violation = what;
        }
    }
}

void *malloc(size_t size)
{
    note("malloc");
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    note("calloc");
    return __libc_calloc(n, size);
}

void *realloc(void *ptr, size_t size)
{
    note("realloc");
    return __libc_realloc(ptr, size);
}

void *memalign(size_t align, size_t size)
{
    note("memalign");
    return __libc_memalign(align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
    note("aligned_alloc");
    return __libc_memalign(align, size);
}

int posix_memalign(void **p, size_t align, size_t size)
{
    note("posix_memalign");
    *p = __libc_memalign(align, size);
    return (*p == NULL) ? 12 /* ENOMEM */ : 0;
}

void free(void *ptr)
{
    note("free");
    __libc_free(ptr);
}

/* The blocking locks, forwarded to libc's (resolved in main() before any
 * report, since dlsym may allocate). */
static int (*real_mutex_lock)(pthread_mutex_t *);
static int (*real_rdlock)(pthread_rwlock_t *);
static int (*real_wrlock)(pthread_rwlock_t *);

int pthread_mutex_lock(pthread_mutex_t *m)
{
    note("pthread_mutex_lock");
    return real_mutex_lock(m);
}

int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    note("pthread_rwlock_rdlock");
    return real_rdlock(l);
}

int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    note("pthread_rwlock_wrlock");
    return real_wrlock(l);
}

/* The subset of the public API we call, resolved from the dlopen()ed
 * libraries (no link-time dependency, as with Open MPI's pml). */
typedef struct {
    uint64_t field_mask;
    uint64_t features;
    char     pad[256];
} ucp_params_min_t;

static int (*p_ucp_config_read)(const char *, const char *, void **);
static void (*p_ucp_config_release)(void *);
static int (*p_ucp_init_version)(unsigned, unsigned, const void *, const void *,
                                 void **);
static void (*p_ucp_cleanup)(void *);
static void (*p_ucm_vm_munmap)(void *, size_t);
static int (*p_cache_get_global)(void **);
static int (*p_cache_lookup)(void *, const void *, size_t, void *);
static void *cache;
static char *region;
static size_t page;

static void *reporter(void *arg)
{
    char info[256];

    (void)arg;
    in_trim = 1;
    p_ucm_vm_munmap(region + 4 * page, page);
    in_trim = 0;

    /* the next lookup must not answer from the removed page */
    if (cache != NULL) {
        (void)p_cache_lookup(cache, region + 4 * page, 8, info);
    }
    return NULL;
}

static void *churn(void *arg)
{
    char info[256];
    unsigned i;
    void *p;

    for (i = 0; i < 2000; ++i) {
        p = malloc(64 + (i % 7) * 4096);
        free(p);
        in_trim = 1;
        p_ucm_vm_munmap(region + ((i + (uintptr_t)arg) % 8) * page, page);
        in_trim = 0;
        if (cache != NULL) {
            (void)p_cache_lookup(cache, region + (i % 8) * page, 8, info);
        }
    }
    return NULL;
}

static void on_alarm(int sig)
{
    static const char msg[] = "ucm_event_in_free: DEADLOCK: the unmap report "
                              "did not return within the deadline\n";

    (void)sig;
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(3);
}

#define RESOLVE(_var, _name) \
    do { \
        *(void**)&(_var) = dlsym(lib, _name); \
        if ((_var) == NULL) { \
            fprintf(stderr, "missing symbol %s\n", _name); \
            return 2; \
        } \
    } while (0)

int main(int argc, char **argv)
{
    ucp_params_min_t params;
    void *config, *context, *lib;
    pthread_t threads[16];
    int nthreads = (argc > 3) ? atoi(argv[3]) : 1;
    char info[256];
    int i;

    if (argc < 3) {
        fprintf(stderr, "usage: %s LIBUCP_PATH LIBUCM_PATH [threads]\n",
                argv[0]);
        return 2;
    }
    if ((nthreads < 1) || (nthreads > 16)) {
        nthreads = 1;
    }

    *(void**)&real_mutex_lock = dlsym(RTLD_NEXT, "pthread_mutex_lock");
    *(void**)&real_rdlock     = dlsym(RTLD_NEXT, "pthread_rwlock_rdlock");
    *(void**)&real_wrlock     = dlsym(RTLD_NEXT, "pthread_rwlock_wrlock");
    if (!real_mutex_lock || !real_rdlock || !real_wrlock) {
        fprintf(stderr, "cannot find libc's lock functions\n");
        return 2;
    }

    lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
        return 2;
    }
    RESOLVE(p_ucp_config_read, "ucp_config_read");
    RESOLVE(p_cache_get_global, "ucs_memtype_cache_get_global");
    RESOLVE(p_cache_lookup, "ucs_memtype_cache_lookup");
    lib = dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", argv[2], dlerror());
        return 2;
    }
    RESOLVE(p_ucm_vm_munmap, "ucm_vm_munmap");
    lib = dlopen(argv[1], RTLD_NOW);
    RESOLVE(p_ucp_config_release, "ucp_config_release");
    RESOLVE(p_ucp_init_version, "ucp_init_version");
    RESOLVE(p_ucp_cleanup, "ucp_cleanup");

    /* Open MPI's order: read the configuration, init the context. */
    memset(&params, 0, sizeof(params));
    params.field_mask = 1;      /* UCP_PARAM_FIELD_FEATURES */
    params.features   = 2;      /* UCP_FEATURE_TAG */
    if ((p_ucp_config_read(NULL, NULL, &config) != 0) ||
        (p_ucp_init_version(1, 13, &params, config, &context) != 0)) {
        fprintf(stderr, "ucp_init failed\n");
        return 2;
    }
    p_ucp_config_release(config);

    /* A host region the cache holds (from /proc/self/maps). */
    page   = (size_t)sysconf(_SC_PAGESIZE);
    region = mmap(NULL, 16 * page, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) {
        return 2;
    }
    if (p_cache_get_global(&cache) != 0) {
        cache = NULL;
    } else {
        (void)p_cache_lookup(cache, region, 8, info);
    }
    printf("memtype cache: %s\n", (cache != NULL) ? "yes" : "no");

    signal(SIGALRM, on_alarm);
    alarm(30);

    if (nthreads == 1) {
        pthread_create(&threads[0], NULL, reporter, NULL);
        pthread_join(threads[0], NULL);
    } else {
        for (i = 0; i < nthreads; ++i) {
            pthread_create(&threads[i], NULL, churn, (void*)(uintptr_t)i);
        }
        for (i = 0; i < nthreads; ++i) {
            pthread_join(threads[i], NULL);
        }
    }
    alarm(0);

    p_ucp_cleanup(context);
    if (violations != 0) {
        printf("FAIL: %d allocations or blocking locks inside the report, "
               "the first: %s\n", violations, first_violation);
        return 1;
    }
    printf("OK: no allocation or blocking lock inside the report\n");
    return 0;
}

#else /* UCM_TEST_SANITIZED */
int main(void)
{
    printf("skipped: the sanitizers own malloc, the interposers cannot run\n");
    return 77;
}
#endif
