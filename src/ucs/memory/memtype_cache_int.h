/**
 * @file memtype_cache_int.h
 * Internals of the memory-type cache shared by memtype_cache.c (creation,
 * updates) and memtype_lookup.c (lookups). Not for use outside libucs.
 */
#ifndef UCS_MEMORY_MEMTYPE_CACHE_INT_H_
#define UCS_MEMORY_MEMTYPE_CACHE_INT_H_

#include <ucs/memory/memtype_cache.h>
#include <ucs/datastruct/interval_map.h>
#include <ucs/datastruct/mpool.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

BEGIN_C_DECLS

/* Internal to libucs: not exported, called without the PLT. */
#ifndef UCS_MEMTYPE_HIDDEN
#  define UCS_MEMTYPE_HIDDEN __attribute__((visibility("hidden")))
#endif

/*
 * Layout of the data (docs/memtype-cache.md explains the design):
 *
 *  - Two interval maps with identical contents (left-right). Lookups search
 *    the one `active` points to, without a lock; an update applies its
 *    change to the other one, switches `active`, waits for the searches of
 *    the old one to finish (memtype_thread.h), and applies the same change
 *    to the old one. So a map is never modified while a search reads it,
 *    and the interval map is used within its own contract (no locking,
 *    concurrent readers only).
 *
 *  - The value of a range is a record holding the description. Pieces of a
 *    split range, in both maps, share the record; a reference count, only
 *    touched under the update lock, frees it with the last piece. A record
 *    never changes while a map refers to it, so a search copies it safely.
 *
 *  - `gen` counts switches of `active`: it is odd while an update is
 *    switching. Each thread remembers a few recent hits together with the
 *    generation they were found in (memtype_thread.h); they are valid while
 *    the generation has not moved, which one load and compare checks.
 */

#define UCS_MEMTYPE_CACHE_RECORDS_PER_CHUNK 64

/* Removals that can wait for the update lock (memtype_deferred.c): enough
 * for the unmaps between two lookups of a busy MPI process. */
#define UCS_MEMTYPE_CACHE_DEFERRED_MAX      256
#define UCS_MEMTYPE_CACHE_NAME_MAX          32


/* A resolver as set by the user. Kept until the cache is destroyed, since a
 * lookup may still be calling a replaced one. */
typedef struct ucs_memtype_cache_resolver {
    ucs_memtype_cache_resolve_func_t  func;
    void                              *arg;
    struct ucs_memtype_cache_resolver *older;
} ucs_memtype_cache_resolver_t;

/* Value of a range of the maps. */
typedef struct {
    ucs_memtype_info_t info;     /* region_* unused */
    unsigned           refcount; /* pieces in both maps, plus one while an
                                    update holds it; under the lock */
} ucs_memtype_cache_record_t;

/* A removal parked by ucs_memtype_cache_remove_deferred(). */
typedef struct {
    atomic_int state;      /* free, being written, ready */
    uintptr_t  start, end;
} ucs_memtype_cache_deferred_t;

struct ucs_memtype_cache {
    /* What lookups read, on one cache line that only updates write. */
    uint64_t                                     id;
    _Atomic uint64_t                             gen;
    _Atomic(const void*)                         active;
    _Atomic(const ucs_memtype_cache_resolver_t*) resolver;
    atomic_int                                   enabled;

    /* Updates only, under the lock. */
    pthread_mutex_t              lock
                                 __attribute__((aligned(UCS_CACHE_LINE_SIZE)));
    ucs_interval_map_t           maps[2];
    ucs_mpool_t                  record_mp;
    ucs_memtype_cache_resolver_t *resolvers; /* newest first */
    char                         name[UCS_MEMTYPE_CACHE_NAME_MAX];

    /* Removals from any context, applied under the lock. The count is
     * read by lookups that miss; it includes overflows. */
    atomic_uint                  deferred_count
                                 __attribute__((aligned(UCS_CACHE_LINE_SIZE)));
    atomic_uint                  deferred_overflow;
    atomic_uint                  deferred_hint;
    ucs_memtype_cache_deferred_t deferred[UCS_MEMTYPE_CACHE_DEFERRED_MAX];
};


/* End of the query [start, start + length): length 0 asks about one byte,
 * and the range is cut at the top of the address space. */
static UCS_F_ALWAYS_INLINE uintptr_t ucs_memtype_cache_end(uintptr_t start,
                                                          size_t length)
{
    if (length == 0) {
        length = 1;
    }
    return (length > UINTPTR_MAX - start) ? UINTPTR_MAX : start + length;
}

static inline void ucs_memtype_cache_info_unknown(ucs_memtype_info_t *info)
{
    memset(info, 0, sizeof(*info));
    info->mem_type   = UCS_MEMORY_TYPE_UNKNOWN;
    info->device     = -1;
    info->alloc_kind = UCS_MEMTYPE_ALLOC_UNKNOWN;
}

static inline int ucs_memtype_cache_is_plain_host(const ucs_memtype_info_t *info)
{
    return (info->mem_type == UCS_MEMORY_TYPE_HOST) &&
           (info->alloc_kind == UCS_MEMTYPE_ALLOC_HOST);
}


/**
 * A new record describing @a info (region_* cleared), with one reference
 * held by the caller. NULL when out of memory. Under the lock.
 */
ucs_memtype_cache_record_t *
ucs_memtype_cache_record_new(ucs_memtype_cache_t *cache,
                             const ucs_memtype_info_t *info)
    UCS_MEMTYPE_HIDDEN;

/** Drop one reference; the last frees the record. Under the lock. */
void ucs_memtype_cache_record_put(ucs_memtype_cache_record_t *rec)
    UCS_MEMTYPE_HIDDEN;

/**
 * Under the lock: clear [start, end) in both maps and, if @a rec is not
 * NULL, insert it there, switching the maps so that no lookup ever reads a
 * map being changed. On failure both maps are emptied and an error logged.
 */
ucs_status_t ucs_memtype_cache_modify(ucs_memtype_cache_t *cache,
                                      uintptr_t start, uintptr_t end,
                                      ucs_memtype_cache_record_t *rec)
    UCS_MEMTYPE_HIDDEN;

/** Empty both maps (switching between them, so that no lookup reads a map
 *  being emptied). Under the lock; cannot fail. */
void ucs_memtype_cache_clear_locked(ucs_memtype_cache_t *cache)
    UCS_MEMTYPE_HIDDEN;

/**
 * Apply the removals parked by ucs_memtype_cache_remove_deferred() (or
 * empty the cache if some did not fit). Under the lock; cheap when there
 * are none.
 */
void ucs_memtype_cache_apply_deferred(ucs_memtype_cache_t *cache)
    UCS_MEMTYPE_HIDDEN;

/** Whether removals are parked: a lookup that misses applies them first. */
static UCS_F_ALWAYS_INLINE int
ucs_memtype_cache_has_deferred(ucs_memtype_cache_t *cache)
{
    return atomic_load_explicit(&cache->deferred_count, memory_order_seq_cst) !=
           0;
}

END_C_DECLS

#endif
