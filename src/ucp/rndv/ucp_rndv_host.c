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
 * The host-memory lane, here: a transport that reads a peer's host memory in
 * one copy (cma today), used for host -> host messages so that the data is
 * not copied twice through the messaging transport; its md registers and
 * reaches host memory, its iface offers get zcopy to an iface address. An
 * ep gets the lane when the peer's address has an entry of that transport
 * that the transport calls reachable (for cma: the kernel lets us read the
 * peer).
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

void ucp_rndv_host_lane_open(ucp_worker_h worker)
{
    ucp_context_h context = worker->context;
    ucp_rndv_worker_t *rw = worker->rndv;
    const ucp_tl_rsc_t *rsc;

    ucp_rndv_lane_select(worker, ucp_rndv_host_md_fits,
                         UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_CONNECT_TO_IFACE,
                         &worker->host_rma_iface);
    if (worker->host_rma_iface.iface == NULL) {
        ucs_debug("ucp: worker %s: no transport reads host memory of a peer; "
                  "host rendezvous goes through active messages", worker->name);
        return;
    }
    rsc                = &context->rscs[worker->host_rma_iface.rsc_index];
    rw->host_md        = context->mds[rsc->md_index].md;
    rw->host_component = context->mds[rsc->md_index].component;
    rw->host_key_size  = context->mds[rsc->md_index].attr.rkey_packed_size;
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

void ucp_rndv_host_ep_connect(ucp_ep_h ep, const ucp_unpacked_address_t *addr)
{
    const ucp_worker_iface_t *wiface = &ep->worker->host_rma_iface;

    if (wiface->iface == NULL) {
        return;
    }
    ep->host_rma_ep = ucp_worker_iface_connect(wiface, addr);
    ucs_debug("ucp: ep %p: host rendezvous lane %s %s", (void*)ep,
              ep->worker->context->rscs[wiface->rsc_index].desc.tl_name,
              (ep->host_rma_ep != NULL) ? "connected" : "not connected");
}

void ucp_rndv_host_ep_cleanup(ucp_ep_h ep)
{
    if (ep->host_rma_ep != NULL) {
        uct_ep_destroy(ep->host_rma_ep);
        ep->host_rma_ep = NULL;
    }
}

size_t ucp_rndv_host_key_size(ucp_worker_h worker)
{
    return (worker->host_rma_iface.iface != NULL) ? worker->rndv->host_key_size : 0;
}

ucs_status_t ucp_rndv_host_key_pack(ucp_worker_h worker, void *buffer, size_t length,
                                    uct_mem_h *memh_p, void *key)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    ucs_status_t status;

    status = uct_md_mem_reg(rw->host_md, buffer, length, UCT_MD_MEM_ACCESS_REMOTE_GET, memh_p);
    if (status != UCS_OK) {
        ucs_debug("ucp: host rendezvous: registering %p+%zu failed: %s", buffer,
                  length, ucs_status_string(status));
        return status;
    }
    status = uct_md_mkey_pack(rw->host_md, *memh_p, key);
    if (status != UCS_OK) {
        uct_md_mem_dereg(rw->host_md, *memh_p);
        *memh_p = NULL;
    }
    return status;
}

void ucp_rndv_host_key_release(ucp_worker_h worker, uct_mem_h memh)
{
    uct_md_mem_dereg(worker->rndv->host_md, memh);
}

ucs_status_t ucp_rndv_host_get(ucp_rndv_op_t *op, ucp_ep_h ep, void *buffer,
                               size_t length, uint64_t remote_addr, const void *key,
                               size_t key_len)
{
    ucp_rndv_worker_t *rw = ep->worker->rndv;
    ucs_status_t status;
    uct_iov_t iov;

    if (key_len != rw->host_key_size) {
        ucs_error("ucp: host rendezvous key of %zu bytes, expected %zu", key_len,
                  rw->host_key_size);
        ucp_rndv_op_free(op);
        return UCS_ERR_INVALID_PARAM;
    }
    status = uct_rkey_unpack(rw->host_component, key, &op->rkey);
    if (status != UCS_OK) {
        ucs_debug("ucp: host rendezvous key does not unpack here: %s",
                  ucs_status_string(status));
        ucp_rndv_op_free(op);
        return UCS_ERR_UNREACHABLE;
    }
    op->rkey_component = rw->host_component;
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
