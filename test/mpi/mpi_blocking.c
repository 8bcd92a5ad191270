/*
 * Blocking MPI_Send / MPI_Recv from fresh buffers (issue 24): for each size,
 * both ranks allocate a new buffer of the kind under test (cuda-pool: from a
 * pool made for that size, so the peer has never seen it), then rank 0 sends
 * it N times with MPI_Send and rank 1 receives with MPI_Recv, no window and
 * no warm-up: the pattern of a program that allocates per phase. This is the
 * case a windowed benchmark hides: whatever a message costs once (an export,
 * an import, a handle transfer, a protocol decision) shows in the first
 * message, and whatever it costs every time shows in the others.
 *
 * Rank 0 prints one line per size and round:
 *   blk <bytes> <first us> <median of the rest us> <max of the rest us>
 *       <GB/s over all N> <GB/s over the rest> <raw copy GB/s>
 * The raw copy is cuMemcpy between plain cuMemAlloc buffers on the two
 * ranks' devices (memcpy for host). Rank 1 checks every byte of the last
 * message.
 *
 * usage: mpi_blocking [kind] [--one-gpu] [--driver-api] [-n messages]
 *                     [-r rounds] [-m max_bytes]
 */
#include "mpi_buf.h"

#include <time.h>

#define BLK_MAX_MSGS 1000

static double blk_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int blk_cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

static void blk_fill(void *buf, size_t len, int seed)
{
    unsigned char *host = malloc(len);
    size_t i;

    CHECK(host != NULL, "no memory for %zu bytes", len);
    for (i = 0; i < len; ++i) {
        host[i] = mpi_pattern(seed, i);
    }
    mpi_buf_copy(buf, host, len);
    free(host);
}

static void blk_check(const void *buf, size_t len, int seed)
{
    unsigned char *host = malloc(len);
    size_t i;

    CHECK(host != NULL, "no memory for %zu bytes", len);
    mpi_buf_copy(host, buf, len);
    for (i = 0; i < len; ++i) {
        CHECK(host[i] == mpi_pattern(seed, i),
              "%zu bytes: byte %zu is 0x%02x, expected 0x%02x", len, i,
              host[i], mpi_pattern(seed, i));
    }
    free(host);
}

/* Seconds per raw copy of @a len bytes between the two ranks' devices. */
static double blk_raw(size_t len)
{
    void *src = mpi_buf_alloc_raw(mpi_buf_device_of(0), len);
    void *dst = mpi_buf_alloc_raw(mpi_buf_device_of(1), len);
    int i, iters = (len < (1u << 20)) ? 100 : 10;
    double t;

    mpi_buf_copy(dst, src, len);
    t = blk_now();
    for (i = 0; i < iters; ++i) {
        mpi_buf_copy(dst, src, len);
    }
    t = (blk_now() - t) / iters;
    mpi_buf_free(dst);
    mpi_buf_free(src);
    return t;
}

static void blk_size(int rank, size_t len, int msgs)
{
    double t[BLK_MAX_MSGS], start, prev, rest = 0, raw;
    int i, seed = (int)(len % 251) + 1;
    void *buf;

    buf = mpi_buf_alloc(len);
    if (rank == 0) {
        blk_fill(buf, len, seed);
    } else {
        mpi_buf_set(buf, 0, len);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    start = prev = blk_now();
    for (i = 0; i < msgs; ++i) {
        if (rank == 0) {
            MPI_Send(buf, (int)len, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Recv(buf, (int)len, MPI_BYTE, 0, 7, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        }
        t[i] = blk_now() - prev;
        prev += t[i];
    }
    if (rank == 1) {
        blk_check(buf, len, seed);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    mpi_buf_free(buf);
#ifdef HAVE_CUDA
    if (mpi_buf.kind == MPI_BUF_CUDA_POOL) {
        mpi_buf_fresh_pools();
    }
#endif
    if (rank != 0) {
        return;
    }
    for (i = 1; i < msgs; ++i) {
        rest += t[i];
    }
    raw = blk_raw(len);
    qsort(t + 1, msgs - 1, sizeof(t[0]), blk_cmp_double);
    printf("blk %9zu %10.1f %10.1f %10.1f %9.2f %9.2f %9.2f\n", len,
           t[0] * 1e6, (msgs > 1) ? t[1 + (msgs - 1) / 2] * 1e6 : 0,
           (msgs > 1) ? t[msgs - 1] * 1e6 : 0,
           (double)len * msgs / (prev - start) / 1e9,
           (msgs > 1) ? (double)len * (msgs - 1) / rest / 1e9 : 0,
           (double)len / raw / 1e9);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {8, 4096, 65536, 262144, 1u << 20, 4u << 20,
                                   16u << 20, 64u << 20};
    size_t max = 64u << 20;
    int rank, size, msgs = 10, rounds = 3, i, r;

    mpi_buf_setup(&argc, argv);
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n")) {
            msgs = atoi(argv[i + 1]);
        } else if (!strcmp(argv[i], "-r")) {
            rounds = atoi(argv[i + 1]);
        } else if (!strcmp(argv[i], "-m")) {
            max = strtoull(argv[i + 1], NULL, 0);
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs 2 ranks, has %d", size);
    CHECK((msgs >= 1) && (msgs <= BLK_MAX_MSGS), "bad -n %d", msgs);
    mpi_report_libucp();
    mpi_buf_report("mpi_blocking");
    if (rank == 0) {
        printf("#       bytes   first(us) median(us)    max(us)  all GB/s "
               "rest GB/s  raw GB/s\n");
    }
    for (r = 0; r < rounds; ++r) {
        for (i = 0; i < (int)(sizeof(sizes) / sizeof(sizes[0])); ++i) {
            if (sizes[i] <= max) {
                blk_size(rank, sizes[i], msgs);
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi_blocking: 2 ranks OK\n");
    }
    MPI_Finalize();
    return 0;
}
