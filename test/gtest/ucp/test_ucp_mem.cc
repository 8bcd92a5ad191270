/*
 * ucp_mem_map and remote keys: registration and allocation, queries and
 * advice, and a packed key used through ucp_rkey_ptr() in this process
 * (self) and in another process (posix shared memory).
 */
#include "ucp_test.h"

#include <sys/mman.h>

#include <vector>

using namespace ucx_test;

namespace {

ucs_status_t map(ucp_entity &e, void *addr, size_t len, unsigned flags,
                 ucp_mem_h *memh)
{
    ucp_mem_map_params_t p;
    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                   UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    p.address = addr;
    p.length  = len;
    p.flags   = flags;
    return ucp_mem_map(e.context(), &p, memh);
}

} // namespace

TEST(test_ucp_mem, map_without_length_or_address_is_invalid_param)
{
    ucp_entity e;
    ucp_mem_map_params_t p;
    memset(&p, 0, sizeof(p));
    ucp_mem_h memh;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucp_mem_map(e.context(), &p, &memh));
    p.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    p.length     = 100;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucp_mem_map(e.context(), &p, &memh));
}

TEST(test_ucp_mem, zero_length_gives_a_valid_handle)
{
    ucp_entity e;
    ucp_mem_h memh;
    ASSERT_EQ(UCS_OK, map(e, NULL, 0, 0, &memh));
    ucp_mem_attr_t attr;
    attr.field_mask = UCP_MEM_ATTR_FIELD_LENGTH;
    ASSERT_EQ(UCS_OK, ucp_mem_query(memh, &attr));
    EXPECT_EQ(0u, attr.length);
    EXPECT_EQ(UCS_OK, ucp_mem_unmap(e.context(), memh));
}

TEST(test_ucp_mem, allocated_region_reports_itself_and_checks_advice_range)
{
    ucp_entity e;
    ucp_mem_h memh;
    ASSERT_EQ(UCS_OK, map(e, NULL, 100000, UCP_MEM_MAP_ALLOCATE, &memh));
    ucp_mem_attr_t attr;
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH |
                      UCP_MEM_ATTR_FIELD_MEM_TYPE;
    ASSERT_EQ(UCS_OK, ucp_mem_query(memh, &attr));
    ASSERT_TRUE(attr.address != NULL);
    EXPECT_EQ(100000u, attr.length);
    EXPECT_EQ(UCS_MEMORY_TYPE_HOST, attr.mem_type);
    memset(attr.address, 0xab, attr.length); /* it is writable memory */

    ucp_mem_advise_params_t adv;
    adv.field_mask = UCP_MEM_ADVISE_PARAM_FIELD_ADDRESS |
                     UCP_MEM_ADVISE_PARAM_FIELD_LENGTH |
                     UCP_MEM_ADVISE_PARAM_FIELD_ADVICE;
    adv.address = attr.address;
    adv.length  = 4096;
    adv.advice  = UCP_MADV_WILLNEED;
    EXPECT_EQ(UCS_OK, ucp_mem_advise(e.context(), memh, &adv));
    adv.length = 200000;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucp_mem_advise(e.context(), memh, &adv));
    EXPECT_EQ(UCS_OK, ucp_mem_unmap(e.context(), memh));
}

TEST(test_ucp_mem, rkey_ptr_over_self_reaches_the_registered_buffer)
{
    ucp_entity e("self");
    std::vector<char> buf(4096, 'x');
    ucp_mem_h memh;
    ASSERT_EQ(UCS_OK, map(e, buf.data(), buf.size(), 0, &memh));
    void *packed;
    size_t size;
    ASSERT_EQ(UCS_OK, ucp_rkey_pack(e.context(), memh, &packed, &size));
    ucp_ep_h ep = e.connect(e.address());
    ucp_rkey_h rkey;
    ASSERT_EQ(UCS_OK, ucp_ep_rkey_unpack(ep, packed, &rkey));
    ucp_rkey_buffer_release(packed);
    void *ptr;
    ASSERT_EQ(UCS_OK, ucp_rkey_ptr(rkey, (uintptr_t)buf.data() + 100, &ptr));
    EXPECT_EQ('x', *(char*)ptr);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ucp_rkey_ptr(rkey, (uintptr_t)buf.data() + buf.size(), &ptr));
    ucp_rkey_destroy(rkey);
    e.close(ep);
    EXPECT_EQ(UCS_OK, ucp_mem_unmap(e.context(), memh));
}

/* tcp cannot map the memory: the key unpacks (RMA then goes over active
 * messages, test_ucp_rma.cc) but gives no pointer. */
TEST(test_ucp_mem, key_without_a_usable_transport_is_unreachable)
{
    ucp_entity e("tcp");
    std::vector<char> buf(4096);
    ucp_mem_h memh;
    ASSERT_EQ(UCS_OK, map(e, buf.data(), buf.size(), 0, &memh));
    void *packed;
    size_t size;
    ASSERT_EQ(UCS_OK, ucp_rkey_pack(e.context(), memh, &packed, &size));
    ucp_ep_h ep = e.connect(e.address());
    ucp_rkey_h rkey;
    ASSERT_EQ(UCS_OK, ucp_ep_rkey_unpack(ep, packed, &rkey));
    void *ptr;
    EXPECT_EQ(UCS_ERR_UNREACHABLE, ucp_rkey_ptr(rkey, (uintptr_t)buf.data(), &ptr));
    ucp_rkey_destroy(rkey);
    ucp_rkey_buffer_release(packed);
    e.close(ep);
    EXPECT_EQ(UCS_OK, ucp_mem_unmap(e.context(), memh));
}

TEST(test_ucp_mem, allocated_posix_region_is_readable_by_the_peer_process)
{
    const size_t len = 1 << 20;
    run_two_processes(
        [&](oob_channel &ch) {
            ucp_entity e("posix");
            ucp_mem_h memh;
            ASSERT_EQ(UCS_OK, map(e, NULL, len, UCP_MEM_MAP_ALLOCATE, &memh));
            ucp_mem_attr_t attr;
            attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
            ASSERT_EQ(UCS_OK, ucp_mem_query(memh, &attr));
            for (size_t i = 0; i < len; ++i) {
                ((uint8_t*)attr.address)[i] = ucp_pattern(5, i);
            }
            void *packed;
            size_t size;
            ASSERT_EQ(UCS_OK, ucp_rkey_pack(e.context(), memh, &packed, &size));
            uint64_t addr = (uintptr_t)attr.address;
            ASSERT_TRUE(ch.send_blob(e.address()));
            ASSERT_TRUE(ch.send_blob(std::string((char*)packed, size)));
            ASSERT_TRUE(ch.send(&addr, sizeof(addr)));
            ucp_rkey_buffer_release(packed);
            ASSERT_TRUE(ch.barrier()); /* the peer has read it */
            EXPECT_EQ(UCS_OK, ucp_mem_unmap(e.context(), memh));
        },
        [&](oob_channel &ch) {
            ucp_entity e("posix");
            std::string remote, packed;
            uint64_t addr;
            ASSERT_TRUE(ch.recv_blob(remote));
            ASSERT_TRUE(ch.recv_blob(packed));
            ASSERT_TRUE(ch.recv(&addr, sizeof(addr)));
            ucp_ep_h ep = e.connect(remote);
            ucp_rkey_h rkey;
            ASSERT_EQ(UCS_OK, ucp_ep_rkey_unpack(ep, packed.data(), &rkey));
            void *ptr;
            ASSERT_EQ(UCS_OK, ucp_rkey_ptr(rkey, addr, &ptr));
            bool same = true;
            for (size_t i = 0; i < len; ++i) {
                same &= (((uint8_t*)ptr)[i] == ucp_pattern(5, i));
            }
            EXPECT_TRUE(same);
            ucp_rkey_destroy(rkey);
            e.close(ep, true);
            ASSERT_TRUE(ch.barrier());
        },
        60);
}

/*
 * UCP_MEM_MAP_ALLOCATE | UCP_MEM_MAP_FIXED of host memory (issue 30: Open
 * MPI's symmetric heap, sshmem ucx, asks for its heap at an address it
 * chose): a free, page-aligned range is mapped exactly there, registered
 * (its key packs) and given back by ucp_mem_unmap; a taken range, an
 * unaligned address and an impossible length are refused with an error.
 */
namespace {

ucs_status_t map_fixed(ucp_context_h ctx, void *address, size_t length,
                       ucp_mem_h *memh)
{
    ucp_mem_map_params_t p;

    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                   UCP_MEM_MAP_PARAM_FIELD_FLAGS | UCP_MEM_MAP_PARAM_FIELD_PROT;
    p.address    = address;
    p.length     = length;
    p.flags      = UCP_MEM_MAP_ALLOCATE | UCP_MEM_MAP_FIXED | UCP_MEM_MAP_NONBLOCK;
    p.prot       = UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_LOCAL_WRITE |
                   UCP_MEM_MAP_PROT_REMOTE_READ | UCP_MEM_MAP_PROT_REMOTE_WRITE;
    return ucp_mem_map(ctx, &p, memh);
}

/* An address range nothing is mapped at now. */
void *free_range(size_t length)
{
    void *p = mmap(NULL, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    EXPECT_NE(MAP_FAILED, p);
    munmap(p, length);
    return p;
}

} // namespace

TEST(test_ucp_mem, fixed_address_allocation_of_host_memory)
{
    ucp_entity e("", UCS_THREAD_MODE_SINGLE, UCP_FEATURE_RMA);
    const size_t len = (1u << 20) + 100; /* not a page multiple */
    ucp_mem_attr_t attr;
    ucp_mem_h memh;
    void *addr = free_range(4u << 20);

    ASSERT_EQ(UCS_OK, map_fixed(e.context(), addr, len, &memh));
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
    ASSERT_EQ(UCS_OK, ucp_mem_query(memh, &attr));
    EXPECT_EQ(addr, attr.address);
    EXPECT_EQ(len, attr.length);
    memset(addr, 0x5a, len); /* ours to write */
    void *rkey;
    size_t rkey_size;
    EXPECT_EQ(UCS_OK, ucp_rkey_pack(e.context(), memh, &rkey, &rkey_size));
    ucp_rkey_buffer_release(rkey);

    /* the range is taken now: a second fixed allocation there fails */
    ucp_mem_h again = NULL;
    EXPECT_NE(UCS_OK, map_fixed(e.context(), addr, 4096, &again));
    EXPECT_EQ(UCS_OK, ucp_mem_unmap(e.context(), memh));

    /* given back: the same range can be mapped again */
    ASSERT_EQ(UCS_OK, map_fixed(e.context(), addr, len, &memh));
    EXPECT_EQ(UCS_OK, ucp_mem_unmap(e.context(), memh));

    /* a mapping of someone else's there is never replaced */
    void *other = mmap(addr, 4096, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    ASSERT_EQ(addr, other);
    memset(other, 0x11, 4096);
    EXPECT_NE(UCS_OK, map_fixed(e.context(), addr, len, &again));
    EXPECT_EQ(0x11, ((unsigned char*)other)[100]);
    munmap(other, 4096);

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              map_fixed(e.context(), (char*)addr + 100, 4096, &again)); /* unaligned */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, map_fixed(e.context(), NULL, 4096, &again));
    EXPECT_NE(UCS_OK, map_fixed(e.context(), addr, (size_t)1 << 62, &again)); /* too large */
}
