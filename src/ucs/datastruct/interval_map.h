/**
 * @file interval_map.h
 * Ordered map of disjoint half-open address ranges [start, end) to values.
 *
 * Ranges never overlap: an insert that would overlap is refused, and
 * removing an address range trims or splits the ranges it touches. The
 * ranges are kept in an AVL tree ordered by start address, so insert,
 * lookup and removal are O(log n) (removal: plus O(log n) per range it
 * touches).
 *
 * Ownership: the map allocates its own nodes; values are opaque pointers
 * owned by the caller, who learns through the release callback when the map
 * stops (fully or partly) referring to a value.
 *
 * Thread safety: none. Callers that share a map between threads must
 * protect it (a later layer adds reader/writer locking); lookups only read
 * and may run concurrently with each other.
 */
#ifndef UCS_DATASTRUCT_INTERVAL_MAP_H_
#define UCS_DATASTRUCT_INTERVAL_MAP_H_

#include <ucs/datastruct/mpool.h>
#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

/** One range of the map, as seen by users (read only). */
typedef struct ucs_interval_map_range {
    uintptr_t start;  /**< First address of the range */
    uintptr_t end;    /**< One past the last address; start < end */
    void      *value; /**< User value given at insert */
} ucs_interval_map_range_t;

/** Tree node, private to interval_map.c. */
typedef struct ucs_interval_map_node ucs_interval_map_node_t;

/** The map. Fields are private; use the functions below. */
typedef struct {
    ucs_interval_map_node_t *root;
    size_t                  count;
    ucs_mpool_t             node_mp;
} ucs_interval_map_t;

/** Answer of ucs_interval_map_lookup_range(). */
typedef enum {
    UCS_INTERVAL_MAP_MISS,  /**< No address of the query is in the map */
    UCS_INTERVAL_MAP_HIT,   /**< The whole query is inside one range */
    UCS_INTERVAL_MAP_SPANS  /**< Some addresses are in the map, but not all
                                 of them in one range (a partial overlap, or
                                 several ranges, or a range plus a hole) */
} ucs_interval_map_result_t;

/**
 * Called by ucs_interval_map_remove_range() once for every range of the map
 * that the removal touches, in address order, each call made right after
 * that range was removed, trimmed or split; and by
 * ucs_interval_map_cleanup() once for every range, in address order.
 *
 * @param arg        the argument given with the callback.
 * @param start      first address of the piece that was removed.
 * @param end        one past its last address.
 * @param value      the value of the range the piece was cut from.
 * @param remaining  how many pieces of that range are still in the map:
 *                   0 (the whole range was removed), 1 (it was trimmed at
 *                   one end) or 2 (it was split in two, both keeping
 *                   @a value). A user that counts references to a value per
 *                   range adjusts the count by (remaining - 1).
 *
 * The callback must not modify the map.
 */
typedef void (*ucs_interval_map_release_cb_t)(void *arg, uintptr_t start,
                                              uintptr_t end, void *value,
                                              unsigned remaining);

/** Called by ucs_interval_map_for_each() for every range, in address order. */
typedef void (*ucs_interval_map_visit_cb_t)(void *arg,
                                            const ucs_interval_map_range_t *range);


/**
 * Initialize an empty map.
 *
 * @param name  used in log messages (copied).
 * @return UCS_OK, or an error from the node pool's initialization.
 */
ucs_status_t ucs_interval_map_init(ucs_interval_map_t *map, const char *name);

/**
 * Remove every range and release all memory of the map. @a release_cb (may
 * be NULL) is called for each range with remaining == 0.
 */
void ucs_interval_map_cleanup(ucs_interval_map_t *map,
                              ucs_interval_map_release_cb_t release_cb,
                              void *arg);

/**
 * Add the range [start, end) with @a value.
 *
 * @return UCS_OK; UCS_ERR_INVALID_PARAM if start >= end;
 *         UCS_ERR_ALREADY_EXISTS if any address of it is already in a range
 *         (the map is left unchanged); UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucs_interval_map_insert(ucs_interval_map_t *map, uintptr_t start,
                                     uintptr_t end, void *value);

/**
 * The range that contains @a addr, or NULL. The pointer stays valid until
 * that range is removed, trimmed or split, or the map is cleaned up.
 */
const ucs_interval_map_range_t *
ucs_interval_map_lookup(const ucs_interval_map_t *map, uintptr_t addr);

/**
 * Classify the query [addr, addr + length) against the map (see
 * ucs_interval_map_result_t). A query that would wrap past the top of the
 * address space is cut at the top; an empty query (length 0) is a MISS.
 *
 * @param [out] range_p  on HIT, set to the containing range; otherwise set to
 *                       NULL. May be NULL.
 */
ucs_interval_map_result_t
ucs_interval_map_lookup_range(const ucs_interval_map_t *map, uintptr_t addr,
                              size_t length,
                              const ucs_interval_map_range_t **range_p);

/**
 * Remove every address of [start, end) from the map: ranges inside it are
 * removed, ranges that overlap one of its ends are trimmed, and a range that
 * extends past both ends is split in two pieces that keep its value.
 * Addresses of [start, end) that are not in the map are ignored.
 * @a release_cb (may be NULL) is called per touched range, see
 * ucs_interval_map_release_cb_t.
 *
 * @return UCS_OK; UCS_ERR_INVALID_PARAM if start >= end; UCS_ERR_NO_MEMORY
 *         if a split needs a node that cannot be allocated (the map is then
 *         left unchanged and the callback not called).
 */
ucs_status_t ucs_interval_map_remove_range(ucs_interval_map_t *map,
                                           uintptr_t start, uintptr_t end,
                                           ucs_interval_map_release_cb_t release_cb,
                                           void *arg);

/** Number of ranges in the map. */
static inline size_t ucs_interval_map_count(const ucs_interval_map_t *map)
{
    return map->count;
}

/** The range with the lowest addresses, or NULL if the map is empty. */
const ucs_interval_map_range_t *
ucs_interval_map_first(const ucs_interval_map_t *map);

/**
 * The first range that ends after @a addr: the one containing @a addr, or
 * else the first one above it. NULL if there is none. O(log n).
 */
const ucs_interval_map_range_t *
ucs_interval_map_lower_bound(const ucs_interval_map_t *map, uintptr_t addr);

/**
 * The range that follows @a range in address order, or NULL. @a range must
 * still be in the map. O(log n); the map may be changed between calls as
 * long as @a range itself stays, so a loop may remove ranges it has passed:
 *
 *     for (r = ucs_interval_map_first(map); r != NULL; r = next) {
 *         next = ucs_interval_map_next(map, r);
 *         ... may remove r ...
 *     }
 */
const ucs_interval_map_range_t *
ucs_interval_map_next(const ucs_interval_map_t *map,
                      const ucs_interval_map_range_t *range);

/**
 * Call @a cb for every range in address order. O(n). @a cb must not modify
 * the map.
 */
void ucs_interval_map_for_each(const ucs_interval_map_t *map,
                               ucs_interval_map_visit_cb_t cb, void *arg);

/**
 * Check the map's internal invariants (order, disjointness, balance, count)
 * and log the first violation found. For tests and debugging; O(n).
 *
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM when the map is corrupt.
 */
ucs_status_t ucs_interval_map_check(const ucs_interval_map_t *map);

END_C_DECLS

#endif
