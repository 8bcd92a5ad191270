#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Endpoints: selection of the transport from a peer's address, the ordered
 * send queue every operation goes through, flush and close, and failure
 * handling.
 */

#include <ucp/core/ucp_int.h>
#include <ucp/rndv/ucp_rndv.h>
#include <ucs/sys/sys.h>

#include <stdlib.h>
#include <string.h>

void ucp_worker_flush_child_complete(ucp_request_t *parent);

static const char *ucp_ep_tl_name(ucp_ep_h ep)
{
    return ep->worker->context->rscs[ep->wiface->rsc_index].desc.tl_name;
}

/* ---- transport selection ------------------------------------------------ */

/* Estimated time of one small active message over @a attr's transport: the
 * sender's overhead plus the latency. Self (no copy, no queue) reports the
 * least, shared memory less than the network. */
static double ucp_ep_am_lane_cost(const uct_iface_attr_t *attr)
{
    return attr->overhead + attr->latency.c;
}

/* Whether resource @a rsc is a first choice for this endpoint's messages: a
 * loopback device only when the caller allows loopback and the peer is this
 * worker, shared memory only on this host. The others stay a last resort,
 * used when nothing preferred reaches the peer (two workers of one process
 * over self, shared memory where the host identity differs). */
static int ucp_ep_am_lane_preferred(const ucp_tl_rsc_t *rsc, int to_self, int same_host)
{
    switch (rsc->desc.dev_type) {
    case UCT_DEVICE_TYPE_SELF:
        return to_self;
    case UCT_DEVICE_TYPE_SHM:
        return same_host;
    default:
        return 1;
    }
}

/* The messaging lane: of the worker's messaging ifaces that reach the peer,
 * a preferred one before a last resort, then the least estimated cost per
 * message. */
static int ucp_ep_select_am_lane(ucp_worker_h worker, const ucp_unpacked_address_t *addr,
                                 int to_self, int same_host,
                                 ucp_worker_iface_t **wiface_p,
                                 const ucp_address_entry_t **entry_p)
{
    int preferred, best_preferred = 0;
    const ucp_address_entry_t *e;
    ucp_worker_iface_t *wiface;
    double cost, best = 0;
    unsigned i;

    *wiface_p = NULL;
    for (i = 0; i < worker->num_ifaces; ++i) {
        wiface = &worker->ifaces[i];
        e      = ucp_worker_iface_reachable_entry(wiface, addr);
        if (e == NULL) {
            continue;
        }
        preferred = ucp_ep_am_lane_preferred(&worker->context->rscs[wiface->rsc_index],
                                             to_self, same_host);
        cost      = ucp_ep_am_lane_cost(&wiface->attr);
        ucs_trace("ucp: worker %s: %s reaches uuid 0x%llx, %.0f ns per message%s",
                  worker->name, e->tl_name, (unsigned long long)addr->uuid, cost * 1e9,
                  preferred ? "" : " (last resort)");
        if ((*wiface_p == NULL) || (preferred > best_preferred) ||
            ((preferred == best_preferred) && (cost < best))) {
            *wiface_p      = wiface;
            *entry_p       = e;
            best           = cost;
            best_preferred = preferred;
        }
    }
    return *wiface_p != NULL;
}

ucp_ep_h ucp_ep_alloc(ucp_worker_h worker, unsigned ep_flags)
{
    ucp_ep_h ep = calloc(1, sizeof(*ep));

    if (ep == NULL) {
        return NULL;
    }
    ep->worker   = worker;
    ep->flags    = ep_flags;
    ep->status   = UCS_OK;
    ep->local_id = ++worker->next_ep_id;
    ucs_queue_head_init(&ep->send_q);
    ucs_list_head_init(&ep->notify_link);
    ucs_list_head_init(&ep->stream.data);
    ucs_list_head_init(&ep->stream.held);
    ucs_list_head_init(&ep->stream.fetches);
    ucs_list_head_init(&ep->stream.reqs);
    ucp_rma_ep_init(ep);
    ucs_list_add_tail(&worker->eps, &ep->link);
    snprintf(ep->name, sizeof(ep->name), "ep_%p", (void*)ep);
    return ep;
}

/* Slow path: the error of an endpoint no transport can serve names what
 * each side offered, which is what a user needs to fix UCX_TLS or
 * UCX_NET_DEVICES (or to see that the peer runs on another node). */
static void ucp_ep_log_unreachable(ucp_worker_h worker,
                                   const ucp_unpacked_address_t *addr, int same_host)
{
    char local[256] = "", remote[256] = "";
    size_t len = 0, rlen = 0;
    const ucp_tl_rsc_t *rsc;
    unsigned i;

    for (i = 0; (i < worker->num_ifaces) && (len < sizeof(local)); ++i) {
        rsc = &worker->context->rscs[worker->ifaces[i].rsc_index];
        len += snprintf(local + len, sizeof(local) - len, "%s%s/%s", i ? " " : "",
                        rsc->desc.tl_name, rsc->desc.dev_name);
    }
    for (i = 0; (i < addr->num_entries) && (rlen < sizeof(remote)); ++i) {
        rlen += snprintf(remote + rlen, sizeof(remote) - rlen, "%s%s", i ? " " : "",
                         addr->entries[i].tl_name);
    }
    ucs_error("ucp: no transport of worker %s reaches the peer (uuid 0x%llx, on %s "
              "node): this worker has [%s], the peer offers [%s]; UCX_TLS and "
              "UCX_NET_DEVICES choose the local ones, and UCX_LOG_LEVEL=debug "
              "shows why each pair was refused",
              worker->name, (unsigned long long)addr->uuid,
              same_host ? "the same" : "another", local, remote);
}

ucs_status_t ucp_ep_connect_lanes(ucp_ep_h ep, const ucp_unpacked_address_t *addr,
                                  int loopback)
{
    ucp_worker_h worker              = ep->worker;
    const ucp_address_entry_t *entry = NULL;
    ucp_worker_iface_t *wiface       = NULL;
    ucs_status_t status;
    uint8_t node_id[16];
    int same_host;

    ucs_sys_get_node_id(node_id);
    same_host = !memcmp(node_id, addr->node_id, sizeof(node_id));

    if (!ucp_ep_select_am_lane(worker, addr, loopback && (addr->uuid == worker->uuid),
                               same_host, &wiface, &entry)) {
        ucp_ep_log_unreachable(worker, addr, same_host);
        return UCS_ERR_UNREACHABLE;
    }

    status = ucp_worker_iface_ep_create(wiface, entry, &ep->uct_ep);
    if (status != UCS_OK) {
        ucs_error("ucp: connecting over %s failed: %s", entry->tl_name,
                  ucs_status_string(status));
        return status;
    }

    ep->wiface      = wiface;
    ep->remote_uuid = addr->uuid;
    ep->max_short   = (wiface->attr.cap.flags & UCT_IFACE_FLAG_AM_SHORT) &&
                      (wiface->attr.cap.am.max_short > sizeof(uint64_t)) ?
                      wiface->attr.cap.am.max_short - sizeof(uint64_t) : 0;
    ep->max_bcopy   = wiface->attr.cap.am.max_bcopy;
    ucp_rndv_ep_init(ep, addr, same_host);
    ucp_ep_peer_watch_init(ep, addr, same_host);
    ucs_debug("ucp: ep %p of worker %s to uuid 0x%llx over %s/%s", (void*)ep,
              worker->name, (unsigned long long)addr->uuid, entry->tl_name,
              worker->context->rscs[wiface->rsc_index].desc.dev_name);
    if (worker->context->proto_info) {
        ucp_proto_info_print(ep);
    }
    return UCS_OK;
}

ucs_status_t ucp_ep_create_from_address(ucp_worker_h worker,
                                        const ucp_unpacked_address_t *addr,
                                        unsigned ep_flags, int loopback,
                                        ucp_ep_h *ep_p)
{
    ucs_status_t status;
    ucp_ep_h ep;

    ep = ucp_ep_alloc(worker, ep_flags);
    if (ep == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = ucp_ep_connect_lanes(ep, addr, loopback);
    if (status != UCS_OK) {
        ucs_list_del(&ep->link);
        free(ep);
        return status;
    }
    *ep_p = ep;
    return UCS_OK;
}

/* Fields of @a params every way of creating an endpoint takes. */
void ucp_ep_apply_params(ucp_ep_h ep, const ucp_ep_params_t *params)
{
    if (params->field_mask & UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE) {
        ep->err_mode = params->err_mode;
    }
    if (params->field_mask & UCP_EP_PARAM_FIELD_ERR_HANDLER) {
        ep->err_cb  = params->err_handler.cb;
        ep->err_arg = params->err_handler.arg;
    }
    if (params->field_mask & UCP_EP_PARAM_FIELD_USER_DATA) {
        ep->user_data = params->user_data;
        ep->err_arg   = params->user_data;
    }
    if ((params->field_mask & UCP_EP_PARAM_FIELD_NAME) && (params->name != NULL)) {
        snprintf(ep->name, sizeof(ep->name), "%s", params->name);
    }
}

ucs_status_t ucp_ep_create(ucp_worker_h worker, const ucp_ep_params_t *params,
                           ucp_ep_h *ep_p)
{
    ucp_unpacked_address_t *addr;
    ucs_status_t status;
    unsigned flags = 0;
    ucp_ep_h ep;

    if ((params == NULL) || (ep_p == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (params->field_mask & UCP_EP_PARAM_FIELD_FLAGS) {
        flags = params->flags;
    }
    if (params->field_mask & UCP_EP_PARAM_FIELD_CONN_REQUEST) {
        return ucp_sa_ep_accept(worker, params, ep_p);
    }
    if (params->field_mask & UCP_EP_PARAM_FIELD_SOCK_ADDR) {
        return ucp_sa_ep_connect(worker, params, ep_p);
    }
    if (!(params->field_mask & UCP_EP_PARAM_FIELD_REMOTE_ADDRESS) ||
        (params->address == NULL)) {
        ucs_error("ucp_ep_create: a remote worker address is required");
        return UCS_ERR_INVALID_PARAM;
    }

    addr = malloc(sizeof(*addr));
    if (addr == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    /* ucp_ep_create() gets no length: the blob says its own, and the
     * checksum catches a blob cut short inside a larger buffer. */
    status = ucp_address_unpack(params->address,
                                ucp_address_length(params->address), addr);
    if (status != UCS_OK) {
        free(addr);
        return status;
    }

    ucp_worker_lock(worker);
    status = ucp_ep_create_from_address(worker, addr, 0,
                                        !(flags & UCP_EP_PARAMS_FLAGS_NO_LOOPBACK),
                                        &ep);
    if (status == UCS_OK) {
        ucp_ep_apply_params(ep, params);
        ucp_stream_ep_adopt(ep);
        *ep_p = ep;
    }
    ucp_worker_unlock(worker);
    free(addr);
    return status;
}

void ucp_worker_destroy_zombies(ucp_worker_h worker)
{
    while (!ucs_list_is_empty(&worker->zombies)) {
        ucp_ep_destroy_internal(ucs_list_head_elem(&worker->zombies, struct ucp_ep,
                                                   link));
    }
}

ucp_ep_h ucp_worker_find_ep(ucp_worker_h worker, uint64_t uuid)
{
    ucp_ep_h ep;

    ucs_list_for_each(ep, &worker->eps, link) {
        if ((ep->remote_uuid == uuid) &&
            !(ep->flags & (UCP_EP_FLAG_FAILED | UCP_EP_FLAG_CLOSING))) {
            return ep;
        }
    }
    return NULL;
}

ucp_ep_h ucp_worker_find_ep_by_id(ucp_worker_h worker, uint64_t id)
{
    ucp_ep_h ep;

    ucs_list_for_each(ep, &worker->eps, link) {
        if (ep->local_id == id) {
            return ep;
        }
    }
    return NULL;
}

ucp_ep_h ucp_worker_ep_of_msg(ucp_worker_h worker, uint64_t uuid, uint64_t dest_ep)
{
    ucp_ep_h ep;

    if (dest_ep != 0) {
        ep = ucp_worker_find_ep_by_id(worker, dest_ep);
        if (ep != NULL) {
            return ep;
        }
    }
    /* The sender does not know our ep: prefer the application's own. */
    ucs_list_for_each(ep, &worker->eps, link) {
        if ((ep->remote_uuid == uuid) &&
            !(ep->flags & (UCP_EP_FLAG_INTERNAL | UCP_EP_FLAG_CLOSING))) {
            return ep;
        }
    }
    return ucp_worker_find_ep(worker, uuid);
}

/* ---- the ordered send queue --------------------------------------------- */

/* The transport has resources again. The queue is progressed from
 * ucp_worker_progress(), outside the transport's pending dispatch: there it
 * may add itself to the pending queue again, and a flush sees no stale
 * entry of ours. */
static ucs_status_t ucp_ep_pending_cb(uct_pending_req_t *self)
{
    ucp_ep_h ep = ucs_container_of(self, struct ucp_ep, pending);

    ep->flags &= ~UCP_EP_FLAG_PENDING;
    if (!(ep->flags & UCP_EP_FLAG_READY)) {
        ep->flags |= UCP_EP_FLAG_READY;
        ucs_list_add_tail(&ep->worker->ready, &ep->ready_link);
    }
    return UCS_OK;
}

unsigned ucp_worker_progress_ready(ucp_worker_h worker)
{
    unsigned count = 0;
    ucp_ep_h ep;

    while (!ucs_list_is_empty(&worker->ready)) {
        ep = ucs_list_extract_head_elem(&worker->ready, struct ucp_ep, ready_link);
        ep->flags &= ~UCP_EP_FLAG_READY;
        ucp_ep_progress_queue(ep);
        ++count;
    }
    return count;
}

static void ucp_ep_flush_done(ucp_request_t *req, ucs_status_t status);
static ucs_status_t ucp_ep_flush_progress(ucp_request_t *req);

int ucp_ep_progress_queue(ucp_ep_h ep)
{
    ucs_status_t status;
    ucp_request_t *req;
    int blocked = 0;

    if (ep->flags & (UCP_EP_FLAG_IN_PROGRESS | UCP_EP_FLAG_CONNECTING)) {
        /* Re-entered from a transport callback (the outer loop runs), or no
         * lanes yet (the handshake's end moves the queue). */
        return 0;
    }
    ep->flags |= UCP_EP_FLAG_IN_PROGRESS;
    while (!ucs_queue_is_empty(&ep->send_q) && !(ep->flags & UCP_EP_FLAG_FAILED)) {
        req    = ucs_queue_head_elem_non_empty(&ep->send_q, ucp_request_t, queue);
        status = req->progress(req);
        if (status == UCS_INPROGRESS) {
            continue;
        } else if (status == UCS_ERR_NO_RESOURCE) {
            blocked = 1;
            if (!(ep->flags & UCP_EP_FLAG_PENDING)) {
                ep->pending.func = ucp_ep_pending_cb;
                status = uct_ep_pending_add(ep->uct_ep, &ep->pending, 0);
                if (status == UCS_ERR_BUSY) {
                    continue; /* resources came back: retry now */
                }
                ep->flags |= UCP_EP_FLAG_PENDING;
            }
            break;
        }
        /* Finished, or failed: it leaves the queue either way. Its progress
         * function has completed it (or will, e.g. on an acknowledgement). */
        ucs_queue_pull_non_empty(&ep->send_q);
        if (req->flags & UCP_REQ_FLAG_FLUSH_DONE) {
            ucp_ep_flush_done(req, UCS_OK);
            continue;
        }
        if (status != UCS_OK) {
            ucp_ep_set_failed(ep, status, 1);
            ucp_request_complete(req, status);
            break;
        }
    }
    ep->flags &= ~UCP_EP_FLAG_IN_PROGRESS;
    return blocked;
}

void ucp_ep_push(ucp_ep_h ep, ucp_request_t *req)
{
    req->ep = ep;
    ucs_queue_push(&ep->send_q, &req->queue);
    ucp_ep_progress_queue(ep);
}

/* ---- control messages ---------------------------------------------------- */

static ucs_status_t ucp_ep_ack_progress(ucp_request_t *req)
{
    ucs_status_t status;

    status = uct_ep_am_short(req->ep->uct_ep, UCP_AM_ID_SYNC_ACK,
                             req->u.ctrl.ack_id, NULL, 0);
    if (status == UCS_OK) {
        ucp_request_complete(req, UCS_OK);
    }
    return status;
}

ucs_status_t ucp_ep_send_ack(ucp_ep_h ep, uint64_t sync_id)
{
    ucp_request_t *req;

    if (ucs_queue_is_empty(&ep->send_q) &&
        (uct_ep_am_short(ep->uct_ep, UCP_AM_ID_SYNC_ACK, sync_id, NULL, 0) ==
         UCS_OK)) {
        return UCS_OK;
    }
    req = ucp_request_get(ep->worker, NULL);
    if (req == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    req->flags        |= UCP_REQ_FLAG_INTERNAL;
    req->u.ctrl.ack_id = sync_id;
    req->progress      = ucp_ep_ack_progress;
    ucp_ep_push(ep, req);
    return UCS_OK;
}

/* ---- failure ------------------------------------------------------------- */

/* Does anything but a flush or close of ours wait on @a ep? */
static int ucp_ep_is_busy(ucp_ep_h ep)
{
    ucp_request_t *req;

    if (ep->rma.replied != ep->rma.issued) {
        return 1;
    }
    ucs_queue_for_each(req, &ep->send_q, queue) {
        if (req->progress != ucp_ep_flush_progress) {
            return 1;
        }
    }
    ucs_list_for_each(req, &ep->worker->sync_reqs, list) {
        if (req->ep == ep) {
            return 1;
        }
    }
    return 0;
}

/* The peer closed its side (CONNECTION_RESET: posix reports it when the
 * owner closed its iface, a killed owner gives ENDPOINT_TIMEOUT) while we
 * were closing ours or had nothing in flight with it: the orderly end of a
 * job (MPI_Finalize), not a failure to shout about. */
static int ucp_ep_is_orderly_end(ucp_ep_h ep, ucs_status_t status)
{
    return (status == UCS_ERR_CONNECTION_RESET) &&
           ((ep->flags & UCP_EP_FLAG_CLOSING) || !ucp_ep_is_busy(ep));
}

void ucp_ep_set_failed(ucp_ep_h ep, ucs_status_t status, int notify)
{
    ucp_worker_h worker = ep->worker;
    ucp_request_t *req, *tmp;
    int orderly;

    if (ep->flags & UCP_EP_FLAG_FAILED) {
        return;
    }
    orderly = ucp_ep_is_orderly_end(ep, status);
    ucs_debug("ucp: ep %s (%s) failed: %s", ep->name, ucp_ep_tl_name(ep),
              ucs_status_string(status));
    ep->flags |= UCP_EP_FLAG_FAILED;
    ep->status = status;
    if (ep->uct_ep != NULL) {
        uct_ep_pending_purge(ep->uct_ep, NULL, NULL);
    }
    ep->flags &= ~UCP_EP_FLAG_PENDING;
    ucp_rma_ep_failed(ep, status); /* before the queue: it skips queued ops */

    while (!ucs_queue_is_empty(&ep->send_q)) {
        req = ucs_queue_pull_elem_non_empty(&ep->send_q, ucp_request_t, queue);
        if (req->flags & UCP_REQ_FLAG_IN_SYNC_LIST) {
            ucs_list_del(&req->list);
            req->flags &= ~UCP_REQ_FLAG_IN_SYNC_LIST;
        }
        if (req->progress == ucp_ep_flush_progress) {
            ucp_ep_flush_done(req, status);
        } else {
            ucp_request_complete(req, status);
        }
    }
    ucs_list_for_each_safe(req, tmp, &worker->sync_reqs, list) {
        if (req->ep == ep) {
            ucs_list_del(&req->list);
            req->flags &= ~UCP_REQ_FLAG_IN_SYNC_LIST;
            ucp_request_complete(req, status);
        }
    }
    if (ep->remote_uuid != 0) {
        ucp_tag_ep_failed(worker, ep->remote_uuid, status);
    }
    ucp_stream_ep_failed(ep, status);

    if (notify && (ep->err_mode == UCP_ERR_HANDLING_MODE_PEER) &&
        !(ep->flags & (UCP_EP_FLAG_INTERNAL | UCP_EP_FLAG_CLOSING))) {
        ep->flags |= UCP_EP_FLAG_NOTIFY;
        ucs_list_add_tail(&worker->notify, &ep->notify_link);
    } else if (notify && (ep->err_mode != UCP_ERR_HANDLING_MODE_PEER) &&
               !(ep->flags & UCP_EP_FLAG_INTERNAL)) {
        if (orderly) {
            ucs_debug("ucp: endpoint %s: the peer closed its side", ep->name);
        } else {
            ucs_error("ucp: endpoint %s to a failed peer: %s", ep->name,
                      ucs_status_string(status));
        }
    }
}

ucs_status_t ucp_worker_iface_error(void *arg, uct_ep_h uct_ep, ucs_status_t status)
{
    ucp_worker_iface_t *wiface = arg;
    ucp_ep_h ep;

    ucs_list_for_each(ep, &wiface->worker->eps, link) {
        if (ep->uct_ep == uct_ep) {
            ucp_ep_set_failed(ep, status, 1);
            return UCS_OK;
        }
    }
    return UCS_OK;
}

/* ---- flush and close ----------------------------------------------------- */

void ucp_ep_destroy_internal(ucp_ep_h ep)
{
    ucp_request_t *req, *tmp;

    if (ep->flags & UCP_EP_FLAG_READY) {
        ucs_list_del(&ep->ready_link);
    }

    ucs_list_for_each_safe(req, tmp, &ep->worker->sync_reqs, list) {
        if (req->ep == ep) {
            ucs_list_del(&req->list);
            req->flags &= ~UCP_REQ_FLAG_IN_SYNC_LIST;
            ucp_request_complete(req, UCS_ERR_CANCELED);
        }
    }
    if (ep->flags & UCP_EP_FLAG_NOTIFY) {
        ucs_list_del(&ep->notify_link);
    }
    if (!(ep->flags & UCP_EP_FLAG_FAILED) && (ep->uct_ep != NULL)) {
        uct_ep_pending_purge(ep->uct_ep, NULL, NULL);
    }
    ucs_list_del(&ep->link);
    ucp_sa_ep_cleanup(ep);
    ucp_stream_ep_cleanup(ep);
    ucp_rndv_ep_cleanup(ep);
    if (ep->uct_ep != NULL) {
        uct_ep_destroy(ep->uct_ep);
    }
    free(ep);
}

static void ucp_ep_flush_done(ucp_request_t *req, ucs_status_t status)
{
    ucp_request_t *parent = req->u.ctrl.parent;
    ucp_ep_h ep           = req->ep;

    if (req->u.ctrl.close) {
        /* Destroyed from the worker's own context, never from inside a
         * transport call that may still be using the uct ep. */
        ucs_list_del(&ep->link);
        ucs_list_add_tail(&ep->worker->zombies, &ep->link);
    }
    ucp_request_complete(req, status);
    if (parent != NULL) {
        ucp_worker_flush_child_complete(parent);
    }
}

static void ucp_ep_flush_comp(uct_completion_t *comp)
{
    ucp_request_t *req = ucs_container_of(comp, ucp_request_t, u.ctrl.comp);

    ucp_ep_flush_done(req, comp->status);
}

/* Flush of the transport: UCS_OK with FLUSH_DONE when it finished now,
 * UCS_OK without it when the completion finishes it, or an error. */
static ucs_status_t ucp_ep_flush_uct(ucp_request_t *req)
{
    ucs_status_t status;

    req->u.ctrl.comp.func   = ucp_ep_flush_comp;
    req->u.ctrl.comp.count  = 1;
    req->u.ctrl.comp.status = UCS_OK;
    status = uct_ep_flush(req->ep->uct_ep, 0, &req->u.ctrl.comp);
    if (status == UCS_OK) {
        /* Finished once out of the queue (the ep may go away then). */
        req->flags |= UCP_REQ_FLAG_FLUSH_DONE;
        return UCS_OK;
    } else if (status == UCS_INPROGRESS) {
        return UCS_OK; /* the completion finishes it */
    }
    return status;
}

static ucs_status_t ucp_ep_flush_progress(ucp_request_t *req)
{
    if (ucp_rma_flush_park(req)) {
        return UCS_OK; /* out of the queue; RMA replies resume it */
    }
    return ucp_ep_flush_uct(req);
}

void ucp_ep_flush_resume(ucp_request_t *req, ucs_status_t status)
{
    if (status == UCS_OK) {
        /* Back through the send queue, the one place that flushes the
         * transport and retries when it is busy (Open MPI flushes after
         * 1000s of puts each way: the answers to the peer's fill it). */
        ucp_ep_push(req->ep, req);
        return;
    }
    ucp_ep_flush_done(req, status);
}

ucs_status_ptr_t ucp_ep_flush_internal(ucp_ep_h ep,
                                       const ucp_request_param_t *param,
                                       ucp_request_t *parent, int close)
{
    ucp_request_t *req;

    req = ucp_request_get(ep->worker, param);
    if (req == NULL) {
        return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    }
    if (parent != NULL) {
        req->flags |= UCP_REQ_FLAG_INTERNAL;
    } else {
        req->flags |= UCP_REQ_FLAG_IN_CALL;
        ucp_request_set_callback(req, param, 0);
    }
    req->u.ctrl.parent = parent;
    req->u.ctrl.close  = close;
    req->progress      = ucp_ep_flush_progress;
    if (close) {
        ep->flags |= UCP_EP_FLAG_CLOSING;
    }
    ucp_ep_push(ep, req);
    if (parent != NULL) {
        return req + 1;
    }
    return ucp_request_finish_call(req, param);
}

ucs_status_ptr_t ucp_ep_flush_nbx(ucp_ep_h ep, const ucp_request_param_t *param)
{
    ucp_worker_h worker = ep->worker;
    ucs_status_ptr_t ret;

    ucp_worker_lock(worker);
    if (ep->flags & UCP_EP_FLAG_FAILED) {
        ret = UCS_STATUS_PTR(ep->status);
    } else {
        ret = ucp_ep_flush_internal(ep, param, NULL, 0);
    }
    ucp_worker_unlock(worker);
    return ret;
}

ucs_status_ptr_t ucp_ep_flush_nb(ucp_ep_h ep, unsigned flags, ucp_send_callback_t cb)
{
    ucp_request_param_t param;
    ucs_status_ptr_t ret;

    (void)flags;
    memset(&param, 0, sizeof(param));
    ucp_worker_lock(ep->worker);
    ret = ucp_ep_flush_nbx(ep, &param);
    if ((ret != NULL) && !UCS_PTR_IS_ERR(ret) && (cb != NULL)) {
        ucp_request_t *req = (ucp_request_t*)ret - 1;
        req->cb.send = cb;
        req->flags  |= UCP_REQ_FLAG_CB_SEND;
    }
    ucp_worker_unlock(ep->worker);
    return ret;
}

ucs_status_ptr_t ucp_ep_close_nbx(ucp_ep_h ep, const ucp_request_param_t *param)
{
    ucp_worker_h worker = ep->worker;
    ucs_status_ptr_t ret = NULL;
    int force;

    force = (param != NULL) && (param->op_attr_mask & UCP_OP_ATTR_FIELD_FLAGS) &&
            (param->flags & UCP_EP_CLOSE_FLAG_FORCE);
    ucp_worker_lock(worker);
    ucs_debug("ucp: closing ep %s%s", ep->name, force ? " (force)" : "");
    if (force || (ep->flags & UCP_EP_FLAG_FAILED)) {
        ep->flags |= UCP_EP_FLAG_CLOSING;
        ucp_ep_set_failed(ep, UCS_ERR_CANCELED, 0);
        ucp_ep_destroy_internal(ep);
    } else {
        ret = ucp_ep_flush_internal(ep, param, NULL, 1);
        ucp_worker_destroy_zombies(worker);
    }
    ucp_worker_unlock(worker);
    return ret;
}

ucs_status_ptr_t ucp_ep_close_nb(ucp_ep_h ep, unsigned mode)
{
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = (mode == UCP_EP_CLOSE_MODE_FORCE) ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    return ucp_ep_close_nbx(ep, &param);
}

ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep)
{
    return ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FLUSH);
}

ucs_status_ptr_t ucp_ep_modify_nb(ucp_ep_h ep, const ucp_ep_params_t *params)
{
    const uint64_t changeable = UCP_EP_PARAM_FIELD_USER_DATA |
                                UCP_EP_PARAM_FIELD_ERR_HANDLER;

    if ((ep == NULL) || (params == NULL)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if (params->field_mask & ~changeable) {
        ucs_debug("ucp_ep_modify_nb(%s): only the user data and the error "
                  "handler can change (field_mask 0x%llx)", ep->name,
                  (unsigned long long)params->field_mask);
        return UCS_STATUS_PTR(UCS_ERR_UNSUPPORTED);
    }
    ucp_worker_lock(ep->worker);
    ucp_ep_apply_params(ep, params);
    ucp_worker_unlock(ep->worker);
    return NULL;
}

ucs_status_t ucp_ep_query(ucp_ep_h ep, ucp_ep_attr_t *attr)
{
    ucs_status_t status = UCS_OK;

    ucp_worker_lock(ep->worker);
    if (attr->field_mask & (UCP_EP_ATTR_FIELD_LOCAL_SOCKADDR |
                            UCP_EP_ATTR_FIELD_REMOTE_SOCKADDR)) {
        status = ucp_sa_ep_query(ep, attr);
    }
    if (attr->field_mask & UCP_EP_ATTR_FIELD_NAME) {
        snprintf(attr->name, sizeof(attr->name), "%s", ep->name);
    }
    if (attr->field_mask & UCP_EP_ATTR_FIELD_USER_DATA) {
        attr->user_data = ep->user_data;
    }
    if ((attr->field_mask & UCP_EP_ATTR_FIELD_TRANSPORTS) && (status == UCS_OK)) {
        status = ucp_ep_query_transports(ep, &attr->transports);
    }
    ucp_worker_unlock(ep->worker);
    return status;
}
