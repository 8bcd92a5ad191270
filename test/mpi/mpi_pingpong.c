/*
 * MPI ping-pong benchmark between ranks 0 and 1, with buffers of any kind
 * (mpi_buf.h), next to the raw copy it competes with, measured in the same
 * program on the same devices and sizes:
 *   latency    8 B .. 64 KiB, half of a round trip of MPI_Send/MPI_Recv;
 *              raw: one synchronous cuMemcpy (memcpy for host buffers)
 *   bandwidth  4 MiB .. 256 MiB, a window of MPI_Isend/MPI_Irecv from rank
 *              0 to rank 1 closed by a zero-byte answer; raw: cuMemcpy from
 *              a buffer on rank 0's device to one on rank 1's device (plain
 *              cuMemAlloc memory, peer access enabled: the copy engine's
 *              speed, whatever the kind under test)
 * The first and last bytes of each received message are checked (a full
 * check would cost more than the transfer). Rank 0 prints one line per size:
 *   lat <bytes> <mpi us> <raw us> <raw/mpi %>
 *   bw  <bytes> <mpi GB/s> <raw GB/s> <mpi/raw %>
 *
 * usage: mpi_pingpong [kind] [--one-gpu] [--driver-api] [-i lat_iters]
 *                     [-m max_bw_bytes] [-b bytes_per_bw_size]
 */
#include "mpi_buf.h"

#include <time.h>

#define PP_WINDOW 4

static double pp_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Rank 1 checks the first and last byte of what it received. */
static void pp_check_ends(const unsigned char *buf, size_t len, int seed)
{
    unsigned char ends[2] = {0, 0};

    if (len == 0) {
        return;
    }
    mpi_buf_copy(&ends[0], buf, 1);
    mpi_buf_copy(&ends[1], buf + len - 1, 1);
    CHECK((ends[0] == mpi_pattern(seed, 0)) &&
          (ends[1] == mpi_pattern(seed, len - 1)),
          "%zu bytes: ends 0x%02x 0x%02x", len, ends[0], ends[1]);
}

static void pp_fill(unsigned char *buf, size_t len, int seed)
{
    unsigned char *host = malloc(len);
    size_t i;

    for (i = 0; i < len; ++i) {
        host[i] = mpi_pattern(seed, i);
    }
    mpi_buf_copy(buf, host, len);
    free(host);
}

/* Seconds per copy of @a len bytes from @a src to @a dst. */
static double pp_raw(void *dst, const void *src, size_t len, int iters)
{
    double t;
    int i;

    mpi_buf_copy(dst, src, len); /* warm-up */
    t = pp_now();
    for (i = 0; i < iters; ++i) {
        mpi_buf_copy(dst, src, len);
    }
    return (pp_now() - t) / iters;
}

static void pp_latency(int rank, unsigned char *buf, void *raw_src,
                       void *raw_dst, int iters)
{
    size_t len;
    double t = 0, raw;
    int i, warm = iters / 10 + 1;

    for (len = 8; len <= 65536; len *= 2) {
        if (rank == 0) {
            pp_fill(buf, len, (int)len);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (i = 0; i < warm + iters; ++i) {
            if (i == warm) {
                t = pp_now();
            }
            if (rank == 0) {
                MPI_Send(buf, (int)len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)len, MPI_BYTE, 1, 1, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf, (int)len, MPI_BYTE, 0, 1, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                if (i == 0) {
                    pp_check_ends(buf, len, (int)len);
                }
                MPI_Send(buf, (int)len, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
        }
        t = (pp_now() - t) / iters / 2;
        if (rank == 0) {
            raw = pp_raw(raw_dst, raw_src, len, iters);
            printf("lat %9zu %10.2f %10.2f %6.1f\n", len, t * 1e6, raw * 1e6,
                   100.0 * raw / t);
            fflush(stdout);
        }
    }
}

static void pp_bandwidth(int rank, unsigned char *buf, void *raw_src,
                         void *raw_dst, size_t max, size_t per_size)
{
    MPI_Request reqs[PP_WINDOW];
    size_t len;
    double t = 0, raw, mpi_gbs, raw_gbs;
    int i, w, iters;

    for (len = 4u << 20; len <= max; len *= 4) {
        /* about per_size bytes per size, at least two windows */
        iters = (int)(per_size / (len * PP_WINDOW));
        iters = (iters < 2) ? 2 : iters;
        if (rank == 0) {
            pp_fill(buf, len, (int)(len >> 20));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (i = 0; i < iters + 1; ++i) {
            if (i == 1) {
                t = pp_now(); /* the first window is the warm-up */
            }
            for (w = 0; w < PP_WINDOW; ++w) {
                if (rank == 0) {
                    MPI_Isend(buf, (int)len, MPI_BYTE, 1, 2, MPI_COMM_WORLD,
                              &reqs[w]);
                } else if (rank == 1) {
                    MPI_Irecv(buf, (int)len, MPI_BYTE, 0, 2, MPI_COMM_WORLD,
                              &reqs[w]);
                }
            }
            if (rank > 1) {
                continue;
            }
            MPI_Waitall(PP_WINDOW, reqs, MPI_STATUSES_IGNORE);
            if (rank == 0) {
                MPI_Recv(NULL, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            } else {
                if (i == 0) {
                    pp_check_ends(buf, len, (int)(len >> 20));
                }
                MPI_Send(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
            }
        }
        t = pp_now() - t;
        if (rank == 0) {
            mpi_gbs = (double)len * PP_WINDOW * iters / t / 1e9;
            raw     = pp_raw(raw_dst, raw_src, len, iters);
            raw_gbs = (double)len / raw / 1e9;
            printf("bw  %9zu %10.2f %10.2f %6.1f\n", len, mpi_gbs, raw_gbs,
                   100.0 * mpi_gbs / raw_gbs);
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv)
{
    size_t max = 256u << 20, per_size = 4ul << 30;
    int rank, size, iters = 1000, i;
    unsigned char *buf;
    void *raw_src = NULL, *raw_dst = NULL;

    mpi_buf_setup(&argc, argv);
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-i")) {
            iters = atoi(argv[i + 1]);
        } else if (!strcmp(argv[i], "-m")) {
            max = strtoull(argv[i + 1], NULL, 0);
        } else if (!strcmp(argv[i], "-b")) {
            per_size = strtoull(argv[i + 1], NULL, 0);
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs 2 ranks, has %d", size);
    CHECK(iters > 0, "bad -i");
    mpi_report_libucp();
    mpi_buf_report("mpi_pingpong");
    buf = mpi_buf_alloc(max);
    if (rank == 0) {
        /* the raw copy runs between the devices ranks 0 and 1 use */
        raw_src = mpi_buf_alloc_raw(mpi_buf_device_of(0), max);
        raw_dst = mpi_buf_alloc_raw(mpi_buf_device_of(1), max);
        printf("#   bytes   mpi(us|GB/s)  raw(us|GB/s)  %% of raw\n");
    }
    pp_latency(rank, buf, raw_src, raw_dst, iters);
    pp_bandwidth(rank, buf, raw_src, raw_dst, max, per_size);
    if (rank == 0) {
        mpi_buf_free(raw_dst);
        mpi_buf_free(raw_src);
    }
    mpi_buf_free(buf);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi_pingpong: %d ranks OK (%s)\n", size,
               mpi_buf_kind_names[mpi_buf.kind]);
    }
    MPI_Finalize();
    return 0;
}
