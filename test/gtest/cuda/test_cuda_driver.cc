/*
 * Driver behaviour the rest of the project builds on: how entry points are
 * found (binary hooks patch what cuGetProcAddress returns), that a forked
 * child of an initialised process cannot use CUDA, and context flags.
 */
#include "cuda_test.h"

#include <atomic>
#include <dlfcn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace cuda_test;

namespace {

/* Is cuGetProcAddress(@a name, flags) the exported symbol @a symbol? */
void expect_proc_is_symbol(const char *name, cuuint64_t flags,
                           const char *symbol)
{
    CUdriverProcAddressQueryResult qres;
    void *fn = nullptr;

    EXPECT_CU(cuGetProcAddress(name, &fn, CUDA_VERSION, flags, &qres))
            << name;
    EXPECT_EQ(CU_GET_PROC_ADDRESS_SUCCESS, qres) << name;
    EXPECT_NE(nullptr, fn) << name;
    EXPECT_EQ(dlsym(RTLD_DEFAULT, symbol), fn)
            << name << " should resolve to the exported " << symbol;
}

} // namespace

/* GPU-FACTS.md "Symbols": what cudart gets is what the library exports. */
TEST(cuda_proc_address, default_stream_lookups_return_exported_entry_points)
{
    cuda_in_child([]() {
        const cuuint64_t dflt = CU_GET_PROC_ADDRESS_DEFAULT;

        ASSERT_CU(cuInit(0));
        expect_proc_is_symbol("cuMemAlloc", dflt, "cuMemAlloc_v2");
        expect_proc_is_symbol("cuMemFree", dflt, "cuMemFree_v2");
        expect_proc_is_symbol("cuMemAllocPitch", dflt, "cuMemAllocPitch_v2");
        expect_proc_is_symbol("cuMemAllocAsync", dflt, "cuMemAllocAsync");
        expect_proc_is_symbol("cuMemFreeAsync", dflt, "cuMemFreeAsync");
        expect_proc_is_symbol("cuMemAllocFromPoolAsync", dflt,
                              "cuMemAllocFromPoolAsync");
        expect_proc_is_symbol("cuMemCreate", dflt, "cuMemCreate");
        expect_proc_is_symbol("cuMemMap", dflt, "cuMemMap");
        expect_proc_is_symbol("cuIpcOpenMemHandle", dflt,
                              "cuIpcOpenMemHandle_v2");
        expect_proc_is_symbol("cuMemcpyHtoD", dflt, "cuMemcpyHtoD_v2");
    });
}

TEST(cuda_proc_address, per_thread_stream_lookups_return_ptsz_entry_points)
{
    cuda_in_child([]() {
        const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

        ASSERT_CU(cuInit(0));
        expect_proc_is_symbol("cuMemAllocAsync", pt, "cuMemAllocAsync_ptsz");
        expect_proc_is_symbol("cuMemFreeAsync", pt, "cuMemFreeAsync_ptsz");
        expect_proc_is_symbol("cuMemAllocFromPoolAsync", pt,
                              "cuMemAllocFromPoolAsync_ptsz");
        expect_proc_is_symbol("cuMemcpyHtoD", pt, "cuMemcpyHtoD_v2_ptds");
        expect_proc_is_symbol("cuMemcpyAsync", pt, "cuMemcpyAsync_ptsz");
        /* Entry points without a stream have no per-thread flavour. */
        expect_proc_is_symbol("cuMemAlloc", pt, "cuMemAlloc_v2");
    });
}

TEST(cuda_proc_address, old_cuda_version_gets_old_flavour)
{
    cuda_in_child([]() {
        void *fn = nullptr;

        ASSERT_CU(cuInit(0));
        ASSERT_CU(cuGetProcAddress("cuGetProcAddress", &fn, 11080,
                                   CU_GET_PROC_ADDRESS_DEFAULT, nullptr));
        EXPECT_EQ(dlsym(RTLD_DEFAULT, "cuGetProcAddress"), fn);
    });
}

/* Measured on the H200: a miss is reported through the status, with
 * CUDA_SUCCESS and a NULL function; versioned names are not looked up. */
TEST(cuda_proc_address, unknown_name_is_reported_through_the_status)
{
    cuda_in_child([]() {
        const char *names[] = {"cuNoSuchFunction", "cuMemAlloc_v2"};
        CUdriverProcAddressQueryResult qres;

        ASSERT_CU(cuInit(0));
        for (const char *name : names) {
            void *fn = (void *)1;
            EXPECT_CU(cuGetProcAddress(name, &fn, CUDA_VERSION,
                                       CU_GET_PROC_ADDRESS_DEFAULT, &qres));
            EXPECT_EQ(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, qres) << name;
            EXPECT_EQ(nullptr, fn) << name;
        }
    });
}

TEST(cuda_proc_address, too_old_version_is_reported_through_the_status)
{
    cuda_in_child([]() {
        CUdriverProcAddressQueryResult qres;
        void *fn = (void *)1;

        ASSERT_CU(cuInit(0));
        EXPECT_CU(cuGetProcAddress("cuMemAllocAsync", &fn, 11000,
                                   CU_GET_PROC_ADDRESS_DEFAULT, &qres));
        EXPECT_EQ(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, qres);
        EXPECT_EQ(nullptr, fn);
    });
}

/* Why every test forks before touching CUDA. */
TEST(cuda_fork, child_of_initialised_process_cannot_use_cuda)
{
    cuda_in_child([]() {
        int status = -1, count = 0;
        pid_t pid;

        init_device(0);
        pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            bool ok = (cuInit(0) == CUDA_ERROR_NOT_INITIALIZED) &&
                      (cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED);
            _exit(ok ? 0 : 1);
        }
        ASSERT_EQ(pid, waitpid(pid, &status, 0));
        EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0))
                << "the forked child could use CUDA (status " << status << ")";
        /* The parent itself is unaffected. */
        EXPECT_CU(cuDeviceGetCount(&count));
    });
}

TEST(cuda_context, sync_memops_flag_sticks_to_the_context)
{
    cuda_in_child([]() {
        unsigned flags = 0;

        init_device(0);
        ASSERT_CU(cuCtxGetFlags(&flags));
        ASSERT_CU(cuCtxSetFlags(flags | CU_CTX_SYNC_MEMOPS));
        ASSERT_CU(cuCtxGetFlags(&flags));
        EXPECT_TRUE(flags & CU_CTX_SYNC_MEMOPS);
    });
}

TEST(cuda_context, device_memory_needs_a_current_context)
{
    cuda_in_child([]() {
        CUdeviceptr ptr;

        ASSERT_CU(cuInit(0));
        EXPECT_CU_ERR(CUDA_ERROR_INVALID_CONTEXT, cuMemAlloc(&ptr, 4096));
    });
}

/* Several threads allocating, copying, querying and freeing at once: the
 * driver (and the model, with its single lock) must keep every answer
 * right. */
TEST(cuda_threads, concurrent_alloc_copy_query_free_stay_consistent)
{
    cuda_in_child([]() {
        const int nthreads = 4, iters = 100;
        std::atomic<int> errors(0);
        std::vector<std::thread> threads;
        CUcontext ctx;

        init_device(0);
        ASSERT_CU(cuCtxGetCurrent(&ctx));
        for (int t = 0; t < nthreads; ++t) {
            threads.emplace_back([&, t]() {
                std::vector<unsigned char> in(65536, (unsigned char)t), out;
                unsigned memtype = 0;
                CUdeviceptr ptr;

                if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
                    ++errors;
                    return;
                }
                for (int i = 0; i < iters; ++i) {
                    out.assign(in.size(), 0xff);
                    if ((cuMemAlloc(&ptr, in.size()) != CUDA_SUCCESS) ||
                        (cuMemcpyHtoD(ptr, in.data(), in.size()) != CUDA_SUCCESS) ||
                        (cuPointerGetAttribute(&memtype,
                                               CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                               ptr) != CUDA_SUCCESS) ||
                        (memtype != CU_MEMORYTYPE_DEVICE) ||
                        (cuMemcpyDtoH(out.data(), ptr, out.size()) != CUDA_SUCCESS) ||
                        (out != in) || (cuMemFree(ptr) != CUDA_SUCCESS)) {
                        ++errors;
                    }
                }
            });
        }
        for (auto &thread : threads) {
            thread.join();
        }
        EXPECT_EQ(0, errors.load());
    });
}
