#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Batched device-to-device copies (see cuda_copy_kernel.cu for why).
 *
 * A copy that qualifies waits in its queue's argument block instead of
 * being issued; the queue's next progress launches everything that gathered
 * as one kernel, right before it records the event that completes those
 * operations. Only a queue with work outstanding gathers: on an idle queue
 * the copy is issued at once, so a ping-pong waits for nothing. Under a
 * stream of messages the receiver's progress loop sees several new copies
 * per call, and they cost one launch instead of one driver call each; a
 * copy that found no company by then is issued with cuMemcpyAsync after
 * all. The kernel only touches device memory mapped in the queue's context
 * (the caller says, see uct_cuda_kernel_may_touch()), so copies with host
 * memory, managed memory or unaligned ends are issued at once as before.
 */
#include "cuda_common.h"

#include <ucs/sys/sys.h>

#ifdef HAVE_CUDA_COPY_KERNEL
/* cuda_copy_kernel.cu as PTX, generated at build time (Makefile.am). */
extern const char uct_cuda_copy_kernel_ptx[];
#endif

/* Blocks of one copy per SM: 4 x 512 threads fill an SM of a Hopper GPU. */
#define UCT_CUDA_KERNEL_BLOCKS_PER_SM 4

static void uct_cuda_kernel_load(uct_cuda_kernel_t *k)
{
#ifdef HAVE_CUDA_COPY_KERNEL
    uint64_t start = ucs_get_time_ns();
    CUdevice dev;
    CUresult res;
    int sms = 0;

    k->state = -1;
    res      = cuModuleLoadData(&k->module, uct_cuda_copy_kernel_ptx);
    if (res != CUDA_SUCCESS) {
        ucs_debug("cuda: cannot load the copy kernel (%s): copies are issued "
                  "one by one",
                  uct_cuda_cu_name(res));
        return;
    }
    res = cuModuleGetFunction(&k->fn, k->module, UCT_CUDA_COPY_KERNEL_NAME);
    if (res == CUDA_SUCCESS) {
        res = cuCtxGetDevice(&dev);
    }
    if (res == CUDA_SUCCESS) {
        res = cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    }
    if ((res != CUDA_SUCCESS) || (sms <= 0)) {
        ucs_debug("cuda: copy kernel unusable (%s): copies are issued one by one",
                  uct_cuda_cu_name(res));
        (void)cuModuleUnload(k->module);
        return;
    }
    k->blocks_max = (unsigned)sms * UCT_CUDA_KERNEL_BLOCKS_PER_SM;
    k->state      = 1;
    ucs_debug("cuda: copy kernel loaded in %.1f ms (%d SMs, up to %u blocks per "
              "copy, %d copies per launch)",
              (ucs_get_time_ns() - start) * 1e-6, sms, k->blocks_max,
              UCT_CUDA_COPY_KERNEL_MAX_COPIES);
#else
    k->state = -1;
    ucs_debug("cuda: built without nvcc: no copy kernel, copies are issued one "
              "by one");
#endif
}

int uct_cuda_kernel_may_touch(CUcontext ctx, int device, const void *ptr, size_t len)
{
    uct_cuda_mem_desc_t desc;
    CUcontext owner = NULL;

    if ((uct_cuda_mem_describe(ptr, len, &desc) != UCS_OK) ||
        (desc.mem_type != UCS_MEMORY_TYPE_CUDA) || (desc.device != device)) {
        return 0;
    }
    if ((desc.alloc_kind == UCS_MEMTYPE_ALLOC_POOL) ||
        (desc.alloc_kind == UCS_MEMTYPE_ALLOC_VMM)) {
        return 1;
    }
    return (cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT,
                                  (CUdeviceptr)(uintptr_t)ptr) == CUDA_SUCCESS) &&
           (owner == ctx);
}

void uct_cuda_kernel_cleanup(uct_cuda_kernel_t *kernel)
{
    if (kernel->state == 1) {
        (void)cuModuleUnload(kernel->module);
    }
    kernel->state = 0;
}

void uct_cuda_queue_enable_batch(uct_cuda_queue_t *q, uct_cuda_kernel_t *kernel,
                                 size_t batch_max)
{
    q->kernel    = (batch_max > 0) ? kernel : NULL;
    q->batch_max = batch_max;
}

/* Deferred copies that could not be issued: the ops they belong to fail.
 * Those are the ops pushed since the last event record, and the op whose
 * copies are being queued when it is not pushed yet (its push takes the
 * error); ops before them had their copies issued and keep their result. */
static void uct_cuda_queue_fail_deferred(uct_cuda_queue_t *q, CUresult res)
{
    uct_cuda_op_t *op, *first = q->head;

    for (op = q->head; op != NULL; op = op->next) {
        if (op->recorded) {
            first = op->next;
        }
    }
    for (op = first; op != NULL; op = op->next) {
        op->error = res;
    }
    q->issue_error = res;
}

/* A launch that failed: the same copies, one driver call each. The kernel
 * is not tried again: a launch that failed once would fail every time. */
static void uct_cuda_queue_launch_fallback(uct_cuda_queue_t *q, CUresult why)
{
    CUresult res = CUDA_SUCCESS;
    unsigned i;

    ucs_error("cuda: copy kernel launch failed (%s): issuing its %u copies one "
              "by one, and later copies at once",
              uct_cuda_cu_name(why), q->batched);
    q->kernel->state = -1;
    for (i = 0; (i < q->batched) && (res == CUDA_SUCCESS); ++i) {
        res = cuMemcpyAsync(q->batch.dst[i], q->batch.src[i], q->batch.len[i], q->stream);
    }
    if (res != CUDA_SUCCESS) {
        ucs_error("cuda: cuMemcpyAsync failed too (%s): the waiting operations "
                  "fail",
                  uct_cuda_cu_name(res));
        uct_cuda_queue_fail_deferred(q, res);
    }
}

void uct_cuda_queue_launch(uct_cuda_queue_t *q)
{
    uint64_t longest = 0;
    unsigned i, blocks;
    void *args[1];
    CUresult res;

    if (q->batched == 0) {
        return;
    }
    if (q->batched == 1) {
        /* Alone, a copy gains nothing from a launch (it costs the CPU about
         * one copy issue), and the driver's copy is the faster one at large
         * sizes (gpu_stage_floor: 64 MiB at 1905 against 1724 GB/s). */
        res = cuMemcpyAsync(q->batch.dst[0], q->batch.src[0], q->batch.len[0], q->stream);
        if (res != CUDA_SUCCESS) {
            ucs_error("cuda: cuMemcpyAsync failed (%s): the waiting operation "
                      "fails",
                      uct_cuda_cu_name(res));
            uct_cuda_queue_fail_deferred(q, res);
        }
        q->batched = 0;
        return;
    }
    for (i = 0; i < q->batched; ++i) {
        longest = (q->batch.len[i] > longest) ? q->batch.len[i] : longest;
    }
    blocks = uct_cuda_copy_kernel_blocks(longest, q->kernel->blocks_max);
    args[0] = &q->batch;
    res     = cuLaunchKernel(q->kernel->fn, blocks, q->batched, 1,
                             UCT_CUDA_COPY_KERNEL_THREADS, 1, 1, 0, q->stream, args, NULL);
    if (res == CUDA_SUCCESS) {
        ++q->launches;
        q->kernel_copies += q->batched;
    } else {
        uct_cuda_queue_launch_fallback(q, res);
    }
    q->batched = 0;
}

void uct_cuda_queue_launch_pushed(uct_cuda_queue_t *q)
{
    uct_cuda_queue_launch(q);
    /* Every copy that waited belongs to an op pushed already, which a
     * failure has marked: no op queued later may take the error. */
    q->issue_error = CUDA_SUCCESS;
}

ucs_status_t uct_cuda_queue_copy(uct_cuda_queue_t *q, CUdeviceptr dst, CUdeviceptr src,
                                 size_t len, int kernel_ok)
{
    unsigned i;

    if (kernel_ok && !((dst | src) & 15) && uct_cuda_queue_may_batch(q, len)) {
        if (q->kernel->state == 0) {
            uct_cuda_kernel_load(q->kernel);
        }
        if (q->kernel->state > 0) {
            if (q->batched == UCT_CUDA_COPY_KERNEL_MAX_COPIES) {
                uct_cuda_queue_launch(q);
            }
            i               = q->batched++;
            q->batch.dst[i] = dst;
            q->batch.src[i] = src;
            q->batch.len[i] = len;
            return UCS_OK;
        }
    }
    /* Copies waiting for a batch go first: the stream keeps the order in
     * which the copies were asked for, which a fence relies on. */
    uct_cuda_queue_launch(q);
    return UCT_CUDA_CALL(UCS_LOG_LEVEL_ERROR, cuMemcpyAsync(dst, src, len, q->stream));
}

void uct_cuda_queue_abandon(uct_cuda_queue_t *q)
{
    uct_cuda_queue_launch_pushed(q);
    (void)cuStreamSynchronize(q->stream);
}
