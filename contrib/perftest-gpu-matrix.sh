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
#              (default "0,0" and, with two GPUs, "0,1")
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
    for s in $kinds; do
        for r in $kinds; do
            tag="${s}_${r}_gpu${a/,/-}"
            run "tag_bw_$tag" -t tag_bw -m "$s,$r" -a "$a" --sizes 4M,16M -n "$iters_small" -w 20
            run "tag_bw_large_$tag" -t tag_bw -m "$s,$r" -a "$a" --sizes 64M,256M -n "$iters" -w 10
            run "tag_lat_$tag" -t tag_lat -m "$s,$r" -a "$a" --sizes 8,64K -n 2000 -w 100
        done
    done
done
echo "$rows rows, $failed failed runs, $ngpu GPU(s), CSV in $out"
[ "$failed" -eq 0 ]
