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

/* ucp_memh_pack() gives what ucp_rkey_pack() does: a key a peer unpacks and
 * reaches the memory through; the export flag is refused by name. Two
 * unpacks of one buffer compare equal, keys of two regions do not, in a
 * consistent order. */
TEST(test_ucp_mem, memh_pack_and_rkey_compare)
{
    ucp_entity e("self");
    std::vector<char> buf1(4096, 'a'), buf2(4096, 'b');
    ucp_mem_h m1, m2;
    ASSERT_EQ(UCS_OK, map(e, buf1.data(), buf1.size(), 0, &m1));
    ASSERT_EQ(UCS_OK, map(e, buf2.data(), buf2.size(), 0, &m2));

    ucp_memh_pack_params_t pp;
    memset(&pp, 0, sizeof(pp));
    pp.field_mask = UCP_MEMH_PACK_PARAM_FIELD_FLAGS;
    pp.flags      = UCP_MEMH_PACK_FLAG_EXPORT;
    void *packed1 = NULL, *packed2 = NULL;
    size_t size1 = 0, size2 = 0;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, ucp_memh_pack(m1, &pp, &packed1, &size1));
    pp.flags = 0;
    ASSERT_EQ(UCS_OK, ucp_memh_pack(m1, &pp, &packed1, &size1));
    ASSERT_EQ(UCS_OK, ucp_memh_pack(m2, NULL, &packed2, &size2));
    EXPECT_GT(size1, 0u);

    ucp_ep_h ep = e.connect(e.address());
    ucp_rkey_h k1a, k1b, k2;
    ASSERT_EQ(UCS_OK, ucp_ep_rkey_unpack(ep, packed1, &k1a));
    ASSERT_EQ(UCS_OK, ucp_ep_rkey_unpack(ep, packed1, &k1b));
    ASSERT_EQ(UCS_OK, ucp_ep_rkey_unpack(ep, packed2, &k2));
    ucp_memh_buffer_release(packed1, NULL);
    ucp_memh_buffer_release_params_t rp = {0};
    ucp_memh_buffer_release(packed2, &rp);

    void *ptr;
    ASSERT_EQ(UCS_OK, ucp_rkey_ptr(k1a, (uintptr_t)buf1.data() + 7, &ptr));
    EXPECT_EQ('a', *(char*)ptr);

    ucp_rkey_compare_params_t cp = {0};
    int r = 99, r12 = 0, r21 = 0;
    EXPECT_EQ(UCS_OK, ucp_rkey_compare(e.worker(), k1a, k1b, &cp, &r));
    EXPECT_EQ(0, r);
    EXPECT_EQ(UCS_OK, ucp_rkey_compare(e.worker(), k1a, k2, &cp, &r12));
    EXPECT_EQ(UCS_OK, ucp_rkey_compare(e.worker(), k2, k1b, &cp, &r21));
    EXPECT_NE(0, r12);
    EXPECT_EQ(r12 < 0, r21 > 0) << "not a consistent order";
    cp.field_mask = 1;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucp_rkey_compare(e.worker(), k1a, k2, &cp, &r));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucp_rkey_compare(e.worker(), k1a, k2, NULL, &r));

    ucp_rkey_destroy(k1a);
    ucp_rkey_destroy(k1b);
    ucp_rkey_destroy(k2);
    e.close(ep);
    EXPECT_EQ(UCS_OK, ucp_mem_unmap(e.context(), m1));
    EXPECT_EQ(UCS_OK, ucp_mem_unmap(e.context(), m2));
}

namespace {

struct dt_query_ctx {
    size_t per_elem;
    int    finished;
};

void *dtq_start(void *context, const void *, size_t count)
{
    dt_query_ctx *c = (dt_query_ctx*)context;
    return new std::pair<dt_query_ctx*, size_t>(c, count * c->per_elem);
}

size_t dtq_size(void *state)
{
    return ((std::pair<dt_query_ctx*, size_t>*)state)->second;
}

void dtq_finish(void *state)
{
    auto *s = (std::pair<dt_query_ctx*, size_t>*)state;
    ++s->first->finished;
    delete s;
}

} // namespace

/* The packed size of every datatype class, and what each one needs. */
TEST(test_ucp_mem, dt_query_packed_size_of_each_class)
{
    ucp_datatype_attr_t a;
    memset(&a, 0, sizeof(a));
    a.field_mask = UCP_DATATYPE_ATTR_FIELD_PACKED_SIZE;
    ASSERT_EQ(UCS_OK, ucp_dt_query(ucp_dt_make_contig(12), &a));
    EXPECT_EQ(12u, a.packed_size) << "count defaults to 1";
    a.field_mask |= UCP_DATATYPE_ATTR_FIELD_COUNT;
    a.count = 5;
    ASSERT_EQ(UCS_OK, ucp_dt_query(ucp_dt_make_contig(12), &a));
    EXPECT_EQ(60u, a.packed_size);

    char x[100];
    ucp_dt_iov_t iov[3] = {{x, 10}, {x + 20, 0}, {x + 50, 33}};
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucp_dt_query(ucp_dt_make_iov(), &a))
        << "IOV without its entries";
    a.field_mask |= UCP_DATATYPE_ATTR_FIELD_BUFFER;
    a.buffer = iov;
    a.count  = 3;
    ASSERT_EQ(UCS_OK, ucp_dt_query(ucp_dt_make_iov(), &a));
    EXPECT_EQ(43u, a.packed_size);

    dt_query_ctx ctx = {7, 0};
    ucp_generic_dt_ops_t ops;
    memset(&ops, 0, sizeof(ops));
    ops.start_pack  = dtq_start;
    ops.packed_size = dtq_size;
    ops.finish      = dtq_finish;
    ucp_datatype_t gen;
    ASSERT_EQ(UCS_OK, ucp_dt_create_generic(&ops, &ctx, &gen));
    a.buffer = x;
    a.count  = 4;
    ASSERT_EQ(UCS_OK, ucp_dt_query(gen, &a));
    EXPECT_EQ(28u, a.packed_size);
    EXPECT_EQ(1, ctx.finished) << "the state is finished";
    ucp_dt_destroy(gen);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucp_dt_query(gen, NULL));
}

/* The old ucp_ep_modify_nb(): user data and error handler change, nothing
 * else does. */
TEST(test_ucp_mem, ep_modify_nb_changes_user_data_only)
{
    ucp_entity e("self");
    ucp_ep_h ep = e.connect(e.address());
    ucp_ep_params_t p;
    memset(&p, 0, sizeof(p));
    int marker;
    p.field_mask = UCP_EP_PARAM_FIELD_USER_DATA;
    p.user_data  = &marker;
    EXPECT_EQ(NULL, ucp_ep_modify_nb(ep, &p));
    ucp_ep_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCP_EP_ATTR_FIELD_USER_DATA;
    ASSERT_EQ(UCS_OK, ucp_ep_query(ep, &attr));
    EXPECT_EQ(&marker, attr.user_data);
    p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ucs_status_ptr_t r = ucp_ep_modify_nb(ep, &p);
    ASSERT_TRUE(UCS_PTR_IS_ERR(r));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, UCS_PTR_STATUS(r));
    e.close(ep);
}
