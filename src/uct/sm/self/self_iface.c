#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "self.h"

#include <ucs/debug/log.h>

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/*
 * Self ifaces of the process are kept in a registry so that an iface
 * address can name any of them, not only the sender's own iface: two ifaces
 * of one process (two ucp workers, two test entities) talk to each other
 * exactly as over a real transport.
 */
static pthread_mutex_t uct_self_iface_lock = PTHREAD_MUTEX_INITIALIZER;
static UCS_LIST_HEAD(uct_self_iface_list);
static uint64_t uct_self_iface_next_id = 1;

static ucs_config_field_t uct_self_iface_config_fields[] = {
    {"SEG_SIZE", "8k",
     "Largest active message the self transport delivers, 8-byte header "
     "included (am short, bcopy and zcopy alike).",
     ucs_offsetof(uct_self_iface_config_t, super.max_bcopy), UCS_CONFIG_TYPE_SIZE, 0},

    {NULL, NULL, NULL, 0, {NULL, NULL, NULL, NULL, NULL, NULL, 0, 0}, 0}
};

static ucs_config_table_entry_t uct_self_iface_config_entry = {
    .name   = "Self transport",
    .prefix = "SELF_",
    .fields = uct_self_iface_config_fields,
    .size   = sizeof(uct_self_iface_config_t),
    .next   = NULL
};
UCS_CONFIG_REGISTER_TABLE(uct_self_iface_config_entry)

uct_self_iface_t *uct_self_iface_lookup(const uct_self_iface_addr_t *addr)
{
    uct_self_iface_addr_t a;
    uct_self_iface_t *iface, *found = NULL;

    memcpy(&a, addr, sizeof(a)); /* the blob may be unaligned */
    if (!uct_self_blob_hdr_is_valid(&a.hdr, UCT_SELF_IFACE_ADDR_MAGIC) ||
        (a.proc_id != uct_self_proc_id())) {
        return NULL;
    }

    pthread_mutex_lock(&uct_self_iface_lock);
    ucs_list_for_each(iface, &uct_self_iface_list, list) {
        if (iface->id == a.iface_id) {
            found = iface;
            break;
        }
    }
    pthread_mutex_unlock(&uct_self_iface_lock);
    return found;
}

static ucs_status_t uct_self_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *attr)
{
    uct_self_iface_t *iface = ucs_container_of(tl_iface, uct_self_iface_t, super.super);

    uct_base_iface_query(&iface->super, attr);

    attr->cap.flags = UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY |
                      UCT_IFACE_FLAG_AM_ZCOPY | UCT_IFACE_FLAG_PUT_SHORT |
                      UCT_IFACE_FLAG_PUT_BCOPY | UCT_IFACE_FLAG_PUT_ZCOPY |
                      UCT_IFACE_FLAG_GET_BCOPY | UCT_IFACE_FLAG_GET_ZCOPY |
                      UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                      UCT_IFACE_FLAG_CB_SYNC;
    attr->cap.event_flags = 0;

    attr->cap.am.max_short       = iface->seg_size;
    attr->cap.am.max_bcopy       = iface->seg_size;
    attr->cap.am.min_zcopy       = 0;
    attr->cap.am.max_zcopy       = iface->seg_size;
    attr->cap.am.max_hdr         = iface->seg_size;
    attr->cap.am.max_iov         = UCT_SELF_MAX_IOV;
    attr->cap.am.opt_zcopy_align = 1;
    attr->cap.am.align_mtu       = 1;

    attr->cap.put.max_short       = UINT_MAX;
    attr->cap.put.max_bcopy       = SIZE_MAX;
    attr->cap.put.min_zcopy       = 0;
    attr->cap.put.max_zcopy       = SIZE_MAX;
    attr->cap.put.max_iov         = UCT_SELF_MAX_IOV;
    attr->cap.put.opt_zcopy_align = 1;
    attr->cap.put.align_mtu       = 1;

    attr->cap.get.max_bcopy       = SIZE_MAX;
    attr->cap.get.min_zcopy       = 0;
    attr->cap.get.max_zcopy       = SIZE_MAX;
    attr->cap.get.max_iov         = UCT_SELF_MAX_IOV;
    attr->cap.get.opt_zcopy_align = 1;
    attr->cap.get.align_mtu       = 1;

    attr->device_addr_len = sizeof(uct_self_device_addr_t);
    attr->iface_addr_len  = sizeof(uct_self_iface_addr_t);
    attr->ep_addr_len     = 0;

    /* A function call and a memcpy: no wire, no queue. */
    attr->overhead            = 10e-9;
    attr->latency             = ucs_linear_func_make(0, 0);
    attr->bandwidth.dedicated = 12e9;
    attr->bandwidth.shared    = 0;
    attr->priority            = 0;
    return UCS_OK;
}

static ucs_status_t uct_self_iface_get_device_address(uct_iface_h tl_iface,
                                                      uct_device_addr_t *addr)
{
    uct_self_device_addr_t a;

    uct_self_blob_hdr_init(&a.hdr, UCT_SELF_DEV_ADDR_MAGIC);
    a.proc_id = uct_self_proc_id();
    memcpy(addr, &a, sizeof(a));
    return UCS_OK;
}

static ucs_status_t uct_self_iface_get_address(uct_iface_h tl_iface,
                                               uct_iface_addr_t *addr)
{
    uct_self_iface_t *iface = ucs_container_of(tl_iface, uct_self_iface_t, super.super);
    uct_self_iface_addr_t a;

    uct_self_blob_hdr_init(&a.hdr, UCT_SELF_IFACE_ADDR_MAGIC);
    a.proc_id  = uct_self_proc_id();
    a.iface_id = iface->id;
    memcpy(addr, &a, sizeof(a));
    return UCS_OK;
}

static int uct_self_iface_is_reachable(const uct_iface_h tl_iface,
                                       const uct_device_addr_t *dev_addr,
                                       const uct_iface_addr_t *iface_addr)
{
    uct_self_device_addr_t d;

    if ((dev_addr == NULL) && (iface_addr == NULL)) {
        return 0; /* nothing to judge by */
    }

    if (dev_addr != NULL) {
        memcpy(&d, dev_addr, sizeof(d));
        if (!uct_self_blob_hdr_is_valid(&d.hdr, UCT_SELF_DEV_ADDR_MAGIC) ||
            (d.proc_id != uct_self_proc_id())) {
            return 0;
        }
    }

    return (iface_addr == NULL) ||
           (uct_self_iface_lookup((const uct_self_iface_addr_t*)iface_addr) != NULL);
}

static ucs_status_t uct_self_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                         uct_completion_t *comp)
{
    return UCS_OK; /* every operation completed inside its call */
}

static ucs_status_t uct_self_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    return UCS_OK;
}

/* A kept descriptor comes back: return it to the pool. The object starts
 * UCT_RECV_DESC_HDR_SIZE bytes before desc (see self_ep.c). */
static void uct_self_iface_release_desc(uct_recv_desc_t *self, void *desc)
{
    ucs_mpool_put((char*)desc - UCT_RECV_DESC_HDR_SIZE);
}

/* Once per descriptor: the release pointer never changes afterwards. */
static void uct_self_iface_desc_init(void *obj, void *arg)
{
    uct_self_iface_t *iface = arg;

    uct_recv_desc_set((char*)obj + UCT_RECV_DESC_HDR_SIZE, &iface->release_desc);
}

static void uct_self_iface_close(uct_iface_h tl_iface)
{
    uct_self_iface_t *iface = ucs_container_of(tl_iface, uct_self_iface_t, super.super);

    pthread_mutex_lock(&uct_self_iface_lock);
    ucs_list_del(&iface->list);
    pthread_mutex_unlock(&uct_self_iface_lock);

    ucs_mpool_cleanup(&iface->desc_mp);
    uct_base_iface_cleanup(&iface->super);
    free(iface);
}

static const uct_iface_ops_t uct_self_iface_ops = {
    .ep_am_short              = uct_self_ep_am_short,
    .ep_am_bcopy              = uct_self_ep_am_bcopy,
    .ep_am_zcopy              = uct_self_ep_am_zcopy,
    .ep_put_short             = uct_self_ep_put_short,
    .ep_put_bcopy             = uct_self_ep_put_bcopy,
    .ep_put_zcopy             = uct_self_ep_put_zcopy,
    .ep_get_bcopy             = uct_self_ep_get_bcopy,
    .ep_get_zcopy             = uct_self_ep_get_zcopy,
    .ep_pending_add           = uct_self_ep_pending_add,
    .ep_pending_purge         = NULL, /* nothing is ever pending */
    .ep_flush                 = uct_self_ep_flush,
    .ep_fence                 = uct_self_ep_fence,
    .ep_create                = uct_self_ep_create,
    .ep_destroy               = uct_self_ep_destroy,
    .ep_get_address           = NULL, /* CONNECT_TO_IFACE only */
    .ep_connect_to_ep         = NULL,
    .iface_flush              = uct_self_iface_flush,
    .iface_fence              = uct_self_iface_fence,
    .iface_progress           = NULL, /* delivery is synchronous */
    .iface_event_fd_get       = NULL,
    .iface_event_arm          = NULL,
    .iface_close              = uct_self_iface_close,
    .iface_query              = uct_self_iface_query,
    .iface_get_device_address = uct_self_iface_get_device_address,
    .iface_get_address        = uct_self_iface_get_address,
    .iface_is_reachable       = uct_self_iface_is_reachable
};

static ucs_status_t uct_self_iface_open(uct_md_h md, uct_worker_h worker,
                                        const uct_iface_params_t *params,
                                        const uct_iface_config_t *tl_config,
                                        uct_iface_h *iface_p)
{
    const uct_self_iface_config_t *config =
            ucs_container_of(tl_config, uct_self_iface_config_t, super);
    ucs_mpool_params_t mp_params;
    uct_self_iface_t *iface;
    ucs_status_t status;

    if (strcmp(params->device.dev_name, UCT_SELF_DEV_NAME) != 0) {
        ucs_error("self: no device '%s' (only '%s')", params->device.dev_name,
                  UCT_SELF_DEV_NAME);
        return UCS_ERR_NO_DEVICE;
    }
    if (config->super.max_bcopy < sizeof(uint64_t)) {
        ucs_error("self: UCX_SELF_SEG_SIZE=%zu is smaller than an am header (8)",
                  config->super.max_bcopy);
        return UCS_ERR_INVALID_PARAM;
    }

    iface = calloc(1, sizeof(*iface));
    if (iface == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_base_iface_init(&iface->super, &uct_self_iface_ops, md, worker,
                                 params, tl_config);
    if (status != UCS_OK) {
        goto err_free;
    }

    iface->seg_size             = config->super.max_bcopy;
    iface->release_desc.release = uct_self_iface_release_desc;

    /* Descriptor: [release pointer][rx headroom][seg_size bytes of data]. */
    ucs_mpool_params_reset(&mp_params);
    mp_params.obj_size       = UCT_RECV_DESC_HDR_SIZE + iface->super.rx_headroom +
                               iface->seg_size;
    mp_params.alignment      = 64;
    mp_params.objs_per_chunk = 16;
    mp_params.obj_init       = uct_self_iface_desc_init;
    mp_params.obj_init_arg   = iface;
    mp_params.name           = "self_recv_desc";
    status = ucs_mpool_init(&iface->desc_mp, &mp_params);
    if (status != UCS_OK) {
        goto err_base_cleanup;
    }

    pthread_mutex_lock(&uct_self_iface_lock);
    iface->id = uct_self_iface_next_id++;
    ucs_list_add_tail(&uct_self_iface_list, &iface->list);
    pthread_mutex_unlock(&uct_self_iface_lock);

    ucs_debug("self: opened iface %p id %lu, seg size %zu", (void*)iface,
              (unsigned long)iface->id, iface->seg_size);
    *iface_p = &iface->super.super;
    return UCS_OK;

err_base_cleanup:
    uct_base_iface_cleanup(&iface->super);
err_free:
    free(iface);
    return status;
}

static ucs_status_t uct_self_query_devices(uct_md_h md,
                                           uct_tl_device_resource_t **devices_p,
                                           unsigned *num_devices_p)
{
    return uct_tl_single_device(UCT_SELF_DEV_NAME, UCT_DEVICE_TYPE_SELF,
                                devices_p, num_devices_p);
}

static uct_tl_t uct_self_tl = {
    .name          = UCT_SELF_NAME,
    .query_devices = uct_self_query_devices,
    .iface_open    = uct_self_iface_open,
    .config        = &uct_self_iface_config_entry,
};
UCT_TL_REGISTER(&uct_self_component, &uct_self_tl)
