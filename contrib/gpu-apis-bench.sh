#!/bin/bash
# GPU memory through the tag, AM and stream APIs (docs/performance.md, "AM
# and stream"): UCP tag_bw, ucp_am_bw and stream_bw at 4 MiB..256 MiB and
# the latency tests at 8 B and 64 KiB, two processes on one GPU, for the
# kind pairs that take each rendezvous protocol (get, put, the device
# fragment pipeline, a host sender). CSV per test and pair in $OUTDIR.
# With UPSTREAM=<prefix of an upstream UCX install> (NVIDIA's libucx-cu13
# wheel unpacked: <dir>/libucx), upstream's ucx_perftest and ours then run
# client/server in turn, cudaMalloc memory, tag_bw/ucp_am_bw at 4, 64 and
# 256 MiB and tag_lat/ucp_am_lat at 8 B, twice; the lines go to
# $OUTDIR/upstream.log.
#
# usage: PERF=<our ucx_perftest> [OUTDIR=dir] [UPSTREAM=prefix] contrib/gpu-apis-bench.sh
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
perf=${PERF:?set PERF to our ucx_perftest}
out=${OUTDIR:-gpu-apis}
mkdir -p "$out"

PAIRS=${PAIRS:-"cuda,cuda cuda-async,cuda-async cuda-vmm,cuda-vmm cuda-vmm-noipc,cuda-vmm-noipc cuda,cuda-vmm-noipc cuda-vmm-noipc,cuda host,cuda"} \
BW_TESTS="tag_bw ucp_am_bw stream_bw" LAT_TESTS="tag_lat ucp_am_lat stream_lat" \
ITERS=${ITERS:-10} ITERS_SMALL=${ITERS_SMALL:-60} PLACEMENTS=${PLACEMENTS:-0,0} \
PERF=$perf OUTDIR=$out bash "$src/contrib/perftest-gpu-matrix.sh"
rc=$?

if [ -n "${UPSTREAM:-}" ]; then
    ours_lib=$(cd "$(dirname "$perf")/../lib" 2>/dev/null && pwd)
    port=13600
    cs() { # label binary libdir args...: one client/server run, its last line
        local label=$1 bin=$2 lib=$3; shift 3
        port=$((port + 1))
        LD_LIBRARY_PATH=$lib timeout 25 "$bin" -p $port >/dev/null 2>&1 &
        sleep 1
        echo "$label $*: $(LD_LIBRARY_PATH=$lib timeout 20 "$bin" localhost -p $port "$@" -f 2>&1 | tail -1)"
        wait
    }
    for rep in 1 2; do
        for t in tag_bw ucp_am_bw; do
            for s in 4194304 67108864 268435456; do
                n=100; [ $s -gt 4194304 ] && n=20
                cs upstream "$UPSTREAM/bin/ucx_perftest" "$UPSTREAM/lib" -t $t -m cuda -s $s -n $n -w 5
                cs ours "$perf" "$ours_lib" -t $t -m cuda -s $s -n $n -w 5
            done
        done
        for t in tag_lat ucp_am_lat; do
            cs upstream "$UPSTREAM/bin/ucx_perftest" "$UPSTREAM/lib" -t $t -m cuda -s 8 -n 2000 -w 100
            cs ours "$perf" "$ours_lib" -t $t -m cuda -s 8 -n 2000 -w 100
        done
    done | tee "$out/upstream.log"
fi
exit $rc
