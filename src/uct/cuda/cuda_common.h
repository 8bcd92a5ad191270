/**
 * @file cuda_common.h
 * What the cuda_copy and cuda_ipc transports share: error reporting that
 * names the failing driver call, the CUDA context an iface works in, a
 * description of a pointer (memory-type cache first, driver on a miss), and
 * the stream + event queue that turns asynchronous copies into completions
 * polled from progress.
 *
 * Thread safety: the pointer description may be called from any thread;
 * a uct_cuda_queue_t belongs to one iface and follows its rules (the caller
 * serialises).
 */
#ifndef UCT_CUDA_COMMON_H_
#define UCT_CUDA_COMMON_H_

#include <uct/base/uct_iface.h>
#include <ucs/memory/memtype_cache.h>
#include <ucs/debug/log.h>

#include "cuda_copy_kernel.h"

#include <cuda.h>

BEGIN_C_DECLS

#define UCT_CUDA_DEV_NAME "cuda"

/** Name of a CUresult, never NULL. */
const char *uct_cuda_cu_name(CUresult res);

/**
 * Call a driver function; on failure log at @a _level, naming the call and
 * the CUresult, and evaluate to UCS_ERR_IO_ERROR (UCS_OK on success).
 */
#define UCT_CUDA_CALL(_level, _call) \
    ({ \
        CUresult _res = (_call); \
        ucs_status_t _st = UCS_OK; \
        if (_res != CUDA_SUCCESS) { \
            ucs_log(_level, "%s failed: %s", #_call, uct_cuda_cu_name(_res)); \
            _st = UCS_ERR_IO_ERROR; \
        } \
        _st; \
    })

/**
 * cuInit and the number of devices; 0 when the driver is unusable (no
 * device, or a process forked after cuInit). Logged at debug level.
 */
int uct_cuda_device_count(void);

/**
 * Make sure the calling thread has a current context: the current one, or
 * else the primary context of device 0 (retained once per process and made
 * current). @a ctx_p receives it.
 */
ucs_status_t uct_cuda_ctx_ensure(CUcontext *ctx_p);

/**
 * Make @a ctx current for an operation called from a thread where it is
 * not (UCT allows any thread as long as calls are serialised). @return
 * whether it was pushed: pass it to uct_cuda_ctx_pop().
 */
static UCS_F_ALWAYS_INLINE int uct_cuda_ctx_push(CUcontext ctx)
{
    CUcontext cur = NULL;

    if ((cuCtxGetCurrent(&cur) == CUDA_SUCCESS) && (cur == ctx)) {
        return 0;
    }
    return cuCtxPushCurrent(ctx) == CUDA_SUCCESS;
}

static UCS_F_ALWAYS_INLINE void uct_cuda_ctx_pop(int pushed)
{
    CUcontext ctx;

    if (pushed) {
        (void)cuCtxPopCurrent(&ctx);
    }
}

/** What we know about the memory at an address. */
typedef struct uct_cuda_mem_desc {
    ucs_memory_type_t        mem_type;   /**< HOST for memory the driver does not know */
    ucs_memtype_alloc_kind_t alloc_kind;
    int                      device;     /**< -1 for host memory */
    void                     *base;      /**< start of the allocation (0 if unknown) */
    size_t                   length;     /**< its size */
} uct_cuda_mem_desc_t;

/**
 * Describe [address, address + length): from the process-wide memory-type
 * cache when it answers, else with one cuPointerGetAttributes query (not
 * cached here: whoever fills the cache sees the free events we do not).
 * Needs no current context. Thread safe.
 */
ucs_status_t uct_cuda_mem_describe(const void *address, size_t length,
                                   uct_cuda_mem_desc_t *desc);

/**
 * Make the application's blocking copies and memsets complete before they
 * return (SYNC_MEMOPS), so that a fill from pageable memory that returned
 * has landed before a copy of ours (on a non-blocking stream, or in another
 * process through an IPC mapping) reads the memory. Sets CU_CTX_SYNC_MEMOPS
 * on the calling thread's current context when it lacks it (checked on
 * every call: the application may reset the flags), else, without
 * cuCtxSetFlags, the pointer attribute of @a address (NULL: none). VMM
 * memory refuses the attribute (NOT_SUPPORTED); logged at debug level only.
 * Thread safe; two cheap driver queries when the flag is set already.
 */
void uct_cuda_set_sync_memops(const void *address);

/**
 * Keep SYNC_MEMOPS on every context in which the application allocates
 * device memory: a MEM_TYPE_ALLOC handler (ucm) that calls
 * uct_cuda_set_sync_memops() in the allocating thread, whose current context
 * is the application's, whenever it was created (after the library, by
 * cuCtxCreate, on another device). Reference counted: each call needs one
 * uct_cuda_sync_memops_unsubscribe(). Thread safe.
 */
void uct_cuda_sync_memops_subscribe(void);

/** Drop the reference taken by uct_cuda_sync_memops_subscribe(). */
void uct_cuda_sync_memops_unsubscribe(void);

/**
 * Wait for the work the calling thread queued on the legacy and per-thread
 * default streams of its current context, if any is pending (one query per
 * stream otherwise): what a request must do before the library, or a peer
 * through an IPC mapping, touches device memory the application has just
 * written or is about to receive into (cuda_app_streams.c).
 *
 * @return UCS_OK, also when the thread has no context; UCS_ERR_IO_ERROR if
 *         the wait failed (the context is broken).
 */
ucs_status_t uct_cuda_wait_app_streams(void);

/** One asynchronous operation (or flush marker) waiting for its event. */
typedef struct uct_cuda_op {
    CUevent            event;
    int                recorded; /**< event recorded after this op's work */
    CUresult           error;    /**< a copy of this op could not be issued */
    uct_completion_t   *comp;  /**< NULL: nobody waits for it */
    void               (*done)(void *arg); /**< NULL, or called when it ends */
    void               *done_arg;
    struct uct_cuda_op *next;
} uct_cuda_op_t;

/** The batched copy kernel (cuda_copy_kernel.cu) in one context. */
typedef struct uct_cuda_kernel {
    int        state;      /**< 0: not loaded yet, 1: loaded, -1: unavailable
                                (not built, refused, or a launch failed) */
    CUmodule   module;
    CUfunction fn;
    unsigned   blocks_max; /**< blocks per copy: enough to fill every SM */
} uct_cuda_kernel_t;

/**
 * A non-blocking stream and the FIFO of its outstanding operations. Work of
 * one stream completes in order, so one event recorded after the newest op
 * answers for every op before it: push records nothing (an event record
 * costs about as much as the rest of a cached put/get), and progress records
 * a single event for all ops pushed since its last call, then polls the
 * oldest recorded event.
 */
typedef struct uct_cuda_queue {
    CUstream          stream;
    CUcontext         ctx;         /**< the stream's context, for late records */
    uct_cuda_op_t     *head;
    uct_cuda_op_t     *tail;
    uct_cuda_op_t     *free_ops;   /**< recycled, events kept */
    unsigned          outstanding;
    unsigned          unrecorded;  /**< ops at the tail without an event yet */
    CUresult          issue_error; /**< deferred copies of an op not pushed
                                        yet could not be issued: its push
                                        takes the error */
    /* Copies deferred to the next progress and launched as one kernel
     * (uct_cuda_queue_copy()); kernel NULL: every copy is issued at once. */
    uct_cuda_kernel_t *kernel;
    size_t            batch_max;   /**< largest copy that is deferred */
    unsigned          batched;     /**< copies waiting in @a batch */
    uint64_t          launches;    /**< kernels launched (tests) */
    uint64_t          kernel_copies; /**< copies they carried (tests) */
    uct_cuda_copy_kernel_args_t batch;
} uct_cuda_queue_t;

/** Create the stream (CU_STREAM_NON_BLOCKING) in the current context. */
ucs_status_t uct_cuda_queue_init(uct_cuda_queue_t *q);

/** Wait for the stream, call the done callbacks of what was outstanding
 *  (no completion), free events and the stream. */
void uct_cuda_queue_cleanup(uct_cuda_queue_t *q);

/**
 * Remember @a comp for the work just queued on the stream; the event that
 * tells its completion is recorded by the next progress (or flush).
 * @return UCS_INPROGRESS, or an error (the work stays queued; the caller
 * synchronises the stream).
 */
ucs_status_t uct_cuda_queue_push(uct_cuda_queue_t *q, uct_completion_t *comp);

/** As uct_cuda_queue_push(), calling @a done(@a arg) when the work ended
 *  (before @a comp), also when it failed. On error @a done is not called. */
ucs_status_t uct_cuda_queue_push_cb(uct_cuda_queue_t *q, uct_completion_t *comp,
                                    void (*done)(void *arg), void *arg);

/** Complete finished operations in order, after launching deferred copies.
 *  @return how many completed. */
unsigned uct_cuda_queue_progress(uct_cuda_queue_t *q);

/**
 * Whether @a q still has work: copies in flight or waiting for the next
 * progress to launch them. A completion of the copy engine reaches no file
 * descriptor, so an iface with such work must keep its caller polling
 * (event_arm answers UCS_ERR_BUSY) rather than let it sleep past the end.
 */
static UCS_F_ALWAYS_INLINE int uct_cuda_queue_is_busy(const uct_cuda_queue_t *q)
{
    return (q->outstanding | q->batched) != 0;
}

/**
 * Let copies of at most @a batch_max bytes on @a q wait for the next
 * progress call, which launches all that gathered as one kernel of @a kernel
 * (loaded in the queue's context at first use). @a batch_max 0 turns it off.
 */
void uct_cuda_queue_enable_batch(uct_cuda_queue_t *q, uct_cuda_kernel_t *kernel,
                                 size_t batch_max);

/**
 * Whether a copy of @a len bytes on @a q would be deferred to a batch if its
 * ends allow it: lets the caller skip the device check of its buffers. Only
 * a queue with work outstanding gathers: a copy on an idle one starts a burst
 * or is a ping-pong's, and waiting would only delay it.
 */
static UCS_F_ALWAYS_INLINE int uct_cuda_queue_may_batch(const uct_cuda_queue_t *q,
                                                        size_t len)
{
    return (q->kernel != NULL) && (q->kernel->state >= 0) &&
           (len - 1 < q->batch_max) && ((q->outstanding | q->batched) != 0);
}

/**
 * Queue a device-to-device copy on @a q. With @a kernel_ok (a kernel in the
 * queue's context can touch both ends), a 16-byte
 * aligned copy that uct_cuda_queue_may_batch() allows waits for the next
 * uct_cuda_queue_progress(); any other is issued now with cuMemcpyAsync.
 * The queue's context must be current. Push the op that waits for it after.
 */
ucs_status_t uct_cuda_queue_copy(uct_cuda_queue_t *q, CUdeviceptr dst,
                                 CUdeviceptr src, size_t len, int kernel_ok);

/** Launch the copies waiting on @a q now (queue's context current). */
void uct_cuda_queue_launch(uct_cuda_queue_t *q);

/** As uct_cuda_queue_launch(), where no op is being queued (fence, flush,
 *  blocking copy): a failure fails only the ops of the copies that waited. */
void uct_cuda_queue_launch_pushed(uct_cuda_queue_t *q);

/**
 * The op whose copies were just queued on @a q will not be pushed (its call
 * failed): issue the copies that wait, wait for the stream, so that nothing
 * still reads what the caller releases next, and drop the error such an op
 * would have taken. Queue's context current.
 */
void uct_cuda_queue_abandon(uct_cuda_queue_t *q);

/**
 * Whether the copy kernel running in context @a ctx on GPU @a device may
 * touch [@a ptr, +@a len) of this process: device memory of that GPU, and
 * for cuMemAlloc memory, of that context (another context's allocation is not
 * mapped in @a ctx; stream-ordered and VMM memory are mapped per device).
 */
int uct_cuda_kernel_may_touch(CUcontext ctx, int device, const void *ptr, size_t len);

/** Unload the kernel's module (its context current). */
void uct_cuda_kernel_cleanup(uct_cuda_kernel_t *kernel);

/**
 * Flush: UCS_OK when nothing is outstanding; else UCS_INPROGRESS and, when
 * @a comp is given, it completes after everything queued so far.
 */
ucs_status_t uct_cuda_queue_flush(uct_cuda_queue_t *q, uct_completion_t *comp);

END_C_DECLS

#endif
