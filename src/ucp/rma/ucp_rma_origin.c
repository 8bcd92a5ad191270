#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * The origin side of RMA: an operation is a request that goes through the
 * endpoint's ordered send queue (sending its fragments) and waits in the
 * worker's list for the answers the target owes it. Each endpoint counts
 * the answers it expects and those that arrived; a flush parks until the
 * second count reaches what the first was when the flush's turn came, so
 * a completed flush means every earlier operation was applied remotely.
 */

#include <ucp/rma/ucp_rma.h>

#include <string.h>

void ucp_rma_ep_init(ucp_ep_h ep)
{
    ep->rma.issued   = 0;
    ep->rma.replied  = 0;
    ep->rma.status   = UCS_OK;
    ucs_list_head_init(&ep->rma.flushes);
}

static ucs_status_t ucp_rma_length(size_t count,
                                   const ucp_request_param_t *param,
                                   size_t *length_p)
{
    ucp_datatype_t datatype = ucp_dt_make_contig(1);

    if ((param != NULL) && (param->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE)) {
        datatype = param->datatype;
    }
    if ((datatype & UCP_DATATYPE_CLASS_MASK) != UCP_DATATYPE_CONTIG) {
        ucs_error("ucp: rma operations take contiguous datatypes only");
        return UCS_ERR_UNSUPPORTED;
    }
    *length_p = count * (size_t)(datatype >> UCP_DATATYPE_SHIFT);
    return UCS_OK;
}

/* Device memory is staged through a host copy: a put's source now, a get's
 * destination when it completes. */
static ucs_status_t ucp_rma_stage(ucp_request_t *req,
                                  const ucp_request_param_t *param)
{
    ucp_context_h context = req->worker->context;
    ucs_memory_type_t mem_type;

    if (req->u.rma.kind == UCP_RMA_KIND_AMO) {
        return UCS_OK; /* operands are host values */
    }
    if ((param != NULL) && (param->op_attr_mask & UCP_OP_ATTR_FIELD_MEMORY_TYPE) &&
        (param->memory_type < UCS_MEMORY_TYPE_UNKNOWN)) {
        mem_type = param->memory_type;
    } else {
        mem_type = context->memtype_lookup(req->dt.buffer, req->dt.length);
    }
    if (mem_type == UCS_MEMORY_TYPE_HOST) {
        return UCS_OK;
    }
    ucp_memtype_fence(context, req->dt.buffer, req->dt.length);
    return (req->u.rma.kind == UCP_RMA_KIND_PUT) ?
           ucp_memtype_stage_send(req, mem_type) :
           ucp_memtype_stage_recv(req, mem_type);
}

static ucp_request_t *
ucp_rma_op_start(ucp_ep_h ep, uint8_t kind, const void *buffer, size_t count,
                 uint64_t remote_addr, ucp_rkey_h rkey,
                 const ucp_request_param_t *param, ucs_status_t *status_p)
{
    uint64_t id, base, size;
    ucp_request_t *req;
    size_t length;

    *status_p = ucp_rma_length(count, param, &length);
    if (*status_p != UCS_OK) {
        return NULL;
    }
    if (ep->flags & UCP_EP_FLAG_FAILED) {
        *status_p = ep->status;
        return NULL;
    }
    if (rkey == NULL) {
        ucs_error("ucp: rma operation without a remote key");
        *status_p = UCS_ERR_INVALID_PARAM;
        return NULL;
    }
    ucp_rkey_region(rkey, &id, &base, &size);
    if ((remote_addr < base) || (remote_addr + length < remote_addr) ||
        (remote_addr + length > base + size)) {
        ucs_error("ucp: rma access to %#llx..+%zu is outside the remote region "
                  "%#llx..+%llu", (unsigned long long)remote_addr, length,
                  (unsigned long long)base, (unsigned long long)size);
        *status_p = UCS_ERR_INVALID_PARAM;
        return NULL;
    }
    /* The target answers on its endpoint to us: it learns our address
     * before our first request, on the same ordered connection. */
    *status_p = ucp_tag_send_wireup(ep);
    if (*status_p != UCS_OK) {
        return NULL;
    }
    req = ucp_request_get(ep->worker, param);
    if (req == NULL) {
        *status_p = UCS_ERR_NO_MEMORY;
        return NULL;
    }
    req->flags            |= UCP_REQ_FLAG_IN_CALL;
    req->ep                = ep;
    req->u.rma.id          = ep->worker->rma_next_id++;
    req->u.rma.kind        = kind;
    req->u.rma.remote_addr = remote_addr;
    req->u.rma.rkey_id     = id;
    req->u.rma.pending     = 1;
    req->dt.buffer         = (void*)buffer;
    req->dt.count          = length;
    req->dt.datatype       = ucp_dt_make_contig(1);
    req->dt.length         = length;
    *status_p = ucp_rma_stage(req, param);
    if (*status_p != UCS_OK) {
        ucp_request_put(req);
        return NULL;
    }
    ucp_request_set_callback(req, param, 0);
    return req;
}

ucs_status_ptr_t ucp_rma_op_post(ucp_ep_h ep, uint8_t kind, const void *buffer,
                                 size_t count, uint64_t remote_addr,
                                 ucp_rkey_h rkey,
                                 const ucp_request_param_t *param,
                                 ucp_rma_op_init_cb_t init, void *arg)
{
    ucs_status_ptr_t ret;
    ucs_status_t status;
    ucp_request_t *req;

    ucp_worker_lock(ep->worker);
    req = ucp_rma_op_start(ep, kind, buffer, count, remote_addr, rkey, param,
                           &status);
    if (req == NULL) {
        ret = UCS_STATUS_PTR(status);
    } else {
        init(req, arg);
        req->u.rma.in_queue = 1;
        ucs_list_add_tail(&req->worker->rma_reqs, &req->list);
        ucp_ep_push(req->ep, req);
        ret = ucp_request_finish_call(req, param);
    }
    ucp_worker_unlock(ep->worker);
    return ret;
}

ucs_status_t ucp_rma_nbi_status(ucs_status_ptr_t ret)
{
    if (ret == NULL) {
        return UCS_OK;
    } else if (UCS_PTR_IS_ERR(ret)) {
        return UCS_PTR_STATUS(ret);
    }
    ucp_request_free(ret); /* completion is learned from a flush */
    return UCS_INPROGRESS;
}

/* ---- answers ------------------------------------------------------------- */

static void ucp_rma_flush_check(ucp_ep_h ep)
{
    ucp_request_t *req, *tmp;
    ucs_status_t status;

    ucs_list_for_each_safe(req, tmp, &ep->rma.flushes, list) {
        if (req->u.ctrl.rma_wait > ep->rma.replied) {
            continue;
        }
        ucs_list_del(&req->list);
        status         = ep->rma.status;
        ep->rma.status = UCS_OK;
        ucp_ep_flush_resume(req, status);
    }
}

int ucp_rma_flush_park(ucp_request_t *req)
{
    ucp_ep_h ep = req->ep;

    if (ep->rma.replied >= ep->rma.issued) {
        return 0;
    }
    req->u.ctrl.rma_wait = ep->rma.issued;
    ucs_list_add_tail(&ep->rma.flushes, &req->list);
    ucs_debug("ucp: flush of ep %s waits for %llu rma answer(s)", ep->name,
              (unsigned long long)(ep->rma.issued - ep->rma.replied));
    return 1;
}

static void ucp_rma_op_finish(ucp_request_t *req, ucs_status_t status)
{
    ucp_ep_h ep = req->ep;

    ucs_list_del(&req->list);
    if ((status != UCS_OK) && !(req->flags & UCP_REQ_FLAG_EXTERNAL) &&
        (req->flags & UCP_REQ_FLAG_RELEASED)) {
        /* nothing will look at this request: the next flush reports it */
        ucs_error("ucp: rma operation on ep %s failed: %s", ep->name,
                  ucs_status_string(status));
        if (ep->rma.status == UCS_OK) {
            ep->rma.status = status;
        }
    }
    /* a receive into device memory is copied there by the unstaging, which
     * reads the received length */
    req->u.recv.info.length = req->dt.length;
    ucp_request_complete(req, status);
}

static ucp_request_t *ucp_rma_find(ucp_worker_h worker, const void *data,
                                   size_t length, ucp_rma_rep_hdr_t *rep)
{
    ucp_request_t *req;

    if (length < sizeof(*rep)) {
        ucs_error("ucp: rma answer of %zu bytes: dropped", length);
        return NULL;
    }
    memcpy(rep, data, sizeof(*rep));
    /* answers arrive in the order of the requests: the match is near the
     * head */
    ucs_list_for_each(req, &worker->rma_reqs, list) {
        if (req->u.rma.id == rep->op_id) {
            return req;
        }
    }
    ucs_debug("ucp: answer to unknown rma operation 0x%llx: dropped",
              (unsigned long long)rep->op_id);
    return NULL;
}

/* One answer arrived: count it (unless it is an extra error report). */
static void ucp_rma_answered(ucp_request_t *req, const ucp_rma_rep_hdr_t *rep)
{
    ucp_ep_h ep = req->ep;

    if (rep->status != UCS_OK) {
        ucs_debug("ucp: rma operation 0x%llx refused by the target: %s",
                  (unsigned long long)rep->op_id,
                  ucs_status_string((ucs_status_t)rep->status));
        if (req->status == UCS_INPROGRESS) {
            req->status = (ucs_status_t)rep->status;
        }
    }
    if (rep->flags & UCP_RMA_REP_EXTRA) {
        return;
    }
    ++ep->rma.replied;
    if (--req->u.rma.pending == 0) {
        ucp_rma_op_finish(req, (req->status == UCS_INPROGRESS) ? UCS_OK :
                                                                 req->status);
    }
    ucp_rma_flush_check(ep);
}

static ucs_status_t ucp_rma_am_ack(void *arg, void *data, size_t length,
                                   unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    ucp_rma_rep_hdr_t rep;
    ucp_request_t *req;

    (void)flags;
    req = ucp_rma_find(worker, data, length, &rep);
    if (req != NULL) {
        ucp_rma_answered(req, &rep);
    }
    return UCS_OK;
}

/* Payload of an answer: does it fit the operation, and take it. */
typedef struct {
    uint8_t kind; /* the operation kind the answer is for */
    int     (*fits)(const ucp_request_t *req, const ucp_rma_rep_hdr_t *rep,
                    size_t len);
    void    (*take)(ucp_request_t *req, const ucp_rma_rep_hdr_t *rep,
                    const void *payload, size_t len);
} ucp_rma_payload_ops_t;

/* An answer with a payload (GET_REP, AMO_REP): a payload that does not fit
 * the operation it names is a bogus answer and fails that operation. */
static ucs_status_t ucp_rma_am_payload_rep(void *arg, void *data, size_t length,
                                           const ucp_rma_payload_ops_t *ops)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    ucp_rma_rep_hdr_t rep;
    ucp_request_t *req;
    size_t len;

    req = ucp_rma_find(worker, data, length, &rep);
    if (req == NULL) {
        return UCS_OK;
    }
    len = length - sizeof(rep);
    if ((rep.status == UCS_OK) &&
        ((req->u.rma.kind != ops->kind) || !ops->fits(req, &rep, len))) {
        rep.status = UCS_ERR_MESSAGE_TRUNCATED;
    }
    if (rep.status == UCS_OK) {
        ops->take(req, &rep, (char*)data + sizeof(rep), len);
    }
    ucp_rma_answered(req, &rep);
    return UCS_OK;
}

static int ucp_rma_get_fits(const ucp_request_t *req,
                            const ucp_rma_rep_hdr_t *rep, size_t len)
{
    return (rep->offset <= req->dt.length) &&
           (len <= req->dt.length - rep->offset);
}

static void ucp_rma_get_take(ucp_request_t *req, const ucp_rma_rep_hdr_t *rep,
                             const void *payload, size_t len)
{
    memcpy((char*)req->dt.buffer + rep->offset, payload, len);
}

static int ucp_rma_amo_fits(const ucp_request_t *req,
                            const ucp_rma_rep_hdr_t *rep, size_t len)
{
    (void)req;
    (void)rep;
    return len == sizeof(uint64_t);
}

static void ucp_rma_amo_take(ucp_request_t *req, const ucp_rma_rep_hdr_t *rep,
                             const void *payload, size_t len)
{
    uint64_t old;

    (void)rep;
    (void)len;
    if (req->u.rma.result == NULL) {
        return;
    }
    memcpy(&old, payload, sizeof(old));
    if (req->u.rma.op_size == sizeof(uint32_t)) {
        *(uint32_t*)req->u.rma.result = (uint32_t)old;
    } else {
        *(uint64_t*)req->u.rma.result = old;
    }
}

static ucs_status_t ucp_rma_am_get_rep(void *arg, void *data, size_t length,
                                       unsigned flags)
{
    static const ucp_rma_payload_ops_t ops = {UCP_RMA_KIND_GET, ucp_rma_get_fits,
                                              ucp_rma_get_take};

    (void)flags;
    return ucp_rma_am_payload_rep(arg, data, length, &ops);
}

static ucs_status_t ucp_rma_am_amo_rep(void *arg, void *data, size_t length,
                                       unsigned flags)
{
    static const ucp_rma_payload_ops_t ops = {UCP_RMA_KIND_AMO, ucp_rma_amo_fits,
                                              ucp_rma_amo_take};

    (void)flags;
    return ucp_rma_am_payload_rep(arg, data, length, &ops);
}

void ucp_rma_install_handlers(ucp_worker_iface_t *wiface,
                              const ucp_rma_am_handler_t *handlers,
                              size_t count)
{
    size_t i;

    for (i = 0; i < count; ++i) {
        uct_iface_set_am_handler(wiface->iface, handlers[i].am_id,
                                 handlers[i].cb, wiface, 0);
    }
}

void ucp_rma_set_reply_handlers(ucp_worker_iface_t *wiface)
{
    static const ucp_rma_am_handler_t handlers[] = {
        {UCP_AM_ID_RMA_ACK, ucp_rma_am_ack},
        {UCP_AM_ID_RMA_GET_REP, ucp_rma_am_get_rep},
        {UCP_AM_ID_RMA_AMO_REP, ucp_rma_am_amo_rep}
    };

    ucp_rma_install_handlers(wiface, handlers, ucs_static_array_size(handlers));
}

/* ---- failure ------------------------------------------------------------- */

void ucp_rma_ep_failed(ucp_ep_h ep, ucs_status_t status)
{
    ucp_request_t *req, *tmp;

    ucs_list_for_each_safe(req, tmp, &ep->worker->rma_reqs, list) {
        if (req->ep != ep) {
            continue;
        }
        if (req->u.rma.in_queue) {
            /* completed with the ep's send queue */
            ucs_list_del(&req->list);
            ucs_list_head_init(&req->list);
        } else {
            ucp_rma_op_finish(req, status);
        }
    }
    ep->rma.replied = ep->rma.issued; /* nothing more will come */
    ucs_list_for_each_safe(req, tmp, &ep->rma.flushes, list) {
        ucs_list_del(&req->list);
        ucp_ep_flush_resume(req, status);
    }
}
