#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * Device data sent as active messages (RTR pipe_am: tcp, or a peer without
 * device fragments) passes through host fragments on both sides. With one
 * fragment the staging copy and the socket take turns: the sender copies a
 * fragment out of the GPU, then sends it; the receiver gathers a fragment,
 * then copies it into the GPU, and neither transfer runs meanwhile. With a
 * second fragment the copy of the next piece runs while the segments of
 * the current one go out (or come in), so the message flows at the pace of
 * the slower of the two, the network.
 *
 * Only one copy is in flight per request, so copies land in order and one
 * completion counter per request is enough. Waiting for it spins on the
 * staging iface; by the time a fragment's segments have gone through the
 * network its copy has long finished, so the wait is one progress call.
 * A request that gets only one fragment works as before, copying and
 * sending in turn.
 */

#include <ucp/rndv/ucp_rndv_int.h>

#include <string.h>

static void ucp_rndv_stage_copy_done(uct_completion_t *comp)
{
    (void)comp;
}

/* Start the copy of @a len bytes; rreq->stage_next is @a frag from now on,
 * whatever the result (the caller's error path frees it with the request). */
static ucs_status_t ucp_rndv_stage_copy_start(ucp_rndv_req_t *rreq, ucp_rndv_frag_t *frag,
                                              void *dst, const void *src, size_t len)
{
    ucs_status_t status;

    rreq->stage_next        = frag;
    rreq->stage_comp.func   = ucp_rndv_stage_copy_done;
    rreq->stage_comp.count  = 1;
    rreq->stage_comp.status = UCS_OK;
    status = ucp_memtype_copy_start(rreq->worker, dst, src, len, &rreq->stage_comp);
    ++rreq->worker->rndv->stage_overlaps;
    if (status == UCS_INPROGRESS) {
        return UCS_OK;
    }
    rreq->stage_comp.count = 0;
    if (status != UCS_OK) {
        ucs_error("ucp: rendezvous 0x%llx: staging copy of %zu bytes %p -> %p "
                  "failed: %s",
                  (unsigned long long)rreq->id, len, src, dst, ucs_status_string(status));
    }
    return status;
}

static ucs_status_t ucp_rndv_stage_copy_wait(ucp_rndv_req_t *rreq)
{
    while (rreq->stage_comp.count > 0) {
        uct_iface_progress(rreq->worker->mt_iface);
    }
    if (rreq->stage_comp.status != UCS_OK) {
        ucs_error("ucp: rendezvous 0x%llx: staging copy failed: %s",
                  (unsigned long long)rreq->id,
                  ucs_status_string(rreq->stage_comp.status));
    }
    return rreq->stage_comp.status;
}

/* Sender: copy the bytes after what is staged into @a frag, in the
 * background. */
static ucs_status_t ucp_rndv_stage_send_prefetch(ucp_rndv_req_t *rreq,
                                                 ucp_rndv_frag_t *frag)
{
    size_t len = rreq->length - rreq->stage_end;

    len        = (len < frag->size) ? len : frag->size;
    frag->used = len;
    ucs_trace_data("ucp: rendezvous 0x%llx: staging %zu..%zu in the background",
                   (unsigned long long)rreq->id, rreq->stage_end, rreq->stage_end + len);
    rreq->stage_end += len;
    return ucp_rndv_stage_copy_start(rreq, frag, frag->address,
                                     (char *)rreq->buffer + rreq->stage_end - len, len);
}

ucs_status_t ucp_rndv_stage_send_next(ucp_rndv_req_t *rreq)
{
    ucp_rndv_frag_t *frag = rreq->stage;
    ucp_rndv_frag_t *next;
    ucs_status_t status;
    size_t len;

    rreq->done_bytes = 0;
    if (rreq->stage_next != NULL) {
        status = ucp_rndv_stage_copy_wait(rreq);
        if (status != UCS_OK) {
            return status;
        }
        /* The segments of the old fragment are in the transport's buffers
         * (bcopy), so it takes the piece after the next. */
        rreq->stage      = rreq->stage_next;
        rreq->stage_next = NULL;
        if (rreq->stage_end < rreq->length) {
            return ucp_rndv_stage_send_prefetch(rreq, frag);
        }
        ucp_rndv_frag_put(rreq->worker, frag);
        return UCS_OK;
    }

    /* First piece, or a request with one fragment: copy and wait. */
    len        = rreq->length - rreq->next_offset;
    len        = (len < frag->size) ? len : frag->size;
    frag->used = len;
    status     = ucp_memtype_copy(rreq->worker, frag->address,
                                  (char *)rreq->buffer + rreq->next_offset, len);
    if (status != UCS_OK) {
        return status;
    }
    rreq->stage_end = rreq->next_offset + len;
    if ((rreq->stage_end < rreq->length) && (rreq->worker->context->rndv.stage_overlap) &&
        ((next = ucp_rndv_frag_get(rreq->worker, UCS_MEMORY_TYPE_HOST,
                                   ucp_rndv_req_gpu(rreq), rreq->id)) != NULL)) {
        return ucp_rndv_stage_send_prefetch(rreq, next);
    }
    return UCS_OK;
}

ucs_status_t ucp_rndv_stage_recv_flush(ucp_rndv_req_t *rreq, int last)
{
    ucp_rndv_frag_t *frag = rreq->stage;
    size_t fill           = frag->used;
    void *dst             = (char *)rreq->buffer + rreq->next_offset;
    ucp_rndv_frag_t *spare;
    ucs_status_t status;

    rreq->next_offset += fill;
    if (rreq->stage_next != NULL) {
        /* The previous fragment's copy into the GPU must land before the
         * fragment is filled again. */
        status           = ucp_rndv_stage_copy_wait(rreq);
        spare            = rreq->stage_next;
        rreq->stage_next = NULL;
        if (status != UCS_OK) {
            ucp_rndv_frag_put(rreq->worker, spare);
            return status;
        }
    } else if (!last && rreq->worker->context->rndv.stage_overlap) {
        spare = ucp_rndv_frag_get(rreq->worker, UCS_MEMORY_TYPE_HOST,
                                  ucp_rndv_req_gpu(rreq), rreq->id);
    } else {
        spare = NULL;
    }

    if (last || (spare == NULL)) {
        /* The data must be in place when the request completes. */
        if (spare != NULL) {
            ucp_rndv_frag_put(rreq->worker, spare);
        }
        frag->used = 0;
        return ucp_memtype_copy(rreq->worker, dst, frag->address, fill);
    }
    ucs_trace_data("ucp: rendezvous 0x%llx: %zu bytes to the device in the "
                   "background",
                   (unsigned long long)rreq->id, fill);
    spare->used = 0;
    rreq->stage = spare;
    return ucp_rndv_stage_copy_start(rreq, frag, dst, frag->address, fill);
}

void ucp_rndv_stage_release(ucp_rndv_req_t *rreq)
{
    if (rreq->stage_next != NULL) {
        /* The copy writes into the fragment or reads it: it must end before
         * the fragment is reused. */
        (void)ucp_rndv_stage_copy_wait(rreq);
        ucp_rndv_frag_put(rreq->worker, rreq->stage_next);
        rreq->stage_next = NULL;
    }
    if (rreq->stage != NULL) {
        ucp_rndv_frag_put(rreq->worker, rreq->stage);
        rreq->stage = NULL;
    }
}
