#!/bin/bash
# A rank that dies during an Open MPI job over our libraries ends the job
# with an error, never a hang (issue 22): test/mpi/mpi_rank_death kills its
# last rank (SIGKILL, or exit without MPI_Finalize) while the others wait in
# MPI_Recv from it, send rendezvous messages to it, or loop on
# MPI_Allreduce, with 2 and 4 ranks and the default transports (no UCX_TLS).
# For each run: mpirun exits non-zero within DEADLINE seconds (default 60);
# the cause it reports is the victim's (signal 9, or an exit without
# finalize; for a kill also a survivor's MPI error about the dead peer,
# which may reach mpirun first), not a crash of a survivor (no SIGSEGV/SIGABRT/SIGBUS, no
# sanitizer or ucs assertion report); no survivor claims to have finished;
# no rank is left running afterwards. Prints the seconds each run took.
# See docs/reliability.md.
#
# usage (as contrib/run-tests.sh runs it): SRC_DIR=... BUILD_DIR=... openmpi_rank_death.sh
set -uo pipefail
src=${SRC_DIR:?SRC_DIR not set}
build=$(realpath "${BUILD_DIR:?BUILD_DIR not set}")
deadline=${DEADLINE:-60}

command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
    { echo "SKIP: Open MPI (openmpi-bin, libopenmpi-dev) not installed"; exit 77; }
. "$src/contrib/tests/lib/ompi.sh"
ompi_skip_instrumented "$build"
if grep -qE -- '-fsanitize=thread' "$build/Makefile" 2>/dev/null; then
    echo "SKIP: thread-sanitizer tree: Debian's Open MPI plugins cannot load it; the in-tree build (contrib/intree-check.sh) runs this test"
    exit 77
fi

work=$(mktemp -d)
trap 'pkill -KILL -f "$work/mpi_rank_death" 2>/dev/null; [ -n "${KEEP:-}" ] && cp -r "$work" "$KEEP"; rm -rf "$work"' EXIT
mpicc -O1 -Wall -Werror -o "$work/mpi_rank_death" "$src/test/mpi/mpi_rank_death.c" ||
    { echo "FAIL: mpicc mpi_rank_death.c"; exit 1; }
libs=$(ompi_our_libs "$build")

# rank_crashed OUT: whether a rank (not the victim's SIGKILL) crashed or
# reported a failed assertion. mpirun itself sometimes crashes in its own
# teardown after the job was aborted (PMIx_server_finalize, Open MPI 4.1's
# bug: it does so with pml ob1 too); that is noted, not counted.
rank_crashed() {
    local out=$1 pids pid
    grep -qE "exited on signal (4|6|7|8|11)|Assertion|ERROR: .*Sanitizer|runtime error" "$out" &&
        return 0
    pids=$(sed -n 's/^rank [0-9]* pid \([0-9]*\)$/\1/p' "$out")
    for pid in $pids; do
        grep -q "^\[[^]:]*:$pid\] \*\*\* Process received signal" "$out" && return 0
    done
    if grep -q "PMIx_server_finalize" "$out"; then
        echo "note: $name: mpirun crashed in its own teardown (PMIx_server_finalize), not a rank"
    fi
    return 1
}

failed=0
for np in 2 4; do
    for mode in recv send collective; do
        for how in kill exit; do
            name="$mode/$how with $np ranks"
            out="$work/$mode.$how.$np.out"
            start=$(date +%s%N)
            LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            timeout -k 5 "$deadline" mpirun "${ompi_root_args[@]}" --oversubscribe \
                -np $np --mca pml ucx --mca btl self \
                --mca pml_ucx_tls any --mca pml_ucx_devices any \
                -x LD_LIBRARY_PATH "$work/mpi_rank_death" $mode $how >"$out" 2>&1
            rc=$?
            took_ms=$((($(date +%s%N) - start) / 1000000))
            sleep 0.5
            left=$(pgrep -c -f "$work/mpi_rank_death" || true)
            # mpirun exits with the status of the first rank that failed: 137
            # for a SIGKILLed one, like timeout(1) for a hang; so time it.
            if [ $rc -eq 124 ] || [ $took_ms -ge $((deadline * 1000)) ]; then
                echo "FAIL: $name: mpirun still running after $deadline s (hang)"
                tail -20 "$out"; failed=1
            elif [ $rc -eq 0 ]; then
                echo "FAIL: $name: mpirun exited 0 although a rank died"
                tail -20 "$out"; failed=1
            elif ! grep -q "mpi_rank_death: $np ranks connected" "$out"; then
                echo "FAIL: $name: the job failed before the victim died (rc $rc)"
                tail -20 "$out"; failed=1
            elif [ "$(grep -c "libucp: $build/src/ucp/.libs/libucp.so" "$out")" -ne $np ]; then
                echo "FAIL: $name: not every rank ran on $build's libucp"
                grep "libucp:" "$out"; failed=1
            elif rank_crashed "$out"; then
                echo "FAIL: $name: a survivor crashed"
                grep -E "signal|Segm|Assert|Sanitizer|runtime error" "$out" | head; failed=1
            elif [ "$how" = kill ] &&
                 ! grep -q "process rank $((np - 1)) .* exited on signal 9" "$out" &&
                 ! grep -q "An error occurred in MPI_" "$out"; then
                # the victim's SIGKILL, or a survivor that learnt of it first
                # and ended the job through MPI_ERRORS_ARE_FATAL
                echo "FAIL: $name: mpirun did not name the victim's SIGKILL"
                tail -20 "$out"; failed=1
            elif [ "$how" = exit ] &&
                 ! tr '\n' ' ' <"$out" | grep -q "process rank $((np - 1)) .* exiting improperly"; then
                echo "FAIL: $name: mpirun did not name the exit without finalize"
                tail -20 "$out"; failed=1
            elif grep -q "finalized" "$out" && [ "$mode" != send ]; then
                echo "FAIL: $name: a rank blocked on the dead one returned"
                grep "finalized" "$out"; failed=1
            elif [ "$left" -ne 0 ]; then
                echo "FAIL: $name: $left ranks still running after mpirun ended"
                failed=1
            else
                printf 'ok: %s: mpirun exit %d after %d.%03d s\n' "$name" $rc \
                    $((took_ms / 1000)) $((took_ms % 1000))
            fi
            pkill -KILL -f "$work/mpi_rank_death" 2>/dev/null
        done
    done
done
exit $failed
