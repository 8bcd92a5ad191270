/*
 * Worker and endpoint behaviour outside tag matching proper: queries,
 * wakeup (event fd, arm, signal, wait), flushes, the old request calls and
 * completion rules (immediate completion, NO_IMM_CMPL, application-provided
 * request memory), close modes, and UCX_PROTO_INFO.
 */
#include "ucp_test.h"

#include "common/test_helpers.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace ucx_test;

TEST(test_ucp_worker, query_reports_thread_mode_name_and_address)
{
    ucp_entity e("", UCS_THREAD_MODE_MULTI);
    ucp_worker_attr_t attr;
    attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE | UCP_WORKER_ATTR_FIELD_NAME |
                      UCP_WORKER_ATTR_FIELD_ADDRESS |
                      UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS;
    attr.address_flags = UCP_WORKER_ADDRESS_FLAG_NET_ONLY;
    ASSERT_EQ(UCS_OK, ucp_worker_query(e.worker(), &attr));
    EXPECT_EQ(UCS_THREAD_MODE_MULTI, attr.thread_mode);
    EXPECT_GT(strlen(attr.name), 0u);
    /* A network-only address is shorter, and still connects (tcp). */
    EXPECT_LT(attr.address_length, e.address().size());
    std::string net((const char*)attr.address, attr.address_length);
    ucp_worker_release_address(e.worker(), attr.address);
    ucp_ep_h ep = e.connect(net);
    uint64_t v = 7, got = 0;
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    ASSERT_EQ(UCS_OK, e.wait(ucp_tag_send_nbx(ep, &v, 8, 1, &param)));
    ASSERT_EQ(UCS_OK, e.wait(ucp_tag_recv_nbx(e.worker(), &got, 8, 1, ~0ull, &param)));
    EXPECT_EQ(7u, got);
    e.close(ep);
}

TEST(test_ucp_worker, event_fd_needs_wakeup_feature)
{
    ucp_entity e;
    int fd;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, ucp_worker_get_efd(e.worker(), &fd));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, ucp_worker_arm(e.worker()));
}

TEST(test_ucp_worker, signal_wakes_a_waiting_thread_and_the_event_fd)
{
    ucp_entity e("tcp", UCS_THREAD_MODE_MULTI, UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP);
    int fd;
    ASSERT_EQ(UCS_OK, ucp_worker_get_efd(e.worker(), &fd));
    while (ucp_worker_progress(e.worker()) != 0) {
    }
    ASSERT_EQ(UCS_OK, ucp_worker_arm(e.worker()));
    struct pollfd pfd = {fd, POLLIN, 0};
    EXPECT_EQ(0, poll(&pfd, 1, 0)) << "nothing happened yet";
    std::thread t([&] {
        usleep(50000);
        ucp_worker_signal(e.worker());
    });
    EXPECT_EQ(UCS_OK, ucp_worker_wait(e.worker()));
    t.join();
    EXPECT_EQ(1, poll(&pfd, 1, 0));
}

TEST(test_ucp_worker, arrival_over_tcp_wakes_an_armed_worker)
{
    ucp_entity e("tcp", UCS_THREAD_MODE_SINGLE, UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP);
    ucp_entity s("tcp");
    ucp_ep_h ep = s.connect(e.address());
    int fd;
    ASSERT_EQ(UCS_OK, ucp_worker_get_efd(e.worker(), &fd));
    while (ucp_worker_progress(e.worker()) != 0) {
    }
    ucs_status_t status = ucp_worker_arm(e.worker());
    ASSERT_TRUE((status == UCS_OK) || (status == UCS_ERR_BUSY));
    uint64_t v = 3;
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    ucs_status_ptr_t sreq = ucp_tag_send_nbx(ep, &v, 8, 1, &param);
    struct pollfd pfd = {fd, POLLIN, 0};
    int ready = 0;
    for (int i = 0; (i < 200) && !ready; ++i) {
        ucp_worker_progress(s.worker());
        ready = poll(&pfd, 1, 10);
    }
    EXPECT_TRUE((status == UCS_ERR_BUSY) || (ready == 1));
    uint64_t got = 0;
    ASSERT_EQ(UCS_OK, e.wait(ucp_tag_recv_nbx(e.worker(), &got, 8, 1, ~0ull, &param)));
    EXPECT_EQ(3u, got);
    EXPECT_EQ(UCS_OK, s.wait(sreq));
    s.close(ep);
}

/* UCXX's asyncio "blocking" mode arms the worker, keeps calling
 * ucp_worker_progress() while its loop has other work, and only then sleeps
 * on the event fd. The arm must last until a message comes: before, the
 * first progress call after arming disarmed shared memory, and every UCXX
 * transfer over posix waited for the loop's 1 s timeout. */
TEST(test_ucp_worker, arm_survives_progress_calls_before_the_sleep_over_posix)
{
    ucp_entity e("posix", UCS_THREAD_MODE_SINGLE, UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP);
    ucp_entity s("posix");
    ucp_ep_h ep = s.connect(e.address());
    int fd;
    ASSERT_EQ(UCS_OK, ucp_worker_get_efd(e.worker(), &fd));
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));

    for (uint64_t round = 0; round < 3; ++round) {
        ucs_status_t status;
        do {
            while (ucp_worker_progress(e.worker()) != 0) {
            }
            status = ucp_worker_arm(e.worker());
        } while (status == UCS_ERR_BUSY);
        ASSERT_EQ(UCS_OK, status);
        for (int i = 0; i < 100; ++i) {
            EXPECT_EQ(0u, ucp_worker_progress(e.worker()));
        }
        struct pollfd pfd = {fd, POLLIN, 0};
        EXPECT_EQ(0, poll(&pfd, 1, 0)) << "nothing sent yet";

        uint64_t v = 7 + round;
        ucs_status_ptr_t sreq = ucp_tag_send_nbx(ep, &v, 8, 1, &param);
        EXPECT_EQ(1, poll(&pfd, 1, 2000)) << "round " << round << ": no wake-up";
        uint64_t got = 0;
        ASSERT_EQ(UCS_OK, e.wait(ucp_tag_recv_nbx(e.worker(), &got, 8, 1, ~0ull, &param)));
        EXPECT_EQ(v, got);
        EXPECT_EQ(UCS_OK, s.wait(sreq));
    }
    s.close(ep);
}

TEST(test_ucp_worker, flushes_complete_and_old_blocking_calls_return_ok)
{
    ucp_entity e("posix");
    ucp_ep_h ep = e.connect(e.address());
    std::vector<char> big(300000, 'b');
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    ucs_status_ptr_t sreq = ucp_tag_send_nbx(ep, big.data(), big.size(), 1, &param);
    ucs_status_ptr_t flush = ucp_ep_flush_nbx(ep, &param);
    ucs_status_ptr_t wflush = ucp_worker_flush_nbx(e.worker(), &param);
    std::vector<char> out(big.size());
    ASSERT_EQ(UCS_OK, e.wait(ucp_tag_recv_nbx(e.worker(), out.data(), out.size(), 1,
                                              ~0ull, &param)));
    EXPECT_EQ(UCS_OK, e.wait(sreq));
    EXPECT_EQ(UCS_OK, e.wait(flush));
    EXPECT_EQ(UCS_OK, e.wait(wflush));
    EXPECT_EQ(UCS_OK, ucp_ep_flush(ep));
    EXPECT_EQ(UCS_OK, ucp_worker_flush(e.worker()));
    EXPECT_EQ(UCS_OK, ucp_worker_fence(e.worker()));
    ucp_ep_destroy(ep);
}

static int g_send_cb_calls;
static void send_cb(void *req, ucs_status_t status)
{
    EXPECT_EQ(UCS_OK, status);
    ++g_send_cb_calls;
    ucp_request_free(req);
}

static void recv_cb(void *, ucs_status_t status, ucp_tag_recv_info_t *info)
{
    EXPECT_EQ(UCS_OK, status);
    EXPECT_EQ(5u, info->sender_tag);
    ++g_send_cb_calls;
}

TEST(test_ucp_worker, old_calls_follow_upstream_completion_rules)
{
    ucp_entity e("self");
    ucp_ep_h ep = e.connect(e.address());
    uint64_t v = 11, got = 0;
    g_send_cb_calls = 0;
    /* Small send completes inside the call: NULL, no callback. */
    EXPECT_TRUE(ucp_tag_send_nb(ep, &v, 8, ucp_dt_make_contig(1), 5, send_cb) == NULL);
    EXPECT_EQ(0, g_send_cb_calls);
    /* The old receive always returns a request; its callback ran already. */
    ucs_status_ptr_t r = ucp_tag_recv_nb(e.worker(), &got, 8, ucp_dt_make_contig(1), 5,
                                         ~0ull, recv_cb);
    ASSERT_FALSE(UCS_PTR_IS_ERR(r));
    ASSERT_TRUE(r != NULL);
    EXPECT_EQ(1, g_send_cb_calls);
    ucp_tag_recv_info_t info;
    EXPECT_EQ(UCS_OK, ucp_request_test(r, &info));
    EXPECT_EQ(8u, info.length);
    ucp_request_release(r);
    EXPECT_EQ(11u, got);

    /* Application-provided request memory: nbr calls. */
    ucp_context_attr_t cattr;
    cattr.field_mask = UCP_ATTR_FIELD_REQUEST_SIZE;
    ASSERT_EQ(UCS_OK, ucp_context_query(e.context(), &cattr));
    std::vector<char> rmem(cattr.request_size + 64), smem(cattr.request_size + 64);
    void *rreq = rmem.data() + cattr.request_size;
    void *sreq = smem.data() + cattr.request_size;
    std::vector<char> big(100000, 'q'), out(100000);
    ASSERT_EQ(UCS_OK, ucp_tag_recv_nbr(e.worker(), out.data(), out.size(),
                                       ucp_dt_make_contig(1), 6, ~0ull, rreq));
    ucs_status_t s = ucp_tag_send_nbr(ep, big.data(), big.size(), ucp_dt_make_contig(1),
                                      6, sreq);
    ASSERT_TRUE((s == UCS_OK) || (s == UCS_INPROGRESS));
    while ((s == UCS_INPROGRESS) &&
           (ucp_request_check_status(sreq) == UCS_INPROGRESS)) {
        ucp_worker_progress(e.worker());
    }
    while (ucp_request_test(rreq, &info) == UCS_INPROGRESS) {
        ucp_worker_progress(e.worker());
    }
    EXPECT_EQ(UCS_OK, ucp_request_test(rreq, &info));
    EXPECT_EQ(big.size(), info.length);
    EXPECT_EQ(big, out);
    e.close(ep);
}

TEST(test_ucp_worker, no_imm_cmpl_returns_a_request_and_calls_back)
{
    ucp_entity e("self");
    ucp_ep_h ep = e.connect(e.address());
    static int calls;
    calls = 0;
    uint64_t v = 1;
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL | UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.user_data    = &calls;
    param.cb.send      = [](void *, ucs_status_t, void *ud) { ++*(int*)ud; };
    ucs_status_ptr_t r = ucp_tag_send_nbx(ep, &v, 8, 1, &param);
    ASSERT_TRUE(r != NULL);
    ASSERT_FALSE(UCS_PTR_IS_ERR(r));
    EXPECT_EQ(UCS_OK, e.wait(r));
    EXPECT_EQ(1, calls);
    /* Without it, the same send completes inside the call. */
    param.op_attr_mask &= ~UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    EXPECT_TRUE(ucp_tag_send_nbx(ep, &v, 8, 1, &param) == NULL);
    EXPECT_EQ(1, calls);
    /* A receive of an arrived message completes inside the call too. */
    uint64_t got;
    ucp_tag_recv_info_t info;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask       = UCP_OP_ATTR_FIELD_RECV_INFO;
    param.recv_info.tag_info = &info;
    for (int i = 0; i < 10; ++i) {
        ucp_worker_progress(e.worker());
    }
    EXPECT_TRUE(ucp_tag_recv_nbx(e.worker(), &got, 8, 1, ~0ull, &param) == NULL);
    EXPECT_EQ(8u, info.length);
    EXPECT_TRUE(ucp_tag_recv_nbx(e.worker(), &got, 8, 1, ~0ull, &param) == NULL);
    e.close(ep);
}

TEST(test_ucp_worker, force_close_cancels_an_unacknowledged_sync_send)
{
    ucp_entity e("tcp");
    ucp_entity peer("tcp");
    ucp_ep_h ep = e.connect(peer.address());
    std::vector<char> big(1 << 20);
    static ucs_status_t seen;
    seen = UCS_OK;
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
    param.cb.send      = [](void *req, ucs_status_t s, void *) {
        seen = s;
        ucp_request_free(req);
    };
    ucs_status_ptr_t r = ucp_tag_send_sync_nbx(ep, big.data(), big.size(), 1, &param);
    ASSERT_FALSE(UCS_PTR_IS_ERR(r));
    e.close(ep, true);
    EXPECT_EQ(UCS_ERR_CANCELED, seen);
}

TEST(test_ucp_worker, ep_query_gives_name_and_no_sockaddr_for_address_eps)
{
    ucp_entity e("self");
    ucp_ep_params_t params;
    std::string addr = e.address();
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_NAME;
    params.address    = (const ucp_address_t*)addr.data();
    params.name       = "to-myself";
    ucp_ep_h ep;
    ASSERT_EQ(UCS_OK, ucp_ep_create(e.worker(), &params, &ep));
    ucp_ep_attr_t attr;
    attr.field_mask = UCP_EP_ATTR_FIELD_NAME;
    ASSERT_EQ(UCS_OK, ucp_ep_query(ep, &attr));
    EXPECT_STREQ("to-myself", attr.name);
    attr.field_mask = UCP_EP_ATTR_FIELD_REMOTE_SOCKADDR;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, ucp_ep_query(ep, &attr));
    attr.field_mask = UCP_EP_ATTR_FIELD_USER_DATA | UCP_EP_ATTR_FIELD_TRANSPORTS;
    ucp_transport_entry_t tl[4];
    attr.transports.entries     = tl;
    attr.transports.num_entries = 4;
    attr.transports.entry_size  = sizeof(tl[0]);
    ASSERT_EQ(UCS_OK, ucp_ep_query(ep, &attr));
    ASSERT_GE(attr.transports.num_entries, 1u);
    EXPECT_STREQ("self", tl[0].transport_name);
    /* A socket address must be one. */
    params.field_mask |= UCP_EP_PARAM_FIELD_SOCK_ADDR;
    ucp_ep_h ep2;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucp_ep_create(e.worker(), &params, &ep2));
    e.close(ep);
}

TEST(test_ucp_worker, proto_info_prints_protocol_per_size_range)
{
    setenv("UCX_PROTO_INFO", "y", 1);
    testing::internal::CaptureStdout();
    {
        ucp_entity e("posix");
        ucp_ep_h ep = e.connect(e.address());
        e.close(ep);
    }
    std::string out = testing::internal::GetCapturedStdout();
    unsetenv("UCX_PROTO_INFO");
    EXPECT_NE(std::string::npos, out.find("posix/memory")) << out;
    EXPECT_NE(std::string::npos, out.find("eager short")) << out;
    EXPECT_NE(std::string::npos, out.find("multi-fragment")) << out;
}

TEST(test_ucp_worker, address_without_common_transport_is_unreachable)
{
    /* A self-only worker's network-only address lists no transport. */
    ucp_entity a("self");
    ucp_worker_attr_t attr;
    attr.field_mask    = UCP_WORKER_ATTR_FIELD_ADDRESS |
                         UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS;
    attr.address_flags = UCP_WORKER_ADDRESS_FLAG_NET_ONLY;
    ASSERT_EQ(UCS_OK, ucp_worker_query(a.worker(), &attr));
    ucp_ep_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address    = attr.address;
    ucp_ep_h ep;
    EXPECT_EQ(UCS_ERR_UNREACHABLE, ucp_ep_create(a.worker(), &params, &ep));
    ucp_worker_release_address(a.worker(), attr.address);
}

TEST(test_ucp_worker, self_transport_connects_two_workers_of_one_process)
{
    ucp_entity a("self"), b("self");
    ucp_ep_h ep = a.connect(b.address());
    uint64_t v = 99, got = 0;
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    ASSERT_EQ(UCS_OK, a.wait(ucp_tag_send_nbx(ep, &v, 8, 3, &param)));
    ASSERT_EQ(UCS_OK, b.wait(ucp_tag_recv_nbx(b.worker(), &got, 8, 3, ~0ull, &param)));
    EXPECT_EQ(99u, got);
    a.close(ep);
}

TEST(test_ucp_worker, force_imm_cmpl_sends_now_or_says_no_resource)
{
    ucp_entity e("posix");
    ucp_ep_h ep = e.connect(e.address());
    std::vector<char> small(1000, 's'), big(100000, 'b');
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
    EXPECT_TRUE(ucp_tag_send_nbx(ep, small.data(), small.size(), 1, &param) == NULL);
    /* A multi-fragment message cannot go out inside the call. */
    ucs_status_ptr_t r = ucp_tag_send_nbx(ep, big.data(), big.size(), 1, &param);
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, UCS_PTR_STATUS(r));
    /* Fill the peer's FIFO (nobody receives): then it says no resource. */
    ucs_status_ptr_t last = NULL;
    for (int i = 0; (i < 1000) && (last == NULL); ++i) {
        last = ucp_tag_send_nbx(ep, small.data(), small.size(), 2, &param);
    }
    EXPECT_TRUE(UCS_PTR_IS_ERR(last));
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, UCS_PTR_STATUS(last));
    e.close(ep, true);
}

/* Error mode NONE, posix: the peer ends (@a kill_peer: SIGKILL, otherwise
 * it destroys its worker and exits normally) while our ep to it is idle;
 * then we close the ep. Returns what was logged meanwhile. */
static std::string close_after_peer_end(bool kill_peer)
{
    std::string log;
    (void)run_two_processes_raw(
        [&](oob_channel &ch) {
            config_sandbox sandbox; /* captures the log */
            ucp_entity e("posix");
            std::string remote;
            pid_t child;
            ASSERT_TRUE(ch.recv_blob(remote));
            ASSERT_TRUE(ch.recv(&child, sizeof(child)));
            ucp_ep_h ep = e.connect(remote);
            uint64_t v  = 1;
            ucp_request_param_t p;
            memset(&p, 0, sizeof(p));
            ASSERT_EQ(UCS_OK, e.wait(ucp_tag_send_nbx(ep, &v, 8, 1, &p)));
            char c = 0;
            ASSERT_TRUE(ch.send(&c, 1));
            if (kill_peer) {
                kill(child, SIGKILL);
            } else {
                ASSERT_TRUE(ch.recv(&c, 1)); /* its worker is gone */
            }
            usleep(100000);
            memset(&p, 0, sizeof(p));
            (void)e.wait(ucp_ep_close_nbx(ep, &p), 10);
            auto until = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(200);
            while (std::chrono::steady_clock::now() < until) {
                ucp_worker_progress(e.worker());
            }
            log = sandbox.log();
        },
        [&](oob_channel &ch) {
            {
                ucp_entity e("posix");
                pid_t self = getpid();
                ch.send_blob(e.address());
                ch.send(&self, sizeof(self));
                uint64_t v = 0;
                ucp_request_param_t p;
                memset(&p, 0, sizeof(p));
                ucs_status_ptr_t r = ucp_tag_recv_nbx(e.worker(), &v, 8, 1, ~0ull,
                                                      &p);
                (void)e.wait(r, 10);
                char c;
                ch.recv(&c, 1);
                if (kill_peer) {
                    for (;;) {
                        pause(); /* killed by the parent */
                    }
                }
            }
            char c = 0;
            ch.send(&c, 1);
        },
        60);
    return log;
}

TEST(test_ucp_worker, peer_ending_its_worker_in_order_is_not_reported_as_failure)
{
    std::string log = close_after_peer_end(false);
    EXPECT_EQ(std::string::npos, log.find("failed peer")) << log;
}

TEST(test_ucp_worker, killed_peer_is_still_reported_without_error_handler)
{
    std::string log = close_after_peer_end(true);
    EXPECT_NE(std::string::npos, log.find("failed peer")) << log;
}

/* UCXX's C++ core API: a progress thread loops over progress, arm and
 * epoll_wait on the worker's fd, while the application's thread posts sends
 * and receives on the same MULTI worker and waits for their completion
 * without progressing. Whatever work an application thread's call leaves
 * for progress, or brings in from the peer, must wake the sleeping progress
 * thread. A ping-pong between two processes; each sleep that ends by its
 * timeout while a request is in flight is a missed wake-up (UCXX's own
 * timeout is infinite: it hung). */
namespace
{

struct progress_thread {
    explicit progress_thread(ucp_worker_h w) : worker(w)
    {
        EXPECT_EQ(UCS_OK, ucp_worker_get_efd(worker, &efd));
        thread = std::thread([this] { loop(); });
    }

    ~progress_thread()
    {
        stop = true;
        ucp_worker_signal(worker);
        thread.join();
    }

    void loop()
    {
        struct pollfd pfd = {efd, POLLIN, 0};
        while (!stop) {
            if (ucp_worker_progress(worker) != 0) {
                continue;
            }
            if (ucp_worker_arm(worker) != UCS_OK) {
                continue;
            }
            if ((poll(&pfd, 1, 2000) == 0) && (inflight > 0)) {
                ++missed;
            }
        }
    }

    ucp_worker_h worker;
    int efd = -1;
    std::atomic<bool> stop{false};
    std::atomic<int> inflight{0};
    std::atomic<int> missed{0};
    std::thread thread;
};

/* Wait without progressing: the progress thread must complete it. */
ucs_status_t wait_for_progress_thread(progress_thread &pt, ucs_status_ptr_t r)
{
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    ucs_status_t status;

    if (!UCS_PTR_IS_PTR(r)) {
        return UCS_PTR_STATUS(r);
    }
    ++pt.inflight;
    while ((status = ucp_request_check_status(r)) == UCS_INPROGRESS) {
        if (std::chrono::steady_clock::now() > deadline) {
            --pt.inflight;
            return UCS_ERR_TIMED_OUT; /* leaked: the process ends anyway */
        }
        sched_yield();
    }
    --pt.inflight;
    ucp_request_free(r);
    return status;
}

void ping_pong_from_application_thread(oob_channel &ch, bool first, size_t size)
{
    ucp_entity e("", UCS_THREAD_MODE_MULTI, UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP);
    std::string remote;
    ASSERT_TRUE(ch.send_blob(e.address()));
    ASSERT_TRUE(ch.recv_blob(remote));
    ucp_ep_h ep = e.connect(remote);
    std::vector<char> buf(size, first ? 'a' : 'b');
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    {
        progress_thread pt(e.worker());
        for (int i = 0; i < 300; ++i) {
            if (first || (i > 0)) {
                ASSERT_EQ(UCS_OK,
                          wait_for_progress_thread(
                              pt, ucp_tag_send_nbx(ep, buf.data(), size, 1, &param)))
                    << size << " bytes, message " << i;
            }
            ASSERT_EQ(UCS_OK, wait_for_progress_thread(
                                  pt, ucp_tag_recv_nbx(e.worker(), buf.data(), size, 1,
                                                       ~0ull, &param)))
                << size << " bytes, message " << i;
        }
        if (!first) {
            ASSERT_EQ(UCS_OK, wait_for_progress_thread(
                                  pt, ucp_tag_send_nbx(ep, buf.data(), size, 1, &param)));
        }
        EXPECT_EQ(0, pt.missed.load())
            << size << " bytes: the progress thread slept through " << pt.missed.load()
            << " wake-ups";
        char c = 0;
        ASSERT_TRUE(ch.send(&c, 1));
        ASSERT_TRUE(ch.recv(&c, 1));
    }
    e.close(ep, true);
}

} // namespace

TEST(test_ucp_worker, progress_thread_sleeping_on_the_fd_sees_application_thread_work)
{
    for (size_t size : {size_t(8), size_t(16384), size_t(65536), size_t(1) << 20}) {
        run_two_processes(
            [&](oob_channel &ch) { ping_pong_from_application_thread(ch, true, size); },
            [&](oob_channel &ch) { ping_pong_from_application_thread(ch, false, size); },
            60);
    }
}

/* The same with UCXX's UCX_RNDV_THRESH: the messages above 8 KiB take
 * rendezvous (the receiver reads over cma, or fragments). */
TEST(test_ucp_worker, progress_thread_sleeping_on_the_fd_sees_rendezvous_work)
{
    scoped_setenv thresh("UCX_RNDV_THRESH", "8192");
    for (size_t size : {size_t(16384), size_t(65536), size_t(1) << 20}) {
        run_two_processes(
            [&](oob_channel &ch) { ping_pong_from_application_thread(ch, true, size); },
            [&](oob_channel &ch) { ping_pong_from_application_thread(ch, false, size); },
            60);
    }
}
