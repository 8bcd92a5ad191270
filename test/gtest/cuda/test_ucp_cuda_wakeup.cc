/**
 * @file test_ucp_cuda_wakeup.cc
 * Device rendezvous under event-driven progress, the way UCXX's progress
 * thread and UCX-Py's blocking mode drive a worker: progress until nothing
 * happens, ucp_worker_arm(), and sleep in epoll_wait() on the worker's fd
 * when arming succeeds. A copy of the GPU's copy engines completes without
 * touching any fd, so a worker that lets its caller sleep while one is in
 * flight (or while a deferred copy waits for the next progress to launch
 * it) stalls until the caller's timeout: UCXX's 1 ms made every GPU message
 * of its benchmark cost a millisecond. Each sleep that ends by timeout with
 * the request still in flight is counted as a missed wake-up; there must be
 * none, for every rendezvous scheme (get by the receiver, put by the
 * sender, the fragment pipeline).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cuda/cuda_test.h"
#include "cuda/ucp_cuda_peer.h"

#include <ucp/api/ucp.h>

#include <sys/epoll.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using cuda_test::allocation;
using cuda_test::mem_kind;
using ucx_test::oob_channel;

namespace
{

const size_t k_alloc = 4 * 1024 * 1024;
/* Longer than any honest wait for the other process, far shorter than the
 * test's limit: a sleep this long with work in flight is a missed wake-up. */
const int k_sleep_ms = 3000;

class wakeup_peer : public cuda_test::ucp_peer
{
  public:
    wakeup_peer()
    {
        m_features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    }

    /* UCXX's Worker::progressWorkerEvent() in a loop. */
    ucs_status_t wait_event_driven(ucs_status_ptr_t ret)
    {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        struct epoll_event ev;
        ucs_status_t status;
        int efd;

        if (!UCS_PTR_IS_PTR(ret)) {
            return UCS_PTR_STATUS(ret);
        }
        EXPECT_EQ(UCS_OK, ucp_worker_get_efd(m_worker, &efd));
        while ((status = ucp_request_check_status(ret)) == UCS_INPROGRESS) {
            if (std::chrono::steady_clock::now() > deadline) {
                ucp_request_cancel(m_worker, ret);
                ucp_worker_progress(m_worker);
                ucp_request_free(ret);
                return UCS_ERR_TIMED_OUT;
            }
            if (ucp_worker_progress(m_worker) != 0) {
                continue;
            }
            status = ucp_worker_arm(m_worker);
            if (status == UCS_ERR_BUSY) {
                continue;
            }
            EXPECT_EQ(UCS_OK, status);
            if ((epoll_wait(efd, &ev, 1, k_sleep_ms) == 0) &&
                (ucp_request_check_status(ret) == UCS_INPROGRESS)) {
                ++m_missed;
            }
        }
        ucp_request_free(ret);
        return status;
    }

    unsigned m_missed = 0;
};

struct scheme {
    const char *name;
    mem_kind sender;
    mem_kind receiver;
};

void set_env()
{
    setenv("CUDASIM_ASYNC", "1", 1);
    /* Copies stay in flight long enough for every arm to see them. */
    setenv("CUDASIM_ASYNC_DELAY_US", "20000", 1);
    /* What UCXX sets for its users. */
    setenv("UCX_RNDV_THRESH", "8192", 1);
    setenv("UCX_RNDV_FRAG_MEM_TYPE", "cuda", 1);
}

void run(const scheme &sc)
{
    const std::vector<size_t> sizes = {64 * 1024, 1024 * 1024 + 5, k_alloc};

    auto receiver = [&](oob_channel &oob) {
        set_env();
        cuda_test::init_device(0);
        wakeup_peer p;
        p.init(oob);
        allocation buf;
        ASSERT_EQ(CUDA_SUCCESS, buf.allocate(sc.receiver, k_alloc));
        unsigned seed = 0;
        for (size_t size : sizes) {
            ucp_request_param_t param;
            memset(&param, 0, sizeof(param));
            ASSERT_EQ(CUDA_SUCCESS, cuMemsetD8(buf.ptr, 0, k_alloc));
            ASSERT_EQ(CUDA_SUCCESS, cuCtxSynchronize());
            ASSERT_TRUE(oob.barrier());
            ucs_status_ptr_t r = ucp_tag_recv_nbx(p.m_worker, (void *)buf.ptr, size,
                                                  ++seed, ~0ull, &param);
            ASSERT_EQ(UCS_OK, p.wait_event_driven(r)) << size;
            EXPECT_TRUE(cuda_test::check_pattern(buf.ptr, size, seed))
                << sc.name << ", " << size << " bytes";
        }
        EXPECT_EQ(0u, p.m_missed)
            << sc.name << ": the receiver slept " << p.m_missed << " x " << k_sleep_ms
            << " ms with its rendezvous in flight";
        p.cleanup(oob);
    };
    auto sender = [&](oob_channel &oob) {
        set_env();
        cuda_test::init_device(0);
        wakeup_peer p;
        p.init(oob);
        allocation buf;
        ASSERT_EQ(CUDA_SUCCESS, buf.allocate(sc.sender, k_alloc));
        unsigned seed = 0;
        for (size_t size : sizes) {
            ucp_request_param_t param;
            memset(&param, 0, sizeof(param));
            cuda_test::write_pattern(buf.ptr, size, ++seed);
            ASSERT_EQ(CUDA_SUCCESS, cuCtxSynchronize());
            ASSERT_TRUE(oob.barrier());
            ucs_status_ptr_t r =
                ucp_tag_send_nbx(p.m_ep, (void *)buf.ptr, size, seed, &param);
            ASSERT_EQ(UCS_OK, p.wait_event_driven(r)) << size;
        }
        EXPECT_EQ(0u, p.m_missed)
            << sc.name << ": the sender slept " << p.m_missed << " x " << k_sleep_ms
            << " ms with its rendezvous in flight";
        p.cleanup(oob);
    };
    cuda_test::cuda_two_processes(receiver, sender, 120.0);
}

class test_ucp_cuda_wakeup : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        if (cuda_test::device_count() < 1) {
            GTEST_SKIP() << "no CUDA device";
        }
    }
};

TEST_F(test_ucp_cuda_wakeup, get_by_the_receiver_keeps_it_awake)
{
    run({"get", mem_kind::legacy, mem_kind::legacy});
}

TEST_F(test_ucp_cuda_wakeup, put_by_the_sender_keeps_it_awake)
{
    run({"put", mem_kind::pool_no_handle, mem_kind::legacy});
}

TEST_F(test_ucp_cuda_wakeup, fragment_pipeline_keeps_both_awake)
{
    run({"pipeline", mem_kind::pool_no_handle, mem_kind::pool_no_handle});
}

} // namespace
