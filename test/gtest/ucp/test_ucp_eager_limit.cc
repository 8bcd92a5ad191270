/**
 * @file test_ucp_eager_limit.cc
 * UCX_TAG_EAGER_MAX_SIZE: a multi-fragment eager message whose first
 * fragment announces more is dropped by the receiver before anything is
 * reserved, whether or not a receive is posted; its later fragments are
 * dropped too, and the traffic after it is delivered. A sender never sends
 * eagerly above the limit: such messages take rendezvous. Crafted fragments
 * go straight into the worker's active-message handler, as the fuzz target
 * test/fuzz/fuzz_am.c delivers them.
 */
#include "ucp_test.h"
#include "common/test_helpers.h"

#include <ucp/core/ucp_int.h>
#include <ucp/core/ucp_proto_stats.h>
#include <uct/base/uct_iface.h>

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "common/sanitizer.h"

using namespace ucx_test;

namespace {

const uint64_t k_peer_uuid = 0x5eed0000cafeull; /* a sender that is not us */

/* Let this process map at most @a headroom bytes more than it has now, so
 * that reserving an announced length far above it cannot succeed quietly.
 * Sanitizers reserve terabytes of shadow: there the heap counters alone
 * tell. */
void limit_address_space(size_t headroom)
{
#ifndef UCX_TEST_SANITIZER
    long pages = 0;
    FILE *f    = fopen("/proc/self/statm", "r");
    ASSERT_TRUE(f != NULL);
    ASSERT_EQ(1, fscanf(f, "%ld", &pages));
    fclose(f);
    struct rlimit rl;
    ASSERT_EQ(0, getrlimit(RLIMIT_AS, &rl));
    rl.rlim_cur = (rlim_t)pages * sysconf(_SC_PAGESIZE) + headroom;
    ASSERT_EQ(0, setrlimit(RLIMIT_AS, &rl));
#else
    (void)headroom;
#endif
}

/* Hand @a msg to the handler of AM @a id of the worker's first iface, as a
 * transport does on receive (from a buffer of exactly its length). */
void deliver(ucp_worker_h worker, uint8_t id, const std::vector<uint64_t> &hdr,
             size_t payload, uint64_t seed, size_t offset = 0)
{
    std::vector<char> msg(hdr.size() * sizeof(uint64_t) + payload);
    memcpy(msg.data(), hdr.data(), hdr.size() * sizeof(uint64_t));
    for (size_t i = 0; i < payload; ++i) {
        msg[hdr.size() * sizeof(uint64_t) + i] = (char)ucp_pattern(seed, offset + i);
    }
    uct_base_iface_t *iface = (uct_base_iface_t*)worker->ifaces[0].iface;
    EXPECT_EQ(UCS_OK, uct_iface_invoke_am(iface, id, msg.data(), msg.size(), 0));
}

/* First fragment: [tag][uuid][msg_id][announced length][sync_id][data]. */
void deliver_first(ucp_worker_h worker, ucp_tag_t tag, uint64_t msg_id,
                   uint64_t announced, size_t payload, uint64_t seed)
{
    deliver(worker, UCP_AM_ID_EAGER_FIRST, {tag, k_peer_uuid, msg_id, announced, 0},
            payload, seed);
}

/* Middle fragment: [uuid][msg_id][offset][data]. */
void deliver_middle(ucp_worker_h worker, uint64_t msg_id, size_t offset,
                    size_t payload, uint64_t seed)
{
    deliver(worker, UCP_AM_ID_EAGER_MIDDLE, {k_peer_uuid, msg_id, offset}, payload,
            seed, offset);
}

std::vector<char> pattern(size_t len, uint64_t seed)
{
    std::vector<char> v(len);
    for (size_t i = 0; i < len; ++i) {
        v[i] = (char)ucp_pattern(seed, i);
    }
    return v;
}

bool has_pattern(const std::vector<char> &v, size_t len, uint64_t seed)
{
    for (size_t i = 0; i < len; ++i) {
        if ((uint8_t)v[i] != ucp_pattern(seed, i)) {
            return false;
        }
    }
    return true;
}

ucs_status_ptr_t send(ucp_ep_h ep, const std::vector<char> &buf, ucp_tag_t tag)
{
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    return ucp_tag_send_nbx(ep, buf.data(), buf.size(), tag, &param);
}

ucs_status_ptr_t post_recv(ucp_worker_h worker, std::vector<char> &buf,
                           ucp_tag_t tag, ucp_tag_recv_info_t *info)
{
    ucp_request_param_t param;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask       = UCP_OP_ATTR_FIELD_RECV_INFO |
                               UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.recv_info.tag_info = info;
    return ucp_tag_recv_nbx(worker, buf.data(), buf.size(), tag, UINT64_MAX, &param);
}

/* Receive a message of @a len bytes with tag @a tag into a buffer of
 * @a capacity; when it fits, it must hold pattern @a seed. The status of
 * the receive. */
ucs_status_t recv_check(ucp_entity &e, ucp_tag_t tag, size_t len, uint64_t seed,
                        size_t capacity)
{
    std::vector<char> buf(capacity);
    ucp_tag_recv_info_t info;
    ucs_status_t status = e.wait_recv(post_recv(e.worker(), buf, tag, &info), &info);
    if ((status == UCS_OK) || (status == UCS_ERR_MESSAGE_TRUNCATED)) {
        EXPECT_EQ(len, info.length) << "tag " << tag;
    }
    if (status == UCS_OK) { /* truncated rendezvous writes nothing */
        EXPECT_TRUE(has_pattern(buf, len, seed)) << "tag " << tag;
    }
    return status;
}

uint64_t proto_count(ucp_worker_h worker, ucp_proto_stat_t proto)
{
    uint64_t counts[UCP_PROTO_STAT_LAST];
    ucp_worker_proto_stats(worker, counts);
    return counts[proto];
}

/* An entity over posix with UCX_TAG_EAGER_MAX_SIZE=@a limit (the sandbox
 * keeps the setting and the log), connected to the other process. */
ucp_ep_h connect_peer(config_sandbox &sandbox, std::unique_ptr<ucp_entity> &e,
                      oob_channel &ch, const char *limit)
{
    std::string remote;
    sandbox.setenv("UCX_TAG_EAGER_MAX_SIZE", limit);
    e.reset(new ucp_entity("posix"));
    EXPECT_TRUE(ch.send_blob(e->address()));
    EXPECT_TRUE(ch.recv_blob(remote));
    return e->connect(remote);
}

/* Both sides are done: close, and leave only once both closed. */
void disconnect_peer(ucp_entity &e, ucp_ep_h ep, oob_channel &ch)
{
    EXPECT_TRUE(ch.barrier());
    e.close(ep);
    EXPECT_TRUE(ch.barrier());
}

/* Run @a fn in a forked child (rlimits and environment stay there). */
void in_child(const std::function<void()> &fn)
{
    run_two_processes([](oob_channel &) {}, [&](oob_channel &) { fn(); }, 60);
}

} // namespace

/*
 * Announced 16 GiB and the limit + 1 (256 MiB + 1 by default), with no
 * receive posted: both are dropped with an error naming the variable and
 * the numbers; nothing of that size is reserved (the address space is
 * limited to 1 GiB more than the process has, and the heap must not grow
 * by 1 MiB); the middle fragments of the dropped message are dropped; real
 * messages of every eager size are delivered afterwards.
 */
TEST(test_ucp_eager_limit, oversized_announcement_is_dropped_without_reserving_it)
{
    in_child([] {
        config_sandbox sandbox;
        ucp_entity e("self");
        ucp_ep_h ep         = e.connect(e.address());
        const size_t limit  = e.worker()->context->rndv.eager_max;
        const uint64_t huge = 1ull << 34;
        ASSERT_EQ(256ul << 20, limit) << "default UCX_TAG_EAGER_MAX_SIZE";

        limit_address_space(1ul << 30);
        size_t before = heap_in_use();
        deliver_first(e.worker(), 7, 77, huge, 1000, 1);
        for (size_t off = 1000; off < 4000; off += 1000) {
            deliver_middle(e.worker(), 77, off, 1000, 1);
        }
        deliver_first(e.worker(), 7, 78, limit + 1, 1000, 1);
        deliver_middle(e.worker(), 78, 1000, 1000, 1);
        for (int i = 0; i < 10; ++i) {
            ucp_worker_progress(e.worker());
        }
        size_t after = heap_in_use();
        EXPECT_LT(after, before + (1ul << 20))
                << "reserved " << (after - before) << " bytes for dropped messages";

        ucp_tag_recv_info_t info;
        EXPECT_TRUE(ucp_tag_probe_nb(e.worker(), 7, UINT64_MAX, 0, &info) == NULL)
                << "a dropped message is visible, length " << info.length;

        std::string log = sandbox.log();
        EXPECT_EQ(2u, count_occurrences(log, "more than UCX_TAG_EAGER_MAX_SIZE=268435456")) << log;
        EXPECT_NE(std::string::npos, log.find("announces 17179869184 bytes")) << log;
        EXPECT_NE(std::string::npos, log.find("announces 268435457 bytes")) << log;
        EXPECT_EQ(std::string::npos, log.find("no memory")) << log;

        /* Traffic goes on: each eager protocol, expected and unexpected. */
        for (size_t len : {size_t(8), size_t(3000), size_t(100000), size_t(3) << 20}) {
            std::vector<char> data = pattern(len, len);
            ucs_status_ptr_t sreq  = send(ep, data, 7);
            EXPECT_EQ(UCS_OK, recv_check(e, 7, len, len, len)) << len;
            EXPECT_EQ(UCS_OK, e.wait(sreq));
        }
        e.close(ep);
    });
}

/* With UCX_TAG_EAGER_MAX_SIZE=64K, a crafted message announcing 64K + 1 is
 * dropped, one announcing exactly 64K is kept (probe sees its length) and
 * arrives intact once its middle fragments came. */
TEST(test_ucp_eager_limit, message_at_the_limit_is_kept_one_byte_more_is_not)
{
    config_sandbox sandbox;
    sandbox.setenv("UCX_TAG_EAGER_MAX_SIZE", "64K");
    ucp_entity e("self");
    const size_t limit = 64 * 1024, first = 4000;

    deliver_first(e.worker(), 3, 1, limit + 1, first, 5);
    deliver_first(e.worker(), 3, 2, limit, first, 5);
    for (size_t off = first; off < limit; off += first) {
        deliver_middle(e.worker(), 2, off, std::min(first, limit - off), 5);
    }
    ucp_tag_recv_info_t info;
    ASSERT_TRUE(ucp_tag_probe_nb(e.worker(), 3, UINT64_MAX, 0, &info) != NULL);
    EXPECT_EQ(limit, info.length);
    EXPECT_EQ(UCS_OK, recv_check(e, 3, limit, 5, limit));
    EXPECT_TRUE(ucp_tag_probe_nb(e.worker(), 3, UINT64_MAX, 0, &info) == NULL)
            << "the dropped message was kept";
    EXPECT_EQ(1u, count_occurrences(sandbox.log(), "announces 65537 bytes, more than "
                                       "UCX_TAG_EAGER_MAX_SIZE=65536"))
            << sandbox.log();
}

/* A posted receive is not taken by an oversized announcement with its tag:
 * it stays posted and gets the next real message. Truncation of an eager
 * multi-fragment message below the limit still reports it. */
TEST(test_ucp_eager_limit, posted_receive_survives_a_dropped_announcement)
{
    config_sandbox sandbox;
    ucp_entity e("self");
    ucp_ep_h ep = e.connect(e.address());

    std::vector<char> buf(5000);
    ucp_tag_recv_info_t info;
    ucs_status_ptr_t rreq = post_recv(e.worker(), buf, 9, &info);
    ASSERT_TRUE(UCS_PTR_IS_PTR(rreq));
    deliver_first(e.worker(), 9, 1, 1ull << 40, 1000, 2);
    deliver_middle(e.worker(), 1, 1000, 1000, 2);
    ucp_worker_progress(e.worker());
    EXPECT_EQ(UCS_INPROGRESS, ucp_request_check_status(rreq))
            << "the receive was consumed by a dropped message";

    std::vector<char> data = pattern(4500, 9);
    ASSERT_EQ(UCS_OK, e.wait(send(ep, data, 9)));
    ASSERT_EQ(UCS_OK, e.wait_recv(rreq, &info));
    EXPECT_EQ(4500u, info.length);
    EXPECT_TRUE(has_pattern(buf, 4500, 9));
    EXPECT_NE(std::string::npos, sandbox.log().find("announces 1099511627776 bytes"));

    data = pattern(100000, 4);
    ucs_status_ptr_t sreq = send(ep, data, 4);
    EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED, recv_check(e, 4, 100000, 4, 1000));
    EXPECT_EQ(UCS_OK, e.wait(sreq));
    e.close(ep);
}

/* Loopback over each transport with UCX_TAG_EAGER_MAX_SIZE=64K: a message
 * of 64K goes eagerly, 64K + 1 and larger by rendezvous (though the
 * threshold says eager: no cuda_ipc lane), unexpected or expected; data
 * intact, nothing dropped, truncation reported. */
class test_ucp_eager_limit_loopback : public ::testing::TestWithParam<std::string> {};

TEST_P(test_ucp_eager_limit_loopback, sender_uses_rendezvous_above_the_limit)
{
    config_sandbox sandbox;
    sandbox.setenv("UCX_TAG_EAGER_MAX_SIZE", "64K");
    /* The model's threshold stays out of it (over tcp, which reads the
     * sender's buffer, it is about 32 KB): only the limit decides. */
    sandbox.setenv("UCX_RNDV_THRESH", "1G");
    ucp_entity e(GetParam());
    ucp_ep_h ep = e.connect(e.address());
    auto rndv_count = [&] {
        return proto_count(e.worker(), UCP_PROTO_STAT_RNDV_AM) +
               proto_count(e.worker(), UCP_PROTO_STAT_RNDV_HOST_GET);
    };

    /* 64K is one segment or several, depending on the transport's segment
     * size: either way it is eager. */
    auto eager_count = [&] {
        return proto_count(e.worker(), UCP_PROTO_STAT_EAGER_BCOPY) +
               proto_count(e.worker(), UCP_PROTO_STAT_EAGER_MULTI);
    };
    for (size_t len : {size_t(64 * 1024), size_t(64 * 1024 + 1), size_t(1) << 20}) {
        uint64_t multi = eager_count();
        uint64_t rndv  = rndv_count();
        std::vector<char> data = pattern(len, len);
        ucs_status_ptr_t sreq  = send(ep, data, 11); /* before the receive */
        for (int i = 0; i < 10; ++i) {
            ucp_worker_progress(e.worker());
        }
        EXPECT_EQ(UCS_OK, recv_check(e, 11, len, len, len)) << len;
        EXPECT_EQ(UCS_OK, e.wait(sreq)) << len;
        if (len <= 64 * 1024) {
            EXPECT_LT(multi, eager_count()) << len;
        } else {
            EXPECT_EQ(multi, eager_count()) << len;
            EXPECT_LT(rndv, rndv_count()) << len;
        }
    }
    std::vector<char> data = pattern(200000, 6);
    ucs_status_ptr_t sreq  = send(ep, data, 12);
    EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED, recv_check(e, 12, 200000, 6, 1000));
    EXPECT_EQ(UCS_OK, e.wait(sreq));
    EXPECT_EQ(std::string::npos, sandbox.log().find("UCX_TAG_EAGER_MAX_SIZE"))
            << sandbox.log();
    e.close(ep);
}

INSTANTIATE_TEST_SUITE_P(tls, test_ucp_eager_limit_loopback,
                         ::testing::Values("self", "posix", "tcp"));

/*
 * Two processes over posix. A sender allowed 1M eagerly sends 300000 bytes
 * to a receiver limited to 64K, once plainly and once as a sync send: the
 * receiver drops both with the error, the sync send fails with
 * EXCEEDS_LIMIT instead of waiting for ever, the small message behind them
 * arrives, and a receive for the dropped tag stays pending. With the same
 * limit on both sides, the same message goes by rendezvous and arrives
 * intact although nobody waited for it.
 */
TEST(test_ucp_eager_limit, peer_with_a_larger_limit_has_its_oversized_message_dropped)
{
    const size_t big = 300000;

    run_two_processes(
        [&](oob_channel &ch) { /* sender */
            config_sandbox sandbox;
            std::unique_ptr<ucp_entity> e;
            ucp_ep_h ep = connect_peer(sandbox, e, ch, "1M");
            std::vector<char> data = pattern(big, 1), small = pattern(100, 2);
            EXPECT_EQ(UCS_OK, e->wait(send(ep, data, 1)));
            /* A sync send is told, instead of waiting for ever. */
            ucp_request_param_t param;
            memset(&param, 0, sizeof(param));
            EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT,
                      e->wait(ucp_tag_send_sync_nbx(ep, data.data(), big, 1, &param),
                              30));
            EXPECT_NE(std::string::npos,
                      sandbox.log().find("was dropped by the receiver"))
                    << sandbox.log();
            EXPECT_EQ(UCS_OK, e->wait(send(ep, small, 2)));
            disconnect_peer(*e, ep, ch);
        },
        [&](oob_channel &ch) { /* receiver */
            config_sandbox sandbox;
            std::unique_ptr<ucp_entity> e;
            ucp_ep_h ep = connect_peer(sandbox, e, ch, "64K");
            std::vector<char> buf(big);
            ucp_tag_recv_info_t info;
            ucs_status_ptr_t lost = post_recv(e->worker(), buf, 1, &info);
            EXPECT_EQ(UCS_OK, recv_check(*e, 2, 100, 2, 100));
            for (int i = 0; i < 100; ++i) {
                ucp_worker_progress(e->worker());
            }
            EXPECT_EQ(UCS_INPROGRESS, ucp_request_check_status(lost));
            ucp_request_cancel(e->worker(), lost);
            EXPECT_EQ(UCS_ERR_CANCELED, e->wait(lost));
            std::string log = sandbox.log();
            EXPECT_EQ(2u, count_occurrences(log, "announces 300000 bytes, more than "
                                                 "UCX_TAG_EAGER_MAX_SIZE=65536"))
                    << log;
            disconnect_peer(*e, ep, ch);
        },
        120);

    run_two_processes(
        [&](oob_channel &ch) { /* sender, same limit */
            config_sandbox sandbox;
            std::unique_ptr<ucp_entity> e;
            ucp_ep_h ep = connect_peer(sandbox, e, ch, "64K");
            std::vector<char> data = pattern(big, 3);
            ucs_status_ptr_t sreq  = send(ep, data, 3);
            ASSERT_TRUE(ch.barrier()); /* the receive is posted after this */
            EXPECT_EQ(UCS_OK, e->wait(sreq));
            EXPECT_LT(0u, proto_count(e->worker(), UCP_PROTO_STAT_RNDV_AM));
            disconnect_peer(*e, ep, ch);
        },
        [&](oob_channel &ch) { /* receiver */
            config_sandbox sandbox;
            std::unique_ptr<ucp_entity> e;
            ucp_ep_h ep = connect_peer(sandbox, e, ch, "64K");
            ASSERT_TRUE(ch.barrier());
            for (int i = 0; i < 1000; ++i) {
                ucp_worker_progress(e->worker()); /* the RTS arrives unexpected */
            }
            EXPECT_EQ(UCS_OK, recv_check(*e, 3, big, 3, big));
            EXPECT_EQ(std::string::npos, sandbox.log().find("UCX_TAG_EAGER_MAX_SIZE"))
                    << sandbox.log();
            disconnect_peer(*e, ep, ch);
        },
        120);
}

/* A value that is not a size is refused by ucp_init with the variable's
 * name in the error. */
TEST(test_ucp_eager_limit, bad_value_is_an_error_naming_the_variable)
{
    config_sandbox sandbox;
    sandbox.setenv("UCX_TAG_EAGER_MAX_SIZE", "lots");
    ucp_config_t *config;
    ucs_status_t status = ucp_config_read(NULL, NULL, &config);
    if (status == UCS_OK) {
        ucp_config_release(config);
    }
    EXPECT_NE(UCS_OK, status);
    EXPECT_NE(std::string::npos, sandbox.log().find("TAG_EAGER_MAX_SIZE"))
            << sandbox.log();
}
