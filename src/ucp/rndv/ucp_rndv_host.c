#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * The rendezvous lanes besides messaging, chosen from what the transports
 * report, never by name (ucp_rndv_lane_select): among the resources the
 * worker does not already use, those whose md fits the lane and whose iface
 * has the operations it needs; of several, the one with the highest
 * bandwidth. The device lane (ucp_rndv.c) reads and writes peers' device
 * memory through exported keys (cuda_ipc today).
 *
 * The host-memory lane, here: a transport that reads a peer's host memory
 * (cma on one host; tcp between hosts), used for host -> host messages so
 * that the data is not copied twice through the messaging transport; its md
 * registers and reaches host memory, its iface offers get zcopy. An ep gets
 * the worker's own lane (an iface not used for messaging) when the peer's
 * address has an entry of that transport that the transport calls
 * reachable (for cma: the kernel lets us read the peer); else, when its
 * messaging iface is a network device that reads peers' memory itself, the
 * messaging ep is its lane.
 */

#include <ucp/rndv/ucp_rndv_int.h>

#include <stdlib.h>
#include <string.h>

static int ucp_rndv_lane_rsc_in_use(ucp_worker_h worker, unsigned rsc_index)
{
    unsigned i;

    for (i = 0; i < worker->num_ifaces; ++i) {
        if (worker->ifaces[i].rsc_index == rsc_index) {
            return 1;
        }
    }
    return (worker->rma_iface.iface != NULL) &&
           (worker->rma_iface.rsc_index == rsc_index);
}

static double ucp_rndv_lane_bandwidth(const uct_iface_attr_t *attr)
{
    return attr->bandwidth.dedicated + attr->bandwidth.shared;
}

/* Open resource @a i as a candidate; UCS_OK when its iface has @a needed. */
static ucs_status_t ucp_rndv_lane_try_open(ucp_worker_h worker, unsigned i,
                                           uint64_t needed, ucp_worker_iface_t *wiface)
{
    uct_iface_params_t params;
    ucs_status_t status;

    memset(&params, 0, sizeof(params));
    status = ucp_worker_iface_open(worker, i, &params, wiface);
    if (status != UCS_OK) {
        return status;
    }
    if ((wiface->attr.cap.flags & needed) != needed) {
        uct_iface_close(wiface->iface);
        wiface->iface = NULL;
        return UCS_ERR_UNSUPPORTED;
    }
    return UCS_OK;
}

void ucp_rndv_lane_select(ucp_worker_h worker, ucp_rndv_md_fits_func_t md_fits,
                          uint64_t needed, ucp_worker_iface_t *best)
{
    ucp_context_h context = worker->context;
    ucp_worker_iface_t cand;
    const ucp_tl_rsc_t *rsc;
    unsigned i;

    memset(best, 0, sizeof(*best));
    for (i = 0; i < context->num_rscs; ++i) {
        rsc = &context->rscs[i];
        if (ucp_rndv_lane_rsc_in_use(worker, i) ||
            !md_fits(&context->mds[rsc->md_index].attr)) {
            continue;
        }
        memset(&cand, 0, sizeof(cand));
        if (ucp_rndv_lane_try_open(worker, i, needed, &cand) != UCS_OK) {
            continue;
        }
        if ((best->iface != NULL) && (ucp_rndv_lane_bandwidth(&best->attr) >=
                                      ucp_rndv_lane_bandwidth(&cand.attr))) {
            uct_iface_close(cand.iface);
            continue;
        }
        if (best->iface != NULL) {
            uct_iface_close(best->iface);
        }
        *best = cand;
    }
}

static int ucp_rndv_host_md_fits(const uct_md_attr_t *attr)
{
    const uint64_t host = UCS_BIT(UCS_MEMORY_TYPE_HOST);

    return (attr->cap.flags & UCT_MD_FLAG_REG) && (attr->cap.reg_mem_types & host) &&
           (attr->cap.access_mem_types & host) && (attr->rkey_packed_size > 0);
}

/* Fill @a lane for the iface @a wiface, whose md fits. */
static void ucp_rndv_host_lane_init(ucp_worker_h worker, const ucp_worker_iface_t *wiface,
                                    int own_eps, ucp_rndv_host_lane_t *lane)
{
    ucp_context_h context   = worker->context;
    const ucp_tl_rsc_t *rsc = &context->rscs[wiface->rsc_index];

    lane->wiface    = wiface;
    lane->md        = context->mds[rsc->md_index].md;
    lane->component = context->mds[rsc->md_index].component;
    lane->key_size  = context->mds[rsc->md_index].attr.rkey_packed_size;
    lane->own_eps   = own_eps;
}

/* The messaging ifaces of network devices that read peers' host memory
 * themselves (get zcopy of memory their md registers): over them an ep
 * reads with its own messaging ep, and the data uses what the messages
 * do not (for tcp: the reverse direction of the connection). */
static void ucp_rndv_host_msg_lanes_open(ucp_worker_h worker)
{
    ucp_context_h context = worker->context;
    ucp_rndv_worker_t *rw = worker->rndv;
    const ucp_worker_iface_t *wiface;
    const ucp_tl_rsc_t *rsc;
    unsigned i;

    rw->msg_host_lanes = calloc(worker->num_ifaces + 1, sizeof(*rw->msg_host_lanes));
    if (rw->msg_host_lanes == NULL) {
        return;
    }
    for (i = 0; i < worker->num_ifaces; ++i) {
        wiface = &worker->ifaces[i];
        rsc    = &context->rscs[wiface->rsc_index];
        if ((rsc->desc.dev_type != UCT_DEVICE_TYPE_NET) ||
            !(wiface->attr.cap.flags & UCT_IFACE_FLAG_GET_ZCOPY) ||
            !ucp_rndv_host_md_fits(&context->mds[rsc->md_index].attr)) {
            continue;
        }
        ucp_rndv_host_lane_init(worker, wiface, 0, &rw->msg_host_lanes[i]);
        ucs_debug("ucp: worker %s: %s/%s reads peers' host memory for rendezvous "
                  "itself (%.1f GB/s)", worker->name, rsc->desc.tl_name,
                  rsc->desc.dev_name, ucp_rndv_lane_bandwidth(&wiface->attr) / 1e9);
    }
}

void ucp_rndv_host_lane_open(ucp_worker_h worker)
{
    ucp_context_h context = worker->context;
    ucp_rndv_worker_t *rw = worker->rndv;
    const ucp_tl_rsc_t *rsc;

    ucp_rndv_host_msg_lanes_open(worker);
    ucp_rndv_lane_select(worker, ucp_rndv_host_md_fits,
                         UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_CONNECT_TO_IFACE,
                         &worker->host_rma_iface);
    if (worker->host_rma_iface.iface == NULL) {
        ucs_debug("ucp: worker %s: no other transport reads host memory of a peer",
                  worker->name);
        return;
    }
    rsc = &context->rscs[worker->host_rma_iface.rsc_index];
    ucp_rndv_host_lane_init(worker, &worker->host_rma_iface, 1, &rw->host_lane);
    ucs_debug("ucp: worker %s: host rendezvous lane %s/%s (%.1f GB/s)", worker->name,
              rsc->desc.tl_name, rsc->desc.dev_name,
              ucp_rndv_lane_bandwidth(&worker->host_rma_iface.attr) / 1e9);
}

void ucp_rndv_host_lane_close(ucp_worker_h worker)
{
    if (worker->host_rma_iface.iface != NULL) {
        uct_iface_close(worker->host_rma_iface.iface);
        worker->host_rma_iface.iface = NULL;
    }
}

/* The messaging iface's own host lane, or NULL. */
static const ucp_rndv_host_lane_t *ucp_rndv_host_msg_lane(ucp_ep_h ep)
{
    ucp_worker_h worker = ep->worker;
    ptrdiff_t i;

    if ((ep->wiface == NULL) || (ep->uct_ep == NULL) ||
        (worker->rndv->msg_host_lanes == NULL)) {
        return NULL;
    }
    i = ep->wiface - worker->ifaces;
    if ((i < 0) || (i >= (ptrdiff_t)worker->num_ifaces) ||
        (worker->rndv->msg_host_lanes[i].md == NULL)) {
        return NULL;
    }
    return &worker->rndv->msg_host_lanes[i];
}

void ucp_rndv_host_ep_connect(ucp_ep_h ep, const ucp_unpacked_address_t *addr)
{
    const ucp_worker_iface_t *wiface = &ep->worker->host_rma_iface;
    const ucp_tl_rsc_t *rsc;

    if (wiface->iface != NULL) {
        ep->host_rma_ep = ucp_worker_iface_connect(wiface, addr);
        if (ep->host_rma_ep != NULL) {
            ep->host_lane = &ep->worker->rndv->host_lane;
        }
    }
    if (ep->host_rma_ep == NULL) {
        ep->host_lane = ucp_rndv_host_msg_lane(ep);
        if (ep->host_lane != NULL) {
            ep->host_rma_ep = ep->uct_ep;
        }
    }
    if (ep->host_lane != NULL) {
        rsc = &ep->worker->context->rscs[ep->host_lane->wiface->rsc_index];
        ucs_debug("ucp: ep %p: host rendezvous lane %s/%s%s", (void*)ep,
                  rsc->desc.tl_name, rsc->desc.dev_name,
                  ep->host_lane->own_eps ? "" : " (the messaging ep)");
    } else {
        ucs_debug("ucp: ep %p: no host rendezvous lane", (void*)ep);
    }
}

void ucp_rndv_host_ep_cleanup(ucp_ep_h ep)
{
    if ((ep->host_rma_ep != NULL) && ep->host_lane->own_eps) {
        uct_ep_destroy(ep->host_rma_ep);
    }
    ep->host_rma_ep = NULL;
    ep->host_lane   = NULL;
}

size_t ucp_rndv_host_key_size(ucp_ep_h ep)
{
    return (ep->host_rma_ep != NULL) ? ep->host_lane->key_size : 0;
}

int ucp_rndv_host_get_fits(ucp_ep_h ep, size_t length)
{
    return (ep->host_rma_ep != NULL) &&
           (length <= ep->worker->context->rndv.host_get_max) &&
           (length <= ep->host_lane->wiface->attr.cap.get.max_zcopy);
}

ucs_status_t ucp_rndv_host_key_pack(ucp_ep_h ep, void *buffer, size_t length,
                                    uct_md_h *md_p, uct_mem_h *memh_p, void *key)
{
    uct_md_h md = ep->host_lane->md;
    ucs_status_t status;

    status = uct_md_mem_reg(md, buffer, length, UCT_MD_MEM_ACCESS_REMOTE_GET, memh_p);
    if (status != UCS_OK) {
        ucs_debug("ucp: host rendezvous: registering %p+%zu failed: %s", buffer,
                  length, ucs_status_string(status));
        return status;
    }
    status = uct_md_mkey_pack(md, *memh_p, key);
    if (status != UCS_OK) {
        uct_md_mem_dereg(md, *memh_p);
        *memh_p = NULL;
        return status;
    }
    *md_p = md;
    return UCS_OK;
}

void ucp_rndv_host_key_release(uct_md_h md, uct_mem_h memh)
{
    uct_md_mem_dereg(md, memh);
}

ucs_status_t ucp_rndv_host_get(ucp_rndv_op_t *op, ucp_ep_h ep, void *buffer,
                               size_t length, uint64_t remote_addr, const void *key,
                               size_t key_len)
{
    const ucp_rndv_host_lane_t *lane = ep->host_lane;
    ucs_status_t status;
    uct_iov_t iov;

    /* Both sides choose their lane by the same rule, but each from what it
     * reaches: a key of another transport is told apart by its size (and
     * refused by the unpack if it is not). */
    if (key_len != lane->key_size) {
        ucs_debug("ucp: host rendezvous key of %zu bytes, this lane's are %zu: "
                  "the peer reads over another transport", key_len, lane->key_size);
        ucp_rndv_op_free(op);
        return UCS_ERR_UNREACHABLE;
    }
    status = uct_rkey_unpack(lane->component, key, &op->rkey);
    if (status != UCS_OK) {
        ucs_debug("ucp: host rendezvous key does not unpack here: %s",
                  ucs_status_string(status));
        ucp_rndv_op_free(op);
        return UCS_ERR_UNREACHABLE;
    }
    op->rkey_component = lane->component;
    iov.buffer = buffer;
    iov.length = length;
    iov.memh   = UCT_MEM_HANDLE_NULL;
    iov.stride = 0;
    iov.count  = 1;
    status = uct_ep_get_zcopy(ep->host_rma_ep, &iov, 1, remote_addr, op->rkey.rkey,
                              &op->comp);
    ucs_trace_req("ucp: host rendezvous get of %zu bytes from 0x%llx: %s", length,
                  (unsigned long long)remote_addr, ucs_status_string(status));
    return ucp_rndv_op_started(op, status);
}
