/*
 * The send modes and request operations of point-to-point beyond plain
 * send/receive, over pml/ucx, host memory, data checked:
 *   - synchronous sends (MPI_Issend, eager and rendezvous sizes) do not
 *     complete before the receiver has posted the matching receive;
 *   - a cancelled receive reports cancelled and consumes nothing: the
 *     message it could have matched goes to the next receive;
 *   - MPI_Iprobe and the matched probe (MPI_Improbe, MPI_Mrecv);
 *   - non-overtaking: messages of one sender, tag and communicator arrive
 *     in send order even when eager and rendezvous sizes alternate;
 *   - MPI_Sendrecv of 4 MiB in both directions at once; MPI_Rsend;
 *     MPI_Waitany and MPI_Testsome over a set of receives.
 * Ranks work in pairs, rank r with r + size/2: with ranks placed by slot on
 * two hosts, every pair spans the hosts.
 *
 * usage: mpi_p2p_modes   (an even number of ranks >= 2)
 */
#include "mpi_check.h"

static void fill(unsigned char *buf, size_t len, int seed)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        buf[i] = mpi_pattern(seed, i);
    }
}

static void check(const unsigned char *buf, size_t len, int seed, const char *what)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        CHECK(buf[i] == mpi_pattern(seed, i), "%s: byte %zu of %zu (seed %d)", what, i,
              len, seed);
    }
}

/* The sender polls its MPI_Issend for 0.3 s while the receiver holds off;
 * only then does the receiver post. */
static void test_ssend(int rank, int peer)
{
    static const size_t sizes[] = {8, 4000, 1 << 20};
    unsigned char *buf = malloc(1 << 20);
    MPI_Request req;
    size_t n;
    int done, go = 1;

    for (n = 0; n < sizeof(sizes) / sizeof(sizes[0]); ++n) {
        if (rank < peer) {
            double start = MPI_Wtime();
            fill(buf, sizes[n], (int)n);
            MPI_Issend(buf, (int)sizes[n], MPI_BYTE, peer, 10, MPI_COMM_WORLD, &req);
            while (MPI_Wtime() - start < 0.3) {
                MPI_Test(&req, &done, MPI_STATUS_IGNORE);
                CHECK(!done, "MPI_Issend of %zu bytes completed before the receive "
                             "was posted", sizes[n]);
            }
            MPI_Send(&go, 1, MPI_INT, peer, 11, MPI_COMM_WORLD);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&go, 1, MPI_INT, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            memset(buf, 0, sizes[n]);
            MPI_Recv(buf, (int)sizes[n], MPI_BYTE, peer, 10, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            check(buf, sizes[n], (int)n, "ssend");
        }
    }
    /* And the blocking form, after the receive is already waiting. */
    if (rank < peer) {
        MPI_Ssend(buf, 100, MPI_BYTE, peer, 12, MPI_COMM_WORLD);
    } else {
        MPI_Recv(buf, 100, MPI_BYTE, peer, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    free(buf);
}

static void test_cancel(int rank, int peer)
{
    int value = -1, flag = 0, sent = 77;
    MPI_Request req;
    MPI_Status st;

    if (rank > peer) {
        /* Nothing is sent with tag 20 yet: the receive can be cancelled. */
        MPI_Irecv(&value, 1, MPI_INT, peer, 20, MPI_COMM_WORLD, &req);
        MPI_Cancel(&req);
        MPI_Wait(&req, &st);
        MPI_Test_cancelled(&st, &flag);
        CHECK(flag, "an unmatched receive was not cancelled");
        CHECK(value == -1, "a cancelled receive wrote %d", value);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank < peer) {
        MPI_Send(&sent, 1, MPI_INT, peer, 20, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&value, 1, MPI_INT, peer, 20, MPI_COMM_WORLD, &st);
        CHECK(value == 77, "after a cancel the message gave %d", value);
    }
}

static void test_probes(int rank, int peer)
{
    enum { BIG = 300000 };
    unsigned char *buf = malloc(BIG);
    int flag = 0, count, small = 5;
    MPI_Message msg;
    MPI_Status st;

    if (rank < peer) {
        fill(buf, BIG, 30);
        MPI_Send(&small, 1, MPI_INT, peer, 30, MPI_COMM_WORLD);
        MPI_Send(buf, BIG, MPI_BYTE, peer, 31, MPI_COMM_WORLD);
    } else {
        while (!flag) {
            MPI_Iprobe(peer, 30, MPI_COMM_WORLD, &flag, &st);
        }
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(count == 1 && st.MPI_SOURCE == peer && st.MPI_TAG == 30,
              "iprobe: count %d source %d tag %d", count, st.MPI_SOURCE, st.MPI_TAG);
        MPI_Recv(&small, 1, MPI_INT, peer, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(small == 5, "small message %d", small);

        flag = 0;
        while (!flag) {
            MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st);
        }
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count == BIG && st.MPI_TAG == 31, "improbe: count %d tag %d", count,
              st.MPI_TAG);
        memset(buf, 0, BIG);
        MPI_Mrecv(buf, BIG, MPI_BYTE, &msg, &st);
        check(buf, BIG, 30, "mrecv");
    }
    free(buf);
}

static void test_order(int rank, int peer)
{
    enum { N = 24, MAX = 200000 };
    unsigned char *buf = malloc(MAX);
    MPI_Request reqs[N];
    unsigned char *bufs[N];
    int i, count;
    MPI_Status st;

    /* Sizes alternate eager and rendezvous; all carry the same tag. */
#define ORDER_LEN(_i) ((((_i) % 3) == 0) ? MAX - (_i) : 17 + (_i))
    if (rank < peer) {
        for (i = 0; i < N; ++i) {
            bufs[i] = malloc(ORDER_LEN(i));
            fill(bufs[i], ORDER_LEN(i), 40 + i);
            MPI_Isend(bufs[i], ORDER_LEN(i), MPI_BYTE, peer, 40, MPI_COMM_WORLD,
                      &reqs[i]);
        }
        MPI_Waitall(N, reqs, MPI_STATUSES_IGNORE);
        for (i = 0; i < N; ++i) {
            free(bufs[i]);
        }
    } else {
        for (i = 0; i < N; ++i) {
            MPI_Recv(buf, MAX, MPI_BYTE, peer, 40, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK(count == ORDER_LEN(i), "message %d has %d bytes, sent %d", i, count,
                  ORDER_LEN(i));
            check(buf, count, 40 + i, "order");
        }
    }
#undef ORDER_LEN
    free(buf);
}

static void test_sendrecv_rsend(int rank, int peer)
{
    enum { LEN = 4 << 20 };
    unsigned char *sbuf = malloc(LEN), *rbuf = malloc(LEN);
    MPI_Request req;

    fill(sbuf, LEN, 50 + rank);
    memset(rbuf, 0, LEN);
    MPI_Sendrecv(sbuf, LEN, MPI_BYTE, peer, 50, rbuf, LEN, MPI_BYTE, peer, 50,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    check(rbuf, LEN, 50 + peer, "sendrecv");

    /* Ready mode: legal only once the receive is posted, which the barrier
     * guarantees. */
    if (rank > peer) {
        MPI_Irecv(rbuf, 1000, MPI_BYTE, peer, 51, MPI_COMM_WORLD, &req);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank < peer) {
        MPI_Rsend(sbuf, 1000, MPI_BYTE, peer, 51, MPI_COMM_WORLD);
    } else {
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        check(rbuf, 1000, 50 + peer, "rsend");
    }
    free(sbuf);
    free(rbuf);
}

static void test_waitany_testsome(int rank, int peer)
{
    enum { N = 8 };
    int vals[N], idx[N], i, seen = 0, outcount, index;
    MPI_Request reqs[N];

    if (rank < peer) {
        for (i = N - 1; i >= 0; --i) { /* reverse order of the receives */
            vals[i] = 60 + i;
            MPI_Send(&vals[i], 1, MPI_INT, peer, 60 + i, MPI_COMM_WORLD);
        }
        return;
    }
    for (i = 0; i < N; ++i) {
        vals[i] = -1;
        MPI_Irecv(&vals[i], 1, MPI_INT, peer, 60 + i, MPI_COMM_WORLD, &reqs[i]);
    }
    for (i = 0; i < N / 2; ++i) {
        MPI_Waitany(N, reqs, &index, MPI_STATUS_IGNORE);
        CHECK(index >= 0 && vals[index] == 60 + index, "waitany %d: %d", index,
              (index >= 0) ? vals[index] : -1);
        CHECK(!(seen & (1 << index)), "waitany returned %d twice", index);
        seen |= 1 << index;
    }
    while (seen != (1 << N) - 1) {
        MPI_Testsome(N, reqs, &outcount, idx, MPI_STATUSES_IGNORE);
        CHECK(outcount != MPI_UNDEFINED, "testsome: no active request, seen 0x%x", seen);
        for (i = 0; i < outcount; ++i) {
            CHECK(vals[idx[i]] == 60 + idx[i], "testsome %d: %d", idx[i], vals[idx[i]]);
            CHECK(!(seen & (1 << idx[i])), "testsome returned %d twice", idx[i]);
            seen |= 1 << idx[i];
        }
    }
}

int main(int argc, char **argv)
{
    int rank, size, peer;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2 && size % 2 == 0, "needs an even number of ranks, has %d", size);
    mpi_report_libucp();
    peer = (rank + size / 2) % size;
    test_ssend(rank, peer);
    test_cancel(rank, peer);
    test_probes(rank, peer);
    test_order(rank, peer);
    test_sendrecv_rsend(rank, peer);
    test_waitany_testsome(rank, peer);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi_p2p_modes: %d ranks OK\n", size);
    }
    MPI_Finalize();
    return 0;
}
