/**
 * @file test_ucp_am.cc
 * Active messages and the stream API between two workers, over each
 * transport set a user can select: eager and rendezvous messages with
 * headers up to the worker's limit, reply endpoints, kept data, rendezvous
 * data fetched later or dropped, the old handler interface, unknown ids;
 * stream bytes in order with and without WAITALL, recv_data_nb, worker
 * poll. Two-process runs check the same over real process boundaries.
 */
#include "ucp/ucp_test.h"
#include "common/test_helpers.h"

#include <ucp/core/ucp_int.h>
#include <ucp/core/ucp_proto_stats.h>
#include <uct/base/uct_iface.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

using namespace ucx_test;

namespace {

const uint64_t k_features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_STREAM;

void fill(std::vector<char> &v, unsigned seed)
{
    for (size_t i = 0; i < v.size(); ++i) {
        v[i] = (char)ucp_pattern(seed, i);
    }
}

bool intact(const void *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; ++i) {
        if (((const uint8_t*)p)[i] != ucp_pattern(seed, i)) {
            return false;
        }
    }
    return true;
}

/* What a handler saw. */
struct am_seen {
    int                count = 0;
    std::string        header;
    std::vector<char>  data;
    uint64_t           attr  = 0;
    ucp_ep_h           reply = NULL;
    void               *desc = NULL; /* kept rendezvous descriptor / data */
    size_t             length = 0;
    bool               keep   = false; /* return UCS_INPROGRESS */
};

ucs_status_t am_record(void *arg, const void *header, size_t header_length,
                       void *data, size_t length, const ucp_am_recv_param_t *param)
{
    am_seen *s = (am_seen*)arg;

    ++s->count;
    s->header.assign((const char*)header, header_length);
    s->attr   = param->recv_attr;
    s->reply  = (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ?
                param->reply_ep : NULL;
    s->length = length;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        s->desc = data;
        return UCS_INPROGRESS; /* fetched by the test */
    }
    s->data.assign((const char*)data, (const char*)data + length);
    if (s->keep && (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA)) {
        s->desc = data;
        return UCS_INPROGRESS;
    }
    return UCS_OK;
}

void set_handler(ucp_worker_h w, unsigned id, am_seen *seen, uint32_t flags = 0)
{
    ucp_am_handler_param_t p;
    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                   UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    p.id    = id;
    p.cb    = am_record;
    p.arg   = seen;
    p.flags = flags;
    ASSERT_EQ(UCS_OK, ucp_worker_set_am_recv_handler(w, &p));
}

ucs_status_ptr_t am_send(ucp_ep_h ep, unsigned id, const std::string &hdr,
                         const void *buf, size_t len, uint32_t flags = 0)
{
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = flags;
    return ucp_am_send_nbx(ep, id, hdr.data(), hdr.size(), buf, len, &param);
}

/* Two workers in one process, endpoints both ways. */
class test_ucp_am : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override
    {
        m_a.reset(new ucp_entity(GetParam(), UCS_THREAD_MODE_SINGLE, k_features));
        m_b.reset(new ucp_entity(GetParam(), UCS_THREAD_MODE_SINGLE, k_features));
        m_ab = m_a->connect(m_b->address());
        m_ba = m_b->connect(m_a->address());
    }

    void TearDown() override
    {
        m_a->close(m_ab);
        m_b->close(m_ba);
        m_b.reset();
        m_a.reset();
    }

    void progress() const
    {
        ucp_worker_progress(m_a->worker());
        ucp_worker_progress(m_b->worker());
    }

    /* Progress both until @a done, at most 30 s. */
    bool until(const std::function<bool()> &done) const
    {
        auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!done()) {
            if (std::chrono::steady_clock::now() > end) {
                return false;
            }
            progress();
        }
        return true;
    }

    ucs_status_t wait(ucs_status_ptr_t req) const
    {
        if (!UCS_PTR_IS_PTR(req)) {
            return UCS_PTR_STATUS(req);
        }
        ucs_status_t status = UCS_INPROGRESS;
        until([&] { return (status = ucp_request_check_status(req)) != UCS_INPROGRESS; });
        ucp_request_free(req);
        return status;
    }

    size_t max_header() const
    {
        ucp_worker_attr_t attr;
        attr.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
        EXPECT_EQ(UCS_OK, ucp_worker_query(m_b->worker(), &attr));
        return attr.max_am_header;
    }

    std::unique_ptr<ucp_entity> m_a, m_b;
    ucp_ep_h                    m_ab, m_ba;
};

TEST_P(test_ucp_am, eager_sizes_and_headers_arrive_intact)
{
    am_seen seen;
    set_handler(m_b->worker(), 7, &seen);
    size_t hmax = max_header();
    ASSERT_GT(hmax, 64u);
    for (size_t len : {0ul, 1ul, 100ul, 8192ul, 65536ul, 300000ul}) {
        for (size_t hlen : {0ul, 16ul, hmax}) {
            std::vector<char> buf(len);
            fill(buf, (unsigned)(len + hlen));
            std::string hdr(hlen, 'h');
            for (size_t i = 0; i < hlen; ++i) {
                hdr[i] = (char)(i * 7 + 1);
            }
            int before = seen.count;
            ASSERT_EQ(UCS_OK, wait(am_send(m_ab, 7, hdr, buf.data(), len,
                                           UCP_AM_SEND_FLAG_EAGER)))
                << len << "+" << hlen;
            ASSERT_TRUE(until([&] { return seen.count > before; }));
            EXPECT_EQ(hdr, seen.header) << len << "+" << hlen;
            ASSERT_EQ(len, seen.data.size());
            EXPECT_TRUE(intact(seen.data.data(), len, (unsigned)(len + hlen)));
            EXPECT_FALSE(seen.attr & UCP_AM_RECV_ATTR_FLAG_RNDV);
            EXPECT_EQ(NULL, seen.reply);
        }
    }
}

TEST_P(test_ucp_am, header_over_the_limit_is_refused)
{
    std::string hdr(max_header() + 1, 'x');
    char c = 0;
    ucs_status_ptr_t ret = am_send(m_ab, 1, hdr, &c, 1);
    ASSERT_TRUE(UCS_PTR_IS_ERR(ret));
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT, UCS_PTR_STATUS(ret));
}

TEST_P(test_ucp_am, rendezvous_data_is_fetched_into_a_buffer_later)
{
    am_seen seen;
    set_handler(m_b->worker(), 3, &seen);
    for (size_t len : {1ul, 5000ul, 4ul << 20}) {
        std::vector<char> buf(len), out(len + 10, 0);
        fill(buf, (unsigned)len);
        seen = am_seen();
        ucs_status_ptr_t sreq = am_send(m_ab, 3, "hdr", buf.data(), len,
                                        UCP_AM_SEND_FLAG_RNDV);
        ASSERT_FALSE(UCS_PTR_IS_ERR(sreq));
        ASSERT_TRUE(until([&] { return seen.count == 1; }));
        EXPECT_TRUE(seen.attr & UCP_AM_RECV_ATTR_FLAG_RNDV);
        EXPECT_EQ("hdr", seen.header);
        EXPECT_EQ(len, seen.length);
        /* The sender waits for the receiver's decision. */
        for (int i = 0; i < 100; ++i) {
            progress();
        }
        if (sreq != NULL) {
            EXPECT_EQ(UCS_INPROGRESS, ucp_request_check_status(sreq));
        }
        size_t got = 0;
        ucp_request_param_t p;
        memset(&p, 0, sizeof(p));
        p.op_attr_mask     = UCP_OP_ATTR_FIELD_RECV_INFO;
        p.recv_info.length = &got;
        ucs_status_ptr_t rreq = ucp_am_recv_data_nbx(m_b->worker(), seen.desc,
                                                     out.data(), out.size(), &p);
        ASSERT_FALSE(UCS_PTR_IS_ERR(rreq));
        if (rreq != NULL) {
            ASSERT_EQ(UCS_OK, wait(rreq));
        } else {
            EXPECT_EQ(len, got);
        }
        EXPECT_EQ(UCS_OK, wait(sreq));
        EXPECT_TRUE(intact(out.data(), len, (unsigned)len)) << len;
        EXPECT_EQ(0, out[len]);
    }
}

TEST_P(test_ucp_am, released_rendezvous_completes_the_sender)
{
    am_seen seen;
    set_handler(m_b->worker(), 4, &seen);
    std::vector<char> buf(1 << 20);
    ucs_status_ptr_t sreq = am_send(m_ab, 4, "", buf.data(), buf.size(),
                                    UCP_AM_SEND_FLAG_RNDV);
    ASSERT_TRUE(until([&] { return seen.count == 1; }));
    ucp_am_data_release(m_b->worker(), seen.desc);
    EXPECT_EQ(UCS_OK, wait(sreq));
}

TEST_P(test_ucp_am, small_messages_go_eager_and_over_the_eager_limit_rendezvous)
{
    /* Without a flag the size decides, as for tag messages: the threshold
     * of the transports' model, and always above UCX_TAG_EAGER_MAX_SIZE. */
    scoped_setenv limit("UCX_TAG_EAGER_MAX_SIZE", "1M");
    ucp_entity a(GetParam(), UCS_THREAD_MODE_SINGLE, k_features);
    ucp_entity b(GetParam(), UCS_THREAD_MODE_SINGLE, k_features);
    ucp_ep_h ab = a.connect(b.address());
    am_seen seen;
    set_handler(b.worker(), 5, &seen);
    std::vector<char> small(16), large(2 << 20);
    auto both = [&](const std::function<bool()> &done) {
        for (int i = 0; (i < 1000000) && !done(); ++i) {
            ucp_worker_progress(a.worker());
            ucp_worker_progress(b.worker());
        }
        return done();
    };
    ucs_status_ptr_t sreq = am_send(ab, 5, "", small.data(), small.size());
    ASSERT_TRUE(both([&] { return seen.count == 1; }));
    EXPECT_EQ(0u, seen.attr); /* plain eager data */
    if (UCS_PTR_IS_PTR(sreq)) {
        ASSERT_TRUE(both([&] { return ucp_request_check_status(sreq) != UCS_INPROGRESS; }));
        ucp_request_free(sreq);
    }
    sreq = am_send(ab, 5, "", large.data(), large.size());
    ASSERT_TRUE(both([&] { return seen.count == 2; }));
    ASSERT_TRUE(seen.attr & UCP_AM_RECV_ATTR_FLAG_RNDV);
    ucp_am_data_release(b.worker(), seen.desc);
    ASSERT_TRUE(UCS_PTR_IS_PTR(sreq));
    ASSERT_TRUE(both([&] { return ucp_request_check_status(sreq) != UCS_INPROGRESS; }));
    EXPECT_EQ(UCS_OK, ucp_request_check_status(sreq));
    ucp_request_free(sreq);
    a.close(ab);
}

TEST_P(test_ucp_am, reply_endpoint_reaches_the_sender)
{
    am_seen at_b, at_a;
    set_handler(m_b->worker(), 9, &at_b);
    set_handler(m_a->worker(), 10, &at_a);
    char c = 'q';
    ASSERT_EQ(UCS_OK, wait(am_send(m_ab, 9, "", &c, 1, UCP_AM_SEND_FLAG_REPLY)));
    ASSERT_TRUE(until([&] { return at_b.count == 1; }));
    ASSERT_TRUE(at_b.attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP);
    ASSERT_NE((void*)NULL, (void*)at_b.reply);
    ASSERT_EQ(UCS_OK, wait(am_send(at_b.reply, 10, "r", &c, 1)));
    ASSERT_TRUE(until([&] { return at_a.count == 1; }));
    EXPECT_EQ("r", at_a.header);
}

TEST_P(test_ucp_am, persistent_data_may_be_kept_and_released_later)
{
    am_seen seen;
    seen.keep = true;
    set_handler(m_b->worker(), 11, &seen, UCP_AM_FLAG_PERSISTENT_DATA);
    std::vector<char> buf(100);
    fill(buf, 5);
    ASSERT_EQ(UCS_OK, wait(am_send(m_ab, 11, "", buf.data(), buf.size())));
    ASSERT_TRUE(until([&] { return seen.count == 1; }));
    ASSERT_TRUE(seen.attr & UCP_AM_RECV_ATTR_FLAG_DATA);
    /* Still there after more traffic. */
    ASSERT_EQ(UCS_OK, wait(am_send(m_ab, 12, "", buf.data(), 1)));
    for (int i = 0; i < 100; ++i) {
        progress();
    }
    EXPECT_TRUE(intact(seen.desc, buf.size(), 5));
    /* Kept eager data is received by copy, which releases it. */
    std::vector<char> out(buf.size());
    size_t got = 0;
    ucp_request_param_t p;
    memset(&p, 0, sizeof(p));
    p.op_attr_mask     = UCP_OP_ATTR_FIELD_RECV_INFO;
    p.recv_info.length = &got;
    EXPECT_EQ(NULL, ucp_am_recv_data_nbx(m_b->worker(), seen.desc, out.data(),
                                         out.size(), &p));
    EXPECT_EQ(buf.size(), got);
    EXPECT_TRUE(intact(out.data(), out.size(), 5));
}

TEST_P(test_ucp_am, unknown_id_is_dropped_and_later_messages_arrive)
{
    am_seen seen;
    set_handler(m_b->worker(), 2, &seen);
    std::vector<char> big(2 << 20);
    char c = 1;
    ASSERT_EQ(UCS_OK, wait(am_send(m_ab, 1000, "", &c, 1)));
    /* A rendezvous one releases its sender. */
    EXPECT_EQ(UCS_OK, wait(am_send(m_ab, 1001, "", big.data(), big.size(),
                                   UCP_AM_SEND_FLAG_RNDV)));
    ASSERT_EQ(UCS_OK, wait(am_send(m_ab, 2, "", &c, 1)));
    ASSERT_TRUE(until([&] { return seen.count == 1; }));
    /* An out-of-range id is a parameter error. */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, UCS_PTR_STATUS(am_send(m_ab, 70000, "", &c, 1)));
}

/* Fragments crafted as a transport hands them over: the first one ends
 * inside the user header, the next one carries the header's rest and the
 * data. The fuzzer found the payload offset computed before any payload
 * (an overflowing pointer, reported by UBSan). */
TEST_P(test_ucp_am, fragment_ending_inside_the_user_header)
{
    am_seen seen;
    set_handler(m_b->worker(), 9, &seen);
    const size_t hlen = 40, dlen = 16, first = 10;
    std::vector<char> whole(hlen + dlen);
    fill(whole, 77);
    const uint64_t uuid = 0x5eed0000beefull, msg_id = 3;
    uct_base_iface_t *iface = (uct_base_iface_t*)m_b->worker()->ifaces[0].iface;

    uint64_t fh[5] = {UCP_AM_WORD(9, hlen, 0), uuid, msg_id, hlen + dlen, 0};
    std::vector<char> msg(sizeof(fh) + first);
    memcpy(msg.data(), fh, sizeof(fh));
    memcpy(msg.data() + sizeof(fh), whole.data(), first);
    EXPECT_EQ(UCS_OK, uct_iface_invoke_am(iface, UCP_AM_ID_AM_FIRST, msg.data(),
                                          msg.size(), 0));
    EXPECT_EQ(0, seen.count);

    uint64_t mh[3] = {uuid, msg_id, first};
    msg.assign(sizeof(mh) + whole.size() - first, 0);
    memcpy(msg.data(), mh, sizeof(mh));
    memcpy(msg.data() + sizeof(mh), whole.data() + first, whole.size() - first);
    EXPECT_EQ(UCS_OK, uct_iface_invoke_am(iface, UCP_AM_ID_EAGER_MIDDLE,
                                          msg.data(), msg.size(), 0));
    ASSERT_TRUE(until([&] { return seen.count == 1; }));
    EXPECT_EQ(std::string(whole.data(), hlen), seen.header);
    ASSERT_EQ(dlen, seen.data.size());
    EXPECT_EQ(0, memcmp(whole.data() + hlen, seen.data.data(), dlen));
}

int g_old_calls;
ucs_status_t old_handler(void *arg, void *data, size_t length, ucp_ep_h reply_ep,
                         unsigned flags)
{
    (void)reply_ep;
    (void)flags;
    std::vector<char> *v = (std::vector<char>*)arg;
    v->assign((char*)data, (char*)data + length);
    ++g_old_calls;
    return UCS_OK;
}

TEST_P(test_ucp_am, old_interface_sends_and_receives)
{
    std::vector<char> got;
    g_old_calls = 0;
    ASSERT_EQ(UCS_OK, ucp_worker_set_am_handler(m_b->worker(), 20, old_handler,
                                                &got, UCP_AM_FLAG_WHOLE_MSG));
    std::vector<char> buf(200000);
    fill(buf, 9);
    ASSERT_EQ(UCS_OK, wait(ucp_am_send_nb(m_ab, 20, buf.data(), buf.size(),
                                          ucp_dt_make_contig(1), NULL, 0)));
    ASSERT_TRUE(until([&] { return g_old_calls == 1; }));
    ASSERT_EQ(buf.size(), got.size());
    EXPECT_TRUE(intact(got.data(), got.size(), 9));

    /* A new-interface sender forcing the rendezvous: the old handler still
     * gets the whole message, fetched for it. */
    fill(buf, 10);
    ucp_request_param_t p;
    memset(&p, 0, sizeof(p));
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags        = UCP_AM_SEND_FLAG_RNDV;
    ucs_status_ptr_t s = ucp_am_send_nbx(m_ab, 20, NULL, 0, buf.data(), buf.size(), &p);
    ASSERT_FALSE(UCS_PTR_IS_ERR(s));
    ASSERT_TRUE(until([&] { return g_old_calls == 2; }));
    EXPECT_EQ(UCS_OK, wait(s));
    ASSERT_EQ(buf.size(), got.size());
    EXPECT_TRUE(intact(got.data(), got.size(), 10));
}

/* ---- stream -------------------------------------------------------------- */

ucs_status_ptr_t stream_recv(ucp_ep_h ep, void *buf, size_t len, size_t *got,
                             bool waitall)
{
    ucp_request_param_t p;
    memset(&p, 0, sizeof(p));
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags        = waitall ? UCP_STREAM_RECV_FLAG_WAITALL : 0;
    return ucp_stream_recv_nbx(ep, buf, len, got, &p);
}

TEST_P(test_ucp_am, stream_bytes_arrive_in_order_across_any_boundaries)
{
    std::vector<char> all(3 << 20);
    fill(all, 77);
    /* Sends of awkward sizes, one receive for everything (WAITALL). */
    std::vector<ucs_status_ptr_t> sends;
    size_t off = 0, step = 1;
    while (off < all.size()) {
        size_t n = std::min(step, all.size() - off);
        sends.push_back(ucp_stream_send_nbx(m_ab, all.data() + off, n, NULL));
        ASSERT_FALSE(UCS_PTR_IS_ERR(sends.back()));
        off  += n;
        step  = step * 3 + 1;
    }
    std::vector<char> out(all.size());
    size_t got = 0;
    ucs_status_ptr_t r = stream_recv(m_ba, out.data(), out.size(), &got, true);
    ASSERT_FALSE(UCS_PTR_IS_ERR(r));
    if (r != NULL) {
        size_t len = 0;
        ASSERT_TRUE(until([&] {
            return ucp_stream_recv_request_test(r, &len) != UCS_INPROGRESS;
        }));
        EXPECT_EQ(UCS_OK, ucp_stream_recv_request_test(r, &len));
        got = len;
        ucp_request_free(r);
    }
    for (auto s : sends) {
        EXPECT_EQ(UCS_OK, wait(s));
    }
    EXPECT_EQ(all.size(), got);
    EXPECT_TRUE(intact(out.data(), out.size(), 77));
}

TEST_P(test_ucp_am, stream_receive_without_waitall_returns_what_is_there)
{
    std::vector<char> data(1000);
    fill(data, 3);
    ASSERT_EQ(UCS_OK, wait(ucp_stream_send_nbx(m_ab, data.data(), 300, NULL)));
    ASSERT_TRUE(until([&] {
        ucp_stream_poll_ep_t pe[4];
        return ucp_stream_worker_poll(m_b->worker(), pe, 4, 0) > 0;
    }));
    ucp_stream_poll_ep_t pe[4];
    ASSERT_EQ(1, ucp_stream_worker_poll(m_b->worker(), pe, 4, 0));
    EXPECT_EQ(m_ba, pe[0].ep);
    std::vector<char> out(1000);
    size_t got = 0;
    EXPECT_EQ(NULL, stream_recv(m_ba, out.data(), out.size(), &got, false));
    EXPECT_EQ(300u, got);
    EXPECT_TRUE(intact(out.data(), 300, 3));
    /* A posted receive completes with the next bytes. */
    ucs_status_ptr_t r = stream_recv(m_ba, out.data(), out.size(), &got, false);
    ASSERT_TRUE(UCS_PTR_IS_PTR(r));
    ASSERT_EQ(UCS_OK, wait(ucp_stream_send_nbx(m_ab, data.data() + 300, 700, NULL)));
    size_t len = 0;
    ASSERT_TRUE(until([&] {
        return ucp_stream_recv_request_test(r, &len) != UCS_INPROGRESS;
    }));
    ucp_request_free(r);
    EXPECT_EQ(700u, len);
    EXPECT_EQ(0, memcmp(out.data(), data.data() + 300, 700));
}

TEST_P(test_ucp_am, stream_data_can_be_borrowed_and_released)
{
    std::vector<char> data(5000);
    fill(data, 4);
    ASSERT_EQ(UCS_OK, wait(ucp_stream_send_nbx(m_ab, data.data(), data.size(), NULL)));
    size_t total = 0;
    ASSERT_TRUE(until([&] {
        size_t len = 0;
        ucs_status_ptr_t p = ucp_stream_recv_data_nb(m_ba, &len);
        if (UCS_PTR_IS_PTR(p)) {
            EXPECT_EQ(0, memcmp(p, data.data() + total, len));
            total += len;
            ucp_stream_data_release(m_ba, p);
        }
        return total == data.size();
    }));
}

TEST_P(test_ucp_am, stream_receives_of_whole_elements)
{
    std::vector<uint32_t> data(64);
    for (size_t i = 0; i < data.size(); ++i) {
        data[i] = (uint32_t)(i * 1000003u);
    }
    /* 6 bytes: one element and a half; the receive takes one element. */
    ASSERT_EQ(UCS_OK, wait(ucp_stream_send_nbx(m_ab, data.data(), 6, NULL)));
    std::vector<uint32_t> out(64, 0);
    ucp_request_param_t p;
    memset(&p, 0, sizeof(p));
    p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype     = ucp_dt_make_contig(4);
    size_t got     = 0;
    ucs_status_ptr_t r = ucp_stream_recv_nbx(m_ba, out.data(), out.size(), &got, &p);
    ASSERT_TRUE(UCS_PTR_IS_PTR(r)) << "completed with half an element";
    ASSERT_EQ(UCS_OK, wait(ucp_stream_send_nbx(m_ab, (char*)data.data() + 6, 2,
                                               NULL)));
    size_t len = 0;
    ASSERT_TRUE(until([&] {
        return ucp_stream_recv_request_test(r, &len) != UCS_INPROGRESS;
    }));
    ucp_request_free(r);
    EXPECT_EQ(8u, len);
    EXPECT_EQ(data[0], out[0]);
    EXPECT_EQ(data[1], out[1]);
}

/* Stream messages over 1 MiB take the rendezvous whatever the transports'
 * model says (UCX_TAG_EAGER_MAX_SIZE bounds eager for every kind). */
class test_ucp_stream_rndv : public test_ucp_am {
protected:
    void SetUp() override
    {
        m_limit.reset(new scoped_setenv("UCX_TAG_EAGER_MAX_SIZE", "1M"));
        test_ucp_am::SetUp();
    }

    std::unique_ptr<scoped_setenv> m_limit;
};

/* Rendezvous messages a worker has sent (any rendezvous protocol). */
static uint64_t rndv_count(ucp_worker_h w)
{
    uint64_t counts[UCP_PROTO_STAT_LAST] = {};
    ucp_worker_proto_stats(w, counts);
    return ucp_proto_stat_rndv_total(counts);
}

static ucs_status_ptr_t stream_recv_flags(ucp_ep_h ep, void *buf, size_t len, size_t *got,
                                          uint32_t flags)
{
    ucp_request_param_t p;
    memset(&p, 0, sizeof(p));
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags        = flags;
    return ucp_stream_recv_nbx(ep, buf, len, got, &p);
}

TEST_P(test_ucp_stream_rndv, stream_rendezvous_keeps_order_with_eager_bytes)
{
    const size_t big = 2 << 20;
    std::vector<char> data(100 + big + 50 + big);
    fill(data, 9);
    uint64_t rndv_before = rndv_count(m_a->worker());
    /* small, big, small, big: back to back, none waited for */
    size_t cuts[] = {0, 100, 100 + big, 150 + big, data.size()};
    std::vector<ucs_status_ptr_t> sends;
    for (int i = 0; i < 4; ++i) {
        sends.push_back(ucp_stream_send_nbx(m_ab, data.data() + cuts[i],
                                            cuts[i + 1] - cuts[i], NULL));
        ASSERT_FALSE(UCS_PTR_IS_ERR(sends.back())) << i;
    }
    std::vector<char> out(data.size(), 0);
    size_t got = 0;
    ASSERT_EQ(UCS_OK, wait(stream_recv_flags(m_ba, out.data(), out.size(), &got,
                                       UCP_STREAM_RECV_FLAG_WAITALL)));
    for (ucs_status_ptr_t r : sends) {
        EXPECT_EQ(UCS_OK, wait(r));
    }
    EXPECT_EQ(0, memcmp(out.data(), data.data(), data.size()));
    EXPECT_EQ(rndv_before + 2, rndv_count(m_a->worker()))
        << "the two large sends should take the rendezvous";
}

TEST_P(test_ucp_stream_rndv, stream_rendezvous_taken_in_pieces_and_borrowed)
{
    const size_t big = 3 << 20;
    std::vector<char> data(big);
    fill(data, 10);
    /* Receives smaller than the message: it is fetched into library memory
     * and handed out in order. */
    ucs_status_ptr_t s = ucp_stream_send_nbx(m_ab, data.data(), big, NULL);
    ASSERT_FALSE(UCS_PTR_IS_ERR(s));
    std::vector<char> out(big, 0);
    size_t got = 0;
    ASSERT_EQ(UCS_OK, wait(stream_recv_flags(m_ba, out.data(), 1000, &got,
                                       UCP_STREAM_RECV_FLAG_WAITALL)));
    ASSERT_EQ(UCS_OK, wait(stream_recv_flags(m_ba, out.data() + 1000, 5000, &got,
                                       UCP_STREAM_RECV_FLAG_WAITALL)));
    size_t total = 6000;
    ASSERT_TRUE(until([&] {
        size_t len = 0;
        ucs_status_ptr_t p = ucp_stream_recv_data_nb(m_ba, &len);
        EXPECT_FALSE(UCS_PTR_IS_ERR(p));
        if (UCS_PTR_IS_PTR(p)) {
            EXPECT_LE(total + len, big);
            memcpy(out.data() + total, p, std::min(len, big - total));
            total += len;
            ucp_stream_data_release(m_ba, p);
        }
        return total >= big;
    }));
    EXPECT_EQ(UCS_OK, wait(s));
    EXPECT_EQ(big, total);
    EXPECT_EQ(0, memcmp(out.data(), data.data(), big));

    /* Borrowing a rendezvous message first: recv_data_nb fetches it. */
    fill(data, 11);
    s = ucp_stream_send_nbx(m_ab, data.data(), big, NULL);
    ASSERT_FALSE(UCS_PTR_IS_ERR(s));
    total = 0;
    ASSERT_TRUE(until([&] {
        size_t len = 0;
        ucs_status_ptr_t p = ucp_stream_recv_data_nb(m_ba, &len);
        if (UCS_PTR_IS_PTR(p)) {
            EXPECT_EQ(0, memcmp(p, data.data() + total, std::min(len, big - total)));
            total += len;
            ucp_stream_data_release(m_ba, p);
        }
        return total >= big;
    }));
    EXPECT_EQ(UCS_OK, wait(s));
    EXPECT_EQ(big, total);
}

TEST_P(test_ucp_stream_rndv, stream_rendezvous_into_a_posted_larger_receive)
{
    const size_t big = 2 << 20;
    std::vector<char> data(big);
    fill(data, 12);
    std::vector<char> out(big + 4096, 0);
    size_t got = 0;
    /* Posted first, without WAITALL: completes with the message's bytes. */
    ucs_status_ptr_t r = stream_recv_flags(m_ba, out.data(), out.size(), &got, 0);
    ASSERT_TRUE(UCS_PTR_IS_PTR(r));
    ucs_status_ptr_t s = ucp_stream_send_nbx(m_ab, data.data(), big, NULL);
    ASSERT_FALSE(UCS_PTR_IS_ERR(s));
    size_t len = 0;
    ASSERT_TRUE(until([&] {
        return ucp_stream_recv_request_test(r, &len) != UCS_INPROGRESS;
    }));
    EXPECT_EQ(UCS_OK, ucp_request_check_status(r));
    ucp_request_free(r);
    EXPECT_EQ(UCS_OK, wait(s));
    EXPECT_EQ(big, len);
    EXPECT_EQ(0, memcmp(out.data(), data.data(), big));
}

/* Several receives posted and several rendezvous sends in flight, with
 * eager bytes between them and boundaries that do not match: some
 * messages are fetched straight into a receive while later ones go on,
 * some do not fit and are fetched into library memory first. Every
 * receive gets exactly its slice of the stream, in order. */
TEST_P(test_ucp_stream_rndv, stream_rendezvous_many_in_flight)
{
    const size_t recv_len = 2 << 20;
    std::vector<size_t> lens;
    for (size_t i = 0; i < 6; ++i) {
        lens.push_back((3 << 19) + i * 1000); /* ~1.5 MiB: rendezvous */
        lens.push_back(300 + i);              /* eager */
    }
    size_t total = 0;
    for (size_t l : lens) {
        total += l;
    }
    std::vector<char> data(total);
    fill(data, 13);
    size_t nrecv = (total + recv_len - 1) / recv_len;
    std::vector<char> out(nrecv * recv_len, 0);
    std::vector<ucs_status_ptr_t> recvs;
    std::vector<size_t> got(nrecv, 0);
    for (size_t i = 0; i < nrecv; ++i) {
        size_t len = std::min(recv_len, total - i * recv_len);
        recvs.push_back(stream_recv_flags(m_ba, out.data() + i * recv_len, len, &got[i],
                                          UCP_STREAM_RECV_FLAG_WAITALL));
        ASSERT_FALSE(UCS_PTR_IS_ERR(recvs.back())) << i;
    }
    uint64_t rndv_before = rndv_count(m_a->worker());
    std::vector<ucs_status_ptr_t> sends;
    size_t off = 0;
    for (size_t l : lens) {
        sends.push_back(ucp_stream_send_nbx(m_ab, data.data() + off, l, NULL));
        ASSERT_FALSE(UCS_PTR_IS_ERR(sends.back()));
        off += l;
    }
    for (size_t i = 0; i < nrecv; ++i) {
        size_t len = 0;
        if (UCS_PTR_IS_PTR(recvs[i])) {
            ASSERT_TRUE(until([&] {
                return ucp_stream_recv_request_test(recvs[i], &len) != UCS_INPROGRESS;
            })) << "receive " << i;
            EXPECT_EQ(UCS_OK, ucp_request_check_status(recvs[i]));
            ucp_request_free(recvs[i]);
        } else {
            EXPECT_EQ(NULL, recvs[i]);
            len = got[i];
        }
        EXPECT_EQ(std::min(recv_len, total - i * recv_len), len) << "receive " << i;
    }
    for (ucs_status_ptr_t s : sends) {
        EXPECT_EQ(UCS_OK, wait(s));
    }
    EXPECT_EQ(0, memcmp(out.data(), data.data(), total));
    EXPECT_EQ(rndv_before + 6, rndv_count(m_a->worker()));
}

INSTANTIATE_TEST_SUITE_P(tls, test_ucp_am, ::testing::Values("", "posix", "tcp"));
INSTANTIATE_TEST_SUITE_P(tls, test_ucp_stream_rndv, ::testing::Values("", "posix", "tcp"));

/* ---- two processes ---------------------------------------------------------- */

class test_ucp_am_2proc : public ::testing::TestWithParam<const char*> {};

TEST_P(test_ucp_am_2proc, eager_rendezvous_and_stream_between_processes)
{
    const size_t sizes[] = {10, 100000, 6 << 20};
    run_two_processes(
        [&](oob_channel &ch) {
            ucp_entity e(GetParam(), UCS_THREAD_MODE_SINGLE, k_features);
            std::string peer;
            ASSERT_TRUE(ch.send_blob(e.address()));
            ASSERT_TRUE(ch.recv_blob(peer));
            ucp_ep_h ep = e.connect(peer);
            for (size_t len : sizes) {
                std::vector<char> buf(len);
                fill(buf, (unsigned)len);
                ASSERT_EQ(UCS_OK, e.wait(am_send(ep, 1, "size", buf.data(), len)));
                ASSERT_EQ(UCS_OK, e.wait(ucp_stream_send_nbx(ep, buf.data(), len,
                                                             NULL)));
                /* am_seen keeps one message: the next goes once it is read. */
                ASSERT_TRUE(ch.barrier());
            }
            ASSERT_TRUE(ch.barrier());
            e.close(ep);
            ASSERT_TRUE(ch.barrier());
        },
        [&](oob_channel &ch) {
            ucp_entity e(GetParam(), UCS_THREAD_MODE_SINGLE, k_features);
            std::string peer;
            ASSERT_TRUE(ch.recv_blob(peer));
            ASSERT_TRUE(ch.send_blob(e.address()));
            ucp_ep_h ep = e.connect(peer);
            am_seen seen;
            set_handler(e.worker(), 1, &seen);
            for (size_t len : sizes) {
                int before = seen.count;
                while (seen.count == before) {
                    ucp_worker_progress(e.worker());
                }
                EXPECT_EQ("size", seen.header);
                std::vector<char> out(len);
                if (seen.attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
                    ASSERT_EQ(UCS_OK, e.wait(ucp_am_recv_data_nbx(e.worker(),
                                                                  seen.desc,
                                                                  out.data(), len,
                                                                  NULL)));
                } else {
                    ASSERT_EQ(len, seen.data.size());
                    memcpy(out.data(), seen.data.data(), len);
                }
                EXPECT_TRUE(intact(out.data(), len, (unsigned)len)) << len;
                std::vector<char> s(len);
                ucp_request_param_t p;
                memset(&p, 0, sizeof(p));
                p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
                p.flags        = UCP_STREAM_RECV_FLAG_WAITALL;
                size_t got;
                ASSERT_EQ(UCS_OK, e.wait(ucp_stream_recv_nbx(ep, s.data(), len,
                                                             &got, &p)));
                EXPECT_TRUE(intact(s.data(), len, (unsigned)len)) << len;
                ASSERT_TRUE(ch.barrier());
            }
            ASSERT_TRUE(ch.barrier());
            e.close(ep);
            ASSERT_TRUE(ch.barrier());
        });
}

INSTANTIATE_TEST_SUITE_P(tls, test_ucp_am_2proc,
                         ::testing::Values("", "posix", "tcp"));

/* ---- a peer that dies --------------------------------------------------------- */

const double k_fault_bound = 30; /* seconds the survivor may need to learn it */

void count_ep_error(void *arg, ucp_ep_h, ucs_status_t status)
{
    ++((std::pair<int, ucs_status_t>*)arg)->first;
    ((std::pair<int, ucs_status_t>*)arg)->second = status;
}

class test_ucp_am_fault : public ::testing::TestWithParam<const char*> {
protected:
    /*
     * The victim (a child) connects with error handling PEER, runs @a victim
     * and reports its pid, then waits to be SIGKILLed; the survivor (this
     * process) connects the same way and runs @a survivor with the pid.
     */
    void run(const std::function<void(ucp_entity &, ucp_ep_h, oob_channel &, pid_t)> &survivor,
             const std::function<void(ucp_entity &, ucp_ep_h)> &victim)
    {
        two_process_result r = run_two_processes_raw(
            [&](oob_channel &ch) {
                ucp_entity e(GetParam(), UCS_THREAD_MODE_SINGLE, k_features);
                std::string peer;
                ASSERT_TRUE(ch.send_blob(e.address()));
                ASSERT_TRUE(ch.recv_blob(peer));
                ucp_ep_h ep = e.connect(peer, true, count_ep_error, &m_errors);
                pid_t pid;
                ASSERT_TRUE(ch.recv(&pid, sizeof(pid)));
                survivor(e, ep, ch, pid);
                EXPECT_EQ(1, m_errors.first) << "error handler calls";
                /* Closing a failed ep completes, with and without FORCE. */
                ucp_request_param_t p;
                memset(&p, 0, sizeof(p));
                ucs_status_t st = e.wait(ucp_ep_close_nbx(ep, &p), k_fault_bound);
                EXPECT_NE(UCS_ERR_TIMED_OUT, st) << "close of a dead peer's ep";
                /* The worker still works: a loopback AM arrives. */
                ucp_ep_h self = e.connect(e.address());
                am_seen seen;
                set_handler(e.worker(), 9, &seen);
                ASSERT_EQ(UCS_OK, e.wait(am_send(self, 9, "alive", "x", 1)));
                while (seen.count == 0) {
                    ucp_worker_progress(e.worker());
                }
                EXPECT_EQ("alive", seen.header);
                e.close(self);
            },
            [&](oob_channel &ch) {
                ucp_entity e(GetParam(), UCS_THREAD_MODE_SINGLE, k_features);
                std::string peer;
                ASSERT_TRUE(ch.recv_blob(peer));
                ASSERT_TRUE(ch.send_blob(e.address()));
                ucp_ep_h ep = e.connect(peer, true);
                victim(e, ep);
                pid_t self = getpid();
                ch.send(&self, sizeof(self));
                for (;;) { /* until SIGKILL */
                    ucp_worker_progress(e.worker());
                }
            },
            120.0);
        (void)r; /* the child was killed: its status says nothing */
    }

    static void kill_and_reap(pid_t pid)
    {
        kill(pid, SIGKILL);
    }

    std::pair<int, ucs_status_t> m_errors{0, UCS_OK};
};

/* The sender of a rendezvous AM dies after the announcement and before the
 * receiver fetched it: the fetch ends with an error in bounded time. */
TEST_P(test_ucp_am_fault, sender_dies_before_rendezvous_data_is_fetched)
{
    const size_t len = 8 << 20;
    run(
        [&](ucp_entity &e, ucp_ep_h, oob_channel &, pid_t pid) {
            am_seen seen;
            set_handler(e.worker(), 3, &seen);
            while (seen.count == 0) {
                ucp_worker_progress(e.worker());
            }
            ASSERT_TRUE(seen.attr & UCP_AM_RECV_ATTR_FLAG_RNDV);
            kill_and_reap(pid);
            usleep(100000);
            std::vector<char> out(len);
            auto start = std::chrono::steady_clock::now();
            ucs_status_t st = e.wait(ucp_am_recv_data_nbx(e.worker(), seen.desc,
                                                          out.data(), len, NULL),
                                     k_fault_bound);
            /* cma may read it all before noticing; else an error, not a hang */
            EXPECT_NE(UCS_ERR_TIMED_OUT, st) << "the fetch outlived the sender";
            while ((m_errors.first == 0) &&
                   (std::chrono::steady_clock::now() - start <
                    std::chrono::duration<double>(k_fault_bound))) {
                ucp_worker_progress(e.worker());
            }
            EXPECT_NE(UCS_OK, m_errors.second);
        },
        [&](ucp_entity &e, ucp_ep_h ep) {
            static std::vector<char> buf(len, 'v');
            ucp_request_param_t p;
            memset(&p, 0, sizeof(p));
            p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            p.flags        = UCP_AM_SEND_FLAG_RNDV;
            ucs_status_ptr_t r = ucp_am_send_nbx(ep, 3, "h", 1, buf.data(), len, &p);
            ASSERT_FALSE(UCS_PTR_IS_ERR(r));
            for (int i = 0; i < 1000; ++i) {
                ucp_worker_progress(e.worker());
            }
        });
}

/* A stream receive waits for bytes the peer will never send: it ends with
 * an error once the peer is found dead, while no traffic flows. */
TEST_P(test_ucp_am_fault, stream_receive_waiting_on_a_dead_peer_fails)
{
    run(
        [&](ucp_entity &e, ucp_ep_h ep, oob_channel &, pid_t pid) {
            std::vector<char> out(2000);
            size_t got = 0;
            ucp_request_param_t p;
            memset(&p, 0, sizeof(p));
            p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            p.flags        = UCP_STREAM_RECV_FLAG_WAITALL;
            ucs_status_ptr_t r = ucp_stream_recv_nbx(ep, out.data(), out.size(), &got, &p);
            ASSERT_TRUE(UCS_PTR_IS_PTR(r)) << "only 1000 bytes were sent";
            for (int i = 0; i < 1000; ++i) {
                ucp_worker_progress(e.worker());
            }
            kill_and_reap(pid);
            auto start = std::chrono::steady_clock::now();
            ucs_status_t st = e.wait(r, k_fault_bound);
            double took = std::chrono::duration<double>(
                    std::chrono::steady_clock::now() - start).count();
            EXPECT_NE(UCS_ERR_TIMED_OUT, st) << "the receive outlived the peer";
            EXPECT_NE(UCS_OK, st);
            EXPECT_LT(took, k_fault_bound);
            printf("[ fault    ] %s: stream receive ended with %s after %.2f s\n",
                   GetParam(), ucs_status_string(st), took);
            /* later operations fail at once */
            EXPECT_TRUE(UCS_PTR_IS_ERR(ucp_stream_send_nbx(ep, out.data(), 10, NULL)));
        },
        [&](ucp_entity &e, ucp_ep_h ep) {
            std::vector<char> buf(1000, 's');
            ASSERT_EQ(UCS_OK, e.wait(ucp_stream_send_nbx(ep, buf.data(), buf.size(), NULL)));
        });
}

/* Nothing in flight at all: the idle probes (UCX_KEEPALIVE_INTERVAL) find
 * the dead peer, within about 1.25 intervals. */
TEST_P(test_ucp_am_fault, idle_peer_death_is_found_by_keepalive)
{
    scoped_setenv interval("UCX_KEEPALIVE_INTERVAL", "400ms");
    run(
        [&](ucp_entity &e, ucp_ep_h, oob_channel &, pid_t pid) {
            for (int i = 0; i < 1000; ++i) {
                ucp_worker_progress(e.worker());
            }
            kill_and_reap(pid);
            auto start = std::chrono::steady_clock::now();
            double took = 0;
            while ((m_errors.first == 0) && (took < k_fault_bound)) {
                ucp_worker_progress(e.worker());
                took = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start).count();
            }
            printf("[ fault    ] %s: idle peer found dead after %.2f s (%s)\n",
                   GetParam(), took, ucs_status_string(m_errors.second));
            EXPECT_EQ(1, m_errors.first);
            EXPECT_LT(took, 5.0) << "keepalive of 400 ms";
        },
        [&](ucp_entity &e, ucp_ep_h ep) {
            /* one message, so that both sides are wired up */
            uint64_t v = 1;
            ASSERT_EQ(UCS_OK, e.wait(ucp_tag_send_nbx(ep, &v, sizeof(v), 1, NULL)));
        });
}

INSTANTIATE_TEST_SUITE_P(tls, test_ucp_am_fault, ::testing::Values("", "posix", "tcp"));

} // namespace
