/**
 * @file test_ucp_sockaddr.cc
 * Client/server connection establishment: a listener on a loopback port
 * the kernel picks, IPv4 and IPv6, a client that sends before the server
 * accepted, tag and stream traffic both ways, socket addresses in
 * ucp_ep_query() and ucp_conn_request_query(), a rejected request, a port
 * nobody listens on, an address already in use, and the server's endpoint
 * learning that the client closed.
 */
#include "ucp/ucp_test.h"

#include <arpa/inet.h>
#include <signal.h>
#include <unistd.h>
#include <netinet/in.h>

#include <chrono>
#include <functional>
#include <vector>

using namespace ucx_test;

namespace {

const uint64_t k_features = UCP_FEATURE_TAG | UCP_FEATURE_STREAM | UCP_FEATURE_AM;

struct server_state {
    ucp_worker_h       worker   = NULL;
    ucp_listener_h     listener = NULL;
    ucp_conn_request_h request  = NULL;
    ucp_ep_h           ep       = NULL;
    bool               reject   = false;
    uint64_t           client_id = 0;
    ucs_status_t       ep_error = UCS_OK;
    /* A request of a client that died meanwhile may fail ucp_ep_create:
     * the fault tests accept that and look at create_status. */
    bool               create_may_fail = false;
    ucs_status_t       create_status   = UCS_OK;
    int                requests        = 0;
};

void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    *(ucs_status_t*)arg = status;
}

void on_conn(ucp_conn_request_h req, void *arg)
{
    server_state *s = (server_state*)arg;
    ucp_conn_request_attr_t attr;

    attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR |
                      UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ID;
    EXPECT_EQ(UCS_OK, ucp_conn_request_query(req, &attr));
    s->client_id = attr.client_id;
    if (s->reject) {
        EXPECT_EQ(UCS_OK, ucp_listener_reject(s->listener, req));
        return;
    }
    ucp_ep_params_t p;
    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST |
                   UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                   UCP_EP_PARAM_FIELD_ERR_HANDLER;
    p.conn_request    = req;
    p.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
    p.err_handler.cb  = on_ep_error;
    p.err_handler.arg = &s->ep_error;
    ++s->requests;
    s->create_status = ucp_ep_create(s->worker, &p, &s->ep);
    if (!s->create_may_fail) {
        EXPECT_EQ(UCS_OK, s->create_status);
    }
    if (s->create_status != UCS_OK) {
        s->ep = NULL;
    }
}

class test_ucp_sockaddr : public ::testing::TestWithParam<int> {
protected:
    void SetUp() override
    {
        m_server.reset(new ucp_entity("", UCS_THREAD_MODE_SINGLE, k_features));
        m_client.reset(new ucp_entity("", UCS_THREAD_MODE_SINGLE, k_features));
        m_state.worker = m_server->worker();
        memset(&m_addr, 0, sizeof(m_addr));
        if (GetParam() == AF_INET6) {
            auto *a6        = (struct sockaddr_in6*)&m_addr;
            a6->sin6_family = AF_INET6;
            a6->sin6_addr   = in6addr_loopback;
        } else {
            auto *a4            = (struct sockaddr_in*)&m_addr;
            a4->sin_family      = AF_INET;
            a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        }
        ucp_listener_params_t lp;
        memset(&lp, 0, sizeof(lp));
        lp.field_mask       = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
                              UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
        lp.sockaddr.addr    = (struct sockaddr*)&m_addr;
        lp.sockaddr.addrlen = sizeof(m_addr);
        lp.conn_handler.cb  = on_conn;
        lp.conn_handler.arg = &m_state;
        ucs_status_t status = ucp_listener_create(m_server->worker(), &lp,
                                                  &m_state.listener);
        if ((status != UCS_OK) && (GetParam() == AF_INET6)) {
            m_server.reset();
            m_client.reset();
            GTEST_SKIP() << "no IPv6 loopback here: " << ucs_status_string(status);
        }
        ASSERT_EQ(UCS_OK, status);
        ucp_listener_attr_t la;
        la.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
        ASSERT_EQ(UCS_OK, ucp_listener_query(m_state.listener, &la));
        memcpy(&m_addr, &la.sockaddr, sizeof(m_addr));
        EXPECT_NE(0, port());
    }

    void TearDown() override
    {
        if (m_state.listener != NULL) {
            ucp_listener_destroy(m_state.listener);
        }
        m_client.reset();
        m_server.reset();
    }

    int port() const
    {
        return ntohs((GetParam() == AF_INET6) ?
                     ((const struct sockaddr_in6*)&m_addr)->sin6_port :
                     ((const struct sockaddr_in*)&m_addr)->sin_port);
    }

    ucp_ep_h connect(ucs_status_t *error)
    {
        ucp_ep_params_t p;
        memset(&p, 0, sizeof(p));
        p.field_mask = UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_FLAGS |
                       UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                       UCP_EP_PARAM_FIELD_ERR_HANDLER;
        p.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
        p.sockaddr.addr    = (struct sockaddr*)&m_addr;
        p.sockaddr.addrlen = sizeof(m_addr);
        p.err_mode         = UCP_ERR_HANDLING_MODE_PEER;
        p.err_handler.cb   = on_ep_error;
        p.err_handler.arg  = error;
        ucp_ep_h ep = NULL;
        EXPECT_EQ(UCS_OK, ucp_ep_create(m_client->worker(), &p, &ep));
        return ep;
    }

    bool until(const std::function<bool()> &done, double sec = 30) const
    {
        auto end = std::chrono::steady_clock::now() +
                   std::chrono::duration<double>(sec);
        while (!done()) {
            if (std::chrono::steady_clock::now() > end) {
                return false;
            }
            ucp_worker_progress(m_server->worker());
            ucp_worker_progress(m_client->worker());
        }
        return true;
    }

    ucs_status_t wait(ucs_status_ptr_t req) const
    {
        if (!UCS_PTR_IS_PTR(req)) {
            return UCS_PTR_STATUS(req);
        }
        ucs_status_t s = UCS_INPROGRESS;
        until([&] { return (s = ucp_request_check_status(req)) != UCS_INPROGRESS; });
        ucp_request_free(req);
        return s;
    }

    std::unique_ptr<ucp_entity> m_server, m_client;
    server_state                m_state;
    struct sockaddr_storage     m_addr;
};

TEST_P(test_ucp_sockaddr, client_sends_before_accept_and_both_sides_talk)
{
    ucs_status_t client_error = UCS_OK;
    ucp_ep_h ep = connect(&client_error);
    /* Posted before the server even saw the request. */
    std::vector<char> big(1 << 20, 'b'), got_big(1 << 20);
    uint64_t small = 42, got_small = 0;
    ucs_status_ptr_t s1 = ucp_tag_send_nbx(ep, &small, sizeof(small), 1, NULL);
    ucs_status_ptr_t s2 = ucp_stream_send_nbx(ep, big.data(), big.size(), NULL);
    ASSERT_FALSE(UCS_PTR_IS_ERR(s1));
    ASSERT_FALSE(UCS_PTR_IS_ERR(s2));
    ASSERT_TRUE(until([&] { return m_state.ep != NULL; }));
    EXPECT_EQ(UCS_OK, wait(ucp_tag_recv_nbx(m_server->worker(), &got_small,
                                            sizeof(got_small), 1, ~0ull, NULL)));
    EXPECT_EQ(42u, got_small);
    ucp_request_param_t p;
    memset(&p, 0, sizeof(p));
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags        = UCP_STREAM_RECV_FLAG_WAITALL;
    size_t len;
    EXPECT_EQ(UCS_OK, wait(ucp_stream_recv_nbx(m_state.ep, got_big.data(),
                                               got_big.size(), &len, &p)));
    EXPECT_TRUE(big == got_big);
    EXPECT_EQ(UCS_OK, wait(s1));
    EXPECT_EQ(UCS_OK, wait(s2));
    /* And back, on the server's endpoint. */
    small = 7;
    EXPECT_EQ(UCS_OK, wait(ucp_stream_send_nbx(m_state.ep, &small, sizeof(small),
                                               NULL)));
    got_small = 0;
    EXPECT_EQ(UCS_OK, wait(ucp_stream_recv_nbx(ep, &got_small, sizeof(got_small),
                                               &len, &p)));
    EXPECT_EQ(7u, got_small);

    ucp_ep_attr_t attr;
    attr.field_mask = UCP_EP_ATTR_FIELD_REMOTE_SOCKADDR |
                      UCP_EP_ATTR_FIELD_LOCAL_SOCKADDR;
    ASSERT_EQ(UCS_OK, ucp_ep_query(ep, &attr));
    EXPECT_EQ(GetParam(), attr.remote_sockaddr.ss_family);
    EXPECT_EQ(GetParam(), attr.local_sockaddr.ss_family);

    /* The client closes: the server's endpoint learns it. */
    EXPECT_EQ(UCS_OK, wait(ucp_ep_close_nbx(ep, NULL)));
    EXPECT_TRUE(until([&] { return m_state.ep_error != UCS_OK; }));
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, m_state.ep_error);
    ucp_request_param_t force;
    memset(&force, 0, sizeof(force));
    force.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    force.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    EXPECT_EQ(UCS_OK, wait(ucp_ep_close_nbx(m_state.ep, &force)));
}

TEST_P(test_ucp_sockaddr, rejected_request_fails_the_client)
{
    m_state.reject = true;
    ucs_status_t client_error = UCS_OK;
    ucp_ep_h ep = connect(&client_error);
    uint64_t v = 1;
    ucs_status_ptr_t s = ucp_tag_send_nbx(ep, &v, sizeof(v), 1, NULL);
    ASSERT_TRUE(until([&] { return client_error != UCS_OK; }));
    EXPECT_EQ(UCS_ERR_REJECTED, client_error);
    EXPECT_EQ(UCS_ERR_REJECTED, wait(s));
    ucp_request_param_t force;
    memset(&force, 0, sizeof(force));
    force.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    force.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    EXPECT_EQ(UCS_OK, wait(ucp_ep_close_nbx(ep, &force)));
}

TEST_P(test_ucp_sockaddr, nobody_listening_and_port_in_use)
{
    /* A second listener on the same port: refused with BUSY. */
    ucp_listener_params_t lp;
    memset(&lp, 0, sizeof(lp));
    lp.field_mask       = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
                          UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lp.sockaddr.addr    = (struct sockaddr*)&m_addr;
    lp.sockaddr.addrlen = sizeof(m_addr);
    lp.conn_handler.cb  = on_conn;
    lp.conn_handler.arg = &m_state;
    ucp_listener_h l2;
    EXPECT_EQ(UCS_ERR_BUSY, ucp_listener_create(m_server->worker(), &lp, &l2));
    /* No handler: a parameter error. */
    lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucp_listener_create(m_server->worker(), &lp, &l2));

    ucp_listener_destroy(m_state.listener);
    m_state.listener = NULL;
    ucs_status_t client_error = UCS_OK;
    ucp_ep_h ep = connect(&client_error);
    ASSERT_TRUE(until([&] { return client_error != UCS_OK; }));
    EXPECT_EQ(UCS_ERR_UNREACHABLE, client_error);
    ucp_request_param_t force;
    memset(&force, 0, sizeof(force));
    force.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    force.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    EXPECT_EQ(UCS_OK, wait(ucp_ep_close_nbx(ep, &force)));
}

INSTANTIATE_TEST_SUITE_P(family, test_ucp_sockaddr, ::testing::Values(AF_INET, AF_INET6));

/* A client killed during the handshake, right after ucp_ep_create or after
 * some progress of its side: the server's endpoint of it, if its request
 * got that far, fails within a bounded time; nothing hangs, and the same
 * listener then accepts a new client that talks. */
TEST(test_ucp_sockaddr_fault, client_killed_mid_handshake_then_another_connects)
{
    const double bound = 30;

    for (int iters : {0, 50, 2000}) {
        two_process_result r = run_two_processes_raw(
            [&](oob_channel &ch) {
                ucp_entity server("", UCS_THREAD_MODE_SINGLE, k_features);
                ucp_entity client("", UCS_THREAD_MODE_SINGLE, k_features);
                server_state st;
                st.worker          = server.worker();
                st.create_may_fail = true;
                struct sockaddr_in a;
                memset(&a, 0, sizeof(a));
                a.sin_family      = AF_INET;
                a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                ucp_listener_params_t lp;
                memset(&lp, 0, sizeof(lp));
                lp.field_mask       = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
                                      UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
                lp.sockaddr.addr    = (struct sockaddr*)&a;
                lp.sockaddr.addrlen = sizeof(a);
                lp.conn_handler.cb  = on_conn;
                lp.conn_handler.arg = &st;
                ASSERT_EQ(UCS_OK, ucp_listener_create(server.worker(), &lp, &st.listener));
                ucp_listener_attr_t la;
                la.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
                ASSERT_EQ(UCS_OK, ucp_listener_query(st.listener, &la));
                memcpy(&a, &la.sockaddr, sizeof(a));
                ASSERT_TRUE(ch.send(&a, sizeof(a)));
                pid_t pid;
                ASSERT_TRUE(ch.recv(&pid, sizeof(pid)));
                kill(pid, SIGKILL);

                auto progress_until = [&](const std::function<bool()> &done,
                                          double sec) {
                    auto end = std::chrono::steady_clock::now() +
                               std::chrono::duration<double>(sec);
                    while (!done()) {
                        if (std::chrono::steady_clock::now() > end) {
                            return false;
                        }
                        ucp_worker_progress(server.worker());
                        ucp_worker_progress(client.worker());
                    }
                    return true;
                };
                /* Its request may never have arrived: then 3 quiet seconds. */
                auto start = std::chrono::steady_clock::now();
                bool ended = progress_until([&] {
                    return (st.ep != NULL) ? (st.ep_error != UCS_OK) :
                           (std::chrono::steady_clock::now() - start >
                            std::chrono::seconds(3));
                }, bound);
                EXPECT_TRUE(ended) << "the server's endpoint of a dead client "
                                      "did not fail within " << bound << " s";
                printf("[ fault    ] client killed after %d progress calls: %s\n",
                       iters, (st.requests == 0) ? "no request reached the server" :
                       (st.ep == NULL) ? ucs_status_string(st.create_status) :
                       ucs_status_string(st.ep_error));
                /* A failed creation names the cause; it is not a hang. */
                if ((st.requests > 0) && (st.ep == NULL)) {
                    EXPECT_NE(UCS_OK, st.create_status);
                }
                st.create_may_fail = false;
                if (st.ep != NULL) {
                    ucp_request_param_t force;
                    memset(&force, 0, sizeof(force));
                    force.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
                    force.flags        = UCP_EP_CLOSE_FLAG_FORCE;
                    EXPECT_NE(UCS_ERR_TIMED_OUT,
                              server.wait(ucp_ep_close_nbx(st.ep, &force), bound));
                    st.ep       = NULL;
                    st.ep_error = UCS_OK;
                }

                /* The listener still accepts: a client that talks. */
                ucs_status_t cerr = UCS_OK;
                ucp_ep_params_t p;
                memset(&p, 0, sizeof(p));
                p.field_mask = UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_FLAGS |
                               UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                               UCP_EP_PARAM_FIELD_ERR_HANDLER;
                p.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
                p.sockaddr.addr    = (struct sockaddr*)&a;
                p.sockaddr.addrlen = sizeof(a);
                p.err_mode         = UCP_ERR_HANDLING_MODE_PEER;
                p.err_handler.cb   = on_ep_error;
                p.err_handler.arg  = &cerr;
                ucp_ep_h ep;
                ASSERT_EQ(UCS_OK, ucp_ep_create(client.worker(), &p, &ep));
                uint64_t v = 99, got = 0;
                ucs_status_ptr_t sreq = ucp_tag_send_nbx(ep, &v, sizeof(v), 5, NULL);
                ASSERT_FALSE(UCS_PTR_IS_ERR(sreq));
                ucs_status_ptr_t rreq = ucp_tag_recv_nbx(server.worker(), &got,
                                                         sizeof(got), 5, ~0ull, NULL);
                ASSERT_FALSE(UCS_PTR_IS_ERR(rreq));
                EXPECT_TRUE(progress_until([&] {
                    return (!UCS_PTR_IS_PTR(rreq) ||
                            (ucp_request_check_status(rreq) != UCS_INPROGRESS)) &&
                           (!UCS_PTR_IS_PTR(sreq) ||
                            (ucp_request_check_status(sreq) != UCS_INPROGRESS));
                }, bound));
                if (UCS_PTR_IS_PTR(rreq)) {
                    EXPECT_EQ(UCS_OK, ucp_request_check_status(rreq));
                    ucp_request_free(rreq);
                }
                if (UCS_PTR_IS_PTR(sreq)) {
                    ucp_request_free(sreq);
                }
                EXPECT_EQ(99u, got);
                EXPECT_EQ(UCS_OK, cerr);
                client.close(ep);
                if (st.ep != NULL) {
                    server.close(st.ep);
                }
                ucp_listener_destroy(st.listener);
            },
            [&](oob_channel &ch) {
                ucp_entity c("", UCS_THREAD_MODE_SINGLE, k_features);
                struct sockaddr_in a;
                ASSERT_TRUE(ch.recv(&a, sizeof(a)));
                ucp_ep_params_t p;
                memset(&p, 0, sizeof(p));
                p.field_mask = UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_FLAGS;
                p.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
                p.sockaddr.addr    = (struct sockaddr*)&a;
                p.sockaddr.addrlen = sizeof(a);
                ucp_ep_h ep;
                ASSERT_EQ(UCS_OK, ucp_ep_create(c.worker(), &p, &ep));
                for (int i = 0; i < iters; ++i) {
                    ucp_worker_progress(c.worker());
                }
                pid_t self = getpid();
                ch.send(&self, sizeof(self));
                for (;;) { /* until SIGKILL, the handshake left where it is */
                    pause();
                }
            },
            60.0);
        (void)r; /* the client was killed: its status says nothing */
    }
}

} // namespace
