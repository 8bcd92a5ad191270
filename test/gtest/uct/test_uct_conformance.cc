/*
 * The UCT contract, run over every transport and device this build offers
 * (self, posix, cma, tcp on each interface). Not in gtest_cuda: its ifaces
 * open in the test process, and a process that initialised CUDA cannot
 * fork children that use it (the two-process CUDA suites):
 * what an iface reports agrees with what its operations do. Each test asks
 * the iface for a capability and checks its behaviour where advertised and
 * its refusal (UCS_ERR_UNSUPPORTED) where not; a test for a capability the
 * transport lacks altogether is skipped with the reason, so that the
 * report shows what each transport was checked for.
 */
#include "uct_test.h"

#include <cstring>
#include <string>
#include <vector>

using namespace ucx_test;

/* Skip the test (a macro: GTEST_SKIP returns from the function it is in)
 * when the transport lacks capability @a _flags. */
#define SKIP_UNLESS_CAP(_flags, _what)                                                   \
    if (!m_a->has_cap(_flags)) {                                                         \
        GTEST_SKIP() << resource().name() << " does not offer " << (_what);              \
    }

namespace
{

class test_uct_conformance : public uct_test
{
  protected:
    void SetUp() override
    {
        m_a                  = create_entity();
        m_b                  = create_entity();
        std::tie(m_ab, m_ba) = connect(*m_a, *m_b);
    }

    /* Retry @a op while the transport is out of resources, progressing;
     * returns its last status. */
    ucs_status_t retry(const std::function<ucs_status_t()> &op)
    {
        ucs_status_t status = UCS_ERR_NO_RESOURCE;
        progress_until([&] {
            status = op();
            return status != UCS_ERR_NO_RESOURCE;
        });
        return status;
    }

    /* retry() of a bcopy operation: its length or status. */
    ssize_t retry_bcopy(const std::function<ssize_t()> &op)
    {
        ssize_t ret = UCS_ERR_NO_RESOURCE;
        progress_until([&] {
            ret = op();
            return ret != UCS_ERR_NO_RESOURCE;
        });
        return ret;
    }

    /* Wait for an operation that returned @a status with @a comp. */
    void complete(ucs_status_t status, uct_test_completion &comp, const char *what)
    {
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(progress_until([&] { return comp.done(); })) << what;
            EXPECT_EQ(UCS_OK, comp.comp.status) << what;
        } else {
            ASSERT_UCS_OK(status) << what;
        }
    }

    static std::vector<size_t> sizes_up_to(size_t max)
    {
        std::vector<size_t> sizes;
        for (size_t s = 0; s < max; s = (s < 16) ? s + 1 : s * 3 + 1) {
            sizes.push_back(s);
        }
        sizes.push_back(max);
        return sizes;
    }

    /* Whether a remote key of @a e's md can name its host buffers. */
    static bool rma_on_host(const uct_test_entity &e)
    {
        const uct_md_attr_t &md = e.md_attr();
        return (md.cap.flags & UCT_MD_FLAG_REG) &&
               (md.cap.reg_mem_types & UCS_BIT(UCS_MEMORY_TYPE_HOST)) &&
               (md.cap.access_mem_types & UCS_BIT(UCS_MEMORY_TYPE_HOST));
    }

    uct_test_entity *m_a = NULL, *m_b = NULL;
    uct_ep_h m_ab = NULL, m_ba = NULL;
};

void unpack_to(void *arg, const void *data, size_t length)
{
    memcpy(arg, data, length);
}

size_t pack_nothing(void *, void *)
{
    return 0;
}

void unpack_nothing(void *, const void *, size_t)
{
}

} // namespace

TEST_P(test_uct_conformance, limits_agree_with_capabilities)
{
    const uct_iface_attr_t &attr = m_a->iface_attr();
    const struct {
        uint64_t flag;
        size_t max;
        const char *name;
    } limits[] = {
        {UCT_IFACE_FLAG_AM_SHORT, attr.cap.am.max_short, "am.max_short"},
        {UCT_IFACE_FLAG_AM_BCOPY, attr.cap.am.max_bcopy, "am.max_bcopy"},
        {UCT_IFACE_FLAG_AM_ZCOPY, attr.cap.am.max_zcopy, "am.max_zcopy"},
        {UCT_IFACE_FLAG_AM_ZCOPY, attr.cap.am.max_iov, "am.max_iov"},
        {UCT_IFACE_FLAG_PUT_SHORT, attr.cap.put.max_short, "put.max_short"},
        {UCT_IFACE_FLAG_PUT_BCOPY, attr.cap.put.max_bcopy, "put.max_bcopy"},
        {UCT_IFACE_FLAG_PUT_ZCOPY, attr.cap.put.max_zcopy, "put.max_zcopy"},
        {UCT_IFACE_FLAG_PUT_ZCOPY, attr.cap.put.max_iov, "put.max_iov"},
        {UCT_IFACE_FLAG_GET_BCOPY, attr.cap.get.max_bcopy, "get.max_bcopy"},
        {UCT_IFACE_FLAG_GET_ZCOPY, attr.cap.get.max_zcopy, "get.max_zcopy"},
        {UCT_IFACE_FLAG_GET_ZCOPY, attr.cap.get.max_iov, "get.max_iov"},
    };

    for (const auto &l : limits) {
        if (attr.cap.flags & l.flag) {
            EXPECT_GT(l.max, 0u) << l.name << " of an advertised operation";
        }
    }
    if (attr.cap.flags & UCT_IFACE_FLAG_AM_ZCOPY) {
        EXPECT_LE(attr.cap.am.max_hdr, attr.cap.am.max_zcopy);
    }
    EXPECT_TRUE(attr.cap.flags &
                (UCT_IFACE_FLAG_CONNECT_TO_IFACE | UCT_IFACE_FLAG_CONNECT_TO_EP))
        << "no way to connect";
    if (attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP) {
        EXPECT_GT(attr.ep_addr_len, 0u);
    }
    /* The costs ucp ranks lanes by. */
    EXPECT_GT(attr.bandwidth.dedicated + attr.bandwidth.shared, 0.0);
    EXPECT_GE(attr.latency.c, 0.0);
    EXPECT_GE(attr.latency.m, 0.0);
    EXPECT_GE(attr.overhead, 0.0);
    EXPECT_GE(attr.priority, 0);
}

TEST_P(test_uct_conformance, an_iface_reaches_its_own_address)
{
    std::string dev = m_b->device_address(), iface;
    if (m_b->has_cap(UCT_IFACE_FLAG_CONNECT_TO_IFACE)) {
        iface = m_b->iface_address();
    }
    EXPECT_TRUE(uct_iface_is_reachable(
        m_a->iface(), (const uct_device_addr_t *)dev.data(),
        iface.empty() ? NULL : (const uct_iface_addr_t *)iface.data()));
}

TEST_P(test_uct_conformance, operations_not_advertised_are_refused)
{
    char buf[64]     = {0};
    uct_iov_t iov    = {buf, 8, UCT_MEM_HANDLE_NULL, 0, 1};
    unsigned checked = 0;

    if (!m_a->has_cap(UCT_IFACE_FLAG_AM_SHORT)) {
        EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_am_short(m_ab, 1, 0, buf, 8));
        ++checked;
    }
    if (!m_a->has_cap(UCT_IFACE_FLAG_AM_BCOPY)) {
        EXPECT_GT(0, uct_ep_am_bcopy(m_ab, 1, pack_nothing, NULL, 0));
        ++checked;
    }
    if (!m_a->has_cap(UCT_IFACE_FLAG_AM_ZCOPY)) {
        EXPECT_EQ(UCS_ERR_UNSUPPORTED,
                  uct_ep_am_zcopy(m_ab, 1, NULL, 0, &iov, 1, 0, NULL));
        ++checked;
    }
    if (!m_a->has_cap(UCT_IFACE_FLAG_PUT_SHORT)) {
        EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_put_short(m_ab, buf, 8, (uintptr_t)buf, 0));
        ++checked;
    }
    if (!m_a->has_cap(UCT_IFACE_FLAG_PUT_BCOPY)) {
        EXPECT_GT(0, uct_ep_put_bcopy(m_ab, pack_nothing, NULL, (uintptr_t)buf, 0));
        ++checked;
    }
    if (!m_a->has_cap(UCT_IFACE_FLAG_PUT_ZCOPY)) {
        EXPECT_EQ(UCS_ERR_UNSUPPORTED,
                  uct_ep_put_zcopy(m_ab, &iov, 1, (uintptr_t)buf, 0, NULL));
        ++checked;
    }
    if (!m_a->has_cap(UCT_IFACE_FLAG_GET_BCOPY)) {
        EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_get_bcopy(m_ab, unpack_nothing, NULL, 8,
                                                        (uintptr_t)buf, 0, NULL));
        ++checked;
    }
    if (!m_a->has_cap(UCT_IFACE_FLAG_GET_ZCOPY)) {
        EXPECT_EQ(UCS_ERR_UNSUPPORTED,
                  uct_ep_get_zcopy(m_ab, &iov, 1, (uintptr_t)buf, 0, NULL));
        ++checked;
    }
    if (!m_a->has_cap(UCT_IFACE_FLAG_PENDING)) {
        uct_pending_req_t req;
        memset(&req, 0, sizeof(req));
        EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_pending_add(m_ab, &req, 0));
        ++checked;
    }
    if (checked == 0) {
        GTEST_SKIP() << resource().name() << " advertises every operation checked here";
    }
}

TEST_P(test_uct_conformance, am_short_of_every_size_arrives_intact_in_order)
{
    SKIP_UNLESS_CAP(UCT_IFACE_FLAG_AM_SHORT, "am_short");
    size_t max = m_a->iface_attr().cap.am.max_short;
    auto sizes = sizes_up_to(max - sizeof(uint64_t));
    am_recorder rec(*m_b, 3);

    for (size_t i = 0; i < sizes.size(); ++i) {
        std::string payload = uct_test_pattern_string(i, sizes[i]);
        ASSERT_UCS_OK(retry([&] {
            return uct_ep_am_short(m_ab, 3, 1000 + i, payload.data(),
                                   (unsigned)payload.size());
        })) << sizes[i];
    }
    ASSERT_TRUE(progress_until([&] { return rec.count() == sizes.size(); }))
        << rec.count() << " of " << sizes.size();
    for (size_t i = 0; i < sizes.size(); ++i) {
        const std::string &got = rec.msg(i).data;
        ASSERT_EQ(sizeof(uint64_t) + sizes[i], got.size()) << "message " << i;
        uint64_t hdr;
        memcpy(&hdr, got.data(), sizeof(hdr));
        EXPECT_EQ(1000 + i, hdr) << "message " << i << " out of order";
        EXPECT_EQ(uct_test_pattern_string(i, sizes[i]), got.substr(sizeof(hdr)))
            << sizes[i];
    }
}

TEST_P(test_uct_conformance, am_bcopy_of_every_size_arrives_intact_in_order)
{
    SKIP_UNLESS_CAP(UCT_IFACE_FLAG_AM_BCOPY, "am_bcopy");
    auto sizes = sizes_up_to(m_a->iface_attr().cap.am.max_bcopy);
    am_recorder rec(*m_b, 4);

    for (size_t i = 0; i < sizes.size(); ++i) {
        std::string payload   = uct_test_pattern_string(i, sizes[i]);
        uct_test_pack_arg arg = {&payload};
        ASSERT_EQ((ssize_t)sizes[i], retry_bcopy([&] {
                      return uct_ep_am_bcopy(m_ab, 4, uct_test_pack_string, &arg, 0);
                  }))
            << "size " << sizes[i];
    }
    ASSERT_TRUE(progress_until([&] { return rec.count() == sizes.size(); }))
        << rec.count() << " of " << sizes.size();
    for (size_t i = 0; i < sizes.size(); ++i) {
        EXPECT_EQ(uct_test_pattern_string(i, sizes[i]), rec.msg(i).data)
            << "message " << i << " (" << sizes[i] << " B) out of order or damaged";
    }
}

TEST_P(test_uct_conformance, am_zcopy_header_and_payload_arrive_intact)
{
    SKIP_UNLESS_CAP(UCT_IFACE_FLAG_AM_ZCOPY, "am_zcopy");
    const uct_iface_attr_t &attr = m_a->iface_attr();
    size_t len = std::min<size_t>(attr.cap.am.max_zcopy - attr.cap.am.max_hdr, 1 << 16);
    std::string hdr = uct_test_pattern_string(77, attr.cap.am.max_hdr);
    uct_test_buffer buf(*m_a, len);
    buf.fill(5);
    am_recorder rec(*m_b, 5);
    uct_test_completion comp;
    uct_iov_t iov = buf.iov();

    ucs_status_t status = retry([&] {
        return uct_ep_am_zcopy(m_ab, 5, hdr.data(), (unsigned)hdr.size(), &iov, 1, 0,
                               &comp.comp);
    });
    complete(status, comp, "am_zcopy");
    ASSERT_TRUE(progress_until([&] { return rec.count() == 1; }));
    std::string expected = hdr + std::string((const char *)buf.ptr(), len);
    EXPECT_EQ(expected, rec.msg(0).data);
}

TEST_P(test_uct_conformance, put_writes_registered_memory_of_the_peer)
{
    if (!rma_on_host(*m_b)) {
        GTEST_SKIP() << resource().name() << ": its md does not register host memory";
    }
    const uct_iface_attr_t &attr = m_a->iface_attr();
    if (!(attr.cap.flags & (UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_PUT_BCOPY |
                            UCT_IFACE_FLAG_PUT_ZCOPY))) {
        GTEST_SKIP() << resource().name() << " does not offer put";
    }
    const size_t len = 1 << 16;
    uct_test_buffer src(*m_a, len), dst(*m_b, len);
    uct_test_rkey rkey(m_a->component(), dst.rkey_blob());
    src.fill(9);

    /* Each advertised flavour writes its own stretch of the target. */
    size_t off = 0;
    if (attr.cap.flags & UCT_IFACE_FLAG_PUT_SHORT) {
        size_t n = std::min<size_t>(attr.cap.put.max_short, 512);
        ASSERT_UCS_OK(retry([&] {
            return uct_ep_put_short(m_ab, (char *)src.ptr() + off, (unsigned)n,
                                    dst.addr() + off, rkey.rkey());
        }));
        off += n;
    }
    if (attr.cap.flags & UCT_IFACE_FLAG_PUT_BCOPY) {
        size_t n = std::min<size_t>(attr.cap.put.max_bcopy, 4096);
        std::string data((const char *)src.ptr() + off, n);
        uct_test_pack_arg arg = {&data};
        ASSERT_EQ((ssize_t)n, retry_bcopy([&] {
                      return uct_ep_put_bcopy(m_ab, uct_test_pack_string, &arg,
                                              dst.addr() + off, rkey.rkey());
                  }));
        off += n;
    }
    if (attr.cap.flags & UCT_IFACE_FLAG_PUT_ZCOPY) {
        size_t n      = std::min(attr.cap.put.max_zcopy, len - off);
        uct_iov_t iov = src.iov(off, n);
        uct_test_completion comp;
        complete(retry([&] {
                     return uct_ep_put_zcopy(m_ab, &iov, 1, dst.addr() + off, rkey.rkey(),
                                             &comp.comp);
                 }),
                 comp, "put_zcopy");
        off += n;
    }
    m_a->flush_ep(m_ab);
    EXPECT_TRUE(dst.check(9, 0, off)) << off << " bytes put";
}

TEST_P(test_uct_conformance, get_reads_registered_memory_of_the_peer)
{
    if (!rma_on_host(*m_b)) {
        GTEST_SKIP() << resource().name() << ": its md does not register host memory";
    }
    const uct_iface_attr_t &attr = m_a->iface_attr();
    if (!(attr.cap.flags & (UCT_IFACE_FLAG_GET_BCOPY | UCT_IFACE_FLAG_GET_ZCOPY))) {
        GTEST_SKIP() << resource().name() << " does not offer get";
    }
    const size_t len = 1 << 20;
    uct_test_buffer src(*m_b, len), dst(*m_a, len);
    uct_test_rkey rkey(m_a->component(), src.rkey_blob());
    src.fill(11);

    size_t off = 0;
    if (attr.cap.flags & UCT_IFACE_FLAG_GET_BCOPY) {
        size_t n = std::min<size_t>(attr.cap.get.max_bcopy, 4096);
        uct_test_completion comp;
        complete(retry([&] {
                     return uct_ep_get_bcopy(m_ab, unpack_to, (char *)dst.ptr() + off, n,
                                             src.addr() + off, rkey.rkey(), &comp.comp);
                 }),
                 comp, "get_bcopy");
        off += n;
    }
    if (attr.cap.flags & UCT_IFACE_FLAG_GET_ZCOPY) {
        size_t n      = std::min(attr.cap.get.max_zcopy, len - off);
        uct_iov_t iov = dst.iov(off, n);
        uct_test_completion comp;
        complete(retry([&] {
                     return uct_ep_get_zcopy(m_ab, &iov, 1, src.addr() + off, rkey.rkey(),
                                             &comp.comp);
                 }),
                 comp, "get_zcopy");
        off += n;
    }
    EXPECT_TRUE(dst.check(11, 0, off)) << off << " bytes read";
}

TEST_P(test_uct_conformance, flush_completes_after_traffic_and_when_idle)
{
    m_a->flush_ep(m_ab);
    m_a->flush();
    if (m_a->has_cap(UCT_IFACE_FLAG_AM_BCOPY)) {
        am_recorder rec(*m_b, 6);
        std::string payload   = uct_test_pattern_string(1, 64);
        uct_test_pack_arg arg = {&payload};
        for (int i = 0; i < 32; ++i) {
            ASSERT_EQ(64, retry_bcopy([&] {
                          return uct_ep_am_bcopy(m_ab, 6, uct_test_pack_string, &arg, 0);
                      }));
        }
        m_a->flush_ep(m_ab);
        ASSERT_TRUE(progress_until([&] { return rec.count() == 32; }));
    }
    m_a->flush();
}

UCT_INSTANTIATE_TEST_SUITE_P(test_uct_conformance, "");
