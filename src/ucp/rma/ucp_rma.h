/**
 * @file ucp_rma.h
 * Remote memory access and atomics over the active-message lane of an
 * endpoint (posix, tcp, self): wire formats and the functions the files of
 * src/ucp/rma share.
 *
 * Every request names the target region by the identity packed in its rkey
 * (rma_id) and by an absolute address; the target executes it only when the
 * id is one of its live ucp_mem_map() regions of the receiving worker's
 * context and [address, address + length) lies inside that region, and
 * answers an error otherwise. Requests of one endpoint are executed in the
 * order they were sent (the lane is ordered), which gives fence semantics.
 *
 * Messages (all fields in the host's byte order; both ends run on one
 * machine or the same architecture):
 *   PUT      [ucp_rma_req_hdr_t][data]      a fragment of a put
 *   GET_REQ  [ucp_rma_req_hdr_t]            read length bytes
 *   AMO_REQ  [ucp_rma_req_hdr_t][ucp_rma_amo_args_t]
 *   ACK      [ucp_rma_rep_hdr_t]            answer to PUT
 *   GET_REP  [ucp_rma_rep_hdr_t][data]      answer to GET_REQ
 *   AMO_REP  [ucp_rma_rep_hdr_t][u64 old]   answer to AMO_REQ
 * A fragment with UCP_RMA_FLAG_REPLY is always answered; one without it is
 * answered only when it fails (UCP_RMA_REP_EXTRA: not counted as the answer).
 */
#ifndef UCP_RMA_H_
#define UCP_RMA_H_

#include <ucp/core/ucp_int.h>

BEGIN_C_DECLS

enum {
    UCP_RMA_KIND_PUT = 1,
    UCP_RMA_KIND_GET,
    UCP_RMA_KIND_AMO
};

enum {
    UCP_RMA_FLAG_REPLY = UCS_BIT(0) /* answer this fragment */
};

enum {
    UCP_RMA_REP_EXTRA = UCS_BIT(0)  /* an error on a fragment not answered
                                       otherwise: does not count */
};

/** Header of every request. */
typedef struct ucp_rma_req_hdr {
    uint64_t uuid;     /* origin worker: where the answer goes */
    uint64_t op_id;    /* origin's operation, echoed in the answer */
    uint64_t rma_id;   /* target region (from the rkey) */
    uint64_t address;  /* first byte touched */
    uint64_t length;   /* bytes touched (PUT: of this fragment) */
    uint64_t offset;   /* of this fragment within the operation */
    uint32_t flags;    /* UCP_RMA_FLAG_* */
    uint32_t reserved;
} ucp_rma_req_hdr_t;

/** Operands of an atomic request (length is the operand size, 4 or 8). */
typedef struct ucp_rma_amo_args {
    uint32_t opcode;   /* ucp_atomic_op_t */
    uint32_t reserved;
    uint64_t value;
    uint64_t swap;     /* CSWAP: stored when the old value equals value */
} ucp_rma_amo_args_t;

/** Header of every answer. */
typedef struct ucp_rma_rep_hdr {
    uint64_t op_id;
    uint64_t offset;   /* GET_REP: where the data goes in the operation */
    int32_t  status;   /* ucs_status_t */
    uint32_t flags;    /* UCP_RMA_REP_* */
} ucp_rma_rep_hdr_t;

/* ucp_rma_region.c: the registered regions of this process */
/** Copy @a length bytes at @a address of region @a rma_id of @a worker's
 *  context into @a data (@a write 0) or from it (@a write 1). Refuses
 *  (error status, logged at debug level) what the region does not cover. */
ucs_status_t ucp_rma_region_access(ucp_worker_h worker, uint64_t rma_id,
                                   uint64_t address, size_t length, void *data,
                                   int write);
/** Execute an atomic operation on region memory; @a old_p gets the previous
 *  value. Serialised with every other access of this process. */
ucs_status_t ucp_rma_region_atomic(ucp_worker_h worker, uint64_t rma_id,
                                   uint64_t address,
                                   const ucp_rma_amo_args_t *args,
                                   size_t size, uint64_t *old_p);


/* ucp_rma_origin.c: operations in flight */
/** What an operation kind adds to a started request (at least its
 *  progress function); @a arg is what the poster passed. */
typedef void (*ucp_rma_op_init_cb_t)(ucp_request_t *req, void *arg);
/** Post an operation on @a count elements of param->datatype (contiguous
 *  only) at @a buffer, under the worker lock: check the arguments, take a
 *  request (req->dt describes the local buffer, staged on the host when it
 *  is device memory), let @a init complete it, queue it on its ep, and
 *  return what the API call returns. */
ucs_status_ptr_t ucp_rma_op_post(ucp_ep_h ep, uint8_t kind, const void *buffer,
                                 size_t count, uint64_t remote_addr,
                                 ucp_rkey_h rkey,
                                 const ucp_request_param_t *param,
                                 ucp_rma_op_init_cb_t init, void *arg);
/** An operation of the nbi calls: wait for nothing, report through flush. */
ucs_status_t ucp_rma_nbi_status(ucs_status_ptr_t ret);

/** An active-message handler of RMA and the message id it serves. */
typedef struct {
    uint8_t           am_id;
    uct_am_callback_t cb;
} ucp_rma_am_handler_t;
/** Install @a count handlers on an iface (the iface is their argument). */
void ucp_rma_install_handlers(ucp_worker_iface_t *wiface,
                              const ucp_rma_am_handler_t *handlers,
                              size_t count);
/** Install the answer handlers on an iface. */
void ucp_rma_set_reply_handlers(ucp_worker_iface_t *wiface);

END_C_DECLS

#endif
