#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * What the CUDA hooks know, and the events built from it.
 *
 * Three tables, one lock:
 *  - live allocations by address (what a free or unmap will announce, and
 *    what FLAG_EXISTING_ALLOC replays), each holding its event data;
 *  - memory pools by handle: location and export handle types, from
 *    cuMemPoolCreate, plus each device's default pool (queried once), so a
 *    stream-ordered allocation is typed without asking the driver;
 *  - VMM physical allocations by handle, from cuMemCreate: a cuMemMap of
 *    one of them is typed from it.
 * The lock is never held while handlers run or while the driver is called,
 * so a handler (or the driver) calling back into a hooked function cannot
 * deadlock on it.
 */

#include <ucm/cuda/cudamem.h>
#include <ucm/event/event.h>

#include <ucs/datastruct/hmap.h>
#include <ucs/debug/log.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    ucs_hmap_elem_t elem;
    uintptr_t       key;      /* start address */
    ucm_event_t     event;    /* mem_type member */
    unsigned        refs;     /* IPC imports: opens not yet closed */
} ucm_cuda_alloc_t;

typedef struct {
    ucs_hmap_elem_t   elem;
    uintptr_t         key;    /* CUmemoryPool or physical handle */
    ucs_memory_type_t mem_type;
    int               device;
    uint32_t          handle_types;
    size_t            size;   /* physical allocations only */
} ucm_cuda_object_t;

#if HAVE_DECL_CUMEMCREATE
/* Handle types are passed on by value (ucm.h). */
_Static_assert((int)UCM_MEM_HANDLE_TYPE_POSIX_FD ==
               (int)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
               "POSIX fd handle type bit differs from the driver's");
_Static_assert((int)UCM_MEM_HANDLE_TYPE_WIN32 == (int)CU_MEM_HANDLE_TYPE_WIN32,
               "Win32 handle type bit differs from the driver's");
_Static_assert((int)UCM_MEM_HANDLE_TYPE_WIN32_KMT ==
               (int)CU_MEM_HANDLE_TYPE_WIN32_KMT,
               "Win32 KMT handle type bit differs from the driver's");
#if HAVE_DECL_CU_MEM_HANDLE_TYPE_FABRIC
_Static_assert((int)UCM_MEM_HANDLE_TYPE_FABRIC == (int)CU_MEM_HANDLE_TYPE_FABRIC,
               "fabric handle type bit differs from the driver's");
#endif
#endif

static pthread_mutex_t ucm_cuda_track_lock = PTHREAD_MUTEX_INITIALIZER;
static int ucm_cuda_track_initialized;
static int ucm_cuda_default_pools_known;
static ucs_hmap_t ucm_cuda_allocs;
static ucs_hmap_t ucm_cuda_pools;
static ucs_hmap_t ucm_cuda_vmm_handles;

static int ucm_cuda_alloc_equal(const ucs_hmap_elem_t *elem, const void *key,
                                void *arg)
{
    return ucs_container_of(elem, ucm_cuda_alloc_t, elem)->key ==
           *(const uintptr_t*)key;
}

static int ucm_cuda_object_equal(const ucs_hmap_elem_t *elem, const void *key,
                                 void *arg)
{
    return ucs_container_of(elem, ucm_cuda_object_t, elem)->key ==
           *(const uintptr_t*)key;
}

/* Called with the lock held. */
static int ucm_cuda_track_init(void)
{
    if (ucm_cuda_track_initialized) {
        return 1;
    }

    if (ucs_hmap_init(&ucm_cuda_allocs, ucm_cuda_alloc_equal, NULL) !=
        UCS_OK) {
        return 0;
    }
    if (ucs_hmap_init(&ucm_cuda_pools, ucm_cuda_object_equal, NULL) !=
        UCS_OK) {
        goto err_allocs;
    }
    if (ucs_hmap_init(&ucm_cuda_vmm_handles, ucm_cuda_object_equal, NULL) !=
        UCS_OK) {
        goto err_pools;
    }

    ucm_cuda_track_initialized = 1;
    return 1;

err_pools:
    ucs_hmap_cleanup(&ucm_cuda_pools);
err_allocs:
    ucs_hmap_cleanup(&ucm_cuda_allocs);
    return 0;
}

static ucm_cuda_alloc_t *ucm_cuda_alloc_find(uintptr_t key)
{
    ucs_hmap_elem_t *elem = ucs_hmap_lookup(&ucm_cuda_allocs,
                                            ucs_hash_u64(key), &key);

    return (elem == NULL) ? NULL :
           ucs_container_of(elem, ucm_cuda_alloc_t, elem);
}

static ucm_cuda_object_t *ucm_cuda_object_find(ucs_hmap_t *table,
                                               uintptr_t key)
{
    ucs_hmap_elem_t *elem = ucs_hmap_lookup(table, ucs_hash_u64(key), &key);

    return (elem == NULL) ? NULL :
           ucs_container_of(elem, ucm_cuda_object_t, elem);
}

/* Remember @a event as a live allocation, replacing a stale record of the
 * same address (whose free the hooks missed). The record is allocated
 * before the lock is taken and a replaced one freed after it is released:
 * the lock is never held across malloc() or free(). */
static void ucm_cuda_alloc_insert(const ucm_event_t *event, unsigned refs)
{
    uintptr_t key            = (uintptr_t)event->mem_type.address;
    ucm_cuda_alloc_t *fresh  = malloc(sizeof(*fresh));
    ucm_cuda_alloc_t *alloc;

    pthread_mutex_lock(&ucm_cuda_track_lock);
    if (!ucm_cuda_track_init()) {
        goto out;
    }

    alloc = ucm_cuda_alloc_find(key);
    if (alloc == NULL) {
        if (fresh == NULL) {
            goto out;
        }
        alloc = fresh;
        fresh = NULL;
        alloc->key = key;
        ucs_hmap_insert(&ucm_cuda_allocs, &alloc->elem, ucs_hash_u64(key));
    }
    alloc->event = *event;
    alloc->refs  = refs;
out:
    pthread_mutex_unlock(&ucm_cuda_track_lock);
    free(fresh);
}

/* Forget the allocation at @a key; copies its event data out. */
static int ucm_cuda_alloc_remove(uintptr_t key, ucm_event_t *event)
{
    ucm_cuda_alloc_t *alloc = NULL;

    pthread_mutex_lock(&ucm_cuda_track_lock);
    if (ucm_cuda_track_initialized) {
        alloc = ucm_cuda_alloc_find(key);
        if (alloc != NULL) {
            *event = alloc->event;
            ucs_hmap_remove(&ucm_cuda_allocs, &alloc->elem);
        }
    }
    pthread_mutex_unlock(&ucm_cuda_track_lock);

    free(alloc);
    return alloc != NULL;
}

int ucm_cuda_track_is_live(const void *address, size_t size)
{
    ucm_cuda_alloc_t *alloc;
    int live = 0;

    pthread_mutex_lock(&ucm_cuda_track_lock);
    if (ucm_cuda_track_initialized) {
        alloc = ucm_cuda_alloc_find((uintptr_t)address);
        live  = (alloc != NULL) && (alloc->event.mem_type.size == size);
    }
    pthread_mutex_unlock(&ucm_cuda_track_lock);
    return live;
}

static void ucm_cuda_object_insert(ucs_hmap_t *table,
                                   const ucm_cuda_object_t *object)
{
    ucm_cuda_object_t *fresh = malloc(sizeof(*fresh));
    ucm_cuda_object_t *elem;

    pthread_mutex_lock(&ucm_cuda_track_lock);
    if (!ucm_cuda_track_init()) {
        goto out;
    }

    elem = ucm_cuda_object_find(table, object->key);
    if (elem == NULL) {
        if (fresh == NULL) {
            goto out;
        }
        *fresh = *object;
        ucs_hmap_insert(table, &fresh->elem, ucs_hash_u64(object->key));
        fresh = NULL;
    } else {
        elem->mem_type     = object->mem_type;
        elem->device       = object->device;
        elem->handle_types = object->handle_types;
        elem->size         = object->size;
    }
out:
    pthread_mutex_unlock(&ucm_cuda_track_lock);
    free(fresh);
}

static void ucm_cuda_object_remove(ucs_hmap_t *table, uintptr_t key)
{
    ucm_cuda_object_t *elem = NULL;

    pthread_mutex_lock(&ucm_cuda_track_lock);
    if (ucm_cuda_track_initialized) {
        elem = ucm_cuda_object_find(table, key);
        if (elem != NULL) {
            ucs_hmap_remove(table, &elem->elem);
        }
    }
    pthread_mutex_unlock(&ucm_cuda_track_lock);
    free(elem);
}

static int ucm_cuda_object_get(ucs_hmap_t *table, uintptr_t key,
                               ucm_cuda_object_t *object)
{
    ucm_cuda_object_t *elem;
    int found = 0;

    pthread_mutex_lock(&ucm_cuda_track_lock);
    if (ucm_cuda_track_initialized) {
        elem = ucm_cuda_object_find(table, key);
        if (elem != NULL) {
            *object = *elem;
            found   = 1;
        }
    }
    pthread_mutex_unlock(&ucm_cuda_track_lock);
    return found;
}

/* Where a CUmemLocation puts memory. */
static void ucm_cuda_location(CUmemLocationType type, int id,
                              ucs_memory_type_t *mem_type, int *device)
{
    if (type == CU_MEM_LOCATION_TYPE_DEVICE) {
        *mem_type = UCS_MEMORY_TYPE_CUDA;
        *device   = id;
    } else {
        /* HOST, HOST_NUMA, HOST_NUMA_CURRENT: the CPU's memory. */
        *mem_type = UCS_MEMORY_TYPE_HOST;
        *device   = -1;
    }
}

static int ucm_cuda_current_device(void)
{
    CUdevice device;

    return (cuCtxGetDevice(&device) == CUDA_SUCCESS) ? (int)device : -1;
}

static void ucm_cuda_event_init(ucm_event_t *event, uintptr_t address,
                                size_t size, ucs_memory_type_t mem_type,
                                int device, ucm_mem_alloc_kind_t kind,
                                uint32_t handle_types)
{
    memset(event, 0, sizeof(*event));
    event->mem_type.address      = (void*)address;
    event->mem_type.size         = size;
    event->mem_type.mem_type     = mem_type;
    event->mem_type.sys_dev      = UCS_SYS_DEVICE_ID_UNKNOWN;
    event->mem_type.device       = device;
    event->mem_type.alloc_kind   = kind;
    event->mem_type.handle_types = handle_types;
    event->mem_type.alloc_base   = (void*)address;
    event->mem_type.alloc_length = size;
}

static int ucm_cuda_event_cpu_visible(const ucm_event_t *event)
{
    return (event->mem_type.mem_type < UCS_MEMORY_TYPE_LAST) &&
           (UCS_BIT(event->mem_type.mem_type) &
            UCS_MEMORY_TYPES_CPU_ACCESSIBLE);
}

/* Handlers get a copy: what they do to it cannot change our records. */
static void ucm_cuda_dispatch_alloc(const ucm_event_t *event)
{
    ucm_event_t copy = *event;
    ucm_event_t vm;

    ucm_event_dispatch(UCM_EVENT_MEM_TYPE_ALLOC, &copy);

    /* Pinned host and managed memory are also new CPU mappings. */
    if (ucm_cuda_event_cpu_visible(event)) {
        vm.vm_mapped.address = event->mem_type.address;
        vm.vm_mapped.size    = event->mem_type.size;
        ucm_event_dispatch(UCM_EVENT_VM_MAPPED, &vm);
    }
}

static void ucm_cuda_dispatch_free(const ucm_event_t *event)
{
    ucm_event_t copy = *event;
    ucm_event_t vm;

    if (ucm_cuda_event_cpu_visible(event)) {
        vm.vm_unmapped.address = event->mem_type.address;
        vm.vm_unmapped.size    = event->mem_type.size;
        ucm_event_dispatch(UCM_EVENT_VM_UNMAPPED, &vm);
    }

    ucm_event_dispatch(UCM_EVENT_MEM_TYPE_FREE, &copy);
}

static void ucm_cuda_report_alloc(const ucm_event_t *event)
{
    ucm_cuda_alloc_insert(event, 1);
    ucm_cuda_dispatch_alloc(event);
}

void ucm_cuda_report_legacy(CUdeviceptr ptr, size_t size)
{
    ucm_event_t event;

    ucm_cuda_event_init(&event, ptr, size, UCS_MEMORY_TYPE_CUDA,
                        ucm_cuda_current_device(), UCM_MEM_ALLOC_KIND_LEGACY,
                        UCM_MEM_HANDLE_TYPE_LEGACY_IPC);
    ucm_cuda_report_alloc(&event);
}

void ucm_cuda_report_managed(CUdeviceptr ptr, size_t size)
{
    ucm_event_t event;

    ucm_cuda_event_init(&event, ptr, size, UCS_MEMORY_TYPE_CUDA_MANAGED,
                        ucm_cuda_current_device(), UCM_MEM_ALLOC_KIND_MANAGED,
                        0);
    ucm_cuda_report_alloc(&event);
}

void ucm_cuda_report_host_pinned(void *ptr, size_t size)
{
    ucm_event_t event;

    ucm_cuda_event_init(&event, (uintptr_t)ptr, size, UCS_MEMORY_TYPE_HOST,
                        -1, UCM_MEM_ALLOC_KIND_HOST_PINNED, 0);
    ucm_cuda_report_alloc(&event);
}

/* Type, device and handle types of @a ptr from the driver, for memory
 * whose pool or handle the hooks do not know. */
static void ucm_cuda_query_pointer(CUdeviceptr ptr, ucs_memory_type_t *mem_type,
                                   int *device, uint32_t *handle_types)
{
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
#if CUDA_VERSION >= 11000
        CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES /* since CUDA 11.0 */
#endif
    };
    unsigned int cu_mem_type     = 0;
    int ordinal                  = -1;
    unsigned long long cu_types  = 0;
    void *data[]                 = {&cu_mem_type, &ordinal, &cu_types};

    if (cuPointerGetAttributes(ucs_static_array_size(attrs), attrs, data,
                               ptr) != CUDA_SUCCESS) {
        *mem_type     = UCS_MEMORY_TYPE_UNKNOWN;
        *device       = -1;
        *handle_types = 0;
        return;
    }

    *mem_type     = (cu_mem_type == CU_MEMORYTYPE_HOST) ?
                    UCS_MEMORY_TYPE_HOST : UCS_MEMORY_TYPE_CUDA;
    *device       = (*mem_type == UCS_MEMORY_TYPE_HOST) ? -1 : ordinal;
    *handle_types = (uint32_t)cu_types;
}

/* Base and size of the allocation containing @a ptr, from the driver. */
static int ucm_cuda_address_range(CUdeviceptr ptr, CUdeviceptr *base,
                                  size_t *size)
{
    return cuMemGetAddressRange(base, size, ptr) == CUDA_SUCCESS;
}

#if HAVE_DECL_CUMEMALLOCASYNC
/* Each device's default pool, once: stream-ordered allocations come from
 * it unless the application made another pool current. */
static void ucm_cuda_learn_default_pools(void)
{
    ucm_cuda_object_t object;
    CUmemoryPool pool;
    int count, device;

    if (__atomic_load_n(&ucm_cuda_default_pools_known, __ATOMIC_ACQUIRE) ||
        (cuDeviceGetCount(&count) != CUDA_SUCCESS)) {
        return;
    }

    memset(&object, 0, sizeof(object));
    for (device = 0; device < count; ++device) {
        if (cuDeviceGetDefaultMemPool(&pool, device) != CUDA_SUCCESS) {
            continue;
        }
        /* A default pool is device memory and allows no export. */
        object.key          = (uintptr_t)pool;
        object.mem_type     = UCS_MEMORY_TYPE_CUDA;
        object.device       = device;
        object.handle_types = 0;
        ucm_cuda_object_insert(&ucm_cuda_pools, &object);
    }

    ucs_debug("cuda hooks: default memory pools of %d device(s) known",
              count);
    __atomic_store_n(&ucm_cuda_default_pools_known, 1, __ATOMIC_RELEASE);
}

/* The pool a cuMemAllocAsync allocation came from. */
static CUmemoryPool ucm_cuda_pool_of(CUdeviceptr ptr)
{
    CUmemoryPool pool = NULL;
    CUdevice device;

#if CUDA_VERSION >= 11030
    /* The attribute came with CUDA 11.3. */
    if ((cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
                               ptr) == CUDA_SUCCESS) && (pool != NULL)) {
        return pool;
    }
#endif

    /* Without the attribute: the current pool of the current device. */
    if ((cuCtxGetDevice(&device) != CUDA_SUCCESS) ||
        (cuDeviceGetMemPool(&pool, device) != CUDA_SUCCESS)) {
        return NULL;
    }
    return pool;
}

void ucm_cuda_report_pool_alloc(CUdeviceptr ptr, size_t size,
                                CUmemoryPool pool)
{
    ucm_cuda_object_t info;
    ucm_event_t event;
    int known = 0;

    if (pool == NULL) {
        pool = ucm_cuda_pool_of(ptr);
    }

    if (pool != NULL) {
        known = ucm_cuda_object_get(&ucm_cuda_pools, (uintptr_t)pool, &info);
        if (!known && !__atomic_load_n(&ucm_cuda_default_pools_known,
                                       __ATOMIC_ACQUIRE)) {
            ucm_cuda_learn_default_pools();
            known = ucm_cuda_object_get(&ucm_cuda_pools, (uintptr_t)pool,
                                        &info);
        }
    }

    if (!known) {
        /* A pool created before the hooks, or imported from another
         * process: ask the driver about this allocation. */
        ucm_cuda_query_pointer(ptr, &info.mem_type, &info.device,
                               &info.handle_types);
    }

    ucm_cuda_event_init(&event, ptr, size, info.mem_type, info.device,
                        UCM_MEM_ALLOC_KIND_POOL, info.handle_types);
    event.mem_type.pool = pool;
    ucm_cuda_report_alloc(&event);
}

void ucm_cuda_report_pool_import(CUdeviceptr ptr, CUmemoryPool pool)
{
    ucs_memory_type_t mem_type;
    uint32_t handle_types;
    CUdeviceptr base;
    ucm_event_t event;
    size_t size;
    int device;

    if (!ucm_cuda_address_range(ptr, &base, &size)) {
        return;
    }

    ucm_cuda_query_pointer(ptr, &mem_type, &device, &handle_types);
    /* Imported memory cannot be exported again. */
    ucm_cuda_event_init(&event, ptr, size, mem_type, device,
                        UCM_MEM_ALLOC_KIND_POOL_IMPORT, 0);
    event.mem_type.pool  = pool;
    event.mem_type.flags = UCM_MEM_TYPE_FLAG_IMPORTED;
    ucm_cuda_report_alloc(&event);
}
#endif /* HAVE_DECL_CUMEMALLOCASYNC */

void ucm_cuda_report_ipc_open(CUdeviceptr ptr)
{
    ucs_memory_type_t mem_type;
    ucm_cuda_alloc_t *alloc;
    uint32_t handle_types;
    CUdeviceptr base;
    ucm_event_t event;
    int device, again = 0;
    size_t size;

    if (!ucm_cuda_address_range(ptr, &base, &size)) {
        return;
    }
    ucm_cuda_query_pointer(ptr, &mem_type, &device, &handle_types);
    ucm_cuda_event_init(&event, ptr, size, mem_type, device,
                        UCM_MEM_ALLOC_KIND_IPC_IMPORT, 0);
    event.mem_type.flags = UCM_MEM_TYPE_FLAG_IMPORTED;

    /* Opening a handle that is already open returns the same mapping with
     * one more reference: that is not a new allocation. Check and insert
     * under one lock, so two concurrent opens count two references. */
    pthread_mutex_lock(&ucm_cuda_track_lock);
    if (ucm_cuda_track_init()) {
        alloc = ucm_cuda_alloc_find(ptr);
        if ((alloc != NULL) && (alloc->event.mem_type.alloc_kind ==
                                UCM_MEM_ALLOC_KIND_IPC_IMPORT)) {
            ++alloc->refs;
            again = 1;
        }
    }
    pthread_mutex_unlock(&ucm_cuda_track_lock);

    if (!again) {
        ucm_cuda_report_alloc(&event);
    }
}

static void ucm_cuda_free_add(ucm_cuda_free_t *state, const ucm_event_t *event)
{
    ucm_event_t *events;
    unsigned max;

    if (state->count == state->max) {
        max    = (state->max == 0) ? 1 : (state->max * 2);
        events = (state->events == &state->inline_event) ?
                 malloc(max * sizeof(*events)) :
                 realloc(state->events, max * sizeof(*events));
        if (events == NULL) {
            /* Announce anyway; only the undo of a failed free is lost. */
            ucm_cuda_dispatch_free(event);
            return;
        }
        if (state->events == &state->inline_event) {
            memcpy(events, &state->inline_event, sizeof(*events) * state->count);
        }
        state->events = events;
        state->max    = max;
    }

    state->events[state->count++] = *event;
    ucm_cuda_dispatch_free(event);
}

static void ucm_cuda_free_init(ucm_cuda_free_t *state)
{
    state->count       = 0;
    state->max         = 1;
    state->events      = &state->inline_event;
    state->ipc_release = 0;
    state->ptr         = 0;
}

void ucm_cuda_free_begin(uintptr_t ptr, ucm_cuda_free_t *state)
{
    CUdeviceptr base;
    ucm_event_t event;
    size_t size;

    ucm_cuda_free_init(state);
    if (ptr == 0) {
        return; /* freeing NULL frees nothing */
    }

    if (ucm_cuda_alloc_remove(ptr, &event)) {
        ucm_cuda_free_add(state, &event);
        return;
    }

    /* Allocated before the hooks: the driver still knows its extent. */
    if (ucm_cuda_address_range(ptr, &base, &size) && (base == ptr)) {
        ucm_cuda_event_init(&event, ptr, size, UCS_MEMORY_TYPE_UNKNOWN, -1,
                            UCM_MEM_ALLOC_KIND_UNKNOWN, 0);
        ucm_cuda_free_add(state, &event);
    }
}

void ucm_cuda_ipc_close_begin(CUdeviceptr ptr, ucm_cuda_free_t *state)
{
    ucm_cuda_alloc_t *alloc;

    ucm_cuda_free_init(state);

    pthread_mutex_lock(&ucm_cuda_track_lock);
    if (ucm_cuda_track_initialized) {
        alloc = ucm_cuda_alloc_find(ptr);
        if ((alloc != NULL) && (alloc->refs > 1)) {
            /* Not the last reference: the mapping stays. */
            --alloc->refs;
            state->ipc_release = 1;
            state->ptr         = ptr;
        }
    }
    pthread_mutex_unlock(&ucm_cuda_track_lock);

    if (!state->ipc_release) {
        ucm_cuda_free_begin(ptr, state);
    }
}

void ucm_cuda_unmap_begin(CUdeviceptr ptr, size_t size,
                          ucm_cuda_free_t *state)
{
    uintptr_t cur = ptr, end = ptr + size;
    ucm_event_t event;

    ucm_cuda_free_init(state);

    /* A range may hold several mappings side by side (one per physical
     * chunk); walk them in address order. */
    while (cur < end) {
        if (!ucm_cuda_alloc_remove(cur, &event) ||
            (event.mem_type.size == 0)) {
            /* Mapped before the hooks: announce the rest as one range. */
            ucm_cuda_event_init(&event, cur, end - cur,
                                UCS_MEMORY_TYPE_UNKNOWN, -1,
                                UCM_MEM_ALLOC_KIND_VMM, 0);
            ucm_cuda_free_add(state, &event);
            break;
        }

        ucm_cuda_free_add(state, &event);
        cur += event.mem_type.size;
    }
}

void ucm_cuda_free_end(ucm_cuda_free_t *state, CUresult result)
{
    ucm_cuda_alloc_t *alloc;
    unsigned i;

    if (result != CUDA_SUCCESS) {
        if (state->ipc_release) {
            pthread_mutex_lock(&ucm_cuda_track_lock);
            alloc = ucm_cuda_alloc_find(state->ptr);
            if (alloc != NULL) {
                ++alloc->refs;
            }
            pthread_mutex_unlock(&ucm_cuda_track_lock);
        }

        /* The driver kept the memory: announce it again. */
        for (i = 0; i < state->count; ++i) {
            state->events[i].mem_type.flags |= UCM_MEM_TYPE_FLAG_FREE_FAILED;
            if (state->events[i].mem_type.alloc_kind !=
                UCM_MEM_ALLOC_KIND_UNKNOWN) {
                ucm_cuda_alloc_insert(&state->events[i], 1);
            }
            ucm_cuda_dispatch_alloc(&state->events[i]);
            state->events[i].mem_type.flags &= ~UCM_MEM_TYPE_FLAG_FREE_FAILED;
        }
    }

    if (state->events != &state->inline_event) {
        free(state->events);
    }
}

#if HAVE_DECL_CUMEMALLOCASYNC
void ucm_cuda_track_pool_create(CUmemoryPool pool, const CUmemPoolProps *props)
{
    ucm_cuda_object_t object;

    memset(&object, 0, sizeof(object));
    object.key          = (uintptr_t)pool;
    object.handle_types = (uint32_t)props->handleTypes;
    ucm_cuda_location(props->location.type, props->location.id,
                      &object.mem_type, &object.device);
    ucm_cuda_object_insert(&ucm_cuda_pools, &object);
    ucs_debug("cuda hooks: pool %p created: %s, device %d, handle types 0x%x",
              (void*)pool, ucs_memory_type_names[object.mem_type],
              object.device, object.handle_types);
}

void ucm_cuda_track_pool_destroy(CUmemoryPool pool)
{
    ucm_cuda_object_remove(&ucm_cuda_pools, (uintptr_t)pool);
}
#endif

#if HAVE_DECL_CUMEMCREATE
void ucm_cuda_track_vmm_create(CUmemGenericAllocationHandle handle,
                               size_t size, const CUmemAllocationProp *prop)
{
    ucm_cuda_object_t object;

    memset(&object, 0, sizeof(object));
    object.key          = (uintptr_t)handle;
    object.size         = size;
    object.handle_types = (uint32_t)prop->requestedHandleTypes;
    ucm_cuda_location(prop->location.type, prop->location.id,
                      &object.mem_type, &object.device);
    ucm_cuda_object_insert(&ucm_cuda_vmm_handles, &object);
}

void ucm_cuda_track_vmm_release(CUmemGenericAllocationHandle handle)
{
    ucm_cuda_object_remove(&ucm_cuda_vmm_handles, (uintptr_t)handle);
}

void ucm_cuda_report_vmm_map(CUdeviceptr ptr, size_t size, size_t offset,
                             CUmemGenericAllocationHandle handle)
{
    ucm_cuda_object_t object;
    ucm_event_t event;
    CUmemAllocationProp prop;

    if (!ucm_cuda_object_get(&ucm_cuda_vmm_handles, (uintptr_t)handle,
                             &object)) {
        /* Created before the hooks, or imported from a shareable handle:
         * the driver has its properties; its size we do not learn, so the
         * extent known to be in it stands for it. */
        memset(&prop, 0, sizeof(prop));
        if (cuMemGetAllocationPropertiesFromHandle(&prop, handle) ==
            CUDA_SUCCESS) {
            ucm_cuda_location(prop.location.type, prop.location.id,
                              &object.mem_type, &object.device);
            object.handle_types = (uint32_t)prop.requestedHandleTypes;
        } else {
            object.mem_type     = UCS_MEMORY_TYPE_UNKNOWN;
            object.device       = -1;
            object.handle_types = 0;
        }
        object.size = offset + size;
    }

    ucm_cuda_event_init(&event, ptr, size, object.mem_type, object.device,
                        UCM_MEM_ALLOC_KIND_VMM, object.handle_types);
    event.mem_type.alloc_base   = (void*)(ptr - offset);
    event.mem_type.alloc_length = object.size;
    ucm_cuda_report_alloc(&event);
}
#endif /* HAVE_DECL_CUMEMCREATE */

void ucm_cuda_track_report_existing(ucm_event_callback_t cb, void *arg)
{
    ucm_event_t *events = NULL;
    size_t count = 0, i;
    ucs_hmap_iter_t iter;
    int entered;
    ucs_hmap_elem_t *elem;

    pthread_mutex_lock(&ucm_cuda_track_lock);
    if (ucm_cuda_track_initialized &&
        (ucs_hmap_count(&ucm_cuda_allocs) > 0)) {
        events = malloc(ucs_hmap_count(&ucm_cuda_allocs) * sizeof(*events));
        if (events != NULL) {
            ucs_hmap_for_each(elem, &iter, &ucm_cuda_allocs) {
                events[count++] = ucs_container_of(elem, ucm_cuda_alloc_t,
                                                   elem)->event;
            }
        }
    }
    pthread_mutex_unlock(&ucm_cuda_track_lock);

    /* The handler runs as in a dispatch: its CUDA calls are not reported. */
    entered = ucm_cuda_hook_enter();
    for (i = 0; i < count; ++i) {
        /* it may have been freed since it was copied (event.c) */
        events[i].mem_type.flags |= UCM_MEM_TYPE_FLAG_REPLAYED;
        cb(UCM_EVENT_MEM_TYPE_ALLOC, &events[i], arg);
    }
    if (entered) {
        ucm_cuda_hook_leave();
    }

    free(events);
}

static void ucm_cuda_track_clear(ucs_hmap_t *table, size_t offset)
{
    ucs_hmap_iter_t iter;
    ucs_hmap_elem_t *elem;

    ucs_hmap_for_each(elem, &iter, table) {
        ucs_hmap_remove(table, elem);
        free((char*)elem - offset);
    }
    ucs_hmap_cleanup(table);
}

void ucm_cuda_track_cleanup(void)
{
    pthread_mutex_lock(&ucm_cuda_track_lock);
    if (ucm_cuda_track_initialized) {
        ucm_cuda_track_clear(&ucm_cuda_allocs,
                             ucs_offsetof(ucm_cuda_alloc_t, elem));
        ucm_cuda_track_clear(&ucm_cuda_pools,
                             ucs_offsetof(ucm_cuda_object_t, elem));
        ucm_cuda_track_clear(&ucm_cuda_vmm_handles,
                             ucs_offsetof(ucm_cuda_object_t, elem));
        ucm_cuda_track_initialized   = 0;
        ucm_cuda_default_pools_known = 0;
    }
    pthread_mutex_unlock(&ucm_cuda_track_lock);
}
