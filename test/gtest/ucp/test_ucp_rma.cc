/*
 * RMA and atomics (src/ucp/rma): put/get of many sizes with data checks,
 * requests outside the region or with a corrupt key refused by the target,
 * every atomic operation in 32 and 64 bits, ordering of a put before a get,
 * and a flush that returns only once the data is in the target's memory.
 * In one process over self, and across two processes over posix and tcp
 * (the target progresses its worker until the origin is done); a target
 * killed while a flush waits for its answers fails the flush (keepalive).
 */
#include "ucp_test.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <vector>

using namespace ucx_test;

namespace {

const uint64_t rma_features = UCP_FEATURE_TAG | UCP_FEATURE_RMA |
                              UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;

/* A registered region and its packed key. */
struct rma_region {
    ucp_entity  &e;
    ucp_mem_h   memh;
    void        *base;
    std::string packed;

    rma_region(ucp_entity &ent, size_t len) : e(ent)
    {
        ucp_mem_map_params_t p;
        memset(&p, 0, sizeof(p));
        p.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                       UCP_MEM_MAP_PARAM_FIELD_FLAGS;
        p.length     = len;
        p.flags      = UCP_MEM_MAP_ALLOCATE;
        EXPECT_EQ(UCS_OK, ucp_mem_map(e.context(), &p, &memh));
        ucp_mem_attr_t attr;
        attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
        EXPECT_EQ(UCS_OK, ucp_mem_query(memh, &attr));
        base = attr.address;
        void *buf;
        size_t size;
        EXPECT_EQ(UCS_OK, ucp_rkey_pack(e.context(), memh, &buf, &size));
        packed.assign((char*)buf, size);
        ucp_rkey_buffer_release(buf);
    }

    ~rma_region() { EXPECT_EQ(UCS_OK, ucp_mem_unmap(e.context(), memh)); }
};

ucp_rkey_h unpack(ucp_ep_h ep, const std::string &packed)
{
    ucp_rkey_h rkey = NULL;
    EXPECT_EQ(UCS_OK, ucp_ep_rkey_unpack(ep, packed.data(), &rkey));
    return rkey;
}

ucp_request_param_t no_param()
{
    ucp_request_param_t p;
    memset(&p, 0, sizeof(p));
    return p;
}

ucs_status_t put(ucp_entity &e, ucp_ep_h ep, const void *buf, size_t len,
                 uint64_t raddr, ucp_rkey_h rkey)
{
    ucp_request_param_t p = no_param();
    return e.wait(ucp_put_nbx(ep, buf, len, raddr, rkey, &p));
}

ucs_status_t get(ucp_entity &e, ucp_ep_h ep, void *buf, size_t len,
                 uint64_t raddr, ucp_rkey_h rkey)
{
    ucp_request_param_t p = no_param();
    return e.wait(ucp_get_nbx(ep, buf, len, raddr, rkey, &p));
}

/* Atomic of @a size bytes; returns the old value through @a result. */
ucs_status_t amo(ucp_entity &e, ucp_ep_h ep, ucp_atomic_op_t op, size_t size,
                 uint64_t operand, uint64_t *result, uint64_t raddr,
                 ucp_rkey_h rkey)
{
    uint32_t op32 = (uint32_t)operand, res32 = (uint32_t)*result;
    ucp_request_param_t p = no_param();
    p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    p.datatype     = ucp_dt_make_contig(size);
    p.reply_buffer = (size == 4) ? (void*)&res32 : (void*)result;
    ucs_status_t status = e.wait(ucp_atomic_op_nbx(
            ep, op, (size == 4) ? (void*)&op32 : (void*)&operand, 1, raddr,
            rkey, &p));
    if (size == 4) {
        *result = res32;
    }
    return status;
}

const size_t sizes[] = {0, 1, 7, 8, 63, 64, 1000, 4095, 4096, 8191, 8192,
                        65537, 300000, (4u << 20) + 3};

/* Put then get every size at an odd offset, checking both directions. */
void check_put_get(ucp_entity &e, ucp_ep_h ep, ucp_rkey_h rkey, uint64_t base,
                   size_t region_len, uint8_t *local_view)
{
    int seed = 0;
    for (size_t len : sizes) {
        size_t off = (len + 5 < region_len) ? 5 : 0;
        ASSERT_LE(off + len, region_len);
        std::vector<uint8_t> src(len + 1), dst(len + 1, 0);
        for (size_t i = 0; i < len; ++i) {
            src[i] = ucp_pattern(++seed, i);
        }
        ASSERT_EQ(UCS_OK, put(e, ep, src.data(), len, base + off, rkey)) << len;
        if (local_view != NULL) {
            EXPECT_EQ(0, memcmp(local_view + off, src.data(), len)) << len;
        }
        ASSERT_EQ(UCS_OK, get(e, ep, dst.data(), len, base + off, rkey)) << len;
        EXPECT_EQ(0, memcmp(dst.data(), src.data(), len)) << len;
    }
}

/* Every atomic op in both widths, with the expected old and new values. */
void check_atomics(ucp_entity &e, ucp_ep_h ep, ucp_rkey_h rkey, uint64_t addr,
                   volatile uint64_t *local_view)
{
    for (size_t size : {4, 8}) {
        uint64_t mask = (size == 4) ? 0xffffffffull : ~0ull;
        uint64_t value = 0x1234567890abcdefull & mask, old = 0, expect;
        struct {
            ucp_atomic_op_t op;
            uint64_t        operand;
        } steps[] = {{UCP_ATOMIC_OP_SWAP, value}, {UCP_ATOMIC_OP_ADD, 0x1111},
                     {UCP_ATOMIC_OP_AND, 0xff00ff00ff00ff00ull & mask},
                     {UCP_ATOMIC_OP_OR, 0x0f0f0f0f0f0f0f0full & mask},
                     {UCP_ATOMIC_OP_XOR, 0x5555555555555555ull & mask}};
        uint64_t cur = 0;
        ASSERT_EQ(UCS_OK, put(e, ep, &cur, 8, addr, rkey));
        for (auto &s : steps) {
            ASSERT_EQ(UCS_OK, amo(e, ep, s.op, size, s.operand, &old, addr, rkey));
            EXPECT_EQ(cur, old) << "op " << s.op << " size " << size;
            switch (s.op) {
            case UCP_ATOMIC_OP_SWAP: cur = s.operand; break;
            case UCP_ATOMIC_OP_ADD:  cur = (cur + s.operand) & mask; break;
            case UCP_ATOMIC_OP_AND:  cur &= s.operand; break;
            case UCP_ATOMIC_OP_OR:   cur |= s.operand; break;
            default:                 cur ^= s.operand; break;
            }
        }
        /* CSWAP: a wrong comparand leaves the value, the right one swaps */
        old = 42;
        ASSERT_EQ(UCS_OK, amo(e, ep, UCP_ATOMIC_OP_CSWAP, size, cur + 1, &old,
                              addr, rkey));
        EXPECT_EQ(cur, old);
        old = 42;
        ASSERT_EQ(UCS_OK, amo(e, ep, UCP_ATOMIC_OP_CSWAP, size, cur, &old, addr,
                              rkey));
        EXPECT_EQ(cur, old);
        cur = 42;
        /* the old API: post and fetch */
        EXPECT_EQ(UCS_OK, ucp_atomic_post(ep, UCP_ATOMIC_POST_OP_ADD, 8, size,
                                          addr, rkey));
        cur += 8;
        uint64_t fetched = 0;
        uint32_t fetched32 = 0;
        EXPECT_EQ(UCS_OK, e.wait(ucp_atomic_fetch_nb(
                ep, UCP_ATOMIC_FETCH_OP_FXOR, 3, (size == 4) ? (void*)&fetched32 :
                                                               (void*)&fetched,
                size, addr, rkey, NULL)));
        EXPECT_EQ(cur, (size == 4) ? fetched32 : fetched);
        cur ^= 3;
        EXPECT_EQ(UCS_OK, e.wait(ucp_ep_flush_nb(ep, 0, NULL)));
        if (local_view != NULL) {
            EXPECT_EQ(cur, *local_view & mask);
        }
        expect = 0;
        ASSERT_EQ(UCS_OK, get(e, ep, &expect, size, addr, rkey));
        EXPECT_EQ(cur, expect);
    }
}

/* Progress @a e until the peer writes a byte on @a ch. */
void serve_until_done(ucp_entity &e, oob_channel &ch)
{
    struct pollfd pfd = {ch.fd(), POLLIN, 0};
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (poll(&pfd, 1, 0) == 0) {
        ucp_worker_progress(e.worker());
        ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    }
    char done;
    ASSERT_TRUE(ch.recv(&done, 1));
}

} // namespace

TEST(test_ucp_rma, put_get_every_size_over_self)
{
    ucp_entity e("self", UCS_THREAD_MODE_SINGLE, rma_features);
    const size_t len = (4u << 20) + 64;
    rma_region region(e, len);
    ucp_ep_h ep = e.connect(e.address());
    ucp_rkey_h rkey = unpack(ep, region.packed);
    check_put_get(e, ep, rkey, (uintptr_t)region.base, len, (uint8_t*)region.base);
    ucp_rkey_destroy(rkey);
    e.close(ep);
}

TEST(test_ucp_rma, out_of_range_and_corrupt_keys_are_refused)
{
    ucp_entity e("self", UCS_THREAD_MODE_SINGLE, rma_features);
    rma_region region(e, 4096);
    rma_region other(e, 4096);
    memset(region.base, 0x5a, 4096);
    memset(other.base, 0x5a, 4096);
    ucp_ep_h ep = e.connect(e.address());
    ucp_rkey_h rkey = unpack(ep, region.packed);
    uint64_t base = (uintptr_t)region.base;
    std::vector<uint8_t> buf(8192, 0xee);

    /* outside the key's region: refused before anything is sent */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, put(e, ep, buf.data(), 4097, base, rkey));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, put(e, ep, buf.data(), 1, base - 1, rkey));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, get(e, ep, buf.data(), 16, base + 4090, rkey));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, put(e, ep, buf.data(), 8, ~0ull - 3, rkey));

    /* a key whose region identity was corrupted: the target refuses it */
    std::string bad = region.packed;
    bad[34] ^= 0x40; /* rma_id: bytes 32..39 of the header (ucp_mem.c) */
    ucp_rkey_h bad_rkey = unpack(ep, bad);
    EXPECT_NE(UCS_OK, put(e, ep, buf.data(), 100, base, bad_rkey));
    EXPECT_NE(UCS_OK, get(e, ep, buf.data(), 100, base, bad_rkey));
    uint64_t old = 0;
    EXPECT_NE(UCS_OK, amo(e, ep, UCP_ATOMIC_OP_ADD, 8, 1, &old, base, bad_rkey));
    ucp_rkey_destroy(bad_rkey);

    /* a key that claims a larger region than the target registered */
    std::string big = region.packed;
    uint64_t biglen = 8192;
    memcpy(&big[24], &biglen, sizeof(biglen)); /* length: bytes 24..31 */
    ucp_rkey_h big_rkey = unpack(ep, big);
    EXPECT_NE(UCS_OK, put(e, ep, buf.data(), 8192, base, big_rkey));
    ucp_rkey_destroy(big_rkey);

    /* nothing was written anywhere */
    for (size_t i = 0; i < 4096; ++i) {
        ASSERT_EQ(0x5a, ((uint8_t*)region.base)[i]) << i;
        ASSERT_EQ(0x5a, ((uint8_t*)other.base)[i]) << i;
    }
    /* and the ep still works */
    EXPECT_EQ(UCS_OK, put(e, ep, buf.data(), 16, base, rkey));
    EXPECT_EQ(0xee, ((uint8_t*)region.base)[15]);
    ucp_rkey_destroy(rkey);
    e.close(ep);
}

TEST(test_ucp_rma, unmapped_region_is_refused)
{
    ucp_entity e("self", UCS_THREAD_MODE_SINGLE, rma_features);
    ucp_ep_h ep = e.connect(e.address());
    std::string packed;
    uint64_t base;
    {
        rma_region region(e, 4096);
        packed = region.packed;
        base   = (uintptr_t)region.base;
    }
    ucp_rkey_h rkey = unpack(ep, packed);
    char c = 1;
    EXPECT_NE(UCS_OK, put(e, ep, &c, 1, base, rkey));
    ucp_rkey_destroy(rkey);
    e.close(ep);
}

TEST(test_ucp_rma, atomics_every_op_and_width_over_self)
{
    ucp_entity e("self", UCS_THREAD_MODE_SINGLE, rma_features);
    rma_region region(e, 64);
    ucp_ep_h ep = e.connect(e.address());
    ucp_rkey_h rkey = unpack(ep, region.packed);
    check_atomics(e, ep, rkey, (uintptr_t)region.base + 8,
                  (volatile uint64_t*)((char*)region.base + 8));
    /* misaligned and bad sizes are refused */
    uint64_t old = 0;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, amo(e, ep, UCP_ATOMIC_OP_ADD, 8, 1, &old,
                                         (uintptr_t)region.base + 4, rkey));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucp_atomic_post(ep, UCP_ATOMIC_POST_OP_ADD,
                                                     1, 2, (uintptr_t)region.base,
                                                     rkey));
    ucp_rkey_destroy(rkey);
    e.close(ep);
}

TEST(test_ucp_rma, nbi_ops_are_ordered_and_flush_means_remote_completion)
{
    const size_t len = (4u << 20) + 64;
    for (const char *tls : {"posix", "tcp"}) {
        SCOPED_TRACE(tls);
        run_two_processes(
            [&](oob_channel &ch) { /* target */
                ucp_entity e(tls, UCS_THREAD_MODE_SINGLE, rma_features);
                rma_region region(e, len);
                memset(region.base, 0, len);
                uint64_t base = (uintptr_t)region.base;
                ASSERT_TRUE(ch.send_blob(e.address()));
                ASSERT_TRUE(ch.send_blob(region.packed));
                ASSERT_TRUE(ch.send(&base, sizeof(base)));
                serve_until_done(e, ch);
                /* the origin's flush completed before it wrote: the last
                 * put is already in our memory */
                for (size_t i = 0; i < len; ++i) {
                    ASSERT_EQ(ucp_pattern(99, i), ((uint8_t*)region.base)[i]) << i;
                }
                ASSERT_TRUE(ch.barrier());
                serve_until_done(e, ch); /* the origin closes its ep */
            },
            [&](oob_channel &ch) { /* origin */
                ucp_entity e(tls, UCS_THREAD_MODE_SINGLE, rma_features);
                std::string remote, packed;
                uint64_t base;
                ASSERT_TRUE(ch.recv_blob(remote));
                ASSERT_TRUE(ch.recv_blob(packed));
                ASSERT_TRUE(ch.recv(&base, sizeof(base)));
                ucp_ep_h ep = e.connect(remote);
                ucp_rkey_h rkey = unpack(ep, packed);
                check_put_get(e, ep, rkey, base, len, NULL);
                check_atomics(e, ep, rkey, base + 64, NULL);

                /* put_nbi, get_nbi after it (no fence needed: one ep is
                 * ordered), fence, another put: the get sees the first */
                std::vector<uint8_t> a(len), b(len), back(len, 0);
                for (size_t i = 0; i < len; ++i) {
                    a[i] = ucp_pattern(98, i);
                    b[i] = ucp_pattern(99, i);
                }
                ucs_status_t st = ucp_put_nbi(ep, a.data(), len, base, rkey);
                EXPECT_TRUE((st == UCS_OK) || (st == UCS_INPROGRESS));
                st = ucp_get_nbi(ep, back.data(), len, base, rkey);
                EXPECT_TRUE((st == UCS_OK) || (st == UCS_INPROGRESS));
                EXPECT_EQ(UCS_OK, ucp_worker_fence(e.worker()));
                st = ucp_put_nbi(ep, b.data(), len, base, rkey);
                EXPECT_TRUE((st == UCS_OK) || (st == UCS_INPROGRESS));
                ucp_request_param_t p = no_param();
                EXPECT_EQ(UCS_OK, e.wait(ucp_worker_flush_nbx(e.worker(), &p)));
                EXPECT_TRUE(back == a);
                char done = 1;
                ASSERT_TRUE(ch.send(&done, 1));
                ASSERT_TRUE(ch.barrier());
                ucp_rkey_destroy(rkey);
                e.close(ep);
                ASSERT_TRUE(ch.send(&done, 1));
            },
            120);
    }
}

TEST(test_ucp_rma, rkey_ptr_over_tcp_is_unreachable_but_rma_works)
{
    ucp_entity e("tcp", UCS_THREAD_MODE_SINGLE, rma_features);
    rma_region region(e, 4096);
    ucp_ep_h ep = e.connect(e.address());
    ucp_rkey_h rkey = unpack(ep, region.packed);
    void *ptr;
    EXPECT_EQ(UCS_ERR_UNREACHABLE,
              ucp_rkey_ptr(rkey, (uintptr_t)region.base, &ptr));
    uint64_t v = 0x0102030405060708ull;
    EXPECT_EQ(UCS_OK, put(e, ep, &v, sizeof(v), (uintptr_t)region.base, rkey));
    EXPECT_EQ(v, *(uint64_t*)region.base);
    ucp_rkey_destroy(rkey);
    e.close(ep);
}

/* The target never answers (it does not progress) and is then killed: the
 * keepalive of error mode PEER must find out and fail the parked flush,
 * instead of leaving it waiting forever. */
TEST(test_ucp_rma, flush_waiting_on_a_killed_target_fails_in_bounded_time)
{
    for (const char *tls : {"posix", "tcp"}) {
        SCOPED_TRACE(tls);
        /* The child is killed on purpose: only the parent's checks count. */
        (void)run_two_processes_raw(
            [&](oob_channel &ch) { /* origin */
                ucp_entity e(tls, UCS_THREAD_MODE_SINGLE, rma_features);
                std::string remote, packed;
                uint64_t base;
                pid_t target;
                ASSERT_TRUE(ch.recv_blob(remote));
                ASSERT_TRUE(ch.recv_blob(packed));
                ASSERT_TRUE(ch.recv(&base, sizeof(base)));
                ASSERT_TRUE(ch.recv(&target, sizeof(target)));
                int errors  = 0;
                ucp_ep_h ep = e.connect(remote, true,
                                        [](void *arg, ucp_ep_h, ucs_status_t) {
                                            ++*(int*)arg;
                                        },
                                        &errors);
                ucp_rkey_h rkey = unpack(ep, packed);
                uint64_t v      = 7;
                ucs_status_t st = ucp_put_nbi(ep, &v, sizeof(v), base, rkey);
                EXPECT_TRUE((st == UCS_OK) || (st == UCS_INPROGRESS));
                ucp_request_param_t p = no_param();
                ucs_status_ptr_t flush = ucp_ep_flush_nbx(ep, &p);
                ASSERT_FALSE(UCS_PTR_IS_ERR(flush));
                ASSERT_TRUE(flush != NULL);
                /* alive but silent: the flush keeps waiting */
                auto until = std::chrono::steady_clock::now() +
                             std::chrono::milliseconds(300);
                while (std::chrono::steady_clock::now() < until) {
                    ucp_worker_progress(e.worker());
                }
                EXPECT_EQ(UCS_INPROGRESS, ucp_request_check_status(flush));
                kill(target, SIGKILL);
                auto start = std::chrono::steady_clock::now();
                ucs_status_t fst = e.wait(flush, 30);
                double secs = std::chrono::duration<double>(
                                      std::chrono::steady_clock::now() - start)
                                      .count();
                EXPECT_NE(UCS_OK, fst);
                EXPECT_NE(UCS_ERR_TIMED_OUT, fst);
                EXPECT_LT(secs, 10.0);
                /* later operations fail at once */
                EXPECT_NE(UCS_OK, put(e, ep, &v, sizeof(v), base, rkey));
                auto deadline = std::chrono::steady_clock::now() +
                                std::chrono::seconds(10);
                while ((errors == 0) &&
                       (std::chrono::steady_clock::now() < deadline)) {
                    ucp_worker_progress(e.worker());
                }
                EXPECT_EQ(1, errors);
                ucp_rkey_destroy(rkey);
                e.close(ep, true);
            },
            [&](oob_channel &ch) { /* target: registers, then goes silent */
                ucp_entity e(tls, UCS_THREAD_MODE_SINGLE, rma_features);
                rma_region region(e, 4096);
                uint64_t base = (uintptr_t)region.base;
                pid_t self    = getpid();
                ch.send_blob(e.address());
                ch.send_blob(region.packed);
                ch.send(&base, sizeof(base));
                ch.send(&self, sizeof(self));
                for (;;) {
                    pause(); /* killed by the origin */
                }
            },
            60);
    }
}
