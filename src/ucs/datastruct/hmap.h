/**
 * @file hmap.h
 * Intrusive hash table, and general-purpose hash functions.
 *
 * The user embeds a ucs_hmap_elem_t in its own structure, computes the key's
 * 64-bit hash itself (ucs_hash_u64(), ucs_hash_bytes(), ucs_hash_string()
 * below are good choices) and supplies an equality callback that compares an
 * element with a key. The table stores no keys and allocates nothing per
 * element, only its bucket array.
 *
 * Collisions are chained inside each bucket. The number of buckets is a power
 * of two and doubles whenever the element count exceeds 3/4 of it, so chains
 * stay short and insert/lookup/remove are O(1) expected. The table does not
 * shrink; the bucket array is released by ucs_hmap_cleanup().
 *
 * Equal keys may be inserted more than once (multimap). A lookup returns the
 * most recently inserted match, so a newer element shadows older ones until
 * it is removed; ucs_hmap_lookup_next() reaches the older ones.
 *
 * Ownership: elements stay owned by the caller; the table only links them.
 *
 * Thread safety: none. Callers that share a table between threads must lock
 * around every call, lookups included (a concurrent insert may rehash).
 */
#ifndef UCS_DATASTRUCT_HMAP_H_
#define UCS_DATASTRUCT_HMAP_H_

#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

/** Link embedded in every hashed element. Filled by ucs_hmap_insert(). */
typedef struct ucs_hmap_elem {
    struct ucs_hmap_elem *next;  /* next element of the same bucket */
    uint64_t             hash;   /* saved so rehash and lookup skip the callback */
} ucs_hmap_elem_t;

/**
 * Equality callback: non-zero when @a elem holds the key @a key. Called only
 * for elements whose hash equals the looked-up hash.
 *
 * @param elem  an element of the table.
 * @param key   the key passed to the lookup function, opaque to the table.
 * @param arg   the argument given to ucs_hmap_init().
 */
typedef int (*ucs_hmap_equal_cb_t)(const ucs_hmap_elem_t *elem,
                                   const void *key, void *arg);

/** The hash table. Fields are private; use the functions below. */
typedef struct {
    ucs_hmap_elem_t     **buckets;
    unsigned            bucket_bits; /* log2 of the number of buckets */
    size_t              count;
    ucs_hmap_equal_cb_t equal;
    void                *arg;
} ucs_hmap_t;

/** Iteration position; initialize with ucs_hmap_iter_init(). */
typedef struct ucs_hmap_iter {
    size_t          bucket;  /* next bucket to scan */
    ucs_hmap_elem_t *next;   /* next element to return, read ahead */
} ucs_hmap_iter_t;


/**
 * Initialize an empty table.
 *
 * @param hmap   table to initialize.
 * @param equal  key equality callback (required).
 * @param arg    passed to @a equal on every call.
 * @return UCS_OK, or UCS_ERR_NO_MEMORY if the initial bucket array cannot be
 *         allocated (nothing is left to clean up in that case).
 */
ucs_status_t ucs_hmap_init(ucs_hmap_t *hmap, ucs_hmap_equal_cb_t equal,
                           void *arg);

/**
 * Release the bucket array. Elements still in the table are not touched
 * (they belong to the caller); the table must be initialized again before
 * further use.
 */
void ucs_hmap_cleanup(ucs_hmap_t *hmap);

/**
 * Add @a elem with the key hash @a hash. Keys are not checked for
 * duplicates: look up first when keys must be unique. May grow the table;
 * if that allocation fails the element is still inserted and the table keeps
 * working with longer chains, so this cannot fail. O(1) amortized.
 *
 * @param elem  element to add; must not already be in a table.
 */
void ucs_hmap_insert(ucs_hmap_t *hmap, ucs_hmap_elem_t *elem, uint64_t hash);

/**
 * Find an element whose key equals @a key. @a hash must be the hash that
 * elements with this key were inserted with.
 *
 * @return the most recently inserted matching element, or NULL.
 */
ucs_hmap_elem_t *ucs_hmap_lookup(const ucs_hmap_t *hmap, uint64_t hash,
                                 const void *key);

/**
 * Continue a lookup: the next older element with the same key as @a elem
 * (which was returned by a lookup for @a key), or NULL.
 */
ucs_hmap_elem_t *ucs_hmap_lookup_next(const ucs_hmap_t *hmap,
                                      const ucs_hmap_elem_t *elem,
                                      const void *key);

/**
 * Unlink @a elem from the table. O(1) expected.
 *
 * @return UCS_OK, or UCS_ERR_NO_ELEM if @a elem is not in this table.
 */
ucs_status_t ucs_hmap_remove(ucs_hmap_t *hmap, ucs_hmap_elem_t *elem);

/** Number of elements in the table. */
static inline size_t ucs_hmap_count(const ucs_hmap_t *hmap)
{
    return hmap->count;
}

/** Number of buckets; for diagnostics and tests of the growth policy. */
static inline size_t ucs_hmap_bucket_count(const ucs_hmap_t *hmap)
{
    return (size_t)1 << hmap->bucket_bits;
}

/** Prepare @a iter to visit the table from the beginning. */
static inline void ucs_hmap_iter_init(ucs_hmap_iter_t *iter)
{
    iter->bucket = 0;
    iter->next   = NULL;
}

/**
 * Return the next element of an iteration, or NULL when all were visited.
 * Order is unspecified. The element just returned may be removed before the
 * next call; any other change (insert, or removing another element) makes
 * the iteration undefined.
 */
ucs_hmap_elem_t *ucs_hmap_iter_next(const ucs_hmap_t *hmap,
                                    ucs_hmap_iter_t *iter);

/**
 * Iterate over all elements of @a _hmap, assigning each (as a
 * ucs_hmap_elem_t pointer) to @a _elem. @a _iter is a ucs_hmap_iter_t
 * variable. The body may remove @a _elem, and nothing else.
 */
#define ucs_hmap_for_each(_elem, _iter, _hmap) \
    for (ucs_hmap_iter_init(_iter); \
         ((_elem) = ucs_hmap_iter_next(_hmap, _iter)) != NULL;)


/**
 * Hash a 64-bit integer. Every input bit affects every output bit (about
 * half of the output bits flip when one input bit flips), so the result is
 * good both as a table hash and as a seed for further mixing. Thread safe.
 */
static inline uint64_t ucs_hash_u64(uint64_t x)
{
    /* An odd multiply only carries bits upward, so each one is preceded by
     * an xor-shift that folds the high half down. The constants are random
     * odd numbers with about half of their bits set; the test suite checks
     * the avalanche property. */
    x ^= x >> 32;
    x *= 0xd1a6e55e9b9b1325ull;
    x ^= x >> 29;
    x *= 0xcf0c26ef4243ed53ull;
    x ^= x >> 32;
    return x;
}

/** Hash a pointer value (not the memory it points to). Thread safe. */
static inline uint64_t ucs_hash_ptr(const void *ptr)
{
    return ucs_hash_u64((uintptr_t)ptr);
}

/**
 * Hash @a length bytes at @a data. Any alignment is accepted. The same
 * bytes, length and seed always give the same value within one build (it is
 * not a wire format: do not store or transmit it). Thread safe.
 *
 * @param seed  lets independent tables hash the same keys differently.
 */
uint64_t ucs_hash_bytes(const void *data, size_t length, uint64_t seed);

/** Hash a NUL-terminated string (without its terminator). Thread safe. */
uint64_t ucs_hash_string(const char *str);

END_C_DECLS

#endif
