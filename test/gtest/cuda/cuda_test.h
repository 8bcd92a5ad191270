/**
 * @file cuda_test.h
 * Helpers for tests of the CUDA driver API. They run unchanged on the model
 * (test/cudasim, CI) and on the real driver (GPU machines).
 *
 * Rule: the googletest process itself never initialises CUDA, because a
 * child forked from an initialised process cannot use CUDA (the driver
 * answers CUDA_ERROR_NOT_INITIALIZED there, and so does the model). Every
 * CUDA call therefore runs in a forked process: cuda_in_child() for one
 * process, cuda_two_processes() for an exporter/importer pair. Facts needed
 * to decide a GTEST_SKIP (device count, model or not) are probed before
 * forking, so that skips are reported by the test process.
 */
#ifndef UCX_TEST_CUDA_TEST_H_
#define UCX_TEST_CUDA_TEST_H_

#include "common/two_process.h"

#include <cuda.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace cuda_test {

/** Name of a CUresult ("CUDA_ERROR_INVALID_VALUE"), for readable failures. */
const char *cu_name(CUresult r);

/** Fail the current test (and return) unless @a _call succeeds. */
#define ASSERT_CU(_call) \
    ASSERT_STREQ("CUDA_SUCCESS", ::cuda_test::cu_name(_call)) << #_call
#define EXPECT_CU(_call) \
    EXPECT_STREQ("CUDA_SUCCESS", ::cuda_test::cu_name(_call)) << #_call
/** Expect @a _call to return @a _expected (compared by name). */
#define EXPECT_CU_ERR(_expected, _call) \
    EXPECT_STREQ(::cuda_test::cu_name(_expected), \
                 ::cuda_test::cu_name(_call)) << #_call

/** Whether the loaded libcuda is the model (exports cudasim_model_info). */
bool is_model();

/** Run @a fn in a throw-away child process and return its result (-1 if
 * the child failed); for facts that decide a GTEST_SKIP. */
int probe_in_child(const std::function<int()> &fn);

/** Number of devices, probed once in a throw-away child process. */
int device_count();

/** cuInit, retain and make current the primary context of @a device. */
void init_device(int device = 0);

/** Run @a fn in one forked process (see the rule above). */
void cuda_in_child(const std::function<void()> &fn, double timeout = 60.0);

/**
 * Run an importer and an exporter in two processes, neither of them the
 * test process. The importer is the parent of the exporter, so it may take
 * the exporter's fds with pidfd_getfd under the default ptrace policy.
 */
void cuda_two_processes(const ucx_test::process_fn_t &importer,
                        const ucx_test::process_fn_t &exporter,
                        double timeout = 60.0);

/** Allocation kinds, as DESIGN.md and GPU-FACTS.md list them. */
enum class mem_kind {
    legacy,             /**< cuMemAlloc */
    async_default_pool, /**< cuMemAllocAsync from the device's default pool */
    pool_posix_fd,      /**< explicit pool, handle types POSIX fd */
    pool_no_handle,     /**< explicit pool, no handle types */
    vmm_posix_fd,       /**< cuMemCreate with POSIX fd, one chunk */
    vmm_no_handle,      /**< cuMemCreate without handle type */
    vmm_two_chunks,     /**< one VA range mapped from two POSIX-fd chunks */
    managed,            /**< cuMemAllocManaged */
    host_alloc          /**< cuMemHostAlloc */
};

const char *kind_name(mem_kind kind);

/** One allocation of a given kind; release() undoes everything. */
class allocation {
public:
    allocation() = default;
    allocation(const allocation &) = delete;
    allocation &operator=(const allocation &) = delete;
    ~allocation();

    /** Allocate @a size bytes (a multiple of 2 MiB for VMM kinds). */
    CUresult allocate(mem_kind kind, size_t size, int device = 0);
    CUresult release();

    mem_kind                                  kind   = mem_kind::legacy;
    CUdeviceptr                               ptr    = 0;
    size_t                                    size   = 0;
    CUmemoryPool                              pool   = nullptr;
    CUstream                                  stream = nullptr;
    std::vector<CUmemGenericAllocationHandle> chunks;
    CUdeviceptr                               reserved = 0;
};

/** Fill / check @a size bytes at device address @a ptr with a pattern. */
void write_pattern(CUdeviceptr ptr, size_t size, unsigned seed);
bool check_pattern(CUdeviceptr ptr, size_t size, unsigned seed);

/** Access descriptor: read-write for @a device. */
CUmemAccessDesc rw_access(int device);

/** Take a copy of fd @a remote_fd of process @a pid (pidfd_getfd). */
int pidfd_fetch(pid_t pid, int remote_fd);

/**
 * Map imported VMM chunks of @a chunk_size bytes each contiguously, with
 * read-write access for @a device. Returns the base, 0 on failure.
 */
CUdeviceptr map_chunks(const std::vector<CUmemGenericAllocationHandle> &h,
                       size_t chunk_size, int device);
void unmap_chunks(CUdeviceptr base, size_t chunk_size, size_t count);

} // namespace cuda_test

#endif
