#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * Modules and kernel launches. The model cannot run GPU code, so it knows
 * kernels by name and runs a C version of the few it models:
 *
 *   uct_cuda_copy_batch_kernel  the cuda_ipc transport's batched copy
 *                               (src/uct/cuda/cuda_copy_kernel.cu): copy
 *                               blockIdx.y moves len[y] bytes src -> dst.
 *
 * A module is any image that names its kernels as PTX does (".entry NAME");
 * cuModuleGetFunction finds only names the image has. Like a real kernel,
 * the copy may touch only device memory its GPU can reach: pageable or
 * pinned host memory, managed memory, memory without access for this GPU,
 * and cuMemAlloc memory or legacy IPC mappings not mapped in the stream's
 * context make the launch fail with CUDA_ERROR_ILLEGAL_ADDRESS
 * and a diagnostic (on a GPU it would fault later and poison the context;
 * the model reports it where it happens). Launch geometry is checked
 * against the kernel's limits (at most 512 threads per block).
 *
 * Faults on demand: CUDASIM_KERNELS=0 makes every module fail to load as
 * PTX too new for the driver does (CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
 * CUDASIM_LAUNCH_FAIL=N makes the N-th launch of the process and every one
 * after it fail with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, queueing nothing.
 */
#include "cudasim.h"
#include "cuda_copy_kernel.h"

#include <stdlib.h>
#include <string.h>

#define SIM_MODULE_MAGIC 0x4d4f444cu /* "MODL" */

typedef enum { SIM_KERNEL_COPY_BATCH, SIM_KERNEL_LAST } sim_kernel_kind_t;

struct CUfunc_st {
    CUmodule module;
    sim_kernel_kind_t kind;
};

/* A module owns the handles of its functions, as the driver's do: they die
 * with it. One per kernel the model knows. */
struct CUmod_st {
    uint32_t magic;
    char *image;
    struct CUfunc_st funcs[SIM_KERNEL_LAST];
};

static const struct {
    const char *name;
    sim_kernel_kind_t kind;
} sim_kernels[] = {
    {UCT_CUDA_COPY_KERNEL_NAME, SIM_KERNEL_COPY_BATCH},
};

static CUresult sim_module_load(CUmodule *module, const void *image)
{
    CUresult status = sim_enter();
    CUcontext ctx;
    CUmodule m;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((module == NULL) || (image == NULL)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_ctx_require(&ctx)) == CUDA_SUCCESS) {
        if (!sim.cfg.kernels) {
            status = CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
        } else if (strstr(image, ".entry") == NULL) {
            status = CUDA_ERROR_INVALID_IMAGE;
        } else if (((m = calloc(1, sizeof(*m))) == NULL) ||
                   ((m->image = strdup(image)) == NULL)) {
            free(m);
            status = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            m->magic = SIM_MODULE_MAGIC;
            *module  = m;
        }
    }
    sim_leave();
    return status;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    return sim_module_load(module, image);
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                            CUjit_option *options, void **optionValues)
{
    (void)numOptions;
    (void)options;
    (void)optionValues;
    return sim_module_load(module, image);
}

CUresult cuModuleUnload(CUmodule hmod)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((hmod == NULL) || (hmod->magic != SIM_MODULE_MAGIC)) {
        status = CUDA_ERROR_INVALID_HANDLE;
    } else {
        hmod->magic = 0;
        free(hmod->image);
        free(hmod);
    }
    sim_leave();
    return status;
}

/* Whether the image names kernel @a name as PTX does: ".entry NAME(". */
static int sim_module_has(CUmodule m, const char *name)
{
    size_t len = strlen(name);
    const char *p;

    for (p = strstr(m->image, ".entry"); p != NULL; p = strstr(p + 1, ".entry")) {
        const char *q = p + strlen(".entry");

        while ((*q == ' ') || (*q == '\t')) {
            ++q;
        }
        if ((strncmp(q, name, len) == 0) &&
            ((q[len] == '(') || (q[len] == ' ') || (q[len] == '\n'))) {
            return 1;
        }
    }
    return 0;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    CUresult status = sim_enter();
    struct CUfunc_st *f;
    size_t i;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = CUDA_ERROR_NOT_FOUND;
    if ((hfunc == NULL) || (name == NULL)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((hmod == NULL) || (hmod->magic != SIM_MODULE_MAGIC)) {
        status = CUDA_ERROR_INVALID_HANDLE;
    } else if (sim_module_has(hmod, name)) {
        for (i = 0; i < sizeof(sim_kernels) / sizeof(sim_kernels[0]); ++i) {
            if (strcmp(sim_kernels[i].name, name) != 0) {
                continue;
            }
            f         = &hmod->funcs[sim_kernels[i].kind];
            f->module = hmod;
            f->kind   = sim_kernels[i].kind;
            *hfunc    = f;
            status    = CUDA_SUCCESS;
            break;
        }
        if (status == CUDA_ERROR_NOT_FOUND) {
            sim_warn("kernel %s is in the image but the model cannot run it", name);
        }
    }
    sim_leave();
    return status;
}

/* Whether a kernel on @a stream may touch [addr, addr + len): device memory
 * the stream's GPU has access to (VMM and pool memory: as set), and for
 * cuMemAlloc memory and legacy IPC mappings, memory mapped in the stream's
 * context: its own allocations, another GPU's allocations of a context it
 * enabled peer access to, and mappings it opened (cuIpcOpenMemHandle with
 * lazy peer access). */
static int sim_kernel_may_touch(uintptr_t addr, size_t len, CUstream stream)
{
    sim_range_t *range = sim_range_find(addr);
    CUcontext ctx      = stream->ctx;

    if ((range == NULL) || range->cpu_visible || (range->kind == SIM_MEM_MANAGED) ||
        (addr + len > range->base + range->size) ||
        !sim_range_device_access(range, ctx->device)) {
        return 0;
    }
    switch (range->kind) {
    case SIM_MEM_LEGACY:
        return (range->ctx == ctx) || ((range->device != ctx->device) &&
                                       ((ctx->peer_mask >> range->device) & 1));
    case SIM_MEM_LEGACY_IMPORT:
        return range->ctx == ctx;
    default:
        return 1;
    }
}

static CUresult sim_copy_batch_launch(CUstream stream, unsigned copies,
                                      const uct_cuda_copy_kernel_args_t *args)
{
    int device = stream->ctx->device;
    CUresult status;
    sim_op_t *op;
    unsigned i;

    if (copies > UCT_CUDA_COPY_KERNEL_MAX_COPIES) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (i = 0; i < copies; ++i) {
        if ((args->len[i] > 0) &&
            (!sim_kernel_may_touch(args->dst[i], args->len[i], stream) ||
             !sim_kernel_may_touch(args->src[i], args->len[i], stream) ||
             ((args->dst[i] | args->src[i]) & 15))) {
            sim_warn("%s: copy %u (0x%llx <- 0x%llx, %llu bytes) is not aligned "
                     "device memory of device %d",
                     UCT_CUDA_COPY_KERNEL_NAME, i, (unsigned long long)args->dst[i],
                     (unsigned long long)args->src[i], (unsigned long long)args->len[i],
                     device);
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        }
    }
    op = sim_op_new(SIM_OP_COPY);
    if (op == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    /* A GPU runs the copies of one launch at the same time, in no order:
     * the model runs them last to first, so that a caller that relies on
     * their order sees wrong data here rather than a race on a GPU. */
    for (i = copies; i-- > 0;) {
        if (args->len[i] == 0) {
            continue;
        }
        status =
            sim_copy_op_add_locked(op, args->dst[i], args->src[i], args->len[i], stream);
        if (status != CUDA_SUCCESS) {
            sim_op_free(op);
            return status;
        }
    }
    sim_stream_submit_locked(stream, op);
    return CUDA_SUCCESS;
}

/* Calls of cuLaunchKernel in this process, failed ones included. */
static unsigned long long sim_launch_calls;

/* For tests: how many launches the process asked for (the model refuses
 * some; a count of 0 says no kernel was even tried). */
unsigned long long cudasim_kernel_launch_calls(void)
{
    return __atomic_load_n(&sim_launch_calls, __ATOMIC_RELAXED);
}

static CUresult sim_launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                  unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                  CUstream hstream, void **params, void **extra, int ptsz)
{
    CUresult status = sim_enter();
    CUstream stream;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    __atomic_add_fetch(&sim_launch_calls, 1, __ATOMIC_RELAXED);
    if ((sim.cfg.launch_fail > 0) &&
        (sim_launch_calls >= (unsigned long long)sim.cfg.launch_fail)) {
        status = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    } else if ((f == NULL) || (f->module->magic != SIM_MODULE_MAGIC)) {
        status = CUDA_ERROR_INVALID_HANDLE;
    } else if ((gx == 0) || (gy == 0) || (gz == 0) || (bx == 0) || (by == 0) ||
               (bz == 0) || (gy > 65535) || (gz > 65535) ||
               (bx * by * bz > UCT_CUDA_COPY_KERNEL_THREADS) || (shmem > 0) ||
               (params == NULL) || (extra != NULL)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_stream_resolve(hstream, ptsz, &stream)) == CUDA_SUCCESS) {
        status = sim_copy_batch_launch(stream, gy,
                                       (const uct_cuda_copy_kernel_args_t *)params[0]);
    }
    sim_leave();
    return status;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX,
                        unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream,
                        void **kernelParams, void **extra)
{
    return sim_launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                             blockDimZ, sharedMemBytes, hStream, kernelParams, extra, 0);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX,
                             unsigned int blockDimY, unsigned int blockDimZ,
                             unsigned int sharedMemBytes, CUstream hStream,
                             void **kernelParams, void **extra)
{
    return sim_launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                             blockDimZ, sharedMemBytes, hStream, kernelParams, extra, 1);
}
