/*
 * The cuda_copy transport of libuct_cuda.so: memory-type detection for
 * every allocator kind, registration, and copies between host and device
 * and between device buffers inside one process, also when the model runs
 * stream work late (CUDASIM_ASYNC=1), where a completion reported before
 * the copy finished shows up as wrong data.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "test_uct_cuda.h"

#include <ucs/sys/topo_device.h>

#include <stdlib.h>
#include <string.h>

#include <string>
#include <thread>
#include <vector>

using namespace cuda_test;
using namespace uct_cuda_test;
using ucx_test::uct_test_entity;

namespace {

/* An entity of cuda_copy with an ep to its own iface. */
struct copy_ctx {
    copy_ctx() : e(find_resource("cuda_copy"))
    {
        ep = e.create_ep_to_iface(e.device_address(), e.iface_address());
    }

    uct_test_entity e;
    uct_ep_h        ep;
};

/* Why opening a copy_ctx failed with the environment as it is, or "". */
std::string copy_ctx_refusal()
{
    try {
        copy_ctx refused;
    } catch (const ucx_test::uct_test_error &e) {
        return e.what();
    }
    return "";
}

/* Device 0 current; on the model, stream work runs @a delay_us late, so a
 * completion reported before its copy landed shows up as wrong data. */
void init_late_streams(const char *delay_us)
{
    setenv("CUDASIM_ASYNC", "1", 1);
    setenv("CUDASIM_ASYNC_DELAY_US", delay_us, 1);
    init_device();
}

std::vector<unsigned char> host_pattern(size_t size, unsigned seed)
{
    std::vector<unsigned char> v(size);
    for (size_t i = 0; i < size; ++i) {
        v[i] = (unsigned char)(i * 7 + seed);
    }
    return v;
}

} // namespace

class test_uct_cuda_copy : public ::testing::Test {};

TEST_F(test_uct_cuda_copy, module_offers_cuda_copy_and_cuda_ipc_on_device_cuda)
{
    in_child([] {
        init_device();
        std::vector<ucx_test::uct_resource> copy = ucx_test::uct_enum_resources("cuda_copy");
        std::vector<ucx_test::uct_resource> ipc  = ucx_test::uct_enum_resources("cuda_ipc");
        ASSERT_EQ(1u, copy.size());
        ASSERT_EQ(1u, ipc.size());
        EXPECT_EQ("cuda_cpy", copy[0].component);
        EXPECT_EQ("cuda", copy[0].dev_name);
        EXPECT_EQ("cuda_ipc", ipc[0].component);
        EXPECT_EQ(UCT_DEVICE_TYPE_ACC, copy[0].dev_type);
    });
}

TEST_F(test_uct_cuda_copy, detects_device_memory_of_every_allocator_kind)
{
    in_child([] {
        init_device();
        copy_ctx c;
        const mem_kind device_kinds[] = {
            mem_kind::legacy, mem_kind::async_default_pool, mem_kind::pool_posix_fd,
            mem_kind::pool_no_handle, mem_kind::vmm_posix_fd, mem_kind::vmm_no_handle,
            mem_kind::vmm_two_chunks
        };
        ucs_memory_type_t type;

        for (mem_kind k : device_kinds) {
            allocation a;
            ASSERT_CU(a.allocate(k, 4ul << 20));
            type = UCS_MEMORY_TYPE_UNKNOWN;
            EXPECT_UCS_OK(uct_md_detect_memory_type(c.e.md(), (void*)(a.ptr + 100),
                                                    64, &type)) << kind_name(k);
            EXPECT_EQ(UCS_MEMORY_TYPE_CUDA, type) << kind_name(k);
        }

        allocation managed;
        ASSERT_CU(managed.allocate(mem_kind::managed, 1 << 20));
        EXPECT_UCS_OK(uct_md_detect_memory_type(c.e.md(), (void*)managed.ptr, 8, &type));
        EXPECT_EQ(UCS_MEMORY_TYPE_CUDA_MANAGED, type);

        allocation pinned;
        ASSERT_CU(pinned.allocate(mem_kind::host_alloc, 1 << 20));
        EXPECT_UCS_STATUS(UCS_ERR_INVALID_ADDR,
                          uct_md_detect_memory_type(c.e.md(), (void*)pinned.ptr, 8,
                                                    &type));
        std::vector<char> host(4096);
        EXPECT_UCS_STATUS(UCS_ERR_INVALID_ADDR,
                          uct_md_detect_memory_type(c.e.md(), host.data(), 8, &type));
    });
}

TEST_F(test_uct_cuda_copy, mem_query_reports_allocation_base_and_length)
{
    in_child([] {
        init_device();
        copy_ctx c;
        allocation a;
        ASSERT_CU(a.allocate(mem_kind::legacy, 3ul << 20));

        uct_md_mem_attr_t attr;
        attr.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE |
                          UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS |
                          UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH;
        ASSERT_UCS_OK(uct_md_mem_query(c.e.md(), (void*)(a.ptr + 4096), 16, &attr));
        EXPECT_EQ(UCS_MEMORY_TYPE_CUDA, attr.mem_type);
        EXPECT_EQ((void*)a.ptr, attr.base_address);
        EXPECT_EQ(a.size, attr.alloc_length);
    });
}

TEST_F(test_uct_cuda_copy, zcopy_host_to_device_and_back_keeps_data)
{
    in_child([] {
        init_device();
        copy_ctx c;
        allocation dev;
        ASSERT_CU(dev.allocate(mem_kind::legacy, 4ul << 20));

        for (size_t size : {size_t(1), size_t(4099), size_t(3ul << 20)}) {
            std::vector<unsigned char> src = host_pattern(size, (unsigned)size);
            std::vector<unsigned char> dst(size, 0);
            uct_mem_h sm, dm;
            ASSERT_UCS_OK(uct_md_mem_reg(c.e.md(), src.data(), size,
                                         UCT_MD_MEM_ACCESS_ALL, &sm));
            ASSERT_UCS_OK(uct_md_mem_reg(c.e.md(), dst.data(), size,
                                         UCT_MD_MEM_ACCESS_ALL, &dm));

            uct_iov_t put_iov = make_iov((CUdeviceptr)src.data(), size, sm);
            EXPECT_UCS_OK(zcopy_wait(c.e, [&](uct_completion_t *comp) {
                return uct_ep_put_zcopy(c.ep, &put_iov, 1, dev.ptr, 0, comp);
            })) << size;
            uct_iov_t get_iov = make_iov((CUdeviceptr)dst.data(), size, dm);
            EXPECT_UCS_OK(zcopy_wait(c.e, [&](uct_completion_t *comp) {
                return uct_ep_get_zcopy(c.ep, &get_iov, 1, dev.ptr, 0, comp);
            })) << size;
            EXPECT_TRUE(src == dst) << "size " << size;

            EXPECT_UCS_OK(uct_md_mem_dereg(c.e.md(), sm));
            EXPECT_UCS_OK(uct_md_mem_dereg(c.e.md(), dm));
        }
    });
}

TEST_F(test_uct_cuda_copy, zcopy_device_to_device_at_offsets_of_every_exportable_kind)
{
    in_child([] {
        init_device();
        copy_ctx c;
        const mem_kind kinds[] = {mem_kind::legacy, mem_kind::pool_posix_fd,
                                  mem_kind::vmm_two_chunks};
        const size_t size = 4ul << 20, len = (2ul << 20) + 333;

        for (mem_kind k : kinds) {
            allocation src, dst;
            ASSERT_CU(src.allocate(k, size));
            ASSERT_CU(dst.allocate(k, size));
            /* Across the chunk boundary of the two-chunk VMM range. */
            write_pattern(src.ptr + 1000, len, 5);
            uct_iov_t iov = make_iov(src.ptr + 1000, len);
            EXPECT_UCS_OK(zcopy_wait(c.e, [&](uct_completion_t *comp) {
                return uct_ep_put_zcopy(c.ep, &iov, 1, dst.ptr + 77, 0, comp);
            })) << kind_name(k);
            EXPECT_TRUE(check_pattern(dst.ptr + 77, len, 5)) << kind_name(k);
        }
    });
}

TEST_F(test_uct_cuda_copy, short_and_bcopy_copy_both_ways)
{
    in_child([] {
        init_device();
        copy_ctx c;
        allocation dev;
        ASSERT_CU(dev.allocate(mem_kind::legacy, 1 << 20));

        std::vector<unsigned char> src = host_pattern(1000, 3);
        ASSERT_UCS_OK(uct_ep_put_short(c.ep, src.data(), (unsigned)src.size(),
                                       dev.ptr + 8, 0));
        std::vector<unsigned char> back(1000, 0);
        ASSERT_UCS_OK(uct_ep_get_bcopy(c.ep,
                                       [](void *arg, const void *data, size_t length) {
                                           memcpy(arg, data, length);
                                       },
                                       back.data(), back.size(), dev.ptr + 8, 0, NULL));
        EXPECT_TRUE(src == back);

        std::vector<unsigned char> src2 = host_pattern(5000, 9);
        ssize_t packed = uct_ep_put_bcopy(c.ep,
                                          [](void *dest, void *arg) -> size_t {
                                              memcpy(dest, arg, 5000);
                                              return 5000;
                                          },
                                          src2.data(), dev.ptr + 4096, 0);
        ASSERT_EQ(5000, packed);
        std::vector<unsigned char> back2(5000, 0);
        ASSERT_CU(cuMemcpyDtoH(back2.data(), dev.ptr + 4096, back2.size()));
        EXPECT_TRUE(src2 == back2);
    });
}

namespace {

uint64_t memop_copies(uct_iface_h iface)
{
    typedef uint64_t (*fn_t)(uct_iface_h);
    fn_t fn = (fn_t)module_symbol("uct_cuda_copy_iface_memop_copies");

    if (fn == NULL) {
        ADD_FAILURE() << "uct_cuda_copy_iface_memop_copies not found";
        return 0;
    }
    return fn(iface);
}

/* Device bytes [off - 16, off + size + 16) of @a dev equal guard bytes 0xEE
 * around @a want. */
bool landed_between_guards(CUdeviceptr dev, size_t off, const std::vector<unsigned char> &want)
{
    std::vector<unsigned char> got(want.size() + 32);
    std::vector<unsigned char> expect(16, 0xEE);

    if (cuMemcpyDtoH(got.data(), dev + off - 16, got.size()) != CUDA_SUCCESS) {
        return false;
    }
    expect.insert(expect.end(), want.begin(), want.end());
    expect.insert(expect.end(), 16, 0xEE);
    return got == expect;
}

} // namespace

/* Small host-to-device copies go out as stream memory writes (no compute
 * engine, so no context switch on a GPU shared with another process) when
 * address and length are 4-byte aligned, the length is at most
 * UCX_CUDA_COPY_HTOD_MEMOP_MAX (64) and the stream is idle; anything else is
 * an ordinary copy. The bytes around the destination stay untouched. */
TEST_F(test_uct_cuda_copy, small_host_to_device_copies_are_stream_writes)
{
    in_child([] {
        init_late_streams("200");
        copy_ctx c;
        allocation dev;
        ASSERT_CU(dev.allocate(mem_kind::legacy, 1 << 20));
        struct {
            size_t off, size;
            bool   memop;
        } cases[] = {{64, 4, true},   {64, 8, true},   {68, 12, true},
                     {128, 60, true}, {256, 64, true}, {512, 3, false},
                     {576, 66, false}, {640, 68, false}, {702, 8, false},
                     {770, 4, false}};

        for (auto &t : cases) {
            ASSERT_CU(cuMemsetD8(dev.ptr, 0xEE, 4096));
            std::vector<unsigned char> src = host_pattern(t.size, (unsigned)t.off);
            uint64_t before = memop_copies(c.e.iface());
            uct_iov_t iov   = make_iov((CUdeviceptr)src.data(), t.size);
            EXPECT_UCS_OK(zcopy_wait(c.e, [&](uct_completion_t *comp) {
                return uct_ep_put_zcopy(c.ep, &iov, 1, dev.ptr + t.off, 0, comp);
            }));
            EXPECT_EQ(before + (t.memop ? 1 : 0), memop_copies(c.e.iface()))
                    << "offset " << t.off << " size " << t.size;
            EXPECT_TRUE(landed_between_guards(dev.ptr, t.off, src))
                    << "offset " << t.off << " size " << t.size;
        }

        /* put_short finishes before it returns, by writes as well. */
        ASSERT_CU(cuMemsetD8(dev.ptr, 0xEE, 4096));
        std::vector<unsigned char> s8 = host_pattern(8, 77);
        uint64_t before = memop_copies(c.e.iface());
        ASSERT_UCS_OK(uct_ep_put_short(c.ep, s8.data(), 8, dev.ptr + 1024, 0));
        EXPECT_EQ(before + 1, memop_copies(c.e.iface()));
        EXPECT_TRUE(landed_between_guards(dev.ptr, 1024, s8));

        /* A stream with a copy still queued: the writes would read their
         * source before that copy ran, so a plain copy follows it instead. */
        std::vector<unsigned char> big = host_pattern(512 << 10, 5);
        std::vector<unsigned char> tail = host_pattern(8, 99);
        uct_iov_t big_iov  = make_iov((CUdeviceptr)big.data(), big.size());
        uct_iov_t tail_iov = make_iov((CUdeviceptr)tail.data(), tail.size());
        ucx_test::uct_test_completion big_c, tail_c;
        ASSERT_CU(cuMemsetD8(dev.ptr, 0xEE, 1 << 20));
        before = memop_copies(c.e.iface());
        ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(c.ep, &big_iov, 1, dev.ptr + 4096, 0,
                                                   &big_c.comp));
        ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(c.ep, &tail_iov, 1, dev.ptr + 64, 0,
                                                   &tail_c.comp));
        ASSERT_TRUE(wait_comp(c.e, tail_c));
        ASSERT_TRUE(wait_comp(c.e, big_c));
        EXPECT_EQ(before, memop_copies(c.e.iface()));
        EXPECT_TRUE(landed_between_guards(dev.ptr, 64, tail));

        /* The driver refuses writes to stream-ordered pool memory: such a
         * copy falls back to cuMemcpyAsync (data intact), and ordinary
         * device memory keeps the writes. */
        allocation pool;
        ASSERT_CU(pool.allocate(mem_kind::async_default_pool, 1 << 16));
        for (int round = 0; round < 2; ++round) {
            ASSERT_CU(cuMemsetD8(pool.ptr, 0xEE, 4096));
            ASSERT_CU(cuCtxSynchronize());
            before = memop_copies(c.e.iface());
            ASSERT_UCS_OK(uct_ep_put_short(c.ep, s8.data(), 8, pool.ptr + 64, 0));
            EXPECT_EQ(before, memop_copies(c.e.iface())) << "round " << round;
            EXPECT_TRUE(landed_between_guards(pool.ptr, 64, s8)) << "round " << round;
        }
        ASSERT_CU(cuMemsetD8(dev.ptr, 0xEE, 4096));
        ASSERT_UCS_OK(uct_ep_put_short(c.ep, s8.data(), 8, dev.ptr + 64, 0));
        EXPECT_EQ(before + 1, memop_copies(c.e.iface()));
        EXPECT_TRUE(landed_between_guards(dev.ptr, 64, s8));
    });
}

TEST_F(test_uct_cuda_copy, htod_memop_max_zero_disables_and_too_large_is_refused)
{
    in_child([] {
        setenv("UCX_CUDA_COPY_HTOD_MEMOP_MAX", "0", 1);
        init_device();
        {
            copy_ctx c;
            allocation dev;
            ASSERT_CU(dev.allocate(mem_kind::legacy, 1 << 16));
            ASSERT_CU(cuMemsetD8(dev.ptr, 0xEE, 4096));
            std::vector<unsigned char> s8 = host_pattern(8, 3);
            ASSERT_UCS_OK(uct_ep_put_short(c.ep, s8.data(), 8, dev.ptr + 64, 0));
            EXPECT_EQ(0u, memop_copies(c.e.iface()));
            EXPECT_TRUE(landed_between_guards(dev.ptr, 64, s8));
        }

        setenv("UCX_CUDA_COPY_HTOD_MEMOP_MAX", "513", 1);
        std::string why = copy_ctx_refusal();
        EXPECT_NE(std::string::npos, why.find("Invalid parameter")) << why;
    });
}

/* UCXX sets UCX_CUDA_COPY_MAX_REG_RATIO=1.0 on GPUs whose BAR1 covers their
 * memory: accepted (it was an unknown variable, warned about at every import);
 * a ratio outside 0 .. 1 is refused naming the variable. */
TEST_F(test_uct_cuda_copy, max_reg_ratio_of_ucxx_is_accepted_and_out_of_range_refused)
{
    in_child([] {
        setenv("UCX_CUDA_COPY_MAX_REG_RATIO", "1.0", 1);
        init_device();
        {
            copy_ctx c;
            allocation dev;
            ASSERT_CU(dev.allocate(mem_kind::legacy, 4096));
            ASSERT_CU(cuMemsetD8(dev.ptr, 0xEE, 4096));
            std::vector<unsigned char> s8 = host_pattern(8, 5);
            ASSERT_UCS_OK(uct_ep_put_short(c.ep, s8.data(), 8, dev.ptr + 64, 0));
            EXPECT_TRUE(landed_between_guards(dev.ptr, 64, s8));
        }
        /* the md refuses to open, so the transport is not offered */
        setenv("UCX_CUDA_COPY_MAX_REG_RATIO", "1.5", 1);
        std::string why = copy_ctx_refusal();
        EXPECT_NE(std::string::npos, why.find("cuda_copy not found")) << why;
    });
}

/* One process, two GPUs: memory of device 1 that device 0 may not touch
 * (VMM and pool memory are granted to device 1 only), copied by an iface
 * opened while device 0 was current. The copies must run on device 1. */
TEST_F(test_uct_cuda_copy, copies_memory_of_another_device_on_that_device)
{
    if (device_count() < 2) {
        GTEST_SKIP() << "needs 2 GPUs, found " << device_count();
    }
    in_child([] {
        const mem_kind kinds[] = {mem_kind::vmm_posix_fd, mem_kind::pool_posix_fd,
                                  mem_kind::legacy};
        const size_t size = 2ul << 20;
        CUcontext ctx1;
        CUdevice dev1;

        init_device(0);
        ASSERT_CU(cuDeviceGet(&dev1, 1));
        ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx1, dev1));
        copy_ctx c; /* home: device 0 */

        for (mem_kind k : kinds) {
            allocation mem;
            ASSERT_CU(cuCtxPushCurrent(ctx1));
            ASSERT_CU(mem.allocate(k, size, 1));
            ASSERT_CU(cuCtxPopCurrent(&ctx1));

            /* short + bcopy, host <-> device 1 */
            std::vector<unsigned char> src = host_pattern(1000, 11);
            ASSERT_UCS_OK(uct_ep_put_short(c.ep, src.data(), (unsigned)src.size(),
                                           mem.ptr + 64, 0)) << kind_name(k);
            std::vector<unsigned char> back(src.size(), 0);
            ASSERT_UCS_OK(uct_ep_get_bcopy(c.ep,
                                           [](void *arg, const void *data,
                                              size_t length) {
                                               memcpy(arg, data, length);
                                           },
                                           back.data(), back.size(), mem.ptr + 64, 0,
                                           NULL)) << kind_name(k);
            EXPECT_TRUE(src == back) << kind_name(k);

            /* zcopy, host -> device 1 -> host, then checked by device 1 */
            std::vector<unsigned char> big = host_pattern(size - 4096, 5);
            std::vector<unsigned char> out(big.size(), 0);
            uct_iov_t put_iov = make_iov((CUdeviceptr)big.data(), big.size());
            EXPECT_UCS_OK(zcopy_wait(c.e, [&](uct_completion_t *comp) {
                return uct_ep_put_zcopy(c.ep, &put_iov, 1, mem.ptr + 4096, 0, comp);
            })) << kind_name(k);
            uct_iov_t get_iov = make_iov((CUdeviceptr)out.data(), out.size());
            EXPECT_UCS_OK(zcopy_wait(c.e, [&](uct_completion_t *comp) {
                return uct_ep_get_zcopy(c.ep, &get_iov, 1, mem.ptr + 4096, 0, comp);
            })) << kind_name(k);
            EXPECT_TRUE(big == out) << kind_name(k);

            /* A flush covers the other device's stream too. */
            uct_iov_t again = make_iov((CUdeviceptr)big.data(), big.size());
            uct_completion_t comp = {};
            comp.count  = 1;
            comp.func   = [](uct_completion_t *) {};
            ucs_status_t status = uct_ep_put_zcopy(c.ep, &again, 1, mem.ptr + 4096,
                                                   0, &comp);
            ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS));
            uct_completion_t fcomp = {};
            fcomp.count = 1;
            fcomp.func  = [](uct_completion_t *) {};
            status = uct_iface_flush(c.e.iface(), 0, &fcomp);
            for (int i = 0; (status == UCS_INPROGRESS) && (fcomp.count > 0) &&
                            (i < 1000000); ++i) {
                uct_worker_progress(c.e.worker());
            }
            EXPECT_TRUE((status == UCS_OK) || (fcomp.count == 0)) << kind_name(k);
            EXPECT_EQ(0, comp.count) << kind_name(k);

            ASSERT_CU(cuCtxPushCurrent(ctx1));
            std::vector<unsigned char> direct(big.size(), 0);
            EXPECT_EQ(CUDA_SUCCESS, cuMemcpyDtoH(direct.data(), mem.ptr + 4096,
                                                 direct.size()));
            EXPECT_TRUE(big == direct) << kind_name(k);
            ASSERT_CU(mem.release());
            ASSERT_CU(cuCtxPopCurrent(&ctx1));
        }
        EXPECT_CU(cuDevicePrimaryCtxRelease(dev1));
    });
}

TEST_F(test_uct_cuda_copy, completion_waits_for_late_stream_work)
{
    if (!is_model()) {
        GTEST_SKIP() << "CUDASIM_ASYNC exists only on the model";
    }
    in_child([] {
        init_late_streams("3000");
        copy_ctx c;
        allocation dev;
        const size_t size = 1 << 20;
        ASSERT_CU(dev.allocate(mem_kind::legacy, size));

        std::vector<unsigned char> src = host_pattern(size, 11);
        std::vector<unsigned char> dst(size, 0);
        uct_iov_t put_iov = make_iov((CUdeviceptr)src.data(), size);
        uct_iov_t get_iov = make_iov((CUdeviceptr)dst.data(), size);

        ucx_test::uct_test_completion put_c, get_c;
        ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(c.ep, &put_iov, 1, dev.ptr, 0,
                                                   &put_c.comp));
        ASSERT_EQ(UCS_INPROGRESS, uct_ep_get_zcopy(c.ep, &get_iov, 1, dev.ptr, 0,
                                                   &get_c.comp));
        /* The stream is still busy: a flush cannot be done yet. */
        EXPECT_EQ(UCS_INPROGRESS, uct_iface_flush(c.e.iface(), 0, NULL));
        EXPECT_FALSE(get_c.done());
        ASSERT_TRUE(wait_comp(c.e, get_c));
        EXPECT_TRUE(put_c.done());
        EXPECT_TRUE(src == dst);
        EXPECT_UCS_OK(uct_iface_flush(c.e.iface(), 0, NULL));
    });
}

/* No fd tells a copy's end: arming answers BUSY while one runs, so that a
 * caller about to sleep on the worker's fd polls instead. */
TEST_F(test_uct_cuda_copy, event_arm_is_busy_while_copies_run)
{
    if (!is_model()) {
        GTEST_SKIP() << "CUDASIM_ASYNC exists only on the model";
    }
    in_child([] {
        init_late_streams("3000");
        copy_ctx c;
        allocation dev;
        uct_iface_attr_t attr;
        const size_t size = 1 << 20;
        ASSERT_CU(dev.allocate(mem_kind::legacy, size));
        EXPECT_UCS_OK(uct_iface_query(c.e.iface(), &attr));
        EXPECT_EQ((uint64_t)UCT_IFACE_FLAG_EVENT_SEND_COMP,
                  attr.cap.event_flags &
                      (UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_FD));
        EXPECT_UCS_OK(uct_iface_event_arm(c.e.iface(), UCT_EVENT_SEND_COMP));

        std::vector<unsigned char> src = host_pattern(size, 5);
        uct_iov_t iov                  = make_iov((CUdeviceptr)src.data(), size);
        ucx_test::uct_test_completion comp;
        ASSERT_EQ(UCS_INPROGRESS,
                  uct_ep_put_zcopy(c.ep, &iov, 1, dev.ptr, 0, &comp.comp));
        EXPECT_EQ(UCS_ERR_BUSY, uct_iface_event_arm(c.e.iface(), UCT_EVENT_SEND_COMP));
        /* Receives never come to a copy engine: nothing to wait for. */
        EXPECT_UCS_OK(uct_iface_event_arm(c.e.iface(), UCT_EVENT_RECV));
        ASSERT_TRUE(wait_comp(c.e, comp));
        EXPECT_UCS_OK(uct_iface_event_arm(c.e.iface(), UCT_EVENT_SEND_COMP));
    });
}

/* A driver without stream memory operations: small host-to-device copies
 * fall back to cuMemcpyAsync, data intact. */
TEST_F(test_uct_cuda_copy, without_stream_memory_operations_small_copies_fall_back)
{
    if (!is_model()) {
        GTEST_SKIP() << "refusing memory operations needs the model";
    }
    in_child([] {
        setenv("CUDASIM_MEMOPS", "0", 1);
        init_late_streams("1000");
        copy_ctx c;
        allocation dev;
        ASSERT_CU(dev.allocate(mem_kind::legacy, 1 << 20));
        for (int round = 0; round < 2; ++round) {
            for (size_t size : {size_t(8), size_t(64)}) {
                ASSERT_CU(cuMemsetD8(dev.ptr, 0xEE, 4096));
                ASSERT_CU(cuCtxSynchronize());
                std::vector<unsigned char> src = host_pattern(size, 4 + round);
                uct_iov_t iov = make_iov((CUdeviceptr)src.data(), size);
                EXPECT_UCS_OK(zcopy_wait(c.e, [&](uct_completion_t *comp) {
                    return uct_ep_put_zcopy(c.ep, &iov, 1, dev.ptr + 64, 0, comp);
                })) << size;
                EXPECT_TRUE(landed_between_guards(dev.ptr, 64, src)) << size;
            }
        }
        EXPECT_EQ(0u, memop_copies(c.e.iface()));
    });
}

TEST_F(test_uct_cuda_copy, flush_completion_follows_outstanding_copies)
{
    in_child([] {
        setenv("CUDASIM_ASYNC", "1", 1);
        init_device();
        copy_ctx c;
        allocation a, b;
        const size_t size = 2 << 20;
        ASSERT_CU(a.allocate(mem_kind::legacy, size));
        ASSERT_CU(b.allocate(mem_kind::legacy, size));
        write_pattern(a.ptr, size, 21);

        uct_iov_t iov = make_iov(a.ptr, size);
        ucx_test::uct_test_completion op;
        ucs_status_t st = uct_ep_put_zcopy(c.ep, &iov, 1, b.ptr, 0, &op.comp);
        ASSERT_TRUE((st == UCS_OK) || (st == UCS_INPROGRESS));
        c.e.flush();
        EXPECT_TRUE((st == UCS_OK) || op.done());
        EXPECT_TRUE(check_pattern(b.ptr, size, 21));
    });
}

TEST_F(test_uct_cuda_copy, registration_pins_host_memory_until_deregistered)
{
    in_child([] {
        init_device();
        copy_ctx c;
        std::vector<char> host(1 << 20);
        CUdeviceptr host_ptr = (CUdeviceptr)host.data();
        unsigned type        = 0;
        uct_mem_h memh;

        ASSERT_UCS_OK(uct_md_mem_reg(c.e.md(), host.data(), host.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &memh));
        /* The driver knows registered host memory, and only that. */
        EXPECT_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                        host_ptr + 100));
        EXPECT_EQ((unsigned)CU_MEMORYTYPE_HOST, type);
        ASSERT_UCS_OK(uct_md_mem_dereg(c.e.md(), memh));
        EXPECT_NE(CUDA_SUCCESS, cuPointerGetAttribute(&type,
                                                      CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                      host_ptr + 100));
    });
}

TEST_F(test_uct_cuda_copy, registering_device_memory_sets_sync_memops_and_accepts_vmm)
{
    in_child([] {
        init_device();
        copy_ctx c;
        const mem_kind kinds[] = {mem_kind::legacy, mem_kind::vmm_posix_fd,
                                  mem_kind::pool_posix_fd};

        for (mem_kind k : kinds) {
            allocation a;
            uct_mem_h memh;
            ASSERT_CU(a.allocate(k, 2 << 20));
            /* VMM refuses the per-pointer flag; registration still works. */
            ASSERT_UCS_OK(uct_md_mem_reg(c.e.md(), (void*)a.ptr, a.size,
                                         UCT_MD_MEM_ACCESS_ALL, &memh)) << kind_name(k);
            EXPECT_UCS_OK(uct_md_mem_dereg(c.e.md(), memh));
        }

        unsigned flags = 0;
        ASSERT_CU(cuCtxGetFlags(&flags));
        EXPECT_TRUE(flags & CU_CTX_SYNC_MEMOPS) << std::hex << flags;
    });
}

TEST_F(test_uct_cuda_copy, operations_work_from_a_thread_without_current_context)
{
    in_child([] {
        init_device();
        copy_ctx c;
        allocation dev;
        const size_t size = 100000;
        ASSERT_CU(dev.allocate(mem_kind::legacy, 1 << 20));
        std::vector<unsigned char> src = host_pattern(size, 17), dst(size, 0);

        std::thread t([&] {
            CUcontext cur = NULL;
            EXPECT_CU(cuCtxGetCurrent(&cur));
            EXPECT_TRUE(cur == NULL);
            uct_iov_t put_iov = make_iov((CUdeviceptr)src.data(), size);
            uct_iov_t get_iov = make_iov((CUdeviceptr)dst.data(), size);
            EXPECT_UCS_OK(zcopy_wait(c.e, [&](uct_completion_t *comp) {
                return uct_ep_put_zcopy(c.ep, &put_iov, 1, dev.ptr, 0, comp);
            }));
            EXPECT_UCS_OK(uct_ep_put_short(c.ep, src.data(), 64, dev.ptr + size, 0));
            EXPECT_UCS_OK(zcopy_wait(c.e, [&](uct_completion_t *comp) {
                return uct_ep_get_zcopy(c.ep, &get_iov, 1, dev.ptr, 0, comp);
            }));
            EXPECT_CU(cuCtxGetCurrent(&cur));
            EXPECT_TRUE(cur == NULL) << "the context must be popped again";
        });
        t.join();
        EXPECT_TRUE(src == dst);
    });
}

TEST_F(test_uct_cuda_copy, md_allocates_pinned_device_and_managed_memory)
{
    in_child([] {
        init_device();
        copy_ctx c;
        ASSERT_TRUE(c.e.md_attr().cap.flags & UCT_MD_FLAG_ALLOC);
        const ucs_memory_type_t types[] = {UCS_MEMORY_TYPE_HOST, UCS_MEMORY_TYPE_CUDA,
                                           UCS_MEMORY_TYPE_CUDA_MANAGED};

        for (ucs_memory_type_t t : types) {
            size_t length = 3 << 20;
            void *ptr     = NULL;
            uct_mem_h memh;
            ASSERT_UCS_OK(uct_md_mem_alloc(c.e.md(), &length, &ptr, t, 0, "test",
                                           &memh)) << ucs_memory_type_names[t];
            EXPECT_GE(length, 3u << 20);

            unsigned cu_type = 0, legacy = 0;
            EXPECT_CU(cuPointerGetAttribute(&cu_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                            (CUdeviceptr)ptr));
            ucs_memory_type_t detected = UCS_MEMORY_TYPE_UNKNOWN;
            ucs_status_t st = uct_md_detect_memory_type(c.e.md(), ptr, length, &detected);
            if (t == UCS_MEMORY_TYPE_HOST) {
                EXPECT_EQ((unsigned)CU_MEMORYTYPE_HOST, cu_type);
                EXPECT_EQ(UCS_ERR_INVALID_ADDR, st);
            } else {
                EXPECT_UCS_OK(st);
                EXPECT_EQ(t, detected);
            }
            if (t == UCS_MEMORY_TYPE_CUDA) {
                /* Staging fragments made here can be exported by cuda_ipc. */
                EXPECT_CU(cuPointerGetAttribute(
                        &legacy, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                        (CUdeviceptr)ptr));
                EXPECT_EQ(1u, legacy);
            }

            /* The memory works for copies. */
            std::vector<unsigned char> src = host_pattern(4096, 1), dst(4096, 0);
            uct_iov_t put_iov = make_iov((CUdeviceptr)src.data(), src.size());
            uct_iov_t get_iov = make_iov((CUdeviceptr)dst.data(), dst.size());
            EXPECT_UCS_OK(zcopy_wait(c.e, [&](uct_completion_t *comp) {
                return uct_ep_put_zcopy(c.ep, &put_iov, 1, (uintptr_t)ptr + 100, 0, comp);
            }));
            EXPECT_UCS_OK(zcopy_wait(c.e, [&](uct_completion_t *comp) {
                return uct_ep_get_zcopy(c.ep, &get_iov, 1, (uintptr_t)ptr + 100, 0, comp);
            }));
            EXPECT_TRUE(src == dst);
            EXPECT_UCS_OK(uct_md_mem_free(c.e.md(), memh));
        }
    });
}

/* uct_md_mem_alloc_on_device(): device memory on the GPU named, whichever is
 * current; no device named: the current one. The memory is legacy-IPC
 * capable either way (staging fragments) and frees cleanly. */
TEST_F(test_uct_cuda_copy, md_allocates_device_memory_on_the_gpu_named)
{
    if (device_count() < 2) {
        GTEST_SKIP() << "needs two CUDA devices";
    }
    in_child([] {
        init_device(0);
        copy_ctx c;
        uct_md_mem_attr_t attr;
        void *probe = NULL;
        size_t length = 1 << 20;
        uct_mem_h memh;

        /* The system device of GPU 1, as the layers above get it: from a
         * buffer allocated there. */
        CUdeviceptr on1 = 0;
        init_device(1);
        ASSERT_CU(cuMemAlloc(&on1, 4096));
        init_device(0);
        attr.field_mask = UCT_MD_MEM_ATTR_FIELD_SYS_DEV;
        ASSERT_UCS_OK(uct_md_mem_query(c.e.md(), (void*)on1, 1, &attr));

        const struct {
            uint8_t sys_dev;
            int     device;
        } cases[] = {{attr.sys_dev, 1}, {UCS_SYS_DEVICE_ID_UNKNOWN, 0}};
        for (auto &t : cases) {
            length = 1 << 20;
            ASSERT_UCS_OK(uct_md_mem_alloc_on_device(c.e.md(), &length, &probe,
                                                     UCS_MEMORY_TYPE_CUDA, t.sys_dev,
                                                     0, "test", &memh));
            int ordinal = -1;
            unsigned legacy = 0;
            EXPECT_CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                            (CUdeviceptr)probe));
            EXPECT_EQ(t.device, ordinal);
            EXPECT_CU(cuPointerGetAttribute(
                    &legacy, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                    (CUdeviceptr)probe));
            EXPECT_EQ(1u, legacy);
            CUdevice current = -1;
            EXPECT_CU(cuCtxGetDevice(&current));
            EXPECT_EQ(0, current) << "the current device is left as it was";
            EXPECT_UCS_OK(uct_md_mem_free(c.e.md(), memh));
        }
        EXPECT_CU(cuMemFree(on1));
    });
}

namespace {

batch_stats copy_batch(uct_iface_h iface)
{
    return iface_batch_stats("uct_cuda_copy_iface_batch_stats", iface);
}

/* One put_zcopy from @a src_off of the device source, or of host memory. */
struct dev_copy {
    size_t src_off, dst_off, len;
    bool   host_src;
};

/*
 * Post @a ops as put_zcopy into one device buffer without progress in
 * between (the first keeps the queue busy), wait for all, and check every
 * byte of the destination, untouched bytes included, and that @a launches
 * kernels carried @a copies of them.
 */
void run_device_copies(const char *batch_max, const std::vector<dev_copy> &ops,
                       uint64_t launches, uint64_t copies,
                       const char *launch_fail = nullptr)
{
    const size_t size = 8ul << 20;

    if (is_model()) {
        if (launch_fail != nullptr) {
            setenv("CUDASIM_LAUNCH_FAIL", launch_fail, 1);
        }
        init_late_streams("2000"); /* copies finish late */
    } else {
        init_device();
    }
    setenv("UCX_CUDA_COPY_BATCH_COPY_MAX", batch_max, 1);
    copy_ctx c;
    allocation src, dst;
    ASSERT_CU(src.allocate(mem_kind::legacy, size));
    ASSERT_CU(dst.allocate(mem_kind::legacy, size));
    std::vector<unsigned char> dev_data = host_pattern(size, 3);
    std::vector<unsigned char> host_data = host_pattern(size, 101);
    ASSERT_CU(cuMemcpyHtoD(src.ptr, dev_data.data(), size));
    ASSERT_CU(cuMemsetD8(dst.ptr, 0, size));
    ASSERT_CU(cuCtxSynchronize());

    std::vector<ucx_test::uct_test_completion> comps(ops.size());
    std::vector<unsigned char> want(size, 0);
    for (size_t i = 0; i < ops.size(); ++i) {
        const dev_copy &op = ops[i];
        CUdeviceptr from = op.host_src ? (CUdeviceptr)(host_data.data() + op.src_off)
                                       : src.ptr + op.src_off;
        uct_iov_t iov = make_iov(from, op.len);
        ASSERT_EQ(UCS_INPROGRESS, uct_ep_put_zcopy(c.ep, &iov, 1, dst.ptr + op.dst_off,
                                                   0, &comps[i].comp))
                << "copy " << i;
        const std::vector<unsigned char> &from_data = op.host_src ? host_data : dev_data;
        memcpy(&want[op.dst_off], &from_data[op.src_off], op.len);
    }
    for (size_t i = 0; i < comps.size(); ++i) {
        ASSERT_TRUE(wait_comp(c.e, comps[i])) << "copy " << i;
        EXPECT_UCS_OK(comps[i].comp.status) << "copy " << i;
    }
    batch_stats st = copy_batch(c.e.iface());
    EXPECT_EQ(launches, st.launches);
    EXPECT_EQ(copies, st.copies);

    std::vector<unsigned char> got(size);
    ASSERT_CU(cuMemcpyDtoH(got.data(), dst.ptr, size));
    size_t bad = 0;
    for (size_t i = 0; i < size; ++i) {
        bad += (got[i] != want[i]);
    }
    EXPECT_EQ(0u, bad) << "bytes differing in the destination";
}

/* With BATCH_COPY_MAX=1M: which copies wait for one launch. */
const std::vector<dev_copy> k_copy_mix = {
    {0, 0, 2ul << 20, false},                          /* above the limit: at once */
    {(2ul << 20), (2ul << 20) + 16, 65536 + 5, false}, /* odd length: batched */
    {(3ul << 20), (3ul << 20) + 4096, 16, false},      /* one word: batched */
    {(1ul << 20), (5ul << 20) + 64, 1ul << 20, false}, /* at the limit: batched */
    /* Issued at once, after launching the three that wait (stream order):
     * the unaligned copy overwrites part of the first one's destination,
     * which shows the order (the model runs stream work late). */
    {(3ul << 20) + 1, (2ul << 20) + 16 + 1001, 100, false}, /* unaligned */
    {0, (2ul << 20) + 131072, 4096, true},             /* host source */
};

} // namespace

TEST_F(test_uct_cuda_copy, device_copies_posted_while_busy_are_one_launch)
{
    if (!copy_kernel_built()) {
        GTEST_SKIP() << "built without nvcc: no copy kernel";
    }
    /* The rendezvous pipeline's copies into device fragments are these: a
     * stream of device-to-device puts while earlier ones run. */
    in_child([] {
        run_device_copies("1M", k_copy_mix, 1, 3);
    });
}

TEST_F(test_uct_cuda_copy, batch_copy_max_zero_issues_every_device_copy_at_once)
{
    in_child([] {
        run_device_copies("0", k_copy_mix, 0, 0);
    });
}

TEST_F(test_uct_cuda_copy, failed_launch_issues_the_device_copies_one_by_one)
{
    if (!is_model()) {
        GTEST_SKIP() << "launch failures are injected on the model only";
    }
    if (!copy_kernel_built()) {
        GTEST_SKIP() << "built without nvcc: no copy kernel";
    }
    /* The first launch fails: its three copies go out one by one, in
     * order, and every later copy at once; no launch counted. */
    in_child([] {
        run_device_copies("1M", k_copy_mix, 0, 0, "1");
    });
}

/* The cost model UCP's thresholds come from: one figure per copy
 * direction, put and get mirror each other, and UCX_CUDA_COPY_LAT/_BW
 * replace the defaults. */
TEST_F(test_uct_cuda_copy, estimate_perf_by_direction_and_configuration)
{
    const ucs_memory_type_t H = UCS_MEMORY_TYPE_HOST, D = UCS_MEMORY_TYPE_CUDA;

    in_child([&] {
        init_device();
        {
            copy_ctx c;
            uct_iface_h iface = c.e.iface();
            uct_perf_attr_t d2h = estimate_perf(iface, UCT_EP_OP_PUT_ZCOPY, D, H);
            uct_perf_attr_t h2d = estimate_perf(iface, UCT_EP_OP_PUT_ZCOPY, H, D);
            uct_perf_attr_t d2d = estimate_perf(iface, UCT_EP_OP_PUT_ZCOPY, D, D, 0, 0);
            uct_perf_attr_t peer = estimate_perf(iface, UCT_EP_OP_PUT_ZCOPY, D, D, 0, 1);

            /* GPU-FACTS.md: a small synchronous copy out of a GPU costs
             * more than one into it, device to device most. */
            EXPECT_GT(d2h.latency.c, h2d.latency.c);
            EXPECT_GT(d2d.latency.c, d2h.latency.c);
            /* cuda_copy_model_probe: 8.85 us to copy 8 bytes out of an
             * H200 into pageable memory and see it done */
            EXPECT_NEAR(8.85e-6, d2h.send_pre_overhead + d2h.latency.c +
                                 d2h.send_post_overhead, 1e-9);
            EXPECT_GT(d2h.send_post_overhead, 0.0);
            EXPECT_GT(d2d.bandwidth.dedicated, peer.bandwidth.dedicated);
            EXPECT_GT(peer.bandwidth.dedicated, d2h.bandwidth.dedicated);
            /* a get from device memory into host memory is a d2h copy */
            uct_perf_attr_t get = estimate_perf(iface, UCT_EP_OP_GET_ZCOPY, H, D);
            EXPECT_EQ(d2h.latency.c, get.latency.c);
            EXPECT_EQ(d2h.bandwidth.dedicated, get.bandwidth.dedicated);
            /* one-sided: the other side's CPU does nothing */
            EXPECT_EQ(0.0, d2h.recv_overhead);

            /* out of range, and an operation cuda_copy does not offer */
            uct_perf_attr_t bad;
            memset(&bad, 0, sizeof(bad));
            bad.field_mask        = UCT_PERF_ATTR_FIELD_OPERATION |
                                    UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE;
            bad.operation         = UCT_EP_OP_PUT_ZCOPY;
            bad.local_memory_type = UCS_MEMORY_TYPE_LAST;
            EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_iface_estimate_perf(iface, &bad));
            bad.local_memory_type = UCS_MEMORY_TYPE_HOST;
            bad.operation         = UCT_EP_OP_LAST;
            EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_iface_estimate_perf(iface, &bad));
            bad.operation = UCT_EP_OP_AM_SHORT;
            EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_iface_estimate_perf(iface, &bad));
        }

        setenv("UCX_CUDA_COPY_LAT", "25us", 1);
        setenv("UCX_CUDA_COPY_BW", "1G", 1);
        {
            copy_ctx c;
            for (auto dir : {std::make_pair(D, H), std::make_pair(H, D),
                             std::make_pair(D, D)}) {
                uct_perf_attr_t a = estimate_perf(c.e.iface(), UCT_EP_OP_PUT_ZCOPY,
                                                  dir.first, dir.second);
                EXPECT_NEAR(25e-6, a.latency.c, 1e-12);
                EXPECT_EQ(1024.0 * 1024 * 1024, a.bandwidth.dedicated);
            }
        }

        /* a bandwidth of 0 would make every byte cost forever */
        setenv("UCX_CUDA_COPY_BW", "0", 1);
        std::string why = copy_ctx_refusal();
        EXPECT_NE(std::string::npos, why.find("Invalid parameter")) << why;
    });
}
