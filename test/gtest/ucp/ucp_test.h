/**
 * @file ucp_test.h
 * Helpers for UCP tests: a context + worker pair configured with a given
 * UCX_TLS, waiting on requests, and exchanging addresses between processes.
 */
#ifndef UCX_TEST_UCP_TEST_H_
#define UCX_TEST_UCP_TEST_H_

#include <ucp/api/ucp.h>

#include "common/two_process.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ucx_test {

/** A context and one worker on the transports @a tls ("" = all). */
class ucp_entity {
public:
    explicit ucp_entity(const std::string &tls = "",
                        ucs_thread_mode_t mode = UCS_THREAD_MODE_SINGLE,
                        uint64_t features = UCP_FEATURE_TAG)
    {
        ucp_config_t *config;
        if (ucp_config_read(NULL, NULL, &config) != UCS_OK) {
            throw std::runtime_error("ucp_config_read");
        }
        if (!tls.empty()) {
            ucp_config_modify(config, "TLS", tls.c_str());
        }
        ucp_params_t params;
        memset(&params, 0, sizeof(params));
        params.field_mask   = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_REQUEST_SIZE;
        params.features     = features;
        params.request_size = 16;
        ucs_status_t status = ucp_init(&params, config, &m_context);
        ucp_config_release(config);
        if (status != UCS_OK) {
            throw std::runtime_error("ucp_init");
        }
        ucp_worker_params_t wparams;
        memset(&wparams, 0, sizeof(wparams));
        wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        wparams.thread_mode = mode;
        if (ucp_worker_create(m_context, &wparams, &m_worker) != UCS_OK) {
            ucp_cleanup(m_context);
            throw std::runtime_error("ucp_worker_create");
        }
    }

    ~ucp_entity()
    {
        ucp_worker_destroy(m_worker);
        ucp_cleanup(m_context);
    }

    std::string address() const
    {
        ucp_address_t *addr;
        size_t len;
        if (ucp_worker_get_address(m_worker, &addr, &len) != UCS_OK) {
            throw std::runtime_error("ucp_worker_get_address");
        }
        std::string s((const char*)addr, len);
        ucp_worker_release_address(m_worker, addr);
        return s;
    }

    ucp_ep_h connect(const std::string &addr, bool peer_mode = false,
                     ucp_err_handler_cb_t cb = NULL, void *arg = NULL)
    {
        ucp_ep_params_t params;
        memset(&params, 0, sizeof(params));
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address    = (const ucp_address_t*)addr.data();
        if (peer_mode) {
            params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                 UCP_EP_PARAM_FIELD_ERR_HANDLER;
            params.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
            params.err_handler.cb  = cb;
            params.err_handler.arg = arg;
        }
        ucp_ep_h ep;
        ucs_status_t status = ucp_ep_create(m_worker, &params, &ep);
        if (status != UCS_OK) {
            throw std::runtime_error(std::string("ucp_ep_create: ") +
                                     ucs_status_string(status));
        }
        return ep;
    }

    /** Wait for a request (NULL or error pass through); frees it. */
    ucs_status_t wait(ucs_status_ptr_t req, double timeout = 60.0)
    {
        if (req == NULL) {
            return UCS_OK;
        }
        if (UCS_PTR_IS_ERR(req)) {
            return UCS_PTR_STATUS(req);
        }
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(timeout);
        ucs_status_t status;
        while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
            ucp_worker_progress(m_worker);
            if (std::chrono::steady_clock::now() > deadline) {
                return UCS_ERR_TIMED_OUT;
            }
        }
        ucp_request_free(req);
        return status;
    }

    /** Wait for a receive (NULL or error pass through) at most @a timeout
     *  seconds (then UCS_ERR_TIMED_OUT, left pending); frees it. Its info,
     *  which the request keeps when it did not complete inside the call,
     *  goes to @a info. */
    ucs_status_t wait_recv(ucs_status_ptr_t req, ucp_tag_recv_info_t *info,
                           double timeout = 60.0)
    {
        if (!UCS_PTR_IS_PTR(req)) {
            return UCS_PTR_STATUS(req);
        }
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(timeout);
        ucs_status_t status;
        while ((status = ucp_request_test(req, info)) == UCS_INPROGRESS) {
            ucp_worker_progress(m_worker);
            if (std::chrono::steady_clock::now() > deadline) {
                return UCS_ERR_TIMED_OUT;
            }
        }
        ucp_request_free(req);
        return status;
    }

    void close(ucp_ep_h ep, bool force = false)
    {
        ucp_request_param_t param;
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
        EXPECT_EQ(UCS_OK, wait(ucp_ep_close_nbx(ep, &param)));
    }

    ucp_context_h context() const { return m_context; }
    ucp_worker_h worker() const { return m_worker; }

private:
    ucp_context_h m_context;
    ucp_worker_h  m_worker;
};

/** Byte @a i of a test pattern seeded by @a seed. */
inline uint8_t ucp_pattern(uint64_t seed, size_t i)
{
    return (uint8_t)((i * 131 + seed * 7 + (i >> 8)) & 0xff);
}

} // namespace ucx_test

#endif
