/*
 * Buffers of the MPI test programs: host memory, or device memory of one of
 * the CUDA allocation kinds (built with -DHAVE_CUDA). The kind comes from
 * the command line, so one binary runs every case:
 *
 *   prog [host|cuda|cuda-async|cuda-pool|cuda-vmm] [--one-gpu] [--driver-api]
 *
 *   host        malloc
 *   cuda        cudaMalloc                       (legacy IPC handle)
 *   cuda-async  cudaMallocAsync, default pool    (not exportable at all)
 *   cuda-pool   cudaMallocFromPoolAsync from a pool with POSIX-fd handles
 *   cuda-vmm    cuMemCreate (POSIX fd) + cuMemMap + cuMemSetAccess
 *
 * Rank r uses GPU r % (number of GPUs), so two ranks on a two-GPU machine
 * talk across GPUs; --one-gpu (or MPI_BUF_DEVICE=N) puts every rank on one
 * GPU. --driver-api allocates the same kinds through the driver API
 * (cuMemAlloc, cuMemAllocAsync, cuMemAllocFromPoolAsync): that is what runs
 * on the CUDA driver model of CI (test/cudasim), which cudart cannot use.
 * The CPU never touches device memory: data is written and checked through
 * host copies (cuMemcpy).
 */
#ifndef MPI_BUF_H_
#define MPI_BUF_H_

#include "mpi_check.h"

#ifdef HAVE_CUDA
#  include <cuda.h>
#  include <cuda_runtime_api.h>
#endif

typedef enum {
    MPI_BUF_HOST,
    MPI_BUF_CUDA,
    MPI_BUF_CUDA_ASYNC,
    MPI_BUF_CUDA_POOL,
    MPI_BUF_CUDA_VMM,
    MPI_BUF_LAST
} mpi_buf_kind_t;

static const char *const mpi_buf_kind_names[] = {
    "host", "cuda", "cuda-async", "cuda-pool", "cuda-vmm"
};

#define MPI_BUF_MAX_ALLOCS 32

/* What the program was asked for, and what it allocated. */
static struct {
    mpi_buf_kind_t kind;
    int            driver_api;   /* allocate through the driver API */
    int            one_gpu;      /* every rank on one device */
    int            device;       /* this rank's device, -1 for host */
    int            num_devices;
    struct {
        void           *ptr;
        size_t         length;  /* VMM: the mapped (rounded) length */
        int            device;
        mpi_buf_kind_t kind;
#ifdef HAVE_CUDA
        CUmemGenericAllocationHandle vmm;
#endif
    } allocs[MPI_BUF_MAX_ALLOCS];
#ifdef HAVE_CUDA
    CUmemoryPool pools[16];     /* cuda-pool: one per device, made on use */
#endif
} mpi_buf;

/* Before MPI_Init or after it: abort the job, or exit when there is none. */
static inline void mpi_buf_die(const char *what, const char *why)
{
    int init = 0;

    fprintf(stderr, "mpi_buf: %s: %s\n", what, why);
    MPI_Initialized(&init);
    if (init) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    exit(2);
}

#ifdef HAVE_CUDA
/* Checks a driver call and names it when it fails. */
#  define MPI_CU(_call)                                                      \
      do {                                                                   \
          CUresult _r = (_call);                                             \
          if (_r != CUDA_SUCCESS) {                                          \
              const char *_n = "?";                                          \
              cuGetErrorName(_r, &_n);                                       \
              mpi_buf_die(#_call, _n);                                       \
          }                                                                  \
      } while (0)
/* Checks a runtime call and names it when it fails. */
#  define MPI_CUDART(_call)                                                  \
      do {                                                                   \
          cudaError_t _e = (_call);                                          \
          if (_e != cudaSuccess) {                                           \
              mpi_buf_die(#_call, cudaGetErrorName(_e));                     \
          }                                                                  \
      } while (0)

/* Make @a dev's primary context current (the runtime's, too). */
static inline void mpi_buf_use_device(int dev)
{
    CUcontext ctx;
    CUdevice cudev;

    if (mpi_buf.driver_api) {
        MPI_CU(cuDeviceGet(&cudev, dev));
        MPI_CU(cuDevicePrimaryCtxRetain(&ctx, cudev));
        MPI_CU(cuCtxSetCurrent(ctx));
    } else {
        MPI_CUDART(cudaSetDevice(dev));
        MPI_CUDART(cudaFree(NULL)); /* creates the primary context */
    }
}

/* Made through the driver whichever API allocates from it: pool creation
 * allocates nothing, and a cudaMemPool_t is the driver's CUmemoryPool. */
static inline CUmemoryPool mpi_buf_pool(int dev)
{
    CUmemPoolProps props;

    if (mpi_buf.pools[dev] != NULL) {
        return mpi_buf.pools[dev];
    }
    memset(&props, 0, sizeof(props));
    props.allocType     = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes   = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id   = dev;
    MPI_CU(cuMemPoolCreate(&mpi_buf.pools[dev], &props));
    return mpi_buf.pools[dev];
}

/* Destroy the pools made so far, so that the next cuda-pool buffer comes
 * from a pool nobody has seen (the peer must import it anew): what a program
 * that makes a pool per phase or per message size does. Every buffer of the
 * pools must have been freed. */
static inline void mpi_buf_fresh_pools(void)
{
    int dev;

    for (dev = 0; dev < 16; ++dev) {
        if (mpi_buf.pools[dev] != NULL) {
            MPI_CU(cuMemPoolDestroy(mpi_buf.pools[dev]));
            mpi_buf.pools[dev] = NULL;
        }
    }
}

static inline void *mpi_buf_vmm_alloc(int dev, size_t *length_p,
                               CUmemGenericAllocationHandle *handle_p)
{
    CUmemAllocationProp prop;
    CUmemAccessDesc access;
    CUdeviceptr ptr;
    size_t gran;

    memset(&prop, 0, sizeof(prop));
    prop.type                 = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type        = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id          = dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    MPI_CU(cuMemGetAllocationGranularity(&gran, &prop,
                                         CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    *length_p = (*length_p + gran - 1) / gran * gran;
    MPI_CU(cuMemCreate(handle_p, *length_p, &prop, 0));
    MPI_CU(cuMemAddressReserve(&ptr, *length_p, gran, 0, 0));
    MPI_CU(cuMemMap(ptr, *length_p, 0, *handle_p, 0));
    memset(&access, 0, sizeof(access));
    access.location = prop.location;
    access.flags    = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    MPI_CU(cuMemSetAccess(ptr, *length_p, &access, 1));
    return (void*)ptr;
}

static inline void *mpi_buf_cuda_alloc(mpi_buf_kind_t kind, int dev, size_t length,
                                size_t *mapped_p,
                                CUmemGenericAllocationHandle *vmm_p)
{
    CUdeviceptr dptr = 0;
    void *ptr        = NULL;

    mpi_buf_use_device(dev);
    *mapped_p = length;
    switch (kind) {
    case MPI_BUF_CUDA:
        if (mpi_buf.driver_api) {
            MPI_CU(cuMemAlloc(&dptr, length));
            ptr = (void*)dptr;
        } else {
            MPI_CUDART(cudaMalloc(&ptr, length));
        }
        break;
    case MPI_BUF_CUDA_ASYNC:
        if (mpi_buf.driver_api) {
            MPI_CU(cuMemAllocAsync(&dptr, length, NULL));
            MPI_CU(cuStreamSynchronize(NULL));
            ptr = (void*)dptr;
        } else {
            MPI_CUDART(cudaMallocAsync(&ptr, length, 0));
            MPI_CUDART(cudaStreamSynchronize(0));
        }
        break;
    case MPI_BUF_CUDA_POOL:
        if (mpi_buf.driver_api) {
            MPI_CU(cuMemAllocFromPoolAsync(&dptr, length, mpi_buf_pool(dev),
                                           NULL));
            MPI_CU(cuStreamSynchronize(NULL));
            ptr = (void*)dptr;
        } else {
            MPI_CUDART(cudaMallocFromPoolAsync(
                    &ptr, length, (cudaMemPool_t)mpi_buf_pool(dev), 0));
            MPI_CUDART(cudaStreamSynchronize(0));
        }
        break;
    default:
        ptr = mpi_buf_vmm_alloc(dev, mapped_p, vmm_p);
        break;
    }
    if (dev != mpi_buf.device) {
        mpi_buf_use_device(mpi_buf.device);
    }
    return ptr;
}

static inline void mpi_buf_cuda_free(mpi_buf_kind_t kind, void *ptr, size_t mapped,
                              CUmemGenericAllocationHandle vmm)
{
    switch (kind) {
    case MPI_BUF_CUDA:
        if (mpi_buf.driver_api) {
            MPI_CU(cuMemFree((CUdeviceptr)ptr));
        } else {
            MPI_CUDART(cudaFree(ptr));
        }
        break;
    case MPI_BUF_CUDA_ASYNC:
    case MPI_BUF_CUDA_POOL:
        if (mpi_buf.driver_api) {
            MPI_CU(cuMemFreeAsync((CUdeviceptr)ptr, NULL));
            MPI_CU(cuStreamSynchronize(NULL));
        } else {
            MPI_CUDART(cudaFreeAsync(ptr, 0));
            MPI_CUDART(cudaStreamSynchronize(0));
        }
        break;
    default:
        MPI_CU(cuMemUnmap((CUdeviceptr)ptr, mapped));
        MPI_CU(cuMemRelease(vmm));
        MPI_CU(cuMemAddressFree((CUdeviceptr)ptr, mapped));
        break;
    }
}
#endif /* HAVE_CUDA */

static inline int mpi_buf_is_device(void)
{
    return mpi_buf.kind != MPI_BUF_HOST;
}

/* The rank before MPI_Init, from the launcher's environment. */
static inline int mpi_buf_launch_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                       "PMI_RANK", NULL};
    const char *const *v;

    for (v = vars; *v != NULL; ++v) {
        if (getenv(*v) != NULL) {
            return atoi(getenv(*v));
        }
    }
    return 0;
}

/*
 * Parse and remove the buffer options from the command line and pick this
 * rank's device: call before MPI_Init (the device must be current before
 * the MPI library sees a device pointer). Unknown arguments stay for the
 * program.
 */
static inline void mpi_buf_setup(int *argc, char **argv)
{
    const char *env = getenv("MPI_BUF_DEVICE");
    int i, k, out = 1;

    mpi_buf.kind   = MPI_BUF_HOST;
    mpi_buf.device = -1;
    for (i = 1; i < *argc; ++i) {
        for (k = 0; k < MPI_BUF_LAST; ++k) {
            if (!strcmp(argv[i], mpi_buf_kind_names[k])) {
                break;
            }
        }
        if (k < MPI_BUF_LAST) {
            mpi_buf.kind = (mpi_buf_kind_t)k;
        } else if (!strcmp(argv[i], "--one-gpu")) {
            mpi_buf.one_gpu = 1;
        } else if (!strcmp(argv[i], "--driver-api")) {
            mpi_buf.driver_api = 1;
        } else {
            argv[out++] = argv[i];
        }
    }
    *argc     = out;
    argv[out] = NULL;
    if (!mpi_buf_is_device()) {
        return;
    }
#ifdef HAVE_CUDA
    MPI_CU(cuInit(0));
    if (mpi_buf.driver_api) {
        MPI_CU(cuDeviceGetCount(&mpi_buf.num_devices));
    } else {
        MPI_CUDART(cudaGetDeviceCount(&mpi_buf.num_devices));
    }
    if (mpi_buf.num_devices <= 0) {
        mpi_buf_die("device buffers", "no CUDA device");
    }
    if (env != NULL) {
        mpi_buf.device = atoi(env) % mpi_buf.num_devices;
    } else if (mpi_buf.one_gpu) {
        mpi_buf.device = 0;
    } else {
        mpi_buf.device = mpi_buf_launch_rank() % mpi_buf.num_devices;
    }
    mpi_buf_use_device(mpi_buf.device);
#else
    (void)env;
    mpi_buf_die(mpi_buf_kind_names[mpi_buf.kind],
                "built without CUDA (compile with -DHAVE_CUDA)");
#endif
}

/* The device rank @a rank uses (-1: host buffers). */
static inline int mpi_buf_device_of(int rank)
{
    if (!mpi_buf_is_device()) {
        return -1;
    }
    if ((getenv("MPI_BUF_DEVICE") != NULL) || mpi_buf.one_gpu) {
        return mpi_buf.device;
    }
    return rank % mpi_buf.num_devices;
}

/* One line saying what this run uses, from rank 0. */
static inline void mpi_buf_report(const char *prog)
{
    int rank, size, r;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank != 0) {
        return;
    }
    printf("%s: buffers %s%s, devices", prog, mpi_buf_kind_names[mpi_buf.kind],
           mpi_buf.driver_api ? " (driver api)" : "");
    for (r = 0; r < size; ++r) {
        printf(" %d", mpi_buf_device_of(r));
    }
    printf("\n");
    fflush(stdout);
}

/* A buffer of @a kind on device @a dev (ignored for host). */
static inline void *mpi_buf_alloc_kind(mpi_buf_kind_t kind, int dev,
                                       size_t length)
{
    void *ptr = NULL;
    int i;

    if (length == 0) {
        length = 1;
    }
    for (i = 0; (i < MPI_BUF_MAX_ALLOCS) && (mpi_buf.allocs[i].ptr != NULL); ++i) {
    }
    if (i == MPI_BUF_MAX_ALLOCS) {
        mpi_buf_die("mpi_buf_alloc", "too many buffers");
    }
    mpi_buf.allocs[i].length = length;
    mpi_buf.allocs[i].device = dev;
    mpi_buf.allocs[i].kind   = kind;
    if (kind == MPI_BUF_HOST) {
        ptr = malloc(length);
    }
#ifdef HAVE_CUDA
    else {
        ptr = mpi_buf_cuda_alloc(kind, dev, length, &mpi_buf.allocs[i].length,
                                 &mpi_buf.allocs[i].vmm);
    }
#endif
    if (ptr == NULL) {
        mpi_buf_die("mpi_buf_alloc", "out of memory");
    }
    mpi_buf.allocs[i].ptr = ptr;
    return ptr;
}

/* A buffer of the chosen kind on device @a dev (ignored for host). */
static inline void *mpi_buf_alloc_on(int dev, size_t length)
{
    return mpi_buf_alloc_kind(mpi_buf.kind, dev, length);
}

#ifdef HAVE_CUDA
/* Let this rank's device reach @a dev directly (what a raw copy between
 * the two uses); already enabled is fine. */
static inline void mpi_buf_enable_peer(int dev)
{
    CUcontext peer;
    CUdevice cudev;
    CUresult r;
    int can = 0;

    MPI_CU(cuDeviceGet(&cudev, dev));
    MPI_CU(cuDeviceCanAccessPeer(&can, mpi_buf.device, cudev));
    if (!can) {
        return;
    }
    MPI_CU(cuDevicePrimaryCtxRetain(&peer, cudev));
    r = cuCtxEnablePeerAccess(peer, 0);
    if ((r != CUDA_SUCCESS) && (r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)) {
        MPI_CU(r);
    }
}
#endif

/* The yardstick of a transfer to device @a dev: plain device memory
 * (cuMemAlloc) there, reachable from this rank's device; host memory for
 * host runs. */
static inline void *mpi_buf_alloc_raw(int dev, size_t length)
{
    if (!mpi_buf_is_device()) {
        return mpi_buf_alloc_kind(MPI_BUF_HOST, -1, length);
    }
#ifdef HAVE_CUDA
    if (dev != mpi_buf.device) {
        mpi_buf_enable_peer(dev);
    }
#endif
    return mpi_buf_alloc_kind(MPI_BUF_CUDA, dev, length);
}

/* A buffer of the chosen kind on this rank's device. */
static inline void *mpi_buf_alloc(size_t length)
{
    return mpi_buf_alloc_on(mpi_buf.device, length);
}

static inline void mpi_buf_free(void *ptr)
{
    int i;

    for (i = 0; i < MPI_BUF_MAX_ALLOCS; ++i) {
        if (mpi_buf.allocs[i].ptr == ptr) {
            break;
        }
    }
    if (i == MPI_BUF_MAX_ALLOCS) {
        mpi_buf_die("mpi_buf_free", "not allocated by mpi_buf_alloc");
    }
    if (mpi_buf.allocs[i].kind == MPI_BUF_HOST) {
        free(ptr);
    }
#ifdef HAVE_CUDA
    else {
        mpi_buf_cuda_free(mpi_buf.allocs[i].kind, ptr, mpi_buf.allocs[i].length,
                          mpi_buf.allocs[i].vmm);
    }
#endif
    mpi_buf.allocs[i].ptr = NULL;
}

/* Copy between any two buffers (host or device, any kind). */
static inline void mpi_buf_copy(void *dst, const void *src, size_t length)
{
    if (length == 0) {
        return;
    }
    if (!mpi_buf_is_device()) {
        memcpy(dst, src, length);
        return;
    }
#ifdef HAVE_CUDA
    MPI_CU(cuMemcpy((CUdeviceptr)dst, (CUdeviceptr)src, length));
#endif
}

/* Set @a length bytes of a buffer to @a byte. */
static inline void mpi_buf_set(void *buf, int byte, size_t length)
{
    void *tmp;

    if (!mpi_buf_is_device()) {
        memset(buf, byte, length);
        return;
    }
    tmp = malloc(length ? length : 1);
    memset(tmp, byte, length);
    mpi_buf_copy(buf, tmp, length);
    free(tmp);
}

#endif
