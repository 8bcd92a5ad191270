/*
 * ucp_mem_map and remote keys: registration and allocation, queries and
 * advice, and a packed key used through ucp_rkey_ptr() in this process
 * (self) and in another process (posix shared memory).
 */
#include "ucp_test.h"

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
