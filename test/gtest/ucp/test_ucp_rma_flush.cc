/*
 * Flush semantics under load (issue 30): Open MPI's one-sided pattern is
 * thousands of puts, gets and atomics outstanding towards one peer, in both
 * directions at once, then a flush. A flush returns UCS_OK, a request, or an
 * error pointer, never "in progress" as a status, and its request completes
 * with UCS_OK once every operation before it has completed at the target.
 * Each flavour (ucp_ep_flush_nb, _nbx, ucp_worker_flush_nb, _nbx) after 0, 1
 * and many operations, over each transport and the default set; both
 * processes are origin and target, and each checks the bytes the other put.
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
           std::vector<uint8_t> &src, size_t ops, size_t len, flush_kind f,
           unsigned seed, oob_channel &ch)
{
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
        /* the get came after this side's own puts to the same bytes */
        for (size_t i = 0; i < len; ++i) {
            ASSERT_EQ(ucp_pattern(seed, i), back[i]) << flush_name(f) << " byte " << i;
        }
    }
    serve_until_peer_done(e, ch);
}

void side(const std::string &tls, oob_channel &ch)
{
    static const size_t counts[] = {0, 1, 1000, 20000};
    static const size_t lens[]   = {8, 1024};
    const size_t max_ops = 20000, max_len = 1024;
    const size_t region_len = max_ops * max_len + 64;
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
    for (flush_kind f : {flush_kind::ep_nb, flush_kind::ep_nbx, flush_kind::worker_nb,
                         flush_kind::worker_nbx}) {
        for (size_t ops : counts) {
            for (size_t len : lens) {
                SCOPED_TRACE(std::string(flush_name(f)) + ", " + std::to_string(ops) +
                             " x " + std::to_string(len) + " B");
                ++seed;
                ASSERT_NO_FATAL_FAILURE(round(e, ep, rkey, remote_base, src, ops, len,
                                              f, seed, ch));
                /* the peer's puts, all of them, are in our region now */
                const uint8_t *mine = (const uint8_t*)(uintptr_t)base;
                for (size_t i = 0; i < ops * len; ++i) {
                    ASSERT_EQ(ucp_pattern(seed, i), mine[i]) << "byte " << i;
                }
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
