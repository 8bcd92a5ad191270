#!/bin/bash
# GPU memory between two emulated hosts (contrib/netns-hosts.sh) on one GPU
# machine: what two nodes without RDMA do, tcp between them and the GPU
# data staged through host memory on both sides (docs/multi-node.md).
#   1. Open MPI (pml ucx over our libraries) runs test/mpi/mpi_p2p (data
#      checked) and test/mpi/mpi_blocking (bandwidth to 64 MiB, last message
#      checked) with one rank per host, for each buffer kind;
#   2. ucx_perftest client/server across the hosts, tag_bw (and tag_bibw, both directions at once) at 1, 4 and 64 MiB
#      for host memory and each kind, with the default settings and with
#      $CONTRAST (default UCX_RNDV_PIPELINE_HOST_GET=n: data messages
#      through host fragments instead of reads of them), in one run; and
#      the same pairs inside one host (shared memory, cuda_ipc) for contrast.
# Each host's daemon would bind its rank to core 0 (both ranks on one core):
# ranks are unbound and pinned by rank number instead (CPUs 2 and 4), and
# `--mca plm rsh` overrides an environment that sets another launcher
# (the GPU machine's sets OMPI_MCA_plm=isolated).
# Both ranks use GPU 0 (the hosts share the machine's GPUs); the library
# must still treat them as two hosts: no cuda_ipc, no shared memory.
# Results in $OUT/netns-gpu/ (summary.md and every log).
#
# usage: contrib/netns-gpu.sh BUILD_DIR
# environment: OUT (.), KINDS (host cuda cuda-async cuda-pool cuda-vmm),
#   PERF_KINDS (host cuda cuda-async cuda-pool cuda-vmm-noipc cuda-vmm),
#   CUDA_DIR (/usr/local/cuda), TIME_BUDGET (seconds, 300),
#   CONTRAST (UCX_RNDV_PIPELINE_HOST_GET=n)
# Needs root, iproute2 (`ip`; a carried binary on PATH will do), util-linux,
# Open MPI with mpicc, the CUDA toolkit.
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:?usage: netns-gpu.sh BUILD_DIR}")
out=${OUT:-.}/netns-gpu
cuda_dir=${CUDA_DIR:-/usr/local/cuda}
kinds=${KINDS:-host cuda cuda-async cuda-pool cuda-vmm}
perf_kinds=${PERF_KINDS:-host cuda cuda-async cuda-pool cuda-vmm-noipc cuda-vmm}
budget=${TIME_BUDGET:-300}
contrast=${CONTRAST:-UCX_RNDV_PIPELINE_HOST_GET=n}
start=$SECONDS
mkdir -p "$out"
summary=$out/summary.md
: >"$summary"

. "$src/contrib/tests/lib/ompi.sh"
. "$src/contrib/netns-hosts.sh"
nh_init g$$
work=$nh_dir
nh_mpi_setup || exit 1
hosts=("${nh_mpi_hosts[@]}")
libs=$(ompi_our_libs "$build")
perf=$build/src/tools/perf/ucx_perftest
failed=0

over_budget() {
    [ $((SECONDS - start)) -ge "$budget" ]
}

for p in mpi_p2p mpi_blocking; do
    mpicc -O2 -Wall -DHAVE_CUDA -I"$cuda_dir/include" -o "$work/$p" \
        "$src/test/mpi/$p.c" -L"$cuda_dir/lib64" -Wl,-rpath,"$cuda_dir/lib64" \
        -lcudart -lcuda >"$out/build-$p.log" 2>&1 ||
        { echo "FAIL: mpicc $p.c"; cat "$out/build-$p.log"; exit 1; }
done

echo "## Open MPI, one rank on each of two emulated hosts, both on GPU 0" >>"$summary"
echo >>"$summary"
echo "| kind | mpi_p2p | mpi_blocking 64 MiB GB/s (rest) | 1 MiB | 4 MiB |" >>"$summary"
echo "|---|---|---|---|---|" >>"$summary"
mpi_run() { # PROG KIND LOG ARGS...
    local prog=$1 kind=$2 log=$3
    shift 3
    LD_LIBRARY_PATH="$libs" timeout -k 5 150 $(nh_enter h0) \
        mpirun "${ompi_root_args[@]}" "${nh_mpirun_args[@]}" \
        --host "${hosts[1]},${hosts[2]}" -np 2 --bind-to none \
        -x LD_LIBRARY_PATH -x UCX_LOG_LEVEL=warn -x MPI_BUF_DEVICE=0 \
        /bin/sh -c "taskset -pc \$((2 + 2 * OMPI_COMM_WORLD_RANK)) \$\$ >/dev/null; exec $work/$prog $kind --one-gpu $*" \
        >"$log" 2>&1
}
for kind in $kinds; do
    over_budget && { echo "| $kind | skipped (time budget) | | | |" >>"$summary"; continue; }
    log=$out/mpi_p2p.$kind.log
    if mpi_run mpi_p2p "$kind" "$log" && grep -q "^mpi_p2p: 2 ranks OK" "$log"; then
        p2p=pass
    else
        p2p="**FAIL**"; failed=1
    fi
    log=$out/mpi_blocking.$kind.log
    if mpi_run mpi_blocking "$kind" "$log" -n 20 -r 1 -m 67108864 &&
       grep -q "^mpi_blocking: 2 ranks OK" "$log"; then
        bw() { awk -v s=$1 '$1 == "blk" && $2 == s { print $7 }' "$log" | tail -1; }
        echo "| $kind | $p2p | $(bw 67108864) | $(bw 1048576) | $(bw 4194304) |" >>"$summary"
    else
        echo "| $kind | $p2p | **FAIL** | | |" >>"$summary"; failed=1
    fi
done

# perf_run WHERE KIND SIZE ENV...: the client's bandwidth (MB/s), server in
# h1, client in h2 (WHERE=across) or both in h1 (WHERE=within).
port=25000
perf_run() {
    local where=$1 kind=$2 size=$3 n addr=192.0.2.2 chost=h2 test=${PERF_TEST:-tag_bw}
    shift 3
    port=$((port + 1))
    n=$((size >= 67108864 ? 20 : size >= 4194304 ? 100 : 300))
    [ "$where" = within ] && chost=h1
    nh_exec h1 env "$@" "$perf" -p $port -t $test -m "$kind,$kind" -s "$size" -n $n \
        >>"$out/perf-server.log" 2>&1 &
    sleep 0.5
    nh_exec $chost env "$@" timeout 60 "$perf" "$addr" -p $port -t $test \
        -m "$kind,$kind" -s "$size" -n $n 2>>"$out/perf-client.log" |
        tee -a "$out/perf-client.log" | awk '/Final/ { print $7 }'
    wait
}
{
    echo
    echo "## ucx_perftest tag_bw, MB/s, across the hosts (tcp) and within one (for contrast)"
    echo
    echo "| kind | size | across, default | across, $contrast | % of host (default) | across, tag_bibw (both directions, sum) | within one host |"
    echo "|---|---|---|---|---|---|---|"
} >>"$summary"
declare -A host_bw
for kind in $perf_kinds; do
    for size in 1048576 4194304 67108864; do
        over_budget && { echo "| $kind | $size | skipped (time budget) | | | | |" >>"$summary"; continue; }
        a=$(perf_run across "$kind" $size LD_LIBRARY_PATH="$libs")
        b=$(perf_run across "$kind" $size LD_LIBRARY_PATH="$libs" $contrast)
        w=$(perf_run within "$kind" $size LD_LIBRARY_PATH="$libs")
        bi=$(PERF_TEST=tag_bibw perf_run across "$kind" $size LD_LIBRARY_PATH="$libs")
        [ "$kind" = host ] && host_bw[$size]=$a
        pct=$(awk -v a="$a" -v h="${host_bw[$size]:-}" 'BEGIN { if (a > 0 && h > 0) printf "%.0f %%", 100 * a / h }')
        echo "| $kind | $size | ${a:-FAIL} | ${b:-FAIL} | $pct | ${bi:-FAIL} | ${w:-FAIL} |" >>"$summary"
        [ -z "$a" ] && failed=1
    done
done
cat "$summary"
exit $failed
