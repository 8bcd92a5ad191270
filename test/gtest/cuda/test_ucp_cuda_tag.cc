/**
 * @file test_ucp_cuda_tag.cc
 * Issue 7: ucp_tag_send_nbx / ucp_tag_recv_nbx with CUDA device memory on
 * the eager paths (staging through host bounce buffers by cuda_copy). Two
 * processes (the test process forks before any CUDA call), worker addresses
 * exchanged out of band; every size is sent host->device, device->host,
 * device->device and host->host, and the data checked on the receiver; and
 * 64 MiB device messages for the pairs that take each large-message path.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda/cuda_test.h"
#include "cuda/ucp_cuda_peer.h"

#include <ucp/api/ucp.h>

#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using cuda_test::allocation;
using cuda_test::mem_kind;
using cuda_test::ucp_peer;
using ucx_test::oob_channel;

namespace {

const size_t k_sizes[] = {0, 8, 64 * 1024, 1024 * 1024, 4 * 1024 * 1024};
const size_t k_max     = 4 * 1024 * 1024;

/* src/dst: 0 host, 1 device */
const int k_dirs[][2] = {{0, 1}, {1, 0}, {1, 1}, {0, 0}};

/* Inlined even at -O0: the checks below run it for every byte of messages
 * up to 64 MiB, which under ASan as a call per byte took tens of seconds. */
__attribute__((always_inline)) inline unsigned char pattern(size_t i, unsigned seed)
{
    return (unsigned char)((i * 131u) ^ (i >> 9) ^ (seed * 17u));
}

void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; ++i) {
        p[i] = pattern(i, seed);
    }
}

/* Receive tag @a tag into @a capacity bytes of device memory at @a ptr. */
ucs_status_t recv_device(ucp_peer &peer, CUdeviceptr ptr, size_t capacity,
                         unsigned tag, ucp_tag_recv_info_t *info,
                         double timeout = 120.0)
{
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    memset(info, 0, sizeof(*info));
    return peer.wait(ucp_tag_recv_nbx(peer.m_worker, (void*)(uintptr_t)ptr, capacity,
                                      tag, (ucp_tag_t)-1, &param),
                     info, timeout);
}

/* First of the @a checked bytes copied from the device at @a ptr that is
 * not the pattern of @a seed (below @a length) or 0xee (the untouched rest);
 * @a checked when all are right. */
size_t first_wrong_byte(CUdeviceptr ptr, size_t length, size_t checked, unsigned seed)
{
    std::vector<unsigned char> host(checked);

    if (cuMemcpyDtoH(host.data(), ptr, checked) != CUDA_SUCCESS) {
        return 0;
    }
    const unsigned char *h = host.data();
    size_t end             = (length < checked) ? length : checked;
    for (size_t i = 0; i < end; ++i) {
        if (h[i] != pattern(i, seed)) {
            return i;
        }
    }
    for (size_t i = end; i < checked; ++i) {
        if (h[i] != 0xee) {
            return i;
        }
    }
    return checked;
}

/* (allocation kind, give UCP_OP_ATTR_FIELD_MEMORY_TYPE) */
typedef std::tuple<mem_kind, bool> param_t;

class test_ucp_cuda_tag : public ::testing::TestWithParam<param_t> {
protected:
    void SetUp() override
    {
        if (cuda_test::device_count() < 1) {
            GTEST_SKIP() << "no CUDA device";
        }
    }

    void fill_param(ucp_request_param_t &param, bool device) const
    {
        memset(&param, 0, sizeof(param));
        if (std::get<1>(GetParam())) {
            param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
            param.memory_type  = device ? UCS_MEMORY_TYPE_CUDA :
                                          UCS_MEMORY_TYPE_HOST;
        }
    }

    /* Receiver: the parent. */
    void receiver(oob_channel &oob)
    {
        std::vector<unsigned char> host(k_max), check(k_max), untouched(k_max, 0xee);
        ucp_tag_recv_info_t info;
        ucp_request_param_t param;
        allocation dev;
        ucp_peer peer;
        unsigned seed = 0;
        void *buf;

        cuda_test::init_device(0);
        ASSERT_CU(dev.allocate(std::get<0>(GetParam()), k_max));
        peer.init(oob);
        for (const auto &dir : k_dirs) {
            for (size_t size : k_sizes) {
                ++seed;
                memset(host.data(), 0xee, k_max);
                ASSERT_CU(cuMemcpyHtoD(dev.ptr, host.data(), k_max));
                ASSERT_CU(cuCtxSynchronize());
                buf = dir[1] ? (void*)(uintptr_t)dev.ptr : host.data();
                fill_param(param, dir[1]);
                param.op_attr_mask |= UCP_OP_ATTR_FIELD_RECV_INFO;
                param.recv_info.tag_info = &info;
                memset(&info, 0, sizeof(info));
                ucs_status_ptr_t ret = ucp_tag_recv_nbx(peer.m_worker, buf, size,
                                                        seed, (ucp_tag_t)-1,
                                                        &param);
                ASSERT_FALSE(UCS_PTR_IS_ERR(ret))
                        << ucs_status_string(UCS_PTR_STATUS(ret));
                if (UCS_PTR_IS_PTR(ret)) {
                    while (ucp_request_test(ret, &info) == UCS_INPROGRESS) {
                        ucp_worker_progress(peer.m_worker);
                    }
                    ASSERT_EQ(UCS_OK, ucp_request_check_status(ret));
                    ucp_request_free(ret);
                }
                EXPECT_EQ(size, info.length);
                EXPECT_EQ((ucp_tag_t)seed, info.sender_tag);
                if (dir[1]) {
                    /* Completed means the data is on the device: no sync. */
                    ASSERT_CU(cuMemcpyDtoH(check.data(), dev.ptr, k_max));
                } else {
                    memcpy(check.data(), host.data(), k_max);
                }
                /* The message, then the untouched rest: memcmp against the
                 * fill before a byte loop (a byte loop over 4 MiB per
                 * message dominated this suite under ASan). */
                size_t bad = k_max;
                for (size_t i = 0; i < size; ++i) {
                    if (check[i] != pattern(i, seed)) {
                        bad = i;
                        break;
                    }
                }
                if ((bad == k_max) &&
                    (memcmp(check.data() + size, untouched.data(), k_max - size) != 0)) {
                    for (size_t i = size; i < k_max; ++i) {
                        if (check[i] != 0xee) {
                            bad = i;
                            break;
                        }
                    }
                }
                EXPECT_EQ(k_max, bad) << "size " << size << " "
                                      << (dir[0] ? "device" : "host") << " -> "
                                      << (dir[1] ? "device" : "host");
                ASSERT_TRUE(oob.barrier());
            }
        }
        peer.cleanup(oob);
        EXPECT_CU(dev.release());
    }

    /* Sender: the child. */
    void sender(oob_channel &oob)
    {
        std::vector<unsigned char> host(k_max);
        ucp_request_param_t param;
        allocation dev;
        ucp_peer peer;
        unsigned seed = 0;
        void *buf;

        cuda_test::init_device(0);
        ASSERT_CU(dev.allocate(std::get<0>(GetParam()), k_max));
        peer.init(oob);
        for (const auto &dir : k_dirs) {
            for (size_t size : k_sizes) {
                ++seed;
                /* The message only: beyond it what the last round left
                 * (0x55, or zeros), never the receiver's 0xee. */
                fill_pattern(host.data(), size, seed);
                ASSERT_CU(cuMemcpyHtoD(dev.ptr, host.data(), k_max));
                ASSERT_CU(cuCtxSynchronize());
                buf = dir[0] ? (void*)(uintptr_t)dev.ptr : host.data();
                fill_param(param, dir[0]);
                EXPECT_EQ(UCS_OK, peer.wait(ucp_tag_send_nbx(peer.m_ep, buf, size,
                                                             seed, &param)));
                /* The buffer is reusable once the send completed. */
                memset(host.data(), 0x55, k_max);
                ASSERT_CU(cuMemsetD8(dev.ptr, 0x55, k_max));
                ASSERT_CU(cuCtxSynchronize());
                ASSERT_TRUE(oob.barrier());
            }
        }
        peer.cleanup(oob);
        EXPECT_CU(dev.release());
    }
};

TEST_P(test_ucp_cuda_tag, send_recv_all_directions)
{
    cuda_test::cuda_two_processes(
            [this](oob_channel &oob) { receiver(oob); },
            [this](oob_channel &oob) { sender(oob); }, 240.0);
}

std::string param_name(const ::testing::TestParamInfo<param_t> &info)
{
    return std::string(cuda_test::kind_name(std::get<0>(info.param))) +
           (std::get<1>(info.param) ? "_memtype_attr" : "_memtype_cache");
}

INSTANTIATE_TEST_SUITE_P(kinds, test_ucp_cuda_tag,
                         ::testing::Combine(
                                 ::testing::Values(mem_kind::legacy,
                                                   mem_kind::async_default_pool,
                                                   mem_kind::vmm_posix_fd),
                                 ::testing::Bool()),
                         param_name);

/*
 * 64 MiB device messages between two processes for the pairs that take each
 * large-message path with the default settings: legacy -> async (receiver
 * gets), async -> legacy (sender puts), async -> async and VMM without a
 * handle -> async (neither exportable: pipelined staging), and VMM with
 * several chunks on both sides. The receive buffer is 4 MiB larger and its
 * tail must stay untouched.
 */
class test_ucp_cuda_tag_64m : public ::testing::Test {
protected:
    static constexpr size_t k_len   = (size_t(64) << 20) + 3;
    static constexpr size_t k_alloc = size_t(68) << 20; /* 2 chunks of 34 MiB */

    void SetUp() override
    {
        if (cuda_test::device_count() < 1) {
            GTEST_SKIP() << "no CUDA device";
        }
    }

    static std::vector<std::pair<mem_kind, mem_kind>> pairs()
    {
        return {{mem_kind::legacy, mem_kind::async_default_pool},
                {mem_kind::async_default_pool, mem_kind::legacy},
                {mem_kind::async_default_pool, mem_kind::async_default_pool},
                {mem_kind::vmm_no_handle, mem_kind::async_default_pool},
                {mem_kind::vmm_two_chunks, mem_kind::vmm_two_chunks}};
    }
};

TEST_F(test_ucp_cuda_tag_64m, device_kind_pairs_arrive_intact)
{
    cuda_test::cuda_two_processes(
            [](oob_channel &oob) { /* receiver */
                ucp_tag_recv_info_t info;
                ucp_peer peer;
                unsigned seed = 100;

                cuda_test::init_device(0);
                peer.init(oob);
                for (const auto &pr : pairs()) {
                    allocation dev;
                    ++seed;
                    ASSERT_CU(dev.allocate(pr.second, k_alloc));
                    ASSERT_CU(cuMemsetD8(dev.ptr, 0xee, k_alloc));
                    ASSERT_CU(cuCtxSynchronize());
                    ASSERT_TRUE(oob.barrier()); /* posted before the send */
                    ASSERT_EQ(UCS_OK, recv_device(peer, dev.ptr, k_alloc, seed, &info))
                            << cuda_test::kind_name(pr.first) << " -> "
                            << cuda_test::kind_name(pr.second);
                    EXPECT_EQ(k_len, info.length);
                    EXPECT_EQ(k_alloc, first_wrong_byte(dev.ptr, k_len, k_alloc, seed))
                            << "first wrong byte, " << cuda_test::kind_name(pr.first)
                            << " -> " << cuda_test::kind_name(pr.second);
                    EXPECT_CU(dev.release());
                    ASSERT_TRUE(oob.barrier());
                }
                peer.cleanup(oob);
            },
            [](oob_channel &oob) { /* sender */
                std::vector<unsigned char> host(k_len);
                ucp_peer peer;
                unsigned seed = 100;

                cuda_test::init_device(0);
                peer.init(oob);
                for (const auto &pr : pairs()) {
                    allocation dev;
                    ++seed;
                    ASSERT_CU(dev.allocate(pr.first, k_alloc));
                    fill_pattern(host.data(), k_len, seed);
                    ASSERT_CU(cuMemcpyHtoD(dev.ptr, host.data(), k_len));
                    ASSERT_CU(cuCtxSynchronize());
                    ASSERT_TRUE(oob.barrier());
                    ucp_request_param_t param;
                    memset(&param, 0, sizeof(param));
                    EXPECT_EQ(UCS_OK,
                              peer.wait(ucp_tag_send_nbx(peer.m_ep,
                                                         (void*)(uintptr_t)dev.ptr,
                                                         k_len, seed, &param)));
                    EXPECT_CU(dev.release());
                    ASSERT_TRUE(oob.barrier());
                }
                peer.cleanup(oob);
            },
            300.0);
}

/*
 * A process that drives two GPUs: its current context is device 0's, the
 * buffers it sends from live on device 1 (VMM without handle: not
 * exportable, staged; VMM with POSIX fd: read by the peer through cuda_ipc;
 * a pool granted to device 1 only). Eager, staged and pipelined sizes must
 * arrive intact, which needs every copy of device 1's memory to run on
 * device 1.
 */
TEST(test_ucp_cuda_tag_other_gpu, sender_memory_on_a_device_that_is_not_current)
{
    if (cuda_test::device_count() < 2) {
        GTEST_SKIP() << "needs 2 GPUs, found " << cuda_test::device_count();
    }
    static const mem_kind kinds[] = {mem_kind::vmm_no_handle, mem_kind::vmm_posix_fd,
                                     mem_kind::pool_no_handle};
    static const size_t sizes[]   = {8, 64 * 1024, (1u << 20) + 5, (70u << 20) + 3};
    static const size_t alloc     = 72u << 20;

    cuda_test::cuda_two_processes(
            [](oob_channel &oob) { /* receiver: device 0 */
                ucp_tag_recv_info_t info;
                allocation dev;
                ucp_peer peer;
                unsigned seed = 300;

                cuda_test::init_device(0);
                ASSERT_CU(dev.allocate(mem_kind::vmm_no_handle, alloc));
                peer.init(oob);
                for (mem_kind k : kinds) {
                    for (size_t size : sizes) {
                        ++seed;
                        ASSERT_CU(cuMemsetD8(dev.ptr, 0xee, alloc));
                        ASSERT_CU(cuCtxSynchronize());
                        ASSERT_EQ(UCS_OK,
                                  recv_device(peer, dev.ptr, alloc, seed, &info, 60))
                                << cuda_test::kind_name(k) << " " << size;
                        EXPECT_EQ(size, info.length);
                        EXPECT_EQ(size + 4096,
                                  first_wrong_byte(dev.ptr, size, size + 4096, seed))
                                << "first wrong byte, " << cuda_test::kind_name(k)
                                << " on device 1, " << size << " bytes";
                        ASSERT_TRUE(oob.barrier());
                    }
                }
                peer.cleanup(oob);
                EXPECT_CU(dev.release());
            },
            [](oob_channel &oob) { /* sender: current device 0, memory on 1 */
                std::vector<unsigned char> host(alloc);
                CUcontext ctx1;
                CUdevice dev1;
                ucp_peer peer;
                unsigned seed = 300;

                cuda_test::init_device(0);
                ASSERT_CU(cuDeviceGet(&dev1, 1));
                ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx1, dev1));
                peer.init(oob);
                for (mem_kind k : kinds) {
                    allocation mem;
                    ASSERT_CU(cuCtxPushCurrent(ctx1));
                    ASSERT_CU(mem.allocate(k, alloc, 1));
                    ASSERT_CU(cuCtxPopCurrent(&ctx1));
                    for (size_t size : sizes) {
                        ++seed;
                        fill_pattern(host.data(), size, seed);
                        ASSERT_CU(cuCtxPushCurrent(ctx1));
                        ASSERT_CU(cuMemcpyHtoD(mem.ptr, host.data(), size));
                        ASSERT_CU(cuCtxSynchronize());
                        ASSERT_CU(cuCtxPopCurrent(&ctx1));
                        ucp_request_param_t param;
                        memset(&param, 0, sizeof(param));
                        ASSERT_EQ(UCS_OK,
                                  peer.wait(ucp_tag_send_nbx(peer.m_ep,
                                                             (void*)(uintptr_t)mem.ptr,
                                                             size, seed, &param)))
                                << cuda_test::kind_name(k) << " " << size;
                        ASSERT_TRUE(oob.barrier());
                    }
                    ASSERT_CU(cuCtxPushCurrent(ctx1));
                    EXPECT_CU(mem.release());
                    ASSERT_CU(cuCtxPopCurrent(&ctx1));
                }
                peer.cleanup(oob);
                EXPECT_CU(cuDevicePrimaryCtxRelease(dev1));
            },
            300.0);
}

} // namespace
