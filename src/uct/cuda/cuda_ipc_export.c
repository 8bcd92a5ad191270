#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_ipc.h"

#include <ucm/api/ucm.h>
#include <ucs/datastruct/hmap.h>
#include <ucs/sys/sys.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Devices whose UUIDs are cached (more are asked of the driver each time). */
#define UCT_CUDA_IPC_UUID_CACHE 64

/*
 * The export cache. An export costs ~0.85 ms on an H200 (GPU-FACTS.md), so
 * each exportable object -- a legacy allocation, a pool allocation, one VMM
 * chunk -- is exported once and its handle kept, keyed by its base address
 * and the driver's buffer id (which changes when the address is reused by
 * a new allocation, so a recycled address never gets a stale handle even
 * if a free event was missed). Entries go away on the ucm free event of
 * their allocation; their fds are closed then.
 *
 * Pools have one shareable fd each, exported on the first export of any of
 * their allocations and kept while any export of theirs is cached (counted
 * per pool), then closed: a pool destroyed and another created at the same
 * handle never inherit its fd. Each pool export gets a process-unique id,
 * which is what keys carry, so importers tell the two apart too.
 *
 * Lookups go through a hash table; a list of all entries serves the range
 * drops of free events and the fd server's check.
 *
 * Locking: one mutex around the table and the lists. Driver calls are made
 * without it, because a hooked driver call may raise a free event whose
 * handler takes it; two threads exporting the same object at once both
 * export, and the second insertion is dropped.
 */

typedef struct uct_cuda_ipc_export_entry {
    ucs_hmap_elem_t                  hash_elem; /**< by kind + base + buffer id */
    uct_cuda_ipc_kind_t              kind;      /**< LEGACY, POOL, VMM or VMM_FABRIC
                                                     (a chunk) */
    uint64_t                         base;
    uint64_t                         length;
    uint64_t                         buffer_id;
    CUipcMemHandle                   legacy;
    uint64_t                         pool_id;   /**< POOL: id of the pool export */
    int                              pool_fd;
    CUmemPoolPtrExportData           pool_ptr;
    int                              fd;        /**< VMM chunk fd, else -1 */
    /** VMM_FABRIC: the chunk's fabric handle */
    uint8_t                          fabric[UCT_CUDA_IPC_FABRIC_HANDLE_SIZE];
    struct uct_cuda_ipc_export_entry *next;
} uct_cuda_ipc_export_entry_t;

typedef struct uct_cuda_ipc_export_pool {
    CUmemoryPool                    pool;
    uint64_t                        pool_id;   /**< unique in this process */
    unsigned                        refs;      /**< cached exports using it */
    int                             fd;
    struct uct_cuda_ipc_export_pool *next;
} uct_cuda_ipc_export_pool_t;

typedef struct {
    uct_cuda_ipc_kind_t kind;
    uint64_t            base;
    uint64_t            buffer_id;
} uct_cuda_ipc_export_key_t;

static pthread_mutex_t uct_cuda_ipc_export_lock = PTHREAD_MUTEX_INITIALIZER;
/* Entries are in a list (for range drops on free events) and, once the
 * table could be set up, in a hash table (for lookups). */
static uct_cuda_ipc_export_entry_t *uct_cuda_ipc_export_entries;
static ucs_hmap_t uct_cuda_ipc_export_map;
static int uct_cuda_ipc_export_map_ok;
static uct_cuda_ipc_export_pool_t *uct_cuda_ipc_export_pools;
static size_t uct_cuda_ipc_export_num_entries;
static uint64_t uct_cuda_ipc_export_driver_calls;
static uint64_t uct_cuda_ipc_export_next_pool_id = 1;
static pthread_once_t uct_cuda_ipc_export_once = PTHREAD_ONCE_INIT;

/* What the driver says about one address. */
typedef struct {
    unsigned           mem_type;
    unsigned           is_managed;
    int                device;
    CUdeviceptr        range_start;
    size_t             range_size;
    unsigned long long buffer_id;
    unsigned           legacy_capable;
    unsigned long long handle_types; /* written as 8 bytes (docs/cudasim.md) */
    CUmemoryPool       pool;
    CUdeviceptr        mapping_base;
    unsigned long long mapping_size;
} uct_cuda_ipc_ptr_attr_t;

static ucs_status_t uct_cuda_ipc_ptr_query(CUdeviceptr ptr, uct_cuda_ipc_ptr_attr_t *a)
{
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        CU_POINTER_ATTRIBUTE_BUFFER_ID,
        CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
        CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
        CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
        CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
        CU_POINTER_ATTRIBUTE_MAPPING_SIZE
    };
    void *data[] = {
        &a->mem_type, &a->is_managed, &a->device, &a->range_start,
        &a->range_size, &a->buffer_id, &a->legacy_capable, &a->handle_types,
        &a->pool, &a->mapping_base, &a->mapping_size
    };
    CUresult res;

    memset(a, 0, sizeof(*a));
    res = cuPointerGetAttributes(sizeof(attrs) / sizeof(attrs[0]), attrs, data, ptr);
    if (res != CUDA_SUCCESS) {
        ucs_debug("cuda_ipc: cuPointerGetAttributes(0x%llx): %s",
                  (unsigned long long)ptr, uct_cuda_cu_name(res));
        return UCS_ERR_INVALID_ADDR;
    }
    return UCS_OK;
}

/* Who we are, as keys say it. getpid() and getuid() are system calls, and
 * every pack and unpack needs the answer (several microseconds per message
 * on a virtualised host), so it is read once and again in a forked child.
 * The uid is the one at first use: a process that changes it later keeps
 * announcing the old one. */
typedef struct {
    uint32_t pid;
    uint32_t uid;
    uint64_t pid_ns;
    uint8_t node_id[16];
} uct_cuda_ipc_owner_t;

static uct_cuda_ipc_owner_t uct_cuda_ipc_owner;
static int uct_cuda_ipc_owner_valid;
static pthread_mutex_t uct_cuda_ipc_owner_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t uct_cuda_ipc_owner_once  = PTHREAD_ONCE_INIT;

static void uct_cuda_ipc_owner_forked(void)
{
    pthread_mutex_init(&uct_cuda_ipc_owner_lock, NULL);
    uct_cuda_ipc_owner_valid = 0;
}

static void uct_cuda_ipc_owner_watch_fork(void)
{
    (void)pthread_atfork(NULL, NULL, uct_cuda_ipc_owner_forked);
}

void uct_cuda_ipc_fill_owner(uct_cuda_ipc_key_t *key)
{
    if (!__atomic_load_n(&uct_cuda_ipc_owner_valid, __ATOMIC_ACQUIRE)) {
        pthread_once(&uct_cuda_ipc_owner_once, uct_cuda_ipc_owner_watch_fork);
        pthread_mutex_lock(&uct_cuda_ipc_owner_lock);
        if (!uct_cuda_ipc_owner_valid) {
            memset(&uct_cuda_ipc_owner, 0, sizeof(uct_cuda_ipc_owner));
            uct_cuda_ipc_owner.pid    = (uint32_t)getpid();
            uct_cuda_ipc_owner.uid    = (uint32_t)getuid();
            uct_cuda_ipc_owner.pid_ns = ucs_sys_get_pid_ns();
            (void)ucs_sys_get_node_id(uct_cuda_ipc_owner.node_id);
            __atomic_store_n(&uct_cuda_ipc_owner_valid, 1, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&uct_cuda_ipc_owner_lock);
    }
    key->pid    = uct_cuda_ipc_owner.pid;
    key->uid    = uct_cuda_ipc_owner.uid;
    key->pid_ns = uct_cuda_ipc_owner.pid_ns;
    memcpy(key->node_id, uct_cuda_ipc_owner.node_id, sizeof(key->node_id));
}

static uint64_t uct_cuda_ipc_export_hash(uct_cuda_ipc_kind_t kind, uint64_t base,
                                         uint64_t buffer_id)
{
    return ucs_hash_u64(base ^ ucs_hash_u64(buffer_id ^ ((uint64_t)kind << 56)));
}

static int uct_cuda_ipc_export_equal(const ucs_hmap_elem_t *elem, const void *arg_key,
                                     void *arg)
{
    const uct_cuda_ipc_export_entry_t *e = ucs_container_of(elem,
                                                            uct_cuda_ipc_export_entry_t,
                                                            hash_elem);
    const uct_cuda_ipc_export_key_t *key = arg_key;

    return (e->base == key->base) && (e->kind == key->kind) &&
           (e->buffer_id == key->buffer_id);
}

/* Lock held. Drop one reference of pool export @a pool_id; the last one
 * closes its fd. */
static void uct_cuda_ipc_export_pool_put_locked(uint64_t pool_id)
{
    uct_cuda_ipc_export_pool_t **pp = &uct_cuda_ipc_export_pools;
    uct_cuda_ipc_export_pool_t *p;

    while ((p = *pp) != NULL) {
        if (p->pool_id == pool_id) {
            if (--p->refs == 0) {
                *pp = p->next;
                ucs_debug("cuda_ipc: closing pool %p export fd %d", (void*)p->pool,
                          p->fd);
                close(p->fd);
                free(p);
            }
            return;
        }
        pp = &p->next;
    }
}

/* Call with the lock held. Unlinks entries of [start, start + length). */
static void uct_cuda_ipc_export_drop_range(uint64_t start, uint64_t length)
{
    uct_cuda_ipc_export_entry_t **pp = &uct_cuda_ipc_export_entries;
    uct_cuda_ipc_export_entry_t *e;

    while ((e = *pp) != NULL) {
        if ((e->base >= start) && (e->base < start + length)) {
            *pp = e->next;
            if (uct_cuda_ipc_export_map_ok) {
                (void)ucs_hmap_remove(&uct_cuda_ipc_export_map, &e->hash_elem);
            }
            if (e->fd >= 0) {
                close(e->fd);
            }
            if (e->kind == UCT_CUDA_IPC_KIND_POOL) {
                uct_cuda_ipc_export_pool_put_locked(e->pool_id);
            }
            ucs_debug("cuda_ipc: dropped export of 0x%lx..+%lu (buffer %lu)",
                      (unsigned long)e->base, (unsigned long)e->length,
                      (unsigned long)e->buffer_id);
            free(e);
            --uct_cuda_ipc_export_num_entries;
        } else {
            pp = &e->next;
        }
    }
}

static void uct_cuda_ipc_export_free_event(ucm_event_type_t event_type,
                                           ucm_event_t *event, void *arg)
{
    uint64_t start = (uintptr_t)event->mem_type.address;

    if (event->mem_type.size == 0) {
        return;
    }
    pthread_mutex_lock(&uct_cuda_ipc_export_lock);
    uct_cuda_ipc_export_drop_range(start, event->mem_type.size);
    pthread_mutex_unlock(&uct_cuda_ipc_export_lock);
}

static void uct_cuda_ipc_export_subscribe(void)
{
    ucs_status_t status;

    uct_cuda_ipc_export_map_ok = (ucs_hmap_init(&uct_cuda_ipc_export_map,
                                                uct_cuda_ipc_export_equal,
                                                NULL) == UCS_OK);

    status = ucm_set_event_handler(UCM_EVENT_MEM_TYPE_FREE, 1000,
                                   uct_cuda_ipc_export_free_event, NULL);
    /* Without events entries still never go stale (buffer ids are checked
     * on every export); only their fds stay open longer. */
    ucs_debug("cuda_ipc: export cache free events: %s", ucs_status_string(status));
}

/* Lock held. */
static uct_cuda_ipc_export_entry_t *
uct_cuda_ipc_export_find(uct_cuda_ipc_kind_t kind, uint64_t base, uint64_t buffer_id)
{
    uct_cuda_ipc_export_key_t key = {kind, base, buffer_id};
    uct_cuda_ipc_export_entry_t *e;
    ucs_hmap_elem_t *elem;

    if (uct_cuda_ipc_export_map_ok) {
        elem = ucs_hmap_lookup(&uct_cuda_ipc_export_map,
                               uct_cuda_ipc_export_hash(kind, base, buffer_id), &key);
        return (elem == NULL) ? NULL :
               ucs_container_of(elem, uct_cuda_ipc_export_entry_t, hash_elem);
    }

    for (e = uct_cuda_ipc_export_entries; e != NULL; e = e->next) {
        if ((e->base == base) && (e->kind == kind) && (e->buffer_id == buffer_id)) {
            return e;
        }
    }
    return NULL;
}

/* Insert @a e unless an equal entry appeared meanwhile; either way the
 * entry in the cache is copied to @a out. Takes the lock. */
static void uct_cuda_ipc_export_insert(uct_cuda_ipc_export_entry_t *e,
                                       uct_cuda_ipc_export_entry_t *out)
{
    uct_cuda_ipc_export_entry_t *found;

    pthread_mutex_lock(&uct_cuda_ipc_export_lock);
    found = uct_cuda_ipc_export_find(e->kind, e->base, e->buffer_id);
    if (found == NULL) {
        /* Whatever was cached at these addresses belongs to a dead buffer. */
        uct_cuda_ipc_export_drop_range(e->base, e->length);
        e->next = uct_cuda_ipc_export_entries;
        uct_cuda_ipc_export_entries = e;
        if (uct_cuda_ipc_export_map_ok) {
            ucs_hmap_insert(&uct_cuda_ipc_export_map, &e->hash_elem,
                            uct_cuda_ipc_export_hash(e->kind, e->base, e->buffer_id));
        }
        ++uct_cuda_ipc_export_num_entries;
        found = e;
        e     = NULL;
    }
    *out = *found;
    if ((e != NULL) && (e->kind == UCT_CUDA_IPC_KIND_POOL)) {
        uct_cuda_ipc_export_pool_put_locked(e->pool_id); /* ours is dropped */
    }
    pthread_mutex_unlock(&uct_cuda_ipc_export_lock);

    if (e != NULL) {
        if (e->fd >= 0) {
            close(e->fd);
        }
        free(e);
    }
}

static int uct_cuda_ipc_export_lookup(uct_cuda_ipc_kind_t kind, uint64_t base,
                                      uint64_t buffer_id,
                                      uct_cuda_ipc_export_entry_t *out)
{
    uct_cuda_ipc_export_entry_t *e;

    pthread_mutex_lock(&uct_cuda_ipc_export_lock);
    e = uct_cuda_ipc_export_find(kind, base, buffer_id);
    if (e != NULL) {
        *out = *e;
    }
    pthread_mutex_unlock(&uct_cuda_ipc_export_lock);
    return e != NULL;
}

/* Lock held. The export of @a pool, with one more reference, or NULL. */
static uct_cuda_ipc_export_pool_t *uct_cuda_ipc_export_pool_ref_locked(CUmemoryPool pool)
{
    uct_cuda_ipc_export_pool_t *p;

    for (p = uct_cuda_ipc_export_pools; p != NULL; p = p->next) {
        if (p->pool == pool) {
            ++p->refs;
            return p;
        }
    }
    return NULL;
}

/* A reference to the pool's shareable fd (exported on first use): its fd
 * and id. Release with uct_cuda_ipc_export_pool_put_locked(). */
static ucs_status_t uct_cuda_ipc_export_pool_get(CUmemoryPool pool, int *fd_p,
                                                 uint64_t *pool_id_p)
{
    uct_cuda_ipc_export_pool_t *p, *found;
    ucs_status_t status;
    int fd = -1;

    pthread_mutex_lock(&uct_cuda_ipc_export_lock);
    found = uct_cuda_ipc_export_pool_ref_locked(pool);
    if (found != NULL) {
        *fd_p      = found->fd;
        *pool_id_p = found->pool_id;
    }
    pthread_mutex_unlock(&uct_cuda_ipc_export_lock);
    if (found != NULL) {
        return UCS_OK;
    }

    status = UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                           cuMemPoolExportToShareableHandle(
                                   &fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                   0));
    if (status != UCS_OK) {
        return status;
    }
    __atomic_fetch_add(&uct_cuda_ipc_export_driver_calls, 1, __ATOMIC_RELAXED);

    (void)uct_cuda_ipc_fd_server_ensure(); /* for importers without pidfd */

    p = malloc(sizeof(*p));
    if (p == NULL) {
        close(fd);
        return UCS_ERR_NO_MEMORY;
    }

    pthread_mutex_lock(&uct_cuda_ipc_export_lock);
    found = uct_cuda_ipc_export_pool_ref_locked(pool); /* exported meanwhile? */
    if (found == NULL) {
        p->pool                   = pool;
        p->pool_id                = uct_cuda_ipc_export_next_pool_id++;
        p->fd                     = fd;
        p->refs                   = 1;
        p->next                   = uct_cuda_ipc_export_pools;
        uct_cuda_ipc_export_pools = p;
        found                     = p;
        p                         = NULL;
    }
    *fd_p      = found->fd;
    *pool_id_p = found->pool_id;
    pthread_mutex_unlock(&uct_cuda_ipc_export_lock);

    if (p != NULL) {
        close(fd);
        free(p);
    } else {
        ucs_debug("cuda_ipc: exported pool %p as fd %d (id %lu)", (void*)pool, fd,
                  (unsigned long)*pool_id_p);
    }
    return UCS_OK;
}

/* Export one legacy or pool allocation (slow path). */
static ucs_status_t uct_cuda_ipc_export_object(uct_cuda_ipc_kind_t kind,
                                               const uct_cuda_ipc_ptr_attr_t *a,
                                               uct_cuda_ipc_export_entry_t *out)
{
    uct_cuda_ipc_export_entry_t *e;
    ucs_status_t status;

    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    e->kind      = kind;
    e->base      = a->range_start;
    e->length    = a->range_size;
    e->buffer_id = a->buffer_id;
    e->fd        = -1;
    e->pool_fd   = -1;

    if (kind == UCT_CUDA_IPC_KIND_LEGACY) {
        status = UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                               cuIpcGetMemHandle(&e->legacy, a->range_start));
    } else {
        status = uct_cuda_ipc_export_pool_get(a->pool, &e->pool_fd, &e->pool_id);
        if (status == UCS_OK) {
            status = UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                                   cuMemPoolExportPointer(&e->pool_ptr,
                                                          a->range_start));
            if (status != UCS_OK) {
                pthread_mutex_lock(&uct_cuda_ipc_export_lock);
                uct_cuda_ipc_export_pool_put_locked(e->pool_id);
                pthread_mutex_unlock(&uct_cuda_ipc_export_lock);
            }
        }
    }
    if (status != UCS_OK) {
        free(e);
        return status;
    }

    __atomic_fetch_add(&uct_cuda_ipc_export_driver_calls, 1, __ATOMIC_RELAXED);
    ucs_debug("cuda_ipc: exported %s allocation 0x%llx..+%zu (buffer %llu)",
              (kind == UCT_CUDA_IPC_KIND_LEGACY) ? "legacy" : "pool",
              (unsigned long long)a->range_start, a->range_size, a->buffer_id);
    uct_cuda_ipc_export_insert(e, out);
    return UCS_OK;
}

/* Export one VMM chunk as a POSIX fd (VMM) or a fabric handle (VMM_FABRIC);
 * slow path. */
static ucs_status_t uct_cuda_ipc_export_chunk(uct_cuda_ipc_kind_t kind,
                                              const uct_cuda_ipc_ptr_attr_t *a,
                                              uct_cuda_ipc_export_entry_t *out)
{
    uint8_t fabric[UCT_CUDA_IPC_FABRIC_HANDLE_SIZE] = {0};
    CUmemGenericAllocationHandle handle;
    uct_cuda_ipc_export_entry_t *e;
    ucs_status_t status;
    int fd = -1;

    status = UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                           cuMemRetainAllocationHandle(
                                   &handle, (void*)(uintptr_t)a->mapping_base));
    if (status != UCS_OK) {
        return status;
    }
    if (kind == UCT_CUDA_IPC_KIND_VMM) {
        status = UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                               cuMemExportToShareableHandle(
                                       &fd, handle,
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    } else {
#if UCT_CUDA_IPC_HAVE_FABRIC
        status = UCT_CUDA_CALL(UCS_LOG_LEVEL_DEBUG,
                               cuMemExportToShareableHandle(
                                       fabric, handle, CU_MEM_HANDLE_TYPE_FABRIC, 0));
#else
        status = UCS_ERR_UNSUPPORTED;
#endif
    }
    (void)cuMemRelease(handle); /* drops only the reference we took */
    if (status != UCS_OK) {
        return status;
    }

    if (fd >= 0) {
        (void)uct_cuda_ipc_fd_server_ensure(); /* for importers without pidfd */
    }

    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        if (fd >= 0) {
            close(fd);
        }
        return UCS_ERR_NO_MEMORY;
    }
    e->kind      = kind;
    e->base      = a->mapping_base;
    e->length    = a->mapping_size;
    e->buffer_id = a->buffer_id;
    e->fd        = fd;
    e->pool_fd   = -1;
    memcpy(e->fabric, fabric, sizeof(e->fabric));
    __atomic_fetch_add(&uct_cuda_ipc_export_driver_calls, 1, __ATOMIC_RELAXED);
    if (fd >= 0) {
        ucs_debug("cuda_ipc: exported VMM chunk 0x%llx..+%llu as fd %d",
                  (unsigned long long)a->mapping_base, a->mapping_size, fd);
    } else {
        ucs_debug("cuda_ipc: exported VMM chunk 0x%llx..+%llu as a fabric handle",
                  (unsigned long long)a->mapping_base, a->mapping_size);
    }
    uct_cuda_ipc_export_insert(e, out);
    return UCS_OK;
}

/* Every chunk of [address, address + length) of VMM memory. */
static ucs_status_t uct_cuda_ipc_export_vmm(CUdeviceptr address, size_t length,
                                            const uct_cuda_ipc_ptr_attr_t *first,
                                            uct_cuda_ipc_key_t *key)
{
    CUdeviceptr end = address + ((length > 0) ? length : 1);
    uct_cuda_ipc_export_entry_t entry;
    uct_cuda_ipc_ptr_attr_t a = *first;
    uint64_t id_hash          = 0xcbf29ce484222325ull;
    CUdeviceptr p             = address;
    uct_cuda_ipc_kind_t kind;
    unsigned long long type;
    ucs_status_t status;
    unsigned n = 0, max_chunks;

    /* A POSIX fd where allowed (same host, no IMEX needed), else a fabric
     * handle; every chunk must allow the chosen type. */
    if (first->handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
        kind       = UCT_CUDA_IPC_KIND_VMM;
        type       = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        max_chunks = UCT_CUDA_IPC_RKEY_MAX_CHUNKS;
    } else {
        kind       = UCT_CUDA_IPC_KIND_VMM_FABRIC;
        type       = UCT_CUDA_IPC_HANDLE_FABRIC;
        max_chunks = UCT_CUDA_IPC_RKEY_MAX_FABRIC_CHUNKS;
    }

    key->remote_base = first->mapping_base;
    while (p < end) {
        if ((p != address) && (uct_cuda_ipc_ptr_query(p, &a) != UCS_OK)) {
            return UCS_ERR_UNSUPPORTED;
        }
        if ((a.mapping_size == 0) || (a.mem_type != CU_MEMORYTYPE_DEVICE) ||
            !(a.handle_types & type) || (n == max_chunks)) {
            ucs_debug("cuda_ipc: VMM range 0x%llx..+%zu not exportable at chunk %u",
                      (unsigned long long)address, length, n);
            return UCS_ERR_UNSUPPORTED;
        }
        if (!uct_cuda_ipc_export_lookup(kind, a.mapping_base, a.buffer_id, &entry)) {
            status = uct_cuda_ipc_export_chunk(kind, &a, &entry);
            if (status != UCS_OK) {
                return UCS_ERR_UNSUPPORTED;
            }
        }
        key->chunks[n].offset = entry.base - key->remote_base;
        key->chunks[n].size   = entry.length;
        key->chunks[n].fd     = (kind == UCT_CUDA_IPC_KIND_VMM) ? entry.fd : 0;
        memcpy(key->chunks[n].fabric, entry.fabric, sizeof(entry.fabric));
        id_hash = (id_hash ^ entry.buffer_id) * 0x100000001b3ull;
        id_hash = (id_hash ^ (uint64_t)entry.fd) * 0x100000001b3ull;
        ++n;
        p = a.mapping_base + a.mapping_size;
    }

    key->kind       = kind;
    key->num_chunks = n;
    key->length     = key->chunks[n - 1].offset + key->chunks[n - 1].size;
    key->buffer_id  = id_hash;
    return UCS_OK;
}

/* The UUID of device @a ordinal, cached: a key is packed per message and the
 * answer never changes while the process lives. Zero when unknown. */
void uct_cuda_ipc_device_uuid(int ordinal, uint8_t uuid[16])
{
    static uint8_t cache[UCT_CUDA_IPC_UUID_CACHE][16];
    static int valid[UCT_CUDA_IPC_UUID_CACHE];
    CUuuid u;

    if ((ordinal >= 0) && (ordinal < UCT_CUDA_IPC_UUID_CACHE) &&
        __atomic_load_n(&valid[ordinal], __ATOMIC_ACQUIRE)) {
        memcpy(uuid, cache[ordinal], 16);
        return;
    }
    if (cuDeviceGetUuid(&u, (CUdevice)ordinal) != CUDA_SUCCESS) {
        ucs_debug("cuda_ipc: no UUID for device %d", ordinal);
        memset(uuid, 0, 16);
        return;
    }
    memcpy(uuid, u.bytes, 16);
    if ((ordinal >= 0) && (ordinal < UCT_CUDA_IPC_UUID_CACHE)) {
        memcpy(cache[ordinal], u.bytes, 16);
        __atomic_store_n(&valid[ordinal], 1, __ATOMIC_RELEASE);
    }
}

ucs_status_t uct_cuda_ipc_export(const void *address, size_t length,
                                 uct_cuda_ipc_key_t *key)
{
    CUdeviceptr ptr = (CUdeviceptr)(uintptr_t)address;
    uct_cuda_ipc_export_entry_t entry;
    uct_cuda_ipc_ptr_attr_t a;
    uct_cuda_ipc_kind_t kind;

    pthread_once(&uct_cuda_ipc_export_once, uct_cuda_ipc_export_subscribe);

    memset(key, 0, sizeof(*key));
    uct_cuda_ipc_fill_owner(key);
    key->kind        = UCT_CUDA_IPC_KIND_NONE;
    key->remote_base = ptr;
    key->length      = length;

    if ((uct_cuda_ipc_ptr_query(ptr, &a) != UCS_OK) ||
        (a.mem_type != CU_MEMORYTYPE_DEVICE) || a.is_managed) {
        return UCS_OK; /* host or managed memory: nothing to export */
    }
    key->device = (uint32_t)a.device;
    uct_cuda_ipc_device_uuid(a.device, key->device_uuid);

    if (a.legacy_capable) {
        kind = UCT_CUDA_IPC_KIND_LEGACY;
    } else if ((a.pool != NULL) &&
               (a.handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) {
        kind = UCT_CUDA_IPC_KIND_POOL;
    } else if ((a.pool == NULL) &&
               (a.handle_types & (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR |
                                  UCT_CUDA_IPC_HANDLE_FABRIC))) {
        if (uct_cuda_ipc_export_vmm(ptr, length, &a, key) != UCS_OK) {
            key->kind       = UCT_CUDA_IPC_KIND_NONE;
            key->num_chunks = 0;
            key->remote_base = ptr;
            key->length      = length;
        }
        return UCS_OK;
    } else {
        ucs_debug("cuda_ipc: 0x%llx is not exportable (legacy %u, handle types "
                  "0x%llx, pool %p)", (unsigned long long)ptr, a.legacy_capable,
                  a.handle_types, (void*)a.pool);
        return UCS_OK;
    }

    if (!uct_cuda_ipc_export_lookup(kind, a.range_start, a.buffer_id, &entry) &&
        (uct_cuda_ipc_export_object(kind, &a, &entry) != UCS_OK)) {
        return UCS_OK; /* the driver refused: not exportable */
    }

    key->kind        = kind;
    key->remote_base = entry.base;
    key->length      = entry.length;
    key->buffer_id   = entry.buffer_id;
    key->legacy      = entry.legacy;
    key->pool_id     = entry.pool_id;
    key->pool_fd     = entry.pool_fd;
    key->pool_ptr    = entry.pool_ptr;
    return UCS_OK;
}

int uct_cuda_ipc_export_fd_dup(int fd)
{
    uct_cuda_ipc_export_entry_t *e;
    uct_cuda_ipc_export_pool_t *p;
    int live = 0, copy = -1;

    if (fd < 0) {
        return -1;
    }
    pthread_mutex_lock(&uct_cuda_ipc_export_lock);
    for (e = uct_cuda_ipc_export_entries; (e != NULL) && !live; e = e->next) {
        live = (e->fd == fd);
    }
    for (p = uct_cuda_ipc_export_pools; (p != NULL) && !live; p = p->next) {
        live = (p->fd == fd);
    }
    /* Duplicated under the lock: once it is released the number may be
     * closed and reused for an unrelated file. */
    if (live) {
        copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    }
    pthread_mutex_unlock(&uct_cuda_ipc_export_lock);
    return copy;
}

size_t uct_cuda_ipc_export_cache_size(void)
{
    size_t n;

    pthread_mutex_lock(&uct_cuda_ipc_export_lock);
    n = uct_cuda_ipc_export_num_entries;
    pthread_mutex_unlock(&uct_cuda_ipc_export_lock);
    return n;
}

uint64_t uct_cuda_ipc_export_count(void)
{
    return __atomic_load_n(&uct_cuda_ipc_export_driver_calls, __ATOMIC_RELAXED);
}
