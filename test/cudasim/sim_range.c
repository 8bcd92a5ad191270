#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * The address registry: every live allocation or mapping, ordered by base
 * address, in one sorted array. Lookups (pointer attributes, copies) are a
 * binary search; inserts and removes move the tail, which is fine for the
 * thousands of allocations tests make. All functions need the lock.
 */
#include "cudasim.h"

#include <stdlib.h>
#include <string.h>

static sim_range_t **sim_ranges;
static size_t sim_range_count;
static size_t sim_range_cap;

sim_range_t *sim_range_new(sim_mem_kind_t kind, uintptr_t base, size_t size,
                           int device)
{
    sim_range_t *range = calloc(1, sizeof(*range));

    if (range == NULL) {
        return NULL;
    }
    range->kind   = kind;
    range->base   = base;
    range->size   = size;
    range->device = device;
    range->ctx    = sim_ctx_current();
    /* Never reused within the process, so a recycled address shows up as a
     * new buffer id (what importers key their caches on). */
    range->buffer_id = ++sim.next_buffer_id;
    return range;
}

/* Index of the first range whose base is greater than @a addr. */
static size_t sim_range_upper(uintptr_t addr)
{
    size_t lo = 0, hi = sim_range_count, mid;

    while (lo < hi) {
        mid = (lo + hi) / 2;
        if (sim_ranges[mid]->base <= addr) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

sim_range_t *sim_range_find(uintptr_t addr)
{
    size_t idx = sim_range_upper(addr);
    sim_range_t *range;

    if (idx == 0) {
        return NULL;
    }
    range = sim_ranges[idx - 1];
    return (addr - range->base < range->size) ? range : NULL;
}

int sim_range_device_access(const sim_range_t *range, int device)
{
    switch (range->kind) {
    case SIM_MEM_VMM:
        return (range->access_mask >> device) & 1;
    case SIM_MEM_POOL:
    case SIM_MEM_POOL_IMPORT:
        return range->pool->access[device] != CU_MEM_ACCESS_FLAGS_PROT_NONE;
    default:
        return 1;
    }
}

int sim_range_overlaps(uintptr_t base, size_t size)
{
    size_t idx = sim_range_upper(base);

    /* The range starting at or below base, or the first one above it. */
    if ((idx > 0) && (base - sim_ranges[idx - 1]->base <
                      sim_ranges[idx - 1]->size)) {
        return 1;
    }
    return (idx < sim_range_count) && (sim_ranges[idx]->base < base + size);
}

int sim_range_insert(sim_range_t *range)
{
    sim_range_t **ranges;
    size_t idx, cap;

    if (sim_range_count == sim_range_cap) {
        cap    = (sim_range_cap == 0) ? 256 : sim_range_cap * 2;
        ranges = realloc(sim_ranges, cap * sizeof(*ranges));
        if (ranges == NULL) {
            return -1;
        }
        sim_ranges    = ranges;
        sim_range_cap = cap;
    }
    idx = sim_range_upper(range->base);
    memmove(&sim_ranges[idx + 1], &sim_ranges[idx],
            (sim_range_count - idx) * sizeof(*sim_ranges));
    sim_ranges[idx] = range;
    ++sim_range_count;
    return 0;
}

void sim_range_remove(sim_range_t *range)
{
    size_t idx = sim_range_upper(range->base);

    if ((idx == 0) || (sim_ranges[idx - 1] != range)) {
        sim_warn("internal: removing an unregistered range %p",
                 (void *)range->base);
        return;
    }
    --idx;
    memmove(&sim_ranges[idx], &sim_ranges[idx + 1],
            (sim_range_count - idx - 1) * sizeof(*sim_ranges));
    --sim_range_count;
}

/*
 * A device address that no live range covers but that lies in memory the
 * model hands out (an arena, a pool, a VMM reservation, an IPC mapping) is a
 * stale pointer: the driver refuses it rather than treating it as host
 * memory, and so does the model (instead of faulting on PROT_NONE pages).
 */
int sim_addr_is_dangling(uintptr_t addr)
{
    CUmemoryPool pool;
    int i;

    for (i = 0; i < sim.cfg.num_devices; ++i) {
        if ((sim.devices[i].arena != NULL) &&
            sim_heap_contains(sim.devices[i].arena, addr)) {
            return 1;
        }
    }
    for (pool = sim.pools; pool != NULL; pool = pool->next) {
        if ((pool->heap != NULL) && sim_heap_contains(pool->heap, addr)) {
            return 1;
        }
    }
    return (sim_reservation_find(addr) != NULL) ||
           sim_ipc_import_contains(addr);
}

int sim_range_sync_memops(const sim_range_t *range)
{
    /* Measured on an H200 (stale_send -D -S ptr, driver 580): after
     * cuPointerSetAttribute(SYNC_MEMOPS) returned CUDA_SUCCESS on pool
     * memory, a cuMemcpyHtoD of 64 KiB from pageable memory still returned
     * before the data landed (199 of 200 reads on a non-blocking stream saw
     * old bytes), as without it; on cuMemAlloc memory none did. */
    return range->sync_memops && (range->kind != SIM_MEM_POOL) &&
           (range->kind != SIM_MEM_POOL_IMPORT);
}
