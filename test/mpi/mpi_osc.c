/*
 * One-sided communication over osc/ucx: MPI_Put, MPI_Get and
 * MPI_Accumulate with fence epochs, lock/unlock (passive target) with
 * MPI_Fetch_and_op and MPI_Compare_and_swap counters, lock_all with gets
 * and accumulates closed by MPI_Win_flush_all, post/start/complete/wait, a
 * dynamic window (attach, put, detach), and bidirectional aggregate puts
 * closed by MPI_Win_flush. Every value is checked.
 *
 * usage: mpi_osc [buffer kind] [--one-gpu] [--driver-api]   (mpi_buf.h)
 * With device buffers the windows are device memory (MPI_Win_create) and
 * put/get move device memory on both sides; the operands of accumulate and
 * of the atomics stay on the host, because osc/ucx computes accumulates
 * with the CPU (Open MPI as distributions build it is not CUDA-aware).
 */
#include "mpi_buf.h"

#include <stdint.h>

#define WIN_INTS 4096

/* Host copy of @a n ints of a window (any buffer kind). */
static int *win_read(const int *base, int n)
{
    int *host = malloc(n * sizeof(int));

    mpi_buf_copy(host, base, n * sizeof(int));
    return host;
}

static void test_fence(MPI_Win win, int *base, int rank, int size)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int *buf  = mpi_buf_alloc(WIN_INTS * sizeof(int));
    int *host = malloc(WIN_INTS * sizeof(int)), *view;
    int i;

    for (i = 0; i < WIN_INTS; ++i) {
        host[i] = rank * 100000 + i;
    }
    mpi_buf_set(base, 0xff, WIN_INTS * sizeof(int)); /* -1 everywhere */
    mpi_buf_copy(buf, host, WIN_INTS * sizeof(int));
    MPI_Win_fence(0, win);
    /* each rank writes its pattern into the next rank's window */
    MPI_Put(buf, WIN_INTS, MPI_INT, next, 0, WIN_INTS, MPI_INT, win);
    MPI_Win_fence(0, win);
    view = win_read(base, WIN_INTS);
    for (i = 0; i < WIN_INTS; ++i) {
        CHECK(view[i] == prev * 100000 + i, "put: base[%d] = %d", i, view[i]);
    }
    free(view);
    /* read the previous rank's window back */
    mpi_buf_set(buf, 0, WIN_INTS * sizeof(int));
    MPI_Get(buf, WIN_INTS, MPI_INT, prev, 0, WIN_INTS, MPI_INT, win);
    MPI_Win_fence(0, win);
    view = win_read(buf, WIN_INTS);
    for (i = 0; i < WIN_INTS; ++i) {
        int expect = ((prev + size - 1) % size) * 100000 + i;
        CHECK(view[i] == expect, "get: buf[%d] = %d, expected %d", i, view[i],
              expect);
    }
    free(view);
    /* everybody adds rank+1 to element i of rank 0's window */
    for (i = 0; i < WIN_INTS; ++i) {
        host[i] = rank + 1;
    }
    mpi_buf_set(base, 0, WIN_INTS * sizeof(int));
    MPI_Win_fence(0, win);
    MPI_Accumulate(host, 64, MPI_INT, 0, 0, 64, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    if (rank == 0) {
        view = win_read(base, 64);
        for (i = 0; i < 64; ++i) {
            CHECK(view[i] == size * (size + 1) / 2, "accumulate: %d", view[i]);
        }
        free(view);
    }
    free(host);
    mpi_buf_free(buf);
}

static void test_lock(MPI_Win win, int64_t *counter, int rank, int size)
{
    const int rounds = 50;
    int64_t one = 1, old, expect, cmp;
    int i;

    old = 0;
    mpi_buf_copy(counter, &old, sizeof(old));
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < rounds; ++i) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 0, MPI_SUM, win);
        MPI_Win_unlock(0, win);
        CHECK((old >= 0) && (old < (int64_t)rounds * size), "fetch_and_op %ld",
              (long)old);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Get(&old, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, win);
    MPI_Win_unlock(0, win);
    CHECK(old == (int64_t)rounds * size, "counter %ld, expected %ld", (long)old,
          (long)rounds * size);
    MPI_Barrier(MPI_COMM_WORLD);
    /* compare-and-swap: exactly one rank wins each round */
    expect = (int64_t)rounds * size;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    cmp = expect;
    {
        int64_t mine = 1000 + rank;
        MPI_Compare_and_swap(&mine, &cmp, &old, MPI_INT64_T, 0, 0, win);
    }
    MPI_Win_unlock(0, win);
    {
        int won = (old == expect), total;
        MPI_Allreduce(&won, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(total == 1, "%d ranks won the compare-and-swap", total);
    }
}

/*
 * Bidirectional aggregate puts (IMB-RMA Bidir_put, aggregate mode): every
 * rank puts AGG_PUTS small pieces into the next rank's window under a
 * shared lock, then one MPI_Win_flush, for sizes 1 B .. 4 KiB; each rank
 * checks what the previous one put. Many operations outstanding towards one
 * peer in both directions, then a flush, is Open MPI's normal pattern (a
 * flush that failed with "in progress" aborted IMB here, issue 30).
 */
#define AGG_PUTS 1000
#define AGG_MAX  4096

static void test_aggregate_puts(MPI_Win win, unsigned char *base, int rank, int size)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, i;
    unsigned char *src = malloc((size_t)AGG_PUTS * AGG_MAX), *got;
    size_t len, j;

    CHECK(src != NULL, "no memory");
    for (len = 1; len <= AGG_MAX; len *= 4) {
        for (j = 0; j < AGG_PUTS * len; ++j) {
            src[j] = (unsigned char)mpi_pattern(rank + (int)len, j);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win) == MPI_SUCCESS, "lock");
        for (i = 0; i < AGG_PUTS; ++i) {
            CHECK(MPI_Put(src + i * len, (int)len, MPI_BYTE, next, i * len, (int)len,
                          MPI_BYTE, win) == MPI_SUCCESS, "put %d of %zu B", i, len);
        }
        CHECK(MPI_Win_flush(next, win) == MPI_SUCCESS,
              "MPI_Win_flush after %d puts of %zu B", AGG_PUTS, len);
        CHECK(MPI_Win_unlock(next, win) == MPI_SUCCESS, "unlock");
        MPI_Barrier(MPI_COMM_WORLD);
        got = malloc(AGG_PUTS * len);
        mpi_buf_copy(got, base, AGG_PUTS * len);
        for (j = 0; j < AGG_PUTS * len; ++j) {
            CHECK(got[j] == (unsigned char)mpi_pattern(prev + (int)len, j),
                  "%zu B puts: byte %zu is 0x%02x", len, j, got[j]);
        }
        free(got);
    }
    free(src);
}

/*
 * Passive target on every rank at once: lock_all, gets from every other
 * rank and accumulates into rank 0, flush_all, unlock_all.
 */
static void test_lock_all(MPI_Win win, int *base, int rank, int size)
{
    int *host = malloc(WIN_INTS * sizeof(int)), *got = malloc(size * sizeof(int));
    int i, r, one = 1;

    for (i = 0; i < WIN_INTS; ++i) {
        host[i] = rank * 100000 + i;
    }
    mpi_buf_copy(base, host, WIN_INTS * sizeof(int));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_lock_all(0, win) == MPI_SUCCESS, "lock_all");
    for (r = 0; r < size; ++r) {
        CHECK(MPI_Get(&got[r], 1, MPI_INT, r, rank, 1, MPI_INT, win) == MPI_SUCCESS,
              "get from %d", r);
    }
    CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS, "flush_all after gets");
    for (r = 0; r < size; ++r) {
        CHECK(got[r] == r * 100000 + rank, "lock_all get from %d: %d", r, got[r]);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* every get is done before the adds */
    CHECK(MPI_Accumulate(&one, 1, MPI_INT, 0, WIN_INTS - 1, 1, MPI_INT, MPI_SUM,
                         win) == MPI_SUCCESS, "accumulate");
    CHECK(MPI_Win_flush_all(win) == MPI_SUCCESS, "flush_all after accumulate");
    CHECK(MPI_Win_unlock_all(win) == MPI_SUCCESS, "unlock_all");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        mpi_buf_copy(&i, base + WIN_INTS - 1, sizeof(int));
        CHECK(i == WIN_INTS - 1 + size, "accumulate under lock_all: %d", i);
    }
    free(got);
    free(host);
}

/*
 * Generalised active target (post/start/complete/wait): every rank exposes
 * its window to the previous one and puts into the next one.
 */
static void test_pscw(MPI_Win win, int *base, int rank, int size)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, i;
    int *host = malloc(WIN_INTS * sizeof(int));
    MPI_Group world, to, from;

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &next, &to);
    MPI_Group_incl(world, 1, &prev, &from);
    for (i = 0; i < WIN_INTS; ++i) {
        host[i] = rank * 7 + i;
    }
    mpi_buf_set(base, 0, WIN_INTS * sizeof(int));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_post(from, 0, win) == MPI_SUCCESS, "post");
    CHECK(MPI_Win_start(to, 0, win) == MPI_SUCCESS, "start");
    CHECK(MPI_Put(host, WIN_INTS, MPI_INT, next, 0, WIN_INTS, MPI_INT, win) ==
          MPI_SUCCESS, "put");
    CHECK(MPI_Win_complete(win) == MPI_SUCCESS, "complete");
    CHECK(MPI_Win_wait(win) == MPI_SUCCESS, "wait");
    mpi_buf_copy(host, base, WIN_INTS * sizeof(int));
    for (i = 0; i < WIN_INTS; ++i) {
        CHECK(host[i] == prev * 7 + i, "pscw: base[%d] = %d", i, host[i]);
    }
    MPI_Group_free(&to);
    MPI_Group_free(&from);
    MPI_Group_free(&world);
    free(host);
}

/*
 * A dynamic window: each rank attaches a buffer of its own, publishes its
 * address, and the previous rank puts into it under a lock.
 */
static void test_dynamic(int rank, int size)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, i;
    int *mem = malloc(WIN_INTS * sizeof(int)), *host = malloc(WIN_INTS * sizeof(int));
    MPI_Aint mine, theirs;
    MPI_Win win;

    memset(mem, 0, WIN_INTS * sizeof(int));
    CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win) == MPI_SUCCESS,
          "create_dynamic");
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    CHECK(MPI_Win_attach(win, mem, WIN_INTS * sizeof(int)) == MPI_SUCCESS, "attach");
    MPI_Get_address(mem, &mine);
    /* my address goes to the rank that writes to me */
    MPI_Sendrecv(&mine, 1, MPI_AINT, prev, 9, &theirs, 1, MPI_AINT, next, 9,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (i = 0; i < WIN_INTS; ++i) {
        host[i] = rank * 13 + i;
    }
    CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win) == MPI_SUCCESS, "lock");
    CHECK(MPI_Put(host, WIN_INTS, MPI_INT, next, theirs, WIN_INTS, MPI_INT, win) ==
          MPI_SUCCESS, "put");
    CHECK(MPI_Win_unlock(next, win) == MPI_SUCCESS, "unlock");
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < WIN_INTS; ++i) {
        CHECK(mem[i] == prev * 13 + i, "dynamic: mem[%d] = %d", i, mem[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Win_detach(win, mem) == MPI_SUCCESS, "detach");
    MPI_Win_free(&win);
    free(host);
    free(mem);
}

/* A window of @a length bytes: allocated by MPI for host buffers, device
 * memory of the chosen kind exposed with MPI_Win_create otherwise. */
static void *win_make(size_t length, int disp_unit, MPI_Win *win)
{
    void *base;

    if (!mpi_buf_is_device()) {
        MPI_Win_allocate(length, disp_unit, MPI_INFO_NULL, MPI_COMM_WORLD,
                         &base, win);
        return base;
    }
    base = mpi_buf_alloc(length);
    MPI_Win_create(base, length, disp_unit, MPI_INFO_NULL, MPI_COMM_WORLD, win);
    return base;
}

static void win_free(void *base, MPI_Win *win)
{
    MPI_Win_free(win);
    if (mpi_buf_is_device()) {
        mpi_buf_free(base);
    }
}

int main(int argc, char **argv)
{
    int rank, size, *base;
    int64_t *counter;
    MPI_Win win, cwin;

    mpi_buf_setup(&argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mpi_report_libucp();
    mpi_buf_report("mpi_osc");

    base = win_make(WIN_INTS * sizeof(int), sizeof(int), &win);
    test_fence(win, base, rank, size);
    win_free(base, &win);

    base = win_make(WIN_INTS * sizeof(int), sizeof(int), &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    test_lock_all(win, base, rank, size);
    test_pscw(win, base, rank, size);
    win_free(base, &win);
    test_dynamic(rank, size);

    base = win_make((size_t)AGG_PUTS * AGG_MAX, 1, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    test_aggregate_puts(win, (unsigned char*)base, rank, size);
    win_free(base, &win);

    counter = win_make(sizeof(int64_t), sizeof(int64_t), &cwin);
    test_lock(cwin, counter, rank, size);
    win_free(counter, &cwin);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi_osc: %d ranks OK (%s)\n", size,
               mpi_buf_kind_names[mpi_buf.kind]);
    }
    MPI_Finalize();
    return 0;
}
