#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * Device data between peers that reach each other over a host lane only
 * (tcp between hosts): the receiver reads host memory of the sender, as it
 * reads host buffers, instead of taking data messages. Data messages cost
 * each side one CPU copy more than the kernel's (into the transport's
 * segments, out of them into a fragment); a read goes from the sender's
 * fragment straight into the socket and from the socket straight into the
 * receiver's memory, split over the rails like any host read.
 *
 * Two ways in:
 * - the sender's buffer is on a device (RTR pipe_host_get): it copies
 *   pieces into host fragments and names each in a FRAG message; we read
 *   the piece and acknowledge it, so the sender refills the fragment;
 * - the sender's buffer is host memory and ours is on a device: the RTS
 *   names the buffer, and we read it piece by piece ourselves.
 * Into a device buffer every piece lands in a host fragment of ours first,
 * and its copy to the device runs while the next pieces are read. A piece
 * that finds no fragment free waits (the worker's fragment waiters).
 */

#include <ucp/rndv/ucp_rndv_int.h>

#include <stdlib.h>
#include <string.h>

/* A FRAG message waiting for one of our host fragments. */
typedef struct ucp_rndv_hread_pending {
    ucs_list_link_t list;
    ucp_rndv_frag_msg_t msg;
    uint8_t key[];
} ucp_rndv_hread_pending_t;

static void ucp_rndv_hread_fill(ucp_rndv_req_t *rreq);

int ucp_rndv_hread_possible(ucp_rndv_req_t *rreq, ucp_ep_h ep)
{
    return rreq->worker->context->rndv.staged_get && (rreq->buffer != NULL) &&
           (ep != NULL) && (ep->host_rma_ep != NULL) && (ep->rma_ep == NULL);
}

/* Whether the read is ours to drive (the sender's host buffer), rather than
 * the sender's FRAG messages. */
static int ucp_rndv_hread_self(const ucp_rndv_req_t *rreq)
{
    return rreq->hread_key != NULL;
}

/* The sender's fragment back, unless the piece was of its own buffer
 * (@a sreq_id 0). */
static void ucp_rndv_hread_ack(ucp_rndv_req_t *rreq, uint64_t sreq_id,
                               uint32_t frag_index, ucs_status_t status)
{
    if (sreq_id != 0) {
        ucp_rndv_recv_frag_ack(rreq->worker, rreq->peer_uuid, sreq_id, frag_index,
                               status);
    }
}

/* A piece of @a len bytes is in place (or failed): finish the request when
 * it was the last one out. */
static void ucp_rndv_hread_piece_done(ucp_rndv_req_t *rreq, size_t len,
                                      ucs_status_t status)
{
    --rreq->inflight;
    rreq->done_bytes += len;
    if ((status != UCS_OK) && (rreq->hread_status == UCS_OK)) {
        ucs_debug("ucp: rendezvous receive 0x%llx: reading a piece failed: %s",
                  (unsigned long long)rreq->id, ucs_status_string(status));
        rreq->hread_status = status;
    }
    if (rreq->inflight > 0) {
        if (ucp_rndv_hread_self(rreq) && (rreq->hread_status == UCS_OK)) {
            ucp_rndv_hread_fill(rreq);
        }
        return;
    }
    if (rreq->hread_status != UCS_OK) {
        if (ucp_rndv_hread_self(rreq)) {
            /* The sender waits for ATS with its buffer intact: it can send
             * the whole message again as data messages. */
            ucp_rndv_recv_read_failed(rreq, rreq->hread_status);
        } else {
            /* The sender had the error in the acknowledgement. */
            ucp_rndv_req_complete(rreq, rreq->hread_status);
        }
    } else if (rreq->done_bytes == rreq->length) {
        if (ucp_rndv_hread_self(rreq)) {
            ucp_rndv_recv_done(rreq, UCS_OK);
        } else {
            ucp_rndv_req_complete(rreq, UCS_OK);
        }
    } else if (ucp_rndv_hread_self(rreq)) {
        ucp_rndv_hread_fill(rreq);
    }
}

static void ucp_rndv_hread_copied(ucp_rndv_op_t *op)
{
    ucp_worker_h worker  = op->worker;
    ucp_rndv_req_t *rreq = ucp_rndv_req_find(worker, op->id, 0, "staged read copy");
    ucs_status_t status  = op->comp.status;
    size_t len           = op->length;

    ucp_rndv_frag_put(worker, op->frag);
    ucp_rndv_op_free(op);
    if (rreq != NULL) {
        ucp_rndv_hread_piece_done(rreq, len, status);
    }
}

static void ucp_rndv_hread_got(ucp_rndv_op_t *op)
{
    ucp_worker_h worker   = op->worker;
    ucp_rndv_req_t *rreq  = ucp_rndv_req_find(worker, op->id, 0, "staged read");
    ucs_status_t status   = op->comp.status;
    ucp_rndv_frag_t *frag = op->frag;
    size_t len            = op->length;

    /* The sender's fragment is free once read, whatever happens here. */
    if (op->remote_id != 0) {
        ucp_rndv_recv_frag_ack(worker, op->peer_uuid, op->remote_id, op->frag_index,
                               status);
    }
    if (op->rkey_component != NULL) {
        uct_rkey_release(op->rkey_component, &op->rkey);
        op->rkey_component = NULL;
    }
    if ((rreq != NULL) && (status == UCS_OK) && (frag != NULL)) {
        ucs_trace_data("ucp: rendezvous receive 0x%llx: %zu bytes at %zu to the "
                       "device",
                       (unsigned long long)rreq->id, len, op->offset);
        op->cb          = ucp_rndv_hread_copied;
        op->comp.count  = 1;
        op->comp.status = UCS_OK;
        status = ucp_memtype_copy_start(worker, (char *)rreq->buffer + op->offset,
                                        frag->address, len, &op->comp);
        status = ucp_rndv_op_started(op, status);
        if (status == UCS_OK) {
            return;
        }
        /* op_started freed the op */
    } else {
        ucp_rndv_op_free(op);
    }
    if (frag != NULL) {
        ucp_rndv_frag_put(worker, frag);
    }
    if (rreq != NULL) {
        ucp_rndv_hread_piece_done(rreq, len, status);
    }
}

/* A piece that cannot be read: give the sender's fragment back with the
 * error, and ours. */
static void ucp_rndv_hread_piece_failed(ucp_rndv_req_t *rreq, size_t len,
                                        uint64_t sreq_id, uint32_t frag_index,
                                        ucp_rndv_frag_t *frag, ucs_status_t status)
{
    ucp_rndv_hread_ack(rreq, sreq_id, frag_index, status);
    if (frag != NULL) {
        ucp_rndv_frag_put(rreq->worker, frag);
    }
    ++rreq->inflight;
    ucp_rndv_hread_piece_done(rreq, len, status);
}

/* Read [remote, +len) of the peer into our buffer at @a offset, through
 * @a frag when it is not NULL; @a sreq_id: the sender's request to
 * acknowledge fragment @a frag_index to (0: none). */
static void ucp_rndv_hread_piece(ucp_rndv_req_t *rreq, ucp_ep_h ep, size_t offset,
                                 size_t len, uint64_t remote, const void *key,
                                 size_t key_len, uint64_t sreq_id, uint32_t frag_index,
                                 ucp_rndv_frag_t *frag)
{
    ucp_rndv_op_t *op;
    ucs_status_t status;

    op = ucp_rndv_op_new(rreq->worker, rreq->id, ucp_rndv_hread_got);
    if (op == NULL) {
        ucp_rndv_hread_piece_failed(rreq, len, sreq_id, frag_index, frag,
                                    UCS_ERR_NO_MEMORY);
        return;
    }
    op->remote_id  = sreq_id;
    op->peer_uuid  = rreq->peer_uuid;
    op->frag_index = frag_index;
    op->offset     = offset;
    op->length     = len;
    op->frag       = frag;
    ucs_trace_req("ucp: rendezvous receive 0x%llx: reading %zu bytes at %zu from "
                  "0x%llx%s",
                  (unsigned long long)rreq->id, len, offset, (unsigned long long)remote,
                  (frag != NULL) ? " through a host fragment" : "");
    ++rreq->inflight;
    status = ucp_rndv_host_get(
        op, ep, (frag != NULL) ? frag->address : (char *)rreq->buffer + offset, len,
        remote, key, key_len);
    if (status != UCS_OK) {
        /* ucp_rndv_host_get freed the op */
        --rreq->inflight;
        ucp_rndv_hread_piece_failed(rreq, len, sreq_id, frag_index, frag, status);
    }
}

/* A fragment of ours for the next piece into a device buffer, or NULL
 * (then the request waits for one, unless pieces in flight will call
 * again). Host buffers need none: @a *frag_p is NULL and 1 returned. */
static int ucp_rndv_hread_frag_get(ucp_rndv_req_t *rreq, ucp_rndv_frag_t **frag_p)
{
    *frag_p = NULL;
    if (rreq->mem_type == UCS_MEMORY_TYPE_HOST) {
        return 1;
    }
    *frag_p = ucp_rndv_frag_get_recv(rreq->worker, UCS_MEMORY_TYPE_HOST,
                                     ucp_rndv_req_gpu(rreq), rreq->id, 1);
    if (*frag_p != NULL) {
        return 1;
    }
    if (rreq->inflight == 0) {
        ucp_rndv_frag_wait(rreq->worker, rreq);
    }
    return 0;
}

/* Our own reads of the sender's host buffer: up to the pipeline depth. */
static void ucp_rndv_hread_fill(ucp_rndv_req_t *rreq)
{
    ucp_ep_h ep = ucp_worker_find_ep(rreq->worker, rreq->peer_uuid);
    ucp_rndv_frag_t *frag;
    size_t len, offset;

    if (ep == NULL) {
        if (rreq->inflight == 0) {
            ucp_rndv_req_complete(rreq, UCS_ERR_UNREACHABLE);
        }
        return;
    }
    while ((rreq->inflight < rreq->worker->context->rndv.depth) &&
           (rreq->next_offset < rreq->length) && (rreq->hread_status == UCS_OK) &&
           ucp_rndv_hread_frag_get(rreq, &frag)) {
        offset = rreq->next_offset;
        /* Only device buffers read here (ucp_rndv_hread_start): every
         * piece lands in one of our fragments. */
        len = ucp_rndv_ramp_piece_size(offset, rreq->length, frag->size,
                                       rreq->worker->context->rndv.host_get_ramp);
        rreq->next_offset += len;
        ucp_rndv_hread_piece(rreq, ep, offset, len, rreq->hread_address + offset,
                             rreq->hread_key, rreq->hread_key_len, 0, 0, frag);
    }
}

ucs_status_t ucp_rndv_hread_start(ucp_rndv_req_t *rreq, const ucp_rndv_rts_t *rts,
                                  const void *key)
{
    ucp_ep_h ep = ucp_worker_find_ep(rreq->worker, rreq->peer_uuid);

    if (!(rts->flags & UCP_RNDV_RTS_FLAG_HOST_KEY) ||
        (rts->mem_type != UCS_MEMORY_TYPE_HOST) ||
        (rreq->mem_type == UCS_MEMORY_TYPE_HOST) || !ucp_rndv_hread_possible(rreq, ep) ||
        (rts->key_len != ucp_rndv_host_key_size(ep))) {
        return UCS_ERR_UNSUPPORTED;
    }
    rreq->hread_key = malloc(rts->key_len);
    if (rreq->hread_key == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memcpy(rreq->hread_key, key, rts->key_len);
    rreq->hread_key_len = rts->key_len;
    rreq->hread_address = rts->address;
    rreq->mode          = UCP_RNDV_RTR_PIPE_HOST_GET;
    rreq->proto         = UCP_PROTO_STAT_RNDV_PIPE_HOST_GET;
    ucs_debug("ucp: rendezvous receive 0x%llx: reading %zu bytes of host memory "
              "through host fragments into the device",
              (unsigned long long)rreq->id, rreq->length);
    ucp_rndv_hread_fill(rreq);
    return UCS_OK;
}

void ucp_rndv_hread_frag(ucp_rndv_req_t *rreq, const ucp_rndv_frag_msg_t *msg,
                         const void *key)
{
    ucp_ep_h ep = ucp_worker_find_ep(rreq->worker, rreq->peer_uuid);
    ucp_rndv_hread_pending_t *pending;
    ucp_rndv_frag_t *frag;

    if ((ep == NULL) || (ep->host_rma_ep == NULL)) {
        /* The host lane went away (a failed read dropped it) */
        ucp_rndv_hread_piece_failed(rreq, msg->length, msg->sreq_id, msg->frag_index,
                                    NULL, UCS_ERR_UNREACHABLE);
        return;
    }
    /* Behind others that wait, in order: they were announced first. */
    if (ucs_list_is_empty(&rreq->hread_pending) && ucp_rndv_hread_frag_get(rreq, &frag)) {
        ucp_rndv_hread_piece(rreq, ep, msg->offset, msg->length, msg->address, key,
                             msg->key_len, msg->sreq_id, msg->frag_index, frag);
        return;
    }
    pending = malloc(sizeof(*pending) + msg->key_len);
    if (pending == NULL) {
        ucp_rndv_hread_piece_failed(rreq, msg->length, msg->sreq_id, msg->frag_index,
                                    NULL, UCS_ERR_NO_MEMORY);
        return;
    }
    ucs_trace_req("ucp: rendezvous receive 0x%llx: fragment %u waits for a host "
                  "fragment of ours",
                  (unsigned long long)rreq->id, msg->frag_index);
    pending->msg = *msg;
    memcpy(pending->key, key, msg->key_len);
    ucs_list_add_tail(&rreq->hread_pending, &pending->list);
    ucp_rndv_frag_wait(rreq->worker, rreq);
}

void ucp_rndv_hread_resume(ucp_rndv_req_t *rreq)
{
    ucp_worker_h worker = rreq->worker;
    uint64_t id         = rreq->id;
    ucp_rndv_hread_pending_t *pending;
    ucp_rndv_frag_t *frag;
    ucp_ep_h ep;

    if (ucp_rndv_hread_self(rreq)) {
        ucp_rndv_hread_fill(rreq);
        return;
    }
    while (!ucs_list_is_empty(&rreq->hread_pending)) {
        ep = ucp_worker_find_ep(worker, rreq->peer_uuid);
        if ((ep != NULL) && (ep->host_rma_ep != NULL) &&
            !ucp_rndv_hread_frag_get(rreq, &frag)) {
            ucp_rndv_frag_wait(worker, rreq);
            return;
        }
        pending = ucs_list_extract_head_elem(&rreq->hread_pending,
                                             ucp_rndv_hread_pending_t, list);
        if ((ep == NULL) || (ep->host_rma_ep == NULL)) {
            ucp_rndv_hread_piece_failed(rreq, pending->msg.length, pending->msg.sreq_id,
                                        pending->msg.frag_index, NULL,
                                        UCS_ERR_UNREACHABLE);
        } else {
            ucp_rndv_hread_piece(rreq, ep, pending->msg.offset, pending->msg.length,
                                 pending->msg.address, pending->key, pending->msg.key_len,
                                 pending->msg.sreq_id, pending->msg.frag_index, frag);
        }
        free(pending);
        if (ucp_rndv_req_find(worker, id, 0, "staged read resume") != rreq) {
            return; /* that piece completed the request */
        }
    }
}

void ucp_rndv_hread_release(ucp_rndv_req_t *rreq)
{
    ucp_rndv_hread_pending_t *pending;

    while (!ucs_list_is_empty(&rreq->hread_pending)) {
        pending = ucs_list_extract_head_elem(&rreq->hread_pending,
                                             ucp_rndv_hread_pending_t, list);
        /* Never read: the sender may reuse the fragment. */
        ucp_rndv_hread_ack(rreq, pending->msg.sreq_id, pending->msg.frag_index,
                           UCS_ERR_CANCELED);
        free(pending);
    }
    free(rreq->hread_key);
    rreq->hread_key = NULL;
}
