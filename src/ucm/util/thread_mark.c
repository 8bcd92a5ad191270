#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * The table of thread marks (thread_mark.h says why there is no TLS).
 *
 * A thread claims a free slot, starting at the hash of its id, when its
 * first mark goes up, and gives the slot back when its last mark goes to
 * zero. Only the owner writes the counters of its slot, so they need no
 * atomics; the owner word is claimed by compare-and-swap. Other threads
 * leave and free slots at any time, so a search for our own slot cannot stop
 * at a free one: it stops when it finds us, and scans the whole table only
 * when `claimed` says that some thread holds a slot and ours is not found
 * near the hash (then we are usually not marked at all).
 */

#include <ucm/util/thread_mark.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct {
    _Atomic uintptr_t owner; /* pthread_self() of the holder, or 0 */
    unsigned          depth[UCM_THREAD_MARK_LAST];
} ucm_thread_mark_slot_t;

static ucm_thread_mark_slot_t ucm_thread_mark_slots[UCM_THREAD_MARK_SLOTS];
static atomic_uint ucm_thread_mark_claimed;


static inline uintptr_t ucm_thread_mark_self(void)
{
    return (uintptr_t)pthread_self();
}

static inline unsigned ucm_thread_mark_hash(uintptr_t self)
{
    /* thread ids are aligned stack addresses: mix the high bits in */
    uint64_t h = (uint64_t)self * 0x9e3779b97f4a7c15ull;

    return (unsigned)(h >> 56) % UCM_THREAD_MARK_SLOTS;
}

static ucm_thread_mark_slot_t *ucm_thread_mark_find(uintptr_t self)
{
    unsigned start = ucm_thread_mark_hash(self);
    unsigned i, idx;

    if (atomic_load_explicit(&ucm_thread_mark_claimed, memory_order_relaxed) ==
        0) {
        return NULL;
    }

    for (i = 0; i < UCM_THREAD_MARK_SLOTS; ++i) {
        idx = (start + i) % UCM_THREAD_MARK_SLOTS;
        /* our own writes are the only ones that can make this equal */
        if (atomic_load_explicit(&ucm_thread_mark_slots[idx].owner,
                                 memory_order_relaxed) == self) {
            return &ucm_thread_mark_slots[idx];
        }
    }
    return NULL;
}

static ucm_thread_mark_slot_t *ucm_thread_mark_claim(uintptr_t self)
{
    unsigned start = ucm_thread_mark_hash(self);
    ucm_thread_mark_slot_t *slot;
    uintptr_t expected;
    unsigned i, m;

    for (i = 0; i < UCM_THREAD_MARK_SLOTS; ++i) {
        slot     = &ucm_thread_mark_slots[(start + i) % UCM_THREAD_MARK_SLOTS];
        expected = 0;
        if ((atomic_load_explicit(&slot->owner, memory_order_relaxed) == 0) &&
            atomic_compare_exchange_strong_explicit(&slot->owner, &expected,
                                                    self, memory_order_acquire,
                                                    memory_order_relaxed)) {
            for (m = 0; m < UCM_THREAD_MARK_LAST; ++m) {
                slot->depth[m] = 0;
            }
            atomic_fetch_add_explicit(&ucm_thread_mark_claimed, 1,
                                      memory_order_relaxed);
            return slot;
        }
    }
    return NULL;
}

int ucm_thread_mark_enter(ucm_thread_mark_t mark)
{
    uintptr_t self = ucm_thread_mark_self();
    ucm_thread_mark_slot_t *slot;

    slot = ucm_thread_mark_find(self);
    if (slot == NULL) {
        slot = ucm_thread_mark_claim(self);
        if (slot == NULL) {
            return -1;
        }
    }

    return (int)slot->depth[mark]++;
}

void ucm_thread_mark_leave(ucm_thread_mark_t mark)
{
    ucm_thread_mark_slot_t *slot = ucm_thread_mark_find(ucm_thread_mark_self());
    unsigned m;

    if ((slot == NULL) || (slot->depth[mark] == 0)) {
        return; /* unbalanced: nothing of ours to release */
    }

    if (--slot->depth[mark] != 0) {
        return;
    }
    for (m = 0; m < UCM_THREAD_MARK_LAST; ++m) {
        if (slot->depth[m] != 0) {
            return;
        }
    }

    atomic_fetch_sub_explicit(&ucm_thread_mark_claimed, 1, memory_order_relaxed);
    atomic_store_explicit(&slot->owner, 0, memory_order_release);
}

unsigned ucm_thread_mark_get(ucm_thread_mark_t mark)
{
    ucm_thread_mark_slot_t *slot = ucm_thread_mark_find(ucm_thread_mark_self());

    return (slot == NULL) ? 0 : slot->depth[mark];
}
