/*
 * The self transport: loopback within one process, through the generic
 * transport fixture (uct_test.h), so this suite also shows how transport
 * suites are written.
 */
#include "uct_test.h"

#include <cstring>
#include <vector>

using namespace ucx_test;

namespace {

class test_uct_self : public uct_test {
protected:
    void SetUp() override
    {
        m_sender   = create_entity();
        m_receiver = create_entity();
        std::tie(m_ep, m_reverse_ep) = connect(*m_sender, *m_receiver);
    }

    /* Sizes from 0 to @a max: every size up to 64, then growing by ~1.5x,
     * and @a max itself. */
    static std::vector<size_t> sizes_up_to(size_t max)
    {
        std::vector<size_t> sizes;
        for (size_t s = 0; s < max; s = (s < 64) ? s + 1 : s + s / 2 + 1) {
            sizes.push_back(s);
        }
        sizes.push_back(max);
        return sizes;
    }

    uct_test_entity *m_sender     = NULL;
    uct_test_entity *m_receiver   = NULL;
    uct_ep_h         m_ep         = NULL;
    uct_ep_h         m_reverse_ep = NULL;
};

} // namespace

TEST_P(test_uct_self, iface_advertises_loopback_capabilities)
{
    const uct_iface_attr_t &attr = m_sender->iface_attr();
    uint64_t expected = UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY |
                        UCT_IFACE_FLAG_AM_ZCOPY | UCT_IFACE_FLAG_PUT_SHORT |
                        UCT_IFACE_FLAG_PUT_BCOPY | UCT_IFACE_FLAG_PUT_ZCOPY |
                        UCT_IFACE_FLAG_GET_BCOPY | UCT_IFACE_FLAG_GET_ZCOPY |
                        UCT_IFACE_FLAG_CONNECT_TO_IFACE | UCT_IFACE_FLAG_CB_SYNC |
                        UCT_IFACE_FLAG_PENDING;

    EXPECT_EQ(expected, attr.cap.flags & expected);
    EXPECT_FALSE(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP);
    EXPECT_EQ(8192u, attr.cap.am.max_short); /* UCX_SELF_SEG_SIZE default */
    EXPECT_EQ(8192u, attr.cap.am.max_bcopy);
    EXPECT_GT(attr.cap.am.max_iov, 1u);
    EXPECT_GT(attr.device_addr_len, 0u);
    EXPECT_GT(attr.iface_addr_len, 0u);
    EXPECT_EQ(0u, attr.ep_addr_len);
    EXPECT_GT(attr.bandwidth.dedicated, 0.0);
    EXPECT_GT(attr.overhead, 0.0);
}

TEST_P(test_uct_self, am_short_delivers_every_size)
{
    am_recorder rec(*m_receiver, 1);
    size_t max_payload = m_sender->iface_attr().cap.am.max_short - sizeof(uint64_t);
    uint64_t header    = 0x0123456789abcdefull;

    for (size_t size : sizes_up_to(max_payload)) {
        std::string payload = uct_test_pattern_string(size, size);
        ASSERT_UCS_OK(uct_ep_am_short(m_ep, 1, header, payload.data(), size))
                << "size " << size;
        ASSERT_TRUE(progress_until([&] { return rec.count() == 1; }));

        /* The handler sees the 8-byte header followed by the payload. */
        const std::string &got = rec.msg(0).data;
        ASSERT_EQ(sizeof(header) + size, got.size());
        uint64_t got_header;
        memcpy(&got_header, got.data(), sizeof(got_header));
        EXPECT_EQ(header, got_header);
        EXPECT_EQ(payload, got.substr(sizeof(header))) << "size " << size;
        rec.clear();
    }
}

TEST_P(test_uct_self, am_short_over_the_limit_is_refused)
{
    am_recorder rec(*m_receiver, 1);
    size_t max_payload = m_sender->iface_attr().cap.am.max_short - sizeof(uint64_t);
    std::string payload(max_payload + 1, 'x');

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_am_short(m_ep, 1, 0, payload.data(), payload.size()));
    EXPECT_EQ(0u, rec.count());
}

TEST_P(test_uct_self, am_bcopy_delivers_every_size)
{
    am_recorder rec(*m_receiver, 2);

    for (size_t size : sizes_up_to(m_sender->iface_attr().cap.am.max_bcopy)) {
        std::string payload   = uct_test_pattern_string(size + 7, size);
        uct_test_pack_arg arg = {&payload};
        ASSERT_EQ((ssize_t)size, uct_ep_am_bcopy(m_ep, 2, uct_test_pack_string, &arg, 0))
            << "size " << size;
        ASSERT_TRUE(progress_until([&] { return rec.count() == 1; }));
        EXPECT_EQ(payload, rec.msg(0).data) << "size " << size;
        EXPECT_TRUE(rec.msg(0).flags & UCT_CB_PARAM_FLAG_DESC);
        rec.clear();
    }
}

TEST_P(test_uct_self, am_zcopy_delivers_header_and_every_iov_element)
{
    am_recorder rec(*m_receiver, 3);
    size_t max_zcopy = m_sender->iface_attr().cap.am.max_zcopy;
    uct_test_buffer buf(*m_sender, max_zcopy);
    std::string header = "hdr:0123";

    buf.fill(42);
    for (size_t size : sizes_up_to(max_zcopy - header.size())) {
        /* Split the payload in two elements to exercise the gather. */
        size_t first = size / 3;
        uct_iov_t iov[2] = {buf.iov(0, first), buf.iov(first, size - first)};
        ASSERT_UCS_OK(uct_ep_am_zcopy(m_ep, 3, header.data(), header.size(), iov, 2, 0,
                                      NULL)) << "size " << size;
        ASSERT_TRUE(progress_until([&] { return rec.count() == 1; }));

        std::string expected = header + std::string((const char*)buf.ptr(), size);
        EXPECT_EQ(expected, rec.msg(0).data) << "size " << size;
        rec.clear();
    }
}

TEST_P(test_uct_self, am_zcopy_over_the_limits_is_refused)
{
    size_t max_zcopy = m_sender->iface_attr().cap.am.max_zcopy;
    size_t max_iov   = m_sender->iface_attr().cap.am.max_iov;
    uct_test_buffer buf(*m_sender, max_zcopy + 1);
    std::vector<uct_iov_t> iovs(max_iov + 1, buf.iov(0, 1));

    uct_iov_t whole = buf.iov();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_am_zcopy(m_ep, 3, NULL, 0, &whole, 1, 0, NULL));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_am_zcopy(m_ep, 3, NULL, 0, iovs.data(), iovs.size(), 0, NULL));
}

TEST_P(test_uct_self, am_goes_to_the_handler_of_the_destination_iface)
{
    am_recorder at_sender(*m_sender, 5), at_receiver(*m_receiver, 5);
    uint64_t value = 7;

    ASSERT_UCS_OK(uct_ep_am_short(m_ep, 5, 1, &value, sizeof(value)));
    EXPECT_EQ(0u, at_sender.count());
    EXPECT_EQ(1u, at_receiver.count());

    ASSERT_UCS_OK(uct_ep_am_short(m_reverse_ep, 5, 2, &value, sizeof(value)));
    EXPECT_EQ(1u, at_sender.count());
    EXPECT_EQ(1u, at_receiver.count());
}

TEST_P(test_uct_self, ep_to_own_iface_is_a_loopback)
{
    uct_ep_h loop = m_sender->create_ep_to_iface(m_sender->device_address(),
                                                 m_sender->iface_address());
    am_recorder rec(*m_sender, 4);

    ASSERT_UCS_OK(uct_ep_am_short(loop, 4, 99, NULL, 0));
    ASSERT_EQ(1u, rec.count());
    EXPECT_EQ(sizeof(uint64_t), rec.msg(0).data.size());
}

TEST_P(test_uct_self, handler_may_keep_descriptors_until_released)
{
    am_recorder keeper(*m_receiver, 6, true);
    std::vector<std::string> sent;

    /* More kept descriptors than one pool chunk, all alive at once. */
    for (int i = 0; i < 40; ++i) {
        sent.push_back(uct_test_pattern_string(i, 100 + i));
        uct_test_pack_arg arg = {&sent.back()};
        ASSERT_EQ((ssize_t)sent.back().size(),
                  uct_ep_am_bcopy(m_ep, 6, uct_test_pack_string, &arg, 0));
    }

    ASSERT_EQ(sent.size(), keeper.count());
    for (size_t i = 0; i < sent.size(); ++i) {
        ASSERT_NE(nullptr, keeper.msg(i).desc);
        /* The kept data is still intact after later messages. */
        EXPECT_EQ(0, memcmp(keeper.msg(i).desc, sent[i].data(), sent[i].size()))
                << "message " << i;
    }
    keeper.release_descs();
}

TEST_P(test_uct_self, rx_headroom_is_reserved_in_front_of_kept_data)
{
    const size_t headroom = 48;
    uct_entity_params params;

    params.rx_headroom = headroom;
    uct_test_entity *r = create_entity(params);
    uct_ep_h ep        = m_sender->create_ep_to_iface(r->device_address(),
                                                      r->iface_address());
    am_recorder keeper(*r, 7, true);
    std::string payload   = uct_test_pattern_string(3, 300);
    uct_test_pack_arg arg = {&payload};

    ASSERT_EQ((ssize_t)payload.size(),
              uct_ep_am_bcopy(ep, 7, uct_test_pack_string, &arg, 0));
    ASSERT_EQ(1u, keeper.count());

    /* The headroom belongs to the receiver: writing all of it must neither
     * corrupt the data nor the transport's release information. */
    char *data = (char*)keeper.msg(0).desc + headroom;
    memset(keeper.msg(0).desc, 0xee, headroom);
    EXPECT_EQ(0, memcmp(data, payload.data(), payload.size()));
    keeper.release_descs(); /* releases desc = data - headroom */

    m_sender->destroy_ep(ep);
}

TEST_P(test_uct_self, handler_may_send_from_inside_the_callback)
{
    struct relay_ctx {
        uct_ep_h ep;
        int      depth;
    } ctx = {m_reverse_ep, 0};
    am_recorder final_rec(*m_sender, 9);

    uct_am_callback_t relay = [](void *arg, void *data, size_t length,
                                 unsigned flags) -> ucs_status_t {
        relay_ctx *c = static_cast<relay_ctx*>(arg);
        ++c->depth;
        /* Answer with the payload we got (minus the header). */
        return uct_ep_am_short(c->ep, 9, 0, (char*)data + 8, length - 8);
    };
    ASSERT_UCS_OK(uct_iface_set_am_handler(m_receiver->iface(), 8, relay, &ctx, 0));

    uint64_t value = 0xfeed;
    ASSERT_UCS_OK(uct_ep_am_short(m_ep, 8, 0, &value, sizeof(value)));
    EXPECT_EQ(1, ctx.depth);
    ASSERT_EQ(1u, final_rec.count());
    EXPECT_EQ(0, memcmp(final_rec.msg(0).data.data() + 8, &value, sizeof(value)));
}

TEST_P(test_uct_self, message_for_unset_id_is_dropped_with_a_warning)
{
    uct_log_capture log(UCS_LOG_LEVEL_WARN);
    uint64_t value = 1;

    EXPECT_UCS_OK(uct_ep_am_short(m_ep, 17, 0, &value, sizeof(value)));
    EXPECT_TRUE(log.contains("id 17")) << log.text();
}

TEST_P(test_uct_self, put_writes_remote_memory_for_every_size)
{
    const size_t max = 64 * 1024;
    uct_test_buffer local(*m_sender, max), remote(*m_receiver, max);
    uct_test_rkey rkey(m_sender->component(), remote.rkey_blob());

    for (size_t size : sizes_up_to(max)) {
        /* short */
        local.fill(size);
        remote.fill_byte(0);
        ASSERT_UCS_OK(uct_ep_put_short(m_ep, local.ptr(), size, remote.addr(),
                                       rkey.rkey()));
        EXPECT_TRUE(remote.check(size, 0, size)) << "put_short size " << size;

        /* bcopy */
        std::string payload   = uct_test_pattern_string(size + 1, size);
        uct_test_pack_arg arg = {&payload};
        remote.fill_byte(0);
        ASSERT_EQ((ssize_t)size, uct_ep_put_bcopy(m_ep, uct_test_pack_string, &arg,
                                                  remote.addr(), rkey.rkey()));
        EXPECT_EQ(0, memcmp(remote.ptr(), payload.data(), size)) << "put_bcopy " << size;

        /* zcopy, two elements */
        local.fill(size + 2);
        remote.fill_byte(0);
        uct_iov_t iov[2] = {local.iov(0, size / 2), local.iov(size / 2, size - size / 2)};
        ASSERT_UCS_OK(uct_ep_put_zcopy(m_ep, iov, 2, remote.addr(), rkey.rkey(), NULL));
        EXPECT_TRUE(remote.check(size + 2, 0, size)) << "put_zcopy size " << size;
    }
}

TEST_P(test_uct_self, get_reads_remote_memory_for_every_size)
{
    const size_t max = 64 * 1024;
    uct_test_buffer local(*m_sender, max), remote(*m_receiver, max);
    uct_test_rkey rkey(m_sender->component(), remote.rkey_blob());

    for (size_t size : sizes_up_to(max)) {
        remote.fill(size);

        std::string got;
        ASSERT_UCS_OK(uct_ep_get_bcopy(m_ep, uct_test_unpack_string, &got, size,
                                       remote.addr(), rkey.rkey(), NULL));
        EXPECT_EQ(std::string((const char*)remote.ptr(), size), got)
                << "get_bcopy size " << size;

        local.fill_byte(0);
        uct_iov_t iov[2] = {local.iov(0, size / 2), local.iov(size / 2, size - size / 2)};
        ASSERT_UCS_OK(uct_ep_get_zcopy(m_ep, iov, 2, remote.addr(), rkey.rkey(), NULL));
        EXPECT_TRUE(local.check(size, 0, size)) << "get_zcopy size " << size;
    }
}

TEST_P(test_uct_self, flush_and_fence_complete_at_once)
{
    uint64_t value = 3;
    uct_test_completion comp;

    ASSERT_UCS_OK(uct_ep_put_short(m_ep, &value, sizeof(value), (uintptr_t)&value, 0));
    EXPECT_UCS_OK(uct_ep_fence(m_ep, 0));
    EXPECT_UCS_OK(uct_iface_fence(m_sender->iface(), 0));
    EXPECT_UCS_OK(uct_ep_flush(m_ep, UCT_FLUSH_FLAG_LOCAL, &comp.comp));
    EXPECT_UCS_OK(uct_iface_flush(m_sender->iface(), UCT_FLUSH_FLAG_LOCAL, &comp.comp));
    EXPECT_EQ(0, comp.calls); /* UCS_OK: the completion is not used */
    m_sender->flush();
    m_sender->flush_ep(m_ep);
}

TEST_P(test_uct_self, pending_add_says_resources_are_available)
{
    uct_pending_req_t req;
    req.func = [](uct_pending_req_t*) { return UCS_OK; };

    EXPECT_EQ(UCS_ERR_BUSY, uct_ep_pending_add(m_ep, &req, 0));
    uct_ep_pending_purge(m_ep, NULL, NULL);
}

TEST_P(test_uct_self, progress_has_nothing_to_do)
{
    EXPECT_EQ(0u, m_sender->progress());
    EXPECT_EQ(0u, uct_iface_progress(m_sender->iface()));
}

TEST_P(test_uct_self, connect_to_ep_and_event_fd_are_unsupported)
{
    char addr[64] = {0};
    int fd;

    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_get_address(m_ep, (uct_ep_addr_t*)addr));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_ep_connect_to_ep(m_ep, (uct_device_addr_t*)addr, (uct_ep_addr_t*)addr));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_iface_event_fd_get(m_sender->iface(), &fd));
}

TEST_P(test_uct_self, ep_needs_an_iface_address)
{
    uct_ep_params_t params;
    uct_ep_h ep;
    uct_log_capture log(UCS_LOG_LEVEL_ERROR);

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    params.iface      = m_sender->iface();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_ep_create(&params, &ep));

    params.field_mask = 0;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_ep_create(&params, &ep));
}

TEST_P(test_uct_self, own_process_addresses_are_reachable)
{
    std::string dev = m_receiver->device_address(), ifa = m_receiver->iface_address();

    EXPECT_TRUE(uct_iface_is_reachable(m_sender->iface(), (uct_device_addr_t*)dev.data(),
                                       (uct_iface_addr_t*)ifa.data()));
    EXPECT_TRUE(uct_iface_is_reachable(m_sender->iface(), (uct_device_addr_t*)dev.data(),
                                       NULL));
    EXPECT_TRUE(uct_iface_is_reachable(m_sender->iface(), NULL,
                                       (uct_iface_addr_t*)ifa.data()));
}

TEST_P(test_uct_self, garbage_addresses_are_not_reachable)
{
    std::string dev = m_receiver->device_address(), ifa = m_receiver->iface_address();
    uct_iface_h iface = m_sender->iface();
    std::vector<std::string> bad_devs, bad_ifaces;

    bad_devs.push_back(std::string(dev.size(), '\0'));
    bad_devs.push_back(uct_test_pattern_string(1, dev.size()));
    bad_ifaces.push_back(std::string(ifa.size(), '\0'));
    bad_ifaces.push_back(uct_test_pattern_string(2, ifa.size()));
    bad_ifaces.push_back(std::string(ifa.size(), '\xff'));
    /* Valid-looking addresses with one byte changed anywhere. */
    for (size_t i = 0; i < dev.size(); ++i) {
        bad_devs.push_back(dev);
        bad_devs.back()[i] ^= 0x5a;
    }
    for (size_t i = 0; i < ifa.size(); ++i) {
        bad_ifaces.push_back(ifa);
        bad_ifaces.back()[i] ^= 0x5a;
    }

    for (const std::string &d : bad_devs) {
        EXPECT_FALSE(uct_iface_is_reachable(iface, (uct_device_addr_t*)d.data(),
                                            (uct_iface_addr_t*)ifa.data()));
        EXPECT_FALSE(uct_iface_is_reachable(iface, (uct_device_addr_t*)d.data(), NULL));
        EXPECT_THROW(m_sender->create_ep_to_iface(d, ifa), uct_test_error);
    }

    for (const std::string &a : bad_ifaces) {
        EXPECT_FALSE(uct_iface_is_reachable(iface, (uct_device_addr_t*)dev.data(),
                                            (uct_iface_addr_t*)a.data()));
        EXPECT_THROW(m_sender->create_ep_to_iface(dev, a), uct_test_error);
    }
    EXPECT_FALSE(uct_iface_is_reachable(iface, NULL, NULL));
}

TEST_P(test_uct_self, address_of_a_closed_iface_is_not_reachable)
{
    uct_test_entity *gone = create_entity();
    std::string dev = gone->device_address(), ifa = gone->iface_address();

    EXPECT_TRUE(uct_iface_is_reachable(m_sender->iface(), (uct_device_addr_t*)dev.data(),
                                       (uct_iface_addr_t*)ifa.data()));
    destroy_entity(gone);
    EXPECT_FALSE(uct_iface_is_reachable(m_sender->iface(), (uct_device_addr_t*)dev.data(),
                                        (uct_iface_addr_t*)ifa.data()));
    EXPECT_THROW(m_sender->create_ep_to_iface(dev, ifa), uct_test_error);
}

TEST_P(test_uct_self, addresses_and_rkeys_of_another_process_are_unreachable)
{
    uct_resource res = resource();

    run_two_processes(
        [&](oob_channel &ch) {
            uct_test_entity e(res);
            std::string blob, rkey_blob;

            ASSERT_TRUE(ch.recv_blob(blob));
            ASSERT_TRUE(ch.recv_blob(rkey_blob));
            uct_peer_address peer;
            ASSERT_TRUE(uct_peer_address::unpack(blob, peer));

            EXPECT_FALSE(uct_iface_is_reachable(e.iface(),
                                                (uct_device_addr_t*)peer.dev_addr.data(),
                                                (uct_iface_addr_t*)peer.iface_addr.data()));
            EXPECT_FALSE(uct_iface_is_reachable(e.iface(),
                                                (uct_device_addr_t*)peer.dev_addr.data(),
                                                NULL));
            EXPECT_THROW(e.create_ep_to_iface(peer.dev_addr, peer.iface_addr),
                         uct_test_error);

            uct_rkey_bundle_t bundle;
            EXPECT_EQ(UCS_ERR_UNREACHABLE,
                      uct_rkey_unpack(e.component(), rkey_blob.data(), &bundle));
            ASSERT_TRUE(ch.barrier());
        },
        [&](oob_channel &ch) {
            /* The child's iface likely has the same numeric id as the
             * parent's: only the process identity tells them apart. */
            uct_test_entity e(res);
            uct_test_buffer buf(e, 64);

            ASSERT_TRUE(ch.send_blob(e.address().pack()));
            ASSERT_TRUE(ch.send_blob(buf.rkey_blob()));
            ASSERT_TRUE(ch.barrier()); /* keep the iface open until checked */
        },
        20.0);
}

UCT_INSTANTIATE_TEST_SUITE_P(test_uct_self, "self");
