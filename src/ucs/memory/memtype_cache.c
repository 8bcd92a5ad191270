#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/memory/memtype_cache_int.h>
#include <ucs/memory/memtype_thread.h>
#include <ucs/config/parser.h>
#include <ucs/debug/log.h>

#include <stdio.h>
#include <stdlib.h>

const char *ucs_memtype_alloc_kind_names[] = {
    [UCS_MEMTYPE_ALLOC_UNKNOWN]     = "unknown",
    [UCS_MEMTYPE_ALLOC_LEGACY]      = "legacy",
    [UCS_MEMTYPE_ALLOC_POOL]        = "pool",
    [UCS_MEMTYPE_ALLOC_VMM]         = "vmm",
    [UCS_MEMTYPE_ALLOC_MANAGED]     = "managed",
    [UCS_MEMTYPE_ALLOC_HOST_PINNED] = "host-pinned",
    [UCS_MEMTYPE_ALLOC_IPC_IMPORT]  = "ipc-import",
    [UCS_MEMTYPE_ALLOC_POOL_IMPORT] = "pool-import",
    [UCS_MEMTYPE_ALLOC_HOST]        = "host",
    [UCS_MEMTYPE_ALLOC_LAST]        = NULL
};


/*
 * Configuration: UCX_MEMTYPE_CACHE. A ternary, like upstream's, so that the
 * values users already set (y, n, try) keep working; y and try both enable.
 */
typedef struct {
    int enable; /* ucs_ternary_auto_value_t */
} ucs_memtype_cache_config_t;

static ucs_config_field_t ucs_memtype_cache_config_fields[] = {
    {"MEMTYPE_CACHE", "try",
     "Cache the memory type of buffers (host, cuda, cuda-managed) and how\n"
     "they were allocated. With \"n\", every lookup asks the CUDA driver.",
     ucs_offsetof(ucs_memtype_cache_config_t, enable), UCS_CONFIG_TYPE_TERNARY,
     0},
    {NULL}
};

static ucs_config_table_entry_t ucs_memtype_cache_config_entry = {
    .name   = "Memory type cache",
    .prefix = "",
    .fields = ucs_memtype_cache_config_fields,
    .size   = sizeof(ucs_memtype_cache_config_t)
};

UCS_CONFIG_REGISTER_TABLE(ucs_memtype_cache_config_entry)

/* Ids of caches; 0 is never used, it marks an empty hit list. */
static _Atomic uint64_t ucs_memtype_cache_last_id;

static pthread_once_t ucs_memtype_cache_global_once = PTHREAD_ONCE_INIT;
static ucs_memtype_cache_t *ucs_memtype_cache_global_cache;
static ucs_status_t ucs_memtype_cache_global_status;


static const void *ucs_memtype_cache_other_map(ucs_memtype_cache_t *cache,
                                               const void *map)
{
    return (map == &cache->maps[0]) ? &cache->maps[1] : &cache->maps[0];
}

/* The map lookups do not search; only the update lock holder modifies it. */
static ucs_interval_map_t *ucs_memtype_cache_inactive(ucs_memtype_cache_t *cache)
{
    const void *active = atomic_load_explicit(&cache->active,
                                              memory_order_relaxed);

    return (ucs_interval_map_t*)ucs_memtype_cache_other_map(cache, active);
}


/* ------------------------------------------------------------------------
 * Records (under the lock)
 */

ucs_memtype_cache_record_t *
ucs_memtype_cache_record_new(ucs_memtype_cache_t *cache,
                             const ucs_memtype_info_t *info)
{
    ucs_memtype_cache_record_t *rec = ucs_mpool_get(&cache->record_mp);

    if (rec == NULL) {
        return NULL;
    }

    rec->info               = *info;
    rec->info.region_start  = NULL;
    rec->info.region_length = 0;
    rec->refcount           = 1; /* the caller's */
    return rec;
}

void ucs_memtype_cache_record_put(ucs_memtype_cache_record_t *rec)
{
    ucs_assert(rec->refcount > 0);
    if (--rec->refcount == 0) {
        ucs_mpool_put(rec);
    }
}

/* Interval map release callback: a range lost a piece, or was split and
 * gained one (remaining == 2). */
static void ucs_memtype_cache_release_cb(void *arg, uintptr_t start,
                                         uintptr_t end, void *value,
                                         unsigned remaining)
{
    ucs_memtype_cache_record_t *rec = value;

    rec->refcount += remaining;
    ucs_memtype_cache_record_put(rec);
}


/* ------------------------------------------------------------------------
 * Changing the maps (under the lock)
 */

/* Make the inactive map the active one; when this returns no search reads
 * the previously active map, which is returned. */
static ucs_interval_map_t *ucs_memtype_cache_switch(ucs_memtype_cache_t *cache)
{
    ucs_interval_map_t *next = ucs_memtype_cache_inactive(cache);
    const void *old          = ucs_memtype_cache_other_map(cache, next);

    /* The generation is odd while `active` changes. A remembered hit is
     * used only while the generation equals the even value it was found
     * under; all three accesses and the lookups' loads of the generation
     * are sequentially consistent, so a lookup that can see the new map
     * (or any effect of a lookup that saw it) sees the generation moved,
     * and never answers from before the switch. */
    atomic_fetch_add_explicit(&cache->gen, 1, memory_order_seq_cst);
    atomic_store_explicit(&cache->active, next, memory_order_seq_cst);
    atomic_fetch_add_explicit(&cache->gen, 1, memory_order_seq_cst);

    ucs_memtype_cache_thread_drain(old);
    return (ucs_interval_map_t*)old;
}

/* Clear [start, end) of one map and, with a record, insert it there. */
static ucs_status_t ucs_memtype_cache_map_apply(ucs_interval_map_t *map,
                                                uintptr_t start, uintptr_t end,
                                                ucs_memtype_cache_record_t *rec)
{
    ucs_status_t status;

    status = ucs_interval_map_remove_range(map, start, end,
                                           ucs_memtype_cache_release_cb, NULL);
    if ((status != UCS_OK) || (rec == NULL)) {
        return status;
    }

    status = ucs_interval_map_insert(map, start, end, rec);
    if (status == UCS_OK) {
        ++rec->refcount;
    }
    return status;
}

/* Empty both maps. Removing everything splits nothing, so it cannot fail. */
void ucs_memtype_cache_clear_locked(ucs_memtype_cache_t *cache)
{
    ucs_interval_map_t *map = ucs_memtype_cache_inactive(cache);

    ucs_interval_map_remove_range(map, 0, UINTPTR_MAX,
                                  ucs_memtype_cache_release_cb, NULL);
    map = ucs_memtype_cache_switch(cache);
    ucs_interval_map_remove_range(map, 0, UINTPTR_MAX,
                                  ucs_memtype_cache_release_cb, NULL);
}

/*
 * Apply one change to both maps: clear [start, end), then insert @a rec
 * there (if not NULL). If either map runs out of memory the two could
 * differ, so both are emptied instead: lookups then ask the resolver, which
 * is slower but still right.
 */
ucs_status_t ucs_memtype_cache_modify(ucs_memtype_cache_t *cache,
                                      uintptr_t start, uintptr_t end,
                                      ucs_memtype_cache_record_t *rec)
{
    ucs_interval_map_t *map = ucs_memtype_cache_inactive(cache);
    ucs_status_t status;

    status = ucs_memtype_cache_map_apply(map, start, end, rec);
    if (status == UCS_OK) {
        map    = ucs_memtype_cache_switch(cache);
        status = ucs_memtype_cache_map_apply(map, start, end, rec);
        if (status == UCS_OK) {
            return UCS_OK;
        }
    }

    ucs_error("memtype cache '%s': cannot store [0x%lx, 0x%lx): %s; "
              "emptying the cache", cache->name, (unsigned long)start,
              (unsigned long)end, ucs_status_string(status));
    ucs_memtype_cache_clear_locked(cache);
    return status;
}


/* ------------------------------------------------------------------------
 * Create, destroy, configuration
 */

static ucs_status_t ucs_memtype_cache_read_config(int *enable_p)
{
    ucs_memtype_cache_config_t config;
    ucs_status_t status;

    status = ucs_config_parser_fill_opts(&config,
                                         &ucs_memtype_cache_config_entry, NULL,
                                         NULL);
    if (status != UCS_OK) {
        return status;
    }

    *enable_p = (config.enable != UCS_NO);
    ucs_config_parser_release_opts(&config, &ucs_memtype_cache_config_entry);
    return UCS_OK;
}

ucs_status_t ucs_memtype_cache_create(const char *name,
                                      ucs_memtype_cache_t **cache_p)
{
    ucs_mpool_params_t mp_params;
    ucs_memtype_cache_t *cache;
    ucs_status_t status;
    unsigned i;
    int enable;

    status = ucs_memtype_cache_read_config(&enable);
    if (status != UCS_OK) {
        goto err;
    }

    cache = aligned_alloc(UCS_CACHE_LINE_SIZE, sizeof(*cache));
    if (cache == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }

    memset(cache, 0, sizeof(*cache));
    snprintf(cache->name, sizeof(cache->name), "%s",
             (name != NULL) ? name : "memtype");
    cache->id = atomic_fetch_add(&ucs_memtype_cache_last_id, 1) + 1;
    atomic_init(&cache->gen, 0);
    atomic_init(&cache->active, &cache->maps[0]);
    atomic_init(&cache->resolver, NULL);
    atomic_init(&cache->enabled, enable);
    atomic_init(&cache->deferred_count, 0);
    atomic_init(&cache->deferred_overflow, 0);
    atomic_init(&cache->deferred_hint, 0);
    for (i = 0; i < UCS_MEMTYPE_CACHE_DEFERRED_MAX; ++i) {
        atomic_init(&cache->deferred[i].state, 0);
    }

    status = ucs_interval_map_init(&cache->maps[0], "memtype_left");
    if (status != UCS_OK) {
        goto err_free;
    }

    status = ucs_interval_map_init(&cache->maps[1], "memtype_right");
    if (status != UCS_OK) {
        goto err_cleanup_left;
    }

    ucs_mpool_params_reset(&mp_params);
    mp_params.obj_size       = sizeof(ucs_memtype_cache_record_t);
    mp_params.objs_per_chunk = UCS_MEMTYPE_CACHE_RECORDS_PER_CHUNK;
    mp_params.name           = "memtype_records";
    status                   = ucs_mpool_init(&cache->record_mp, &mp_params);
    if (status != UCS_OK) {
        goto err_cleanup_right;
    }

    if (pthread_mutex_init(&cache->lock, NULL) != 0) {
        status = UCS_ERR_NO_RESOURCE;
        goto err_cleanup_mp;
    }

    ucs_debug("memtype cache '%s' created, caching %s", cache->name,
              enable ? "enabled" : "disabled (UCX_MEMTYPE_CACHE=n)");
    *cache_p = cache;
    return UCS_OK;

err_cleanup_mp:
    ucs_mpool_cleanup(&cache->record_mp);
err_cleanup_right:
    ucs_interval_map_cleanup(&cache->maps[1], NULL, NULL);
err_cleanup_left:
    ucs_interval_map_cleanup(&cache->maps[0], NULL, NULL);
err_free:
    free(cache);
err:
    return status;
}

void ucs_memtype_cache_destroy(ucs_memtype_cache_t *cache)
{
    ucs_memtype_cache_resolver_t *resolver;

    ucs_debug("memtype cache '%s': destroy with %zu regions", cache->name,
              ucs_interval_map_count(&cache->maps[0]));

    ucs_interval_map_cleanup(&cache->maps[0], ucs_memtype_cache_release_cb,
                             NULL);
    ucs_interval_map_cleanup(&cache->maps[1], ucs_memtype_cache_release_cb,
                             NULL);
    ucs_mpool_cleanup(&cache->record_mp);

    while (cache->resolvers != NULL) {
        resolver         = cache->resolvers;
        cache->resolvers = resolver->older;
        free(resolver);
    }

    pthread_mutex_destroy(&cache->lock);
    free(cache);
}

static void ucs_memtype_cache_global_init(void)
{
    ucs_memtype_cache_global_status =
            ucs_memtype_cache_create("global", &ucs_memtype_cache_global_cache);
}

ucs_status_t ucs_memtype_cache_get_global(ucs_memtype_cache_t **cache_p)
{
    pthread_once(&ucs_memtype_cache_global_once,
                 ucs_memtype_cache_global_init);
    if (ucs_memtype_cache_global_status == UCS_OK) {
        *cache_p = ucs_memtype_cache_global_cache;
    }
    return ucs_memtype_cache_global_status;
}

ucs_status_t ucs_memtype_cache_set_resolver(ucs_memtype_cache_t *cache,
                                            ucs_memtype_cache_resolve_func_t func,
                                            void *arg)
{
    ucs_memtype_cache_resolver_t *resolver = NULL;

    if (func != NULL) {
        resolver = malloc(sizeof(*resolver));
        if (resolver == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        resolver->func = func;
        resolver->arg  = arg;
    }

    pthread_mutex_lock(&cache->lock);
    if (resolver != NULL) {
        resolver->older  = cache->resolvers;
        cache->resolvers = resolver;
    }
    /* release: a lookup that loads the pointer sees func and arg */
    atomic_store_explicit(&cache->resolver, resolver, memory_order_release);
    pthread_mutex_unlock(&cache->lock);
    return UCS_OK;
}


/* ------------------------------------------------------------------------
 * Updates
 */

ucs_status_t ucs_memtype_cache_update_if(ucs_memtype_cache_t *cache,
                                         const void *address, size_t length,
                                         const ucs_memtype_info_t *info,
                                         ucs_memtype_cache_check_func_t check,
                                         void *check_arg)
{
    uintptr_t start = (uintptr_t)address;
    uintptr_t end   = ucs_memtype_cache_end(start, length);
    ucs_memtype_cache_record_t *rec = NULL;
    ucs_status_t status;

    if ((length == 0) || (start >= end) ||
        ((unsigned)info->mem_type > UCS_MEMORY_TYPE_UNKNOWN) ||
        ((unsigned)info->alloc_kind >= UCS_MEMTYPE_ALLOC_LAST)) {
        return UCS_ERR_INVALID_PARAM;
    }

    ucs_trace("memtype cache '%s': update [0x%lx, 0x%lx) %s %s dev %d",
              cache->name, (unsigned long)start, (unsigned long)end,
              ucs_memory_type_names[info->mem_type],
              ucs_memtype_alloc_kind_names[info->alloc_kind], info->device);

    pthread_mutex_lock(&cache->lock);

    /* Checked under the lock, which disable() also holds, so that nothing
     * is stored after disable() emptied the cache. */
    if (!atomic_load_explicit(&cache->enabled, memory_order_relaxed)) {
        status = UCS_OK;
        goto out_unlock;
    }

    /* Removals parked before this update come first: one of them may be
     * the free of an earlier allocation at the same address. */
    ucs_memtype_cache_apply_deferred(cache);

    if ((check != NULL) && !check(check_arg, address, length)) {
        ucs_trace("memtype cache '%s': [0x%lx, 0x%lx) no longer valid, "
                  "not stored", cache->name, (unsigned long)start,
                  (unsigned long)end);
        status = UCS_OK;
        goto out_unlock;
    }

    /* An unknown type is a "forget it": the next lookup asks the resolver */
    if (info->mem_type != UCS_MEMORY_TYPE_UNKNOWN) {
        rec = ucs_memtype_cache_record_new(cache, info);
        if (rec == NULL) {
            /* Still drop what the range overlapped, it may be stale */
            ucs_memtype_cache_modify(cache, start, end, NULL);
            ucs_error("memtype cache '%s': no memory for a record",
                      cache->name);
            status = UCS_ERR_NO_MEMORY;
            goto out_unlock;
        }
    }

    status = ucs_memtype_cache_modify(cache, start, end, rec);
    if (rec != NULL) {
        ucs_memtype_cache_record_put(rec);
    }

out_unlock:
    pthread_mutex_unlock(&cache->lock);
    return status;
}

ucs_status_t ucs_memtype_cache_update(ucs_memtype_cache_t *cache,
                                      const void *address, size_t length,
                                      const ucs_memtype_info_t *info)
{
    return ucs_memtype_cache_update_if(cache, address, length, info, NULL,
                                       NULL);
}

ucs_status_t ucs_memtype_cache_remove(ucs_memtype_cache_t *cache,
                                      const void *address, size_t length)
{
    uintptr_t start = (uintptr_t)address;
    uintptr_t end   = ucs_memtype_cache_end(start, length);
    ucs_status_t status;

    if ((length == 0) || (start >= end)) {
        return UCS_ERR_INVALID_PARAM;
    }

    ucs_trace("memtype cache '%s': remove [0x%lx, 0x%lx)", cache->name,
              (unsigned long)start, (unsigned long)end);

    pthread_mutex_lock(&cache->lock);
    ucs_memtype_cache_apply_deferred(cache);
    status = ucs_memtype_cache_modify(cache, start, end, NULL);
    pthread_mutex_unlock(&cache->lock);
    return status;
}

void ucs_memtype_cache_disable(ucs_memtype_cache_t *cache)
{
    pthread_mutex_lock(&cache->lock);
    if (atomic_load_explicit(&cache->enabled, memory_order_relaxed)) {
        ucs_debug("memtype cache '%s': disabled, %zu regions dropped",
                  cache->name, ucs_interval_map_count(&cache->maps[0]));
        atomic_store_explicit(&cache->enabled, 0, memory_order_seq_cst);
        /* switches the maps, which also invalidates every remembered hit */
        ucs_memtype_cache_clear_locked(cache);
    }
    pthread_mutex_unlock(&cache->lock);
}

int ucs_memtype_cache_is_enabled(const ucs_memtype_cache_t *cache)
{
    return atomic_load_explicit(&cache->enabled, memory_order_relaxed);
}

size_t ucs_memtype_cache_num_regions(ucs_memtype_cache_t *cache)
{
    size_t count;

    pthread_mutex_lock(&cache->lock);
    ucs_memtype_cache_apply_deferred(cache);
    count = ucs_interval_map_count(&cache->maps[0]);
    pthread_mutex_unlock(&cache->lock);
    return count;
}

ucs_status_t ucs_memtype_cache_check(ucs_memtype_cache_t *cache)
{
    const ucs_interval_map_range_t *left, *right;
    const ucs_memtype_cache_record_t *rec;
    ucs_status_t status;

    pthread_mutex_lock(&cache->lock);
    ucs_memtype_cache_apply_deferred(cache);

    status = ucs_interval_map_check(&cache->maps[0]);
    if (status == UCS_OK) {
        status = ucs_interval_map_check(&cache->maps[1]);
    }

    left  = ucs_interval_map_first(&cache->maps[0]);
    right = ucs_interval_map_first(&cache->maps[1]);
    while ((status == UCS_OK) && ((left != NULL) || (right != NULL))) {
        if ((left == NULL) || (right == NULL) ||
            (left->start != right->start) || (left->end != right->end) ||
            (left->value != right->value)) {
            ucs_error("memtype cache '%s': the two maps differ at 0x%lx",
                      cache->name,
                      (unsigned long)((left != NULL) ? left->start :
                                                       right->start));
            status = UCS_ERR_INVALID_PARAM;
            break;
        }

        /* every piece is counted once per map */
        rec = left->value;
        if ((rec->refcount < 2) ||
            ((unsigned)rec->info.mem_type >= UCS_MEMORY_TYPE_LAST)) {
            ucs_error("memtype cache '%s': bad record at [0x%lx, 0x%lx): "
                      "refcount %u type %d", cache->name,
                      (unsigned long)left->start, (unsigned long)left->end,
                      rec->refcount, rec->info.mem_type);
            status = UCS_ERR_INVALID_PARAM;
            break;
        }

        left  = ucs_interval_map_next(&cache->maps[0], left);
        right = ucs_interval_map_next(&cache->maps[1], right);
    }

    pthread_mutex_unlock(&cache->lock);
    return status;
}
