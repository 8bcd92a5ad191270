/*
 * Get zcopy over tcp (src/uct/tcp/tcp_get.h), over the loopback device in
 * one process: data of every size lands in the reader's buffer, gets
 * complete in order and count for flush, and every kind of bad key or
 * misuse is refused with an error instead of reading memory it must not.
 */
#include "test_uct_tcp.h"

#include <endian.h>
#include <memory>
#include <vector>

using namespace ucx_test;

namespace {

const uint8_t AM_ID = 9;

/* Packed key layout (tcp_wire.h uct_tcp_rkey_t), rebuilt on purpose. */
struct tcp_rkey_wire {
    uint32_t magic;
    uint32_t version;
    uint64_t base;
    uint64_t length;
    uint64_t token;
} __attribute__((packed));

/* A completion that remembers in which order it ran among its siblings. */
struct ordered_completion {
    uct_completion_t comp;
    std::vector<int> *order;
    int              index;
    ucs_status_t     status;
    int              calls;

    static void cb(uct_completion_t *self)
    {
        ordered_completion *c = ucs_container_of(self, ordered_completion, comp);
        c->order->push_back(c->index);
        c->status = self->status;
        ++c->calls;
    }
};

/* An iov of one block of host memory. */
uct_iov_t one_iov(void *buffer, size_t length)
{
    uct_iov_t iov;

    memset(&iov, 0, sizeof(iov));
    iov.buffer = buffer;
    iov.length = length;
    iov.count  = 1;
    return iov;
}

/* Register [mem, +len) with @a e's md by hand (for tests that outlive or
 * release the registration themselves); returns its packed key. */
std::string register_by_hand(uct_test_entity &e, void *mem, size_t len, uct_mem_h *memh)
{
    std::string key(e.md_attr().rkey_packed_size, '\0');

    EXPECT_UCS_OK(uct_md_mem_reg(e.md(), mem, len, UCT_MD_MEM_ACCESS_REMOTE_GET, memh));
    EXPECT_UCS_OK(uct_md_mkey_pack(e.md(), *memh, &key[0]));
    return key;
}

} // namespace

class test_uct_tcp_get : public test_uct_tcp_lo {
protected:

    /* Get [remote, +length) of @a key into @a dst and wait: the status the
     * get completed with. */
    ucs_status_t get_wait(uct_ep_h ep, void *dst, size_t length, uint64_t remote,
                          uct_rkey_t rkey)
    {
        uct_test_completion comp;
        uct_iov_t iov = one_iov(dst, length);
        ucs_status_t status = uct_ep_get_zcopy(ep, &iov, 1, remote, rkey, &comp.comp);
        if (status != UCS_INPROGRESS) {
            return status;
        }
        if (!progress_until([&] { return comp.done(); }, 30.0)) {
            return UCS_ERR_TIMED_OUT;
        }
        EXPECT_EQ(1, comp.calls);
        return comp.comp.status;
    }

    /* Connect @a ep by a first message that @a rec sees arrive, so that a
     * get issued next sends its request at once. */
    void warm_up(uct_ep_h ep, am_recorder &rec)
    {
        ASSERT_UCS_OK(tcp_send_retry([&] { return tcp_am_bcopy(ep, AM_ID, "hello"); },
                                     [this] { return progress(); }));
        ASSERT_TRUE(progress_until([&] { return rec.count() == 1; }));
    }
};

TEST_F(test_uct_tcp_get, reads_registered_memory_of_every_size_into_the_callers_buffer)
{
    uct_test_entity *a = entity(), *b = entity();
    uct_ep_h ep        = a->create_ep_to_iface(b->device_address(), b->iface_address());
    const size_t max   = (16u << 20) + 5;
    uct_test_buffer src(*b, max);
    src.fill(41);
    uct_test_rkey rkey(a->component(), src.rkey_blob());

    for (size_t length : {(size_t)1, (size_t)7, (size_t)8192, (size_t)65539,
                          (size_t)1 << 20, max}) {
        for (size_t offset : {(size_t)0, (size_t)3}) {
            if (offset + length > max) {
                continue;
            }
            std::vector<uint8_t> dst(length + 16, 0xa5);
            ASSERT_UCS_OK(get_wait(ep, &dst[8], length, src.addr() + offset, rkey.rkey()))
                    << length << " bytes at offset " << offset;
            for (size_t i = 0; i < 8; ++i) {
                ASSERT_EQ(0xa5, dst[i]) << "byte before the buffer written";
                ASSERT_EQ(0xa5, dst[8 + length + i]) << "byte after the buffer written";
            }
            ASSERT_EQ(0, memcmp(&dst[8], (uint8_t*)src.ptr() + offset, length))
                    << length << " bytes at offset " << offset << " differ";
        }
    }

    /* A get of nothing completes at once. */
    uct_iov_t iov = one_iov(NULL, 0);
    EXPECT_EQ(UCS_OK, uct_ep_get_zcopy(ep, &iov, 1, src.addr(), rkey.rkey(), NULL));
}

TEST_F(test_uct_tcp_get, many_gets_in_flight_complete_in_order_beside_messages_both_ways)
{
    uct_test_entity *a = entity(), *b = entity();
    auto eps           = connect(*a, *b);
    const size_t chunk = 1u << 20, n = 16;
    uct_test_buffer src(*b, chunk * n);
    src.fill(5);
    uct_test_rkey rkey(a->component(), src.rkey_blob());
    am_recorder rec_a(*a, AM_ID), rec_b(*b, AM_ID);

    std::vector<uint8_t> dst(chunk * n, 0);
    std::vector<int> order;
    std::vector<ordered_completion> comps(n);
    for (size_t i = 0; i < n; ++i) {
        comps[i].comp.func   = ordered_completion::cb;
        comps[i].comp.count  = 1;
        comps[i].comp.status = UCS_OK;
        comps[i].order       = &order;
        comps[i].index       = (int)i;
        comps[i].calls       = 0;
        uct_iov_t iov = one_iov(&dst[i * chunk], chunk);
        ASSERT_EQ(UCS_INPROGRESS, uct_ep_get_zcopy(eps.first, &iov, 1,
                                                   src.addr() + i * chunk, rkey.rkey(),
                                                   &comps[i].comp));
    }

    /* Active messages in both directions while the responses flow. */
    std::string big = tcp_pattern(3u << 20, 77);
    for (int i = 0; i < 4; ++i) {
        ASSERT_UCS_OK(tcp_am_zcopy_wait(eps.first, AM_ID, "ab", big,
                                        [this] { return progress(); }));
        ASSERT_UCS_OK(tcp_am_zcopy_wait(eps.second, AM_ID, "ba", big,
                                        [this] { return progress(); }));
    }
    ASSERT_TRUE(progress_until([&] {
        return (order.size() == n) && (rec_a.count() == 4) && (rec_b.count() == 4);
    }, 30.0));

    for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ((int)i, order[i]) << "gets completed out of order";
        EXPECT_EQ(1, comps[i].calls);
        EXPECT_UCS_OK(comps[i].status);
    }
    EXPECT_EQ(0, memcmp(dst.data(), src.ptr(), dst.size()));
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_TRUE(rec_a.msg(i).data == "ba" + big);
        EXPECT_TRUE(rec_b.msg(i).data == "ab" + big);
    }
}

TEST_F(test_uct_tcp_get, a_flush_waits_for_the_data_of_outstanding_gets)
{
    uct_test_entity *a = entity(), *b = entity();
    uct_ep_h ep        = a->create_ep_to_iface(b->device_address(), b->iface_address());
    const size_t len   = 32u << 20;
    uct_test_buffer src(*b, len);
    src.fill(8);
    uct_test_rkey rkey(a->component(), src.rkey_blob());
    std::vector<uint8_t> dst(len, 0);

    uct_test_completion get_comp, flush_comp, iface_flush_comp;
    uct_iov_t iov = one_iov(dst.data(), len);
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_get_zcopy(ep, &iov, 1, src.addr(), rkey.rkey(), &get_comp.comp));
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_flush(ep, 0, &flush_comp.comp));
    ASSERT_EQ(UCS_INPROGRESS, uct_iface_flush(a->iface(), 0, &iface_flush_comp.comp));

    bool get_done_first = true;
    ASSERT_TRUE(progress_until([&] {
        if ((flush_comp.done() || iface_flush_comp.done()) && !get_comp.done()) {
            get_done_first = false;
        }
        return flush_comp.done() && iface_flush_comp.done();
    }, 30.0));
    EXPECT_TRUE(get_done_first) << "a flush completed before the get had its data";
    EXPECT_UCS_OK(get_comp.comp.status);
    EXPECT_UCS_OK(flush_comp.comp.status);
    EXPECT_EQ(0, memcmp(dst.data(), src.ptr(), len));
    EXPECT_UCS_OK(uct_ep_flush(ep, 0, NULL));
}

TEST_F(test_uct_tcp_get, a_get_outside_its_key_or_of_several_blocks_is_refused_locally)
{
    uct_test_entity *a = entity(), *b = entity();
    uct_ep_h ep        = a->create_ep_to_iface(b->device_address(), b->iface_address());
    uct_test_buffer src(*b, 4096);
    uct_test_rkey rkey(a->component(), src.rkey_blob());
    std::vector<uint8_t> dst(8192);
    uct_test_completion comp;
    uct_iov_t iov[2];

    memset(iov, 0, sizeof(iov));
    iov[0].buffer = dst.data();
    iov[0].length = 16;
    iov[0].count  = 1;
    iov[1]        = iov[0];
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_get_zcopy(ep, iov, 1, src.addr() - 1, rkey.rkey(), &comp.comp));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_get_zcopy(ep, iov, 1, src.addr() + 4096 - 15, rkey.rkey(),
                               &comp.comp));
    iov[0].length = 8192;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_get_zcopy(ep, iov, 1, src.addr(), rkey.rkey(), &comp.comp));
    iov[0].length = 16;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_get_zcopy(ep, iov, 2, src.addr(), rkey.rkey(), &comp.comp));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_get_zcopy(ep, iov, 1, src.addr(), UCT_INVALID_RKEY, &comp.comp));
    EXPECT_EQ(0, comp.calls);
    EXPECT_UCS_OK(uct_ep_flush(ep, 0, NULL));
}

TEST_F(test_uct_tcp_get, a_corrupt_key_does_not_unpack)
{
    uct_test_entity *b = entity();
    uct_test_buffer src(*b, 4096);
    uct_rkey_bundle_t bundle;
    tcp_rkey_wire key;

    ASSERT_EQ(sizeof(key), src.rkey_blob().size());
    memcpy(&key, src.rkey_blob().data(), sizeof(key));
    EXPECT_EQ(0x4b544355u, le32toh(key.magic));
    EXPECT_EQ(TCP_WIRE_VERSION, le32toh(key.version));
    EXPECT_EQ(src.addr(), le64toh(key.base));
    EXPECT_EQ(4096u, le64toh(key.length));

    std::vector<std::function<void(tcp_rkey_wire&)>> edits = {
        [](tcp_rkey_wire &k) { k.magic ^= 1; },
        [](tcp_rkey_wire &k) { k.version = htole32(TCP_WIRE_VERSION + 1); },
        [](tcp_rkey_wire &k) { k.base = htole64(~0ull - 10); }, /* base + length wraps */
    };
    for (auto &edit : edits) {
        tcp_rkey_wire bad = key;
        edit(bad);
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_rkey_unpack(b->component(), &bad, &bundle));
    }
    std::string zeros(sizeof(key), '\0');
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_rkey_unpack(b->component(), zeros.data(), &bundle));
}

TEST_F(test_uct_tcp_get, a_stale_or_forged_key_is_refused_by_the_peer_and_the_connection_lives_on)
{
    uct_test_entity *a = entity(), *b = entity();
    uct_ep_h ep        = a->create_ep_to_iface(b->device_address(), b->iface_address());
    am_recorder rec(*b, AM_ID);
    uct_test_buffer live(*b, 65536);
    live.fill(3);
    std::vector<uint8_t> dst(65536, 0);

    /* A key whose registration is gone. */
    std::vector<uint8_t> gone_mem(65536, 1);
    uct_mem_h memh;
    std::string gone_key = register_by_hand(*b, gone_mem.data(), gone_mem.size(), &memh);
    ASSERT_UCS_OK(uct_md_mem_dereg(b->md(), memh));

    /* A key with the range of a live region and a token that is not its. */
    tcp_rkey_wire forged;
    memcpy(&forged, live.rkey_blob().data(), sizeof(forged));
    forged.token = htole64(le64toh(forged.token) + 1000);
    std::string forged_key((const char*)&forged, sizeof(forged));

    for (const std::string *key : {&gone_key, &forged_key}) {
        uct_test_rkey rkey(a->component(), *key);
        uint64_t addr = (key == &gone_key) ? (uintptr_t)gone_mem.data() : live.addr();
        uct_log_capture log(UCS_LOG_LEVEL_ERROR);
        EXPECT_EQ(UCS_ERR_INVALID_ADDR, get_wait(ep, dst.data(), 4096, addr, rkey.rkey()));
        EXPECT_TRUE(log.contains("names no memory registered here")) << log.text();
        EXPECT_EQ(0u, dst[0]) << "a refused get wrote the buffer";
    }

    /* The same connection still carries gets and messages. */
    uct_test_rkey rkey(a->component(), live.rkey_blob());
    EXPECT_UCS_OK(get_wait(ep, dst.data(), dst.size(), live.addr(), rkey.rkey()));
    EXPECT_TRUE(live.check(3)) << "source changed";
    EXPECT_EQ(0, memcmp(dst.data(), live.ptr(), dst.size()));
    ASSERT_UCS_OK(tcp_send_retry([&] { return tcp_am_bcopy(ep, AM_ID, "still here"); },
                                 [this] { return progress(); }));
    ASSERT_TRUE(progress_until([&] { return rec.count() == 1; }));
}

TEST_F(test_uct_tcp_get, a_peer_gone_mid_get_fails_the_get_and_calls_the_error_handler)
{
    tcp_err_record err;
    uct_test_entity *a = entity(err.params()), *b = entity();
    uct_ep_h ep        = a->create_ep_to_iface(b->device_address(), b->iface_address());
    const size_t len   = 64u << 20;
    std::unique_ptr<am_recorder> rec(new am_recorder(*b, AM_ID));
    warm_up(ep, *rec);
    /* Registered by hand: the peer's md goes away with its memory still
     * registered, as in a process that dies. */
    std::vector<uint8_t> mem(len, 0x5a);
    uct_mem_h memh;
    std::string key = register_by_hand(*b, mem.data(), len, &memh);
    uct_test_rkey rkey(a->component(), key);
    std::vector<uint8_t> dst(len);
    uct_test_completion comp;
    uct_iov_t iov = one_iov(dst.data(), len);
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)mem.data(), rkey.rkey(), &comp.comp));
    /* The response starts and fills the socket (the reader is not
     * progressed); then the peer goes away. */
    for (int i = 0; i < 20; ++i) {
        b->progress();
    }
    a->progress();
    ASSERT_FALSE(comp.done());
    rec.reset();
    destroy_entity(b);

    ASSERT_TRUE(uct_progress_until([&] { return a->progress(); },
                                   [&] { return comp.done() && (err.calls > 0); }, 30.0));
    EXPECT_EQ(ep, err.ep);
    EXPECT_NE(UCS_OK, comp.comp.status);
    EXPECT_EQ(err.status, comp.comp.status) << ucs_status_string(comp.comp.status);
    EXPECT_EQ(1, comp.calls);
}

TEST_F(test_uct_tcp_get, deregistering_memory_mid_response_stops_reading_it)
{
    uct_test_entity *a = entity(), *b = entity();
    uct_ep_h ep        = a->create_ep_to_iface(b->device_address(), b->iface_address());
    const size_t len   = 64u << 20;
    am_recorder rec(*b, AM_ID);
    warm_up(ep, rec);
    uint8_t *mem       = (uint8_t*)malloc(len);
    ASSERT_TRUE(mem != NULL);
    memset(mem, 0x3c, len);
    uct_mem_h memh;
    std::string key = register_by_hand(*b, mem, len, &memh);
    uct_test_rkey rkey(a->component(), key);
    std::vector<uint8_t> dst(len);
    uct_test_completion comp;
    uct_iov_t iov = one_iov(dst.data(), len);
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)mem, rkey.rkey(), &comp.comp));
    /* The server starts the response and fills the socket: the reader is
     * not progressed. */
    for (int i = 0; i < 20; ++i) {
        b->progress();
    }
    a->progress();
    ASSERT_FALSE(comp.done());

    /* The user releases the memory while the response is on its way: what
     * is left must not be read from it (ASan would see it), the connection
     * ends and the get fails. */
    ASSERT_UCS_OK(uct_md_mem_dereg(b->md(), memh));
    free(mem);
    uct_log_capture log(UCS_LOG_LEVEL_DIAG);
    ASSERT_TRUE(progress_until([&] { return comp.done(); }, 30.0));
    EXPECT_NE(UCS_OK, comp.comp.status);
    EXPECT_TRUE(log.contains("was deregistered")) << log.text();
}

TEST_F(test_uct_tcp_get, destroying_an_ep_cancels_its_gets)
{
    uct_test_entity *a = entity(), *b = entity();
    uct_ep_h ep        = a->create_ep_to_iface(b->device_address(), b->iface_address());
    uct_test_buffer src(*b, 8u << 20);
    uct_test_rkey rkey(a->component(), src.rkey_blob());
    std::vector<uint8_t> dst(8u << 20);
    uct_test_completion comp1, comp2;
    uct_iov_t iov = one_iov(dst.data(), dst.size());
    /* The first before the connection is up (its request waits), the second
     * behind it. */
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_get_zcopy(ep, &iov, 1, src.addr(), rkey.rkey(), &comp1.comp));
    ASSERT_EQ(UCS_INPROGRESS,
              uct_ep_get_zcopy(ep, &iov, 1, src.addr(), rkey.rkey(), &comp2.comp));
    a->destroy_ep(ep);
    EXPECT_EQ(1, comp1.calls);
    EXPECT_EQ(1, comp2.calls);
    EXPECT_EQ(UCS_ERR_CANCELED, comp1.comp.status);
    EXPECT_EQ(UCS_ERR_CANCELED, comp2.comp.status);
    for (int i = 0; i < 100; ++i) {
        progress(); /* the peer sees the connection go; nothing crashes */
    }
}

/* A get whose request cannot be sent because the connection broke under it
 * completes exactly once, through its completion: it used to return the
 * error as well and then be completed by the failure a second time. */
TEST_F(test_uct_tcp_get, a_get_on_a_connection_that_just_broke_completes_once)
{
    tcp_err_record err;
    uct_test_entity *a = entity(err.params()), *b = entity();
    uct_ep_h ep        = a->create_ep_to_iface(b->device_address(), b->iface_address());
    std::unique_ptr<am_recorder> rec(new am_recorder(*b, AM_ID));
    warm_up(ep, *rec);
    std::unique_ptr<uct_test_buffer> src(new uct_test_buffer(*b, 4096));
    uct_test_rkey rkey(a->component(), src->rkey_blob());
    uint64_t remote = src->addr();
    src.reset();
    rec.reset();
    destroy_entity(b);

    /* The first write after the peer closed is accepted and answered with a
     * reset; the request's write then fails inside uct_ep_get_zcopy(). */
    (void)tcp_am_bcopy(ep, AM_ID, "into the void");
    usleep(100000);

    std::vector<uint8_t> dst(4096);
    uct_test_completion comp;
    uct_iov_t iov = one_iov(dst.data(), dst.size());
    ucs_status_t status = uct_ep_get_zcopy(ep, &iov, 1, remote, rkey.rkey(), &comp.comp);
    ASSERT_TRUE(uct_progress_until([&] { return a->progress(); },
                                   [&] { return err.calls > 0; }));
    for (int i = 0; i < 10; ++i) {
        a->progress();
    }
    if (status == UCS_INPROGRESS) {
        EXPECT_EQ(1, comp.calls);
        EXPECT_EQ(err.status, comp.comp.status);
    } else {
        EXPECT_NE(UCS_OK, status);
        EXPECT_EQ(0, comp.calls) << "the error was returned and completed too";
    }
}
