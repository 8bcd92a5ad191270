/*
 * The posix shared-memory transport inside one process: md memory and
 * rkeys, addresses, configuration, and the FIFO between two ifaces of the
 * same process (the FIFO does not care whether its senders are local).
 * Two-process behaviour is in test_uct_posix_2proc.cc.
 */
#include "uct_test.h"

#include <uct/api/v2/uct_v2.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

using namespace ucx_test;

namespace {

/* Memory from uct_md_mem_alloc() with its packed rkey. */
class posix_mem {
public:
    posix_mem(uct_test_entity &e, size_t length) : m_entity(e), m_length(length)
    {
        void *address = NULL;
        uct_test_check(uct_md_mem_alloc(e.md(), &m_length, &address,
                                        UCS_MEMORY_TYPE_HOST, 0, "test", &m_memh),
                       "uct_md_mem_alloc");
        m_ptr = static_cast<char*>(address);
        m_rkey.assign(e.md_attr().rkey_packed_size, '\0');
        uct_test_check(uct_md_mkey_pack(e.md(), m_memh, &m_rkey[0]), "mkey_pack");
    }

    ~posix_mem() { uct_md_mem_free(m_entity.md(), m_memh); }

    char *ptr() const { return m_ptr; }
    uint64_t addr() const { return (uintptr_t)m_ptr; }
    size_t length() const { return m_length; }
    const std::string &rkey() const { return m_rkey; }

private:
    uct_test_entity &m_entity;
    size_t          m_length;
    uct_mem_h       m_memh;
    char            *m_ptr;
    std::string     m_rkey;
};

} // namespace

class test_uct_posix : public uct_test {
protected:
    /* Send with the given op until it is accepted (the peer is progressed
     * by progress_until()). */
    void send_retry(const std::function<ucs_status_t()> &op)
    {
        ucs_status_t status = UCS_ERR_NO_RESOURCE;
        ASSERT_TRUE(progress_until([&] {
            status = op();
            return status != UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_UCS_OK(status);
    }
};

TEST_P(test_uct_posix, md_allocates_exportable_host_memory_without_registration)
{
    uct_test_entity &e  = *create_entity();
    const uct_md_attr_t &attr = e.md_attr();

    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_ALLOC);
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_RKEY_PTR);
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_NEED_RKEY);
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_EXPORTABLE);
    EXPECT_FALSE(attr.cap.flags & UCT_MD_FLAG_REG);
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_HOST), attr.cap.alloc_mem_types);
    EXPECT_STREQ("posix", attr.component_name);
    EXPECT_GT(attr.rkey_packed_size, 0u);

    char buf[64];
    uct_mem_h memh;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_md_mem_reg(e.md(), buf, sizeof(buf), UCT_MD_MEM_ACCESS_ALL, &memh));

    size_t length = 0;
    void *address;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_md_mem_alloc(e.md(), &length, &address, UCS_MEMORY_TYPE_HOST, 0,
                               "zero", &memh));
}

TEST_P(test_uct_posix, rkey_maps_allocated_memory_and_bounds_rkey_ptr)
{
    uct_test_entity &e = *create_entity();
    posix_mem mem(e, 10000);

    EXPECT_GE(mem.length(), 10000u);
    memset(mem.ptr(), 0x5a, mem.length());

    uct_test_rkey rkey(e.component(), mem.rkey());
    void *local;
    ASSERT_UCS_OK(uct_rkey_ptr(e.component(), &rkey.bundle(), mem.addr() + 100, &local));
    /* A second mapping of the same memory: writes through it are visible. */
    EXPECT_NE(mem.ptr() + 100, local);
    EXPECT_EQ(0x5a, *(unsigned char*)local);
    *(char*)local = 7;
    EXPECT_EQ(7, mem.ptr()[100]);

    EXPECT_NE(UCS_OK, uct_rkey_ptr(e.component(), &rkey.bundle(), mem.addr() - 1,
                                   &local));
    EXPECT_NE(UCS_OK, uct_rkey_ptr(e.component(), &rkey.bundle(),
                                   mem.addr() + mem.length() + 1, &local));
}

TEST_P(test_uct_posix, corrupt_or_truncated_rkey_is_rejected)
{
    uct_test_entity &e = *create_entity();
    posix_mem mem(e, 4096);
    const std::string good = mem.rkey();
    uct_rkey_bundle_t bundle;

    /* Every single-bit flip is caught before anything is mapped. */
    for (size_t i = 0; i < good.size(); ++i) {
        for (int bit = 0; bit < 8; ++bit) {
            std::string bad = good;
            bad[i] ^= (char)(1 << bit);
            ASSERT_EQ(UCS_ERR_INVALID_PARAM,
                      uct_rkey_unpack(e.component(), bad.data(), &bundle))
                    << "byte " << i << " bit " << bit;
        }
    }

    /* Truncated: the tail of the buffer is missing (zeros or 0xff). A tail
     * that happens to equal the key's own bytes (a checksum whose top byte
     * is zero: one key in 256) leaves the key intact, not truncated. */
    for (char fill : {'\0', '\xff'}) {
        for (size_t keep = 0; keep < good.size(); ++keep) {
            std::string bad = good.substr(0, keep) +
                              std::string(good.size() - keep, fill);
            if (bad == good) {
                continue;
            }
            ucs_status_t status = uct_rkey_unpack(e.component(), bad.data(), &bundle);
            if (status == UCS_OK) {
                uct_rkey_release(e.component(), &bundle);
            }
            ASSERT_EQ(UCS_ERR_INVALID_PARAM, status)
                    << "kept " << keep << " fill " << (int)(unsigned char)fill;
        }
    }

    std::string garbage(good.size(), '\0');
    srand(1);
    for (int round = 0; round < 1000; ++round) {
        for (char &c : garbage) {
            c = (char)rand();
        }
        ASSERT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_rkey_unpack(e.component(), garbage.data(), &bundle));
    }
}

TEST_P(test_uct_posix, rkey_of_exited_owner_is_unreachable)
{
    uct_test_entity &e = *create_entity();
    int fds[2];
    ASSERT_EQ(0, pipe(fds));

    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        /* Child: allocate, hand the key over, exit. */
        size_t length = 4096;
        void *address;
        uct_mem_h memh;
        std::string rkey(e.md_attr().rkey_packed_size, '\0');
        if ((uct_md_mem_alloc(e.md(), &length, &address, UCS_MEMORY_TYPE_HOST, 0,
                              "child", &memh) != UCS_OK) ||
            (uct_md_mkey_pack(e.md(), memh, &rkey[0]) != UCS_OK) ||
            (write(fds[1], rkey.data(), rkey.size()) != (ssize_t)rkey.size())) {
            _exit(1);
        }
        _exit(0);
    }

    close(fds[1]);
    std::string rkey(e.md_attr().rkey_packed_size, '\0');
    ASSERT_EQ((ssize_t)rkey.size(), read(fds[0], &rkey[0], rkey.size()));
    close(fds[0]);
    int wstatus;
    ASSERT_EQ(pid, waitpid(pid, &wstatus, 0));
    ASSERT_TRUE(WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 0));

    uct_rkey_bundle_t bundle;
    EXPECT_EQ(UCS_ERR_UNREACHABLE, uct_rkey_unpack(e.component(), rkey.data(), &bundle));
}

TEST_P(test_uct_posix, fifo_is_private_memfd_with_mode_0600)
{
    uct_test_entity &e = *create_entity();
    std::string addr   = e.iface_address();
    uint32_t pid;
    int32_t fd;

    /* Layout of uct_mm_iface_addr_t: version, 3 reserved, pid, fd, ... */
    ASSERT_GE(addr.size(), 12u);
    memcpy(&pid, &addr[4], sizeof(pid));
    memcpy(&fd, &addr[8], sizeof(fd));
    EXPECT_EQ((uint32_t)getpid(), pid);

    struct stat st;
    ASSERT_EQ(0, fstat(fd, &st));
    EXPECT_EQ(0600u, st.st_mode & 07777);

    char link[256] = {};
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    ASSERT_GT(readlink(path.c_str(), link, sizeof(link) - 1), 0);
    EXPECT_EQ(0, strncmp(link, "/memfd:ucx-posix-fifo", 21)) << link;
}

TEST_P(test_uct_posix, garbage_addresses_are_unreachable_and_refused)
{
    uct_test_entity &e = *create_entity();
    const uct_iface_attr_t &attr = e.iface_attr();
    std::string dev   = e.device_address();
    std::string iface = e.iface_address();
    uct_log_capture log(UCS_LOG_LEVEL_ERROR);

    EXPECT_TRUE(uct_iface_is_reachable(e.iface(),
                                       (const uct_device_addr_t*)dev.data(),
                                       (const uct_iface_addr_t*)iface.data()));
    EXPECT_FALSE(uct_iface_is_reachable(e.iface(), NULL, NULL));

    std::string bad_dev = dev;
    bad_dev[3] ^= 1; /* another boot */
    EXPECT_FALSE(uct_iface_is_reachable(e.iface(),
                                        (const uct_device_addr_t*)bad_dev.data(),
                                        (const uct_iface_addr_t*)iface.data()));

    srand(2);
    std::string garbage(std::max(attr.device_addr_len, attr.iface_addr_len), '\0');
    for (int round = 0; round < 200; ++round) {
        for (char &c : garbage) {
            c = (char)rand();
        }
        EXPECT_FALSE(uct_iface_is_reachable(e.iface(),
                                            (const uct_device_addr_t*)garbage.data(),
                                            (const uct_iface_addr_t*)garbage.data()));

        uct_ep_params_t params = {};
        uct_ep_h ep;
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_IFACE_ADDR;
        params.iface      = e.iface();
        params.iface_addr = (const uct_iface_addr_t*)garbage.data();
        ucs_status_t status = uct_ep_create(&params, &ep);
        EXPECT_TRUE((status == UCS_ERR_INVALID_ADDR) || (status == UCS_ERR_UNREACHABLE))
                << ucs_status_string(status);
    }

    /* Well-formed addresses naming the wrong things: our pid with a
     * descriptor that is not the FIFO (an fd of /dev/null, or the right fd
     * with another inode), and a pid that does not exist. Not fd 0: a
     * process started with stdin closed gets its FIFO there. */
    uct_ep_params_t params = {};
    uct_ep_h ep;
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_IFACE_ADDR |
                        UCT_EP_PARAM_FIELD_DEV_ADDR;
    params.iface      = e.iface();
    params.dev_addr   = (const uct_device_addr_t*)dev.data();

    std::string wrong = iface;
    int32_t other_fd  = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(other_fd, 0);
    memcpy(&wrong[8], &other_fd, sizeof(other_fd));
    params.iface_addr = (const uct_iface_addr_t*)wrong.data();
    EXPECT_NE(UCS_OK, uct_ep_create(&params, &ep));
    close(other_fd);

    wrong = iface;
    wrong[16] ^= 1; /* inode */
    params.iface_addr = (const uct_iface_addr_t*)wrong.data();
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, uct_ep_create(&params, &ep));

    wrong = iface;
    uint32_t no_pid = 0x3ffffff0;
    memcpy(&wrong[4], &no_pid, sizeof(no_pid));
    params.iface_addr = (const uct_iface_addr_t*)wrong.data();
    EXPECT_EQ(UCS_ERR_UNREACHABLE, uct_ep_create(&params, &ep));

    params.dev_addr   = (const uct_device_addr_t*)bad_dev.data();
    params.iface_addr = (const uct_iface_addr_t*)iface.data();
    EXPECT_EQ(UCS_ERR_UNREACHABLE, uct_ep_create(&params, &ep));

    EXPECT_EQ("", log.text()); /* refused quietly, at debug level */
}

TEST_P(test_uct_posix, bad_config_value_fails_open_naming_the_variable)
{
    uct_log_capture log(UCS_LOG_LEVEL_ERROR);
    uct_entity_params params;

    params.iface_config["FIFO_SIZE"] = "48";
    EXPECT_THROW(create_entity(params), uct_test_error);
    EXPECT_TRUE(log.contains("UCX_POSIX_FIFO_SIZE=48")) << log.text();

    params.iface_config.clear();
    params.iface_config["FIFO_ELEM_SIZE"] = "100";
    EXPECT_THROW(create_entity(params), uct_test_error);
    EXPECT_TRUE(log.contains("UCX_POSIX_FIFO_ELEM_SIZE=100")) << log.text();
}

TEST_P(test_uct_posix, query_reports_limits_and_performance_model)
{
    uct_entity_params params;
    params.iface_config["SEG_SIZE"]       = "4k";
    params.iface_config["FIFO_ELEM_SIZE"] = "256";
    uct_test_entity &e = *create_entity(params);
    const uct_iface_attr_t &attr = e.iface_attr();

    EXPECT_TRUE(e.has_cap(UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY |
                          UCT_IFACE_FLAG_AM_ZCOPY | UCT_IFACE_FLAG_PENDING |
                          UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_GET_BCOPY |
                          UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                          UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE));
    EXPECT_TRUE(attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_FD);
    EXPECT_EQ(256u - 24u, attr.cap.am.max_short);
    EXPECT_EQ(4096u, attr.cap.am.max_bcopy);
    EXPECT_EQ(4096u, attr.cap.am.max_zcopy + attr.cap.am.max_hdr);
    EXPECT_GT(attr.cap.am.max_iov, 1u);
    EXPECT_NEAR(80e-9, attr.latency.c, 1e-12);
    EXPECT_GT(attr.bandwidth.dedicated, 1e8);
    EXPECT_GT(attr.overhead, 0.0);
    EXPECT_EQ(0u, attr.ep_addr_len);
}

/* The estimates UCP's rendezvous model builds on: a stream of bcopy
 * segments moves at the configured memcpy rate, and a bcopy costs its
 * sender more than a short message; operations without a model of their
 * own answer from the query. */
TEST_P(test_uct_posix, estimate_perf_per_operation)
{
    uct_entity_params params;
    params.iface_config["BW"] = "1G";
    uct_test_entity &e = *create_entity(params);
    uct_perf_attr_t a;

    memset(&a, 0, sizeof(a));
    a.field_mask = UCT_PERF_ATTR_FIELD_OPERATION | UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD |
                   UCT_PERF_ATTR_FIELD_RECV_OVERHEAD | UCT_PERF_ATTR_FIELD_BANDWIDTH |
                   UCT_PERF_ATTR_FIELD_LATENCY;
    a.operation  = UCT_EP_OP_AM_BCOPY;
    ASSERT_EQ(UCS_OK, uct_iface_estimate_perf(e.iface(), &a));
    EXPECT_EQ(1024.0 * 1024 * 1024, a.bandwidth.dedicated);
    EXPECT_NEAR(80e-9, a.latency.c, 1e-12);
    double bcopy_pre = a.send_pre_overhead;
    EXPECT_NE(e.iface_attr().overhead, bcopy_pre);
    EXPECT_GT(a.recv_overhead, 0.0);

    a.operation = UCT_EP_OP_AM_SHORT;
    ASSERT_EQ(UCS_OK, uct_iface_estimate_perf(e.iface(), &a));
    EXPECT_LT(a.send_pre_overhead, bcopy_pre);

    a.operation = UCT_EP_OP_GET_BCOPY;
    ASSERT_EQ(UCS_OK, uct_iface_estimate_perf(e.iface(), &a));
    EXPECT_EQ(e.iface_attr().overhead, a.send_pre_overhead);
    EXPECT_EQ(1024.0 * 1024 * 1024, a.bandwidth.dedicated);

    a.operation = UCT_EP_OP_ATOMIC_FETCH;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_iface_estimate_perf(e.iface(), &a));
}

TEST_P(test_uct_posix, am_short_bcopy_zcopy_of_every_size_arrive_intact)
{
    uct_test_entity &s = *create_entity(), &r = *create_entity();
    uct_ep_h ep = connect(s, r).first;
    am_recorder rec(r, 3);
    const uct_iface_attr_t &attr = s.iface_attr();
    std::vector<std::string> expected;

    for (size_t len = 0; len + 8 <= attr.cap.am.max_short; ++len) {
        std::string payload = uct_test_pattern_string(len, len);
        uint64_t header     = 0x1122334455667700ull + len;
        send_retry([&] { return uct_ep_am_short(ep, 3, header, payload.data(),
                                                (unsigned)len); });
        expected.push_back(std::string((const char*)&header, 8) + payload);
    }

    for (size_t len : {0ul, 1ul, 63ul, 64ul, 1000ul, 4095ul, attr.cap.am.max_bcopy}) {
        std::string payload   = uct_test_pattern_string(len + 1000, len);
        uct_test_pack_arg arg = {&payload};
        ssize_t packed      = UCS_ERR_NO_RESOURCE;
        ASSERT_TRUE(progress_until([&] {
            packed = uct_ep_am_bcopy(ep, 3, uct_test_pack_string, &arg, 0);
            return packed != UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_EQ((ssize_t)len, packed);
        expected.push_back(payload);
    }

    /* zcopy: a header and three iov entries, one of them strided. */
    for (size_t len : {0ul, 8ul, 500ul, attr.cap.am.max_zcopy - 64}) {
        std::string hdr  = uct_test_pattern_string(7, 16);
        std::string data = uct_test_pattern_string(len + 2000, len + 64);
        uct_iov_t iov[3] = {};
        iov[0].buffer = &data[0];
        iov[0].length = len / 2;
        iov[0].count  = 1;
        iov[1].buffer = &data[len / 2];
        iov[1].length = 8;
        iov[1].stride = 16;
        iov[1].count  = 4; /* bytes len/2+0..7, +16..23, +32..39, +48..55 */
        iov[2].buffer = &data[len / 2 + 64];
        iov[2].length = len - len / 2;
        iov[2].count  = 1;
        send_retry([&] { return uct_ep_am_zcopy(ep, 3, hdr.data(), 16, iov, 3, 0,
                                                NULL); });
        std::string exp = hdr + data.substr(0, len / 2);
        for (int i = 0; i < 4; ++i) {
            exp += data.substr(len / 2 + 16 * i, 8);
        }
        exp += data.substr(len / 2 + 64, len - len / 2);
        expected.push_back(exp);
    }

    ASSERT_TRUE(progress_until([&] { return rec.count() == expected.size(); }));
    for (size_t i = 0; i < expected.size(); ++i) {
        ASSERT_EQ(expected[i], rec.msg(i).data) << "message " << i;
    }

    /* Beyond the limits: refused, nothing sent. */
    std::string big(attr.cap.am.max_short, 'x');
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_am_short(ep, 3, 0, big.data(), (unsigned)big.size()));
}

TEST_P(test_uct_posix, full_fifo_queues_pending_and_delivers_everything_in_order)
{
    uct_entity_params params;
    params.iface_config["FIFO_SIZE"] = "8";
    uct_test_entity &s = *create_entity(params), &r = *create_entity(params);
    uct_ep_h ep = connect(s, r).first;
    am_recorder rec(r, 1);
    const unsigned total = 100;

    /* Fill the receiver without letting it progress. */
    unsigned sent = 0;
    while (uct_ep_am_short(ep, 1, sent, NULL, 0) == UCS_OK) {
        ++sent;
    }
    EXPECT_EQ(8u, sent);
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_am_short(ep, 1, sent, NULL, 0));
    /* Everything sent so far is in the receiver's memory: flushed. */
    EXPECT_UCS_OK(uct_ep_flush(ep, 0, NULL));

    struct req {
        uct_pending_req_t super;
        uct_ep_h          ep;
        uint64_t          seq;
        unsigned          *done;
    };
    std::vector<req> reqs(total - sent);
    for (size_t i = 0; i < reqs.size(); ++i) {
        reqs[i].ep   = ep;
        reqs[i].seq  = sent + i;
        reqs[i].done = &sent;
        reqs[i].super.func = [](uct_pending_req_t *self) -> ucs_status_t {
            req *r = ucs_container_of(self, req, super);
            ucs_status_t status = uct_ep_am_short(r->ep, 1, r->seq, NULL, 0);
            if (status == UCS_OK) {
                ++*r->done;
            }
            return status;
        };
        ASSERT_UCS_OK(uct_ep_pending_add(ep, &reqs[i].super, 0));
    }
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_flush(ep, 0, NULL));

    /* The sender's progress dispatches them as the receiver frees cells. */
    ASSERT_TRUE(progress_until([&] { return rec.count() == total; }));
    EXPECT_EQ(total, sent);
    for (unsigned i = 0; i < total; ++i) {
        uint64_t seq;
        memcpy(&seq, rec.msg(i).data.data(), sizeof(seq));
        ASSERT_EQ(i, seq);
    }

    /* Room again: pending_add says "send it yourself". */
    uct_pending_req_t extra = {};
    EXPECT_EQ(UCS_ERR_BUSY, uct_ep_pending_add(ep, &extra, 0));
    EXPECT_UCS_OK(uct_ep_flush(ep, 0, NULL));
}

TEST_P(test_uct_posix, handler_may_keep_buffers_until_release)
{
    uct_entity_params params;
    params.iface_config["FIFO_SIZE"]    = "4";
    params.iface_config["RX_HOLD_BUFS"] = "6";
    params.rx_headroom                  = 24;
    uct_test_entity &s = *create_entity(params), &r = *create_entity(params);
    uct_ep_h ep = connect(s, r).first;
    am_recorder rec(r, 2, true);
    const size_t total = 30;

    for (size_t i = 0; i < total; ++i) {
        std::string payload   = uct_test_pattern_string(i, 100 + i);
        uct_test_pack_arg arg = {&payload};
        ssize_t packed      = UCS_ERR_NO_RESOURCE;
        ASSERT_TRUE(progress_until([&] {
            packed = uct_ep_am_bcopy(ep, 2, uct_test_pack_string, &arg, 0);
            return packed != UCS_ERR_NO_RESOURCE;
        }));
        ASSERT_EQ((ssize_t)payload.size(), packed);
    }
    ASSERT_TRUE(progress_until([&] { return rec.count() == total; }));

    /* 6 spares: the first 6 messages were kept, the rest came without
     * FLAG_DESC; kept data is intact although the FIFO went round 7 times. */
    size_t kept = 0;
    for (size_t i = 0; i < total; ++i) {
        const am_recorder::message &m = rec.msg(i);
        if (m.desc != NULL) {
            ++kept;
            EXPECT_EQ(uct_test_pattern_string(i, 100 + i),
                      std::string((char *)m.desc + 24, m.data.size()));
        }
        EXPECT_EQ(uct_test_pattern_string(i, 100 + i), m.data);
    }
    EXPECT_EQ(6u, kept);

    /* Released buffers come back: the next messages can be kept again. */
    rec.clear();
    for (size_t i = 0; i < 6; ++i) {
        std::string payload   = uct_test_pattern_string(i, 10);
        uct_test_pack_arg arg = {&payload};
        ASSERT_TRUE(progress_until([&] {
            return uct_ep_am_bcopy(ep, 2, uct_test_pack_string, &arg, 0) !=
                   UCS_ERR_NO_RESOURCE;
        }));
    }
    ASSERT_TRUE(progress_until([&] { return rec.count() == 6; }));
    for (size_t i = 0; i < 6; ++i) {
        EXPECT_TRUE(rec.msg(i).flags & UCT_CB_PARAM_FLAG_DESC) << i;
    }
}

TEST_P(test_uct_posix, put_and_get_through_rkey_check_data_and_bounds)
{
    uct_test_entity &s = *create_entity(), &r = *create_entity();
    uct_ep_h ep = connect(s, r).first;
    posix_mem mem(r, 64 * 1024);
    uct_test_rkey rkey(s.component(), mem.rkey());
    const uct_iface_attr_t &attr = s.iface_attr();

    std::string a = uct_test_pattern_string(1, 100);
    ASSERT_UCS_OK(uct_ep_put_short(ep, a.data(), 100, mem.addr() + 10, rkey.rkey()));
    EXPECT_EQ(a, std::string(mem.ptr() + 10, 100));

    std::string b         = uct_test_pattern_string(2, attr.cap.put.max_bcopy);
    uct_test_pack_arg arg = {&b};
    EXPECT_EQ((ssize_t)b.size(), uct_ep_put_bcopy(ep, uct_test_pack_string, &arg,
                                                  mem.addr() + 1000, rkey.rkey()));
    EXPECT_EQ(b, std::string(mem.ptr() + 1000, b.size()));
    /* Near the end of the region: packed through the bounce buffer. */
    std::string c = uct_test_pattern_string(3, 100);
    arg.data      = &c;
    EXPECT_EQ(100, uct_ep_put_bcopy(ep, uct_test_pack_string, &arg,
                                    mem.addr() + mem.length() - 100, rkey.rkey()));
    EXPECT_EQ(c, std::string(mem.ptr() + mem.length() - 100, 100));

    std::string d = uct_test_pattern_string(4, 40000);
    uct_iov_t iov = {&d[0], d.size(), NULL, 0, 1};
    EXPECT_UCS_OK(uct_ep_put_zcopy(ep, &iov, 1, mem.addr() + 20000, rkey.rkey(), NULL));
    EXPECT_EQ(d, std::string(mem.ptr() + 20000, d.size()));

    std::string got;
    EXPECT_UCS_OK(uct_ep_get_bcopy(ep, uct_test_unpack_string, &got, 100, mem.addr() + 10,
                                   rkey.rkey(), NULL));
    EXPECT_EQ(a, got);
    std::string z(d.size(), '\0');
    uct_iov_t ziov = {&z[0], z.size(), NULL, 0, 1};
    EXPECT_UCS_OK(uct_ep_get_zcopy(ep, &ziov, 1, mem.addr() + 20000, rkey.rkey(), NULL));
    EXPECT_EQ(d, z);

    /* Out of the region: refused, nothing written. */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_put_short(ep, a.data(), 100, mem.addr() + mem.length() - 50,
                               rkey.rkey()));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_put_short(ep, a.data(), 1, mem.addr() - 1, rkey.rkey()));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_get_bcopy(ep, uct_test_unpack_string, &got, 1ull << 40, mem.addr(),
                               rkey.rkey(), NULL));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_put_short(ep, a.data(), 1, mem.addr(), UCT_INVALID_RKEY));
}

TEST_P(test_uct_posix, event_fd_is_armed_only_when_nothing_waits)
{
    uct_test_entity &s = *create_entity(), &r = *create_entity();
    uct_ep_h ep = connect(s, r).first;
    am_recorder rec(r, 1);
    int fd;

    ASSERT_UCS_OK(uct_iface_event_fd_get(r.iface(), &fd));
    ASSERT_UCS_OK(uct_iface_event_arm(r.iface(), UCT_EVENT_RECV));
    struct pollfd pfd = {fd, POLLIN, 0};
    EXPECT_EQ(0, poll(&pfd, 1, 0));

    /* A message to an armed receiver makes the fd readable. */
    ASSERT_UCS_OK(uct_ep_am_short(ep, 1, 1, NULL, 0));
    EXPECT_EQ(1, poll(&pfd, 1, 1000));

    /* While it is undelivered, arming refuses. */
    EXPECT_EQ(UCS_ERR_BUSY, uct_iface_event_arm(r.iface(), UCT_EVENT_RECV));
    ASSERT_TRUE(progress_until([&] { return rec.count() == 1; }));
    ASSERT_UCS_OK(uct_iface_event_arm(r.iface(), UCT_EVENT_RECV));
    pfd.revents = 0;
    EXPECT_EQ(0, poll(&pfd, 1, 0)); /* old wake-ups were drained */

    /* Progress calls between the arm and the sleep keep it armed (UCXX's
     * asyncio loop makes them): the next message still wakes ... */
    r.progress();
    r.progress();
    ASSERT_UCS_OK(uct_ep_am_short(ep, 1, 2, NULL, 0));
    EXPECT_EQ(1, poll(&pfd, 1, 1000));
    ASSERT_TRUE(progress_until([&] { return rec.count() == 2; }));

    /* ... and only that one signals: the arm is used up until the next. */
    char byte;
    while (recv(fd, &byte, 1, MSG_DONTWAIT) >= 0) {
    }
    ASSERT_UCS_OK(uct_ep_am_short(ep, 1, 3, NULL, 0));
    pfd.revents = 0;
    EXPECT_EQ(0, poll(&pfd, 1, 0));
    ASSERT_TRUE(progress_until([&] { return rec.count() == 3; }));
}

TEST_P(test_uct_posix, sender_learns_that_receiver_closed_its_iface)
{
    struct err_state {
        int          calls  = 0;
        ucs_status_t status = UCS_OK;
    } state;
    uct_entity_params params;
    params.err_handler = [](void *arg, uct_ep_h, ucs_status_t status) {
        err_state *st = static_cast<err_state*>(arg);
        ++st->calls;
        st->status = status;
        return UCS_OK;
    };
    params.err_handler_arg = &state;
    uct_test_entity *s = create_entity(params), *r = create_entity();
    uct_ep_h ep = s->create_ep_to_iface(r->device_address(), r->iface_address());

    EXPECT_UCS_OK(uct_ep_flush(ep, 0, NULL));
    destroy_entity(r);

    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, uct_ep_flush(ep, 0, NULL));
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, uct_ep_am_short(ep, 1, 0, NULL, 0));
    s->progress();
    EXPECT_EQ(1, state.calls);
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, state.status);
    s->progress();
    EXPECT_EQ(1, state.calls); /* reported once */
}

UCT_INSTANTIATE_TEST_SUITE_P(test_uct_posix, "posix");
