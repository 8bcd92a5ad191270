#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_cuda_fns.h"
#include "perf_time.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* Only the headers come from the toolkit: both libraries are opened at run
 * time (see perf_cuda_fns.h for how the tables are typed and named). */
#define PERF_CUDA_STR(_x)          #_x
#define PERF_CUDA_FN_SYMBOL(_name) PERF_CUDA_STR(_name),

#ifndef PERF_CUDART_DIR
#  define PERF_CUDART_DIR "/usr/local/cuda"
#endif

#define PERF_CUDA_RAW_WARMUP 4        /* untimed copies before the reference */

const char *perf_cuda_api_names[] = {"auto", "runtime", "driver", NULL};

perf_cuda_driver_t perf_cu;
perf_cuda_runtime_t perf_cudart;

static struct {
    int             loaded;      /* load attempted */
    char            why[256];    /* non-empty: unavailable */
    void            *libcuda;
    void            *libcudart;
    int             num_devices;
    perf_cuda_api_t api;
    int             runtime;     /* -1: not decided yet */
    char            runtime_why[160];
    char            description[256];
} perf_cuda = {.runtime = -1};

void perf_cuda_set_api(perf_cuda_api_t api)
{
    perf_cuda.api = api;
}

const char *perf_cuda_error(CUresult res)
{
    const char *str = NULL;

    if ((perf_cu.cuGetErrorString == NULL) ||
        (perf_cu.cuGetErrorString(res, &str) != CUDA_SUCCESS) || (str == NULL)) {
        return "unknown CUDA error";
    }
    return str;
}

/* Fill @a table (an array of @a count pointers) with the symbols @a names;
 * -1 with the missing one in @a why. */
static int perf_cuda_dlsym(void *lib, const char *lib_name, const char *const *names,
                           void *table, size_t count, char *why, size_t max)
{
    void **slots = table;
    size_t i;

    for (i = 0; i < count; ++i) {
        slots[i] = dlsym(lib, names[i]);
        if (slots[i] == NULL) {
            snprintf(why, max, "%s has no %s (too old)", lib_name, names[i]);
            return -1;
        }
    }
    return 0;
}

static void perf_cuda_load(void)
{
    static const char *const cu_names[] = {
        PERF_CUDA_DRIVER_FNS(PERF_CUDA_FN_SYMBOL)
    };
    CUresult res;

    perf_cuda.loaded = 1;
    perf_cuda.libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (perf_cuda.libcuda == NULL) {
        snprintf(perf_cuda.why, sizeof(perf_cuda.why), "no CUDA driver (%s)", dlerror());
        return;
    }
    if (perf_cuda_dlsym(perf_cuda.libcuda, "libcuda.so.1", cu_names, &perf_cu,
                        sizeof(cu_names) / sizeof(cu_names[0]), perf_cuda.why,
                        sizeof(perf_cuda.why)) < 0) {
        return;
    }
    res = perf_cu.cuInit(0);
    if (res == CUDA_SUCCESS) {
        res = perf_cu.cuDeviceGetCount(&perf_cuda.num_devices);
    }
    if (res != CUDA_SUCCESS) {
        snprintf(perf_cuda.why, sizeof(perf_cuda.why), "cuInit failed: %s",
                 perf_cuda_error(res));
    } else if (perf_cuda.num_devices == 0) {
        snprintf(perf_cuda.why, sizeof(perf_cuda.why), "the CUDA driver sees no device");
    }
}

const char *perf_cuda_unavailable(void)
{
    if (!perf_cuda.loaded) {
        perf_cuda_load();
    }
    return (perf_cuda.why[0] != '\0') ? perf_cuda.why : NULL;
}

int perf_cuda_device_count(void)
{
    return (perf_cuda_unavailable() == NULL) ? perf_cuda.num_devices : 0;
}

/* libcudart from the loader's path, else from the toolkit configure found. */
static void *perf_cuda_open_runtime(void)
{
    static const char *const names[] = {
        "libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
        PERF_CUDART_DIR "/lib64/libcudart.so", PERF_CUDART_DIR "/lib/libcudart.so"
    };
    void *lib;
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
        lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
        if (lib != NULL) {
            return lib;
        }
    }
    return NULL;
}

/* Whether cudart loads and works here (it does not on the driver model,
 * which cannot serve cudart's private export tables). */
static int perf_cuda_probe_runtime(void)
{
    static const char *const names[] = {
        PERF_CUDA_RUNTIME_FNS(PERF_CUDA_FN_SYMBOL)
    };
    cudaError_t err;
    int count = 0;

    /* The CI model serves the driver API only; asking cudart to use it
     * only fails, with noise from the model. */
    if (dlsym(RTLD_DEFAULT, "cudasim_model_info") != NULL) {
        snprintf(perf_cuda.runtime_why, sizeof(perf_cuda.runtime_why),
                 "the driver is cudasim, which cudart cannot use");
        return 0;
    }
    perf_cuda.libcudart = perf_cuda_open_runtime();
    if (perf_cuda.libcudart == NULL) {
        snprintf(perf_cuda.runtime_why, sizeof(perf_cuda.runtime_why),
                 "libcudart not found");
        return 0;
    }
    if (perf_cuda_dlsym(perf_cuda.libcudart, "libcudart", names, &perf_cudart,
                        sizeof(names) / sizeof(names[0]), perf_cuda.runtime_why,
                        sizeof(perf_cuda.runtime_why)) < 0) {
        return 0;
    }
    err = perf_cudart.cudaGetDeviceCount(&count);
    if ((err != cudaSuccess) || (count == 0)) {
        snprintf(perf_cuda.runtime_why, sizeof(perf_cuda.runtime_why),
                 "cudart cannot use the driver: %s",
                 (err != cudaSuccess) ? perf_cudart.cudaGetErrorString(err) : "no device");
        return 0;
    }
    return 1;
}

int perf_cuda_use_runtime(void)
{
    int works;

    if (perf_cuda.runtime >= 0) {
        return perf_cuda.runtime;
    }
    works = (perf_cuda.api != PERF_CUDA_API_DRIVER) && perf_cuda_probe_runtime();
    perf_cuda.runtime = works;
    if (works) {
        snprintf(perf_cuda.description, sizeof(perf_cuda.description), "cudart");
    } else if (perf_cuda.api == PERF_CUDA_API_DRIVER) {
        snprintf(perf_cuda.description, sizeof(perf_cuda.description),
                 "driver API (--cuda-api driver)");
    } else {
        snprintf(perf_cuda.description, sizeof(perf_cuda.description),
                 "driver API (%s)", perf_cuda.runtime_why);
    }
    return works;
}

const char *perf_cuda_api_description(void)
{
    (void)perf_cuda_use_runtime();
    return perf_cuda.description;
}

ucs_status_t perf_cuda_set_device(int device, char *error, size_t max)
{
    const char *why = perf_cuda_unavailable();
    CUcontext ctx;
    CUdevice dev;
    cudaError_t err;
    CUresult res;

    if (why != NULL) {
        snprintf(error, max, "%s", why);
        return UCS_ERR_UNSUPPORTED;
    }
    if ((device < 0) || (device >= perf_cuda.num_devices)) {
        snprintf(error, max, "GPU %d does not exist (this machine has %d)", device,
                 perf_cuda.num_devices);
        return UCS_ERR_NO_DEVICE;
    }
    if (perf_cuda_use_runtime()) {
        /* cudart retains the primary context and makes it current. */
        err = perf_cudart.cudaSetDevice(device);
        if (err != cudaSuccess) {
            snprintf(error, max, "cudaSetDevice(%d) failed: %s", device,
                     perf_cudart.cudaGetErrorString(err));
            return UCS_ERR_IO_ERROR;
        }
    }
    res = perf_cu.cuDeviceGet(&dev, device);
    if (res == CUDA_SUCCESS) {
        /* Retained once per call: the tool keeps primary contexts to the end. */
        res = perf_cu.cuDevicePrimaryCtxRetain(&ctx, dev);
    }
    if (res == CUDA_SUCCESS) {
        res = perf_cu.cuCtxSetCurrent(ctx);
    }
    if (res != CUDA_SUCCESS) {
        snprintf(error, max, "cannot make GPU %d current: %s", device,
                 perf_cuda_error(res));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t perf_cuda_copy_to_device(int device, void *dptr, const void *src,
                                      size_t length)
{
    char error[PERF_ERROR_MAX];

    /* A blocking copy from pageable memory may return before it landed;
     * the peer reads the buffer through its own mapping, which does not
     * wait for our legacy stream: synchronise it. */
    if ((perf_cuda_set_device(device, error, sizeof(error)) != UCS_OK) ||
        (perf_cu.cuMemcpyHtoD((CUdeviceptr)dptr, src, length) != CUDA_SUCCESS) ||
        (perf_cu.cuStreamSynchronize(NULL) != CUDA_SUCCESS)) {
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t perf_cuda_copy_from_device(int device, void *dst, const void *dptr,
                                        size_t length)
{
    char error[PERF_ERROR_MAX];

    if ((perf_cuda_set_device(device, error, sizeof(error)) != UCS_OK) ||
        (perf_cu.cuMemcpyDtoH(dst, (CUdeviceptr)dptr, length) != CUDA_SUCCESS)) {
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

/* Peer access from the current context to @a peer; "already enabled" is fine. */
static CUresult perf_cuda_enable_peer(int device, int peer)
{
    CUcontext ctx;
    CUdevice dev;
    int can = 0;
    CUresult res;

    if (device == peer) {
        return CUDA_SUCCESS;
    }
    res = perf_cu.cuDeviceGet(&dev, peer);
    if (res == CUDA_SUCCESS) {
        res = perf_cu.cuDeviceCanAccessPeer(&can, device, dev);
    }
    if ((res != CUDA_SUCCESS) || !can) {
        /* The copy still works, through host memory: the reference says so. */
        return CUDA_SUCCESS;
    }
    res = perf_cu.cuDevicePrimaryCtxRetain(&ctx, dev);
    if (res == CUDA_SUCCESS) {
        res = perf_cu.cuCtxEnablePeerAccess(ctx, 0);
    }
    return (res == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) ? CUDA_SUCCESS : res;
}

ucs_status_t perf_cuda_raw_copy(int src_dev, int dst_dev, size_t size, uint64_t iters,
                                unsigned window, double *seconds_p, char *error,
                                size_t max)
{
    CUdeviceptr src = 0, dst = 0;
    CUstream stream = NULL;
    const char *what;
    uint64_t i, start;
    CUresult res;

    if (size == 0) {
        size = 1;
    }
    if (window == 0) {
        window = 1;
    }
    if (perf_cuda_set_device(dst_dev, error, max) != UCS_OK) {
        return UCS_ERR_UNSUPPORTED;
    }
    what = "cuMemAlloc on the receiver's GPU";
    res  = perf_cu.cuMemAlloc(&dst, size);
    if (res != CUDA_SUCCESS) {
        goto out;
    }
    if (perf_cuda_set_device(src_dev, error, max) != UCS_OK) {
        res = CUDA_ERROR_INVALID_DEVICE;
        goto out;
    }
    what = "cuMemAlloc on the sender's GPU";
    res  = perf_cu.cuMemAlloc(&src, size);
    if (res != CUDA_SUCCESS) {
        goto out;
    }
    what = "cuCtxEnablePeerAccess";
    res  = perf_cuda_enable_peer(src_dev, dst_dev);
    if (res != CUDA_SUCCESS) {
        goto out;
    }
    what = "cuStreamCreate";
    res  = perf_cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
    if (res != CUDA_SUCCESS) {
        goto out;
    }

    what = "cuMemcpyDtoDAsync";
    for (i = 0; (res == CUDA_SUCCESS) && (i < PERF_CUDA_RAW_WARMUP); ++i) {
        res = perf_cu.cuMemcpyDtoDAsync(dst, src, size, stream);
    }
    if (res == CUDA_SUCCESS) {
        res = perf_cu.cuStreamSynchronize(stream);
    }
    start = perf_time_mono_ns();
    for (i = 0; (res == CUDA_SUCCESS) && (i < iters); ++i) {
        res = perf_cu.cuMemcpyDtoDAsync(dst, src, size, stream);
        if ((res == CUDA_SUCCESS) && (((i + 1) % window) == 0)) {
            res = perf_cu.cuStreamSynchronize(stream);
        }
    }
    if (res == CUDA_SUCCESS) {
        res = perf_cu.cuStreamSynchronize(stream);
    }
    *seconds_p = (double)(perf_time_mono_ns() - start) * 1e-9;

out:
    if (res != CUDA_SUCCESS) {
        snprintf(error, max, "raw-copy reference: %s failed: %s", what,
                 perf_cuda_error(res));
    }
    if (stream != NULL) {
        perf_cu.cuStreamDestroy(stream);
    }
    if (src != 0) {
        perf_cu.cuMemFree(src);
    }
    if (dst != 0) {
        (void)perf_cuda_set_device(dst_dev, error + strlen(error), 0);
        perf_cu.cuMemFree(dst);
    }
    return (res == CUDA_SUCCESS) ? UCS_OK : UCS_ERR_IO_ERROR;
}
