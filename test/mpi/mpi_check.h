/*
 * Shared by the MPI test programs: a failed check prints where and aborts
 * the job (a non-zero exit of mpirun), and each rank proves which libucp it
 * runs on.
 */
#ifndef MPI_CHECK_H_
#define MPI_CHECK_H_

#define _GNU_SOURCE
#include <mpi.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(_cond, ...)                                                    \
    do {                                                                     \
        if (!(_cond)) {                                                      \
            int _rank;                                                       \
            MPI_Comm_rank(MPI_COMM_WORLD, &_rank);                           \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", _rank,     \
                    __FILE__, __LINE__, #_cond);                             \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
            MPI_Abort(MPI_COMM_WORLD, 1);                                    \
        }                                                                    \
    } while (0)

/* Byte @a i of the pattern of (@a seed): what the receiver checks. */
static inline unsigned char mpi_pattern(int seed, size_t i)
{
    return (unsigned char)((i * 131u + (unsigned)seed * 7u + (i >> 8)) & 0xff);
}

/* Print the path of the libucp.so.0 mapped into this process (from
 * /proc/self/maps): the test script checks it is the build tree's. */
static inline void mpi_report_libucp(void)
{
    char line[4096], path[4096] = "none";
    FILE *f = fopen("/proc/self/maps", "r");
    int rank;

    while ((f != NULL) && (fgets(line, sizeof(line), f) != NULL)) {
        char *p = strchr(line, '/');
        if ((p != NULL) && (strstr(p, "/libucp.so") != NULL)) {
            p[strcspn(p, "\n")] = '\0';
            snprintf(path, sizeof(path), "%s", p);
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("rank %d libucp: %s\n", rank, path);
    fflush(stdout);
}

#endif
