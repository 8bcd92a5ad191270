/**
 * @file test_ucp_cuda_rndv.cc
 * Issue 8: rendezvous of tag messages between two processes for every pair
 * of {host, legacy, async default pool, pool-fd, pool-none, vmm-fd,
 * vmm-none, vmm multi-chunk} buffers, sizes around the threshold and the
 * fragment size (64K here), an unaligned offset, data checked byte by byte
 * with guards; the protocol the receiver took is checked against what the
 * exportability of the pair allows. Also each UCX_RNDV_SCHEME, host
 * fragments, a pool of one fragment under concurrent messages, sync send,
 * truncation and cancel. On the model with CUDASIM_ASYNC=1, so completions
 * really arrive later; the same binary runs on the real driver.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda/cuda_test.h"
#include "cuda/ucp_cuda_peer.h"

#include <ucp/api/ucp.h>
#include <ucp/core/ucp_proto_stats.h>

#include <sys/uio.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

using cuda_test::allocation;
using cuda_test::mem_kind;
using ucx_test::oob_channel;

namespace {

const size_t k_frag   = 64 * 1024;
const size_t k_alloc  = 4 * 1024 * 1024; /* VMM kinds need 2 MiB multiples */
const size_t k_offset = 3;                /* unaligned */
const size_t k_guard  = 64;
const size_t k_sizes[] = {8 * 1024 - 1, k_frag - 1, k_frag, k_frag + 1,
                          5 * k_frag + 3};

/* "host" is not a driver allocation: a plain vector. */
struct kind_t {
    bool     host;
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

const char *name_of(const kind_t &k)
{
    return k.host ? "host" : cuda_test::kind_name(k.kind);
}

bool exportable(const kind_t &k)
{
    return !k.host && ((k.kind == mem_kind::legacy) ||
                       (k.kind == mem_kind::pool_posix_fd) ||
                       (k.kind == mem_kind::vmm_posix_fd) ||
                       (k.kind == mem_kind::vmm_two_chunks));
}

/* Inlined even at -O0 (the debug and sanitizer trees): it runs per byte. */
__attribute__((always_inline)) inline unsigned char pattern(size_t i, unsigned seed)
{
    return (unsigned char)((i * 131u) ^ (i >> 9) ^ (seed * 17u));
}

/* Settings of both processes: set before CUDA or UCX read them. */
void set_env(const std::vector<std::pair<std::string, std::string>> &extra)
{
    setenv("CUDASIM_ASYNC", "1", 1);
    setenv("CUDASIM_ASYNC_DELAY_US", "100", 1);
    setenv("UCX_RNDV_THRESH", "8K", 1);
    setenv("UCX_RNDV_FRAG_SIZE", "host:64K,cuda:64K", 1);
    /* The pair matrix checks the exportability rule; the one-copier rule
     * (which turns half of the same-GPU gets into puts) has its own tests. */
    setenv("UCX_RNDV_SAME_GPU_ONE_COPIER", "n", 1);
    /* Likewise host staging of non-exportable pairs on one GPU. */
    setenv("UCX_RNDV_SAME_GPU_HOST_MAX", "0", 1);
    for (const auto &kv : extra) {
        setenv(kv.first.c_str(), kv.second.c_str(), 1);
    }
}

/* A buffer of one kind and its host mirror. */
struct buffer {
    void init(const kind_t &k, int device = 0)
    {
        kind = k;
        host.assign(k_alloc, 0);
        if (!k.host) {
            ASSERT_CU(dev.allocate(k.kind, k_alloc, device));
        }
    }

    char *ptr() { return kind.host ? host.data() : (char*)(uintptr_t)dev.ptr; }

    /* Blocking copy from pageable memory, no synchronize: the data must be
     * what a send issued right after reads (the stale-data scenario). */
    void upload() {
        if (!kind.host) {
            ASSERT_CU(cuMemcpyHtoD(dev.ptr, host.data(), k_alloc));
        }
    }

    /* The sender's fill for a message of @a size at k_offset: zeros before
     * it, the pattern of @a seed from it on, up to the receiver's guard
     * (beyond, earlier fills or zeros: never the receiver's 0xee, so an
     * overrun still shows). Not all of k_alloc: under ASan a byte loop
     * over 4 MiB per message was 40 % of the suite's time. */
    void fill(size_t size, unsigned seed)
    {
        size_t end = k_offset + size + k_guard;

        end = (end < k_alloc) ? end : k_alloc;
        for (size_t i = 0; i < end; ++i) {
            host[i] = (i >= k_offset) ? pattern(i - k_offset, seed) : 0;
        }
        upload();
    }

    void download() {
        if (!kind.host) {
            ASSERT_CU(cuMemcpyDtoH(host.data(), dev.ptr, k_alloc));
        }
    }

    kind_t             kind;
    allocation         dev;
    std::vector<char>  host;
};

class peer : public cuda_test::ucp_peer {
public:
    ucs_status_ptr_t send(void *buf, size_t len, ucp_tag_t tag, bool sync = false)
    {
        ucp_request_param_t param;
        memset(&param, 0, sizeof(param));
        return sync ? ucp_tag_send_sync_nbx(m_ep, buf, len, tag, &param) :
                      ucp_tag_send_nbx(m_ep, buf, len, tag, &param);
    }

    ucs_status_ptr_t recv(void *buf, size_t len, ucp_tag_t tag)
    {
        ucp_request_param_t param;
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        return ucp_tag_recv_nbx(m_worker, buf, len, tag, ~0ull, &param);
    }

    uint64_t count(ucp_proto_stat_t proto)
    {
        uint64_t counts[UCP_PROTO_STAT_LAST];
        ucp_worker_proto_stats(m_worker, counts);
        return counts[proto];
    }

    uint64_t pipe_pieces() { return ucp_worker_rndv_pipe_pieces(m_worker); }

    uint64_t stage_overlaps()
    {
        return ucp_worker_rndv_stage_overlaps(m_worker);
    }
};

/* Check [0, offset) and the guard untouched, the message intact. */
void check_received(buffer &b, size_t size, unsigned seed, const std::string &what)
{
    b.download();
    for (size_t i = 0; i < k_offset + size + k_guard; ++i) {
        unsigned char want = ((i < k_offset) || (i >= k_offset + size)) ?
                             0xee : pattern(i - k_offset, seed);
        if ((unsigned char)b.host[i] != want) {
            ADD_FAILURE() << what << ": byte " << i << " is 0x" << std::hex
                          << (unsigned)(unsigned char)b.host[i] << ", want 0x"
                          << (unsigned)want;
            return;
        }
    }
}

/* Send every size from @a skind to @a rkind; the receiver checks the data
 * and that each message of @a rndv_from bytes or more took @a want (LAST:
 * do not check). */
void run_sizes(const kind_t &skind, const kind_t &rkind, ucp_proto_stat_t want,
               const std::vector<std::pair<std::string, std::string>> &env,
               const std::vector<size_t> &sizes, unsigned concurrent = 1,
               size_t rndv_from = 8 * 1024, int sender_dev = 0, long sender_pieces = -1,
               bool pieces_at_most = false, int overlaps = -1)
{
    /* overlaps: -1 unchecked; 0 no background staging copy on a side whose
     * buffer is device memory; 1 some on each such side. */
    auto check_overlaps = [&](peer &p, const kind_t &k, const char *side) {
        if ((overlaps < 0) || k.host) {
            return;
        }
        if (overlaps == 0) {
            EXPECT_EQ(0u, p.stage_overlaps()) << side;
        } else {
            EXPECT_LT(0u, p.stage_overlaps()) << side << ": staging copies "
                                              << "ran in turn with the socket";
        }
    };

    auto receiver = [&](oob_channel &oob) {
        set_env(env);
        cuda_test::init_device(0);
        /* UCP first: UCX_CUDA_IPC_EXPORTABLE_DEFAULT_POOL acts when the md
         * opens, on allocations made after it. */
        peer p;
        p.init(oob);
        std::vector<buffer> bufs(concurrent);
        for (auto &b : bufs) {
            b.init(rkind);
        }
        unsigned seed = 0, rndv = 0;
        for (size_t size : sizes) {
            std::vector<ucs_status_ptr_t> reqs;
            for (auto &b : bufs) {
                memset(b.host.data(), 0xee, k_alloc);
                b.upload();
                if (!rkind.host) {
                    ASSERT_CU(cuCtxSynchronize());
                }
                reqs.push_back(p.recv(b.ptr() + k_offset, size, ++seed));
            }
            for (unsigned i = 0; i < concurrent; ++i) {
                ucp_tag_recv_info_t info;
                ASSERT_EQ(UCS_OK, p.wait(reqs[i], &info)) << size;
                EXPECT_EQ(size, info.length);
                check_received(bufs[i], size, seed - concurrent + 1 + i,
                               std::string(name_of(skind)) + " -> " +
                               name_of(rkind) + ", " + std::to_string(size));
                rndv += (size >= rndv_from);
            }
            ASSERT_TRUE(oob.barrier());
        }
        if (want != UCP_PROTO_STAT_LAST) {
            EXPECT_EQ(rndv, p.count(want)) << name_of(skind) << " -> "
                                           << name_of(rkind) << " took "
                                           << "another protocol";
        }
        if ((want == UCP_PROTO_STAT_RNDV_HOST_GET) && (rndv > 0)) {
            /* What ucx_perftest prints as the transport: the lane that read
             * the host buffer (cma, or tcp's own connection when UCX_TLS has
             * tcp and no cma), not the device lane the ep also has. */
            std::string tls = "cma";
            for (const auto &kv : env) {
                if ((kv.first == "UCX_TLS") &&
                    (kv.second.find("cma") == std::string::npos) &&
                    (kv.second.find("tcp") != std::string::npos)) {
                    tls = "tcp";
                }
            }
            EXPECT_EQ(tls, ucp_proto_stat_transport(p.m_ep, want));
        }
        check_overlaps(p, rkind, "receiver");
        p.cleanup(oob);
    };
    auto sender = [&](oob_channel &oob) {
        set_env(env);
        cuda_test::init_device(sender_dev);
        peer p;
        p.init(oob);
        std::vector<buffer> bufs(concurrent);
        for (auto &b : bufs) {
            b.init(skind, sender_dev);
        }
        unsigned seed = 0;
        for (size_t size : sizes) {
            std::vector<ucs_status_ptr_t> reqs;
            for (auto &b : bufs) {
                ++seed;
                b.fill(size, seed); /* and send at once */
                reqs.push_back(p.send(b.ptr() + k_offset, size, seed));
            }
            for (auto r : reqs) {
                ASSERT_EQ(UCS_OK, p.wait(r)) << size;
            }
            ASSERT_TRUE(oob.barrier());
        }
        if (pieces_at_most) {
            EXPECT_LE(p.pipe_pieces(), (uint64_t)sender_pieces)
                    << "copies into device fragments";
        } else if (sender_pieces >= 0) {
            EXPECT_EQ((uint64_t)sender_pieces, p.pipe_pieces())
                    << "copies into device fragments";
        }
        check_overlaps(p, skind, "sender");
        p.cleanup(oob);
    };
    cuda_test::cuda_two_processes(receiver, sender, 120.0);
}

/* Host -> host rendezvous never touches the GPU: the receiver reads the
 * sender's buffer where the kernel lets one process read another's (the
 * cma lane, which has a device exactly when such a read of our own memory
 * works), else the data comes as messages. */
ucp_proto_stat_t host_rndv_proto()
{
    char src = 1, dst = 0;
    struct iovec local = {&dst, 1}, remote = {&src, 1};

    return (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1)
               ? UCP_PROTO_STAT_RNDV_HOST_GET
               : UCP_PROTO_STAT_RNDV_AM;
}

ucp_proto_stat_t expected_proto(const kind_t &s, const kind_t &r)
{
    if (s.host && r.host) {
        return host_rndv_proto();
    } else if (exportable(s)) {
        return UCP_PROTO_STAT_RNDV_GET;
    } else if (exportable(r)) {
        return UCP_PROTO_STAT_RNDV_PUT;
    }
    return UCP_PROTO_STAT_RNDV_PIPE_CUDA;
}

class test_ucp_cuda_rndv : public ::testing::TestWithParam<std::tuple<int, int>> {
protected:
    void SetUp() override
    {
        if (cuda_test::device_count() < 1) {
            GTEST_SKIP() << "no CUDA device";
        }
    }
};

TEST_P(test_ucp_cuda_rndv, pair_sizes_offsets_and_protocol)
{
    const kind_t &s = k_kinds[std::get<0>(GetParam())];
    const kind_t &r = k_kinds[std::get<1>(GetParam())];

    run_sizes(s, r, expected_proto(s, r), {},
              std::vector<size_t>(std::begin(k_sizes), std::end(k_sizes)));
}

std::string pair_name(const ::testing::TestParamInfo<std::tuple<int, int>> &info)
{
    return std::string(name_of(k_kinds[std::get<0>(info.param)])) + "_to_" +
           name_of(k_kinds[std::get<1>(info.param)]);
}

INSTANTIATE_TEST_SUITE_P(pairs, test_ucp_cuda_rndv,
                         ::testing::Combine(::testing::Range(0, 8),
                                            ::testing::Range(0, 8)),
                         pair_name);

/* What a message between two nodes without RDMA takes: tcp and cuda_copy
 * only. By default device data goes through host fragments that the
 * receiver reads over tcp (sender's fragments, into ours or straight into a
 * host buffer; host data into a device buffer is read into ours,
 * ucp_rndv_hread.c); host data into host memory is one read. With
 * UCX_RNDV_PIPELINE_HOST_GET=n device data goes as active messages through
 * host fragments, the copy of one piece beside the socket transfer of the
 * previous one (ucp_rndv_stage.c). Sizes: below one fragment, one, two, five
 * and a bit; three messages at once, so requests share the fragment pool;
 * copies complete late on the model. */
class test_ucp_cuda_rndv_tcp : public test_ucp_cuda_rndv
{
  protected:
    void run(const std::vector<std::pair<std::string, std::string>> &extra,
             unsigned concurrent, int overlaps, bool reads = false,
             long sender_pieces = -1)
    {
        const kind_t &s = k_kinds[std::get<0>(GetParam())];
        const kind_t &r = k_kinds[std::get<1>(GetParam())];
        auto env        = extra;

        env.push_back({"UCX_TLS", "tcp,cuda_copy"});
        env.push_back({"UCX_NET_DEVICES", "lo"});
        if (!reads) {
            env.push_back({"UCX_RNDV_PIPELINE_HOST_GET", "n"});
        }
        /* The fragments here are scaled down to k_frag; segments keep the
         * default proportion (256K segments, 512K host fragments): no larger
         * than a fragment, so that a fragment fills over several arrivals
         * and its copy can run beside the next ones. */
        env.push_back({"UCX_TCP_SEG_SIZE", std::to_string(k_frag)});
        /* Host to host, the receiver reads the sender's buffer over the
         * tcp connection (tcp get, docs/rendezvous.md). */
        run_sizes(s, r,
                  (s.host && r.host) ? UCP_PROTO_STAT_RNDV_HOST_GET
                  : reads            ? UCP_PROTO_STAT_RNDV_PIPE_HOST_GET
                                     : UCP_PROTO_STAT_RNDV_PIPE_HOST,
                  env, {k_frag - 1, k_frag, 2 * k_frag, 5 * k_frag + 3}, concurrent,
                  8 * 1024, 0, sender_pieces, false, overlaps);
    }
};

TEST_P(test_ucp_cuda_rndv_tcp, staged_copy_overlaps_the_socket)
{
    run({}, 3, 1);
}

TEST_P(test_ucp_cuda_rndv_tcp, fragment_pool_too_small_for_two_per_message)
{
    /* Three messages, four fragments: some get one and copy in turn. */
    run({{"UCX_RNDV_FRAG_POOL_SIZE", "4"}}, 3, -1);
}

TEST_P(test_ucp_cuda_rndv_tcp, one_fragment_per_message)
{
    run({{"UCX_RNDV_AM_STAGE_OVERLAP", "n"}}, 1, 0);
}

/* The default: reads of host fragments, no data messages (so no staging
 * copy beside a socket send). */
TEST_P(test_ucp_cuda_rndv_tcp, device_data_read_through_host_fragments)
{
    run({}, 3, 0, true);
}

/* Both processes send device data to each other at once over tcp, more
 * messages than their fragment pools can stage: a receiver's fragments must
 * not depend on its own sends (each side's sends would hold every fragment
 * while waiting for the other's reads, which wait for one: a deadlock seen
 * in tag_bibw on an H100 before the receivers got a pool of their own). */
TEST(test_ucp_cuda_rndv_tcp_both_ways, sends_each_way_beyond_the_pool_complete)
{
    if (cuda_test::device_count() < 1) {
        GTEST_SKIP() << "no CUDA device";
    }
    const unsigned n  = 8;
    const size_t size = 5 * k_frag + 3;
    const kind_t kind = {false, mem_kind::legacy};
    const std::vector<std::pair<std::string, std::string>> env = {
        {"UCX_TLS", "tcp,cuda_copy"},
        {"UCX_NET_DEVICES", "lo"},
        {"UCX_RNDV_FRAG_POOL_SIZE", "8"}};

    auto side = [&](oob_channel &oob) {
        set_env(env);
        cuda_test::init_device(0);
        peer p;
        p.init(oob);
        std::vector<buffer> rbufs(n), sbufs(n);
        std::vector<ucs_status_ptr_t> reqs;
        for (unsigned i = 0; i < n; ++i) {
            rbufs[i].init(kind);
            memset(rbufs[i].host.data(), 0xee, k_alloc);
            rbufs[i].upload();
            sbufs[i].init(kind);
            sbufs[i].fill(size, i + 1);
        }
        ASSERT_CU(cuCtxSynchronize());
        ASSERT_TRUE(oob.barrier());
        for (unsigned i = 0; i < n; ++i) {
            reqs.push_back(p.recv(rbufs[i].ptr() + k_offset, size, i + 1));
        }
        for (unsigned i = 0; i < n; ++i) {
            reqs.push_back(p.send(sbufs[i].ptr() + k_offset, size, i + 1));
        }
        for (auto r : reqs) {
            ASSERT_EQ(UCS_OK, p.wait(r));
        }
        for (unsigned i = 0; i < n; ++i) {
            check_received(rbufs[i], size, i + 1, "message " + std::to_string(i + 1));
        }
        EXPECT_EQ(2 * n, p.count(UCP_PROTO_STAT_RNDV_PIPE_HOST_GET));
        ASSERT_TRUE(oob.barrier());
        p.cleanup(oob);
    };
    cuda_test::cuda_two_processes(side, side, 60.0);
}

/* host, legacy, async default pool, pool without handles, VMM without
 * handles, VMM of two chunks: the exportable kinds make no difference over
 * tcp, which exports nothing. */
INSTANTIATE_TEST_SUITE_P(pairs, test_ucp_cuda_rndv_tcp,
                         ::testing::Combine(::testing::Values(0, 1, 2, 4, 6, 7),
                                            ::testing::Values(0, 1, 2, 4, 6, 7)),
                         pair_name);

/* How the read pipeline through host fragments schedules its pieces:
 * waits for fragments, one piece at a time, short pieces at the ends.
 * None of it depends on the kind of device memory (the data path is the
 * one test_ucp_cuda_rndv_tcp checks for every pair), so host, one plain
 * and one two-chunk VMM buffer stand for all. */
class test_ucp_cuda_rndv_tcp_reads : public test_ucp_cuda_rndv_tcp
{
};

TEST_P(test_ucp_cuda_rndv_tcp_reads, reads_wait_for_fragments_of_a_small_pool)
{
    /* Three messages of up to six pieces, two fragments per side: senders
     * and receivers wait for fragments, and a receiver's fragment is still
     * copying to the device when the sender's next one is announced. */
    run({{"UCX_RNDV_FRAG_POOL_SIZE", "2"}}, 3, 0, true);
}

TEST_P(test_ucp_cuda_rndv_tcp_reads, reads_with_one_fragment_in_flight)
{
    run({{"UCX_RNDV_PIPELINE_DEPTH", "1"}, {"UCX_RNDV_FRAG_POOL_SIZE", "1"}}, 1, 0, true);
}

/* The ends in short pieces (UCX_RNDV_PIPELINE_HOST_GET_RAMP, here a quarter
 * of the scaled-down fragment): a device sender copies 16K, 16K, 32K, ...
 * and the last pieces shrink back, so the messages of run() take
 * 3 + 4 + 6 + 8 copies instead of 1 + 1 + 2 + 6; a host buffer read into
 * a device one is cut the same way by its receiver. */
TEST_P(test_ucp_cuda_rndv_tcp_reads, read_pipeline_ends_in_short_pieces)
{
    const bool host_sender = k_kinds[std::get<0>(GetParam())].host;

    run({{"UCX_RNDV_PIPELINE_HOST_GET_RAMP", std::to_string(k_frag / 4)}}, 1, 0, true,
        host_sender ? 0 : 21);
}

TEST_P(test_ucp_cuda_rndv_tcp_reads, read_pipeline_without_ramp_copies_whole_fragments)
{
    const bool host_sender = k_kinds[std::get<0>(GetParam())].host;

    run({{"UCX_RNDV_PIPELINE_HOST_GET_RAMP", "0"}}, 1, 0, true, host_sender ? 0 : 10);
}

INSTANTIATE_TEST_SUITE_P(pairs, test_ucp_cuda_rndv_tcp_reads,
                         ::testing::Combine(::testing::Values(0, 1, 7),
                                            ::testing::Values(0, 1, 7)),
                         pair_name);

class test_ucp_cuda_rndv_misc : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (cuda_test::device_count() < 1) {
            GTEST_SKIP() << "no CUDA device";
        }
    }
};

const kind_t k_legacy   = {false, mem_kind::legacy};
const kind_t k_pool_no  = {false, mem_kind::pool_no_handle};
const kind_t k_vmm_no   = {false, mem_kind::vmm_no_handle};
const std::vector<size_t> k_big = {5 * k_frag + 3};

TEST_F(test_ucp_cuda_rndv_misc, scheme_get_zcopy_forced)
{
    run_sizes(k_legacy, k_legacy, UCP_PROTO_STAT_RNDV_GET,
              {{"UCX_RNDV_SCHEME", "get_zcopy"}}, k_big);
}

TEST_F(test_ucp_cuda_rndv_misc, scheme_put_zcopy_forced)
{
    run_sizes(k_legacy, k_legacy, UCP_PROTO_STAT_RNDV_PUT,
              {{"UCX_RNDV_SCHEME", "put_zcopy"}}, k_big);
}

TEST_F(test_ucp_cuda_rndv_misc, scheme_pipeline_forced_with_cuda_fragments)
{
    run_sizes(k_legacy, k_legacy, UCP_PROTO_STAT_RNDV_PIPE_CUDA,
              {{"UCX_RNDV_SCHEME", "pipeline"}}, k_big);
}

TEST_F(test_ucp_cuda_rndv_misc, scheme_pipeline_with_host_fragments)
{
    run_sizes(k_legacy, k_legacy, UCP_PROTO_STAT_RNDV_PIPE_HOST,
              {{"UCX_RNDV_SCHEME", "pipeline"}, {"UCX_RNDV_FRAG_MEM_TYPES", "host"}},
              k_big);
}

TEST_F(test_ucp_cuda_rndv_misc, forced_get_falls_back_when_sender_not_exportable)
{
    run_sizes(k_pool_no, k_vmm_no, UCP_PROTO_STAT_RNDV_PIPE_CUDA,
              {{"UCX_RNDV_SCHEME", "get_zcopy"}}, k_big);
}

TEST_F(test_ucp_cuda_rndv_misc, dry_fragment_pool_makes_progress)
{
    run_sizes(k_pool_no, k_vmm_no, UCP_PROTO_STAT_RNDV_PIPE_CUDA,
              {{"UCX_RNDV_FRAG_POOL_SIZE", "1"}}, k_big, 6);
}

TEST_F(test_ucp_cuda_rndv_misc, auto_threshold_reads_exportable_senders_at_any_size)
{
    run_sizes(k_legacy, k_vmm_no, UCP_PROTO_STAT_RNDV_GET,
              {{"UCX_RNDV_THRESH", "auto"}}, {8, 1000, 8 * 1024 - 1, k_frag}, 1, 1);
}

TEST_F(test_ucp_cuda_rndv_misc, auto_threshold_keeps_eager_for_other_device_senders)
{
    /* With the transports' default figures (the driver model reports the
     * H200's) the model puts the pipeline's crossover at ~7 KiB, the
     * measured one lies at 3-9 KiB: 4 KiB eager, 12 KiB rendezvous. */
    run_sizes(k_pool_no, k_vmm_no, UCP_PROTO_STAT_RNDV_PIPE_CUDA,
              {{"UCX_RNDV_THRESH", "auto"}}, {8, 1000, 4096, 12288, k_frag}, 1, 12288);
}

TEST_F(test_ucp_cuda_rndv_misc, auto_threshold_follows_the_transports_costs)
{
    /* A cuda_ipc copy reported at 1 ms makes every rendezvous dearer than
     * the staged eager copy at 64 KiB (~45 us): both senders stay eager. */
    const std::vector<std::pair<std::string, std::string>> env =
            {{"UCX_RNDV_THRESH", "auto"}, {"UCX_CUDA_IPC_LAT", "1ms"}};

    run_sizes(k_pool_no, k_vmm_no, UCP_PROTO_STAT_RNDV_PIPE_CUDA, env, {8, k_frag}, 1,
              SIZE_MAX);
    run_sizes(k_legacy, k_vmm_no, UCP_PROTO_STAT_RNDV_GET, env, {8, k_frag}, 1, SIZE_MAX);
    /* Staging copies at 1 ms: eager makes two (device to host, host to
     * device), the pipeline one and a cheap read, so it wins from 1 B. */
    run_sizes(k_pool_no, k_vmm_no, UCP_PROTO_STAT_RNDV_PIPE_CUDA,
              {{"UCX_RNDV_THRESH", "auto"}, {"UCX_CUDA_IPC_LAT", "1ns"},
               {"UCX_CUDA_COPY_LAT", "1ms"}}, {8, 1000, k_frag}, 1, 8);
}

TEST_F(test_ucp_cuda_rndv_misc, pipeline_pieces_smaller_than_fragments)
{
    /* Pieces as across GPUs (UCX_RNDV_SAME_GPU_WHOLE_PIECES=n): 3 MiB + 5
     * through 2 MiB fragments, depth 4: pieces of 1 MiB, the last one 5
     * bytes, each in a fragment of its own. */
    run_sizes(k_pool_no, k_vmm_no, UCP_PROTO_STAT_RNDV_PIPE_CUDA,
              {{"UCX_RNDV_FRAG_SIZE", "cuda:2M"},
               {"UCX_RNDV_SAME_GPU_WHOLE_PIECES", "n"}},
              {3 * 1024 * 1024 + 5}, 1, 8 * 1024, 0, 4);
}

TEST_F(test_ucp_cuda_rndv_misc, same_gpu_pipeline_fills_whole_fragments)
{
    /* Both buffers on one GPU: 3 MiB + 5 through 2 MiB fragments is one
     * full fragment and the rest; 1 MiB fits one fragment whole. */
    run_sizes(k_pool_no, k_vmm_no, UCP_PROTO_STAT_RNDV_PIPE_CUDA,
              {{"UCX_RNDV_FRAG_SIZE", "cuda:2M"}},
              {3 * 1024 * 1024 + 5, 1024 * 1024}, 1, 8 * 1024, 0, 2 + 1);
}

const kind_t k_host = {true, mem_kind::legacy};

/* Neither buffer exportable, both on one GPU: from 32K up to a host fragment
 * the data goes through host memory (copy engines, no context switch). */
const std::vector<std::pair<std::string, std::string>> k_host_stage_env = {
        {"UCX_RNDV_SAME_GPU_HOST_MAX", "512K"},
        {"UCX_RNDV_FRAG_SIZE", "host:512K,cuda:64K"}};

TEST_F(test_ucp_cuda_rndv_misc, same_gpu_non_exportable_pair_stages_through_host)
{
    run_sizes(k_pool_no, k_vmm_no, UCP_PROTO_STAT_RNDV_PIPE_HOST, k_host_stage_env,
              {32 * 1024, 5 * k_frag + 3, 512 * 1024});
}

TEST_F(test_ucp_cuda_rndv_misc, same_gpu_host_staging_only_between_32k_and_host_fragment)
{
    run_sizes(k_pool_no, k_vmm_no, UCP_PROTO_STAT_RNDV_PIPE_CUDA, k_host_stage_env,
              {32 * 1024 - 4, 512 * 1024 + 1});
}

TEST_F(test_ucp_cuda_rndv_misc, same_gpu_host_staging_off_when_fragment_type_is_named)
{
    auto env = k_host_stage_env;
    env.push_back({"UCX_RNDV_FRAG_MEM_TYPE", "cuda"});
    run_sizes(k_pool_no, k_vmm_no, UCP_PROTO_STAT_RNDV_PIPE_CUDA, env, {64 * 1024});
}

TEST_F(test_ucp_cuda_rndv_misc, two_gpus_non_exportable_pair_keeps_device_fragments)
{
    if (cuda_test::device_count() < 2) {
        GTEST_SKIP() << "needs two CUDA devices";
    }
    run_sizes(k_pool_no, k_vmm_no, UCP_PROTO_STAT_RNDV_PIPE_CUDA, k_host_stage_env,
              {64 * 1024}, 1, 8 * 1024, 1);
}

TEST_F(test_ucp_cuda_rndv_misc, two_gpus_pipeline_keeps_pieces)
{
    if (cuda_test::device_count() < 2) {
        GTEST_SKIP() << "needs two CUDA devices";
    }
    /* Sender on GPU 1, receiver on GPU 0: copies of the two GPUs overlap,
     * so 3 MiB + 5 through 2 MiB fragments is still cut into depth (4)
     * pieces: 1 MiB, 1 MiB, 1 MiB and 5 bytes. */
    run_sizes(k_pool_no, k_vmm_no, UCP_PROTO_STAT_RNDV_PIPE_CUDA,
              {{"UCX_RNDV_FRAG_SIZE", "cuda:2M"}}, {3 * 1024 * 1024 + 5}, 1, 8 * 1024,
              1, 4);
}

TEST_F(test_ucp_cuda_rndv_misc, two_gpus_messages_sharing_fragments_go_whole)
{
    if (cuda_test::device_count() < 2) {
        GTEST_SKIP() << "needs two CUDA devices";
    }
    /* Four messages of 3 MiB + 5 at once through a pool of four 2 MiB
     * fragments: the first, alone, takes all four in 1 MiB pieces (4). The
     * second and third are resumed while others wait: a whole 2 MiB piece,
     * then the rest whole (2 pieces) or, alone by then, cut (3). The last
     * finds nobody waiting: whole pieces while others hold fragments, else
     * cut (at most 4). So at most 4 + 3 + 3 + 4 = 14; cut always, 16. */
    run_sizes(k_pool_no, k_vmm_no, UCP_PROTO_STAT_RNDV_PIPE_CUDA,
              {{"UCX_RNDV_FRAG_SIZE", "cuda:2M"}, {"UCX_RNDV_FRAG_POOL_SIZE", "4"}},
              {3 * 1024 * 1024 + 5}, 4, 8 * 1024, 1, 14, true);
}

TEST_F(test_ucp_cuda_rndv_misc, two_gpus_messages_cut_always_when_asked)
{
    if (cuda_test::device_count() < 2) {
        GTEST_SKIP() << "needs two CUDA devices";
    }
    run_sizes(k_pool_no, k_vmm_no, UCP_PROTO_STAT_RNDV_PIPE_CUDA,
              {{"UCX_RNDV_FRAG_SIZE", "cuda:2M"}, {"UCX_RNDV_FRAG_POOL_SIZE", "4"},
               {"UCX_RNDV_SPLIT_ONLY_ALONE", "n"}},
              {3 * 1024 * 1024 + 5}, 4, 8 * 1024, 1, 16);
}

/* Host -> host between peers with cuda_ipc lanes: with the default
 * threshold (host from 256 KiB) and under each scheme, a 1 MiB message
 * takes data messages, never device fragments, a get or a put. */
class test_ucp_cuda_rndv_host_pair :
        public test_ucp_cuda_rndv_misc,
        public ::testing::WithParamInterface<const char*> {
};

TEST_P(test_ucp_cuda_rndv_host_pair, never_through_the_gpu)
{
    const size_t mib = 1024 * 1024;

    const std::string scheme = GetParam();
    const ucp_proto_stat_t want = ((scheme == "auto") || (scheme == "get_zcopy")) ?
                                  host_rndv_proto() : UCP_PROTO_STAT_RNDV_AM;

    /* A fixed threshold: the automatic one follows this machine's measured
     * memcpy and process_vm_readv speeds, and on some VMs eager wins at
     * 1 MiB, which is not what this test is about. */
    run_sizes(k_host, k_host, want,
              {{"UCX_RNDV_THRESH", "256K"}, {"UCX_RNDV_SCHEME", GetParam()},
               {"UCX_RNDV_FRAG_SIZE", "host:512K,cuda:16M"}},
              {mib - 5, mib + 3}, 1, 256 * 1024);
}

INSTANTIATE_TEST_SUITE_P(schemes, test_ucp_cuda_rndv_host_pair,
                         ::testing::Values("auto", "get_zcopy", "put_zcopy",
                                           "pipeline"));

TEST_F(test_ucp_cuda_rndv_misc, sync_truncation_and_cancel)
{
    const size_t size = 3 * k_frag;

    auto receiver = [&](oob_channel &oob) {
        set_env({});
        cuda_test::init_device(0);
        buffer b;
        b.init(k_vmm_no);
        peer p;
        p.init(oob);
        /* Sync send of non-exportable memory: pipeline. */
        memset(b.host.data(), 0xee, k_alloc);
        b.upload();
        ASSERT_CU(cuCtxSynchronize());
        ASSERT_EQ(UCS_OK, p.wait(p.recv(b.ptr() + k_offset, size, 1)));
        check_received(b, size, 1, "sync");
        /* Truncated: nothing is written. */
        memset(b.host.data(), 0xee, k_alloc);
        b.upload();
        ASSERT_CU(cuCtxSynchronize());
        ucp_tag_recv_info_t info;
        EXPECT_EQ(UCS_ERR_MESSAGE_TRUNCATED,
                  p.wait(p.recv(b.ptr() + k_offset, size / 2, 2), &info));
        EXPECT_EQ(size, info.length);
        check_received(b, 0, 2, "truncated");
        /* An unmatched rendezvous-size receive is canceled. */
        ucs_status_ptr_t req = p.recv(b.ptr(), size, 3);
        ASSERT_TRUE(UCS_PTR_IS_PTR(req));
        ucp_request_cancel(p.m_worker, req);
        EXPECT_EQ(UCS_ERR_CANCELED, p.wait(req));
        ASSERT_TRUE(oob.barrier());
        p.cleanup(oob);
    };
    auto sender = [&](oob_channel &oob) {
        set_env({});
        cuda_test::init_device(0);
        buffer b;
        b.init(k_pool_no);
        peer p;
        p.init(oob);
        b.fill(size, 1);
        ASSERT_EQ(UCS_OK, p.wait(p.send(b.ptr() + k_offset, size, 1, true)));
        ASSERT_EQ(UCS_OK, p.wait(p.send(b.ptr() + k_offset, size, 2)));
        ASSERT_TRUE(oob.barrier());
        p.cleanup(oob);
    };
    cuda_test::cuda_two_processes(receiver, sender, 120.0);
}

/* UCX_CUDA_IPC_EXPORTABLE_DEFAULT_POOL=y: plain cuMemAllocAsync memory comes
 * from an IPC-capable pool and is read zero-copy; without it, it is staged. */
const kind_t k_async = {false, mem_kind::async_default_pool};

TEST_F(test_ucp_cuda_rndv_misc, exportable_default_pool_makes_async_memory_get)
{
    for (bool on : {true, false}) {
        run_sizes(k_async, k_async,
                  on ? UCP_PROTO_STAT_RNDV_GET : UCP_PROTO_STAT_RNDV_PIPE_CUDA,
                  {{"UCX_CUDA_IPC_EXPORTABLE_DEFAULT_POOL", on ? "y" : "n"}},
                  k_big);
    }
}

/*
 * One copier per pair on one GPU: a ping-pong of exportable buffers, each
 * process sending and receiving. Each message is counted by both of its
 * processes (the sender learns the protocol from the ATS). With the rule,
 * a message to the higher-uuid process is a put (the lower one copies) and a
 * message to the lower one a get (again the lower one copies): every
 * process counts as many puts as gets. Without it, or on two different
 * GPUs, every message is a get.
 */
void run_pingpong(int dev_first, int dev_second, bool one_copier,
                  bool want_one_copier)
{
    const unsigned rounds = 4;
    const size_t size     = 3 * k_frag + 1;
    const kind_t k_leg    = {false, mem_kind::legacy};

    auto side = [&](oob_channel &oob, int dev, bool first) {
        set_env({{"UCX_RNDV_SAME_GPU_ONE_COPIER", one_copier ? "y" : "n"}});
        cuda_test::init_device(dev);
        buffer sbuf, rbuf;
        sbuf.init(k_leg);
        rbuf.init(k_leg);
        peer p;
        p.init(oob);
        for (unsigned r = 0; r < rounds; ++r) {
            unsigned seed = 2 * r + (first ? 1 : 2);
            for (int turn = 0; turn < 2; ++turn) {
                if ((turn == 0) == first) {
                    sbuf.fill(size, seed);
                    ASSERT_EQ(UCS_OK, p.wait(p.send(sbuf.ptr() + k_offset,
                                                    size, seed)));
                } else {
                    unsigned rseed = 2 * r + (first ? 2 : 1);
                    memset(rbuf.host.data(), 0xee, k_alloc);
                    rbuf.upload();
                    ASSERT_CU(cuCtxSynchronize());
                    ASSERT_EQ(UCS_OK, p.wait(p.recv(rbuf.ptr() + k_offset,
                                                    size, rseed)));
                    check_received(rbuf, size, rseed,
                                   "ping-pong round " + std::to_string(r));
                }
            }
        }
        ASSERT_TRUE(oob.barrier()); /* every ATS has arrived */
        if (want_one_copier) {
            EXPECT_EQ(rounds, p.count(UCP_PROTO_STAT_RNDV_PUT));
            EXPECT_EQ(rounds, p.count(UCP_PROTO_STAT_RNDV_GET));
        } else {
            EXPECT_EQ(0u, p.count(UCP_PROTO_STAT_RNDV_PUT));
            EXPECT_EQ(2 * rounds, p.count(UCP_PROTO_STAT_RNDV_GET));
        }
        p.cleanup(oob);
    };
    cuda_test::cuda_two_processes(
            [&](oob_channel &oob) { side(oob, dev_first, true); },
            [&](oob_channel &oob) { side(oob, dev_second, false); }, 120.0);
}

TEST_F(test_ucp_cuda_rndv_misc, same_gpu_lower_uuid_copies_both_ways)
{
    run_pingpong(0, 0, true, true);
}

TEST_F(test_ucp_cuda_rndv_misc, same_gpu_one_copier_off_both_get)
{
    run_pingpong(0, 0, false, false);
}

TEST_F(test_ucp_cuda_rndv_misc, two_gpus_one_copier_not_applied)
{
    if (cuda_test::device_count() < 2) {
        GTEST_SKIP() << "needs two CUDA devices";
    }
    run_pingpong(0, 1, true, false);
}

} // namespace
