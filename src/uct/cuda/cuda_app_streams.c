#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Ordering after the application's default streams (issue 19).
 *
 * SYNC_MEMOPS (cuda_sync_memops.c) covers the "synchronous" calls only.
 * Work an application queues on a default stream and does not wait for is
 * another matter: CuPy fills an array with cudaMemcpyAsync from pageable
 * memory on the legacy stream (ndarray.set) and zeroes one with a memset
 * there (cupy.zeros), then hands the pointer to MPI at once. CUDA orders
 * the application's next work on that stream after it, but nothing on our
 * non-blocking streams, and nothing in a peer that reads or writes through
 * an IPC mapping. Measured on an H200 with CuPy's MemoryAsyncPool over
 * Open MPI: up to 20 of 20 messages of 8 B - 64 KiB arrived with the old
 * bytes, with SYNC_MEMOPS set.
 *
 * So when a request takes a device buffer, the library waits for what the
 * posting thread already queued on its legacy and per-thread default
 * streams of its current context, the streams a program that "did not use
 * streams" used. A query costs little when the stream is idle (the common
 * case: the application synchronised); only pending work is waited for.
 * That includes unrelated work the program meant to overlap with the
 * transfer: such a program must use a stream of its own. Work on the
 * application's own streams stays the application's to order, as with any
 * CUDA library.
 */

#include "cuda_common.h"

#include <ucs/debug/log.h>

ucs_status_t uct_cuda_wait_app_streams(void)
{
    static const struct {
        CUstream   stream;
        const char *name;
    } streams[] = {
        {CU_STREAM_LEGACY, "legacy"},
        {CU_STREAM_PER_THREAD, "per-thread"}
    };
    CUresult res;
    unsigned i;

    for (i = 0; i < sizeof(streams) / sizeof(streams[0]); ++i) {
        res = cuStreamQuery(streams[i].stream);
        if (res == CUDA_SUCCESS) {
            continue;
        }
        if (res != CUDA_ERROR_NOT_READY) {
            /* No current context: this thread queued nothing. */
            ucs_trace("cuda: %s stream not queried: %s", streams[i].name,
                      uct_cuda_cu_name(res));
            return UCS_OK;
        }
        ucs_trace("cuda: waiting for the application's %s default stream",
                  streams[i].name);
        res = cuStreamSynchronize(streams[i].stream);
        if (res != CUDA_SUCCESS) {
            ucs_error("cuda: waiting for the %s default stream: %s",
                      streams[i].name, uct_cuda_cu_name(res));
            return UCS_ERR_IO_ERROR;
        }
    }
    return UCS_OK;
}
