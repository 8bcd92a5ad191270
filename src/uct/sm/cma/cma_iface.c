#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cma.h"

#include <ucs/debug/log.h>

#include <ucs/sys/sys.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* What a peer reads to learn whether it may read us (see cma.h). */
static volatile uint8_t uct_cma_probe_byte = UCT_CMA_PROBE_VALUE;

/* A system call and the walk of both processes' page tables: an 8-byte
 * get took ~0.5 us on the 2-core CI VM. */
#define UCT_CMA_OVERHEAD   0.4e-6
/* Size of the measuring read: the middle of the sizes rendezvous moves. */
#define UCT_CMA_MEASURE_SIZE (1ul << 20)

static ucs_config_field_t uct_cma_iface_config_fields[] = {
    {"BW", "auto",
     "Bandwidth of the cma transport in the performance model, bytes/s; auto "
     "times a read of 1 MiB of this process's own memory once.",
     ucs_offsetof(uct_cma_iface_config_t, bandwidth),
     UCS_CONFIG_TYPE_SIZE_EX(UCS_CONFIG_PARSE_AUTO), 0},

    {"MAX_CHUNK", "inf",
     "Most bytes one process_vm_readv/writev call moves; a larger transfer "
     "takes several calls.",
     ucs_offsetof(uct_cma_iface_config_t, max_chunk),
     UCS_CONFIG_TYPE_SIZE_EX(UCS_CONFIG_PARSE_INF), 0},

    {NULL, NULL, NULL, 0, UCS_CONFIG_TYPE_INT, 0}
};

static ucs_config_table_entry_t uct_cma_iface_config_entry = {
    .name   = "CMA transport",
    .prefix = "CMA_",
    .fields = uct_cma_iface_config_fields,
    .size   = sizeof(uct_cma_iface_config_t),
    .next   = NULL
};
UCS_CONFIG_REGISTER_TABLE(uct_cma_iface_config_entry)

static double uct_cma_bandwidth_measured;
static pthread_once_t uct_cma_bandwidth_once = PTHREAD_ONCE_INIT;

/* The kernel's copy between two buffers of this process, best of a few
 * rounds: the same copy a peer's read makes. ~0.5 ms, once per process. */
static void uct_cma_measure_bandwidth(void)
{
    const size_t size = UCT_CMA_MEASURE_SIZE;
    uint64_t start, elapsed, best = UINT64_MAX;
    struct iovec local, remote;
    char *src, *dst;
    int i;

    uct_cma_bandwidth_measured = 10e9; /* if we cannot measure */
    src = malloc(size);
    dst = malloc(size);
    if ((src != NULL) && (dst != NULL)) {
        memset(src, 1, size);
        memset(dst, 2, size);
        local.iov_base  = dst;
        local.iov_len   = size;
        remote.iov_base = src;
        remote.iov_len  = size;
        for (i = 0; i < 4; ++i) {
            start = ucs_get_time_ns();
            if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)size) {
                break;
            }
            elapsed = ucs_get_time_ns() - start;
            best    = (elapsed < best) ? elapsed : best;
        }
        if ((best > 0) && (best != UINT64_MAX)) {
            uct_cma_bandwidth_measured = size * 1e9 / (double)best;
        }
    }
    free(dst);
    free(src);
    ucs_debug("cma: process_vm_readv bandwidth %.1f MB/s",
              uct_cma_bandwidth_measured / 1e6);
}

static ucs_status_t uct_cma_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *attr)
{
    uct_cma_iface_t *iface = ucs_container_of(tl_iface, uct_cma_iface_t, super.super);

    uct_base_iface_query(&iface->super, attr);
    attr->cap.flags = UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_ZCOPY |
                      UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_CONNECT_TO_IFACE;
    attr->cap.event_flags = 0;

    attr->cap.put.min_zcopy       = 0;
    attr->cap.put.max_zcopy       = SIZE_MAX;
    attr->cap.put.max_iov         = UCT_CMA_MAX_IOV;
    attr->cap.put.opt_zcopy_align = 1;
    attr->cap.put.align_mtu       = 1;
    attr->cap.get.min_zcopy       = 0;
    attr->cap.get.max_zcopy       = SIZE_MAX;
    attr->cap.get.max_iov         = UCT_CMA_MAX_IOV;
    attr->cap.get.opt_zcopy_align = 1;
    attr->cap.get.align_mtu       = 1;

    attr->device_addr_len = sizeof(uct_cma_device_addr_t);
    attr->iface_addr_len  = sizeof(uct_cma_iface_addr_t);
    attr->ep_addr_len     = 0;

    attr->overhead            = UCT_CMA_OVERHEAD;
    attr->latency             = ucs_linear_func_make(0, 0);
    attr->bandwidth.dedicated = iface->bandwidth;
    attr->bandwidth.shared    = 0;
    attr->priority            = 0;
    return UCS_OK;
}

static ucs_status_t uct_cma_iface_get_device_address(uct_iface_h tl_iface,
                                                     uct_device_addr_t *addr)
{
    uct_cma_device_addr_t a;

    uct_cma_blob_hdr_init(&a.hdr, UCT_CMA_DEV_ADDR_MAGIC);
    a.node_id = uct_cma_node_id();
    memcpy(addr, &a, sizeof(a));
    return UCS_OK;
}

static ucs_status_t uct_cma_iface_get_address(uct_iface_h tl_iface,
                                              uct_iface_addr_t *addr)
{
    uct_cma_iface_addr_t a;

    uct_cma_blob_hdr_init(&a.hdr, UCT_CMA_IFACE_ADDR_MAGIC);
    a.pid   = (uint64_t)getpid();
    a.probe = (uintptr_t)&uct_cma_probe_byte;
    memcpy(addr, &a, sizeof(a));
    return UCS_OK;
}

static int uct_cma_iface_is_reachable(const uct_iface_h tl_iface,
                                      const uct_device_addr_t *dev_addr,
                                      const uct_iface_addr_t *iface_addr)
{
    uct_cma_device_addr_t d;
    uct_cma_iface_addr_t a;

    if ((dev_addr == NULL) || (iface_addr == NULL)) {
        return 0; /* both are needed: which kernel, which process */
    }
    memcpy(&d, dev_addr, sizeof(d));
    memcpy(&a, iface_addr, sizeof(a));
    if (!uct_cma_blob_hdr_is_valid(&d.hdr, UCT_CMA_DEV_ADDR_MAGIC) ||
        !uct_cma_blob_hdr_is_valid(&a.hdr, UCT_CMA_IFACE_ADDR_MAGIC) ||
        (d.node_id != uct_cma_node_id()) || (a.pid == 0) ||
        (a.pid > (uint64_t)INT32_MAX)) {
        return 0;
    }
    return uct_cma_can_access((pid_t)a.pid, a.probe);
}

static ucs_status_t uct_cma_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                        uct_completion_t *comp)
{
    return UCS_OK; /* every operation completed inside its call */
}

static ucs_status_t uct_cma_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    return UCS_OK;
}

static void uct_cma_iface_close(uct_iface_h tl_iface)
{
    uct_cma_iface_t *iface = ucs_container_of(tl_iface, uct_cma_iface_t, super.super);

    uct_base_iface_cleanup(&iface->super);
    free(iface);
}

static const uct_iface_ops_t uct_cma_iface_ops = {
    .ep_put_zcopy             = uct_cma_ep_put_zcopy,
    .ep_get_zcopy             = uct_cma_ep_get_zcopy,
    .ep_pending_add           = uct_cma_ep_pending_add,
    .ep_pending_purge         = NULL, /* nothing is ever pending */
    .ep_flush                 = uct_cma_ep_flush,
    .ep_fence                 = uct_cma_ep_fence,
    .ep_create                = uct_cma_ep_create,
    .ep_destroy               = uct_cma_ep_destroy,
    .iface_flush              = uct_cma_iface_flush,
    .iface_fence              = uct_cma_iface_fence,
    .iface_progress           = NULL, /* operations complete in their call */
    .iface_close              = uct_cma_iface_close,
    .iface_query              = uct_cma_iface_query,
    .iface_get_device_address = uct_cma_iface_get_device_address,
    .iface_get_address        = uct_cma_iface_get_address,
    .iface_is_reachable       = uct_cma_iface_is_reachable
};

static ucs_status_t uct_cma_iface_open(uct_md_h md, uct_worker_h worker,
                                       const uct_iface_params_t *params,
                                       const uct_iface_config_t *tl_config,
                                       uct_iface_h *iface_p)
{
    const uct_cma_iface_config_t *config =
            ucs_container_of(tl_config, uct_cma_iface_config_t, super);
    uct_cma_iface_t *iface;
    ucs_status_t status;

    if (strcmp(params->device.dev_name, UCT_CMA_DEV_NAME) != 0) {
        ucs_error("cma: no device '%s' (only '%s')", params->device.dev_name,
                  UCT_CMA_DEV_NAME);
        return UCS_ERR_NO_DEVICE;
    }
    iface = calloc(1, sizeof(*iface));
    if (iface == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = uct_base_iface_init(&iface->super, &uct_cma_iface_ops, md, worker,
                                 params, tl_config);
    if (status != UCS_OK) {
        free(iface);
        return status;
    }
    if (config->bandwidth == UCS_MEMUNITS_AUTO) {
        pthread_once(&uct_cma_bandwidth_once, uct_cma_measure_bandwidth);
        iface->bandwidth = uct_cma_bandwidth_measured;
    } else {
        iface->bandwidth = (double)config->bandwidth;
    }
    iface->max_chunk = (config->max_chunk == 0) ? SIZE_MAX : config->max_chunk;
    ucs_debug("cma: opened iface %p, %.1f MB/s in the model", (void*)iface,
              iface->bandwidth / 1e6);
    *iface_p = &iface->super.super;
    return UCS_OK;
}

/* No device when the kernel lacks the calls, or a seccomp profile forbids
 * them: a read of our own probe byte must work. */
static ucs_status_t uct_cma_query_devices(uct_md_h md,
                                          uct_tl_device_resource_t **devices_p,
                                          unsigned *num_devices_p)
{
    if (!uct_cma_can_access(getpid(), (uintptr_t)&uct_cma_probe_byte)) {
        ucs_debug("cma: process_vm_readv does not work here: no device");
        *devices_p     = NULL;
        *num_devices_p = 0;
        return UCS_OK;
    }
    return uct_tl_single_device(UCT_CMA_DEV_NAME, UCT_DEVICE_TYPE_SHM, devices_p,
                                num_devices_p);
}

static uct_tl_t uct_cma_tl = {
    .name          = UCT_CMA_NAME,
    .query_devices = uct_cma_query_devices,
    .iface_open    = uct_cma_iface_open,
    .config        = &uct_cma_iface_config_entry,
};
UCT_TL_REGISTER(&uct_cma_component, &uct_cma_tl)
