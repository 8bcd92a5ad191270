/**
 * @file test_ucp_rndv.cc
 * Rendezvous between two processes on host memory only (no CUDA needed):
 * UCX_RNDV_THRESH forced low, so messages take RTS/RTR and arrive as
 * RNDV_DATA active messages over posix or tcp. Checks data, the protocol
 * counters, sync sends, truncation, cancel, probe of an unexpected RTS,
 * IOV/generic datatypes, a dead peer, and bad configuration values.
 * Then, in one process: the cache of unpacked keys (on a component of the
 * test's own), key trimming and the pipeline's piece sizes.
 */
#include "ucp/ucp_test.h"
#include "common/test_helpers.h"

#include <ucp/core/ucp_config.h>
#include <ucp/core/ucp_proto_stats.h>
#include <ucp/rndv/ucp_rndv.h>
#include <uct/base/uct_component.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <vector>

using namespace ucx_test;

namespace {

const size_t k_thresh = 4096;

/* The settings of every process of these tests. */
/* One lane per read (the 4M bound of UCX_RNDV_HOST_GET_MAX=auto holds on
 * any machine): reads over rails have their own tests below. */
struct rndv_env {
    scoped_setenv thresh{"UCX_RNDV_THRESH", "4K"};
    scoped_setenv frag{"UCX_RNDV_FRAG_SIZE", "host:64K"};
    scoped_setenv rails{"UCX_MAX_RNDV_RAILS", "1"};
};

void fill(std::vector<char> &v, unsigned seed)
{
    for (size_t i = 0; i < v.size(); ++i) {
        v[i] = (char)ucp_pattern(seed, i);
    }
}

size_t first_bad(const char *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; ++i) {
        if ((uint8_t)p[i] != ucp_pattern(seed, i)) {
            return i;
        }
    }
    return len;
}

ucs_status_ptr_t send(ucp_ep_h ep, const void *buf, size_t count, ucp_tag_t tag,
                      bool sync = false, ucp_datatype_t dt = ucp_dt_make_contig(1))
{
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = dt;
    return sync ? ucp_tag_send_sync_nbx(ep, buf, count, tag, &param) :
                  ucp_tag_send_nbx(ep, buf, count, tag, &param);
}

ucs_status_ptr_t post_recv(ucp_worker_h w, void *buf, size_t count, ucp_tag_t tag,
                           ucp_tag_recv_info_t *info,
                           ucp_datatype_t dt = ucp_dt_make_contig(1))
{
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_RECV_INFO | UCP_OP_ATTR_FIELD_DATATYPE |
                         UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.recv_info.tag_info = info;
    param.datatype           = dt;
    return ucp_tag_recv_nbx(w, buf, count, tag, ~0ull, &param);
}

ucs_status_t wait_info(ucp_entity &e, ucs_status_ptr_t req, ucp_tag_recv_info_t *info)
{
    return e.wait_recv(req, info);
}

ucp_ep_h exchange(ucp_entity &e, oob_channel &ch, bool peer_mode = false)
{
    std::string remote;
    EXPECT_TRUE(ch.send_blob(e.address()));
    EXPECT_TRUE(ch.recv_blob(remote));
    return e.connect(remote, peer_mode);
}

uint64_t rndv_count(ucp_worker_h w, ucp_proto_stat_t proto)
{
    uint64_t counts[UCP_PROTO_STAT_LAST];
    ucp_worker_proto_stats(w, counts);
    return counts[proto];
}

/* What a contiguous host -> host rendezvous of @a len bytes takes over
 * @a tls, one lane: up to UCX_RNDV_HOST_GET_MAX (4M by default) a read of the
 * sender's buffer where a transport can (cma; tcp over its messaging
 * connection), else data messages. */
ucp_proto_stat_t host_rndv_proto(const std::string &tls, size_t len)
{
    bool reads = (tls.find("cma") != std::string::npos) ||
                 (tls.find("tcp") != std::string::npos);
    return (reads && (len <= (4ul << 20))) ? UCP_PROTO_STAT_RNDV_HOST_GET :
                                             UCP_PROTO_STAT_RNDV_AM;
}

/* Whether the rendezvous of @a sizes (from k_thresh on) were counted under
 * the protocols host_rndv_proto() names. */
void expect_host_rndv_protos(ucp_worker_h w, const std::string &tls,
                             const std::vector<size_t> &sizes)
{
    uint64_t want[UCP_PROTO_STAT_LAST] = {};
    for (size_t len : sizes) {
        want[host_rndv_proto(tls, len)] += (len >= k_thresh);
    }
    EXPECT_EQ(want[UCP_PROTO_STAT_RNDV_HOST_GET],
              rndv_count(w, UCP_PROTO_STAT_RNDV_HOST_GET));
    EXPECT_EQ(0u, rndv_count(w, UCP_PROTO_STAT_RNDV_GET)) << "no device lane here";
    EXPECT_EQ(want[UCP_PROTO_STAT_RNDV_AM], rndv_count(w, UCP_PROTO_STAT_RNDV_AM));
}

void finish(ucp_entity &e, ucp_ep_h ep, oob_channel &ch)
{
    ASSERT_TRUE(ch.barrier());
    e.close(ep);
    ASSERT_TRUE(ch.barrier());
}

/* Send (or receive and check) one message of each of @a sizes, tagged with
 * its size and filled with the pattern of its size. */
void transfer_sizes(ucp_entity &e, ucp_ep_h ep, const std::vector<size_t> &sizes,
                    bool sender)
{
    for (size_t len : sizes) {
        std::vector<char> buf(len);
        if (sender) {
            fill(buf, (unsigned)len);
            ASSERT_EQ(UCS_OK, e.wait(send(ep, buf.data(), len, len), 60));
        } else {
            ucp_tag_recv_info_t info;
            ASSERT_EQ(UCS_OK, wait_info(e, post_recv(e.worker(), buf.data(), len, len,
                                                     &info), &info));
            ASSERT_EQ(len, first_bad(buf.data(), len, (unsigned)len)) << len;
        }
    }
}

class test_ucp_rndv_host : public ::testing::TestWithParam<std::string> {};

TEST_P(test_ucp_rndv_host, sizes_around_threshold_and_segments_arrive_intact)
{
    const std::vector<size_t> sizes = {k_thresh - 1, k_thresh, k_thresh + 1,
                                       65535, 65536, 65537, 1000003, 8 << 20};
    std::string tls = GetParam();
    run_two_processes(
        [&](oob_channel &ch) {
            rndv_env env;
            ucp_entity e(tls);
            ucp_ep_h ep = exchange(e, ch);
            for (size_t len : sizes) {
                std::vector<char> data(len);
                fill(data, (unsigned)len);
                ASSERT_EQ(UCS_OK, e.wait(send(ep, data.data(), len, len), 120));
            }
            /* Every message from the threshold on took the rendezvous. */
            expect_host_rndv_protos(e.worker(), tls, sizes);
            finish(e, ep, ch);
        },
        [&](oob_channel &ch) {
            rndv_env env;
            ucp_entity e(tls);
            ucp_ep_h ep = exchange(e, ch);
            for (size_t len : sizes) {
                /* A guard after the message must stay untouched. */
                std::vector<char> buf(len + 64, (char)0x5a);
                ucp_tag_recv_info_t info;
                ASSERT_EQ(UCS_OK, wait_info(e, post_recv(e.worker(), buf.data(), len + 64,
                                                         len, &info), &info));
                ASSERT_EQ(len, info.length);
                ASSERT_EQ(len, first_bad(buf.data(), len, (unsigned)len)) << len;
                for (size_t i = len; i < len + 64; ++i) {
                    ASSERT_EQ((char)0x5a, buf[i]) << "written past the message";
                }
            }
            expect_host_rndv_protos(e.worker(), tls, sizes);
            finish(e, ep, ch);
        },
        240);
}

/* UCX_RNDV_SCHEME=pipeline is the user's choice: the host lane is not used
 * even where it could read the sender's buffer. */
TEST(test_ucp_rndv_host_lane, the_pipeline_scheme_keeps_host_data_off_the_host_lane)
{
    const size_t len = 1 << 20;
    run_two_processes(
        [&](oob_channel &ch) {
            rndv_env env;
            scoped_setenv scheme("UCX_RNDV_SCHEME", "pipeline");
            ucp_entity e("posix,cma");
            ucp_ep_h ep = exchange(e, ch);
            std::vector<char> data(len);
            fill(data, 5);
            ASSERT_EQ(UCS_OK, e.wait(send(ep, data.data(), len, 1), 60));
            EXPECT_EQ(1u, rndv_count(e.worker(), UCP_PROTO_STAT_RNDV_AM));
            finish(e, ep, ch);
        },
        [&](oob_channel &ch) {
            rndv_env env;
            scoped_setenv scheme("UCX_RNDV_SCHEME", "pipeline");
            ucp_entity e("posix,cma");
            ucp_ep_h ep = exchange(e, ch);
            std::vector<char> buf(len);
            ucp_tag_recv_info_t info;
            ASSERT_EQ(UCS_OK, wait_info(e, post_recv(e.worker(), buf.data(), len, 1, &info),
                                        &info));
            ASSERT_EQ(len, first_bad(buf.data(), len, 5));
            EXPECT_EQ(1u, rndv_count(e.worker(), UCP_PROTO_STAT_RNDV_AM));
            EXPECT_EQ(0u, rndv_count(e.worker(), UCP_PROTO_STAT_RNDV_HOST_GET));
            finish(e, ep, ch);
        },
        120);
}

/* Past UCX_RNDV_HOST_GET_MAX, host data goes as messages (both cores copy)
 * instead of one read by the receiver. */
TEST(test_ucp_rndv_host_lane, messages_above_the_get_max_take_data_messages)
{
    const std::vector<size_t> sizes = {256 * 1024, 512 * 1024, 512 * 1024 + 1, 1 << 20};
    auto side = [&](oob_channel &ch, bool sender) {
        rndv_env env;
        scoped_setenv max("UCX_RNDV_HOST_GET_MAX", "512K");
        ucp_entity e("posix,cma");
        ucp_ep_h ep = exchange(e, ch);
        transfer_sizes(e, ep, sizes, sender);
        EXPECT_EQ(2u, rndv_count(e.worker(), UCP_PROTO_STAT_RNDV_HOST_GET));
        EXPECT_EQ(2u, rndv_count(e.worker(), UCP_PROTO_STAT_RNDV_AM));
        finish(e, ep, ch);
    };
    run_two_processes([&](oob_channel &ch) { side(ch, true); },
                      [&](oob_channel &ch) { side(ch, false); }, 120);
}

TEST_P(test_ucp_rndv_host, sync_truncation_cancel_and_probe)
{
    const size_t len = 100000;
    std::string tls  = GetParam();
    run_two_processes(
        [&](oob_channel &ch) {
            rndv_env env;
            ucp_entity e(tls);
            ucp_ep_h ep = exchange(e, ch);
            std::vector<char> data(len);
            fill(data, 3);
            /* Sync: completes only once the receiver has the data. */
            ASSERT_EQ(UCS_OK, e.wait(send(ep, data.data(), len, 1, true)));
            /* Truncated at the receiver: the sender still completes. */
            ASSERT_EQ(UCS_OK, e.wait(send(ep, data.data(), len, 2)));
            /* Unexpected, then probed and taken with msg_recv. */
            ASSERT_EQ(UCS_OK, e.wait(send(ep, data.data(), len, 3)));
            finish(e, ep, ch);
        },
        [&](oob_channel &ch) {
            rndv_env env;
            ucp_entity e(tls);
            ucp_ep_h ep = exchange(e, ch);
            ucp_tag_recv_info_t info;
            std::vector<char> buf(len);
            ASSERT_EQ(UCS_OK, wait_info(e, post_recv(e.worker(), buf.data(), len, 1,
                                                     &info), &info));
            EXPECT_EQ(len, first_bad(buf.data(), len, 3));

            std::vector<char> small(len / 2 + 64, (char)0x77);
            EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED,
                      wait_info(e, post_recv(e.worker(), small.data(), len / 2, 2,
                                             &info), &info));
            EXPECT_EQ(len, info.length);
            for (size_t i = len / 2; i < small.size(); ++i) {
                ASSERT_EQ((char)0x77, small[i]) << "written past the buffer";
            }

            ucp_tag_message_h msg = NULL;
            auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
            while ((msg == NULL) && (std::chrono::steady_clock::now() < deadline)) {
                ucp_worker_progress(e.worker());
                msg = ucp_tag_probe_nb(e.worker(), 3, ~0ull, 1, &info);
            }
            ASSERT_TRUE(msg != NULL);
            EXPECT_EQ(len, info.length) << "probe must report the message length";
            ucp_request_param_t param;
            memset(&param, 0, sizeof(param));
            memset(buf.data(), 0, len);
            ASSERT_EQ(UCS_OK, e.wait(ucp_tag_msg_recv_nbx(e.worker(), buf.data(), len,
                                                          msg, &param)));
            EXPECT_EQ(len, first_bad(buf.data(), len, 3));

            /* An unmatched receive of rendezvous size can be canceled. */
            ucs_status_ptr_t req = post_recv(e.worker(), buf.data(), len, 99, &info);
            ASSERT_TRUE(UCS_PTR_IS_PTR(req));
            ucp_request_cancel(e.worker(), req);
            EXPECT_EQ(UCS_ERR_CANCELED, wait_info(e, req, &info));
            finish(e, ep, ch);
        },
        120);
}

TEST_P(test_ucp_rndv_host, iov_sender_and_receiver)
{
    const size_t piece = 30001, n = 5;
    std::string tls    = GetParam();
    run_two_processes(
        [&](oob_channel &ch) {
            rndv_env env;
            ucp_entity e(tls);
            ucp_ep_h ep = exchange(e, ch);
            std::vector<char> data(piece * n);
            fill(data, 11);
            std::vector<ucp_dt_iov_t> iov(n);
            for (size_t i = 0; i < n; ++i) {
                iov[i].buffer = data.data() + i * piece;
                iov[i].length = piece;
            }
            ASSERT_EQ(UCS_OK, e.wait(send(ep, iov.data(), n, 5, false,
                                          ucp_dt_make_iov())));
            finish(e, ep, ch);
        },
        [&](oob_channel &ch) {
            rndv_env env;
            ucp_entity e(tls);
            ucp_ep_h ep = exchange(e, ch);
            /* Receive into differently cut pieces. */
            std::vector<char> a(7), b(piece * n - 7 - 1000), c(1000);
            ucp_dt_iov_t iov[3] = {{a.data(), a.size()}, {b.data(), b.size()},
                                   {c.data(), c.size()}};
            ucp_tag_recv_info_t info;
            ASSERT_EQ(UCS_OK, wait_info(e, post_recv(e.worker(), iov, 3, 5, &info,
                                                     ucp_dt_make_iov()), &info));
            std::vector<char> all(a);
            all.insert(all.end(), b.begin(), b.end());
            all.insert(all.end(), c.begin(), c.end());
            EXPECT_EQ(piece * n, first_bad(all.data(), all.size(), 11));
            finish(e, ep, ch);
        },
        120);
}

TEST_P(test_ucp_rndv_host, dead_receiver_fails_the_send)
{
    std::string tls = GetParam();
    (void)run_two_processes_raw(
        [&](oob_channel &ch) {
            rndv_env env;
            ucp_entity e(tls);
            ucp_ep_h ep = exchange(e, ch, true);
            pid_t child;
            ASSERT_TRUE(ch.recv(&child, sizeof(child)));
            std::vector<char> data(1 << 20);
            /* The RTS goes out; no reply will ever come. */
            ucs_status_ptr_t req = send(ep, data.data(), data.size(), 1);
            ASSERT_FALSE(UCS_PTR_IS_ERR(req));
            kill(child, SIGKILL);
            ucs_status_t status = e.wait(req, 30);
            EXPECT_NE(UCS_OK, status);
            EXPECT_NE(UCS_ERR_TIMED_OUT, status) << "the send hung";
            e.close(ep, true);
        },
        [&](oob_channel &ch) {
            rndv_env env;
            ucp_entity e(tls);
            ucp_ep_h ep = exchange(e, ch);
            pid_t self = getpid();
            ch.send(&self, sizeof(self));
            for (;;) {
                pause();
            }
            (void)ep;
        },
        120);
}

/* With the model's thresholds (UCX_RNDV_THRESH=auto) over tcp: a message
 * the host lane may read takes the read; one above UCX_RNDV_HOST_GET_MAX
 * goes as the model would send it without the lane (eager), not as
 * rendezvous data messages, which ran at 0.31x of eager both ways at once. */
TEST(test_ucp_rndv_host_lane, above_the_get_max_tcp_sends_eagerly_by_the_model)
{
    const std::vector<size_t> sizes = {1 << 20, 16 << 20};
    auto side = [&](oob_channel &ch, bool sender) {
        scoped_setenv rails("UCX_MAX_RNDV_RAILS", "1"); /* the one-lane bound */
        ucp_entity e("tcp");
        ucp_ep_h ep = exchange(e, ch);
        transfer_sizes(e, ep, sizes, sender);
        if (sender) {
            EXPECT_EQ(1u, rndv_count(e.worker(), UCP_PROTO_STAT_RNDV_HOST_GET));
            EXPECT_EQ(0u, rndv_count(e.worker(), UCP_PROTO_STAT_RNDV_AM));
            EXPECT_EQ(1u, rndv_count(e.worker(), UCP_PROTO_STAT_EAGER_MULTI));
        }
        finish(e, ep, ch);
    };
    run_two_processes([&](oob_channel &ch) { side(ch, true); },
                      [&](oob_channel &ch) { side(ch, false); }, 120);
}

/* The tcp devices of @a ep's lanes, in ucp_ep_query() order. */
std::vector<std::string> ep_devices(ucp_ep_h ep)
{
    ucp_transport_entry_t entries[8];
    ucp_ep_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.field_mask             = UCP_EP_ATTR_FIELD_TRANSPORTS;
    attr.transports.entries     = entries;
    attr.transports.num_entries = 8;
    attr.transports.entry_size  = sizeof(entries[0]);
    EXPECT_EQ(UCS_OK, ucp_ep_query(ep, &attr));
    std::vector<std::string> devs;
    for (unsigned i = 0; i < attr.transports.num_entries; ++i) {
        devs.push_back(entries[i].device_name);
    }
    return devs;
}

/* Two tcp devices reach the peer (lo and this machine's own interface):
 * reads of 2 x UCX_MIN_RNDV_CHUNK_SIZE and more split over both, every byte
 * lands where it belongs, with shares of uneven sizes, and over two rails
 * messages above 4 MiB are read too; with UCX_MAX_RNDV_RAILS=1 the ep has
 * one lane and 16 MiB goes eagerly. */
TEST(test_ucp_rndv_host_lane, reads_split_over_two_tcp_devices_arrive_intact)
{
    const std::vector<size_t> sizes = {65535,  65536,   131071,  131072,
                                       131073, 1000003, 4 << 20, 16 << 20};
    {
        ucp_entity a("tcp"), b("tcp");
        ucp_ep_h ep                   = a.connect(b.address());
        std::vector<std::string> devs = ep_devices(ep);
        a.close(ep);
        if ((devs.size() != 2) || (devs[0] == devs[1])) {
            GTEST_SKIP() << "one tcp device reaches a peer on this machine ("
                         << devs.size() << " lanes): nothing to split over";
        }
    }
    for (const char *rails : {"2", "1"}) {
        auto side = [&](oob_channel &ch, bool sender) {
            scoped_setenv r("UCX_MAX_RNDV_RAILS", rails);
            scoped_setenv chunk("UCX_MIN_RNDV_CHUNK_SIZE", "64k");
            scoped_setenv thresh("UCX_RNDV_THRESH", "32k");
            ucp_entity e("tcp");
            ucp_ep_h ep = exchange(e, ch);
            EXPECT_EQ(strcmp(rails, "1") ? 2u : 1u, ep_devices(ep).size()) << rails;
            transfer_sizes(e, ep, sizes, sender);
            if (sender) {
                /* Over one lane 16 MiB is above UCX_RNDV_HOST_GET_MAX=auto. */
                EXPECT_EQ(sizes.size() - !strcmp(rails, "1"),
                          rndv_count(e.worker(), UCP_PROTO_STAT_RNDV_HOST_GET));
            }
            finish(e, ep, ch);
        };
        run_two_processes([&](oob_channel &ch) { side(ch, true); },
                          [&](oob_channel &ch) { side(ch, false); }, 120);
    }
}

/* Over tcp the receiver reads the sender's buffer: a sender that dies in the
 * middle of that read fails the receive (no hang, no data claimed). */
TEST(test_ucp_rndv_host_lane, a_sender_dying_mid_read_over_tcp_fails_the_receive)
{
    const size_t len = 256u << 20;
    (void)run_two_processes_raw(
        [&](oob_channel &ch) {
            scoped_setenv max("UCX_RNDV_HOST_GET_MAX", "inf");
            ucp_entity e("tcp");
            ucp_ep_h ep = exchange(e, ch, true);
            pid_t child;
            ASSERT_TRUE(ch.recv(&child, sizeof(child)));
            ucp_tag_recv_info_t info;
            ucp_tag_message_h msg = NULL;
            auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
            while ((msg == NULL) && (std::chrono::steady_clock::now() < deadline)) {
                ucp_worker_progress(e.worker());
                msg = ucp_tag_probe_nb(e.worker(), 1, ~0ull, 1, &info);
            }
            ASSERT_TRUE(msg != NULL);
            ASSERT_EQ(len, info.length);
            std::vector<char> buf(len);
            ucp_request_param_t param;
            memset(&param, 0, sizeof(param));
            ucs_status_ptr_t req = ucp_tag_msg_recv_nbx(e.worker(), buf.data(), len, msg,
                                                        &param);
            ASSERT_TRUE(UCS_PTR_IS_PTR(req));
            for (int i = 0; i < 5; ++i) {
                ucp_worker_progress(e.worker());
            }
            kill(child, SIGKILL);
            ucs_status_t status = e.wait(req, 60);
            EXPECT_NE(UCS_OK, status) << "256 MiB read before the sender was killed";
            EXPECT_NE(UCS_ERR_TIMED_OUT, status) << "the receive hung";
            e.close(ep, true);
        },
        [&](oob_channel &ch) {
            scoped_setenv max("UCX_RNDV_HOST_GET_MAX", "inf");
            ucp_entity e("tcp");
            ucp_ep_h ep = exchange(e, ch, true);
            pid_t self = getpid();
            std::vector<char> data(len, 1);
            ucs_status_ptr_t req = send(ep, data.data(), len, 1);
            ch.send(&self, sizeof(self));
            for (;;) {
                ucp_worker_progress(e.worker());
            }
            (void)req;
        },
        120);
}

INSTANTIATE_TEST_SUITE_P(tls, test_ucp_rndv_host,
                         ::testing::Values("posix", "tcp", "posix,cma"));

TEST(test_ucp_rndv_config, bad_values_are_refused_naming_the_variable)
{
    const char *bad[][2] = {{"UCX_RNDV_FRAG_SIZE", "0"},
                            {"UCX_RNDV_SCHEME", "fastest"},
                            {"UCX_RNDV_FRAG_MEM_TYPE", "rocm"},
                            {"UCX_RNDV_THRESH", "lots"},
                            {"UCX_RNDV_PIPELINE_DEPTH", "0"}};
    for (auto &kv : bad) {
        scoped_setenv env(kv[0], kv[1]);
        ucp_config_t *config = NULL;
        ucp_context_h context;
        ucp_params_t params;
        ucs_status_t status = ucp_config_read(NULL, NULL, &config);
        if (status == UCS_OK) {
            memset(&params, 0, sizeof(params));
            params.field_mask = UCP_PARAM_FIELD_FEATURES;
            params.features   = UCP_FEATURE_TAG;
            status            = ucp_init(&params, config, &context);
            ucp_config_release(config);
            if (status == UCS_OK) {
                ucp_cleanup(context);
            }
        }
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, status) << kv[0] << "=" << kv[1];
    }
}

TEST(test_ucp_rndv_config, defaults_keep_at_most_1g_of_device_fragments)
{
    const size_t M = 1ul << 20;
    ucp_rndv_config_t rndv;
    ucp_config_t *config;

    ASSERT_EQ(UCS_OK, ucp_config_read(NULL, NULL, &config));
    ucs_status_t status = ucp_config_rndv_resolve(config, &rndv);
    ucp_config_release(config);
    ASSERT_EQ(UCS_OK, status);
    /* Measured on 2x H200 (docs/rendezvous.md): 64 MiB fragments, depth 4,
     * a pool of at most 16 fragments = 1 GiB of device memory per worker
     * and GPU; pieces below a fragment only for a message alone. */
    EXPECT_EQ(64 * M, rndv.frag_size[UCS_MEMORY_TYPE_CUDA]);
    EXPECT_EQ(4u, rndv.depth);
    EXPECT_EQ(16u, rndv.frag_pool_max);
    EXPECT_EQ(1024 * M, rndv.frag_pool_max * rndv.frag_size[UCS_MEMORY_TYPE_CUDA]);
    EXPECT_TRUE(rndv.split_alone);
    EXPECT_TRUE(rndv.whole_pieces);
    /* Messages below depth fragments still make depth pieces >= 1 MiB. */
    EXPECT_EQ(1 * M, ucp_rndv_send_piece_size(4 * M, 64 * M, rndv.depth));
    EXPECT_EQ(4 * M, ucp_rndv_send_piece_size(16 * M, 64 * M, rndv.depth));
    EXPECT_EQ(16 * M, ucp_rndv_send_piece_size(64 * M, 64 * M, rndv.depth));
    EXPECT_EQ(64 * M, ucp_rndv_send_piece_size(256 * M, 64 * M, rndv.depth));
    EXPECT_EQ(UCP_RNDV_PIECE_MIN, ucp_rndv_send_piece_size(2 * M, 64 * M, rndv.depth));
}

TEST(test_ucp_rndv_config, plural_frag_mem_types_is_an_alias)
{
    scoped_setenv env("UCX_RNDV_FRAG_MEM_TYPES", "host");
    ucp_config_t *config;
    ASSERT_EQ(UCS_OK, ucp_config_read(NULL, NULL, &config));
    char buf[4096] = {0};
    FILE *f        = fmemopen(buf, sizeof(buf) - 1, "w");
    ucp_config_print(config, f, NULL, UCS_CONFIG_PRINT_CONFIG);
    fclose(f);
    ucp_config_release(config);
    EXPECT_NE(nullptr, strstr(buf, "UCX_RNDV_FRAG_MEM_TYPES=host")) << buf;
}

} // namespace

/* ---- the cache of unpacked keys, on a component of the test's own ---------- */

namespace {

const size_t k_key_size = 64;

/* Keys of the fake component: byte 0 'K' unpacks, 'N' is "not exportable",
 * anything else is malformed. The rkey is a copy of the key. */
struct fake_keys {
    static unsigned unpacks, live;
    static bool     padded; /* every unpack saw zeros after the content */

    static ucs_status_t unpack(uct_component_t *, const void *buffer,
                               uct_rkey_t *rkey_p, void **handle_p)
    {
        const char *p = (const char*)buffer;
        ++unpacks;
        if ((p[k_key_size - 1] != 0) || (p[k_key_size - 2] != 0)) {
            padded = false;
        }
        if (p[0] == 'N') {
            return UCS_ERR_UNREACHABLE;
        } else if (p[0] != 'K') {
            return UCS_ERR_INVALID_PARAM;
        }
        char *copy = (char*)malloc(k_key_size);
        memcpy(copy, p, k_key_size);
        ++live;
        *rkey_p   = (uintptr_t)copy;
        *handle_p = NULL;
        return UCS_OK;
    }

    static ucs_status_t release(uct_component_t *, uct_rkey_t rkey, void *)
    {
        free((void*)rkey);
        --live;
        return UCS_OK;
    }
};

unsigned fake_keys::unpacks;
unsigned fake_keys::live;
bool fake_keys::padded;

class test_ucp_rndv_key_cache : public ::testing::Test {
protected:
    void SetUp() override
    {
        memset(&m_component, 0, sizeof(m_component));
        m_component.rkey_unpack  = fake_keys::unpack;
        m_component.rkey_release = fake_keys::release;
        fake_keys::unpacks = 0;
        fake_keys::live    = 0;
        fake_keys::padded  = true;
        m_cache = ucp_rndv_key_cache_create(&m_component, k_key_size);
        ASSERT_NE(nullptr, m_cache);
    }

    void TearDown() override
    {
        ucp_rndv_key_cache_destroy(m_cache);
        EXPECT_EQ(0u, fake_keys::live) << "rkeys left after destroy";
    }

    /* A key whose "buffer id" is @a id, without trailing zeros. */
    static std::vector<char> key(char kind, uint32_t id)
    {
        std::vector<char> k(24, 'x');
        k[0] = kind;
        memcpy(&k[8], &id, sizeof(id));
        return k;
    }

    ucs_status_t get(const std::vector<char> &k, uct_rkey_t *rkey = nullptr)
    {
        uct_rkey_t r;
        return ucp_rndv_key_cache_get(m_cache, k.data(), k.size(),
                                      (rkey != nullptr) ? rkey : &r);
    }

    ucp_rndv_key_cache_stats_t stats() const
    {
        ucp_rndv_key_cache_stats_t s;
        ucp_rndv_key_cache_stats(m_cache, &s);
        return s;
    }

    uct_component_t      m_component;
    ucp_rndv_key_cache_t *m_cache = nullptr;
};

} // namespace

TEST_F(test_ucp_rndv_key_cache, same_bytes_hit_without_unpacking_again)
{
    uct_rkey_t first, again;

    ASSERT_EQ(UCS_OK, get(key('K', 1), &first));
    for (int i = 0; i < 10; ++i) {
        ASSERT_EQ(UCS_OK, get(key('K', 1), &again));
        EXPECT_EQ(first, again);
    }
    EXPECT_EQ(1u, fake_keys::unpacks);
    EXPECT_EQ(10u, stats().hits);
    EXPECT_EQ(1u, stats().misses);
    /* What was unpacked is the key, zero-padded to the md's key size. */
    EXPECT_TRUE(fake_keys::padded);
    EXPECT_EQ(0, memcmp((void*)first, key('K', 1).data(), 24));
}

TEST_F(test_ucp_rndv_key_cache, changed_buffer_id_misses)
{
    uct_rkey_t old_rkey, new_rkey;

    ASSERT_EQ(UCS_OK, get(key('K', 7), &old_rkey));
    ASSERT_EQ(UCS_OK, get(key('K', 8), &new_rkey));
    EXPECT_EQ(2u, fake_keys::unpacks);
    EXPECT_NE(old_rkey, new_rkey);
    uint32_t id;
    memcpy(&id, (char*)new_rkey + 8, sizeof(id));
    EXPECT_EQ(8u, id) << "a hit on the old buffer's key";
    /* Both stay known. */
    ASSERT_EQ(UCS_OK, get(key('K', 7)));
    EXPECT_EQ(2u, fake_keys::unpacks);
}

TEST_F(test_ucp_rndv_key_cache, refusals_are_cached_and_bad_lengths_refused)
{
    EXPECT_EQ(UCS_ERR_UNREACHABLE, get(key('N', 1)));
    EXPECT_EQ(UCS_ERR_UNREACHABLE, get(key('N', 1)));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, get(key('?', 1)));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, get(key('?', 1)));
    EXPECT_EQ(2u, fake_keys::unpacks);

    std::vector<char> big(k_key_size + 1, 'K');
    EXPECT_EQ(UCS_ERR_UNREACHABLE, get(big));
    EXPECT_EQ(UCS_ERR_UNREACHABLE, get(std::vector<char>()));
    EXPECT_EQ(2u, fake_keys::unpacks);
}

TEST_F(test_ucp_rndv_key_cache, least_recently_used_is_evicted_when_full)
{
    unsigned n = UCP_RNDV_KEY_CACHE_ENTRIES;

    for (unsigned i = 0; i < n; ++i) {
        ASSERT_EQ(UCS_OK, get(key('K', i)));
    }
    ASSERT_EQ(UCS_OK, get(key('K', 0))); /* 1 is now the oldest */
    EXPECT_EQ(n, stats().entries);
    EXPECT_EQ(0u, stats().evictions);

    ASSERT_EQ(UCS_OK, get(key('K', n)));
    EXPECT_EQ(1u, stats().evictions);
    EXPECT_EQ(n, stats().entries);
    EXPECT_EQ(n, fake_keys::live) << "the evicted rkey was not released";

    unsigned unpacks = fake_keys::unpacks;
    ASSERT_EQ(UCS_OK, get(key('K', 0)));
    ASSERT_EQ(UCS_OK, get(key('K', 2)));
    EXPECT_EQ(unpacks, fake_keys::unpacks) << "a recent key was evicted";
    ASSERT_EQ(UCS_OK, get(key('K', 1)));
    EXPECT_EQ(unpacks + 1, fake_keys::unpacks) << "the oldest key was kept";
}

TEST(test_ucp_rndv_keys, trailing_zeros_are_trimmed_exactly)
{
    char k[40] = {0};

    EXPECT_EQ(0u, ucp_rndv_key_trim(k, sizeof(k)));
    k[0] = 1;
    EXPECT_EQ(1u, ucp_rndv_key_trim(k, sizeof(k)));
    k[17] = 2;
    EXPECT_EQ(18u, ucp_rndv_key_trim(k, sizeof(k)));
    k[39] = 3;
    EXPECT_EQ(40u, ucp_rndv_key_trim(k, sizeof(k)));
    k[5] = 4;
    EXPECT_EQ(6u, ucp_rndv_key_trim(k, 7)); /* only the given length counts */
}

/* The pieces of a read pipeline through host fragments, walked from the
 * start of a message of @a length with fragments of @a frag and ramp @a ramp. */
static std::vector<size_t> ramp_pieces(size_t length, size_t frag, size_t ramp)
{
    std::vector<size_t> pieces;
    size_t offset = 0;

    while ((offset < length) && (pieces.size() < 100000)) {
        pieces.push_back(ucp_rndv_ramp_piece_size(offset, length, frag, ramp));
        if (pieces.back() == 0) {
            break;
        }
        offset += pieces.back();
    }
    return pieces;
}

TEST(test_ucp_rndv_pipeline, read_pieces_ramp_up_and_down_at_the_ends)
{
    const size_t K = 1024, M = K * K;
    typedef std::vector<size_t> v;

    /* 1 MiB in 512K fragments: doubling from 64K, halving back to it. */
    EXPECT_EQ(v({64 * K, 64 * K, 128 * K, 256 * K, 256 * K, 128 * K, 64 * K, 64 * K}),
              ramp_pieces(M, 512 * K, 64 * K));
    EXPECT_EQ(v({64 * K, 64 * K, 128 * K, 256 * K, 512 * K, 512 * K, 512 * K, 512 * K,
                 512 * K, 512 * K, 256 * K, 128 * K, 64 * K, 64 * K}),
              ramp_pieces(4 * M, 512 * K, 64 * K));
    /* Off, or a ramp of a fragment or more: whole fragments. */
    EXPECT_EQ(v({512 * K, 512 * K}), ramp_pieces(M, 512 * K, 0));
    EXPECT_EQ(v({512 * K, 512 * K}), ramp_pieces(M, 512 * K, 512 * K));
    EXPECT_EQ(v({512 * K, 488 * K}), ramp_pieces(1000 * K, 512 * K, 2 * M));
    /* A remainder under a ramp joins the last piece. */
    EXPECT_EQ(v({16 * K, 16 * K, 32 * K - 1}), ramp_pieces(64 * K - 1, 64 * K, 16 * K));
    EXPECT_EQ(v({16 * K, 16 * K, 32 * K, 64 * K, 64 * K, 64 * K, 48 * K, 16 * K + 3}),
              ramp_pieces(5 * 64 * K + 3, 64 * K, 16 * K));
    EXPECT_EQ(v({100 * K}), ramp_pieces(100 * K, 512 * K, 64 * K));
    EXPECT_EQ(v({1}), ramp_pieces(1, 512 * K, 64 * K));
    /* Every piece within a fragment, and they add up. */
    for (size_t length : {64 * K + 1, 3 * M + 12345, 64 * M, 64 * M - 1}) {
        for (size_t ramp : {(size_t)0, 4 * K, 64 * K, 100 * K}) {
            v pieces   = ramp_pieces(length, 512 * K, ramp);
            size_t sum = 0;
            for (size_t p : pieces) {
                EXPECT_GT(p, 0u);
                EXPECT_LE(p, 512 * K);
                sum += p;
            }
            EXPECT_EQ(length, sum) << length << " ramp " << ramp;
            if ((ramp > 0) && (length > 2 * ramp)) {
                EXPECT_EQ(ramp, pieces.front()) << length << " ramp " << ramp;
                EXPECT_LT(pieces.back(), 2 * ramp) << length << " ramp " << ramp;
            }
        }
    }
}

TEST(test_ucp_rndv_pipeline, pieces_follow_depth_within_fragment_and_minimum)
{
    const size_t M = 1ul << 20;

    /* A message that fills depth fragments uses them whole. */
    EXPECT_EQ(16 * M, ucp_rndv_send_piece_size(256 * M, 16 * M, 4));
    EXPECT_EQ(16 * M, ucp_rndv_send_piece_size(64 * M, 16 * M, 4));
    /* A smaller one is cut into depth pieces, 64 KiB-aligned... */
    EXPECT_EQ(4 * M, ucp_rndv_send_piece_size(16 * M, 16 * M, 4));
    EXPECT_EQ(1 * M, ucp_rndv_send_piece_size(4 * M, 16 * M, 4));
    EXPECT_EQ(2 * M + 64 * 1024, ucp_rndv_send_piece_size(8 * M + 1, 16 * M, 4));
    /* ...of at least UCP_RNDV_PIECE_MIN, unless the fragment is smaller. */
    EXPECT_EQ(UCP_RNDV_PIECE_MIN, ucp_rndv_send_piece_size(100000, 16 * M, 4));
    EXPECT_EQ(64 * 1024ul, ucp_rndv_send_piece_size(5 * 65536 + 3, 65536, 4));
    EXPECT_EQ(16 * M, ucp_rndv_send_piece_size(32 * M, 16 * M, 1));
}
