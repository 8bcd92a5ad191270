/*
 * A rank dies in the middle of a job (issue 22): the last rank, the victim,
 * kills itself with SIGKILL or exits without MPI_Finalize while the others
 * are blocked on it. Whatever our library does when a peer vanishes under
 * the other ranks -- a receive that waits for it, rendezvous sends it took
 * half of, a collective -- must let mpirun notice the death and end the job
 * with an error: no survivor may hang in our progress, crash on the dead
 * endpoint or return success. contrib/tests/openmpi_rank_death.sh checks
 * the exit status, the time, the cause mpirun names and that no rank
 * outlives the job.
 *
 * usage: mpi_rank_death recv|send|collective [kill|exit]
 *   recv        the survivors wait in MPI_Recv from the victim
 *   send        rank 0 sends 1 MiB messages (rendezvous) to the victim,
 *               which dies after receiving a few
 *   collective  all ranks loop on MPI_Allreduce; the victim dies after 100
 */
#include "mpi_check.h"

#include <signal.h>
#include <unistd.h>

#define DEATH_MSG (1u << 20)

static void death_die(const char *how)
{
    fflush(stdout);
    fflush(stderr);
    if (strcmp(how, "exit") == 0) {
        exit(0); /* without MPI_Finalize: a program that just stops */
    }
    raise(SIGKILL);
}

int main(int argc, char **argv)
{
    const char *mode = (argc > 1) ? argv[1] : "recv";
    const char *how  = (argc > 2) ? argv[2] : "kill";
    int rank, size, victim, i;
    char *buf;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mpi_report_libucp();
    printf("rank %d pid %d\n", rank, (int)getpid());
    fflush(stdout);
    CHECK(size >= 2, "needs 2 ranks or more, has %d", size);
    victim = size - 1;
    buf    = calloc(1, DEATH_MSG);
    CHECK(buf != NULL, "out of memory");

    /* every pair connected before anyone dies */
    MPI_Allreduce(MPI_IN_PLACE, &i, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi_rank_death: %d ranks connected, rank %d dies (%s, %s)\n", size,
               victim, mode, how);
        fflush(stdout);
    }

    if (strcmp(mode, "recv") == 0) {
        if (rank == victim) {
            usleep(200 * 1000); /* the others are in MPI_Recv by now */
            death_die(how);
        }
        MPI_Recv(buf, DEATH_MSG, MPI_CHAR, victim, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (strcmp(mode, "send") == 0) {
        for (i = 0;; ++i) {
            if (rank == 0) {
                MPI_Send(buf, DEATH_MSG, MPI_CHAR, victim, 2, MPI_COMM_WORLD);
            } else if (rank == victim) {
                if (i == 5) {
                    death_die(how);
                }
                MPI_Recv(buf, DEATH_MSG, MPI_CHAR, 0, 2, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            } else {
                break; /* the bystanders finalize-wait on the others */
            }
        }
    } else if (strcmp(mode, "collective") == 0) {
        for (i = 0;; ++i) {
            if ((rank == victim) && (i == 100)) {
                death_die(how);
            }
            MPI_Allreduce(MPI_IN_PLACE, buf, 1024, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        }
    } else {
        CHECK(0, "unknown mode %s", mode);
    }

    /* only a rank that has nothing to do with the victim gets here */
    MPI_Finalize();
    printf("mpi_rank_death: rank %d finalized\n", rank);
    return 0;
}
