#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_ipc.h"

#include <ucs/sys/sys.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The cuda_ipc iface: a non-blocking stream and a mapping cache in the
 * context that was current when it was opened. Reachability: the peer runs
 * on the same host (boot id) as the same user; whether its memory can be
 * imported is decided per key (rkey unpack, first import).
 */

static ucs_config_field_t uct_cuda_ipc_iface_config_fields[] = {
    {"CACHE", "y",
     "Keep imported peer memory mapped for reuse (n: map and unmap around "
     "every operation).",
     ucs_offsetof(uct_cuda_ipc_iface_config_t, cache_enable), UCS_CONFIG_TYPE_BOOL, 0},

    {"CACHE_MAX_REGIONS", "1024",
     "Most peer mappings an iface keeps; least recently used unused ones are "
     "unmapped beyond it.",
     ucs_offsetof(uct_cuda_ipc_iface_config_t, cache_max_regions),
     UCS_CONFIG_TYPE_UINT, 0},

    {"CACHE_MAX_SIZE", "1T",
     "Most bytes of peer memory an iface keeps mapped; least recently used "
     "unused mappings are unmapped beyond it.",
     ucs_offsetof(uct_cuda_ipc_iface_config_t, cache_max_size),
     UCS_CONFIG_TYPE_SIZE, 0},

    {"FD_TRANSFER", "auto",
     "How file descriptors of VMM and pool memory reach the importer: auto "
     "(pidfd_getfd when permitted, else the exporter's socket), pidfd, socket.",
     ucs_offsetof(uct_cuda_ipc_iface_config_t, fd_transfer),
     UCS_CONFIG_TYPE_ENUM(uct_cuda_ipc_fd_transfer_names), 0},

    {"BATCH_COPY_MAX", "16M",
     "Largest get/put between a device buffer of the iface's GPU and peer "
     "memory of that GPU (or of a peer-accessible GPU, see BATCH_PEER) that "
     "waits for the iface's next progress call while copies are in flight, "
     "where every such copy gathered since the last call is launched as one "
     "kernel: one launch costs the CPU about what one cuMemcpyAsync does, "
     "which limits a stream of mid-size messages. The kernel runs on the "
     "SMs. 0: issue every copy at once with cuMemcpyAsync; inf: no limit. "
     "Needs a build with nvcc (ucx_info -v says).",
     ucs_offsetof(uct_cuda_ipc_iface_config_t, batch_copy_max),
     UCS_CONFIG_TYPE_SIZE_EX(UCS_CONFIG_PARSE_INF), 0},

    {"BATCH_PEER", "y",
     "Batch copies with memory of another GPU too, under the same size limit, "
     "when this process sees that GPU and ours accesses it peer-to-peer "
     "(cuDeviceCanAccessPeer): the kernel, on the iface's GPU, reads or "
     "writes the peer's memory through the import's mapping. Measured over "
     "NVLink (H200); over PCIe the copy engines may do better. n: only "
     "memory of the iface's GPU; copies of peer memory go one by one to the "
     "copy engines.",
     ucs_offsetof(uct_cuda_ipc_iface_config_t, batch_peer),
     UCS_CONFIG_TYPE_BOOL, 0},

    {"LAT", "auto",
     "Latency of a get or put in the performance model, from issue to data\n"
     "in place, less the CPU's ~2.5 us to issue it and ~1.7 us to see it\n"
     "done, the peer's memory already mapped. auto: 4.5 us, measured on\n"
     "H200s; a value applies to every direction. UCP's automatic rendezvous\n"
     "thresholds follow it.",
     ucs_offsetof(uct_cuda_ipc_iface_config_t, perf_lat),
     UCS_CONFIG_TYPE_TIME_EX(UCS_CONFIG_PARSE_AUTO), 0},

    {"BW", "auto",
     "Bandwidth of a get or put in the performance model, bytes/s. auto:\n"
     "2000 GB/s on one GPU, 396 GB/s between two (NVLink NV18, H200),\n"
     "16 GB/s with host memory; a value applies to every direction.",
     ucs_offsetof(uct_cuda_ipc_iface_config_t, perf_bw),
     UCS_CONFIG_TYPE_SIZE_EX(UCS_CONFIG_PARSE_AUTO), 0},

    {NULL, NULL, NULL, 0, {NULL, NULL, NULL, NULL, NULL, NULL, 0, 0}, 0}
};

static ucs_config_table_entry_t uct_cuda_ipc_iface_config_entry = {
    .name   = "CUDA IPC transport",
    .prefix = "CUDA_IPC_",
    .fields = uct_cuda_ipc_iface_config_fields,
    .size   = sizeof(uct_cuda_ipc_iface_config_t),
    .next   = NULL
};
UCS_CONFIG_REGISTER_TABLE(uct_cuda_ipc_iface_config_entry)

static ucs_status_t uct_cuda_ipc_iface_query(uct_iface_h tl_iface,
                                             uct_iface_attr_t *attr)
{
    uct_cuda_ipc_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_ipc_iface_t,
                                                   super.super);

    uct_base_iface_query(&iface->super, attr);

    attr->cap.flags = UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_ZCOPY |
                      UCT_IFACE_FLAG_CONNECT_TO_IFACE;
    /* No event fd: arming reports work in flight (uct_cuda_queue_is_busy). */
    attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP;

    attr->cap.put.min_zcopy       = 0;
    attr->cap.put.max_zcopy       = SIZE_MAX;
    attr->cap.put.max_iov         = UCT_CUDA_IPC_MAX_IOV;
    attr->cap.put.opt_zcopy_align = 1;
    attr->cap.put.align_mtu       = 1;
    attr->cap.get                 = attr->cap.put;

    attr->device_addr_len = 0;
    attr->iface_addr_len  = sizeof(uct_cuda_ipc_iface_addr_t);
    attr->ep_addr_len     = 0;

    /* Between two GPUs; uct_iface_estimate_perf() has every direction. */
    attr->overhead            = iface->perf.pre;
    attr->latency             =
            ucs_linear_func_make(iface->perf.lat[UCT_CUDA_PERF_D2D_PEER], 0);
    attr->bandwidth.dedicated = iface->perf.bw[UCT_CUDA_PERF_D2D_PEER];
    attr->bandwidth.shared    = 0;
    attr->priority            = 0;
    return UCS_OK;
}

static ucs_status_t uct_cuda_ipc_iface_estimate_perf(uct_iface_h tl_iface,
                                                     uct_perf_attr_t *perf_attr)
{
    uct_cuda_ipc_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_ipc_iface_t,
                                                   super.super);

    uct_cuda_perf_estimate(&iface->perf, perf_attr);
    return UCS_OK;
}

static void uct_cuda_ipc_iface_addr_fill(uct_cuda_ipc_iface_addr_t *a)
{
    memset(a, 0, sizeof(*a));
    a->magic = UCT_CUDA_IPC_ADDR_MAGIC;
    a->uid    = (uint32_t)getuid();
    a->pid_ns = ucs_sys_get_pid_ns();
    (void)ucs_sys_get_node_id(a->node_id);
}

static ucs_status_t uct_cuda_ipc_iface_get_device_address(uct_iface_h tl_iface,
                                                          uct_device_addr_t *addr)
{
    return UCS_OK; /* empty: the iface address says everything */
}

static ucs_status_t uct_cuda_ipc_iface_get_address(uct_iface_h tl_iface,
                                                   uct_iface_addr_t *addr)
{
    uct_cuda_ipc_iface_addr_t a;

    uct_cuda_ipc_iface_addr_fill(&a);
    memcpy(addr, &a, sizeof(a));
    return UCS_OK;
}

/*
 * Same host (boot id) and same user. PID namespaces: pidfd_getfd needs the
 * exporter's pid to mean the same process, so with FD_TRANSFER=pidfd a peer
 * in another PID namespace is unreachable; the socket path works across
 * them (and legacy handles need no fd from us).
 */
static int uct_cuda_ipc_iface_is_reachable(const uct_iface_h tl_iface,
                                           const uct_device_addr_t *dev_addr,
                                           const uct_iface_addr_t *iface_addr)
{
    uct_cuda_ipc_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_ipc_iface_t,
                                                   super.super);
    uct_cuda_ipc_iface_addr_t a, local;

    if (iface_addr == NULL) {
        return 0;
    }
    memcpy(&a, iface_addr, sizeof(a));
    uct_cuda_ipc_iface_addr_fill(&local);
    if ((a.magic != local.magic) || (a.uid != local.uid) ||
        memcmp(a.node_id, local.node_id, sizeof(a.node_id))) {
        return 0;
    }
    return (a.pid_ns == local.pid_ns) ||
           (iface->cache.config.fd_transfer != UCT_CUDA_IPC_FD_TRANSFER_PIDFD);
}

uct_cuda_queue_t *uct_cuda_ipc_iface_queue(uct_cuda_ipc_iface_t *iface,
                                           uint32_t device)
{
    unsigned i = device % UCT_CUDA_IPC_MAX_PEER_DEVICES;

    if (!(iface->queues_created & UCS_BIT(i))) {
        if (uct_cuda_queue_init(&iface->queues[i]) != UCS_OK) {
            return NULL;
        }
        uct_cuda_queue_enable_batch(&iface->queues[i], &iface->kernel,
                                    iface->batch_copy_max);
        iface->queues_created |= UCS_BIT(i);
        ucs_debug("cuda_ipc: iface %p: stream for peer device %u", (void*)iface,
                  device);
    }
    return &iface->queues[i];
}

static unsigned uct_cuda_ipc_iface_progress(uct_iface_h tl_iface)
{
    uct_cuda_ipc_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_ipc_iface_t,
                                                   super.super);
    uint32_t mask               = iface->queues_created;
    unsigned count              = 0;
    int pushed;
    unsigned i;

    if (mask == 0) {
        return 0;
    }
    /* Completions may unmap (UCX_CUDA_IPC_CACHE=n): needs our context. */
    pushed = uct_cuda_ctx_push(iface->ctx);
    for (i = 0; mask != 0; ++i, mask >>= 1) {
        if (mask & 1) {
            count += uct_cuda_queue_progress(&iface->queues[i]);
        }
    }
    uct_cuda_ctx_pop(pushed);
    return count;
}

static ucs_status_t uct_cuda_ipc_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    uct_cuda_ipc_iface_t *iface =
        ucs_container_of(tl_iface, uct_cuda_ipc_iface_t, super.super);
    unsigned i;

    if (!(events & UCT_EVENT_SEND_COMP)) {
        return UCS_OK; /* nothing arrives here: receives are the peer's */
    }
    for (i = 0; i < UCT_CUDA_IPC_MAX_PEER_DEVICES; ++i) {
        if ((iface->queues_created & UCS_BIT(i)) &&
            uct_cuda_queue_is_busy(&iface->queues[i])) {
            ucs_trace("cuda_ipc: iface %p: busy, copies in flight to device "
                      "queue %u",
                      (void *)iface, i);
            return UCS_ERR_BUSY;
        }
    }
    return UCS_OK;
}

ucs_status_t uct_cuda_ipc_iface_flush_all(uct_cuda_ipc_iface_t *iface,
                                          uct_completion_t *comp)
{
    unsigned i, busy = 0;

    for (i = 0; i < UCT_CUDA_IPC_MAX_PEER_DEVICES; ++i) {
        busy += (iface->queues_created & UCS_BIT(i)) &&
                (iface->queues[i].outstanding > 0);
    }
    if (busy == 0) {
        return UCS_OK;
    }
    if (comp == NULL) {
        return UCS_INPROGRESS;
    }

    /* One marker per busy stream; the completion runs after the last. */
    comp->count += busy - 1;
    for (i = 0; i < UCT_CUDA_IPC_MAX_PEER_DEVICES; ++i) {
        if ((iface->queues_created & UCS_BIT(i)) &&
            (iface->queues[i].outstanding > 0) &&
            (uct_cuda_queue_flush(&iface->queues[i], comp) == UCS_OK)) {
            /* No marker could be queued: it waited; count its share now. */
            uct_invoke_completion(comp, UCS_OK);
        }
    }
    return UCS_INPROGRESS;
}

static ucs_status_t uct_cuda_ipc_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                             uct_completion_t *comp)
{
    uct_cuda_ipc_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_ipc_iface_t,
                                                   super.super);

    return uct_cuda_ipc_iface_flush_all(iface, comp);
}

/* One stream per peer GPU runs its copies in order, but the copies one
 * kernel carries run at once: launch what waits, so that what comes after
 * the fence lands after it. */
static ucs_status_t uct_cuda_ipc_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    uct_cuda_ipc_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_ipc_iface_t,
                                                   super.super);
    uint32_t mask               = iface->queues_created;
    int pushed;
    unsigned i;

    pushed = uct_cuda_ctx_push(iface->ctx);
    for (i = 0; mask != 0; ++i, mask >>= 1) {
        if ((mask & 1) && (iface->queues[i].batched != 0)) {
            uct_cuda_queue_launch_pushed(&iface->queues[i]);
        }
    }
    uct_cuda_ctx_pop(pushed);
    return UCS_OK;
}

void uct_cuda_ipc_iface_cache_stats(uct_iface_h tl_iface, uint64_t *imports,
                                    uint64_t *hits, unsigned *regions)
{
    uct_cuda_ipc_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_ipc_iface_t,
                                                   super.super);

    *imports = iface->cache.imports;
    *hits    = iface->cache.hits;
    *regions = iface->cache.num_regions;
}

void uct_cuda_ipc_iface_batch_stats(uct_iface_h tl_iface, uint64_t *launches,
                                    uint64_t *copies)
{
    uct_cuda_ipc_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_ipc_iface_t,
                                                   super.super);
    unsigned i;

    *launches = *copies = 0;
    for (i = 0; i < UCT_CUDA_IPC_MAX_PEER_DEVICES; ++i) {
        if (iface->queues_created & UCS_BIT(i)) {
            *launches += iface->queues[i].launches;
            *copies   += iface->queues[i].kernel_copies;
        }
    }
}

static void uct_cuda_ipc_iface_close(uct_iface_h tl_iface)
{
    uct_cuda_ipc_iface_t *iface = ucs_container_of(tl_iface, uct_cuda_ipc_iface_t,
                                                   super.super);

    int pushed = uct_cuda_ctx_push(iface->ctx);
    uint64_t launches, copies;
    unsigned i;

    uct_cuda_ipc_iface_batch_stats(tl_iface, &launches, &copies);
    if (launches > 0) {
        ucs_debug("cuda_ipc: iface %p: %lu kernel launches carried %lu copies",
                  (void*)iface, (unsigned long)launches, (unsigned long)copies);
    }
    /* Operations first: they hold references to mappings. */
    for (i = 0; i < UCT_CUDA_IPC_MAX_PEER_DEVICES; ++i) {
        if (iface->queues_created & UCS_BIT(i)) {
            uct_cuda_queue_cleanup(&iface->queues[i]);
        }
    }
    uct_cuda_ipc_cache_cleanup(&iface->cache);
    uct_cuda_kernel_cleanup(&iface->kernel);
    uct_cuda_ctx_pop(pushed);
    uct_base_iface_cleanup(&iface->super);
    free(iface);
}

static const uct_iface_ops_t uct_cuda_ipc_iface_ops = {
    .ep_put_zcopy             = uct_cuda_ipc_ep_put_zcopy,
    .ep_get_zcopy             = uct_cuda_ipc_ep_get_zcopy,
    .ep_flush                 = uct_cuda_ipc_ep_flush,
    .ep_create                = uct_cuda_ipc_ep_create,
    .ep_destroy               = uct_cuda_ipc_ep_destroy,
    .iface_flush              = uct_cuda_ipc_iface_flush,
    .iface_fence              = uct_cuda_ipc_iface_fence,
    .iface_progress           = uct_cuda_ipc_iface_progress,
    .iface_event_arm          = uct_cuda_ipc_iface_event_arm,
    .iface_close              = uct_cuda_ipc_iface_close,
    .iface_query              = uct_cuda_ipc_iface_query,
    .iface_get_device_address = uct_cuda_ipc_iface_get_device_address,
    .iface_get_address        = uct_cuda_ipc_iface_get_address,
    .iface_is_reachable       = uct_cuda_ipc_iface_is_reachable};

static ucs_status_t uct_cuda_ipc_iface_open(uct_md_h md, uct_worker_h worker,
                                            const uct_iface_params_t *params,
                                            const uct_iface_config_t *tl_config,
                                            uct_iface_h *iface_p)
{
    const uct_cuda_ipc_iface_config_t *config =
            ucs_container_of(tl_config, uct_cuda_ipc_iface_config_t, super);
    uct_cuda_ipc_cache_config_t cache_config;
    uct_cuda_ipc_iface_t *iface;
    ucs_status_t status;
    CUdevice device;

    if (strcmp(params->device.dev_name, UCT_CUDA_DEV_NAME) != 0) {
        return UCS_ERR_NO_DEVICE;
    }

    iface = calloc(1, sizeof(*iface));
    if (iface == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_base_iface_init(&iface->super, &uct_cuda_ipc_iface_ops, md, worker,
                                 params, tl_config);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = uct_cuda_ctx_ensure(&iface->ctx);
    if (status != UCS_OK) {
        goto err_base;
    }
    status = UCT_CUDA_CALL(UCS_LOG_LEVEL_ERROR, cuCtxGetDevice(&device));
    if (status != UCS_OK) {
        goto err_base;
    }

    iface->device         = (int)device;
    iface->batch_copy_max = config->batch_copy_max; /* inf: SIZE_MAX */
    iface->batch_peer     = config->batch_peer;
    iface->super.estimate_perf = uct_cuda_ipc_iface_estimate_perf;
    status = uct_cuda_perf_init(&iface->perf, &uct_cuda_ipc_perf_default,
                                config->perf_lat, config->perf_bw, "CUDA_IPC_");
    if (status != UCS_OK) {
        goto err_base;
    }

    cache_config.enable      = config->cache_enable;
    cache_config.max_regions = config->cache_max_regions;
    cache_config.max_size    = config->cache_max_size;
    cache_config.fd_transfer = (uct_cuda_ipc_fd_transfer_t)config->fd_transfer;
    status = uct_cuda_ipc_cache_init(&iface->cache, &cache_config, device);
    if (status != UCS_OK) {
        goto err_base;
    }

    ucs_debug("cuda_ipc: opened iface %p on device %d: cache %s, max %u regions / "
              "%zu bytes, fd transfer %s, batched copies up to %zu bytes%s",
              (void*)iface, (int)device, cache_config.enable ? "on" : "off",
              cache_config.max_regions, cache_config.max_size,
              uct_cuda_ipc_fd_transfer_names[cache_config.fd_transfer],
              iface->batch_copy_max, iface->batch_peer ? " (peer GPUs too)" : "");
    *iface_p = &iface->super.super;
    return UCS_OK;

err_base:
    uct_base_iface_cleanup(&iface->super);
err_free:
    free(iface);
    return status;
}

static ucs_status_t uct_cuda_ipc_query_devices(uct_md_h md,
                                               uct_tl_device_resource_t **devices_p,
                                               unsigned *num_devices_p)
{
    return uct_tl_single_device(UCT_CUDA_DEV_NAME, UCT_DEVICE_TYPE_ACC,
                                devices_p, num_devices_p);
}

static uct_tl_t uct_cuda_ipc_tl = {
    .name          = UCT_CUDA_IPC_NAME,
    .query_devices = uct_cuda_ipc_query_devices,
    .iface_open    = uct_cuda_ipc_iface_open,
    .config        = &uct_cuda_ipc_iface_config_entry,
};
UCT_TL_REGISTER(&uct_cuda_ipc_component, &uct_cuda_ipc_tl)
