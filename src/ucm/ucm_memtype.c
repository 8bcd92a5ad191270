#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * The memory-type cache (libucs) fed by the memory events (libucm).
 *
 * Each attached cache has three handlers, all with the cache as argument:
 *  - MEM_TYPE_ALLOC -> update, at a low priority (-1000): other subscribers
 *    that look up the memory they are told about see it typed already;
 *  - MEM_TYPE_FREE and VM_UNMAPPED -> remove, at a high priority (1000):
 *    other subscribers can still look up memory that is being freed.
 * VM_UNMAPPED is subscribed without installing anything: it comes from the
 * CUDA hooks (pinned host and managed memory) and from callers that report
 * their own unmaps (ucm_vm_munmap, Open MPI); it removes host extents the
 * cache derived from /proc/self/maps for a mapping that goes away.
 *
 * The resolver of the CUDA module is installed through a wrapper that
 * counts calls (ucm_memtype_resolver_count()).
 */

#include <ucm/ucm_memtype.h>
#include <ucm/ucm_memtype_provider.h>
#include <ucm/api/ucm.h>
#include <ucm/ucm_config.h>

#include <ucs/datastruct/list.h>
#include <ucs/debug/log.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

/* The event's kind and handle types are stored in the cache by a cast:
 * the two libraries define the same values (ucm.h, memtype_cache.h). */
_Static_assert((int)UCM_MEM_ALLOC_KIND_UNKNOWN ==
               (int)UCS_MEMTYPE_ALLOC_UNKNOWN, "alloc kind UNKNOWN");
_Static_assert((int)UCM_MEM_ALLOC_KIND_LEGACY == (int)UCS_MEMTYPE_ALLOC_LEGACY,
               "alloc kind LEGACY");
_Static_assert((int)UCM_MEM_ALLOC_KIND_POOL == (int)UCS_MEMTYPE_ALLOC_POOL,
               "alloc kind POOL");
_Static_assert((int)UCM_MEM_ALLOC_KIND_VMM == (int)UCS_MEMTYPE_ALLOC_VMM,
               "alloc kind VMM");
_Static_assert((int)UCM_MEM_ALLOC_KIND_MANAGED ==
               (int)UCS_MEMTYPE_ALLOC_MANAGED, "alloc kind MANAGED");
_Static_assert((int)UCM_MEM_ALLOC_KIND_HOST_PINNED ==
               (int)UCS_MEMTYPE_ALLOC_HOST_PINNED, "alloc kind HOST_PINNED");
_Static_assert((int)UCM_MEM_ALLOC_KIND_IPC_IMPORT ==
               (int)UCS_MEMTYPE_ALLOC_IPC_IMPORT, "alloc kind IPC_IMPORT");
_Static_assert((int)UCM_MEM_ALLOC_KIND_POOL_IMPORT ==
               (int)UCS_MEMTYPE_ALLOC_POOL_IMPORT, "alloc kind POOL_IMPORT");
_Static_assert((int)UCM_MEM_ALLOC_KIND_LAST <= (int)UCS_MEMTYPE_ALLOC_LAST,
               "every event kind has a cache kind");
_Static_assert((int)UCM_MEM_HANDLE_TYPE_POSIX_FD ==
               (int)UCS_MEMTYPE_HANDLE_POSIX_FD, "handle type POSIX_FD");
_Static_assert((int)UCM_MEM_HANDLE_TYPE_WIN32 == (int)UCS_MEMTYPE_HANDLE_WIN32,
               "handle type WIN32");
_Static_assert((int)UCM_MEM_HANDLE_TYPE_WIN32_KMT ==
               (int)UCS_MEMTYPE_HANDLE_WIN32_KMT, "handle type WIN32_KMT");
_Static_assert((int)UCM_MEM_HANDLE_TYPE_FABRIC ==
               (int)UCS_MEMTYPE_HANDLE_FABRIC, "handle type FABRIC");
_Static_assert((int)UCM_MEM_HANDLE_TYPE_LEGACY_IPC ==
               (int)UCS_MEMTYPE_HANDLE_LEGACY_IPC, "handle type LEGACY_IPC");

/* Allocations first, frees last (see the top of the file). */
#define UCM_MEMTYPE_ALLOC_PRIORITY  (-1000)
#define UCM_MEMTYPE_FREE_PRIORITY   1000

typedef struct {
    ucs_list_link_t     list;
    ucs_memtype_cache_t *cache;
    unsigned            refcount;
    int                 subscribed; /* holds the three handlers */
} ucm_memtype_attachment_t;

static pthread_mutex_t ucm_memtype_lock = PTHREAD_MUTEX_INITIALIZER;
static UCS_LIST_HEAD(ucm_memtype_attachments);
static const ucm_memtype_provider_t *ucm_memtype_provider;
static uint64_t ucm_memtype_resolve_calls;


void ucm_memtype_set_provider(const ucm_memtype_provider_t *provider)
{
    __atomic_store_n(&ucm_memtype_provider, provider, __ATOMIC_RELEASE);
    ucs_debug("memtype: provider '%s' registered", provider->name);
}

uint64_t ucm_memtype_resolver_count(void)
{
    return __atomic_load_n(&ucm_memtype_resolve_calls, __ATOMIC_RELAXED);
}

/* The resolver installed on attached caches. */
static ucs_status_t ucm_memtype_resolve(void *arg, const void *address,
                                        size_t length,
                                        ucs_memtype_info_t *info)
{
    const ucm_memtype_provider_t *provider = arg;

    __atomic_fetch_add(&ucm_memtype_resolve_calls, 1, __ATOMIC_RELAXED);
    return provider->resolve(NULL, address, length, info);
}


/*
 * Handlers
 */

static void ucm_memtype_info_from_event(const ucm_event_t *event,
                                        ucs_memtype_info_t *info)
{
    info->mem_type      = event->mem_type.mem_type;
    info->device        = event->mem_type.device;
    info->alloc_kind    = (ucs_memtype_alloc_kind_t)event->mem_type.alloc_kind;
    info->handle_types  = event->mem_type.handle_types;
    info->pool          = event->mem_type.pool;
    info->alloc_base    = event->mem_type.alloc_base;
    info->alloc_length  = event->mem_type.alloc_length;
    info->region_start  = NULL;
    info->region_length = 0;

    if (((unsigned)info->mem_type > UCS_MEMORY_TYPE_UNKNOWN) ||
        ((unsigned)event->mem_type.alloc_kind >= UCM_MEM_ALLOC_KIND_LAST)) {
        /* A producer we do not understand: forget the range rather than
         * store something we cannot vouch for; the resolver will ask. */
        info->mem_type   = UCS_MEMORY_TYPE_UNKNOWN;
        info->alloc_kind = UCS_MEMTYPE_ALLOC_UNKNOWN;
    }
}

/* The check of replayed allocations, asked under the cache's lock. */
static int ucm_memtype_alloc_is_live(void *arg, const void *address,
                                     size_t length)
{
    const ucm_memtype_provider_t *provider =
            __atomic_load_n(&ucm_memtype_provider, __ATOMIC_ACQUIRE);

    return (provider != NULL) && (provider->alloc_is_live != NULL) &&
           provider->alloc_is_live(address, length);
}

static void ucm_memtype_alloc_cb(ucm_event_type_t event_type,
                                 ucm_event_t *event, void *arg)
{
    ucs_memtype_cache_t *cache = arg;
    ucs_memtype_info_t info;
    ucs_status_t status;

    if (event->mem_type.size == 0) {
        return;
    }

    /* A replayed allocation may have been freed, and its free delivered,
     * since it was copied for the replay: store it only if it is live. */
    ucm_memtype_info_from_event(event, &info);
    status = ucs_memtype_cache_update_if(
            cache, event->mem_type.address, event->mem_type.size, &info,
            (event->mem_type.flags & UCM_MEM_TYPE_FLAG_REPLAYED) ?
                    ucm_memtype_alloc_is_live : NULL,
            NULL);
    if (status != UCS_OK) {
        /* NO_MEMORY empties the cache, which stays correct */
        ucs_debug("memtype: update of [%p, +%zu) failed: %s",
                  event->mem_type.address, event->mem_type.size,
                  ucs_status_string(status));
    }
}

/*
 * Frees and unmaps may be reported from inside malloc() or free(), with
 * locks held that a thread updating the cache may be waiting for: the
 * removal is parked without waiting, allocating or logging
 * (ucs_memtype_cache_remove_deferred()), and applied before the next
 * lookup can answer from the range.
 */
static void ucm_memtype_free_cb(ucm_event_type_t event_type,
                                ucm_event_t *event, void *arg)
{
    ucs_memtype_cache_remove_deferred(arg, event->mem_type.address,
                                      event->mem_type.size);
}

static void ucm_memtype_unmap_cb(ucm_event_type_t event_type,
                                 ucm_event_t *event, void *arg)
{
    ucs_memtype_cache_remove_deferred(arg, event->vm_unmapped.address,
                                      event->vm_unmapped.size);
}

static void ucm_memtype_unsubscribe(ucs_memtype_cache_t *cache)
{
    ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, ucm_memtype_alloc_cb,
                            cache);
    ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED, ucm_memtype_unmap_cb,
                            cache);
    ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_FREE, ucm_memtype_free_cb,
                            cache);
}

/*
 * Frees first: from the moment allocations reach the cache (the replay of
 * the live ones included), their frees must reach it too.
 */
static ucs_status_t ucm_memtype_subscribe(ucs_memtype_cache_t *cache)
{
    ucs_status_t status;

    status = ucm_set_event_handler(UCM_EVENT_MEM_TYPE_FREE,
                                   UCM_MEMTYPE_FREE_PRIORITY,
                                   ucm_memtype_free_cb, cache);
    if (status != UCS_OK) {
        return status;
    }

    status = ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED |
                                   UCM_EVENT_FLAG_NO_INSTALL,
                                   UCM_MEMTYPE_FREE_PRIORITY,
                                   ucm_memtype_unmap_cb, cache);
    if (status != UCS_OK) {
        goto err_unset;
    }

    status = ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                                   UCM_EVENT_FLAG_EXISTING_ALLOC,
                                   UCM_MEMTYPE_ALLOC_PRIORITY,
                                   ucm_memtype_alloc_cb, cache);
    if (status != UCS_OK) {
        goto err_unset;
    }

    return UCS_OK;

err_unset:
    ucm_memtype_unsubscribe(cache); /* ignores handlers that are not set */
    return status;
}


/*
 * Attach and detach
 */

static ucm_memtype_attachment_t *ucm_memtype_find(ucs_memtype_cache_t *cache)
{
    ucm_memtype_attachment_t *att;

    ucs_list_for_each(att, &ucm_memtype_attachments, list) {
        if (att->cache == cache) {
            return att;
        }
    }
    return NULL;
}

/* The subscription failed for a reason other than a bad parameter: the
 * hooks cannot produce events, so cached answers could go stale. */
static void ucm_memtype_hooks_unavailable(ucs_memtype_cache_t *cache,
                                          ucs_status_t status)
{
    ucm_config_t config;

    if ((ucm_config_read(&config) == UCS_OK) &&
        (config.cuda_hook_mode == UCM_CUDA_HOOK_MODE_NONE)) {
        ucs_debug("memtype: UCX_MEM_CUDA_HOOK_MODE=none: memory-type "
                  "caching disabled, every lookup queries the CUDA driver");
    } else {
        ucs_warn_once("CUDA allocation hooks unavailable (%s): memory-type "
                      "caching disabled, every lookup queries the CUDA "
                      "driver", ucs_status_string(status));
    }
    ucs_memtype_cache_disable(cache);
}

/* Subscribed with hooks installed: keep the subscription only if the hooks
 * see every allocator. */
static int ucm_memtype_check_mode(const ucm_memtype_provider_t *provider,
                                  ucs_memtype_cache_t *cache)
{
    ucm_cuda_hook_mode_t mode = provider->hook_mode();
    const char *name          = (mode < UCM_CUDA_HOOK_MODE_LAST) ?
                                ucm_cuda_hook_mode_names[mode] : "unknown";

    if (mode == UCM_CUDA_HOOK_MODE_BISTRO) {
        return 1;
    }

    /* reloc misses the calls cudart makes through cuGetProcAddress: their
     * frees would leave stale regions, their allocations could land where
     * the cache holds an older answer. */
    ucs_debug("memtype: CUDA hooks in %s mode do not see cudart's calls: "
              "memory-type caching disabled, every lookup queries the CUDA "
              "driver", name);
    ucm_memtype_unsubscribe(cache);
    ucs_memtype_cache_disable(cache);
    return 0;
}

ucs_status_t ucm_memtype_cache_attach(ucs_memtype_cache_t *cache)
{
    const ucm_memtype_provider_t *provider;
    ucm_memtype_attachment_t *att;
    ucs_status_t status;

    provider = __atomic_load_n(&ucm_memtype_provider, __ATOMIC_ACQUIRE);
    if (provider == NULL) {
        ucs_debug("memtype: no CUDA module loaded, nothing to attach");
        return UCS_ERR_UNSUPPORTED;
    }

    pthread_mutex_lock(&ucm_memtype_lock);

    att = ucm_memtype_find(cache);
    if (att != NULL) {
        ++att->refcount;
        status = UCS_OK;
        goto out_unlock;
    }

    att = calloc(1, sizeof(*att));
    if (att == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto out_unlock;
    }
    att->cache    = cache;
    att->refcount = 1;

    /* A cache that stores nothing (UCX_MEMTYPE_CACHE=n) needs no events. */
    if (ucs_memtype_cache_is_enabled(cache)) {
        status = ucm_memtype_subscribe(cache);
        if (status == UCS_OK) {
            att->subscribed = ucm_memtype_check_mode(provider, cache);
        } else if ((status == UCS_ERR_INVALID_PARAM) ||
                   (status == UCS_ERR_BUSY)) {
            goto err_free; /* a bad UCX_MEM_* value is an error, as said */
        } else {
            ucm_memtype_hooks_unavailable(cache, status);
        }
    }

    /* After the subscription: an answer cached before frees were seen
     * could outlive its allocation. */
    status = ucs_memtype_cache_set_resolver(cache, ucm_memtype_resolve,
                                            (void*)provider);
    if (status != UCS_OK) {
        goto err_unsubscribe;
    }

    ucs_list_add_tail(&ucm_memtype_attachments, &att->list);
    ucs_debug("memtype: cache %p attached (%s, resolver of '%s')",
              (void*)cache, att->subscribed ? "events" : "queries only",
              provider->name);
    status = UCS_OK;
    goto out_unlock;

err_unsubscribe:
    if (att->subscribed) {
        ucm_memtype_unsubscribe(cache);
    }
err_free:
    free(att);
out_unlock:
    pthread_mutex_unlock(&ucm_memtype_lock);
    return status;
}

void ucm_memtype_cache_detach(ucs_memtype_cache_t *cache)
{
    ucm_memtype_attachment_t *att;

    pthread_mutex_lock(&ucm_memtype_lock);

    att = ucm_memtype_find(cache);
    if ((att == NULL) || (--att->refcount > 0)) {
        goto out_unlock;
    }

    ucs_list_del(&att->list);
    if (att->subscribed) {
        ucm_memtype_unsubscribe(cache);
    }
    ucs_memtype_cache_set_resolver(cache, NULL, NULL);

    /* Without free events every region could go stale. */
    ucs_memtype_cache_remove(cache, NULL, SIZE_MAX);
    ucs_debug("memtype: cache %p detached", (void*)cache);
    free(att);

out_unlock:
    pthread_mutex_unlock(&ucm_memtype_lock);
}
