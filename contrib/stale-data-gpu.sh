#!/bin/bash
# Issue 19 on a GPU: is a tag message posted right after a blocking fill of a
# device buffer (cuMemcpyHtoD from pageable memory, cuMemsetD8) carried with
# the new bytes? Runs test/apps/stale_send over every sender kind x receiver
# kind (the same kind, and cudaMalloc memory) x size (8 B .. 64 MiB) x order
# (library first, context first), REPS repetitions per cell, one table row
# per cell with the number of bad messages and the 8 B / 64 KiB / 1 MiB
# latency of the kind pair. The whole run keeps to BUDGET seconds (cells not
# started by then are listed as skipped).
#
# usage: contrib/stale-data-gpu.sh [BUILD_DIR] [-- STALE_SEND_ARGS...]
#   BUILD_DIR   a configured build tree (default build-gpu); if it has no
#               test/apps/stale_send, the tree is configured (--with-cuda)
#               and built there first (make -j$(nproc))
#   arguments after -- go to every stale_send run (see stale_send -h)
# environment:
#   REPS=200        repetitions per cell (large sizes: at most 256 MiB a cell)
#   BUDGET=170      seconds for all runs together
#   FILLS="htod memset"   fills to run, in order (htod, memset, cudart)
#   SYNCS=none      what the sender does itself, per run (none, ctx, ptr, sync)
#   CUDASIM=no      yes: run on the driver model of the build tree
#                   (test/cudasim/.libs), with REPS=3 unless set
#   CONFIGURE_ARGS= extra configure arguments when it builds
#   OUT             if set, the log is also saved as $OUT/stale-data.log
# Exit status: 0 every message right, 1 bad messages, 2 an error.
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=build-gpu
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    build=$1
    shift
fi
[ "${1:-}" = "--" ] && shift
case $build in /*) ;; *) build=$PWD/$build ;; esac

if [ "${CUDASIM:-no}" = yes ]; then
    reps=${REPS:-3}
    export LD_LIBRARY_PATH="$build/test/cudasim/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
    reps=${REPS:-200}
fi
budget=${BUDGET:-170}
fills=${FILLS:-htod memset}
syncs=${SYNCS:-none}

if [ ! -x "$build/test/apps/stale_send" ]; then
    echo "# building in $build"
    mkdir -p "$build" || exit 2
    if [ ! -f "$build/Makefile" ]; then
        (cd "$build" && "$src/configure" --with-cuda ${CONFIGURE_ARGS:-} \
             >configure.log 2>&1) || { echo "configure failed: $build/configure.log"; exit 2; }
    fi
    make -C "$build" -j"$(nproc 2>/dev/null || echo 4)" >"$build/make.log" 2>&1 ||
        { tail -30 "$build/make.log"; exit 2; }
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
runs=0
for f in $fills; do
    for s in $syncs; do
        runs=$((runs + 1))
    done
done
# The first run (the main table) gets the larger share of the budget.
rc=0
i=0
for f in $fills; do
    for s in $syncs; do
        i=$((i + 1))
        left=$((budget - ($(date +%s) - start)))
        if [ "$left" -le 5 ]; then
            echo "# fill $f, sync $s: skipped (time budget)" | tee -a "$log"
            continue
        fi
        share=$left
        if [ $i -lt $runs ]; then
            share=$((left * 2 / (runs - i + 2)))
            [ $i -eq 1 ] && share=$((left * 3 / (runs + 2)))
        fi
        "$build/test/apps/stale_send" -r "$reps" -f "$f" -S "$s" -t "$share" "$@" 2>&1 |
            tee -a "$log"
        r=${PIPESTATUS[0]}
        if [ "$r" -gt "$rc" ]; then
            rc=$r
        fi
    done
done
echo "# total $(( $(date +%s) - start )) s; worst exit status $rc" | tee -a "$log"
if [ -n "${OUT:-}" ]; then
    cp "$log" "$OUT/stale-data.log"
fi
exit $rc
