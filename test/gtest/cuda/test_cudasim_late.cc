/*
 * The driver model's late landing (CUDASIM_LATE_LANDING, docs/cudasim.md):
 * a "synchronous" copy or memset that the driver may return from early
 * lands at the latest moment the driver's rules allow. What sees the old
 * bytes and what the new ones, one rule per test. Model only: on a GPU
 * the same sequences race (stale_send -D measures them).
 */
#include "cuda_test.h"

#include <cudaTypedefs.h>

#include <stdlib.h>
#include <string.h>

#include <vector>

using namespace cuda_test;
using ucx_test::oob_channel;

namespace {

const size_t SIZE           = 64 * 1024;
const unsigned char OLD_B   = 0x11;
const unsigned char NEW_B   = 0x77;

#define SKIP_UNLESS_MODEL() \
    if (!is_model()) { \
        GTEST_SKIP() << "only meaningful on the cudasim model"; \
    }

/* The bytes a fresh non-blocking stream reads at @a ptr: NEW_B, OLD_B or
 * 0 when they are mixed or something else. */
unsigned char read_on(CUstream stream, CUdeviceptr ptr, size_t size = SIZE)
{
    std::vector<unsigned char> h(size, 0);

    if ((cuMemcpyDtoHAsync(h.data(), ptr, size, stream) != CUDA_SUCCESS) ||
        (cuStreamSynchronize(stream) != CUDA_SUCCESS)) {
        return 0;
    }
    for (size_t i = 1; i < size; ++i) {
        if (h[i] != h[0]) {
            return 0;
        }
    }
    return h[0];
}

/* A buffer of @a kind holding OLD_B everywhere (synchronised), a stream
 * that waits for nothing, and NEW_B in pageable memory. */
struct late_fixture {
    void init(mem_kind kind = mem_kind::legacy)
    {
        setenv("CUDASIM_LATE_LANDING", "1", 1);
        init_device(0);
        ASSERT_CU(buf.allocate(kind, (kind == mem_kind::vmm_no_handle) ? (2ul << 20) : SIZE));
        ASSERT_CU(cuMemsetD8(buf.ptr, OLD_B, SIZE));
        ASSERT_CU(cuCtxSynchronize());
        ASSERT_CU(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
        host.assign(SIZE, NEW_B);
    }

    void fill() { ASSERT_CU(cuMemcpyHtoD(buf.ptr, host.data(), SIZE)); }

    ~late_fixture()
    {
        if (nb != nullptr) {
            cuStreamDestroy(nb);
        }
    }

    allocation                 buf;
    CUstream                   nb = nullptr;
    std::vector<unsigned char> host;
};

} // namespace

TEST(cudasim_late, pageable_copy_is_invisible_to_a_non_blocking_stream)
{
    SKIP_UNLESS_MODEL();
    cuda_in_child([]() {
        late_fixture f;
        ASSERT_NO_FATAL_FAILURE(f.init());
        ASSERT_NO_FATAL_FAILURE(f.fill());
        EXPECT_EQ(OLD_B, read_on(f.nb, f.buf.ptr)) << "landed at return";
        EXPECT_EQ(OLD_B, read_on(f.nb, f.buf.ptr)) << "landed by itself";
    });
}

TEST(cudasim_late, source_is_captured_at_the_call)
{
    SKIP_UNLESS_MODEL();
    cuda_in_child([]() {
        late_fixture f;
        ASSERT_NO_FATAL_FAILURE(f.init());
        ASSERT_NO_FATAL_FAILURE(f.fill());
        memset(f.host.data(), 0x33, SIZE); /* the driver staged the old ones */
        ASSERT_CU(cuCtxSynchronize());
        EXPECT_EQ(NEW_B, read_on(f.nb, f.buf.ptr));
    });
}

TEST(cudasim_late, every_synchronisation_with_the_legacy_stream_lands_it)
{
    SKIP_UNLESS_MODEL();
    cuda_in_child([]() {
        std::vector<unsigned char> h(SIZE);
        CUstream blocking;
        CUevent event;

        /* A blocking copy on the legacy stream. */
        {
            late_fixture f;
            ASSERT_NO_FATAL_FAILURE(f.init());
            ASSERT_NO_FATAL_FAILURE(f.fill());
            ASSERT_CU(cuMemcpyDtoH(h.data(), f.buf.ptr, SIZE));
            EXPECT_EQ(NEW_B, h[0]) << "cuMemcpyDtoH";
            EXPECT_EQ(NEW_B, h[SIZE - 1]) << "cuMemcpyDtoH";
        }
        /* cuStreamSynchronize, cuStreamQuery of the legacy stream. */
        {
            late_fixture f;
            ASSERT_NO_FATAL_FAILURE(f.init());
            ASSERT_NO_FATAL_FAILURE(f.fill());
            ASSERT_CU(cuStreamSynchronize(CU_STREAM_LEGACY));
            EXPECT_EQ(NEW_B, read_on(f.nb, f.buf.ptr)) << "cuStreamSynchronize";
            ASSERT_NO_FATAL_FAILURE(f.fill());
            /* Asking releases it; with CUDASIM_ASYNC=1 it then takes the
             * worker's delay, as a DMA in flight would. */
            CUresult r;
            while ((r = cuStreamQuery(NULL)) == CUDA_ERROR_NOT_READY) {
            }
            EXPECT_CU(r);
            EXPECT_EQ(NEW_B, read_on(f.nb, f.buf.ptr)) << "cuStreamQuery";
        }
        /* Work on a blocking stream waits for the legacy stream. */
        {
            late_fixture f;
            ASSERT_NO_FATAL_FAILURE(f.init());
            ASSERT_CU(cuStreamCreate(&blocking, 0));
            ASSERT_NO_FATAL_FAILURE(f.fill());
            EXPECT_EQ(NEW_B, read_on(blocking, f.buf.ptr)) << "blocking stream";
            EXPECT_CU(cuStreamDestroy(blocking));
        }
        /* An event recorded on the legacy stream, waited for by the
         * non-blocking stream. */
        {
            late_fixture f;
            ASSERT_NO_FATAL_FAILURE(f.init());
            ASSERT_CU(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
            ASSERT_NO_FATAL_FAILURE(f.fill());
            ASSERT_CU(cuEventRecord(event, CU_STREAM_LEGACY));
            ASSERT_CU(cuStreamWaitEvent(f.nb, event, 0));
            EXPECT_EQ(NEW_B, read_on(f.nb, f.buf.ptr)) << "event";
            EXPECT_CU(cuEventDestroy(event));
        }
        /* cuCtxSynchronize. */
        {
            late_fixture f;
            ASSERT_NO_FATAL_FAILURE(f.init());
            ASSERT_NO_FATAL_FAILURE(f.fill());
            ASSERT_CU(cuCtxSynchronize());
            EXPECT_EQ(NEW_B, read_on(f.nb, f.buf.ptr)) << "cuCtxSynchronize";
        }
    });
}

TEST(cudasim_late, per_thread_stream_copy_is_waited_for_by_the_legacy_stream_only)
{
    SKIP_UNLESS_MODEL();
    cuda_in_child([]() {
        PFN_cuMemcpyHtoD_v3020 htod_ptds = NULL;
        CUdriverProcAddressQueryResult found;
        std::vector<unsigned char> h(SIZE);
        late_fixture f;

        ASSERT_NO_FATAL_FAILURE(f.init());
        ASSERT_CU(cuGetProcAddress("cuMemcpyHtoD", (void**)&htod_ptds, 12000,
                                   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                                   &found));
        ASSERT_TRUE(htod_ptds != NULL);
        ASSERT_CU(htod_ptds(f.buf.ptr, f.host.data(), SIZE));
        EXPECT_EQ(OLD_B, read_on(f.nb, f.buf.ptr));
        ASSERT_CU(cuMemcpyDtoH(h.data(), f.buf.ptr, SIZE)); /* legacy stream */
        EXPECT_EQ(NEW_B, h[0]);
    });
}

TEST(cudasim_late, blocking_memset_and_device_copy_land_late_too)
{
    SKIP_UNLESS_MODEL();
    cuda_in_child([]() {
        late_fixture f;
        allocation src;

        ASSERT_NO_FATAL_FAILURE(f.init());
        ASSERT_CU(cuMemsetD8(f.buf.ptr, NEW_B, SIZE));
        EXPECT_EQ(OLD_B, read_on(f.nb, f.buf.ptr)) << "cuMemsetD8";
        ASSERT_CU(cuCtxSynchronize());
        EXPECT_EQ(NEW_B, read_on(f.nb, f.buf.ptr)) << "cuMemsetD8";

        ASSERT_CU(src.allocate(mem_kind::legacy, SIZE));
        ASSERT_CU(cuMemsetD8(src.ptr, 0x55, SIZE));
        ASSERT_CU(cuCtxSynchronize());
        ASSERT_CU(cuMemcpyDtoD(f.buf.ptr, src.ptr, SIZE));
        EXPECT_EQ(NEW_B, read_on(f.nb, f.buf.ptr)) << "cuMemcpyDtoD";
        ASSERT_CU(cuCtxSynchronize());
        EXPECT_EQ(0x55, read_on(f.nb, f.buf.ptr)) << "cuMemcpyDtoD";
    });
}

/* As measured on an H200 (stale_send -D): CU_CTX_SYNC_MEMOPS makes the
 * copy complete before it returns; the pointer attribute does so on
 * cuMemAlloc memory, not on pool memory (accepted, no effect) nor on VMM
 * memory (refused). */
TEST(cudasim_late, sync_memops_makes_the_copy_complete_where_the_driver_honours_it)
{
    SKIP_UNLESS_MODEL();
    cuda_in_child([]() {
        unsigned flags, one = 1;
        {
            late_fixture f;
            ASSERT_NO_FATAL_FAILURE(f.init());
            ASSERT_CU(cuCtxGetFlags(&flags));
            ASSERT_CU(cuCtxSetFlags(flags | CU_CTX_SYNC_MEMOPS));
            ASSERT_NO_FATAL_FAILURE(f.fill());
            EXPECT_EQ(NEW_B, read_on(f.nb, f.buf.ptr)) << "context flag";
            ASSERT_CU(cuCtxSetFlags(flags));
        }
        {
            late_fixture f;
            ASSERT_NO_FATAL_FAILURE(f.init(mem_kind::legacy));
            ASSERT_CU(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                            f.buf.ptr));
            ASSERT_NO_FATAL_FAILURE(f.fill());
            EXPECT_EQ(NEW_B, read_on(f.nb, f.buf.ptr)) << "cuMemAlloc + attribute";
        }
        {
            late_fixture f;
            ASSERT_NO_FATAL_FAILURE(f.init(mem_kind::async_default_pool));
            EXPECT_CU(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                            f.buf.ptr));
            ASSERT_NO_FATAL_FAILURE(f.fill());
            EXPECT_EQ(OLD_B, read_on(f.nb, f.buf.ptr)) << "pool memory + attribute";
        }
        {
            late_fixture f;
            ASSERT_NO_FATAL_FAILURE(f.init(mem_kind::vmm_no_handle));
            EXPECT_CU_ERR(CUDA_ERROR_NOT_SUPPORTED,
                          cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                                f.buf.ptr));
            ASSERT_NO_FATAL_FAILURE(f.fill());
            EXPECT_EQ(OLD_B, read_on(f.nb, f.buf.ptr)) << "VMM memory";
        }
        {
            late_fixture f;
            ASSERT_NO_FATAL_FAILURE(f.init(mem_kind::managed));
            ASSERT_NO_FATAL_FAILURE(f.fill());
            EXPECT_EQ(NEW_B, read_on(f.nb, f.buf.ptr)) << "managed memory";
        }
    });
}

/* Documented: setting the attribute waits for synchronous operations still
 * pending on the region; the flag on the context does not reach back. */
TEST(cudasim_late, setting_the_pointer_attribute_lands_what_is_pending)
{
    SKIP_UNLESS_MODEL();
    cuda_in_child([]() {
        unsigned flags, one = 1;
        {
            late_fixture f;
            ASSERT_NO_FATAL_FAILURE(f.init());
            ASSERT_NO_FATAL_FAILURE(f.fill());
            ASSERT_CU(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                            f.buf.ptr));
            EXPECT_EQ(NEW_B, read_on(f.nb, f.buf.ptr));
        }
        {
            late_fixture f;
            ASSERT_NO_FATAL_FAILURE(f.init());
            ASSERT_NO_FATAL_FAILURE(f.fill());
            ASSERT_CU(cuCtxGetFlags(&flags));
            ASSERT_CU(cuCtxSetFlags(flags | CU_CTX_SYNC_MEMOPS));
            EXPECT_EQ(OLD_B, read_on(f.nb, f.buf.ptr));
            ASSERT_CU(cuCtxSetFlags(flags));
        }
    });
}

/* Another process reading through an IPC mapping waits for nothing of the
 * exporter's streams. */
TEST(cudasim_late, importer_reads_old_bytes_until_the_exporter_synchronises)
{
    SKIP_UNLESS_MODEL();
    cuda_two_processes(
        [](oob_channel &ch) {
            CUipcMemHandle handle;
            CUdeviceptr ptr;
            CUstream nb;

            setenv("CUDASIM_LATE_LANDING", "1", 1);
            init_device(0);
            ASSERT_CU(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
            ASSERT_TRUE(ch.recv(&handle, sizeof(handle)));
            ASSERT_CU(cuIpcOpenMemHandle(&ptr, handle,
                                         CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
            EXPECT_EQ(OLD_B, read_on(nb, ptr)) << "before the exporter synchronised";
            ASSERT_TRUE(ch.barrier());
            ASSERT_TRUE(ch.barrier());
            EXPECT_EQ(NEW_B, read_on(nb, ptr)) << "after";
            EXPECT_CU(cuIpcCloseMemHandle(ptr));
            EXPECT_CU(cuStreamDestroy(nb));
            ASSERT_TRUE(ch.barrier());
        },
        [](oob_channel &ch) {
            CUipcMemHandle handle;
            late_fixture f;

            ASSERT_NO_FATAL_FAILURE(f.init());
            ASSERT_CU(cuIpcGetMemHandle(&handle, f.buf.ptr));
            ASSERT_NO_FATAL_FAILURE(f.fill());
            ASSERT_TRUE(ch.send(&handle, sizeof(handle)));
            ASSERT_TRUE(ch.barrier());
            ASSERT_CU(cuCtxSynchronize());
            ASSERT_TRUE(ch.barrier());
            ASSERT_TRUE(ch.barrier());
        });
}

TEST(cudasim_late, switched_off_the_copy_lands_before_it_returns)
{
    SKIP_UNLESS_MODEL();
    cuda_in_child([]() {
        setenv("CUDASIM_LATE_LANDING", "0", 1);
        init_device(0);
        allocation buf;
        CUstream nb;
        std::vector<unsigned char> h(SIZE, NEW_B);

        ASSERT_CU(buf.allocate(mem_kind::legacy, SIZE));
        ASSERT_CU(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
        ASSERT_CU(cuMemcpyHtoD(buf.ptr, h.data(), SIZE));
        EXPECT_EQ(NEW_B, read_on(nb, buf.ptr));
        EXPECT_CU(cuStreamDestroy(nb));
    });
}
