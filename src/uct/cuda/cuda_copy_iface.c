#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_copy.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/*
 * The cuda_copy iface: a non-blocking stream in the context that was current
 * when it was opened (device 0's primary context if none was), with the FIFO
 * of its outstanding copies, and a bounce buffer for bcopy. In a process
 * that uses several GPUs, a copy of memory that lives on another device runs
 * on a stream of that device's primary context instead: VMM allocations and
 * memory pools are accessible only from the devices they were granted to,
 * so the home device could not copy them.
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

    {"HTOD_MEMOP_MAX", "64",
     "Copies from host memory to device memory up to this size (4-byte aligned\n"
     "address and length) are made as 32/64-bit stream memory writes instead\n"
     "of cuMemcpyAsync. The driver runs a small host-to-device copy on the\n"
     "GPU's compute engine, which must first switch contexts when another\n"
     "process uses the same GPU (~140 us on an H200); the writes do not need\n"
     "it. Each write costs ~0.7 us: 0 disables, at most 512.",
     ucs_offsetof(uct_cuda_copy_iface_config_t, htod_memop_max), UCS_CONFIG_TYPE_SIZE,
     0},

    {"BATCH_COPY_MAX", "16M",
     "Largest copy between two device buffers of the iface's GPU (the\n"
     "rendezvous pipeline's copy into a device fragment, for one) that waits\n"
     "for the next progress call while copies are in flight, where all that\n"
     "gathered go out as one kernel launch instead of one driver call each\n"
     "(~5 us of CPU). 0: every copy at once; inf: no limit. Needs a build\n"
     "with nvcc (ucx_info -v says).",
     ucs_offsetof(uct_cuda_copy_iface_config_t, batch_copy_max),
     UCS_CONFIG_TYPE_SIZE_EX(UCS_CONFIG_PARSE_INF), 0},

    {"LAT", "auto",
     "Latency of a copy in the performance model, from issue to data in\n"
     "place, less the CPU's ~2 us to issue it and ~1.7 us to see it done.\n"
     "auto: measured per direction on H200s (host to device 2.2 us, device\n"
     "to host 5.15 us, device to device 5.2 us); a value applies to every\n"
     "direction. UCP's automatic rendezvous thresholds follow it.",
     ucs_offsetof(uct_cuda_copy_iface_config_t, perf_lat),
     UCS_CONFIG_TYPE_TIME_EX(UCS_CONFIG_PARSE_AUTO), 0},

    {"BW", "auto",
     "Bandwidth of a copy in the performance model, bytes/s. auto: measured\n"
     "per direction on H200s up to 64 KiB, with pageable host memory (6.9 GB/s\n"
     "in, 9.3 GB/s out, 2000 GB/s within a GPU); a value applies to every\n"
     "direction.",
     ucs_offsetof(uct_cuda_copy_iface_config_t, perf_bw),
     UCS_CONFIG_TYPE_SIZE_EX(UCS_CONFIG_PARSE_AUTO), 0},

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
    /* No event fd: arming reports work in flight (uct_cuda_queue_is_busy). */
    attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP;

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

    /* The staging case (device to host); uct_iface_estimate_perf() has
     * every direction. */
    attr->overhead            = iface->perf.pre;
    attr->latency             = ucs_linear_func_make(iface->perf.lat[UCT_CUDA_PERF_D2H],
                                                     0);
    attr->bandwidth.dedicated = iface->perf.bw[UCT_CUDA_PERF_D2H];
    attr->bandwidth.shared    = 0;
    attr->priority            = 0;
    return UCS_OK;
}

static ucs_status_t uct_cuda_copy_iface_estimate_perf(uct_iface_h tl_iface,
                                                      uct_perf_attr_t *perf_attr)
{
    uct_cuda_copy_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_copy_iface_t,
                                                    super.super);

    uct_cuda_perf_estimate(&iface->perf, perf_attr);
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

/* The device whose memory [address, address + length) is, or -1 for host
 * and managed memory (any device may copy those). *restricted_p: whether
 * other devices may be unable to reach it without an access grant (VMM and
 * pool memory, and device memory of a kind the driver does not tell);
 * cuMemAlloc memory reaches every device through the driver. */
static int uct_cuda_copy_mem_device(const void *address, size_t length,
                                    int *restricted_p)
{
    uct_cuda_mem_desc_t desc;

    if ((uct_cuda_mem_describe(address, length, &desc) != UCS_OK) ||
        (desc.mem_type != UCS_MEMORY_TYPE_CUDA)) {
        *restricted_p = 0;
        return -1;
    }
    *restricted_p = (desc.alloc_kind != UCS_MEMTYPE_ALLOC_LEGACY) &&
                    (desc.alloc_kind != UCS_MEMTYPE_ALLOC_IPC_IMPORT);
    return desc.device;
}

/* First use of device @a dev: its primary context and a stream in it. */
static uct_cuda_queue_t *uct_cuda_copy_iface_open_queue(uct_cuda_copy_iface_t *iface,
                                                        int dev)
{
    uct_cuda_queue_t *q;
    CUcontext ctx;
    int pushed;

    if (dev >= UCT_CUDA_COPY_MAX_DEVICES) {
        ucs_error("cuda_copy: device %d is beyond the %d this transport drives",
                  dev, UCT_CUDA_COPY_MAX_DEVICES);
        return NULL;
    }
    q = calloc(1, sizeof(*q));
    if (q == NULL) {
        return NULL;
    }
    if (UCT_CUDA_CALL(UCS_LOG_LEVEL_ERROR,
                      cuDevicePrimaryCtxRetain(&ctx, (CUdevice)dev)) != UCS_OK) {
        free(q);
        return NULL;
    }
    pushed = (cuCtxPushCurrent(ctx) == CUDA_SUCCESS);
    if (!pushed || (uct_cuda_queue_init(q) != UCS_OK)) {
        ucs_error("cuda_copy: cannot open a stream on device %d", dev);
        if (pushed) {
            (void)cuCtxPopCurrent(&ctx);
        }
        (void)cuDevicePrimaryCtxRelease((CUdevice)dev);
        free(q);
        return NULL;
    }
    (void)cuCtxPopCurrent(&ctx);
    iface->ctxs[dev]   = ctx;
    iface->queues[dev] = q;
    iface->others     |= UCS_BIT(dev);
    ucs_debug("cuda_copy: iface %p copies device %d's memory on its primary "
              "context %p (home: device %d)", (void*)iface, dev, (void*)ctx,
              iface->home);
    return q;
}

uct_cuda_queue_t *uct_cuda_copy_iface_queue(uct_cuda_copy_iface_t *iface,
                                            const void *dst, const void *src,
                                            size_t length, CUcontext *ctx_p)
{
    int dev, src_dev, dst_restricted, src_restricted;

    *ctx_p = iface->ctx;
    if (ucs_likely(iface->num_devices < 2)) {
        return &iface->queue;
    }
    /* The destination's device, unless only the source is restricted to
     * its own device (a restricted destination decides alone). */
    dev = uct_cuda_copy_mem_device(dst, length, &dst_restricted);
    if ((dev < 0) || !dst_restricted) {
        src_dev = uct_cuda_copy_mem_device(src, length, &src_restricted);
        if ((dev < 0) || src_restricted) {
            dev = (src_dev >= 0) ? src_dev : dev;
        }
    }
    if ((dev < 0) || (dev == iface->home)) {
        return &iface->queue;
    }
    if (iface->queues[dev] == NULL) {
        return uct_cuda_copy_iface_open_queue(iface, dev) == NULL ? NULL :
               uct_cuda_copy_iface_queue(iface, dst, src, length, ctx_p);
    }
    *ctx_p = iface->ctxs[dev];
    return iface->queues[dev];
}

void uct_cuda_copy_iface_batch_stats(uct_iface_h tl_iface, uint64_t *launches,
                                     uint64_t *copies)
{
    uct_cuda_copy_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_copy_iface_t,
                                                    super.super);

    *launches = iface->queue.launches;
    *copies   = iface->queue.kernel_copies;
}

uint64_t uct_cuda_copy_iface_memop_copies(uct_iface_h tl_iface)
{
    return ucs_container_of(tl_iface, uct_cuda_copy_iface_t, super.super)->memop_copies;
}

static unsigned uct_cuda_copy_iface_progress(uct_iface_h tl_iface)
{
    uct_cuda_copy_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_copy_iface_t,
                                                    super.super);
    unsigned count               = uct_cuda_queue_progress(&iface->queue);
    uint64_t others              = iface->others;
    int pushed, dev;

    while (ucs_unlikely(others != 0)) {
        dev     = __builtin_ctzll(others);
        others &= others - 1;
        if (iface->queues[dev]->outstanding != 0) {
            pushed = uct_cuda_ctx_push(iface->ctxs[dev]);
            count += uct_cuda_queue_progress(iface->queues[dev]);
            uct_cuda_ctx_pop(pushed);
        }
    }
    return count;
}

static ucs_status_t uct_cuda_copy_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    uct_cuda_copy_iface_t *iface =
        ucs_container_of(tl_iface, uct_cuda_copy_iface_t, super.super);
    uint64_t others = iface->others;
    int dev;

    if (!(events & UCT_EVENT_SEND_COMP)) {
        return UCS_OK;
    }
    if (uct_cuda_queue_is_busy(&iface->queue)) {
        ucs_trace("cuda_copy: iface %p: busy, copies in flight", (void *)iface);
        return UCS_ERR_BUSY;
    }
    for (; others != 0; others &= others - 1) {
        dev = __builtin_ctzll(others);
        if (uct_cuda_queue_is_busy(iface->queues[dev])) {
            ucs_trace("cuda_copy: iface %p: busy, copies in flight on device "
                      "%d",
                      (void *)iface, dev);
            return UCS_ERR_BUSY;
        }
    }
    return UCS_OK;
}

/* Every queue with work gets the completion once: its count covers them. */
ucs_status_t uct_cuda_copy_iface_flush_queues(uct_cuda_copy_iface_t *iface,
                                              uct_completion_t *comp)
{
    uct_cuda_queue_t *busy[UCT_CUDA_COPY_MAX_DEVICES + 1];
    CUcontext ctxs[UCT_CUDA_COPY_MAX_DEVICES + 1];
    uint64_t others = iface->others;
    ucs_status_t status = UCS_OK;
    unsigned n = 0, i;
    int dev, pushed;

    if (iface->queue.outstanding != 0) {
        ctxs[n]   = iface->ctx;
        busy[n++] = &iface->queue;
    }
    for (; others != 0; others &= others - 1) {
        dev = __builtin_ctzll(others);
        if (iface->queues[dev]->outstanding != 0) {
            ctxs[n]   = iface->ctxs[dev];
            busy[n++] = iface->queues[dev];
        }
    }
    if ((n == 0) || (comp == NULL)) {
        return (n == 0) ? UCS_OK : UCS_INPROGRESS;
    }
    comp->count += (int)n - 1;
    for (i = 0; i < n; ++i) {
        pushed = uct_cuda_ctx_push(ctxs[i]);
        if (uct_cuda_queue_flush(busy[i], comp) == UCS_OK) {
            /* That queue drained synchronously: its share is done. */
            uct_invoke_completion(comp, UCS_OK);
        } else {
            status = UCS_INPROGRESS;
        }
        uct_cuda_ctx_pop(pushed);
    }
    return status;
}

static ucs_status_t uct_cuda_copy_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                              uct_completion_t *comp)
{
    return uct_cuda_copy_iface_flush_queues(
            ucs_container_of(tl_iface, uct_cuda_copy_iface_t, super.super), comp);
}

/* Wait for the work of @a q, in its context @a ctx. */
static void uct_cuda_copy_queue_sync(uct_cuda_queue_t *q, CUcontext ctx)
{
    int pushed;

    if (q->outstanding == 0) {
        return;
    }
    pushed = uct_cuda_ctx_push(ctx);
    (void)UCT_CUDA_CALL(UCS_LOG_LEVEL_ERROR, cuStreamSynchronize(q->stream));
    uct_cuda_ctx_pop(pushed);
}

static ucs_status_t uct_cuda_copy_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    uct_cuda_copy_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_copy_iface_t,
                                                    super.super);
    uint64_t others              = iface->others;
    int dev;

    /* The copies one kernel carries run at once: launch what waits, so
     * that what comes after the fence lands after it. */
    if (iface->queue.batched != 0) {
        int pushed = uct_cuda_ctx_push(iface->ctx);

        uct_cuda_queue_launch_pushed(&iface->queue);
        uct_cuda_ctx_pop(pushed);
    }
    /* One stream is ordered already; with several, later copies must not
     * overtake earlier ones on another stream: wait for all of them. */
    if (others == 0) {
        return UCS_OK;
    }
    for (; others != 0; others &= others - 1) {
        dev = __builtin_ctzll(others);
        uct_cuda_copy_queue_sync(iface->queues[dev], iface->ctxs[dev]);
    }
    uct_cuda_copy_queue_sync(&iface->queue, iface->ctx);
    return UCS_OK;
}

static void uct_cuda_copy_iface_close(uct_iface_h tl_iface)
{
    uct_cuda_copy_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_copy_iface_t,
                                                    super.super);
    uint64_t others              = iface->others;
    int pushed, dev;

    for (; others != 0; others &= others - 1) {
        dev    = __builtin_ctzll(others);
        pushed = uct_cuda_ctx_push(iface->ctxs[dev]);
        uct_cuda_queue_cleanup(iface->queues[dev]);
        uct_cuda_ctx_pop(pushed);
        free(iface->queues[dev]);
        (void)cuDevicePrimaryCtxRelease((CUdevice)dev);
    }

    pushed = uct_cuda_ctx_push(iface->ctx);
    if (iface->queue.launches > 0) {
        ucs_debug("cuda_copy: iface %p: %lu kernel launches carried %lu copies",
                  (void*)iface, (unsigned long)iface->queue.launches,
                  (unsigned long)iface->queue.kernel_copies);
    }
    uct_cuda_queue_cleanup(&iface->queue);
    uct_cuda_kernel_cleanup(&iface->kernel);
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
    .iface_event_arm          = uct_cuda_copy_iface_event_arm,
    .iface_close              = uct_cuda_copy_iface_close,
    .iface_query              = uct_cuda_copy_iface_query,
    .iface_get_device_address = uct_cuda_copy_iface_get_device_address,
    .iface_get_address        = uct_cuda_copy_iface_get_address,
    .iface_is_reachable       = uct_cuda_copy_iface_is_reachable};

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
    if (config->htod_memop_max > UCT_CUDA_COPY_MEMOP_LIMIT) {
        ucs_error("cuda_copy: UCX_CUDA_COPY_HTOD_MEMOP_MAX=%zu is above its limit "
                  "of %d bytes", config->htod_memop_max, UCT_CUDA_COPY_MEMOP_LIMIT);
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

    iface->super.estimate_perf = uct_cuda_copy_iface_estimate_perf;
    status = uct_cuda_perf_init(&iface->perf, &uct_cuda_copy_perf_default,
                                config->perf_lat, config->perf_bw, "CUDA_COPY_");
    if (status != UCS_OK) {
        goto err_base;
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
    if (cuCtxGetDevice((CUdevice*)&iface->home) != CUDA_SUCCESS) {
        iface->home = 0;
    }
    iface->num_devices = uct_cuda_device_count();

    iface->max_short = config->max_short;
    iface->max_bcopy = config->super.max_bcopy;
    iface->htod_memop_max = config->htod_memop_max;
    uct_cuda_queue_enable_batch(&iface->queue, &iface->kernel, config->batch_copy_max);
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
    ucs_debug("cuda_copy: opened iface %p in context %p (device %d of %d)",
              (void*)iface, (void*)iface->ctx, iface->home, iface->num_devices);
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
