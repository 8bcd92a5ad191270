#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/datastruct/hmap.h>
#include <ucs/debug/log.h>

#include <stdlib.h>
#include <string.h>

/* 16 buckets: small enough to be cheap for the many tiny tables, large
 * enough that the first few inserts never rehash. */
#define UCS_HMAP_MIN_BUCKET_BITS 4

/* Multiplier of the bucket index: a random odd number, bits spread evenly. */
#define UCS_HMAP_INDEX_MULT      0xaed09b824ca87fc3ull


/*
 * The bucket index comes from the TOP bits of (folded hash * odd constant).
 * The product's top bits depend on every input bit, so even a weak user hash
 * (e.g. an aligned pointer with zero low bits) spreads across buckets. It
 * also means that when the table doubles, old bucket i splits into new
 * buckets 2i and 2i+1 only, which lets the rehash keep chain order.
 */
static inline size_t ucs_hmap_bucket_index(uint64_t hash, unsigned bits)
{
    return (size_t)(((hash ^ (hash >> 29)) * UCS_HMAP_INDEX_MULT) >>
                    (64 - bits));
}

ucs_status_t ucs_hmap_init(ucs_hmap_t *hmap, ucs_hmap_equal_cb_t equal,
                           void *arg)
{
    size_t num_buckets = (size_t)1 << UCS_HMAP_MIN_BUCKET_BITS;

    ucs_assert(equal != NULL);

    hmap->buckets = calloc(num_buckets, sizeof(*hmap->buckets));
    if (hmap->buckets == NULL) {
        ucs_error("failed to allocate %zu hash buckets", num_buckets);
        return UCS_ERR_NO_MEMORY;
    }

    hmap->bucket_bits = UCS_HMAP_MIN_BUCKET_BITS;
    hmap->count       = 0;
    hmap->equal       = equal;
    hmap->arg         = arg;
    return UCS_OK;
}

void ucs_hmap_cleanup(ucs_hmap_t *hmap)
{
    if (hmap->count != 0) {
        ucs_debug("hash table %p released with %zu elements still linked",
                  hmap, hmap->count);
    }
    free(hmap->buckets);
    hmap->buckets = NULL;
    hmap->count   = 0;
}

/* Double the bucket array. Chain order is preserved (see
 * ucs_hmap_bucket_index()), which keeps "newest match first" true. */
static void ucs_hmap_grow(ucs_hmap_t *hmap)
{
    unsigned new_bits      = hmap->bucket_bits + 1;
    size_t old_num_buckets = ucs_hmap_bucket_count(hmap);
    ucs_hmap_elem_t **new_buckets, **tails[2];
    ucs_hmap_elem_t *elem, *next;
    size_t i, index;

    if (new_bits >= (sizeof(size_t) * 8) - 4) {
        return;
    }

    new_buckets = calloc(old_num_buckets * 2, sizeof(*new_buckets));
    if (new_buckets == NULL) {
        /* Not fatal: lookups stay correct, only chains get longer. */
        ucs_debug("hash table %p: cannot grow to %zu buckets, keeping %zu",
                  hmap, old_num_buckets * 2, old_num_buckets);
        return;
    }

    for (i = 0; i < old_num_buckets; ++i) {
        tails[0] = &new_buckets[2 * i];
        tails[1] = &new_buckets[2 * i + 1];
        for (elem = hmap->buckets[i]; elem != NULL; elem = next) {
            next  = elem->next;
            index = ucs_hmap_bucket_index(elem->hash, new_bits);
            ucs_assert((index >> 1) == i);
            elem->next        = NULL;
            *tails[index & 1] = elem;
            tails[index & 1]  = &elem->next;
        }
    }

    free(hmap->buckets);
    hmap->buckets     = new_buckets;
    hmap->bucket_bits = new_bits;
}

void ucs_hmap_insert(ucs_hmap_t *hmap, ucs_hmap_elem_t *elem, uint64_t hash)
{
    ucs_hmap_elem_t **bucket;

    /* Keep the load factor at most 3/4. */
    if (ucs_unlikely((hmap->count + 1) * 4 > ucs_hmap_bucket_count(hmap) * 3)) {
        ucs_hmap_grow(hmap);
    }

    bucket     = &hmap->buckets[ucs_hmap_bucket_index(hash, hmap->bucket_bits)];
    elem->hash = hash;
    elem->next = *bucket;
    *bucket    = elem;
    ++hmap->count;
}

/* First element of the chain starting at @a elem that matches the key. */
static ucs_hmap_elem_t *ucs_hmap_chain_find(const ucs_hmap_t *hmap,
                                            ucs_hmap_elem_t *elem,
                                            uint64_t hash, const void *key)
{
    for (; elem != NULL; elem = elem->next) {
        if ((elem->hash == hash) && hmap->equal(elem, key, hmap->arg)) {
            return elem;
        }
    }
    return NULL;
}

ucs_hmap_elem_t *ucs_hmap_lookup(const ucs_hmap_t *hmap, uint64_t hash,
                                 const void *key)
{
    size_t index = ucs_hmap_bucket_index(hash, hmap->bucket_bits);

    return ucs_hmap_chain_find(hmap, hmap->buckets[index], hash, key);
}

ucs_hmap_elem_t *ucs_hmap_lookup_next(const ucs_hmap_t *hmap,
                                      const ucs_hmap_elem_t *elem,
                                      const void *key)
{
    return ucs_hmap_chain_find(hmap, elem->next, elem->hash, key);
}

ucs_status_t ucs_hmap_remove(ucs_hmap_t *hmap, ucs_hmap_elem_t *elem)
{
    size_t index = ucs_hmap_bucket_index(elem->hash, hmap->bucket_bits);
    ucs_hmap_elem_t **link;

    for (link = &hmap->buckets[index]; *link != NULL; link = &(*link)->next) {
        if (*link == elem) {
            *link = elem->next;
            --hmap->count;
            return UCS_OK;
        }
    }
    return UCS_ERR_NO_ELEM;
}

ucs_hmap_elem_t *ucs_hmap_iter_next(const ucs_hmap_t *hmap,
                                    ucs_hmap_iter_t *iter)
{
    size_t num_buckets = ucs_hmap_bucket_count(hmap);
    ucs_hmap_elem_t *elem;

    /* Reading one element ahead is what allows the caller to remove the
     * element it was just given. */
    while ((iter->next == NULL) && (iter->bucket < num_buckets)) {
        iter->next = hmap->buckets[iter->bucket++];
    }

    elem = iter->next;
    if (elem != NULL) {
        iter->next = elem->next;
    }
    return elem;
}


static inline uint64_t ucs_hash_rotl(uint64_t x, unsigned bits)
{
    return (x << bits) | (x >> (64 - bits));
}

/* Absorb one 64-bit word: the multiply spreads the word's low bits upward,
 * the rotate brings the state's high bits down so the next multiply mixes
 * them too. Each step is a bijection of the state for a fixed word, so no
 * information already absorbed is lost. */
static inline uint64_t ucs_hash_absorb(uint64_t state, uint64_t word)
{
    state ^= word * 0x5e6a0a2edd70e34dull;
    state  = ucs_hash_rotl(state, 29);
    return state * 0x4de45321ad915a37ull;
}

uint64_t ucs_hash_bytes(const void *data, size_t length, uint64_t seed)
{
    const uint8_t *p = (const uint8_t*)data;
    uint64_t state   = ucs_hash_u64(seed ^ 0x1ff135342e825ce1ull);
    uint64_t word;
    size_t i;

    for (i = 0; i + sizeof(word) <= length; i += sizeof(word)) {
        memcpy(&word, p + i, sizeof(word)); /* any alignment */
        state = ucs_hash_absorb(state, word);
    }

    if (i < length) {
        word = 0;
        memcpy(&word, p + i, length - i);
        state = ucs_hash_absorb(state, word);
    }

    /* The length separates inputs that differ only by trailing zero bytes. */
    return ucs_hash_u64(state ^ (uint64_t)length);
}

uint64_t ucs_hash_string(const char *str)
{
    return ucs_hash_bytes(str, strlen(str), 0);
}
