#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_copy.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/*
 * The cuda_copy iface: one non-blocking stream in the context that was
 * current when it was opened (device 0's primary context if none was), the
 * FIFO of its outstanding copies, and a bounce buffer for bcopy.
 */

static ucs_config_field_t uct_cuda_copy_iface_config_fields[] = {
    {"MAX_BCOPY", "8k",
     "Largest put/get bcopy of the cuda_copy transport (size of its bounce "
     "buffer).",
     ucs_offsetof(uct_cuda_copy_iface_config_t, super.max_bcopy),
     UCS_CONFIG_TYPE_SIZE, 0},

    {"MAX_SHORT", "1k",
     "Largest put/get short of the cuda_copy transport.",
     ucs_offsetof(uct_cuda_copy_iface_config_t, max_short), UCS_CONFIG_TYPE_SIZE, 0},

    {NULL, NULL, NULL, 0, {NULL, NULL, NULL, NULL, NULL, NULL, 0, 0}, 0}
};

static ucs_config_table_entry_t uct_cuda_copy_iface_config_entry = {
    .name   = "CUDA copy transport",
    .prefix = "CUDA_COPY_",
    .fields = uct_cuda_copy_iface_config_fields,
    .size   = sizeof(uct_cuda_copy_iface_config_t),
    .next   = NULL
};
UCS_CONFIG_REGISTER_TABLE(uct_cuda_copy_iface_config_entry)

static uint64_t uct_cuda_copy_iface_next_id = 1;

static ucs_status_t uct_cuda_copy_iface_query(uct_iface_h tl_iface,
                                              uct_iface_attr_t *attr)
{
    uct_cuda_copy_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_copy_iface_t,
                                                    super.super);

    uct_base_iface_query(&iface->super, attr);

    attr->cap.flags = UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_PUT_BCOPY |
                      UCT_IFACE_FLAG_PUT_ZCOPY |
                      UCT_IFACE_FLAG_GET_BCOPY | UCT_IFACE_FLAG_GET_ZCOPY |
                      UCT_IFACE_FLAG_CONNECT_TO_IFACE;

    attr->cap.put.max_short       = iface->max_short;
    attr->cap.put.max_bcopy       = iface->max_bcopy;
    attr->cap.put.min_zcopy       = 0;
    attr->cap.put.max_zcopy       = SIZE_MAX;
    attr->cap.put.max_iov         = UCT_CUDA_COPY_MAX_IOV;
    attr->cap.put.opt_zcopy_align = 1;
    attr->cap.put.align_mtu       = 1;
    attr->cap.get                 = attr->cap.put;
    attr->cap.get.max_short       = 0; /* get short is not offered by the API */

    attr->device_addr_len = 0;
    attr->iface_addr_len  = sizeof(uct_cuda_copy_iface_addr_t);
    attr->ep_addr_len     = 0;

    /* GPU-FACTS.md: ~7-8 us for a small pinned copy and its synchronisation. */
    attr->overhead            = 2e-6;
    attr->latency             = ucs_linear_func_make(8e-6, 0);
    attr->bandwidth.dedicated = 50e9;
    attr->bandwidth.shared    = 0;
    attr->priority            = 0;
    return UCS_OK;
}

static ucs_status_t uct_cuda_copy_iface_get_address(uct_iface_h tl_iface,
                                                    uct_iface_addr_t *addr)
{
    uct_cuda_copy_iface_addr_t a;

    a.magic    = UCT_CUDA_COPY_ADDR_MAGIC;
    a.reserved = 0;
    a.proc_id  = uct_cuda_copy_proc_id();
    memcpy(addr, &a, sizeof(a));
    return UCS_OK;
}

static ucs_status_t uct_cuda_copy_iface_get_device_address(uct_iface_h tl_iface,
                                                           uct_device_addr_t *addr)
{
    return UCS_OK; /* empty: the iface address says everything */
}

static int uct_cuda_copy_iface_is_reachable(const uct_iface_h tl_iface,
                                            const uct_device_addr_t *dev_addr,
                                            const uct_iface_addr_t *iface_addr)
{
    uct_cuda_copy_iface_addr_t a;

    if (iface_addr == NULL) {
        return 0;
    }
    memcpy(&a, iface_addr, sizeof(a));
    return (a.magic == UCT_CUDA_COPY_ADDR_MAGIC) && (a.reserved == 0) &&
           (a.proc_id == uct_cuda_copy_proc_id());
}

static unsigned uct_cuda_copy_iface_progress(uct_iface_h tl_iface)
{
    uct_cuda_copy_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_copy_iface_t,
                                                    super.super);

    return uct_cuda_queue_progress(&iface->queue);
}

static ucs_status_t uct_cuda_copy_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                              uct_completion_t *comp)
{
    uct_cuda_copy_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_copy_iface_t,
                                                    super.super);

    return uct_cuda_queue_flush(&iface->queue, comp);
}

static ucs_status_t uct_cuda_copy_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    return UCS_OK; /* one stream: operations are ordered already */
}

static void uct_cuda_copy_iface_close(uct_iface_h tl_iface)
{
    uct_cuda_copy_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_copy_iface_t,
                                                    super.super);

    int pushed = uct_cuda_ctx_push(iface->ctx);

    uct_cuda_queue_cleanup(&iface->queue);
    if (iface->bounce_pinned) {
        (void)cuMemFreeHost(iface->bounce);
    } else {
        free(iface->bounce);
    }
    uct_cuda_ctx_pop(pushed);
    uct_base_iface_cleanup(&iface->super);
    free(iface);
}

static const uct_iface_ops_t uct_cuda_copy_iface_ops = {
    .ep_put_short             = uct_cuda_copy_ep_put_short,
    .ep_put_bcopy             = uct_cuda_copy_ep_put_bcopy,
    .ep_put_zcopy             = uct_cuda_copy_ep_put_zcopy,
    .ep_get_bcopy             = uct_cuda_copy_ep_get_bcopy,
    .ep_get_zcopy             = uct_cuda_copy_ep_get_zcopy,
    .ep_flush                 = uct_cuda_copy_ep_flush,
    .ep_create                = uct_cuda_copy_ep_create,
    .ep_destroy               = uct_cuda_copy_ep_destroy,
    .iface_flush              = uct_cuda_copy_iface_flush,
    .iface_fence              = uct_cuda_copy_iface_fence,
    .iface_progress           = uct_cuda_copy_iface_progress,
    .iface_close              = uct_cuda_copy_iface_close,
    .iface_query              = uct_cuda_copy_iface_query,
    .iface_get_device_address = uct_cuda_copy_iface_get_device_address,
    .iface_get_address        = uct_cuda_copy_iface_get_address,
    .iface_is_reachable       = uct_cuda_copy_iface_is_reachable
};

static ucs_status_t uct_cuda_copy_iface_open(uct_md_h md, uct_worker_h worker,
                                             const uct_iface_params_t *params,
                                             const uct_iface_config_t *tl_config,
                                             uct_iface_h *iface_p)
{
    const uct_cuda_copy_iface_config_t *config =
            ucs_container_of(tl_config, uct_cuda_copy_iface_config_t, super);
    uct_cuda_copy_iface_t *iface;
    ucs_status_t status;
    size_t bounce_size;

    if (strcmp(params->device.dev_name, UCT_CUDA_DEV_NAME) != 0) {
        return UCS_ERR_NO_DEVICE;
    }
    if ((config->max_short > UINT_MAX) || (config->max_short > config->super.max_bcopy)) {
        ucs_error("cuda_copy: UCX_CUDA_COPY_MAX_SHORT=%zu must not exceed "
                  "UCX_CUDA_COPY_MAX_BCOPY=%zu", config->max_short,
                  config->super.max_bcopy);
        return UCS_ERR_INVALID_PARAM;
    }

    iface = calloc(1, sizeof(*iface));
    if (iface == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_base_iface_init(&iface->super, &uct_cuda_copy_iface_ops, md,
                                 worker, params, tl_config);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = uct_cuda_ctx_ensure(&iface->ctx);
    if (status != UCS_OK) {
        goto err_base;
    }

    /* Blocking copies from pageable memory the application makes from now
     * on must have landed when they return, or a copy of ours on another
     * stream could read stale data: CU_CTX_SYNC_MEMOPS on the context
     * (the pointer fallback has no pointer here and only logs). */
    uct_cuda_set_sync_memops(NULL);

    status = uct_cuda_queue_init(&iface->queue);
    if (status != UCS_OK) {
        goto err_base;
    }

    iface->max_short = config->max_short;
    iface->max_bcopy = config->super.max_bcopy;
    bounce_size      = (iface->max_bcopy > 0) ? iface->max_bcopy : 1;
    if (cuMemAllocHost(&iface->bounce, bounce_size) == CUDA_SUCCESS) {
        iface->bounce_pinned = 1;
    } else {
        iface->bounce = malloc(bounce_size);
        if (iface->bounce == NULL) {
            status = UCS_ERR_NO_MEMORY;
            goto err_queue;
        }
    }

    iface->id = __atomic_fetch_add(&uct_cuda_copy_iface_next_id, 1, __ATOMIC_RELAXED);
    ucs_debug("cuda_copy: opened iface %p in context %p", (void*)iface,
              (void*)iface->ctx);
    *iface_p = &iface->super.super;
    return UCS_OK;

err_queue:
    uct_cuda_queue_cleanup(&iface->queue);
err_base:
    uct_base_iface_cleanup(&iface->super);
err_free:
    free(iface);
    return status;
}

static ucs_status_t uct_cuda_copy_query_devices(uct_md_h md,
                                                uct_tl_device_resource_t **devices_p,
                                                unsigned *num_devices_p)
{
    return uct_tl_single_device(UCT_CUDA_DEV_NAME, UCT_DEVICE_TYPE_ACC,
                                devices_p, num_devices_p);
}

static uct_tl_t uct_cuda_copy_tl = {
    .name          = UCT_CUDA_COPY_TL_NAME,
    .query_devices = uct_cuda_copy_query_devices,
    .iface_open    = uct_cuda_copy_iface_open,
    .config        = &uct_cuda_copy_iface_config_entry,
};
UCT_TL_REGISTER(&uct_cuda_copy_component, &uct_cuda_copy_tl)
