/**
 * @file ucp_cuda_peer.h
 * One side of a two-process UCP test with device memory: a context, a
 * worker and an ep to the other side, addresses exchanged out of band.
 */
#ifndef UCX_TEST_UCP_CUDA_PEER_H_
#define UCX_TEST_UCP_CUDA_PEER_H_

#include "common/two_process.h"

#include <ucp/api/ucp.h>

#include <chrono>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace cuda_test {

class ucp_peer {
public:
    /** Create context and worker only (tests of one process). */
    void init_worker()
    {
        ucp_params_t params;
        ucp_worker_params_t wparams;

        memset(&params, 0, sizeof(params));
        params.field_mask = UCP_PARAM_FIELD_FEATURES;
        params.features   = m_features;
        ASSERT_EQ(UCS_OK, ucp_init(&params, NULL, &m_context));
        memset(&wparams, 0, sizeof(wparams));
        ASSERT_EQ(UCS_OK, ucp_worker_create(m_context, &wparams, &m_worker));
    }

    /** Create context, worker and the ep to the process at the other end. */
    void init(ucx_test::oob_channel &oob)
    {
        ucp_ep_params_t eparams;
        ucp_address_t *address;
        size_t address_len;
        std::string remote;

        ASSERT_NO_FATAL_FAILURE(init_worker());
        ASSERT_EQ(UCS_OK, ucp_worker_get_address(m_worker, &address,
                                                 &address_len));
        ASSERT_TRUE(oob.send_blob(std::string((const char*)address,
                                              address_len)));
        ucp_worker_release_address(m_worker, address);
        ASSERT_TRUE(oob.recv_blob(remote));
        memset(&eparams, 0, sizeof(eparams));
        eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        eparams.address    = (const ucp_address_t*)remote.data();
        ASSERT_EQ(UCS_OK, ucp_ep_create(m_worker, &eparams, &m_ep));
    }

    /** Progress until @a ret completes; frees it; @a info for receives.
     *  Past @a timeout seconds (a peer that gave up after an error of its
     *  own) the request is cancelled and UCS_ERR_TIMED_OUT returned, so a
     *  failing test fails instead of hanging. */
    ucs_status_t wait(ucs_status_ptr_t ret, ucp_tag_recv_info_t *info = NULL,
                      double timeout = 120.0)
    {
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(timeout);
        ucs_status_t status;

        if (!UCS_PTR_IS_PTR(ret)) {
            return UCS_PTR_STATUS(ret);
        }
        while ((status = ucp_request_test(ret, info)) == UCS_INPROGRESS) {
            ucp_worker_progress(m_worker);
            if (std::chrono::steady_clock::now() > deadline) {
                ucp_request_cancel(m_worker, ret);
                ucp_worker_progress(m_worker);
                ucp_request_free(ret);
                return UCS_ERR_TIMED_OUT;
            }
        }
        ucp_request_free(ret);
        return status;
    }

    /** Both sides flush, then close and destroy everything. */
    void cleanup(ucx_test::oob_channel &oob)
    {
        ucp_request_param_t param;

        memset(&param, 0, sizeof(param));
        if (m_ep != NULL) {
            oob.barrier();
            EXPECT_EQ(UCS_OK, wait(ucp_ep_flush_nbx(m_ep, &param)));
            oob.barrier();
            param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
            wait(ucp_ep_close_nbx(m_ep, &param));
            m_ep = NULL;
        }
        destroy_worker();
    }

    /** Destroy worker and context (after init_worker(), or in cleanup()). */
    void destroy_worker()
    {
        if (m_worker != NULL) {
            ucp_worker_destroy(m_worker);
            m_worker = NULL;
        }
        if (m_context != NULL) {
            ucp_cleanup(m_context);
            m_context = NULL;
        }
    }

    /** ucp_init features; set before init(). */
    uint64_t      m_features = UCP_FEATURE_TAG;
    ucp_context_h m_context = NULL;
    ucp_worker_h  m_worker  = NULL;
    ucp_ep_h      m_ep      = NULL;
};

} // namespace cuda_test

#endif
