/*
 * Collectives over pml/ucx, host memory, every result checked: barrier,
 * bcast from every root (eager and rendezvous sizes), reduce to every root,
 * allreduce, allgather, gather/scatter, alltoall and alltoallv with uneven
 * counts (some zero), reduce_scatter_block, and a bcast on a split
 * communicator. Open MPI's coll modules build these from point-to-point
 * messages, so the sizes are chosen to cross our eager/rendezvous
 * thresholds: a collective that mixes protocols between many peers at once
 * is what a single ping-pong never exercises.
 *
 * usage: mpi_coll   (any number of ranks >= 2)
 */
#include "mpi_check.h"

#include <stdint.h>

static unsigned char *xalloc(size_t len)
{
    unsigned char *p = malloc(len ? len : 1);

    CHECK(p != NULL, "malloc(%zu)", len);
    return p;
}

/* Nobody leaves a barrier before the last rank enters it: each round one
 * rank enters 0.2 s late, and every rank must have waited for it. */
static void test_barrier(int rank, int size)
{
    int late;

    for (late = 0; late < size; ++late) {
        double start;

        MPI_Barrier(MPI_COMM_WORLD);
        start = MPI_Wtime();
        if (rank == late) {
            while (MPI_Wtime() - start < 0.2) {
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(MPI_Wtime() - start >= 0.15, "left the barrier after %.3f s, rank %d was late",
              MPI_Wtime() - start, late);
    }
}

static void test_bcast(int rank, int size)
{
    static const size_t sizes[] = {1, 1000, 65536, 1 << 20, (4 << 20) + 1};
    size_t n, i, len;
    unsigned char *buf = xalloc((4 << 20) + 1);
    int root;

    for (n = 0; n < sizeof(sizes) / sizeof(sizes[0]); ++n) {
        len = sizes[n];
        for (root = 0; root < size; ++root) {
            int seed = (int)n * 16 + root;
            for (i = 0; i < len; ++i) {
                buf[i] = (rank == root) ? mpi_pattern(seed, i) : 0;
            }
            MPI_Bcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
            for (i = 0; i < len; ++i) {
                CHECK(buf[i] == mpi_pattern(seed, i), "bcast of %zu from %d: byte %zu",
                      len, root, i);
            }
        }
    }
    free(buf);
}

static void test_reduce(int rank, int size)
{
    enum { N = 100000 };
    long *in = (long*)xalloc(N * sizeof(long)), *out = (long*)xalloc(N * sizeof(long));
    double din[3], dout[3];
    int i, root;

    for (i = 0; i < N; ++i) {
        in[i] = (long)rank * i + 1;
    }
    for (root = 0; root < size; ++root) {
        memset(out, 0xff, N * sizeof(long));
        MPI_Reduce(in, out, N, MPI_LONG, MPI_SUM, root, MPI_COMM_WORLD);
        if (rank == root) {
            for (i = 0; i < N; ++i) {
                long want = (long)i * size * (size - 1) / 2 + size;
                CHECK(out[i] == want, "reduce to %d: out[%d] = %ld, want %ld", root, i,
                      out[i], want);
            }
        }
    }
    din[0] = rank;
    din[1] = -rank;
    din[2] = rank * 0.5;
    MPI_Allreduce(din, dout, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CHECK(dout[0] == size - 1 && dout[1] == 0 && dout[2] == (size - 1) * 0.5,
          "max %g %g %g", dout[0], dout[1], dout[2]);
    free(in);
    free(out);
}

static void test_allreduce_large(int rank, int size)
{
    enum { N = 1 << 20 }; /* 4 MiB of int */
    int *in = (int*)xalloc(N * sizeof(int)), *out = (int*)xalloc(N * sizeof(int));
    int i;

    for (i = 0; i < N; ++i) {
        in[i] = (i % 1000) + rank;
    }
    MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0; i < N; ++i) {
        CHECK(out[i] == (i % 1000) * size + size * (size - 1) / 2, "out[%d] = %d", i,
              out[i]);
    }
    free(in);
    free(out);
}

static void test_allgather_gather_scatter(int rank, int size)
{
    enum { LEN = 65536 };
    unsigned char *mine = xalloc(LEN), *all = xalloc((size_t)LEN * size);
    int r, i;

    for (i = 0; i < LEN; ++i) {
        mine[i] = mpi_pattern(rank, i);
    }
    MPI_Allgather(mine, LEN, MPI_BYTE, all, LEN, MPI_BYTE, MPI_COMM_WORLD);
    for (r = 0; r < size; ++r) {
        for (i = 0; i < LEN; ++i) {
            CHECK(all[(size_t)r * LEN + i] == mpi_pattern(r, i), "allgather %d/%d", r, i);
        }
    }

    memset(all, 0, (size_t)LEN * size);
    MPI_Gather(mine, LEN, MPI_BYTE, all, LEN, MPI_BYTE, size - 1, MPI_COMM_WORLD);
    if (rank == size - 1) {
        for (r = 0; r < size; ++r) {
            for (i = 0; i < LEN; ++i) {
                CHECK(all[(size_t)r * LEN + i] == mpi_pattern(r, i), "gather %d/%d", r, i);
            }
        }
        for (r = 0; r < size; ++r) {
            for (i = 0; i < LEN; ++i) {
                all[(size_t)r * LEN + i] = mpi_pattern(100 + r, i);
            }
        }
    }
    MPI_Scatter(all, LEN, MPI_BYTE, mine, LEN, MPI_BYTE, size - 1, MPI_COMM_WORLD);
    for (i = 0; i < LEN; ++i) {
        CHECK(mine[i] == mpi_pattern(100 + rank, i), "scatter byte %d", i);
    }
    free(mine);
    free(all);
}

/* Bytes rank @a from sends to rank @a to in the alltoallv test: uneven,
 * zero for some pairs, rendezvous-sized for others. */
static int v_count(int from, int to)
{
    static const int counts[] = {0, 1, 4097, 70000, 300000, 33};

    return counts[(from * 5 + to * 3) % 6];
}

static void test_alltoall(int rank, int size)
{
    static const int blocks[] = {1, 4096, 262144};
    unsigned char *sbuf, *rbuf;
    int *scounts, *sdispls, *rcounts, *rdispls;
    size_t b;
    int r, i, stotal = 0, rtotal = 0;

    for (b = 0; b < sizeof(blocks) / sizeof(blocks[0]); ++b) {
        size_t len = (size_t)blocks[b];
        sbuf       = xalloc(len * size);
        rbuf       = xalloc(len * size);
        for (r = 0; r < size; ++r) {
            for (i = 0; i < (int)len; ++i) {
                sbuf[(size_t)r * len + i] = mpi_pattern(rank * 64 + r, i);
            }
        }
        memset(rbuf, 0, len * size);
        MPI_Alltoall(sbuf, (int)len, MPI_BYTE, rbuf, (int)len, MPI_BYTE, MPI_COMM_WORLD);
        for (r = 0; r < size; ++r) {
            for (i = 0; i < (int)len; ++i) {
                CHECK(rbuf[(size_t)r * len + i] == mpi_pattern(r * 64 + rank, i),
                      "alltoall block %zu from %d: byte %d", len, r, i);
            }
        }
        free(sbuf);
        free(rbuf);
    }

    scounts = (int*)xalloc(4 * size * sizeof(int));
    sdispls = scounts + size;
    rcounts = sdispls + size;
    rdispls = rcounts + size;
    for (r = 0; r < size; ++r) {
        scounts[r] = v_count(rank, r);
        rcounts[r] = v_count(r, rank);
        sdispls[r] = stotal;
        rdispls[r] = rtotal;
        stotal += scounts[r];
        rtotal += rcounts[r];
    }
    sbuf = xalloc(stotal);
    rbuf = xalloc(rtotal);
    for (r = 0; r < size; ++r) {
        for (i = 0; i < scounts[r]; ++i) {
            sbuf[sdispls[r] + i] = mpi_pattern(rank * 64 + r + 7, i);
        }
    }
    memset(rbuf, 0, rtotal ? rtotal : 1);
    MPI_Alltoallv(sbuf, scounts, sdispls, MPI_BYTE, rbuf, rcounts, rdispls, MPI_BYTE,
                  MPI_COMM_WORLD);
    for (r = 0; r < size; ++r) {
        for (i = 0; i < rcounts[r]; ++i) {
            CHECK(rbuf[rdispls[r] + i] == mpi_pattern(r * 64 + rank + 7, i),
                  "alltoallv %d bytes from %d: byte %d", rcounts[r], r, i);
        }
    }
    free(sbuf);
    free(rbuf);
    free(scounts);
}

static void test_reduce_scatter(int rank, int size)
{
    enum { PER = 50000 };
    long *in = (long*)xalloc((size_t)PER * size * sizeof(long));
    long out[PER];
    int i;

    for (i = 0; i < PER * size; ++i) {
        in[i] = i + rank;
    }
    MPI_Reduce_scatter_block(in, out, PER, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0; i < PER; ++i) {
        long want = (long)(rank * PER + i) * size + (long)size * (size - 1) / 2;
        CHECK(out[i] == want, "out[%d] = %ld, want %ld", i, out[i], want);
    }
    free(in);
}

/* A second communicator has its own matching context: messages of the
 * same tags on both must not mix. */
static void test_split(int rank, int size)
{
    MPI_Comm half;
    int hrank, hsize, value, world_value;

    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);
    value       = (hrank == 0) ? 1000 + rank % 2 : -1;
    world_value = (rank == 0) ? 42 : -1;
    MPI_Bcast(&value, 1, MPI_INT, 0, half);
    MPI_Bcast(&world_value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(value == 1000 + rank % 2, "split bcast gave %d", value);
    CHECK(world_value == 42, "world bcast gave %d", world_value);
    CHECK(hsize == (size + 1 - rank % 2) / 2, "half of %d has %d", size, hsize);
    MPI_Comm_free(&half);
}

int main(int argc, char **argv)
{
    int rank, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs 2 ranks or more, has %d", size);
    mpi_report_libucp();
    test_barrier(rank, size);
    test_bcast(rank, size);
    test_reduce(rank, size);
    test_allreduce_large(rank, size);
    test_allgather_gather_scatter(rank, size);
    test_alltoall(rank, size);
    test_reduce_scatter(rank, size);
    test_split(rank, size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi_coll: %d ranks OK\n", size);
    }
    MPI_Finalize();
    return 0;
}
