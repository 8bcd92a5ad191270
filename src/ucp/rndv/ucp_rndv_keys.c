#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * cuda_ipc keys of the rendezvous: packing our buffers' keys, and caches of
 * unpacked keys so that a buffer used again costs a hash and a compare
 * instead of a parse, checks and an allocation (measured ~6 us per unpack
 * on an H200 host, the largest share of a receiver's work per message).
 *
 * A cache is keyed by the packed bytes themselves: cuda_ipc keys name the
 * exporter, the object and its buffer id, so equal bytes are the same
 * object and a reused address (new buffer id) is a different key -- a miss,
 * never a stale hit. Unpacking equal bytes always gives the same answer,
 * so refusals ("not exportable", malformed) are cached too. Entries hold no
 * mapping (the transport's import cache does), and rkeys are used only
 * within the call that looked them up, so eviction is always safe.
 *
 * Keys travel without their trailing zero bytes (a cuda_ipc key of a
 * legacy allocation fills ~150 of its ~850 bytes); the receiver restores
 * them before unpacking, so this is lossless for any md.
 */

#include <ucp/rndv/ucp_rndv_int.h>

#include <stdlib.h>
#include <string.h>

typedef struct ucp_rndv_key_entry {
    uint64_t          hash;
    uint64_t          last_use;  /* 0: free */
    uint32_t          len;
    ucs_status_t      status;    /* the unpack's answer */
    uct_rkey_bundle_t rkey;      /* valid when status is UCS_OK */
    uint8_t           *bytes;    /* key_size bytes, zero-padded */
} ucp_rndv_key_entry_t;

struct ucp_rndv_key_cache {
    uct_component_h            component;
    size_t                     key_size;
    uint64_t                   tick;
    unsigned                   mru;      /* checked first */
    ucp_rndv_key_cache_stats_t stats;
    ucp_rndv_key_entry_t       entries[UCP_RNDV_KEY_CACHE_ENTRIES];
};

/* ---- our keys --------------------------------------------------------------- */

size_t ucp_rndv_key_size(ucp_worker_h worker)
{
    return (worker->rndv->ipc_md != NULL) ? worker->rndv->key_size : 0;
}

size_t ucp_rndv_key_trim(const void *key, size_t len)
{
    const uint8_t *p = key;
    uint64_t word;

    while ((len >= sizeof(word)) &&
           (memcpy(&word, p + len - sizeof(word), sizeof(word)), word == 0)) {
        len -= sizeof(word);
    }
    while ((len > 0) && (p[len - 1] == 0)) {
        --len;
    }
    return len;
}

ucs_status_t ucp_rndv_key_pack(ucp_worker_h worker, void *buffer, size_t length,
                               uct_mem_h *memh_p, void *key, uint32_t *len_p)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    ucs_status_t status;

    if (rw->ipc_md == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    status = uct_md_mem_reg(rw->ipc_md, buffer, length, 0, memh_p);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_md_mkey_pack(rw->ipc_md, *memh_p, key);
    if (status != UCS_OK) {
        uct_md_mem_dereg(rw->ipc_md, *memh_p);
        *memh_p = NULL;
        return status;
    }
    *len_p = (uint32_t)ucp_rndv_key_trim(key, rw->key_size);
    return UCS_OK;
}

void ucp_rndv_key_release(ucp_worker_h worker, uct_mem_h memh)
{
    uct_md_mem_dereg(worker->rndv->ipc_md, memh);
}

static ucs_status_t ucp_rndv_own_key_get(ucp_worker_h worker, const void *key,
                                         size_t key_len, uct_rkey_t *rkey_p)
{
    ucp_rndv_worker_t *rw = worker->rndv;

    if (rw->own_keys == NULL) {
        rw->own_keys = ucp_rndv_key_cache_create(rw->ipc_component, rw->key_size);
        if (rw->own_keys == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
    }
    return ucp_rndv_key_cache_get(rw->own_keys, key, key_len, rkey_p);
}

int ucp_rndv_key_exportable(ucp_worker_h worker, const void *key, size_t key_len)
{
    uct_rkey_t rkey;

    return ucp_rndv_own_key_get(worker, key, key_len, &rkey) == UCS_OK;
}

int ucp_rndv_key_same_device(ucp_ep_h ep, const void *peer_key, size_t peer_len,
                             const void *own_key, size_t own_len)
{
    uct_component_h component = ep->worker->rndv->ipc_component;
    ucp_rndv_key_cache_t *keys = ucp_rndv_ep_keys(ep);
    uint8_t peer_id[16], own_id[16];
    uct_rkey_t rkey;

    if ((keys == NULL) ||
        (ucp_rndv_key_cache_get(keys, peer_key, peer_len, &rkey) != UCS_OK) ||
        (uct_rkey_device_id(component, rkey, peer_id) != UCS_OK) ||
        (ucp_rndv_own_key_get(ep->worker, own_key, own_len, &rkey) != UCS_OK) ||
        (uct_rkey_device_id(component, rkey, own_id) != UCS_OK)) {
        return 0;
    }
    return !memcmp(peer_id, own_id, sizeof(own_id));
}

/* ---- caches of unpacked keys ------------------------------------------------ */

ucp_rndv_key_cache_t *ucp_rndv_key_cache_create(uct_component_h component,
                                                size_t key_size)
{
    ucp_rndv_key_cache_t *cache;

    if ((component == NULL) || (key_size == 0)) {
        return NULL;
    }
    cache = calloc(1, sizeof(*cache));
    if (cache == NULL) {
        return NULL;
    }
    cache->component = component;
    cache->key_size  = key_size;
    return cache;
}

static void ucp_rndv_key_entry_clear(ucp_rndv_key_cache_t *cache,
                                     ucp_rndv_key_entry_t *e)
{
    if ((e->last_use != 0) && (e->status == UCS_OK)) {
        uct_rkey_release(cache->component, &e->rkey);
    }
    e->last_use = 0;
}

void ucp_rndv_key_cache_destroy(ucp_rndv_key_cache_t *cache)
{
    unsigned i;

    if (cache == NULL) {
        return;
    }
    for (i = 0; i < UCP_RNDV_KEY_CACHE_ENTRIES; ++i) {
        ucp_rndv_key_entry_clear(cache, &cache->entries[i]);
        free(cache->entries[i].bytes);
    }
    free(cache);
}

static uint64_t ucp_rndv_key_hash(const uint8_t *p, size_t len)
{
    uint64_t hash = 0xcbf29ce484222325ull ^ len;
    uint64_t word;
    size_t i;

    for (i = 0; i + sizeof(word) <= len; i += sizeof(word)) {
        memcpy(&word, p + i, sizeof(word));
        hash = (hash ^ word) * 0x100000001b3ull;
    }
    for (; i < len; ++i) {
        hash = (hash ^ p[i]) * 0x100000001b3ull;
    }
    return hash ^ (hash >> 31);
}

static UCS_F_ALWAYS_INLINE int
ucp_rndv_key_entry_is(const ucp_rndv_key_entry_t *e, uint64_t hash,
                      const void *key, size_t len)
{
    return (e->last_use != 0) && (e->hash == hash) && (e->len == len) &&
           !memcmp(e->bytes, key, len);
}

/* Cold: unpack into the least recently used entry. */
static ucs_status_t ucp_rndv_key_cache_fill(ucp_rndv_key_cache_t *cache,
                                            uint64_t hash, const void *key,
                                            size_t len, uct_rkey_t *rkey_p)
{
    ucp_rndv_key_entry_t *e = &cache->entries[0];
    ucs_status_t status;
    unsigned i;

    for (i = 1; (i < UCP_RNDV_KEY_CACHE_ENTRIES) && (e->last_use != 0); ++i) {
        if (cache->entries[i].last_use < e->last_use) {
            e = &cache->entries[i];
        }
    }
    if (e->last_use != 0) {
        ++cache->stats.evictions;
        ucp_rndv_key_entry_clear(cache, e);
    }
    if ((e->bytes == NULL) &&
        ((e->bytes = malloc(cache->key_size)) == NULL)) {
        return UCS_ERR_NO_MEMORY;
    }
    memcpy(e->bytes, key, len);
    memset(e->bytes + len, 0, cache->key_size - len);
    ++cache->stats.unpacks;
    status = uct_rkey_unpack(cache->component, e->bytes, &e->rkey);
    if (status == UCS_ERR_NO_MEMORY) {
        return status; /* says nothing about the key: not kept */
    }
    e->hash     = hash;
    e->len      = (uint32_t)len;
    e->status   = status;
    e->last_use = ++cache->tick;
    cache->mru  = (unsigned)(e - cache->entries);
    *rkey_p     = e->rkey.rkey;
    return status;
}

ucs_status_t ucp_rndv_key_cache_get(ucp_rndv_key_cache_t *cache, const void *key,
                                    size_t key_len, uct_rkey_t *rkey_p)
{
    uint64_t hash;
    ucp_rndv_key_entry_t *e;
    unsigned i;

    if ((key_len == 0) || (key_len > cache->key_size)) {
        return UCS_ERR_UNREACHABLE;
    }
    hash = ucp_rndv_key_hash(key, key_len);
    e    = &cache->entries[cache->mru];
    if (!ucp_rndv_key_entry_is(e, hash, key, key_len)) {
        for (i = 0, e = NULL; i < UCP_RNDV_KEY_CACHE_ENTRIES; ++i) {
            if (ucp_rndv_key_entry_is(&cache->entries[i], hash, key, key_len)) {
                e          = &cache->entries[i];
                cache->mru = i;
                break;
            }
        }
        if (e == NULL) {
            ++cache->stats.misses;
            return ucp_rndv_key_cache_fill(cache, hash, key, key_len, rkey_p);
        }
    }
    ++cache->stats.hits;
    e->last_use = ++cache->tick;
    *rkey_p     = e->rkey.rkey;
    return e->status;
}

void ucp_rndv_key_cache_stats(const ucp_rndv_key_cache_t *cache,
                              ucp_rndv_key_cache_stats_t *stats)
{
    unsigned i;

    *stats         = cache->stats;
    stats->entries = 0;
    for (i = 0; i < UCP_RNDV_KEY_CACHE_ENTRIES; ++i) {
        stats->entries += (cache->entries[i].last_use != 0);
    }
}

ucp_rndv_key_cache_t *ucp_rndv_ep_keys(ucp_ep_h ep)
{
    ucp_rndv_worker_t *rw = ep->worker->rndv;

    if (ep->rndv_keys == NULL) {
        ep->rndv_keys = ucp_rndv_key_cache_create(rw->ipc_component, rw->key_size);
    }
    return ep->rndv_keys;
}
