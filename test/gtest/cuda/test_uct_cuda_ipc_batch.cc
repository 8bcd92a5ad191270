/*
 * Batched copies of the cuda_ipc transport (src/uct/cuda/cuda_batch.c):
 * gets and puts between a buffer of the importer's own GPU and an imported
 * one (of that GPU or, with UCX_CUDA_IPC_BATCH_PEER=y, another), posted
 * between two progress calls while the queue is busy, go out as one kernel
 * launch; the first copy on an idle queue, and everything else (host
 * memory, unaligned ends, copies above UCX_CUDA_IPC_BATCH_COPY_MAX) is
 * issued at once. Data is checked byte for byte,
 * untouched bytes included, and the iface's launch counters say which path
 * each copy took. On the model the kernel runs as its C version, which
 * refuses (CUDA_ERROR_ILLEGAL_ADDRESS) any copy a real kernel could not do.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "test_uct_cuda_ipc.h"

#include <uct/cuda/cuda_ipc.h>

#include <dlfcn.h>
#include <string.h>

#include <vector>

using namespace cuda_test;
using namespace uct_cuda_test;
using namespace uct_cuda_ipc_test;
using ucx_test::oob_channel;
using ucx_test::uct_test_entity;

namespace
{

/* The exporter's bytes: position-dependent, so a copy from the wrong
 * offset shows. */
unsigned char remote_byte(size_t i)
{
    return (unsigned char)(i * 7 + (i >> 9) + 3);
}

batch_stats get_batch_stats(uct_iface_h iface)
{
    return iface_batch_stats("uct_cuda_ipc_iface_batch_stats", iface);
}

/* On the model: cuLaunchKernel calls of this process, refused ones
 * included; -1 on the real driver. */
long long model_launch_calls()
{
    typedef unsigned long long (*fn_t)(void);
    fn_t fn = (fn_t)dlsym(RTLD_DEFAULT, "cudasim_kernel_launch_calls");

    return (fn == NULL) ? -1 : (long long)fn();
}

/* Exporter on @a device: SIZE bytes of remote_byte(), offered; after the
 * importer's barrier, the bytes at [PUT_AT, +PUT_LEN) must be its put. */
const size_t PUT_AT  = 3ul << 20;
const size_t PUT_LEN = 64 * 1024 + 48;

unsigned char put_byte(size_t i)
{
    return (unsigned char)(255 - i * 13);
}

ucx_test::process_fn_t exporter(int device, bool check_put,
                                mem_kind kind = mem_kind::legacy)
{
    return guarded([device, check_put, kind](oob_channel &ch) {
        init_device(device);
        std::unique_ptr<uct_test_entity> e(new_ipc_entity());
        allocation a;
        ASSERT_CU(a.allocate(kind, SIZE, device));
        std::vector<unsigned char> h(SIZE);
        for (size_t i = 0; i < SIZE; ++i) {
            h[i] = remote_byte(i);
        }
        ASSERT_CU(cuMemcpyHtoD(a.ptr, h.data(), SIZE));
        /* A copy from pageable memory may land after it returns, and the
         * importer reads through its own mapping, which waits for nothing
         * here (the model lands it only at a synchronisation). */
        ASSERT_CU(cuCtxSynchronize());
        ASSERT_TRUE(send_offer(ch, *e, a.ptr, SIZE));
        ASSERT_TRUE(ch.barrier());
        if (check_put) {
            ASSERT_CU(cuMemcpyDtoH(h.data(), a.ptr, SIZE));
            size_t bad = 0;
            for (size_t i = 0; i < SIZE; ++i) {
                unsigned char want = ((i >= PUT_AT) && (i < PUT_AT + PUT_LEN))
                                         ? put_byte(i - PUT_AT)
                                         : remote_byte(i);
                bad += (h[i] != want);
            }
            EXPECT_EQ(0u, bad) << "bytes differing in the exporter's buffer";
        }
        ASSERT_TRUE(ch.barrier());
    });
}

/* One get: local offset, remote offset, length, local buffer in host memory. */
struct get_op {
    size_t local, remote, len;
    bool host;
};

/*
 * Importer on @a device: post @a ops as gets with no progress in between,
 * then put PUT_LEN bytes, then wait for all; check every byte of both local
 * buffers and that @a launches kernels carried @a copies of them.
 */
ucx_test::process_fn_t importer(int device, config_t config, std::vector<get_op> ops,
                                uint64_t launches, uint64_t copies,
                                config_t model_env = config_t(), long long calls = -1)
{
    return guarded([=](oob_channel &ch) {
        if (is_model()) {
            setenv("CUDASIM_ASYNC", "1", 1); /* copies finish late */
            for (const auto &kv : model_env) {
                setenv(kv.first.c_str(), kv.second.c_str(), 1);
            }
        }
        init_device(device);
        allocation dev, src;
        ASSERT_CU(dev.allocate(mem_kind::legacy, SIZE, device));
        ASSERT_CU(src.allocate(mem_kind::legacy, PUT_LEN, device));
        ASSERT_CU(cuMemsetD8(dev.ptr, 0, SIZE));
        std::vector<unsigned char> host(SIZE, 0), h(SIZE);
        for (size_t i = 0; i < PUT_LEN; ++i) {
            h[i] = put_byte(i);
        }
        ASSERT_CU(cuMemcpyHtoD(src.ptr, h.data(), PUT_LEN));
        ASSERT_CU(cuCtxSynchronize());
        offer o;
        ASSERT_TRUE(recv_offer(ch, o));
        {
            std::unique_ptr<uct_test_entity> e(new_ipc_entity(config));
            imported imp(*e, o);
            ASSERT_UCS_OK(imp.status);
            std::vector<ucx_test::uct_test_completion> comps(ops.size() + 1);
            for (size_t i = 0; i < ops.size(); ++i) {
                CUdeviceptr l = ops[i].host ? (CUdeviceptr)(host.data() + ops[i].local)
                                            : dev.ptr + ops[i].local;
                uct_iov_t iov = make_iov(l, ops[i].len);
                ucs_status_t st =
                    uct_ep_get_zcopy(imp.ep, &iov, 1, imp.remote + ops[i].remote,
                                     imp.bundle.rkey, &comps[i].comp);
                ASSERT_EQ(UCS_INPROGRESS, st) << "get " << i;
            }
            uct_iov_t piov = make_iov(src.ptr, PUT_LEN);
            ASSERT_EQ(UCS_INPROGRESS,
                      uct_ep_put_zcopy(imp.ep, &piov, 1, imp.remote + PUT_AT,
                                       imp.bundle.rkey, &comps.back().comp));
            for (size_t i = 0; i < comps.size(); ++i) {
                ASSERT_TRUE(wait_comp(*e, comps[i])) << "op " << i;
                EXPECT_UCS_OK(comps[i].comp.status) << "op " << i;
            }
            batch_stats st = get_batch_stats(e->iface());
            EXPECT_EQ(launches, st.launches);
            EXPECT_EQ(copies, st.copies);
            if (model_launch_calls() >= 0) {
                /* Launches the model refused count as calls, not launches. */
                EXPECT_EQ((calls >= 0) ? calls : (long long)launches,
                          model_launch_calls());
            }
        }
        /* Every byte: the gets' ranges hold the remote bytes, the rest 0. */
        std::vector<unsigned char> want_dev(SIZE, 0), want_host(SIZE, 0);
        for (const get_op &op : ops) {
            std::vector<unsigned char> &w = op.host ? want_host : want_dev;
            for (size_t k = 0; k < op.len; ++k) {
                w[op.local + k] = remote_byte(op.remote + k);
            }
        }
        ASSERT_CU(cuMemcpyDtoH(h.data(), dev.ptr, SIZE));
        size_t bad_dev = 0, bad_host = 0;
        for (size_t i = 0; i < SIZE; ++i) {
            bad_dev += (h[i] != want_dev[i]);
            bad_host += (host[i] != want_host[i]);
        }
        EXPECT_EQ(0u, bad_dev) << "bytes differing in the device buffer";
        EXPECT_EQ(0u, bad_host) << "bytes differing in the host buffer";
        ASSERT_TRUE(ch.barrier());
        ASSERT_TRUE(ch.barrier());
    });
}

/* Gets of every kind of case, with BATCH_COPY_MAX=512K (the first makes
 * the queue busy). None reads what the put after them writes (PUT_AT..):
 * copies of one launch run in no order (the model runs them backwards). */
const std::vector<get_op> mixed_ops = {
    {0, 0, 1ul << 20, false},                         /* above the limit: direct */
    {2ul << 20, (2ul << 20) + 1, 100, false},         /* unaligned remote: direct */
    {(2ul << 20) + 4097, 4096, 64, false},            /* unaligned local: direct */
    {0, 100 * 1024, 4096, true},                      /* host memory: direct */
    {(3ul << 20) + 4096, 7, 1, false},                /* one byte, unaligned: direct */
    {(1ul << 20) + 16, 65536 + 32, 65536 + 5, false}, /* odd length: batched */
    {(2ul << 20) + 8192, 12288, 16, false},           /* one word: batched */
    {(2ul << 20) + 12288, 8192, 7, false},            /* 7 aligned bytes: batched */
    {(2ul << 20) + 65536, 512 * 1024, 512 * 1024, false}, /* at the limit: batched */
};

} // namespace

class test_uct_cuda_ipc_batch : public ::testing::Test
{
};

#define SKIP_WITHOUT_KERNEL()                                                            \
    do {                                                                                 \
        if (!copy_kernel_built()) {                                                      \
            GTEST_SKIP() << "built without nvcc: no copy kernel";                        \
        }                                                                                \
    } while (0)

TEST_F(test_uct_cuda_ipc_batch, same_gpu_copies_between_progress_calls_are_one_launch)
{
    SKIP_WITHOUT_KERNEL();
    /* The last 4 gets and the put qualify: one launch carries all 5. */
    cuda_two_processes(importer(0, {{"BATCH_COPY_MAX", "512K"}}, mixed_ops, 1, 5),
                       exporter(0, true));
}

TEST_F(test_uct_cuda_ipc_batch, a_copy_issued_at_once_first_launches_those_waiting)
{
    SKIP_WITHOUT_KERNEL();
    /* Order on the stream is the order asked for: the unaligned get makes
     * the two before it go out as a launch first; the next one and the put
     * make a second launch. */
    std::vector<get_op> ops = {{0, 0, 4096, false},
                               {8192, 8192, 4096, false},
                               {16384, 16384, 4096, false},
                               {32768, 32769, 4096, false},
                               {65536, 65536, 4096, false}};
    cuda_two_processes(importer(0, config_t(), ops, 2, 4), exporter(0, true));
}

TEST_F(test_uct_cuda_ipc_batch, more_copies_than_one_launch_holds_take_several)
{
    SKIP_WITHOUT_KERNEL();
    std::vector<get_op> ops;
    for (size_t i = 0; i < 40; ++i) {
        ops.push_back({i * 4096, (i * 37 % 64) * 16384, 16 * (i + 1), false});
    }
    /* 40 gets + 1 put: the first get finds the queue idle and goes at
     * once, the other 40 copies wait: 32 per launch. */
    cuda_two_processes(importer(0, config_t(), ops, 2, 40), exporter(0, true));
}

TEST_F(test_uct_cuda_ipc_batch, a_copy_alone_on_an_idle_queue_is_issued_at_once)
{
    SKIP_WITHOUT_KERNEL();
    /* Only the put, on an idle queue: no waiting, no launch. */
    cuda_two_processes(importer(0, config_t(), {}, 0, 0), exporter(0, true));
}

TEST_F(test_uct_cuda_ipc_batch, a_copy_alone_at_progress_is_no_launch)
{
    SKIP_WITHOUT_KERNEL();
    /* One get makes the queue busy, the put waits for company, finds none,
     * and goes out as an ordinary copy: no launch. */
    cuda_two_processes(importer(0, config_t(), {{0, 0, 4096, false}}, 0, 0),
                       exporter(0, true));
}

TEST_F(test_uct_cuda_ipc_batch, batch_copy_max_zero_issues_every_copy_at_once)
{
    cuda_two_processes(importer(0, {{"BATCH_COPY_MAX", "0"}}, mixed_ops, 0, 0),
                       exporter(0, true));
}

TEST_F(test_uct_cuda_ipc_batch, driver_refusing_the_kernel_gets_copies_one_by_one)
{
    if (!is_model()) {
        GTEST_SKIP() << "the driver's refusal is injected on the model only";
    }
    /* As a driver too old for the PTX: the module does not load, every copy
     * is issued at once, all data arrives. */
    cuda_two_processes(importer(0, {{"BATCH_COPY_MAX", "512K"}}, mixed_ops, 0, 0,
                                {{"CUDASIM_KERNELS", "0"}}),
                       exporter(0, true));
}

TEST_F(test_uct_cuda_ipc_batch, failed_launch_falls_back_to_driver_copies)
{
    SKIP_WITHOUT_KERNEL();
    if (!is_model()) {
        GTEST_SKIP() << "launch failures are injected on the model only";
    }
    /* The launch fails: the 5 gathered copies go out one by one (and are
     * not counted as carried by a launch), the kernel is not tried again,
     * and no byte is lost. */
    cuda_two_processes(importer(0, {{"BATCH_COPY_MAX", "512K"}}, mixed_ops, 0, 0,
                                {{"CUDASIM_LAUNCH_FAIL", "1"}}, 1),
                       exporter(0, true));
}

TEST_F(test_uct_cuda_ipc_batch, local_memory_of_another_context_is_never_batched)
{
    SKIP_WITHOUT_KERNEL();
    /* The iface works in the primary context; the local buffers come from a
     * second context on the same GPU, whose cuMemAlloc memory a kernel of
     * the primary context cannot touch. Every copy goes out at once. */
    cuda_two_processes(
        guarded([](oob_channel &ch) {
            if (is_model()) {
                setenv("CUDASIM_ASYNC", "1", 1);
            }
            init_device(0);
            CUcontext primary, other;
            CUdevice dev;
            ASSERT_CU(cuCtxGetCurrent(&primary));
            ASSERT_CU(cuDeviceGet(&dev, 0));
            ASSERT_CU(cuCtxCreate(&other, NULL, 0, dev));
            /* Three buffers: the first get finds the queue idle, the
             * other two would gather into a launch. */
            CUdeviceptr a, b, c;
            const size_t len = 65536;
            ASSERT_CU(cuMemAlloc(&a, len));
            ASSERT_CU(cuMemAlloc(&b, len));
            ASSERT_CU(cuMemAlloc(&c, len));
            ASSERT_CU(cuMemsetD8(a, 0, len));
            ASSERT_CU(cuMemsetD8(b, 0, len));
            ASSERT_CU(cuMemsetD8(c, 0, len));
            ASSERT_CU(cuCtxSynchronize());
            ASSERT_CU(cuCtxSetCurrent(primary));
            offer o;
            ASSERT_TRUE(recv_offer(ch, o));
            {
                std::unique_ptr<uct_test_entity> e(new_ipc_entity());
                imported imp(*e, o);
                ASSERT_UCS_OK(imp.status);
                ucx_test::uct_test_completion comps[3];
                CUdeviceptr bufs[3] = {a, b, c};
                for (int k = 0; k < 3; ++k) {
                    uct_iov_t iov = make_iov(bufs[k], len);
                    ASSERT_EQ(UCS_INPROGRESS,
                              uct_ep_get_zcopy(imp.ep, &iov, 1, imp.remote + 4096 * k,
                                               imp.bundle.rkey, &comps[k].comp));
                }
                for (int k = 0; k < 3; ++k) {
                    ASSERT_TRUE(wait_comp(*e, comps[k]));
                    EXPECT_UCS_OK(comps[k].comp.status);
                }
                batch_stats st = get_batch_stats(e->iface());
                EXPECT_EQ(0u, st.launches);
                EXPECT_LE(model_launch_calls(), 0); /* none tried (model) */
            }
            std::vector<unsigned char> h(len);
            size_t bad = 0;
            for (int k = 0; k < 3; ++k) {
                ASSERT_CU(cuMemcpyDtoH(h.data(), k ? (k == 1 ? b : c) : a, len));
                for (size_t i = 0; i < len; ++i) {
                    bad += (h[i] != remote_byte(4096 * k + i));
                }
            }
            EXPECT_EQ(0u, bad);
            ASSERT_CU(cuCtxSetCurrent(other));
            EXPECT_CU(cuMemFree(a));
            EXPECT_CU(cuMemFree(b));
            EXPECT_CU(cuMemFree(c));
            EXPECT_CU(cuCtxSetCurrent(primary));
            EXPECT_CU(cuCtxDestroy(other));
            ASSERT_TRUE(ch.barrier());
            ASSERT_TRUE(ch.barrier());
        }),
        exporter(0, false));
}

TEST_F(test_uct_cuda_ipc_batch, memory_of_another_gpu_is_batched_through_the_mapping)
{
    SKIP_WITHOUT_KERNEL();
    if (device_count() < 2) {
        GTEST_SKIP() << "needs two GPUs";
    }
    /* Exporter's memory on GPU 1, importer on GPU 0: the import maps it in
     * the importer's context (legacy IPC opens with peer access), so the
     * kernel on GPU 0 reads and writes it as for one GPU: the same copies
     * wait for one launch, every byte checked. */
    cuda_two_processes(importer(0, {{"BATCH_COPY_MAX", "512K"}}, mixed_ops, 1, 5),
                       exporter(1, true));
}

TEST_F(test_uct_cuda_ipc_batch, pool_and_vmm_memory_of_another_gpu_are_batched)
{
    SKIP_WITHOUT_KERNEL();
    if (device_count() < 2) {
        GTEST_SKIP() << "needs two GPUs";
    }
    /* Imports of a pool allocation and of a VMM range are mapped with
     * access for the importer's GPU (cuMemPoolSetAccess, cuMemSetAccess). */
    for (mem_kind kind : {mem_kind::pool_posix_fd, mem_kind::vmm_posix_fd}) {
        SCOPED_TRACE(kind_name(kind));
        cuda_two_processes(importer(0, {{"BATCH_COPY_MAX", "512K"}}, mixed_ops, 1, 5),
                           exporter(1, true, kind));
    }
}

TEST_F(test_uct_cuda_ipc_batch, memory_of_a_gpu_without_peer_access_is_never_batched)
{
    if (!is_model()) {
        GTEST_SKIP() << "GPUs without peer access exist here on the model only";
    }
    if (device_count() < 2) {
        GTEST_SKIP() << "needs two GPUs";
    }
    /* cuDeviceCanAccessPeer says no (PCIe without peer-to-peer): a kernel
     * of ours must not touch the other GPU's memory; copies go one by one. */
    cuda_two_processes(importer(0, {{"BATCH_COPY_MAX", "512K"}}, mixed_ops, 0, 0,
                                {{"CUDASIM_PEER", "0"}}),
                       exporter(1, true));
}

TEST_F(test_uct_cuda_ipc_batch, memory_of_another_gpu_not_batched_when_peer_batching_is_off)
{
    if (device_count() < 2) {
        GTEST_SKIP() << "needs two GPUs";
    }
    cuda_two_processes(importer(0, {{"BATCH_COPY_MAX", "512K"}, {"BATCH_PEER", "n"}},
                                mixed_ops, 0, 0),
                       exporter(1, true));
}

TEST_F(test_uct_cuda_ipc_batch, bad_batch_copy_max_is_refused)
{
    in_child([] {
        init_device();
        setenv("UCX_CUDA_IPC_BATCH_COPY_MAX", "16Q", 1);
        std::string why;
        try {
            std::unique_ptr<uct_test_entity> e(new_ipc_entity());
        } catch (const ucx_test::uct_test_error &err) {
            why = err.what();
        }
        EXPECT_NE(std::string::npos, why.find("Invalid parameter")) << why;
    });
}
