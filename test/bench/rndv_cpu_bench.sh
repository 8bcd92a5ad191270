#!/bin/bash
# CPU cost per rendezvous message, on the CUDA driver model (no GPU needed):
# the model's copies of a few bytes are nearly free, so what ucx_perftest
# measures is libucp's and the transports' own work per message.
#
#   test/bench/rndv_cpu_bench.sh NAME=BUILD[,LIBDIR,MODDIR] ...
#
# BUILD is a build directory (its ucx_perftest and cudasim are used); the
# optional LIBDIR and MODDIR run that perftest on other copies of the
# libraries (LD_LIBRARY_PATH, UCX_MODULE_DIR), e.g. a saved baseline. The
# builds are run in turn, REPS rounds (default 7), so that a noisy machine
# hurts all alike; each row is the median over the rounds of ucx_perftest's
# median ("typical") per-message time, in microseconds:
#   lat_get      tag_lat 8 B cuda->cuda, UCX_RNDV_THRESH=0 (RTS, get, ATS)
#   bw_get       tag_bw 8 B, window 32: time between sends
#   bw_put       the same with UCX_RNDV_SCHEME=put_zcopy (RTR with a key)
#   bw_pipe      UCX_RNDV_SCHEME=pipeline, 64 KiB (copy, FRAG, get, ACK)
# Optimised builds only (configure without --enable-debug). CPUS="0 1"
# pins the two processes.
set -u
REPS=${REPS:-7}
CPUS=${CPUS:-"0 1"}
ITERS=${ITERS:-20000}

cases=(
    "lat_get|tag_lat|8|UCX_RNDV_THRESH=0"
    "bw_get|tag_bw|8|UCX_RNDV_THRESH=0"
    "bw_put|tag_bw|8|UCX_RNDV_THRESH=0 UCX_RNDV_SCHEME=put_zcopy"
    "bw_pipe|tag_bw|65536|UCX_RNDV_THRESH=0 UCX_RNDV_SCHEME=pipeline UCX_RNDV_FRAG_SIZE=cuda:64K"
)

[ $# -gt 0 ] || { sed -n '2,21p' "$0"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run_one() { # name spec case
    local name=$1 spec=$2 c=$3 build libdir moddir label test size env perf
    IFS=, read -r build libdir moddir <<<"$spec"
    IFS='|' read -r label test size env <<<"$c"
    perf=$build/src/tools/perf/ucx_perftest
    [ -n "$libdir" ] && perf=$build/src/tools/perf/.libs/ucx_perftest
    local lib=$build/test/cudasim/.libs
    [ -n "$libdir" ] && lib=$libdir:$lib
    env $env LD_LIBRARY_PATH=$lib ${moddir:+UCX_MODULE_DIR=$moddir} \
        timeout 120 taskset -c "${CPUS// /,}" "$perf" -L -c "${CPUS// /,}" \
        -t "$test" -m cuda,cuda --cuda-api driver -s "$size" -n "$ITERS" \
        -w 1000 -W 32 --csv 2>/dev/null |
        awk -F, -v l="$label" '$1 ~ /^tag_/ {print l, $9}' >>"$tmp/$name"
}

for ((r = 0; r < REPS; ++r)); do
    for arg in "$@"; do
        for c in "${cases[@]}"; do
            run_one "${arg%%=*}" "${arg#*=}" "$c"
        done
    done
done

printf "%-10s" "us/msg"
for arg in "$@"; do printf " %12s" "${arg%%=*}"; done
echo
for c in "${cases[@]}"; do
    label=${c%%|*}
    printf "%-10s" "$label"
    for arg in "$@"; do
        m=$(awk -v l="$label" '$1 == l {print $2}' "$tmp/${arg%%=*}" | sort -g |
            awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]; else print "-"}')
        printf " %12s" "$m"
    done
    echo
done
