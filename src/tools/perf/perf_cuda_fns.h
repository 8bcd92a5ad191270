/**
 * @file perf_cuda_fns.h
 * The CUDA entry points the tools call (ucx_perftest's loader and memory
 * kinds, ucx_info's GPU listing), as two tables of function pointers that
 * perf_cuda.c fills with dlsym. Only for files built with the toolkit's
 * headers (PERF_HAVE_CUDA).
 *
 * Each pointer takes its type from the header's prototype and its symbol
 * from the header's macro (cuMemAlloc is cuMemAlloc_v2), so that the tools
 * call the entry points an application built with those headers would.
 * One list per library keeps the fields and the symbol names in step.
 */
#ifndef PERF_CUDA_FNS_H_
#define PERF_CUDA_FNS_H_

#include "perf_cuda.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

/* libcuda.so.1: every symbol must resolve for CUDA memory to be usable. */
#define PERF_CUDA_DRIVER_FNS(_F) \
    _F(cuInit) _F(cuGetErrorString) _F(cuDriverGetVersion) \
    _F(cuDeviceGetCount) _F(cuDeviceGet) _F(cuDeviceGetName) \
    _F(cuDeviceTotalMem) _F(cuDeviceGetPCIBusId) _F(cuDeviceGetP2PAttribute) \
    _F(cuDeviceCanAccessPeer) _F(cuDevicePrimaryCtxRetain) _F(cuCtxSetCurrent) \
    _F(cuCtxEnablePeerAccess) _F(cuMemAlloc) _F(cuMemFree) _F(cuMemAllocManaged) \
    _F(cuMemAllocAsync) _F(cuMemFreeAsync) _F(cuMemPoolCreate) _F(cuMemPoolDestroy) \
    _F(cuMemAllocFromPoolAsync) _F(cuMemCreate) _F(cuMemRelease) \
    _F(cuMemAddressReserve) _F(cuMemAddressFree) _F(cuMemMap) _F(cuMemUnmap) \
    _F(cuMemSetAccess) _F(cuMemGetAllocationGranularity) _F(cuMemcpyHtoD) \
    _F(cuMemcpyDtoH) _F(cuMemcpyDtoDAsync) _F(cuStreamCreate) _F(cuStreamDestroy) \
    _F(cuStreamSynchronize)

/* libcudart: a missing symbol means "allocate through the driver". */
#define PERF_CUDA_RUNTIME_FNS(_F) \
    _F(cudaGetDeviceCount) _F(cudaSetDevice) _F(cudaGetErrorString) \
    _F(cudaMalloc) _F(cudaFree) _F(cudaMallocManaged) _F(cudaMallocAsync) \
    _F(cudaFreeAsync) _F(cudaMallocFromPoolAsync) _F(cudaStreamSynchronize)

#define PERF_CUDA_FN_FIELD(_name) __typeof__(_name) *_name;

typedef struct {
    PERF_CUDA_DRIVER_FNS(PERF_CUDA_FN_FIELD)
} perf_cuda_driver_t;

typedef struct {
    PERF_CUDA_RUNTIME_FNS(PERF_CUDA_FN_FIELD)
} perf_cuda_runtime_t;

/** The driver; filled once perf_cuda_unavailable() has returned NULL. */
extern perf_cuda_driver_t perf_cu;

/** The runtime; filled once perf_cuda_use_runtime() has returned 1. */
extern perf_cuda_runtime_t perf_cudart;

/** The driver's text for @a res ("unknown CUDA error" when it has none). */
const char *perf_cuda_error(CUresult res);

#endif
