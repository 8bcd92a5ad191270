#!/bin/bash
# The ucx_perftest GPU matrix behind docs/performance.md: UCP tag_bw at
# 4 MiB..256 MiB and tag_lat at 8 B and 64 KiB, two processes (-L), for
# every sender,receiver pair of allocator kinds, on one GPU (-a 0,0) and
# from GPU0 to GPU1 when there are two. One CSV per test, pair and
# placement in $OUTDIR (each GPU row carries raw_gbs and pct_raw, the
# raw-copy reference measured in the same run); a failed row is logged and
# counted, and the last line is a summary. Exit status 1 if any row failed.
#
# environment: PERF (ucx_perftest), OUTDIR (default ./perftest-gpu),
#              ITERS (tag_bw messages per size from 64 MiB, default 50),
#              ITERS_SMALL (per size below, default 200: 20 messages of
#              4 MiB last ~100 us, too short to measure), KINDS (the
#              allocator kinds to pair, default all eight), PLACEMENTS
#              (default "0,0" and, with two GPUs, "0,1"), PAIRS (explicit
#              "send,recv" pairs instead of every pair of KINDS), BW_TESTS
#              (default tag_bw; also ucp_am_bw, stream_bw), LAT_TESTS
#              (default tag_lat; also ucp_am_lat, stream_lat), VALIDATE=1
#              (check every received message, -V)
set -uo pipefail
perf=${PERF:?set PERF to the ucx_perftest binary}
out=${OUTDIR:-perftest-gpu}
iters=${ITERS:-50}
iters_small=${ITERS_SMALL:-200}
mkdir -p "$out"

kinds=${KINDS:-"cuda cuda-managed cuda-async cuda-pool cuda-pool-noipc cuda-vmm cuda-vmm-noipc cuda-vmm-chunked"}
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
placements="0,0"
[ "$ngpu" -ge 2 ] && placements="0,0 0,1"
placements=${PLACEMENTS:-$placements}
bw_tests=${BW_TESTS:-tag_bw}
lat_tests=${LAT_TESTS:-tag_lat}
validate=()
[ "${VALIDATE:-0}" = 1 ] && validate=(-V)
pairs=${PAIRS:-}
if [ -z "$pairs" ]; then
    for s in $kinds; do
        for r in $kinds; do
            pairs="$pairs $s,$r"
        done
    done
fi

rows=0 failed=0
run() {
    local name=$1; shift
    if "$perf" -L "$@" --csv > "$out/$name.csv" 2> "$out/$name.err"; then
        rows=$((rows + $(($(wc -l < "$out/$name.csv") - 1))))
        rm -f "$out/$name.err"
    else
        failed=$((failed + 1))
        echo "FAILED: $name: $(tail -1 "$out/$name.err")"
    fi
}

for a in $placements; do
    for pair in $pairs; do
        tag="${pair/,/_}_gpu${a/,/-}"
        for t in $bw_tests; do
            run "${t}_$tag" -t "$t" -m "$pair" -a "$a" --sizes 4M,16M \
                -n "$iters_small" -w 20 "${validate[@]}"
            run "${t}_large_$tag" -t "$t" -m "$pair" -a "$a" --sizes 64M,256M \
                -n "$iters" -w 10 "${validate[@]}"
        done
        for t in $lat_tests; do
            run "${t}_$tag" -t "$t" -m "$pair" -a "$a" --sizes 8,64K -n 2000 \
                -w 100 "${validate[@]}"
        done
    done
done
echo "$rows rows, $failed failed runs, $ngpu GPU(s), CSV in $out"
[ "$failed" -eq 0 ]
