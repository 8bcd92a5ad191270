#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_ipc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The importer's mapping cache (one per iface, so per worker and device).
 * A hash table finds the mapping of (exporter, remote base) in O(1), so a
 * hit costs a hash and a few compares; a list keeps the LRU order.
 *
 * A mapping is identified by its exporter (pid, pid namespace), the remote
 * base of the exported object, its kind and its buffer id. A lookup that
 * finds the same base with another buffer id has met a recycled address:
 * the old mapping leaves the cache (it is unmapped once no operation uses
 * it) and the new object is imported.
 *
 * The cache is bounded by UCX_CUDA_IPC_CACHE_MAX_REGIONS and _MAX_SIZE:
 * after each import, the least recently used mappings that no operation
 * uses are unmapped until both limits hold. Mappings in use may exceed the
 * limits for a while; the cache is trimmed again as soon as one of them
 * becomes idle. With UCX_CUDA_IPC_CACHE=n a mapping leaves the cache as
 * soon as it is made, so it is unmapped when its operation completes.
 *
 * Not thread safe: an iface's operations are serialised by its user.
 */

/* Cached mappings are found by exporter and remote base: one per key. */
typedef struct {
    uint32_t pid;
    uint64_t pid_ns;
    uint64_t remote_base;
} uct_cuda_ipc_map_key_t;

/* Mappings made by every iface of the process (uct_cuda_ipc_import_count). */
static uint64_t uct_cuda_ipc_import_driver_calls;

uint64_t uct_cuda_ipc_import_count(void)
{
    return __atomic_load_n(&uct_cuda_ipc_import_driver_calls, __ATOMIC_RELAXED);
}

static uint64_t uct_cuda_ipc_map_hash(uint32_t pid, uint64_t pid_ns, uint64_t base)
{
    return ucs_hash_u64(base ^ ucs_hash_u64(((uint64_t)pid << 32) ^ pid_ns));
}

static int uct_cuda_ipc_map_equal(const ucs_hmap_elem_t *elem, const void *arg_key,
                                  void *arg)
{
    const uct_cuda_ipc_mapping_t *m   = ucs_container_of(elem, uct_cuda_ipc_mapping_t,
                                                         hash_elem);
    const uct_cuda_ipc_map_key_t *key = arg_key;

    return (m->remote_base == key->remote_base) && (m->pid == key->pid) &&
           (m->pid_ns == key->pid_ns);
}

ucs_status_t uct_cuda_ipc_cache_init(uct_cuda_ipc_cache_t *cache,
                                     const uct_cuda_ipc_cache_config_t *config,
                                     CUdevice device)
{
    memset(cache, 0, sizeof(*cache));
    cache->config = *config;
    cache->device = device;
    uct_cuda_ipc_device_uuid((int)device, cache->device_uuid);
    return ucs_hmap_init(&cache->map, uct_cuda_ipc_map_equal, NULL);
}

/* Why an import step failed, from its errno @a err: out of fds is the
 * caller's limit and said so (the fetch has logged it); anything else is
 * "cannot import". */
static ucs_status_t uct_cuda_ipc_import_status(int err)
{
    return uct_cuda_ipc_fd_is_exhausted(err) ? UCS_ERR_EXCEEDS_LIMIT :
                                               UCS_ERR_UNREACHABLE;
}

/* A driver import that failed (@a res) while it needed fds of its own can
 * leave EMFILE in errno (@a err): the same limit as the fetch's. */
static ucs_status_t uct_cuda_ipc_import_driver_status(const char *what,
                                                      const uct_cuda_ipc_key_t *key,
                                                      CUresult res, int err)
{
    if (res == CUDA_SUCCESS) {
        return UCS_OK;
    }
    if (uct_cuda_ipc_fd_is_exhausted(err)) {
        ucs_error("cuda_ipc: %s of pid %u failed (%s): %s (RLIMIT_NOFILE)", what,
                  key->pid, uct_cuda_cu_name(res), strerror(err));
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    ucs_debug("cuda_ipc: %s of pid %u failed: %s", what, key->pid,
              uct_cuda_cu_name(res));
    return UCS_ERR_UNREACHABLE;
}

static CUmemAccessDesc uct_cuda_ipc_rw_access(CUdevice device)
{
    CUmemAccessDesc desc;

    memset(&desc, 0, sizeof(desc));
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id   = device;
    desc.flags         = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return desc;
}

static uct_cuda_ipc_pool_import_t *
uct_cuda_ipc_pool_find(uct_cuda_ipc_cache_t *cache, const uct_cuda_ipc_key_t *key)
{
    uct_cuda_ipc_pool_import_t *p;

    for (p = cache->pools; p != NULL; p = p->next) {
        if ((p->pid == key->pid) && (p->pid_ns == key->pid_ns) &&
            (p->pool_id == key->pool_id)) {
            return p;
        }
    }
    return NULL;
}

/* The last mapping from an imported pool is gone: destroy the import. */
static void uct_cuda_ipc_pool_put(uct_cuda_ipc_cache_t *cache,
                                  uct_cuda_ipc_pool_import_t *imp)
{
    uct_cuda_ipc_pool_import_t **pp;

    if (--imp->mappings > 0) {
        return;
    }
    for (pp = &cache->pools; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == imp) {
            *pp = imp->next;
            break;
        }
    }
    (void)UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, cuMemPoolDestroy(imp->pool));
    free(imp);
}

/* The peer's pool, imported once and given access for our device. */
static ucs_status_t uct_cuda_ipc_pool_get(uct_cuda_ipc_cache_t *cache,
                                          const uct_cuda_ipc_key_t *key,
                                          CUmemoryPool *pool_p)
{
    CUmemAccessDesc desc = uct_cuda_ipc_rw_access(cache->device);
    uct_cuda_ipc_pool_import_t *p;
    ucs_status_t status;
    CUmemoryPool pool;
    CUresult res;
    int fd;

    p = uct_cuda_ipc_pool_find(cache, key);
    if (p != NULL) {
        *pool_p = p->pool;
        return UCS_OK;
    }

    fd = uct_cuda_ipc_fd_fetch(key, key->pool_fd, cache->config.fd_transfer);
    if (fd < 0) {
        return uct_cuda_ipc_import_status(errno);
    }
    errno  = 0;
    res    = cuMemPoolImportFromShareableHandle(&pool, (void*)(uintptr_t)fd,
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                                0);
    status = uct_cuda_ipc_import_driver_status("importing the pool", key, res,
                                               errno);
    close(fd);
    if (status != UCS_OK) {
        return status;
    }
    status = UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, cuMemPoolSetAccess(pool, &desc, 1));
    if (status != UCS_OK) {
        goto err_destroy;
    }

    p = malloc(sizeof(*p));
    if (p == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_destroy;
    }
    p->pid      = key->pid;
    p->pid_ns   = key->pid_ns;
    p->pool_id  = key->pool_id;
    p->pool     = pool;
    p->mappings = 0;
    p->next     = cache->pools;
    cache->pools = p;
    ucs_debug("cuda_ipc: imported pool 0x%lx of pid %u", (unsigned long)key->pool_id,
              key->pid);
    *pool_p = pool;
    return UCS_OK;

err_destroy:
    (void)cuMemPoolDestroy(pool);
    return UCS_ERR_UNREACHABLE;
}

/* Reserve one range and map every chunk at its offset (slow path). */
static ucs_status_t uct_cuda_ipc_import_vmm(uct_cuda_ipc_cache_t *cache,
                                           const uct_cuda_ipc_key_t *key,
                                           CUdeviceptr *ptr_p)
{
    CUmemAccessDesc desc = uct_cuda_ipc_rw_access(cache->device);
    CUmemGenericAllocationHandle handle;
    ucs_status_t status = UCS_ERR_UNREACHABLE;
    CUdeviceptr va;
    unsigned i, mapped = 0;
    CUresult res;
    int fd;

    if (UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                      cuMemAddressReserve(&va, key->length, 0, 0, 0)) != UCS_OK) {
        return UCS_ERR_UNREACHABLE;
    }

    for (i = 0; i < key->num_chunks; ++i) {
        if (key->kind == UCT_CUDA_IPC_KIND_VMM_FABRIC) {
#if UCT_CUDA_IPC_HAVE_FABRIC
            status = UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                                   cuMemImportFromShareableHandle(
                                           &handle, (void*)key->chunks[i].fabric,
                                           CU_MEM_HANDLE_TYPE_FABRIC));
#else
            status = UCS_ERR_UNSUPPORTED;
#endif
        } else {
            fd = uct_cuda_ipc_fd_fetch(key, key->chunks[i].fd,
                                       cache->config.fd_transfer);
            if (fd < 0) {
                status = uct_cuda_ipc_import_status(errno);
                goto err_unmap;
            }
            errno  = 0;
            res    = cuMemImportFromShareableHandle(
                    &handle, (void*)(uintptr_t)fd,
                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
            status = uct_cuda_ipc_import_driver_status("importing a VMM chunk",
                                                       key, res, errno);
            close(fd);
        }
        if (status != UCS_OK) {
            goto err_unmap;
        }
        status = UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                               cuMemMap(va + key->chunks[i].offset,
                                        key->chunks[i].size, 0, handle, 0));
        /* The mapping holds the physical memory; our handle may go. */
        (void)cuMemRelease(handle);
        if (status != UCS_OK) {
            status = UCS_ERR_UNREACHABLE;
            goto err_unmap;
        }
        ++mapped;
    }

    status = UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                           cuMemSetAccess(va, key->length, &desc, 1));
    if (status != UCS_OK) {
        status = UCS_ERR_UNREACHABLE;
        goto err_unmap;
    }
    *ptr_p = va;
    return UCS_OK;

err_unmap:
    if (mapped > 0) {
        (void)cuMemUnmap(va, key->length); /* accepts holes */
    }
    (void)cuMemAddressFree(va, key->length);
    return (status == UCS_ERR_EXCEEDS_LIMIT) ? status : UCS_ERR_UNREACHABLE;
}

static ucs_status_t uct_cuda_ipc_import(uct_cuda_ipc_cache_t *cache,
                                       const uct_cuda_ipc_key_t *key,
                                       CUdeviceptr *ptr_p)
{
    CUmemoryPool pool;
    ucs_status_t status;

    switch (key->kind) {
    case UCT_CUDA_IPC_KIND_LEGACY:
        status = UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                               cuIpcOpenMemHandle(ptr_p, key->legacy,
                                                  CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        break;
    case UCT_CUDA_IPC_KIND_POOL:
        status = uct_cuda_ipc_pool_get(cache, key, &pool);
        if (status == UCS_OK) {
            status = UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                                   cuMemPoolImportPointer(
                                           ptr_p, pool,
                                           (CUmemPoolPtrExportData*)&key->pool_ptr));
        }
        break;
    case UCT_CUDA_IPC_KIND_VMM:
    case UCT_CUDA_IPC_KIND_VMM_FABRIC:
        status = uct_cuda_ipc_import_vmm(cache, key, ptr_p);
        break;
    default:
        status = UCS_ERR_UNREACHABLE;
        break;
    }
    if ((status == UCS_OK) || (status == UCS_ERR_EXCEEDS_LIMIT)) {
        return status;
    }
    return UCS_ERR_UNREACHABLE;
}

static void uct_cuda_ipc_unmap(uct_cuda_ipc_mapping_t *m)
{
    ucs_debug("cuda_ipc: unmapping %s object 0x%lx of pid %u (local 0x%llx)",
              (m->kind == UCT_CUDA_IPC_KIND_LEGACY) ? "legacy" :
              (m->kind == UCT_CUDA_IPC_KIND_POOL) ? "pool" : "VMM",
              (unsigned long)m->remote_base, m->pid,
              (unsigned long long)m->local_base);
    switch (m->kind) {
    case UCT_CUDA_IPC_KIND_LEGACY:
        (void)UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, cuIpcCloseMemHandle(m->local_base));
        break;
    case UCT_CUDA_IPC_KIND_POOL:
        /* Imported pool pointers are freed by the importer first. */
        (void)UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, cuMemFree(m->local_base));
        if (m->pool != NULL) {
            uct_cuda_ipc_pool_put(m->cache, m->pool);
        }
        break;
    case UCT_CUDA_IPC_KIND_VMM:
    case UCT_CUDA_IPC_KIND_VMM_FABRIC:
        (void)UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, cuMemUnmap(m->local_base, m->length));
        (void)UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                            cuMemAddressFree(m->local_base, m->length));
        break;
    default:
        break;
    }
    free(m);
}

/* Unlink @a m from the LRU list (no accounting). */
static void uct_cuda_ipc_cache_unlink(uct_cuda_ipc_cache_t *cache,
                                      uct_cuda_ipc_mapping_t *m)
{
    if (m->prev != NULL) {
        m->prev->next = m->next;
    } else {
        cache->head = m->next;
    }
    if (m->next != NULL) {
        m->next->prev = m->prev;
    } else {
        cache->tail = m->prev;
    }
    m->prev = m->next = NULL;
}

/* Take @a m out of the cache; it is unmapped when its last user leaves. */
static void uct_cuda_ipc_cache_remove(uct_cuda_ipc_cache_t *cache,
                                      uct_cuda_ipc_mapping_t *m)
{
    uct_cuda_ipc_cache_unlink(cache, m);
    (void)ucs_hmap_remove(&cache->map, &m->hash_elem);
    m->cached = 0;
    --cache->num_regions;
    cache->total_size -= m->length;
    uct_cuda_ipc_mapping_put(cache, m); /* the cache's own reference */
}

static void uct_cuda_ipc_cache_push_front(uct_cuda_ipc_cache_t *cache,
                                          uct_cuda_ipc_mapping_t *m)
{
    m->prev = NULL;
    m->next = cache->head;
    if (cache->head != NULL) {
        cache->head->prev = m;
    } else {
        cache->tail = m;
    }
    cache->head = m;
}

/* Evict unused mappings, least recently used first, until within limits. */
static void uct_cuda_ipc_cache_trim(uct_cuda_ipc_cache_t *cache)
{
    uct_cuda_ipc_mapping_t *m = cache->tail, *prev;

    while ((m != NULL) && ((cache->num_regions > cache->config.max_regions) ||
                           (cache->total_size > cache->config.max_size))) {
        prev = m->prev;
        if (m->refcount == 1) {
            ucs_debug("cuda_ipc: evicting mapping of 0x%lx (pid %u)",
                      (unsigned long)m->remote_base, m->pid);
            uct_cuda_ipc_cache_remove(cache, m);
        }
        m = prev;
    }
}

/* Whether the memory of @a key lives on a GPU this process sees and ours
 * reaches peer-to-peer: only then may a kernel of ours touch the mapping
 * (a fault there would poison the context). Once per import. */
static int uct_cuda_ipc_peer_reachable(const uct_cuda_ipc_cache_t *cache,
                                       const uct_cuda_ipc_key_t *key)
{
    int count = uct_cuda_device_count();
    uint8_t uuid[16];
    int i, can = 0;

    if (uct_cuda_ipc_uuid_unknown(key->device_uuid)) {
        return 0;
    }
    for (i = 0; i < count; ++i) {
        uct_cuda_ipc_device_uuid(i, uuid);
        if (!memcmp(uuid, key->device_uuid, sizeof(uuid))) {
            return (i != (int)cache->device) &&
                   (cuDeviceCanAccessPeer(&can, cache->device, (CUdevice)i) ==
                    CUDA_SUCCESS) &&
                   can;
        }
    }
    return 0; /* a GPU this process does not see */
}

ucs_status_t uct_cuda_ipc_cache_get(uct_cuda_ipc_cache_t *cache,
                                    const uct_cuda_ipc_key_t *key,
                                    uct_cuda_ipc_mapping_t **mapping_p)
{
    uct_cuda_ipc_map_key_t map_key = {key->pid, key->pid_ns, key->remote_base};
    uint64_t hash = uct_cuda_ipc_map_hash(key->pid, key->pid_ns, key->remote_base);
    uct_cuda_ipc_mapping_t *m;
    ucs_hmap_elem_t *elem;
    ucs_status_t status;
    CUdeviceptr ptr;

    elem = ucs_hmap_lookup(&cache->map, hash, &map_key);
    if (elem != NULL) {
        m = ucs_container_of(elem, uct_cuda_ipc_mapping_t, hash_elem);
        if ((m->buffer_id == key->buffer_id) && (m->kind == key->kind) &&
            (m->length == key->length)) {
            /* Hit: no driver call; move to the front of the LRU list. */
            ++m->refcount;
            if (m != cache->head) {
                uct_cuda_ipc_cache_unlink(cache, m);
                uct_cuda_ipc_cache_push_front(cache, m);
            }
            ++cache->hits;
            *mapping_p = m;
            return UCS_OK;
        }
        ucs_debug("cuda_ipc: 0x%lx of pid %u is a new buffer (id %lu, was %lu): "
                  "replacing its mapping", (unsigned long)key->remote_base, key->pid,
                  (unsigned long)key->buffer_id, (unsigned long)m->buffer_id);
        uct_cuda_ipc_cache_remove(cache, m);
    }

    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = uct_cuda_ipc_import(cache, key, &ptr);
    if (status != UCS_OK) {
        ucs_debug("cuda_ipc: could not import 0x%lx..+%lu of pid %u",
                  (unsigned long)key->remote_base, (unsigned long)key->length,
                  key->pid);
        free(m);
        return status;
    }
    if (key->kind == UCT_CUDA_IPC_KIND_POOL) {
        m->pool = uct_cuda_ipc_pool_find(cache, key);
        ++m->pool->mappings;
    }
    ++cache->imports;
    __atomic_fetch_add(&uct_cuda_ipc_import_driver_calls, 1, __ATOMIC_RELAXED);

    m->cache       = cache;
    m->kind        = key->kind;
    m->pid         = key->pid;
    m->pid_ns      = key->pid_ns;
    m->remote_base = key->remote_base;
    m->length      = key->length;
    m->buffer_id   = key->buffer_id;
    m->local_base  = ptr;
    /* By the key's UUID: the driver reports an imported pointer as memory
     * of the importing context's device even when it lives on a peer. */
    m->local_gpu   = !uct_cuda_ipc_uuid_unknown(key->device_uuid) &&
                     !memcmp(key->device_uuid, cache->device_uuid,
                             sizeof(cache->device_uuid));
    m->peer_gpu    = !m->local_gpu && uct_cuda_ipc_peer_reachable(cache, key);
    m->refcount    = 2; /* the cache's and the caller's */
    m->cached      = 1;
    ucs_debug("cuda_ipc: mapped 0x%lx..+%lu of pid %u at 0x%llx (%s GPU)",
              (unsigned long)key->remote_base, (unsigned long)key->length, key->pid,
              (unsigned long long)ptr,
              m->local_gpu ? "our" : m->peer_gpu ? "a peer-accessible" :
                                                   "another or unknown");

    uct_cuda_ipc_cache_push_front(cache, m);
    ucs_hmap_insert(&cache->map, &m->hash_elem, hash);
    ++cache->num_regions;
    cache->total_size += m->length;
    if (!cache->config.enable) {
        uct_cuda_ipc_cache_remove(cache, m); /* unmapped after this operation */
    } else {
        uct_cuda_ipc_cache_trim(cache);
    }
    *mapping_p = m;
    return UCS_OK;
}

void uct_cuda_ipc_mapping_put(uct_cuda_ipc_cache_t *cache,
                              uct_cuda_ipc_mapping_t *mapping)
{
    if (--mapping->refcount == 0) {
        uct_cuda_ipc_unmap(mapping);
    } else if ((mapping->refcount == 1) && mapping->cached &&
               ((cache->num_regions > cache->config.max_regions) ||
                (cache->total_size > cache->config.max_size))) {
        /* Over the limits because copies held their mappings: now that one
         * is idle, trim. */
        uct_cuda_ipc_cache_trim(cache);
    }
}

void uct_cuda_ipc_cache_cleanup(uct_cuda_ipc_cache_t *cache)
{
    uct_cuda_ipc_pool_import_t *p;

    while (cache->head != NULL) {
        uct_cuda_ipc_cache_remove(cache, cache->head);
    }
    while ((p = cache->pools) != NULL) {
        cache->pools = p->next;
        (void)UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG, cuMemPoolDestroy(p->pool));
        free(p);
    }
    ucs_hmap_cleanup(&cache->map);
}
