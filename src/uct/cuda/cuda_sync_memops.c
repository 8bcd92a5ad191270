#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * SYNC_MEMOPS on the application's contexts (issue 19 in the tracker).
 *
 * A blocking cuMemcpyHtoD/cudaMemcpy from pageable memory may return once
 * the data is staged, before its DMA into device memory has landed; it
 * lands in order on the caller's legacy (or per-thread) stream. Our copies
 * run on non-blocking streams, and a peer reads through its IPC mapping:
 * neither waits for that stream, so a send posted right after such a fill
 * could carry the old bytes (measured on an H200: 64 KiB fills landed late
 * in 198-200 of 200 tries). CU_CTX_SYNC_MEMOPS makes those calls wait until
 * the copy landed. It must be on the context the application fills in,
 * before the fill: setting it on "the current context" when the library
 * initialises misses every context made later (mpi4py initialises MPI
 * before the program's first CUDA call; cuCtxCreate; another device).
 * The moment a context is known to hold device memory is its first
 * allocation, so the flag is checked at every allocation event, in the
 * allocating thread. The pointer attribute is only a fallback for drivers
 * without cuCtxSetFlags: it works on cuMemAlloc memory alone (pool memory
 * accepts it without effect, VMM memory refuses it).
 */

#include "cuda_common.h"

#include <ucm/api/ucm.h>
#include <ucs/debug/log.h>

#include <pthread.h>

static pthread_mutex_t uct_cuda_sync_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned uct_cuda_sync_refs;
static int uct_cuda_sync_subscribed;

void uct_cuda_set_sync_memops(const void *address)
{
    unsigned flags = 0;
    unsigned one   = 1;
    CUcontext ctx  = NULL;
    CUresult res;

#if CUDA_VERSION >= 12010 /* cuCtxSetFlags */
    if ((cuCtxGetCurrent(&ctx) == CUDA_SUCCESS) && (ctx != NULL) &&
        (cuCtxGetFlags(&flags) == CUDA_SUCCESS)) {
        if (flags & CU_CTX_SYNC_MEMOPS) {
            return;
        }
        res = cuCtxSetFlags(flags | CU_CTX_SYNC_MEMOPS);
        if (res == CUDA_SUCCESS) {
            ucs_debug("cuda: CU_CTX_SYNC_MEMOPS set on context %p", (void*)ctx);
            return;
        }
        ucs_debug("cuda: cuCtxSetFlags(SYNC_MEMOPS) on %p: %s", (void*)ctx,
                  uct_cuda_cu_name(res));
    }
#else
    (void)flags;
    (void)ctx;
#endif

    if (address == NULL) {
        return;
    }

    res = cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                (CUdeviceptr)(uintptr_t)address);
    if (res != CUDA_SUCCESS) {
        ucs_debug("cuda: SYNC_MEMOPS on %p: %s", address, uct_cuda_cu_name(res));
    }
}

/* Runs in the allocating thread, inside the CUDA hook (its own driver calls
 * are not reported again). */
static void uct_cuda_sync_memops_alloc_event(ucm_event_type_t event_type,
                                             ucm_event_t *event, void *arg)
{
    ucs_memory_type_t mem_type = event->mem_type.mem_type;

    if ((event->mem_type.flags & UCM_MEM_TYPE_FLAG_IMPORTED) ||
        ((mem_type != UCS_MEMORY_TYPE_CUDA) &&
         (mem_type != UCS_MEMORY_TYPE_CUDA_MANAGED))) {
        return; /* a peer's memory, or host memory: nothing we fill */
    }

    ucs_trace("cuda: allocation %p..+%zu: checking SYNC_MEMOPS",
              event->mem_type.address, event->mem_type.size);
    uct_cuda_set_sync_memops(event->mem_type.address);
}

void uct_cuda_sync_memops_subscribe(void)
{
    ucs_status_t status;

    pthread_mutex_lock(&uct_cuda_sync_lock);
    if ((uct_cuda_sync_refs++ == 0) && !uct_cuda_sync_subscribed) {
        /* Before the memory-type cache's update (-1000): the flag is set
         * by the time anyone can learn of the allocation. */
        status = ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, -2000,
                                       uct_cuda_sync_memops_alloc_event, NULL);
        uct_cuda_sync_subscribed = (status == UCS_OK);
        ucs_debug("cuda: SYNC_MEMOPS on allocating contexts: %s",
                  ucs_status_string(status));
    }
    pthread_mutex_unlock(&uct_cuda_sync_lock);
}

void uct_cuda_sync_memops_unsubscribe(void)
{
    pthread_mutex_lock(&uct_cuda_sync_lock);
    if ((uct_cuda_sync_refs > 0) && (--uct_cuda_sync_refs == 0) &&
        uct_cuda_sync_subscribed) {
        ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_ALLOC,
                                uct_cuda_sync_memops_alloc_event, NULL);
        uct_cuda_sync_subscribed = 0;
    }
    pthread_mutex_unlock(&uct_cuda_sync_lock);
}
