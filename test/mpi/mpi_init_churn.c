/*
 * MPI_Init with heap trimming forced (issue: a memory event dispatched from
 * inside free() deadlocked in MPI_Init). With M_TRIM_THRESHOLD 0 nearly
 * every free() inside MPI_Init (our module scan, configuration parsing)
 * gives memory back through sbrk, which Open MPI's memory hooks report to
 * libucm from inside free(), with the arena lock held. After MPI_Init two
 * threads allocate and free blocks of many sizes (heap trims and munmap of
 * large blocks) during one-sided epochs. A run that hangs is killed by the
 * caller's timeout.
 *
 * The threads start only after MPI_Init: Open MPI patches munmap and sbrk
 * in place during MPI_Init, and a thread executing them meanwhile crashes
 * over any UCX (seen with Debian's UCX 1.13 too: 3 of 4 runs).
 *
 * usage: mpi_init_churn
 */
#include "mpi_check.h"

#include <malloc.h>
#include <pthread.h>
#include <stdint.h>

static volatile int stop;

static void *churn(void *arg)
{
    uintptr_t seed = (uintptr_t)arg;
    void *blocks[64] = {NULL};
    unsigned i = 0;

    while (!stop) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        free(blocks[i % 64]);
        /* 16 B .. 1 MiB: small bins, large bins and mmap()ed blocks */
        blocks[i % 64] = malloc(16u << ((seed >> 33) % 17));
        ++i;
    }
    for (i = 0; i < 64; ++i) {
        free(blocks[i]);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t threads[2];
    int rank, size, i, peer, *base, *got;
    MPI_Win win;

    mallopt(M_TRIM_THRESHOLD, 0);
    mallopt(M_TOP_PAD, 0);
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);

    MPI_Init(&argc, &argv);
    for (i = 0; i < 2; ++i) {
        pthread_create(&threads[i], NULL, churn, (void*)(uintptr_t)(i + 1));
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mpi_report_libucp();

    MPI_Win_allocate(1024 * sizeof(int), sizeof(int), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &base, &win);
    peer = (rank + 1) % size;
    got  = malloc(1024 * sizeof(int));
    for (i = 0; i < 20; ++i) {
        MPI_Win_fence(0, win);
        base[i] = rank * 1000 + i;
        MPI_Win_fence(0, win);
        MPI_Get(&got[i], 1, MPI_INT, peer, i, 1, MPI_INT, win);
        MPI_Win_fence(0, win);
        CHECK(got[i] == peer * 1000 + i, "got %d", got[i]);
        free(malloc(1u << (10 + i % 10))); /* trims between epochs */
    }
    free(got);
    MPI_Win_free(&win);

    stop = 1;
    for (i = 0; i < 2; ++i) {
        pthread_join(threads[i], NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi_init_churn: %d ranks OK\n", size);
    }
    MPI_Finalize();
    return 0;
}
