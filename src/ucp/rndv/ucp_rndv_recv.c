#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Rendezvous, receiver side: a matched RTS picks the protocol (get when the
 * sender's key imports, put when our buffer exports, else the pipeline),
 * then the handlers of ATP, FRAG and RNDV_DATA finish the request.
 */

#include <ucp/rndv/ucp_rndv_int.h>

#include <string.h>

enum {
    UCP_RNDV_TRY_GET,
    UCP_RNDV_TRY_PUT,
    UCP_RNDV_TRY_PIPE,
    UCP_RNDV_TRY_LAST
};

/* The order in which each UCX_RNDV_SCHEME tries the protocols: a forced one
 * first, then the others as auto would, so nothing fails for lack of it. */
static const int ucp_rndv_try_order[UCP_RNDV_SCHEME_LAST][UCP_RNDV_TRY_LAST] = {
    [UCP_RNDV_SCHEME_AUTO]      = {UCP_RNDV_TRY_GET, UCP_RNDV_TRY_PUT, UCP_RNDV_TRY_PIPE},
    [UCP_RNDV_SCHEME_GET_ZCOPY] = {UCP_RNDV_TRY_GET, UCP_RNDV_TRY_PUT, UCP_RNDV_TRY_PIPE},
    [UCP_RNDV_SCHEME_PUT_ZCOPY] = {UCP_RNDV_TRY_PUT, UCP_RNDV_TRY_GET, UCP_RNDV_TRY_PIPE},
    [UCP_RNDV_SCHEME_PIPELINE]  = {UCP_RNDV_TRY_PIPE, UCP_RNDV_TRY_PIPE, UCP_RNDV_TRY_PIPE},
};

void ucp_rndv_recv_done(ucp_rndv_req_t *rreq, ucs_status_t status)
{
    ucp_rndv_ats_t ats;

    ats.sreq_id = rreq->remote_id;
    ats.proto   = rreq->proto;
    ats.status  = status;
    (void)ucp_rndv_ctrl_send(rreq->worker, rreq->peer_uuid, UCP_AM_ID_RNDV_ATS,
                             &ats, sizeof(ats), NULL, 0);
    ucp_rndv_req_complete(rreq, status);
}

static ucp_ep_h ucp_rndv_recv_ep(ucp_rndv_req_t *rreq)
{
    return ucp_worker_find_ep(rreq->worker, rreq->peer_uuid);
}

/* ---- pipeline ------------------------------------------------------------ */

/* Both buffers in host memory (the low byte of rts_flags is the sender's
 * memory type). */
static int ucp_rndv_recv_host_to_host(const ucp_rndv_req_t *rreq)
{
    return (rreq->mem_type == UCS_MEMORY_TYPE_HOST) &&
           ((rreq->rts_flags & 0xff) == UCS_MEMORY_TYPE_HOST);
}

/*
 * Neither buffer exportable, both on one GPU: device fragments make both
 * processes copy on the GPU's compute engine, and it switches between them
 * (~140 us each on an H200); through host memory the copies run on copy
 * engines, which need no switch (64 KiB: ~34 us instead of ~160 us). Beyond
 * a host fragment, the slower host path loses (docs/rendezvous.md).
 */
static int ucp_rndv_recv_same_gpu(ucp_rndv_req_t *rreq)
{
    return (rreq->peer_gpu != 0) && (rreq->buffer != NULL) &&
           (rreq->mem_type != UCS_MEMORY_TYPE_HOST) &&
           (ucp_rndv_gpu_tag(ucp_rndv_req_gpu(rreq)) == rreq->peer_gpu);
}

static int ucp_rndv_recv_same_gpu_host_stage(ucp_rndv_req_t *rreq)
{
    const ucp_rndv_config_t *cfg = &rreq->worker->context->rndv;

    return cfg->frag_type_auto && (rreq->length >= UCP_RNDV_SAME_GPU_HOST_MIN) &&
           (rreq->length <= cfg->same_gpu_host_max) && ucp_rndv_recv_same_gpu(rreq);
}

/* @a rts: the RTS when it is at hand (the first choice), else NULL (a
 * fallback after a failed read). */
static void ucp_rndv_recv_pipeline(ucp_rndv_req_t *rreq, uint32_t rts_flags,
                                   const ucp_rndv_rts_t *rts, const void *key)
{
    ucp_worker_h worker = rreq->worker;
    ucp_ep_h ep         = ucp_rndv_recv_ep(rreq);
    ucp_rndv_rtr_t rtr;
    ucs_status_t status;

    /* Host data into a device buffer over a host lane: our reads. */
    if ((rts != NULL) && (ucp_rndv_hread_start(rreq, rts, key) == UCS_OK)) {
        return;
    }

    memset(&rtr, 0, sizeof(rtr));
    rtr.sreq_id = rreq->remote_id;
    rtr.rreq_id = rreq->id;
    rtr.length  = rreq->length;
    /* Host data never goes through the GPU: staging it in device fragments
     * makes the GPU copy twice what a data message carries once. */
    if ((worker->context->rndv.frag_type == UCP_RNDV_FRAG_TYPE_CUDA) &&
        !ucp_rndv_recv_host_to_host(rreq) && !ucp_rndv_recv_same_gpu_host_stage(rreq) &&
        (rreq->buffer != NULL) && (ep != NULL) && (ep->rma_ep != NULL) &&
        (rts_flags & UCP_RNDV_RTS_FLAG_CAN_FRAG)) {
        rtr.mode    = UCP_RNDV_RTR_PIPE_CUDA;
        rreq->proto = UCP_PROTO_STAT_RNDV_PIPE_CUDA;
    } else if ((rts_flags & UCP_RNDV_RTS_FLAG_HOST_FRAG) &&
               !ucp_rndv_recv_host_to_host(rreq) && ucp_rndv_hread_possible(rreq, ep)) {
        rtr.mode    = UCP_RNDV_RTR_PIPE_HOST_GET;
        rreq->proto = UCP_PROTO_STAT_RNDV_PIPE_HOST_GET;
    } else {
        rtr.mode    = UCP_RNDV_RTR_PIPE_AM;
        rreq->proto = ucp_rndv_recv_host_to_host(rreq) ?
                      UCP_PROTO_STAT_RNDV_AM : UCP_PROTO_STAT_RNDV_PIPE_HOST;
    }
    rreq->mode = rtr.mode;
    if ((rtr.mode == UCP_RNDV_RTR_PIPE_CUDA) && worker->context->rndv.whole_pieces &&
        ucp_rndv_recv_same_gpu(rreq)) {
        rtr.mode |= UCP_RNDV_RTR_FLAG_SAME_GPU;
    }
    ucs_debug("ucp: rendezvous receive 0x%llx: pipeline, %s%s",
              (unsigned long long)rreq->id,
              (rreq->mode == UCP_RNDV_RTR_PIPE_CUDA)       ? "device fragments"
              : (rreq->mode == UCP_RNDV_RTR_PIPE_HOST_GET) ? "host fragments read"
                                                           : "active messages",
              (rtr.mode & UCP_RNDV_RTR_FLAG_SAME_GPU) ? ", whole pieces (same GPU)" : "");
    status = ucp_rndv_ctrl_send(worker, rreq->peer_uuid, UCP_AM_ID_RNDV_RTR, &rtr,
                                sizeof(rtr), NULL, 0);
    if (status != UCS_OK) {
        ucp_rndv_req_complete(rreq, status);
    }
}

/* ---- get ----------------------------------------------------------------- */

/* A read over the host lane failed: the peer cannot be read after all (its
 * memory went away, or the kernel refused). This ep stops trying; the data
 * comes as messages. */
static void ucp_rndv_recv_host_get_failed(ucp_rndv_req_t *rreq, ucs_status_t status)
{
    static int warned;
    ucp_ep_h ep = ucp_rndv_recv_ep(rreq);

    if ((ep == NULL) || (ep->flags & UCP_EP_FLAG_FAILED)) {
        return; /* the peer is gone, not its memory: the ep's failure tells */
    }
    if (!warned) {
        warned = 1;
        ucs_warn("ucp: reading a peer's host memory failed (%s): host "
                 "rendezvous from that peer goes through active messages",
                 ucs_status_string(status));
    }
    ucp_rndv_host_ep_cleanup(ep);
    ucp_rndv_ep_set_thresh(ep);
}

static void ucp_rndv_recv_get_done(ucp_rndv_op_t *op)
{
    ucp_rndv_req_t *rreq = ucp_rndv_req_find(op->worker, op->id, 0, "get");
    ucs_status_t status  = op->comp.status;

    ucp_rndv_op_free(op);
    if (rreq == NULL) {
        return;
    }
    if (status == UCS_OK) {
        ucp_rndv_recv_done(rreq, UCS_OK);
        return;
    }
    if ((rreq->rts_flags >> 8) & UCP_RNDV_RTS_FLAG_HOST_KEY) {
        ucp_rndv_recv_host_get_failed(rreq, status);
    } else {
        ucp_rndv_warn_import_failed(status);
    }
    ucp_rndv_recv_pipeline(rreq, rreq->rts_flags >> 8, NULL, NULL);
}

void ucp_rndv_recv_read_failed(ucp_rndv_req_t *rreq, ucs_status_t status)
{
    ucp_rndv_recv_host_get_failed(rreq, status);
    ucp_rndv_hread_release(rreq);
    rreq->mode         = 0;
    rreq->done_bytes   = 0;
    rreq->next_offset  = 0;
    rreq->hread_status = UCS_OK;
    ucp_rndv_recv_pipeline(rreq, rreq->rts_flags >> 8, NULL, NULL);
}

static ucs_status_t ucp_rndv_recv_get(ucp_rndv_req_t *rreq,
                                      const ucp_rndv_rts_t *rts, const void *key)
{
    ucp_ep_h ep = ucp_rndv_recv_ep(rreq);
    ucp_rndv_op_t *op;
    ucs_status_t status;

    if (!(rts->flags & UCP_RNDV_RTS_FLAG_KEY) || (rreq->buffer == NULL) ||
        (ep == NULL) || (ep->rma_ep == NULL)) {
        return UCS_ERR_UNSUPPORTED;
    }
    op = ucp_rndv_op_new(rreq->worker, rreq->id, ucp_rndv_recv_get_done);
    if (op == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = ucp_rndv_op_zcopy(op, ep, rreq->buffer, rreq->length,
                               rts->address, key, rts->key_len, 0);
    if (status == UCS_ERR_UNREACHABLE) {
        return status; /* not importable: no warning, another protocol */
    }
    if (status != UCS_OK) {
        /* The key unpacked, but the import failed: the caller falls back
         * (EXCEEDS_LIMIT: no fd to spare, see ucp_rndv_recv_start). */
        ucp_rndv_warn_import_failed(status);
        return (status == UCS_ERR_EXCEEDS_LIMIT) ? status : UCS_ERR_UNREACHABLE;
    }
    rreq->proto = UCP_PROTO_STAT_RNDV_GET;
    return UCS_OK;
}

/* ---- get over the host lane ----------------------------------------------- */

/* Host data into a host buffer: one read by the kernel (or whatever the
 * host lane's transport does), no fragments. */
static ucs_status_t ucp_rndv_recv_host_get(ucp_rndv_req_t *rreq,
                                           const ucp_rndv_rts_t *rts, const void *key)
{
    ucp_rndv_scheme_t scheme = rreq->worker->context->rndv.scheme;
    ucp_ep_h ep              = ucp_rndv_recv_ep(rreq);
    ucp_rndv_op_t *op;
    ucs_status_t status;

    if (!(rts->flags & UCP_RNDV_RTS_FLAG_HOST_KEY) ||
        ((scheme != UCP_RNDV_SCHEME_AUTO) && (scheme != UCP_RNDV_SCHEME_GET_ZCOPY)) ||
        (rreq->buffer == NULL) || (rreq->mem_type != UCS_MEMORY_TYPE_HOST) ||
        (rts->mem_type != UCS_MEMORY_TYPE_HOST) || (ep == NULL) ||
        !ucp_rndv_host_get_fits(ep, rreq->length)) {
        return UCS_ERR_UNSUPPORTED;
    }
    op = ucp_rndv_op_new(rreq->worker, rreq->id, ucp_rndv_recv_get_done);
    if (op == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = ucp_rndv_host_get(op, ep, rreq->buffer, rreq->length, rts->address, key,
                               rts->key_len);
    if (status != UCS_OK) {
        ucs_debug("ucp: rendezvous receive 0x%llx: host get not started: %s",
                  (unsigned long long)rreq->id, ucs_status_string(status));
        return status;
    }
    rreq->proto = UCP_PROTO_STAT_RNDV_HOST_GET;
    return UCS_OK;
}

/* ---- put ------------------------------------------------------------------ */

/* @a same_gpu_key: the sender's key when put is chosen only if it names
 * the same GPU as our buffer (the one-copier rule), else NULL. */
static ucs_status_t ucp_rndv_recv_put(ucp_rndv_req_t *rreq,
                                      const ucp_rndv_rts_t *rts,
                                      const void *same_gpu_key)
{
    ucp_worker_h worker = rreq->worker;
    size_t key_size     = ucp_rndv_key_size(worker);
    ucp_ep_h ep         = ucp_rndv_recv_ep(rreq);
    char key[key_size + 1];
    ucp_rndv_rtr_t rtr;
    ucs_status_t status;
    uint32_t key_len;

    if (!(rts->flags & UCP_RNDV_RTS_FLAG_CAN_PUT) || (rreq->buffer == NULL) ||
        (rreq->mem_type == UCS_MEMORY_TYPE_HOST) || (ep == NULL) ||
        (ep->rma_ep == NULL) || (key_size == 0) ||
        (sizeof(rtr) + key_size > ep->max_bcopy)) {
        return UCS_ERR_UNSUPPORTED;
    }
    status = ucp_rndv_key_pack(worker, rreq->buffer, rreq->length,
                               &rreq->ipc_memh, key, &key_len);
    if (status != UCS_OK) {
        return status;
    }
    if (!ucp_rndv_key_exportable(worker, key, key_len) ||
        ((same_gpu_key != NULL) &&
         !ucp_rndv_key_same_device(ep, same_gpu_key, rts->key_len, key,
                                   key_len))) {
        ucp_rndv_key_release(worker, rreq->ipc_memh);
        rreq->ipc_memh = NULL;
        return UCS_ERR_UNREACHABLE;
    }
    memset(&rtr, 0, sizeof(rtr));
    rtr.sreq_id = rreq->remote_id;
    rtr.rreq_id = rreq->id;
    rtr.address = (uintptr_t)rreq->buffer;
    rtr.length  = rreq->length;
    rtr.mode    = UCP_RNDV_RTR_PUT;
    rtr.key_len = key_len;
    rreq->proto = UCP_PROTO_STAT_RNDV_PUT;
    rreq->mode  = UCP_RNDV_RTR_PUT;
    status = ucp_rndv_ctrl_send(worker, rreq->peer_uuid, UCP_AM_ID_RNDV_RTR, &rtr,
                                sizeof(rtr), key, key_len);
    if (status != UCS_OK) {
        ucp_rndv_req_complete(rreq, status);
    }
    return UCS_OK;
}

/* ---- start ---------------------------------------------------------------- */

/*
 * Two processes issuing copies in turn on one GPU make it switch contexts
 * every turn (~140 us on an H200: an 8 B ping-pong of gets took 148 us
 * against ~10 us with one issuer). So when both buffers are exportable and
 * on the same GPU, the process with the lower worker uuid does every copy:
 * as a receiver it gets, as a sender it puts. Whether the candidate holds
 * (sender's key names our GPU, our buffer exports) is checked by the put.
 */
static int ucp_rndv_recv_one_copier(const ucp_rndv_req_t *rreq,
                                    const ucp_rndv_rts_t *rts)
{
    const ucp_rndv_config_t *cfg = &rreq->worker->context->rndv;

    return cfg->one_copier && (cfg->scheme == UCP_RNDV_SCHEME_AUTO) &&
           (rts->flags & UCP_RNDV_RTS_FLAG_KEY) &&
           (rts->flags & UCP_RNDV_RTS_FLAG_CAN_PUT) &&
           (rts->uuid < rreq->worker->uuid);
}

void ucp_rndv_recv_start(ucp_request_t *req, const void *data, size_t len)
{
    ucp_worker_h worker = req->worker;
    const char *key     = (const char*)data + sizeof(ucp_rndv_rts_t);
    ucp_rndv_req_t *rreq;
    ucp_rndv_rts_t rts;
    ucs_status_t status;
    unsigned i;

    memcpy(&rts, data, sizeof(rts));
    req->u.recv.info.sender_tag = rts.tag;
    req->u.recv.info.length     = rts.length;
    /* A contiguous device buffer is written directly: no bounce. */
    ucp_memtype_unstage_contig(req);
    rreq = ucp_rndv_req_new(req, 0, rts.uuid);
    if (rreq == NULL) {
        ucp_request_complete(req, UCS_ERR_NO_MEMORY);
        return;
    }
    rreq->remote_id  = rts.sreq_id;
    rreq->msg_length = rts.length;
    rreq->length     = rts.length;
    rreq->mem_type   = (req->bounce != NULL) ? UCS_MEMORY_TYPE_HOST : req->mem_type;
    /* Low byte: the sender's memory type; above: the RTS flags. */
    rreq->rts_flags  = (rts.flags << 8) | (rts.mem_type & 0xff);
    rreq->peer_gpu   = rts.gpu;
    if (((req->dt.datatype & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_CONTIG) &&
        (req->dt.generic == NULL)) {
        rreq->buffer = req->dt.buffer;
    }
    if ((rts.length > req->dt.length) || (rts.length == 0)) {
        /* Truncated (nothing is written) or empty: done now. */
        rreq->proto = UCP_PROTO_STAT_RNDV_AM;
        ucp_rndv_recv_done(rreq, (rts.length == 0) ? UCS_OK :
                                 UCS_ERR_MESSAGE_TRUNCATED);
        return;
    }
    if ((rts.flags & (UCP_RNDV_RTS_FLAG_KEY | UCP_RNDV_RTS_FLAG_HOST_KEY)) &&
        (sizeof(rts) + rts.key_len > len)) {
        ucs_error("ucp: RTS with a %u-byte key in a %zu-byte message", rts.key_len,
                  len);
        rts.flags &= ~(UCP_RNDV_RTS_FLAG_KEY | UCP_RNDV_RTS_FLAG_HOST_KEY);
    }
    if (ucp_rndv_recv_host_get(rreq, &rts, key) == UCS_OK) {
        return;
    }
    if (ucp_rndv_recv_one_copier(rreq, &rts) &&
        (ucp_rndv_recv_put(rreq, &rts, key) == UCS_OK)) {
        ucs_debug("ucp: rendezvous receive 0x%llx: same GPU, the sender "
                  "(lower uuid) copies", (unsigned long long)rreq->id);
        return;
    }
    for (i = 0; i < UCP_RNDV_TRY_LAST; ++i) {
        switch (ucp_rndv_try_order[worker->context->rndv.scheme][i]) {
        case UCP_RNDV_TRY_GET:
            status = ucp_rndv_recv_get(rreq, &rts, key);
            break;
        case UCP_RNDV_TRY_PUT:
            status = ucp_rndv_recv_put(rreq, &rts, NULL);
            break;
        default:
            ucp_rndv_recv_pipeline(rreq, rts.flags, &rts, key);
            return;
        }
        if (status == UCS_OK) {
            return;
        }
        if (status == UCS_ERR_EXCEEDS_LIMIT) {
            /* Out of fds: importing the sender's device fragments would
             * fail the same way, so the pipeline sends data messages. */
            rts.flags &= ~UCP_RNDV_RTS_FLAG_CAN_FRAG;
        }
        if ((i == 0) && (worker->context->rndv.scheme != UCP_RNDV_SCHEME_AUTO)) {
            ucs_debug("ucp: UCX_RNDV_SCHEME=%s cannot serve %s -> %s (%s): "
                      "falling back", ucp_rndv_scheme_names[worker->context->rndv.scheme],
                      ucs_memory_type_names[rts.mem_type < UCS_MEMORY_TYPE_LAST ?
                                            rts.mem_type : UCS_MEMORY_TYPE_HOST],
                      ucs_memory_type_names[rreq->mem_type],
                      ucs_status_string(status));
        }
    }
}

/* ---- replies and data ------------------------------------------------------ */

ucs_status_t ucp_rndv_am_atp(void *arg, void *data, size_t length, unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    ucp_rndv_req_t *rreq;
    ucp_rndv_atp_t atp;

    (void)flags;
    if (length < sizeof(atp)) {
        return UCS_OK;
    }
    memcpy(&atp, data, sizeof(atp));
    rreq = ucp_rndv_req_find(worker, atp.rreq_id, 0, "ATP");
    if (rreq != NULL) {
        ucp_rndv_req_complete(rreq, (ucs_status_t)atp.status);
    }
    return UCS_OK;
}

void ucp_rndv_recv_frag_ack(ucp_worker_h worker, uint64_t peer_uuid, uint64_t sreq_id,
                            uint32_t frag_index, ucs_status_t status)
{
    ucp_rndv_frag_ack_t ack;

    ack.sreq_id    = sreq_id;
    ack.frag_index = frag_index;
    ack.status     = status;
    (void)ucp_rndv_ctrl_send(worker, peer_uuid, UCP_AM_ID_RNDV_FRAG_ACK, &ack,
                             sizeof(ack), NULL, 0);
}

static void ucp_rndv_recv_frag_done(ucp_rndv_op_t *op)
{
    ucp_worker_h worker  = op->worker;
    ucp_rndv_req_t *rreq = ucp_rndv_req_find(worker, op->id, 0, "fragment get");
    ucs_status_t status  = op->comp.status;

    /* Acknowledged even when our request is gone: the fragment is the
     * sender's to reuse. */
    ucp_rndv_recv_frag_ack(worker, op->peer_uuid, op->remote_id, op->frag_index, status);
    if (rreq != NULL) {
        rreq->done_bytes += op->length;
        if (status != UCS_OK) {
            ucp_rndv_req_complete(rreq, status);
        } else if (rreq->done_bytes == rreq->length) {
            ucp_rndv_req_complete(rreq, UCS_OK);
        }
    }
    ucp_rndv_op_free(op);
}

ucs_status_t ucp_rndv_am_frag(void *arg, void *data, size_t length, unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    ucp_rndv_key_cache_t *keys;
    ucp_rndv_frag_msg_t msg;
    ucp_rndv_req_t *rreq;
    ucp_rndv_op_t *op;
    ucs_status_t status;
    uct_rkey_t rkey;
    uct_iov_t iov;
    ucp_ep_h ep;

    (void)flags;
    if (length < sizeof(msg)) {
        return UCS_OK;
    }
    memcpy(&msg, data, sizeof(msg));
    rreq = ucp_rndv_req_find(worker, msg.rreq_id, 0, "FRAG");
    if (rreq == NULL) {
        return UCS_OK;
    }
    if ((rreq->mode == UCP_RNDV_RTR_PIPE_HOST_GET) && (rreq->buffer != NULL) &&
        (sizeof(msg) + msg.key_len <= length) && (msg.offset <= rreq->length) &&
        (msg.length <= rreq->length - msg.offset)) {
        ucp_rndv_hread_frag(rreq, &msg, (const char *)data + sizeof(msg));
        return UCS_OK;
    }
    ep = ucp_rndv_recv_ep(rreq);
    if ((sizeof(msg) + msg.key_len > length) || (rreq->buffer == NULL) ||
        (msg.offset > rreq->length) || (msg.length > rreq->length - msg.offset) ||
        (ep == NULL) || (ep->rma_ep == NULL)) {
        ucs_error("ucp: bad fragment %llu+%llu for receive 0x%llx of %zu bytes",
                  (unsigned long long)msg.offset, (unsigned long long)msg.length,
                  (unsigned long long)rreq->id, rreq->length);
        return UCS_OK;
    }
    op = ucp_rndv_op_new(worker, rreq->id, ucp_rndv_recv_frag_done);
    if (op == NULL) {
        ucp_rndv_req_complete(rreq, UCS_ERR_NO_MEMORY);
        return UCS_OK;
    }
    op->remote_id  = msg.sreq_id;
    op->peer_uuid  = rreq->peer_uuid;
    op->frag_index = msg.frag_index;
    op->offset     = msg.offset;
    op->length     = msg.length;
    keys   = ucp_rndv_ep_keys(ep);
    status = (keys == NULL) ? UCS_ERR_NO_MEMORY :
             ucp_rndv_key_cache_get(keys, (const char*)data + sizeof(msg),
                                    msg.key_len, &rkey);
    if (status == UCS_OK) {
        iov.buffer = (char*)rreq->buffer + msg.offset;
        iov.length = msg.length;
        iov.memh   = UCT_MEM_HANDLE_NULL;
        iov.stride = 0;
        iov.count  = 1;
        status = uct_ep_get_zcopy(ep->rma_ep, &iov, 1, msg.address, rkey,
                                  &op->comp);
    }
    if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
        ucs_error("ucp: reading fragment %u of rendezvous 0x%llx failed: %s",
                  msg.frag_index, (unsigned long long)rreq->id,
                  ucs_status_string(status));
        op->comp.status = status;
        status          = UCS_OK;
    }
    (void)ucp_rndv_op_started(op, status);
    return UCS_OK;
}

/* Device destination: segments gather in a host fragment, copied to the
 * device once per fragment (ucp_rndv_stage.c; per segment when no fragment
 * is free). */
static ucs_status_t ucp_rndv_recv_data_device(ucp_rndv_req_t *rreq, size_t offset,
                                              const void *data, size_t len)
{
    ucp_worker_h worker = rreq->worker;
    ucs_status_t status = UCS_OK;

    if (rreq->stage == NULL) {
        rreq->stage = ucp_rndv_frag_get(worker, UCS_MEMORY_TYPE_HOST,
                                        ucp_rndv_req_gpu(rreq), rreq->id);
        if ((rreq->stage == NULL) || (rreq->stage->size < len)) {
            if (rreq->stage != NULL) {
                ucp_rndv_frag_put(worker, rreq->stage);
                rreq->stage = NULL;
            }
            return ucp_memtype_copy(worker, (char*)rreq->buffer + offset, data,
                                    len);
        }
        rreq->stage->used = 0;
        rreq->next_offset = offset;
    }
    if (rreq->stage->used + len > rreq->stage->size) {
        status = ucp_rndv_stage_recv_flush(rreq, 0);
    }
    memcpy((char*)rreq->stage->address + rreq->stage->used, data, len);
    rreq->stage->used += len;
    if ((status == UCS_OK) && (offset + len == rreq->length)) {
        status = ucp_rndv_stage_recv_flush(rreq, 1);
    }
    return status;
}

ucs_status_t ucp_rndv_am_data(void *arg, void *data, size_t length, unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    const char *payload = (const char*)data + sizeof(ucp_rndv_data_hdr_t);
    size_t len          = length - sizeof(ucp_rndv_data_hdr_t);
    ucp_rndv_data_hdr_t hdr;
    ucp_rndv_req_t *rreq;
    ucs_status_t status;

    (void)flags;
    if (length < sizeof(hdr)) {
        return UCS_OK;
    }
    memcpy(&hdr, data, sizeof(hdr));
    rreq = ucp_rndv_req_find(worker, hdr.rreq_id, 0, "RNDV_DATA");
    if (rreq == NULL) {
        return UCS_OK;
    }
    if ((hdr.offset != rreq->done_bytes) || (len > rreq->length - hdr.offset)) {
        ucs_error("ucp: data at %llu+%zu out of order for receive 0x%llx (%zu of "
                  "%zu bytes)", (unsigned long long)hdr.offset, len,
                  (unsigned long long)rreq->id, rreq->done_bytes, rreq->length);
        return UCS_OK;
    }
    if (rreq->mode != UCP_RNDV_RTR_PIPE_AM) {
        /* The sender could not serve the protocol we asked for. */
        rreq->mode  = UCP_RNDV_RTR_PIPE_AM;
        rreq->proto = UCP_PROTO_STAT_RNDV_PIPE_HOST;
    }
    if ((rreq->buffer != NULL) && (rreq->mem_type != UCS_MEMORY_TYPE_HOST)) {
        status = ucp_rndv_recv_data_device(rreq, hdr.offset, payload, len);
    } else {
        status = ucp_dt_unpack(&rreq->req->dt, hdr.offset, payload, len);
    }
    rreq->done_bytes += len;
    if (status != UCS_OK) {
        ucp_rndv_recv_done(rreq, status);
    } else if (rreq->done_bytes == rreq->length) {
        ucp_rndv_recv_done(rreq, UCS_OK);
    }
    return UCS_OK;
}
