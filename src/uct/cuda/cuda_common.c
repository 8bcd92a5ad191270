#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda_common.h"

#include <pthread.h>
#include <stdlib.h>

const char *uct_cuda_cu_name(CUresult res)
{
    const char *name = NULL;

    if ((cuGetErrorName(res, &name) != CUDA_SUCCESS) || (name == NULL)) {
        return "CUDA_ERROR_(unknown)";
    }
    return name;
}

int uct_cuda_device_count(void)
{
    CUresult res;
    int count = 0;

    res = cuInit(0);
    if (res != CUDA_SUCCESS) {
        ucs_debug("cuda: cuInit failed: %s; no CUDA devices",
                  uct_cuda_cu_name(res));
        return 0;
    }
    if (cuDeviceGetCount(&count) != CUDA_SUCCESS) {
        return 0;
    }
    return count;
}

static pthread_mutex_t uct_cuda_primary_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext uct_cuda_primary_ctx;

ucs_status_t uct_cuda_ctx_ensure(CUcontext *ctx_p)
{
    CUcontext ctx = NULL;
    ucs_status_t status = UCS_OK;
    CUdevice dev;

    if ((cuCtxGetCurrent(&ctx) == CUDA_SUCCESS) && (ctx != NULL)) {
        *ctx_p = ctx;
        return UCS_OK;
    }

    /* No current context: work in device 0's primary context, as cudart
     * would. Retained once; the process keeps it until exit. */
    pthread_mutex_lock(&uct_cuda_primary_lock);
    if (uct_cuda_primary_ctx == NULL) {
        if (uct_cuda_device_count() == 0) {
            status = UCS_ERR_NO_DEVICE;
        } else {
            status = UCT_CUDA_CALL(UCS_LOG_LEVEL_ERROR, cuDeviceGet(&dev, 0));
            if (status == UCS_OK) {
                status = UCT_CUDA_CALL(UCS_LOG_LEVEL_ERROR,
                                       cuDevicePrimaryCtxRetain(&uct_cuda_primary_ctx,
                                                                dev));
            }
        }
    }
    ctx = uct_cuda_primary_ctx;
    pthread_mutex_unlock(&uct_cuda_primary_lock);

    if (status != UCS_OK) {
        return status;
    }
    status = UCT_CUDA_CALL(UCS_LOG_LEVEL_ERROR, cuCtxSetCurrent(ctx));
    if (status == UCS_OK) {
        ucs_debug("cuda: no current context, using device 0's primary context");
        *ctx_p = ctx;
    }
    return status;
}

/* The driver's answer for one address: one cuPointerGetAttributes call. */
static ucs_status_t uct_cuda_mem_query_driver(const void *address,
                                              uct_cuda_mem_desc_t *desc)
{
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE
    };
    unsigned mem_type    = 0;
    unsigned is_managed  = 0;
    int ordinal          = -1;
    CUdeviceptr start    = 0;
    size_t size          = 0;
    void *data[]         = {&mem_type, &is_managed, &ordinal, &start, &size};
    CUresult res;

    res = cuPointerGetAttributes(5, attrs, data, (CUdeviceptr)(uintptr_t)address);
    if ((res != CUDA_SUCCESS) || (mem_type == 0)) {
        /* Unknown to the driver (or no driver): ordinary host memory. */
        desc->mem_type   = UCS_MEMORY_TYPE_HOST;
        desc->alloc_kind = UCS_MEMTYPE_ALLOC_HOST;
        return UCS_OK;
    }

    desc->base   = (void*)(uintptr_t)start;
    desc->length = size;
    if (is_managed) {
        desc->mem_type   = UCS_MEMORY_TYPE_CUDA_MANAGED;
        desc->alloc_kind = UCS_MEMTYPE_ALLOC_MANAGED;
        desc->device     = ordinal;
    } else if (mem_type == CU_MEMORYTYPE_DEVICE) {
        desc->mem_type   = UCS_MEMORY_TYPE_CUDA;
        desc->alloc_kind = UCS_MEMTYPE_ALLOC_UNKNOWN;
        desc->device     = ordinal;
    } else {
        desc->mem_type   = UCS_MEMORY_TYPE_HOST;
        desc->alloc_kind = UCS_MEMTYPE_ALLOC_HOST_PINNED;
    }
    return UCS_OK;
}

ucs_status_t uct_cuda_mem_describe(const void *address, size_t length,
                                   uct_cuda_mem_desc_t *desc)
{
    ucs_memtype_cache_t *cache;
    ucs_memtype_info_t info;
    ucs_status_t status;

    desc->mem_type   = UCS_MEMORY_TYPE_UNKNOWN;
    desc->alloc_kind = UCS_MEMTYPE_ALLOC_UNKNOWN;
    desc->device     = -1;
    desc->base       = NULL;
    desc->length     = 0;

    if (ucs_memtype_cache_get_global(&cache) == UCS_OK) {
        status = ucs_memtype_cache_lookup(cache, address, length, &info);
        if ((status == UCS_OK) && (info.mem_type != UCS_MEMORY_TYPE_UNKNOWN)) {
            desc->mem_type   = info.mem_type;
            desc->alloc_kind = info.alloc_kind;
            desc->device     = info.device;
            desc->base       = info.alloc_base;
            desc->length     = info.alloc_length;
            return UCS_OK;
        }
    }

    return uct_cuda_mem_query_driver(address, desc);
}

ucs_status_t uct_cuda_queue_init(uct_cuda_queue_t *q)
{
    q->head        = NULL;
    q->tail        = NULL;
    q->free_ops    = NULL;
    q->outstanding = 0;
    q->unrecorded  = 0;
    q->issue_error = CUDA_SUCCESS;
    q->kernel      = NULL;
    q->batch_max   = 0;
    q->batched     = 0;
    q->launches    = 0;
    q->kernel_copies = 0;
    if (cuCtxGetCurrent(&q->ctx) != CUDA_SUCCESS) {
        q->ctx = NULL;
    }
    return UCT_CUDA_CALL(UCS_LOG_LEVEL_ERROR,
                         cuStreamCreate(&q->stream, CU_STREAM_NON_BLOCKING));
}

static void uct_cuda_op_list_free(uct_cuda_op_t *op)
{
    uct_cuda_op_t *next;

    for (; op != NULL; op = next) {
        next = op->next;
        (void)cuEventDestroy(op->event);
        free(op);
    }
}

void uct_cuda_queue_cleanup(uct_cuda_queue_t *q)
{
    uct_cuda_op_t *op;

    uct_cuda_queue_launch(q);
    (void)UCT_CUDA_CALL(UCS_LOG_LEVEL_WARN, cuStreamSynchronize(q->stream));
    for (op = q->head; op != NULL; op = op->next) {
        if (op->done != NULL) {
            op->done(op->done_arg);
        }
    }
    uct_cuda_op_list_free(q->head);
    uct_cuda_op_list_free(q->free_ops);
    (void)UCT_CUDA_CALL(UCS_LOG_LEVEL_WARN, cuStreamDestroy(q->stream));
    q->head = q->tail = q->free_ops = NULL;
}

static uct_cuda_op_t *uct_cuda_op_get(uct_cuda_queue_t *q)
{
    uct_cuda_op_t *op = q->free_ops;

    if (op != NULL) {
        q->free_ops = op->next;
        return op;
    }

    op = malloc(sizeof(*op));
    if (op == NULL) {
        return NULL;
    }
    if (UCT_CUDA_CALL(UCS_LOG_LEVEL_ERROR,
                      cuEventCreate(&op->event, CU_EVENT_DISABLE_TIMING)) != UCS_OK) {
        free(op);
        return NULL;
    }
    return op;
}

ucs_status_t uct_cuda_queue_push(uct_cuda_queue_t *q, uct_completion_t *comp)
{
    return uct_cuda_queue_push_cb(q, comp, NULL, NULL);
}

ucs_status_t uct_cuda_queue_push_cb(uct_cuda_queue_t *q, uct_completion_t *comp,
                                    void (*done)(void *arg), void *arg)
{
    uct_cuda_op_t *op = uct_cuda_op_get(q);

    if (op == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    op->recorded = 0;
    op->error    = q->issue_error;
    q->issue_error = CUDA_SUCCESS;
    op->comp     = comp;
    op->done     = done;
    op->done_arg = arg;
    op->next     = NULL;
    if (q->tail == NULL) {
        q->head = op;
    } else {
        q->tail->next = op;
    }
    q->tail = op;
    ++q->outstanding;
    ++q->unrecorded;
    return UCS_INPROGRESS;
}

static void uct_cuda_queue_complete(uct_cuda_queue_t *q, uct_cuda_op_t *op,
                                    CUresult res)
{
    q->head = op->next;
    if (q->head == NULL) {
        q->tail = NULL;
    }
    --q->outstanding;
    if (op->done != NULL) {
        op->done(op->done_arg);
    }
    if (op->comp != NULL) {
        uct_invoke_completion(op->comp, (res == CUDA_SUCCESS) ?
                                        UCS_OK : UCS_ERR_IO_ERROR);
    }
    op->next    = q->free_ops;
    q->free_ops = op;
}

/* One event after the newest op answers for all ops pushed before it. If it
 * cannot be recorded, wait for the stream instead: the ops still complete. */
static void uct_cuda_queue_record(uct_cuda_queue_t *q)
{
    int pushed = uct_cuda_ctx_push(q->ctx);
    CUresult res;

    if (q->batched != 0) {
        /* From progress every deferred copy's op is pushed already. */
        uct_cuda_queue_launch_pushed(q);
    }
    res = cuEventRecord(q->tail->event, q->stream);
    if (res != CUDA_SUCCESS) {
        ucs_error("cuda: cuEventRecord failed (%s): waiting for the stream",
                  uct_cuda_cu_name(res));
        (void)cuStreamSynchronize(q->stream);
        /* The tail's event was recorded earlier (or never): either way it is
         * complete now that the stream is idle. */
    }
    uct_cuda_ctx_pop(pushed);
    q->tail->recorded = 1;
    q->unrecorded     = 0;
}

unsigned uct_cuda_queue_progress(uct_cuda_queue_t *q)
{
    unsigned count = 0;
    uct_cuda_op_t *op, *mark;
    CUresult res;

    if (q->unrecorded != 0) {
        uct_cuda_queue_record(q);
    }
    while (q->head != NULL) {
        for (mark = q->head; !mark->recorded; mark = mark->next) {
        }
        res = cuEventQuery(mark->event);
        if (res == CUDA_ERROR_NOT_READY) {
            break;
        }
        if (res != CUDA_SUCCESS) {
            ucs_error("cuda: asynchronous copy failed: %s", uct_cuda_cu_name(res));
        }
        do {
            op = q->head;
            uct_cuda_queue_complete(q, op, (op->error != CUDA_SUCCESS) ? op->error : res);
            ++count;
        } while (op != mark);
    }
    return count;
}

ucs_status_t uct_cuda_queue_flush(uct_cuda_queue_t *q, uct_completion_t *comp)
{
    ucs_status_t status;

    if (q->outstanding == 0) {
        return UCS_OK;
    }
    if (comp == NULL) {
        return UCS_INPROGRESS;
    }

    status = uct_cuda_queue_push(q, comp);
    if (status != UCS_INPROGRESS) {
        /* No marker: wait here instead, so the caller still gets an answer;
         * deferred copies first, or the wait would not cover them. */
        if (q->batched != 0) {
            int pushed = uct_cuda_ctx_push(q->ctx);

            uct_cuda_queue_launch_pushed(q);
            uct_cuda_ctx_pop(pushed);
        }
        (void)UCT_CUDA_CALL(UCS_LOG_LEVEL_ERROR, cuStreamSynchronize(q->stream));
        uct_cuda_queue_progress(q);
        return UCS_OK;
    }
    return UCS_INPROGRESS;
}
