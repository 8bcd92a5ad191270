#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Rendezvous plumbing shared by both sides: the cuda_ipc lane of the worker
 * and of its eps, the request id table, control messages, asynchronous copy
 * operations, progress and failure handling. Requests and operations are
 * recycled through per-worker free lists: no allocation per message.
 */

#include <ucp/rndv/ucp_rndv_int.h>
#include <ucs/sys/sys.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UCP_RNDV_KEEPALIVE_NS    100000000ull
#define UCP_RNDV_DRAIN_TIMEOUT_NS 10000000000ull

/* ---- the device-memory lane ---------------------------------------------- */

/* A domain that registers device memory for other processes: its keys
 * export the memory (a remote key is needed), and it reaches what it
 * registers. */
static int ucp_rndv_device_md_fits(const uct_md_attr_t *attr)
{
    const uint64_t device = ~UCS_BIT(UCS_MEMORY_TYPE_HOST);
    const uint64_t needed = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_RKEY;

    return ((attr->cap.flags & needed) == needed) &&
           (attr->cap.reg_mem_types & attr->cap.access_mem_types & device) &&
           (attr->rkey_packed_size > 0);
}

static void ucp_rndv_open_rma_iface(ucp_worker_h worker)
{
    ucp_context_h context = worker->context;
    const ucp_tl_rsc_t *rsc;

    ucp_rndv_lane_select(worker, ucp_rndv_device_md_fits,
                         UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_PUT_ZCOPY |
                             UCT_IFACE_FLAG_CONNECT_TO_IFACE,
                         &worker->rma_iface);
    if (worker->rma_iface.iface == NULL) {
        ucs_debug("ucp: worker %s: no transport reaches peers' device memory",
                  worker->name);
        return;
    }
    rsc                         = &context->rscs[worker->rma_iface.rsc_index];
    worker->rndv->ipc_md        = context->mds[rsc->md_index].md;
    worker->rndv->ipc_component = context->mds[rsc->md_index].component;
    worker->rndv->key_size      = context->mds[rsc->md_index].attr.rkey_packed_size;
    worker->rndv->tx_key.bytes  = calloc(1, worker->rndv->key_size + 1);
    ucs_debug("ucp: worker %s: device rendezvous lane %s/%s", worker->name,
              rsc->desc.tl_name, rsc->desc.dev_name);
}

ucs_status_t ucp_rndv_worker_init(ucp_worker_h worker)
{
    ucp_context_h context;
    ucp_rndv_worker_t *rw;

    rw = calloc(1, sizeof(*rw));
    if (rw == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    ucs_list_head_init(&rw->done);
    ucs_list_head_init(&rw->waiters);
    ucs_list_head_init(&rw->free_reqs);
    ucs_list_head_init(&rw->free_ops);
    worker->rndv = rw;
    /* Fragments live in memory of the staging copier's domain. */
    if (worker->mt_ep != NULL) {
        context     = worker->context;
        rw->copy_md = context->mds[context->rscs[worker->mt_rsc_index].md_index].md;
    }
    ucp_rndv_open_rma_iface(worker);
    ucp_rndv_host_lane_open(worker);
    return UCS_OK;
}

/* Copies still running write into fragments and user buffers: wait for
 * them (bounded) before anything is freed. */
static void ucp_rndv_drain(ucp_worker_h worker)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    uint64_t deadline     = ucs_get_time_ns() + UCP_RNDV_DRAIN_TIMEOUT_NS;

    while ((rw->ops_pending > 0) && (ucs_get_time_ns() < deadline)) {
        if (worker->rma_iface.iface != NULL) {
            uct_iface_progress(worker->rma_iface.iface);
        }
        if (worker->mt_iface != NULL) {
            uct_iface_progress(worker->mt_iface);
        }
    }
    if (rw->ops_pending > 0) {
        ucs_warn("ucp: worker %s destroyed with %u rendezvous copies still "
                 "running", worker->name, rw->ops_pending);
    }
}

void ucp_rndv_worker_cleanup(ucp_worker_h worker)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    ucp_rndv_req_t *rreq;
    uint32_t i;

    if (rw == NULL) {
        return;
    }
    for (i = 0; i < rw->num_slots; ++i) {
        rreq = rw->slots[i];
        if (rreq != NULL) {
            rreq->req->flags |= UCP_REQ_FLAG_RELEASED;
            ucp_rndv_req_complete(rreq, UCS_ERR_CANCELED);
        }
    }
    ucp_rndv_drain(worker);
    while (!ucs_list_is_empty(&rw->done)) {
        ucp_rndv_op_t *op = ucs_list_extract_head_elem(&rw->done, ucp_rndv_op_t,
                                                       list);
        op->cb(op);
    }
    ucp_rndv_frag_cleanup(worker);
    while (!ucs_list_is_empty(&rw->free_reqs)) {
        free(ucs_list_extract_head_elem(&rw->free_reqs, ucp_rndv_req_t,
                                        wait_link));
    }
    while (!ucs_list_is_empty(&rw->free_ops)) {
        free(ucs_list_extract_head_elem(&rw->free_ops, ucp_rndv_op_t,
                                        free_link));
    }
    ucp_rndv_send_key_drop(worker);
    free(rw->tx_key.bytes);
    ucp_rndv_key_cache_destroy(rw->own_keys);
    free(rw->msg_host_lanes);
    free(rw->slots);
    free(rw->gens);
    free(rw);
    worker->rndv = NULL;
}

void ucp_rndv_worker_close_iface(ucp_worker_h worker)
{
    ucp_rndv_host_lane_close(worker);
    if (worker->rma_iface.iface != NULL) {
        uct_iface_close(worker->rma_iface.iface);
        worker->rma_iface.iface = NULL;
    }
}

/* The device lane to a peer on this host that offers one. */
static void ucp_rndv_ep_connect_rma(ucp_ep_h ep, const ucp_unpacked_address_t *addr,
                                    int same_host)
{
    ucp_worker_iface_t *wiface = &ep->worker->rma_iface;

    /* Not to ourselves: a process cannot import its own IPC handles. */
    if (!same_host || (wiface->iface == NULL) || (addr->pid == (uint32_t)getpid())) {
        return;
    }
    ep->rma_ep = ucp_worker_iface_connect(wiface, addr);
    ucs_debug("ucp: ep %p: device rendezvous lane %s", (void *)ep,
              (ep->rma_ep != NULL) ? "connected" : "not connected");
}

void ucp_rndv_ep_init(ucp_ep_h ep, const ucp_unpacked_address_t *addr,
                      int same_host)
{
    ucp_rndv_ep_connect_rma(ep, addr, same_host);
    ucp_rndv_host_ep_connect(ep, addr);
    ucp_rndv_ep_set_thresh(ep);
}

void ucp_rndv_ep_cleanup(ucp_ep_h ep)
{
    ucp_rndv_key_cache_destroy(ep->rndv_keys);
    ep->rndv_keys = NULL;
    ucp_rndv_host_ep_cleanup(ep);
    if (ep->rma_ep != NULL) {
        uct_ep_destroy(ep->rma_ep);
        ep->rma_ep = NULL;
    }
}

static ucs_status_t ucp_rndv_ep_model_lanes(ucp_ep_h ep, int host_lane,
                                            ucp_rndv_model_t *model);

/* The model's thresholds for @a ep (UCX_RNDV_THRESH=auto), with or without
 * its host lane. */
static void ucp_rndv_ep_model_thresh(ucp_ep_h ep, int host_lane, size_t *thresh)
{
    ucp_rndv_model_t model;
    unsigned k;

    if (ucp_rndv_ep_model_lanes(ep, host_lane, &model) != UCS_OK) {
        /* Keeps the protocols working: eager, then rendezvous from the
         * eager limit (set by the caller). */
        for (k = 0; k < UCP_RNDV_KIND_LAST; ++k) {
            thresh[k] = SIZE_MAX;
        }
        return;
    }
    for (k = 0; k < UCP_RNDV_KIND_LAST; ++k) {
        thresh[k] = ucp_rndv_model_thresh(&model, (ucp_rndv_kind_t)k);
    }
    ucs_debug("ucp: ep %p: rendezvous from %zu B (host), %zu B (exportable "
              "device), %zu B (other device) by the model", (void*)ep,
              thresh[UCP_RNDV_KIND_HOST], thresh[UCP_RNDV_KIND_DEVICE_EXPORT],
              thresh[UCP_RNDV_KIND_DEVICE]);
}

ucs_status_t ucp_rndv_ep_model(ucp_ep_h ep, ucp_rndv_model_t *model)
{
    return ucp_rndv_ep_model_lanes(ep, 1, model);
}

static ucs_status_t ucp_rndv_ep_model_lanes(ucp_ep_h ep, int host_lane,
                                            ucp_rndv_model_t *model)
{
    ucp_worker_h worker          = ep->worker;
    const ucp_rndv_config_t *cfg = &worker->context->rndv;

    return ucp_rndv_model_build(
        model, ep->wiface->iface, ep->max_bcopy,
        (worker->mt_ep != NULL) ? worker->mt_iface : NULL,
        (ep->rma_ep != NULL) ? worker->rma_iface.iface : NULL,
        (host_lane && (ep->host_rma_ep != NULL)) ? ep->host_lane->wiface->iface : NULL,
        cfg->frag_size[UCS_MEMORY_TYPE_HOST], cfg->frag_size[UCS_MEMORY_TYPE_CUDA],
        cfg->frag_type == UCP_RNDV_FRAG_TYPE_CUDA, cfg->staged_get);
}

void ucp_rndv_ep_set_thresh(ucp_ep_h ep)
{
    const ucp_rndv_config_t *cfg = &ep->worker->context->rndv;
    size_t without[UCP_RNDV_KIND_LAST];
    unsigned k;

    if (cfg->thresh == UCS_MEMUNITS_AUTO) {
        ucp_rndv_ep_model_thresh(ep, 1, ep->rndv_thresh);
    } else {
        for (k = 0; k < UCP_RNDV_KIND_LAST; ++k) {
            ep->rndv_thresh[k] = cfg->thresh;
        }
    }
    /* Host data too large for the host lane's read would take data messages
     * after a round trip: from the size the model gives without the lane
     * (over tcp that is eager: rendezvous data messages of 16 MiB both ways
     * at once ran at 0.31x of eager on an H100 host). */
    ep->rndv_host_get_max   = SIZE_MAX;
    ep->rndv_host_after_get = 0;
    if ((ep->host_rma_ep != NULL) && (cfg->thresh == UCS_MEMUNITS_AUTO)) {
        ucp_rndv_ep_model_thresh(ep, 0, without);
        ep->rndv_host_get_max   = ucp_rndv_host_get_max(ep);
        ep->rndv_host_after_get = ucs_max(without[UCP_RNDV_KIND_HOST],
                                          ep->rndv_thresh[UCP_RNDV_KIND_HOST]);
    }
    if ((cfg->eager_max < SIZE_MAX) && (ep->rndv_host_after_get > cfg->eager_max + 1)) {
        ep->rndv_host_after_get = cfg->eager_max + 1;
    }
    /* Above UCX_TAG_EAGER_MAX_SIZE a receiver drops eager messages, so they
     * take rendezvous even where the threshold says eager. */
    for (k = 0; k < UCP_RNDV_KIND_LAST; ++k) {
        if ((cfg->eager_max < SIZE_MAX) && (ep->rndv_thresh[k] > cfg->eager_max + 1)) {
            ep->rndv_thresh[k] = cfg->eager_max + 1;
        }
    }
}

/* ---- request ids ---------------------------------------------------------- */

static ucs_status_t ucp_rndv_ids_grow(ucp_rndv_worker_t *rw)
{
    uint32_t num = (rw->num_slots == 0) ? 64 : rw->num_slots * 2;
    ucp_rndv_req_t **slots;
    uint32_t *gens;

    slots = realloc(rw->slots, num * sizeof(*slots));
    if (slots == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    rw->slots = slots;
    gens = realloc(rw->gens, num * sizeof(*gens));
    if (gens == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    rw->gens = gens;
    memset(slots + rw->num_slots, 0, (num - rw->num_slots) * sizeof(*slots));
    memset(gens + rw->num_slots, 0, (num - rw->num_slots) * sizeof(*gens));
    rw->num_slots = num;
    return UCS_OK;
}

ucp_rndv_req_t *ucp_rndv_req_new(ucp_request_t *req, int is_send,
                                 uint64_t peer_uuid)
{
    ucp_rndv_worker_t *rw = req->worker->rndv;
    ucp_rndv_req_t *rreq;
    uint32_t i;

    for (i = rw->hint; i < rw->num_slots; ++i) {
        if (rw->slots[i] == NULL) {
            break;
        }
    }
    if ((i == rw->num_slots) && (ucp_rndv_ids_grow(rw) != UCS_OK)) {
        return NULL;
    }
    if (!ucs_list_is_empty(&rw->free_reqs)) {
        rreq = ucs_list_extract_head_elem(&rw->free_reqs, ucp_rndv_req_t,
                                          wait_link);
        memset(rreq, 0, sizeof(*rreq));
    } else if ((rreq = calloc(1, sizeof(*rreq))) == NULL) {
        return NULL;
    }
    rw->slots[i]    = rreq;
    rw->hint        = i + 1;
    ++rw->live;
    rreq->req       = req;
    rreq->worker    = req->worker;
    /* A generation in the high half: a reply for a finished request whose
     * slot was reused carries the old generation and is dropped. */
    rreq->id        = ((uint64_t)++rw->gens[i] << 32) | (i + 1);
    rreq->is_send   = is_send;
    rreq->peer_uuid = peer_uuid;
    rreq->mem_type  = UCS_MEMORY_TYPE_HOST;
    ucs_list_head_init(&rreq->wait_link);
    ucs_list_head_init(&rreq->hread_pending);
    req->rndv       = rreq;
    return rreq;
}

ucp_rndv_req_t *ucp_rndv_req_find(ucp_worker_h worker, uint64_t id, int is_send,
                                  const char *what)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    uint32_t index        = (uint32_t)id - 1;
    ucp_rndv_req_t *rreq;

    if ((rw != NULL) && (index < rw->num_slots)) {
        rreq = rw->slots[index];
        if ((rreq != NULL) && (rreq->id == id) && (rreq->is_send == is_send)) {
            return rreq;
        }
    }
    ucs_debug("ucp: worker %s: %s for unknown or finished request id 0x%llx "
              "dropped", worker->name, what, (unsigned long long)id);
    return NULL;
}

void ucp_rndv_req_complete(ucp_rndv_req_t *rreq, ucs_status_t status)
{
    ucp_worker_h worker   = rreq->worker;
    ucp_rndv_worker_t *rw = worker->rndv;
    ucp_request_t *req    = rreq->req;
    uint32_t index        = (uint32_t)rreq->id - 1;

    rw->slots[index] = NULL;
    --rw->live;
    if (index < rw->hint) {
        rw->hint = index;
    }
    if (rreq->waiting) {
        ucp_rndv_frag_unwait(worker, rreq);
    }
    ucp_rndv_stage_release(rreq);
    ucp_rndv_hread_release(rreq);
    if (rreq->ipc_memh != NULL) {
        ucp_rndv_key_release(worker, rreq->ipc_memh);
    }
    if (rreq->host_memh != NULL) {
        ucp_rndv_host_key_release(rreq->host_md, rreq->host_memh);
    }
    if ((status == UCS_OK) && (rreq->proto < UCP_PROTO_STAT_LAST)) {
        ++worker->proto_stats[rreq->proto];
    }
    ucs_debug("ucp: rendezvous %s 0x%llx of %zu bytes done (%s): %s",
              rreq->is_send ? "send" : "receive", (unsigned long long)rreq->id,
              rreq->msg_length, ucp_proto_stat_name(rreq->proto),
              ucs_status_string(status));
    req->rndv = NULL;
    ucs_list_add_head(&rw->free_reqs, &rreq->wait_link);
    if (!(req->flags & UCP_REQ_FLAG_RECV)) {
        ucp_request_complete(req, status);
    } else {
        if ((status == UCS_OK) && (req->u.recv.info.length > req->dt.length)) {
            status = UCS_ERR_MESSAGE_TRUNCATED;
        }
        ucp_request_complete(req, status);
    }
}

void ucp_rndv_peer_failed(ucp_worker_h worker, uint64_t uuid,
                          ucs_status_t status)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    uint32_t i;

    if (rw == NULL) {
        return;
    }
    for (i = 0; i < rw->num_slots; ++i) {
        if ((rw->slots[i] != NULL) && (rw->slots[i]->peer_uuid == uuid)) {
            ucp_rndv_req_complete(rw->slots[i], status);
        }
    }
}

/* ---- control messages ------------------------------------------------------ */

ucs_status_t ucp_rndv_ctrl_send(ucp_worker_h worker, uint64_t uuid, uint8_t id,
                                const void *hdr, size_t hdr_len,
                                const void *data, size_t data_len)
{
    ucp_ep_h ep = ucp_worker_find_ep(worker, uuid);

    if (ep == NULL) {
        ucs_debug("ucp: no endpoint to worker 0x%llx for rendezvous message %u",
                  (unsigned long long)uuid, id);
        return UCS_ERR_UNREACHABLE;
    }
    return ucp_ep_send_ctrl(ep, id, hdr, hdr_len, data, data_len);
}

void ucp_rndv_warn_import_failed(ucs_status_t status)
{
    static int warned;

    if (!warned) {
        warned = 1;
        ucs_warn("ucp: importing a peer's device memory failed (%s): this and "
                 "similar messages are staged through fragments instead",
                 ucs_status_string(status));
    }
}

/* ---- asynchronous operations ------------------------------------------ */

static void ucp_rndv_op_comp(uct_completion_t *comp)
{
    ucp_rndv_op_t *op = ucs_container_of(comp, ucp_rndv_op_t, comp);

    --op->worker->rndv->ops_pending;
    ucs_list_add_tail(&op->worker->rndv->done, &op->list);
    op->worker->housekeeping_due = 1;
}

ucp_rndv_op_t *ucp_rndv_op_new(ucp_worker_h worker, uint64_t id,
                               ucp_rndv_op_cb_t cb)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    ucp_rndv_op_t *op;

    if (!ucs_list_is_empty(&rw->free_ops)) {
        op = ucs_list_extract_head_elem(&rw->free_ops, ucp_rndv_op_t, free_link);
        memset(op, 0, sizeof(*op));
    } else if ((op = calloc(1, sizeof(*op))) == NULL) {
        return NULL;
    }
    op->comp.func   = ucp_rndv_op_comp;
    op->comp.count  = 1;
    op->comp.status = UCS_OK;
    op->worker      = worker;
    op->cb          = cb;
    op->id          = id;
    return op;
}

ucs_status_t ucp_rndv_op_started(ucp_rndv_op_t *op, ucs_status_t status)
{
    if (status == UCS_INPROGRESS) {
        ++op->worker->rndv->ops_pending;
        return UCS_OK;
    } else if (status == UCS_OK) {
        ucs_list_add_tail(&op->worker->rndv->done, &op->list);
        op->worker->housekeeping_due = 1;
        return UCS_OK;
    }
    ucp_rndv_op_free(op);
    return status;
}

ucs_status_t ucp_rndv_op_zcopy(ucp_rndv_op_t *op, ucp_ep_h ep, void *buffer,
                               size_t length, uint64_t remote_addr,
                               const void *key, size_t key_len, int is_put)
{
    ucp_rndv_key_cache_t *keys = ucp_rndv_ep_keys(ep);
    ucs_status_t status;
    uct_rkey_t rkey;
    uct_iov_t iov;

    status = (keys == NULL) ? UCS_ERR_UNREACHABLE :
             ucp_rndv_key_cache_get(keys, key, key_len, &rkey);
    if (status != UCS_OK) {
        ucp_rndv_op_free(op);
        return (status == UCS_ERR_NO_MEMORY) ? status : UCS_ERR_UNREACHABLE;
    }
    iov.buffer = buffer;
    iov.length = length;
    iov.memh   = UCT_MEM_HANDLE_NULL;
    iov.stride = 0;
    iov.count  = 1;
    status = is_put ?
             uct_ep_put_zcopy(ep->rma_ep, &iov, 1, remote_addr, rkey, &op->comp) :
             uct_ep_get_zcopy(ep->rma_ep, &iov, 1, remote_addr, rkey, &op->comp);
    /* UNREACHABLE stays the answer of the key ("not exportable"); an import
     * that fails now is an I/O error for the caller's fallback warning. */
    status = ucp_rndv_op_started(op, status);
    return (status == UCS_ERR_UNREACHABLE) ? UCS_ERR_IO_ERROR : status;
}

void ucp_rndv_op_free(ucp_rndv_op_t *op)
{
    if (op->rkey_component != NULL) {
        uct_rkey_release(op->rkey_component, &op->rkey);
        op->rkey_component = NULL;
    }
    ucs_list_add_head(&op->worker->rndv->free_ops, &op->free_link);
}

/* ---- progress ---------------------------------------------------------- */

/* A peer that died while we wait for its reply sends nothing that would
 * tell us: probe the peers of outstanding requests now and then (error
 * mode PEER only, as for sync sends). */
static unsigned ucp_rndv_keepalive(ucp_worker_h worker)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    ucp_ep_h ep;
    uint64_t now;
    uint32_t i;

    if (rw->live == 0) {
        return 0;
    }
    now = ucs_get_time_ns();
    if (now < rw->next_keepalive_ns) {
        return 0;
    }
    rw->next_keepalive_ns = now + UCP_RNDV_KEEPALIVE_NS;
    for (i = 0; i < rw->num_slots; ++i) {
        if (rw->slots[i] == NULL) {
            continue;
        }
        ep = ucp_worker_find_ep(worker, rw->slots[i]->peer_uuid);
        if ((ep != NULL) && (ep->err_mode == UCP_ERR_HANDLING_MODE_PEER) &&
            ucp_ep_keepalive(ep)) {
            return 1; /* the table changed under us */
        }
    }
    return 0;
}

unsigned ucp_rndv_progress(ucp_worker_h worker)
{
    ucp_rndv_worker_t *rw = worker->rndv;
    unsigned count        = 0;
    ucp_rndv_op_t *op;

    if (rw == NULL) {
        return 0;
    }
    while (!ucs_list_is_empty(&rw->done)) {
        op = ucs_list_extract_head_elem(&rw->done, ucp_rndv_op_t, list);
        op->cb(op);
        ++count;
    }
    count += ucp_rndv_frag_progress(worker);
    /* Reading the clock costs more than the rest of an idle call: only
     * when nothing happened, or now and then while busy. */
    if ((count == 0) || ((++rw->progress_calls & 63) == 0)) {
        count += ucp_rndv_keepalive(worker);
    }
    return count;
}

uint64_t ucp_worker_rndv_stage_overlaps(ucp_worker_h worker)
{
    uint64_t copies;

    ucp_worker_lock(worker);
    copies = (worker->rndv != NULL) ? worker->rndv->stage_overlaps : 0;
    ucp_worker_unlock(worker);
    return copies;
}

uint64_t ucp_worker_rndv_pipe_pieces(ucp_worker_h worker)
{
    uint64_t pieces;

    ucp_worker_lock(worker);
    pieces = (worker->rndv != NULL) ? worker->rndv->pipe_pieces : 0;
    ucp_worker_unlock(worker);
    return pieces;
}
