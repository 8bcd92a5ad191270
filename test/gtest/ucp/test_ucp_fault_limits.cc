/*
 * Faults between two real processes beyond a peer dying under tag traffic
 * (test_ucp_fault.cc): a target SIGKILLed while put/get requests of every
 * size class are in flight, and a process whose RLIMIT_NOFILE leaves no room
 * for the fds a new connection needs. Each must end in a clear error within
 * a bounded time -- never a crash, a hang or a leaked fd -- and, for the fd
 * limit, work again once the limit is raised.
 */
#include "ucp_test.h"
#include "common/resource_census.h"
#include "common/test_helpers.h"

#include <dirent.h>
#include <string.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace ucx_test;

namespace {

const uint64_t k_rma_features = UCP_FEATURE_TAG | UCP_FEATURE_RMA;

void count_error(void *arg, ucp_ep_h, ucs_status_t status)
{
    EXPECT_NE(UCS_OK, status);
    ++*(int*)arg;
}

ucp_request_param_t no_param()
{
    ucp_request_param_t p;
    memset(&p, 0, sizeof(p));
    return p;
}

} // namespace

class test_ucp_fault_limits : public ::testing::TestWithParam<std::string> {
};

/* The target registers a region and keeps progressing (so requests really
 * are in flight on the wire) until it is killed mid-stream. */
TEST_P(test_ucp_fault_limits, target_killed_mid_rma_fails_requests_in_bounded_time)
{
    const std::vector<size_t> sizes = {8, 4096, 65537, 1u << 20};
    const size_t region_len         = 2u << 20;
    const double bound_s            = 30;
    std::string tls                 = GetParam();

    (void)run_two_processes_raw(
        [&](oob_channel &ch) { /* origin: its checks are the test */
            resource_census before = resource_census::take();
            {
                ucp_entity e(tls, UCS_THREAD_MODE_SINGLE, k_rma_features);
                std::string remote, packed;
                uint64_t base;
                pid_t target;
                ASSERT_TRUE(ch.recv_blob(remote));
                ASSERT_TRUE(ch.recv_blob(packed));
                ASSERT_TRUE(ch.recv(&base, sizeof(base)));
                ASSERT_TRUE(ch.recv(&target, sizeof(target)));
                int errors  = 0;
                ucp_ep_h ep = e.connect(remote, true, count_error, &errors);
                ucp_rkey_h rkey;
                ASSERT_EQ(UCS_OK, ucp_ep_rkey_unpack(ep, packed.data(), &rkey));

                std::vector<std::vector<char>> bufs;
                std::vector<ucs_status_ptr_t> reqs;
                ucp_request_param_t p = no_param();
                auto issue = [&](int rounds) {
                    for (int round = 0; round < rounds; ++round) {
                        for (size_t len : sizes) {
                            bufs.emplace_back(len, 'o');
                            reqs.push_back(ucp_put_nbx(ep, bufs.back().data(), len,
                                                       base, rkey, &p));
                            bufs.emplace_back(len);
                            reqs.push_back(ucp_get_nbx(ep, bufs.back().data(), len,
                                                       base + region_len - len,
                                                       rkey, &p));
                        }
                        ucp_worker_progress(e.worker());
                    }
                };
                /* Some traffic completes for real first: the target works. */
                ucs_status_t first = e.wait(ucp_put_nbx(ep, "x", 1, base, rkey, &p),
                                            bound_s);
                ASSERT_EQ(UCS_OK, first) << "RMA does not work at all";
                issue(8);
                kill(target, SIGKILL);
                issue(2); /* and more after the death */
                reqs.push_back(ucp_ep_flush_nbx(ep, &p));

                auto start = std::chrono::steady_clock::now();
                int failed = 0;
                for (ucs_status_ptr_t r : reqs) {
                    ucs_status_t s = e.wait(r, bound_s);
                    ASSERT_NE(UCS_ERR_TIMED_OUT, s) << "an RMA request outlived the "
                                                       "target";
                    failed += (s != UCS_OK);
                }
                EXPECT_NE(UCS_OK, e.wait(ucp_ep_flush_nbx(ep, &p), bound_s))
                        << "a flush to a dead target succeeded";
                auto deadline = start + std::chrono::duration<double>(bound_s);
                while ((errors == 0) && (std::chrono::steady_clock::now() < deadline)) {
                    ucp_worker_progress(e.worker());
                }
                double took = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start).count();
                EXPECT_EQ(1, errors) << "error handler calls";
                EXPECT_GT(failed, 0) << "nothing failed after the target died";
                EXPECT_LT(took, bound_s);
                printf("[ fault    ] %s RMA: %d of %zu requests failed, all done in "
                       "%.2f s\n", tls.c_str(), failed, reqs.size(), took);
                ucp_rkey_destroy(rkey);
                e.close(ep, true);
            }
            resource_census after = resource_census::take();
            EXPECT_EQ(before.fds, after.fds) << "fds leaked";
            EXPECT_EQ(before.memfds, after.memfds) << "memfd segments leaked";
        },
        [&](oob_channel &ch) { /* target: progresses until killed */
            ucp_entity e(tls, UCS_THREAD_MODE_SINGLE, k_rma_features);
            ucp_mem_map_params_t mp;
            memset(&mp, 0, sizeof(mp));
            mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                            UCP_MEM_MAP_PARAM_FIELD_FLAGS;
            mp.length     = region_len;
            mp.flags      = UCP_MEM_MAP_ALLOCATE;
            ucp_mem_h memh;
            ASSERT_EQ(UCS_OK, ucp_mem_map(e.context(), &mp, &memh));
            ucp_mem_attr_t attr;
            attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
            ASSERT_EQ(UCS_OK, ucp_mem_query(memh, &attr));
            void *kbuf;
            size_t ksize;
            ASSERT_EQ(UCS_OK, ucp_rkey_pack(e.context(), memh, &kbuf, &ksize));
            uint64_t base = (uintptr_t)attr.address;
            pid_t self    = getpid();
            ch.send_blob(e.address());
            ch.send_blob(std::string((char*)kbuf, ksize));
            ch.send(&base, sizeof(base));
            ch.send(&self, sizeof(self));
            ucp_rkey_buffer_release(kbuf);
            for (;;) {
                ucp_worker_progress(e.worker());
            }
        },
        120);
}

/* The connecting process has every fd number its soft RLIMIT_NOFILE allows
 * in use: the connection (a socket, a peer's segment, an fd passed by the
 * peer) cannot get its fd. The send must fail or stay failed with an error
 * that names the cause -- no crash, no hang -- and with the limit raised
 * back a new endpoint to the same peer carries a message. */
TEST_P(test_ucp_fault_limits, fd_limit_reached_while_connecting_is_a_clear_error)
{
    const size_t len = 300000; /* beyond eager: every transport's data path */
    std::string tls  = GetParam();

    run_two_processes(
        [&](oob_channel &ch) { /* the peer, unconstrained */
            ucp_entity e(tls);
            std::string remote;
            ASSERT_TRUE(ch.send_blob(e.address()));
            ASSERT_TRUE(ch.recv_blob(remote));
            std::vector<char> buf(len);
            ucp_request_param_t p = no_param();
            ucs_status_ptr_t r = ucp_tag_recv_nbx(e.worker(), buf.data(), len, 2,
                                                  UINT64_MAX, &p);
            ASSERT_EQ(UCS_OK, e.wait(r, 60)) << "the message after the limit was "
                                                "raised did not arrive";
            EXPECT_EQ('r', buf[len - 1]);
            ASSERT_TRUE(ch.barrier());
        },
        [&](oob_channel &ch) { /* the process at its fd limit */
            config_sandbox sandbox; /* the log file is open before the limit */
            ucp_entity e(tls);
            std::string remote;
            ASSERT_TRUE(ch.recv_blob(remote));
            ASSERT_TRUE(ch.send_blob(e.address()));

            fd_exhaustion no_fds;
            ASSERT_TRUE(no_fds.ok());

            std::vector<char> buf(len, 'l');
            ucs_status_t status;
            int errors = 0;
            ucp_ep_h ep;
            try {
                ep = e.connect(remote, true, count_error, &errors);
                ucp_request_param_t p = no_param();
                status = e.wait(ucp_tag_send_nbx(ep, buf.data(), len, 1, &p), 30);
                if (status == UCS_OK) { /* completed locally: must not stay so */
                    status = e.wait(ucp_ep_flush_nbx(ep, &p), 30);
                }
                ASSERT_NE(UCS_ERR_TIMED_OUT, status) << "hung at the fd limit";
                e.close(ep, true);
            } catch (const std::runtime_error &) {
                /* ucp_ep_create refused (the log below says why). No
                 * err.what() here: with no fd to spare, UBSan's vptr check
                 * cannot read /proc/self/maps and reports a false error. */
                status = UCS_ERR_NO_RESOURCE;
            }
            no_fds.release();
            std::string log = sandbox.log();
            printf("[ fd limit ] %s: status %s, log:\n%s", tls.c_str(),
                   ucs_status_string(status), log.c_str());
            EXPECT_NE(UCS_OK, status) << "a connection with no fd to spare worked";
            EXPECT_TRUE((log.find("Too many open files") != std::string::npos) ||
                        (log.find("EMFILE") != std::string::npos))
                    << "the error does not name the cause:\n" << log;

            /* Room again: a new endpoint works. */
            ep = e.connect(remote);
            std::vector<char> ok(len, 'r');
            ucp_request_param_t p = no_param();
            EXPECT_EQ(UCS_OK, e.wait(ucp_tag_send_nbx(ep, ok.data(), len, 2, &p), 30));
            ASSERT_TRUE(ch.barrier());
            e.close(ep, true);
        },
        120);
}

INSTANTIATE_TEST_SUITE_P(tls, test_ucp_fault_limits, ::testing::Values("posix", "tcp"));

/*
 * "/dev/shm full" cannot hurt the posix transport, which puts its FIFOs and
 * segments in memfd files (accounted as process memory, not on /dev/shm):
 * checked by watching /dev/shm and our mappings while a message moves. What
 * can happen is that a segment cannot grow: RLIMIT_FSIZE makes ftruncate of
 * the memfd fail with EFBIG, as a full tmpfs would fail it with ENOSPC.
 * That must be a clear error naming the cause, and with another transport
 * configured the worker must still carry messages.
 */
namespace {

/* Whether one of our open fds is a file under @a prefix. */
bool fds_under(const char *prefix)
{
    std::vector<open_fd> fds = open_fds();
    return std::any_of(fds.begin(), fds.end(), [prefix](const open_fd &f) {
        return f.target.compare(0, strlen(prefix), prefix) == 0;
    });
}

bool maps_mention(const char *what)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    bool found = false;
    while ((f != NULL) && (fgets(line, sizeof(line), f) != NULL)) {
        found = found || (strstr(line, what) != NULL);
    }
    if (f != NULL) {
        fclose(f);
    }
    return found;
}

/* Send @a len bytes from @a a to @a b (two workers of this process) and
 * check them; both are progressed. */
void send_between(ucp_entity &a, ucp_entity &b, size_t len)
{
    ucp_ep_h ep = a.connect(b.address());
    std::vector<char> out(len), in(len, 0);
    for (size_t i = 0; i < len; ++i) {
        out[i] = (char)(i * 7 + 3);
    }
    ucp_request_param_t p = no_param();
    ucs_status_ptr_t rr = ucp_tag_recv_nbx(b.worker(), in.data(), len, 5, UINT64_MAX,
                                           &p);
    ucs_status_ptr_t sr = ucp_tag_send_nbx(ep, out.data(), len, 5, &p);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (((UCS_PTR_IS_PTR(sr) && ucp_request_check_status(sr) == UCS_INPROGRESS) ||
            (UCS_PTR_IS_PTR(rr) && ucp_request_check_status(rr) == UCS_INPROGRESS)) &&
           (std::chrono::steady_clock::now() < deadline)) {
        ucp_worker_progress(a.worker());
        ucp_worker_progress(b.worker());
    }
    EXPECT_EQ(UCS_OK, a.wait(sr, 1));
    EXPECT_EQ(UCS_OK, b.wait(rr, 1));
    EXPECT_TRUE(in == out) << len << " bytes arrived corrupted";
    a.close(ep, true);
}

} // namespace

TEST(test_ucp_shm_limits, posix_transport_never_touches_dev_shm)
{
    std::vector<std::string> before = dev_shm_ucx_entries();
    {
        ucp_entity a("posix"), b("posix");
        send_between(a, b, 8);
        send_between(a, b, 300000);
        EXPECT_EQ(before, dev_shm_ucx_entries()) << "a file appeared in /dev/shm";
        EXPECT_FALSE(maps_mention("/dev/shm/")) << "a /dev/shm file is mapped";
        EXPECT_FALSE(fds_under("/dev/shm/")) << "a /dev/shm file is open";
        EXPECT_TRUE(maps_mention("/memfd:ucx-posix")) << "no posix memfd mapped: "
                                                         "was posix used?";
    }
    EXPECT_EQ(before, dev_shm_ucx_entries());
}

TEST(test_ucp_shm_limits, segment_that_cannot_grow_is_a_clear_error)
{
    /* In a child: the limits and the ignored signal must not outlive it. */
    run_two_processes(
        [&](oob_channel &ch) { ASSERT_TRUE(ch.barrier()); },
        [&](oob_channel &ch) {
            config_sandbox sandbox;
            struct rlimit tight = {4096, 4096};
            signal(SIGXFSZ, SIG_IGN); /* else ftruncate beyond it kills us */
            ASSERT_EQ(0, setrlimit(RLIMIT_FSIZE, &tight));

            bool refused = false;
            try {
                ucp_entity only_posix("posix");
            } catch (const std::runtime_error &) {
                refused = true;
            }
            std::string log = sandbox.log();
            printf("[ shm limit ] posix alone: %s, log:\n%s",
                   refused ? "refused" : "created", log.c_str());
            EXPECT_TRUE(refused) << "a posix-only worker came up without memory";
            EXPECT_NE(std::string::npos, log.find("File too large"))
                    << "the error does not name the cause:\n" << log;

            /* Another transport configured: the worker still works. */
            ucp_entity a("posix,tcp"), b("posix,tcp");
            send_between(a, b, 300000);
            ASSERT_TRUE(ch.barrier());
        },
        60);
}
