/*
 * What a staged (two-copy) transfer between two processes can reach with no
 * communication library at all, and what a single process's copy issue
 * costs. Two measurements:
 *
 *   issue   one process: W copies of S bytes queued back to back with
 *           cuMemcpyDtoDAsync, or as one cuMemcpyBatchAsync, then one
 *           event: CPU time per copy and bandwidth. Tells whether batching
 *           the driver calls makes many mid-size copies cheaper to issue.
 *   stage   two processes on devices A and B, each copying its own memory:
 *           A copies chunk k into one of N slots (stands for "user buffer ->
 *           fragment"), then B copies chunk k out (stands for "fragment ->
 *           user buffer"); a slot is reused when B is done with it. Chunk
 *           completion is seen by polling events, as the library does, and
 *           handed over through shared memory. Reported against one
 *           process's plain copy of the same bytes. On one GPU without MPS
 *           the GPU switches between the two processes' contexts; this
 *           shows how much each slot count / chunk size pays for that.
 *
 * -k PTX adds two more ways to "issue": the library's batched copy kernel
 * (src/uct/cuda/cuda_copy_kernel.cu built to PTX, e.g. by
 * `nvcc -ptx -arch=compute_90 -I src/uct/cuda`) launched once per copy
 * ("kernel") and once for all W copies ("kernel-W"), -B blocks per SM per
 * copy (default 4, as the library). With -a A,B "issue" copies from device
 * A's memory into device B's (peer access).
 *
 * -c makes every copy (stage, and the raw reference) a one-copy
 * cuMemcpyBatchAsync with CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE: a
 * copy engine instead of the SMs, which on one GPU the two processes may
 * share without switching contexts. "issue" always shows both. -d makes
 * them cuMemcpy2DAsync copies (rows of 64 KiB).
 *
 * usage: gpu_stage_floor issue [-a DEV] [-s MiB,...] [-W N]
 *        gpu_stage_floor stage [-a A,B] [-s CHUNK_MiB,...] [-N SLOTS,...]
 *                              [-t TOTAL_MiB] [-c | -d]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "gpu_bench_util.h"
#include "../../src/uct/cuda/cuda_copy_kernel.h"

#include <sched.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_LIST 16
#define MAX_SLOTS 256
#define MIB (1024.0 * 1024.0)

static int use_ce, use_2d, blocks_per_sm = 4;
static const char *kernel_ptx;

/* The copy kernel from a PTX file, or NULL without -k. */
static CUfunction kernel_load(int dev, unsigned *blocks_max)
{
    CUmodule mod;
    CUfunction fn;
    CUdevice d;
    FILE *f;
    char *img;
    long len;
    int sms;

    if (kernel_ptx == NULL) {
        return NULL;
    }
    f = fopen(kernel_ptx, "rb");
    if ((f == NULL) || (fseek(f, 0, SEEK_END) != 0) || ((len = ftell(f)) < 0)) {
        fprintf(stderr, "cannot read %s\n", kernel_ptx);
        exit(1);
    }
    rewind(f);
    img = calloc(1, len + 1);
    if ((img == NULL) || (fread(img, 1, len, f) != (size_t)len)) {
        fprintf(stderr, "cannot read %s\n", kernel_ptx);
        exit(1);
    }
    fclose(f);
    CHECK(cuModuleLoadData(&mod, img));
    CHECK(cuModuleGetFunction(&fn, mod, UCT_CUDA_COPY_KERNEL_NAME));
    CHECK(cuDeviceGet(&d, dev));
    CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d));
    *blocks_max = (unsigned)(sms * blocks_per_sm);
    free(img);
    return fn;
}

/* @a n copies of @a len bytes, dst[i] <- src[i], in one launch, as the
 * library's uct_cuda_queue_launch() makes it. */
static void kernel_copy(CUfunction fn, unsigned blocks_max, const CUdeviceptr *dst,
                        const CUdeviceptr *src, int n, size_t len, CUstream stream)
{
    static uct_cuda_copy_kernel_args_t a;
    unsigned blocks = uct_cuda_copy_kernel_blocks(len, blocks_max);
    void *args[]    = {&a};
    int i;

    for (i = 0; i < n; ++i) {
        a.dst[i] = dst[i];
        a.src[i] = src[i];
        a.len[i] = len;
    }
    CHECK(cuLaunchKernel(fn, blocks, n, 1, UCT_CUDA_COPY_KERNEL_THREADS, 1, 1, 0,
                         stream, args, NULL));
}

static void stage_copy(CUdeviceptr dst, CUdeviceptr src, size_t len, CUstream stream)
{
    if (use_2d) {
        CHECK(bench_copy_2d(dst, CU_MEMORYTYPE_DEVICE, src, CU_MEMORYTYPE_DEVICE, len,
                            stream));
    } else if (use_ce) {
        CHECK(bench_copy_ce(dst, src, len, stream));
    } else {
        CHECK(cuMemcpyDtoDAsync(dst, src, len, stream));
    }
}

static int parse_list(const char *arg, long *out)
{
    int n = 0;
    char *end;

    while ((*arg != '\0') && (n < MAX_LIST)) {
        out[n++] = strtol(arg, &end, 10);
        if (*end == ',') {
            ++end;
        } else if (*end != '\0') {
            fprintf(stderr, "bad list: %s\n", arg);
            exit(1);
        }
        arg = end;
    }
    return n;
}

static CUcontext ctx_on(int dev)
{
    CUdevice d;
    CUcontext ctx;

    CHECK(cuDeviceGet(&d, dev));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, d));
    CHECK(cuCtxSetCurrent(ctx));
    return ctx;
}

/* ---- issue ---------------------------------------------------------------- */

static void issue_run(int dev, int dst_dev, const long *sizes, int nsizes, int window)
{
    CUfunction fn;
    unsigned blocks_max = 0;
    CUdeviceptr src, dst, srcs[MAX_SLOTS], dsts[MAX_SLOTS];
    size_t lens[MAX_SLOTS], attr_idx = 0;
    CUmemcpyAttributes attr;
    CUstream stream;
    CUevent ev;
    int i, s, rep, batch;
    const int reps = 50;

    if (dst_dev != dev) {
        CUcontext dctx = ctx_on(dst_dev), sctx = ctx_on(dev);
        CUresult r;

        ctx_on(dev);
        r = cuCtxEnablePeerAccess(dctx, 0);
        if (r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
            CHECK(r);
        }
        ctx_on(dst_dev);
        r = cuCtxEnablePeerAccess(sctx, 0);
        if (r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
            CHECK(r);
        }
    }
    ctx_on(dev);
    fn = kernel_load(dev, &blocks_max);
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    memset(&attr, 0, sizeof(attr));
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    attr.srcLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
    attr.srcLocHint.id   = dev;
    attr.dstLocHint      = attr.srcLocHint;

    printf("issue: device %d -> %d, %d copies per round, %d rounds%s\n", dev, dst_dev,
           window, reps, fn ? ", kernel from -k" : "");
    printf("%8s %-8s %12s %12s %10s\n", "size", "api", "issue_us/cp", "round_us",
           "GB/s");
    for (s = 0; s < nsizes; ++s) {
        size_t len = (size_t)sizes[s] << 20;

        CHECK(cuMemAlloc(&src, len * window));
        CHECK(cuMemsetD8(src, 0x5a, len * window));
        ctx_on(dst_dev);
        CHECK(cuMemAlloc(&dst, len * window));
        CHECK(cuMemsetD8(dst, 0, len * window));
        CHECK(cuCtxSynchronize());
        ctx_on(dev);
        for (i = 0; i < window; ++i) {
            srcs[i] = src + i * len;
            dsts[i] = dst + i * len;
            lens[i] = len;
        }
        if ((fn != NULL) && (window > UCT_CUDA_COPY_KERNEL_MAX_COPIES)) {
            fprintf(stderr, "-W above %d: no kernel-W row\n",
                    UCT_CUDA_COPY_KERNEL_MAX_COPIES);
        }
        for (batch = 0; batch < (fn ? 5 : 3); ++batch) {
            if ((batch == 4) && (window > UCT_CUDA_COPY_KERNEL_MAX_COPIES)) {
                break;
            }
            double issue = 0, total = 0, t0, t1;

            for (rep = -3; rep < reps; ++rep) {
                t0 = now_sec();
                attr.flags = (batch == 2) ? CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE :
                                            0;
                if (batch == 4) {
                    kernel_copy(fn, blocks_max, dsts, srcs, window, len, stream);
                } else if (batch == 3) {
                    for (i = 0; i < window; ++i) {
                        kernel_copy(fn, blocks_max, &dsts[i], &srcs[i], 1, len, stream);
                    }
                } else if (batch) {
                    CHECK(cuMemcpyBatchAsync(dsts, srcs, lens, window, &attr,
                                             &attr_idx, 1, stream));
                } else {
                    for (i = 0; i < window; ++i) {
                        CHECK(cuMemcpyDtoDAsync(dsts[i], srcs[i], len, stream));
                    }
                }
                CHECK(cuEventRecord(ev, stream));
                t1 = now_sec();
                while (cuEventQuery(ev) == CUDA_ERROR_NOT_READY) {
                }
                if (rep >= 0) {
                    issue += t1 - t0;
                    total += now_sec() - t0;
                }
            }
            printf("%6ldMi %-8s %12.2f %12.1f %10.1f\n", sizes[s],
                   (batch == 4) ? "kernel-W" : (batch == 3) ? "kernel" :
                   (batch == 2) ? "batch-ce" :
                   batch ? "batch" : "single", issue / reps / window * 1e6,
                   total / reps * 1e6, len * (double)window * reps / total / 1e9);
        }
        if (fn != NULL) {
            /* The kernel's copies must be the copies: check one launch's
             * worth after zeroing the destination. */
            int n = (window < UCT_CUDA_COPY_KERNEL_MAX_COPIES) ? window :
                    UCT_CUDA_COPY_KERNEL_MAX_COPIES;
            unsigned char *h = malloc(len * n);
            size_t b;

            CHECK(cuMemsetD8(dst, 0, len * window));
            CHECK(cuCtxSynchronize()); /* the memset is on another stream */
            kernel_copy(fn, blocks_max, dsts, srcs, n, len, stream);
            CHECK(cuStreamSynchronize(stream));
            CHECK(cuMemcpyDtoH(h, dst, len * n));
            for (b = 0; b < len * n; ++b) {
                if (h[b] != 0x5a) {
                    printf("kernel copy WRONG at byte %zu\n", b);
                    break;
                }
            }
            free(h);
        }
        CHECK(cuMemFree(src));
        CHECK(cuMemFree(dst));
    }
}

/* ---- stage ---------------------------------------------------------------- */

typedef struct {
    _Atomic long ready;    /* chunks A has finished copying in */
    _Atomic long done;     /* chunks B has finished copying out */
    _Atomic int  go;       /* run number both sides start on */
    _Atomic int  setup;    /* processes ready */
} stage_shared_t;

/* One side of a staged run: copy chunk k when allowed, publish completions
 * in order. A may fill chunk k when B has finished chunk k - slots; B may
 * drain chunk k when A has finished it. */
static void stage_side(int is_b, CUstream stream, CUevent *ev, CUdeviceptr mem,
                       size_t chunk, long nchunks, int slots, stage_shared_t *sh)
{
    _Atomic long *mine = is_b ? &sh->done : &sh->ready;
    _Atomic long *peer = is_b ? &sh->ready : &sh->done;
    long issued = 0, completed = 0;

    while (completed < nchunks) {
        long allowed = is_b ? atomic_load(peer) : atomic_load(peer) + slots;

        while ((issued < nchunks) && (issued < allowed) &&
               (issued - completed < slots)) {
            int slot = (int)(issued % slots);

            /* Slot memory: [0, slots) chunks of staging, then as much "user"
             * memory; the copy direction stands for the real one. */
            if (is_b) {
                stage_copy(mem + (slots + slot) * chunk, mem + slot * chunk, chunk,
                           stream);
            } else {
                stage_copy(mem + slot * chunk, mem + (slots + slot) * chunk, chunk,
                           stream);
            }
            CHECK(cuEventRecord(ev[slot], stream));
            ++issued;
        }
        if ((completed < issued) &&
            (cuEventQuery(ev[completed % slots]) == CUDA_SUCCESS)) {
            ++completed;
            atomic_store(mine, completed);
        }
    }
}

static void stage_process(int is_b, int dev, const long *chunks, int nchunks_list,
                          const long *slots_list, int nslots, size_t total,
                          stage_shared_t *sh)
{
    CUevent ev[MAX_SLOTS];
    CUdeviceptr mem;
    CUstream stream;
    size_t max_chunk = 0;
    int i, c, s, run = 0, max_slots = 0;

    ctx_on(dev);
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    for (i = 0; i < MAX_SLOTS; ++i) {
        CHECK(cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
    }
    for (c = 0; c < nchunks_list; ++c) {
        max_chunk = ((size_t)chunks[c] << 20) > max_chunk ? (size_t)chunks[c] << 20 :
                                                             max_chunk;
    }
    for (s = 0; s < nslots; ++s) {
        max_slots = slots_list[s] > max_slots ? (int)slots_list[s] : max_slots;
    }
    CHECK(cuMemAlloc(&mem, 2 * max_chunk * max_slots));
    CHECK(cuMemsetD8(mem, 0, 2 * max_chunk * max_slots));
    CHECK(cuCtxSynchronize());
    atomic_fetch_add(&sh->setup, 1);

    for (c = 0; c < nchunks_list; ++c) {
        for (s = 0; s < nslots; ++s) {
            size_t chunk = (size_t)chunks[c] << 20;
            long n       = (long)((total + chunk - 1) / chunk);

            ++run;
            while (atomic_load(&sh->go) != run) {
                sched_yield();
            }
            stage_side(is_b, stream, ev, mem, chunk, n, (int)slots_list[s], sh);
            CHECK(cuStreamSynchronize(stream));
            atomic_fetch_add(&sh->setup, 1);
        }
    }
    CHECK(cuMemFree(mem));
}

static double raw_copy_gbs(int dev, size_t total)
{
    CUdeviceptr a, b;
    CUstream stream;
    double t0, best = 0;
    int rep;

    ctx_on(dev);
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAlloc(&a, total));
    CHECK(cuMemAlloc(&b, total));
    for (rep = 0; rep < 6; ++rep) {
        t0 = now_sec();
        stage_copy(b, a, total, stream);
        CHECK(cuStreamSynchronize(stream));
        if (rep > 0) {
            double gbs = total / (now_sec() - t0) / 1e9;
            best = gbs > best ? gbs : best;
        }
    }
    CHECK(cuMemFree(a));
    CHECK(cuMemFree(b));
    CHECK(cuStreamDestroy(stream));
    return best;
}

static void stage_run(int dev_a, int dev_b, const long *chunks, int nchunks,
                      const long *slots, int nslots, size_t total)
{
    stage_shared_t *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pid_t pids[2];
    int side, c, s, run = 0, status;
    double raw, t0, secs;

    memset(sh, 0, sizeof(*sh));
    /* CUDA is not fork-safe: both children initialise it themselves; the
     * parent only measures the raw reference after they are gone. */
    for (side = 0; side < 2; ++side) {
        pids[side] = fork();
        if (pids[side] == 0) {
            CHECK(cuInit(0));
            stage_process(side, side ? dev_b : dev_a, chunks, nchunks, slots, nslots,
                          total, sh);
            _exit(0);
        }
    }
    while (atomic_load(&sh->setup) < 2) {
        usleep(1000);
    }
    printf("stage: devices %d,%d, %.0f MiB per run, copies %s\n", dev_a, dev_b,
           total / MIB, use_2d ? "cuMemcpy2DAsync" :
           use_ce ? "through a copy engine (batch, overlap hint)" : "cuMemcpyDtoDAsync");
    printf("%10s %6s %12s %10s\n", "chunk", "slots", "GB/s", "ms");
    for (c = 0; c < nchunks; ++c) {
        for (s = 0; s < nslots; ++s) {
            int want = 2 + 2 * (run + 1);

            atomic_store(&sh->ready, 0);
            atomic_store(&sh->done, 0);
            ++run;
            t0 = now_sec();
            atomic_store(&sh->go, run);
            while (atomic_load(&sh->setup) < want) {
                sched_yield();
            }
            secs = now_sec() - t0;
            printf("%8ldMi %6ld %12.1f %10.2f\n", chunks[c], slots[s],
                   total / secs / 1e9, secs * 1e3);
            fflush(stdout);
        }
    }
    for (side = 0; side < 2; ++side) {
        waitpid(pids[side], &status, 0);
    }
    CHECK(cuInit(0));
    raw = raw_copy_gbs(dev_a, total);
    printf("raw one-process copy of %.0f MiB on device %d: %.1f GB/s "
           "(a staged transfer copies every byte twice: half of it is %.1f)\n",
           total / MIB, dev_a, raw, raw / 2);
}

int main(int argc, char **argv)
{
    long sizes[MAX_LIST] = {4, 16, 64}, slots[MAX_LIST] = {4, 16};
    long devs[MAX_LIST] = {0, 0};
    int nsizes = 3, nslots = 2, ndevs = 1, window = 8, opt;
    long total_mib = 1024;
    const char *mode;

    if ((argc < 2) || ((strcmp(argv[1], "issue") != 0) &&
                       (strcmp(argv[1], "stage") != 0))) {
        fprintf(stderr, "usage: %s issue|stage [-a DEVS] [-s MiB,...] [-W N] "
                        "[-N SLOTS,...] [-t TOTAL_MiB]\n", argv[0]);
        return 1;
    }
    mode = argv[1];
    optind = 2;
    while ((opt = getopt(argc, argv, "a:s:W:N:t:cdk:B:")) != -1) {
        switch (opt) {
        case 'a': ndevs = parse_list(optarg, devs); break;
        case 's': nsizes = parse_list(optarg, sizes); break;
        case 'N': nslots = parse_list(optarg, slots); break;
        case 'W': window = atoi(optarg); break;
        case 't': total_mib = atol(optarg); break;
        case 'c': use_ce = 1; break;
        case 'd': use_2d = 1; break;
        case 'k': kernel_ptx = optarg; break;
        case 'B': blocks_per_sm = atoi(optarg); break;
        default: return 1;
        }
    }
    if ((window < 1) || (window > MAX_SLOTS)) {
        fprintf(stderr, "-W must be 1..%d\n", MAX_SLOTS);
        return 1;
    }
    for (opt = 0; opt < nslots; ++opt) {
        if ((slots[opt] < 1) || (slots[opt] > MAX_SLOTS)) {
            fprintf(stderr, "-N values must be 1..%d\n", MAX_SLOTS);
            return 1;
        }
    }
    if (strcmp(mode, "issue") == 0) {
        CHECK(cuInit(0));
        issue_run((int)devs[0], (int)devs[ndevs > 1 ? 1 : 0], sizes, nsizes, window);
    } else {
        stage_run((int)devs[0], (int)devs[ndevs > 1 ? 1 : 0], sizes, nsizes, slots,
                  nslots, (size_t)total_mib << 20);
    }
    return 0;
}
