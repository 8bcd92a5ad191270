/*
 * The floor under small GPU-to-GPU ping-pong between two processes, with no
 * communication library at all: what the GPU and driver cost when each turn
 * of a ping-pong makes the active process issue one small copy on its own
 * device memory and wait for it, then hand the turn to the other process
 * through a flag in shared memory.
 *
 * Modes, each reported as the time of one turn (= one half round trip):
 *   one-process  a single process alternates two streams and two buffers:
 *                the driver's cost of copy + wait, no context switch;
 *   two-process  two processes, each with its own context on device A / B:
 *                adds whatever the GPU does when consecutive work comes from
 *                different processes (on one GPU without MPS: a context
 *                switch per turn).
 * Run with devices "0,0" (one GPU) and "0,1" (two GPUs) to compare.
 *
 * What a turn copies (-m), to see which kinds of GPU work pay for the
 * switch between processes:
 *   dtod     device -> device on the process's own memory (a get or put);
 *   dtoh     device -> pinned host (the send half of a host bounce);
 *   htod     pinned host -> device (the receive half);
 *   bounce   htod then dtoh on one stream, one wait: what a process does
 *            in an eager ping-pong through host memory (receive, send);
 *   pageable the same two copies, synchronous, through malloc'ed memory;
 *   memset   cuMemsetD8Async on the process's own memory;
 *   dtod-ce, htod-ce, bounce-ce  the same copies through cuMemcpyBatchAsync
 *            with CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE (a copy engine
 *            rather than the SMs, where the driver takes the hint);
 *   dtod2d, htod2d  the copy as a cuMemcpy2DAsync;
 *   wv64     one cuStreamWriteValue64 (8 bytes written by the stream's
 *            memory-operation path, no copy at all);
 *   memop    cuStreamBatchMemOp with BYTES / 8 64-bit writes;
 *   bounce-wv  dtoh, then one cuStreamWriteValue64: an 8-byte eager
 *            ping-pong whose receive is a memory operation.
 * -p allocates the process's device memory from the device's default
 * stream-ordered pool (cuMemAllocAsync) instead of cuMemAlloc.
 * -y sets CU_CTX_SCHED_YIELD and -b CU_CTX_SCHED_BLOCKING_SYNC on the
 * primary contexts (default: the driver's automatic choice).
 *
 * usage: gpu_pingpong_floor [-n TURNS] [-s BYTES] [-a DEV_A,DEV_B]
 *                           [-m MODE] [-y | -b]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "gpu_bench_util.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    _Atomic int turn;   /* whose turn: 0 or 1; -1 = stop */
    _Atomic int ready;  /* processes set up */
} shared_t;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

typedef enum {
    MODE_DTOD,
    MODE_DTOH,
    MODE_HTOD,
    MODE_BOUNCE,
    MODE_PAGEABLE,
    MODE_MEMSET,
    MODE_DTOD_CE,
    MODE_HTOD_CE,
    MODE_BOUNCE_CE,
    MODE_DTOD_2D,
    MODE_HTOD_2D,
    MODE_WV64,
    MODE_MEMOP,
    MODE_BOUNCE_WV,
    MODE_LAST
} turn_mode_t;

static const char *mode_names[] = {"dtod", "dtoh", "htod", "bounce",
                                   "pageable", "memset", "dtod-ce", "htod-ce",
                                   "bounce-ce", "dtod2d", "htod2d", "wv64", "memop",
                                   "bounce-wv"};

static turn_mode_t mode = MODE_DTOD;
static unsigned ctx_flags;
static int use_pool;

typedef struct {
    CUcontext   ctx;
    CUstream    stream;
    CUdeviceptr src, dst;
    void        *pinned;   /* cuMemAllocHost */
    void        *pageable; /* malloc */
} side_t;

static void side_init(side_t *s, int dev, size_t size)
{
    CUdevice cudev;

    CHECK(cuDeviceGet(&cudev, dev));
    if (ctx_flags != 0) {
        CHECK(cuDevicePrimaryCtxSetFlags(cudev, ctx_flags));
    }
    CHECK(cuDevicePrimaryCtxRetain(&s->ctx, cudev));
    CHECK(cuCtxSetCurrent(s->ctx));
    CHECK(cuStreamCreate(&s->stream, CU_STREAM_NON_BLOCKING));
    if (use_pool) {
        CHECK(cuMemAllocAsync(&s->src, size, s->stream));
        CHECK(cuMemAllocAsync(&s->dst, size, s->stream));
        CHECK(cuStreamSynchronize(s->stream));
    } else {
        CHECK(cuMemAlloc(&s->src, size));
        CHECK(cuMemAlloc(&s->dst, size));
    }
    CHECK(cuMemsetD8(s->src, 1, size));
    CHECK(cuMemAllocHost(&s->pinned, size));
    s->pageable = malloc(size);
    if (s->pageable == NULL) {
        fprintf(stderr, "malloc(%zu) failed\n", size);
        exit(2);
    }
    memset(s->pinned, 2, size);
    memset(s->pageable, 3, size);
}

/* One turn: the small copies a library would issue, then wait for them. */
static void side_turn(side_t *s, size_t size)
{
    switch (mode) {
    case MODE_DTOD:
        CHECK(cuMemcpyDtoDAsync(s->dst, s->src, size, s->stream));
        break;
    case MODE_DTOH:
        CHECK(cuMemcpyDtoHAsync(s->pinned, s->src, size, s->stream));
        break;
    case MODE_HTOD:
        CHECK(cuMemcpyHtoDAsync(s->dst, s->pinned, size, s->stream));
        break;
    case MODE_BOUNCE:
        CHECK(cuMemcpyHtoDAsync(s->dst, s->pinned, size, s->stream));
        CHECK(cuMemcpyDtoHAsync(s->pinned, s->src, size, s->stream));
        break;
    case MODE_PAGEABLE:
        CHECK(cuMemcpyHtoD(s->dst, s->pageable, size));
        CHECK(cuMemcpyDtoH(s->pageable, s->src, size));
        return;
    case MODE_DTOD_CE:
        CHECK(bench_copy_ce(s->dst, s->src, size, s->stream));
        break;
    case MODE_HTOD_CE:
        CHECK(bench_copy_ce(s->dst, (CUdeviceptr)s->pinned, size, s->stream));
        break;
    case MODE_BOUNCE_CE:
        CHECK(bench_copy_ce(s->dst, (CUdeviceptr)s->pinned, size, s->stream));
        CHECK(cuMemcpyDtoHAsync(s->pinned, s->src, size, s->stream));
        break;
    case MODE_WV64:
        CHECK(cuStreamWriteValue64(s->stream, s->dst, 0x1122334455667788ull, 0));
        break;
    case MODE_DTOD_2D:
        CHECK(bench_copy_2d(s->dst, CU_MEMORYTYPE_DEVICE, s->src, CU_MEMORYTYPE_DEVICE,
                            size, s->stream));
        break;
    case MODE_HTOD_2D:
        CHECK(bench_copy_2d(s->dst, CU_MEMORYTYPE_DEVICE, (CUdeviceptr)s->pinned,
                            CU_MEMORYTYPE_HOST, size, s->stream));
        break;
    case MODE_MEMOP: {
        CUstreamBatchMemOpParams ops[256];
        unsigned k, n = (unsigned)(size / 8);

        n = (n > 256) ? 256 : (n == 0) ? 1 : n;
        memset(ops, 0, sizeof(ops));
        for (k = 0; k < n; ++k) {
            ops[k].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
            ops[k].writeValue.address   = s->dst + 8 * k;
            ops[k].writeValue.value64   = k;
        }
        CHECK(cuStreamBatchMemOp(s->stream, n, ops, 0));
        break;
    }
    case MODE_BOUNCE_WV:
        CHECK(cuStreamWriteValue64(s->stream, s->dst, 0x1122334455667788ull, 0));
        CHECK(cuMemcpyDtoHAsync(s->pinned, s->src, size, s->stream));
        break;
    default:
        CHECK(cuMemsetD8Async(s->dst, 5, size, s->stream));
        break;
    }
    CHECK(cuStreamSynchronize(s->stream));
}

static double one_process(int dev_a, int dev_b, size_t size, unsigned turns)
{
    side_t s[2];
    double *t = calloc(turns, sizeof(double)), t0, med;
    unsigned i;

    CHECK(cuInit(0));
    side_init(&s[0], dev_a, size);
    side_init(&s[1], dev_b, size);
    for (i = 0; i < turns + 100; ++i) {
        side_t *cur = &s[i & 1];

        CHECK(cuCtxSetCurrent(cur->ctx));
        t0 = now_sec();
        side_turn(cur, size);
        if (i >= 100) {
            t[i - 100] = now_sec() - t0;
        }
    }
    qsort(t, turns, sizeof(double), cmp_double);
    med = t[turns / 2];
    free(t);
    return med;
}

/* Child and parent take turns; the parent times full round trips. */
static double two_process(int dev_a, int dev_b, size_t size, unsigned turns)
{
    shared_t *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    unsigned rounds = turns / 2, i;
    double *t, t0, med;
    side_t s;
    pid_t pid;
    int status;

    if (sh == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    atomic_store(&sh->turn, 0);
    atomic_store(&sh->ready, 0);
    pid = fork();
    if (pid == 0) {
        CHECK(cuInit(0));
        side_init(&s, dev_b, size);
        atomic_fetch_add(&sh->ready, 1);
        for (;;) {
            int v;

            while ((v = atomic_load_explicit(&sh->turn, memory_order_acquire)) == 0) {
            }
            if (v < 0) {
                _exit(0);
            }
            side_turn(&s, size);
            atomic_store_explicit(&sh->turn, 0, memory_order_release);
        }
    }

    CHECK(cuInit(0));
    side_init(&s, dev_a, size);
    while (atomic_load(&sh->ready) == 0) {
    }
    t = calloc(rounds, sizeof(double));
    for (i = 0; i < rounds + 50; ++i) {
        t0 = now_sec();
        side_turn(&s, size);
        atomic_store_explicit(&sh->turn, 1, memory_order_release);
        while (atomic_load_explicit(&sh->turn, memory_order_acquire) != 0) {
        }
        if (i >= 50) {
            t[i - 50] = (now_sec() - t0) / 2; /* two turns per round */
        }
    }
    atomic_store(&sh->turn, -1);
    waitpid(pid, &status, 0);
    qsort(t, rounds, sizeof(double), cmp_double);
    med = t[rounds / 2];
    free(t);
    munmap(sh, sizeof(*sh));
    return med;
}

int main(int argc, char **argv)
{
    unsigned turns = 2000;
    size_t size    = 8;
    int dev_a = 0, dev_b = 0, opt;
    double one, two;
    pid_t pid;
    int status, p[2];

    while ((opt = getopt(argc, argv, "n:s:a:m:ybp")) != -1) {
        switch (opt) {
        case 'n':
            turns = (unsigned)strtoul(optarg, NULL, 0);
            break;
        case 's':
            size = strtoul(optarg, NULL, 0);
            break;
        case 'a':
            if (sscanf(optarg, "%d,%d", &dev_a, &dev_b) != 2) {
                fprintf(stderr, "-a needs DEV_A,DEV_B\n");
                return 1;
            }
            break;
        case 'm':
            for (mode = 0; mode < MODE_LAST; ++mode) {
                if (!strcmp(optarg, mode_names[mode])) {
                    break;
                }
            }
            if (mode == MODE_LAST) {
                fprintf(stderr, "unknown mode %s\n", optarg);
                return 1;
            }
            break;
        case 'y':
            ctx_flags = CU_CTX_SCHED_YIELD;
            break;
        case 'b':
            ctx_flags = CU_CTX_SCHED_BLOCKING_SYNC;
            break;
        case 'p':
            use_pool = 1;
            break;
        default:
            fprintf(stderr,
                    "usage: %s [-n TURNS] [-s BYTES] [-a DEV_A,DEV_B] "
                    "[-m dtod|dtoh|htod|bounce|pageable|memset|dtod-ce|htod-ce|bounce-ce|dtod2d|htod2d|wv64|memop|bounce-wv] "
                    "[-y|-b] [-p]\n",
                    argv[0]);
            return 1;
        }
    }
    if (turns < 2) {
        turns = 2;
    }
    if ((mode == MODE_WV64 || mode == MODE_BOUNCE_WV) && (size < 8)) {
        size = 8; /* room for the write */
    }

    /* The single-process measurement runs in a child, so that the parent
     * has not initialised CUDA when it forks for the two-process one. */
    if (pipe(p) != 0) {
        perror("pipe");
        return 2;
    }
    pid = fork();
    if (pid == 0) {
        one = one_process(dev_a, dev_b, size, turns);
        if (write(p[1], &one, sizeof(one)) != sizeof(one)) {
            _exit(2);
        }
        _exit(0);
    }
    if ((read(p[0], &one, sizeof(one)) != sizeof(one)) ||
        (waitpid(pid, &status, 0) != pid) || !WIFEXITED(status) ||
        (WEXITSTATUS(status) != 0)) {
        fprintf(stderr, "one-process measurement failed\n");
        return 2;
    }
    two = two_process(dev_a, dev_b, size, turns);
    printf("gpu_pingpong_floor: devices %d,%d, mode %s%s%s, %zu B, median of %u turns\n",
           dev_a, dev_b, mode_names[mode], use_pool ? " (pool memory)" : "",
           (ctx_flags == CU_CTX_SCHED_YIELD) ? " (sched yield)" :
           (ctx_flags == CU_CTX_SCHED_BLOCKING_SYNC) ? " (blocking sync)" : "",
           size, turns);
    printf("  one-process turn (copy + wait, no switch): %8.2f us\n", one * 1e6);
    printf("  two-process turn (half round trip):        %8.2f us\n", two * 1e6);
    return 0;
}
