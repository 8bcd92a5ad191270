#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * Streams and events.
 *
 * Without CUDASIM_ASYNC every operation runs inside the call that queues it,
 * so a stream is always idle. With CUDASIM_ASYNC=1 each stream gets a worker
 * thread that runs its operations in order, each after a delay
 * (CUDASIM_ASYNC_DELAY_US): a program that reads a copy's result before
 * synchronising sees stale data, as it could on a GPU.
 *
 * Ordering follows the driver: operations of one stream run in order; the
 * legacy default stream waits for all blocking streams of its context and
 * they wait for it (CU_STREAM_NON_BLOCKING streams do not); the per-thread
 * default stream (the _ptsz/_ptds entry points, CU_STREAM_PER_THREAD) is an
 * ordinary blocking stream of its thread. Events are (stream, sequence
 * number) pairs plus a timestamp taken when the stream reaches them.
 *
 * Late operations (CUDASIM_LATE_LANDING, on by default) are the
 * "synchronous" copies and memsets that the driver documents may return
 * before they land (from pageable host memory, device to device, memset of
 * device memory, without SYNC_MEMOPS; sim_copy.c decides). The model lands
 * them at the latest moment the driver's rules allow, so that a program
 * relying on an ordering the driver does not promise fails every time
 * instead of once in a while: a late operation is held, outside its
 * stream's queue, until something is ordered after it --
 * - any later operation on the same stream (a later blocking copy, a
 *   memset, a kernel, an event record, a host function);
 * - an operation on a stream that implicitly waits for it (the legacy
 *   default stream waits for the blocking streams of its context and they
 *   for it; CU_STREAM_NON_BLOCKING streams wait for nothing);
 * - a wait for the stream: cuStreamSynchronize, cuStreamQuery (which then
 *   sees it landed), cuCtxSynchronize, and the drains of frees and context
 *   teardown;
 * - SYNC_MEMOPS set on the memory it writes (cuPointerSetAttribute, as the
 *   driver documents), and any stream-ordered free (so that it never lands
 *   in memory handed out again).
 * Until then its destination keeps the old bytes for everything else: a
 * copy on a non-blocking stream, a kernel there, and another process that
 * reads the memory through an IPC mapping. Once released it runs like any
 * other operation (at once, or on the worker with CUDASIM_ASYNC=1).
 */
#include "cudasim.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIM_PTDS_MAX 16

/* Per-thread default streams of this thread, one per context. */
static __thread struct {
    CUcontext ctx;
    CUstream  stream;
} sim_ptds[SIM_PTDS_MAX];

sim_op_t *sim_op_new(sim_op_type_t type)
{
    sim_op_t *op = calloc(1, sizeof(*op));

    if (op != NULL) {
        op->type = type;
    }
    return op;
}

void sim_op_free(sim_op_t *op)
{
    free(op->segs);
    free(op->staging);
    free(op);
}

/* The part of an operation that touches memory or user code: runs without
 * the lock in async mode (all frees drain streams before unmapping). */
static void sim_op_run(sim_op_t *op)
{
    size_t i, j;

    switch (op->type) {
    case SIM_OP_COPY:
        for (i = 0; i < op->nsegs; ++i) {
            memmove(op->segs[i].dst, op->segs[i].src, op->segs[i].len);
        }
        break;
    case SIM_OP_MEMSET:
        for (i = 0; i < op->nsegs; ++i) {
            if (op->elem_size == 1) {
                memset(op->segs[i].dst, (int)op->value, op->segs[i].len);
            } else if (op->elem_size == 2) {
                for (j = 0; j + 2 <= op->segs[i].len; j += 2) {
                    uint16_t v = (uint16_t)op->value;
                    memcpy(op->segs[i].dst + j, &v, 2);
                }
            } else {
                for (j = 0; j + 4 <= op->segs[i].len; j += 4) {
                    uint32_t v = op->value;
                    memcpy(op->segs[i].dst + j, &v, 4);
                }
            }
        }
        break;
    case SIM_OP_HOSTFN:
        /* The driver forbids CUDA calls from host functions. */
        sim_in_callback = 1;
        op->fn(op->arg);
        sim_in_callback = 0;
        break;
    default:
        break;
    }
}

/* Bookkeeping once an operation has run (lock held). */
static void sim_op_finish_locked(CUstream stream, sim_op_t *op)
{
    if (op->type == SIM_OP_EVENT) {
        op->event->time_ms  = sim_now_ms();
        op->event->has_time = 1;
    } else if (op->type == SIM_OP_POOL_FREE) {
        sim_range_free_locked(op->range); /* unregistered at the call */
    }
    if (op->seq > stream->completed) {
        stream->completed = op->seq;
    }
    pthread_cond_broadcast(&sim.progress);
    sim_op_free(op);
}

static void *sim_stream_worker(void *arg)
{
    CUstream stream = arg;
    sim_op_t *op;

    pthread_mutex_lock(&sim.lock);
    for (;;) {
        op = stream->head;
        if (op == NULL) {
            if (stream->stop) {
                break;
            }
            pthread_cond_wait(&sim.progress, &sim.lock);
            continue;
        }
        if (op->type == SIM_OP_WAIT) {
            if ((op->wait_stream != NULL) &&
                (op->wait_stream->completed < op->wait_seq)) {
                pthread_cond_wait(&sim.progress, &sim.lock);
                continue;
            }
        } else if (op->type != SIM_OP_EVENT) {
            pthread_mutex_unlock(&sim.lock);
            usleep(sim.cfg.async_delay_us);
            sim_op_run(op);
            pthread_mutex_lock(&sim.lock);
        }
        stream->head = op->next;
        if (stream->head == NULL) {
            stream->tail = NULL;
        }
        sim_op_finish_locked(stream, op);
    }
    pthread_mutex_unlock(&sim.lock);
    return NULL;
}

/* Run @a op now (synchronous model) or append it to the worker's queue. */
static void sim_stream_queue_locked(CUstream stream, sim_op_t *op)
{
    if (!sim.cfg.async) {
        /* Synchronous model: every stream is idle, so waits are satisfied;
         * the lock stays held (host functions cannot re-enter anyway). */
        sim_op_run(op);
        sim_op_finish_locked(stream, op);
        return;
    }
    op->next = NULL;
    if (stream->tail != NULL) {
        stream->tail->next = op;
    } else {
        stream->head = op;
    }
    stream->tail = op;
    if (!stream->has_worker) {
        if (pthread_create(&stream->worker, NULL, sim_stream_worker,
                           stream) == 0) {
            stream->has_worker = 1;
        } else {
            sim_warn("cannot start a stream worker thread");
        }
    }
    pthread_cond_broadcast(&sim.progress);
}

/* Something is now ordered after the held operations of @a stream: they
 * land (in order, before anything queued later). */
static void sim_stream_release_locked(CUstream stream)
{
    sim_op_t *op;

    while ((op = stream->held_head) != NULL) {
        stream->held_head = op->next;
        if (stream->held_head == NULL) {
            stream->held_tail = NULL;
        }
        sim_stream_queue_locked(stream, op);
    }
}

static void sim_stream_enqueue_locked(CUstream stream, sim_op_t *op)
{
    op->seq = ++stream->submitted;
    /* A new operation, late or not, comes after the held ones: the driver
     * synchronises the stream before a blocking copy starts. */
    sim_stream_release_locked(stream);
    if (op->late) {
        op->next = NULL;
        if (stream->held_tail != NULL) {
            stream->held_tail->next = op;
        } else {
            stream->held_head = op;
        }
        stream->held_tail = op;
        return;
    }
    sim_stream_queue_locked(stream, op);
}

static void sim_release_all_locked(void)
{
    CUstream stream;

    for (stream = sim.streams; stream != NULL; stream = stream->next) {
        sim_stream_release_locked(stream);
    }
}

static int sim_stream_busy(CUstream stream)
{
    return stream->completed < stream->submitted;
}

static void sim_stream_wait_for_locked(CUstream waiter, CUstream target)
{
    sim_op_t *op;

    if (target == waiter) {
        return;
    }
    sim_stream_release_locked(target);
    if (!sim_stream_busy(target)) {
        return;
    }
    op = sim_op_new(SIM_OP_WAIT);
    if (op == NULL) {
        return;
    }
    op->wait_stream = target;
    op->wait_seq    = target->submitted;
    sim_stream_enqueue_locked(waiter, op);
}

void sim_stream_submit_locked(CUstream stream, sim_op_t *op)
{
    CUstream other;

    if (op->type == SIM_OP_POOL_FREE) {
        /* Never let a held write land in memory the pool hands out again. */
        sim_release_all_locked();
    }
    if (stream->kind == SIM_STREAM_LEGACY) {
        for (other = sim.streams; other != NULL; other = other->next) {
            if ((other->ctx == stream->ctx) &&
                !(other->flags & CU_STREAM_NON_BLOCKING)) {
                sim_stream_wait_for_locked(stream, other);
            }
        }
    } else if (!(stream->flags & CU_STREAM_NON_BLOCKING) &&
               (stream->ctx->legacy != NULL)) {
        sim_stream_wait_for_locked(stream, stream->ctx->legacy);
    }
    sim_stream_enqueue_locked(stream, op);
}

void sim_stream_wait_locked(CUstream stream)
{
    uint64_t target = stream->submitted;

    sim_stream_release_locked(stream);
    while (stream->completed < target) {
        pthread_cond_wait(&sim.progress, &sim.lock);
    }
}

static int sim_op_writes_range(const sim_op_t *op, const sim_range_t *range)
{
    size_t i;

    for (i = 0; i < op->nsegs; ++i) {
        if ((op->segs[i].dst < range->shadow + range->size) &&
            (op->segs[i].dst + op->segs[i].len > range->shadow)) {
            return 1;
        }
    }
    return 0;
}

void sim_stream_land_range_locked(const sim_range_t *range)
{
    CUstream stream;
    sim_op_t *op;

again:
    for (stream = sim.streams; stream != NULL; stream = stream->next) {
        for (op = stream->held_head; op != NULL; op = op->next) {
            if (sim_op_writes_range(op, range)) {
                /* The wait may drop the lock (CUDASIM_ASYNC=1) and the
                 * stream list change meanwhile: start over; this stream
                 * holds nothing any more. */
                sim_stream_wait_locked(stream);
                goto again;
            }
        }
    }
}

void sim_drain_all_locked(void)
{
    CUstream stream;

    for (stream = sim.streams; stream != NULL; stream = stream->next) {
        sim_stream_wait_locked(stream);
    }
}

static CUstream sim_stream_new_locked(CUcontext ctx, sim_stream_kind_t kind,
                                      unsigned flags, int priority)
{
    CUstream stream = calloc(1, sizeof(*stream));

    if (stream == NULL) {
        return NULL;
    }
    stream->magic    = SIM_MAGIC_STREAM;
    stream->kind     = kind;
    stream->ctx      = ctx;
    stream->flags    = flags;
    stream->priority = priority;
    stream->id       = sim_new_id();
    stream->next     = sim.streams;
    sim.streams      = stream;
    return stream;
}

CUresult sim_stream_resolve(CUstream h, int ptsz, CUstream *stream_p)
{
    CUcontext ctx;
    int i, free_slot = -1;

    if (h == NULL) {
        h = ptsz ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    }
    if ((h != CU_STREAM_LEGACY) && (h != CU_STREAM_PER_THREAD)) {
        if (h->magic != SIM_MAGIC_STREAM) {
            return CUDA_ERROR_INVALID_HANDLE;
        }
        *stream_p = h;
        return CUDA_SUCCESS;
    }
    ctx = sim_ctx_current();
    if (ctx == NULL) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (h == CU_STREAM_LEGACY) {
        if (ctx->legacy == NULL) {
            ctx->legacy = sim_stream_new_locked(ctx, SIM_STREAM_LEGACY, 0, 0);
        }
        *stream_p = ctx->legacy;
        return (*stream_p != NULL) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (i = 0; i < SIM_PTDS_MAX; ++i) {
        if (sim_ptds[i].ctx == ctx) {
            *stream_p = sim_ptds[i].stream;
            return CUDA_SUCCESS;
        }
        if ((sim_ptds[i].ctx == NULL) && (free_slot < 0)) {
            free_slot = i;
        }
    }
    if (free_slot < 0) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *stream_p = sim_stream_new_locked(ctx, SIM_STREAM_PER_THREAD, 0, 0);
    if (*stream_p == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    sim_ptds[free_slot].ctx    = ctx;
    sim_ptds[free_slot].stream = *stream_p;
    return CUDA_SUCCESS;
}

/* ---- streams ---- */

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
                                    int priority)
{
    CUresult status = sim_enter();
    CUcontext ctx;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((phStream == NULL) || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_ctx_require(&ctx)) == CUDA_SUCCESS) {
        /* Priorities are clamped to [-5, 0] as on the H200. */
        priority  = (priority < -5) ? -5 : (priority > 0) ? 0 : priority;
        *phStream = sim_stream_new_locked(ctx, SIM_STREAM_USER, flags,
                                          priority);
        if (*phStream == NULL) {
            status = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    sim_leave();
    return status;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return cuStreamCreateWithPriority(phStream, Flags, 0);
}

/* Forget every reference other objects hold to a drained stream. */
static void sim_stream_forget_locked(CUstream stream)
{
    CUstream other;
    CUevent event;
    sim_op_t *op;

    for (other = sim.streams; other != NULL; other = other->next) {
        for (op = other->head; op != NULL; op = op->next) {
            if (op->wait_stream == stream) {
                op->wait_stream = NULL;
            }
        }
    }
    for (event = sim.events; event != NULL; event = event->next) {
        if (event->stream == stream) {
            event->stream = NULL;
        }
    }
}

static CUresult sim_stream_destroy(CUstream hStream)
{
    CUresult status = sim_enter();
    CUstream *sp;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((hStream == NULL) || (hStream == CU_STREAM_LEGACY) ||
        (hStream == CU_STREAM_PER_THREAD) ||
        (hStream->magic != SIM_MAGIC_STREAM) ||
        (hStream->kind != SIM_STREAM_USER)) {
        status = CUDA_ERROR_INVALID_HANDLE;
        goto out;
    }
    /* The driver lets queued work finish; so does the model, first. */
    sim_stream_wait_locked(hStream);
    if (hStream->has_worker) {
        hStream->stop = 1;
        pthread_cond_broadcast(&sim.progress);
        sim_leave();
        pthread_join(hStream->worker, NULL);
        pthread_mutex_lock(&sim.lock);
    }
    for (sp = &sim.streams; *sp != hStream; sp = &(*sp)->next) {
    }
    *sp = hStream->next;
    sim_stream_forget_locked(hStream);
    hStream->magic = 0;
    free(hStream);
out:
    sim_leave();
    return status;
}

CUresult cuStreamDestroy(CUstream hStream)
{
    return sim_stream_destroy(hStream);
}

CUresult cuStreamDestroy_v2(CUstream hStream)
{
    return sim_stream_destroy(hStream);
}

static CUresult sim_stream_synchronize(CUstream hStream, int ptsz)
{
    CUresult status = sim_enter();
    CUstream stream;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = sim_stream_resolve(hStream, ptsz, &stream);
    if (status == CUDA_SUCCESS) {
        sim_stream_wait_locked(stream);
    }
    sim_leave();
    return status;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
    return sim_stream_synchronize(hStream, 0);
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    return sim_stream_synchronize(hStream, 1);
}

static CUresult sim_stream_query(CUstream hStream, int ptsz)
{
    CUresult status = sim_enter();
    CUstream stream;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = sim_stream_resolve(hStream, ptsz, &stream);
    if (status == CUDA_SUCCESS) {
        /* Asking is a synchronisation point for held work. */
        sim_stream_release_locked(stream);
        if (sim_stream_busy(stream)) {
            status = CUDA_ERROR_NOT_READY;
        }
    }
    sim_leave();
    return status;
}

CUresult cuStreamQuery(CUstream hStream)
{
    return sim_stream_query(hStream, 0);
}

CUresult cuStreamQuery_ptsz(CUstream hStream)
{
    return sim_stream_query(hStream, 1);
}

static int sim_event_valid(CUevent event)
{
    return (event != NULL) && (event->magic == SIM_MAGIC_EVENT);
}

static int sim_event_done(CUevent event)
{
    return (event->stream == NULL) || (event->stream->completed >= event->seq);
}

static CUresult sim_stream_wait_event(CUstream hStream, CUevent hEvent,
                                      unsigned Flags, int ptsz)
{
    CUresult status = sim_enter();
    CUstream stream;
    sim_op_t *op;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    status = sim_stream_resolve(hStream, ptsz, &stream);
    if (status != CUDA_SUCCESS) {
        goto out;
    }
    if (!sim_event_valid(hEvent) || (Flags & ~1u)) {
        status = sim_event_valid(hEvent) ? CUDA_ERROR_INVALID_VALUE :
                                           CUDA_ERROR_INVALID_HANDLE;
        goto out;
    }
    if (hEvent->recorded && !sim_event_done(hEvent) &&
        (hEvent->stream != stream)) {
        op = sim_op_new(SIM_OP_WAIT);
        if (op == NULL) {
            status = CUDA_ERROR_OUT_OF_MEMORY;
            goto out;
        }
        op->wait_stream = hEvent->stream;
        op->wait_seq    = hEvent->seq;
        sim_stream_enqueue_locked(stream, op);
    }
out:
    sim_leave();
    return status;
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    return sim_stream_wait_event(hStream, hEvent, Flags, 0);
}

CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent,
                                unsigned int Flags)
{
    return sim_stream_wait_event(hStream, hEvent, Flags, 1);
}

/* Queries about a stream share this shape. */
typedef enum {
    SIM_STREAM_Q_FLAGS,
    SIM_STREAM_Q_CTX,
    SIM_STREAM_Q_ID,
    SIM_STREAM_Q_PRIORITY,
    SIM_STREAM_Q_DEVICE
} sim_stream_q_t;

static CUresult sim_stream_get(CUstream hStream, int ptsz, sim_stream_q_t q,
                               void *out)
{
    CUresult status = sim_enter();
    CUstream stream;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (out == NULL) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_stream_resolve(hStream, ptsz, &stream)) ==
               CUDA_SUCCESS) {
        switch (q) {
        case SIM_STREAM_Q_FLAGS:
            *(unsigned *)out = stream->flags;
            break;
        case SIM_STREAM_Q_CTX:
            *(CUcontext *)out = stream->ctx;
            break;
        case SIM_STREAM_Q_ID:
            *(unsigned long long *)out = stream->id;
            break;
        case SIM_STREAM_Q_PRIORITY:
            *(int *)out = stream->priority;
            break;
        case SIM_STREAM_Q_DEVICE:
            *(CUdevice *)out = stream->ctx->device;
            break;
        }
    }
    sim_leave();
    return status;
}

CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
    return sim_stream_get(hStream, 0, SIM_STREAM_Q_FLAGS, flags);
}

CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int *flags)
{
    return sim_stream_get(hStream, 1, SIM_STREAM_Q_FLAGS, flags);
}

CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    return sim_stream_get(hStream, 0, SIM_STREAM_Q_CTX, pctx);
}

CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx)
{
    return sim_stream_get(hStream, 1, SIM_STREAM_Q_CTX, pctx);
}

CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
    return sim_stream_get(hStream, 0, SIM_STREAM_Q_ID, streamId);
}

CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long *streamId)
{
    return sim_stream_get(hStream, 1, SIM_STREAM_Q_ID, streamId);
}

CUresult cuStreamGetPriority(CUstream hStream, int *priority)
{
    return sim_stream_get(hStream, 0, SIM_STREAM_Q_PRIORITY, priority);
}

CUresult cuStreamGetPriority_ptsz(CUstream hStream, int *priority)
{
    return sim_stream_get(hStream, 1, SIM_STREAM_Q_PRIORITY, priority);
}

CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device)
{
    return sim_stream_get(hStream, 0, SIM_STREAM_Q_DEVICE, device);
}

CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice *device)
{
    return sim_stream_get(hStream, 1, SIM_STREAM_Q_DEVICE, device);
}

/* ---- host functions ---- */

static CUresult sim_launch_host_fn(CUstream hStream, CUhostFn fn, void *arg,
                                   int ptsz)
{
    CUresult status = sim_enter();
    CUstream stream;
    sim_op_t *op;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (fn == NULL) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_stream_resolve(hStream, ptsz, &stream)) ==
               CUDA_SUCCESS) {
        op = sim_op_new(SIM_OP_HOSTFN);
        if (op == NULL) {
            status = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            op->fn  = fn;
            op->arg = arg;
            sim_stream_submit_locked(stream, op);
        }
    }
    sim_leave();
    return status;
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    return sim_launch_host_fn(hStream, fn, userData, 0);
}

CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
    return sim_launch_host_fn(hStream, fn, userData, 1);
}

/* ---- events ---- */

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    CUresult status = sim_enter();
    CUcontext ctx;
    CUevent event;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if ((phEvent == NULL) ||
        (Flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                             CU_EVENT_INTERPROCESS)) ||
        ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_ctx_require(&ctx)) != CUDA_SUCCESS) {
        /* status set */
    } else if ((event = calloc(1, sizeof(*event))) == NULL) {
        status = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        event->magic = SIM_MAGIC_EVENT;
        event->ctx   = ctx;
        event->flags = Flags;
        event->next  = sim.events;
        sim.events   = event;
        *phEvent     = event;
    }
    sim_leave();
    return status;
}

static CUresult sim_event_destroy(CUevent hEvent)
{
    CUresult status = sim_enter();
    CUevent *ep;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (!sim_event_valid(hEvent)) {
        status = CUDA_ERROR_INVALID_HANDLE;
        goto out;
    }
    /* A queued record still refers to the event: let it pass first. */
    while (!sim_event_done(hEvent)) {
        pthread_cond_wait(&sim.progress, &sim.lock);
    }
    for (ep = &sim.events; *ep != hEvent; ep = &(*ep)->next) {
    }
    *ep = hEvent->next;
    hEvent->magic = 0;
    free(hEvent);
out:
    sim_leave();
    return status;
}

CUresult cuEventDestroy(CUevent hEvent)
{
    return sim_event_destroy(hEvent);
}

CUresult cuEventDestroy_v2(CUevent hEvent)
{
    return sim_event_destroy(hEvent);
}

static CUresult sim_event_record(CUevent hEvent, CUstream hStream,
                                 unsigned flags, int ptsz)
{
    CUresult status = sim_enter();
    CUstream stream;
    sim_op_t *op;

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (!sim_event_valid(hEvent)) {
        status = CUDA_ERROR_INVALID_HANDLE;
    } else if (flags & ~1u) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if ((status = sim_stream_resolve(hStream, ptsz, &stream)) ==
               CUDA_SUCCESS) {
        op = sim_op_new(SIM_OP_EVENT);
        if (op == NULL) {
            status = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            op->event         = hEvent;
            hEvent->recorded  = 1;
            hEvent->has_time  = 0;
            hEvent->stream    = stream;
            sim_stream_submit_locked(stream, op);
            /* The record is the stream's latest operation. */
            hEvent->seq = stream->submitted;
        }
    }
    sim_leave();
    return status;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    return sim_event_record(hEvent, hStream, 0, 0);
}

CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
    return sim_event_record(hEvent, hStream, 0, 1);
}

CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream,
                                unsigned int flags)
{
    return sim_event_record(hEvent, hStream, flags, 0);
}

CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream,
                                     unsigned int flags)
{
    return sim_event_record(hEvent, hStream, flags, 1);
}

CUresult cuEventQuery(CUevent hEvent)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (!sim_event_valid(hEvent)) {
        status = CUDA_ERROR_INVALID_HANDLE;
    } else if (!sim_event_done(hEvent)) {
        status = CUDA_ERROR_NOT_READY;
    }
    sim_leave();
    return status;
}

CUresult cuEventSynchronize(CUevent hEvent)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (!sim_event_valid(hEvent)) {
        status = CUDA_ERROR_INVALID_HANDLE;
    } else {
        while (!sim_event_done(hEvent)) {
            pthread_cond_wait(&sim.progress, &sim.lock);
        }
    }
    sim_leave();
    return status;
}

static CUresult sim_event_elapsed(float *ms, CUevent start, CUevent end)
{
    CUresult status = sim_enter();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (ms == NULL) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if (!sim_event_valid(start) || !sim_event_valid(end) ||
               ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) ||
               !start->recorded || !end->recorded) {
        status = CUDA_ERROR_INVALID_HANDLE;
    } else if (!sim_event_done(start) || !sim_event_done(end) ||
               !start->has_time || !end->has_time) {
        status = CUDA_ERROR_NOT_READY;
    } else {
        *ms = (float)(end->time_ms - start->time_ms);
    }
    sim_leave();
    return status;
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    return sim_event_elapsed(pMilliseconds, hStart, hEnd);
}

CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart,
                               CUevent hEnd)
{
    return sim_event_elapsed(pMilliseconds, hStart, hEnd);
}
