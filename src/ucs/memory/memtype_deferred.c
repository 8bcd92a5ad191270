#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Removals reported from contexts that may not wait or allocate.
 *
 * Unmap events arrive from inside malloc() and free() (Open MPI reports
 * heap trims from its sbrk hook with glibc's arena lock held): taking the
 * update lock there can deadlock against a thread that holds it and waits
 * in malloc() for that arena, and trimming a region may split it, which
 * allocates. So such a removal is parked in a fixed array of slots, and
 * the next holder of the update lock applies it: every update before it
 * changes anything, and every lookup that misses its remembered hits
 * before it searches. Parking also moves the generation on, so no thread
 * answers from a hit remembered before the removal; a lookup after the
 * event therefore never sees the removed range.
 *
 * Applying a removal late is always safe: it can only make a later lookup
 * ask the resolver. When every slot is taken, the removal is counted as
 * an overflow and the next holder of the lock empties the cache, which is
 * correct too, only slower.
 */

#include <ucs/memory/memtype_cache_int.h>

enum {
    UCS_MEMTYPE_DEFERRED_FREE,
    UCS_MEMTYPE_DEFERRED_BUSY, /* claimed, being written */
    UCS_MEMTYPE_DEFERRED_READY
};


void ucs_memtype_cache_remove_deferred(ucs_memtype_cache_t *cache,
                                       const void *address, size_t length)
{
    uintptr_t start = (uintptr_t)address;
    uintptr_t end   = ucs_memtype_cache_end(start, length);
    ucs_memtype_cache_deferred_t *slot;
    unsigned first, i;
    int expected;

    if ((length == 0) || (start >= end) ||
        !atomic_load_explicit(&cache->enabled, memory_order_relaxed)) {
        return;
    }

    /* Counted before the slot is claimed, so that the count is never
     * below the removals a lookup must wait for. */
    atomic_fetch_add_explicit(&cache->deferred_count, 1, memory_order_seq_cst);

    first = atomic_fetch_add_explicit(&cache->deferred_hint, 1,
                                      memory_order_relaxed);
    for (i = 0; i < UCS_MEMTYPE_CACHE_DEFERRED_MAX; ++i) {
        slot     = &cache->deferred[(first + i) % UCS_MEMTYPE_CACHE_DEFERRED_MAX];
        expected = UCS_MEMTYPE_DEFERRED_FREE;
        if (atomic_compare_exchange_strong_explicit(&slot->state, &expected,
                                                    UCS_MEMTYPE_DEFERRED_BUSY,
                                                    memory_order_acquire,
                                                    memory_order_relaxed)) {
            slot->start = start;
            slot->end   = end;
            atomic_store_explicit(&slot->state, UCS_MEMTYPE_DEFERRED_READY,
                                  memory_order_release);
            goto out;
        }
    }

    atomic_fetch_add_explicit(&cache->deferred_overflow, 1,
                              memory_order_seq_cst);

out:
    /* Even, so that the parity still tells a switch in progress. */
    atomic_fetch_add_explicit(&cache->gen, 2, memory_order_seq_cst);
}

void ucs_memtype_cache_apply_deferred(ucs_memtype_cache_t *cache)
{
    ucs_memtype_cache_deferred_t *slot;
    unsigned overflow, applied = 0;
    uintptr_t start, end;
    int ready;

    if (atomic_load_explicit(&cache->deferred_count, memory_order_seq_cst) ==
        0) {
        return;
    }

    overflow = atomic_exchange_explicit(&cache->deferred_overflow, 0,
                                        memory_order_seq_cst);
    if (overflow != 0) {
        ucs_trace("memtype cache '%s': %u deferred removals did not fit, "
                  "emptying the cache", cache->name, overflow);
        ucs_memtype_cache_clear_locked(cache);
    }

    for (slot = cache->deferred;
         slot < cache->deferred + UCS_MEMTYPE_CACHE_DEFERRED_MAX; ++slot) {
        ready = atomic_load_explicit(&slot->state, memory_order_acquire);
        if (ready != UCS_MEMTYPE_DEFERRED_READY) {
            continue; /* free, or still being written: the next drain */
        }

        start = slot->start;
        end   = slot->end;
        atomic_store_explicit(&slot->state, UCS_MEMTYPE_DEFERRED_FREE,
                              memory_order_release);
        ++applied;
        if (overflow == 0) {
            ucs_trace("memtype cache '%s': deferred remove [0x%lx, 0x%lx)",
                      cache->name, (unsigned long)start, (unsigned long)end);
            (void)ucs_memtype_cache_modify(cache, start, end, NULL);
        }
    }

    atomic_fetch_sub_explicit(&cache->deferred_count, applied + overflow,
                              memory_order_seq_cst);
}
