#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * The target side of RMA: requests arriving on the active-message lane are
 * checked against this process's registered regions (ucp_rma_region.c),
 * executed from ucp_worker_progress() in arrival order, and answered on the
 * endpoint to the origin (which its wireup message created when we had
 * none).
 */

#include <ucp/rma/ucp_rma.h>

#include <stdlib.h>
#include <string.h>

/* Answer @a hdr's request: @a msg starts with a ucp_rma_rep_hdr_t that is
 * filled here. */
static void ucp_rma_target_answer(ucp_worker_h worker,
                                  const ucp_rma_req_hdr_t *hdr, uint8_t am_id,
                                  ucs_status_t status, void *msg, size_t length)
{
    ucp_rma_rep_hdr_t *rep = msg;
    ucs_status_t send_status;
    ucp_ep_h ep;

    rep->op_id  = hdr->op_id;
    rep->offset = hdr->offset;
    rep->status = status;
    rep->flags  = (hdr->flags & UCP_RMA_FLAG_REPLY) ? 0 : UCP_RMA_REP_EXTRA;
    ep = ucp_worker_find_ep(worker, hdr->uuid);
    if (ep == NULL) {
        ucs_error("ucp: rma request from worker 0x%llx, which never sent its "
                  "address: not answered", (unsigned long long)hdr->uuid);
        return;
    }
    send_status = ucp_ep_send_ctrl(ep, am_id, msg, length, NULL, 0);
    if ((send_status == UCS_ERR_EXCEEDS_LIMIT) && (length > sizeof(*rep))) {
        /* data that does not fit our segment: answer the error alone */
        rep->status = UCS_ERR_EXCEEDS_LIMIT;
        send_status = ucp_ep_send_ctrl(ep, am_id, rep, sizeof(*rep), NULL, 0);
    }
    if (send_status != UCS_OK) {
        ucs_error("ucp: cannot answer rma request of worker 0x%llx: %s",
                  (unsigned long long)hdr->uuid, ucs_status_string(send_status));
    }
}

static void ucp_rma_target_refuse(ucp_worker_h worker,
                                  const ucp_rma_req_hdr_t *hdr, uint8_t am_id,
                                  ucs_status_t status)
{
    ucp_rma_rep_hdr_t rep;

    ucs_debug("ucp: rma request 0x%llx of worker 0x%llx refused: %s",
              (unsigned long long)hdr->op_id, (unsigned long long)hdr->uuid,
              ucs_status_string(status));
    ucp_rma_target_answer(worker, hdr, am_id, status, &rep, sizeof(rep));
}

/* A message too short for its header cannot even be answered. */
static int ucp_rma_target_hdr(const void *data, size_t length,
                              ucp_rma_req_hdr_t *hdr)
{
    if (length < sizeof(*hdr)) {
        ucs_error("ucp: rma request of %zu bytes is shorter than its header: "
                  "dropped", length);
        return 0;
    }
    memcpy(hdr, data, sizeof(*hdr));
    return 1;
}

static ucs_status_t ucp_rma_am_put(void *arg, void *data, size_t length,
                                   unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    ucp_rma_req_hdr_t hdr;
    ucp_rma_rep_hdr_t rep;
    ucs_status_t status;

    (void)flags;
    if (!ucp_rma_target_hdr(data, length, &hdr)) {
        return UCS_OK;
    }
    if (hdr.length != length - sizeof(hdr)) {
        status = UCS_ERR_INVALID_PARAM;
    } else {
        status = ucp_rma_region_access(worker, hdr.rma_id, hdr.address,
                                       hdr.length, (char*)data + sizeof(hdr),
                                       1);
    }
    if ((status != UCS_OK) || (hdr.flags & UCP_RMA_FLAG_REPLY)) {
        if (status != UCS_OK) {
            ucs_debug("ucp: rma put refused: %s", ucs_status_string(status));
        }
        ucp_rma_target_answer(worker, &hdr, UCP_AM_ID_RMA_ACK, status, &rep,
                              sizeof(rep));
    }
    return UCS_OK;
}

static ucs_status_t ucp_rma_am_get_req(void *arg, void *data, size_t length,
                                       unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    ucp_rma_req_hdr_t hdr;
    ucs_status_t status;
    char *msg;

    (void)flags;
    if (!ucp_rma_target_hdr(data, length, &hdr)) {
        return UCS_OK;
    }
    /* The origin sizes fragments to fit one answer; a bigger one is bogus
     * (and must not make us allocate whatever it claims). */
    if ((length != sizeof(hdr)) || (hdr.length > UCS_BIT(24))) {
        ucp_rma_target_refuse(worker, &hdr, UCP_AM_ID_RMA_GET_REP,
                              UCS_ERR_INVALID_PARAM);
        return UCS_OK;
    }
    msg = malloc(sizeof(ucp_rma_rep_hdr_t) + hdr.length);
    if (msg == NULL) {
        ucp_rma_target_refuse(worker, &hdr, UCP_AM_ID_RMA_GET_REP,
                              UCS_ERR_NO_MEMORY);
        return UCS_OK;
    }
    status = ucp_rma_region_access(worker, hdr.rma_id, hdr.address, hdr.length,
                                   msg + sizeof(ucp_rma_rep_hdr_t), 0);
    if (status == UCS_OK) {
        ucp_rma_target_answer(worker, &hdr, UCP_AM_ID_RMA_GET_REP, UCS_OK, msg,
                              sizeof(ucp_rma_rep_hdr_t) + hdr.length);
    } else {
        ucp_rma_target_refuse(worker, &hdr, UCP_AM_ID_RMA_GET_REP, status);
    }
    free(msg);
    return UCS_OK;
}

static ucs_status_t ucp_rma_am_amo_req(void *arg, void *data, size_t length,
                                       unsigned flags)
{
    ucp_worker_h worker = ((ucp_worker_iface_t*)arg)->worker;
    struct {
        ucp_rma_rep_hdr_t hdr;
        uint64_t          old;
    } rep;
    ucp_rma_amo_args_t args;
    ucp_rma_req_hdr_t hdr;
    ucs_status_t status;

    (void)flags;
    if (!ucp_rma_target_hdr(data, length, &hdr)) {
        return UCS_OK;
    }
    if (length != sizeof(hdr) + sizeof(args)) {
        ucp_rma_target_refuse(worker, &hdr, UCP_AM_ID_RMA_AMO_REP,
                              UCS_ERR_INVALID_PARAM);
        return UCS_OK;
    }
    memcpy(&args, (char*)data + sizeof(hdr), sizeof(args));
    rep.old = 0;
    status  = ucp_rma_region_atomic(worker, hdr.rma_id, hdr.address, &args,
                                    hdr.length, &rep.old);
    ucp_rma_target_answer(worker, &hdr, UCP_AM_ID_RMA_AMO_REP, status, &rep,
                          sizeof(rep));
    return UCS_OK;
}

void ucp_rma_set_am_handlers(ucp_worker_iface_t *wiface)
{
    static const ucp_rma_am_handler_t handlers[] = {
        {UCP_AM_ID_RMA_PUT, ucp_rma_am_put},
        {UCP_AM_ID_RMA_GET_REQ, ucp_rma_am_get_req},
        {UCP_AM_ID_RMA_AMO_REQ, ucp_rma_am_amo_req}
    };

    ucp_rma_install_handlers(wiface, handlers, ucs_static_array_size(handlers));
    ucp_rma_set_reply_handlers(wiface);
}
