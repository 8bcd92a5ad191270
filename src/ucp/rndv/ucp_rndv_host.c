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
 *
 * Rails: such an ep may read over more network devices that reach the peer
 * (UCX_MAX_RNDV_RAILS), each a messaging iface of the same md, so that the
 * one key the sender packed names the buffer on all of them; each connects
 * to another entry of the peer's address (another of its interfaces). A
 * read is split in shares by the devices' bandwidth. A rail that fails
 * fails its share, and the ep's host lane with it: the data then comes as
 * messages over the messaging lane, as after any failed read.
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

/* Whether @a e is one of @a num entries in @a used. */
static int ucp_rndv_host_entry_used(const ucp_address_entry_t *const *used, unsigned num,
                                    const ucp_address_entry_t *e)
{
    unsigned i;

    for (i = 0; i < num; ++i) {
        if (used[i] == e) {
            return 1;
        }
    }
    return 0;
}

/* The first entry of @a addr that @a wiface reaches and no lane uses. */
static const ucp_address_entry_t *
ucp_rndv_host_rail_entry(const ucp_worker_iface_t *wiface,
                         const ucp_unpacked_address_t *addr,
                         const ucp_address_entry_t *const *used, unsigned num_used)
{
    const ucp_address_entry_t *e;
    unsigned i;

    for (i = 0; i < addr->num_entries; ++i) {
        e = &addr->entries[i];
        if (!ucp_rndv_host_entry_used(used, num_used, e) &&
            ucp_worker_iface_reaches(wiface, e)) {
            return e;
        }
    }
    return NULL;
}

/* Slow path (ep creation): connect the rails beside the messaging ep. */
static void ucp_rndv_host_rails_connect(ucp_ep_h ep, const ucp_unpacked_address_t *addr)
{
    ucp_worker_h worker = ep->worker;
    unsigned max_rails  = worker->context->rndv.max_rails;
    const ucp_address_entry_t *used[UCP_MAX_RAILS], *e;
    const ucp_worker_iface_t *wiface;
    unsigned i, num_used = 0;
    uct_ep_h uct_ep;

    used[num_used++] = ucp_worker_iface_reachable_entry(ep->wiface, addr);
    for (i = 0; (i < worker->num_ifaces) && (num_used < max_rails); ++i) {
        wiface = &worker->ifaces[i];
        if ((wiface == ep->wiface) ||
            (worker->rndv->msg_host_lanes[i].md != ep->host_lane->md)) {
            continue;
        }
        e = ucp_rndv_host_rail_entry(wiface, addr, used, num_used);
        if ((e == NULL) || (ucp_worker_iface_ep_create(wiface, e, &uct_ep) != UCS_OK)) {
            continue;
        }
        ep->host_rails[ep->num_host_rails].ep     = uct_ep;
        ep->host_rails[ep->num_host_rails].wiface = wiface;
        ++ep->num_host_rails;
        used[num_used++] = e;
        ucs_debug("ucp: ep %p: host rendezvous rail %u over %s/%s (%.1f GB/s)",
                  (void *)ep, ep->num_host_rails, e->tl_name,
                  worker->context->rscs[wiface->rsc_index].desc.dev_name,
                  ucp_rndv_lane_bandwidth(&wiface->attr) / 1e9);
    }
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
            ucp_rndv_host_rails_connect(ep, addr);
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
    while (ep->num_host_rails > 0) {
        uct_ep_destroy(ep->host_rails[--ep->num_host_rails].ep);
    }
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

size_t ucp_rndv_host_get_max(ucp_ep_h ep)
{
    size_t max = ep->worker->context->rndv.host_get_max;

    if (max != UCS_MEMUNITS_AUTO) {
        return max;
    }
    /* Measured (docs/multi-node.md): over one lane a read above 4 MiB lost
     * to eager in Sendrecv; over two rails it gains what the second link
     * adds, and equals eager where the CPU is the limit. */
    return (ep->num_host_rails > 0) ? SIZE_MAX : UCP_RNDV_HOST_GET_MAX_ONE_LANE;
}

int ucp_rndv_host_get_fits(ucp_ep_h ep, size_t length)
{
    return (ep->host_rma_ep != NULL) && (length <= ucp_rndv_host_get_max(ep)) &&
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

/* How many lanes a read of @a length takes: each share at least the
 * configured chunk. */
static unsigned ucp_rndv_host_num_shares(ucp_ep_h ep, size_t length)
{
    size_t min_chunk = ep->worker->context->rndv.min_chunk;
    unsigned num     = 1 + ep->num_host_rails;

    while ((num > 1) && (length / num < min_chunk)) {
        --num;
    }
    return num;
}

/* Lane @a i of @a ep's host reads: 0 the host lane, then the rails. */
static uct_ep_h ucp_rndv_host_lane_ep(ucp_ep_h ep, unsigned i, double *bw_p)
{
    const ucp_worker_iface_t *wiface =
        (i == 0) ? ep->host_lane->wiface : ep->host_rails[i - 1].wiface;

    *bw_p = ucp_rndv_lane_bandwidth(&wiface->attr);
    return (i == 0) ? ep->host_rma_ep : ep->host_rails[i - 1].ep;
}

/* Start the shares of a read with the unpacked key in @a op; the op's
 * completion counts one per share in flight and one of ours until all are
 * started, so that it cannot complete before. */
static ucs_status_t ucp_rndv_host_get_shares(ucp_rndv_op_t *op, ucp_ep_h ep, void *buffer,
                                             size_t length, uint64_t remote_addr)
{
    unsigned i, num                 = ucp_rndv_host_num_shares(ep, length);
    double bw[UCP_MAX_RAILS], total = 0;
    uct_ep_h uct_eps[UCP_MAX_RAILS];
    size_t offset = 0, share;
    ucs_status_t status;
    uct_iov_t iov;

    for (i = 0; i < num; ++i) {
        uct_eps[i] = ucp_rndv_host_lane_ep(ep, i, &bw[i]);
        total += bw[i];
    }
    op->comp.count = num + 1;
    iov.memh       = UCT_MEM_HANDLE_NULL;
    iov.stride     = 0;
    iov.count      = 1;
    for (i = 0; i < num; ++i) {
        share      = (i + 1 == num) ? length - offset
                     : (total > 0) ? ucs_max((size_t)(length * (bw[i] / total)), (size_t)1)
                                   : length / num;
        iov.buffer = UCS_PTR_BYTE_OFFSET(buffer, offset);
        iov.length = share;
        status     = uct_ep_get_zcopy(uct_eps[i], &iov, 1, remote_addr + offset,
                                      op->rkey.rkey, &op->comp);
        ucs_trace_req("ucp: host rendezvous get of %zu bytes from 0x%llx, lane %u of "
                      "%u: %s",
                      share, (unsigned long long)(remote_addr + offset), i, num,
                      ucs_status_string(status));
        if (status == UCS_OK) {
            --op->comp.count;
        } else if (UCS_STATUS_IS_ERR(status)) {
            if (i == 0) {
                return ucp_rndv_op_started(op, status);
            }
            /* Shares in flight complete the op with this error. */
            op->comp.status = status;
            op->comp.count -= num - i;
            break;
        }
        offset += share;
    }
    return ucp_rndv_op_started(op, (--op->comp.count == 0) ? UCS_OK : UCS_INPROGRESS);
}

ucs_status_t ucp_rndv_host_get(ucp_rndv_op_t *op, ucp_ep_h ep, void *buffer,
                               size_t length, uint64_t remote_addr, const void *key,
                               size_t key_len)
{
    const ucp_rndv_host_lane_t *lane = ep->host_lane;
    ucs_status_t status;

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
    return ucp_rndv_host_get_shares(op, ep, buffer, length, remote_addr);
}
