/**
 * @file ucp_compat.h
 * Older UCP calls kept for programs written against earlier UCX versions.
 * Each has a newer replacement in ucp.h, named in its description; new code
 * should use that. Included by ucp.h; not meant to be included on its own.
 *
 * Signatures match upstream UCX (see docs/abi.md).
 */
#ifndef UCP_COMPAT_H_
#define UCP_COMPAT_H_

#include <ucp/api/ucp_def.h>
#include <ucs/sys/compiler_def.h>

BEGIN_C_DECLS

/**
 * Give a request back to the library. Same as ucp_request_free(), which
 * replaces it.
 *
 * @param request  a request returned by a non-blocking call.
 */
void ucp_request_release(void *request);

/**
 * Close an endpoint, blocking: flushes what was sent on it, progresses the
 * worker until the close completes, then frees it. Replaced by
 * ucp_ep_close_nbx(). Must be called from the thread that may progress the
 * endpoint's worker; @a ep must not be used again.
 *
 * @param ep  endpoint to close.
 */
void ucp_ep_destroy(ucp_ep_h ep);

/**
 * Start closing an endpoint after flushing it. Same as
 * ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FLUSH); replaced by ucp_ep_close_nbx().
 *
 * @param ep  endpoint to close; not to be used again by the caller.
 * @return NULL when the endpoint is already closed; a request to wait on
 *         (complete it with ucp_worker_progress(), check it with
 *         ucp_request_check_status(), then ucp_request_free() it); or an error
 *         status encoded with UCS_STATUS_PTR().
 */
ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep);

/**
 * Change an endpoint's parameters; replaced by recreating the endpoint.
 * Only the user data (UCP_EP_PARAM_FIELD_USER_DATA) and the error handler
 * (UCP_EP_PARAM_FIELD_ERR_HANDLER) can change; they take effect at once.
 *
 * @param ep      the endpoint.
 * @param params  the new values, by field_mask.
 * @return NULL (done); UCS_STATUS_PTR(UCS_ERR_UNSUPPORTED) for any other
 *         field (nothing is changed then); UCS_ERR_INVALID_PARAM for NULL.
 */
ucs_status_ptr_t ucp_ep_modify_nb(ucp_ep_h ep, const ucp_ep_params_t *params);

/**
 * Whether a request has completed; for a completed tag receive also its
 * sender tag and length. Replaced by ucp_request_check_status() (and, in
 * upstream UCX, by ucp_tag_recv_request_test(), which this library does not
 * provide yet).
 *
 * @param request  a request returned by a non-blocking call and not yet freed.
 * @param info     filled when the request is a completed tag receive; may be
 *                 NULL for send requests.
 * @return UCS_INPROGRESS while the request runs, otherwise its completion
 *         status. Does not progress the worker.
 */
ucs_status_t ucp_request_test(void *request, ucp_tag_recv_info_t *info);

/**
 * Flush an endpoint, blocking: returns once every operation started on it
 * has completed remotely. Replaced by ucp_ep_flush_nbx(). Progresses the
 * endpoint's worker, so the usual rule applies: one thread at a time per
 * worker unless the worker was created UCS_THREAD_MODE_MULTI.
 *
 * @param ep  endpoint to flush.
 * @return UCS_OK, or the error that ended an operation on @a ep.
 */
ucs_status_t ucp_ep_flush(ucp_ep_h ep);

/**
 * Flush a worker, blocking: returns once every operation started on any of
 * its endpoints has completed remotely. Replaced by ucp_worker_flush_nbx().
 *
 * @param worker  worker to flush.
 * @return UCS_OK, or an error status.
 */
ucs_status_t ucp_worker_flush(ucp_worker_h worker);

/**
 * Blocking remote memory access and atomics: each starts the operation with
 * its non-blocking successor (ucp_put_nbx(), ucp_get_nbx(),
 * ucp_atomic_op_nbx()) and progresses the endpoint's worker until it
 * completed remotely. Must be called from a thread that may progress the
 * worker. They return UCS_OK or the operation's error.
 */
/** Write @a length bytes of @a buffer to @a remote_addr of the peer. */
ucs_status_t ucp_put(ucp_ep_h ep, const void *buffer, size_t length,
                     uint64_t remote_addr, ucp_rkey_h rkey);
/** Read @a length bytes at @a remote_addr of the peer into @a buffer. */
ucs_status_t ucp_get(ucp_ep_h ep, void *buffer, size_t length,
                     uint64_t remote_addr, ucp_rkey_h rkey);
/** Add @a add to the remote 32-bit value. */
ucs_status_t ucp_atomic_add32(ucp_ep_h ep, uint32_t add, uint64_t remote_addr,
                              ucp_rkey_h rkey);
/** Add @a add to the remote 64-bit value. */
ucs_status_t ucp_atomic_add64(ucp_ep_h ep, uint64_t add, uint64_t remote_addr,
                              ucp_rkey_h rkey);
/** Add @a add to the remote 32-bit value; *@a result gets the old one. */
ucs_status_t ucp_atomic_fadd32(ucp_ep_h ep, uint32_t add, uint64_t remote_addr,
                               ucp_rkey_h rkey, uint32_t *result);
/** Add @a add to the remote 64-bit value; *@a result gets the old one. */
ucs_status_t ucp_atomic_fadd64(ucp_ep_h ep, uint64_t add, uint64_t remote_addr,
                               ucp_rkey_h rkey, uint64_t *result);
/** Store @a swap in the remote 32-bit value; *@a result gets the old one. */
ucs_status_t ucp_atomic_swap32(ucp_ep_h ep, uint32_t swap, uint64_t remote_addr,
                               ucp_rkey_h rkey, uint32_t *result);
/** Store @a swap in the remote 64-bit value; *@a result gets the old one. */
ucs_status_t ucp_atomic_swap64(ucp_ep_h ep, uint64_t swap, uint64_t remote_addr,
                               ucp_rkey_h rkey, uint64_t *result);
/** Store @a swap if the remote 32-bit value equals @a compare; *@a result
 *  gets the old value either way. */
ucs_status_t ucp_atomic_cswap32(ucp_ep_h ep, uint32_t compare, uint32_t swap,
                                uint64_t remote_addr, ucp_rkey_h rkey,
                                uint32_t *result);
/** Store @a swap if the remote 64-bit value equals @a compare; *@a result
 *  gets the old value either way. */
ucs_status_t ucp_atomic_cswap64(ucp_ep_h ep, uint64_t compare, uint64_t swap,
                                uint64_t remote_addr, ucp_rkey_h rkey,
                                uint64_t *result);

END_C_DECLS

#endif
