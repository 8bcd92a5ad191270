/*
 * Point-to-point over pml/ucx: ping-pong with data checks over sizes up to
 * 4 MiB + 1, a window of MPI_Isend/MPI_Irecv, MPI_ANY_SOURCE/MPI_ANY_TAG
 * with MPI_Probe, a derived (vector) datatype, and MPI_Allreduce.
 *
 * usage: mpi_p2p [buffer kind] [--one-gpu] [--driver-api]   (mpi_buf.h)
 * With device buffers, ping-pong, window and probe move device memory; the
 * datatype and allreduce tests stay on host memory, because Open MPI as
 * distributions build it is not CUDA-aware: it packs derived datatypes and
 * applies reduction operations with the CPU.
 */
#include "mpi_buf.h"

/* Write the pattern of @a seed into a buffer of the chosen kind. */
static void fill(unsigned char *buf, size_t len, int seed)
{
    unsigned char *host = malloc(len ? len : 1);
    size_t i;

    for (i = 0; i < len; ++i) {
        host[i] = mpi_pattern(seed, i);
    }
    mpi_buf_copy(buf, host, len);
    free(host);
}

/* Check the pattern of @a seed in a buffer of the chosen kind. */
static void check(const unsigned char *buf, size_t len, int seed)
{
    unsigned char *host = malloc(len ? len : 1);
    size_t i;

    mpi_buf_copy(host, buf, len);
    for (i = 0; i < len; ++i) {
        CHECK(host[i] == mpi_pattern(seed, i), "byte %zu of %zu (seed %d)", i,
              len, seed);
    }
    free(host);
}

static void test_pingpong(int rank, int size)
{
    static const size_t sizes[] = {0, 1, 7, 64, 1000, 4096, 8193, 65536,
                                   100000, 1 << 20, (4 << 20) + 1};
    size_t n, max = (4 << 20) + 1;
    unsigned char *buf = mpi_buf_alloc(max);
    int peer = rank ^ 1;
    MPI_Status st;
    int count;

    if (peer >= size) {
        mpi_buf_free(buf);
        return;
    }
    for (n = 0; n < sizeof(sizes) / sizeof(sizes[0]); ++n) {
        if (rank % 2 == 0) {
            fill(buf, sizes[n], (int)n);
            MPI_Send(buf, (int)sizes[n], MPI_BYTE, peer, (int)n, MPI_COMM_WORLD);
            mpi_buf_set(buf, 0, max);
            MPI_Recv(buf, (int)max, MPI_BYTE, peer, (int)n, MPI_COMM_WORLD, &st);
        } else {
            MPI_Recv(buf, (int)max, MPI_BYTE, peer, (int)n, MPI_COMM_WORLD, &st);
            MPI_Send(buf, (int)sizes[n], MPI_BYTE, peer, (int)n, MPI_COMM_WORLD);
        }
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK((size_t)count == sizes[n], "count %d, expected %zu", count, sizes[n]);
        check(buf, sizes[n], (int)n);
    }
    mpi_buf_free(buf);
}

static void test_window(int rank, int size)
{
    enum { WIN = 32, LEN = 3000 };
    MPI_Request reqs[2 * WIN];
    unsigned char *sbuf = mpi_buf_alloc(WIN * LEN);
    unsigned char *rbuf = mpi_buf_alloc(WIN * LEN);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, i;

    for (i = 0; i < WIN; ++i) {
        fill(sbuf + i * LEN, LEN, rank * 1000 + i);
        MPI_Irecv(rbuf + i * LEN, LEN, MPI_BYTE, prev, i, MPI_COMM_WORLD, &reqs[i]);
    }
    for (i = 0; i < WIN; ++i) {
        MPI_Isend(sbuf + i * LEN, LEN, MPI_BYTE, next, i, MPI_COMM_WORLD,
                  &reqs[WIN + i]);
    }
    MPI_Waitall(2 * WIN, reqs, MPI_STATUSES_IGNORE);
    for (i = 0; i < WIN; ++i) {
        check(rbuf + i * LEN, LEN, prev * 1000 + i);
    }
    mpi_buf_free(sbuf);
    mpi_buf_free(rbuf);
}

static void test_any_source_probe(int rank, int size)
{
    int i, value = -1, count, seen = 0, *dev = mpi_buf_alloc(sizeof(int));
    MPI_Status st;

    if (rank != 0) {
        value = rank * 10;
        mpi_buf_copy(dev, &value, sizeof(value));
        MPI_Send(dev, 1, MPI_INT, 0, 100 + rank, MPI_COMM_WORLD);
        mpi_buf_free(dev);
        return;
    }
    for (i = 1; i < size; ++i) {
        MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(count == 1, "probe count %d", count);
        CHECK(st.MPI_TAG == 100 + st.MPI_SOURCE, "tag %d from %d", st.MPI_TAG,
              st.MPI_SOURCE);
        MPI_Recv(dev, 1, MPI_INT, MPI_ANY_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st);
        mpi_buf_copy(&value, dev, sizeof(value));
        CHECK(value == st.MPI_SOURCE * 10, "value %d from %d", value, st.MPI_SOURCE);
        seen |= 1 << st.MPI_SOURCE;
    }
    CHECK(seen == ((1 << size) - 2), "senders seen 0x%x", seen);
    mpi_buf_free(dev);
}

static void test_datatype(int rank, int size)
{
    enum { ROWS = 100, COLS = 37 };
    double m[ROWS][COLS], col[ROWS];
    MPI_Datatype column;
    int i, j;

    if (size < 2 || rank > 1) {
        return;
    }
    MPI_Type_vector(ROWS, 1, COLS, MPI_DOUBLE, &column);
    MPI_Type_commit(&column);
    if (rank == 0) {
        for (i = 0; i < ROWS; ++i) {
            for (j = 0; j < COLS; ++j) {
                m[i][j] = i * 1000 + j;
            }
        }
        MPI_Send(&m[0][5], 1, column, 1, 7, MPI_COMM_WORLD);
    } else {
        MPI_Recv(col, ROWS, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (i = 0; i < ROWS; ++i) {
            CHECK(col[i] == i * 1000 + 5, "col[%d] = %g", i, col[i]);
        }
    }
    MPI_Type_free(&column);
}

static void test_allreduce(int rank, int size)
{
    enum { N = 10000 };
    long *in = malloc(N * sizeof(long)), *out = malloc(N * sizeof(long));
    int i;

    for (i = 0; i < N; ++i) {
        in[i] = rank + i;
    }
    MPI_Allreduce(in, out, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0; i < N; ++i) {
        CHECK(out[i] == (long)size * i + (long)size * (size - 1) / 2,
              "out[%d] = %ld", i, out[i]);
    }
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    int rank, size;

    mpi_buf_setup(&argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mpi_report_libucp();
    mpi_buf_report("mpi_p2p");
    test_pingpong(rank, size);
    test_window(rank, size);
    test_any_source_probe(rank, size);
    test_datatype(rank, size);
    test_allreduce(rank, size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi_p2p: %d ranks OK (%s)\n", size,
               mpi_buf_kind_names[mpi_buf.kind]);
    }
    MPI_Finalize();
    return 0;
}
