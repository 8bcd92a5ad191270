#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Atomics: one request message carrying the operands, executed by the
 * target's worker on its memory (ucp_rma_region_atomic) and answered with
 * the previous value. The three API generations map onto ucp_atomic_op_t.
 */

#include <ucp/rma/ucp_rma.h>

#include <string.h>

static size_t ucp_rma_amo_pack(void *dest, void *arg)
{
    memcpy(dest, arg, sizeof(ucp_rma_req_hdr_t) + sizeof(ucp_rma_amo_args_t));
    return sizeof(ucp_rma_req_hdr_t) + sizeof(ucp_rma_amo_args_t);
}

static ucs_status_t ucp_rma_amo_progress(ucp_request_t *req)
{
    struct {
        ucp_rma_req_hdr_t  hdr;
        ucp_rma_amo_args_t args;
    } msg;
    ucp_ep_h ep = req->ep;
    ssize_t ret;

    memset(&msg, 0, sizeof(msg));
    msg.hdr.uuid    = ep->worker->uuid;
    msg.hdr.op_id   = req->u.rma.id;
    msg.hdr.rma_id  = req->u.rma.rkey_id;
    msg.hdr.address = req->u.rma.remote_addr;
    msg.hdr.length  = req->u.rma.op_size;
    msg.hdr.flags   = UCP_RMA_FLAG_REPLY;
    msg.args.opcode = req->u.rma.opcode;
    msg.args.value  = req->u.rma.value;
    msg.args.swap   = req->u.rma.swap;
    ret = uct_ep_am_bcopy(ep->uct_ep, UCP_AM_ID_RMA_AMO_REQ, ucp_rma_amo_pack,
                          &msg, 0);
    if (ret < 0) {
        return (ucs_status_t)ret;
    }
    ++ep->rma.issued;
    req->u.rma.in_queue = 0;
    return UCS_OK;
}

static uint64_t ucp_rma_amo_load(const void *ptr, size_t size)
{
    uint32_t v32;
    uint64_t v64;

    if (size == sizeof(uint32_t)) {
        memcpy(&v32, ptr, sizeof(v32));
        return v32;
    }
    memcpy(&v64, ptr, sizeof(v64));
    return v64;
}

typedef struct {
    ucp_atomic_op_t opcode;
    size_t          size;    /* of the operand: 4 or 8 */
    const void      *operand;
    void            *result; /* may be NULL */
} ucp_rma_amo_init_t;

static void ucp_rma_amo_init(ucp_request_t *req, void *arg)
{
    const ucp_rma_amo_init_t *init = arg;

    req->u.rma.opcode  = (uint8_t)init->opcode;
    req->u.rma.op_size = (uint8_t)init->size;
    req->u.rma.value   = ucp_rma_amo_load(init->operand, init->size);
    req->u.rma.swap    = (init->opcode == UCP_ATOMIC_OP_CSWAP) ?
                         ucp_rma_amo_load(init->result, init->size) : 0;
    req->u.rma.result  = init->result;
    req->progress      = ucp_rma_amo_progress;
}

/* @a operand points to the operand of @a param's size; @a result (may be
 * NULL) receives the old value and, for CSWAP, holds the value to store. */
static ucs_status_ptr_t ucp_rma_amo_common(ucp_ep_h ep, ucp_atomic_op_t opcode,
                                           const void *operand, void *result,
                                           uint64_t remote_addr, ucp_rkey_h rkey,
                                           const ucp_request_param_t *param)
{
    size_t size = sizeof(uint64_t);
    ucp_rma_amo_init_t init;

    if ((param != NULL) && (param->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE)) {
        size = (size_t)(param->datatype >> UCP_DATATYPE_SHIFT);
        if (((param->datatype & UCP_DATATYPE_CLASS_MASK) != UCP_DATATYPE_CONTIG) ||
            ((size != sizeof(uint32_t)) && (size != sizeof(uint64_t)))) {
            size = 0;
        }
    }
    if ((size == 0) || (opcode >= UCP_ATOMIC_OP_LAST) || (operand == NULL) ||
        ((opcode == UCP_ATOMIC_OP_CSWAP) && (result == NULL)) ||
        (remote_addr % (size ? size : 1))) {
        ucs_error("ucp: atomic operation %d of size %zu at %#llx: invalid "
                  "(4 or 8 bytes, aligned; CSWAP needs a reply buffer)",
                  (int)opcode, size, (unsigned long long)remote_addr);
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }

    init.opcode  = opcode;
    init.size    = size;
    init.operand = operand;
    init.result  = result;
    return ucp_rma_op_post(ep, UCP_RMA_KIND_AMO, operand, 1, remote_addr, rkey,
                           param, ucp_rma_amo_init, &init);
}

ucs_status_ptr_t ucp_atomic_op_nbx(ucp_ep_h ep, ucp_atomic_op_t opcode,
                                   const void *buffer, size_t count,
                                   uint64_t remote_addr, ucp_rkey_h rkey,
                                   const ucp_request_param_t *param)
{
    void *result = NULL;

    if (count != 1) {
        ucs_error("ucp_atomic_op_nbx: count is %zu, only 1 is supported", count);
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if ((param != NULL) && (param->op_attr_mask & UCP_OP_ATTR_FIELD_REPLY_BUFFER)) {
        result = param->reply_buffer;
    }
    return ucp_rma_amo_common(ep, opcode, buffer, result, remote_addr, rkey,
                              param);
}

/* The old calls pass the operand by value, in the low @a op_size bytes. */
static ucs_status_ptr_t ucp_rma_amo_by_value(ucp_ep_h ep, ucp_atomic_op_t opcode,
                                             uint64_t value, void *result,
                                             size_t op_size, uint64_t remote_addr,
                                             ucp_rkey_h rkey)
{
    uint32_t value32 = (uint32_t)value;
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = ucp_dt_make_contig(op_size);
    return ucp_rma_amo_common(ep, opcode,
                              (op_size == sizeof(uint32_t)) ? (void*)&value32 :
                                                              (void*)&value,
                              result, remote_addr, rkey, &param);
}

ucs_status_t ucp_atomic_post(ucp_ep_h ep, ucp_atomic_post_op_t opcode,
                             uint64_t value, size_t op_size,
                             uint64_t remote_addr, ucp_rkey_h rkey)
{
    static const ucp_atomic_op_t ops[] = {
        [UCP_ATOMIC_POST_OP_ADD] = UCP_ATOMIC_OP_ADD,
        [UCP_ATOMIC_POST_OP_AND] = UCP_ATOMIC_OP_AND,
        [UCP_ATOMIC_POST_OP_OR]  = UCP_ATOMIC_OP_OR,
        [UCP_ATOMIC_POST_OP_XOR] = UCP_ATOMIC_OP_XOR
    };
    ucs_status_t status;

    if ((unsigned)opcode >= UCP_ATOMIC_POST_OP_LAST) {
        ucs_error("ucp_atomic_post: invalid opcode %d", (int)opcode);
        return UCS_ERR_INVALID_PARAM;
    }
    status = ucp_rma_nbi_status(ucp_rma_amo_by_value(ep, ops[opcode], value, NULL,
                                                     op_size, remote_addr, rkey));
    /* posted is success here (unlike the nbi calls): callers test UCS_OK */
    return (status == UCS_INPROGRESS) ? UCS_OK : status;
}

ucs_status_ptr_t ucp_atomic_fetch_nb(ucp_ep_h ep, ucp_atomic_fetch_op_t opcode,
                                     uint64_t value, void *result,
                                     size_t op_size, uint64_t remote_addr,
                                     ucp_rkey_h rkey, ucp_send_callback_t cb)
{
    static const ucp_atomic_op_t ops[] = {
        [UCP_ATOMIC_FETCH_OP_FADD]  = UCP_ATOMIC_OP_ADD,
        [UCP_ATOMIC_FETCH_OP_SWAP]  = UCP_ATOMIC_OP_SWAP,
        [UCP_ATOMIC_FETCH_OP_CSWAP] = UCP_ATOMIC_OP_CSWAP,
        [UCP_ATOMIC_FETCH_OP_FAND]  = UCP_ATOMIC_OP_AND,
        [UCP_ATOMIC_FETCH_OP_FOR]   = UCP_ATOMIC_OP_OR,
        [UCP_ATOMIC_FETCH_OP_FXOR]  = UCP_ATOMIC_OP_XOR
    };

    if (((unsigned)opcode >= UCP_ATOMIC_FETCH_OP_LAST) || (result == NULL)) {
        ucs_error("ucp_atomic_fetch_nb: invalid opcode %d or no result buffer",
                  (int)opcode);
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    return ucp_request_set_nb_callback(ep->worker,
                                       ucp_rma_amo_by_value(ep, ops[opcode], value,
                                                            result, op_size,
                                                            remote_addr, rkey),
                                       cb);
}
