/*
 * OpenSHMEM over spml ucx (Open MPI's oshrun), every value checked: puts
 * and gets (blocking, non-blocking with shmem_quiet, strided), atomics (add,
 * fetch-and-add, compare-and-swap), a distributed lock, barrier and
 * wait_until, a sum reduction, and the symmetric heap (shmem_malloc), which
 * Open MPI's sshmem ucx allocates with ucp_mem_map at a fixed address
 * (issue 30). PE 0 prints "shmem_basic: N PEs OK" when every check passed
 * on every PE; each PE prints the libucp it mapped.
 */
#include <shmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 1024

static long sdata[N], rdata[N];
static long counter, flag, lock_word, cas_word;
static long red_src, red_dst;
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long psync[SHMEM_REDUCE_SYNC_SIZE];
static int errors;

#define CHECK(_cond, ...)                                                    \
    do {                                                                     \
        if (!(_cond)) {                                                      \
            fprintf(stderr, "PE %d: %s:%d: %s: ", shmem_my_pe(), __FILE__,   \
                    __LINE__, #_cond);                                       \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
            ++errors;                                                        \
        }                                                                    \
    } while (0)

static long value(int pe, int i)
{
    return (long)pe * 1000003L + i * 7L + 1;
}

static void report_libucp(int me)
{
    char line[4096];
    FILE *f = fopen("/proc/self/maps", "r");
    const char *path = "none";
    char *p = NULL;

    while ((f != NULL) && (fgets(line, sizeof(line), f) != NULL)) {
        p = strchr(line, '/');
        if ((p != NULL) && (strstr(p, "/libucp.so") != NULL)) {
            p[strcspn(p, "\n")] = '\0';
            path = p;
            break;
        }
    }
    printf("PE %d libucp: %s\n", me, path);
    if (f != NULL) {
        fclose(f);
    }
}

int main(void)
{
    int me, npes, next, prev, i;
    long *heap, got[N], old, total;

    shmem_init();
    me   = shmem_my_pe();
    npes = shmem_n_pes();
    next = (me + 1) % npes;
    prev = (me + npes - 1) % npes;
    report_libucp(me);
    for (i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i) {
        psync[i] = SHMEM_SYNC_VALUE;
    }
    heap = shmem_malloc(N * sizeof(long) * 4);
    CHECK(heap != NULL, "shmem_malloc");
    for (i = 0; i < N; ++i) {
        sdata[i] = value(me, i);
    }
    shmem_barrier_all();

    /* blocking put into static and heap memory, then get back */
    shmem_long_put(rdata, sdata, N, next);
    shmem_long_put(heap, sdata, N, next);
    shmem_barrier_all();
    for (i = 0; i < N; ++i) {
        CHECK(rdata[i] == value(prev, i), "put: rdata[%d] = %ld", i, rdata[i]);
        CHECK(heap[i] == value(prev, i), "put to heap: [%d] = %ld", i, heap[i]);
    }
    shmem_long_get(got, heap, N, next);
    for (i = 0; i < N; ++i) {
        CHECK(got[i] == value(me, i), "get: [%d] = %ld", i, got[i]);
    }

    /* non-blocking puts completed by quiet; strided put */
    for (i = 0; i < N; ++i) {
        shmem_long_put_nbi(heap + N + i, &sdata[i], 1, next);
    }
    shmem_quiet();
    shmem_long_iput(heap + 2 * N, sdata, 2, 1, N / 2, next);
    shmem_barrier_all();
    for (i = 0; i < N; ++i) {
        CHECK(heap[N + i] == value(prev, i), "put_nbi: [%d] = %ld", i, heap[N + i]);
    }
    for (i = 0; i < N / 2; ++i) {
        CHECK(heap[2 * N + 2 * i] == value(prev, i), "iput: [%d] = %ld", i,
              heap[2 * N + 2 * i]);
    }

    /* atomics on PE 0 */
    shmem_long_atomic_add(&counter, me + 1, 0);
    shmem_barrier_all();
    if (me == 0) {
        CHECK(counter == (long)npes * (npes + 1) / 2, "add: %ld", counter);
    }
    shmem_barrier_all(); /* PE 0 has read it */
    old = shmem_long_atomic_fetch_add(&counter, 1, 0);
    CHECK((old >= (long)npes * (npes + 1) / 2) &&
          (old < (long)npes * (npes + 1) / 2 + npes), "fetch_add: %ld", old);
    shmem_barrier_all();
    old = shmem_long_atomic_compare_swap(&cas_word, 0, me + 1, 0);
    red_src = (old == 0);
    shmem_barrier_all();
    shmem_long_sum_to_all(&red_dst, &red_src, 1, 0, 0, npes, pwrk, psync);
    CHECK(red_dst == 1, "%ld PEs won the compare-and-swap", red_dst);

    /* the lock serialises a read-modify-write on PE 0 */
    shmem_barrier_all();
    for (i = 0; i < 10; ++i) {
        shmem_set_lock(&lock_word);
        total = shmem_long_g(&counter, 0);
        shmem_long_p(&counter, total + 1, 0);
        shmem_quiet();
        shmem_clear_lock(&lock_word);
    }
    shmem_barrier_all();
    if (me == 0) {
        CHECK(counter == (long)npes * (npes + 1) / 2 + npes + 10L * npes,
              "lock: counter %ld", counter);
    }

    /* point-to-point synchronisation */
    shmem_long_p(&flag, me + 1, next);
    shmem_long_wait_until(&flag, SHMEM_CMP_EQ, prev + 1);
    CHECK(flag == prev + 1, "wait_until: flag %ld", flag);

    shmem_barrier_all();
    shmem_free(heap);
    red_src = errors;
    shmem_barrier_all();
    shmem_long_sum_to_all(&red_dst, &red_src, 1, 0, 0, npes, pwrk, psync);
    if ((me == 0) && (red_dst == 0)) {
        printf("shmem_basic: %d PEs OK\n", npes);
    }
    fflush(stdout);
    shmem_finalize();
    return errors != 0;
}
