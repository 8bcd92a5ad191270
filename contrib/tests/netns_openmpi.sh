#!/bin/bash
# Open MPI jobs across emulated hosts (contrib/netns-hosts.sh): h1 and h2
# (the ranks) and h0 (mpirun), each with its own network, hostname, IPC and
# /dev/shm, joined by a bridge, addresses of 192.0.2.0/24 (a documentation
# range that exists only inside them). mpirun starts its daemons through a
# launch agent that enters the host's namespaces (no ssh). pml ucx and osc ucx over our libraries; the test programs
# (point-to-point and its modes, collectives, one-sided) check their data.
# Each rank reports the namespace it ran in, and the job must span both
# hosts. Skipped (77) without root, iproute2, namespaces or Open MPI.
# Cleans up on any exit. See docs/multi-node.md.
set -uo pipefail
src=${SRC_DIR:?SRC_DIR not set}
build=$(realpath "${BUILD_DIR:?BUILD_DIR not set}")
. "$src/contrib/tests/lib/ompi.sh"
ompi_require_netns
ompi_skip_instrumented "$build"

. "$src/contrib/netns-hosts.sh"
nh_init u$$
work=$nh_dir
if ! nh_mpi_setup 2>"$work/err"; then
    echo "SKIPPED: cannot create emulated hosts: $(cat "$work/err")"
    exit 77
fi
hosts=("${nh_mpi_hosts[@]}")

for prog in mpi_p2p mpi_p2p_modes mpi_coll mpi_osc mpi_blocking; do
    mpicc -O1 -Wall -Werror -o "$work/$prog" "$src/test/mpi/$prog.c" ||
        { echo "FAIL: mpicc $prog.c"; exit 1; }
done
libs=$(ompi_our_libs "$build")
failed=0
# run PROG HOSTS NP: one job from h0 over the hosts; data checked by PROG.
run() {
    local prog=$1 spec=$2 np=$3 out="$work/$1.$3.out"
    # Each host has its own hostname: with one shared name, ORTE's daemons
    # wrote the same session-directory topology file in /tmp and now and then
    # crashed in hwloc, which showed as "daemons could not reach mpirun".
    launch "$prog" "$spec" "$np" "$out"
    check "$prog" "$spec" "$np" "$out" $?
}

launch() { # PROG HOSTS NP OUT
    local prog=$1 spec=$2 np=$3 out=$4
    LD_LIBRARY_PATH="$libs" timeout -k 5 120 $(nh_enter h0) \
        mpirun "${ompi_root_args[@]}" "${nh_mpirun_args[@]}" --host "$spec" -np "$np" \
        -x LD_LIBRARY_PATH -x UCX_LOG_LEVEL=warn \
        /bin/sh -c "echo netns \$(readlink /proc/self/ns/net); exec $work/$prog" \
        >"$out" 2>&1
}

check() { # PROG HOSTS NP OUT RC
    local prog=$1 spec=$2 np=$3 out=$4 rc=$5 nets
    nets=$(sed -n 's/^netns //p' "$out" | sort -u | wc -l)
    if [ $rc -ne 0 ]; then
        echo "FAIL: $prog, $np ranks over $spec: mpirun exit $rc"
        tail -20 "$out"
        failed=1
    elif [ "$nets" -ne 2 ]; then
        echo "FAIL: $prog, $np ranks over $spec: the ranks ran in $nets namespaces, not 2"
        failed=1
    elif [ "$(grep -c "libucp: $build/src/ucp/.libs/libucp.so" "$out")" -ne "$np" ]; then
        echo "FAIL: $prog, $np ranks over $spec: not every rank loaded our libucp"
        grep "libucp:" "$out"
        failed=1
    elif ! grep -q "^$prog: $np ranks OK" "$out"; then
        echo "FAIL: $prog, $np ranks over $spec did not report OK"
        tail -20 "$out"
        failed=1
    else
        echo "PASS $prog, $np ranks over 2 emulated hosts"
    fi
}
# ONLY=PROG runs one program (REPEAT times) when chasing a failure.
for ((r = 0; r < ${REPEAT:-1}; ++r)); do
    for prog in mpi_p2p mpi_p2p_modes mpi_coll mpi_osc; do
        [ -n "${ONLY:-}" ] && [ "$ONLY" != $prog ] && continue
        run $prog "${hosts[1]},${hosts[2]}" 2
        run $prog "${hosts[1]}:2,${hosts[2]}:2" 4
    done
    if [ -z "${ONLY:-}" ] || [ "$ONLY" = mpi_blocking ]; then
        run mpi_blocking "${hosts[1]},${hosts[2]}" 2 # a pair's benchmark, to 64 MiB
    fi
done
exit $failed
