/**
 * @file perf_cuda.h
 * The CUDA driver and runtime as ucx_perftest sees them: loaded with
 * dlopen on first use, so that the tool has no link-time CUDA dependency
 * and runs (host memory only) where no CUDA is installed. Every function
 * here is for the slow path (setup, fill, check, the raw-copy reference):
 * the timed loops never call CUDA themselves.
 *
 * Not thread safe: ucx_perftest calls it from its main thread only.
 */
#ifndef PERF_CUDA_H_
#define PERF_CUDA_H_

#include "perftest.h"

/** Which CUDA API allocates the kinds that have a runtime call (--cuda-api). */
typedef enum {
    PERF_CUDA_API_AUTO,    /**< runtime when libcudart loads and sees a GPU, else driver */
    PERF_CUDA_API_RUNTIME, /**< always cudart (cudaMalloc, cudaMallocAsync, ...) */
    PERF_CUDA_API_DRIVER   /**< always the driver (cuMemAlloc, cuMemAllocAsync, ...) */
} perf_cuda_api_t;

/** Names of perf_cuda_api_t values, as --cuda-api accepts them. */
extern const char *perf_cuda_api_names[];

/** Choose the API before the first allocation (default: auto). */
void perf_cuda_set_api(perf_cuda_api_t api);

/**
 * Why CUDA memory cannot be used in this process ("libcuda.so.1: cannot
 * open shared object file", "cuInit failed: no CUDA-capable device"), or
 * NULL when it can. Loads the driver on the first call.
 */
const char *perf_cuda_unavailable(void);

/**
 * Whether allocations that have a cudart form go through cudart (1) or
 * the driver (0). Decided on the first call; needs perf_cuda_unavailable()
 * to have returned NULL.
 */
int perf_cuda_use_runtime(void);

/** Short description of the API in use, for the output header. */
const char *perf_cuda_api_description(void);

/** Number of devices the driver sees (0 when unavailable). */
int perf_cuda_device_count(void);

/**
 * Make the primary context of @a device current (and the runtime's
 * current device when cudart is in use).
 */
ucs_status_t perf_cuda_set_device(int device, char *error, size_t max);

/**
 * Copy between host and device memory (synchronous, through the driver;
 * @a device is the device that owns @a dptr).
 */
ucs_status_t perf_cuda_copy_to_device(int device, void *dptr, const void *src,
                                      size_t length);
ucs_status_t perf_cuda_copy_from_device(int device, void *dst, const void *dptr,
                                        size_t length);

/**
 * The raw-copy reference of a GPU row: cuMemcpyDtoDAsync of @a size bytes
 * from a fresh buffer on @a src_dev to one on @a dst_dev, @a iters times
 * on one stream, synchronizing after every @a window copies (1: each copy
 * is waited for, as a ping-pong waits for each message).
 *
 * @param [out] seconds_p  wall time of the @a iters copies
 * @return UCS_OK, or an error with a message in @a error.
 */
ucs_status_t perf_cuda_raw_copy(int src_dev, int dst_dev, size_t size, uint64_t iters,
                                unsigned window, double *seconds_p, char *error,
                                size_t max);

#endif
