#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/memory/memtype_cache_int.h>
#include <ucs/memory/memtype_host.h>
#include <ucs/memory/memtype_thread.h>
#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>

/*
 * Lookups: the fast path checks the hits this thread remembered (see
 * memtype_thread.h); the slow path searches the active map without a lock
 * and, for addresses no region holds, asks the resolver and writes its
 * answer back into the gap.
 */

/* Gaps a lookup resolves at most: a query over a few adjacent mappings is
 * answered, a pathological one gives up instead of looping. */
#define UCS_MEMTYPE_CACHE_MAX_ROUNDS   8

/* How a search of the map ended. */
typedef enum {
    UCS_MEMTYPE_CACHE_WALK_HIT,   /* the query is inside one region, or
                                     inside consecutive host regions */
    UCS_MEMTYPE_CACHE_WALK_SPANS, /* it crosses a boundary we cannot join */
    UCS_MEMTYPE_CACHE_WALK_GAP    /* it reaches an address that no region
                                     holds (*gap_p): ask the resolver */
} ucs_memtype_cache_walk_t;

/* Copy a region's description, with the region as the known extent. */
static void ucs_memtype_cache_copy_info(const ucs_interval_map_range_t *range,
                                        ucs_memtype_info_t *info)
{
    const ucs_memtype_cache_record_t *rec = range->value;

    *info               = rec->info;
    info->region_start  = (void*)range->start;
    info->region_length = range->end - range->start;
}

/*
 * Classify [start, end) against one map. Consecutive plain host regions are
 * joined; any other boundary inside the query is a span. Only reads the map.
 */
static ucs_memtype_cache_walk_t
ucs_memtype_cache_walk(const ucs_interval_map_t *map, uintptr_t start,
                       uintptr_t end, ucs_memtype_info_t *info,
                       uintptr_t *gap_p)
{
    const ucs_interval_map_range_t *range;
    const ucs_memtype_cache_record_t *rec;
    uintptr_t pos;

    if (ucs_interval_map_lookup_range(map, start, end - start, &range) ==
        UCS_INTERVAL_MAP_HIT) {
        ucs_memtype_cache_copy_info(range, info);
        return UCS_MEMTYPE_CACHE_WALK_HIT;
    }

    range = ucs_interval_map_lookup(map, start);
    if (range == NULL) {
        ucs_memtype_cache_info_unknown(info);
        *gap_p = start;
        return UCS_MEMTYPE_CACHE_WALK_GAP;
    }

    ucs_memtype_cache_copy_info(range, info);
    for (;;) {
        rec = range->value;
        if (!ucs_memtype_cache_is_plain_host(&rec->info)) {
            return UCS_MEMTYPE_CACHE_WALK_SPANS;
        }
        pos = range->end;
        if (pos >= end) {
            info->region_length = pos - (uintptr_t)info->region_start;
            return UCS_MEMTYPE_CACHE_WALK_HIT;
        }
        range = ucs_interval_map_lookup(map, pos);
        if (range == NULL) {
            *gap_p = pos;
            return UCS_MEMTYPE_CACHE_WALK_GAP;
        }
    }
}

/* Remember a hit found in generation @a gen of @a cache. */
static void ucs_memtype_cache_remember(ucs_memtype_cache_thread_t *self,
                                       const ucs_memtype_cache_t *cache,
                                       uint64_t gen,
                                       const ucs_memtype_info_t *info)
{
    unsigned i;

    if ((self->hit_cache_id != cache->id) || (self->hit_gen != gen)) {
        /* an empty entry contains no query: start > end */
        for (i = 0; i < UCS_MEMTYPE_CACHE_HITS; ++i) {
            self->hit_start[i] = UINTPTR_MAX;
            self->hit_end[i]   = 0;
        }
        self->hit_cache_id = cache->id;
        self->hit_gen      = gen;
        self->hit_victim   = 0;
    }

    i                  = self->hit_victim;
    self->hit_victim   = (i + 1) % UCS_MEMTYPE_CACHE_HITS;
    self->hit_start[i] = (uintptr_t)info->region_start;
    self->hit_end[i]   = (uintptr_t)info->region_start + info->region_length;
    self->hit_info[i]  = *info;
}

/* One search of the active map, lock-free when the thread has a record. */
static ucs_memtype_cache_walk_t
ucs_memtype_cache_search(ucs_memtype_cache_t *cache,
                         ucs_memtype_cache_thread_t *self, uintptr_t start,
                         uintptr_t end, ucs_memtype_info_t *info,
                         uintptr_t *gap_p)
{
    ucs_memtype_cache_walk_t result;
    const void *map;
    uint64_t gen;

    if (ucs_unlikely(self == NULL)) {
        /* no thread record (out of memory): search under the lock */
        pthread_mutex_lock(&cache->lock);
        map    = atomic_load_explicit(&cache->active, memory_order_relaxed);
        result = ucs_memtype_cache_walk(map, start, end, info, gap_p);
        pthread_mutex_unlock(&cache->lock);
        return result;
    }

    gen    = atomic_load_explicit(&cache->gen, memory_order_seq_cst);
    map    = ucs_memtype_cache_read_begin(self, &cache->active);
    result = ucs_memtype_cache_walk(map, start, end, info, gap_p);
    ucs_memtype_cache_read_end(self);

    /* The hit is tagged with the generation loaded before the search, and
     * is used only while the generation still has that value. If an update
     * switched maps during the search, the tag is stale already and the hit
     * is never used. An odd generation is a switch in progress: we may have
     * searched the map it is leaving while other threads already see the
     * new one, so such a hit is not remembered at all. */
    if ((result == UCS_MEMTYPE_CACHE_WALK_HIT) && !(gen & 1)) {
        ucs_memtype_cache_remember(self, cache, gen, info);
    }
    return result;
}

/* Call the resolver about @a address. On UCS_OK @a info holds a type. */
static ucs_status_t ucs_memtype_cache_resolve(ucs_memtype_cache_t *cache,
                                              uintptr_t address, uintptr_t end,
                                              ucs_memtype_info_t *info)
{
    const ucs_memtype_cache_resolver_t *resolver;
    ucs_status_t status;

    ucs_memtype_cache_info_unknown(info);
    resolver = atomic_load_explicit(&cache->resolver, memory_order_acquire);
    if (resolver == NULL) {
        return UCS_ERR_NO_ELEM;
    }

    status = resolver->func(resolver->arg, (const void*)address,
                            end - address, info);
    if (status != UCS_OK) {
        ucs_trace("memtype cache '%s': resolver failed on 0x%lx: %s",
                  cache->name, (unsigned long)address,
                  ucs_status_string(status));
        return status;
    }

    if (((unsigned)info->mem_type >= UCS_MEMORY_TYPE_LAST) ||
        ((unsigned)info->alloc_kind >= UCS_MEMTYPE_ALLOC_LAST)) {
        ucs_debug("memtype cache '%s': resolver gave no type for 0x%lx",
                  cache->name, (unsigned long)address);
        return UCS_ERR_NO_ELEM;
    }

    if ((info->mem_type == UCS_MEMORY_TYPE_HOST) &&
        (info->alloc_kind == UCS_MEMTYPE_ALLOC_UNKNOWN)) {
        info->alloc_kind = UCS_MEMTYPE_ALLOC_HOST;
    }
    return UCS_OK;
}

/* The extent of a resolver's answer that is known to hold at @a address:
 * the one it gave, or the mapping for plain host memory. 0 if none. */
static int ucs_memtype_cache_answer_extent(const ucs_memtype_info_t *info,
                                           uintptr_t address,
                                           uintptr_t *start_p,
                                           uintptr_t *end_p)
{
    uintptr_t start = (uintptr_t)info->region_start;
    size_t page_size;

    if (info->region_length != 0) {
        *start_p = start;
        *end_p   = ucs_memtype_cache_end(start, info->region_length);
        return (address >= *start_p) && (address < *end_p);
    }

    if (!ucs_memtype_cache_is_plain_host(info)) {
        return 0; /* device memory of unknown extent: not cached */
    }

    switch (ucs_memtype_host_mapping(address, start_p, end_p)) {
    case UCS_OK:
        return 1;
    case UCS_ERR_IO_ERROR:
        /* no /proc: one page at a time */
        page_size = ucs_get_page_size();
        *start_p  = address & ~(uintptr_t)(page_size - 1);
        *end_p    = ucs_memtype_cache_end(*start_p, page_size);
        return 1;
    default:
        return 0; /* unmapped or inaccessible: nothing to vouch for */
    }
}

/*
 * Store a resolver's answer for @a address over the part of [ext_start,
 * ext_end) that no region holds around it. Existing regions win: they come
 * from events, or from an earlier answer.
 *
 * @return UCS_OK when @a address is now cached (by us or by someone else).
 */
static ucs_status_t ucs_memtype_cache_fill_gap(ucs_memtype_cache_t *cache,
                                               uintptr_t address,
                                               uintptr_t ext_start,
                                               uintptr_t ext_end,
                                               const ucs_memtype_info_t *info)
{
    uintptr_t gap_start = ext_start;
    uintptr_t gap_end   = ext_end;
    const ucs_interval_map_range_t *range;
    ucs_memtype_cache_record_t *rec;
    ucs_memtype_info_t rec_info;
    const ucs_interval_map_t *map;
    ucs_status_t status;

    pthread_mutex_lock(&cache->lock);

    if (!atomic_load_explicit(&cache->enabled, memory_order_relaxed)) {
        status = UCS_ERR_NO_ELEM;
        goto out_unlock;
    }

    ucs_memtype_cache_apply_deferred(cache);

    map = atomic_load_explicit(&cache->active, memory_order_relaxed);
    if (ucs_interval_map_lookup(map, address) != NULL) {
        status = UCS_OK;
        goto out_unlock;
    }

    /* the nearest regions below and above the address bound the gap */
    for (range = ucs_interval_map_lower_bound(map, ext_start);
         (range != NULL) && (range->start < ext_end);
         range = ucs_interval_map_next(map, range)) {
        if (range->end <= address) {
            gap_start = range->end;
        } else {
            gap_end = range->start;
            break;
        }
    }

    rec_info = *info;
    if ((rec_info.alloc_length == 0) &&
        ucs_memtype_cache_is_plain_host(&rec_info)) {
        /* host memory: the allocation is what we know of it */
        rec_info.alloc_base   = (void*)gap_start;
        rec_info.alloc_length = gap_end - gap_start;
    }

    rec = ucs_memtype_cache_record_new(cache, &rec_info);
    if (rec == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto out_unlock;
    }

    ucs_trace("memtype cache '%s': resolved 0x%lx as %s/%s, caching "
              "[0x%lx, 0x%lx)", cache->name, (unsigned long)address,
              ucs_memory_type_names[info->mem_type],
              ucs_memtype_alloc_kind_names[info->alloc_kind],
              (unsigned long)gap_start, (unsigned long)gap_end);
    status = ucs_memtype_cache_modify(cache, gap_start, gap_end, rec);
    ucs_memtype_cache_record_put(rec);

out_unlock:
    pthread_mutex_unlock(&cache->lock);
    return status;
}

/*
 * An answer that is not (or cannot be) cached, for the query [start, end).
 * A known extent that ends inside the query is a span; an unknown extent is
 * taken to cover the query (the resolver looked at its start).
 */
static ucs_status_t ucs_memtype_cache_direct(const ucs_memtype_info_t *answer,
                                             uintptr_t start, uintptr_t end,
                                             ucs_memtype_info_t *info)
{
    uintptr_t ext_start = (uintptr_t)answer->region_start;
    uintptr_t ext_end   = ucs_memtype_cache_end(ext_start,
                                                answer->region_length);

    *info = *answer;
    if ((answer->region_length == 0) || (start < ext_start) ||
        (start >= ext_end)) {
        info->region_start  = (void*)start;
        info->region_length = end - start;
        return UCS_OK;
    }

    return (end <= ext_end) ? UCS_OK : UCS_MEMTYPE_CACHE_ERR_SPANS;
}

/* Lookup with caching disabled: the resolver answers every query. */
static ucs_status_t ucs_memtype_cache_lookup_uncached(ucs_memtype_cache_t *cache,
                                                      uintptr_t start,
                                                      uintptr_t end,
                                                      ucs_memtype_info_t *info)
{
    ucs_memtype_info_t answer;

    if (ucs_memtype_cache_resolve(cache, start, end, &answer) != UCS_OK) {
        ucs_memtype_cache_info_unknown(info);
        return UCS_ERR_NO_ELEM;
    }
    return ucs_memtype_cache_direct(&answer, start, end, info);
}

/* The query [start, end) was not in the remembered hits of @a self (NULL
 * before this thread's first lookup). */
static UCS_F_NOINLINE ucs_status_t
ucs_memtype_cache_lookup_slow(ucs_memtype_cache_t *cache,
                              ucs_memtype_cache_thread_t *self,
                              uintptr_t start, uintptr_t end,
                              ucs_memtype_info_t *info)
{
    ucs_memtype_info_t answer;
    uintptr_t gap, ext_start, ext_end;
    unsigned round;

    if (ucs_unlikely(start >= end)) {
        /* only the address UINTPTR_MAX gets here: it is in no region */
        ucs_memtype_cache_info_unknown(info);
        return UCS_ERR_NO_ELEM;
    }

    if (!atomic_load_explicit(&cache->enabled, memory_order_acquire)) {
        return ucs_memtype_cache_lookup_uncached(cache, start, end, info);
    }

    if (self == NULL) {
        self = ucs_memtype_cache_thread_attach(); /* may stay NULL */
    }

    /* A removal parked by an event (memtype_deferred.c) moved the
     * generation, which is why we are here: apply it before searching. */
    if (ucs_unlikely(ucs_memtype_cache_has_deferred(cache))) {
        pthread_mutex_lock(&cache->lock);
        ucs_memtype_cache_apply_deferred(cache);
        pthread_mutex_unlock(&cache->lock);
    }

    for (round = 0;; ++round) {
        switch (ucs_memtype_cache_search(cache, self, start, end, info, &gap)) {
        case UCS_MEMTYPE_CACHE_WALK_HIT:
            return UCS_OK;
        case UCS_MEMTYPE_CACHE_WALK_SPANS:
            return UCS_MEMTYPE_CACHE_ERR_SPANS;
        case UCS_MEMTYPE_CACHE_WALK_GAP:
            break;
        }

        /* Resolve the gap; *info describes the start (unknown if it is the
         * gap itself), which is what a failure reports. */
        if ((round == UCS_MEMTYPE_CACHE_MAX_ROUNDS) ||
            (ucs_memtype_cache_resolve(cache, gap, end, &answer) != UCS_OK)) {
            return (gap == start) ? UCS_ERR_NO_ELEM :
                                    UCS_MEMTYPE_CACHE_ERR_SPANS;
        }

        if (ucs_memtype_cache_answer_extent(&answer, gap, &ext_start,
                                            &ext_end) &&
            (ucs_memtype_cache_fill_gap(cache, gap, ext_start, ext_end,
                                        &answer) == UCS_OK)) {
            continue; /* cached: the next search finds it */
        }

        /* Not cacheable (or disabled meanwhile): answer directly */
        if (gap == start) {
            return ucs_memtype_cache_direct(&answer, start, end, info);
        }
        if (ucs_memtype_cache_is_plain_host(&answer)) {
            /* host regions followed by host memory */
            info->region_length = end - (uintptr_t)info->region_start;
            return UCS_OK;
        }
        return UCS_MEMTYPE_CACHE_ERR_SPANS;
    }
}

ucs_status_t ucs_memtype_cache_lookup(ucs_memtype_cache_t *cache,
                                      const void *address, size_t length,
                                      ucs_memtype_info_t *info)
{
    uintptr_t start                  = (uintptr_t)address;
    uintptr_t end                    = ucs_memtype_cache_end(start, length);
    ucs_memtype_cache_thread_t *self = ucs_memtype_cache_self;
    unsigned i, match;

    /* Fast path: a hit remembered by this thread in the current generation
     * of this cache. The sequentially consistent load of the generation is
     * a plain load on x86 (ldar on Arm); see ucs_memtype_cache_switch() for
     * why it is enough. An empty query (only at UINTPTR_MAX) never hits. */
    if (ucs_likely(self != NULL) && (self->hit_cache_id == cache->id) &&
        (self->hit_gen ==
         atomic_load_explicit(&cache->gen, memory_order_seq_cst)) &&
        ucs_likely(start < end)) {
        /* one bit per containing entry, computed without branches, so that
         * buffers used in turn do not cost mispredictions */
        match = 0;
        for (i = 0; i < UCS_MEMTYPE_CACHE_HITS; ++i) {
            match |= ((unsigned)(start >= self->hit_start[i]) &
                      (unsigned)(end <= self->hit_end[i])) << i;
        }
        if (ucs_likely(match != 0)) {
            *info = self->hit_info[__builtin_ctz(match)];
            return UCS_OK;
        }
    }

    return ucs_memtype_cache_lookup_slow(cache, self, start, end, info);
}
