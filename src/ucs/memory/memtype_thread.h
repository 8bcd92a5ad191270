/**
 * @file memtype_thread.h
 * Per-thread state of the memory-type cache (internal to libucs):
 *  - the "reading" slot of the left-right scheme, through which an update
 *    learns which tree copy a thread is searching;
 *  - a few recent hits, checked before the tree.
 *
 * The scheme, in short (docs/memtype-cache.md has the full argument): the
 * cache keeps two identical copies of its interval map. Lookups search the
 * copy `active` points to; an update changes the other copy, makes it
 * active, waits until no thread searches the old copy any more, and then
 * changes the old copy the same way. A lookup therefore never reads a tree
 * that is being modified, and needs no lock: it only announces, in its own
 * slot, which copy it is about to search.
 *
 * Thread records are allocated on a thread's first lookup, linked into a
 * process-wide list that only grows (so an update can walk it without a
 * lock), and recycled for new threads when their thread exits.
 */
#ifndef UCS_MEMORY_MEMTYPE_THREAD_H_
#define UCS_MEMORY_MEMTYPE_THREAD_H_

#include <ucs/memory/memtype_cache.h>
#include <ucs/sys/compiler_def.h>

#include <stdatomic.h>
#include <stdint.h>

BEGIN_C_DECLS

/* Internal to libucs: not exported, called without the PLT. */
#ifndef UCS_MEMTYPE_HIDDEN
#  define UCS_MEMTYPE_HIDDEN __attribute__((visibility("hidden")))
#endif

/** Recent hits remembered per thread: enough for a send and a receive
 *  buffer in flight, plus a staging buffer, without thrashing. */
#define UCS_MEMTYPE_CACHE_HITS 4

typedef struct ucs_memtype_cache_thread ucs_memtype_cache_thread_t;

struct ucs_memtype_cache_thread {
    /* Shared part: written by the owner around each tree search, read by
     * updates that wait for searches to finish. */
    _Atomic(const void*)       reading; /* tree copy being searched, or NULL */
    atomic_int                 in_use;  /* owned by a live thread */
    ucs_memtype_cache_thread_t *next;   /* list link, fixed once published */

    /* Private to the owner thread, on its own cache lines so that the
     * owner's writes never disturb updates reading `reading`. Hit i answers
     * every query inside [hit_start[i], hit_end[i]) with hit_info[i]; the
     * hits are valid only for the cache with id hit_cache_id while its
     * generation is hit_gen. Bounds are kept apart from the descriptions so
     * that checking all of them touches one cache line. */
    uint64_t                   hit_cache_id
                               __attribute__((aligned(UCS_CACHE_LINE_SIZE)));
    uint64_t                   hit_gen;
    unsigned                   hit_victim; /* next entry to overwrite */
    uintptr_t                  hit_start[UCS_MEMTYPE_CACHE_HITS]
                               __attribute__((aligned(UCS_CACHE_LINE_SIZE)));
    uintptr_t                  hit_end[UCS_MEMTYPE_CACHE_HITS];
    ucs_memtype_info_t         hit_info[UCS_MEMTYPE_CACHE_HITS];
};

/**
 * This thread's record, or NULL before its first lookup (and after it
 * exited). Hidden: private to libucs, which also lets the compiler use the
 * cheaper local-dynamic TLS access.
 */
extern __thread ucs_memtype_cache_thread_t *ucs_memtype_cache_self
    UCS_MEMTYPE_HIDDEN;

/**
 * Give the calling thread a record (a recycled one or a new one) and set
 * ucs_memtype_cache_self. Its hit list is empty.
 *
 * @return the record, or NULL when memory is exhausted (the caller then
 *         searches under the update lock instead).
 */
ucs_memtype_cache_thread_t *ucs_memtype_cache_thread_attach(void)
    UCS_MEMTYPE_HIDDEN;

/**
 * Wait until no thread searches the tree copy @a map: every search that
 * announced it has finished. Called by updates after they made the other
 * copy active, so no new search can start on @a map.
 */
void ucs_memtype_cache_thread_drain(const void *map)
    UCS_MEMTYPE_HIDDEN;


/**
 * Start a tree search: announce the copy @a active points to in our slot,
 * then check that it is still the active one. Returns the copy, which stays
 * unmodified until ucs_memtype_cache_read_end().
 *
 * Why it is safe (all four accesses are sequentially consistent, so they
 * have one total order S): an update stores `active` (A) and then loads our
 * slot (L). We store the slot (s) and then load `active` (l). If l returned
 * the copy we announced, l precedes A in S, hence s < l < A < L and the
 * update sees our announcement and waits for us. If l returned another copy
 * we announce that one and check again; this repeats only while updates
 * keep switching copies.
 */
static UCS_F_ALWAYS_INLINE const void *
ucs_memtype_cache_read_begin(ucs_memtype_cache_thread_t *self,
                             _Atomic(const void*) *active)
{
    const void *map = atomic_load_explicit(active, memory_order_relaxed);
    const void *current;

    for (;;) {
        atomic_store_explicit(&self->reading, map, memory_order_seq_cst);
        current = atomic_load_explicit(active, memory_order_seq_cst);
        if (ucs_likely(current == map)) {
            return map;
        }
        map = current;
    }
}

/**
 * End a tree search. The release store orders every read of the search
 * before it, so an update that sees the slot cleared (with an acquire load)
 * may modify the copy.
 */
static UCS_F_ALWAYS_INLINE void
ucs_memtype_cache_read_end(ucs_memtype_cache_thread_t *self)
{
    atomic_store_explicit(&self->reading, NULL, memory_order_release);
}

END_C_DECLS

#endif
