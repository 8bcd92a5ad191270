#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Staging fragments of the rendezvous pipeline, pooled per worker and memory
 * type, and for host fragments also per GPU. Device fragments come from the
 * cuda_cpy md (cuMemAlloc: always exportable by cuda_ipc), a slab at a
 * time, and each slab's key is packed once. Host fragments stage data of
 * one GPU: their pages are placed on the NUMA node nearest it (hwloc, see
 * ucs/sys/topo_numa.h) before anything touches them, then pinned with the
 * cuda_cpy md (cuMemHostRegister), so the GPU's copies neither cross the
 * socket link nor go through the driver's own bounce buffers. A pool never
 * grows past UCX_RNDV_FRAG_POOL_SIZE fragments; a request that finds it dry
 * waits on the worker's list and is resumed from progress when a fragment
 * comes back.
 */

#include <ucp/rndv/ucp_rndv_int.h>
#include <ucs/sys/topo_device.h>
#include <ucs/sys/topo_numa.h>

#include <stdlib.h>
#include <string.h>

#define UCP_RNDV_FRAG_SLAB_COUNT 4   /* fragments allocated together */

/* A device fragment's index names its pool (one per GPU) in the top byte and
 * the fragment in that pool below: the peer echoes it in its ack. */
#define UCP_RNDV_FRAG_POOL_SHIFT 24
#define UCP_RNDV_FRAG_POOL_MAX   256

typedef struct ucp_rndv_frag_slab {
    struct ucp_rndv_frag_slab *next;
    struct ucp_rndv_frag_pool *pool;
    void                      *base;
    size_t                    length;
    uct_mem_h                 alloc_memh; /* device slabs: cuda_cpy allocation */
    uct_mem_h                 reg_memh;   /* host slabs: cuda_cpy pinning, or NULL */
    int                       numa_placed; /* host slabs: node the kernel took */
    uct_mem_h                 ipc_memh;   /* device slabs: cuda_ipc key */
    uct_md_h host_md;                     /* host slabs: the host lane md that */
    uct_mem_h host_memh;                  /* registered it for peers' reads */
    void *key;                            /* device: cuda_ipc; host: host lane */
    uint32_t                  key_len;    /* without trailing zeros */
    ucp_rndv_frag_t           *frags;
} ucp_rndv_frag_slab_t;

typedef struct ucp_rndv_frag_pool {
    struct ucp_rndv_frag_pool *next;    /* the next GPU's pool of this type */
    ucs_memory_type_t    mem_type;
    ucs_sys_device_t     sys_dev;   /* the GPU they stage for (device pools:
                                       where they live) */
    int recv;                       /* for reads a receiver stages */
    unsigned             id;        /* device pools: top byte of the index */
    int                  numa_node; /* host pools: the node nearest it */
    size_t               frag_size;
    unsigned             count;     /* fragments allocated */
    unsigned             in_use;
    int                  broken;    /* the memory cannot be had */
    ucs_list_link_t      free;
    ucp_rndv_frag_t      **by_index;
    ucp_rndv_frag_slab_t *slabs;
} ucp_rndv_frag_pool_t;

ucs_sys_device_t ucp_rndv_buffer_gpu(ucp_worker_h worker, const void *buffer)
{
    uct_md_mem_attr_t attr;

    if ((buffer == NULL) || (worker->rndv->copy_md == NULL)) {
        return UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    attr.field_mask = UCT_MD_MEM_ATTR_FIELD_SYS_DEV;
    if (uct_md_mem_query(worker->rndv->copy_md, buffer, 1, &attr) != UCS_OK) {
        return UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    return attr.sys_dev;
}

ucs_sys_device_t ucp_rndv_req_gpu(ucp_rndv_req_t *rreq)
{
    if (!rreq->gpu_known) {
        rreq->gpu       = (rreq->mem_type == UCS_MEMORY_TYPE_HOST) ?
                          UCS_SYS_DEVICE_ID_UNKNOWN :
                          ucp_rndv_buffer_gpu(rreq->worker, rreq->buffer);
        rreq->gpu_known = 1;
    }
    return rreq->gpu;
}

uint32_t ucp_rndv_gpu_tag(ucs_sys_device_t gpu)
{
    ucs_sys_bus_id_t bus_id;

    if ((gpu == UCS_SYS_DEVICE_ID_UNKNOWN) ||
        (ucs_topo_get_device_bus_id(gpu, &bus_id) != UCS_OK)) {
        return 0;
    }
    /* 0000:00:00.0 is a host bridge, never a GPU: 0 stays "unknown". */
    return ((bus_id.domain & 0xffffu) << 16) | ((uint32_t)bus_id.bus << 8) |
           ((uint32_t)(bus_id.slot & 0x1f) << 3) | (bus_id.function & 7);
}

/* The pool of @a mem_type for the GPU @a sys_dev, or NULL. */
static ucp_rndv_frag_pool_t *ucp_rndv_frag_pool_find(ucp_worker_h worker,
                                                     ucs_memory_type_t mem_type,
                                                     ucs_sys_device_t sys_dev, int recv)
{
    ucp_rndv_frag_pool_t *pool = worker->rndv->pools[mem_type];

    while ((pool != NULL) && ((pool->sys_dev != sys_dev) || (pool->recv != recv))) {
        pool = pool->next;
    }
    return pool;
}

static ucp_rndv_frag_pool_t *ucp_rndv_frag_pool(ucp_worker_h worker,
                                                ucs_memory_type_t mem_type,
                                                ucs_sys_device_t sys_dev, int recv)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    char bus_id[UCS_SYS_BUS_ID_STR_MAX];
    ucp_rndv_frag_pool_t *pool;

    pool = ucp_rndv_frag_pool_find(worker, mem_type, sys_dev, recv);
    if (pool != NULL) {
        return pool;
    }
    if ((rw->pools[mem_type] != NULL) &&
        (rw->pools[mem_type]->id + 1 >= UCP_RNDV_FRAG_POOL_MAX)) {
        return NULL; /* more GPUs than an index can name */
    }
    pool = calloc(1, sizeof(*pool));
    if (pool == NULL) {
        return NULL;
    }
    pool->mem_type  = mem_type;
    pool->sys_dev   = sys_dev;
    pool->recv      = recv;
    pool->id        = (rw->pools[mem_type] == NULL) ? 0 : rw->pools[mem_type]->id + 1;
    pool->numa_node = UCS_NUMA_NODE_UNKNOWN;
    pool->frag_size = worker->context->rndv.frag_size[mem_type];
    if (mem_type != UCS_MEMORY_TYPE_HOST) {
        ucs_debug("ucp: worker %s: device fragments for GPU %s (pool %u)",
                  worker->name, ucs_topo_sys_device_bdf_name(sys_dev, bus_id,
                                                             sizeof(bus_id)),
                  pool->id);
    } else {
        pool->numa_node = (sys_dev == UCS_SYS_DEVICE_ID_UNKNOWN) ?
                          UCS_NUMA_NODE_UNKNOWN : ucs_topo_sys_device_numa_node(sys_dev);
        ucs_debug("ucp: worker %s: host fragments for GPU %s go to NUMA node %d%s",
                  worker->name, ucs_topo_sys_device_bdf_name(sys_dev, bus_id,
                                                             sizeof(bus_id)),
                  pool->numa_node,
                  (pool->numa_node == UCS_NUMA_NODE_UNKNOWN) ? " (unknown: not placed)" :
                                                               "");
    }
    ucs_list_head_init(&pool->free);
    pool->next          = rw->pools[mem_type];
    rw->pools[mem_type] = pool;
    return pool;
}

static void ucp_rndv_frag_slab_free(ucp_worker_h worker, ucp_rndv_frag_slab_t *slab)
{
    ucp_rndv_worker_t *rw = worker->rndv;

    if (slab->ipc_memh != NULL) {
        ucp_rndv_key_release(worker, slab->ipc_memh);
    }
    if (slab->host_memh != NULL) {
        ucp_rndv_host_key_release(slab->host_md, slab->host_memh);
    }
    if (slab->alloc_memh != NULL) {
        uct_md_mem_free(rw->copy_md, slab->alloc_memh);
    } else if (slab->base != NULL) {
        if (slab->reg_memh != NULL) {
            uct_md_mem_dereg(rw->copy_md, slab->reg_memh);
        }
        ucs_topo_numa_free(slab->base, slab->length);
    }
    free(slab->key);
    free(slab->frags);
    free(slab);
}

static int ucp_rndv_frag_warned;

/* Placed first, pinned second: pinning faults the pages in, and they must
 * come from the GPU's node. A pinning that fails leaves usable memory
 * (cuda_cpy logs it; the copies are then synchronous). */
static ucs_status_t ucp_rndv_frag_host_memory(ucp_worker_h worker,
                                              ucp_rndv_frag_pool_t *pool,
                                              ucp_rndv_frag_slab_t *slab)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    ucs_status_t status;

    status = ucs_topo_numa_alloc(slab->length, pool->numa_node, &slab->base,
                                 &slab->numa_placed);
    if (status != UCS_OK) {
        slab->base = NULL;
        return status;
    }
    if ((rw->copy_md != NULL) &&
        (uct_md_mem_reg(rw->copy_md, slab->base, slab->length, 0, &slab->reg_memh) !=
         UCS_OK)) {
        slab->reg_memh = NULL;
    }
    return UCS_OK;
}

static ucs_status_t ucp_rndv_frag_slab_memory(ucp_worker_h worker,
                                              ucp_rndv_frag_pool_t *pool,
                                              ucp_rndv_frag_slab_t *slab)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    size_t length         = slab->length;
    ucs_status_t status;

    if (pool->mem_type == UCS_MEMORY_TYPE_HOST) {
        return ucp_rndv_frag_host_memory(worker, pool, slab);
    }
    if (rw->copy_md == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    status = uct_md_mem_alloc_on_device(rw->copy_md, &length, &slab->base,
                                        pool->mem_type, pool->sys_dev, 0,
                                        "rndv fragments", &slab->alloc_memh);
    if (status != UCS_OK) {
        slab->alloc_memh = NULL;
        slab->base       = NULL;
    }
    return status;
}

static ucs_status_t ucp_rndv_frag_grow(ucp_worker_h worker,
                                       ucp_rndv_frag_pool_t *pool)
{
    unsigned max = worker->context->rndv.frag_pool_max;
    unsigned n   = UCP_RNDV_FRAG_SLAB_COUNT;
    ucp_rndv_frag_slab_t *slab;
    ucp_rndv_frag_t **by_index;
    ucs_status_t status;
    unsigned i;

    if (max > (1u << UCP_RNDV_FRAG_POOL_SHIFT)) {
        max = 1u << UCP_RNDV_FRAG_POOL_SHIFT; /* what an index can name */
    }
    if (pool->count >= max) {
        return UCS_ERR_NO_RESOURCE;
    }
    n    = (n < max - pool->count) ? n : max - pool->count;
    slab = calloc(1, sizeof(*slab));
    if (slab == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    slab->pool        = pool;
    slab->numa_placed = UCS_NUMA_NODE_UNKNOWN;
    slab->length      = n * pool->frag_size;
    slab->frags  = calloc(n, sizeof(*slab->frags));
    by_index     = realloc(pool->by_index, (pool->count + n) * sizeof(*by_index));
    if ((slab->frags == NULL) || (by_index == NULL)) {
        pool->by_index = (by_index != NULL) ? by_index : pool->by_index;
        status         = UCS_ERR_NO_MEMORY;
        goto err;
    }
    pool->by_index = by_index;
    status = ucp_rndv_frag_slab_memory(worker, pool, slab);
    if (status != UCS_OK) {
        goto err;
    }
    if (pool->mem_type != UCS_MEMORY_TYPE_HOST) {
        slab->key = malloc(ucp_rndv_key_size(worker) + 1);
        status    = (slab->key == NULL) ? UCS_ERR_NO_MEMORY :
                    ucp_rndv_key_pack(worker, slab->base, slab->length,
                                      &slab->ipc_memh, slab->key, &slab->key_len);
        if (status != UCS_OK) {
            goto err;
        }
    }
    for (i = 0; i < n; ++i) {
        ucp_rndv_frag_t *frag = &slab->frags[i];
        frag->slab     = slab;
        frag->address  = (char*)slab->base + i * pool->frag_size;
        frag->size     = pool->frag_size;
        frag->index    = (pool->id << UCP_RNDV_FRAG_POOL_SHIFT) | (pool->count + i);
        frag->mem_type = pool->mem_type;
        pool->by_index[pool->count + i] = frag;
        ucs_list_add_tail(&pool->free, &frag->list);
    }
    pool->count += n;
    slab->next   = pool->slabs;
    pool->slabs  = slab;
    ucs_debug("ucp: worker %s: %u %s fragments of %zu bytes (%u of at most %u)%s%s",
              worker->name, n, ucs_memory_type_names[pool->mem_type], pool->frag_size,
              pool->count, max,
              (pool->mem_type != UCS_MEMORY_TYPE_HOST) ? "" :
              (slab->numa_placed != UCS_NUMA_NODE_UNKNOWN) ? ", on the GPU's NUMA node" :
                                                             ", not placed",
              ((pool->mem_type != UCS_MEMORY_TYPE_HOST) || (slab->reg_memh != NULL)) ?
                      "" : ", not pinned");
    return UCS_OK;

err:
    /* Once per process: the message still moves (a slower path or waiting
     * for fragments in use), but the user should know why it is slower. */
    if (!ucp_rndv_frag_warned) {
        ucp_rndv_frag_warned = 1;
        ucs_warn("ucp: cannot allocate %zu-byte %s staging fragments (%s): "
                 "staged rendezvous falls back to slower paths "
                 "(UCX_RNDV_FRAG_SIZE, UCX_RNDV_FRAG_POOL_SIZE)", pool->frag_size,
                 ucs_memory_type_names[pool->mem_type], ucs_status_string(status));
    } else {
        ucs_debug("ucp: no %s fragments: %s", ucs_memory_type_names[pool->mem_type],
                  ucs_status_string(status));
    }
    ucp_rndv_frag_slab_free(worker, slab);
    return status;
}

ucp_rndv_frag_t *ucp_rndv_frag_get(ucp_worker_h worker, ucs_memory_type_t mem_type,
                                   ucs_sys_device_t gpu, uint64_t owner)
{
    return ucp_rndv_frag_get_recv(worker, mem_type, gpu, owner, 0);
}

ucp_rndv_frag_t *ucp_rndv_frag_get_recv(ucp_worker_h worker, ucs_memory_type_t mem_type,
                                        ucs_sys_device_t gpu, uint64_t owner, int recv)
{
    ucp_rndv_frag_pool_t *pool;
    ucp_rndv_frag_t *frag;
    ucs_status_t status;

    pool = ucp_rndv_frag_pool(worker, mem_type, gpu, recv);
    if ((pool == NULL) || pool->broken) {
        return NULL;
    }
    if (ucs_list_is_empty(&pool->free)) {
        status = ucp_rndv_frag_grow(worker, pool);
        if (status != UCS_OK) {
            /* Nothing at all: the memory cannot be had, stop trying. */
            pool->broken = (pool->count == 0);
            return NULL;
        }
    }
    frag        = ucs_list_extract_head_elem(&pool->free, ucp_rndv_frag_t, list);
    frag->owner = owner;
    frag->used  = 0;
    ++pool->in_use;
    return frag;
}

void ucp_rndv_frag_put(ucp_worker_h worker, ucp_rndv_frag_t *frag)
{
    ucp_rndv_frag_pool_t *pool = frag->slab->pool;

    (void)worker;
    frag->owner = 0;
    --pool->in_use;
    ucs_list_add_head(&pool->free, &frag->list);
}

int ucp_rndv_frag_shared(ucp_worker_h worker, const ucp_rndv_frag_t *frag,
                         unsigned held)
{
    /* in_use counts @a frag already. */
    return (frag->slab->pool->in_use > held + 1) ||
           !ucs_list_is_empty(&worker->rndv->waiters);
}

ucp_rndv_frag_t *ucp_rndv_frag_find(ucp_worker_h worker, ucs_memory_type_t mem_type,
                                    uint32_t index, uint64_t owner)
{
    ucp_rndv_frag_pool_t *pool = worker->rndv->pools[mem_type];
    uint32_t i                 = index & ((1u << UCP_RNDV_FRAG_POOL_SHIFT) - 1);

    while ((pool != NULL) && (pool->id != (index >> UCP_RNDV_FRAG_POOL_SHIFT))) {
        pool = pool->next;
    }
    if ((pool == NULL) || (i >= pool->count) || (pool->by_index[i]->owner != owner)) {
        return NULL;
    }
    return pool->by_index[i];
}

const void *ucp_rndv_frag_key(const ucp_rndv_frag_t *frag, size_t *len_p)
{
    *len_p = frag->slab->key_len;
    return frag->slab->key;
}

const void *ucp_rndv_frag_host_key(const ucp_rndv_frag_t *frag, ucp_ep_h ep,
                                   size_t *len_p)
{
    ucp_rndv_frag_slab_t *slab = frag->slab;
    size_t key_size            = ucp_rndv_host_key_size(ep);

    if (key_size == 0) {
        return NULL;
    }
    if ((slab->host_memh != NULL) && (slab->host_md != ep->host_lane->md)) {
        /* Another lane's md (a peer reached over another transport): the
         * slab serves the newer one; rare enough to register again. */
        ucp_rndv_host_key_release(slab->host_md, slab->host_memh);
        slab->host_memh = NULL;
        free(slab->key);
        slab->key = NULL;
    }
    if (slab->host_memh == NULL) {
        slab->key = malloc(key_size);
        if ((slab->key == NULL) ||
            (ucp_rndv_host_key_pack(ep, slab->base, slab->length, &slab->host_md,
                                    &slab->host_memh, slab->key) != UCS_OK)) {
            free(slab->key);
            slab->key       = NULL;
            slab->host_memh = NULL;
            return NULL;
        }
        slab->key_len = (uint32_t)key_size;
        ucs_debug("ucp: host fragments %p+%zu registered for reads by peers", slab->base,
                  slab->length);
    }
    *len_p = slab->key_len;
    return slab->key;
}

int ucp_rndv_frag_numa_node(const ucp_rndv_frag_t *frag, int *placed_p)
{
    if (placed_p != NULL) {
        *placed_p = frag->slab->numa_placed;
    }
    return frag->slab->pool->numa_node;
}

int ucp_rndv_frag_pinned(const ucp_rndv_frag_t *frag)
{
    return (frag->slab->reg_memh != NULL) || (frag->slab->alloc_memh != NULL);
}

int ucp_rndv_frag_supported(ucp_worker_h worker, ucs_memory_type_t mem_type,
                            ucs_sys_device_t gpu)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    ucp_rndv_frag_pool_t *pool;

    /* Host fragments come from malloc'ed memory when nothing else works. */
    if (mem_type == UCS_MEMORY_TYPE_HOST) {
        return 1;
    }
    pool = ucp_rndv_frag_pool_find(worker, mem_type, gpu, 0);
    if ((pool != NULL) ? pool->broken :
        ((rw->pools[mem_type] != NULL) &&
         (rw->pools[mem_type]->id + 1 >= UCP_RNDV_FRAG_POOL_MAX))) {
        return 0; /* its memory cannot be had, or no pool can be made */
    }
    return (rw->copy_md != NULL) && (rw->ipc_md != NULL);
}

void ucp_rndv_frag_wait(ucp_worker_h worker, ucp_rndv_req_t *rreq)
{
    if (!rreq->waiting) {
        rreq->waiting = 1;
        ucs_list_add_tail(&worker->rndv->waiters, &rreq->wait_link);
        worker->housekeeping_due = 1;
        ucs_debug("ucp: rendezvous 0x%llx waits for a fragment",
                  (unsigned long long)rreq->id);
    }
}

void ucp_rndv_frag_unwait(ucp_worker_h worker, ucp_rndv_req_t *rreq)
{
    (void)worker;
    if (rreq->waiting) {
        rreq->waiting = 0;
        ucs_list_del(&rreq->wait_link);
    }
}

static int ucp_rndv_frag_available(ucp_worker_h worker, ucp_rndv_req_t *rreq)
{
    ucs_memory_type_t type = (rreq->is_send && (rreq->mode == UCP_RNDV_RTR_PIPE_CUDA))
                                 ? UCS_MEMORY_TYPE_CUDA
                                 : UCS_MEMORY_TYPE_HOST;
    ucp_rndv_frag_pool_t *pool;

    /* The pool the request waits on: its GPU's, for either type. */
    pool = ucp_rndv_frag_pool_find(worker, type, ucp_rndv_req_gpu(rreq), !rreq->is_send);

    return (pool == NULL) || !ucs_list_is_empty(&pool->free) ||
           (pool->count < worker->context->rndv.frag_pool_max) || pool->broken;
}

unsigned ucp_rndv_frag_progress(ucp_worker_h worker)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    unsigned count        = 0;
    ucp_rndv_req_t *rreq;

    /* In order, while the head's kind of fragment is there: a waiter that
     * takes the last one leaves the others for the next round. */
    while (!ucs_list_is_empty(&rw->waiters)) {
        rreq = ucs_list_head_elem(&rw->waiters, ucp_rndv_req_t, wait_link);
        if (!ucp_rndv_frag_available(worker, rreq)) {
            break;
        }
        ucp_rndv_frag_unwait(worker, rreq);
        if (rreq->is_send) {
            ucp_rndv_send_resume(rreq);
        } else {
            ucp_rndv_hread_resume(rreq);
        }
        ++count;
        if (rreq->waiting) {
            break; /* still dry */
        }
    }
    return count;
}

unsigned ucp_rndv_frag_in_use(ucp_worker_h worker)
{
    ucp_rndv_frag_pool_t *pool;
    unsigned i, n = 0;

    if (worker->rndv == NULL) {
        return 0;
    }
    for (i = 0; i < UCS_MEMORY_TYPE_LAST; ++i) {
        for (pool = worker->rndv->pools[i]; pool != NULL; pool = pool->next) {
            n += pool->in_use;
        }
    }
    return n;
}

static void ucp_rndv_frag_pool_free(ucp_worker_h worker, ucp_rndv_frag_pool_t *pool)
{
    ucp_rndv_frag_slab_t *slab;

    if (pool->in_use > 0) {
        ucs_debug("ucp: worker %s: %u %s fragments still in use at destroy",
                  worker->name, pool->in_use, ucs_memory_type_names[pool->mem_type]);
    }
    while ((slab = pool->slabs) != NULL) {
        pool->slabs = slab->next;
        ucp_rndv_frag_slab_free(worker, slab);
    }
    free(pool->by_index);
    free(pool);
}

void ucp_rndv_frag_cleanup(ucp_worker_h worker)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    ucp_rndv_frag_pool_t *pool;
    unsigned i;

    for (i = 0; i < UCS_MEMORY_TYPE_LAST; ++i) {
        while ((pool = rw->pools[i]) != NULL) {
            rw->pools[i] = pool->next;
            ucp_rndv_frag_pool_free(worker, pool);
        }
    }
}
