/**
 * @file test_ucp_cuda_am_stream.cc
 * Issue 25: active messages and stream bytes between two processes with
 * device memory of every allocation kind on either side. Sizes below and
 * above the rendezvous threshold (8K here) and over several fragments, an
 * unaligned offset, data checked byte by byte with guards. A rendezvous AM
 * is fetched with ucp_am_recv_data_nbx into the receiver's buffer and must
 * take the protocol the pair's exportability allows, as a tag message
 * does; a stream receive posted with WAITALL gets every byte in order. On
 * the model with CUDASIM_ASYNC=1; the same binary runs on the real driver.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cuda/cuda_test.h"
#include "cuda/ucp_cuda_peer.h"

#include <ucp/api/ucp.h>
#include <ucp/core/ucp_proto_stats.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

using cuda_test::allocation;
using cuda_test::mem_kind;
using ucx_test::oob_channel;

namespace
{

const size_t k_frag    = 64 * 1024;
const size_t k_alloc   = 4 * 1024 * 1024; /* VMM kinds need 2 MiB multiples */
const size_t k_offset  = 5;               /* unaligned */
const size_t k_guard   = 64;
const size_t k_thresh  = 8 * 1024;
const unsigned k_am_id = 11;
const size_t k_sizes[] = {100, k_thresh - 1, k_frag + 1, 5 * k_frag + 3};

struct kind_t {
    bool host;
    mem_kind kind;
};

const kind_t k_kinds[] = {
    {true, mem_kind::legacy},
    {false, mem_kind::legacy},
    {false, mem_kind::async_default_pool},
    {false, mem_kind::pool_posix_fd},
    {false, mem_kind::pool_no_handle},
    {false, mem_kind::vmm_posix_fd},
    {false, mem_kind::vmm_no_handle},
    {false, mem_kind::vmm_two_chunks},
};
const int k_num_kinds = sizeof(k_kinds) / sizeof(k_kinds[0]);

const char *name_of(const kind_t &k)
{
    return k.host ? "host" : cuda_test::kind_name(k.kind);
}

bool exportable(const kind_t &k)
{
    return !k.host &&
           ((k.kind == mem_kind::legacy) || (k.kind == mem_kind::pool_posix_fd) ||
            (k.kind == mem_kind::vmm_posix_fd) || (k.kind == mem_kind::vmm_two_chunks));
}

/* What a rendezvous between the pair must take (the tag rule). */
ucp_proto_stat_t expected_proto(const kind_t &s, const kind_t &r)
{
    if (s.host && r.host) {
        return UCP_PROTO_STAT_LAST; /* cma or messages: the host tests */
    } else if (exportable(s)) {
        return UCP_PROTO_STAT_RNDV_GET;
    } else if (exportable(r)) {
        return UCP_PROTO_STAT_RNDV_PUT;
    }
    return UCP_PROTO_STAT_RNDV_PIPE_CUDA;
}

/* Inlined even at -O0 (the debug and sanitizer trees): it runs per byte. */
__attribute__((always_inline)) inline unsigned char pattern(size_t i, unsigned seed)
{
    return (unsigned char)((i * 151u) ^ (i >> 10) ^ (seed * 29u));
}

void set_env()
{
    setenv("CUDASIM_ASYNC", "1", 1);
    setenv("CUDASIM_ASYNC_DELAY_US", "100", 1);
    setenv("UCX_RNDV_THRESH", "8K", 1);
    setenv("UCX_RNDV_FRAG_SIZE", "host:64K,cuda:64K", 1);
    setenv("UCX_RNDV_SAME_GPU_ONE_COPIER", "n", 1);
    setenv("UCX_RNDV_SAME_GPU_HOST_MAX", "0", 1);
}

struct buffer {
    void init(const kind_t &k)
    {
        kind = k;
        host.assign(k_alloc, 0);
        if (!k.host) {
            ASSERT_CU(dev.allocate(k.kind, k_alloc, 0));
        }
    }

    char *ptr()
    {
        return kind.host ? host.data() : (char *)(uintptr_t)dev.ptr;
    }

    void upload()
    {
        if (!kind.host) {
            ASSERT_CU(cuMemcpyHtoD(dev.ptr, host.data(), k_alloc));
        }
    }

    void download()
    {
        if (!kind.host) {
            ASSERT_CU(cuMemcpyDtoH(host.data(), dev.ptr, k_alloc));
        }
    }

    /* The receiver's fill: 0xee everywhere, also on the device. */
    void clear()
    {
        memset(host.data(), 0xee, k_alloc);
        upload();
        if (!kind.host) {
            ASSERT_CU(cuCtxSynchronize());
        }
    }

    /* The sender's fill for a message of @a size: the pattern of @a seed
     * from the offset on, up to the receiver's guard (beyond, earlier fills
     * or zeros, never the receiver's 0xee; a byte loop over all of k_alloc
     * per message dominated the suite under ASan). */
    void fill(unsigned seed, size_t offset, size_t size)
    {
        size_t end = offset + size + k_guard;

        end = (end < k_alloc) ? end : k_alloc;
        for (size_t i = 0; i < end; ++i) {
            host[i] = (i >= offset) ? pattern(i - offset, seed) : 0;
        }
        upload();
    }

    kind_t kind;
    allocation dev;
    std::vector<char> host;
};

/* [0, k_offset) and the guard untouched; [k_offset, +size) the pattern
 * of @a seed starting at @a first. */
void check_received(buffer &b, size_t size, unsigned seed, size_t first,
                    const std::string &what)
{
    b.download();
    for (size_t i = 0; i < k_offset + size + k_guard; ++i) {
        unsigned char want = ((i < k_offset) || (i >= k_offset + size))
                                 ? 0xee
                                 : pattern(first + i - k_offset, seed);
        if ((unsigned char)b.host[i] != want) {
            ADD_FAILURE() << what << ": byte " << i << " is 0x" << std::hex
                          << (unsigned)(unsigned char)b.host[i] << ", want 0x"
                          << (unsigned)want;
            return;
        }
    }
}

class peer : public cuda_test::ucp_peer
{
  public:
    uint64_t count(ucp_proto_stat_t proto)
    {
        uint64_t counts[UCP_PROTO_STAT_LAST];
        ucp_worker_proto_stats(m_worker, counts);
        return counts[proto];
    }

    uint64_t rndv_count()
    {
        uint64_t counts[UCP_PROTO_STAT_LAST];
        ucp_worker_proto_stats(m_worker, counts);
        return ucp_proto_stat_rndv_total(counts);
    }

    /* Progress until @a done or @a seconds pass. */
    bool progress_until(const bool &done, double seconds = 60.0)
    {
        auto deadline =
            std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
        while (!done) {
            ucp_worker_progress(m_worker);
            if (std::chrono::steady_clock::now() > deadline) {
                return false;
            }
        }
        return true;
    }
};

/* What the AM handler saw of the last message. */
struct am_arrival {
    bool seen;
    bool rndv;
    unsigned seed;
    size_t length;
    void *data;
    buffer *target;
    bool copy_ok;
};

/* Eager data is the library's host bytes: copied into the target (a device
 * buffer through the driver) inside the handler; a rendezvous descriptor is
 * kept for ucp_am_recv_data_nbx after the handler. */
ucs_status_t am_handler(void *arg, const void *header, size_t header_length, void *data,
                        size_t length, const ucp_am_recv_param_t *param)
{
    am_arrival *a = static_cast<am_arrival *>(arg);

    a->seen   = true;
    a->length = length;
    a->seed   = 0;
    if (header_length == sizeof(a->seed)) {
        memcpy(&a->seed, header, sizeof(a->seed));
    }
    a->rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
    if (a->rndv) {
        a->data = data;
        return UCS_INPROGRESS;
    }
    char *dst = a->target->ptr() + k_offset;
    if (a->target->kind.host) {
        memcpy(dst, data, length);
        a->copy_ok = true;
    } else {
        a->copy_ok =
            cuMemcpyHtoD((CUdeviceptr)(uintptr_t)dst, data, length) == CUDA_SUCCESS;
    }
    return UCS_OK;
}

class test_ucp_cuda_am_stream : public ::testing::TestWithParam<std::tuple<int, int>>
{
  protected:
    void SetUp() override
    {
        if (cuda_test::device_count() < 1) {
            GTEST_SKIP() << "no CUDA device";
        }
    }

    const kind_t &skind() const
    {
        return k_kinds[std::get<0>(GetParam())];
    }
    const kind_t &rkind() const
    {
        return k_kinds[std::get<1>(GetParam())];
    }
    std::string pair() const
    {
        return std::string(name_of(skind())) + " -> " + name_of(rkind());
    }
};

TEST_P(test_ucp_cuda_am_stream, am_eager_and_rndv)
{
    const kind_t s = skind(), r = rkind();
    const std::string what = pair();

    auto receiver = [&](oob_channel &oob) {
        set_env();
        cuda_test::init_device(0);
        peer p;
        p.m_features = UCP_FEATURE_AM;
        p.init(oob);
        buffer b;
        b.init(r);
        am_arrival arrival = {};
        arrival.target     = &b;

        ucp_am_handler_param_t hp;
        memset(&hp, 0, sizeof(hp));
        hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                        UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
        hp.id    = k_am_id;
        hp.flags = UCP_AM_FLAG_WHOLE_MSG;
        hp.cb    = am_handler;
        hp.arg   = &arrival;
        ASSERT_EQ(UCS_OK, ucp_worker_set_am_recv_handler(p.m_worker, &hp));
        ASSERT_TRUE(oob.barrier());

        unsigned seed = 0, rndv = 0;
        for (size_t size : k_sizes) {
            ++seed;
            b.clear();
            arrival.seen = arrival.copy_ok = false;
            ASSERT_TRUE(oob.barrier()); /* the sender may go */
            ASSERT_TRUE(p.progress_until(arrival.seen)) << what << ", " << size;
            EXPECT_EQ(seed, arrival.seed);
            ASSERT_EQ(size, arrival.length);
            EXPECT_EQ(size >= k_thresh, arrival.rndv) << what << ", " << size;
            if (arrival.rndv) {
                ucp_request_param_t rp;
                memset(&rp, 0, sizeof(rp));
                size_t got          = 0;
                rp.op_attr_mask     = UCP_OP_ATTR_FIELD_RECV_INFO;
                rp.recv_info.length = &got;
                ASSERT_EQ(UCS_OK,
                          p.wait(ucp_am_recv_data_nbx(p.m_worker, arrival.data,
                                                      b.ptr() + k_offset, size, &rp)))
                    << what << ", " << size;
                ++rndv;
            } else {
                EXPECT_TRUE(arrival.copy_ok) << what;
            }
            check_received(b, size, seed, 0, "AM " + what + ", " + std::to_string(size));
            ASSERT_TRUE(oob.barrier()); /* done with this size */
        }
        ucp_proto_stat_t want = expected_proto(s, r);
        if (want != UCP_PROTO_STAT_LAST) {
            EXPECT_EQ(rndv, p.count(want)) << what << " took another protocol";
        } else {
            EXPECT_EQ(rndv, p.rndv_count()) << what;
        }
        p.cleanup(oob);
    };
    auto sender = [&](oob_channel &oob) {
        set_env();
        cuda_test::init_device(0);
        peer p;
        p.m_features = UCP_FEATURE_AM;
        p.init(oob);
        buffer b;
        b.init(s);
        ASSERT_TRUE(oob.barrier());
        unsigned seed = 0;
        for (size_t size : k_sizes) {
            ++seed;
            b.fill(seed, k_offset, size); /* and send at once */
            ASSERT_TRUE(oob.barrier());
            ucp_request_param_t sp;
            memset(&sp, 0, sizeof(sp));
            ASSERT_EQ(UCS_OK, p.wait(ucp_am_send_nbx(p.m_ep, k_am_id, &seed, sizeof(seed),
                                                     b.ptr() + k_offset, size, &sp)))
                << what << ", " << size;
            ASSERT_TRUE(oob.barrier());
        }
        p.cleanup(oob);
    };
    cuda_test::cuda_two_processes(receiver, sender, 120.0);
}

/* Every size as one stream of bytes: the receiver posts one WAITALL receive
 * per message, of a different length than the sends where it can (the
 * first half, then the rest), so the boundaries do not match. */
TEST_P(test_ucp_cuda_am_stream, stream_waitall)
{
    const kind_t s = skind(), r = rkind();
    const std::string what = pair();

    auto receiver = [&](oob_channel &oob) {
        set_env();
        cuda_test::init_device(0);
        peer p;
        p.m_features = UCP_FEATURE_STREAM;
        p.init(oob);
        buffer b;
        b.init(r);
        unsigned seed = 0;
        uint64_t rndv = 0;
        for (size_t size : k_sizes) {
            ++seed;
            b.clear();
            size_t half = size / 2;
            ucp_request_param_t rp;
            memset(&rp, 0, sizeof(rp));
            size_t got1 = 0, got2 = 0;
            rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            rp.flags        = UCP_STREAM_RECV_FLAG_WAITALL;
            ucs_status_ptr_t r1 =
                ucp_stream_recv_nbx(p.m_ep, b.ptr() + k_offset, half, &got1, &rp);
            ASSERT_TRUE(oob.barrier()); /* the sender may go */
            ASSERT_EQ(UCS_OK, p.wait(r1)) << what << ", " << size;
            ucs_status_ptr_t r2 = ucp_stream_recv_nbx(p.m_ep, b.ptr() + k_offset + half,
                                                      size - half, &got2, &rp);
            ASSERT_EQ(UCS_OK, p.wait(r2)) << what << ", " << size;
            if (!UCS_PTR_IS_PTR(r1)) {
                EXPECT_EQ(half, got1);
            }
            if (!UCS_PTR_IS_PTR(r2)) {
                EXPECT_EQ(size - half, got2);
            }
            check_received(b, size, seed, 0,
                           "stream " + what + ", " + std::to_string(size));
            rndv += (size >= k_thresh);
            ASSERT_TRUE(oob.barrier());
        }
        EXPECT_EQ(rndv, p.rndv_count()) << what << ": stream rendezvous";
        p.cleanup(oob);
    };
    auto sender = [&](oob_channel &oob) {
        set_env();
        cuda_test::init_device(0);
        peer p;
        p.m_features = UCP_FEATURE_STREAM;
        p.init(oob);
        buffer b;
        b.init(s);
        unsigned seed = 0;
        for (size_t size : k_sizes) {
            ++seed;
            b.fill(seed, k_offset, size);
            ASSERT_TRUE(oob.barrier());
            ucp_request_param_t sp;
            memset(&sp, 0, sizeof(sp));
            ASSERT_EQ(UCS_OK,
                      p.wait(ucp_stream_send_nbx(p.m_ep, b.ptr() + k_offset, size, &sp)))
                << what << ", " << size;
            ASSERT_TRUE(oob.barrier());
        }
        p.cleanup(oob);
    };
    cuda_test::cuda_two_processes(receiver, sender, 120.0);
}

std::string pair_name(const ::testing::TestParamInfo<std::tuple<int, int>> &info)
{
    return std::string(name_of(k_kinds[std::get<0>(info.param)])) + "_to_" +
           name_of(k_kinds[std::get<1>(info.param)]);
}

/* Every kind as sender to a legacy receiver, legacy to every kind, and each
 * kind to itself: each kind on each side, every rule of the pair table. */
std::vector<std::tuple<int, int>> am_stream_pairs()
{
    std::vector<std::tuple<int, int>> v;
    for (int k = 0; k < k_num_kinds; ++k) {
        v.emplace_back(k, 1);
        if (k != 1) {
            v.emplace_back(1, k);
        }
        if (k != 1) {
            v.emplace_back(k, k);
        }
    }
    v.emplace_back(4, 6); /* pool without handles -> vmm without: pipeline */
    return v;
}

INSTANTIATE_TEST_SUITE_P(pairs, test_ucp_cuda_am_stream,
                         ::testing::ValuesIn(am_stream_pairs()), pair_name);

} // namespace
