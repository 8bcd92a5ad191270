#!/bin/bash
# Runs the CUDA checks against the real driver on a machine with an NVIDIA
# GPU and the CUDA toolkit (docs/cudasim.md):
#   1. configure --with-cuda and build the tree (make -j$(nproc));
#   2. run the conformance program (test/cudasim/conformance) on the real
#      driver, save its transcript and diff it with the stored one,
#      test/cudasim/conformance/h200.expected;
#   3. run the gtest_cuda suite on the real driver (CUDASIM=no), then the
#      long run: 10^5 cuda_ipc transfers from fresh allocations with bounded
#      imports, fds and RSS (LONG_RUN_COUNT=100000);
#   4. memory-type detection through cudart (test/apps/memtype_cudart,
#      linked with libcudart.so and with libcudart_static.a) in each
#      UCX_MEM_CUDA_HOOK_MODE, and the hook/cache benchmarks
#      (test/bench/memtype_hook_bench, test/bench/memtype_cache_bench);
#   5. the cuda_ipc benchmark (test/bench/cuda_ipc_bench): UCT get/put
#      against a raw cuMemcpyDtoDAsync per kind, placement and size, import
#      and cache-hit costs; table in $OUT/cuda_ipc_bench.log;
#   5b. host staging fragments on the GPU's NUMA node
#      (contrib/rndv-frag-numa-check.sh): $OUT/rndv_frag_numa.log;
#   6. ucx_perftest over every allocator pair, one GPU and two
#      (contrib/perftest-gpu-matrix.sh): CSV in $OUT/perftest/.
# Exits non-zero if any step fails; prints a summary at the end.
#
# GPU machines have autoconf/automake but no libtool, so the tree must carry
# a generated build system (./configure, Makefile.in, ltmain.sh): make one
# with contrib/pack-for-gpu.sh (or `make dist`) on a machine with libtool.
#
# usage: contrib/gpu-run.sh [TRANSCRIPT]
#   TRANSCRIPT  where to save the real driver's conformance transcript
#               (default: $OUT/conformance-h200.out if $OUT is set, else
#               <build>/conformance-h200.out)
# environment:
#   BUILD_DIR=build-gpu     build directory, relative to the tree
#   CUDA_DIR=/usr/local/cuda
#   JOBS=$(nproc)           make parallelism
#   CONFIGURE_ARGS=         extra configure arguments
#   GTEST_ARGS=             extra arguments for gtest_cuda (e.g. a filter)
#   CUDA_IPC_BENCH_ARGS=    arguments for cuda_ipc_bench (e.g. "-n 50 -s 4,256")
#   MEMTYPE_CUDART_STATIC=  memtype_cudart_static built elsewhere (the GPU
#                           machines have no libcudart_static.a): the binary
#                           of the libtool build, test/apps/.libs/...; it is
#                           run against this tree's libucm/libucs
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-build-gpu}
case $build in /*) ;; *) build=$src/$build ;; esac
cuda_dir=${CUDA_DIR:-/usr/local/cuda}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
expected=$src/test/cudasim/conformance/h200.expected
if [ $# -ge 1 ]; then
    transcript=$1
elif [ -n "${OUT:-}" ]; then
    transcript=$OUT/conformance-h200.out
else
    transcript=$build/conformance-h200.out
fi

declare -a summary=()
failed=0
note() { summary+=("$1"); echo "== $1"; }
fail() { note "FAIL: $1"; failed=1; }

finish() {
    echo
    echo "==================== gpu-run summary ===================="
    printf '  %s\n' "${summary[@]}"
    if [ $failed -eq 0 ]; then
        echo "  result: PASSED"
    else
        echo "  result: FAILED"
    fi
    exit $failed
}

# ---- environment ----
if command -v nvidia-smi >/dev/null 2>&1; then
    note "GPUs: $(nvidia-smi -L 2>/dev/null | wc -l), driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
else
    note "nvidia-smi not found: is this a GPU machine?"
fi
if [ ! -f "$cuda_dir/include/cuda.h" ]; then
    fail "no CUDA toolkit at $cuda_dir (set CUDA_DIR)"
    finish
fi
if [ ! -x "$src/configure" ]; then
    if command -v libtoolize >/dev/null 2>&1; then
        (cd "$src" && ./autogen.sh) || { fail "autogen.sh"; finish; }
    else
        fail "no ./configure and no libtool here: generate the build system elsewhere (contrib/pack-for-gpu.sh or make dist)"
        finish
    fi
fi

# ---- 1. configure and build ----
mkdir -p "$build" "$(dirname "$transcript")"
cd "$build" || { fail "cannot enter $build"; finish; }
if ! "$src/configure" --with-cuda="$cuda_dir" ${CONFIGURE_ARGS:-} > configure.log 2>&1; then
    fail "configure (see $build/configure.log)"
    tail -20 configure.log
    finish
fi
if ! grep -q '^#define HAVE_CUDA 1' config.h; then
    fail "configure did not enable CUDA (see $build/configure.log)"
    finish
fi
if make -j"$jobs" > make.log 2>&1; then
    note "build: ok (make -j$jobs)"
else
    fail "build of the whole tree (see $build/make.log)"
    grep -E 'error|Error' make.log | head -20
    # Still build what the driver checks need, so they can report.
    make -j"$jobs" -C src/ucs > make-min.log 2>&1 &&
        make -j"$jobs" -C test/cudasim >> make-min.log 2>&1 ||
        { fail "build of test/cudasim (see $build/make-min.log)"; finish; }
fi

# ---- 2. conformance against the real driver ----
conf=$build/test/cudasim/conformance/cudasim-conformance
if [ ! -x "$conf" ]; then
    make -C test/cudasim conformance/cudasim-conformance >> make.log 2>&1
fi
if [ ! -x "$conf" ]; then
    fail "conformance program was not built"
else
    # No LD_LIBRARY_PATH: the program must load the real libcuda.so.1.
    if timeout 300 "$conf" > "$transcript" 2> "$transcript.stderr"; then
        if diff -u "$expected" "$transcript" > "$transcript.diff"; then
            note "conformance: real driver matches h200.expected ($(wc -l < "$transcript") lines)"
        else
            fail "conformance: real driver differs from h200.expected (diff in $transcript.diff)"
            head -40 "$transcript.diff"
        fi
    else
        fail "conformance program failed (stderr in $transcript.stderr)"
        tail -5 "$transcript.stderr"
    fi
    note "transcript saved to $transcript"
fi

# ---- 3. gtest_cuda against the real driver ----
if make -j"$jobs" -C test/gtest gtest_cuda >> make.log 2>&1; then
    log=$(dirname "$transcript")/gtest_cuda.log
    if make -C test/gtest run-gtest-cuda CUDASIM=no GTEST_ARGS="${GTEST_ARGS:-}" > "$log" 2>&1; then
        passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\{0,1\}\.$/\1/p' "$log" | tail -1)
        skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\{0,1\}, listed below:$/\1/p' "$log" | tail -1)
        note "gtest_cuda: ${passed:-?} passed, ${skipped:-0} skipped (log: $log)"
    else
        fail "gtest_cuda on the real driver (log: $log)"
        grep -E '^\[  FAILED  \]' "$log" | head -20
    fi
else
    fail "gtest_cuda was not built (see $build/make.log)"
fi

# ---- 3b. long run: 10^5 cuda_ipc transfers from fresh allocations ----
# Imported mappings, fds, memory files and RSS must plateau; the peaks are
# printed as "[ long run ]" lines (docs/reliability.md). 104 s on an H200.
if [ -x test/gtest/gtest_cuda ]; then
    log=$(dirname "$transcript")/long_run.log
    if UCX_TEST_LONG_RUN=${LONG_RUN_COUNT:-100000} timeout 1800 test/gtest/gtest_cuda \
            --gtest_filter='*long_run_of_fresh_allocations*' > "$log" 2>&1; then
        note "long run: $(grep -h '\[ long run \]' "$log" | tr '\n' ' ')"
    else
        fail "long run of cuda_ipc transfers (log: $log)"
        grep -E 'Failure|Expected|long run' "$log" | head -10
    fi
fi

# ---- 4. memory types through cudart, and what the hooks cost ----
# Two logs only (whatever collects $OUT may take few files): every
# memtype_cudart run goes to memtype_cudart.log, both benchmarks to
# memtype_bench.log.
logdir=$(dirname "$transcript")
apps_log=$logdir/memtype_cudart.log
bench_log=$logdir/memtype_bench.log
: > "$apps_log"
: > "$bench_log"
declare -a memtype_apps=()
if [ -x "$build/test/apps/memtype_cudart" ]; then
    memtype_apps+=("shared:$build/test/apps/memtype_cudart")
else
    fail "test/apps/memtype_cudart was not built (see $build/make.log)"
fi
if [ -x "$build/test/apps/memtype_cudart_static" ]; then
    memtype_apps+=("static:$build/test/apps/memtype_cudart_static")
elif [ -n "${MEMTYPE_CUDART_STATIC:-}" ] && [ -x "$MEMTYPE_CUDART_STATIC" ]; then
    memtype_apps+=("static:$MEMTYPE_CUDART_STATIC")
else
    note "memtype_cudart_static: SKIPPED (no libcudart_static.a here; build it on a machine that has one and set MEMTYPE_CUDART_STATIC)"
fi
# A binary built elsewhere needs this tree's libraries first in the path
# (the image has Ubuntu's libucm.so.0/libucs.so.0 too).
memtype_libs=$build/src/ucm/.libs:$build/src/ucs/.libs
for app in "${memtype_apps[@]}"; do
    linkage=${app%%:*}
    bin=${app#*:}
    for mode in bistro reloc none; do
        log=$build/memtype_cudart-$linkage-$mode.log
        UCX_MEM_CUDA_HOOK_MODE=$mode LD_LIBRARY_PATH=$memtype_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
            timeout 120 "$bin" > "$log" 2>&1
        rc=$?
        { echo "=== $linkage cudart, UCX_MEM_CUDA_HOOK_MODE=$mode (exit $rc)"; cat "$log"; } >> "$apps_log"
        if [ $rc -eq 0 ]; then
            note "memtype_cudart ($linkage cudart, $mode): $(tail -1 "$log" | sed 's/^.*: //')"
        else
            fail "memtype_cudart ($linkage cudart, $mode): $(tail -1 "$log") (log: $apps_log)"
            grep '^FAIL' "$log" | head -10
        fi
    done
done

if [ -x "$build/test/bench/memtype_hook_bench" ]; then
    log=$build/memtype_hook_bench.log
    timeout 120 "$build/test/bench/memtype_hook_bench" > "$log" 2>&1
    rc=$?
    { echo "=== memtype_hook_bench (exit $rc)"; cat "$log"; } >> "$bench_log"
    if [ $rc -eq 0 ]; then
        note "$(grep '^pair' "$log")"
        note "$(grep '^lookup with' "$log")"
    else
        fail "memtype_hook_bench (log: $bench_log)"
        tail -5 "$log"
    fi
else
    fail "test/bench/memtype_hook_bench was not built (see $build/make.log)"
fi
if [ -x "$build/test/bench/memtype_cache_bench" ]; then
    log=$build/memtype_cache_bench.log
    timeout 180 "$build/test/bench/memtype_cache_bench" > "$log" 2>&1
    rc=$?
    { echo "=== memtype_cache_bench (exit $rc)"; cat "$log"; } >> "$bench_log"
    if [ $rc -eq 0 ]; then
        note "memtype_cache_bench: done (log: $bench_log)"
    else
        fail "memtype_cache_bench (log: $bench_log)"
    fi
fi

# ---- 5. cuda_ipc bandwidth against the raw copy, import and hit costs ----
# The whole table (every kind x placement x size x op) goes to one log,
# cuda_ipc_bench.log; the summary line goes to the summary.
ipc_log=$logdir/cuda_ipc_bench.log
if [ -x "$build/test/bench/cuda_ipc_bench" ]; then
    timeout 600 "$build/test/bench/cuda_ipc_bench" ${CUDA_IPC_BENCH_ARGS:-} > "$ipc_log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        note "cuda_ipc_bench: $(grep '^summary:' "$ipc_log" | sed 's/^summary: //') (table: $ipc_log)"
        grep -q 'SKIPPED' "$ipc_log" && note "cuda_ipc_bench: $(grep -m1 'SKIPPED' "$ipc_log" | sed 's/  */ /g')"
    else
        fail "cuda_ipc_bench (exit $rc, log: $ipc_log)"
        grep -E 'FAILED|MISMATCH|failed' "$ipc_log" | head -10
    fi
else
    fail "test/bench/cuda_ipc_bench was not built (see $build/make.log)"
fi

# ---- 5b. host staging fragments on the GPU's NUMA node ----
# hwloc's node of each GPU against sysfs, and the pages of a perftest's host
# fragments (/proc/PID/numa_maps) on GPU0's node (docs/rendezvous.md).
numa_log=$logdir/rndv_frag_numa.log
if BUILD_DIR="$build" timeout 600 "$src/contrib/rndv-frag-numa-check.sh" 0 > "$numa_log" 2>&1; then
    note "host fragments: $(grep -m1 'is near node' "$numa_log"), placed there (log: $numa_log)"
else
    fail "host fragments not on the GPU's NUMA node (log: $numa_log)"
    grep -E '^FAIL|^NOTE' "$numa_log" | head -5
fi

# ---- 6. ucx_perftest: every allocator pair, one GPU and GPU0 -> GPU1 -----
# contrib/perftest-gpu-matrix.sh writes one CSV per pair and placement into
# $logdir/perftest/ (tag_bw 4M..256M, tag_lat 8 B and 64 KiB, each GPU row
# with the raw-copy reference) and a log of failed rows.
if [ -x "$src/contrib/perftest-gpu-matrix.sh" ]; then
    if PERF="$build/src/tools/perf/ucx_perftest" OUTDIR="$logdir/perftest" \
            timeout 900 "$src/contrib/perftest-gpu-matrix.sh" > "$logdir/perftest.log" 2>&1; then
        note "ucx_perftest matrix: $(tail -1 "$logdir/perftest.log") (CSV: $logdir/perftest/)"
    else
        fail "ucx_perftest matrix (log: $logdir/perftest.log)"
        tail -5 "$logdir/perftest.log"
    fi
fi

finish
