/*
 * Flush semantics under load (issue 30): Open MPI's one-sided pattern is
 * thousands of puts, gets and atomics outstanding towards one peer, in both
 * directions at once, then a flush. A flush returns UCS_OK, a request, or an
 * error pointer, never "in progress" as a status, and its request completes
 * with UCS_OK once every operation before it has completed at the target.
 * Each flavour (ucp_ep_flush_nb, _nbx, ucp_worker_flush_nb, _nbx) after 0,
 * 1, 10^3 and 2 x 10^4 puts (and 10^5 for ucp_ep_flush_nb, Open MPI's),
 * with a get and an atomic add behind every 10th put, over each transport
 * and the default set; both processes are origin and target, and each
 * checks the bytes the other put, what its gets read and the sum of the
 * other's adds.
 * Before the fix a flush whose transport was out of resources when the last
 * answer arrived completed with UCS_ERR_NO_RESOURCE (IMB-RMA Bidir_put
 * aborted in MPI_Win_flush).
 */
#include "ucp_test.h"

#include <poll.h>
#include <unistd.h>

#include <vector>

using namespace ucx_test;

namespace {

const uint64_t k_features = UCP_FEATURE_RMA | UCP_FEATURE_AMO64;

enum class flush_kind { ep_nb, ep_nbx, worker_nb, worker_nbx };

const char *flush_name(flush_kind f)
{
    switch (f) {
    case flush_kind::ep_nb:      return "ucp_ep_flush_nb";
    case flush_kind::ep_nbx:     return "ucp_ep_flush_nbx";
    case flush_kind::worker_nb:  return "ucp_worker_flush_nb";
    case flush_kind::worker_nbx: return "ucp_worker_flush_nbx";
    }
    return "?";
}

void flush_cb(void *request, ucs_status_t status)
{
    (void)request;
    (void)status;
}

void flush_cbx(void *request, ucs_status_t status, void *user_data)
{
    (void)request;
    *(ucs_status_t*)user_data = status;
}

/* Start a flush of @a f; the return value must never be "in progress". */
ucs_status_ptr_t start_flush(ucp_entity &e, ucp_ep_h ep, flush_kind f,
                             ucs_status_t *cb_status)
{
    ucp_request_param_t p;
    ucs_status_ptr_t ret = NULL;

    memset(&p, 0, sizeof(p));
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.send      = flush_cbx;
    p.user_data    = cb_status;
    switch (f) {
    case flush_kind::ep_nb:      ret = ucp_ep_flush_nb(ep, 0, flush_cb); break;
    case flush_kind::ep_nbx:     ret = ucp_ep_flush_nbx(ep, &p); break;
    case flush_kind::worker_nb:  ret = ucp_worker_flush_nb(e.worker(), 0, flush_cb); break;
    case flush_kind::worker_nbx: ret = ucp_worker_flush_nbx(e.worker(), &p); break;
    }
    EXPECT_NE((void*)UCS_STATUS_PTR(UCS_INPROGRESS), (void*)ret) << flush_name(f);
    EXPECT_FALSE(UCS_PTR_IS_ERR(ret))
            << flush_name(f) << ": " << ucs_status_string(UCS_PTR_STATUS(ret));
    return ret;
}

/* Progress until the peer says it is done too (it may still need our
 * answers to its operations). */
void serve_until_peer_done(ucp_entity &e, oob_channel &ch)
{
    struct pollfd pfd = {ch.fd(), POLLIN, 0};
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    char done = 1;

    ASSERT_TRUE(ch.send(&done, 1));
    while (poll(&pfd, 1, 0) == 0) {
        ucp_worker_progress(e.worker());
        ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    }
    ASSERT_TRUE(ch.recv(&done, 1));
}

/* One side of a round: @a ops puts of @a len bytes (each to its own slot
 * of the peer's region), one get and one atomic add behind them, then the
 * flush; returns once both sides are done. */
void round(ucp_entity &e, ucp_ep_h ep, ucp_rkey_h rkey, uint64_t remote,
           uint64_t remote_counter, std::vector<uint8_t> &src, size_t ops,
           size_t len, flush_kind f, unsigned seed, oob_channel &ch)
{
    /* every 10th put is followed by a get of its first 8 bytes and an
     * atomic add to the peer's counter: gets and atomics outstanding too */
    std::vector<uint64_t> gets(ops / 10 + 1, 0);
    std::vector<uint8_t> back(len ? len : 1);
    ucs_status_t cb_status = UCS_INPROGRESS, st;
    ucs_status_ptr_t amo   = NULL;
    uint64_t fetched = 0, one = 1;

    for (size_t i = 0; i < ops * len; ++i) {
        src[i] = ucp_pattern(seed, i);
    }
    ASSERT_TRUE(ch.barrier());
    for (size_t i = 0; i < ops; ++i) {
        st = ucp_put_nbi(ep, src.data() + i * len, len, remote + i * len, rkey);
        ASSERT_TRUE((st == UCS_OK) || (st == UCS_INPROGRESS))
                << "put " << i << ": " << ucs_status_string(st);
        if ((i % 10) == 9) {
            st = ucp_get_nbi(ep, &gets[i / 10], 8, remote + i * len, rkey);
            ASSERT_TRUE((st == UCS_OK) || (st == UCS_INPROGRESS)) << ucs_status_string(st);
            st = ucp_atomic_post(ep, UCP_ATOMIC_POST_OP_ADD, 1, sizeof(uint64_t),
                                 remote_counter, rkey);
            ASSERT_EQ(UCS_OK, st) << ucs_status_string(st);
        }
    }
    if (ops > 0) {
        st = ucp_get_nbi(ep, back.data(), len, remote, rkey);
        ASSERT_TRUE((st == UCS_OK) || (st == UCS_INPROGRESS)) << ucs_status_string(st);
        ucp_request_param_t p;
        memset(&p, 0, sizeof(p));
        p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        p.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
        p.reply_buffer = &fetched;
        /* not waited for before the flush: the flush must find every answer
         * still due (waiting here would collect them all first) */
        amo = ucp_atomic_op_nbx(ep, UCP_ATOMIC_OP_ADD, &one, 1, remote + ops * len,
                                rkey, &p);
        ASSERT_FALSE(UCS_PTR_IS_ERR(amo)) << ucs_status_string(UCS_PTR_STATUS(amo));
    }
    ucs_status_ptr_t req = start_flush(e, ep, f, &cb_status);
    EXPECT_EQ(UCS_OK, e.wait(req)) << flush_name(f) << " after " << ops << " x "
                                   << len << " B";
    if (amo != NULL) {
        /* completed by the flush: only its request remains to release */
        EXPECT_EQ(UCS_OK, ucp_request_check_status(amo));
        EXPECT_EQ(UCS_OK, e.wait(amo));
    }
    if ((req != NULL) && ((f == flush_kind::ep_nbx) || (f == flush_kind::worker_nbx))) {
        EXPECT_EQ(UCS_OK, cb_status) << flush_name(f);
    }
    if (ops > 0) {
        /* the gets came after this side's own puts to the same bytes */
        for (size_t i = 0; i < len; ++i) {
            ASSERT_EQ(ucp_pattern(seed, i), back[i]) << flush_name(f) << " byte " << i;
        }
        for (size_t i = 9; (len >= 8) && (i < ops); i += 10) {
            uint64_t want;
            for (size_t b = 0; b < 8; ++b) {
                ((uint8_t*)&want)[b] = ucp_pattern(seed, i * len + b);
            }
            ASSERT_EQ(want, gets[i / 10]) << flush_name(f) << " get after put " << i;
        }
    }
    serve_until_peer_done(e, ch);
}

void side(const std::string &tls, oob_channel &ch)
{
    static const size_t counts[] = {0, 1, 1000, 20000, 100000};
    static const size_t lens[]   = {8, 1024};
    /* the largest round's puts (20000 x 1 KiB; 10^5 x 8 B is less), then
     * the slot of the atomic adds */
    const size_t region_len = 20000u * 1024 + 128;
    ucp_entity e(tls, UCS_THREAD_MODE_SINGLE, k_features);
    std::vector<uint8_t> src(region_len);
    std::string remote, packed;
    uint64_t base, remote_base;
    ucp_mem_map_params_t mp;
    ucp_mem_attr_t attr;
    ucp_mem_h memh;
    void *rbuf;
    size_t rsize;

    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mp.length     = region_len;
    mp.flags      = UCP_MEM_MAP_ALLOCATE;
    ASSERT_EQ(UCS_OK, ucp_mem_map(e.context(), &mp, &memh));
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    ASSERT_EQ(UCS_OK, ucp_mem_query(memh, &attr));
    base = (uintptr_t)attr.address;
    ASSERT_EQ(UCS_OK, ucp_rkey_pack(e.context(), memh, &rbuf, &rsize));
    ASSERT_TRUE(ch.send_blob(e.address()));
    ASSERT_TRUE(ch.send_blob(std::string((const char*)rbuf, rsize)));
    ASSERT_TRUE(ch.send(&base, sizeof(base)));
    ucp_rkey_buffer_release(rbuf);
    ASSERT_TRUE(ch.recv_blob(remote));
    ASSERT_TRUE(ch.recv_blob(packed));
    ASSERT_TRUE(ch.recv(&remote_base, sizeof(remote_base)));
    ucp_ep_h ep = e.connect(remote);
    ucp_rkey_h rkey = NULL;
    ASSERT_EQ(UCS_OK, ucp_ep_rkey_unpack(ep, packed.data(), &rkey));

    unsigned seed = 0;
    uint64_t adds = 0;
    memset((void*)(uintptr_t)base, 0, region_len);
    ASSERT_TRUE(ch.barrier()); /* zeroed before the peer's first add */
    for (flush_kind f : {flush_kind::ep_nb, flush_kind::ep_nbx, flush_kind::worker_nb,
                         flush_kind::worker_nbx}) {
        for (size_t ops : counts) {
            for (size_t len : lens) {
                SCOPED_TRACE(std::string(flush_name(f)) + ", " + std::to_string(ops) +
                             " x " + std::to_string(len) + " B");
                ++seed;
                if (((ops * len) > (region_len - 128)) ||
                    ((ops > 20000) && (f != flush_kind::ep_nb))) {
                    continue; /* 10^5 operations: of 8 bytes, Open MPI's flush */
                }
                ASSERT_NO_FATAL_FAILURE(round(e, ep, rkey, remote_base,
                                              remote_base + region_len - 64, src, ops,
                                              len, f, seed, ch));
                adds += ops / 10;
                /* the peer's puts, all of them, are in our region now */
                const uint8_t *mine = (const uint8_t*)(uintptr_t)base;
                for (size_t i = 0; i < ops * len; ++i) {
                    ASSERT_EQ(ucp_pattern(seed, i), mine[i]) << "byte " << i;
                }
                /* and every one of its atomic adds */
                ASSERT_EQ(adds, *(volatile uint64_t*)(uintptr_t)(base + region_len - 64));
                ASSERT_TRUE(ch.barrier());
            }
        }
    }
    ucp_rkey_destroy(rkey);
    e.close(ep);
    serve_until_peer_done(e, ch);
    EXPECT_EQ(UCS_OK, ucp_mem_unmap(e.context(), memh));
}

} // namespace

TEST(test_ucp_rma_flush, many_ops_both_ways_then_each_flush_flavour_completes_ok)
{
    for (const char *tls : {"", "posix", "tcp"}) {
        SCOPED_TRACE(*tls ? tls : "default transports");
        run_two_processes([&](oob_channel &ch) { side(tls, ch); },
                          [&](oob_channel &ch) { side(tls, ch); }, 300);
    }
}
