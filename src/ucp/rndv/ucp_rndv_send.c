#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Rendezvous, sender side: RTS, then whatever the receiver's reply asks for
 * -- nothing (it reads our buffer and sends ATS), a put into its buffer
 * (RTR put, then ATP), device fragments (RTR pipe_cuda: copy, FRAG, wait for
 * FRAG_ACK) or active messages (RTR pipe_am: RNDV_DATA, then ATS).
 * The user's request completes only when the receiver has the data, so a
 * sync send needs nothing more.
 */

#include <ucp/rndv/ucp_rndv_int.h>

#include <stdlib.h>
#include <string.h>

static void ucp_rndv_send_am_start(ucp_rndv_req_t *rreq);

static int ucp_rndv_send_is_contig(const ucp_request_t *req)
{
    return ((req->dt.datatype & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_CONTIG) &&
           (req->dt.generic == NULL);
}

/* Whether this worker can stage into device fragments for @a ep. */
static int ucp_rndv_send_can_frag(ucp_rndv_req_t *rreq, ucp_ep_h ep)
{
    return (rreq->buffer != NULL) && (ep != NULL) && (ep->rma_ep != NULL) &&
           ucp_rndv_frag_supported(rreq->worker, UCS_MEMORY_TYPE_CUDA,
                                   ucp_rndv_req_gpu(rreq));
}

int ucp_rndv_send_can_host_frag(ucp_rndv_req_t *rreq, ucp_ep_h ep)
{
    return (rreq->buffer != NULL) && (rreq->mem_type != UCS_MEMORY_TYPE_HOST) &&
           (ep != NULL) && (ep->host_rma_ep != NULL) && (ep->rma_ep == NULL) &&
           rreq->worker->context->rndv.staged_get &&
           ucp_rndv_frag_supported(rreq->worker, UCS_MEMORY_TYPE_HOST,
                                   ucp_rndv_req_gpu(rreq));
}

/* The fragments of a pipeline: device ones read by cuda_ipc, or host ones
 * read over the host lane. */
static ucs_memory_type_t ucp_rndv_send_frag_type(const ucp_rndv_req_t *rreq)
{
    return (rreq->mode == UCP_RNDV_RTR_PIPE_CUDA) ? UCS_MEMORY_TYPE_CUDA
                                                  : UCS_MEMORY_TYPE_HOST;
}

/* The key of a contiguous device buffer and whether it exports, in the
 * worker's scratch: the threshold asks first (ucp_rndv_send_wanted), then
 * ucp_rndv_send_start takes the registration for the same buffer in the
 * same call, so the key is packed once per message. */
static ucp_rndv_tx_key_t *ucp_rndv_send_key(ucp_worker_h worker, void *buffer,
                                           size_t length)
{
    ucp_rndv_tx_key_t *tx = &worker->rndv->tx_key;

    if (tx->memh != NULL) {
        if ((tx->buffer == buffer) && (tx->length == length)) {
            return tx;
        }
        ucp_rndv_send_key_drop(worker);
    }
    if ((tx->bytes == NULL) ||
        (ucp_rndv_key_pack(worker, buffer, length, &tx->memh, tx->bytes,
                           &tx->len) != UCS_OK)) {
        return NULL;
    }
    tx->buffer     = buffer;
    tx->length     = length;
    tx->exportable = ucp_rndv_key_exportable(worker, tx->bytes, tx->len);
    return tx;
}

void ucp_rndv_send_key_drop(ucp_worker_h worker)
{
    ucp_rndv_tx_key_t *tx = &worker->rndv->tx_key;

    if (tx->memh != NULL) {
        ucp_rndv_key_release(worker, tx->memh);
        tx->memh = NULL;
    }
}

int ucp_rndv_send_wanted(ucp_ep_h ep, const ucp_request_t *req,
                         ucs_memory_type_t mem_type)
{
    size_t length = req->dt.length;
    size_t t_export, t_other, thresh;
    ucp_rndv_tx_key_t *tx;

    if (mem_type == UCS_MEMORY_TYPE_HOST) {
        return (length >= ucp_rndv_thresh(ep, UCP_RNDV_KIND_HOST)) &&
               ((length <= ep->rndv_host_get_max) ||
                (length >= ep->rndv_host_after_get));
    }
    t_export = ucp_rndv_thresh(ep, UCP_RNDV_KIND_DEVICE_EXPORT);
    t_other  = ucp_rndv_thresh(ep, UCP_RNDV_KIND_DEVICE);
    if ((length >= t_export) == (length >= t_other)) {
        return length >= t_other;
    }
    /* Between the two thresholds the answer depends on whether the buffer
     * exports; only a contiguous one towards a cuda_ipc lane can. The key
     * stays in the worker's scratch for ucp_rndv_send_start(). */
    if ((length == 0) || (ep->rma_ep == NULL) || !ucp_rndv_send_is_contig(req)) {
        return length >= t_other;
    }
    tx     = ucp_rndv_send_key(ep->worker, req->dt.buffer, length);
    thresh = ((tx != NULL) && tx->exportable) ? t_export : t_other;
    if (length >= thresh) {
        return 1;
    }
    /* Not taken: a key left in the scratch would be found again by a later
     * buffer at the same address. */
    ucp_rndv_send_key_drop(ep->worker);
    return 0;
}

/* An active message's announcement: the RTS, its key, then the receiver's
 * ep id and the user header for the handler. A header that does not fit
 * beside the key goes without the key (the receiver stages instead). */
static ucs_status_t ucp_rndv_send_am_rts(ucp_ep_h ep, const ucp_request_t *req,
                                         ucp_rndv_rts_t *rts, const void *key)
{
    size_t hdr_len = req->u.send.prefix_len;
    uint64_t dest_ep = req->u.send.dest_ep;
    size_t len;
    char *data;
    ucs_status_t status;

    if (sizeof(*rts) + rts->key_len + sizeof(dest_ep) + hdr_len > ep->max_bcopy) {
        rts->flags  &= ~(UCP_RNDV_RTS_FLAG_KEY | UCP_RNDV_RTS_FLAG_HOST_KEY);
        rts->key_len = 0;
        if (sizeof(*rts) + sizeof(dest_ep) + hdr_len > ep->max_bcopy) {
            ucs_error("ucp: active message header of %zu bytes does not fit a "
                      "%zu-byte segment of ep %s (max_am_header)", hdr_len,
                      ep->max_bcopy, ep->name);
            return UCS_ERR_EXCEEDS_LIMIT;
        }
    }
    len  = rts->key_len + sizeof(dest_ep) + hdr_len;
    data = malloc(len);
    if (data == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    if (rts->key_len > 0) {
        memcpy(data, key, rts->key_len);
    }
    memcpy(data + rts->key_len, &dest_ep, sizeof(dest_ep));
    if (hdr_len > 0) {
        memcpy(data + rts->key_len + sizeof(dest_ep), req->u.send.prefix, hdr_len);
    }
    status = ucp_ep_send_ctrl(ep, UCP_AM_ID_AM_RTS, rts, sizeof(*rts), data, len);
    free(data);
    return status;
}

ucs_status_t ucp_rndv_send_start(ucp_request_t *req, ucp_ep_h ep,
                                 ucs_memory_type_t mem_type, int sync)
{
    ucp_worker_h worker = req->worker;
    size_t host_key_len = ucp_rndv_host_key_size(ep);
    uint8_t host_key[host_key_len + 1];
    const void *key     = NULL;
    ucp_rndv_tx_key_t *tx;
    ucp_rndv_req_t *rreq;
    ucp_rndv_rts_t rts;
    ucs_status_t status;

    status = ucp_tag_send_wireup(ep);
    if (status != UCS_OK) {
        ucp_rndv_send_key_drop(worker);
        return status;
    }
    rreq = ucp_rndv_req_new(req, 1, ep->remote_uuid);
    if (rreq == NULL) {
        ucp_rndv_send_key_drop(worker);
        return UCS_ERR_NO_MEMORY;
    }
    rreq->length     = req->dt.length;
    rreq->msg_length = req->dt.length;
    rreq->mem_type   = mem_type;
    rreq->proto      = UCP_PROTO_STAT_LAST;
    if (ucp_rndv_send_is_contig(req)) {
        rreq->buffer = req->dt.buffer;
    }

    memset(&rts, 0, sizeof(rts));
    rts.tag      = req->u.send.tag;
    rts.uuid     = worker->uuid;
    rts.sreq_id  = rreq->id;
    rts.length   = rreq->length;
    rts.address  = (uintptr_t)rreq->buffer;
    rts.mem_type = mem_type;
    rts.flags    = sync ? UCP_RNDV_RTS_FLAG_SYNC : 0;
    if ((rreq->buffer != NULL) && (ep->rma_ep != NULL)) {
        rts.flags |= UCP_RNDV_RTS_FLAG_CAN_PUT;
        /* Host memory has no cuda_ipc export, and a key that does not
         * export would only make the receiver try in vain. */
        tx = (mem_type == UCS_MEMORY_TYPE_HOST) ? NULL :
             ucp_rndv_send_key(worker, rreq->buffer, rreq->length);
        if ((tx != NULL) && tx->exportable &&
            (sizeof(rts) + tx->len <= ep->max_bcopy)) {
            rreq->ipc_memh = tx->memh;
            tx->memh       = NULL;
            key            = tx->bytes;
            rts.flags     |= UCP_RNDV_RTS_FLAG_KEY;
            rts.key_len    = tx->len;
        }
    }
    ucp_rndv_send_key_drop(worker);
    /* Host memory: the receiver may read it over the host lane. */
    if ((mem_type == UCS_MEMORY_TYPE_HOST) && (rreq->buffer != NULL) &&
        (ep->host_rma_ep != NULL) && (sizeof(rts) + host_key_len <= ep->max_bcopy) &&
        ucp_rndv_host_get_fits(ep, rreq->length) &&
        (ucp_rndv_host_key_pack(ep, rreq->buffer, rreq->length, &rreq->host_md,
                                &rreq->host_memh, host_key) == UCS_OK)) {
        key          = host_key;
        rts.flags   |= UCP_RNDV_RTS_FLAG_HOST_KEY;
        rts.key_len  = (uint32_t)host_key_len;
    }
    if ((mem_type != UCS_MEMORY_TYPE_HOST) && (rreq->buffer != NULL) &&
        !(rts.flags & UCP_RNDV_RTS_FLAG_KEY)) {
        /* Lets a receiver on the same GPU choose host staging. */
        rts.gpu = ucp_rndv_gpu_tag(ucp_rndv_req_gpu(rreq));
    }
    if (ucp_rndv_send_can_frag(rreq, ep)) {
        rts.flags |= UCP_RNDV_RTS_FLAG_CAN_FRAG;
    }
    if (ucp_rndv_send_can_host_frag(rreq, ep)) {
        rts.flags |= UCP_RNDV_RTS_FLAG_HOST_FRAG;
    }
    rreq->rts_flags = rts.flags;
    ucs_debug("ucp: rendezvous send 0x%llx: %zu bytes of %s memory, tag 0x%llx, "
              "flags 0x%x", (unsigned long long)rreq->id, rreq->length,
              ucs_memory_type_names[mem_type], (unsigned long long)rts.tag,
              rts.flags);
    if (req->u.send.kind != UCP_SEND_KIND_TAG) {
        status = ucp_rndv_send_am_rts(ep, req, &rts, key);
    } else {
        status = ucp_ep_send_ctrl(ep, UCP_AM_ID_RNDV_RTS, &rts, sizeof(rts), key,
                                  rts.key_len);
    }
    if (status != UCS_OK) {
        ucp_rndv_req_complete(rreq, status);
    }
    return UCS_OK;
}

/* Tell the receiver that no (more) data comes, so that it does not wait. */
static void ucp_rndv_send_abort(ucp_rndv_req_t *rreq, ucs_status_t status)
{
    ucp_rndv_atp_t atp;

    if (rreq->remote_id != 0) {
        atp.rreq_id  = rreq->remote_id;
        atp.status   = status;
        atp.reserved = 0;
        (void)ucp_rndv_ctrl_send(rreq->worker, rreq->peer_uuid, UCP_AM_ID_RNDV_ATP,
                                 &atp, sizeof(atp), NULL, 0);
    }
    ucp_rndv_req_complete(rreq, status);
}

/* ---- put ------------------------------------------------------------------ */

static void ucp_rndv_send_put_done(ucp_rndv_op_t *op)
{
    ucp_rndv_req_t *rreq = ucp_rndv_req_find(op->worker, op->id, 1, "put");
    ucs_status_t status  = op->comp.status;
    ucp_rndv_atp_t atp;

    ucp_rndv_op_free(op);
    if (rreq == NULL) {
        return;
    }
    if (status != UCS_OK) {
        ucp_rndv_send_abort(rreq, status);
        return;
    }
    atp.rreq_id  = rreq->remote_id;
    atp.status   = UCS_OK;
    atp.reserved = 0;
    status = ucp_rndv_ctrl_send(rreq->worker, rreq->peer_uuid, UCP_AM_ID_RNDV_ATP,
                                &atp, sizeof(atp), NULL, 0);
    ucp_rndv_req_complete(rreq, status);
}

static ucs_status_t ucp_rndv_send_put(ucp_rndv_req_t *rreq,
                                      const ucp_rndv_rtr_t *rtr, const void *key)
{
    ucp_ep_h ep = ucp_worker_find_ep(rreq->worker, rreq->peer_uuid);
    ucp_rndv_op_t *op;

    if ((ep == NULL) || (ep->rma_ep == NULL) || (rreq->buffer == NULL)) {
        return UCS_ERR_UNREACHABLE;
    }
    op = ucp_rndv_op_new(rreq->worker, rreq->id, ucp_rndv_send_put_done);
    if (op == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    rreq->proto = UCP_PROTO_STAT_RNDV_PUT;
    return ucp_rndv_op_zcopy(op, ep, rreq->buffer, rreq->length,
                             rtr->address, key, rtr->key_len, 1);
}

/* ---- pipeline through device fragments ------------------------------------ */

static void ucp_rndv_send_frag_copied(ucp_rndv_op_t *op)
{
    ucp_worker_h worker   = op->worker;
    ucp_rndv_req_t *rreq  = ucp_rndv_req_find(worker, op->id, 1, "fragment copy");
    ucp_rndv_frag_t *frag = op->frag;
    ucs_status_t status   = op->comp.status;
    size_t offset         = op->offset;
    ucp_rndv_frag_msg_t msg;
    const void *key;
    size_t key_len;
    ucp_ep_h ep;

    ucp_rndv_op_free(op);
    if (rreq == NULL) {
        ucp_rndv_frag_put(worker, frag);
        return;
    }
    if ((status == UCS_OK) && (frag->mem_type == UCS_MEMORY_TYPE_HOST)) {
        ep     = ucp_worker_find_ep(worker, rreq->peer_uuid);
        key    = (ep == NULL) ? NULL : ucp_rndv_frag_host_key(frag, ep, &key_len);
        status = (key == NULL) ? UCS_ERR_UNREACHABLE : UCS_OK;
    } else {
        key = ucp_rndv_frag_key(frag, &key_len);
    }
    if (status == UCS_OK) {
        msg.rreq_id    = rreq->remote_id;
        msg.sreq_id    = rreq->id;
        msg.offset     = offset;
        msg.length     = frag->used;
        msg.address    = (uintptr_t)frag->address;
        msg.frag_index = frag->index;
        msg.key_len    = (uint32_t)key_len;
        status = ucp_rndv_ctrl_send(rreq->worker, rreq->peer_uuid,
                                    UCP_AM_ID_RNDV_FRAG, &msg, sizeof(msg), key,
                                    key_len);
    }
    if (status != UCS_OK) {
        ucp_rndv_frag_put(rreq->worker, frag);
        ucp_rndv_send_abort(rreq, status);
    }
}

/* Bytes of the message per fragment: a message that fills depth
 * fragments uses them whole; a smaller one is cut into depth pieces (at
 * least UCP_RNDV_PIECE_MIN, 64 KiB-aligned) so that its copies still
 * overlap the receiver's reads, without many small copies, which cost as
 * much to issue as large ones and make a GPU shared by both processes
 * switch between them. */
size_t ucp_rndv_send_piece_size(size_t length, size_t frag_size, unsigned depth)
{
    size_t piece = (length + depth - 1) / depth;

    piece = (piece + UCP_RNDV_PIECE_ALIGN - 1) & ~(UCP_RNDV_PIECE_ALIGN - 1);
    if (piece < UCP_RNDV_PIECE_MIN) {
        piece = UCP_RNDV_PIECE_MIN;
    }
    return (piece < frag_size) ? piece : frag_size;
}

size_t ucp_rndv_ramp_piece_size(size_t offset, size_t length, size_t frag_size,
                                size_t ramp)
{
    size_t left = length - offset;
    size_t piece, tail;

    if ((ramp == 0) || (ramp >= frag_size)) {
        return ucs_min(left, frag_size);
    }
    /* Offsets 0, r, 2r, 4r, ...: each piece as large as all before it. */
    piece = ucs_max(offset, ramp);
    /* Half of what is left, in whole ramps: the pieces shrink towards the
     * end as they grew at the start. */
    tail  = ucs_max(((left / 2 + ramp - 1) / ramp) * ramp, ramp);
    piece = ucs_min(piece, tail);
    piece = ucs_min(piece, frag_size);
    /* A remainder below a ramp joins the last piece rather than costing a
     * copy and a read of its own; otherwise at least a ramp is left after
     * this piece. */
    return ((left < piece + ramp) && (left <= frag_size)) ? left : piece;
}

/* Keep up to UCX_RNDV_PIPELINE_DEPTH fragments of the message in flight. */
static void ucp_rndv_send_frag_fill(ucp_rndv_req_t *rreq)
{
    ucp_worker_h worker    = rreq->worker;
    ucs_memory_type_t type = ucp_rndv_send_frag_type(rreq);
    ucp_rndv_frag_t *frag;
    ucp_rndv_op_t *op;
    ucs_status_t status;
    size_t len, piece;

    while ((rreq->inflight < worker->context->rndv.depth) &&
           (rreq->next_offset < rreq->length)) {
        frag = ucp_rndv_frag_get(worker, type, ucp_rndv_req_gpu(rreq), rreq->id);
        if (frag == NULL) {
            if ((rreq->inflight == 0) && (rreq->next_offset == 0) &&
                !ucp_rndv_frag_supported(worker, type, ucp_rndv_req_gpu(rreq))) {
                ucs_debug("ucp: rendezvous 0x%llx: no %s fragments, data "
                          "as active messages",
                          (unsigned long long)rreq->id, ucs_memory_type_names[type]);
                rreq->proto = UCP_PROTO_STAT_LAST;
                ucp_rndv_send_am_start(rreq);
            } else if (rreq->inflight == 0) {
                ucp_rndv_frag_wait(worker, rreq);
            }
            return;
        }
        op = ucp_rndv_op_new(worker, rreq->id, ucp_rndv_send_frag_copied);
        if (op == NULL) {
            ucp_rndv_frag_put(worker, frag);
            ucp_rndv_send_abort(rreq, UCS_ERR_NO_MEMORY);
            return;
        }
        /* Host fragments are read at the network's pace: whole ones keep
         * the reads few and large, but for the short ends of the ramp. */
        piece =
            (type == UCS_MEMORY_TYPE_HOST)
                ? ucp_rndv_ramp_piece_size(rreq->next_offset, rreq->length, frag->size,
                                           worker->context->rndv.host_get_ramp)
                : frag->size;
        if (!rreq->whole_pieces && (type != UCS_MEMORY_TYPE_HOST) &&
            !(worker->context->rndv.split_alone &&
              ucp_rndv_frag_shared(worker, frag, rreq->inflight))) {
            piece = ucp_rndv_send_piece_size(rreq->length, frag->size,
                                             worker->context->rndv.depth);
        }
        len        = rreq->length - rreq->next_offset;
        len        = (len < piece) ? len : piece;
        frag->used = len;
        op->frag   = frag;
        op->offset = rreq->next_offset;
        status = ucp_memtype_copy_start(worker, frag->address,
                                        (char*)rreq->buffer + rreq->next_offset,
                                        len, &op->comp);
        status = ucp_rndv_op_started(op, status);
        if (status != UCS_OK) {
            ucp_rndv_frag_put(worker, frag);
            ucp_rndv_send_abort(rreq, status);
            return;
        }
        rreq->next_offset += len;
        ++rreq->inflight;
        ++worker->rndv->pipe_pieces;
    }
}

ucs_status_t ucp_rndv_am_frag_ack(void *arg, void *data, size_t length,
                                  unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    ucp_rndv_frag_ack_t ack;
    ucp_rndv_frag_t *frag;
    ucp_rndv_req_t *rreq;

    (void)flags;
    if (length < sizeof(ack)) {
        return UCS_OK;
    }
    memcpy(&ack, data, sizeof(ack));
    rreq = ucp_rndv_req_find(worker, ack.sreq_id, 1, "FRAG_ACK");
    if (rreq == NULL) {
        return UCS_OK;
    }
    frag = ucp_rndv_frag_find(worker, ucp_rndv_send_frag_type(rreq), ack.frag_index,
                              rreq->id);
    if (frag == NULL) {
        ucs_error("ucp: FRAG_ACK for fragment %u not held by request 0x%llx",
                  ack.frag_index, (unsigned long long)rreq->id);
        return UCS_OK;
    }
    rreq->done_bytes += frag->used;
    --rreq->inflight;
    ucp_rndv_frag_put(worker, frag);
    if (ack.status != UCS_OK) {
        ucp_rndv_req_complete(rreq, (ucs_status_t)ack.status);
    } else if (rreq->done_bytes == rreq->length) {
        ucp_rndv_req_complete(rreq, UCS_OK);
    } else {
        ucp_rndv_send_frag_fill(rreq);
    }
    return UCS_OK;
}

/* ---- data as active messages ---------------------------------------------- */

typedef struct {
    ucp_rndv_req_t *rreq;
    size_t         length;
} ucp_rndv_data_ctx_t;

static size_t ucp_rndv_data_pack(void *dest, void *arg)
{
    ucp_rndv_data_ctx_t *ctx = arg;
    ucp_rndv_req_t *rreq     = ctx->rreq;
    ucp_rndv_data_hdr_t hdr;
    char *p                  = (char*)dest + sizeof(hdr);

    hdr.rreq_id = rreq->remote_id;
    hdr.offset  = rreq->next_offset;
    memcpy(dest, &hdr, sizeof(hdr));
    if (rreq->stage != NULL) {
        memcpy(p, (char*)rreq->stage->address + rreq->done_bytes, ctx->length);
    } else {
        ucp_dt_pack(&rreq->req->dt, rreq->next_offset, p, ctx->length);
    }
    return sizeof(hdr) + ctx->length;
}

static ucs_status_t ucp_rndv_data_progress(ucp_request_t *ireq)
{
    ucp_rndv_req_t *rreq = ucp_rndv_req_find(ireq->worker, ireq->u.ctrl.ack_id,
                                             1, "data");
    ucp_rndv_data_ctx_t ctx;
    ucs_status_t status;
    ssize_t ret;
    size_t max;

    if (rreq == NULL) {
        ucp_request_complete(ireq, UCS_OK);
        return UCS_OK;
    }
    max = ireq->ep->max_bcopy - sizeof(ucp_rndv_data_hdr_t);
    while (rreq->next_offset < rreq->length) {
        if ((rreq->stage != NULL) && (rreq->done_bytes == rreq->stage->used)) {
            /* Device data: the next host fragment's worth (ucp_rndv_stage.c);
             * done_bytes is the position inside it. */
            status = ucp_rndv_stage_send_next(rreq);
            if (status != UCS_OK) {
                ucp_request_complete(ireq, UCS_OK);
                ucp_rndv_send_abort(rreq, status);
                return UCS_OK;
            }
        }
        ctx.rreq   = rreq;
        ctx.length = rreq->length - rreq->next_offset;
        if (rreq->stage != NULL) {
            ctx.length = rreq->stage->used - rreq->done_bytes;
        }
        ctx.length = (ctx.length < max) ? ctx.length : max;
        ret = uct_ep_am_bcopy(ireq->ep->uct_ep, UCP_AM_ID_RNDV_DATA,
                              ucp_rndv_data_pack, &ctx, 0);
        if (ret < 0) {
            return (ucs_status_t)ret;
        }
        rreq->next_offset += ctx.length;
        rreq->done_bytes  += ctx.length;
    }
    /* All sent; the receiver's ATS completes the request. */
    ucp_rndv_stage_release(rreq);
    ucp_request_complete(ireq, UCS_OK);
    return UCS_OK;
}

static void ucp_rndv_send_am_start(ucp_rndv_req_t *rreq)
{
    ucp_ep_h ep = ucp_worker_find_ep(rreq->worker, rreq->peer_uuid);
    ucp_request_t *ireq;

    rreq->mode = UCP_RNDV_RTR_PIPE_AM;
    if (ep == NULL) {
        ucp_rndv_req_complete(rreq, UCS_ERR_UNREACHABLE);
        return;
    }
    if ((rreq->mem_type != UCS_MEMORY_TYPE_HOST) && (rreq->stage == NULL)) {
        rreq->stage = ucp_rndv_frag_get(rreq->worker, UCS_MEMORY_TYPE_HOST,
                                        ucp_rndv_req_gpu(rreq), rreq->id);
        if (rreq->stage == NULL) {
            ucp_rndv_frag_wait(rreq->worker, rreq);
            return;
        }
        /* Forces a copy before the first segment. */
        rreq->stage->used = 0;
        rreq->done_bytes  = 0;
        rreq->proto       = UCP_PROTO_STAT_RNDV_PIPE_HOST;
    }
    ireq = ucp_request_get(rreq->worker, NULL);
    if (ireq == NULL) {
        ucp_rndv_send_abort(rreq, UCS_ERR_NO_MEMORY);
        return;
    }
    ireq->flags         |= UCP_REQ_FLAG_INTERNAL;
    ireq->u.ctrl.ack_id  = rreq->id;
    ireq->progress       = ucp_rndv_data_progress;
    ucp_ep_push(ep, ireq);
}

void ucp_rndv_send_resume(ucp_rndv_req_t *rreq)
{
    if ((rreq->mode == UCP_RNDV_RTR_PIPE_CUDA) ||
        (rreq->mode == UCP_RNDV_RTR_PIPE_HOST_GET)) {
        ucp_rndv_send_frag_fill(rreq);
    } else {
        ucp_rndv_send_am_start(rreq);
    }
}

/* ---- replies -------------------------------------------------------------- */

ucs_status_t ucp_rndv_am_rtr(void *arg, void *data, size_t length, unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    ucp_rndv_req_t *rreq;
    ucp_rndv_rtr_t rtr;
    ucs_status_t status;
    ucp_ep_h ep;

    (void)flags;
    if (length < sizeof(rtr)) {
        return UCS_OK;
    }
    memcpy(&rtr, data, sizeof(rtr));
    if (sizeof(rtr) + rtr.key_len > length) {
        ucs_error("ucp: RTR with a %u-byte key in a %zu-byte message dropped",
                  rtr.key_len, length);
        return UCS_OK;
    }
    rreq = ucp_rndv_req_find(worker, rtr.sreq_id, 1, "RTR");
    if ((rreq == NULL) || (rreq->mode != 0)) {
        return UCS_OK;
    }
    rreq->remote_id = rtr.rreq_id;
    if (rtr.length < rreq->length) {
        rreq->length = rtr.length;
    }
    if ((rtr.mode & UCP_RNDV_RTR_MODE_MASK) == UCP_RNDV_RTR_PUT) {
        rreq->mode = UCP_RNDV_RTR_PUT;
        status = ucp_rndv_send_put(rreq, &rtr, (const char*)data + sizeof(rtr));
        if (status == UCS_OK) {
            return UCS_OK;
        }
        ucp_rndv_warn_import_failed(status);
        /* The receiver handles data messages in any mode. */
    } else if ((rtr.mode & UCP_RNDV_RTR_MODE_MASK) == UCP_RNDV_RTR_PIPE_CUDA) {
        ep = ucp_worker_find_ep(worker, rreq->peer_uuid);
        if (ucp_rndv_send_can_frag(rreq, ep)) {
            rreq->mode         = UCP_RNDV_RTR_PIPE_CUDA;
            rreq->proto        = UCP_PROTO_STAT_RNDV_PIPE_CUDA;
            rreq->whole_pieces = !!(rtr.mode & UCP_RNDV_RTR_FLAG_SAME_GPU);
            ucp_rndv_send_frag_fill(rreq);
            return UCS_OK;
        }
        ucs_debug("ucp: rendezvous 0x%llx: no device fragments here, data as "
                  "active messages", (unsigned long long)rreq->id);
    } else if ((rtr.mode & UCP_RNDV_RTR_MODE_MASK) == UCP_RNDV_RTR_PIPE_HOST_GET) {
        ep = ucp_worker_find_ep(worker, rreq->peer_uuid);
        if (ucp_rndv_send_can_host_frag(rreq, ep)) {
            rreq->mode  = UCP_RNDV_RTR_PIPE_HOST_GET;
            rreq->proto = UCP_PROTO_STAT_RNDV_PIPE_HOST_GET;
            ucp_rndv_send_frag_fill(rreq);
            return UCS_OK;
        }
        ucs_debug("ucp: rendezvous 0x%llx: no host fragments for reads here, "
                  "data as active messages",
                  (unsigned long long)rreq->id);
    }
    ucp_rndv_send_am_start(rreq);
    return UCS_OK;
}

ucs_status_t ucp_rndv_am_ats(void *arg, void *data, size_t length, unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    ucp_rndv_req_t *rreq;
    ucp_rndv_ats_t ats;

    (void)flags;
    if (length < sizeof(ats)) {
        return UCS_OK;
    }
    memcpy(&ats, data, sizeof(ats));
    rreq = ucp_rndv_req_find(worker, ats.sreq_id, 1, "ATS");
    if (rreq == NULL) {
        return UCS_OK;
    }
    if ((rreq->proto == UCP_PROTO_STAT_LAST) && (ats.proto < UCP_PROTO_STAT_LAST)) {
        rreq->proto = (ucp_proto_stat_t)ats.proto;
    }
    /* A truncated receive is the receiver's error, not ours. */
    ucp_rndv_req_complete(rreq, (ats.status == UCS_ERR_MESSAGE_TRUNCATED) ?
                                UCS_OK : (ucs_status_t)ats.status);
    return UCS_OK;
}
