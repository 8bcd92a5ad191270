#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_iface.h"
#include "uct_worker.h"

#include <ucs/debug/log.h>

#include <string.h>

/*
 * The base iface (shared state of every transport) and the public iface and
 * ep calls that are not inline in uct.h. Those are slow-path calls: they
 * check what the caller handed in, then go through the ops table.
 */

/* Installed for every id without a handler. The arg carries the id, so the
 * warning can name it without a per-iface lookup. */
static ucs_status_t uct_iface_stub_am_handler(void *arg, void *data, size_t length,
                                              unsigned flags)
{
    ucs_warn("dropped an active message with id %u (%zu bytes): no handler is "
             "set for this id", (unsigned)(uintptr_t)arg, length);
    return UCS_OK;
}

static void uct_iface_set_stub_am_handler(uct_base_iface_t *iface, uint8_t id)
{
    iface->am[id].cb    = uct_iface_stub_am_handler;
    iface->am[id].arg   = (void*)(uintptr_t)id;
    iface->am[id].flags = 0;
}

ucs_status_t uct_base_iface_init(uct_base_iface_t *iface, const uct_iface_ops_t *ops,
                                 uct_md_h md, uct_worker_h worker,
                                 const uct_iface_params_t *params,
                                 const uct_iface_config_t *config)
{
    uint8_t id;

    if ((ops->iface_close == NULL) || (ops->iface_query == NULL)) {
        ucs_error("transport %s: iface_close and iface_query are mandatory",
                  ((params->field_mask & UCT_IFACE_PARAM_FIELD_DEVICE) &&
                   (params->device.tl_name != NULL)) ?
                  params->device.tl_name : "?");
        return UCS_ERR_INVALID_PARAM;
    }

    iface->super.ops    = *ops;
    iface->has_progress = (ops->iface_progress != NULL);
    uct_iface_ops_fill_stubs(&iface->super.ops);

    iface->md            = md;
    iface->worker        = worker;
    iface->estimate_perf = NULL;
    for (id = 0; id < UCT_AM_ID_MAX; ++id) {
        uct_iface_set_stub_am_handler(iface, id);
    }

    iface->err_handler     = (params->field_mask & UCT_IFACE_PARAM_FIELD_ERR_HANDLER) ?
                             params->err_handler : NULL;
    iface->err_handler_arg = (params->field_mask & UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG) ?
                             params->err_handler_arg : NULL;
    iface->rx_headroom     = (params->field_mask & UCT_IFACE_PARAM_FIELD_RX_HEADROOM) ?
                             params->rx_headroom : 0;

    memset(iface->tl_name, 0, sizeof(iface->tl_name));
    if ((params->field_mask & UCT_IFACE_PARAM_FIELD_DEVICE) &&
        (params->device.tl_name != NULL)) {
        snprintf(iface->tl_name, sizeof(iface->tl_name), "%s", params->device.tl_name);
    }

    uct_worker_add_iface(worker, iface);
    return UCS_OK;
}

void uct_base_iface_cleanup(uct_base_iface_t *iface)
{
    uct_worker_remove_iface(iface->worker, iface);
}

void uct_base_iface_query(uct_base_iface_t *iface, uct_iface_attr_t *attr)
{
    memset(attr, 0, sizeof(*attr));
    attr->max_num_eps = SIZE_MAX;
    attr->priority    = 0;
}

/* The capability an operation needs; 0 for the tag-offload operations,
 * which no transport here offers. */
static uint64_t uct_iface_op_cap_flag(uct_ep_operation_t op)
{
    static const uint64_t flags[UCT_EP_OP_LAST] = {
        [UCT_EP_OP_AM_SHORT]     = UCT_IFACE_FLAG_AM_SHORT,
        [UCT_EP_OP_AM_BCOPY]     = UCT_IFACE_FLAG_AM_BCOPY,
        [UCT_EP_OP_AM_ZCOPY]     = UCT_IFACE_FLAG_AM_ZCOPY,
        [UCT_EP_OP_PUT_SHORT]    = UCT_IFACE_FLAG_PUT_SHORT,
        [UCT_EP_OP_PUT_BCOPY]    = UCT_IFACE_FLAG_PUT_BCOPY,
        [UCT_EP_OP_PUT_ZCOPY]    = UCT_IFACE_FLAG_PUT_ZCOPY,
        [UCT_EP_OP_GET_SHORT]    = UCT_IFACE_FLAG_GET_SHORT,
        [UCT_EP_OP_GET_BCOPY]    = UCT_IFACE_FLAG_GET_BCOPY,
        [UCT_EP_OP_GET_ZCOPY]    = UCT_IFACE_FLAG_GET_ZCOPY,
        [UCT_EP_OP_ATOMIC_POST]  = UCT_IFACE_FLAG_ATOMIC_CPU |
                                   UCT_IFACE_FLAG_ATOMIC_DEVICE,
        [UCT_EP_OP_ATOMIC_FETCH] = UCT_IFACE_FLAG_ATOMIC_CPU |
                                   UCT_IFACE_FLAG_ATOMIC_DEVICE
    };

    return flags[op];
}

ucs_status_t uct_iface_estimate_perf(uct_iface_h tl_iface, uct_perf_attr_t *perf_attr)
{
    uct_base_iface_t *iface = ucs_container_of(tl_iface, uct_base_iface_t, super);
    uint64_t mask           = perf_attr->field_mask;
    uct_iface_attr_t attr;
    ucs_status_t status;

    if ((mask & UCT_PERF_ATTR_FIELD_OPERATION) &&
        ((unsigned)perf_attr->operation >= UCT_EP_OP_LAST)) {
        ucs_error("uct_iface_estimate_perf(%s): operation %d out of range",
                  iface->tl_name, (int)perf_attr->operation);
        return UCS_ERR_INVALID_PARAM;
    }
    if (((mask & UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE) &&
         ((unsigned)perf_attr->local_memory_type >= UCS_MEMORY_TYPE_LAST)) ||
        ((mask & UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE) &&
         ((unsigned)perf_attr->remote_memory_type >= UCS_MEMORY_TYPE_LAST))) {
        ucs_error("uct_iface_estimate_perf(%s): memory type out of range",
                  iface->tl_name);
        return UCS_ERR_INVALID_PARAM;
    }
    status = uct_iface_query(tl_iface, &attr);
    if (status != UCS_OK) {
        return status;
    }
    if ((mask & UCT_PERF_ATTR_FIELD_OPERATION) &&
        !(attr.cap.flags & uct_iface_op_cap_flag(perf_attr->operation))) {
        return UCS_ERR_UNSUPPORTED;
    }

    /* The query's single figures stand for every operation; a transport's
     * own model then refines what it knows per operation and memory type. */
    perf_attr->send_pre_overhead  = attr.overhead;
    perf_attr->send_post_overhead = 0;
    perf_attr->recv_overhead      = attr.overhead;
    perf_attr->bandwidth          = attr.bandwidth;
    perf_attr->latency            = attr.latency;
    perf_attr->max_inflight_eps   = attr.max_num_eps;
    perf_attr->flags              = 0;
    return (iface->estimate_perf != NULL) ? iface->estimate_perf(tl_iface, perf_attr) :
                                            UCS_OK;
}

ucs_status_t uct_iface_handle_ep_err(uct_iface_h tl_iface, uct_ep_h ep,
                                     ucs_status_t status)
{
    uct_base_iface_t *iface = ucs_container_of(tl_iface, uct_base_iface_t, super);

    if (iface->err_handler != NULL) {
        return iface->err_handler(iface->err_handler_arg, ep, status);
    }

    ucs_error("%s: endpoint %p failed: %s (no error handler installed)",
              (iface->tl_name[0] != '\0') ? iface->tl_name : "uct", (void*)ep,
              ucs_status_string(status));
    return status;
}

ucs_status_t uct_iface_open(uct_md_h md, uct_worker_h worker,
                            const uct_iface_params_t *params,
                            const uct_iface_config_t *config, uct_iface_h *iface_p)
{
    ucs_status_t status;
    uct_tl_t *tl;

    if ((md == NULL) || (worker == NULL) || (params == NULL) || (config == NULL) ||
        (iface_p == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    if (!(params->field_mask & UCT_IFACE_PARAM_FIELD_DEVICE) ||
        (params->device.tl_name == NULL) || (params->device.dev_name == NULL)) {
        ucs_error("uct_iface_open: the transport and device names are required");
        return UCS_ERR_INVALID_PARAM;
    }

    tl = uct_component_find_tl(md->component, params->device.tl_name);
    if (tl == NULL) {
        ucs_error("md %s has no transport '%s'", md->component->name,
                  params->device.tl_name);
        return UCS_ERR_NO_DEVICE;
    }

    status = tl->iface_open(md, worker, params, config, iface_p);
    if (status != UCS_OK) {
        ucs_debug("failed to open %s/%s: %s", params->device.tl_name,
                  params->device.dev_name, ucs_status_string(status));
        return status;
    }

    ucs_debug("opened iface %p: %s/%s", (void*)*iface_p, params->device.tl_name,
              params->device.dev_name);
    return UCS_OK;
}

void uct_iface_close(uct_iface_h iface)
{
    iface->ops.iface_close(iface);
}

ucs_status_t uct_iface_query(uct_iface_h iface, uct_iface_attr_t *iface_attr)
{
    memset(iface_attr, 0, sizeof(*iface_attr));
    return iface->ops.iface_query(iface, iface_attr);
}

ucs_status_t uct_iface_get_device_address(uct_iface_h iface, uct_device_addr_t *addr)
{
    return iface->ops.iface_get_device_address(iface, addr);
}

ucs_status_t uct_iface_get_address(uct_iface_h iface, uct_iface_addr_t *addr)
{
    return iface->ops.iface_get_address(iface, addr);
}

int uct_iface_is_reachable(const uct_iface_h iface, const uct_device_addr_t *dev_addr,
                           const uct_iface_addr_t *iface_addr)
{
    return iface->ops.iface_is_reachable(iface, dev_addr, iface_addr);
}

ucs_status_t uct_iface_set_am_handler(uct_iface_h tl_iface, uint8_t id,
                                      uct_am_callback_t cb, void *arg, uint32_t flags)
{
    uct_base_iface_t *iface = ucs_container_of(tl_iface, uct_base_iface_t, super);

    if (id >= UCT_AM_ID_MAX) {
        ucs_error("active message id %u is out of range (0..%d)", id,
                  (int)UCT_AM_ID_MAX - 1);
        return UCS_ERR_INVALID_PARAM;
    }

    if (cb == NULL) {
        uct_iface_set_stub_am_handler(iface, id);
        return UCS_OK;
    }

    /* UCT_CB_FLAG_ASYNC asks that the handler may run from any context;
     * running it from progress, as every handler here is, satisfies that. */
    iface->am[id].cb    = cb;
    iface->am[id].arg   = arg;
    iface->am[id].flags = flags;
    return UCS_OK;
}

void uct_iface_release_desc(void *desc)
{
    uct_recv_desc_t *rdesc = uct_recv_desc_get(desc);

    rdesc->release(rdesc, desc);
}

ucs_status_t uct_iface_event_fd_get(uct_iface_h iface, int *fd_p)
{
    return iface->ops.iface_event_fd_get(iface, fd_p);
}

ucs_status_t uct_iface_event_arm(uct_iface_h iface, unsigned events)
{
    return iface->ops.iface_event_arm(iface, events);
}

unsigned uct_iface_progress(uct_iface_h iface)
{
    return iface->ops.iface_progress(iface);
}

ucs_status_t uct_iface_flush(uct_iface_h iface, unsigned flags, uct_completion_t *comp)
{
    return iface->ops.iface_flush(iface, flags, comp);
}

ucs_status_t uct_iface_fence(uct_iface_h iface, unsigned flags)
{
    return iface->ops.iface_fence(iface, flags);
}

ucs_status_t uct_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    if ((params == NULL) || (ep_p == NULL) ||
        !(params->field_mask & UCT_EP_PARAM_FIELD_IFACE) || (params->iface == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return params->iface->ops.ep_create(params, ep_p);
}

void uct_ep_destroy(uct_ep_h ep)
{
    ep->iface->ops.ep_destroy(ep);
}

ucs_status_t uct_ep_get_address(uct_ep_h ep, uct_ep_addr_t *addr)
{
    return ep->iface->ops.ep_get_address(ep, addr);
}

ucs_status_t uct_ep_connect_to_ep(uct_ep_h ep, const uct_device_addr_t *dev_addr,
                                  const uct_ep_addr_t *ep_addr)
{
    return ep->iface->ops.ep_connect_to_ep(ep, dev_addr, ep_addr);
}
