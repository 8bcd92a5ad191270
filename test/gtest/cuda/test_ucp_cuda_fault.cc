/**
 * @file test_ucp_cuda_fault.cc
 * Faults of device-memory rendezvous between two real processes: the
 * receiver SIGKILLed, SIGSTOPped or exiting without closing while messages
 * of several fragments are in flight (forced get_zcopy, and the pipeline
 * through device fragments), and device
 * memory exhausted so that no staging fragment can be allocated. The
 * surviving side's requests end -- with an error, or for exhaustion through
 * a fallback with the right data -- within a bounded time, its error handler
 * runs, and it holds no more fds than before. Also a receiver with no fd
 * to spare when it should import the sender's buffer: the message is staged
 * instead. On the model with CUDASIM_ASYNC=1; the same binary runs on the
 * real driver.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda/cuda_test.h"
#include "common/resource_census.h"
#include "common/test_helpers.h"
#include "common/two_process.h"

#include <ucp/api/ucp.h>
#include <ucp/core/ucp_proto_stats.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

using cuda_test::allocation;
using cuda_test::mem_kind;
using ucx_test::oob_channel;

namespace {

const size_t k_frag  = 64 * 1024;
const size_t k_msg   = 5 * k_frag + 3; /* several fragments */
const size_t k_alloc = 4 * 1024 * 1024;
const double k_bound = 30;             /* seconds any request may take */

typedef std::vector<std::pair<std::string, std::string>> env_t;

void set_env(const env_t &extra)
{
    setenv("CUDASIM_ASYNC", "1", 1);
    setenv("CUDASIM_ASYNC_DELAY_US", "100", 1);
    setenv("UCX_RNDV_THRESH", "8K", 1);
    setenv("UCX_RNDV_FRAG_SIZE", "host:64K,cuda:64K", 1);
    for (const auto &kv : extra) {
        setenv(kv.first.c_str(), kv.second.c_str(), 1);
    }
}

struct side;
void count_error(void *arg, ucp_ep_h, ucs_status_t status);

/* One side: context, worker, and an ep in error mode PEER. */
struct side {
    ucp_context_h context = NULL;
    ucp_worker_h  worker  = NULL;
    ucp_ep_h      ep      = NULL;
    int           errors  = 0;
    ucs_status_t  last_error = UCS_OK;

    void init(oob_channel &oob)
    {
        ucp_params_t params;
        memset(&params, 0, sizeof(params));
        params.field_mask = UCP_PARAM_FIELD_FEATURES;
        params.features   = UCP_FEATURE_TAG;
        ASSERT_EQ(UCS_OK, ucp_init(&params, NULL, &context));
        ucp_worker_params_t wparams;
        memset(&wparams, 0, sizeof(wparams));
        ASSERT_EQ(UCS_OK, ucp_worker_create(context, &wparams, &worker));
        ucp_address_t *address;
        size_t len;
        ASSERT_EQ(UCS_OK, ucp_worker_get_address(worker, &address, &len));
        ASSERT_TRUE(oob.send_blob(std::string((const char*)address, len)));
        ucp_worker_release_address(worker, address);
        std::string remote;
        ASSERT_TRUE(oob.recv_blob(remote));
        ucp_ep_params_t eparams;
        memset(&eparams, 0, sizeof(eparams));
        eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                             UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                             UCP_EP_PARAM_FIELD_ERR_HANDLER;
        eparams.address         = (const ucp_address_t*)remote.data();
        eparams.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
        eparams.err_handler.cb  = count_error;
        eparams.err_handler.arg = this;
        ASSERT_EQ(UCS_OK, ucp_ep_create(worker, &eparams, &ep));
    }

    ucs_status_ptr_t send(void *buf, size_t len, ucp_tag_t tag)
    {
        ucp_request_param_t p;
        memset(&p, 0, sizeof(p));
        return ucp_tag_send_nbx(ep, buf, len, tag, &p);
    }

    ucs_status_ptr_t recv(void *buf, size_t len, ucp_tag_t tag)
    {
        ucp_request_param_t p;
        memset(&p, 0, sizeof(p));
        return ucp_tag_recv_nbx(worker, buf, len, tag, ~0ull, &p);
    }

    /* Progress until done or @a timeout; TIMED_OUT leaves it pending. */
    ucs_status_t wait(ucs_status_ptr_t r, double timeout = k_bound)
    {
        if (!UCS_PTR_IS_PTR(r)) {
            return UCS_PTR_STATUS(r);
        }
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(timeout);
        ucs_status_t s;
        while ((s = ucp_request_check_status(r)) == UCS_INPROGRESS) {
            ucp_worker_progress(worker);
            if (std::chrono::steady_clock::now() > deadline) {
                return UCS_ERR_TIMED_OUT;
            }
        }
        ucp_request_free(r);
        return s;
    }

    void destroy()
    {
        if (ep != NULL) {
            ucp_request_param_t p;
            memset(&p, 0, sizeof(p));
            p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            p.flags        = UCP_EP_CLOSE_FLAG_FORCE;
            EXPECT_NE(UCS_ERR_TIMED_OUT, wait(ucp_ep_close_nbx(ep, &p)));
        }
        if (worker != NULL) {
            ucp_worker_destroy(worker);
        }
        if (context != NULL) {
            ucp_cleanup(context);
        }
    }
};

void count_error(void *arg, ucp_ep_h, ucs_status_t status)
{
    ++((side*)arg)->errors;
    ((side*)arg)->last_error = status;
}

/* CUDA must not be initialised in the test runner itself (fork after
 * cuInit): both sides run in children, and @a victim may be killed. */
void run_pair(const ucx_test::process_fn_t &survivor,
              const ucx_test::process_fn_t &victim, double timeout = 120)
{
    ucx_test::run_two_processes(
        [](oob_channel &) {},
        [&](oob_channel &) {
            (void)ucx_test::run_two_processes_raw(survivor, victim, timeout);
        },
        timeout + 10.0);
}

/* How the victim goes away. */
enum class death {
    killed,  /* SIGKILL */
    stopped, /* SIGSTOP: alive to the transports, it answers nothing */
    exited   /* exit(0) without closing anything */
};

const char *death_name(death how)
{
    return (how == death::killed) ? "killed" : (how == death::stopped) ? "stopped" : "exited";
}

volatile sig_atomic_t g_exit_requested;

void request_exit(int)
{
    g_exit_requested = 1;
}

/*
 * The survivor sends device buffers of several fragments each; the victim
 * receives them into device memory until it goes away (@a how) after
 * @a before messages arrived, with more in flight and more sent after that.
 * A stopped victim is failed by the keepalive after UCX_KEEPALIVE_TIMEOUT
 * (2 s here) with UCS_ERR_ENDPOINT_TIMEOUT.
 */
void fault_mid_rndv(env_t env, death how = death::killed)
{
    const int before = 3, in_flight = 8;

    env.push_back({"UCX_KEEPALIVE_INTERVAL", "400ms"});
    env.push_back({"UCX_KEEPALIVE_TIMEOUT", "2s"});

    run_pair(
        [&](oob_channel &oob) {
            set_env(env);
            cuda_test::init_device(0);
            std::vector<allocation> bufs(in_flight + 2);
            std::vector<char> host(k_alloc, 's');
            for (auto &b : bufs) {
                ASSERT_CU(b.allocate(mem_kind::legacy, k_alloc));
                ASSERT_CU(cuMemcpyHtoD(b.ptr, host.data(), k_alloc));
            }
            /* after the buffers: the model keeps device memory in files */
            ucx_test::resource_census census0 = ucx_test::resource_census::take();
            ucx_test::resource_census census1;
            {
                side s;
                s.init(oob);
                pid_t victim;
                ASSERT_TRUE(oob.recv(&victim, sizeof(victim)));
                for (int i = 0; i < before; ++i) {
                    ASSERT_EQ(UCS_OK, s.wait(s.send((void*)bufs[0].ptr, k_msg, i)))
                            << "rendezvous does not work at all";
                }
                census1 = ucx_test::resource_census::take();
                std::vector<ucs_status_ptr_t> reqs;
                for (int i = 0; i < in_flight; ++i) {
                    reqs.push_back(s.send((void*)bufs[i].ptr, k_msg, before + i));
                    ucp_worker_progress(s.worker);
                }
                kill(victim, (how == death::killed) ? SIGKILL :
                             (how == death::stopped) ? SIGSTOP : SIGUSR1);
                for (int i = in_flight; i < in_flight + 2; ++i) {
                    reqs.push_back(s.send((void*)bufs[i].ptr, k_msg, before + i));
                }
                auto start = std::chrono::steady_clock::now();
                int failed = 0;
                for (auto r : reqs) {
                    ucs_status_t st = s.wait(r);
                    ASSERT_NE(UCS_ERR_TIMED_OUT, st) << "a send outlived the peer";
                    failed += (st != UCS_OK);
                }
                auto deadline = start + std::chrono::duration<double>(k_bound);
                while ((s.errors == 0) &&
                       (std::chrono::steady_clock::now() < deadline)) {
                    ucp_worker_progress(s.worker);
                }
                double took = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start).count();
                EXPECT_EQ(1, s.errors) << "error handler calls";
                EXPECT_GT(failed, 0) << "no send failed after the receiver went away";
                EXPECT_LT(took, k_bound);
                if (how == death::stopped) {
                    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, s.last_error)
                            << ucs_status_string(s.last_error);
                    EXPECT_GE(took, 1.5) << "failed before the keepalive timeout";
                }
                /* new operations on the failed endpoint end at once */
                ucs_status_t late = s.wait(s.send((void*)bufs[0].ptr, k_msg, 999), 1);
                EXPECT_NE(UCS_OK, late);
                EXPECT_NE(UCS_ERR_TIMED_OUT, late);
                printf("[ fault    ] %s, receiver %s: %d of %zu device rendezvous "
                       "sends failed (%s), all done in %.2f s\n",
                       env[0].second.c_str(), death_name(how), failed, reqs.size(),
                       ucs_status_string(s.last_error), took);
                kill(victim, SIGKILL);
                s.destroy();
            }
            ucx_test::resource_census after = ucx_test::resource_census::take();
            /* Everything the connection opened (sockets, imported or
             * exported handles) went with it; fds of the device buffers and
             * the CUDA context's own stay. */
            printf("[ fault    ] fds: %d before ucp, %d connected, %d after\n",
                   census0.fds, census1.fds, after.fds);
            EXPECT_EQ(census0.fds, after.fds) << "fds leaked";
            EXPECT_EQ(census0.memfds, after.memfds) << "memfds leaked";
        },
        [&](oob_channel &oob) {
            set_env(env);
            cuda_test::init_device(0);
            allocation buf;
            ASSERT_CU(buf.allocate(mem_kind::legacy, k_alloc));
            side s;
            s.init(oob);
            g_exit_requested = 0;
            signal(SIGUSR1, request_exit);
            pid_t self = getpid();
            oob.send(&self, sizeof(self));
            for (ucp_tag_t tag = 0; !g_exit_requested; ++tag) {
                ucs_status_ptr_t r = s.recv((void*)buf.ptr, k_msg, tag);
                while (!g_exit_requested && UCS_PTR_IS_PTR(r) &&
                       (ucp_request_check_status(r) == UCS_INPROGRESS)) {
                    ucp_worker_progress(s.worker);
                }
            }
            fflush(stdout);
            exit(0); /* an application that never closes */
        });
}

class test_ucp_cuda_fault : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (cuda_test::device_count() < 1) {
            GTEST_SKIP() << "no CUDA device";
        }
    }
};

} // namespace

TEST_F(test_ucp_cuda_fault, receiver_killed_mid_get_zcopy_fails_sends_in_bounded_time)
{
    fault_mid_rndv({{"UCX_RNDV_SCHEME", "get_zcopy"}});
}

TEST_F(test_ucp_cuda_fault, receiver_stopped_mid_get_zcopy_fails_sends_after_the_timeout)
{
    fault_mid_rndv({{"UCX_RNDV_SCHEME", "get_zcopy"}}, death::stopped);
}

TEST_F(test_ucp_cuda_fault, receiver_exiting_without_close_mid_get_zcopy_fails_sends)
{
    fault_mid_rndv({{"UCX_RNDV_SCHEME", "get_zcopy"}}, death::exited);
}

TEST_F(test_ucp_cuda_fault, receiver_killed_mid_pipeline_fails_sends_in_bounded_time)
{
    fault_mid_rndv({{"UCX_RNDV_SCHEME", "pipeline"}});
}

TEST_F(test_ucp_cuda_fault, receiver_stopped_mid_pipeline_fails_sends_after_the_timeout)
{
    fault_mid_rndv({{"UCX_RNDV_SCHEME", "pipeline"}}, death::stopped);
}

TEST_F(test_ucp_cuda_fault, receiver_exiting_without_close_mid_pipeline_fails_sends)
{
    fault_mid_rndv({{"UCX_RNDV_SCHEME", "pipeline"}}, death::exited);
}

/*
 * Device memory exhausted before the first pipelined message: no staging
 * fragment can be allocated on either side. Each message must either arrive
 * intact (a fallback path) or fail with an error on both sides -- within a
 * bounded time, never a hang or a crash. Non-exportable buffers on both
 * sides, so the pipeline through device fragments is the protocol.
 */
TEST_F(test_ucp_cuda_fault, staging_memory_exhausted_falls_back_or_fails_cleanly)
{
    const env_t env = {{"UCX_RNDV_SCHEME", "pipeline"}};
    /* Fill device memory except the user buffer (sparse on the model). */
    auto exhaust = [](std::vector<CUdeviceptr> &filler) {
        for (size_t chunk = 64ul << 20; chunk >= 4096; chunk /= 2) {
            CUdeviceptr p;
            while (cuMemAlloc(&p, chunk) == CUDA_SUCCESS) {
                filler.push_back(p);
            }
        }
        CUdeviceptr p;
        EXPECT_NE(CUDA_SUCCESS, cuMemAlloc(&p, k_frag)) << "memory left";
    };
    auto outcome = [](const char *who, ucs_status_t st, bool data_ok) {
        printf("[ staging  ] %s: %s%s\n", who, ucs_status_string(st),
               (st == UCS_OK) ? (data_ok ? ", data correct" : ", DATA WRONG") : "");
        EXPECT_NE(UCS_ERR_TIMED_OUT, st) << who << " hung with no staging memory";
        if (st == UCS_OK) {
            EXPECT_TRUE(data_ok) << who;
        }
    };

    ucx_test::run_two_processes(
        [](oob_channel &) {},
        [&](oob_channel &) {
            ucx_test::run_two_processes(
                [&](oob_channel &oob) { /* receiver */
                    set_env(env);
                    setenv("CUDASIM_DEVICE_MEM_MB", "64", 1);
                    cuda_test::init_device(0);
                    allocation buf;
                    ASSERT_CU(buf.allocate(mem_kind::pool_no_handle, k_alloc));
                    side s;
                    s.init(oob);
                    std::vector<CUdeviceptr> filler;
                    exhaust(filler);
                    ASSERT_TRUE(oob.barrier());
                    ucs_status_t st = s.wait(s.recv((void*)buf.ptr, k_msg, 1));
                    std::vector<char> host(k_msg);
                    bool ok = (st == UCS_OK) &&
                              (cuMemcpyDtoH(host.data(), buf.ptr, k_msg) ==
                               CUDA_SUCCESS) &&
                              (host[0] == 'x') && (host[k_msg - 1] == 'x');
                    if (st == UCS_ERR_TIMED_OUT) {
                        /* left pending: report it, and get out */
                        printf("[ staging  ] receiver still waiting after %.0f s\n",
                               k_bound);
                    }
                    outcome("receiver", st, ok);
                    ASSERT_TRUE(oob.barrier());
                    for (CUdeviceptr p : filler) {
                        cuMemFree(p);
                    }
                    s.destroy();
                },
                [&](oob_channel &oob) { /* sender */
                    set_env(env);
                    setenv("CUDASIM_DEVICE_MEM_MB", "64", 1);
                    cuda_test::init_device(0);
                    allocation buf;
                    ASSERT_CU(buf.allocate(mem_kind::pool_no_handle, k_alloc));
                    std::vector<char> host(k_alloc, 'x');
                    ASSERT_CU(cuMemcpyHtoD(buf.ptr, host.data(), k_alloc));
                    side s;
                    s.init(oob);
                    std::vector<CUdeviceptr> filler;
                    exhaust(filler);
                    ASSERT_TRUE(oob.barrier());
                    outcome("sender", s.wait(s.send((void*)buf.ptr, k_msg, 1)), true);
                    ASSERT_TRUE(oob.barrier());
                    for (CUdeviceptr p : filler) {
                        cuMemFree(p);
                    }
                    s.destroy();
                },
                120);
        },
        130);
}

/*
 * The receiver has every fd its RLIMIT_NOFILE allows in use when the
 * rendezvous of a VMM and of a pool buffer arrive (POSIX-fd handles: their
 * import needs an fd); its own buffer cannot be exported, so no put either.
 * Both messages must arrive intact through staging (data as active
 * messages: device fragments would need imports too), with one warning in
 * the process and the cause named, no fd left behind; with fds free again
 * the next message is a get.
 */
TEST_F(test_ucp_cuda_fault, receiver_out_of_fds_while_importing_stages_instead)
{
    const std::vector<std::pair<mem_kind, ucp_tag_t>> kinds = {
            {mem_kind::vmm_posix_fd, 1}, {mem_kind::pool_posix_fd, 2}};
    auto proto = [](ucp_worker_h worker, ucp_proto_stat_t p) {
        uint64_t counts[UCP_PROTO_STAT_LAST];
        ucp_worker_proto_stats(worker, counts);
        return counts[p];
    };

    run_pair(
        [&](oob_channel &oob) { /* receiver */
            set_env({});
            ucx_test::config_sandbox sandbox; /* the log file is open before */
            cuda_test::init_device(0);
            allocation buf;
            ASSERT_CU(buf.allocate(mem_kind::pool_no_handle, k_alloc));
            side s;
            s.init(oob);
            uint64_t warm = 0;
            ASSERT_EQ(UCS_OK, s.wait(s.recv(&warm, sizeof(warm), 0)));
            ASSERT_TRUE(oob.barrier());

            int fds = ucx_test::resource_census::take().fds;
            for (const auto &k : kinds) {
                ucx_test::fd_exhaustion no_fds;
                ASSERT_TRUE(no_fds.ok());
                ucs_status_t st = s.wait(s.recv((void*)buf.ptr, k_msg, k.second));
                no_fds.release();
                EXPECT_EQ(UCS_OK, st) << cuda_test::kind_name(k.first)
                                      << " with no fd to spare";
                EXPECT_TRUE(cuda_test::check_pattern(buf.ptr, k_msg, (unsigned)k.second))
                        << cuda_test::kind_name(k.first);
            }
            EXPECT_EQ(fds, ucx_test::resource_census::take().fds) << "fds left behind";
            EXPECT_EQ(0u, proto(s.worker, UCP_PROTO_STAT_RNDV_GET));
            EXPECT_EQ(kinds.size(), proto(s.worker, UCP_PROTO_STAT_RNDV_PIPE_HOST));
            std::string log = sandbox.log();
            printf("[ fd limit ] receiver log:\n%s", log.c_str());
            EXPECT_EQ(1u, ucx_test::count_occurrences(
                                  log, "are staged through fragments instead"))
                    << log;
            EXPECT_LE(1u, ucx_test::count_occurrences(log, "Too many open files"))
                    << log;

            /* Room again: the same buffer of the sender comes by a get. */
            ASSERT_TRUE(oob.barrier());
            ASSERT_EQ(UCS_OK, s.wait(s.recv((void*)buf.ptr, k_msg, 3)));
            EXPECT_TRUE(cuda_test::check_pattern(buf.ptr, k_msg, 1));
            EXPECT_EQ(1u, proto(s.worker, UCP_PROTO_STAT_RNDV_GET));
            ASSERT_TRUE(oob.barrier());
            s.destroy();
        },
        [&](oob_channel &oob) { /* sender */
            set_env({});
            cuda_test::init_device(0);
            std::vector<allocation> bufs(kinds.size());
            for (size_t i = 0; i < kinds.size(); ++i) {
                ASSERT_CU(bufs[i].allocate(kinds[i].first, k_alloc));
                cuda_test::write_pattern(bufs[i].ptr, k_msg, (unsigned)kinds[i].second);
            }
            side s;
            s.init(oob);
            uint64_t warm = 7;
            ASSERT_EQ(UCS_OK, s.wait(s.send(&warm, sizeof(warm), 0)));
            ASSERT_TRUE(oob.barrier());
            for (size_t i = 0; i < kinds.size(); ++i) {
                EXPECT_EQ(UCS_OK, s.wait(s.send((void*)bufs[i].ptr, k_msg,
                                                kinds[i].second)));
            }
            ASSERT_TRUE(oob.barrier());
            EXPECT_EQ(UCS_OK, s.wait(s.send((void*)bufs[0].ptr, k_msg, 3)));
            ASSERT_TRUE(oob.barrier());
            s.destroy();
        });
}
