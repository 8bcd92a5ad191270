#!/bin/bash
# contrib/gpu-tcp-bench.sh, the GPU-over-tcp benchmark that runs on the GPU
# machine, here on the driver model (cudasim) with few messages: its table
# has a row per kind and size with the share of the host row, and a column
# whose setting breaks the runs makes it fail and say so.
set -uo pipefail
cudasim="$BUILD_DIR/test/cudasim/.libs"
if [ ! -e "$cudasim/libcuda.so.1" ]; then
    echo "the driver model was not built ($cudasim/libcuda.so.1)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {
    LD_LIBRARY_PATH="$cudasim" KINDS="host cuda-vmm" SIZES=1M,4M ITERS=4 REPS=1 \
        CPUS=0,1 OUT="$tmp" bash "$SRC_DIR/contrib/gpu-tcp-bench.sh" "$BUILD_DIR" "$@"
}

SETTINGS=";UCX_RNDV_PIPELINE_HOST_GET_RAMP=64K" run >"$tmp/good.md" 2>&1 ||
    { echo "FAIL: the benchmark failed"; cat "$tmp/good.md"; exit 1; }
cat "$tmp/good.md"
grep -q '^| kind | size | default | UCX_RNDV_PIPELINE_HOST_GET_RAMP=64K |$' "$tmp/good.md" ||
    { echo "FAIL: no header with both columns"; exit 1; }
for row in "host | 1M" "host | 4M" "cuda-vmm | 1M" "cuda-vmm | 4M"; do
    grep -q "^| $row | [0-9]" "$tmp/good.md" || { echo "FAIL: no figure for $row"; exit 1; }
done
[ "$(grep -cE '^\| cuda-vmm \| [0-9]+M \| [0-9]+ \([0-9]+ %\) \| [0-9]+ \([0-9]+ %\) \|$' \
    "$tmp/good.md")" -eq 2 ] || { echo "FAIL: device rows without their share of host"; exit 1; }

# Both directions at once over the default transports (one GPU: cuda_ipc).
TEST=tag_bibw TLS= SETTINGS="" run >"$tmp/bibw.md" 2>&1 ||
    { echo "FAIL: the tag_bibw run failed"; cat "$tmp/bibw.md"; exit 1; }
cat "$tmp/bibw.md"
grep -q '^## ucx_perftest -L tag_bibw, UCX_TLS=(default),' "$tmp/bibw.md" ||
    { echo "FAIL: the tag_bibw table does not name its test and transports"; exit 1; }
grep -qE '^\| cuda-vmm \| 4M \| [0-9]+ \([0-9]+ %\) \|$' "$tmp/bibw.md" ||
    { echo "FAIL: no tag_bibw figure for cuda-vmm 4M"; exit 1; }

if SETTINGS=";UCX_RNDV_PIPELINE_HOST_GET_RAMP=bogus" run >"$tmp/bad.md" 2>&1; then
    echo "FAIL: a column whose runs all failed passed"; cat "$tmp/bad.md"; exit 1
fi
grep -q '^| host | 1M | [0-9]* | FAIL |$' "$tmp/bad.md" ||
    { echo "FAIL: the broken column is not marked"; cat "$tmp/bad.md"; exit 1; }
grep -q 'FAIL: host, column 1' "$tmp/bad.md" ||
    { echo "FAIL: the failed run is not named"; exit 1; }
echo "gpu_tcp_bench: OK"
