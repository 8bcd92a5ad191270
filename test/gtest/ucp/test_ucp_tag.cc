/*
 * UCP context, worker, address and tag matching: within one process (self,
 * or the regular transports to one's own worker) and between two real
 * processes over posix and tcp.
 */
#include "ucp_test.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

using namespace ucx_test;

namespace {

std::vector<char> make_data(size_t len, uint64_t seed)
{
    std::vector<char> v(len);
    for (size_t i = 0; i < len; ++i) {
        v[i] = (char)ucp_pattern(seed, i);
    }
    return v;
}

bool check_data(const char *p, size_t len, uint64_t seed)
{
    for (size_t i = 0; i < len; ++i) {
        if ((uint8_t)p[i] != ucp_pattern(seed, i)) {
            return false;
        }
    }
    return true;
}

/* What a receive buffer of @a len bytes (zeroed before) may hold after a
 * truncated message of pattern @a seed: the bytes that fit when it came
 * eagerly, nothing when it came by rendezvous (the receiver asks for no
 * data); never anything else. */
bool check_truncated(const char *p, size_t len, uint64_t seed)
{
    for (size_t i = 0; i < len; ++i) {
        if (p[i] != 0) {
            return check_data(p, len, seed);
        }
    }
    return true;
}

ucs_status_ptr_t send_nbx(ucp_ep_h ep, const void *buf, size_t len, ucp_tag_t tag,
                          bool sync = false)
{
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    return sync ? ucp_tag_send_sync_nbx(ep, buf, len, tag, &param) :
                  ucp_tag_send_nbx(ep, buf, len, tag, &param);
}

ucs_status_ptr_t recv_nbx(ucp_worker_h w, void *buf, size_t len, ucp_tag_t tag,
                          ucp_tag_t mask, ucp_tag_recv_info_t *info)
{
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask       = UCP_OP_ATTR_FIELD_RECV_INFO | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.recv_info.tag_info = info;
    return ucp_tag_recv_nbx(w, buf, len, tag, mask, &param);
}

/* Receive with the request's info: wait, then read it with ucp_request_test. */
ucs_status_t recv_wait(ucp_entity &e, void *buf, size_t len, ucp_tag_t tag,
                       ucp_tag_t mask, ucp_tag_recv_info_t *info)
{
    ucs_status_ptr_t req = recv_nbx(e.worker(), buf, len, tag, mask, info);
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    ucs_status_t status;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((status = ucp_request_test(req, info)) == UCS_INPROGRESS) {
        ucp_worker_progress(e.worker());
        if (std::chrono::steady_clock::now() > deadline) {
            ucp_request_cancel(e.worker(), req);
        }
    }
    ucp_request_free(req);
    return status;
}

} // namespace

/* ---- context -------------------------------------------------------------- */

TEST(test_ucp_context, every_feature_is_accepted_and_unknown_bits_refused)
{
    ucp_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG | UCP_FEATURE_STREAM | UCP_FEATURE_AM |
                        UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;
    ucp_context_h ctx;
    ASSERT_EQ(UCS_OK, ucp_init(&params, NULL, &ctx));
    ucp_context_attr_t attr;
    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    ASSERT_EQ(UCS_OK, ucp_context_query(ctx, &attr));
    /* UCXX reads the host bit to accept host buffers. */
    EXPECT_TRUE(attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_HOST));
    ucp_cleanup(ctx);
    params.features = UCS_BIT(40);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucp_init(&params, NULL, &ctx));
    params.field_mask = 0;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucp_init(&params, NULL, &ctx));
}

TEST(test_ucp_context, print_info_lists_selected_transports_only)
{
    ucp_entity e("tcp");
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    ucp_context_print_info(e.context(), f);
    fclose(f);
    std::string out(buf, size);
    free(buf);
    EXPECT_NE(std::string::npos, out.find("resource 0")) << out;
    EXPECT_NE(std::string::npos, out.find("tcp/")) << out;
    EXPECT_EQ(std::string::npos, out.find("posix/")) << out;
}

TEST(test_ucp_context, query_reports_request_size_and_host_memory)
{
    ucp_entity e;
    ucp_context_attr_t attr;
    attr.field_mask = UCP_ATTR_FIELD_REQUEST_SIZE | UCP_ATTR_FIELD_MEMORY_TYPES;
    ASSERT_EQ(UCS_OK, ucp_context_query(e.context(), &attr));
    EXPECT_GT(attr.request_size, 0u);
    EXPECT_TRUE(attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_HOST));
}

/* ---- address -------------------------------------------------------------- */

TEST(test_ucp_address, corrupt_blob_is_invalid_addr)
{
    ucp_entity e;
    std::string addr = e.address();
    for (size_t pos : {size_t(0), size_t(9), size_t(30), addr.size() - 1}) {
        std::string bad = addr;
        bad[pos] ^= 0x5a;
        bad.resize(bad.size() + 64, '\0');
        ucp_ep_params_t params;
        memset(&params, 0, sizeof(params));
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address    = (const ucp_address_t*)bad.data();
        ucp_ep_h ep;
        EXPECT_EQ(UCS_ERR_INVALID_ADDR, ucp_ep_create(e.worker(), &params, &ep))
            << "byte " << pos;
    }
}

TEST(test_ucp_address, truncated_blob_is_invalid_addr)
{
    ucp_entity e;
    std::string addr = e.address();
    /* Cut just before the last non-zero byte: zeros after it (an address
     * may end in some) come back as they were. */
    size_t last = addr.find_last_not_of('\0');
    ASSERT_NE(std::string::npos, last);
    for (size_t keep : {size_t(4), size_t(20), addr.size() / 2, last}) {
        std::string bad(addr.data(), keep);
        bad.resize(addr.size() + 64, '\0'); /* the rest is gone: zeros */
        ucp_ep_params_t params;
        memset(&params, 0, sizeof(params));
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address    = (const ucp_address_t*)bad.data();
        ucp_ep_h ep;
        EXPECT_EQ(UCS_ERR_INVALID_ADDR, ucp_ep_create(e.worker(), &params, &ep))
            << "kept " << keep;
    }
}

/* ---- one process ------------------------------------------------------------ */

class test_ucp_tag_loopback : public ::testing::TestWithParam<std::string> {};

TEST_P(test_ucp_tag_loopback, send_to_own_worker_delivers_every_size)
{
    ucp_entity e(GetParam());
    ucp_ep_h ep = e.connect(e.address());
    for (size_t len : {size_t(0), size_t(1), size_t(7), size_t(100), size_t(4000),
                       size_t(9000), size_t(100000), size_t(1) << 20}) {
        auto data = make_data(len, len);
        std::vector<char> buf(len + 1);
        ucs_status_ptr_t sreq = send_nbx(ep, data.data(), len, 42);
        ucp_tag_recv_info_t info;
        ASSERT_EQ(UCS_OK, recv_wait(e, buf.data(), len, 42, UINT64_MAX, &info));
        ASSERT_EQ(UCS_OK, e.wait(sreq));
        EXPECT_EQ(len, info.length);
        EXPECT_EQ(42u, info.sender_tag);
        EXPECT_TRUE(check_data(buf.data(), len, len)) << len;
    }
    e.close(ep);
}

TEST_P(test_ucp_tag_loopback, wildcard_matches_in_send_order_and_probe_removes)
{
    ucp_entity e(GetParam());
    ucp_ep_h ep = e.connect(e.address());
    uint64_t v1 = 1, v2 = 2, v3 = 3;
    ASSERT_EQ(UCS_OK, e.wait(send_nbx(ep, &v1, 8, 0x100)));
    ASSERT_EQ(UCS_OK, e.wait(send_nbx(ep, &v2, 8, 0x200)));
    ASSERT_EQ(UCS_OK, e.wait(send_nbx(ep, &v3, 8, 0x201)));
    for (int i = 0; i < 100; ++i) {
        ucp_worker_progress(e.worker());
    }
    ucp_tag_recv_info_t info;
    ucp_tag_message_h msg = ucp_tag_probe_nb(e.worker(), 0x200, 0xf00, 1, &info);
    ASSERT_TRUE(msg != NULL);
    EXPECT_EQ(0x200u, info.sender_tag);
    EXPECT_EQ(8u, info.length);
    uint64_t got = 0;
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    ASSERT_EQ(UCS_OK, e.wait(ucp_tag_msg_recv_nbx(e.worker(), &got, 8, msg, &param)));
    EXPECT_EQ(2u, got);
    /* Probe without remove leaves it for a receive. */
    EXPECT_TRUE(ucp_tag_probe_nb(e.worker(), 0, 0, 0, &info) != NULL);
    ASSERT_EQ(UCS_OK, recv_wait(e, &got, 8, 0, 0, &info));
    EXPECT_EQ(1u, got);
    ASSERT_EQ(UCS_OK, recv_wait(e, &got, 8, 0, 0, &info));
    EXPECT_EQ(3u, got);
    EXPECT_TRUE(ucp_tag_probe_nb(e.worker(), 0, 0, 0, &info) == NULL);
    e.close(ep);
}

TEST_P(test_ucp_tag_loopback, short_buffer_completes_with_truncated)
{
    ucp_entity e(GetParam());
    ucp_ep_h ep = e.connect(e.address());
    for (size_t len : {size_t(64), size_t(200000)}) {
        auto data = make_data(len, 3);
        std::vector<char> buf(len / 2);
        ucs_status_ptr_t sreq = send_nbx(ep, data.data(), len, 5);
        ucp_tag_recv_info_t info;
        EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED,
                  recv_wait(e, buf.data(), buf.size(), 5, UINT64_MAX, &info));
        EXPECT_EQ(UCS_OK, e.wait(sreq));
        EXPECT_EQ(len, info.length);
        EXPECT_TRUE(check_truncated(buf.data(), buf.size(), 3)) << len;
    }
    e.close(ep);
}

TEST_P(test_ucp_tag_loopback, posted_receive_can_be_canceled)
{
    ucp_entity e(GetParam());
    char buf[8];
    static ucs_status_t seen;
    seen = UCS_INPROGRESS;
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
    param.cb.recv = [](void*, ucs_status_t s, const ucp_tag_recv_info_t*, void*) {
        seen = s;
    };
    ucs_status_ptr_t req = ucp_tag_recv_nbx(e.worker(), buf, 8, 9, UINT64_MAX, &param);
    ASSERT_FALSE(UCS_PTR_IS_ERR(req));
    ASSERT_TRUE(req != NULL);
    ucp_request_cancel(e.worker(), req);
    EXPECT_EQ(UCS_ERR_CANCELED, seen);
    EXPECT_EQ(UCS_ERR_CANCELED, ucp_request_check_status(req));
    ucp_request_free(req);
}

/* UCXX frees a request in its callback and may free or cancel it again from
 * a finalizer: the pool must not take it back twice, or two later operations
 * would share one request. */
TEST_P(test_ucp_tag_loopback, request_freed_twice_goes_back_to_the_pool_once)
{
    ucp_entity e(GetParam());
    char buf[3][8];
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
    param.cb.recv      = [](void *, ucs_status_t, const ucp_tag_recv_info_t *, void *) {};
    ucs_status_ptr_t req =
        ucp_tag_recv_nbx(e.worker(), buf[0], 8, 21, UINT64_MAX, &param);
    ASSERT_TRUE(UCS_PTR_IS_PTR(req));
    ucp_request_cancel(e.worker(), req);
    ucp_request_free(req);
    ucp_request_free(req);               /* the caller's second free */
    ucp_request_cancel(e.worker(), req); /* and a stale cancel */

    ucs_status_ptr_t r1 = ucp_tag_recv_nbx(e.worker(), buf[1], 8, 22, UINT64_MAX, &param);
    ucs_status_ptr_t r2 = ucp_tag_recv_nbx(e.worker(), buf[2], 8, 23, UINT64_MAX, &param);
    ASSERT_TRUE(UCS_PTR_IS_PTR(r1));
    ASSERT_TRUE(UCS_PTR_IS_PTR(r2));
    EXPECT_NE(r1, r2);
    if (r1 == r2) {
        return; /* one request for two receives: nothing more to check */
    }
    EXPECT_EQ(UCS_INPROGRESS, ucp_request_check_status(r1));
    EXPECT_EQ(UCS_INPROGRESS, ucp_request_check_status(r2));
    for (void *r : {r1, r2}) {
        ucp_request_cancel(e.worker(), r);
        EXPECT_EQ(UCS_ERR_CANCELED, ucp_request_check_status(r));
        ucp_request_free(r);
    }
}

TEST_P(test_ucp_tag_loopback, sync_send_completes_only_after_match)
{
    ucp_entity e(GetParam());
    ucp_ep_h ep = e.connect(e.address());
    for (size_t len : {size_t(8), size_t(300000)}) {
        auto data = make_data(len, 11);
        ucs_status_ptr_t sreq = send_nbx(ep, data.data(), len, 77, true);
        ASSERT_FALSE(UCS_PTR_IS_ERR(sreq));
        ASSERT_TRUE(sreq != NULL);
        for (int i = 0; i < 200; ++i) {
            ucp_worker_progress(e.worker());
        }
        EXPECT_EQ(UCS_INPROGRESS, ucp_request_check_status(sreq));
        std::vector<char> buf(len);
        ucp_tag_recv_info_t info;
        ASSERT_EQ(UCS_OK, recv_wait(e, buf.data(), len, 77, UINT64_MAX, &info));
        EXPECT_EQ(UCS_OK, e.wait(sreq));
        EXPECT_TRUE(check_data(buf.data(), len, 11));
    }
    e.close(ep);
}

namespace {
struct gen_ctx { char *buf; size_t len; };
void *gen_start(void *, const void *buffer, size_t count)
{
    return new gen_ctx{(char*)buffer, count};
}
void *gen_start_unpack(void *, void *buffer, size_t count)
{
    return new gen_ctx{(char*)buffer, count};
}
size_t gen_size(void *s) { return ((gen_ctx*)s)->len; }
size_t gen_pack(void *s, size_t off, void *dest, size_t max)
{
    gen_ctx *g = (gen_ctx*)s;
    size_t n = std::min(max, g->len - off);
    for (size_t i = 0; i < n; ++i) {
        ((char*)dest)[i] = g->buf[off + i]; /* byte by byte, as a datatype engine */
    }
    return n;
}
ucs_status_t gen_unpack(void *s, size_t off, const void *src, size_t len)
{
    gen_ctx *g = (gen_ctx*)s;
    for (size_t i = 0; i < len; ++i) {
        g->buf[off + i] = ((const char*)src)[i];
    }
    return UCS_OK;
}
void gen_finish(void *s) { delete (gen_ctx*)s; }
} // namespace

TEST_P(test_ucp_tag_loopback, iov_and_generic_datatypes_round_trip)
{
    ucp_entity e(GetParam());
    ucp_ep_h ep = e.connect(e.address());
    const size_t len = 50000;
    auto data = make_data(len, 21);
    std::vector<char> out(len);

    /* IOV send of three uneven pieces into a generic receive. */
    ucp_dt_iov_t iov[3] = {{data.data(), 10}, {data.data() + 10, 0},
                           {data.data() + 10, len - 10}};
    ucp_generic_dt_ops_t ops = {gen_start, gen_start_unpack, gen_size, gen_pack,
                                gen_unpack, gen_finish};
    ucp_datatype_t gen;
    ASSERT_EQ(UCS_OK, ucp_dt_create_generic(&ops, NULL, &gen));
    ucp_request_param_t sp;
    memset(&sp, 0, sizeof(sp));
    sp.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    sp.datatype     = ucp_dt_make_iov();
    ucs_status_ptr_t sreq = ucp_tag_send_nbx(ep, iov, 3, 1, &sp);
    ucp_request_param_t rp;
    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    rp.datatype     = gen;
    ASSERT_EQ(UCS_OK, e.wait(ucp_tag_recv_nbx(e.worker(), out.data(), len, 1,
                                              UINT64_MAX, &rp)));
    ASSERT_EQ(UCS_OK, e.wait(sreq));
    EXPECT_TRUE(check_data(out.data(), len, 21));

    /* Generic send into an IOV receive. */
    std::vector<char> out2(len);
    ucp_dt_iov_t riov[2] = {{out2.data(), 1000}, {out2.data() + 1000, len - 1000}};
    sp.datatype = gen;
    sreq        = ucp_tag_send_nbx(ep, data.data(), len, 2, &sp);
    rp.datatype = ucp_dt_make_iov();
    ASSERT_EQ(UCS_OK, e.wait(ucp_tag_recv_nbx(e.worker(), riov, 2, 2, UINT64_MAX, &rp)));
    ASSERT_EQ(UCS_OK, e.wait(sreq));
    EXPECT_TRUE(check_data(out2.data(), len, 21));
    ucp_dt_destroy(gen);
    e.close(ep);
}

TEST_P(test_ucp_tag_loopback, threads_send_concurrently_on_one_multi_worker)
{
    ucp_entity e(GetParam(), UCS_THREAD_MODE_MULTI);
    ucp_ep_h ep = e.connect(e.address());
    const int nthreads = 4, per_thread = 200;
    std::vector<std::thread> threads;
    for (int t = 0; t < nthreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) {
                uint64_t v = ((uint64_t)t << 32) | i;
                std::vector<char> big(i % 3 == 0 ? 20000 : 8);
                memcpy(big.data(), &v, 8);
                EXPECT_EQ(UCS_OK, e.wait(send_nbx(ep, big.data(), big.size(),
                                                  0x1000 + t)));
            }
        });
    }
    std::vector<int> next(nthreads, 0);
    std::vector<char> buf(20000);
    for (int n = 0; n < nthreads * per_thread; ++n) {
        ucp_tag_recv_info_t info;
        ASSERT_EQ(UCS_OK, recv_wait(e, buf.data(), buf.size(), 0x1000, ~0xfffull,
                                    &info));
        uint64_t v;
        memcpy(&v, buf.data(), 8);
        int t = (int)(v >> 32);
        ASSERT_LT(t, nthreads);
        EXPECT_EQ(next[t], (int)(v & 0xffffffff)) << "per-sender order";
        ++next[t];
    }
    for (auto &th : threads) {
        th.join();
    }
    e.close(ep);
}

INSTANTIATE_TEST_SUITE_P(tls, test_ucp_tag_loopback,
                         ::testing::Values("self", "posix", "tcp"));

/* ---- two processes ---------------------------------------------------------- */

class test_ucp_tag_2proc : public ::testing::TestWithParam<std::string> {};

static ucp_ep_h exchange(ucp_entity &e, oob_channel &ch, bool peer_mode = false,
                         ucp_err_handler_cb_t cb = NULL, void *arg = NULL)
{
    std::string remote;
    EXPECT_TRUE(ch.send_blob(e.address()));
    EXPECT_TRUE(ch.recv_blob(remote));
    return e.connect(remote, peer_mode, cb, arg);
}

TEST_P(test_ucp_tag_2proc, sizes_up_to_64mib_arrive_intact)
{
    const std::vector<size_t> sizes = {0, 1, 8, 1000, 8192, 65536, 1000000,
                                       size_t(64) << 20};
    std::string tls = GetParam();
    run_two_processes(
        [&](oob_channel &ch) {
            ucp_entity e(tls);
            ucp_ep_h ep = exchange(e, ch);
            for (size_t len : sizes) {
                auto data = make_data(len, len + 1);
                ASSERT_EQ(UCS_OK, e.wait(send_nbx(ep, data.data(), len, len, len & 1),
                                         120));
            }
            ASSERT_TRUE(ch.barrier());
            e.close(ep);
            ASSERT_TRUE(ch.barrier()); /* neither side leaves before both closed */
        },
        [&](oob_channel &ch) {
            ucp_entity e(tls);
            ucp_ep_h ep = exchange(e, ch);
            for (size_t len : sizes) {
                std::vector<char> buf(len + 16);
                ucp_tag_recv_info_t info;
                ASSERT_EQ(UCS_OK, recv_wait(e, buf.data(), buf.size(), len,
                                            UINT64_MAX, &info));
                ASSERT_EQ(len, info.length);
                ASSERT_TRUE(check_data(buf.data(), len, len + 1)) << len;
            }
            ASSERT_TRUE(ch.barrier());
            e.close(ep);
            ASSERT_TRUE(ch.barrier()); /* neither side leaves before both closed */
        },
        240);
}

TEST_P(test_ucp_tag_2proc, many_outstanding_sends_complete_in_order)
{
    std::string tls = GetParam();
    const int n = 2000;
    run_two_processes(
        [&](oob_channel &ch) {
            ucp_entity e(tls);
            ucp_ep_h ep = exchange(e, ch);
            std::vector<std::vector<char>> bufs;
            std::vector<ucs_status_ptr_t> reqs;
            for (int i = 0; i < n; ++i) {
                bufs.emplace_back((i % 10 == 0) ? 30000 : 64, (char)i);
                memcpy(bufs.back().data(), &i, sizeof(i));
                reqs.push_back(send_nbx(ep, bufs.back().data(), bufs.back().size(), 7));
            }
            for (auto r : reqs) {
                ASSERT_EQ(UCS_OK, e.wait(r));
            }
            ASSERT_TRUE(ch.barrier());
            e.close(ep);
            ASSERT_TRUE(ch.barrier()); /* neither side leaves before both closed */
        },
        [&](oob_channel &ch) {
            ucp_entity e(tls);
            ucp_ep_h ep = exchange(e, ch);
            std::vector<char> buf(30000);
            for (int i = 0; i < n; ++i) {
                ucp_tag_recv_info_t info;
                ASSERT_EQ(UCS_OK, recv_wait(e, buf.data(), buf.size(), 7, UINT64_MAX,
                                            &info));
                int got;
                memcpy(&got, buf.data(), sizeof(got));
                ASSERT_EQ(i, got);
            }
            ASSERT_TRUE(ch.barrier());
            e.close(ep);
            ASSERT_TRUE(ch.barrier()); /* neither side leaves before both closed */
        },
        120);
}

TEST_P(test_ucp_tag_2proc, wildcard_probe_and_truncation_across_processes)
{
    std::string tls = GetParam();
    const size_t big = 500000;
    run_two_processes(
        [&](oob_channel &ch) {
            ucp_entity e(tls);
            ucp_ep_h ep = exchange(e, ch);
            auto data = make_data(big, 9);
            uint64_t a = 0xa, b = 0xb;
            ASSERT_EQ(UCS_OK, e.wait(send_nbx(ep, &a, 8, 0x1a)));
            ASSERT_EQ(UCS_OK, e.wait(send_nbx(ep, &b, 8, 0x2b)));
            ASSERT_EQ(UCS_OK, e.wait(send_nbx(ep, data.data(), big, 0x3c, true)));
            ASSERT_TRUE(ch.barrier());
            e.close(ep);
            ASSERT_TRUE(ch.barrier());
        },
        [&](oob_channel &ch) {
            ucp_entity e(tls);
            ucp_ep_h ep = exchange(e, ch);
            ucp_tag_recv_info_t info;
            ucp_tag_message_h msg = NULL;
            auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
            while ((msg == NULL) && (std::chrono::steady_clock::now() < deadline)) {
                ucp_worker_progress(e.worker());
                msg = ucp_tag_probe_nb(e.worker(), 0x20, 0xf0, 1, &info);
            }
            ASSERT_TRUE(msg != NULL);
            EXPECT_EQ(0x2bu, info.sender_tag);
            uint64_t v = 0;
            ucp_request_param_t param;
            memset(&param, 0, sizeof(param));
            ASSERT_EQ(UCS_OK, e.wait(ucp_tag_msg_recv_nbx(e.worker(), &v, 8, msg,
                                                          &param)));
            EXPECT_EQ(0xbu, v);
            ASSERT_EQ(UCS_OK, recv_wait(e, &v, 8, 0, 0, &info)); /* any tag */
            EXPECT_EQ(0xau, v);
            std::vector<char> half(big / 2);
            EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED,
                      recv_wait(e, half.data(), half.size(), 0x3c, ~0ull, &info));
            EXPECT_EQ(big, info.length);
            EXPECT_TRUE(check_truncated(half.data(), half.size(), 9));
            ASSERT_TRUE(ch.barrier());
            e.close(ep);
            ASSERT_TRUE(ch.barrier());
        },
        60);
}

static void count_error(void *arg, ucp_ep_h, ucs_status_t status)
{
    EXPECT_NE(UCS_OK, status);
    ++*(int*)arg;
}

TEST_P(test_ucp_tag_2proc, dead_peer_fails_requests_and_calls_error_handler)
{
    std::string tls = GetParam();
    /* The child is killed on purpose: only the parent's checks count. */
    (void)run_two_processes_raw(
        [&](oob_channel &ch) {
            ucp_entity e(tls);
            int errors  = 0;
            ucp_ep_h ep = exchange(e, ch, true, count_error, &errors);
            uint64_t v  = 1;
            ASSERT_EQ(UCS_OK, e.wait(send_nbx(ep, &v, 8, 1)));
            pid_t child;
            ASSERT_TRUE(ch.recv(&child, sizeof(child)));
            /* A sync send that the peer will never acknowledge. */
            ucs_status_ptr_t sreq = send_nbx(ep, &v, 8, 2, true);
            ASSERT_FALSE(UCS_PTR_IS_ERR(sreq));
            kill(child, SIGKILL);
            std::vector<char> big(1 << 20);
            std::vector<ucs_status_ptr_t> more;
            for (int i = 0; i < 20; ++i) {
                more.push_back(send_nbx(ep, big.data(), big.size(), 3));
            }
            EXPECT_NE(UCS_OK, e.wait(sreq, 30));
            for (auto r : more) {
                ucs_status_t s = e.wait(r, 30);
                EXPECT_NE(UCS_ERR_TIMED_OUT, s);
            }
            auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
            while ((errors == 0) && (std::chrono::steady_clock::now() < deadline)) {
                ucp_worker_progress(e.worker());
            }
            EXPECT_EQ(1, errors);
            e.close(ep, true);
        },
        [&](oob_channel &ch) {
            ucp_entity e(tls);
            ucp_ep_h ep = exchange(e, ch);
            uint64_t v;
            ucp_tag_recv_info_t info;
            ASSERT_EQ(UCS_OK, recv_wait(e, &v, 8, 1, UINT64_MAX, &info));
            pid_t self = getpid();
            ch.send(&self, sizeof(self));
            for (;;) {
                pause(); /* killed by the parent */
            }
            (void)ep;
        },
        120);
}

INSTANTIATE_TEST_SUITE_P(tls, test_ucp_tag_2proc, ::testing::Values("posix", "tcp"));
