/*
 * Peer failures beyond a SIGKILL under traffic (test_ucp_fault.cc) and a
 * death while idle (test_ucp_am.cc): a peer that is stopped (SIGSTOP) --
 * alive to every transport, yet it answers nothing --, a peer that exits
 * without closing anything, endpoints without error handling whose flush
 * and close must still end, the tcp keepalive settings, and a tcp path that
 * goes away (a veth link set down between two network namespaces).
 */
#include "ucp_test.h"
#include "common/resource_census.h"
#include "common/test_helpers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace ucx_test;

namespace {

const double k_bound = 30; /* seconds a survivor may need, at most */

struct ep_errors {
    int          count  = 0;
    ucs_status_t status = UCS_OK;
};

void count_error(void *arg, ucp_ep_h, ucs_status_t status)
{
    ++((ep_errors*)arg)->count;
    ((ep_errors*)arg)->status = status;
}

typedef std::chrono::steady_clock clk;

double seconds_since(clk::time_point start)
{
    return std::chrono::duration<double>(clk::now() - start).count();
}

/* Progress for @a seconds, or until @a errors counts one. */
void progress_for(ucp_entity &e, double seconds, const ep_errors *errors = NULL)
{
    clk::time_point start = clk::now();
    while ((seconds_since(start) < seconds) && ((errors == NULL) || (errors->count == 0))) {
        ucp_worker_progress(e.worker());
    }
}

ucp_request_param_t no_param()
{
    ucp_request_param_t p;
    memset(&p, 0, sizeof(p));
    return p;
}

/* One tag message each way, so that both sides are connected. */
void exchange_hello(ucp_entity &e, ucp_ep_h ep, bool first)
{
    uint64_t out = 1, in = 0;
    ucp_request_param_t p = no_param();
    if (first) {
        ASSERT_EQ(UCS_OK, e.wait(ucp_tag_send_nbx(ep, &out, sizeof(out), 7, &p)));
    }
    ASSERT_EQ(UCS_OK, e.wait_recv(ucp_tag_recv_nbx(e.worker(), &in, sizeof(in), 7,
                                                   (ucp_tag_t)-1, &p),
                                  NULL));
    if (!first) {
        ASSERT_EQ(UCS_OK, e.wait(ucp_tag_send_nbx(ep, &out, sizeof(out), 7, &p)));
    }
}

volatile sig_atomic_t g_exit_requested;

void request_exit(int)
{
    g_exit_requested = 1;
}

} // namespace

class test_ucp_peer_failure : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override
    {
        /* probes every 400 ms, stopped peers failed after 2 s */
        m_interval.reset(new scoped_setenv("UCX_KEEPALIVE_INTERVAL", "400ms"));
        m_timeout.reset(new scoped_setenv("UCX_KEEPALIVE_TIMEOUT", "2s"));
    }

    /*
     * The victim (a child) connects in error mode PEER, exchanges a message
     * and reports its pid, then progresses; SIGUSR1 makes it exit(0) without
     * closing anything. The survivor (this process) connects in @a mode and
     * runs @a survivor, which must leave the victim dead or dying; the
     * victim is SIGKILLed afterwards in any case. Once the survivor's
     * worker is gone it holds the fds and memfds it had before.
     */
    void run(const std::function<void(ucp_entity &, ucp_ep_h, pid_t)> &survivor,
             ucp_err_handling_mode_t mode = UCP_ERR_HANDLING_MODE_PEER)
    {
        (void)run_two_processes_raw(
            [&](oob_channel &ch) {
                resource_census before = resource_census::take();
                survive(ch, survivor, mode);
                /* the failed endpoint's sockets, segments and pidfds went
                 * with the worker */
                resource_census after = resource_census::take();
                EXPECT_EQ(before.fds, after.fds) << "fds leaked";
                EXPECT_EQ(before.memfds, after.memfds) << "memfds leaked";
            },
            [&](oob_channel &ch) {
                g_exit_requested = 0;
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                signal(SIGUSR1, request_exit);
                ucp_entity e(GetParam(), UCS_THREAD_MODE_SINGLE, UCP_FEATURE_TAG);
                std::string peer;
                ASSERT_TRUE(ch.recv_blob(peer));
                ASSERT_TRUE(ch.send_blob(e.address()));
                ucp_ep_h ep = e.connect(peer, true);
                exchange_hello(e, ep, false);
                pid_t self = getpid();
                ASSERT_TRUE(ch.send(&self, sizeof(self)));
                /* tag 3 is always received (and acknowledged, for sync
                 * sends); other tags stay unexpected */
                std::vector<char> rbuf(2u << 20);
                ucp_request_param_t p = no_param();
                ucs_status_ptr_t r    = NULL;
                while (!g_exit_requested) {
                    if (r == NULL) {
                        r = ucp_tag_recv_nbx(e.worker(), rbuf.data(), rbuf.size(), 3,
                                             (ucp_tag_t)-1, &p);
                        ASSERT_TRUE(UCS_PTR_IS_PTR(r));
                    }
                    ucp_worker_progress(e.worker());
                    if (ucp_request_check_status(r) != UCS_INPROGRESS) {
                        ucp_request_free(r);
                        r = NULL;
                    }
                }
                fflush(stdout);
                exit(0); /* an application that never closes */
            },
            120.0);
    }

    /* The survivor's side of run(): its entity lives only in here. */
    void survive(oob_channel &ch,
                 const std::function<void(ucp_entity &, ucp_ep_h, pid_t)> &survivor,
                 ucp_err_handling_mode_t mode)
    {
        ucp_entity e(GetParam(), UCS_THREAD_MODE_SINGLE, UCP_FEATURE_TAG);
        std::string peer;
        pid_t pid;
        ASSERT_TRUE(ch.send_blob(e.address()));
        ASSERT_TRUE(ch.recv_blob(peer));
        ucp_ep_h ep = e.connect(peer, mode == UCP_ERR_HANDLING_MODE_PEER, count_error,
                                &m_errors);
        exchange_hello(e, ep, true);
        ASSERT_TRUE(ch.recv(&pid, sizeof(pid)));
        survivor(e, ep, pid);
        kill(pid, SIGKILL);
        ucp_request_param_t p = no_param();
        EXPECT_NE(UCS_ERR_TIMED_OUT, e.wait(ucp_ep_close_nbx(ep, &p), k_bound))
                << "close of the ep to a failed peer";
    }

    /* Wait for the error handler; @return the seconds it took. */
    double wait_for_error(ucp_entity &e, clk::time_point start)
    {
        while ((m_errors.count == 0) && (seconds_since(start) < k_bound)) {
            ucp_worker_progress(e.worker());
        }
        return seconds_since(start);
    }

    ep_errors                      m_errors;
    std::unique_ptr<scoped_setenv> m_interval, m_timeout;
};

/* Nothing in flight: a stopped peer fails the endpoint once it has been
 * stopped for UCX_KEEPALIVE_TIMEOUT, not before. */
TEST_P(test_ucp_peer_failure, stopped_idle_peer_fails_after_the_keepalive_timeout)
{
    run([&](ucp_entity &e, ucp_ep_h, pid_t pid) {
        progress_for(e, 0.5);
        kill(pid, SIGSTOP);
        double took = wait_for_error(e, clk::now());
        printf("[ fault    ] %s: stopped idle peer failed after %.2f s (%s)\n",
               GetParam(), took, ucs_status_string(m_errors.status));
        EXPECT_EQ(1, m_errors.count) << "error handler calls";
        EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, m_errors.status);
        EXPECT_GE(took, 1.9) << "failed before the 2 s timeout";
        EXPECT_LT(took, 6.0) << "2 s timeout, probes every 400 ms";
    });
}

/* Sends of every protocol to a stopped peer: each ends (most with an
 * error) once the peer counts as unresponsive, and later sends fail at
 * once. */
TEST_P(test_ucp_peer_failure, stopped_peer_with_traffic_in_flight_fails_its_requests)
{
    run([&](ucp_entity &e, ucp_ep_h ep, pid_t pid) {
        kill(pid, SIGSTOP);
        clk::time_point start = clk::now();
        std::vector<std::vector<char>> bufs;
        std::vector<ucs_status_ptr_t> reqs;
        ucp_request_param_t p = no_param();
        for (int round = 0; round < 4; ++round) {
            for (size_t len : {(size_t)8, (size_t)65536, (size_t)(1u << 20)}) {
                bufs.emplace_back(len, 's');
                reqs.push_back(ucp_tag_send_nbx(ep, bufs.back().data(), len, 3, &p));
            }
            bufs.emplace_back(100, 'y');
            reqs.push_back(ucp_tag_send_sync_nbx(ep, bufs.back().data(), 100, 3, &p));
        }
        reqs.push_back(ucp_ep_flush_nbx(ep, &p));
        int failed = 0;
        for (ucs_status_ptr_t r : reqs) {
            ucs_status_t st = e.wait(r, k_bound);
            ASSERT_NE(UCS_ERR_TIMED_OUT, st) << "a request outlived the stopped peer";
            failed += (st != UCS_OK);
        }
        double took = seconds_since(start);
        wait_for_error(e, start);
        printf("[ fault    ] %s: stopped peer: %d of %zu requests failed, all done "
               "after %.2f s (%s)\n",
               GetParam(), failed, reqs.size(), took, ucs_status_string(m_errors.status));
        EXPECT_EQ(1, m_errors.count) << "error handler calls";
        EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, m_errors.status);
        EXPECT_GE(failed, 4) << "the sync sends cannot have been acknowledged";
        EXPECT_GE(took, 1.9) << "requests failed before the 2 s timeout";
        EXPECT_LT(took, 6.0);
        EXPECT_TRUE(UCS_PTR_IS_ERR(ucp_tag_send_nbx(ep, bufs[0].data(), 8, 3, &p)))
                << "a send on the failed ep";
    });
}

/* A peer stopped for less than the timeout and continued is not failed:
 * the endpoint still carries messages both ways. */
TEST_P(test_ucp_peer_failure, peer_continued_before_the_timeout_is_not_failed)
{
    run([&](ucp_entity &e, ucp_ep_h ep, pid_t pid) {
        kill(pid, SIGSTOP);
        progress_for(e, 1.2, &m_errors);
        kill(pid, SIGCONT);
        progress_for(e, 2.5, &m_errors);
        EXPECT_EQ(0, m_errors.count) << ucs_status_string(m_errors.status);
        uint64_t v = 5;
        ucp_request_param_t p = no_param();
        EXPECT_EQ(UCS_OK, e.wait(ucp_tag_send_sync_nbx(ep, &v, sizeof(v), 3, &p), k_bound))
                << "the peer's worker acknowledges again";
    });
}

/* Time counts only while this process looks: after a pause of its own
 * longer than the timeout (a suspended job whose processes are continued
 * one after the other), a peer still stopped starts a new count. Without
 * that rule this test's endpoint fails 4 s into a 2 s timeout. */
TEST_P(test_ucp_peer_failure, pause_of_our_own_restarts_the_count)
{
    run([&](ucp_entity &e, ucp_ep_h ep, pid_t pid) {
        kill(pid, SIGSTOP);
        progress_for(e, 1.0, &m_errors); /* it is seen stopped */
        usleep(3000000);                 /* we do not look for 3 s */
        progress_for(e, 1.2, &m_errors); /* 4.2 s stopped, 1.2 s seen again */
        EXPECT_EQ(0, m_errors.count) << ucs_status_string(m_errors.status);
        kill(pid, SIGCONT);
        progress_for(e, 1.0, &m_errors);
        EXPECT_EQ(0, m_errors.count);
        uint64_t v = 6;
        ucp_request_param_t p = no_param();
        EXPECT_EQ(UCS_OK, e.wait(ucp_tag_send_sync_nbx(ep, &v, sizeof(v), 3, &p), k_bound));
    });
}

/* A peer that returns from main without closing anything (exit(), so
 * library destructors run; its fds close with the process). */
TEST_P(test_ucp_peer_failure, peer_exiting_without_closing_is_found_idle)
{
    run([&](ucp_entity &e, ucp_ep_h, pid_t pid) {
        progress_for(e, 0.3);
        kill(pid, SIGUSR1);
        double took = wait_for_error(e, clk::now());
        printf("[ fault    ] %s: peer that exited found after %.2f s (%s)\n", GetParam(),
               took, ucs_status_string(m_errors.status));
        EXPECT_EQ(1, m_errors.count) << "error handler calls";
        EXPECT_NE(UCS_OK, m_errors.status);
        EXPECT_LT(took, 5.0) << "probes every 400 ms";
    });
}

/* The same with a rendezvous send and a sync send waiting for the peer,
 * which received neither. */
TEST_P(test_ucp_peer_failure, peer_exiting_without_closing_fails_waiting_sends)
{
    run([&](ucp_entity &e, ucp_ep_h ep, pid_t pid) {
        std::vector<char> big(4u << 20, 'b'), small(64, 'm');
        ucp_request_param_t p = no_param();
        ucs_status_ptr_t rndv = ucp_tag_send_nbx(ep, big.data(), big.size(), 9, &p);
        ucs_status_ptr_t sync = ucp_tag_send_sync_nbx(ep, small.data(), small.size(), 9,
                                                      &p);
        progress_for(e, 0.3);
        kill(pid, SIGUSR1);
        clk::time_point start = clk::now();
        ucs_status_t st_rndv  = e.wait(rndv, k_bound);
        ucs_status_t st_sync  = e.wait(sync, k_bound);
        double took           = seconds_since(start);
        wait_for_error(e, start);
        printf("[ fault    ] %s: peer that exited: rendezvous send %s, sync send %s "
               "after %.2f s\n",
               GetParam(), ucs_status_string(st_rndv), ucs_status_string(st_sync), took);
        EXPECT_NE(UCS_ERR_TIMED_OUT, st_rndv);
        EXPECT_NE(UCS_ERR_TIMED_OUT, st_sync);
        EXPECT_NE(UCS_OK, st_sync) << "nobody acknowledged it";
        EXPECT_EQ(1, m_errors.count);
        EXPECT_LT(took, 5.0);
    });
}

/* Without error handling (UCP_ERR_HANDLING_MODE_NONE) a dead peer still
 * cannot hold a flush or a close forever. */
TEST_P(test_ucp_peer_failure, flush_and_close_without_error_handling_end_for_a_dead_peer)
{
    run(
        [&](ucp_entity &e, ucp_ep_h ep, pid_t pid) {
            std::vector<char> big(1u << 20, 'n');
            ucp_request_param_t p = no_param();
            kill(pid, SIGKILL);
            usleep(100000);
            ucs_status_ptr_t send  = ucp_tag_send_nbx(ep, big.data(), big.size(), 4, &p);
            clk::time_point start  = clk::now();
            ucs_status_t st_flush  = e.wait(ucp_ep_flush_nbx(ep, &p), k_bound);
            ucs_status_t st_send   = e.wait(send, k_bound);
            double took            = seconds_since(start);
            printf("[ fault    ] %s: mode NONE, dead peer: flush %s, send %s after "
                   "%.2f s\n",
                   GetParam(), ucs_status_string(st_flush), ucs_status_string(st_send),
                   took);
            EXPECT_NE(UCS_ERR_TIMED_OUT, st_flush);
            EXPECT_LT(took, k_bound);
            EXPECT_EQ(0, m_errors.count) << "no handler in mode NONE";
        },
        UCP_ERR_HANDLING_MODE_NONE);
}

INSTANTIATE_TEST_SUITE_P(tls, test_ucp_peer_failure, ::testing::Values("", "posix", "tcp"));

/* ---- endpoints made through a listener ------------------------------------ */

namespace {

enum class peer_fate { killed, stopped, exited };

void keep_conn_request(ucp_conn_request_h req, void *arg)
{
    *(ucp_conn_request_h*)arg = req;
}

/* The client's side: connect, one acknowledged message, then the server's
 * fate and what the client's endpoint must show of it. */
void client_of_a_failing_server(oob_channel &ch, peer_fate fate)
{
    ucp_entity e("", UCS_THREAD_MODE_SINGLE, UCP_FEATURE_TAG);
    struct sockaddr_in a;
    pid_t pid;
    ep_errors errors;
    ASSERT_TRUE(ch.recv(&a, sizeof(a)));
    ucp_ep_params_t p;
    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_FLAGS |
                   UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                   UCP_EP_PARAM_FIELD_ERR_HANDLER;
    p.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    p.sockaddr.addr    = (struct sockaddr*)&a;
    p.sockaddr.addrlen = sizeof(a);
    p.err_mode         = UCP_ERR_HANDLING_MODE_PEER;
    p.err_handler.cb   = count_error;
    p.err_handler.arg  = &errors;
    ucp_ep_h ep;
    ASSERT_EQ(UCS_OK, ucp_ep_create(e.worker(), &p, &ep));
    uint64_t v            = 1;
    ucp_request_param_t r = no_param();
    ASSERT_EQ(UCS_OK, e.wait(ucp_tag_send_sync_nbx(ep, &v, sizeof(v), 7, &r), k_bound))
            << "the server did not acknowledge the first message";
    ASSERT_TRUE(ch.recv(&pid, sizeof(pid)));
    kill(pid, (fate == peer_fate::killed) ? SIGKILL :
              (fate == peer_fate::stopped) ? SIGSTOP : SIGUSR1);
    clk::time_point start = clk::now();
    while ((errors.count == 0) && (seconds_since(start) < k_bound)) {
        ucp_worker_progress(e.worker());
    }
    double took = seconds_since(start);
    printf("[ fault    ] sockaddr ep, server %s: failed after %.2f s (%s)\n",
           (fate == peer_fate::killed) ? "killed" :
           (fate == peer_fate::stopped) ? "stopped" : "exited",
           took, ucs_status_string(errors.status));
    EXPECT_EQ(1, errors.count) << "error handler calls";
    EXPECT_NE(UCS_OK, errors.status);
    if (fate == peer_fate::stopped) {
        EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, errors.status);
        EXPECT_GE(took, 1.9) << "failed before the 2 s timeout";
        EXPECT_LT(took, 6.0);
    } else {
        EXPECT_LT(took, 5.0) << "probes every 400 ms";
    }
    EXPECT_TRUE(UCS_PTR_IS_ERR(ucp_tag_send_nbx(ep, &v, sizeof(v), 7, &r)))
            << "a send on the failed ep";
    kill(pid, SIGKILL);
    e.close(ep, true);
}

} // namespace

/*
 * Client/server endpoints (a listener on 127.0.0.1, the client connecting
 * by sockaddr, both in error mode PEER) learn of a peer's failure as those
 * made from worker addresses do: the server (the victim, a child) is
 * SIGKILLed, SIGSTOPped or exits without closing after one message; the
 * client's endpoint fails within the bound (a stopped server after the
 * keepalive timeout, with UCS_ERR_ENDPOINT_TIMEOUT), a later send fails at
 * once, a forced close completes, and once its worker is gone the client
 * holds the fds it had before.
 */
class test_ucp_sockaddr_peer_failure : public ::testing::TestWithParam<peer_fate> {
};

TEST_P(test_ucp_sockaddr_peer_failure, client_endpoint_fails_when_the_server_goes_away)
{
    scoped_setenv interval("UCX_KEEPALIVE_INTERVAL", "400ms");
    scoped_setenv timeout("UCX_KEEPALIVE_TIMEOUT", "2s");
    const peer_fate fate = GetParam();

    (void)run_two_processes_raw(
        [&](oob_channel &ch) {
            resource_census before = resource_census::take();
            client_of_a_failing_server(ch, fate);
            /* the worker's listener-side state (an epoll fd made at its
             * first sockaddr endpoint) goes with the worker */
            resource_census after = resource_census::take();
            EXPECT_EQ(before.fds, after.fds) << "the failed endpoint left fds behind";
        },
        [&](oob_channel &ch) {
            g_exit_requested = 0;
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            signal(SIGUSR1, request_exit);
            ucp_entity e("", UCS_THREAD_MODE_SINGLE, UCP_FEATURE_TAG);
            ucp_conn_request_h conn = NULL;
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
            lp.conn_handler.cb  = keep_conn_request;
            lp.conn_handler.arg = &conn;
            ucp_listener_h listener;
            ASSERT_EQ(UCS_OK, ucp_listener_create(e.worker(), &lp, &listener));
            ucp_listener_attr_t la;
            la.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
            ASSERT_EQ(UCS_OK, ucp_listener_query(listener, &la));
            memcpy(&a, &la.sockaddr, sizeof(a));
            ASSERT_TRUE(ch.send(&a, sizeof(a)));
            while (conn == NULL) {
                ucp_worker_progress(e.worker());
            }
            ucp_ep_params_t p;
            memset(&p, 0, sizeof(p));
            p.field_mask   = UCP_EP_PARAM_FIELD_CONN_REQUEST |
                             UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
            p.conn_request = conn;
            p.err_mode     = UCP_ERR_HANDLING_MODE_PEER;
            ucp_ep_h ep;
            ASSERT_EQ(UCS_OK, ucp_ep_create(e.worker(), &p, &ep));
            uint64_t v = 0;
            ucp_request_param_t r = no_param();
            ASSERT_EQ(UCS_OK, e.wait_recv(ucp_tag_recv_nbx(e.worker(), &v, sizeof(v), 7,
                                                           (ucp_tag_t)-1, &r),
                                          NULL));
            pid_t self = getpid();
            ASSERT_TRUE(ch.send(&self, sizeof(self)));
            while (!g_exit_requested) {
                ucp_worker_progress(e.worker());
            }
            exit(0); /* listener, endpoint and worker left open */
        },
        120.0);
}

INSTANTIATE_TEST_SUITE_P(fate, test_ucp_sockaddr_peer_failure,
                         ::testing::Values(peer_fate::killed, peer_fate::stopped,
                                           peer_fate::exited),
                         [](const ::testing::TestParamInfo<peer_fate> &info) {
                             return std::string((info.param == peer_fate::killed) ?
                                                "killed" :
                                                (info.param == peer_fate::stopped) ?
                                                "stopped" : "exited");
                         });

/* ---- tcp keepalive settings ------------------------------------------------ */

namespace {

struct tcp_keepalive_opts {
    int on = -1, idle = -1, intvl = -1, cnt = -1;
};

/* The keepalive settings of every connected IPv4 TCP socket we hold. */
std::vector<tcp_keepalive_opts> connected_tcp_sockets()
{
    std::vector<tcp_keepalive_opts> out;
    for (const open_fd &f : open_fds()) {
        int type = 0, listening = 0;
        socklen_t len = sizeof(int);
        struct sockaddr_storage peer;
        socklen_t plen = sizeof(peer);
        if ((f.target.compare(0, 7, "socket:") != 0) ||
            (getsockopt(f.fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) ||
            (type != SOCK_STREAM) ||
            (getsockopt(f.fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0) ||
            listening || (getpeername(f.fd, (struct sockaddr*)&peer, &plen) != 0) ||
            (peer.ss_family != AF_INET)) {
            continue;
        }
        tcp_keepalive_opts o;
        getsockopt(f.fd, SOL_SOCKET, SO_KEEPALIVE, &o.on, &len);
        getsockopt(f.fd, IPPROTO_TCP, TCP_KEEPIDLE, &o.idle, &len);
        getsockopt(f.fd, IPPROTO_TCP, TCP_KEEPINTVL, &o.intvl, &len);
        getsockopt(f.fd, IPPROTO_TCP, TCP_KEEPCNT, &o.cnt, &len);
        out.push_back(o);
    }
    return out;
}

} // namespace

/* Both ends of a connection (connected and accepted) get the configured
 * keepalive; 'inf' leaves it off; a bad count is refused by name. */
TEST(test_ucp_tcp_keepalive, sockets_get_the_configured_keepalive)
{
    {
        scoped_setenv idle("UCX_TCP_KEEPIDLE", "7s");
        scoped_setenv intvl("UCX_TCP_KEEPINTVL", "3s");
        scoped_setenv cnt("UCX_TCP_KEEPCNT", "4");
        ucp_entity a("tcp"), b("tcp");
        ucp_ep_h ep = a.connect(b.address());
        uint64_t v = 1, in = 0;
        ucp_request_param_t p = no_param();
        ASSERT_EQ(UCS_OK, a.wait(ucp_tag_send_nbx(ep, &v, sizeof(v), 1, &p)));
        ASSERT_EQ(UCS_OK, b.wait_recv(ucp_tag_recv_nbx(b.worker(), &in, sizeof(in), 1,
                                                       (ucp_tag_t)-1, &p),
                                      NULL));
        std::vector<tcp_keepalive_opts> socks = connected_tcp_sockets();
        ASSERT_GE(socks.size(), 2u) << "a connected and an accepted socket";
        for (const tcp_keepalive_opts &o : socks) {
            EXPECT_EQ(1, o.on);
            EXPECT_EQ(7, o.idle);
            EXPECT_EQ(3, o.intvl);
            EXPECT_EQ(4, o.cnt);
        }
        a.close(ep, true);
    }
    {
        scoped_setenv idle("UCX_TCP_KEEPIDLE", "inf");
        ucp_entity a("tcp"), b("tcp");
        ucp_ep_h ep = a.connect(b.address());
        uint64_t v = 1;
        ucp_request_param_t p = no_param();
        ASSERT_EQ(UCS_OK, a.wait(ucp_tag_send_nbx(ep, &v, sizeof(v), 1, &p)));
        std::vector<tcp_keepalive_opts> socks = connected_tcp_sockets();
        ASSERT_GE(socks.size(), 1u);
        for (const tcp_keepalive_opts &o : socks) {
            EXPECT_EQ(0, o.on) << "UCX_TCP_KEEPIDLE=inf";
        }
        a.close(ep, true);
    }
    {
        scoped_setenv cnt("UCX_TCP_KEEPCNT", "0");
        EXPECT_THROW(ucp_entity a("tcp"), std::runtime_error)
                << "UCX_TCP_KEEPCNT=0 accepted";
    }
}

/* ---- a tcp path that goes away ----------------------------------------------- */

namespace {

const char *k_netns_inner = "UCX_TEST_NETNS_INNER";

bool sh(const std::string &cmd)
{
    int rc = system((cmd + " 2>&1").c_str());
    if (rc != 0) {
        ADD_FAILURE() << "'" << cmd << "' exited with " << rc;
    }
    return rc == 0;
}

void set_path_test_env()
{
    setenv("UCX_KEEPALIVE_INTERVAL", "500ms", 1);
    setenv("UCX_TCP_KEEPIDLE", "1s", 1);
    setenv("UCX_TCP_KEEPINTVL", "1s", 1);
    setenv("UCX_TCP_KEEPCNT", "2", 1);
}

/* Inside a network namespace of our own (root there): a veth pair joins it
 * to a child's namespace, NET.1 here, NET.2 there (documentation ranges
 * that exist only inside these namespaces); then the peer's end or ours
 * goes down. */
void link_down_inner(bool peer_side, const std::string &va, const std::string &vb,
                     const std::string &net)
{
    ep_errors errors;
    (void)run_two_processes_raw(
        [&](oob_channel &ch) {
            pid_t child;
            char ok;
            ASSERT_TRUE(ch.recv(&child, sizeof(child)));
            ASSERT_TRUE(sh("ip link add " + va + " type veth peer name " + vb +
                           " netns " + std::to_string(child)));
            ASSERT_TRUE(sh("ip addr add " + net + ".1/24 dev " + va));
            ASSERT_TRUE(sh("ip link set " + va + " up"));
            ASSERT_TRUE(ch.send("r", 1));
            ASSERT_TRUE(ch.recv(&ok, 1));
            set_path_test_env();
            ucp_entity e("tcp");
            std::string peer;
            ASSERT_TRUE(ch.send_blob(e.address()));
            ASSERT_TRUE(ch.recv_blob(peer));
            ucp_ep_h ep = e.connect(peer, true, count_error, &errors);
            exchange_hello(e, ep, true);
            progress_for(e, 1.0);
            ASSERT_EQ(0, errors.count) << "the path works";
            if (peer_side) {
                /* the far end: our link stays up, nothing answers */
                ASSERT_TRUE(sh("nsenter -t " + std::to_string(child) + " -n ip link set " +
                               vb + " down"));
            } else {
                ASSERT_TRUE(sh("ip link set " + va + " down"));
            }
            clk::time_point start = clk::now();
            while ((errors.count == 0) && (seconds_since(start) < k_bound)) {
                ucp_worker_progress(e.worker());
            }
            double took = seconds_since(start);
            printf("[ fault    ] tcp path down (%s link): endpoint failed after %.2f s "
                   "(%s)\n",
                   peer_side ? "the peer's" : "our", took, ucs_status_string(errors.status));
            EXPECT_EQ(1, errors.count) << "error handler calls";
            EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, errors.status);
            EXPECT_LT(took, 10.0) << "KEEPIDLE 1 s + KEEPINTVL 1 s * KEEPCNT 2";
            kill(child, SIGKILL);
            ucp_request_param_t p = no_param();
            EXPECT_NE(UCS_ERR_TIMED_OUT, e.wait(ucp_ep_close_nbx(ep, &p), k_bound));
            (void)system(("ip link del " + va + " >/dev/null 2>&1").c_str());
        },
        [&](oob_channel &ch) {
            char ready;
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
            ASSERT_EQ(0, unshare(CLONE_NEWNET)) << strerror(errno);
            ASSERT_TRUE(sh("ip link set lo up"));
            pid_t self = getpid();
            ASSERT_TRUE(ch.send(&self, sizeof(self)));
            ASSERT_TRUE(ch.recv(&ready, 1));
            ASSERT_TRUE(sh("ip addr add " + net + ".2/24 dev " + vb));
            ASSERT_TRUE(sh("ip link set " + vb + " up"));
            ASSERT_TRUE(ch.send("k", 1));
            set_path_test_env();
            ucp_entity e("tcp");
            std::string peer;
            ASSERT_TRUE(ch.recv_blob(peer));
            ASSERT_TRUE(ch.send_blob(e.address()));
            ucp_ep_h ep = e.connect(peer, true);
            exchange_hello(e, ep, false);
            for (;;) { /* until SIGKILL */
                ucp_worker_progress(e.worker());
            }
        },
        120.0);
}

} // namespace

/* The survivor's link goes down while both processes live: nothing closes
 * the connection, the peer's kernel can no longer answer, and only the
 * unacknowledged keepalive probes tell. Runs in a network namespace of its
 * own (this binary again, under unshare(CLONE_NEWNET)), so the machine's
 * network is never touched; needs root and iproute2, and says so when it
 * cannot run. */
TEST(test_ucp_tcp_path, link_down_between_namespaces_fails_the_endpoint)
{
    if (getenv(k_netns_inner) != NULL) {
        ASSERT_TRUE(sh("ip link set lo up"));
        link_down_inner(true, "ucxa0", "ucxb0", "192.0.2");
        link_down_inner(false, "ucxa1", "ucxb1", "198.51.100");
        return;
    }
    if (geteuid() != 0) {
        GTEST_SKIP() << "network namespaces need root";
    }
    if ((system("ip -V >/dev/null 2>&1") != 0) ||
        (system("nsenter --version >/dev/null 2>&1") != 0)) {
        GTEST_SKIP() << "iproute2 ('ip') or util-linux's nsenter is not installed";
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (unshare(CLONE_NEWNET) != 0) {
            fprintf(stderr, "unshare(CLONE_NEWNET): %s\n", strerror(errno));
            _exit(77);
        }
        setenv(k_netns_inner, "1", 1);
        std::string filter = std::string("--gtest_filter=") +
                             ::testing::UnitTest::GetInstance()->current_test_info()
                                     ->test_suite_name() +
                             "." +
                             ::testing::UnitTest::GetInstance()->current_test_info()
                                     ->name();
        execl("/proc/self/exe", "gtest", filter.c_str(), (char*)NULL);
        _exit(78);
    }
    int status = 0;
    clk::time_point start = clk::now();
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (seconds_since(start) > 150) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            FAIL() << "the namespace run timed out";
        }
        usleep(10000);
    }
    ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
    if (WEXITSTATUS(status) == 77) {
        GTEST_SKIP() << "unshare(CLONE_NEWNET) was refused (container without "
                        "CAP_SYS_ADMIN?)";
    }
    EXPECT_EQ(0, WEXITSTATUS(status)) << "the run in its own network namespace failed";
}
