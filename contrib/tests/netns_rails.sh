#!/bin/bash
# Rendezvous reads over two interfaces (UCX_MAX_RNDV_RAILS) between emulated
# hosts (contrib/netns-hosts.sh): h1 and h2 run the ranks, each with eth0 on
# 192.0.2.0/24 (also mpirun's network) and eth1 on 198.51.100.0/24, which
# only our libraries use. Open MPI jobs over pml ucx check their data:
#  - default settings: the data of large messages crosses both interfaces
#    (eth1 sends at least a quarter of what eth0 sends);
#  - UCX_MAX_RNDV_RAILS=1: eth1 carries (almost) nothing;
#  - eth1 of the reading host set down while 4 MiB messages flow: the job
#    still ends with its data checked, the reads falling back to messages
#    over eth0 once the rail is found dead, within the tcp stall bound.
# Skipped (77) without root, iproute2, namespaces or Open MPI.
set -uo pipefail
src=${SRC_DIR:?SRC_DIR not set}
build=$(realpath "${BUILD_DIR:?BUILD_DIR not set}")
. "$src/contrib/tests/lib/ompi.sh"
ompi_require_netns
ompi_skip_instrumented "$build"

. "$src/contrib/netns-hosts.sh"
nh_init ur$$
work=$nh_dir
if ! { nh_mpi_setup && nh_net b 198.51.100 - && nh_attach h1 b eth1 1 &&
       nh_attach h2 b eth1 2; } 2>"$work/err"; then
    echo "SKIPPED: cannot create emulated hosts: $(cat "$work/err")"
    exit 77
fi
hosts="${nh_mpi_hosts[1]},${nh_mpi_hosts[2]}"
for prog in mpi_p2p mpi_blocking; do
    mpicc -O1 -Wall -Werror -o "$work/$prog" "$src/test/mpi/$prog.c" ||
        { echo "FAIL: mpicc $prog.c"; exit 1; }
done
libs=$(ompi_our_libs "$build")
failed=0

# job OUT SECS ENV... -- PROG ARGS...: one 2-rank job over h1 and h2.
job() {
    local out=$1 secs=$2 envs=()
    shift 2
    while [ "$1" != -- ]; do envs+=(-x "$1"); shift; done
    shift
    LD_LIBRARY_PATH="$libs" timeout -k 5 "$secs" $(nh_enter h0) \
        mpirun "${ompi_root_args[@]}" "${nh_mpirun_args[@]}" --host "$hosts" -np 2 \
        -x LD_LIBRARY_PATH -x UCX_LOG_LEVEL=warn "${envs[@]}" "$@" >"$out" 2>&1
}

tx() { echo $(($(nh_tx_bytes h1 "$1") + $(nh_tx_bytes h2 "$1"))); }

# traffic NAME ENV...: mpi_blocking (20 messages of each size to 4 MiB,
# the last of each checked), then mpi_p2p (ping-pong with data checks); sets
# d0 and d1, the bytes eth0 and eth1 of both hosts sent during the first.
traffic() {
    local name=$1 e0 e1 rc prog
    shift
    e0=$(tx eth0) e1=$(tx eth1)
    job "$work/$name.out" 120 "$@" -- "$work/mpi_blocking" -m 4194304 -n 20 -r 1
    rc=$?
    d0=$(($(tx eth0) - e0)) d1=$(($(tx eth1) - e1))
    prog=mpi_blocking
    if [ $rc -eq 0 ] && grep -q "^mpi_blocking: 2 ranks OK" "$work/$name.out"; then
        prog=mpi_p2p
        job "$work/$name.p2p.out" 120 "$@" -- "$work/mpi_p2p"
        rc=$?
    fi
    if [ $rc -ne 0 ] || ! grep -q "^$prog: 2 ranks OK" "$work/$name.out" "$work/$name.p2p.out"; then
        echo "FAIL: $name: $prog exit $rc"
        tail -20 "$work/$name.out" "$work/$name.p2p.out" 2>/dev/null
        failed=1
        return 1
    fi
    echo "$name: eth0 sent $d0 B, eth1 $d1 B"
}

if traffic two_rails; then
    if [ $((d1 * 4)) -ge "$d0" ] && [ "$d1" -ge $((16 << 20)) ]; then
        echo "PASS mpi_blocking and mpi_p2p over two rails: data checked, both interfaces carried it"
    else
        echo "FAIL: two rails: eth1 carried too little of the data"
        failed=1
    fi
fi
if traffic one_rail UCX_MAX_RNDV_RAILS=1; then
    if [ "$d1" -lt $((1 << 20)) ]; then
        echo "PASS mpi_blocking and mpi_p2p with UCX_MAX_RNDV_RAILS=1: eth1 unused"
    else
        echo "FAIL: UCX_MAX_RNDV_RAILS=1, yet eth1 carried $d1 B"
        failed=1
    fi
fi

# A rail dies mid-transfer: 4 MiB messages for a while, eth1 of h2 (rank 1,
# the reader) set down a second in.
t0=$(date +%s)
job "$work/rail_down.out" 150 -- "$work/mpi_blocking" -m 4194304 -n 300 -r 1 &
pid=$!
sleep 3
nh_link h2 eth1 down
wait $pid
rc=$? elapsed=$(($(date +%s) - t0))
if [ $rc -eq 0 ] && grep -q "^mpi_blocking: 2 ranks OK" "$work/rail_down.out" &&
   grep -q "reading a peer's host memory failed" "$work/rail_down.out"; then
    echo "PASS a rail set down mid-transfer: the read failed over to messages," \
         "the job ended, data checked, in ${elapsed} s"
    grep "reading a peer's host memory failed" "$work/rail_down.out" | head -1
else
    echo "FAIL: a rail set down mid-transfer: exit $rc after ${elapsed} s"
    tail -20 "$work/rail_down.out"
    failed=1
fi
exit $failed
