/*
 * Host-memory MPI benchmark, the MPI-level rows of contrib/bench-host.sh:
 * point-to-point between ranks 0 and 1 (any extra ranks wait at the
 * barriers), collectives over all ranks:
 *   lat      half of a round trip of MPI_Send/MPI_Recv, us
 *   rate     a window of 64 MPI_Isend/MPI_Irecv closed by a zero-byte
 *            answer: messages per second, in millions
 *   bw       the same with a window of 16: MB/s (1e6 bytes/s)
 *   sendrecv both ranks MPI_Sendrecv to each other at once, Intel MPI
 *            Benchmarks' figure: 2 * bytes / time, MB/s
 *   allreduce  every rank: MPI_Allreduce (MPI_SUM) of <bytes> of ints,
 *            us per call (the slowest rank's average)
 *   alltoall every rank: MPI_Alltoall of <bytes> to each other rank, us per
 *            call (the slowest rank's average)
 * Each received message's first and last bytes are checked once per size
 * (for the collectives: the first and last element of one call's result).
 * Rank 0 prints one line per test and size: "<test> <bytes> <value>".
 *
 * usage: mpi_hostbench [-s size,size,...] [-t seconds per size (0.2)]
 *                      [-T lat,rate,bw,sendrecv,allreduce,alltoall]
 */
#include "mpi_check.h"

#include <time.h>

#define HB_MAX_SIZES 32

static double hb_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void hb_fill(unsigned char *buf, size_t len, int seed)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        buf[i] = mpi_pattern(seed, i);
    }
}

static void hb_check(const unsigned char *buf, size_t len, int seed)
{
    if (len > 0) {
        CHECK((buf[0] == mpi_pattern(seed, 0)) &&
              (buf[len - 1] == mpi_pattern(seed, len - 1)),
              "message of %zu bytes arrived corrupt", len);
    }
}

/* Iterations that take about @a seconds, from a timed probe of @a probe
 * iterations; the same on every rank (rank 0 decides). */
static int hb_iters(double probe_time, int probe, double seconds)
{
    int iters = (probe_time > 0) ? (int)(seconds / (probe_time / probe)) : 1000;

    iters = (iters < 10) ? 10 : (iters > 2000000) ? 2000000 : iters;
    MPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return iters;
}

static double hb_pingpong(int rank, unsigned char *buf, size_t len, int iters)
{
    double t = hb_now();
    int i;

    for (i = 0; i < iters; ++i) {
        if (rank == 0) {
            MPI_Send(buf, (int)len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)len, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, (int)len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)len, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    return hb_now() - t;
}

static double hb_window(int rank, unsigned char *buf, size_t len, int window,
                        int iters)
{
    MPI_Request reqs[64];
    double t = hb_now();
    int i, w;

    for (i = 0; (i < iters) && (rank <= 1); ++i) {
        for (w = 0; w < window; ++w) {
            if (rank == 0) {
                MPI_Isend(buf, (int)len, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &reqs[w]);
            } else {
                MPI_Irecv(buf, (int)len, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &reqs[w]);
            }
        }
        MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
        if (rank == 0) {
            MPI_Recv(NULL, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Send(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
        }
    }
    return hb_now() - t;
}

static double hb_sendrecv(int rank, unsigned char *sbuf, unsigned char *rbuf,
                          size_t len, int iters)
{
    int peer = 1 - rank, i;
    double t = hb_now();

    for (i = 0; (i < iters) && (rank <= 1); ++i) {
        MPI_Sendrecv(sbuf, (int)len, MPI_BYTE, peer, 4, rbuf, (int)len, MPI_BYTE, peer,
                     4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return hb_now() - t;
}

static double hb_allreduce(int *sbuf, int *rbuf, size_t len, int iters)
{
    double t = hb_now();
    int i;

    for (i = 0; i < iters; ++i) {
        MPI_Allreduce(sbuf, rbuf, (int)(len / sizeof(int)), MPI_INT, MPI_SUM,
                      MPI_COMM_WORLD);
    }
    return hb_now() - t;
}

static double hb_alltoall(unsigned char *sbuf, unsigned char *rbuf, size_t len,
                          int iters)
{
    double t = hb_now();
    int i;

    for (i = 0; i < iters; ++i) {
        MPI_Alltoall(sbuf, (int)len, MPI_BYTE, rbuf, (int)len, MPI_BYTE, MPI_COMM_WORLD);
    }
    return hb_now() - t;
}

/* A collective at one size on every rank: the slowest rank's us per call. */
static void hb_run_collective(const char *test, int rank, int size, unsigned char *sbuf,
                              unsigned char *rbuf, size_t len, double seconds)
{
    int is_ar = !strcmp(test, "allreduce"), probe = 5, iters, n, p;
    size_t i;
    double t;

    if (is_ar) {
        n = (int)(len / sizeof(int));
        for (i = 0; i < (size_t)n; ++i) {
            ((int*)sbuf)[i] = rank + 1 + (int)(i & 7);
        }
    } else {
        for (p = 0; p < size; ++p) {
            memset(sbuf + (size_t)p * len, (rank * 16 + p) & 0xff, len);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t = is_ar ? hb_allreduce((int*)sbuf, (int*)rbuf, len, probe) :
                hb_alltoall(sbuf, rbuf, len, probe);
    if (is_ar && (n > 0)) {
        CHECK((((int*)rbuf)[0] == size * (size + 1) / 2) &&
              (((int*)rbuf)[n - 1] == size * (size + 1) / 2 + size * ((n - 1) & 7)),
              "allreduce of %zu bytes: wrong sum", len);
    } else if (!is_ar && (len > 0)) {
        for (p = 0; p < size; ++p) {
            CHECK((rbuf[(size_t)p * len] == ((p * 16 + rank) & 0xff)) &&
                  (rbuf[(size_t)p * len + len - 1] == ((p * 16 + rank) & 0xff)),
                  "alltoall of %zu bytes: block of rank %d corrupt", len, p);
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    iters = hb_iters(t, probe, seconds);
    MPI_Barrier(MPI_COMM_WORLD);
    t = is_ar ? hb_allreduce((int*)sbuf, (int*)rbuf, len, iters) :
                hb_alltoall(sbuf, rbuf, len, iters);
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%s %zu %.4f\n", test, len, t / iters * 1e6);
        fflush(stdout);
    }
}

/* One test at one size: probe, size the run, time it, print. */
static void hb_run(const char *test, int rank, unsigned char *sbuf,
                   unsigned char *rbuf, size_t len, double seconds)
{
    int is_lat = !strcmp(test, "lat"), is_rate = !strcmp(test, "rate");
    int is_sr = !strcmp(test, "sendrecv");
    int window = is_rate ? 64 : 16, probe = 10, iters;
    double t, value;

    hb_fill(sbuf, len, (int)len + rank);
    MPI_Barrier(MPI_COMM_WORLD);
#define HB_ONCE(_n)                                                            \
    (is_lat ? hb_pingpong(rank, is_lat ? sbuf : rbuf, len, (_n)) :             \
     is_sr  ? hb_sendrecv(rank, sbuf, rbuf, len, (_n)) :                       \
              hb_window(rank, (rank == 0) ? sbuf : rbuf, len, window, (_n)))
    t     = HB_ONCE(probe);
    iters = hb_iters(t, probe, seconds);
    if (is_sr || !is_lat) {
        if ((rank == 1) || (is_sr && (rank <= 1))) {
            hb_check(rbuf, len, is_sr ? (int)len + (1 - rank) : (int)len);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t = HB_ONCE(iters);
#undef HB_ONCE
    if (rank != 0) {
        return;
    }
    if (is_lat) {
        value = t / iters / 2 * 1e6;
    } else if (is_rate) {
        value = (double)window * iters / t / 1e6;
    } else if (is_sr) {
        value = 2.0 * (double)len * iters / t / 1e6;
    } else {
        value = (double)len * window * iters / t / 1e6;
    }
    printf("%s %zu %.4f\n", test, len, value);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    size_t sizes[HB_MAX_SIZES] = {8, 1024, 65536, 1048576, 4194304}, max = 0;
    const char *tests = "lat,rate,bw,sendrecv";
    unsigned num_sizes = 5, i;
    double seconds = 0.2;
    unsigned char *sbuf, *rbuf;
    char list[256], *tok, *save;
    int rank, size, a;

    for (a = 1; a + 1 < argc; a += 2) {
        if (!strcmp(argv[a], "-s")) {
            snprintf(list, sizeof(list), "%s", argv[a + 1]);
            num_sizes = 0;
            for (tok = strtok_r(list, ",", &save); tok && (num_sizes < HB_MAX_SIZES);
                 tok = strtok_r(NULL, ",", &save)) {
                sizes[num_sizes++] = strtoull(tok, NULL, 0);
            }
        } else if (!strcmp(argv[a], "-t")) {
            seconds = atof(argv[a + 1]);
        } else if (!strcmp(argv[a], "-T")) {
            tests = argv[a + 1];
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs 2 ranks, has %d", size);
    for (i = 0; i < num_sizes; ++i) {
        max = (sizes[i] > max) ? sizes[i] : max;
    }
    /* alltoall: one block for each rank */
    sbuf = malloc(max * size + 1);
    rbuf = malloc(max * size + 1);
    CHECK((sbuf != NULL) && (rbuf != NULL), "no memory for %zu bytes", max * size);
    memset(rbuf, 0, max * size + 1);
    snprintf(list, sizeof(list), "%s", tests);
    for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        for (i = 0; i < num_sizes; ++i) {
            if ((!strcmp(tok, "rate") && (sizes[i] > 65536))) {
                continue; /* a message rate of large messages is bandwidth */
            }
            if (!strcmp(tok, "allreduce") || !strcmp(tok, "alltoall")) {
                hb_run_collective(tok, rank, size, sbuf, rbuf, sizes[i], seconds);
            } else {
                hb_run(tok, rank, sbuf, rbuf, sizes[i], seconds);
            }
        }
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
