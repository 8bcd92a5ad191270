#include "cuda_test.h"

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open  434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

namespace cuda_test {

const char *cu_name(CUresult r)
{
    const char *name = nullptr;

    if (cuGetErrorName(r, &name) != CUDA_SUCCESS) {
        return "(unknown CUresult)";
    }
    return name;
}

bool is_model()
{
    return dlsym(RTLD_DEFAULT, "cudasim_model_info") != nullptr;
}

int device_count()
{
    static int count = -1;

    if (count < 0) {
        count = probe_in_child([]() {
            int n = 0;
            if ((cuInit(0) != CUDA_SUCCESS) ||
                (cuDeviceGetCount(&n) != CUDA_SUCCESS)) {
                n = 0;
            }
            return n;
        });
    }
    return (count < 0) ? 0 : count;
}

void init_device(int device)
{
    CUcontext ctx;

    ASSERT_CU(cuInit(0));
    ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx, device));
    ASSERT_CU(cuCtxSetCurrent(ctx));
}

void cuda_in_child(const std::function<void()> &fn, double timeout)
{
    ucx_test::run_two_processes([](ucx_test::oob_channel &) {},
                                [&](ucx_test::oob_channel &) { fn(); },
                                timeout);
}

void cuda_two_processes(const ucx_test::process_fn_t &importer,
                        const ucx_test::process_fn_t &exporter, double timeout)
{
    ucx_test::run_two_processes(
        [](ucx_test::oob_channel &) {},
        [&](ucx_test::oob_channel &) {
            ucx_test::run_two_processes(importer, exporter, timeout);
        },
        timeout + 10.0);
}

const char *kind_name(mem_kind kind)
{
    switch (kind) {
    case mem_kind::legacy:             return "legacy";
    case mem_kind::async_default_pool: return "async_default_pool";
    case mem_kind::pool_posix_fd:      return "pool_posix_fd";
    case mem_kind::pool_no_handle:     return "pool_no_handle";
    case mem_kind::vmm_posix_fd:       return "vmm_posix_fd";
    case mem_kind::vmm_no_handle:      return "vmm_no_handle";
    case mem_kind::vmm_two_chunks:     return "vmm_two_chunks";
    case mem_kind::managed:            return "managed";
    case mem_kind::host_alloc:         return "host_alloc";
    }
    return "?";
}

allocation::~allocation()
{
    release();
}

CUmemAccessDesc rw_access(int device)
{
    CUmemAccessDesc access;

    memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id   = device;
    access.flags         = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return access;
}

static CUresult vmm_allocate(allocation &a, CUmemAllocationHandleType types,
                             size_t nchunks, int device)
{
    CUmemAccessDesc access = rw_access(device);
    CUmemAllocationProp prop;
    size_t chunk = a.size / nchunks;
    CUresult r;

    memset(&prop, 0, sizeof(prop));
    prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id          = device;
    prop.requestedHandleTypes = types;
    for (size_t i = 0; i < nchunks; ++i) {
        CUmemGenericAllocationHandle h;
        r = cuMemCreate(&h, chunk, &prop, 0);
        if (r != CUDA_SUCCESS) {
            return r;
        }
        a.chunks.push_back(h);
    }
    r = cuMemAddressReserve(&a.reserved, a.size, 0, 0, 0);
    if (r != CUDA_SUCCESS) {
        return r;
    }
    for (size_t i = 0; i < nchunks; ++i) {
        r = cuMemMap(a.reserved + i * chunk, chunk, 0, a.chunks[i], 0);
        if (r != CUDA_SUCCESS) {
            return r;
        }
        a.ptr = a.reserved; /* from here on release() unmaps */
    }
    return cuMemSetAccess(a.reserved, a.size, &access, 1);
}

static CUresult pool_allocate(allocation &a, CUmemAllocationHandleType types,
                              int device)
{
    CUmemPoolProps props;
    CUresult r;

    memset(&props, 0, sizeof(props));
    props.allocType     = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes   = types;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id   = device;
    r = cuMemPoolCreate(&a.pool, &props);
    if (r != CUDA_SUCCESS) {
        a.pool = nullptr;
        return r;
    }
    r = cuMemAllocFromPoolAsync(&a.ptr, a.size, a.pool, a.stream);
    return (r == CUDA_SUCCESS) ? cuStreamSynchronize(a.stream) : r;
}

CUresult allocation::allocate(mem_kind k, size_t sz, int device)
{
    void *host = nullptr;
    CUresult r;

    kind = k;
    size = sz;
    r    = cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) {
        return r;
    }
    switch (kind) {
    case mem_kind::legacy:
        return cuMemAlloc(&ptr, size);
    case mem_kind::async_default_pool:
        r = cuMemAllocAsync(&ptr, size, stream);
        return (r == CUDA_SUCCESS) ? cuStreamSynchronize(stream) : r;
    case mem_kind::pool_posix_fd:
        return pool_allocate(*this, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                             device);
    case mem_kind::pool_no_handle:
        return pool_allocate(*this, CU_MEM_HANDLE_TYPE_NONE, device);
    case mem_kind::vmm_posix_fd:
        return vmm_allocate(*this, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1,
                            device);
    case mem_kind::vmm_no_handle:
        return vmm_allocate(*this, CU_MEM_HANDLE_TYPE_NONE, 1, device);
    case mem_kind::vmm_two_chunks:
        return vmm_allocate(*this, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 2,
                            device);
    case mem_kind::managed:
        return cuMemAllocManaged(&ptr, size, CU_MEM_ATTACH_GLOBAL);
    case mem_kind::host_alloc:
        r   = cuMemHostAlloc(&host, size, 0);
        ptr = (CUdeviceptr)host;
        return r;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult allocation::release()
{
    CUresult r = CUDA_SUCCESS, r2;

    switch (kind) {
    case mem_kind::legacy:
    case mem_kind::managed:
        if (ptr != 0) {
            r = cuMemFree(ptr);
        }
        break;
    case mem_kind::async_default_pool:
    case mem_kind::pool_posix_fd:
    case mem_kind::pool_no_handle:
        if (ptr != 0) {
            r = cuMemFreeAsync(ptr, stream);
            cuStreamSynchronize(stream);
        }
        if (pool != nullptr) {
            r2 = cuMemPoolDestroy(pool);
            r  = (r == CUDA_SUCCESS) ? r2 : r;
        }
        break;
    case mem_kind::vmm_posix_fd:
    case mem_kind::vmm_no_handle:
    case mem_kind::vmm_two_chunks:
        if (ptr != 0) {
            r = cuMemUnmap(ptr, size);
        }
        for (auto h : chunks) {
            r2 = cuMemRelease(h);
            r  = (r == CUDA_SUCCESS) ? r2 : r;
        }
        if (reserved != 0) {
            r2 = cuMemAddressFree(reserved, size);
            r  = (r == CUDA_SUCCESS) ? r2 : r;
        }
        break;
    case mem_kind::host_alloc:
        if (ptr != 0) {
            r = cuMemFreeHost((void *)ptr);
        }
        break;
    }
    if (stream != nullptr) {
        cuStreamDestroy(stream);
    }
    ptr      = 0;
    pool     = nullptr;
    stream   = nullptr;
    reserved = 0;
    chunks.clear();
    return r;
}

static unsigned char pattern_byte(size_t i, unsigned seed)
{
    return (unsigned char)(i * 131 + seed + (i >> 12));
}

void write_pattern(CUdeviceptr ptr, size_t size, unsigned seed)
{
    std::vector<unsigned char> buf(size);

    for (size_t i = 0; i < size; ++i) {
        buf[i] = pattern_byte(i, seed);
    }
    ASSERT_CU(cuMemcpy(ptr, (CUdeviceptr)buf.data(), size));
    ASSERT_CU(cuCtxSynchronize());
}

bool check_pattern(CUdeviceptr ptr, size_t size, unsigned seed)
{
    std::vector<unsigned char> buf(size, 0);

    if (cuMemcpy((CUdeviceptr)buf.data(), ptr, size) != CUDA_SUCCESS) {
        return false;
    }
    for (size_t i = 0; i < size; ++i) {
        if (buf[i] != pattern_byte(i, seed)) {
            return false;
        }
    }
    return true;
}

int pidfd_fetch(pid_t pid, int remote_fd)
{
    int pidfd, fd;

    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        return -1;
    }
    fd = (int)syscall(SYS_pidfd_getfd, pidfd, remote_fd, 0);
    close(pidfd);
    return fd;
}

int probe_in_child(const std::function<int()> &fn)
{
    int result = -1;

    ucx_test::run_two_processes(
        [&](ucx_test::oob_channel &ch) {
            int value = -1;
            ASSERT_TRUE(ch.recv(&value, sizeof(value)));
            result = value;
        },
        [&](ucx_test::oob_channel &ch) {
            int value = fn();
            ch.send(&value, sizeof(value));
        });
    return result;
}

CUdeviceptr map_chunks(const std::vector<CUmemGenericAllocationHandle> &h,
                       size_t chunk_size, int device)
{
    CUmemAccessDesc access = rw_access(device);
    size_t total = chunk_size * h.size();
    CUdeviceptr base = 0;
    size_t mapped;

    if (cuMemAddressReserve(&base, total, 0, 0, 0) != CUDA_SUCCESS) {
        return 0;
    }
    for (mapped = 0; mapped < h.size(); ++mapped) {
        if (cuMemMap(base + mapped * chunk_size, chunk_size, 0, h[mapped],
                     0) != CUDA_SUCCESS) {
            break;
        }
    }
    if ((mapped == h.size()) &&
        (cuMemSetAccess(base, total, &access, 1) == CUDA_SUCCESS)) {
        return base;
    }
    for (size_t i = 0; i < mapped; ++i) {
        cuMemUnmap(base + i * chunk_size, chunk_size);
    }
    cuMemAddressFree(base, total);
    return 0;
}

void unmap_chunks(CUdeviceptr base, size_t chunk_size, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        EXPECT_CU(cuMemUnmap(base + i * chunk_size, chunk_size));
    }
    EXPECT_CU(cuMemAddressFree(base, chunk_size * count));
}

} // namespace cuda_test
