#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucp/core/ucp_int.h>

#include <stdlib.h>
#include <string.h>

/* The application's part of a request starts right after ours. */
static inline ucp_request_t *ucp_request_of(void *user_req)
{
    return (ucp_request_t*)user_req - 1;
}

ucp_request_t *ucp_request_get(ucp_worker_h worker,
                               const ucp_request_param_t *param)
{
    ucp_context_h context = worker->context;
    ucp_request_t *req;

    if ((param != NULL) && (param->op_attr_mask & UCP_OP_ATTR_FIELD_REQUEST)) {
        req = ucp_request_of(param->request);
        memset(req, 0, sizeof(*req));
        req->flags = UCP_REQ_FLAG_EXTERNAL;
    } else if (!ucs_list_is_empty(&worker->free_reqs)) {
        req = ucs_list_extract_head_elem(&worker->free_reqs, ucp_request_t, list);
        memset(req, 0, sizeof(*req));
        ++worker->live_reqs;
    } else {
        req = aligned_alloc(16, (sizeof(*req) + context->user_req_size + 15) &
                                ~(size_t)15);
        if (req == NULL) {
            return NULL;
        }
        memset(req, 0, sizeof(*req));
        if (context->req_init != NULL) {
            context->req_init(req + 1);
        }
        ++worker->live_reqs;
    }
    req->worker = worker;
    req->status = UCS_INPROGRESS;
    ucs_list_head_init(&req->list);
    return req;
}

void ucp_request_put(ucp_request_t *req)
{
    ucp_worker_h worker = req->worker;

    if (req->bounce != NULL) {
        (void)ucp_memtype_unstage(req, UCS_ERR_CANCELED);
    }
    free(req->owned);
    req->owned = NULL;
    if (req->flags & UCP_REQ_FLAG_EXTERNAL) {
        return;
    }
    --worker->live_reqs;
    /* A binding that races a free or a cancel with the request's completion
     * (UCXX frees inside the callback and cancels from a finalizer) must
     * find it finished, not expected, and not put back twice. */
    req->flags = UCP_REQ_FLAG_FREE | UCP_REQ_FLAG_COMPLETED;
    ucs_list_add_head(&worker->free_reqs, &req->list);
}

void ucp_worker_release_requests(ucp_worker_h worker)
{
    ucp_context_h context = worker->context;
    ucp_request_t *req;

    while (!ucs_list_is_empty(&worker->free_reqs)) {
        req = ucs_list_extract_head_elem(&worker->free_reqs, ucp_request_t, list);
        if (context->req_cleanup != NULL) {
            context->req_cleanup(req + 1);
        }
        free(req);
    }
}

void ucp_request_set_callback(ucp_request_t *req,
                              const ucp_request_param_t *param, int recv)
{
    if (param == NULL) {
        return;
    }
    if (param->op_attr_mask & UCP_OP_ATTR_FIELD_CALLBACK) {
        /* Every member of the union is a function pointer: one test for
         * NULL serves them all. */
        static const uint32_t flag[] = {
            [UCP_REQ_CB_SEND]        = UCP_REQ_FLAG_CB_SEND_NBX,
            [UCP_REQ_CB_TAG_RECV]    = UCP_REQ_FLAG_CB_RECV_NBX,
            [UCP_REQ_CB_STREAM_RECV] = UCP_REQ_FLAG_CB_RECV_STREAM,
            [UCP_REQ_CB_AM_RECV]     = UCP_REQ_FLAG_CB_RECV_AM
        };
        switch (recv) {
        case UCP_REQ_CB_SEND:        req->cb.send_nbx    = param->cb.send; break;
        case UCP_REQ_CB_TAG_RECV:    req->cb.recv_nbx    = param->cb.recv; break;
        case UCP_REQ_CB_STREAM_RECV: req->cb.recv_stream = param->cb.recv_stream; break;
        default:                     req->cb.recv_am     = param->cb.recv_am; break;
        }
        req->flags |= (param->cb.send != NULL) ? flag[recv] : 0;
    }
    if (param->op_attr_mask & UCP_OP_ATTR_FIELD_USER_DATA) {
        req->user_data = param->user_data;
    }
}

ucs_status_ptr_t ucp_request_set_nb_callback(ucp_worker_h worker,
                                             ucs_status_ptr_t ret,
                                             ucp_send_callback_t cb)
{
    ucp_request_t *req;

    if ((ret != NULL) && !UCS_PTR_IS_ERR(ret) && (cb != NULL)) {
        req = (ucp_request_t*)ret - 1;
        ucp_worker_lock(worker);
        req->cb.send = cb;
        req->flags  |= UCP_REQ_FLAG_CB_SEND;
        if (req->flags & UCP_REQ_FLAG_COMPLETED) {
            cb(ret, req->status);
        }
        ucp_worker_unlock(worker);
    }
    return ret;
}

static void ucp_request_invoke_cb(ucp_request_t *req)
{
    void *user_req = req + 1;

    if (req->flags & UCP_REQ_FLAG_CB_SEND) {
        req->cb.send(user_req, req->status);
    } else if (req->flags & UCP_REQ_FLAG_CB_SEND_NBX) {
        req->cb.send_nbx(user_req, req->status, req->user_data);
    } else if (req->flags & UCP_REQ_FLAG_CB_RECV) {
        req->cb.recv(user_req, req->status, &req->u.recv.info);
    } else if (req->flags & UCP_REQ_FLAG_CB_RECV_NBX) {
        req->cb.recv_nbx(user_req, req->status, &req->u.recv.info,
                         req->user_data);
    } else if (req->flags & UCP_REQ_FLAG_CB_RECV_STREAM) {
        req->cb.recv_stream(user_req, req->status, req->u.recv.info.length,
                            req->user_data);
    } else if (req->flags & UCP_REQ_FLAG_CB_STREAM_OLD) {
        req->cb.stream_old(user_req, req->status, req->u.recv.info.length);
    } else if (req->flags & UCP_REQ_FLAG_CB_RECV_AM) {
        req->cb.recv_am(user_req, req->status, req->u.recv.info.length,
                        req->user_data);
    }
}

/* Called exactly once per operation. While the starting call runs, the
 * callback waits for ucp_request_finish_call(), which decides between an
 * immediate completion (no callback) and a returned request. */
void ucp_request_complete(ucp_request_t *req, ucs_status_t status)
{
    if (req->bounce != NULL) {
        status = ucp_memtype_unstage(req, status);
    }
    ucp_dt_state_finish(&req->dt);
    free(req->owned);
    req->owned  = NULL;
    req->status = status;
    req->flags |= UCP_REQ_FLAG_COMPLETED;
    if (req->flags & UCP_REQ_FLAG_IN_CALL) {
        return;
    }
    if (req->flags & UCP_REQ_FLAG_INTERNAL) {
        ucp_request_put(req);
        return;
    }
    if (!(req->flags & UCP_REQ_FLAG_RELEASED)) {
        if (!req->worker->destroying) {
            ucp_request_invoke_cb(req);
        }
    } else {
        ucp_request_put(req);
    }
}

ucs_status_t ucp_request_recv_buffer(ucp_request_t *req, void *buffer, size_t count,
                                     const ucp_request_param_t *param)
{
    uint32_t attr = (param != NULL) ? param->op_attr_mask : 0;
    ucs_status_t status;

    status = ucp_dt_state_init(&req->dt, buffer, count,
                               (attr & UCP_OP_ATTR_FIELD_DATATYPE) ?
                               param->datatype : ucp_dt_make_contig(1), 1);
    if (status != UCS_OK) {
        return status;
    }
    req->mem_type = ucp_memtype_of_dt(req->worker, &req->dt, param);
    if (req->mem_type != UCS_MEMORY_TYPE_HOST) {
        /* Device memory: receive into a host bounce buffer, copied to the
         * device (synchronously) when the request completes. */
        status = ucp_memtype_stage_recv(req, req->mem_type);
        if (status != UCS_OK) {
            ucp_dt_state_finish(&req->dt);
        }
    }
    return status;
}

ucs_status_ptr_t ucp_request_finish_call(ucp_request_t *req,
                                         const ucp_request_param_t *param)
{
    uint32_t attr = (param != NULL) ? param->op_attr_mask : 0;

    req->flags &= ~UCP_REQ_FLAG_IN_CALL;
    if (!(req->flags & UCP_REQ_FLAG_COMPLETED)) {
        return req + 1;
    }
    if (attr & UCP_OP_ATTR_FLAG_NO_IMM_CMPL) {
        ucp_request_invoke_cb(req);
        return req + 1;
    }
    if ((attr & UCP_OP_ATTR_FIELD_RECV_INFO) && (req->flags & UCP_REQ_FLAG_RECV)) {
        if (req->flags & UCP_REQ_FLAG_RECV_LENGTH) {
            if (param->recv_info.length != NULL) {
                *param->recv_info.length = req->u.recv.info.length;
            }
        } else if (param->recv_info.tag_info != NULL) {
            *param->recv_info.tag_info = req->u.recv.info;
        }
    }
    {
        ucs_status_t status = req->status;
        ucp_request_put(req);
        return (status == UCS_OK) ? NULL : UCS_STATUS_PTR(status);
    }
}

/* Polling takes the worker lock: in MULTI mode another thread's progress
 * completes the request (status, info, then the flag) under that lock, and
 * an unlocked read could see the flag before the status (found by TSan). */
ucs_status_t ucp_request_check_status(void *request)
{
    ucp_request_t *req = ucp_request_of(request);
    ucs_status_t status;

    ucp_worker_lock(req->worker);
    status = (req->flags & UCP_REQ_FLAG_COMPLETED) ? req->status : UCS_INPROGRESS;
    ucp_worker_unlock(req->worker);
    return status;
}

ucs_status_t ucp_request_test(void *request, ucp_tag_recv_info_t *info)
{
    ucp_request_t *req = ucp_request_of(request);
    ucs_status_t status = UCS_INPROGRESS;

    ucp_worker_lock(req->worker);
    if (req->flags & UCP_REQ_FLAG_COMPLETED) {
        if ((info != NULL) && (req->flags & UCP_REQ_FLAG_RECV)) {
            *info = req->u.recv.info;
        }
        status = req->status;
    }
    ucp_worker_unlock(req->worker);
    return status;
}

/* Putting a pooled request back twice would link it into the pool twice and
 * hand it to two operations later: the second free is refused, loudly once. */
static void ucp_request_warn_twice(void *request)
{
    static int warned;

    if (!warned) {
        warned = 1;
        ucs_warn("ucp: request %p freed again after it went back to the "
                 "worker's pool: ignored (a use after free in the caller)",
                 request);
    } else {
        ucs_debug("ucp: request %p freed again: ignored", request);
    }
}

void ucp_request_free(void *request)
{
    ucp_request_t *req    = ucp_request_of(request);
    ucp_worker_h   worker = req->worker;

    ucp_worker_lock(worker);
    if (ucs_unlikely(req->flags & UCP_REQ_FLAG_FREE)) {
        ucp_request_warn_twice(request);
    } else if (req->flags & UCP_REQ_FLAG_COMPLETED) {
        ucp_request_put(req);
    } else {
        req->flags |= UCP_REQ_FLAG_RELEASED;
    }
    ucp_worker_unlock(worker);
}

void ucp_request_release(void *request)
{
    ucp_request_free(request);
}

void ucp_request_cancel(ucp_worker_h worker, void *request)
{
    ucp_request_t *req = ucp_request_of(request);

    ucp_worker_lock(worker);
    if ((req->flags & UCP_REQ_FLAG_EXPECTED) &&
        !(req->flags & UCP_REQ_FLAG_COMPLETED)) {
        ucs_list_del(&req->list);
        req->flags &= ~UCP_REQ_FLAG_EXPECTED;
        ucs_debug("ucp: canceled receive %p", request);
        ucp_request_complete(req, UCS_ERR_CANCELED);
    }
    ucp_worker_unlock(worker);
}
