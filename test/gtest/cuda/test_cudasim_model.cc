/*
 * Behaviour of the driver model itself (test/cudasim): delayed stream work
 * under CUDASIM_ASYNC=1 (so a missing synchronisation fails a test),
 * fabric handles under CUDASIM_FABRIC=1, loud failure of unmodelled calls.
 * Skipped on a real driver, which has no such switches.
 */
#include "cuda_test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace cuda_test;
using ucx_test::oob_channel;

namespace {

const size_t SIZE = 2ul << 20;

#define SKIP_UNLESS_MODEL() \
    if (!is_model()) { \
        GTEST_SKIP() << "only meaningful on the cudasim model"; \
    }

/* Start the model with delayed streams; 50 ms per operation is long enough
 * to observe "not yet" without a race. */
void init_async_model()
{
    setenv("CUDASIM_ASYNC", "1", 1);
    setenv("CUDASIM_ASYNC_DELAY_US", "50000", 1);
    init_device(0);
}

/* Fill device buffer @a dev with @a value and a host buffer with 0. */
void prepare(CUdeviceptr dev, unsigned char *host, unsigned char value)
{
    ASSERT_CU(cuMemsetD8(dev, value, SIZE));
    ASSERT_CU(cuCtxSynchronize());
    memset(host, 0, SIZE);
}

} // namespace

TEST(cudasim_async, async_copy_is_visible_only_after_stream_synchronize)
{
    SKIP_UNLESS_MODEL();
    cuda_in_child([]() {
        allocation dev, host;
        CUstream stream;

        init_async_model();
        ASSERT_CU(dev.allocate(mem_kind::legacy, SIZE));
        ASSERT_CU(host.allocate(mem_kind::host_alloc, SIZE));
        unsigned char *h = (unsigned char *)host.ptr;
        prepare(dev.ptr, h, 0x5a);
        ASSERT_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

        ASSERT_CU(cuMemcpyDtoHAsync(h, dev.ptr, SIZE, stream));
        EXPECT_EQ(0, h[0]) << "copy visible before synchronisation";
        EXPECT_CU_ERR(CUDA_ERROR_NOT_READY, cuStreamQuery(stream));
        ASSERT_CU(cuStreamSynchronize(stream));
        EXPECT_EQ(0x5a, h[0]);
        EXPECT_EQ(0x5a, h[SIZE - 1]);
        EXPECT_CU(cuStreamQuery(stream));
        EXPECT_CU(cuStreamDestroy(stream));
    });
}

TEST(cudasim_async, event_completes_after_the_copy_before_it)
{
    SKIP_UNLESS_MODEL();
    cuda_in_child([]() {
        allocation dev, host;
        CUstream stream;
        CUevent event;

        init_async_model();
        ASSERT_CU(dev.allocate(mem_kind::legacy, SIZE));
        ASSERT_CU(host.allocate(mem_kind::host_alloc, SIZE));
        unsigned char *h = (unsigned char *)host.ptr;
        prepare(dev.ptr, h, 0x33);
        ASSERT_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
        ASSERT_CU(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));

        ASSERT_CU(cuMemcpyDtoHAsync(h, dev.ptr, SIZE, stream));
        ASSERT_CU(cuEventRecord(event, stream));
        EXPECT_CU_ERR(CUDA_ERROR_NOT_READY, cuEventQuery(event));
        EXPECT_EQ(0, h[0]);
        while (cuEventQuery(event) == CUDA_ERROR_NOT_READY) {
            usleep(1000);
        }
        EXPECT_CU(cuEventQuery(event));
        EXPECT_EQ(0x33, h[0]);
        EXPECT_CU(cuEventDestroy(event));
        EXPECT_CU(cuStreamDestroy(stream));
    });
}

TEST(cudasim_async, stream_waits_for_event_of_another_stream)
{
    SKIP_UNLESS_MODEL();
    cuda_in_child([]() {
        allocation a, b, host;
        CUstream s1, s2;
        CUevent event;

        init_async_model();
        ASSERT_CU(a.allocate(mem_kind::legacy, SIZE));
        ASSERT_CU(b.allocate(mem_kind::legacy, SIZE));
        ASSERT_CU(host.allocate(mem_kind::host_alloc, SIZE));
        unsigned char *h = (unsigned char *)host.ptr;
        prepare(a.ptr, h, 0x11);
        ASSERT_CU(cuMemsetD8(b.ptr, 0, SIZE));
        ASSERT_CU(cuCtxSynchronize());
        ASSERT_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
        ASSERT_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
        ASSERT_CU(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));

        /* a -> b on s1, then b -> host on s2 after s1's event. */
        ASSERT_CU(cuMemcpyDtoDAsync(b.ptr, a.ptr, SIZE, s1));
        ASSERT_CU(cuEventRecord(event, s1));
        ASSERT_CU(cuStreamWaitEvent(s2, event, 0));
        ASSERT_CU(cuMemcpyDtoHAsync(h, b.ptr, SIZE, s2));
        ASSERT_CU(cuStreamSynchronize(s2));
        EXPECT_EQ(0x11, h[0]);
        EXPECT_CU(cuEventDestroy(event));
        EXPECT_CU(cuStreamDestroy(s1));
        EXPECT_CU(cuStreamDestroy(s2));
    });
}

/* A blocking device-to-device copy may return before it is done, unless
 * SYNC_MEMOPS is set -- why cuda_copy sets it. */
TEST(cudasim_async, sync_memops_makes_blocking_copies_complete_on_return)
{
    SKIP_UNLESS_MODEL();
    cuda_in_child([]() {
        allocation a, b;
        int one = 1;

        init_async_model();
        ASSERT_CU(a.allocate(mem_kind::legacy, SIZE));
        ASSERT_CU(b.allocate(mem_kind::legacy, SIZE));

        ASSERT_CU(cuMemcpyDtoD(b.ptr, a.ptr, SIZE));
        EXPECT_CU_ERR(CUDA_ERROR_NOT_READY, cuStreamQuery(CU_STREAM_LEGACY));
        ASSERT_CU(cuCtxSynchronize());

        ASSERT_CU(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                        b.ptr));
        ASSERT_CU(cuMemcpyDtoD(b.ptr, a.ptr, SIZE));
        EXPECT_CU(cuStreamQuery(CU_STREAM_LEGACY));
    });
}

/* Host functions run in stream order and may not call CUDA. */
static void host_fn(void *arg)
{
    int *result = (int *)arg;
    result[0]   = 1;
    result[1]   = (int)cuCtxSynchronize();
}

TEST(cudasim_async, host_function_runs_in_order_and_cannot_call_cuda)
{
    SKIP_UNLESS_MODEL();
    cuda_in_child([]() {
        int result[2] = {0, 0};
        CUstream stream;

        init_async_model();
        ASSERT_CU(cuStreamCreate(&stream, 0));
        ASSERT_CU(cuLaunchHostFunc(stream, host_fn, result));
        EXPECT_EQ(0, result[0]);
        ASSERT_CU(cuStreamSynchronize(stream));
        EXPECT_EQ(1, result[0]);
        EXPECT_STREQ("CUDA_ERROR_NOT_PERMITTED", cu_name((CUresult)result[1]));
        EXPECT_CU(cuStreamDestroy(stream));
    });
}

TEST(cudasim_model, device_count_follows_CUDASIM_DEVICES)
{
    SKIP_UNLESS_MODEL();
    cuda_in_child([]() {
        int count = 0;

        setenv("CUDASIM_DEVICES", "3", 1);
        ASSERT_CU(cuInit(0));
        ASSERT_CU(cuDeviceGetCount(&count));
        EXPECT_EQ(3, count);
    });
}

TEST(cudasim_model, malformed_setting_fails_cuInit)
{
    SKIP_UNLESS_MODEL();
    cuda_in_child([]() {
        setenv("CUDASIM_ASYNC", "yes", 1);
        EXPECT_CU_ERR(CUDA_ERROR_INVALID_VALUE, cuInit(0));
    });
}

TEST(cudasim_model, unmodelled_entry_point_fails_loudly)
{
    SKIP_UNLESS_MODEL();
    cuda_in_child([]() {
        CUmodule module;

        init_device(0);
        EXPECT_CU_ERR(CUDA_ERROR_NOT_SUPPORTED, cuModuleLoad(&module, "x.cubin"));
    });
}

/* With CUDASIM_FABRIC=1 the model behaves like a machine with an IMEX
 * channel: fabric handles of VMM memory import in another process. */
TEST(cudasim_model, fabric_handle_imports_when_imex_is_emulated)
{
    SKIP_UNLESS_MODEL();
    cuda_two_processes(
        [](oob_channel &ch) { /* importer */
            std::vector<CUmemGenericAllocationHandle> h(1);
            CUmemFabricHandle fh;
            CUdeviceptr base;

            setenv("CUDASIM_FABRIC", "1", 1);
            init_device(0);
            ASSERT_TRUE(ch.recv(&fh, sizeof(fh)));
            ASSERT_CU(cuMemImportFromShareableHandle(&h[0], &fh,
                                                     CU_MEM_HANDLE_TYPE_FABRIC));
            base = map_chunks(h, SIZE, 0);
            ASSERT_NE(0u, base);
            EXPECT_TRUE(check_pattern(base, SIZE, 7));
            unmap_chunks(base, SIZE, 1);
            EXPECT_CU(cuMemRelease(h[0]));
            ASSERT_TRUE(ch.barrier());
        },
        [](oob_channel &ch) { /* exporter */
            CUmemAccessDesc access = rw_access(0);
            CUmemGenericAllocationHandle h;
            CUmemAllocationProp prop;
            CUmemFabricHandle fh;
            CUdeviceptr ptr;

            setenv("CUDASIM_FABRIC", "1", 1);
            init_device(0);
            memset(&prop, 0, sizeof(prop));
            prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
            prop.location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
            prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
            ASSERT_CU(cuMemCreate(&h, SIZE, &prop, 0));
            ASSERT_CU(cuMemAddressReserve(&ptr, SIZE, 0, 0, 0));
            ASSERT_CU(cuMemMap(ptr, SIZE, 0, h, 0));
            ASSERT_CU(cuMemSetAccess(ptr, SIZE, &access, 1));
            write_pattern(ptr, SIZE, 7);
            ASSERT_CU(cuMemExportToShareableHandle(&fh, h,
                                                   CU_MEM_HANDLE_TYPE_FABRIC, 0));
            ASSERT_TRUE(ch.send(&fh, sizeof(fh)));
            ASSERT_TRUE(ch.barrier());
            EXPECT_CU(cuMemUnmap(ptr, SIZE));
            EXPECT_CU(cuMemRelease(h));
            EXPECT_CU(cuMemAddressFree(ptr, SIZE));
        });
}

/* A legacy handle whose exporter is gone is refused, and nothing of the
 * exporter is left behind (its memory lived in memfds). */
TEST(cudasim_model, legacy_handle_of_dead_exporter_is_refused)
{
    SKIP_UNLESS_MODEL();
    cuda_two_processes(
        [](oob_channel &ch) {
            CUipcMemHandle handle;
            CUdeviceptr ptr;
            siginfo_t info;
            pid_t pid;

            init_device(0);
            ASSERT_TRUE(ch.recv(&pid, sizeof(pid)));
            ASSERT_TRUE(ch.recv(&handle, sizeof(handle)));
            /* Wait until the exporter (our child) has exited, unreaped. */
            ASSERT_EQ(0, waitid(P_PID, pid, &info, WEXITED | WNOWAIT));
            EXPECT_CU_ERR(CUDA_ERROR_INVALID_HANDLE,
                          cuIpcOpenMemHandle(&ptr, handle,
                                             CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        },
        [](oob_channel &ch) {
            CUipcMemHandle handle;
            CUdeviceptr ptr;

            init_device(0);
            ASSERT_CU(cuMemAlloc(&ptr, SIZE));
            ASSERT_CU(cuIpcGetMemHandle(&handle, ptr));
            pid_t pid = getpid();
            ASSERT_TRUE(ch.send(&pid, sizeof(pid)));
            ASSERT_TRUE(ch.send(&handle, sizeof(handle)));
        });
}
