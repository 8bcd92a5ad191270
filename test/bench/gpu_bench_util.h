/*
 * What the library-free GPU benchmarks (gpu_pingpong_floor,
 * gpu_stage_floor) share: a driver-call check that names the failing call
 * and exits, and a monotonic clock in seconds.
 */
#ifndef GPU_BENCH_UTIL_H_
#define GPU_BENCH_UTIL_H_

#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(_call) \
    do { \
        CUresult _r = (_call); \
        if (_r != CUDA_SUCCESS) { \
            const char *_s = NULL; \
            cuGetErrorName(_r, &_s); \
            fprintf(stderr, "%s:%d %s failed: %s\n", __FILE__, __LINE__, #_call, \
                    _s ? _s : "?"); \
            exit(2); \
        } \
    } while (0)

static inline double now_sec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One copy through cuMemcpyBatchAsync with the hint that it should overlap
 * with compute work, i.e. run on a copy engine rather than on the SMs.
 * Stream-ordered source access, like cuMemcpyAsync. */
static inline CUresult bench_copy_ce(CUdeviceptr dst, CUdeviceptr src, size_t len,
                                     CUstream stream)
{
    CUmemcpyAttributes attr = {0};
    size_t idx              = 0;

    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    attr.flags          = CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE;
    return cuMemcpyBatchAsync(&dst, &src, &len, 1, &attr, &idx, 1, stream);
}

/* One contiguous copy expressed as a 2D copy (rows of 64 KiB where the
 * length allows): 2D copies may take a copy engine where a plain copy of the
 * same bytes would run on the SMs or inline in the command stream. */
static inline CUresult bench_copy_2d(CUdeviceptr dst, CUmemorytype dst_type,
                                     CUdeviceptr src, CUmemorytype src_type,
                                     size_t len, CUstream stream)
{
    CUDA_MEMCPY2D p = {0};
    size_t row      = ((len >= 65536) && (len % 65536 == 0)) ? 65536 : len;

    p.srcMemoryType = src_type;
    p.dstMemoryType = dst_type;
    if (src_type == CU_MEMORYTYPE_HOST) {
        p.srcHost = (const void*)src;
    } else {
        p.srcDevice = src;
    }
    if (dst_type == CU_MEMORYTYPE_HOST) {
        p.dstHost = (void*)dst;
    } else {
        p.dstDevice = dst;
    }
    p.srcPitch     = row;
    p.dstPitch     = row;
    p.WidthInBytes = row;
    p.Height       = len / row;
    return cuMemcpy2DAsync(&p, stream);
}

#endif
