#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Staging fragments of the rendezvous pipeline, pooled per worker and memory
 * type. Device fragments come from the cuda_cpy md (cuMemAlloc: always
 * exportable by cuda_ipc), a slab at a time, and each slab's key is packed
 * once. Host fragments are pinned host memory from the same md when it is
 * there, else malloc. A pool never grows past UCX_RNDV_FRAG_POOL_SIZE
 * fragments; a request that finds it dry waits on the worker's list and is
 * resumed from progress when a fragment comes back.
 */

#include <ucp/rndv/ucp_rndv_int.h>

#include <stdlib.h>
#include <string.h>

#define UCP_RNDV_FRAG_SLAB_COUNT 4   /* fragments allocated together */

typedef struct ucp_rndv_frag_slab {
    struct ucp_rndv_frag_slab *next;
    void                      *base;
    size_t                    length;
    uct_mem_h                 alloc_memh; /* cuda_cpy allocation, or NULL */
    uct_mem_h                 ipc_memh;   /* device slabs: cuda_ipc key */
    void                      *key;
    uint32_t                  key_len;    /* without trailing zeros */
    ucp_rndv_frag_t           *frags;
} ucp_rndv_frag_slab_t;

typedef struct ucp_rndv_frag_pool {
    ucs_memory_type_t    mem_type;
    size_t               frag_size;
    unsigned             count;     /* fragments allocated */
    unsigned             in_use;
    int                  broken;    /* the memory cannot be had */
    ucs_list_link_t      free;
    ucp_rndv_frag_t      **by_index;
    ucp_rndv_frag_slab_t *slabs;
} ucp_rndv_frag_pool_t;

static ucp_rndv_frag_pool_t *ucp_rndv_frag_pool(ucp_worker_h worker,
                                                ucs_memory_type_t mem_type)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    ucp_rndv_frag_pool_t *pool;

    if (rw->pools[mem_type] != NULL) {
        return rw->pools[mem_type];
    }
    pool = calloc(1, sizeof(*pool));
    if (pool == NULL) {
        return NULL;
    }
    pool->mem_type  = mem_type;
    pool->frag_size = worker->context->rndv.frag_size[mem_type];
    ucs_list_head_init(&pool->free);
    rw->pools[mem_type] = pool;
    return pool;
}

static void ucp_rndv_frag_slab_free(ucp_worker_h worker, ucp_rndv_frag_slab_t *slab)
{
    ucp_rndv_worker_t *rw = worker->rndv;

    if (slab->ipc_memh != NULL) {
        ucp_rndv_key_release(worker, slab->ipc_memh);
    }
    if (slab->alloc_memh != NULL) {
        uct_md_mem_free(rw->copy_md, slab->alloc_memh);
    } else {
        free(slab->base);
    }
    free(slab->key);
    free(slab->frags);
    free(slab);
}

static int ucp_rndv_frag_warned;

static ucs_status_t ucp_rndv_frag_slab_memory(ucp_worker_h worker,
                                              ucp_rndv_frag_pool_t *pool,
                                              ucp_rndv_frag_slab_t *slab)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    size_t length         = slab->length;
    ucs_status_t status;

    if (rw->copy_md != NULL) {
        status = uct_md_mem_alloc(rw->copy_md, &length, &slab->base,
                                  pool->mem_type, 0, "rndv fragments",
                                  &slab->alloc_memh);
        if (status == UCS_OK) {
            return UCS_OK;
        }
        slab->alloc_memh = NULL;
        if (pool->mem_type != UCS_MEMORY_TYPE_HOST) {
            return status;
        }
    } else if (pool->mem_type != UCS_MEMORY_TYPE_HOST) {
        return UCS_ERR_UNSUPPORTED;
    }
    slab->base = malloc(slab->length);
    return (slab->base != NULL) ? UCS_OK : UCS_ERR_NO_MEMORY;
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

    if (pool->count >= max) {
        return UCS_ERR_NO_RESOURCE;
    }
    n    = (n < max - pool->count) ? n : max - pool->count;
    slab = calloc(1, sizeof(*slab));
    if (slab == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    slab->length = n * pool->frag_size;
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
        frag->index    = pool->count + i;
        frag->mem_type = pool->mem_type;
        pool->by_index[frag->index] = frag;
        ucs_list_add_tail(&pool->free, &frag->list);
    }
    pool->count += n;
    slab->next   = pool->slabs;
    pool->slabs  = slab;
    ucs_debug("ucp: worker %s: %u %s fragments of %zu bytes (%u of at most %u)",
              worker->name, n, ucs_memory_type_names[pool->mem_type],
              pool->frag_size, pool->count, max);
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
                                   uint64_t owner)
{
    ucp_rndv_frag_pool_t *pool = ucp_rndv_frag_pool(worker, mem_type);
    ucp_rndv_frag_t *frag;
    ucs_status_t status;

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
    ucp_rndv_frag_pool_t *pool = worker->rndv->pools[frag->mem_type];

    frag->owner = 0;
    --pool->in_use;
    ucs_list_add_head(&pool->free, &frag->list);
}

ucp_rndv_frag_t *ucp_rndv_frag_find(ucp_worker_h worker, ucs_memory_type_t mem_type,
                                    uint32_t index, uint64_t owner)
{
    ucp_rndv_frag_pool_t *pool = worker->rndv->pools[mem_type];

    if ((pool == NULL) || (index >= pool->count) ||
        (pool->by_index[index]->owner != owner)) {
        return NULL;
    }
    return pool->by_index[index];
}

const void *ucp_rndv_frag_key(const ucp_rndv_frag_t *frag, size_t *len_p)
{
    *len_p = frag->slab->key_len;
    return frag->slab->key;
}

int ucp_rndv_frag_supported(ucp_worker_h worker, ucs_memory_type_t mem_type)
{
    ucp_rndv_worker_t *rw = worker->rndv;

    if ((rw->pools[mem_type] != NULL) && rw->pools[mem_type]->broken) {
        return 0;
    }
    return (mem_type == UCS_MEMORY_TYPE_HOST) ||
           ((rw->copy_md != NULL) && (rw->ipc_md != NULL));
}

void ucp_rndv_frag_wait(ucp_worker_h worker, ucp_rndv_req_t *rreq)
{
    if (!rreq->waiting) {
        rreq->waiting = 1;
        ucs_list_add_tail(&worker->rndv->waiters, &rreq->wait_link);
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

static int ucp_rndv_frag_available(ucp_worker_h worker, ucs_memory_type_t mem_type)
{
    ucp_rndv_frag_pool_t *pool = worker->rndv->pools[mem_type];

    return (pool == NULL) || !ucs_list_is_empty(&pool->free) ||
           (pool->count < worker->context->rndv.frag_pool_max) || pool->broken;
}

unsigned ucp_rndv_frag_progress(ucp_worker_h worker)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    unsigned count        = 0;
    ucp_rndv_req_t *rreq;
    ucs_memory_type_t type;

    /* In order, while the head's kind of fragment is there: a waiter that
     * takes the last one leaves the others for the next round. */
    while (!ucs_list_is_empty(&rw->waiters)) {
        rreq = ucs_list_head_elem(&rw->waiters, ucp_rndv_req_t, wait_link);
        type = (rreq->mode == UCP_RNDV_RTR_PIPE_CUDA) ? UCS_MEMORY_TYPE_CUDA :
                                                       UCS_MEMORY_TYPE_HOST;
        if (!ucp_rndv_frag_available(worker, type)) {
            break;
        }
        ucp_rndv_frag_unwait(worker, rreq);
        ucp_rndv_send_resume(rreq);
        ++count;
        if (rreq->waiting) {
            break; /* still dry */
        }
    }
    return count;
}

unsigned ucp_rndv_frag_in_use(ucp_worker_h worker)
{
    unsigned i, n = 0;

    if (worker->rndv == NULL) {
        return 0;
    }
    for (i = 0; i < UCS_MEMORY_TYPE_LAST; ++i) {
        n += (worker->rndv->pools[i] != NULL) ? worker->rndv->pools[i]->in_use : 0;
    }
    return n;
}

void ucp_rndv_frag_cleanup(ucp_worker_h worker)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    ucp_rndv_frag_pool_t *pool;
    ucp_rndv_frag_slab_t *slab;
    unsigned i;

    for (i = 0; i < UCS_MEMORY_TYPE_LAST; ++i) {
        pool = rw->pools[i];
        if (pool == NULL) {
            continue;
        }
        if (pool->in_use > 0) {
            ucs_debug("ucp: worker %s: %u %s fragments still in use at destroy",
                      worker->name, pool->in_use, ucs_memory_type_names[i]);
        }
        while ((slab = pool->slabs) != NULL) {
            pool->slabs = slab->next;
            ucp_rndv_frag_slab_free(worker, slab);
        }
        free(pool->by_index);
        free(pool);
        rw->pools[i] = NULL;
    }
}
