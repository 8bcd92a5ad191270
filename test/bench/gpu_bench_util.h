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

#endif
