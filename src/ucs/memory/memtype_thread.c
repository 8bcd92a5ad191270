#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/memory/memtype_thread.h>
#include <ucs/debug/log.h>

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* How often an update re-reads a busy slot before it gives the CPU away:
 * searches take well under a microsecond, so spinning briefly is cheaper
 * than a system call, but a reader that was preempted inside its search
 * must get the CPU back (the test machines have two cores). */
#define UCS_MEMTYPE_CACHE_DRAIN_SPINS 256

__thread ucs_memtype_cache_thread_t *ucs_memtype_cache_self;

/* Every record ever allocated. Records are pushed at the head and never
 * unlinked, so an update walks the list without a lock, and a record's
 * `next` never changes after it was published. */
static _Atomic(ucs_memtype_cache_thread_t*) ucs_memtype_cache_threads;

/* Thread-exit hook that hands a record back for reuse. */
static pthread_once_t ucs_memtype_cache_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t  ucs_memtype_cache_key;
static int            ucs_memtype_cache_key_valid;


static inline void ucs_memtype_cache_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* pthread key destructor: the thread is exiting, so it is outside any search
 * and its slot is already clear; only the ownership is handed back. */
static void ucs_memtype_cache_thread_detach(void *arg)
{
    ucs_memtype_cache_thread_t *self = arg;

    ucs_memtype_cache_self = NULL;
    atomic_store_explicit(&self->in_use, 0, memory_order_release);
}

/* In a forked child only the forking thread exists. A record of another
 * thread could be caught inside a search and would then block every update
 * of the child forever, so all of them are released. */
static void ucs_memtype_cache_thread_atfork_child(void)
{
    ucs_memtype_cache_thread_t *rec;

    for (rec = atomic_load_explicit(&ucs_memtype_cache_threads,
                                    memory_order_acquire);
         rec != NULL; rec = rec->next) {
        if (rec != ucs_memtype_cache_self) {
            atomic_store_explicit(&rec->reading, NULL, memory_order_relaxed);
            atomic_store_explicit(&rec->in_use, 0, memory_order_relaxed);
        }
    }
}

static void ucs_memtype_cache_thread_init_once(void)
{
    if (pthread_key_create(&ucs_memtype_cache_key,
                           ucs_memtype_cache_thread_detach) == 0) {
        ucs_memtype_cache_key_valid = 1;
    } else {
        ucs_diag("memtype cache: no thread key, records of exited threads "
                 "will not be reused");
    }

    /* glibc drops handlers of a library when it is unloaded */
    if (pthread_atfork(NULL, NULL, ucs_memtype_cache_thread_atfork_child) !=
        0) {
        ucs_diag("memtype cache: pthread_atfork failed");
    }
}

/* A free record of an exited thread, claimed for the caller, or NULL. */
static ucs_memtype_cache_thread_t *ucs_memtype_cache_thread_recycle(void)
{
    ucs_memtype_cache_thread_t *rec;
    int expected;

    for (rec = atomic_load_explicit(&ucs_memtype_cache_threads,
                                    memory_order_acquire);
         rec != NULL; rec = rec->next) {
        expected = 0;
        if ((atomic_load_explicit(&rec->in_use, memory_order_relaxed) == 0) &&
            atomic_compare_exchange_strong_explicit(&rec->in_use, &expected, 1,
                                                    memory_order_acquire,
                                                    memory_order_relaxed)) {
            return rec;
        }
    }
    return NULL;
}

ucs_memtype_cache_thread_t *ucs_memtype_cache_thread_attach(void)
{
    ucs_memtype_cache_thread_t *rec, *head;

    pthread_once(&ucs_memtype_cache_key_once,
                 ucs_memtype_cache_thread_init_once);

    rec = ucs_memtype_cache_thread_recycle();
    if (rec == NULL) {
        rec = aligned_alloc(UCS_CACHE_LINE_SIZE, sizeof(*rec));
        if (rec == NULL) {
            ucs_diag("memtype cache: no memory for a thread record");
            return NULL;
        }

        memset(rec, 0, sizeof(*rec));
        atomic_init(&rec->reading, NULL);
        atomic_init(&rec->in_use, 1);

        /* Sequentially consistent, like the load in drain(): a search that
         * this thread starts after the push is then ordered after it, so an
         * update that must wait for the search also finds the record. */
        head = atomic_load_explicit(&ucs_memtype_cache_threads,
                                    memory_order_relaxed);
        do {
            rec->next = head;
        } while (!atomic_compare_exchange_weak_explicit(
                         &ucs_memtype_cache_threads, &head, rec,
                         memory_order_seq_cst, memory_order_relaxed));
    }

    rec->hit_cache_id = 0; /* no cache has id 0: the hit list is empty */
    rec->hit_victim   = 0;
    if (ucs_memtype_cache_key_valid) {
        (void)pthread_setspecific(ucs_memtype_cache_key, rec);
    }
    ucs_memtype_cache_self = rec;
    return rec;
}

void ucs_memtype_cache_thread_drain(const void *map)
{
    ucs_memtype_cache_thread_t *rec;
    unsigned spins;

    for (rec = atomic_load_explicit(&ucs_memtype_cache_threads,
                                    memory_order_seq_cst);
         rec != NULL; rec = rec->next) {
        spins = 0;
        while (atomic_load_explicit(&rec->reading, memory_order_seq_cst) ==
               map) {
            if (++spins < UCS_MEMTYPE_CACHE_DRAIN_SPINS) {
                ucs_memtype_cache_cpu_relax();
            } else {
                sched_yield();
                spins = 0;
            }
        }
    }
}

/* When libucs is unloaded, the key's destructor would point into unmapped
 * code: delete the key. Records stay allocated (reachable from the list);
 * threads that are still running at process exit may hold them. */
static void UCS_F_DTOR ucs_memtype_cache_thread_cleanup(void)
{
    if (ucs_memtype_cache_key_valid) {
        ucs_memtype_cache_key_valid = 0;
        pthread_key_delete(ucs_memtype_cache_key);
    }
}
