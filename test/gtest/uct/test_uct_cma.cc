/*
 * The cma transport (process_vm_readv/writev) between real processes: reads
 * and writes of contiguous and strided blocks, keys that name another
 * process, remote ranges that are not mapped, a peer that is gone, and
 * malformed addresses and keys.
 */
#include "uct_test.h"
#include "common/test_helpers.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

using namespace ucx_test;

namespace {

bool cma_resource(uct_resource &res)
{
    std::vector<uct_resource> all = uct_enum_resources("cma", "memory");
    if (all.empty()) {
        return false;
    }
    res = all[0];
    return true;
}

/* The owner's side: a buffer of @a length with pattern @a seed, its key and
 * address sent to the peer. */
struct cma_owner {
    uct_test_entity &e;
    std::string     mem;
    std::string     key;

    cma_owner(uct_test_entity &entity, size_t length, uint64_t seed)
        : e(entity), mem(uct_test_pattern_string(seed, length)),
          key(entity.md_attr().rkey_packed_size, '\0')
    {
        uct_mem_h memh;
        EXPECT_EQ(UCS_OK, uct_md_mem_reg(e.md(), &mem[0], length, 0, &memh));
        EXPECT_EQ(UCS_OK, uct_md_mkey_pack(e.md(), memh, &key[0]));
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(e.md(), memh));
    }

    bool send(oob_channel &ch)
    {
        uint64_t addr = (uintptr_t)&mem[0];
        return ch.send_blob(key) && ch.send(&addr, sizeof(addr));
    }
};

/* The peer's side of cma_owner::send(). */
bool recv_owner(oob_channel &ch, std::string &key, uint64_t &remote)
{
    return ch.recv_blob(key) && ch.recv(&remote, sizeof(remote));
}

class test_uct_cma : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (!cma_resource(m_res)) {
            GTEST_SKIP() << "no cma resource: process_vm_readv does not work here";
        }
    }

    uct_resource m_res;
};

} // namespace

TEST_F(test_uct_cma, offers_get_and_put_zcopy_only_and_registers_host_memory)
{
    uct_test_entity e(m_res);
    const uint64_t must_have = UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_PUT_ZCOPY |
                               UCT_IFACE_FLAG_CONNECT_TO_IFACE;
    const uint64_t must_not  = UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY |
                               UCT_IFACE_FLAG_AM_ZCOPY | UCT_IFACE_FLAG_PUT_SHORT |
                               UCT_IFACE_FLAG_GET_BCOPY | UCT_IFACE_FLAG_CONNECT_TO_EP;

    EXPECT_EQ(must_have, e.iface_attr().cap.flags & must_have);
    EXPECT_EQ(0u, e.iface_attr().cap.flags & must_not);
    EXPECT_GE(e.iface_attr().cap.get.max_zcopy, 1ul << 30);
    EXPECT_GE(e.iface_attr().cap.get.max_iov, 2u);
    EXPECT_GT(e.iface_attr().bandwidth.dedicated, 1e8);
    EXPECT_TRUE(e.md_attr().cap.reg_mem_types & UCS_BIT(UCS_MEMORY_TYPE_HOST));
    EXPECT_FALSE(e.md_attr().cap.reg_mem_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA));
    EXPECT_TRUE(e.md_attr().cap.flags & UCT_MD_FLAG_NEED_RKEY);
    EXPECT_GT(e.md_attr().rkey_packed_size, 0u);
}

TEST_F(test_uct_cma, get_and_put_move_contiguous_and_strided_blocks_between_processes)
{
    const size_t length = (1ul << 20) + 3;

    run_two_processes(
        [&](oob_channel &ch) {
            uct_test_entity e(m_res);
            uct_ep_h ep = e.connect_over_oob(ch);
            std::string key;
            uint64_t remote;
            ASSERT_TRUE(recv_owner(ch, key, remote));
            uct_test_rkey rkey(e.component(), key);

            /* The whole buffer, in one read. */
            std::string got(length, '\0');
            uct_iov_t iov = {&got[0], length, NULL, 0, 1};
            ASSERT_UCS_OK(uct_ep_get_zcopy(ep, &iov, 1, remote, rkey.rkey(), NULL));
            EXPECT_TRUE(uct_test_pattern_string(7, length) == got);

            /* 100 bytes into every 4th of 16 slots of 400 bytes, then a second
             * element: the remote side is one contiguous range. */
            std::string strided(16 * 400, 'x'), tail(5000, '\0');
            uct_iov_t siov[2] = {{&strided[0], 100, NULL, 400, 16},
                                 {&tail[0], tail.size(), NULL, 0, 1}};
            ASSERT_UCS_OK(uct_ep_get_zcopy(ep, siov, 2, remote + 10, rkey.rkey(), NULL));
            std::string expected =
                uct_test_pattern_string(7, length).substr(10, 1600 + 5000);
            for (size_t i = 0; i < 16; ++i) {
                EXPECT_EQ(expected.substr(i * 100, 100), strided.substr(i * 400, 100))
                        << "block " << i;
                EXPECT_EQ(std::string(300, 'x'), strided.substr(i * 400 + 100, 300));
            }
            EXPECT_EQ(expected.substr(1600), tail);

            /* Write two ranges; the owner checks. */
            std::string a     = uct_test_pattern_string(8, 4096),
                        b     = uct_test_pattern_string(9, 300000);
            uct_iov_t piov[2] = {{&a[0], a.size(), NULL, 0, 1}, {&b[0], b.size(), NULL, 0, 1}};
            ASSERT_UCS_OK(uct_ep_put_zcopy(ep, piov, 2, remote + 100, rkey.rkey(), NULL));
            e.flush_ep(ep);
            ASSERT_TRUE(ch.barrier());
            ASSERT_TRUE(ch.barrier());
        },
        [&](oob_channel &ch) {
            uct_test_entity e(m_res);
            e.connect_over_oob(ch);
            cma_owner owner(e, length, 7);
            ASSERT_TRUE(owner.send(ch));
            ASSERT_TRUE(ch.barrier());
            std::string orig = uct_test_pattern_string(7, length);
            EXPECT_TRUE(orig.substr(0, 100) == owner.mem.substr(0, 100));
            EXPECT_TRUE(uct_test_pattern_string(8, 4096) == owner.mem.substr(100, 4096));
            EXPECT_TRUE(uct_test_pattern_string(9, 300000) ==
                        owner.mem.substr(4196, 300000));
            EXPECT_TRUE(orig.substr(304196) == owner.mem.substr(304196));
            ASSERT_TRUE(ch.barrier());
        });
}

/* A key names the memory of one process: used on an ep to another, and
 * with a remote range that is not mapped, the operation fails cleanly and
 * leaves the local buffer as it was. */
TEST_F(test_uct_cma, foreign_keys_and_unmapped_ranges_fail_without_touching_memory)
{
    run_two_processes(
        [&](oob_channel &ch) {
            uct_test_entity e(m_res);
            uct_ep_h ep = e.connect_over_oob(ch);
            std::string key;
            uint64_t remote, guard;
            ASSERT_TRUE(recv_owner(ch, key, remote));
            ASSERT_TRUE(ch.recv(&guard, sizeof(guard)));
            uct_test_rkey rkey(e.component(), key);

            /* Our own key on the ep to the peer. */
            cma_owner self(e, 64, 1);
            uct_test_rkey own(e.component(), self.key);
            std::string buf(8192, 'k');
            uct_iov_t iov = {&buf[0], 64, NULL, 0, 1};
            EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                      uct_ep_get_zcopy(ep, &iov, 1, remote, own.rkey(), NULL));

            /* Page 0 of the peer, and a read running into its guard page. */
            EXPECT_EQ(UCS_ERR_INVALID_ADDR,
                      uct_ep_get_zcopy(ep, &iov, 1, 0x1000, rkey.rkey(), NULL));
            uct_iov_t over = {&buf[0], 8192, NULL, 0, 1};
            EXPECT_EQ(UCS_ERR_INVALID_ADDR,
                      uct_ep_get_zcopy(ep, &over, 1, guard - 4096, rkey.rkey(), NULL));
            EXPECT_EQ(UCS_ERR_INVALID_ADDR,
                      uct_ep_put_zcopy(ep, &iov, 1, guard, rkey.rkey(), NULL));
            /* Nothing past the readable page was written locally. */
            EXPECT_EQ(std::string(4096, 'k'), buf.substr(4096));
            ASSERT_TRUE(ch.barrier());
        },
        [&](oob_channel &ch) {
            uct_test_entity e(m_res);
            e.connect_over_oob(ch);
            cma_owner owner(e, 4096, 2);
            /* A readable page followed by an inaccessible one. */
            char *pages = (char*)mmap(NULL, 8192, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            ASSERT_NE(MAP_FAILED, (void*)pages);
            ASSERT_EQ(0, mprotect(pages + 4096, 4096, PROT_NONE));
            uint64_t guard = (uintptr_t)(pages + 4096);
            ASSERT_TRUE(owner.send(ch));
            ASSERT_TRUE(ch.send(&guard, sizeof(guard)));
            ASSERT_TRUE(ch.barrier());
            munmap(pages, 8192);
        });
}

TEST_F(test_uct_cma, a_peer_that_has_died_fails_the_read_with_connection_reset)
{
    run_two_processes(
        [&](oob_channel &ch) {
            uct_test_entity e(m_res);
            uct_ep_h ep = e.connect_over_oob(ch);
            std::string key;
            uint64_t remote;
            ASSERT_TRUE(recv_owner(ch, key, remote));
            uct_test_rkey rkey(e.component(), key);
            std::string buf(64, '\0');
            uct_iov_t iov = {&buf[0], 64, NULL, 0, 1};
            ASSERT_UCS_OK(uct_ep_get_zcopy(ep, &iov, 1, remote, rkey.rkey(), NULL));
            EXPECT_TRUE(uct_test_pattern_string(3, 64) == buf);
            ASSERT_TRUE(ch.barrier()); /* the owner is killed and reaped */
            ASSERT_TRUE(ch.barrier());
            EXPECT_EQ(UCS_ERR_CONNECTION_RESET,
                      uct_ep_get_zcopy(ep, &iov, 1, remote, rkey.rkey(), NULL));
        },
        [&](oob_channel &ch) {
            /* The memory belongs to a process of its own, which this one
             * kills once the peer has read from it. */
            int fds[2];
            ASSERT_EQ(0, pipe(fds));
            pid_t pid = fork();
            if (pid == 0) {
                close(fds[0]);
                uct_test_entity e(m_res);
                std::string dev = e.device_address(), ifa = e.iface_address();
                cma_owner owner(e, 64, 3);
                uint64_t addr = (uintptr_t)&owner.mem[0];
                uint32_t lens[3] = {(uint32_t)dev.size(), (uint32_t)ifa.size(),
                                    (uint32_t)owner.key.size()};
                std::string msg((const char*)lens, sizeof(lens));
                msg += dev + ifa + owner.key + std::string((const char*)&addr, 8);
                if (write(fds[1], msg.data(), msg.size()) != (ssize_t)msg.size()) {
                    _exit(1);
                }
                close(fds[1]);
                for (;;) {
                    pause();
                }
            }
            close(fds[1]);
            uint32_t lens[3];
            ASSERT_EQ((ssize_t)sizeof(lens), read(fds[0], lens, sizeof(lens)));
            std::string rest(lens[0] + lens[1] + lens[2] + 8, '\0');
            size_t got = 0;
            ssize_t n;
            while ((got < rest.size()) &&
                   ((n = read(fds[0], &rest[got], rest.size() - got)) > 0)) {
                got += n;
            }
            close(fds[0]);
            ASSERT_EQ(rest.size(), got);
            uct_peer_address peer;
            peer.dev_addr   = rest.substr(0, lens[0]);
            peer.iface_addr = rest.substr(lens[0], lens[1]);
            std::string key = rest.substr(lens[0] + lens[1], lens[2]), ignored;
            uint64_t addr;
            memcpy(&addr, &rest[lens[0] + lens[1] + lens[2]], 8);
            /* The owner's addresses stand for ours. */
            ASSERT_TRUE(ch.send_blob(peer.pack()));
            ASSERT_TRUE(ch.recv_blob(ignored));
            ASSERT_TRUE(ch.send_blob(key));
            ASSERT_TRUE(ch.send(&addr, sizeof(addr)));
            ASSERT_TRUE(ch.barrier());
            int status;
            kill(pid, SIGKILL);
            ASSERT_EQ(pid, waitpid(pid, &status, 0));
            ASSERT_TRUE(ch.barrier());
        });
}

TEST_F(test_uct_cma, malformed_addresses_and_keys_are_refused)
{
    uct_test_entity e(m_res);
    std::string dev = e.device_address(), ifa = e.iface_address();

    /* Our own addresses are reachable: we may read ourselves. */
    EXPECT_TRUE(uct_iface_is_reachable(e.iface(), (const uct_device_addr_t*)dev.data(),
                                       (const uct_iface_addr_t*)ifa.data()));
    EXPECT_FALSE(uct_iface_is_reachable(e.iface(), NULL,
                                        (const uct_iface_addr_t*)ifa.data()));

    for (size_t pos = 0; pos < dev.size(); ++pos) {
        std::string bad = dev;
        bad[pos] ^= 0x41;
        EXPECT_FALSE(uct_iface_is_reachable(e.iface(), (const uct_device_addr_t*)bad.data(),
                                            (const uct_iface_addr_t*)ifa.data()))
                << "device address byte " << pos;
    }
    /* Header, pid and probe address: each corrupted one is refused (the probe
     * then points at memory that is not the probe byte, or at none). */
    for (size_t pos : {size_t(0), size_t(4), size_t(5), size_t(8), size_t(16), size_t(17)}) {
        std::string bad = ifa;
        bad[pos] ^= 0x41;
        EXPECT_FALSE(uct_iface_is_reachable(e.iface(), (const uct_device_addr_t*)dev.data(),
                                            (const uct_iface_addr_t*)bad.data()))
                << "iface address byte " << pos;
    }

    cma_owner owner(e, 64, 4);
    uct_rkey_bundle_t bundle;
    for (size_t pos : {size_t(0), size_t(4), size_t(6)}) {
        std::string bad = owner.key;
        bad[pos] ^= 0x41;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_rkey_unpack(e.component(), bad.data(), &bundle))
                << "key byte " << pos;
    }
    std::string other_node = owner.key;
    other_node[8] ^= 0x41;
    EXPECT_EQ(UCS_ERR_UNREACHABLE, uct_rkey_unpack(e.component(), other_node.data(), &bundle));
    std::string no_pid = owner.key;
    memset(&no_pid[16], 0, 8);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_rkey_unpack(e.component(), no_pid.data(), &bundle));
}
